// Steward's web client: the connection form, the sidebar, the conversation and the settings.
import { h, render } from "../vendor/preact.mjs";
import { useEffect, useMemo, useRef, useState } from "../vendor/hooks.mjs";
import { signal } from "../vendor/signals.mjs";
import htm from "../vendor/htm.mjs";
import { api, ApiError, checkConnection, connect, connection, describe, forget, holds, onForget } from "./api.js";
import * as chat from "./chat.js";
import * as folders from "./folders.js";
import * as notifications from "./notifications.js";
import * as attachments from "./attachments.js";
import { markdown } from "./markdown.js";
import { appearance, setAppearance, TEXT_SIZES, TYPEFACES } from "./preferences.js";

const html = htm.bind(h);

export const CLIENT_VERSION = "0.1.0";
export const CLIENT_BUILD = "1";

/** Which screen the main area shows, and on a phone whether it is showing at all. */
const view = signal(/** @type {"chat" | "settings" | "notifications"} */ ("chat"));
const showingMain = signal(false);
/** Chat or Email: both stay mounted, the other one hidden. */
const mode = signal(/** @type {"chat" | "email"} */ ("chat"));

onForget(() => {
  view.value = "chat";
  showingMain.value = false;
  mode.value = "chat";
});

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
// Sidebar.

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
  const fileable = folders.support.value === "present" && row.schedule_id === null;
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

function Sidebar() {
  const [recentOpen, setRecentOpen] = useState(() => localStorage.getItem("steward.recentOpen") !== "false");
  const [creating, setCreating] = useState(false);
  const [historyShown, setHistoryShown] = useState(HISTORY_PAGE);
  const rows = chat.sessions.value;
  const withFolders = folders.support.value === "present";
  const known = new Set(folders.folders.value.map((folder) => folder.folder_id));
  const filed = (/** @type {chat.SessionRow} */ row) => withFolders && row.folder_id !== null && known.has(row.folder_id);
  const groups = scheduleGroups(rows.filter((row) => row.schedule_id !== null));
  const lone = new Set(groups.filter((group) => group.length === 1).map((group) => group[0].session_id));
  const history = rows.filter((row) => (row.schedule_id === null && !filed(row)) || lone.has(row.session_id));
  const conversations = rows.filter((row) => row.schedule_id === null);
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
              rows=${rows.filter((row) => row.folder_id === folder.folder_id && row.schedule_id === null)} />`,
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
      </footer>
    </aside>`;
}

// ---------------------------------------------------------------------------------------------
// The conversation.

/** Copies a finished message as rich text, semantic HTML and plain text. @param {HTMLElement} body @param {string} text */
async function copyMessage(body, text) {
  const clone = /** @type {HTMLElement} */ (body.cloneNode(true));
  clone.querySelectorAll("button").forEach((button) => button.remove());
  clone.querySelectorAll("[class], [style]").forEach((element) => {
    element.removeAttribute("class");
    element.removeAttribute("style");
  });
  const markup = clone.innerHTML;
  try {
    await navigator.clipboard.write([
      new ClipboardItem({
        "text/html": new Blob([markup], { type: "text/html" }),
        "text/plain": new Blob([text], { type: "text/plain" }),
      }),
    ]);
  } catch {
    await navigator.clipboard.writeText(text);
  }
}

/** @param {HTMLElement} element */
function selectText(element) {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}

/** @param {{code: string}} props */
function CopyCode({ code }) {
  const [done, setDone] = useState(false);
  return html`<button class="button quiet small copy-code" aria-label="Copy code"
    onClick=${async () => {
      await navigator.clipboard.writeText(code).catch(() => undefined);
      setDone(true);
      window.setTimeout(() => setDone(false), 1500);
    }}>${done ? "Copied" : "Copy"}</button>`;
}

/** @param {{item: chat.AssistantItem}} props */
function AssistantMessage({ item }) {
  const body = useRef(/** @type {HTMLDivElement | null} */ (null));
  const rendered = useMemo(() => markdown(item.text, (code) => html`<${CopyCode} code=${code} />`), [item.text]);
  const [copied, setCopied] = useState(false);
  return html`<article class="message assistant" aria-label="Steward">
    <div class="body" ref=${body}>${rendered}</div>
    <div class="actions">
      <button class="button quiet small" onClick=${async () => {
        if (body.current) await copyMessage(body.current, item.text);
        setCopied(true);
        window.setTimeout(() => setCopied(false), 1500);
      }}>${copied ? "Copied" : "Copy"}</button>
      <button class="button quiet small" onClick=${() => body.current && selectText(body.current)}>Select Text</button>
    </div>
  </article>`;
}

/** A mail send or draft of any account: shown as a message, recipients, subject and body whole. */
const MAIL_EFFECT = /^mcp\.mail(?:_[a-z0-9_-]+)?_(?:send\.send_message|write\.create_draft)$/;

/** @param {unknown} value */
function recipients(value) {
  return Array.isArray(value) ? value.join(", ") : typeof value === "string" ? value : "";
}

/**
 * What an approval approves: its arguments whole once proven (a string the server shortened,
 * shown whole from Steward's proposed call that its digest proves), otherwise as shown with
 * each shortened part named. A mail send or draft reads as a message; long text scrolls within
 * the card, so the last line is always reachable before deciding.
 * @param {{item: chat.ApprovalItem}} props
 */
function ApprovalArguments({ item }) {
  const args = item.whole ?? item.arguments;
  const shortened = Object.entries(item.digests ?? {});
  const notes =
    shortened.length > 0 &&
    (item.whole !== null
      ? html`<p class="summary proven">Shown whole: each shortened part matches its SHA-256 digest and the call Steward proposed.</p>`
      : html`<ul class="shortened" aria-label="Shortened arguments">${shortened.map(
          ([pointer, digest]) => html`<li key=${pointer}>
            <code>${pointer}</code> is shown to its first ${chat.DISPLAY_MAX_CHARS} characters; the whole text has SHA-256 <code>${String(digest).slice(0, 16)}…</code></li>`,
        )}</ul>`);
  if (MAIL_EFFECT.test(item.tool) && args && typeof args === "object" && !Array.isArray(args)) {
    const { to, cc, bcc, subject, body, ...rest } = /** @type {Record<string, unknown>} */ (args);
    return html`<dl class="frozen approval-message" aria-label="Message">
        <dt>To</dt><dd>${recipients(to) || "—"}</dd>
        ${recipients(cc) && html`<dt>Cc</dt><dd>${recipients(cc)}</dd>`}
        ${recipients(bcc) && html`<dt>Bcc</dt><dd>${recipients(bcc)}</dd>`}
        <dt>Subject</dt><dd>${typeof subject === "string" && subject ? subject : "(no subject)"}</dd>
        <dt>Body</dt><dd class="mail-text scroll" tabindex="0" aria-label="Body">${typeof body === "string" ? body : JSON.stringify(body)}</dd>
      </dl>
      ${Object.keys(rest).length > 0 && html`<pre class="detail scroll" tabindex="0" aria-label="Other arguments">${JSON.stringify(rest, null, 2)}</pre>`}
      ${notes}`;
  }
  return html`<pre class="detail scroll" tabindex="0" aria-label="Arguments">${JSON.stringify(args, null, 2)}</pre>${notes}`;
}

/** @param {{item: chat.ApprovalItem}} props */
function ApprovalCard({ item }) {
  const [open, setOpen] = useState(false);
  const pending = item.status === "pending";
  const args = html`<${ApprovalArguments} item=${item} />`;
  if (!pending) {
    const word = { approved: "Approved once", denied: "Denied", cancelled: "Cancelled", expired: "Expired" }[item.status] ?? item.status;
    return html`<section class="card" aria-label=${`Approval for ${item.tool}`}>
      <button class="button quiet small" aria-expanded=${open} onClick=${() => setOpen(!open)}>${word}: ${item.tool}</button>
      ${open && args}
    </section>`;
  }
  const deciding = item.deciding;
  const refusal = chat.refuseApproval(item);
  return html`<section class="card attention" aria-label=${`Approval for ${item.tool}`} data-approval=${item.approvalId}
    data-checking=${item.proof === "checking" ? "" : undefined}>
    <h3>Steward wants to run <code>${item.tool}</code></h3>
    <p class="summary">Risk: ${item.risk}. Nothing happens until you decide.</p>
    ${args}
    ${item.error || (refusal && !chat.isChecking(refusal))
      ? html`<p class="error" role="alert">${item.error || refusal}</p>`
      : refusal && html`<p class="summary">${refusal}</p>`}
    <div class="controls">
      <button class="button filled" disabled=${deciding !== null || refusal !== null} onClick=${() => chat.decide(item.approvalId, "approve_once")}>
        ${deciding === "approve_once" ? "Approving…" : "Approve once"}</button>
      <button class="button hairline" disabled=${deciding !== null} onClick=${() => chat.decide(item.approvalId, "deny")}>
        ${deciding === "deny" ? "Denying…" : "Deny"}</button>
    </div>
  </section>`;
}

/** @param {{item: chat.QuestionItem}} props */
function QuestionCard({ item }) {
  const [text, setText] = useState("");
  if (item.answer !== null) {
    return html`<section class="card" aria-label="Question">
      <p class="summary">${item.text}</p>
      <p><strong>Your answer:</strong> ${item.answer}</p>
    </section>`;
  }
  return html`<section class="card attention" aria-label="Question" data-question=${item.questionId}>
    <h3>${item.text}</h3>
    <form class="controls" onSubmit=${(/** @type {Event} */ e) => {
      e.preventDefault();
      chat.answer(item.questionId, text);
    }}>
      <label class="visually-hidden" for=${`answer-${item.questionId}`}>Your answer</label>
      <input id=${`answer-${item.questionId}`} class="answer" value=${text} disabled=${item.sending}
        onInput=${(/** @type {any} */ e) => setText(e.currentTarget.value)} />
      <button class="button filled" type="submit" disabled=${item.sending || !text.trim()}>${item.sending ? "Sending…" : "Answer"}</button>
    </form>
    ${item.error && html`<p class="error" role="alert">${item.error}</p>`}
  </section>`;
}

/** One attached file of a sent message: an image's preview, or its name and size. */
function AttachmentView({ file }) {
  const [url, setUrl] = useState(/** @type {string | null} */ (null));
  const session = chat.selectedId.value;
  const image = typeof file.media_type === "string" && file.media_type.startsWith("image/") && file.media_type !== "image/svg+xml";
  useEffect(() => {
    if (!image || !file.artifact_id || !session) return;
    let live = true;
    attachments
      .artifactUrl(session, file.artifact_id)
      .then((found) => live && setUrl(found))
      .catch(() => live && setUrl(null));
    return () => {
      live = false;
    };
  }, [file.artifact_id, session]);
  if (url) return html`<img class="preview" src=${url} alt=${file.filename} data-artifact=${file.artifact_id} data-session=${session} />`;
  const size = typeof file.size_bytes === "number" ? ` · ${formatBytes(file.size_bytes)}` : "";
  return html`<span class="file-chip">${file.filename}${size}</span>`;
}

/** @param {number} bytes */
function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The files of the message being written, each with its progress, retry and removal. */
function PendingFiles() {
  const files = attachments.pending.value;
  if (files.length === 0) return null;
  const session = () => chat.ensureSession(files[0]?.name ?? "Attachments");
  return html`<ul class="pending-files" aria-label="Files to send">${files.map(
    (file) => html`<li key=${file.key} class=${`pending-file ${file.state}`}>
      <span class="name">${file.name}</span>
      ${file.state === "uploading" &&
      html`<progress max="1" value=${file.progress} aria-label=${`Uploading ${file.name}`}></progress>`}
      ${file.state === "preparing" && html`<span class="hint">Preparing…</span>`}
      ${file.state === "done" && html`<span class="hint">${formatBytes(file.size)}</span>`}
      ${file.state === "failed" &&
      html`<span class="error">${file.error}</span>
        <button class="button quiet small" onClick=${() => attachments.retry(file.key, session)}>Retry</button>`}
      <button class="button quiet small" aria-label=${`Remove ${file.name}`} onClick=${() => attachments.remove(file.key)}>✕</button>
    </li>`,
  )}</ul>`;
}

const DEADLINE =
  "This reply ran out of time: it reached the working-time limit for one reply. Nothing after that point was done; you can ask again.";

/** @param {{item: chat.EndItem}} props */
function RunEnd({ item }) {
  if (item.state === "completed") return null;
  if (item.state === "cancelled") {
    return html`<p class="run-end" role="status">${item.reason === "deadline" ? DEADLINE : "Stopped."}</p>`;
  }
  return html`<p class="run-end failed" role="status">The reply failed: ${item.detail || item.reason}</p>`;
}

/**
 * Tool activity: adjacent successful calls of one tool collapse into one count-labelled bundle.
 * @param {chat.Item[]} items
 */
function bundle(items) {
  /** @type {Array<chat.Item | {kind: "bundle", key: string, tool: string, count: number}>} */
  const out = [];
  for (const item of items) {
    const previous = out[out.length - 1];
    if (item.kind === "tool" && item.status === "succeeded" && previous) {
      if (previous.kind === "tool" && previous.status === "succeeded" && previous.tool === item.tool) {
        out[out.length - 1] = { kind: "bundle", key: previous.key, tool: item.tool, count: 2 };
        continue;
      }
      if (previous.kind === "bundle" && previous.tool === item.tool) {
        out[out.length - 1] = { ...previous, count: previous.count + 1 };
        continue;
      }
    }
    out.push(item);
  }
  return out;
}

const TOOL_WORDS = /** @type {Record<string, string>} */ ({
  succeeded: "done",
  failed: "failed",
  denied: "denied",
  cancelled: "cancelled",
  outcome_unknown: "outcome unknown",
  dispatching: "running…",
  queued: "queued",
  awaiting_approval: "waiting for approval",
  awaiting_answer: "waiting for an answer",
  approved: "approved",
});

/**
 * The element of one transcript item. Items are replaced, never changed, when the transcript
 * changes, so an item's element is kept by identity and Preact skips the ones it has seen.
 * @type {WeakMap<object, any>}
 */
const itemElements = new WeakMap();

/** @param {any} item */
function rendered(item) {
  const cached = itemElements.get(item);
  if (cached) return cached;
  const element = renderItem(item);
  if (item.kind !== "bundle") itemElements.set(item, element);
  return element;
}

/** @param {any} item */
function renderItem(item) {
  switch (item.kind) {
    case "user":
      return html`<div key=${item.key} class=${`message user${item.pending ? " pending" : ""}`} data-seq=${item.seq ?? ""}>
        ${item.attachments.length > 0 &&
        html`<ul class="attached" aria-label="Attachments">${item.attachments.map(
          (file) => html`<li key=${file.artifact_id ?? file.filename}><${AttachmentView} file=${file} /></li>`,
        )}</ul>`}
        ${item.text}
      </div>`;
    case "assistant":
      return html`<${AssistantMessage} key=${item.key} item=${item} />`;
    case "tool":
      return html`<p key=${item.key} class=${`tool${["failed", "outcome_unknown"].includes(item.status) ? " failed" : ""}`}>${item.tool} · ${TOOL_WORDS[item.status] ?? item.status}</p>`;
    case "bundle":
      return html`<p key=${item.key} class="tool">${item.tool} × ${item.count} · done</p>`;
    case "approval":
      return html`<${ApprovalCard} key=${item.key} item=${item} />`;
    case "question":
      return html`<${QuestionCard} key=${item.key} item=${item} />`;
    case "end":
      return html`<${RunEnd} key=${item.key} item=${item} />`;
    default:
      return null;
  }
}

/** Items rendered at first, and added each time the top of the conversation comes into view
 * (small enough that rendering them stays well under a 100 ms task). */
const WINDOW = 50;
const MORE = 25;

function Transcript() {
  const end = useRef(/** @type {HTMLDivElement | null} */ (null));
  const top = useRef(/** @type {HTMLDivElement | null} */ (null));
  const items = chat.transcript.value;
  const live = chat.live.value;
  const [shown, setShown] = useState(WINDOW);
  const id = chat.selectedId.value;
  useEffect(() => setShown(WINDOW), [id]);
  const all = bundle(items);
  const visible = all.length > shown ? all.slice(-shown) : all;
  useEffect(() => {
    const sentinel = top.current;
    if (!sentinel || visible.length === all.length) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) setShown((count) => count + MORE);
    });
    observer.observe(sentinel);
    return () => observer.disconnect();
  }, [visible.length, all.length]);
  useEffect(() => {
    end.current?.scrollIntoView({ block: "end" });
  }, [items.length, live.text.length]);
  const wanted = chat.focusRequest.value;
  useEffect(() => {
    if (!wanted) return;
    const selector = wanted.approvalId ? `[data-approval="${wanted.approvalId}"]` : `[data-question="${wanted.questionId}"]`;
    const card = /** @type {HTMLElement | null} */ (document.querySelector(selector));
    // A card still checking its shortened text waits: Approve once may yet be offered.
    if (!card || card.hasAttribute("data-checking")) return;
    card.scrollIntoView({ block: "center" });
    /** @type {HTMLElement | null} */ (card.querySelector("button:not([disabled]), input"))?.focus();
    chat.focusRequest.value = null;
  }, [wanted, items]);
  if (!chat.selectedId.value && items.length === 0) {
    return html`<div class="welcome"><h2>What can I do for you?</h2><p>Ask anything. Actions that reach outside wait for your approval.</p></div>`;
  }
  return html`<div class="transcript-inner" role="log" aria-live="polite" aria-label="Conversation">
    ${visible.length < all.length &&
    html`<div ref=${top} class="earlier"><button class="button quiet small" onClick=${() => setShown(shown + MORE)}>Show earlier messages</button></div>`}
    ${visible.map(rendered)}
    ${live.reasoning && !live.text && html`<p class="reasoning">Thinking…</p>`}
    ${live.text && html`<article class="message assistant streaming" aria-busy="true"><div class="body"><p>${live.text}</p></div></article>`}
    <div ref=${end}></div>
  </div>`;
}

function Composer() {
  const area = useRef(/** @type {HTMLTextAreaElement | null} */ (null));
  const running = chat.activeRun.value !== null;
  const mac = /Mac|iPhone|iPad/.test(navigator.platform);
  const keydown = (/** @type {KeyboardEvent} */ event) => {
    if (event.key !== "Enter" || event.isComposing) return;
    const newline = event.shiftKey || (mac && event.metaKey);
    if (newline) return; // the textarea inserts it
    event.preventDefault();
    chat.send();
  };
  useEffect(() => {
    const element = area.current;
    if (!element) return;
    element.style.height = "auto";
    element.style.height = `${element.scrollHeight}px`;
  }, [chat.composerText.value]);
  const files = attachments.pending.value;
  const choose = (/** @type {any} */ e) => {
    const input = /** @type {HTMLInputElement} */ (e.currentTarget);
    const chosen = Array.from(input.files ?? []);
    input.value = "";
    if (chosen.length) attachments.add(chosen, () => chat.ensureSession(chat.composerText.value || chosen[0].name));
  };
  return html`<div class="composer">
    ${chat.composerError.value && html`<p class="error" role="alert">${chat.composerError.value}</p>`}
    <${PendingFiles} />
    <form onSubmit=${(/** @type {Event} */ e) => {
      e.preventDefault();
      chat.send();
    }}>
      <label class="button quiet attach" title="Attach files">
        <svg aria-hidden="true" viewBox="0 0 24 24" width="20" height="20" fill="none" stroke="currentColor" stroke-width="2"
          stroke-linecap="round" stroke-linejoin="round"><path d="M21 11.5l-8.6 8.6a5.5 5.5 0 0 1-7.8-7.8l8.6-8.6a3.7 3.7 0 0 1 5.2 5.2l-8.6 8.6a1.8 1.8 0 0 1-2.6-2.6l7.9-7.9" /></svg>
        <span class="visually-hidden">Attach files</span>
        <input type="file" multiple class="visually-hidden" onChange=${choose} />
      </label>
      <label class="visually-hidden" for="composer">Message</label>
      <textarea id="composer" ref=${area} rows="1" placeholder="Message Steward" value=${chat.composerText.value}
        onInput=${(/** @type {any} */ e) => (chat.composerText.value = e.currentTarget.value)} onKeyDown=${keydown}></textarea>
      ${running
        ? html`<button class="button hairline" type="button" onClick=${chat.stop}>Stop</button>`
        : html`<button class="button filled" type="submit" disabled=${!chat.composerText.value.trim() && files.length === 0}>Send</button>`}
    </form>
  </div>`;
}

function ChatView() {
  const row = chat.selected.value;
  const status = chat.runStatus.value;
  const attention = status === "Needs your approval" || status === "Needs your answer";
  const [dragging, setDragging] = useState(false);
  const drop = (/** @type {DragEvent} */ e) => {
    e.preventDefault();
    setDragging(false);
    const dropped = Array.from(e.dataTransfer?.files ?? []);
    if (dropped.length) attachments.add(dropped, () => chat.ensureSession(chat.composerText.value || dropped[0].name));
  };
  return html`<main class=${`main${dragging ? " dragging" : ""}`} aria-label="Chat"
    onDragOver=${(/** @type {DragEvent} */ e) => {
      if (e.dataTransfer?.types.includes("Files")) {
        e.preventDefault();
        setDragging(true);
      }
    }}
    onDragLeave=${() => setDragging(false)} onDrop=${drop}>
    <div class="titlebar">
      <button class="button quiet small back" onClick=${() => (showingMain.value = false)} aria-label="Back to conversations">‹</button>
      <div>
        <h1>${row?.title || (chat.selectedId.value ? "Conversation" : "New chat")}</h1>
        ${status && html`<div class=${`status${attention ? " attention" : ""}`} role="status">${status}</div>`}
      </div>
    </div>
    <div class="transcript"><${Transcript} /></div>
    <${Composer} />
  </main>`;
}

// ---------------------------------------------------------------------------------------------
// Settings.

function ModelsCard() {
  const [state, setState] = useState(/** @type {{settings: any, error: string | null, saving: boolean, missing: boolean}} */ ({ settings: null, error: null, saving: false, missing: false }));
  useEffect(() => {
    if (!holds("settings.read")) return;
    api("GET", "/v1/settings/models")
      .then((settings) => setState((s) => ({ ...s, settings })))
      .catch((error) => setState((s) => ({ ...s, missing: error instanceof ApiError && (error.status === 404 || error.status === 405), error: describe(error) })));
  }, []);
  if (state.missing || !holds("settings.read")) return null;
  const settings = state.settings;
  if (!settings) return html`<section class="card" aria-label="Models"><h2>Models</h2>${state.error ? html`<p class="error">${state.error}</p>` : html`<p class="summary">Loading…</p>`}</section>`;
  const save = async (/** @type {Record<string, string>} */ change) => {
    const next = { ...settings, ...change };
    setState((s) => ({ ...s, saving: true, error: null }));
    try {
      const saved = await api("PUT", "/v1/settings/models", {
        body: {
          chat_model: next.chat_model,
          chat_reasoning_effort: next.chat_reasoning_effort,
          memory_model: next.memory_model,
          memory_reasoning_effort: next.memory_reasoning_effort,
        },
      });
      setState((s) => ({ ...s, settings: saved, saving: false }));
    } catch (error) {
      setState((s) => ({ ...s, saving: false, error: describe(error) }));
    }
  };
  const picker = (/** @type {"chat" | "memory"} */ role, /** @type {string} */ label) => {
    const offered = settings.offered[role] ?? [];
    const model = settings[`${role}_model`];
    const efforts = offered.find((/** @type {any} */ o) => o.model === model)?.reasoning_efforts ?? [];
    return html`<div class="field">
      <label for=${`${role}-model`}>${label}</label>
      <select id=${`${role}-model`} value=${model} disabled=${state.saving || !holds("settings.write")}
        onChange=${(/** @type {any} */ e) => {
          const chosen = offered.find((/** @type {any} */ o) => o.model === e.currentTarget.value);
          save({ [`${role}_model`]: e.currentTarget.value, [`${role}_reasoning_effort`]: chosen?.reasoning_efforts?.[0] ?? "none" });
        }}>
        ${offered.map((/** @type {any} */ o) => html`<option value=${o.model}>${o.model}</option>`)}
      </select>
      <label for=${`${role}-effort`} class="visually-hidden">${label} reasoning effort</label>
      <select id=${`${role}-effort`} value=${settings[`${role}_reasoning_effort`]} disabled=${state.saving || !holds("settings.write")}
        onChange=${(/** @type {any} */ e) => save({ [`${role}_reasoning_effort`]: e.currentTarget.value })}>
        ${efforts.map((/** @type {string} */ effort) => html`<option value=${effort}>${effort === "none" ? "No reasoning effort" : `Reasoning: ${effort}`}</option>`)}
      </select>
    </div>`;
  };
  return html`<section class="card" aria-label="Models">
    <h2>Models</h2>
    <p class="summary">Applied to new chats and to the next message of existing ones.</p>
    ${picker("chat", "Chat model")}
    ${picker("memory", "Memory model")}
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
  </section>`;
}

function AppearanceCard() {
  const current = appearance.value;
  /** @param {string} name @param {string} legend @param {Array<[string, string]>} options @param {string} value @param {(v: string) => void} pick */
  const group = (name, legend, options, value, pick) => html`<fieldset class="choices">
    <legend>${legend}</legend>
    ${options.map(([key, label]) => html`<label class="choice"><input type="radio" name=${name} value=${key} checked=${value === key}
      onChange=${() => pick(key)} /><span>${label}</span></label>`)}
  </fieldset>`;
  return html`<section class="card" aria-label="Appearance">
    <h2>Appearance</h2>
    ${group("text-size", "Text size", TEXT_SIZES, current.textSize, (textSize) => setAppearance({ ...current, textSize }))}
    ${group("typeface", "Typeface", TYPEFACES, current.typeface, (typeface) => setAppearance({ ...current, typeface }))}
  </section>`;
}

function SettingsView() {
  const [release, setRelease] = useState(/** @type {string | null} */ (null));
  const [leaving, setLeaving] = useState(false);
  useEffect(() => {
    fetch("/health/ready", { cache: "no-store", redirect: "error" })
      .then((response) => response.json())
      .then((ready) => setRelease(ready.release))
      .catch(() => setRelease(null));
  }, []);
  const session = connection.value;
  return html`<main class="main settings" aria-label="Settings">
    <div class="settings-inner">
      <div class="titlebar-lite">
        <button class="button quiet small back" onClick=${() => (showingMain.value = false)} aria-label="Back to conversations">‹</button>
        <h1>Settings</h1>
      </div>
      <section class="card" aria-label="Connection">
        <h2>Connection</h2>
        <dl class="facts">
          <dt>Server</dt><dd>${window.location.origin}</dd>
          <dt>Allowed</dt><dd>${session.scopes.join(", ") || "nothing"}</dd>
          ${session.expiresAt && html`<dt>Session ends</dt><dd>${new Date(session.expiresAt).toLocaleString()}</dd>`}
        </dl>
        <div class="controls">
          <button class="button hairline danger" disabled=${leaving} onClick=${async () => {
            setLeaving(true);
            await forget();
          }}>${leaving ? "Forgetting…" : "Forget this connection"}</button>
        </div>
      </section>
      <${ModelsCard} />
      <${LazyLearningCard} />
      <${AppearanceCard} />
      <section class="card" aria-label="Data and privacy">
        <h2>Data & Privacy</h2>
        <p class="summary">Conversations live on your server. This browser keeps only your appearance choices; nothing about your notifications or messages is stored here.</p>
        <dl class="facts">
          <dt>Version</dt><dd>${CLIENT_VERSION} (${CLIENT_BUILD})</dd>
          <dt>Server release</dt><dd>${release ?? "unknown"}</dd>
        </dl>
      </section>
    </div>
  </main>`;
}

function NotificationsView() {
  const list = notifications.pending.value;
  return html`<main class="main settings" aria-label="Notifications">
    <div class="settings-inner">
      <div class="titlebar-lite">
        <button class="button quiet small back" onClick=${() => (showingMain.value = false)} aria-label="Back to conversations">‹</button>
        <h1>Notifications</h1>
      </div>
      ${notifications.notificationError.value && html`<p class="error" role="alert">${notifications.notificationError.value}</p>`}
      ${list.length === 0
        ? html`<p class="summary">Nothing waits for you.</p>`
        : html`<ul class="notifications">${list.map((item) => {
            const row = chat.sessions.value.find((session) => session.session_id === item.payload.session_id);
            return html`<li key=${item.notification_id}>
              <button class="card notification" onClick=${() => {
                view.value = "chat";
                notifications.openNotification(item, () => (mode.value = "email"));
              }}>
                <strong>${notifications.headline(item)}</strong>
                <span class="summary">${row?.title || "A conversation"} · ${new Date(item.created_at).toLocaleString()}</span>
              </button>
            </li>`;
          })}</ul>`}
    </div>
  </main>`;
}

// ---------------------------------------------------------------------------------------------

function App() {
  const state = connection.value.state;
  useEffect(() => {
    if (state !== "connected") return;
    chat.startReconciling();
    // A link to one conversation: `/#session=<id>` opens it, on load and when the hash changes.
    const follow = () => {
      const linked = /^#session=([0-9a-f-]{36})$/.exec(window.location.hash);
      if (!linked) return;
      view.value = "chat";
      showingMain.value = true;
      chat.select(linked[1]);
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
      ${view.value === "settings" ? html`<${SettingsView} />` : view.value === "notifications" ? html`<${NotificationsView} />` : html`<${ChatView} />`}
    </div>
    <${LazyEmail} shown=${mode.value === "email"} />
  </div>`;
}

/**
 * A module kept out of the first load and fetched the first time it is wanted (Email mode, and
 * Settings' Learning card): the first load stays within its budget. A failed fetch is not
 * asked again (the browser keeps the failure, and after an upgrade the old name is gone): the
 * page offers to reload.
 * @template T
 * @param {() => Promise<T>} load
 */
function lazy(load) {
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
function ReloadOffer({ what }) {
  return html`<p class="error" role="alert">${what} could not be loaded: the connection dropped, or the server was upgraded.</p>
    <button class="button hairline small" onClick=${() => window.location.reload()}>Reload</button>`;
}

const emailModule = lazy(() => import("./inbox.js"));
const learningModule = lazy(() => import("./learning-view.js"));

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

/** Settings' Learning card, fetched when Settings first shows. */
function LazyLearningCard() {
  useEffect(() => learningModule.want(), []);
  const loaded = learningModule.module.value;
  if (loaded) return html`<${loaded.LearningCard} />`;
  if (!learningModule.failed.value) return null;
  return html`<section class="card" aria-label="Learning">
    <h2>Learning</h2>
    <${ReloadOffer} what="The learning controls" />
  </section>`;
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
