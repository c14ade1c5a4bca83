// Import history (the server's `/v1/people/imports`, with People): the owner asks Steward to read
// the mail already synced on the days of a range again into People, within a record limit and a
// spending cap on the memory model. One import runs at a time; its progress is read again every
// two seconds while it is queued or running, and it can be cancelled (what it read stays).
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, holds } from "./api.js";

/** @typedef {import("../../types/wire").PeopleImport} PeopleImport */

/** The owner's latest imports, newest first. @type {import("../vendor/signals-core.mjs").Signal<PeopleImport[]>} */
export const imports = signal([]);
export const busy = signal(false);
export const error = signal(/** @type {string | null} */ (null));
/** What the last action did, said once (`role=status`). */
export const notice = signal(/** @type {string | null} */ (null));

/** How often progress is read while an import runs. */
const POLL_MS = 2000;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;

/** @param {PeopleImport} item */
export function active(item) {
  return item.state === "queued" || item.state === "running";
}

/** Reads the imports (and again while one runs). */
export async function load() {
  clearTimeout(timer);
  if (!holds("people.read")) return;
  try {
    const page = /** @type {import("../../types/wire").PeopleImports} */ (await api("GET", "/v1/people/imports"));
    imports.value = page.imports;
  } catch (failure) {
    // A server without the routes offers no imports; a lapsed sign-in is handled by the page.
    if (!(failure instanceof ApiError && [401, 404, 405].includes(failure.status))) error.value = describe(failure);
    return;
  }
  if (imports.value.some(active)) timer = setTimeout(load, POLL_MS);
}

/** Stops reading progress (the view closed). */
export function stop() {
  clearTimeout(timer);
}

/**
 * Starts an import; whether it started.
 * @param {{since: string, until: string, recordLimit: number, spendingCap: string}} asked
 */
export async function start(asked) {
  busy.value = true;
  try {
    const started = /** @type {PeopleImport} */ (
      await api("POST", "/v1/people/imports", {
        body: { since: asked.since, until: asked.until, record_limit: asked.recordLimit, spending_cap: asked.spendingCap },
      })
    );
    imports.value = [started, ...imports.value.filter((item) => item.import_id !== started.import_id)];
    error.value = null;
    notice.value = "Import started.";
    clearTimeout(timer);
    timer = setTimeout(load, POLL_MS);
    return true;
  } catch (failure) {
    error.value = describe(failure);
    return false;
  } finally {
    busy.value = false;
  }
}

/** Cancels an import. @param {string} id */
export async function cancel(id) {
  busy.value = true;
  try {
    const now = /** @type {PeopleImport} */ (await api("POST", `/v1/people/imports/${encodeURIComponent(id)}/cancel`));
    imports.value = imports.value.map((item) => (item.import_id === id ? now : item));
    error.value = null;
    notice.value = "Import cancelled. What it read stays.";
  } catch (failure) {
    error.value = describe(failure);
  } finally {
    busy.value = false;
  }
}

/** What an import's state and reason say. @param {PeopleImport} item */
export function status(item) {
  switch (item.state) {
    case "queued":
      return "Waiting to start";
    case "running":
      return "Reading";
    case "cancelled":
      return "Cancelled";
    case "failed":
      return "Failed";
    default:
      return (
        {
          range_read: "Done: every message of the range was read",
          record_limit: "Done: the record limit was reached",
          spending_cap: "Stopped at the spending cap",
        }[item.stop_reason ?? ""] ?? "Done"
      );
  }
}
