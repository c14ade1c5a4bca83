// Steward's web client: the connection form, then the mode bar over Chat (the sidebar with the
// conversation, settings or notifications) and Email. Email, Settings, Notifications, Calls,
// Memory and People are fetched when they first show (see `lazy` in shell.js).
import { h, render } from "../vendor/preact.mjs";
import { useEffect, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import { checkConnection, connect, connection, describe } from "./api.js";
import * as chat from "./chat.js";
import { ChatView } from "./conversation-view.js";
import { openTap } from "./notifications.js";
import { fetchFeatures, lazy, mode, ReloadOffer, showingMain, view } from "./shell.js";
import { Sidebar } from "./sidebar-view.js";

const html = htm.bind(h);

/** The two modes. */
function ModeBar() {
  const tab = (/** @type {"chat" | "email"} */ which, /** @type {string} */ label) =>
    html`<button role="tab" aria-selected=${mode.value === which ? "true" : "false"} onClick=${() => (mode.value = which)}>${label}</button>`;
  return html`<nav class="modebar" aria-label="Modes"><div role="tablist" aria-label="Mode">${tab("chat", "Chat")}${tab("email", "Email")}</div></nav>`;
}

// ---------------------------------------------------------------------------------------------
// Connection.

function ConnectView() {
  const [token, setToken] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const notice = connection.value.notice;
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault();
    if (!token.trim()) {
      setError("Enter the token.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await connect(token.trim());
      setToken("");
    } catch (failure) {
      setError(describe(failure));
    } finally {
      setBusy(false);
    }
  };
  return html`
    <main class="centered">
      <form class="panel" onSubmit=${submit} aria-labelledby="connect-title" novalidate>
        <h1 id="connect-title">Connect to Steward</h1>
        <p>This page talks only to the server it came from. Enter the token once; the browser keeps a session the page itself cannot read.</p>
        <div class="field">
          <span class="label" id="server-label">Server</span>
          <div class="origin" aria-labelledby="server-label">${window.location.origin}</div>
        </div>
        <div class="field">
          <label for="token">Token</label>
          <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" value=${token}
            onInput=${(/** @type {any} */ e) => setToken(e.currentTarget.value)} aria-describedby="token-hint" />
          <span class="hint" id="token-hint">The bearer token from the server's API_TOKEN_FILE.</span>
        </div>
        ${notice && html`<p class="error" role="status">${notice}</p>`}
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <button class="button filled" type="submit" disabled=${busy}>${busy ? "Connecting…" : "Connect"}</button>
      </form>
    </main>`;
}


// ---------------------------------------------------------------------------------------------

function App() {
  const state = connection.value.state;
  useEffect(() => {
    if (state !== "connected") return;
    chat.startReconciling();
    // Web Push: registered again on every load when on (kept out of the first page's modules).
    import("./push.js").then(
      (push) => push.syncPush(),
      () => undefined,
    );
    // Calls, Memory and People (also kept out of the first page's modules): each learns whether
    // this server has it, and the sidebar keeps or drops its way there.
    fetchFeatures();
    // A link to one conversation: `/#session=<id>` opens it, on load and when the hash changes.
    // A clicked alert with no window open links to what it names (the tap dictionary as
    // `#v=1&kind=…&notification_id=…&session_id=…`), opened as the Notifications list does.
    const follow = () => {
      const hash = window.location.hash;
      const linked = /^#session=([0-9a-f-]{36})$/.exec(hash);
      if (linked) {
        view.value = "chat";
        showingMain.value = true;
        chat.select(linked[1]);
        return;
      }
      const params = new URLSearchParams(hash.slice(1));
      if (!params.has("notification_id")) return;
      const tap = Object.fromEntries(params);
      history.replaceState(null, "", window.location.pathname);
      showingMain.value = true;
      openTap({ ...tap, v: Number(tap.v) });
    };
    follow();
    window.addEventListener("hashchange", follow);
    return () => window.removeEventListener("hashchange", follow);
  }, [state]);
  if (state === "unknown") return html`<p class="boot">Steward</p>`;
  if (state === "disconnected") return html`<${ConnectView} />`;
  return html`<div class="app">
    <${ModeBar} />
    <div class=${`shell${showingMain.value ? " showing-main" : ""}`} hidden=${mode.value !== "chat"}>
      <${Sidebar} />
      ${view.value === "settings" || view.value === "notifications"
        ? html`<${LazySettings} which=${view.value} />`
        : view.value === "calls"
          ? html`<${LazyCalls} />`
          : view.value === "memory" || view.value === "people"
            ? html`<${LazyMemory} which=${view.value} />`
            : html`<${ChatView} />`}
    </div>
    <${LazyEmail} shown=${mode.value === "email"} />
  </div>`;
}

const settingsModule = lazy(() => import("./settings-view.js"));

/** Settings or Notifications, fetched when one first shows. @param {{which: "settings" | "notifications"}} props */
function LazySettings({ which }) {
  useEffect(() => settingsModule.want(), []);
  const loaded = settingsModule.module.value;
  if (loaded) return which === "settings" ? html`<${loaded.SettingsView} />` : html`<${loaded.NotificationsView} />`;
  const what = which === "settings" ? "Settings" : "Notifications";
  return html`<main class="main settings" aria-label=${what}>
    <div class="settings-inner">
      ${settingsModule.failed.value ? html`<${ReloadOffer} what=${what} />` : html`<p class="summary">Loading ${what}…</p>`}
    </div>
  </main>`;
}

const callsModule = lazy(() => import("./calls-view.js"));

/** Calls, fetched when they first show. */
function LazyCalls() {
  useEffect(() => callsModule.want(), []);
  const loaded = callsModule.module.value;
  if (loaded) return html`<${loaded.CallsView} />`;
  return html`<main class="main settings" aria-label="Calls">
    <div class="settings-inner">
      ${callsModule.failed.value ? html`<${ReloadOffer} what="Calls" />` : html`<p class="summary">Loading Calls…</p>`}
    </div>
  </main>`;
}

const memoryModule = lazy(() => import("./memory-view.js"));

/** Memory or People, fetched when one first shows. @param {{which: "memory" | "people"}} props */
function LazyMemory({ which }) {
  useEffect(() => memoryModule.want(), []);
  const loaded = memoryModule.module.value;
  if (loaded) return which === "memory" ? html`<${loaded.MemoryView} />` : html`<${loaded.PeopleView} />`;
  const what = which === "memory" ? "Memory" : "People";
  return html`<main class="main settings" aria-label=${what}>
    <div class="settings-inner">
      ${memoryModule.failed.value ? html`<${ReloadOffer} what=${what} />` : html`<p class="summary">Loading ${what}…</p>`}
    </div>
  </main>`;
}

const emailModule = lazy(() => import("./inbox.js"));

/** Email mode, fetched when it first shows and kept mounted from then on. @param {{shown: boolean}} props */
function LazyEmail({ shown }) {
  useEffect(() => {
    if (shown) emailModule.want();
  }, [shown]);
  const loaded = emailModule.module.value;
  if (loaded) return html`<${loaded.EmailView} shown=${shown} />`;
  if (!shown) return null;
  return html`<main class="main email-unavailable" aria-label="Email">
    <div class="welcome">
      ${emailModule.failed.value ? html`<${ReloadOffer} what="Email" />` : html`<p class="summary">Loading Email…</p>`}
    </div>
  </main>`;
}

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(html`<${App} />`, root);
}
checkConnection();
if ("serviceWorker" in navigator && window.isSecureContext) {
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => undefined);
}
