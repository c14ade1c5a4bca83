// Device preferences: text size and typeface, kept in this browser only and applied at once.
import { signal } from "../vendor/signals-core.mjs";

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
