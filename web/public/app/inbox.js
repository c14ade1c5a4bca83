// Email mode's screens: the inbox pane (account filter, search, Important and Other mail, rows
// with the Handled circle and one state line, per-account freshness) and the reading pane (text
// and attachment metadata only; nothing remote is ever loaded), side by side on a desktop with
// a draggable divider, taking turns on a phone.
import { h } from "../vendor/preact.mjs";
import { useEffect, useRef, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import * as email from "./email.js";
import * as drafts from "./drafts.js";
import { DraftEditor } from "./draft-view.js";
import { reason } from "./learning.js";
import { FeedbackMenu } from "./learning-view.js";
import * as subs from "./subscriptions.js";
import { SubscriptionsView, ThreadUnsubscribe } from "./subscriptions-view.js";

const html = htm.bind(h);

/** The provider every account is on, for "Archive in …". */
const PROVIDER = "Gmail";

const STATE_LINES = /** @type {Record<string, [string, string]>} */ ({
  needs_reply: ["Needs reply", "amber"],
  for_your_attention: ["For your attention", "amber"],
  check_send_status: ["Check send status", "amber"],
  draft: ["Draft", "teal"],
  handled: ["Handled", "soft"],
  archived: ["Archived", "soft"],
  reported: ["Reported as spam", "soft"],
});

/** @param {email.Correspondent | null | undefined} who */
function person(who) {
  if (!who) return "Unknown sender";
  return who.name || who.address;
}

/** Today: the time; this year: day and month; else the date. @param {string} when */
function shortDate(when) {
  const date = new Date(when);
  const now = new Date();
  if (date.toDateString() === now.toDateString()) return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (date.getFullYear() === now.getFullYear()) return date.toLocaleDateString([], { day: "numeric", month: "short" });
  return date.toLocaleDateString();
}

/** @param {number} bytes */
function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** Why the junk filter's mode in force is not the configured one. */
const JUNK_REASONS = /** @type {Record<string, string>} */ ({
  packet_missing: "no evidence packet",
  packet_invalid: "the evidence packet is not valid",
  packet_mismatched: "the evidence is for another model or policy",
  packet_expired: "the evidence has expired",
  floor_not_met: "the evidence does not meet its floor",
  not_pilot_account: "the pilot is for another account",
});

/** The junk filter's standing on an account, in words; null while it is off. @param {email.Account} account */
function junkStanding(account) {
  const { mode, in_force: inForce, reason } = account.junk_filter;
  if (mode === "off") return null;
  const name = mode === "pilot" ? "Junk pilot" : "Junk filter";
  if (!inForce) return `${name}: starting`;
  if (inForce === mode) return mode === "shadow" ? `${name} watching only` : `${name} on`;
  const doing = inForce === "shadow" ? "watching only" : "paused";
  return `${name} ${doing}: ${reason ? JUNK_REASONS[reason] ?? reason : "not in force"}`;
}

/** The account's freshness line: pending, a recorded failure, allowance waiting, or when it was updated and how far back its mail goes, and the junk filter's standing. @param {{account: email.Account, many: boolean}} props */
function Freshness({ account, many }) {
  const name = many ? `${account.address ?? account.account_id}: ` : "";
  if (account.last_error) {
    return html`<p class="freshness error" role="status">${name}The last update failed (${account.last_error}).</p>`;
  }
  if (account.freshness === "pending") {
    return html`<p class="freshness" role="status">${name}Waiting for the first update of this mailbox…</p>`;
  }
  if (account.waiting) {
    return html`<p class="freshness" role="status">${name}New mail waits unassessed: the ${account.waiting.startsWith("daily") ? "daily" : "monthly"} email allowance is spent.</p>`;
  }
  const updated = account.updated_at ? shortDate(account.updated_at) : null;
  const since = account.coverage_from ? new Date(account.coverage_from).toLocaleDateString([], { day: "numeric", month: "short", year: "numeric" }) : null;
  const junk = account.junk_filter ? junkStanding(account) : null;
  return html`<p class="freshness" data-account=${account.account_id}>${name}${updated && `Updated ${updated}`}${since && ` · mail since ${since}`}${junk && ` · ${junk}`}</p>`;
}

/** @param {{thread: email.Thread, many: boolean, onOpen: (id: string) => void}} props */
function ThreadRow({ thread, many, onOpen }) {
  const current = email.selectedId.value === thread.thread_id;
  const error = email.rowErrors.value.get(thread.thread_id);
  const account = email.accounts.value.find((candidate) => candidate.account_id === thread.account_id);
  const line = thread.state ? STATE_LINES[thread.state] : null;
  const handled = thread.state === "handled";
  const archivable = thread.place === "inbox";
  const from = thread.correspondents.map(person).join(", ") || "Unknown sender";
  return html`<li class=${`mail-row${current ? " current" : ""}`} data-thread=${thread.thread_id}>
    <button class=${`handled${handled ? " done" : ""}`} role="checkbox" aria-checked=${handled ? "true" : "false"}
      aria-label=${archivable ? `Archive in ${PROVIDER}: ${thread.subject}` : `Handled: ${thread.subject}`}
      disabled=${!archivable} onClick=${() => archivable && email.change(thread.thread_id, "archive")}>
      <span aria-hidden="true">${handled ? "✓" : ""}</span>
    </button>
    <button class="mail-open" aria-current=${current ? "true" : "false"} onClick=${() => onOpen(thread.thread_id)}>
      <span class="mail-top"><span class="from">${from}</span><time datetime=${thread.latest_at}>${shortDate(thread.latest_at)}</time></span>
      <span class="subject">${thread.subject || "(no subject)"}</span>
      ${thread.gist && html`<span class="gist">${thread.gist}</span>`}
      <span class="mail-tags">
        ${line && html`<span class=${`state ${line[1]}`}>${line[0]}</span>`}
        ${thread.suspected_spam && account?.spam_supported && html`<span class="tag">Suspected spam</span>`}
        ${thread.junk && html`<span class="reason junk">${thread.junk.explanation}</span>`}
        ${thread.reasons?.[0] && html`<span class="reason">${reason(thread.reasons[0])}</span>`}
        ${many && html`<span class="account">${account?.address ?? thread.account_id}</span>`}
      </span>
    </button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </li>`;
}

/** The inbox pane. @param {{onOpen: (id: string) => void}} props */
function InboxPane({ onOpen }) {
  const [words, setWords] = useState(email.search.value);
  const accounts = email.accounts.value;
  const many = accounts.length > 1;
  const rows = email.visible();
  return html`<section class="inbox-pane" aria-label="Inbox">
    <div class="inbox-tools">
      <div class="segmented" role="group" aria-label="Listing">
        <button aria-pressed=${email.listing.value === "important"} onClick=${() => email.showListing("important")}>Important</button>
        <button aria-pressed=${email.listing.value === "other"} onClick=${() => email.showListing("other")}>Other mail</button>
      </div>
      ${many &&
      html`<label class="visually-hidden" for="account-filter">Account</label>
        <select id="account-filter" value=${email.accountFilter.value ?? ""}
          onChange=${(/** @type {any} */ e) => email.filterAccount(e.currentTarget.value || null)}>
          <option value="">All accounts</option>
          ${accounts.map((account) => html`<option value=${account.account_id}>${account.address ?? account.account_id}</option>`)}
        </select>`}
      ${subs.supportedAccounts().length > 0 &&
      html`<button class="button hairline small" aria-pressed=${subs.shown.value} onClick=${() => (subs.shown.value ? subs.close() : subs.open())}>Subscriptions</button>`}
      <form class="search" role="search" onSubmit=${(/** @type {Event} */ e) => {
        e.preventDefault();
        email.find(words);
      }}>
        <input type="search" aria-label="Search mail" placeholder="Search mail" value=${words}
          onInput=${(/** @type {any} */ e) => {
            setWords(e.currentTarget.value);
            if (!e.currentTarget.value) email.find("");
          }} />
      </form>
    </div>
    ${accounts.map((account) => html`<${Freshness} key=${account.account_id} account=${account} many=${many} />`)}
    ${email.refreshError.value && html`<p class="freshness error" role="status">${email.refreshError.value}</p>`}
    ${email.listError.value && html`<p class="error" role="alert">${email.listError.value}</p>`}
    <ul class="mail-rows" aria-label=${email.listing.value === "important" ? "Important conversations" : "Other mail"} aria-busy=${email.loading.value}>
      ${rows.map((thread) => html`<${ThreadRow} key=${thread.thread_id} thread=${thread} many=${many} onOpen=${onOpen} />`)}
    </ul>
    ${rows.length === 0 && !email.loading.value && html`<p class="empty">${email.search.value ? "Nothing matches." : "Nothing here."}</p>`}
    ${email.nextCursor.value &&
    html`<button class="button quiet small more" disabled=${email.loading.value} onClick=${() => email.loadMore()}>Show more</button>`}
  </section>`;
}

/** @param {{message: email.Message}} props */
function MessageView({ message }) {
  const to = [...message.to, ...message.cc].map(person).join(", ");
  return html`<article class="mail-message" aria-label=${`Message from ${person(message.from)}`}>
    <header>
      <strong>${person(message.from)}</strong>
      ${message.from?.name && html` <span class="address">${message.from.address}</span>`}
      <time datetime=${message.sent_at}>${new Date(message.sent_at).toLocaleString()}</time>
      ${to && html`<p class="to">To ${to}</p>`}
    </header>
    <div class="mail-text">${message.text}</div>
    ${message.text_cut && html`<p class="hint">This message is longer; only its first 100,000 characters are shown.</p>`}
    ${message.attachments.length > 0 &&
    html`<ul class="mail-attachments" aria-label="Attachments">${message.attachments.map(
      (file) => html`<li><span class="file-chip">${file.filename ?? "Unnamed attachment"} · ${file.media_type} · ${size(file.size_bytes)}</span></li>`,
    )}</ul>`}
  </article>`;
}

/** The reading pane. @param {{onBack: () => void}} props */
function ReadingPane({ onBack }) {
  const thread = email.detail.value;
  const id = email.selectedId.value;
  if (!id) {
    return html`<section class="reading-pane empty-pane" aria-label="Conversation"><p class="empty">Choose a conversation.</p></section>`;
  }
  if (!thread) {
    return html`<section class="reading-pane" aria-label="Conversation">
      <button class="button quiet small back" onClick=${onBack} aria-label="Back to the inbox">‹</button>
      ${email.detailError.value ? html`<p class="error" role="alert">${email.detailError.value}</p>` : html`<p class="empty">Loading…</p>`}
    </section>`;
  }
  const account = email.accounts.value.find((candidate) => candidate.account_id === thread.account_id);
  const spam = account?.spam_supported === true;
  const busy = email.leaving.value.has(thread.thread_id);
  const error = email.rowErrors.value.get(thread.thread_id);
  const line = thread.state ? STATE_LINES[thread.state] : null;
  const writing = drafts.editor.value?.threadId === thread.thread_id;
  return html`<section class="reading-pane" aria-label="Conversation">
    <div class="reading-title">
      <button class="button quiet small back" onClick=${onBack} aria-label="Back to the inbox">‹</button>
      <div>
        <h1>${thread.subject || "(no subject)"}</h1>
        <p class="mail-tags">
          ${line && html`<span class=${`state ${line[1]}`}>${line[0]}</span>`}
          ${thread.suspected_spam && spam && html`<span class="tag">Suspected spam</span>`}
          ${thread.gist && html`<span class="gist">${thread.gist}</span>`}
        </p>
        ${thread.junk && html`<p class="reason junk">${thread.junk.explanation}</p>`}
        ${(thread.reasons ?? []).map((rule) => html`<p class="reason" key=${rule.feedback_id}>${reason(rule)}</p>`)}
      </div>
    </div>
    <div class="controls mail-actions">
      ${!writing &&
      html`<button class="button hairline small" onClick=${() => drafts.openFor(thread, account?.address ?? null, account?.send_tool ?? null)}>${thread.draft_id ? "Open draft" : "Reply"}</button>
        <button class="button hairline small" disabled=${drafts.proposing.value === thread.thread_id}
          onClick=${() => drafts.propose(thread, email.settle, account?.send_tool ?? null)}>${drafts.proposing.value === thread.thread_id ? "Steward is writing…" : "Draft with Steward"}</button>`}
      ${thread.place === "inbox" &&
      html`<button class="button hairline small" disabled=${busy} onClick=${() => email.change(thread.thread_id, "archive")}>Archive in ${PROVIDER}</button>`}
      ${thread.place === "archived" &&
      html`<button class="button hairline small" disabled=${busy} onClick=${() => email.change(thread.thread_id, "move-to-inbox")}>Move to Inbox</button>`}
      ${spam && thread.place === "inbox" &&
      html`<button class="button hairline small" disabled=${busy} onClick=${() => email.change(thread.thread_id, "spam")}>Report spam</button>`}
      ${spam && thread.place === "spam" &&
      html`<button class="button hairline small" disabled=${busy} onClick=${() => email.change(thread.thread_id, "not-spam")}>Not spam</button>`}
      ${spam && thread.suspected_spam && thread.place !== "spam" &&
      html`<button class="button quiet small" disabled=${busy} onClick=${() => email.notSuspected(thread.thread_id)}>Not spam</button>`}
    </div>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${account?.unsubscribe_supported &&
    html`<${ThreadUnsubscribe} row=${thread.subscription} onDone=${() => email.reloadDetail()} />`}
    <${FeedbackMenu} key=${thread.thread_id} thread=${thread} own=${account?.address ?? null} onChanged=${(/** @type {email.Thread} */ row) => email.replaceRow(row)} />
    <${DraftEditor} key=${drafts.editor.value?.draftId ?? "none"} onChanged=${() => {
      email.loadListing();
      email.reloadDetail();
    }} />
    <div class="mail-messages">${thread.messages.map((message) => html`<${MessageView} key=${message.message_id} message=${message} />`)}</div>
  </section>`;
}

/** The divider between the panes: drag it, or use the arrow keys. */
function Divider({ container }) {
  const clamp = (/** @type {number} */ width) => {
    const total = container.current?.getBoundingClientRect().width ?? 1280;
    const most = Math.max(email.PANE_MIN, Math.min(email.PANE_MAX, total - email.READING_MIN));
    return Math.round(Math.min(most, Math.max(email.PANE_MIN, width)));
  };
  const drag = (/** @type {PointerEvent} */ start) => {
    start.preventDefault();
    const left = container.current?.getBoundingClientRect().left ?? 0;
    const move = (/** @type {PointerEvent} */ event) => {
      email.paneWidth.value = clamp(event.clientX - left);
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  };
  return html`<div class="divider" role="separator" tabindex="0" aria-orientation="vertical" aria-label="Resize the inbox"
    aria-valuemin=${email.PANE_MIN} aria-valuemax=${email.PANE_MAX} aria-valuenow=${email.paneWidth.value}
    onPointerDown=${drag}
    onKeyDown=${(/** @type {KeyboardEvent} */ e) => {
      if (e.key === "ArrowLeft") email.paneWidth.value = clamp(email.paneWidth.value - 20);
      if (e.key === "ArrowRight") email.paneWidth.value = clamp(email.paneWidth.value + 20);
    }}></div>`;
}

/** Email mode. @param {{shown: boolean}} props */
export function EmailView({ shown }) {
  const container = useRef(/** @type {HTMLDivElement | null} */ (null));
  useEffect(() => {
    email.setShown(shown);
  }, [shown]);
  // A narrower window keeps the reading pane at least 360 points wide.
  useEffect(() => {
    const fit = () => {
      const total = container.current?.getBoundingClientRect().width ?? 0;
      if (total > 0 && total - email.paneWidth.value < email.READING_MIN) {
        email.paneWidth.value = Math.max(email.PANE_MIN, total - email.READING_MIN);
      }
    };
    window.addEventListener("resize", fit);
    return () => window.removeEventListener("resize", fit);
  }, []);
  const support = email.support.value;
  if (support === "absent" || support === "denied") {
    return html`<main class="main email-unavailable" aria-label="Email" hidden=${!shown}>
      <div class="welcome">
        <h2>Email is not available</h2>
        <p>${support === "absent" ? "This server has no Email mode. Chat works as before." : "This connection's token does not allow reading mail (it needs email.read)."}</p>
      </div>
    </main>`;
  }
  const open = (/** @type {string} */ id) => {
    subs.shown.value = false;
    email.reading.value = true;
    email.select(id);
  };
  return html`<main class=${`email-shell${email.reading.value ? " showing-reading" : ""}`} aria-label="Email" ref=${container} hidden=${!shown}
    style=${{ "--inbox": `${email.paneWidth.value}px` }}>
    <${InboxPane} onOpen=${open} />
    <${Divider} container=${container} />
    ${subs.shown.value
      ? html`<${SubscriptionsView} />`
      : html`<${ReadingPane} onBack=${() => (email.reading.value = false)} />`}
  </main>`;
}
