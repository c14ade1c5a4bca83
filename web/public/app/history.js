// The session index (the sidebar): read to its end, pruned only where the server confirms a
// delete, reconciled on focus and every 30 seconds; an older server without the history routes
// gets an upgrade message.
import { signal, computed } from "../vendor/signals-core.mjs";
import { api, ApiError, describe } from "./api.js";
import * as attachments from "./attachments.js";

/** @typedef {import("../../types/wire").SessionSummary} SessionRow */

/** @type {import("../vendor/signals-core.mjs").Signal<SessionRow[]>} */
export const sessions = signal([]);
export const indexError = signal(/** @type {string | null} */ (null));

let reconcileTimer = 0;
let lastSignature = "";
/** Bumped by every folder mutation: an index read that started before it is discarded. */
let generation = 0;
/** Called after each index read that was kept (the folders follow it). */
const reconciled = new Set();
/** Whether an index read was kept since the page started reconciling. */
let reconciledOnce = false;

export function fenceReconciliation() {
  generation += 1;
}

/**
 * A listener added after a kept read (by a module fetched after the first paint) is called at
 * once too: it missed that read.
 * @param {() => unknown} listener
 */
export function onReconciled(listener) {
  reconciled.add(listener);
  if (reconciledOnce) listener();
}

/**
 * What the page says to a server without the history routes (the index or delete answering 404
 * for want of the route, or 405): an older release, which this client cannot list or delete on.
 */
export const UPGRADE_MESSAGE =
  "This server runs an older Steward without conversation history: upgrade it to list and delete conversations here.";

/** Whether `error` says the route itself is missing (not that a session is). @param {unknown} error */
export function missingRoute(error) {
  return error instanceof ApiError && (error.status === 405 || (error.status === 404 && error.code !== "session_not_found"));
}

/** Point reads of rows the index stopped listing, at most this many at once. */
const VERIFY_CONCURRENCY = 4;

/**
 * Which of `rows` the server still has, by a scoped point read of each (`GET /v1/sessions/{id}`)
 * under bounded concurrency. Only a `session_not_found` answer confirms a row is gone; any other
 * answer (the session read, a network failure, a server error) keeps it.
 * @param {SessionRow[]} rows
 * @returns {Promise<{kept: SessionRow[], gone: SessionRow[]}>}
 */
async function verifyMissing(rows) {
  /** @type {SessionRow[]} */
  const kept = [];
  /** @type {SessionRow[]} */
  const gone = [];
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const row = rows[next];
      next += 1;
      try {
        await api("GET", `/v1/sessions/${encodeURIComponent(row.session_id)}`);
        kept.push(row);
      } catch (error) {
        if (error instanceof ApiError && error.code === "session_not_found") gone.push(row);
        else kept.push(row);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(VERIFY_CONCURRENCY, rows.length) }, worker));
  return { kept, gone };
}

/**
 * Reads the whole index, following cursors to the end; a repeated cursor is an error. A row the
 * index no longer lists leaves the sidebar only once its own read confirms the server deleted
 * it; a confirmed prune clears the artifact cache. The selected conversation stays open either
 * way, with its focused card.
 */
export async function reconcile() {
  const started = generation;
  try {
    /** @type {SessionRow[]} */
    const rows = [];
    const seen = new Set();
    let cursor = null;
    do {
      const query = cursor ? `?limit=100&cursor=${encodeURIComponent(cursor)}` : "?limit=100";
      const page = await api("GET", `/v1/sessions${query}`);
      rows.push(...page.sessions);
      cursor = page.next_cursor ?? null;
      if (cursor !== null) {
        if (seen.has(cursor)) throw new Error("The server repeated a page cursor; the list is incomplete.");
        seen.add(cursor);
      }
    } while (cursor !== null);
    if (started !== generation) return; // a folder change answered meanwhile; its own read follows
    const listed = new Set(rows.map((row) => row.session_id));
    const missing = sessions.value.filter((row) => !listed.has(row.session_id));
    if (missing.length > 0) {
      const { kept, gone } = await verifyMissing(missing);
      if (started !== generation) return;
      // Kept rows stay where they were among the listed ones.
      const keptIds = new Set(kept.map((row) => row.session_id));
      const merged = [];
      let at = 0;
      for (const row of sessions.value) {
        if (keptIds.has(row.session_id)) merged.push(row);
        else if (listed.has(row.session_id)) {
          // The listed rows, in the index's order, up to this one.
          while (at < rows.length) {
            const next = rows[at];
            at += 1;
            merged.push(next);
            if (next.session_id === row.session_id) break;
          }
        }
      }
      merged.push(...rows.slice(at));
      rows.splice(0, rows.length, ...merged);
      if (gone.length > 0) attachments.clearCache();
    }
    // An unchanged index changes nothing on the page (no re-render of a long sidebar).
    const signature = rows.map((row) => `${row.session_id} ${row.updated_at} ${row.title} ${row.folder_id}`).join("\n");
    if (signature !== lastSignature || rows.length !== sessions.value.length) {
      lastSignature = signature;
      sessions.value = rows;
    }
    indexError.value = null;
    reconciledOnce = true;
    for (const listener of reconciled) listener();
  } catch (error) {
    if (missingRoute(error)) indexError.value = UPGRADE_MESSAGE;
    else if (!(error instanceof ApiError && error.status === 401)) indexError.value = describe(error);
  }
}

/** Reconciles now, on focus, and every 30 seconds while the page is open. */
export function startReconciling() {
  reconcile();
  window.clearInterval(reconcileTimer);
  reconcileTimer = window.setInterval(reconcile, 30_000);
  window.addEventListener("focus", reconcile);
}

export function stopReconciling() {
  reconciledOnce = false;
  window.clearInterval(reconcileTimer);
  window.removeEventListener("focus", reconcile);
}

/** The five most recent conversations, scheduled ones left out. */
export const recent = computed(() =>
  sessions.value
    .filter((row) => row.schedule_id == null)
    .slice()
    .sort((a, b) => (a.updated_at < b.updated_at ? 1 : -1))
    .slice(0, 5),
);
