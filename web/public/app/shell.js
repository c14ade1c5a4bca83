// What every view of the page shares: which screen the main area shows (and on a phone whether
// it shows at all), Chat or Email, and modules fetched the first time they are wanted.
import { h } from "../vendor/preact.mjs";
import { signal } from "../vendor/signals.mjs";
import htm from "../vendor/htm.mjs";
import { onForget } from "./api.js";

const html = htm.bind(h);

/** Which screen the main area shows, and on a phone whether it is showing at all. */
export const view = signal(/** @type {"chat" | "settings" | "notifications" | "calls" | "memory" | "people"} */ ("chat"));
export const showingMain = signal(false);
/** Chat or Email: both stay mounted, the other one hidden. */
export const mode = signal(/** @type {"chat" | "email"} */ ("chat"));

onForget(() => {
  view.value = "chat";
  showingMain.value = false;
  mode.value = "chat";
});

/**
 * A module kept out of the first load and fetched the first time it is wanted (Email mode, and
 * Settings' Learning card): the first load stays within its budget. A failed fetch is not
 * asked again (the browser keeps the failure, and after an upgrade the old name is gone): the
 * page offers to reload.
 * @template T
 * @param {() => Promise<T>} load
 */
export function lazy(load) {
  const module = signal(/** @type {T | null} */ (null));
  const failed = signal(false);
  let asked = false;
  const want = () => {
    if (asked) return;
    asked = true;
    load().then(
      (loaded) => (module.value = loaded),
      () => (failed.value = true),
    );
  };
  return { module, failed, want };
}

/** What a module that could not be fetched offers: a reload, which fetches the page anew. @param {{what: string}} props */
export function ReloadOffer({ what }) {
  return html`<p class="error" role="alert">${what} could not be loaded: the connection dropped, or the server was upgraded.</p>
    <button class="button hairline small" onClick=${() => window.location.reload()}>Reload</button>`;
}
