// Chat state: the selected conversation's transcript built from its persisted events, the live
// transient output, and the actions that change them; the session index (the sidebar) is
// history.js's, re-exported here. Nothing here outlives the page except what the server owns.
import { signal, computed, batch } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, onForget } from "./api.js";
import * as attachments from "./attachments.js";
import { proveApproval, refuseTruncated } from "./approvals.js";

import { fenceReconciliation, missingRoute, reconcile, sessions, stopReconciling, UPGRADE_MESSAGE } from "./history.js";

export { DISPLAY_MAX_CHARS, proveApproval, refuseTruncated } from "./approvals.js";
export {
  fenceReconciliation,
  indexError,
  missingRoute,
  onReconciled,
  recent,
  reconcile,
  sessions,
  startReconciling,
  UPGRADE_MESSAGE,
} from "./history.js";

/**
 * @typedef {import("../../types/wire").SessionSummary} SessionRow
 * @typedef {{kind: "user", key: string, seq: number | null, runId: string | null, text: string,
 *   attachments: Array<{filename: string, artifact_id?: string, media_type?: string, size_bytes?: number}>,
 *   pending?: boolean, clientKey?: string}} UserItem
 * @typedef {{kind: "assistant", key: string, seq: number, runId: string, text: string}} AssistantItem
 * @typedef {{kind: "tool", key: string, seq: number, runId: string, tool: string, status: string, code: string | null, risk: string | null}} ToolItem
 * @typedef {{kind: "approval", key: string, seq: number, runId: string, approvalId: string, tool: string,
 *   risk: string, arguments: unknown, digests: Record<string, string>, status: string, deciding: string | null, error: string | null,
 *   proposals: unknown[], whole: unknown, proof: string, taskOffer: any, approvedFor: string | null,
 *   taskPermissionId: string | null}} ApprovalItem
 *   `proposals`: the arguments of each call of this tool the model proposed in the run, from the
 *   stored `assistant.message` events; `whole`: the arguments shown whole once proven (the
 *   proposal whose display is exactly this approval); `proof`: `checking`, `proven`, or why not.
 * @typedef {{kind: "question", key: string, seq: number, runId: string, questionId: string, text: string,
 *   answer: string | null, sending: boolean, error: string | null}} QuestionItem
 * @typedef {{kind: "end", key: string, seq: number, runId: string, state: string, reason: string | null, detail: string | null}} EndItem
 * @typedef {UserItem | AssistantItem | ToolItem | ApprovalItem | QuestionItem | EndItem} Item
 */

/** @type {import("../vendor/signals-core.mjs").Signal<string | null>} */
export const selectedId = signal(null);
/** @type {import("../vendor/signals-core.mjs").Signal<Item[]>} */
export const transcript = signal([]);
/** Transient output of the running run: text so far and whether the model is reasoning. */
export const live = signal({ runId: /** @type {string | null} */ (null), text: "", reasoning: false });
/** The run in progress in the selected session, if any. */
export const activeRun = signal(/** @type {string | null} */ (null));
export const composerText = signal("");
export const composerError = signal(/** @type {string | null} */ (null));
/** Whether the stream of the selected session is connected. */
export const streamState = signal(/** @type {"idle" | "open" | "reconnecting"} */ ("idle"));

/** The card a notification asked to focus, once it is in the transcript. */
export const focusRequest = signal(/** @type {{approvalId?: string, questionId?: string} | null} */ (null));

/** @param {{approvalId?: string, questionId?: string} | null} target */
export function focusCard(target) {
  focusRequest.value = target;
}

export const selected = computed(() => sessions.value.find((row) => row.session_id === selectedId.value) ?? null);

/** `Needs your approval`, `Needs your answer`, `Working…` or nothing. */
export const runStatus = computed(() => {
  const items = transcript.value;
  if (items.some((item) => item.kind === "approval" && item.status === "pending")) return "Needs your approval";
  if (items.some((item) => item.kind === "question" && item.answer === null)) return "Needs your answer";
  if (activeRun.value) return "Working…";
  return null;
});

// ---------------------------------------------------------------------------------------------
// The selected conversation and its stream.

/** @type {EventSource | null} */
let source = null;
/** The last persisted sequence applied; only persisted ids advance it. */
let lastSeq = 0;

function closeStream() {
  if (source) source.close();
  source = null;
  streamState.value = "idle";
}

/**
 * What the selected session's own read said, for a session outside the loaded index:
 * `checking` until it answers, `draft` (a draft's send session, whose approval is approved
 * only from Review & Send, checked there against the draft), `conversation`, or `unknown` (the
 * read failed).
 */
const readKind = signal(/** @type {"conversation" | "checking" | "draft" | "unknown"} */ ("conversation"));

/** Whether the selected session is a conversation: the index lists only conversations. */
export const sessionKind = computed(() =>
  selectedId.value === null || sessions.value.some((row) => row.session_id === selectedId.value) ? "conversation" : readKind.value,
);

/** Opens (or reopens) the selected session: its transcript is rebuilt from its events. */
export function select(/** @type {string | null} */ id) {
  closeStream();
  queue = [];
  if (id !== selectedId.value) attachments.clearPending();
  const indexed = id === null || sessions.value.some((row) => row.session_id === id);
  proposed.clear();
  batch(() => {
    selectedId.value = id;
    transcript.value = [];
    live.value = { runId: null, text: "", reasoning: false };
    activeRun.value = null;
    composerError.value = null;
    readKind.value = indexed ? "conversation" : "checking";
  });
  lastSeq = 0;
  if (id) openStream(id);
  if (id && !indexed) checkKind(id);
}

/** Reads a session the index did not show, to learn whether it sends a draft. @param {string} id */
async function checkKind(id) {
  let kind = /** @type {"conversation" | "draft" | "unknown"} */ ("unknown");
  try {
    const session = await api("GET", `/v1/sessions/${encodeURIComponent(id)}`);
    kind = session.draft_id ? "draft" : "conversation";
  } catch {
    // Not known: its approvals stay unapprovable here, as a draft's would.
  }
  if (selectedId.value === id) readKind.value = kind;
}

const PERSISTED = [
  "user.message.created",
  "assistant.message",
  "tool.started",
  "tool.result",
  "approval.requested",
  "approval.resolved",
  "question.asked",
  "question.answered",
  "run.completed",
  "run.failed",
  "run.cancelled",
  "mail.outcome_unknown",
  "mail.reconciled",
];

/** @param {string} id */
function openStream(id) {
  const stream = new EventSource(`/v1/sessions/${encodeURIComponent(id)}/events`);
  source = stream;
  streamState.value = "reconnecting";
  stream.onopen = () => {
    if (source === stream) streamState.value = "open";
  };
  // The browser reconnects by itself with Last-Event-ID; a closed stream after a run's end
  // simply reopens and waits for the next run.
  stream.onerror = () => {
    if (source === stream) streamState.value = stream.readyState === EventSource.CLOSED ? "idle" : "reconnecting";
    if (stream.readyState === EventSource.CLOSED && source === stream) {
      // A refusal (401, 404): the browser gives up; find out why through a plain read.
      api("GET", `/v1/sessions/${encodeURIComponent(id)}`).catch((error) => {
        composerError.value = describe(error);
      });
    }
  };
  for (const kind of PERSISTED) {
    stream.addEventListener(kind, (message) => {
      if (source !== stream) return;
      const seq = Number(/** @type {MessageEvent} */ (message).lastEventId);
      if (!Number.isSafeInteger(seq) || seq <= lastSeq) return; // already applied
      lastSeq = seq;
      enqueue(JSON.parse(/** @type {MessageEvent} */ (message).data));
    });
  }
  for (const kind of ["assistant.delta", "reasoning.delta"]) {
    stream.addEventListener(kind, (message) => {
      if (source !== stream) return;
      const delta = JSON.parse(/** @type {MessageEvent} */ (message).data);
      const current = live.value.runId === delta.run_id ? live.value : { runId: delta.run_id, text: "", reasoning: false };
      live.value =
        kind === "assistant.delta"
          ? { runId: delta.run_id, text: current.text + delta.text, reasoning: false }
          : { ...current, runId: delta.run_id, reasoning: true };
    });
  }
}

/**
 * The index of the last of the newest 50 items that `match`, or -1.
 * @param {Item[]} items @param {(item: Item) => boolean} match
 */
function findRecent(items, match) {
  for (let at = items.length - 1; at >= Math.max(0, items.length - 50); at -= 1) {
    if (match(items[at])) return at;
  }
  return -1;
}

/** Frames received and not yet applied: a replay of thousands is applied in a few batches. */
/** @type {Array<{seq: number, run_id: string, kind: string, payload: any}>} */
let queue = [];
let flushTimer = 0;
let titleTimer = 0;

/** @param {{seq: number, run_id: string, kind: string, payload: any}} frame */
function enqueue(frame) {
  queue.push(frame);
  if (!flushTimer) flushTimer = window.setTimeout(flush, 16);
}

function flush() {
  flushTimer = 0;
  const frames = queue;
  queue = [];
  batch(() => {
    const items = transcript.value.slice();
    for (const frame of frames) apply(frame, items);
    transcript.value = items;
  });
  proveNewCards();
}

// ---------------------------------------------------------------------------------------------
// What the model proposed, to show an approval's shortened arguments whole.

/** `<run>\n<tool>` → the arguments of each call of that tool the model proposed in that run. */
const proposed = new Map();

/** @param {string} runId @param {string} tool @param {unknown} args */
function propose(runId, tool, args) {
  const key = `${runId}\n${tool}`;
  proposed.set(key, [...(proposed.get(key) ?? []), args]);
}

/** @param {string} runId @param {string} tool @returns {unknown[]} */
function proposalsOf(runId, tool) {
  return proposed.get(`${runId}\n${tool}`) ?? [];
}

/** Approvals whose proof is under way, so each is proven once. */
const proving = new Set();

/** Proves every approval card still `checking`, each once; the card learns the outcome. */
function proveNewCards() {
  const session = selectedId.value;
  for (const item of transcript.value) {
    if (item.kind !== "approval" || item.proof !== "checking" || proving.has(item.approvalId)) continue;
    proving.add(item.approvalId);
    const approvalId = item.approvalId;
    proveApproval(item).then(
      (outcome) => {
        proving.delete(approvalId);
        if (selectedId.value === session) setApproval(approvalId, outcome);
      },
      () => {
        proving.delete(approvalId);
        if (selectedId.value === session) setApproval(approvalId, { proof: "What this approval holds could not be checked; it cannot be approved." });
      },
    );
  }
}

/**
 * Applies one persisted frame to `items`, a copy of the transcript being built.
 * @param {{seq: number, run_id: string, kind: string, payload: any}} frame
 * @param {Item[]} items
 */
function apply(frame, items) {
  const { seq, kind, payload } = frame;
  const runId = payload.run_id;
  const update = (/** @type {(item: Item) => boolean} */ match, /** @type {(item: any) => Item} */ change) => {
    items.forEach((item, at) => {
      if (match(item)) items[at] = change(item);
    });
  };
  switch (kind) {
    case "user.message.created": {
      const text = payload.message.text ?? "";
      const item = {
        kind: "user",
        key: `e${seq}`,
        seq,
        runId,
        text,
        attachments: payload.message.attachments,
      };
      // The optimistic bubble of this message is replaced in place (only the newest items can
      // hold one).
      const index = findRecent(items,
        (candidate) => candidate.kind === "user" && candidate.pending === true && (candidate.runId === runId || candidate.text === text),
      );
      if (index >= 0) items[index] = /** @type {Item} */ (item);
      else items.push(/** @type {Item} */ (item));
      activeRun.value = runId;
      break;
    }
    case "assistant.message":
      for (const call of payload.tool_calls ?? []) propose(runId, call.tool, call.arguments);
      if (payload.text) items.push({ kind: "assistant", key: `e${seq}`, seq, runId, text: payload.text });
      if (live.value.runId === runId) live.value = { runId, text: "", reasoning: false };
      break;
    case "tool.started":
      items.push({ kind: "tool", key: `t${payload.invocation_id}`, seq, runId, tool: payload.tool, status: "dispatching", code: null, risk: payload.risk ?? null });
      break;
    case "tool.result": {
      const key = `t${payload.invocation_id}`;
      if (items.some((item) => item.key === key)) {
        update((item) => item.key === key, (item) => ({ ...item, status: payload.status, code: payload.code, risk: payload.risk ?? item.risk }));
      } else {
        items.push({ kind: "tool", key, seq, runId, tool: payload.tool, status: payload.status, code: payload.code, risk: payload.risk ?? null });
      }
      break;
    }
    case "approval.requested":
      items.push({
          kind: "approval",
          key: `a${payload.approval_id}`,
          seq,
          runId,
          approvalId: payload.approval_id,
          tool: payload.tool,
          risk: payload.risk,
          arguments: payload.arguments,
          digests: payload.argument_digests,
          status: approvalStatus(payload.status),
          deciding: null,
          error: null,
          // A browser action's offer of a task permission; how an approved one was allowed.
          taskOffer: payload.task_offer ?? null,
          approvedFor: payload.approved_for ?? null,
          taskPermissionId: payload.task_permission_id ?? null,
          proposals: proposalsOf(runId, payload.tool),
          // Nothing cut: the arguments are whole as they are, proven at once.
          ...(Object.keys(payload.argument_digests ?? {}).length === 0 &&
          refuseTruncated({ arguments: payload.arguments, digests: {} }) === null
            ? { whole: payload.arguments, proof: "proven" }
            : { whole: null, proof: "checking" }),
      });
      break;
    case "approval.resolved":
      // The first stored resolution wins over anything the page believed.
      update(
        (item) => item.kind === "approval" && item.approvalId === payload.approval_id,
        (item) => ({
          ...item,
          status: approvalStatus(payload.status),
          deciding: null,
          approvedFor: payload.approved_for ?? item.approvedFor,
          taskPermissionId: payload.task_permission_id ?? item.taskPermissionId,
        }),
      );
      break;
    case "question.asked":
      items.push(
        { kind: "question", key: `q${payload.question_id}`, seq, runId, questionId: payload.question_id, text: payload.text, answer: null, sending: false, error: null },
      );
      break;
    case "question.answered":
      update(
        (item) => item.kind === "question" && item.questionId === payload.question_id,
        (item) => ({ ...item, answer: payload.answer, sending: false }),
      );
      break;
    case "run.completed":
    case "run.failed":
    case "run.cancelled":
      items.push(
        { kind: "end", key: `e${seq}`, seq, runId, state: payload.state, reason: payload.reason ?? payload.code ?? null, detail: payload.detail ?? null },
      );
      if (activeRun.value === runId) {
        activeRun.value = null;
        // A watched reply ended: the server may have titled the conversation; read the index
        // once more ten seconds later.
        window.clearTimeout(titleTimer);
        titleTimer = window.setTimeout(reconcile, 10_000);
      }
      if (live.value.runId === runId) live.value = { runId: null, text: "", reasoning: false };
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Actions.

/**
 * Sends the composer's text: an optimistic bubble first, then the message with a stable
 * idempotency key (reused if the same message is retried).
 */
export async function send() {
  const text = composerText.value.trim();
  const files = attachments.pending.value;
  if (!text && files.length === 0) return;
  const uploaded = attachments.ready();
  if (!uploaded) {
    composerError.value = files.some((file) => file.state === "failed")
      ? "A file did not upload: retry it or remove it."
      : "Wait for the files to finish uploading.";
    return;
  }
  const clientKey = crypto.randomUUID();
  /** @type {UserItem} */
  const bubble = {
    kind: "user",
    key: `p${clientKey}`,
    seq: null,
    runId: null,
    text,
    attachments: files.map((file) => ({ filename: file.name })),
    pending: true,
    clientKey,
  };
  batch(() => {
    transcript.value = [...transcript.value, bubble];
    composerText.value = "";
    composerError.value = null;
  });
  const restore = (/** @type {string} */ message) => {
    batch(() => {
      transcript.value = transcript.value.filter((item) => item.key !== bubble.key);
      composerText.value = text;
      composerError.value = message;
    });
  };
  try {
    const id = await ensureSession(text || files[0]?.name || "Attachments");
    const accepted = await submitWithRetry(id, text, uploaded, clientKey);
    attachments.clearPending();
    const runId = accepted.run.run_id;
    // The stream may have brought the run's end before this answer did.
    if (!ended(runId)) activeRun.value = runId;
    transcript.value = transcript.value.map((item) => (item.key === bubble.key ? { ...item, runId } : item));
  } catch (error) {
    if (error instanceof ApiError && error.code === "active_run_exists") {
      // Attach to the run in progress; this message is not queued.
      const named = error.problem?.run_id;
      if (named && !ended(named)) activeRun.value = named;
      restore("A reply is still in progress. Your message was not sent; send it when the reply ends.");
    } else {
      restore(describe(error));
    }
  }
}

/** @type {Promise<string> | null} */
let creating = null;

/** What a new conversation sends as its website profile: set by Website Access. */
let newSessionProfile = () => /** @type {string | null} */ (null);
/** What Website Access does when the server refuses that profile (gone, or not signed in). */
let profileRefused = () => {};
/** @param {() => string | null} pick @param {() => void} refused */
export function setNewSessionProfile(pick, refused) {
  newSessionProfile = pick;
  profileRefused = refused;
}

/**
 * The selected session, created (once, however many callers wait) when there is none yet.
 * @param {string} titleFrom the text its optimistic title is taken from
 * @returns {Promise<string>}
 */
export function ensureSession(titleFrom) {
  if (selectedId.value) return Promise.resolve(selectedId.value);
  if (!creating) {
    /** @type {Record<string, unknown>} */
    const body = { agent_id: "default", metadata: { title: firstLine(titleFrom) } };
    // The website profile chosen on this device, when it is ready (the server checks again).
    const profile = newSessionProfile();
    if (profile) body.browser_profile_id = profile;
    creating = api("POST", "/v1/sessions", { body })
      .then((created) => {
        sessions.value = [created, ...sessions.value];
        selectedId.value = created.session_id;
        readKind.value = "conversation";
        openStream(created.session_id);
        return /** @type {string} */ (created.session_id);
      })
      .catch((error) => {
        // The chosen website is no longer one the server accepts: it is not chosen any more,
        // and the owner reads why (sending again starts a conversation without it).
        if (error instanceof ApiError && ["browser_profile_not_found", "browser_profile_not_ready"].includes(error.code ?? "")) {
          profileRefused();
        }
        throw error;
      })
      .finally(() => {
        creating = null;
      });
  }
  return creating;
}

/** Whether the transcript holds the end of run `runId`. @param {string} runId */
function ended(runId) {
  return transcript.value.some((item) => item.kind === "end" && item.runId === runId);
}

/** The first non-empty line, as the optimistic title. @param {string} text */
function firstLine(text) {
  return (text.split("\n").find((line) => line.trim()) ?? text).trim().slice(0, 120);
}

/**
 * Submits one message; a network failure is retried with the same key, so the server creates
 * one run whatever happened to the first attempt.
 * @param {string} id @param {string} text @param {string[]} files @param {string} key
 */
async function submitWithRetry(id, text, files, key) {
  let attempt = 0;
  for (;;) {
    try {
      return await api("POST", `/v1/sessions/${encodeURIComponent(id)}/messages`, {
        body: text ? { text, attachments: files } : { attachments: files },
        headers: { "Idempotency-Key": key },
      });
    } catch (error) {
      const transient = error instanceof ApiError && (error.status === 0 || error.code === "idempotency_key_in_flight");
      if (!transient || attempt >= 2) throw error;
      attempt += 1;
      await new Promise((resolve) => window.setTimeout(resolve, 600 * attempt));
    }
  }
}

/**
 * Deletes a conversation: the server first; the row goes only after it agrees. A conversation
 * with a run in progress is refused (409) and stays.
 * @param {string} id
 * @returns {Promise<string | null>} why it was not deleted
 */
export async function deleteSession(id) {
  fenceReconciliation();
  try {
    await api("DELETE", `/v1/sessions/${encodeURIComponent(id)}`);
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "session_not_found")) {
      if (missingRoute(error)) return UPGRADE_MESSAGE;
      return error instanceof ApiError && error.code === "session_has_active_run"
        ? "This conversation has a reply in progress; stop it first."
        : describe(error);
    }
  }
  fenceReconciliation();
  sessions.value = sessions.value.filter((row) => row.session_id !== id);
  if (selectedId.value === id) select(null);
  reconcile();
  return null;
}

/** Stops the run in progress. */
export async function stop() {
  const run = activeRun.value;
  if (!run) return;
  try {
    await api("POST", `/v1/runs/${encodeURIComponent(run)}/cancel`);
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "run_not_active")) composerError.value = describe(error);
  }
}

/**
 * Decides an approval once: the controls are disabled from the first tap. `allow_for_task`
 * approves a browser action and grants the task permission its approval offers.
 * @param {string} approvalId @param {"approve_once" | "deny" | "allow_for_task"} decision
 */
export async function decide(approvalId, decision) {
  const card = transcript.value.find((item) => item.kind === "approval" && item.approvalId === approvalId);
  if (!card || card.kind !== "approval" || card.deciding || card.status !== "pending") return;
  const problem = refuseApproval(card);
  if (problem && decision !== "deny") {
    setApproval(approvalId, { error: problem });
    return;
  }
  setApproval(approvalId, { deciding: decision, error: null });
  try {
    const resolved = await api("POST", `/v1/approvals/${encodeURIComponent(approvalId)}/decision`, { body: { decision } });
    setApproval(approvalId, {
      status: approvalStatus(resolved.status ?? (decision === "deny" ? "denied" : "approved")),
      deciding: null,
      approvedFor: resolved.approved_for ?? null,
      taskPermissionId: resolved.task_permission_id ?? null,
    });
  } catch (error) {
    if (error instanceof ApiError && error.code === "approval_already_resolved") {
      setApproval(approvalId, { status: approvalStatus(error.problem?.resolution ?? "cancelled"), deciding: null });
    } else {
      setApproval(approvalId, { deciding: null, error: describe(error) });
    }
  }
}

/** Approval statuses are `PENDING`, `APPROVED`… on the wire; the page uses lower case. @param {string} status */
function approvalStatus(status) {
  return String(status).toLowerCase();
}

/** @param {string} approvalId @param {Partial<ApprovalItem>} change */
function setApproval(approvalId, change) {
  transcript.value = transcript.value.map((item) =>
    item.kind === "approval" && item.approvalId === approvalId ? { ...item, ...change } : item,
  );
}

/**
 * Why an approval in the selected session cannot be approved here, or `null`: a draft's send is
 * approved from Review & Send, where it is checked against the draft; otherwise only once its
 * shortened arguments are proven whole ([proveApproval]).
 * @param {{arguments: unknown, digests: Record<string, string>, proof?: string}} card
 */
export function refuseApproval(card) {
  switch (sessionKind.value) {
    case "draft":
      return "This sends an email draft: approve it from Review & Send, where it is checked against the draft.";
    case "checking":
      return "Checking what this approval is for…";
    case "unknown":
      return "What this approval is for could not be read; open the conversation again to decide it.";
    default:
      if (card.proof === "proven") return null;
      if (card.proof === "checking" || !card.proof) return CHECKING;
      return card.proof;
  }
}

/** What a card says while its shortened text is checked. */
export const CHECKING = "Checking the shortened text against what Steward proposed…";

/** Whether a card's refusal is only a check under way (said quietly, not as an alert). @param {string | null} refusal */
export function isChecking(refusal) {
  return refusal === CHECKING || refusal === "Checking what this approval is for…";
}

/**
 * Answers a question with its id.
 * @param {string} questionId @param {string} text
 */
export async function answer(questionId, text) {
  const card = transcript.value.find((item) => item.kind === "question" && item.questionId === questionId);
  if (!card || card.kind !== "question" || card.sending || card.answer !== null || !text.trim()) return;
  const set = (/** @type {Partial<QuestionItem>} */ change) => {
    transcript.value = transcript.value.map((item) => (item.kind === "question" && item.questionId === questionId ? { ...item, ...change } : item));
  };
  set({ sending: true, error: null });
  try {
    await api("POST", `/v1/runs/${encodeURIComponent(card.runId)}/input`, { body: { question_id: questionId, text } });
    set({ sending: false, answer: text });
  } catch (error) {
    set({ sending: false, error: describe(error) });
  }
}

onForget(() => {
  stopReconciling();
  closeStream();
  proposed.clear();
  batch(() => {
    sessions.value = [];
    selectedId.value = null;
    readKind.value = "conversation";
    transcript.value = [];
    activeRun.value = null;
    composerText.value = "";
    composerError.value = null;
  });
});
