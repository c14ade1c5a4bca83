// The Subscriptions view (client contract Email mode 9) and the one confirmation every
// unsubscribe passes through: it names every sender and what will be sent, says it cannot be
// undone, and offers to archive existing mail (off unless chosen).
import { h } from "../vendor/preact.mjs";
import htm from "../vendor/htm.mjs";
import * as subs from "./subscriptions.js";

const html = htm.bind(h);

/** @param {subs.Subscription} row */
function sender(row) {
  return row.sender.name ? `${row.sender.name} (${row.sender.address})` : row.sender.address;
}

/** @param {string} when */
function arrival(when) {
  return new Date(when).toLocaleDateString([], { day: "numeric", month: "short" });
}

/** The confirmation of an unsubscribe, for the rows it names. @param {{onDone?: () => void}} props */
export function Confirmation({ onDone }) {
  const named = subs.confirming.value;
  if (!named) return null;
  const many = named.length > 1;
  return html`<div class="card confirm-unsubscribe" role="alertdialog" aria-modal="false" aria-labelledby="unsubscribe-title" aria-describedby="unsubscribe-warning">
    <h2 id="unsubscribe-title">${many ? `Unsubscribe from ${named.length} senders?` : "Unsubscribe from this sender?"}</h2>
    <ul class="confirm-senders">
      ${named.map(
        (row) => html`<li key=${row.subscription_id}><strong>${sender(row)}</strong><span>${subs.mechanismWords(row)}</span></li>`,
      )}
    </ul>
    <p id="unsubscribe-warning" class="warning">This cannot be undone: ${many ? "each sender gets" : "the sender gets"} the request and decides what happens next.</p>
    <label class="archive-choice"><input type="checkbox" checked=${subs.alsoArchive.value}
      onChange=${(/** @type {any} */ e) => (subs.alsoArchive.value = e.currentTarget.checked)} />
      Also archive existing mail from these senders</label>
    <div class="controls">
      <button class="button filled small danger-fill" onClick=${() => subs.unsubscribe().then(() => onDone?.())}>Unsubscribe</button>
      <button class="button quiet small" onClick=${() => (subs.confirming.value = null)}>Cancel</button>
    </div>
  </div>`;
}

/** @param {{row: subs.Subscription}} props */
function Row({ row }) {
  const id = row.subscription_id;
  const running = subs.running.value.has(id);
  const error = subs.rowErrors.value.get(id);
  const chosen = subs.selected.value.includes(id);
  const canChoose = subs.selectable(row);
  const full = !chosen && subs.selected.value.length >= subs.MAX_SELECTION;
  const state = running ? "Unsubscribing…" : subs.STATE_WORDS[row.state] ?? row.state;
  const undecided = row.state === "eligible" || row.state === "unverified" || row.state === "still_sending";
  return html`<li class=${`subscription-row${chosen ? " chosen" : ""}`} data-subscription=${id}>
    <input type="checkbox" class="choose" checked=${chosen} disabled=${!canChoose || full}
      aria-label=${`Select ${row.sender.name ?? row.sender.address}`}
      onChange=${(/** @type {any} */ e) => {
        subs.toggle(row);
        // The box shows the selection, also when the click could not change it.
        e.currentTarget.checked = subs.selected.value.includes(id);
      }} />
    <div class="subscription-main">
      <span class="subscription-top"><span class="from">${sender(row)}</span>
        <time datetime=${row.last_arrival_at}>${arrival(row.last_arrival_at)}</time></span>
      <span class="subscription-facts">
        <span>${row.conversations === 1 ? "1 conversation" : `${row.conversations} conversations`}</span>
        ${row.state !== "unverified" && html`<span class="mechanism">${subs.mechanismWords(row)}</span>`}
        <span class=${`state${running ? " amber" : ""}`}>${state}</span>
        ${row.protected && html`<span class="tag">Someone you write to</span>`}
      </span>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${!running &&
      html`<span class="controls row-actions">
        ${error && canChoose && html`<button class="button hairline small" onClick=${() => subs.confirm([row])}>Try again</button>`}
        ${!error && canChoose && html`<button class="button quiet small" onClick=${() => subs.confirm([row])}>Unsubscribe</button>`}
        ${undecided && html`<button class="button quiet small" onClick=${() => subs.decide(row, "spam")}>Report spam</button>`}
        ${undecided && html`<button class="button quiet small" onClick=${() => subs.decide(row, "keep")}>Keep</button>`}
        ${row.state === "kept" && html`<button class="button quiet small" onClick=${() => subs.decide(row, "undo-keep")}>Undo keep</button>`}
        ${row.state === "reported_spam" && html`<button class="button quiet small" onClick=${() => subs.decide(row, "not-spam")}>Not spam</button>`}
      </span>`}
    </div>
  </li>`;
}

/** The Subscriptions view, in place of the reading pane. */
export function SubscriptionsView() {
  const accounts = subs.supportedAccounts();
  const count = subs.selected.value.length;
  return html`<section class="reading-pane subscriptions" aria-label="Subscriptions">
    <div class="reading-title">
      <button class="button quiet small back" onClick=${() => subs.close()} aria-label="Back to the inbox">‹</button>
      <div>
        <h1>Subscriptions</h1>
        <p class="summary">Senders of newsletters and lists. Steward sends an unsubscribe only when you confirm it, and only what the sender's signed mail offers.</p>
      </div>
    </div>
    <div class="controls subscription-tools">
      ${accounts.length > 1 &&
      html`<label class="visually-hidden" for="subscriptions-account">Account</label>
        <select id="subscriptions-account" value=${subs.account.value ?? ""}
          onChange=${(/** @type {any} */ e) => subs.open(e.currentTarget.value)}>
          ${accounts.map((account) => html`<option value=${account.account_id}>${account.address ?? account.account_id}</option>`)}
        </select>`}
      <button class="button hairline small" onClick=${() => subs.selectAll()}>Select all</button>
      ${count > 0 && html`<button class="button quiet small" onClick=${() => subs.clearSelection()}>Clear</button>`}
      <button class="button filled small" disabled=${count === 0} onClick=${() => subs.confirm()}>${count > 0 ? `Unsubscribe ${count}` : "Unsubscribe"}</button>
    </div>
    ${subs.selectionNote.value && html`<p class="hint" role="status">${subs.selectionNote.value}</p>`}
    <${Confirmation} onDone=${() => {}} />
    ${subs.listError.value && html`<p class="error" role="alert">${subs.listError.value}</p>`}
    <ul class="subscription-rows" aria-label="Senders" aria-busy=${subs.loading.value}>
      ${subs.rows.value.map((row) => html`<${Row} key=${row.subscription_id} row=${row} />`)}
    </ul>
    ${subs.rows.value.length === 0 && !subs.loading.value && html`<p class="empty">No newsletters or lists in this mailbox's recent mail.</p>`}
    ${subs.nextCursor.value &&
    html`<button class="button quiet small more" disabled=${subs.loading.value} onClick=${() => subs.load(true)}>Show more</button>`}
  </section>`;
}

/** The reading pane's Unsubscribe for a bulk conversation's sender, with a one-row confirmation.
 * @param {{row: subs.Subscription | null | undefined, onDone: () => void}} props */
export function ThreadUnsubscribe({ row, onDone }) {
  if (!row) return null;
  const id = row.subscription_id;
  const running = subs.running.value.has(id);
  const error = subs.rowErrors.value.get(id);
  const named = subs.confirming.value;
  const confirmingThis = named?.length === 1 && named[0].subscription_id === id;
  return html`<div class="thread-unsubscribe">
    ${running
      ? html`<p class="state amber" role="status">Unsubscribing…</p>`
      : subs.selectable(row)
        ? html`<button class="button hairline small" onClick=${() => subs.confirm([row])}>Unsubscribe</button>
            ${row.state !== "unverified" && html`<span class="mechanism">${subs.mechanismWords(row)}</span>`}`
        : html`<p class="summary">${subs.STATE_WORDS[row.state] ?? row.state} · ${subs.mechanismWords(row)}</p>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${confirmingThis && html`<${Confirmation} onDone=${onDone} />`}
  </div>`;
}
