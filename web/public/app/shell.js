// What every view of the page shares: which screen the main area shows (and on a phone whether
// it shows at all), Chat or Email, and modules fetched the first time they are wanted (below,
// those several views share).
import { h } from "../vendor/preact.mjs";
import { signal } from "../vendor/signals.mjs";
import htm from "../vendor/htm.mjs";
import { holds, onForget } from "./api.js";

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
 * A module kept out of the first load and fetched the first time it is wanted (Email mode,
 * Settings, Calls, Memory, People, Website Access: see below): the first load stays within its
 * budget. `module` is null until it is here; `use` runs an action with it, at once when it is
 * here, otherwise once fetched. A failed fetch is not asked again (the browser keeps the
 * failure, and after an upgrade the old name is gone): the page offers to reload.
 * @template T
 * @param {() => Promise<T>} load
 */
export function lazy(load) {
  const module = signal(/** @type {T | null} */ (null));
  const failed = signal(false);
  /** @type {Promise<T | null> | null} */
  let fetching = null;
  const fetched = () =>
    (fetching ??= load().then(
      (loaded) => (module.value = loaded),
      () => {
        failed.value = true;
        return null;
      },
    ));
  const want = () => {
    fetched();
  };
  /** @param {(loaded: T) => unknown} act */
  const use = (act) => {
    const loaded = module.value;
    if (loaded) act(loaded);
    else
      fetched().then((now) => {
        if (now) act(now);
      });
  };
  return { module, failed, want, use };
}

/** What a module that could not be fetched offers: a reload, which fetches the page anew. @param {{what: string}} props */
export function ReloadOffer({ what }) {
  return html`<p class="error" role="alert">${what} could not be loaded: the connection dropped, or the server was upgraded.</p>
    <button class="button hairline small" onClick=${() => window.location.reload()}>Reload</button>`;
}

// Modules several views share, out of the first page's modules. Calls, Memory and People are
// fetched once connected (after the first paint) when the token may read them; until then the
// sidebar offers each as its module would. Website Access's views come when Settings or a
// browser action shows, or when a new chat would use a website chosen on this device. What
// these import must never import this module: the build refuses an import cycle.
export const lazyCalls = lazy(() => import("./calls.js"));
export const lazyMemory = lazy(() => import("./memory.js"));
export const lazyPeople = lazy(() => import("./people.js"));
export const lazyRecalled = lazy(() => import("./recalled-view.js"));
export const lazyWebsite = lazy(() => import("./website-view.js"));

/** Once connected: Calls, Memory and People, each when the token may read it. */
export function fetchFeatures() {
  if (holds("call.read")) lazyCalls.want();
  if (holds("memory.read")) {
    lazyMemory.want();
    lazyRecalled.want();
  }
  if (holds("people.read")) lazyPeople.want();
}

/**
 * Whether the page offers a feature: its module's answer once fetched; until then whether the
 * token may read it, as the module says before its server has answered.
 * @param {{module: {value: {offered: () => boolean} | null}}} feature @param {string} scope
 */
export function offered(feature, scope) {
  const loaded = feature.module.value;
  return loaded ? loaded.offered() : holds(scope);
}
