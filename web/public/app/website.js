// Website Access: the owner's browser profiles (the sites the agent may act on as the owner),
// their remote sign-in ceremonies, the profile chosen for new conversations (a device
// preference: this browser only, cleared when the connection is forgotten or changes; the
// server checks it again), and the task permissions in force. Nothing of a website session
// passes through here; a ceremony's link is shown once and kept nowhere.
import { signal, computed } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, holds, onForget } from "./api.js";
import { setNewSessionProfile } from "./chat.js";
import { chooseProfile as choose, chosenProfile as chosen } from "./preferences.js";

// The profile chosen for new conversations on this device: a device preference, kept (and
// cleared when the connection is forgotten) by preferences.js.
export { choose, chosen };

/**
 * @typedef {import("../../types/wire").BrowserProfile} Profile
 * @typedef {import("../../types/wire").TaskPermission} TaskPermission
 * @typedef {{primary: string, additional: string[], loginUrl: string}} Setup
 * @typedef {{ceremonyId: string, profileId: string, setup: Setup, link: string | null, state: string,
 *   expiresAt: string, error: string | null, checking: boolean}} Ceremony
 *   `link` is kept only while the ceremony is `open`: once the sign-in page opened it, it is spent.
 */

/** `null` until known; `false` when this server has no Website Access (the routes answer 404). */
export const available = signal(/** @type {boolean | null} */ (null));
/** @type {import("../vendor/signals-core.mjs").Signal<Profile[]>} */
export const profiles = signal([]);
export const error = signal(/** @type {string | null} */ (null));
/** The remote ceremony in progress, one at a time. */
export const ceremony = signal(/** @type {Ceremony | null} */ (null));
/** @type {import("../vendor/signals-core.mjs").Signal<TaskPermission[]>} */
export const permissions = signal([]);

onForget(() => {
  profiles.value = [];
  permissions.value = [];
  ceremony.value = null;
  available.value = null;
});

/** The chosen profile, when it is one of the owner's and ready: what a new conversation sends. */
export const chosenReady = computed(() => {
  const id = chosen.value;
  return profiles.value.find((profile) => profile.profile_id === id && profile.state === "READY") ?? null;
});

// A new conversation carries the chosen ready profile; one the server refuses is not chosen
// any more, and the profiles are read again.
setNewSessionProfile(
  () => chosenReady.value?.profile_id ?? null,
  () => {
    choose(null);
    load();
  },
);

/** Reads the profiles (and learns whether this server has Website Access). */
export async function load() {
  if (!holds("browser.read")) {
    available.value = false;
    return;
  }
  try {
    const list = await api("GET", "/v1/browser/profiles");
    profiles.value = list.profiles;
    available.value = true;
    error.value = null;
    // A chosen profile that is gone or removed is no longer chosen.
    if (chosen.value && !list.profiles.some((/** @type {Profile} */ p) => p.profile_id === chosen.value && p.state !== "REVOKED")) {
      choose(null);
    }
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 404) {
      // No Website Access (any more): nothing is chosen for new conversations.
      available.value = false;
      profiles.value = [];
      choose(null);
    } else {
      error.value = describe(failure);
    }
  }
}

/** @param {any} begun the answer that began a remote ceremony @param {string} profileId @param {Setup} setup */
function began(begun, profileId, setup) {
  ceremony.value = {
    ceremonyId: begun.ceremony_id,
    profileId,
    setup,
    link: begun.continue_url ?? null,
    state: begun.state,
    expiresAt: begun.expires_at,
    error: null,
    checking: false,
  };
}

/**
 * Adds a profile and begins its remote ceremony.
 * @param {Setup} setup
 */
export async function add(setup) {
  const created = await api("POST", "/v1/browser/profiles", {
    body: {
      primary_origin: setup.primary,
      additional_origins: setup.additional,
      ceremony: { kind: "remote", login_url: setup.loginUrl },
    },
  });
  began(created.ceremony, created.profile.profile_id, setup);
  await load();
}

/**
 * `Sign in again`, and `Start over`: a fresh remote ceremony for the profile (the open one is
 * cancelled by the server).
 * @param {string} profileId @param {string} loginUrl
 */
export async function signIn(profileId, loginUrl) {
  const begun = await api("POST", `/v1/browser/profiles/${encodeURIComponent(profileId)}/ceremonies`, {
    body: { kind: "remote", login_url: loginUrl },
  });
  const profile = profiles.value.find((p) => p.profile_id === profileId);
  const origins = profile?.allowedOrigins ?? [];
  began(begun, profileId, { primary: profile?.primary_origin ?? origins[0] ?? "", additional: origins.slice(1), loginUrl });
}

/**
 * `Start over`: a fresh ceremony. A site signed in before keeps its profile and signs in
 * again; one never signed in (its setup perhaps removed by the server after a refused sign-in)
 * is removed and set up afresh with the same sites and sign-in page.
 */
export async function startOver() {
  const current = ceremony.value;
  if (!current) return;
  await load();
  const profile = profiles.value.find((p) => p.profile_id === current.profileId);
  if (profile?.state === "READY") {
    await signIn(current.profileId, current.setup.loginUrl);
    return;
  }
  if (profile && profile.state !== "REVOKED") {
    try {
      await api("DELETE", `/v1/browser/profiles/${encodeURIComponent(current.profileId)}`);
    } catch (failure) {
      if (!(failure instanceof ApiError && failure.status === 404)) throw failure;
    }
  }
  if (chosen.value === current.profileId) choose(null);
  await add(current.setup);
}

/** Reads the ceremony's secret-free status (on request, on becoming active, when the page appears). */
export async function check() {
  const current = ceremony.value;
  if (!current || current.checking) return;
  ceremony.value = { ...current, checking: true, error: null };
  try {
    const status = await api("GET", `/v1/browser/ceremonies/${encodeURIComponent(current.ceremonyId)}`);
    const now = ceremony.value;
    if (!now || now.ceremonyId !== current.ceremonyId) return;
    ceremony.value = { ...now, state: status.state, checking: false, link: status.state === "open" ? now.link : null };
    if (!["open", "active"].includes(status.state)) await load();
  } catch (failure) {
    const now = ceremony.value;
    if (now && now.ceremonyId === current.ceremonyId) ceremony.value = { ...now, checking: false, error: describe(failure) };
  }
}

/** Leaves the ceremony's card (the server's record stays). */
export function dismiss() {
  ceremony.value = null;
}

/** Removes a profile: its website session is forgotten. @param {string} profileId */
export async function remove(profileId) {
  await api("DELETE", `/v1/browser/profiles/${encodeURIComponent(profileId)}`);
  if (ceremony.value?.profileId === profileId) ceremony.value = null;
  if (chosen.value === profileId) choose(null);
  await load();
}

/** Each read of the task permissions, numbered: only the newest answer is shown. */
let reads = 0;

/** Reads the task permissions in force. */
export async function loadPermissions() {
  if (!holds("browser.read") || available.value === false) return;
  const read = ++reads;
  try {
    const list = await api("GET", "/v1/browser/task-permissions");
    // A read begun before a stop (or another read) that answers after it is stale.
    if (read !== reads) return;
    permissions.value = list.task_permissions;
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 404) available.value = false;
  }
}

/** Stops a task permission: the browser's actions it allowed stop at once. @param {string} permissionId */
export async function stop(permissionId) {
  await api("POST", `/v1/browser/task-permissions/${encodeURIComponent(permissionId)}/stop`);
  reads += 1;
  permissions.value = permissions.value.filter((permission) => permission.task_permission_id !== permissionId);
  await loadPermissions();
}

/** Minutes left until `at`, at least 0. @param {string} at */
export function minutesLeft(at) {
  return Math.max(0, Math.ceil((Date.parse(at) - Date.now()) / 60_000));
}

/** The words for an exception. @param {string} exception */
export function exceptionName(exception) {
  return { purchase: "purchases", sign_out: "signing out" }[exception] ?? exception;
}

/** Ceremony states in the owner's words. @param {string} state */
export function ceremonyWords(state) {
  return (
    {
      open: "Waiting for you to sign in in the web browser.",
      active: "The sign-in page is open.",
      completed: "Signed in. The agent can use this site in new conversations.",
      rejected: "The sign-in was refused; nothing was kept.",
      expired: "The link expired before it was used. Start over for a fresh one.",
      cancelled: "This sign-in was replaced or closed.",
    }[state] ?? state
  );
}
