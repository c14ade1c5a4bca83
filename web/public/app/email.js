// Email mode's state: the accounts, the listing on screen, the open conversation, archive and
// spam handled optimistically, and refresh while the inbox is visible. Everything stays in this
// page's memory (no offline cache, no write queue) and is dropped when the connection changes,
// the session ends or the email.read scope is missing.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, connection, describe, holds, onForget } from "./api.js";
import * as drafts from "./drafts.js";

/** @typedef {import("../../types/wire").Correspondent} Correspondent */
/** @typedef {import("../../types/wire").EmailAccount} Account */
/** @typedef {import("../../types/wire").EmailThreadSummary} Thread */
/** @typedef {import("../../types/wire").AttachmentMeta} Attachment */
/** @typedef {import("../../types/wire").EmailMessage} Message */
/** @typedef {Thread & {messages: Message[], subscription?: import("../../types/wire").Subscription | null}} ThreadDetail */
/** @typedef {import("../../types/wire").EmailOperation} Operation */

/** A new refresh is asked for this often while the inbox is visible (the server admits one a minute). */
export const REFRESH_EVERY_MS = 60_000;
/** Operation status is read this often, doubled after each failure in a row. */
export const POLL_MS = 1_000;
/** Consecutive status failures after which refresh stops until the next active refresh. */
export const MAX_STATUS_FAILURES = 3;
/** How long an operation is followed before the page stops waiting for it (the server may be
 * without its worker); it is then reported as not done yet, never sent again. */
export const SETTLE_WAIT_MS = 120_000;
/** The initial request shows the five most important conversations; later pages are larger. */
const FIRST_PAGE = 5;
const NEXT_PAGE = 25;
/** The desktop inbox pane: 280 to 560 points, the reading pane at least 360. */
export const PANE_MIN = 280;
export const PANE_MAX = 560;
export const READING_MIN = 360;

/** `unknown` until asked; `absent` on a server without Email mode; `denied` without email.read. */
export const support = signal(/** @type {"unknown" | "present" | "absent" | "denied"} */ ("unknown"));
export const accounts = signal(/** @type {Account[]} */ ([]));
export const listing = signal(/** @type {"important" | "other"} */ ("important"));
export const accountFilter = signal(/** @type {string | null} */ (null));
export const search = signal("");
export const threads = signal(/** @type {Thread[]} */ ([]));
export const nextCursor = signal(/** @type {string | null} */ (null));
export const loading = signal(false);
export const listError = signal(/** @type {string | null} */ (null));
export const selectedId = signal(/** @type {string | null} */ (null));
export const detail = signal(/** @type {ThreadDetail | null} */ (null));
export const detailError = signal(/** @type {string | null} */ (null));
/** Rows taken off the list while their change runs (thread id → what runs). */
export const leaving = signal(/** @type {Map<string, string>} */ (new Map()));
/** A restored row's error (thread id → message). */
export const rowErrors = signal(/** @type {Map<string, string>} */ (new Map()));
/** Why refresh stopped, when it did. */
export const refreshError = signal(/** @type {string | null} */ (null));
/** The inbox pane's width on a desktop, kept across mode switches. */
export const paneWidth = signal(360);
/** On a phone, whether the reading pane shows (in place of the inbox). */
export const reading = signal(false);

/** Bumped by every new listing, so a late answer of an older one is dropped. */
let generation = 0;
/** Rows a change answered with (feedback, the spam flag), numbered in order: a listing asked for
 * before the change keeps them rather than its own older copies. */
let edits = 0;
const editedRows = /** @type {Map<string, {row: Thread, edit: number}>} */ (new Map());
/** The next refresh's timer, whether refresh runs, and its cycle: bumped by every start and
 * stop, so an older cycle ends where it notices. */
let timer = /** @type {number | null} */ (null);
let active = false;
let cycle = 0;
/** Whether Email is the mode on screen (refresh runs only then). */
let visibleMode = false;

function reset() {
  generation += 1;
  stopRefreshing();
  support.value = "unknown";
  accounts.value = [];
  threads.value = [];
  nextCursor.value = null;
  listError.value = null;
  selectedId.value = null;
  reading.value = false;
  detail.value = null;
  detailError.value = null;
  leaving.value = new Map();
  rowErrors.value = new Map();
  refreshError.value = null;
  search.value = "";
  accountFilter.value = null;
  listing.value = "important";
}

onForget(reset);
// A new connection (another token, other scopes) starts Email afresh.
let connectedScopes = "";
connection.subscribe((value) => {
  const scopes = value.state === "connected" ? value.scopes.join(",") : "";
  if (scopes !== connectedScopes) {
    connectedScopes = scopes;
    reset();
  }
});

/**
 * An Email request; a 404 or 405 means the server has no Email mode, a refused scope that the
 * token lacks email.read: both drop Email state.
 * @param {string} method @param {string} path
 */
async function call(method, path) {
  try {
    return await api(method, path);
  } catch (error) {
    if (error instanceof ApiError && (error.code === "not_found" || error.status === 405)) {
      reset();
      support.value = "absent";
    } else if (error instanceof ApiError && error.code === "insufficient_scope" && error.problem?.required_scope === "email.read") {
      reset();
      support.value = "denied";
    }
    throw error;
  }
}

/** The opening under way, which everyone asking meanwhile shares. */
let opening = /** @type {Promise<void> | null} */ (null);

/** Opens Email: accounts, then the listing; refresh starts while the page is visible. */
export function open() {
  if (!opening) {
    opening = openOnce().finally(() => {
      opening = null;
    });
  }
  return opening;
}

async function openOnce() {
  if (!holds("email.read")) {
    reset();
    support.value = "denied";
    return;
  }
  try {
    await loadAccounts();
    support.value = "present";
  } catch (error) {
    if (support.value === "unknown") listError.value = describe(error);
    return;
  }
  await loadListing();
  startRefreshing();
}

export async function loadAccounts() {
  const answer = await call("GET", "/v1/email/accounts");
  accounts.value = answer.accounts;
}

function listingPath(/** @type {string | null} */ cursor) {
  const query = new URLSearchParams({ view: listing.value, limit: String(cursor ? NEXT_PAGE : FIRST_PAGE) });
  if (accountFilter.value) query.set("account_id", accountFilter.value);
  if (search.value.trim()) query.set("q", search.value.trim());
  if (cursor) query.set("cursor", cursor);
  return `/v1/email/threads?${query}`;
}

/**
 * Reads the listing's first page again (a refresh keeps as many rows as were shown). The open
 * conversation stays open.
 */
export async function loadListing() {
  const mine = ++generation;
  const asked = edits;
  loading.value = true;
  try {
    const page = await call("GET", listingPath(null));
    if (mine !== generation) return;
    threads.value = page.threads.map((/** @type {Thread} */ thread) => {
      const edited = editedRows.get(thread.thread_id);
      return edited && edited.edit > asked ? edited.row : thread;
    });
    // This answer was read after those changes: later listings need not know them.
    for (const [id, edited] of editedRows) if (edited.edit <= asked) editedRows.delete(id);
    nextCursor.value = page.next_cursor;
    listError.value = null;
  } catch (error) {
    if (mine === generation) listError.value = describe(error);
  } finally {
    if (mine === generation) loading.value = false;
  }
}

/** The next page, appended. */
export async function loadMore() {
  const cursor = nextCursor.value;
  if (!cursor) return;
  const mine = generation;
  loading.value = true;
  try {
    const page = await call("GET", listingPath(cursor));
    if (mine !== generation) return;
    const known = new Set(threads.value.map((thread) => thread.thread_id));
    threads.value = [...threads.value, ...page.threads.filter((/** @type {Thread} */ thread) => !known.has(thread.thread_id))];
    nextCursor.value = page.next_cursor;
  } catch (error) {
    if (mine === generation) listError.value = describe(error);
  } finally {
    if (mine === generation) loading.value = false;
  }
}

/** @param {"important" | "other"} next */
export function showListing(next) {
  listing.value = next;
  loadListing();
}

/** @param {string | null} account */
export function filterAccount(account) {
  accountFilter.value = account;
  loadListing();
}

/** @param {string} words */
export function find(words) {
  search.value = words;
  loadListing();
}

/** The rows on screen: the listing without those whose change is running. */
export function visible() {
  const gone = leaving.value;
  return threads.value.filter((thread) => !gone.has(thread.thread_id));
}

/**
 * Shows a conversation with one of its drafts open, where Review & Send checks the draft's
 * waiting approval against the draft before offering Approve once (a send approval's
 * notification opens it here).
 * @param {string} threadId @param {string} draftId
 */
export async function openDraft(threadId, draftId) {
  if (support.value !== "present") await open();
  if (support.value !== "present") return;
  reading.value = true;
  if (selectedId.value === threadId && drafts.editor.value?.draftId === draftId) return;
  await select(threadId);
  const thread = detail.value;
  if (!thread || selectedId.value !== threadId) return;
  const account = accounts.value.find((candidate) => candidate.account_id === thread.account_id);
  // That draft, even when the conversation has a newer one.
  await drafts.openFor({ ...thread, draft_id: draftId }, account?.address ?? null, account?.send_tool ?? null);
}

/** Opens a conversation in the reading pane (closing another's draft). @param {string | null} id */
export async function select(id) {
  if (drafts.editor.value && drafts.editor.value.threadId !== id) drafts.close();
  selectedId.value = id;
  detail.value = null;
  detailError.value = null;
  if (!id) return;
  try {
    const thread = await call("GET", `/v1/email/threads/${encodeURIComponent(id)}`);
    if (selectedId.value === id) detail.value = thread;
  } catch (error) {
    if (selectedId.value === id) detailError.value = describe(error);
  }
}

/** A conversation as the server now shows it (after feedback or the spam flag): its row and the open pane. @param {Thread} row */
export function replaceRow(row) {
  edits += 1;
  editedRows.set(row.thread_id, { row, edit: edits });
  threads.value = threads.value.map((thread) => (thread.thread_id === row.thread_id ? row : thread));
  if (detail.value?.thread_id === row.thread_id) detail.value = { ...detail.value, ...row };
}

/** Reads the open conversation again without emptying the pane (its row state moved on). */
export async function reloadDetail() {
  const id = selectedId.value;
  if (!id) return;
  try {
    const thread = await call("GET", `/v1/email/threads/${encodeURIComponent(id)}`);
    if (selectedId.value === id) detail.value = thread;
  } catch {
    // The pane keeps what it showed.
  }
}

/** @param {Map<string, string>} map @param {string} key @param {string | null} value */
function withEntry(map, key, value) {
  const next = new Map(map);
  if (value === null) next.delete(key);
  else next.set(key, value);
  return next;
}

const CHANGE_WORDS = /** @type {Record<string, string>} */ ({
  archive: "Archiving",
  "move-to-inbox": "Moving to the Inbox",
  spam: "Reporting as spam",
  "not-spam": "Returning to the Inbox",
});

/**
 * A conversation change (archive, move back, report spam, Not spam): the row leaves at once; the
 * server runs it; success is silent (the listing is read again), a failure or an uncertain
 * outcome brings the row back with an error. Archiving or reporting the open conversation opens
 * the next visible one (the previous for the last), or empties the pane.
 * @param {string} id @param {"archive" | "move-to-inbox" | "spam" | "not-spam"} change
 */
export async function change(id, change) {
  const rows = visible();
  const index = rows.findIndex((thread) => thread.thread_id === id);
  leaving.value = withEntry(leaving.value, id, change);
  rowErrors.value = withEntry(rowErrors.value, id, null);
  if (selectedId.value === id && (change === "archive" || change === "spam")) {
    const next = rows[index + 1] ?? rows[index - 1] ?? null;
    select(next && next.thread_id !== id ? next.thread_id : null);
  }
  const restore = (/** @type {string} */ message) => {
    leaving.value = withEntry(leaving.value, id, null);
    rowErrors.value = withEntry(rowErrors.value, id, message);
  };
  let operation;
  try {
    operation = await call("POST", `/v1/email/threads/${encodeURIComponent(id)}/${change}`);
  } catch (error) {
    restore(`${CHANGE_WORDS[change]} failed: ${describe(error)}`);
    return;
  }
  const settled = await settle(operation.operation_id);
  if (settled.state === "succeeded") {
    await loadListing();
    leaving.value = withEntry(leaving.value, id, null);
    if (selectedId.value === id) select(id);
    return;
  }
  restore(
    settled.state === "pending"
      ? `${CHANGE_WORDS[change]} has not run yet (the server has not taken it up); it will not be sent again from here.`
      : settled.state === "uncertain"
      ? `${CHANGE_WORDS[change]} may not have happened (${settled.error ?? "outcome unknown"}); it will not be repeated. Check the mailbox before trying again.`
      : settled.state === "failed"
        ? `${CHANGE_WORDS[change]} failed (${settled.error ?? "refused"}).`
        : `${CHANGE_WORDS[change]}: its status cannot be read.`,
  );
}

/** Clears the suspected-spam flag (no mailbox write). @param {string} id */
export async function notSuspected(id) {
  try {
    replaceRow(await call("POST", `/v1/email/threads/${encodeURIComponent(id)}/spam-flag`));
  } catch (error) {
    rowErrors.value = withEntry(rowErrors.value, id, describe(error));
  }
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => window.setTimeout(resolve, ms));

/**
 * Reads an operation until it settles. Status failures retry with doubling waits; after three in
 * a row it gives up with `unreadable`, and after SETTLE_WAIT_MS without a settled state with
 * `pending`.
 * @param {string} id
 * @returns {Promise<{state: string, error?: string | null}>}
 */
export async function settle(id) {
  let failures = 0;
  let wait = POLL_MS;
  const started = Date.now();
  for (;;) {
    if (Date.now() - started > SETTLE_WAIT_MS) return { state: "pending", error: null };
    await sleep(wait);
    try {
      /** @type {Operation} */
      const operation = await api("GET", `/v1/email/operations/${encodeURIComponent(id)}`);
      failures = 0;
      wait = POLL_MS;
      if (operation.state === "succeeded" || operation.state === "failed" || operation.state === "uncertain") {
        return operation;
      }
    } catch {
      failures += 1;
      if (failures >= MAX_STATUS_FAILURES) return { state: "unreadable", error: null };
      wait *= 2;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Refresh: on opening and every minute while visible; stopped when hidden or in Chat.


/** Asks every account for a refresh now, then again each minute while Email shows. */
export function startRefreshing() {
  stopRefreshing();
  active = true;
  refreshError.value = null;
  if (document.hidden) return;
  refreshNow(cycle);
}

export function stopRefreshing() {
  active = false;
  cycle += 1;
  if (timer !== null) window.clearTimeout(timer);
  timer = null;
}

/** One refresh of every account, then the next a minute later. @param {number} mine */
async function refreshNow(mine) {
  const asked = accounts.value.map((account) =>
    api("POST", `/v1/email/accounts/${encodeURIComponent(account.account_id)}/refresh`).then(
      (answer) => settle(answer.operation.operation_id),
      (error) => ({ state: "unreadable", error: describe(error) }),
    ),
  );
  const outcomes = await Promise.all(asked);
  if (mine !== cycle || !active) return;
  if (outcomes.some((outcome) => outcome.state === "unreadable")) {
    // Stopped until the next active refresh (opening Email, or the page shown again).
    refreshError.value = "Email could not be refreshed: the server's status did not answer. It tries again when you come back.";
    active = false;
    return;
  }
  try {
    await loadAccounts();
  } catch {
    // The accounts' freshness stays as last read; the listing below says what failed.
  }
  await reloadKeepingRows();
  if (mine === cycle && active && !document.hidden) timer = window.setTimeout(() => refreshNow(mine), REFRESH_EVERY_MS);
}

/** Reads the listing again without shrinking it to one page when more were shown. */
async function reloadKeepingRows() {
  if (threads.value.length <= FIRST_PAGE) {
    await loadListing();
    return;
  }
  const shown = threads.value.length;
  await loadListing();
  while (threads.value.length < shown && nextCursor.value) await loadMore();
}

document.addEventListener("visibilitychange", () => {
  if (support.value !== "present" || !visibleMode) return;
  if (document.hidden) stopRefreshing();
  else startRefreshing();
});

/** Called when the page switches to or from Email mode. @param {boolean} shown */
export function setShown(shown) {
  visibleMode = shown;
  if (!shown) {
    stopRefreshing();
    return;
  }
  if (support.value === "present") startRefreshing();
  else open();
}
