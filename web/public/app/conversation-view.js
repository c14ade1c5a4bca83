// The conversation: its transcript (messages, approval and question cards, run ends), the
// composer with its attachments, and the chat view around them.
import { h } from "../vendor/preact.mjs";
import { useEffect, useMemo, useRef, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import { ApiError, holds } from "./api.js";
import * as chat from "./chat.js";
import * as attachments from "./attachments.js";
import { markdown } from "./markdown.js";
import { bundle, bundleLabel } from "./bundles.js";
import { chosenProfile } from "./preferences.js";
import { lazyRecalled, lazyWebsite, ReloadOffer, showingMain } from "./shell.js";

const html = htm.bind(h);

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
  const recalled = lazyRecalled.module.value;
  return html`<article class="message assistant" aria-label="Steward">
    <div class="body" ref=${body}>${rendered}</div>
    <div class="actions">
      <button class="button quiet small" onClick=${async () => {
        if (body.current) await copyMessage(body.current, item.text);
        setCopied(true);
        window.setTimeout(() => setCopied(false), 1500);
      }}>${copied ? "Copied" : "Copy"}</button>
      <button class="button quiet small" onClick=${() => body.current && selectText(body.current)}>Select Text</button>
      ${recalled?.offered() && html`<${recalled.RecalledToggle} runId=${item.runId} />`}
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
  if (item.tool === "browser.act" && args && typeof args === "object" && !Array.isArray(args)) {
    return html`<${BrowserActArguments} args=${args} />${notes}`;
  }
  if (item.tool === "calls.place" && args && typeof args === "object" && !Array.isArray(args)) {
    // The whole brief, and the call settings revision the approval is pinned to.
    const { to, purpose, may_say: maySay, voicemail_message: voicemail, configuration_revision: revision, ...rest } =
      /** @type {Record<string, unknown>} */ (args);
    const text = (/** @type {unknown} */ value) => (typeof value === "string" ? value : JSON.stringify(value));
    return html`<dl class="frozen call-brief" aria-label="Brief">
        <dt>Call</dt><dd>${text(to)}</dd>
        <dt>Purpose</dt><dd class="mail-text scroll" tabindex="0" aria-label="Purpose">${text(purpose)}</dd>
        <dt>May say</dt><dd class="mail-text scroll" tabindex="0" aria-label="May say">${text(maySay)}</dd>
        <dt>On voicemail</dt><dd class="mail-text">${voicemail === undefined ? "Hang up without a message" : text(voicemail)}</dd>
        <dt>Call settings</dt><dd><code class="revision">${text(revision)}</code></dd>
      </dl>
      ${Object.keys(rest).length > 0 && html`<pre class="detail scroll" tabindex="0" aria-label="Other arguments">${JSON.stringify(rest, null, 2)}</pre>`}
      ${notes}`;
  }
  return html`<pre class="detail scroll" tabindex="0" aria-label="Arguments">${JSON.stringify(args, null, 2)}</pre>${notes}`;
}

/** Whether an item is a browser action's approval (Website Access's views show it). @param {chat.Item} item */
const browserAct = (item) => item.kind === "approval" && item.tool === "browser.act";

/**
 * What a `browser.act` approval shows, from Website Access's views, fetched when such a card
 * first shows; until they are here (or if they cannot be fetched) its arguments as they are.
 * @param {{args: Record<string, any>}} props
 */
function BrowserActArguments({ args }) {
  useEffect(() => lazyWebsite.want(), []);
  const loaded = lazyWebsite.module.value;
  if (loaded) return html`<${loaded.BrowserActArguments} args=${args} />`;
  return html`${lazyWebsite.failed.value && html`<${ReloadOffer} what="Website Access" />`}
    <pre class="detail scroll" tabindex="0" aria-label="Arguments">${JSON.stringify(args, null, 2)}</pre>`;
}

/**
 * The task permission in force above the composer, from Website Access's views: fetched when
 * the conversation shows a browser action (only one that did can hold a task permission), or
 * when a new conversation would use a website chosen on this device (which its module adds).
 */
function TaskPermissionBar() {
  const loaded = lazyWebsite.module.value;
  const wanted =
    loaded === null &&
    holds("browser.read") &&
    (chat.selectedId.value ? chat.transcript.value.some(browserAct) : chosenProfile.value !== null);
  useEffect(() => {
    if (wanted) lazyWebsite.want();
  }, [wanted]);
  return loaded && html`<${loaded.TaskPermissionBar} />`;
}

/** @param {{item: chat.ApprovalItem}} props */
function ApprovalCard({ item }) {
  const [open, setOpen] = useState(false);
  const pending = item.status === "pending";
  const args = html`<${ApprovalArguments} item=${item} />`;
  if (!pending) {
    const approved = item.approvedFor === "task" ? "Allowed for the task" : "Approved once";
    const word = { approved, denied: "Denied", cancelled: "Cancelled", expired: "Expired" }[item.status] ?? item.status;
    return html`<section class="card" aria-label=${`Approval for ${item.tool}`}>
      <button class="button quiet small" aria-expanded=${open} onClick=${() => setOpen(!open)}>${word}: ${item.tool}</button>
      ${open && args}
    </section>`;
  }
  const deciding = item.deciding;
  const refusal = chat.refuseApproval(item);
  const browser = item.tool === "browser.act";
  // `Allow all actions for this task` shows once Website Access's views are here.
  const website = browser ? lazyWebsite.module.value : null;
  return html`<section class="card attention" aria-label=${`Approval for ${item.tool}`} data-approval=${item.approvalId}
    data-checking=${item.proof === "checking" ? "" : undefined}>
    <h3>${browser ? "Steward wants to act on a website" : html`Steward wants to run <code>${item.tool}</code>`}</h3>
    <p class="summary">Risk: ${item.risk}. Nothing happens until you decide.</p>
    ${args}
    ${item.error || (refusal && !chat.isChecking(refusal))
      ? html`<p class="error" role="alert">${item.error || refusal}</p>`
      : refusal && html`<p class="summary">${refusal}</p>`}
    <div class="controls">
      <button class="button filled" disabled=${deciding !== null || refusal !== null} onClick=${() => chat.decide(item.approvalId, "approve_once")}>
        ${deciding === "approve_once" ? (browser ? "Allowing…" : "Approving…") : browser ? "Allow once" : "Approve once"}</button>
      <button class="button hairline" disabled=${deciding !== null} onClick=${() => chat.decide(item.approvalId, "deny")}>
        ${deciding === "deny" ? "Denying…" : "Deny"}</button>
      ${website && html`<${website.AllowForTask} item=${item} disabled=${deciding !== null || refusal !== null} />`}
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
  const [expired, setExpired] = useState(false);
  const session = chat.selectedId.value;
  const image = typeof file.media_type === "string" && file.media_type.startsWith("image/") && file.media_type !== "image/svg+xml";
  useEffect(() => {
    if (!image || !file.artifact_id || !session) return;
    let live = true;
    attachments
      .artifactUrl(session, file.artifact_id)
      .then((found) => live && setUrl(found))
      .catch((error) => {
        if (!live) return;
        setUrl(null);
        // Retention removed the bytes (the server's ARTIFACT_RETENTION_DAYS); the name stays.
        setExpired(error instanceof ApiError && error.code === "artifact_expired");
      });
    return () => {
      live = false;
    };
  }, [file.artifact_id, session]);
  if (url) return html`<img class="preview" src=${url} alt=${file.filename} data-artifact=${file.artifact_id} data-session=${session} />`;
  const size = typeof file.size_bytes === "number" ? ` · ${formatBytes(file.size_bytes)}` : "";
  return html`<span class="file-chip" title=${expired ? "Its bytes were removed after the server's retention period" : null}>${file.filename}${size}${expired ? " · expired" : ""}</span>`;
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
      return html`<p key=${item.key} class=${`tool${item.failed > 0 ? " failed" : ""}`}>${bundleLabel(item)}</p>`;
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
    <${TaskPermissionBar} />
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

export function ChatView() {
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

