// Web Push: this browser as a device that receives the server's notifications. Settings offers
// it after connecting; once on, the subscription is registered again on every load (and after
// the service worker renews it), and Forget revokes it before the session ends. The server's
// `/v1/notifications` stays the authority: nothing about a notification is kept here, only
// this browser's device id and whether the owner turned notifications on.
// Loaded once connected (main.js), never with the first page.
import { h } from "../vendor/preact.mjs";
import htm from "../vendor/htm.mjs";
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, beforeForget, describe, holds } from "./api.js";

const html = htm.bind(h);

/**
 * `checking`; `unsupported` (no service worker or Push API, or not a secure context);
 * `unavailable` (the server offers no Web Push: 404); `denied` (blocked in the browser's
 * settings); `off`; `on`; `working` while a change is sent.
 * @type {import("../vendor/signals-core.mjs").Signal<{state: "checking" | "unsupported" | "unavailable" | "denied" | "off" | "on" | "working", error: string | null}>}
 */
export const push = signal({ state: "checking", error: null });

/** This browser's device id and the owner's choice, kept in local storage (neither is secret). */
const STORE = "steward.push";

/** @returns {{device: string, on: boolean}} */
function stored() {
  try {
    const value = JSON.parse(localStorage.getItem(STORE) ?? "null");
    if (value && typeof value.device === "string" && typeof value.on === "boolean") return value;
  } catch {
    // An unreadable entry is replaced below.
  }
  const fresh = { device: crypto.randomUUID(), on: false };
  save(fresh);
  return fresh;
}

/** @param {{device: string, on: boolean}} value */
function save(value) {
  try {
    localStorage.setItem(STORE, JSON.stringify(value));
  } catch {
    // Storage refused (a private window): the choice lasts for this page only.
  }
}

function supported() {
  return window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/** The server's application server key, or null when it offers no Web Push (404, 405). */
async function serverKey() {
  try {
    return (await api("GET", "/v1/devices/web-push")).application_server_key;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 405)) return null;
    throw error;
  }
}

/** @param {string} text base64url */
function bytes(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/** @param {ArrayBuffer | null | undefined} buffer */
function base64url(buffer) {
  if (!buffer) return "";
  return btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * This browser's subscription for `key`: the current one when it was made with that key, else a
 * new one (a subscription made with another server key is dropped first).
 * @param {string} key
 */
async function subscription(key) {
  const registration = await navigator.serviceWorker.ready;
  const current = await registration.pushManager.getSubscription();
  if (current && base64url(current.options?.applicationServerKey) === key) return current;
  if (current) await current.unsubscribe().catch(() => false);
  return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(key) });
}

/** Registers `sub` as this browser's device. @param {PushSubscription} sub */
async function register(sub) {
  const keys = sub.toJSON().keys ?? {};
  await api("POST", "/v1/devices/web-push", {
    body: { client_device_id: stored().device, endpoint: sub.endpoint, p256dh: keys.p256dh, auth: keys.auth },
  });
}

/**
 * After connecting (and on every load): works out what Settings offers, and when the owner
 * turned notifications on, subscribes and registers again, so a renewed subscription reaches
 * the server.
 */
export async function syncPush() {
  if (!supported() || !holds("notifications.write")) {
    push.value = { state: "unsupported", error: null };
    return;
  }
  try {
    const key = await serverKey();
    if (!key) {
      push.value = { state: "unavailable", error: null };
      return;
    }
    if (Notification.permission === "denied") {
      push.value = { state: "denied", error: null };
      return;
    }
    if (Notification.permission !== "granted" || !stored().on) {
      push.value = { state: "off", error: null };
      return;
    }
    await register(await subscription(key));
    push.value = { state: "on", error: null };
  } catch (error) {
    push.value = { state: stored().on ? "on" : "off", error: describe(error) };
  }
}

/** Turns notifications on: asks the browser's permission (once), subscribes and registers. */
export async function enablePush() {
  push.value = { state: "working", error: null };
  try {
    const permission = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
    if (permission !== "granted") {
      // A refusal is the owner's answer, not an error: Settings says where to change it.
      push.value = { state: permission === "denied" ? "denied" : "off", error: null };
      return;
    }
    const key = await serverKey();
    if (!key) {
      push.value = { state: "unavailable", error: null };
      return;
    }
    await register(await subscription(key));
    save({ ...stored(), on: true });
    push.value = { state: "on", error: null };
  } catch (error) {
    push.value = { state: "off", error: describe(error) };
  }
}

/** Revokes this browser's device and drops its subscription. */
async function revoke() {
  const { device } = stored();
  try {
    await api("DELETE", `/v1/devices/${encodeURIComponent(device)}`);
  } catch (error) {
    // Never registered (or already revoked): nothing to take back.
    if (!(error instanceof ApiError && (error.code === "device_not_found" || error.status === 404 || error.status === 401))) throw error;
  } finally {
    const registration = await navigator.serviceWorker.getRegistration();
    const sub = await registration?.pushManager.getSubscription();
    await sub?.unsubscribe().catch(() => false);
    save({ device, on: false });
  }
}

/** Turns notifications off for this browser. */
export async function disablePush() {
  push.value = { state: "working", error: null };
  try {
    await revoke();
    push.value = { state: "off", error: null };
  } catch (error) {
    push.value = { state: "on", error: describe(error) };
  }
}

/** Notifications on this browser (Web Push): offered once connected, never asked unprompted. */
export function PushCard() {
  const { state, error } = push.value;
  if (state === "checking" || !holds("notifications.write")) return null;
  const what = "Get an alert on this device when an action waits for your approval, Steward has a question, a schedule has an outcome or a call has finished. Alerts say what needs you, never what a message says.";
  /** @type {Record<string, unknown>} */
  const body = {
    unsupported: html`<p class="summary">This browser cannot receive notifications from this page. On a phone, add Steward to the home screen first and open it from there; off this machine, Steward must be served over HTTPS.</p>`,
    unavailable: html`<p class="summary">This server does not offer notifications to browsers.</p>`,
    denied: html`<p class="summary">Notifications are blocked for this site. Allow them in the browser's site settings, then open Settings again.</p>`,
    off: html`<p class="summary">${what}</p>
      <div class="controls"><button class="button filled" onClick=${enablePush}>Turn on notifications</button></div>`,
    working: html`<p class="summary">${what}</p>
      <div class="controls"><button class="button filled" disabled>Working…</button></div>`,
    on: html`<p class="summary">On for this browser. An alert for the conversation you are looking at is not shown, and an alert closes once you have answered it anywhere.</p>
      <div class="controls"><button class="button hairline" onClick=${disablePush}>Turn off notifications</button></div>`,
  };
  return html`<section class="card" aria-label="Notifications on this browser">
    <h2>Notifications</h2>
    ${body[state]}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </section>`;
}

// Forgetting the connection revokes this browser's device first; the session ends either way.
beforeForget(async () => {
  if (supported() && stored().on) await revoke().catch(() => undefined);
  push.value = { state: "checking", error: null };
});

// The service worker saw the push service renew the subscription: register the new one.
if ("serviceWorker" in navigator) {
  navigator.serviceWorker.addEventListener("message", (event) => {
    if (event.data?.type === "steward.resubscribe" && push.value.state === "on") syncPush();
  });
}
