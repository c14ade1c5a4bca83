// Settings (connection, models, appearance, learning, data and privacy) and the pending
// notifications.
import { h } from "../vendor/preact.mjs";
import { useEffect, useMemo, useRef, useState } from "../vendor/hooks.mjs";
import { signal } from "../vendor/signals.mjs";
import htm from "../vendor/htm.mjs";
import { api, ApiError, connection, describe, forget, holds } from "./api.js";
import * as chat from "./chat.js";
import * as folders from "./folders.js";
import * as notifications from "./notifications.js";
import * as attachments from "./attachments.js";
import { markdown } from "./markdown.js";
import { appearance, setAppearance, TEXT_SIZES, TYPEFACES } from "./preferences.js";
import { lazy, lazyWebsite, mode, ReloadOffer, showingMain, view } from "./shell.js";

const html = htm.bind(h);

/**
 * The marketing version and the build of a release identity, `<version>+<commit>`: this page is
 * built into the server it comes from, so the server's release (`/health/ready`) is the client's.
 * @param {string | null} release
 */
export function versionOf(release) {
  if (!release) return { version: "unknown", build: "unknown" };
  const plus = release.indexOf("+");
  return plus < 0 ? { version: release, build: "unknown" } : { version: release.slice(0, plus), build: release.slice(plus + 1) };
}

function ModelsCard() {
  const [state, setState] = useState(/** @type {{settings: any, error: string | null, saving: boolean, missing: boolean}} */ ({ settings: null, error: null, saving: false, missing: false }));
  useEffect(() => {
    if (!holds("settings.read")) return;
    api("GET", "/v1/settings/models")
      .then((settings) => setState((s) => ({ ...s, settings })))
      .catch((error) => setState((s) => ({ ...s, missing: error instanceof ApiError && (error.status === 404 || error.status === 405), error: describe(error) })));
  }, []);
  if (state.missing || !holds("settings.read")) return null;
  const settings = state.settings;
  if (!settings) return html`<section class="card" aria-label="Models"><h2>Models</h2>${state.error ? html`<p class="error">${state.error}</p>` : html`<p class="summary">Loading…</p>`}</section>`;
  const save = async (/** @type {Record<string, string>} */ change) => {
    const next = { ...settings, ...change };
    setState((s) => ({ ...s, saving: true, error: null }));
    try {
      const saved = await api("PUT", "/v1/settings/models", {
        body: {
          chat_model: next.chat_model,
          chat_reasoning_effort: next.chat_reasoning_effort,
          memory_model: next.memory_model,
          memory_reasoning_effort: next.memory_reasoning_effort,
        },
      });
      setState((s) => ({ ...s, settings: saved, saving: false }));
    } catch (error) {
      setState((s) => ({ ...s, saving: false, error: describe(error) }));
    }
  };
  const picker = (/** @type {"chat" | "memory"} */ role, /** @type {string} */ label) => {
    const offered = settings.offered[role] ?? [];
    const model = settings[`${role}_model`];
    const efforts = offered.find((/** @type {any} */ o) => o.model === model)?.reasoning_efforts ?? [];
    return html`<div class="field">
      <label for=${`${role}-model`}>${label}</label>
      <select id=${`${role}-model`} value=${model} disabled=${state.saving || !holds("settings.write")}
        onChange=${(/** @type {any} */ e) => {
          const chosen = offered.find((/** @type {any} */ o) => o.model === e.currentTarget.value);
          save({ [`${role}_model`]: e.currentTarget.value, [`${role}_reasoning_effort`]: chosen?.reasoning_efforts?.[0] ?? "none" });
        }}>
        ${offered.map((/** @type {any} */ o) => html`<option value=${o.model}>${o.model}</option>`)}
      </select>
      <label for=${`${role}-effort`} class="visually-hidden">${label} reasoning effort</label>
      <select id=${`${role}-effort`} value=${settings[`${role}_reasoning_effort`]} disabled=${state.saving || !holds("settings.write")}
        onChange=${(/** @type {any} */ e) => save({ [`${role}_reasoning_effort`]: e.currentTarget.value })}>
        ${efforts.map((/** @type {string} */ effort) => html`<option value=${effort}>${effort === "none" ? "No reasoning effort" : `Reasoning: ${effort}`}</option>`)}
      </select>
    </div>`;
  };
  return html`<section class="card" aria-label="Models">
    <h2>Models</h2>
    <p class="summary">Applied to new chats and to the next message of existing ones.</p>
    ${picker("chat", "Chat model")}
    ${picker("memory", "Memory model")}
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
  </section>`;
}

function AppearanceCard() {
  const current = appearance.value;
  /** @param {string} name @param {string} legend @param {Array<[string, string]>} options @param {string} value @param {(v: string) => void} pick */
  const group = (name, legend, options, value, pick) => html`<fieldset class="choices">
    <legend>${legend}</legend>
    ${options.map(([key, label]) => html`<label class="choice"><input type="radio" name=${name} value=${key} checked=${value === key}
      onChange=${() => pick(key)} /><span>${label}</span></label>`)}
  </fieldset>`;
  return html`<section class="card" aria-label="Appearance">
    <h2>Appearance</h2>
    ${group("text-size", "Text size", TEXT_SIZES, current.textSize, (textSize) => setAppearance({ ...current, textSize }))}
    ${group("typeface", "Typeface", TYPEFACES, current.typeface, (typeface) => setAppearance({ ...current, typeface }))}
  </section>`;
}

export function SettingsView() {
  const [release, setRelease] = useState(/** @type {string | null} */ (null));
  const [leaving, setLeaving] = useState(false);
  useEffect(() => {
    fetch("/health/ready", { cache: "no-store", redirect: "error" })
      .then((response) => response.json())
      .then((ready) => setRelease(ready.release))
      .catch(() => setRelease(null));
  }, []);
  const session = connection.value;
  const { version, build } = versionOf(release);
  return html`<main class="main settings" aria-label="Settings">
    <div class="settings-inner">
      <div class="titlebar-lite">
        <button class="button quiet small back" onClick=${() => (showingMain.value = false)} aria-label="Back to conversations">‹</button>
        <h1>Settings</h1>
      </div>
      <section class="card" aria-label="Connection">
        <h2>Connection</h2>
        <dl class="facts">
          <dt>Server</dt><dd>${window.location.origin}</dd>
          <dt>Allowed</dt><dd>${session.scopes.join(", ") || "nothing"}</dd>
          ${session.expiresAt && html`<dt>Session ends</dt><dd>${new Date(session.expiresAt).toLocaleString()}</dd>`}
        </dl>
        <div class="controls">
          <button class="button hairline danger" disabled=${leaving} onClick=${async () => {
            setLeaving(true);
            await forget();
          }}>${leaving ? "Forgetting…" : "Forget this connection"}</button>
        </div>
      </section>
      <${LazyPushCard} />
      <${ModelsCard} />
      <${LazyWebsiteAccessCard} />
      <${LazyLearningCard} />
      <${AppearanceCard} />
      <section class="card" aria-label="Data and privacy">
        <h2>Data & Privacy</h2>
        <p class="summary">Conversations live on your server. This browser keeps only your appearance choices and, with notifications on, its device id; nothing about your notifications or messages is stored here.</p>
        <dl class="facts">
          <dt>Version</dt><dd data-testid="version">${version}</dd>
          <dt>Build</dt><dd data-testid="build">${build}</dd>
        </dl>
      </section>
    </div>
  </main>`;
}

/** What a notification asks for, in words. @param {notifications.Notification} notification */
function headline(notification) {
  switch (notification.kind) {
    case "approval":
      return "An action waits for your approval";
    case "question":
      return "Steward has a question for you";
    case "schedule_outcome":
      return "A scheduled task has an outcome";
    case "call_finished":
      return "New call result";
    default:
      return "Something needs your attention";
  }
}

export function NotificationsView() {
  const list = notifications.pending.value;
  return html`<main class="main settings" aria-label="Notifications">
    <div class="settings-inner">
      <div class="titlebar-lite">
        <button class="button quiet small back" onClick=${() => (showingMain.value = false)} aria-label="Back to conversations">‹</button>
        <h1>Notifications</h1>
      </div>
      ${notifications.notificationError.value && html`<p class="error" role="alert">${notifications.notificationError.value}</p>`}
      ${list.length === 0
        ? html`<p class="summary">Nothing waits for you.</p>`
        : html`<ul class="notifications">${list.map((item) => {
            const row = chat.sessions.value.find((session) => session.session_id === item.payload.session_id);
            return html`<li key=${item.notification_id}>
              <button class="card notification" onClick=${() => {
                view.value = "chat";
                notifications.openNotification(item, () => (mode.value = "email"));
              }}>
                <strong>${headline(item)}</strong>
                <span class="summary">${row?.title || "A conversation"} · ${new Date(item.created_at).toLocaleString()}</span>
              </button>
            </li>`;
          })}</ul>`}
    </div>
  </main>`;
}


const pushModule = lazy(() => import("./push.js"));

/** Settings' Notifications card (Web Push), kept out of the first load like the module behind it. */
function LazyPushCard() {
  useEffect(() => pushModule.want(), []);
  const loaded = pushModule.module.value;
  return loaded ? html`<${loaded.PushCard} />` : null;
}

/** Settings' Website Access card, fetched when Settings first shows (nothing without the scope). */
function LazyWebsiteAccessCard() {
  const readable = holds("browser.read");
  useEffect(() => {
    if (readable) lazyWebsite.want();
  }, [readable]);
  const loaded = lazyWebsite.module.value;
  if (loaded) return html`<${loaded.WebsiteAccessCard} />`;
  if (!readable || !lazyWebsite.failed.value) return null;
  return html`<section class="card" aria-label="Website Access">
    <h2>Website Access</h2>
    <${ReloadOffer} what="Website Access" />
  </section>`;
}

const learningModule = lazy(() => import("./learning-view.js"));

/** Settings' Learning card, fetched when Settings first shows. */
function LazyLearningCard() {
  useEffect(() => learningModule.want(), []);
  const loaded = learningModule.module.value;
  if (loaded) return html`<${loaded.LearningCard} />`;
  if (!learningModule.failed.value) return null;
  return html`<section class="card" aria-label="Learning">
    <h2>Learning</h2>
    <${ReloadOffer} what="The learning controls" />
  </section>`;
}
