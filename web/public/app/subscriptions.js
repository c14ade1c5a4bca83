// Subscriptions (unsubscribe assistance): the census of one account in server order, the
// selection (at most 25, Select all skipping protected, unverified, mechanism-less and decided
// rows), the one confirmed command, its rows shown `Unsubscribing…` until the operation settles,
// and Keep / Report spam per row. The page never holds an unsubscribe URI: rows carry the host
// or the address only, and a command names rows by id, digest and revision.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, onForget } from "./api.js";
import * as email from "./email.js";

/** @typedef {import("../../types/wire").Subscription} Subscription */
/** @typedef {import("../../types/wire").UnsubscribeAnswer} Answer */

/** The most senders one command names (the contract's selection limit). */
export const MAX_SELECTION = 25;

/** Whether the Subscriptions view shows (in place of the reading pane). */
export const shown = signal(false);
/** The account the view lists. */
export const account = signal(/** @type {string | null} */ (null));
export const rows = signal(/** @type {Subscription[]} */ ([]));
export const nextCursor = signal(/** @type {string | null} */ (null));
export const loading = signal(false);
export const listError = signal(/** @type {string | null} */ (null));
/** Selected rows (subscription ids), in the order chosen. */
export const selected = signal(/** @type {string[]} */ ([]));
/** The rows a confirmation names, while it is open. */
export const confirming = signal(/** @type {Subscription[] | null} */ (null));
export const alsoArchive = signal(false);
/** Rows whose unsubscribe runs (subscription id → operation id, or "" while it is being sent). */
export const running = signal(/** @type {Map<string, string>} */ (new Map()));
/** A row's error after a failure (subscription id → message). */
export const rowErrors = signal(/** @type {Map<string, string>} */ (new Map()));
/** A note after Select all stopped at the limit. */
export const selectionNote = signal(/** @type {string | null} */ (null));

function reset() {
  shown.value = false;
  account.value = null;
  rows.value = [];
  nextCursor.value = null;
  listError.value = null;
  selected.value = [];
  confirming.value = null;
  alsoArchive.value = false;
  running.value = new Map();
  rowErrors.value = new Map();
  selectionNote.value = null;
}

onForget(reset);

/** The accounts that offer unsubscribe assistance. */
export function supportedAccounts() {
  return email.accounts.value.filter((candidate) => candidate.unsubscribe_supported);
}

/** What the sender offers, in plain words. @param {Subscription} row */
export function mechanismWords(row) {
  if (row.state === "unverified") return "Checking…";
  if (row.mechanism === "one_click") return `One-click request to ${row.destination}`;
  if (row.mechanism === "mailto") return `Sends an email to ${row.destination}`;
  return "Offers only a web page";
}

export const STATE_WORDS = /** @type {Record<string, string>} */ ({
  unverified: "Checking…",
  eligible: "Subscribed",
  kept: "Kept",
  unsubscribing: "Unsubscribing…",
  unsubscribed: "Unsubscribed",
  still_sending: "Still sending",
  reported_spam: "Reported as spam",
});

/** Whether `row` can be chosen for Unsubscribe. @param {Subscription} row */
export function selectable(row) {
  return row.state === "eligible" && row.mechanism !== null && !running.value.has(row.subscription_id);
}

/** @param {Map<string, string>} map @param {string} key @param {string | null} value */
function withEntry(map, key, value) {
  const next = new Map(map);
  if (value === null) next.delete(key);
  else next.set(key, value);
  return next;
}

/** Opens the view on the first supporting account (or the one given). @param {string | null} [which] */
export async function open(which = null) {
  const accounts = supportedAccounts();
  const chosen = which ?? account.value ?? accounts[0]?.account_id ?? null;
  shown.value = true;
  email.reading.value = true;
  if (chosen !== account.value) {
    account.value = chosen;
    selected.value = [];
  }
  await load();
}

export function close() {
  shown.value = false;
  confirming.value = null;
  email.reading.value = false;
}

/** Reads the account's rows afresh (the first page, or more with `more`). @param {boolean} [more] */
export async function load(more = false) {
  if (!account.value) return;
  loading.value = true;
  listError.value = null;
  const cursor = more && nextCursor.value ? `&cursor=${encodeURIComponent(nextCursor.value)}` : "";
  try {
    const page = await api("GET", `/v1/email/subscriptions?account_id=${encodeURIComponent(account.value)}&limit=50${cursor}`);
    rows.value = more ? [...rows.value, ...page.subscriptions] : page.subscriptions;
    nextCursor.value = page.next_cursor;
    // A selected row that changed under the selection leaves it.
    selected.value = selected.value.filter((id) => rows.value.some((row) => row.subscription_id === id && selectable(row)));
  } catch (error) {
    listError.value = `The subscriptions could not be read: ${describe(error)}`;
  } finally {
    loading.value = false;
  }
}

/** Selects or unselects a row; selection stops at 25. @param {Subscription} row */
export function toggle(row) {
  selectionNote.value = null;
  const id = row.subscription_id;
  if (selected.value.includes(id)) {
    selected.value = selected.value.filter((other) => other !== id);
  } else if (selectable(row)) {
    if (selected.value.length >= MAX_SELECTION) {
      selectionNote.value = `At most ${MAX_SELECTION} senders at a time.`;
      return;
    }
    selected.value = [...selected.value, id];
  }
}

/** Selects every eligible, unprotected row offering a mechanism, up to 25. */
export function selectAll() {
  const candidates = rows.value.filter((row) => selectable(row) && !row.protected).map((row) => row.subscription_id);
  const chosen = [...new Set([...selected.value, ...candidates])];
  selectionNote.value = chosen.length > MAX_SELECTION ? `Selected the first ${MAX_SELECTION}: at most ${MAX_SELECTION} senders at a time.` : null;
  selected.value = chosen.slice(0, MAX_SELECTION);
}

export function clearSelection() {
  selected.value = [];
  selectionNote.value = null;
}

/** Opens the confirmation for `chosen` (the selection when not given). @param {Subscription[]} [chosen] */
export function confirm(chosen) {
  const named = chosen ?? rows.value.filter((row) => selected.value.includes(row.subscription_id));
  if (named.length === 0) return;
  alsoArchive.value = false;
  confirming.value = named;
}

const REFUSAL_WORDS = /** @type {Record<string, string>} */ ({
  changed: "This sender changed since it was shown; check it and try again.",
  not_found: "This sender is no longer listed.",
  not_eligible: "This sender cannot be unsubscribed as it is now.",
});

const ERROR_WORDS = /** @type {Record<string, string>} */ ({
  "unsubscribe.redirect_refused": "the sender answered with a redirect, which is never followed",
  "unsubscribe.destination_refused": "the destination is not a public HTTPS server",
  "unsubscribe.unresolved": "the sender's server could not be found",
  "unsubscribe.unreachable": "the sender's server could not be reached; nothing was sent",
  "unsubscribe.rejected": "the sender refused the request",
  "unsubscribe.no_answer": "the sender did not answer, so it may or may not have worked; it will not be repeated",
  "unsubscribe.interrupted": "it was interrupted, so it may or may not have worked; it will not be repeated",
});

/** Why a row's unsubscribe did not succeed, in words. @param {string | null | undefined} code */
export function errorWords(code) {
  return `Unsubscribe did not go through: ${ERROR_WORDS[code ?? ""] ?? code ?? "unknown error"}.`;
}

/**
 * Sends the confirmed command: exactly one, whose targets carry the id, digest and revision of
 * each named row and nothing else. Rows read `Unsubscribing…` until the operation settles;
 * success is quiet; a refused target, a failure, an uncertain outcome or unreadable status
 * restores its row with an error.
 */
export async function unsubscribe() {
  const named = confirming.value;
  if (!named) return;
  confirming.value = null;
  const ids = named.map((row) => row.subscription_id);
  selected.value = selected.value.filter((id) => !ids.includes(id));
  let pending = running.value;
  for (const id of ids) {
    pending = withEntry(pending, id, "");
    rowErrors.value = withEntry(rowErrors.value, id, null);
  }
  running.value = pending;
  const restore = (/** @type {string} */ id, /** @type {string} */ message) => {
    running.value = withEntry(running.value, id, null);
    rowErrors.value = withEntry(rowErrors.value, id, message);
  };
  /** @type {Answer} */
  let answer;
  try {
    answer = await api("POST", "/v1/email/subscriptions/unsubscribe", {
      body: {
        targets: named.map((row) => ({
          subscription_id: row.subscription_id,
          evidence_digest: row.evidence_digest,
          expected_revision: row.revision,
        })),
        also_archive: alsoArchive.value,
      },
    });
  } catch (error) {
    const message =
      error instanceof ApiError && error.code === "email_subscription_changed"
        ? REFUSAL_WORDS.changed
        : `Unsubscribe was not sent: ${describe(error)}`;
    for (const id of ids) restore(id, message);
    await load();
    return;
  }
  for (const refused of answer.refused) restore(refused.subscription_id, REFUSAL_WORDS[refused.reason] ?? REFUSAL_WORDS.changed);
  const operation = answer.operation.operation_id;
  let marked = running.value;
  for (const target of answer.operation.targets ?? []) marked = withEntry(marked, target.subscription_id, operation);
  running.value = marked;
  await load();
  const settled = await email.settle(operation);
  /** @type {import("../../types/wire").UnsubscribeTargetStatus[]} */
  const targets = /** @type {any} */ (settled).targets ?? [];
  for (const target of answer.operation.targets ?? []) {
    const id = target.subscription_id;
    const outcome = targets.find((candidate) => candidate.subscription_id === id);
    if (outcome?.state === "succeeded") {
      running.value = withEntry(running.value, id, null);
    } else if (!outcome || settled.state === "unreadable" || settled.state === "pending") {
      restore(id, "The unsubscribe's status cannot be read now; it will not be sent again from here. Check this sender later.");
    } else {
      restore(id, errorWords(outcome.error));
    }
  }
  await load();
}

/**
 * Keep, its undo, or Report spam on a row, at the revision shown.
 * @param {Subscription} row @param {"keep" | "undo-keep" | "spam" | "not-spam"} change
 */
export async function decide(row, change) {
  const id = row.subscription_id;
  rowErrors.value = withEntry(rowErrors.value, id, null);
  try {
    const answer = await api("POST", `/v1/email/subscriptions/${encodeURIComponent(id)}/${change}`, {
      body: { expected_revision: row.revision },
    });
    rows.value = rows.value.map((other) => (other.subscription_id === id ? answer.subscription : other));
    selected.value = selected.value.filter((other) => other !== id);
  } catch (error) {
    rowErrors.value = withEntry(
      rowErrors.value,
      id,
      error instanceof ApiError && error.code === "email_subscription_changed" ? REFUSAL_WORDS.changed : describe(error),
    );
    await load();
  }
}
