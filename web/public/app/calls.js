// Calls (the server's `/v1/calls`, mounted with calling on): the list, one call read on
// demand, cancelling an approved call before it is placed and deleting a settled one. The
// server is the only authority; a server without the routes (404 or 405) hides Calls.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, holds, onForget } from "./api.js";
import { onReconciled } from "./chat.js";

/** @typedef {import("../../types/wire").CallSummary} CallSummary */
/** @typedef {import("../../types/wire").Call} Call */

export const available = signal(true);
/** @type {import("../vendor/signals-core.mjs").Signal<CallSummary[]>} */
export const list = signal([]);
/** The call shown, read whole. @type {import("../vendor/signals-core.mjs").Signal<Call | null>} */
export const shown = signal(null);
/** The call whose deletion waits for the owner's confirmation. */
export const confirmingDelete = signal(/** @type {string | null} */ (null));
export const busy = signal(false);
export const error = signal(/** @type {string | null} */ (null));

/** Whether this page offers Calls: the server has the routes and the token may read them. */
export function offered() {
  return available.value && holds("call.read");
}

/** @param {unknown} failure */
function settle(failure) {
  if (failure instanceof ApiError && (failure.status === 404 || failure.status === 405) && failure.code !== "call_not_found") {
    available.value = false;
  } else if (!(failure instanceof ApiError && failure.status === 401)) {
    error.value = describe(failure);
  }
}

/** The most pages of 100 calls the list follows. */
const MAX_PAGES = 10;

export async function loadCalls() {
  if (!offered()) return;
  try {
    /** @type {CallSummary[]} */
    const all = [];
    /** @type {string | null} */
    let cursor = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const query = cursor ? `?limit=100&cursor=${encodeURIComponent(cursor)}` : "?limit=100";
      const read = await api("GET", `/v1/calls${query}`);
      all.push(...read.calls);
      cursor = read.next_cursor;
      if (!cursor) break;
    }
    list.value = all;
    error.value = null;
  } catch (failure) {
    settle(failure);
  }
}

/** Reads one call whole and shows it. @param {string} id */
export async function openCall(id) {
  confirmingDelete.value = null;
  try {
    shown.value = await api("GET", `/v1/calls/${encodeURIComponent(id)}`);
    error.value = null;
  } catch (failure) {
    if (failure instanceof ApiError && failure.code === "call_not_found") {
      shown.value = null;
      list.value = list.value.filter((call) => call.call_id !== id);
      error.value = "That call is no longer there.";
    } else settle(failure);
  }
}

/** Cancels an approved call before it is placed. @param {string} id */
export async function cancelCall(id) {
  busy.value = true;
  try {
    await api("POST", `/v1/calls/${encodeURIComponent(id)}/cancel`);
    await Promise.all([loadCalls(), openCall(id)]);
  } catch (failure) {
    settle(failure);
  } finally {
    busy.value = false;
  }
}

/** Deletes a call the owner confirmed deleting. @param {string} id */
export async function deleteCall(id) {
  busy.value = true;
  try {
    await api("DELETE", `/v1/calls/${encodeURIComponent(id)}`);
    confirmingDelete.value = null;
    if (shown.value?.call.call_id === id) shown.value = null;
    list.value = list.value.filter((call) => call.call_id !== id);
    error.value = null;
  } catch (failure) {
    if (failure instanceof ApiError && failure.code === "call_active") {
      error.value = "This call is still in progress, or a conversation is using it. Try again when it has ended.";
    } else settle(failure);
  } finally {
    busy.value = false;
  }
}

/** The words for a call's state. @type {Record<string, string>} */
export const STATE_WORDS = {
  approved: "Approved, waiting to be placed",
  dispatching: "Being placed",
  uncertain: "Checking whether it was placed",
  dispatched: "Placed",
  finished: "Finished",
  not_placed: "Not placed",
  cancelled: "Cancelled",
};

/** Why a call was not placed, in words. @type {Record<string, string>} */
export const FAILURE_WORDS = {
  refused: "the call provider refused it",
  revision_changed: "the call settings changed after you approved it; approve it again",
  configuration_missing: "the call settings could not be read",
  brief_invalid: "the brief could not be placed",
  not_found_at_provider: "the call provider has no record of it",
  result_unavailable: "the call provider lost its result",
};

/** A call's one-line title. @param {CallSummary} call */
export function title(call) {
  const who = call.counterpart ?? "Unknown number";
  return call.direction === "inbound" ? `Message from ${who}` : `Call to ${who}`;
}

onReconciled(loadCalls);

onForget(() => {
  available.value = true;
  list.value = [];
  shown.value = null;
  confirmingDelete.value = null;
  busy.value = false;
  error.value = null;
});
