// The draft being written for the open conversation: server-owned revisions saved as the owner
// types (optimistic: each save names the revision it started from), a conflict that keeps both
// versions, the history and its restore, and Review & Send, which settles the newest revision,
// freezes it, and offers approve-once only after the approval proves to be exactly that
// revision. Unsaved text lives in this page's memory only.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, onForget } from "./api.js";
import { DISPLAY_MAX_CHARS, pointerToken, sha256 } from "./approvals.js";

/** @typedef {import("../../types/wire").DraftContent} Content */
/** @typedef {import("../../types/wire").DraftRevision} Revision */
/** @typedef {import("../../types/wire").Approval} Approval */
/** @typedef {import("../../types/wire").DraftSend} Send */
/** @typedef {import("../../types/wire").Draft} Draft */
/**
 * @typedef {{
 *   draftId: string, accountId: string, threadId: string | null, providerThreadId: string | null,
 *   sendTool: string | null, fields: {to: string, cc: string},
 *   base: number, author: "owner" | "agent", saved: Content, local: Content, saving: boolean, error: string | null,
 *   conflict: {server: Draft, local: Content} | null, history: Revision[] | null,
 *   send: Send | null, review: Review | null,
 * }} Editor
 */
/**
 * What Review & Send shows: the frozen content (this page's own copy of the revision it
 * froze), where it is, and why approve-once is refused when it is.
 * @typedef {{frozen: Content, revision: number, step: "settling" | "freezing" | "waiting" | "verified" | "refused" | "approving" | "denying" | "done" | "failed", refusal: string | null, message: string | null, approvalId: string | null}} Review
 */

/** How long the editor waits after the last keystroke before it saves. */
export const AUTOSAVE_MS = 800;
/** Save attempts Review & Send makes to settle the newest revision before it gives up. */
export const SETTLE_ATTEMPTS = 3;
/** How often a frozen send's state is read, and for how long before the page stops waiting. */
export const FOLLOW_MS = 500;
export const FOLLOW_WAIT_MS = 120_000;

/** The open editor, or null. */
export const editor = signal(/** @type {Editor | null} */ (null));
/** Why the editor could not open. */
export const openError = signal(/** @type {string | null} */ (null));

let timer = /** @type {number | null} */ (null);
/** Bumped when the editor closes or another opens: a late answer for an older one is dropped. */
let generation = 0;

function clearTimer() {
  if (timer !== null) window.clearTimeout(timer);
  timer = null;
}

export function close() {
  clearTimer();
  generation += 1;
  const leaving = editor.value;
  editor.value = null;
  openError.value = null;
  if (leaving) keepUnsaved(leaving);
}

/**
 * Text not saved when its editor closes is saved on the way out: over the revision it started
 * from, or, in a conflict, over the other version (which the history keeps), so neither is lost.
 * @param {Editor} leaving
 */
function keepUnsaved(leaving) {
  const base = leaving.conflict ? leaving.conflict.server.revision : leaving.base;
  const saved = leaving.conflict ? contentOf(leaving.conflict.server) : leaving.saved;
  if (same(leaving.local, saved) || leaving.review) return;
  api("PUT", `/v1/email/drafts/${encodeURIComponent(leaving.draftId)}`, { body: { expected_revision: base, ...copy(leaving.local) } }).catch(() => {
    // The page has moved on; a refused save leaves the server's version, as the owner last saw.
  });
}

onForget(close);

/** @param {Content} a @param {Content} b */
export function same(a, b) {
  return a.subject === b.subject && a.body === b.body && a.to.join("\n") === b.to.join("\n") && a.cc.join("\n") === b.cc.join("\n");
}

/** @param {Content} content @returns {Content} */
function copy(content) {
  return { to: [...content.to], cc: [...content.cc], subject: content.subject, body: content.body };
}

/** @param {Content} draft */
function contentOf(draft) {
  return copy({ to: draft.to, cc: draft.cc, subject: draft.subject, body: draft.body });
}

/** Addresses typed in one field: separated by commas, semicolons or white space. @param {string} text */
export function addresses(text) {
  return text
    .split(/[\s,;]+/)
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}

/** @param {Partial<Editor>} change */
function update(change) {
  const current = editor.value;
  if (current) editor.value = { ...current, ...change };
}

/**
 * Opens the draft of a conversation: its newest draft when it has one, else a new reply to
 * those who wrote (not the owner), with the subject prefixed `Re:`.
 * @param {{thread_id: string, account_id: string, provider_thread_id: string, subject: string, draft_id?: string | null, correspondents: {address: string}[]}} thread
 * @param {string | null} ownAddress
 * @param {string | null} sendTool the account's send tool on this server (from its account)
 */
export async function openFor(thread, ownAddress, sendTool) {
  close();
  const mine = generation;
  try {
    /** @type {Draft} */
    let draft;
    if (thread.draft_id) {
      draft = await api("GET", `/v1/email/drafts/${encodeURIComponent(thread.draft_id)}`);
    } else {
      const own = (ownAddress ?? "").toLowerCase();
      const to = thread.correspondents.map((who) => who.address).filter((address) => address.toLowerCase() !== own);
      const subject = /^re:/i.test(thread.subject) ? thread.subject : `Re: ${thread.subject}`;
      draft = await api("POST", "/v1/email/drafts", { body: { thread_id: thread.thread_id, to: to.slice(0, 1), subject, body: "" } });
    }
    if (mine !== generation) return;
    await show(draft, thread.provider_thread_id, sendTool);
  } catch (error) {
    if (mine === generation) openError.value = describe(error);
  }
}

/** @param {Content} content */
function fieldsOf(content) {
  return { to: content.to.join(", "), cc: content.cc.join(", ") };
}

/** @param {Draft} draft @param {string | null} providerThreadId @param {string | null} sendTool */
async function show(draft, providerThreadId, sendTool) {
  const mine = generation;
  editor.value = {
    draftId: draft.draft_id,
    accountId: draft.account_id,
    threadId: draft.thread_id ?? null,
    providerThreadId,
    sendTool,
    fields: fieldsOf(draft),
    base: draft.revision,
    author: draft.author,
    saved: contentOf(draft),
    local: contentOf(draft),
    saving: false,
    error: null,
    conflict: null,
    history: null,
    send: draft.send ?? null,
    review: null,
  };
  const send = draft.send;
  if (send && ["awaiting_approval", "sending", "outcome_unknown", "preparing"].includes(send.state)) {
    // A send left waiting or under way: the revision it froze is what is reviewed (read from
    // the history when it is not the newest).
    let frozen = contentOf(draft);
    if (send.revision !== draft.revision) {
      try {
        const history = await api("GET", `/v1/email/drafts/${encodeURIComponent(draft.draft_id)}/revisions`);
        const revision = history.revisions.find((/** @type {Revision} */ r) => r.revision === send.revision);
        if (!revision || mine !== generation) return;
        frozen = contentOf(revision);
      } catch (error) {
        if (mine === generation) update({ error: describe(error) });
        return;
      }
    }
    if (mine === generation) follow(send.revision, frozen);
  }
}

/** The conversation Steward is writing a reply for, while it does. */
export const proposing = signal(/** @type {string | null} */ (null));

/**
 * Asks Steward to propose a reply in a conversation; once it lands (`settle` follows the
 * operation), the conversation's draft opens with it as the newest revision.
 * @param {{thread_id: string, provider_thread_id: string} & Record<string, any>} thread
 * @param {(id: string) => Promise<{state: string, error?: string | null}>} settle
 * @param {string | null} sendTool the account's send tool on this server
 */
export async function propose(thread, settle, sendTool) {
  close();
  proposing.value = thread.thread_id;
  const mine = generation;
  try {
    const answer = await api("POST", `/v1/email/threads/${encodeURIComponent(thread.thread_id)}/proposal`);
    const settled = await settle(answer.operation.operation_id);
    if (mine !== generation) return;
    /** @type {Draft} */
    const draft = await api("GET", `/v1/email/drafts/${encodeURIComponent(answer.draft.draft_id)}`);
    if (mine !== generation) return;
    await show(draft, thread.provider_thread_id, sendTool);
    if (settled.state !== "succeeded") {
      update({
        error:
          settled.error === "email.draft_changed"
            ? "Steward's proposal was not added: the draft changed meanwhile."
            : `Steward could not propose a reply (${settled.error ?? settled.state}).`,
      });
    }
  } catch (error) {
    if (mine === generation) openError.value = describe(error);
  } finally {
    if (proposing.value === thread.thread_id) proposing.value = null;
  }
}

/**
 * The owner typed: the local copy changes at once and is saved shortly. Recipients come as the
 * text typed (kept as typed, separators and all) and are read as addresses.
 * @param {Partial<Content> | {toText: string} | {ccText: string}} change
 */
export function edit(change) {
  const current = editor.value;
  if (!current) return;
  let local = { ...current.local };
  let fields = current.fields;
  if ("toText" in change) {
    fields = { ...fields, to: change.toText };
    local.to = addresses(change.toText);
  } else if ("ccText" in change) {
    fields = { ...fields, cc: change.ccText };
    local.cc = addresses(change.ccText);
  } else {
    local = { ...local, .../** @type {Partial<Content>} */ (change) };
  }
  update({ local, fields, error: null });
  clearTimer();
  timer = window.setTimeout(() => {
    timer = null;
    save();
  }, AUTOSAVE_MS);
}

/**
 * Saves the local copy as the next revision if it differs from the newest saved one. Resolves
 * with whether the newest revision now holds the local copy.
 * @returns {Promise<boolean>}
 */
export async function save() {
  const current = editor.value;
  if (!current || current.conflict) return false;
  if (same(current.local, current.saved)) return true;
  if (current.saving) return false;
  const mine = generation;
  const sent = copy(current.local);
  update({ saving: true });
  try {
    /** @type {Draft} */
    const saved = await api("PUT", `/v1/email/drafts/${encodeURIComponent(current.draftId)}`, {
      body: { expected_revision: current.base, ...sent },
    });
    if (mine !== generation) return false;
    update({ saving: false, base: saved.revision, author: saved.author, saved: contentOf(saved), send: saved.send, error: null });
    const now = editor.value;
    // Typed meanwhile: that is saved next.
    return now ? same(now.local, now.saved) || save() : false;
  } catch (error) {
    if (mine !== generation) return false;
    if (error instanceof ApiError && error.code === "revision_mismatch" && error.problem) {
      const problem = /** @type {any} */ (error.problem);
      update({ saving: false, conflict: { server: problem.server, local: sent } });
    } else if (error instanceof ApiError && error.code === "email_draft_sending") {
      update({ saving: false, error: "This draft was approved for sending; it no longer changes." });
      refresh();
    } else {
      update({ saving: false, error: `Not saved: ${describe(error)}` });
    }
    return false;
  }
}

/** Reads the draft again (its send's state). */
async function refresh() {
  const current = editor.value;
  if (!current) return;
  const mine = generation;
  try {
    /** @type {Draft} */
    const draft = await api("GET", `/v1/email/drafts/${encodeURIComponent(current.draftId)}`);
    if (mine === generation) update({ send: draft.send });
  } catch {
    // The editor keeps what it showed.
  }
}

/** Conflict: keep this page's version, saved on top of the server's newest. */
export async function keepMine() {
  const current = editor.value;
  if (!current?.conflict) return;
  const server = current.conflict.server;
  // What the page holds now, with anything typed while the conflict showed.
  update({ conflict: null, base: server.revision, saved: contentOf(server) });
  await save();
}

/** Conflict: take the server's newest version; this page's edits are dropped. */
export function useSaved() {
  const current = editor.value;
  if (!current?.conflict) return;
  const server = current.conflict.server;
  update({
    conflict: null,
    base: server.revision,
    author: server.author,
    saved: contentOf(server),
    local: contentOf(server),
    fields: fieldsOf(server),
    send: server.send,
  });
}

export async function loadHistory() {
  const current = editor.value;
  if (!current) return;
  const mine = generation;
  try {
    const answer = await api("GET", `/v1/email/drafts/${encodeURIComponent(current.draftId)}/revisions`);
    if (mine === generation) update({ history: answer.revisions });
  } catch (error) {
    if (mine === generation) update({ error: describe(error) });
  }
}

export function hideHistory() {
  update({ history: null });
}

/** Restores revision `revision` as the newest (after this page's edits are saved). @param {number} revision */
export async function restore(revision) {
  if (editor.value?.review) return;
  if (!(await save())) {
    update({ error: "Your latest edits are not saved yet, so nothing was restored. Try again in a moment." });
    return;
  }
  const current = editor.value;
  if (!current) return;
  const mine = generation;
  try {
    /** @type {Draft} */
    const draft = await api("POST", `/v1/email/drafts/${encodeURIComponent(current.draftId)}/revisions/${revision}/restore`, {
      body: { expected_revision: current.base },
    });
    if (mine !== generation) return;
    update({
      base: draft.revision,
      author: draft.author,
      saved: contentOf(draft),
      local: contentOf(draft),
      fields: fieldsOf(draft),
      send: draft.send,
      history: null,
      error: null,
    });
  } catch (error) {
    if (mine !== generation) return;
    if (error instanceof ApiError && error.code === "revision_mismatch" && error.problem) {
      const problem = /** @type {any} */ (error.problem);
      update({ conflict: { server: problem.server, local: copy(current.local) }, history: null });
    } else {
      update({ error: describe(error) });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Review & Send.

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => window.setTimeout(resolve, ms));

/** @param {Partial<Review>} change */
function reviewUpdate(change) {
  const current = editor.value;
  if (current?.review) update({ review: { ...current.review, ...change } });
}

/**
 * Settles the newest revision (bounded save attempts), freezes it, waits for the worker to
 * raise its approval and verifies it against this page's own copy of what was frozen. Every
 * step belongs to the draft it started on: opening another ends it.
 */
export async function reviewAndSend() {
  clearTimer();
  const start = editor.value;
  if (!start) return;
  const mine = generation;
  update({ review: { frozen: copy(start.local), revision: start.base, step: "settling", refusal: null, message: null, approvalId: null } });
  let settled = false;
  for (let attempt = 0; attempt < SETTLE_ATTEMPTS && !settled; attempt += 1) {
    settled = await save();
    if (mine !== generation) return;
    if (editor.value?.conflict) break;
    if (!settled) await sleep(300 * (attempt + 1));
    if (mine !== generation) return;
  }
  const current = editor.value;
  if (!current || mine !== generation) return;
  if (!settled || current.conflict) {
    reviewUpdate({
      step: "failed",
      message: current.conflict
        ? "The draft changed elsewhere, so nothing was frozen. Choose a version first."
        : `Your latest edits could not be saved, so nothing was frozen${current.error ? ` (${current.error.replace(/^Not saved: /, "")})` : ""}.`,
    });
    return;
  }
  const frozen = copy(current.saved);
  const revision = current.base;
  reviewUpdate({ frozen, revision, step: "freezing" });
  try {
    /** @type {Draft} */
    const draft = await api("POST", `/v1/email/drafts/${encodeURIComponent(current.draftId)}/review`, { body: { revision } });
    if (mine !== generation) return;
    update({ send: draft.send });
  } catch (error) {
    if (mine === generation) reviewUpdate({ step: "failed", message: describe(error) });
    return;
  }
  await follow(revision, frozen);
}

/**
 * Follows the frozen send until it needs the owner or settles. An approval is verified first;
 * until it proves to be exactly the frozen revision, approve-once is not offered, and only the
 * approval verified can be approved.
 * @param {number} revision @param {Content} frozen
 */
async function follow(revision, frozen) {
  const mine = generation;
  const current = editor.value;
  if (!current) return;
  if (!current.review) update({ review: { frozen, revision, step: "waiting", refusal: null, message: null, approvalId: null } });
  else reviewUpdate({ step: "waiting", message: null });
  const started = Date.now();
  let failures = 0;
  for (;;) {
    const now = editor.value;
    if (mine !== generation || !now) return;
    const send = now.send;
    if (send && send.revision === revision) {
      const approval = send.approval;
      if (send.state === "awaiting_approval" && approval && approval.status === "PENDING") {
        const refusal = await verify(approval, frozen, now);
        const after = editor.value;
        if (mine !== generation || !after) return;
        // The approval checked must still be the one waiting.
        if (after.send?.approval?.approval_id !== approval.approval_id) continue;
        reviewUpdate(refusal ? { step: "refused", refusal, approvalId: null } : { step: "verified", approvalId: approval.approval_id });
        return;
      }
      if (send.state === "sent" || send.state === "not_sent" || send.state === "unconfirmed") {
        reviewUpdate({ step: "done" });
        return;
      }
    }
    if (Date.now() - started > FOLLOW_WAIT_MS) {
      const state = send?.revision === revision ? send.state : null;
      reviewUpdate({
        step: "failed",
        message:
          state === "outcome_unknown"
            ? "The mailbox is still being checked for this send. It will not be sent again."
            : state === "sending"
              ? "The send was approved and has not finished yet. It will not be sent again from here; look again later."
              : "The server has not raised the approval yet. Nothing was sent; look again later.",
      });
      return;
    }
    await sleep(FOLLOW_MS);
    try {
      /** @type {Draft} */
      const draft = await api("GET", `/v1/email/drafts/${encodeURIComponent(now.draftId)}`);
      failures = 0;
      if (mine === generation) update({ send: draft.send });
    } catch (error) {
      failures += 1;
      if (failures >= 3) {
        if (mine === generation) {
          reviewUpdate({ step: "failed", message: `The send's status cannot be read (${describe(error)}). It will not be sent again from here.` });
        }
        return;
      }
    }
  }
}

/**
 * Decides the send's approval; what went wrong, or null once it is decided (by this decision or
 * an earlier one: the draft's state then says which).
 * @param {string} approvalId @param {"approve_once" | "deny"} decision
 * @returns {Promise<string | null>}
 */
async function decide(approvalId, decision) {
  try {
    await api("POST", `/v1/approvals/${encodeURIComponent(approvalId)}/decision`, { body: { decision } });
    return null;
  } catch (error) {
    return error instanceof ApiError && error.code === "approval_already_resolved" ? null : describe(error);
  }
}

/** Approve once: only the approval verified, only while it is still the one waiting. */
export async function approveOnce() {
  const mine = generation;
  const current = editor.value;
  const review = current?.review;
  const send = current?.send;
  if (!current || !review || review.step !== "verified" || !review.approvalId) return;
  if (!send || send.state !== "awaiting_approval" || send.approval?.approval_id !== review.approvalId) {
    reviewUpdate({ step: "refused", refusal: "It is no longer the approval that was checked.", approvalId: null });
    return;
  }
  reviewUpdate({ step: "approving", message: null });
  const failure = await decide(review.approvalId, "approve_once");
  if (mine !== generation) return;
  if (failure) {
    reviewUpdate({ step: "verified", message: failure });
    return;
  }
  await refresh();
  if (mine === generation) await follow(review.revision, review.frozen);
}

/** Deny: nothing is sent; the draft can change again. */
export async function deny() {
  const mine = generation;
  const current = editor.value;
  const approval = current?.send?.approval;
  if (!current?.review || !approval) return;
  reviewUpdate({ step: "denying" });
  const failure = await decide(approval.approval_id, "deny");
  if (mine !== generation) return;
  if (failure) {
    reviewUpdate({ step: "refused", message: failure });
    return;
  }
  await refresh();
  if (mine === generation) update({ review: null });
}

/** Back to editing: the next save voids a freeze nobody approved. */
export function backToEditing() {
  update({ review: null });
}

// ---------------------------------------------------------------------------------------------
// Verification: the approval must be exactly the frozen draft.

const SEND_TOOL = /^mcp\.mail(?:_([a-z0-9_-]+))?_send\.send_message$/;

/**
 * Why `approval` is not exactly the frozen draft, or null when it is: the account's
 * `send_message` tool (as its account names it, `sendTool`); exactly the members `account_id`, `thread_id` (for a reply), `to`, `cc`,
 * `subject`, `body`; each value equal to the frozen one, where a string over 512 characters is
 * shown cut and proven by the SHA-256 digest of the whole (a cut string without its digest, or
 * a digest for anything else, is refused).
 * @param {Approval} approval @param {Content} frozen
 * @param {{accountId: string, providerThreadId: string | null, threadId: string | null, sendTool: string | null}} draft
 * @returns {Promise<string | null>}
 */
export async function verify(approval, frozen, draft) {
  const tool = SEND_TOOL.exec(approval.tool);
  if (!tool) return `It asks for ${approval.tool}, not a send.`;
  if (tool[1] && tool[1] !== draft.accountId) return `It sends from account ${tool[1]}, not ${draft.accountId}.`;
  if (approval.tool !== draft.sendTool) return `It asks for ${approval.tool}, not account ${draft.accountId}'s send tool.`;
  /** @type {Record<string, unknown>} */
  const expected = { account_id: draft.accountId, to: frozen.to, cc: frozen.cc, subject: frozen.subject, body: frozen.body };
  if (draft.threadId) {
    if (!draft.providerThreadId) return "The conversation it replies in is unknown here.";
    expected.thread_id = draft.providerThreadId;
  }
  const shown = approval.arguments ?? {};
  const names = Object.keys(shown).sort().join(",");
  if (names !== Object.keys(expected).sort().join(",")) return `Its arguments (${names}) are not the draft's.`;
  const digests = approval.argument_digests ?? {};
  const proven = new Set();
  /** @param {string} pointer @param {unknown} value @param {unknown} mine @returns {Promise<string | null>} */
  const same = async (pointer, value, mine) => {
    if (typeof mine !== "string" || typeof value !== "string") return `${pointer} is not the draft's.`;
    const whole = [...mine];
    if (whole.length <= DISPLAY_MAX_CHARS) {
      return value === mine ? null : `${pointer} differs from the draft.`;
    }
    const digest = digests[pointer];
    if (!digest) return `${pointer} is cut without a digest to prove the rest.`;
    proven.add(pointer);
    if (value !== whole.slice(0, DISPLAY_MAX_CHARS).join("")) return `${pointer} differs from the draft.`;
    return digest === (await sha256(mine)) ? null : `${pointer} differs from the draft beyond what is shown.`;
  };
  for (const [name, mine] of Object.entries(expected)) {
    const value = shown[name];
    const pointer = `/${pointerToken(name)}`;
    if (Array.isArray(mine)) {
      if (!Array.isArray(value) || value.length !== mine.length) return `${pointer} is not the draft's.`;
      for (let index = 0; index < mine.length; index += 1) {
        const wrong = await same(`${pointer}/${index}`, value[index], mine[index]);
        if (wrong) return wrong;
      }
    } else {
      const wrong = await same(pointer, value, mine);
      if (wrong) return wrong;
    }
  }
  const stray = Object.keys(digests).find((pointer) => !proven.has(pointer));
  if (stray) return `It carries a digest for ${stray}, which is not cut.`;
  return null;
}
