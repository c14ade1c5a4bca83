// Website Access in the page: Settings' card (profiles, the remote ceremony, the compact Task
// permissions row), what a `browser.act` approval shows and its `Allow all actions for this
// task` control, and the task permission in force above the composer.
import { h } from "../vendor/preact.mjs";
import { useEffect, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import { describe, holds } from "./api.js";
import * as chat from "./chat.js";
import * as website from "./website.js";

const html = htm.bind(h);

/** @param {string} text */
const lines = (text) => text.split(/[\s,]+/).map((line) => line.trim()).filter(Boolean);

/** The remote ceremony in progress: `Continue in web browser`, its status, `Start over`. */
function CeremonyPanel() {
  const current = website.ceremony.value;
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState(/** @type {string | null} */ (null));
  useEffect(() => {
    // The status is read again when this page becomes active (the owner comes back from the
    // sign-in tab).
    const again = () => document.visibilityState === "visible" && website.check();
    // And when the card appears.
    website.check();
    document.addEventListener("visibilitychange", again);
    window.addEventListener("focus", again);
    return () => {
      document.removeEventListener("visibilitychange", again);
      window.removeEventListener("focus", again);
    };
  }, []);
  if (!current) return null;
  const profile = website.profiles.value.find((p) => p.profile_id === current.profileId);
  const open = ["open", "active"].includes(current.state);
  const startOver = async () => {
    setBusy(true);
    setFailure(null);
    try {
      await website.startOver();
    } catch (error) {
      setFailure(describe(error));
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="ceremony" aria-label="Sign-in" role="group">
    <p class="summary" role="status">${profile ? html`<strong>${profile.primary_origin}</strong>: ` : ""}${website.ceremonyWords(current.state)}</p>
    ${current.state === "open" && current.link && html`<p class="summary">The link works once, for five minutes. Sign in there, then come back.</p>`}
    ${(current.error || failure) && html`<p class="error" role="alert">${current.error || failure}</p>`}
    <div class="controls">
      ${current.state === "open" && current.link && html`<a class="button filled" href=${current.link} target="_blank" rel="noopener noreferrer"
        onClick=${() => setTimeout(() => website.check(), 1000)}>Continue in web browser</a>`}
      ${open && html`<button class="button hairline" disabled=${current.checking} onClick=${() => website.check()}>
        ${current.checking ? "Checking…" : "Check status"}</button>`}
      <button class="button hairline" disabled=${busy} onClick=${startOver}>${busy ? "Starting over…" : "Start over"}</button>
      ${!open && html`<button class="button quiet" onClick=${website.dismiss}>Done</button>`}
    </div>
  </div>`;
}

/** Adding a site: its exact origins and sign-in page, then the remote ceremony. */
function AddProfile() {
  const [primary, setPrimary] = useState("");
  const [additional, setAdditional] = useState("");
  const [login, setLogin] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState(/** @type {string | null} */ (null));
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault();
    setBusy(true);
    setFailure(null);
    try {
      await website.add({ primary: primary.trim(), additional: lines(additional), loginUrl: login.trim() || `${primary.trim()}/` });
      setPrimary("");
      setAdditional("");
      setLogin("");
    } catch (error) {
      setFailure(describe(error));
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="add-profile" onSubmit=${submit} aria-label="Add a website">
    <div class="field"><label for="profile-origin">Website</label>
      <input id="profile-origin" type="url" required placeholder="https://shop.example" value=${primary}
        onInput=${(/** @type {any} */ e) => setPrimary(e.currentTarget.value)} /></div>
    <div class="field"><label for="profile-more">Other addresses it uses (optional)</label>
      <input id="profile-more" placeholder="https://login.shop.example" value=${additional}
        onInput=${(/** @type {any} */ e) => setAdditional(e.currentTarget.value)} /></div>
    <div class="field"><label for="profile-login">Sign-in page</label>
      <input id="profile-login" type="url" placeholder="https://shop.example/signin" value=${login}
        onInput=${(/** @type {any} */ e) => setLogin(e.currentTarget.value)} /></div>
    ${failure && html`<p class="error" role="alert">${failure}</p>`}
    <div class="controls"><button class="button filled" type="submit" disabled=${busy || !primary.trim()}>${busy ? "Adding…" : "Add and sign in"}</button></div>
  </form>`;
}

/** One profile: its sites and state, `Sign in again`, the choice for new conversations, removal. */
function ProfileRow({ profile }) {
  const [busy, setBusy] = useState(/** @type {string | null} */ (null));
  const [failure, setFailure] = useState(/** @type {string | null} */ (null));
  const [login, setLogin] = useState(/** @type {string | null} */ (null));
  const revoked = profile.state === "REVOKED";
  const run = async (/** @type {string} */ what, /** @type {() => Promise<void>} */ action) => {
    setBusy(what);
    setFailure(null);
    try {
      await action();
    } catch (error) {
      setFailure(describe(error));
    } finally {
      setBusy(null);
    }
  };
  const signIn = (/** @type {Event} */ event) => {
    event.preventDefault();
    const page = (login ?? "").trim();
    if (page) run("sign-in", () => website.signIn(profile.profile_id, page).then(() => setLogin(null)));
  };
  const state = { READY: "Signed in", PENDING: "Not signed in yet", REVOKED: "Removed" }[profile.state] ?? profile.state;
  const writable = holds("browser.write");
  return html`<li class="profile" aria-label=${profile.primary_origin}>
    <div>
      <strong>${profile.primary_origin}</strong>
      <span class="summary"> · ${state}</span>
      ${profile.allowedOrigins.length > 1 && html`<div class="summary">Also ${profile.allowedOrigins.slice(1).join(", ")}</div>`}
    </div>
    ${profile.state === "READY" && html`<label class="choice"><input type="checkbox" checked=${website.chosen.value === profile.profile_id}
      onChange=${(/** @type {any} */ e) => website.choose(e.currentTarget.checked ? profile.profile_id : null)} />
      <span>Use in new conversations</span></label>`}
    ${failure && html`<p class="error" role="alert">${failure}</p>`}
    ${login !== null && html`<form class="sign-in-again" onSubmit=${signIn}>
      <div class="field"><label for=${`login-${profile.profile_id}`}>Sign-in page</label>
        <input id=${`login-${profile.profile_id}`} type="url" required value=${login}
          onInput=${(/** @type {any} */ e) => setLogin(e.currentTarget.value)} /></div>
      <div class="controls">
        <button class="button filled small" type="submit" disabled=${busy !== null}>${busy === "sign-in" ? "Starting…" : "Continue"}</button>
        <button class="button quiet small" type="button" onClick=${() => setLogin(null)}>Cancel</button>
      </div>
    </form>`}
    ${!revoked && writable && login === null && html`<div class="controls">
      <button class="button hairline small" disabled=${busy !== null} onClick=${() => setLogin(`${profile.primary_origin}/`)}>Sign in again</button>
      <button class="button hairline small danger" disabled=${busy !== null}
        onClick=${() => window.confirm(`Remove ${profile.primary_origin}? Its sign-in is forgotten.`) && run("remove", () => website.remove(profile.profile_id))}>
        ${busy === "remove" ? "Removing…" : "Remove"}</button>
    </div>`}
  </li>`;
}

/** The compact Task permissions row: how many are active, and Stop for each. */
function TaskPermissionsRow() {
  const [open, setOpen] = useState(false);
  const list = website.permissions.value;
  return html`<div class="task-permissions" aria-label="Task permissions" role="group">
    <button class="button quiet small" aria-expanded=${open} onClick=${() => setOpen(!open)}>
      Task permissions: ${list.length === 0 ? "none active" : `${list.length} active`}</button>
    ${open && list.length > 0 && html`<ul>${list.map((permission) => html`<li key=${permission.task_permission_id}>
      <${PermissionSummary} permission=${permission} /></li>`)}</ul>`}
  </div>`;
}

/** A task permission's scope, what is left of it, and Stop. */
function PermissionSummary({ permission }) {
  const [stopping, setStopping] = useState(false);
  const [failure, setFailure] = useState(/** @type {string | null} */ (null));
  return html`<div class="permission">
    <span>${`Allowed on ${permission.origins.join(", ")}: ${permission.remaining_actions} actions and ${website.minutesLeft(
      permission.expires_at,
    )} min left; never ${permission.exceptions.map(website.exceptionName).join(" or ")}.`}</span>
    ${failure && html`<span class="error" role="alert">${failure}</span>`}
    <button class="button hairline small" disabled=${stopping || !holds("browser.write")} onClick=${async () => {
      setStopping(true);
      setFailure(null);
      try {
        await website.stop(permission.task_permission_id);
      } catch (error) {
        setFailure(describe(error));
        setStopping(false);
      }
    }}>${stopping ? "Stopping…" : "Stop"}</button>
  </div>`;
}

/** Settings' Website Access card; nothing on a server without it. */
export function WebsiteAccessCard() {
  useEffect(() => {
    website.load().then(() => website.loadPermissions());
  }, []);
  if (website.available.value !== true) {
    return website.error.value
      ? html`<section class="card" aria-label="Website Access"><h2>Website Access</h2><p class="error">${website.error.value}</p></section>`
      : null;
  }
  const list = website.profiles.value;
  return html`<section class="card" aria-label="Website Access">
    <h2>Website Access</h2>
    <p class="summary">Sites where the agent may act as you, in a browser your server hosts. It asks before every click or entry unless you allow a task.</p>
    ${list.length === 0 ? html`<p class="summary">No websites yet.</p>` : html`<ul class="profiles">${list.map(
      (profile) => html`<${ProfileRow} key=${profile.profile_id} profile=${profile} />`,
    )}</ul>`}
    <${CeremonyPanel} />
    ${holds("browser.write") && !website.ceremony.value && html`<${AddProfile} />`}
    <${TaskPermissionsRow} />
  </section>`;
}

/**
 * What a `browser.act` approval shows: the action, the element and the page, the website's own
 * words marked as such, and what the agent would type or choose.
 * @param {{args: Record<string, any>}} props
 */
export function BrowserActArguments({ args }) {
  const { action, element, element_kind: kind, page_url: page, website_text: words, text, value, exception, ...rest } = args;
  const verb = { click: "Click", type: "Type into", select: "Choose in", submit: "Submit", navigate: "Open", read: "Read" }[action] ?? String(action);
  delete rest.url;
  return html`<dl class="frozen browser-act" aria-label="Browser action">
      <dt>Action</dt><dd>${verb}</dd>
      <dt>Element</dt><dd>${kind ? `${kind} ` : ""}<code>${String(element ?? "")}</code>
        ${words?.element_label !== undefined && html` <span class="website-text" title="Text from the website">“${words.element_label}”</span>`}</dd>
      <dt>Page</dt><dd><span class="url">${String(page ?? args.url ?? "")}</span>
        ${words?.page_title !== undefined && html` <span class="website-text" title="Text from the website">“${words.page_title}”</span>`}</dd>
      ${words?.element_target && html`<dt>Leads to</dt><dd><span class="url website-text" title="Address from the website">${words.element_target}</span></dd>`}
      ${words?.form_buttons && html`<dt>Form</dt><dd><span class="website-text" title="Text from the website">“${words.form_buttons}”</span></dd>`}
      ${text !== undefined && html`<dt>Text</dt><dd class="mail-text">${String(text)}</dd>`}
      ${value !== undefined && html`<dt>Option</dt><dd><code>${String(value)}</code></dd>`}
      ${exception && html`<dt>Always asks</dt><dd>${website.exceptionName(exception)} are never covered by a task permission</dd>`}
    </dl>
    <p class="summary website-note">Quoted text in “ ” comes from the website, not from Steward.</p>
    ${Object.keys(rest).length > 0 && html`<pre class="detail scroll" tabindex="0" aria-label="Other arguments">${JSON.stringify(rest, null, 2)}</pre>`}`;
}

/**
 * `Allow all actions for this task`, when the approval offers it: first the server's scope,
 * limits and exceptions, then a confirmation.
 * @param {{item: chat.ApprovalItem, disabled: boolean}} props
 */
export function AllowForTask({ item, disabled }) {
  const [confirming, setConfirming] = useState(false);
  const offer = /** @type {any} */ (item).taskOffer;
  if (!offer) return null;
  if (!confirming) {
    return html`<button class="button hairline" disabled=${disabled} onClick=${() => setConfirming(true)}>Allow all actions for this task</button>`;
  }
  return html`<div class="confirm-task" role="group" aria-label="Allow all actions for this task">
    <p>Allow this and the next ${offer.max_actions - 1} actions of this task on ${offer.origins.join(", ")} for ${offer.minutes} minutes, without asking?
      Never ${offer.exceptions.map(website.exceptionName).join(" or ")}: those always ask. You can stop it at any time.</p>
    <div class="controls">
      <button class="button filled" disabled=${disabled} onClick=${() => chat.decide(item.approvalId, "allow_for_task").then(() => website.loadPermissions())}>
        ${item.deciding === "allow_for_task" ? "Allowing…" : "Allow for this task"}</button>
      <button class="button quiet" disabled=${disabled} onClick=${() => setConfirming(false)}>Back</button>
    </div>
  </div>`;
}

/** The task permission in force in the selected conversation, above the composer. */
export function TaskPermissionBar() {
  const session = chat.selectedId.value;
  const running = chat.activeRun.value;
  // Each action a task permission covers changes what is left of it: read it again then.
  const covered = chat.transcript.value.filter((item) => item.kind === "approval" && item.approvedFor === "task").length;
  useEffect(() => {
    if (website.available.value === null) website.load();
  }, []);
  useEffect(() => {
    if (website.available.value === false || !session) return;
    website.loadPermissions();
    const timer = setInterval(() => website.loadPermissions(), 15_000);
    return () => clearInterval(timer);
  }, [session, running, covered]);
  const ready = website.chosenReady.value;
  if (!session) {
    return ready && html`<p class="summary website-choice">This conversation can act on ${ready.primary_origin} as you, with your approval.</p>`;
  }
  const active = website.permissions.value.filter((permission) => permission.session_id === session);
  if (active.length === 0) return null;
  return html`<div class="task-permission-bar" role="status" aria-label="Task permission">
    ${active.map((permission) => html`<${PermissionSummary} key=${permission.task_permission_id} permission=${permission} />`)}
  </div>`;
}
