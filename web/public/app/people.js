// People (the server's `/v1/people`, mounted with AGENT_MEMORY_API_ENABLED): the owner's
// correspondents with the Pinned and Needs review collections, possible duplicates (Merge or
// Not the same), a person's profile (names, contacts, facts with their evidence and the
// owner's corrections, timeline, open threads), and Manage person: Repair identity (split
// contacts off, or link one) and Forget person (confirmed). The server is the only authority:
// a server without the routes (404 or 405) hides People.
import { signal } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, holds, onForget } from "./api.js";
import { onReconciled } from "./chat.js";

/** @typedef {import("../../types/wire").Person} Person */
/** @typedef {import("../../types/wire").PersonProfile} PersonProfile */
/** @typedef {import("../../types/wire").DuplicatePair} DuplicatePair */

export const available = signal(true);
/** Which collection shows: everyone, Pinned or Needs review. */
export const collection = signal(/** @type {"" | "pinned" | "needs_review"} */ (""));
/** @type {import("../vendor/signals-core.mjs").Signal<Person[]>} */
export const list = signal([]);
export const nextCursor = signal(/** @type {string | null} */ (null));
export const loading = signal(false);
/** @type {import("../vendor/signals-core.mjs").Signal<DuplicatePair[]>} */
export const duplicates = signal([]);
/** The profile shown. @type {import("../vendor/signals-core.mjs").Signal<PersonProfile | null>} */
export const shown = signal(null);
/** Which Manage person flow is open for the profile shown. */
export const managing = signal(/** @type {null | "split" | "link" | "forget"} */ (null));
export const busy = signal(false);
export const error = signal(/** @type {string | null} */ (null));
/** What the last action did, said once (`role=status`). */
export const notice = signal(/** @type {string | null} */ (null));

/** Whether this page offers People: the server has the routes and the token may read them. */
export function offered() {
  return available.value && holds("people.read");
}

/** @param {unknown} failure */
function settle(failure) {
  if (failure instanceof ApiError && (failure.status === 404 || failure.status === 405) && !failure.code.startsWith("person_")) {
    available.value = false;
  } else if (failure instanceof ApiError && failure.code === "person_not_found") {
    if (shown.value) list.value = list.value.filter((person) => person.person_id !== shown.value?.person.person_id);
    shown.value = null;
    managing.value = null;
    error.value = "That person is no longer there.";
  } else if (!(failure instanceof ApiError && failure.status === 401)) {
    error.value = describe(failure);
  }
}

/**
 * Runs one change: busy meanwhile, its failure said, its success noted.
 * @template T
 * @param {() => Promise<T>} change
 * @param {string} [said]
 * @returns {Promise<T | undefined>}
 */
async function act(change, said) {
  busy.value = true;
  try {
    const done = await change();
    error.value = null;
    if (said) notice.value = said;
    return done;
  } catch (failure) {
    settle(failure);
    return undefined;
  } finally {
    busy.value = false;
  }
}

/** Which load is the latest: an older answer never replaces a newer one. */
let loads = 0;

/** The first page of the collection, or (`more`) the next one, and the duplicates offered. @param {boolean} [more] */
export async function load(more = false) {
  if (!offered()) return;
  const mine = (loads += 1);
  loading.value = true;
  try {
    const query = new URLSearchParams({ limit: "50" });
    if (collection.value) query.set("collection", collection.value);
    if (more && nextCursor.value) query.set("cursor", nextCursor.value);
    const [page, offeredPairs] = await Promise.all([
      api("GET", `/v1/people?${query}`),
      more ? Promise.resolve(null) : api("GET", "/v1/people/duplicates"),
    ]);
    if (mine !== loads) return;
    list.value = more ? [...list.value, ...page.people] : page.people;
    nextCursor.value = page.next_cursor;
    if (offeredPairs) duplicates.value = offeredPairs.pairs;
    error.value = null;
  } catch (failure) {
    if (mine === loads) settle(failure);
  } finally {
    if (mine === loads) loading.value = false;
  }
}

/** Shows a collection. @param {"" | "pinned" | "needs_review"} which */
export function show(which) {
  collection.value = which;
  return load();
}

/** Reads a person's profile and shows it. @param {string} id */
export async function open(id) {
  managing.value = null;
  notice.value = null;
  await act(async () => {
    shown.value = await api("GET", `/v1/people/${encodeURIComponent(id)}`);
  });
}

/** @param {Person} person */
function replace(person) {
  list.value = list.value.map((held) => (held.person_id === person.person_id ? person : held));
  if (shown.value?.person.person_id === person.person_id) shown.value = { ...shown.value, person };
}

/**
 * The owner's change to the person shown: name, relationship (`null` clears it), pin, reviewed.
 * @param {string} id @param {{name?: string, relationship?: string | null, pinned?: boolean, reviewed?: true}} change @param {string} said
 */
export async function change(id, change, said) {
  const person = await act(() => api("PATCH", `/v1/people/${encodeURIComponent(id)}`, { body: change }), said);
  if (person) {
    replace(person);
    // A change of collection membership shows at once in the collection shown.
    if (collection.value === "pinned" && !person.pinned) list.value = list.value.filter((held) => held.person_id !== id);
    if (collection.value === "needs_review" && !person.needs_review) list.value = list.value.filter((held) => held.person_id !== id);
  }
  return Boolean(person);
}

/** The owner's correction of a fact, or `null` to take it back. @param {string} person @param {string} fact @param {string | null} correction */
export async function correct(person, fact, correction) {
  const corrected = await act(
    () => api("PUT", `/v1/people/${encodeURIComponent(person)}/facts/${encodeURIComponent(fact)}/correction`, { body: { correction } }),
    correction === null ? "Correction taken back." : "Correction saved.",
  );
  if (corrected && shown.value?.person.person_id === person) {
    shown.value = { ...shown.value, facts: shown.value.facts.map((held) => (held.fact_id === fact ? corrected : held)) };
  }
  return Boolean(corrected);
}

/** `Merge`: `other` becomes part of `kept`, whose profile shows. @param {string} kept @param {string} other */
export async function merge(kept, other) {
  const profile = await act(
    () => api("POST", `/v1/people/${encodeURIComponent(kept)}/merge`, { body: { other_person_id: other } }),
    "Merged into one person.",
  );
  if (profile) {
    shown.value = profile;
    list.value = list.value.filter((person) => person.person_id !== other);
    duplicates.value = duplicates.value.filter((pair) => pair.first.person_id !== other && pair.second.person_id !== other);
    replace(profile.person);
  }
}

/** `Not the same`: the pair is not offered again. @param {string} first @param {string} second */
export async function notTheSame(first, second) {
  const done = await act(
    () => api("POST", `/v1/people/${encodeURIComponent(first)}/not-the-same`, { body: { other_person_id: second } }),
    "Kept apart: Steward will not suggest merging them again.",
  );
  if (done !== undefined) {
    duplicates.value = duplicates.value.filter((pair) => !(pair.first.person_id === first && pair.second.person_id === second));
  }
}

/**
 * `Repair identity`, split: `contacts` of the person shown move to a new person `name`.
 * @param {string} id @param {{kind: "email" | "phone", value: string}[]} contacts @param {string} name
 */
export async function split(id, contacts, name) {
  const profile = await act(
    () => api("POST", `/v1/people/${encodeURIComponent(id)}/repair`, { body: { action: "split", contacts, name } }),
    `Split off as ${name}.`,
  );
  if (profile) {
    managing.value = null;
    shown.value = profile;
    // The new person is reviewed and not pinned: only Everyone lists them.
    if (collection.value === "") list.value = [profile.person, ...list.value];
  }
  return Boolean(profile);
}

/** `Repair identity`, link: `contact` becomes the person's. @param {string} id @param {{kind: "email" | "phone", value: string}} contact */
export async function link(id, contact) {
  const profile = await act(
    () => api("POST", `/v1/people/${encodeURIComponent(id)}/repair`, { body: { action: "link", contact } }),
    "Linked to this person.",
  );
  if (profile) {
    managing.value = null;
    shown.value = profile;
  }
  return Boolean(profile);
}

/** `Forget person`, confirmed: the record and its facts go, and the same sources do not make it again. @param {string} id */
export async function forget(id) {
  const done = await act(
    () => api("DELETE", `/v1/people/${encodeURIComponent(id)}`),
    "Forgotten. Steward will not rebuild this person from the same addresses or numbers.",
  );
  if (done !== undefined) {
    managing.value = null;
    shown.value = null;
    list.value = list.value.filter((person) => person.person_id !== id);
    duplicates.value = duplicates.value.filter((pair) => pair.first.person_id !== id && pair.second.person_id !== id);
  }
}

/** Whether the token may change people. */
export function writable() {
  return holds("people.write");
}

// Read when the page reconciles until something is held: a server without the routes is found
// out, and Memory and People leave the sidebar.
onReconciled(() => {
  if (list.value.length === 0 && !loading.value) load();
});

onForget(() => {
  available.value = true;
  collection.value = "";
  list.value = [];
  nextCursor.value = null;
  loading.value = false;
  duplicates.value = [];
  shown.value = null;
  managing.value = null;
  busy.value = false;
  error.value = null;
  notice.value = null;
});
