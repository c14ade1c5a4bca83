// Notifications in the page: the server's pending list is the only authority (nothing about
// notifications is kept here). Opening one restores its conversation, focuses its approval or
// question card (or, for a finished call, opens the call in Calls), and acknowledges it. A server without the routes (404) hides all of it.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, holds, onForget } from "./api.js";
import { loadCalls, openCall } from "./calls.js";
import { onReconciled, select, focusCard, sessions } from "./chat.js";
import { showingMain, view } from "./shell.js";

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
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 405)) available.value = false;
    else if (!(error instanceof ApiError && error.status === 401)) notificationError.value = describe(error);
  }
}

/** What a notification asks for, in words. @param {Notification} notification */
export function headline(notification) {
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
    loadCalls();
    openCall(call);
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

onReconciled(loadNotifications);

onForget(() => {
  pending.value = [];
  available.value = true;
  notificationError.value = null;
});
