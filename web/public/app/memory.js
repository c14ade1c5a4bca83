// Memory (the server's `/v1/memories`, mounted with AGENT_MEMORY_API_ENABLED): the beliefs the
// agent formed about the owner, filtered by status, kind and the review flag; one belief's
// evidence and the answers that recalled it; Mark reviewed, Not true, Not relevant here (in a
// conversation) and Delete memory (confirmed). The server is the only authority: a server
// without the routes (404 or 405) hides Memory.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, holds, onForget } from "./api.js";
import { onReconciled } from "./chat.js";

/** @typedef {import("../../types/wire").Memory} Memory */
/** @typedef {import("../../types/wire").MemoryDetail} MemoryDetail */

export const available = signal(true);
/** @type {import("../vendor/signals-core.mjs").Signal<Memory[]>} */
export const list = signal([]);
export const nextCursor = signal(/** @type {string | null} */ (null));
export const loading = signal(false);
/** The filters: a status, a kind, and only those flagged for review. */
export const filters = signal(/** @type {{status: string, kind: string, needsReview: boolean}} */ ({ status: "", kind: "", needsReview: false }));
/** The belief shown with its evidence. @type {import("../vendor/signals-core.mjs").Signal<MemoryDetail | null>} */
export const shown = signal(null);
/** The belief whose deletion waits for the owner's confirmation. */
export const confirmingDelete = signal(/** @type {string | null} */ (null));
export const busy = signal(false);
export const error = signal(/** @type {string | null} */ (null));
/** What the last action did, said once (`role=status`). */
export const notice = signal(/** @type {string | null} */ (null));

/** Whether this page offers Memory: the server has the routes and the token may read them. */
export function offered() {
  return available.value && holds("memory.read");
}

/** @param {unknown} failure */
function settle(failure) {
  if (failure instanceof ApiError && (failure.status === 404 || failure.status === 405) && failure.code !== "memory_not_found") {
    available.value = false;
  } else if (!(failure instanceof ApiError && failure.status === 401)) {
    error.value = describe(failure);
  }
}

/** The words for a belief's kind. @type {Record<string, string>} */
export const KIND_WORDS = {
  fact: "Fact about you",
  preference: "Preference",
  relationship: "Relationship",
  commitment: "Commitment",
  routine: "Routine",
};

/** The words for a belief's state. @type {Record<string, string>} */
export const STATUS_WORDS = {
  active: "Not reviewed",
  reviewed: "Reviewed",
  not_true: "Not true",
};

/** Which load is the latest: an older answer never replaces a newer one. */
let loads = 0;

/** The first page under the filters, or (`more`) the next one. @param {boolean} [more] */
export async function load(more = false) {
  if (!offered()) return;
  const mine = (loads += 1);
  loading.value = true;
  try {
    const query = new URLSearchParams({ limit: "50" });
    const { status, kind, needsReview } = filters.value;
    if (status) query.set("status", status);
    if (kind) query.set("kind", kind);
    if (needsReview) query.set("needs_review", "true");
    if (more && nextCursor.value) query.set("cursor", nextCursor.value);
    const page = await api("GET", `/v1/memories?${query}`);
    if (mine !== loads) return;
    list.value = more ? [...list.value, ...page.memories] : page.memories;
    nextCursor.value = page.next_cursor;
    error.value = null;
  } catch (failure) {
    if (mine === loads) settle(failure);
  } finally {
    if (mine === loads) loading.value = false;
  }
}

/** Changes the filters and reads the first page. @param {Partial<{status: string, kind: string, needsReview: boolean}>} change */
export function filter(change) {
  filters.value = { ...filters.value, ...change };
  return load();
}

/** Reads one belief with its evidence and shows it. @param {string} id */
export async function inspect(id) {
  confirmingDelete.value = null;
  try {
    shown.value = await api("GET", `/v1/memories/${encodeURIComponent(id)}`);
    error.value = null;
  } catch (failure) {
    if (failure instanceof ApiError && failure.code === "memory_not_found") gone(id);
    else settle(failure);
  }
}

/** @param {string} id */
function gone(id) {
  list.value = list.value.filter((memory) => memory.memory_id !== id);
  if (shown.value?.memory.memory_id === id) shown.value = null;
  error.value = "That memory is no longer there.";
}

/** Whether a belief still belongs under the filters. @param {Memory} memory */
function matches(memory) {
  const { status, kind, needsReview } = filters.value;
  return (!status || memory.status === status) && (!kind || memory.kind === kind) && (!needsReview || memory.needs_review);
}

/** @param {Memory} memory */
function replace(memory) {
  list.value = list.value
    .map((held) => (held.memory_id === memory.memory_id ? memory : held))
    .filter((held) => held.memory_id !== memory.memory_id || matches(held));
  if (shown.value?.memory.memory_id === memory.memory_id) inspect(memory.memory_id);
}

/**
 * The owner's review: `mark_reviewed`, `not_true`, or `not_relevant_here` in `sessionId`'s
 * conversation.
 * @param {string} id @param {"mark_reviewed" | "not_true" | "not_relevant_here"} action @param {string} [sessionId]
 */
export async function review(id, action, sessionId) {
  busy.value = true;
  try {
    const body = action === "not_relevant_here" ? { action, session_id: sessionId } : { action };
    const memory = await api("POST", `/v1/memories/${encodeURIComponent(id)}/review`, { body });
    replace(memory);
    notice.value =
      action === "mark_reviewed"
        ? "Marked reviewed: Steward may use it in answers."
        : action === "not_true"
          ? "Marked not true: Steward will not use it, and will not form it again."
          : "Steward will not use it in this conversation again.";
    error.value = null;
    return true;
  } catch (failure) {
    if (failure instanceof ApiError && failure.code === "memory_not_found") gone(id);
    else settle(failure);
    return false;
  } finally {
    busy.value = false;
  }
}

/** Deletes a belief the owner confirmed deleting. @param {string} id */
export async function remove(id) {
  busy.value = true;
  try {
    await api("DELETE", `/v1/memories/${encodeURIComponent(id)}`);
    confirmingDelete.value = null;
    list.value = list.value.filter((memory) => memory.memory_id !== id);
    if (shown.value?.memory.memory_id === id) shown.value = null;
    notice.value = "Memory deleted. Steward will not form it again; the messages it came from stay.";
    error.value = null;
  } catch (failure) {
    if (failure instanceof ApiError && failure.code === "memory_not_found") gone(id);
    else settle(failure);
  } finally {
    busy.value = false;
  }
}

/** The beliefs one answer (a run) recalled, by run id, read once each. */
export const recalled = signal(/** @type {Map<string, Memory[] | "failed">} */ (new Map()));

/** Reads the beliefs a run's prompt received. @param {string} runId */
export async function loadRecalled(runId) {
  if (!offered()) return;
  try {
    const read = await api("GET", `/v1/runs/${encodeURIComponent(runId)}/memories`);
    recalled.value = new Map(recalled.value).set(runId, read.memories);
  } catch (failure) {
    if (failure instanceof ApiError && (failure.status === 404 || failure.status === 405) && failure.code !== "run_not_found") {
      available.value = false;
    } else {
      recalled.value = new Map(recalled.value).set(runId, "failed");
    }
  }
}

// Read when the page reconciles until something is held: a server without the routes is found
// out, and Memory and People leave the sidebar.
onReconciled(() => {
  if (list.value.length === 0 && !loading.value) load();
});

onForget(() => {
  available.value = true;
  list.value = [];
  nextCursor.value = null;
  loading.value = false;
  filters.value = { status: "", kind: "", needsReview: false };
  shown.value = null;
  confirmingDelete.value = null;
  busy.value = false;
  error.value = null;
  notice.value = null;
  recalled.value = new Map();
});
