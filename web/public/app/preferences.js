// Device preferences, kept in this browser only: text size and typeface, applied at once, and
// the website profile chosen for new conversations.
import { signal } from "../vendor/signals-core.mjs";
import { onForget } from "./api.js";

/** @type {Array<[string, string]>} */
export const TEXT_SIZES = [
  ["system", "System"],
  ["small", "Small"],
  ["medium", "Medium"],
  ["large", "Large"],
];
/** @type {Array<[string, string]>} */
export const TYPEFACES = [
  ["system", "System"],
  ["rounded", "Rounded"],
  ["serif", "Serif"],
  ["mono", "Monospaced"],
];
const KEY = "steward.appearance";

/** @typedef {{textSize: string, typeface: string}} Appearance */

/** @returns {Appearance} */
function load() {
  /** @type {Appearance} */
  const fallback = { textSize: "system", typeface: "rounded" };
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) ?? "null");
    return {
      textSize: TEXT_SIZES.some(([key]) => key === stored?.textSize) ? stored.textSize : fallback.textSize,
      typeface: TYPEFACES.some(([key]) => key === stored?.typeface) ? stored.typeface : fallback.typeface,
    };
  } catch {
    return fallback;
  }
}

export const appearance = signal(load());

/** @param {Appearance} value */
function apply(value) {
  const root = document.documentElement;
  root.dataset.textSize = value.textSize;
  root.dataset.typeface = value.typeface;
}

/** @param {Appearance} value */
export function setAppearance(value) {
  appearance.value = value;
  apply(value);
  try {
    localStorage.setItem(KEY, JSON.stringify(value));
  } catch {
    // Private browsing without storage: the choice lasts for this page.
  }
}

apply(appearance.value);

// The website profile chosen for new conversations (Website Access, website.js): cleared when
// the connection is forgotten or changes (the server checks it again). Kept here, outside
// Website Access's modules, so Chat knows whether a new conversation needs them, and
// forgetting clears it whether or not they were fetched.
const PROFILE_KEY = "steward.browserProfile";

function storedProfile() {
  try {
    return localStorage.getItem(PROFILE_KEY);
  } catch {
    return null;
  }
}

/** The profile chosen for new conversations on this device. */
export const chosenProfile = signal(/** @type {string | null} */ (storedProfile()));

/** @param {string | null} profileId */
export function chooseProfile(profileId) {
  chosenProfile.value = profileId;
  try {
    if (profileId) localStorage.setItem(PROFILE_KEY, profileId);
    else localStorage.removeItem(PROFILE_KEY);
  } catch {
    // Private browsing without storage: the choice lasts for this page.
  }
}

onForget(() => chooseProfile(null));
