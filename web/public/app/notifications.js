// Notifications in the page: the server's pending list is the only authority (nothing about
// notifications is kept here). Opening one restores its conversation, focuses its approval or
// question card (or, for a finished call, opens the call in Calls), and acknowledges it. A server without the routes (404) hides all of it.
// With Web Push on (push.js), the service worker shows alerts; this page answers which
// conversation it shows (an alert for it is not shown), opens what a clicked alert names, and
// closes the alerts the server no longer lists.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, holds, onForget } from "./api.js";
import { onReconciled, select, selectedId, focusCard, sessions } from "./chat.js";
import { lazyCalls, mode, showingMain, view } from "./shell.js";

/** @typedef {import("../../types/wire").Notification} Notification */

/** @type {import("../vendor/signals-core.mjs").Signal<Notification[]>} */
export const pending = signal([]);
export const available = signal(true);
export const notificationError = signal(/** @type {string | null} */ (null));

export async function loadNotifications() {
  if (!available.value || !holds("notifications.read")) return;
  try {
    const list = await api("GET", "/v1/notifications");
    pending.value = list.notifications;
    notificationError.value = null;
    closeShown((id) => !list.notifications.some((/** @type {Notification} */ item) => item.notification_id === id));
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 405)) available.value = false;
    else if (!(error instanceof ApiError && error.status === 401)) notificationError.value = describe(error);
  }
}

/**
 * Opens a notification: its conversation, its card focused; then acknowledges it. The approval
 * of a reply draft's send opens that draft in Email instead (`showEmail` switches to it), where
 * Review & Send checks the approval against the draft.
 * @param {Notification} notification
 * @param {() => void} showEmail
 */
export async function openNotification(notification, showEmail) {
  const { session_id: session, approval_id: approval, question_id: question, call_id: call } = notification.payload;
  if (call) {
    // A finished call opens in Calls, read from the server (the notification says nothing of it).
    view.value = "calls";
    showingMain.value = true;
    lazyCalls.use((calls) => {
      calls.loadCalls();
      calls.openCall(call);
    });
  } else if (session) {
    const draft = approval ? await sendingDraft(session) : null;
    if (draft) {
      showEmail();
      // Email mode is kept out of the first load: fetched now if it was not yet.
      import("./email.js").then(
        (email) => email.openDraft(draft.threadId, draft.draftId),
        (error) => (notificationError.value = describe(error)),
      );
    } else {
      select(session);
      focusCard(approval ? { approvalId: approval } : question ? { questionId: question } : null);
    }
  }
  pending.value = pending.value.filter((item) => item.notification_id !== notification.notification_id);
  closeShown((id) => id === notification.notification_id);
  if (!holds("notifications.write")) return;
  try {
    await api("POST", `/v1/notifications/${encodeURIComponent(notification.notification_id)}/acknowledge`);
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "notification_not_found")) notificationError.value = describe(error);
  }
}

/**
 * The reply draft `session` sends, and its conversation, when it is a draft's send session;
 * null for a conversation (one the index shows is never read), a new message's draft (this
 * client writes replies only), or a failed read: Chat then shows the approval without Approve
 * once.
 * @param {string} session
 * @returns {Promise<{draftId: string, threadId: string} | null>}
 */
async function sendingDraft(session) {
  if (sessions.value.some((row) => row.session_id === session)) return null;
  try {
    const read = await api("GET", `/v1/sessions/${encodeURIComponent(session)}`);
    if (!read.draft_id) return null;
    const draft = await api("GET", `/v1/email/drafts/${encodeURIComponent(read.draft_id)}`);
    return draft.thread_id ? { draftId: draft.draft_id, threadId: draft.thread_id } : null;
  } catch {
    return null;
  }
}

/**
 * Closes the alerts the service worker shows whose notification `obsolete` names: the server no
 * longer lists them (answered elsewhere, acknowledged), or this page just opened one.
 * @param {(notificationId: string) => boolean} obsolete
 */
async function closeShown(obsolete) {
  if (!("serviceWorker" in navigator)) return;
  try {
    const registration = await navigator.serviceWorker.getRegistration();
    for (const shown of (await registration?.getNotifications()) ?? []) {
      const id = shown.data?.notification_id;
      if (typeof id === "string" && obsolete(id)) shown.close();
    }
  } catch {
    // No registration, or alerts not supported: nothing is shown.
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const KINDS = ["approval", "question", "schedule_outcome", "call_finished"];
const IDS = ["session_id", "run_id", "approval_id", "question_id", "occurrence_id", "call_id"];

/**
 * The version-1 tap dictionary in `value`, closed: its kind and identifiers, nothing else; null
 * when it is not one.
 * @param {any} value
 * @returns {Notification["payload"] | null}
 */
export function tapFrom(value) {
  if (!value || value.v !== 1 || !KINDS.includes(value.kind) || !UUID.test(String(value.notification_id))) return null;
  /** @type {any} */
  const tap = { v: 1, kind: value.kind, notification_id: value.notification_id };
  for (const key of IDS) if (typeof value[key] === "string" && UUID.test(value[key])) tap[key] = value[key];
  return tap;
}

/**
 * Opens what a clicked alert (or a link made from one) names, as the Notifications list does.
 * @param {any} value
 */
export function openTap(value) {
  const tap = tapFrom(value);
  if (!tap) return;
  const listed = pending.value.find((item) => item.notification_id === tap.notification_id);
  view.value = "chat";
  openNotification(listed ?? { notification_id: tap.notification_id, kind: tap.kind, payload: tap, created_at: new Date().toISOString() }, () => (mode.value = "email"));
}

/** The conversation this page shows in a focused, visible window, if any. */
function visibleSession() {
  if (document.visibilityState !== "visible" || !document.hasFocus()) return null;
  if (mode.value !== "chat" || view.value !== "chat") return null;
  const main = document.querySelector('main[aria-label="Chat"]');
  if (!main || !main.checkVisibility()) return null;
  return selectedId.value;
}

if ("serviceWorker" in navigator) {
  navigator.serviceWorker.addEventListener("message", (event) => {
    if (event.origin && event.origin !== window.location.origin) return;
    const message = event.data ?? {};
    if (message.type === "steward.showing") event.ports[0]?.postMessage({ session: visibleSession() });
    else if (message.type === "steward.open") openTap(message.tap);
  });
}

onReconciled(loadNotifications);

onForget(() => {
  pending.value = [];
  available.value = true;
  notificationError.value = null;
});
