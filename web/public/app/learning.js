// Feedback on a conversation (its own rule, a person's, or its kind of content's) with Undo,
// and the learning controls: pause and resume, scoped resets, excluded sources, and endorsing
// saved wording as the owner's writing style. The server applies every rule; this page only
// asks and shows the answer.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, onForget } from "./api.js";

/** @typedef {import("../../types/wire").FeedbackScope} Scope */
/** @typedef {import("../../types/wire").FeedbackSignal} Signal */
/** @typedef {import("../../types/wire").Feedback} Feedback */
/** @typedef {import("../../types/wire").LearningExclusion} Exclusion */
/** @typedef {import("../../types/wire").Learning} Learning */

/** The last feedback given on each conversation (thread id → the rule), for its Undo. */
export const given = signal(/** @type {Map<string, Feedback>} */ (new Map()));
/** A conversation's feedback error (thread id → message). */
export const feedbackErrors = signal(/** @type {Map<string, string>} */ (new Map()));
/** The learning controls, once read; `absent` on a server without them. */
export const learning = signal(/** @type {Learning | "absent" | null} */ (null));
export const learningError = signal(/** @type {string | null} */ (null));

onForget(() => {
  given.value = new Map();
  feedbackErrors.value = new Map();
  learning.value = null;
  learningError.value = null;
});

export const SIGNAL_WORDS = /** @type {Record<Signal, string>} */ ({
  important: "Important",
  less_important: "Less important",
  needs_reply: "Needs reply",
  no_reply: "No reply needed",
});

export const KIND_WORDS = /** @type {Record<string, string>} */ ({
  bulk: "newsletters and lists",
  transactional: "receipts and notifications",
  personal: "mail from people",
});

/** What a rule applies to, in words. @param {Feedback} rule */
export function target(rule) {
  if (rule.scope === "person") return `mail from ${rule.person}`;
  if (rule.scope === "kind") return KIND_WORDS[rule.kind ?? ""] ?? `${rule.kind} mail`;
  return "this conversation";
}

/** The reason a row shows instead of the classifier's answer. @param {Feedback} rule */
export function reason(rule) {
  return `${SIGNAL_WORDS[rule.signal]}: your rule for ${target(rule)}`;
}

/** @param {Map<string, any>} map @param {string} key @param {any} value */
function withEntry(map, key, value) {
  const next = new Map(map);
  if (value === null) next.delete(key);
  else next.set(key, value);
  return next;
}

/**
 * Gives feedback on a conversation; resolves with the conversation as it now shows, or null.
 * @param {string} thread @param {Signal} what @param {Scope} scope @param {string | null} person
 */
export async function give(thread, what, scope, person) {
  feedbackErrors.value = withEntry(feedbackErrors.value, thread, null);
  try {
    const answer = await api("POST", `/v1/email/threads/${encodeURIComponent(thread)}/feedback`, {
      body: scope === "person" ? { scope, signal: what, person } : { scope, signal: what },
    });
    given.value = withEntry(given.value, thread, answer.feedback);
    return answer.thread;
  } catch (error) {
    const words =
      error instanceof ApiError && error.code === "email_learning_paused"
        ? "Learning is paused: feedback can apply to this conversation only."
        : error instanceof ApiError && error.code === "email_source_excluded"
          ? "This conversation's sender or label is excluded from learning: feedback can apply to it only."
          : `The feedback was not applied: ${describe(error)}`;
    feedbackErrors.value = withEntry(feedbackErrors.value, thread, words);
    return null;
  }
}

/** Undoes the last feedback given on `thread`; resolves with the conversation as it now shows. @param {string} thread */
export async function undo(thread) {
  const rule = given.value.get(thread);
  if (!rule) return null;
  try {
    const answer = await api("DELETE", `/v1/email/feedback/${encodeURIComponent(rule.feedback_id)}`);
    given.value = withEntry(given.value, thread, null);
    return answer.thread;
  } catch (error) {
    feedbackErrors.value = withEntry(feedbackErrors.value, thread, `Undo failed: ${describe(error)}`);
    return null;
  }
}

export async function loadLearning() {
  try {
    learning.value = await api("GET", "/v1/email/learning");
    learningError.value = null;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 405 || error.code === "insufficient_scope")) {
      learning.value = "absent";
    } else {
      learningError.value = describe(error);
    }
  }
}

/** Runs `change`, then reads the controls again; whether it went through. @param {() => Promise<unknown>} change */
async function changing(change) {
  let done = false;
  try {
    await change();
    learningError.value = null;
    done = true;
  } catch (error) {
    learningError.value = describe(error);
  }
  await loadLearning();
  return done;
}

/** @param {boolean} paused */
export function pause(paused) {
  return changing(() => api("PUT", "/v1/email/learning", { body: { paused } }));
}

/** Forgets every rule about one person, one kind, or everything learnt. @param {{scope: "person" | "kind" | "everything", person?: string, kind?: string}} what */
export function reset(what) {
  return changing(() => api("POST", "/v1/email/learning/reset", { body: what }));
}

/** @param {"sender" | "label"} kind @param {string} value */
export function exclude(kind, value) {
  return changing(() => api("POST", "/v1/email/learning/exclusions", { body: { kind, value: value.trim() } }));
}

/** @param {string} id */
export function include(id) {
  return changing(() => api("DELETE", `/v1/email/learning/exclusions/${encodeURIComponent(id)}`));
}

/**
 * Endorses `text`, shown in the saved revision `revision` of `draft`, as the owner's writing
 * style; resolves with a sentence saying what happened.
 * @param {string} draft @param {number} revision @param {string} text
 */
export async function endorse(draft, revision, text) {
  try {
    await api("POST", `/v1/email/drafts/${encodeURIComponent(draft)}/style`, { body: { revision, text } });
    return { ok: true, words: "Kept as your writing style; Steward's drafts will follow it." };
  } catch (error) {
    const code = error instanceof ApiError ? error.code : "";
    const words =
      code === "revision_mismatch"
        ? "The draft was saved elsewhere since: nothing was kept. Save again, then choose the wording."
        : code === "email_learning_paused"
          ? "Learning is paused: resume it in Settings to keep wording as your style."
          : code === "email_style_not_in_draft"
            ? "Choose wording the saved draft shows."
            : describe(error);
    return { ok: false, words };
  }
}
