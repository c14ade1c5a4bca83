// The sidebar: the session index (Recent chats, folders and their proposals, History,
// Scheduled), and the way to Settings, Notifications, Calls, Memory and People.
import { h } from "../vendor/preact.mjs";
import { useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import { holds } from "./api.js";
import * as chat from "./chat.js";
import * as folders from "./folders.js";
import * as notifications from "./notifications.js";
import { lazyCalls, lazyMemory, lazyPeople, offered, showingMain, view } from "./shell.js";

const html = htm.bind(h);

/** A small menu of actions, opened by its button and closed by Escape or a choice. */
function Menu({ label, children }) {
  const [open, setOpen] = useState(false);
  return html`<span class="menu" onKeyDown=${(/** @type {KeyboardEvent} */ e) => e.key === "Escape" && setOpen(false)}>
    <button class="menu-button" aria-label=${label} aria-expanded=${open} onClick=${() => setOpen(!open)}>⋯</button>
    ${open && html`<div class="menu-items" onClick=${() => setOpen(false)}>${children}</div>`}
  </span>`;
}

/** @param {{row: chat.SessionRow}} props */
function SessionRow({ row }) {
  const current = chat.selectedId.value === row.session_id;
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const title = row.title || "New conversation";
  const fileable = folders.support.value === "present" && row.schedule_id == null;
  return html`<li class="row-line">
    <button class="row" aria-current=${current ? "true" : "false"}
      onClick=${() => {
        view.value = "chat";
        showingMain.value = true;
        if (!current) chat.select(row.session_id);
      }}>${title}</button>
    <${Menu} label=${`Actions for ${title}`}>
      ${fileable &&
      folders.folders.value
        .filter((folder) => folder.folder_id !== row.folder_id)
        .map((folder) => html`<button onClick=${() => folders.move(row.session_id, folder.folder_id)}>Move to ${folder.name}</button>`)}
      ${fileable && row.folder_id && html`<button onClick=${() => folders.move(row.session_id, null)}>Remove from folder</button>`}
      <button class="danger" onClick=${() => setConfirming(true)}>Delete conversation…</button>
    <//>
    ${confirming &&
    html`<div class="confirm" role="alertdialog" aria-label=${`Delete ${title}?`}>
      <span>Delete “${title}” for good?</span>
      <button class="button filled small danger-fill" onClick=${async () => {
        const refused = await chat.deleteSession(row.session_id);
        setError(refused);
        setConfirming(false);
      }}>Delete</button>
      <button class="button quiet small" onClick=${() => setConfirming(false)}>Keep</button>
    </div>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </li>`;
}

/** An inline one-field form: a new folder's name, a rename. */
function NameForm({ label, initial, submitLabel, onSubmit, onCancel }) {
  const [name, setName] = useState(initial);
  return html`<form class="name-form" onSubmit=${(/** @type {Event} */ e) => {
    e.preventDefault();
    if (name.trim()) onSubmit(name.trim());
  }}>
    <input aria-label=${label} value=${name} maxlength="100" ref=${(/** @type {HTMLInputElement | null} */ el) => el?.focus()}
      onInput=${(/** @type {any} */ e) => setName(e.currentTarget.value)}
      onKeyDown=${(/** @type {KeyboardEvent} */ e) => e.key === "Escape" && onCancel()} />
    <button class="button filled small" type="submit" disabled=${!name.trim()}>${submitLabel}</button>
  </form>`;
}

/** @param {{folder: import("./folders.js").Folder, rows: chat.SessionRow[]}} props */
function FolderSection({ folder, rows }) {
  const [renaming, setRenaming] = useState(false);
  const expanded = folders.open.value.has(folder.folder_id);
  return html`<li class="folder">
    <div class="row-line">
      <button class="row folder-row" aria-expanded=${expanded} onClick=${() => folders.toggle(folder.folder_id)}>
        <span aria-hidden="true">${expanded ? "▾" : "▸"}</span> ${folder.name} <span class="count">${rows.length}</span>
      </button>
      <${Menu} label=${`Actions for folder ${folder.name}`}>
        <button onClick=${() => setRenaming(true)}>Rename…</button>
        <button class="danger" onClick=${() => folders.deleteFolder(folder.folder_id)}>Delete folder</button>
      <//>
    </div>
    ${renaming &&
    html`<${NameForm} label="Folder name" initial=${folder.name} submitLabel="Rename"
      onSubmit=${async (/** @type {string} */ name) => {
        await folders.renameFolder(folder.folder_id, name);
        setRenaming(false);
      }} onCancel=${() => setRenaming(false)} />`}
    ${expanded &&
    html`<ul class="rows nested">${rows.length === 0
      ? html`<li class="empty">Empty</li>`
      : rows.map((row) => html`<${SessionRow} key=${row.session_id} row=${row} />`)}</ul>`}
  </li>`;
}

/** @param {{proposal: import("./folders.js").Proposal}} props */
function ProposalCard({ proposal }) {
  const [name, setName] = useState(proposal.name);
  const [busy, setBusy] = useState(false);
  const count = proposal.session_ids.length;
  const titles = proposal.session_ids
    .map((id) => chat.sessions.value.find((row) => row.session_id === id)?.title)
    .filter(Boolean);
  const act = async (/** @type {() => Promise<unknown>} */ action) => {
    setBusy(true);
    await action();
    setBusy(false);
  };
  return html`<section class="proposal" aria-label=${`Suggested folder ${proposal.name}`}>
    <p>File ${count} ${count === 1 ? "conversation" : "conversations"} into ${proposal.folder_id ? html`<strong>${proposal.name}</strong>` : "a new folder"}?</p>
    ${titles.length > 0 && html`<p class="titles">${titles.join(", ")}</p>`}
    ${!proposal.folder_id &&
    html`<label class="field"><span class="label">New folder</span>
      <input value=${name} maxlength="100" onInput=${(/** @type {any} */ e) => setName(e.currentTarget.value)} /></label>`}
    <div class="controls">
      <button class="button filled small" disabled=${busy || !name.trim()}
        onClick=${() => act(() => folders.accept(proposal.proposal_id, !proposal.folder_id && name.trim() !== proposal.name ? name.trim() : null))}>Accept</button>
      <button class="button hairline small" disabled=${busy} onClick=${() => act(() => folders.decline(proposal.proposal_id))}>Decline</button>
    </div>
  </section>`;
}

/**
 * Scheduled sessions never enter a folder: two or more of one schedule are one group,
 * collapsed by default and named by the newest session; a lone one stays in the history.
 * @param {chat.SessionRow[]} scheduled
 */
function scheduleGroups(scheduled) {
  /** @type {Map<string, chat.SessionRow[]>} */
  const groups = new Map();
  for (const row of scheduled) {
    const key = /** @type {string} */ (row.schedule_id);
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()];
}

/** @param {{rows: chat.SessionRow[]}} props */
function ScheduleGroup({ rows }) {
  const [open, setOpen] = useState(false);
  const newest = rows.reduce((a, b) => (a.created_at > b.created_at ? a : b));
  return html`<li class="folder">
    <button class="row folder-row" aria-expanded=${open} onClick=${() => setOpen(!open)}>
      <span aria-hidden="true">${open ? "▾" : "▸"}</span> ${newest.title || "Scheduled task"} <span class="count">${rows.length}</span>
    </button>
    ${open && html`<ul class="rows nested">${rows.map((row) => html`<${SessionRow} key=${row.session_id} row=${row} />`)}</ul>`}
  </li>`;
}

/** History rows rendered at first and per "Show more": a long history stays cheap to draw. */
const HISTORY_PAGE = 100;

export function Sidebar() {
  const [recentOpen, setRecentOpen] = useState(() => localStorage.getItem("steward.recentOpen") !== "false");
  const [creating, setCreating] = useState(false);
  const [historyShown, setHistoryShown] = useState(HISTORY_PAGE);
  const rows = chat.sessions.value;
  const withFolders = folders.support.value === "present";
  const known = new Set(folders.folders.value.map((folder) => folder.folder_id));
  const filed = (/** @type {chat.SessionRow} */ row) => withFolders && row.folder_id != null && known.has(row.folder_id);
  const groups = scheduleGroups(rows.filter((row) => row.schedule_id != null));
  const lone = new Set(groups.filter((group) => group.length === 1).map((group) => group[0].session_id));
  const history = rows.filter((row) => (row.schedule_id == null && !filed(row)) || lone.has(row.session_id));
  const conversations = rows.filter((row) => row.schedule_id == null);
  const toggleRecent = () => {
    localStorage.setItem("steward.recentOpen", String(!recentOpen));
    setRecentOpen(!recentOpen);
  };
  return html`
    <aside class="sidebar" aria-label="Conversations">
      <header>
        <p class="brand">Steward</p>
        <button class="button filled small" onClick=${() => {
          view.value = "chat";
          showingMain.value = true;
          chat.select(null);
        }}>New chat</button>
      </header>
      <nav>
        ${chat.indexError.value && html`<p class="error" role="alert">${chat.indexError.value}</p>`}
        ${folders.folderError.value && html`<p class="error" role="alert">${folders.folderError.value}</p>`}
        ${withFolders && folders.proposals.value.map((proposal) => html`<${ProposalCard} key=${proposal.proposal_id} proposal=${proposal} />`)}
        ${conversations.length > 0 &&
        html`<section aria-label="Recent chats">
          <button class="group-title" aria-expanded=${recentOpen} onClick=${toggleRecent}>Recent chats <span aria-hidden="true">${recentOpen ? "−" : "+"}</span></button>
          ${recentOpen && html`<ul class="rows">${chat.recent.value.map((row) => html`<${SessionRow} key=${row.session_id} row=${row} />`)}</ul>`}
        </section>`}
        ${withFolders &&
        html`<section aria-label="Folders">
          <div class="group-line">
            <h2 class="group-title">Folders</h2>
            <button class="button quiet small" aria-pressed=${folders.solo.value} onClick=${folders.toggleSolo}
              title="Keep at most one folder open">Solo</button>
            <button class="button quiet small" onClick=${() => setCreating(!creating)}>New folder</button>
          </div>
          ${creating &&
          html`<${NameForm} label="New folder name" initial="" submitLabel="Create"
            onSubmit=${async (/** @type {string} */ name) => {
              await folders.createFolder(name);
              setCreating(false);
            }} onCancel=${() => setCreating(false)} />`}
          <ul class="rows">${folders.folders.value.map(
            (folder) => html`<${FolderSection} key=${folder.folder_id} folder=${folder}
              rows=${rows.filter((row) => row.folder_id === folder.folder_id && row.schedule_id == null)} />`,
          )}</ul>
        </section>`}
        <section aria-label="History">
          <h2 class="group-title">History</h2>
          ${history.length === 0
            ? html`<p class="empty">No conversations yet.</p>`
            : html`<ul class="rows">${history.slice(0, historyShown).map((row) => html`<${SessionRow} key=${row.session_id} row=${row} />`)}</ul>`}
          ${history.length > historyShown &&
          html`<button class="button quiet small more" onClick=${() => setHistoryShown(historyShown + HISTORY_PAGE)}>
            Show ${Math.min(HISTORY_PAGE, history.length - historyShown)} more of ${history.length - historyShown}</button>`}
        </section>
        ${groups.some((group) => group.length > 1) &&
        html`<section aria-label="Scheduled">
          <h2 class="group-title">Scheduled</h2>
          <ul class="rows">${groups.filter((group) => group.length > 1).map((group) => html`<${ScheduleGroup} key=${group[0].schedule_id} rows=${group} />`)}</ul>
        </section>`}
      </nav>
      <footer>
        <button class="button quiet" aria-current=${view.value === "settings" ? "page" : "false"} onClick=${() => {
          view.value = "settings";
          showingMain.value = true;
        }}>Settings</button>
        ${notifications.available.value &&
        holds("notifications.read") &&
        html`<button class="button quiet" aria-current=${view.value === "notifications" ? "page" : "false"} onClick=${() => {
          view.value = "notifications";
          showingMain.value = true;
          notifications.loadNotifications();
        }}>Notifications${notifications.pending.value.length > 0 && html` <span class="badge">${notifications.pending.value.length}</span>`}</button>`}
        ${offered(lazyCalls, "call.read") &&
        html`<button class="button quiet" aria-current=${view.value === "calls" ? "page" : "false"} onClick=${() => {
          view.value = "calls";
          showingMain.value = true;
          lazyCalls.use((calls) => calls.loadCalls());
        }}>Calls</button>`}
        ${offered(lazyMemory, "memory.read") &&
        html`<button class="button quiet" aria-current=${view.value === "memory" ? "page" : "false"} onClick=${() => {
          view.value = "memory";
          showingMain.value = true;
          lazyMemory.use((memory) => memory.load());
        }}>Memory</button>`}
        ${offered(lazyPeople, "people.read") &&
        html`<button class="button quiet" aria-current=${view.value === "people" ? "page" : "false"} onClick=${() => {
          view.value = "people";
          showingMain.value = true;
          lazyPeople.use((people) => people.load());
        }}>People</button>`}
      </footer>
    </aside>`;
}

