// The reply editor under the open conversation: fields saved as the owner types, the saved
// state, a conflict shown as both versions, the history with restore, and Review & Send, which
// shows exactly the frozen message and offers approve-once only once the approval proved to be
// that message.
import { h } from "../vendor/preact.mjs";
import { useEffect, useRef, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import * as drafts from "./drafts.js";
import { endorse } from "./learning.js";

const html = htm.bind(h);

const SEND_WORDS = /** @type {Record<string, string>} */ ({
  preparing: "Preparing the approval…",
  awaiting_approval: "Waiting for your approval.",
  sending: "Sending…",
  sent: "Sent.",
  outcome_unknown: "Check send status: the send may or may not have happened. It will not be repeated; the mailbox is being checked.",
  unconfirmed: "Check send status: the mailbox check found nothing, which proves nothing. Look in Sent before sending again.",
  not_sent: "Not sent.",
});

const NOT_SENT = /** @type {Record<string, string>} */ ({
  "approval.denied": "Not sent: you denied it.",
  draft_changed: "Not sent: the draft changed after it was frozen.",
  deadline: "Not sent: the approval expired.",
});

/** @param {{content: drafts.Content}} props */
function Message({ content }) {
  return html`<dl class="frozen">
    <dt>To</dt><dd>${content.to.join(", ") || "—"}</dd>
    ${content.cc.length > 0 && html`<dt>Cc</dt><dd>${content.cc.join(", ")}</dd>`}
    <dt>Subject</dt><dd>${content.subject || "(no subject)"}</dd>
    <dt>Body</dt><dd class="mail-text">${content.body}</dd>
  </dl>`;
}

/** @param {{current: drafts.Editor}} props */
function Conflict({ current }) {
  const conflict = current.conflict;
  if (!conflict) return null;
  return html`<div class="card attention conflict" role="group" aria-label="Conflicting versions">
    <h3>This draft was changed elsewhere</h3>
    <p class="summary" role="alert">Both versions are kept. Choose which one continues; nothing is lost until you do.</p>
    <div class="versions">
      <section aria-label="Saved version"><h4>Saved version (revision ${conflict.server.revision})</h4><${Message} content=${conflict.server} /></section>
      <section aria-label="Your version"><h4>Your version</h4><${Message} content=${current.local} /></section>
    </div>
    <div class="controls">
      <button class="button filled small" onClick=${() => drafts.keepMine()}>Keep mine</button>
      <button class="button hairline small" onClick=${() => drafts.useSaved()}>Use saved version</button>
    </div>
  </div>`;
}

/** @param {{current: drafts.Editor}} props */
function History({ current }) {
  const history = current.history;
  if (!history) return null;
  return html`<section class="card history" aria-label="Draft history">
    <div class="history-head"><h3>History</h3><button class="button quiet small" onClick=${() => drafts.hideHistory()}>Hide</button></div>
    <ol>
      ${[...history].reverse().map(
        (revision) => html`<li key=${revision.revision}>
          <span class="revision-line">Revision ${revision.revision} · ${revision.author === "agent" ? "Steward" : "You"}${revision.restored_from ? ` · restores ${revision.restored_from}` : ""} · ${new Date(revision.saved_at).toLocaleString()}</span>
          <span class="revision-text">${revision.body.split("\n")[0] || "(empty)"}</span>
          ${revision.revision !== current.base &&
          html`<button class="button hairline small" aria-label=${`Restore revision ${revision.revision}`} disabled=${current.saving}
            onClick=${() => drafts.restore(revision.revision)}>Restore</button>`}
        </li>`,
      )}
    </ol>
  </section>`;
}

/** @param {{current: drafts.Editor}} props */
function Review({ current }) {
  const review = current.review;
  const heading = useRef(/** @type {HTMLHeadingElement | null} */ (null));
  // Opening it takes the focus from the button that opened it, which is gone.
  useEffect(() => {
    heading.current?.focus();
  }, [review !== null]);
  if (!review) return null;
  const send = current.send && current.send.revision === review.revision ? current.send : null;
  const state = send?.state;
  const words =
    review.step === "refused"
      ? ""
      : review.step === "settling"
      ? "Saving your latest edits…"
      : review.step === "freezing"
        ? "Freezing this version…"
        : state === "not_sent"
          ? (NOT_SENT[send?.code ?? ""] ?? `Not sent${send?.code ? ` (${send.code})` : ""}.`)
          : state
            ? SEND_WORDS[state]
            : "";
  const deciding = review.step === "approving" || review.step === "denying";
  const uncertain = state === "outcome_unknown" || state === "unconfirmed";
  return html`<section class=${`card${uncertain || review.step === "refused" || review.step === "failed" ? " attention" : ""} review`} aria-label="Review and send">
    <h3 tabindex="-1" ref=${heading}>Review & Send</h3>
    <p class="summary">Exactly this message is sent, once, when you approve it.</p>
    <${Message} content=${review.frozen} />
    ${words && html`<p class=${`send-state${uncertain ? " amber" : ""}`} role="status">${words}</p>`}
    ${review.refusal && html`<p class="error" role="alert">This approval does not match your draft: ${review.refusal} It cannot be approved.</p>`}
    ${review.message && html`<p class="error" role="alert">${review.message}</p>`}
    <div class="controls">
      ${(review.step === "verified" || (deciding && state === "awaiting_approval")) &&
      html`<button class="button filled" disabled=${deciding} onClick=${() => drafts.approveOnce()}>${review.step === "approving" ? "Approving…" : "Approve once"}</button>`}
      ${(review.step === "verified" || review.step === "refused" || deciding) && state === "awaiting_approval" &&
      html`<button class="button hairline" disabled=${deciding} onClick=${() => drafts.deny()}>${review.step === "denying" ? "Denying…" : "Deny"}</button>`}
      ${(review.step === "verified" || review.step === "refused" || review.step === "failed" || state === "not_sent" || state === "unconfirmed") &&
      html`<button class="button quiet" onClick=${() => drafts.backToEditing()}>Edit</button>`}
    </div>
  </section>`;
}

/**
 * The reply editor of the open conversation, when one is open; `onChanged` runs when the
 * draft appears or its send moves on, so the conversation's row can say so.
 * @param {{onChanged: () => void}} props
 */
export function DraftEditor({ onChanged }) {
  const current = drafts.editor.value;
  const moment = current ? `${current.draftId}:${current.send?.state ?? ""}` : "";
  useEffect(() => {
    if (moment) onChanged();
  }, [moment]);
  const body = useRef(/** @type {HTMLTextAreaElement | null} */ (null));
  const reviewButton = useRef(/** @type {HTMLButtonElement | null} */ (null));
  const [styleNote, setStyleNote] = useState(/** @type {string | null} */ (null));
  const [checkedSent, setCheckedSent] = useState(false);
  const reviewingNow = current?.review != null;
  const wasReviewing = useRef(false);
  // Back from Review & Send, the focus returns to the button that opened it.
  useEffect(() => {
    if (wasReviewing.current && !reviewingNow) reviewButton.current?.focus();
    wasReviewing.current = reviewingNow;
  }, [reviewingNow]);
  if (drafts.openError.value) return html`<p class="error" role="alert">The draft could not open: ${drafts.openError.value}</p>`;
  if (!current) return null;
  const state = current.send?.state;
  // Once approved, on its way, sent or being checked, the draft no longer changes; a send
  // still waiting for approval is voided by the next save instead.
  const locked = state === "sending" || state === "sent" || state === "outcome_unknown";
  const reviewing = current.review !== null;
  // A send the mailbox check did not find may still have gone: the owner looks before another.
  const unconfirmed = current.send?.state === "unconfirmed";
  const dirty = !drafts.same(current.local, current.saved);
  const status = current.error
    ? current.error
    : current.saving
      ? "Saving…"
      : dirty
        ? "Edited"
        : current.author === "agent"
          ? `Proposed by Steward · revision ${current.base}`
          : `Saved · revision ${current.base}`;
  const field = (/** @type {string} */ name, /** @type {string} */ label, /** @type {string} */ value, /** @type {(v: string) => void} */ set) =>
    html`<div class="field">
      <label for=${`draft-${name}`}>${label}</label>
      <input id=${`draft-${name}`} value=${value} disabled=${locked} onInput=${(/** @type {any} */ e) => set(e.currentTarget.value)} />
    </div>`;
  return html`<section class="draft-editor" aria-label="Reply">
    <${Conflict} current=${current} />
    ${!reviewing &&
    html`<div class="draft-fields">
      ${field("to", "To", current.fields.to, (value) => drafts.edit({ toText: value }))}
      ${field("cc", "Cc", current.fields.cc, (value) => drafts.edit({ ccText: value }))}
      ${field("subject", "Subject", current.local.subject, (value) => drafts.edit({ subject: value }))}
      <div class="field">
        <label for="draft-body">Message</label>
        <textarea id="draft-body" rows="8" ref=${body} value=${current.local.body} disabled=${locked}
          onInput=${(/** @type {any} */ e) => drafts.edit({ body: e.currentTarget.value })}></textarea>
      </div>
      <p class=${`draft-status${current.error ? " error" : ""}`} role="status">${status}</p>
      ${styleNote && html`<p class="draft-status" role="status">${styleNote}</p>`}
      ${locked && !reviewing && html`<p class="send-state" role="status">${SEND_WORDS[state ?? ""] ?? ""}</p>`}
      ${unconfirmed &&
      html`<label class="checked-sent"><input type="checkbox" checked=${checkedSent} onChange=${(/** @type {any} */ e) => setCheckedSent(e.currentTarget.checked)} />
        I looked in Sent and the recipient's mail: it was not sent</label>`}
      ${!current.sendTool && html`<p class="draft-status" role="status">This server cannot send from this account.</p>`}
      <div class="controls">
        <button class="button filled small" ref=${reviewButton}
          disabled=${current.conflict !== null || locked || !current.sendTool || (unconfirmed && !checkedSent)}
          onClick=${() => drafts.reviewAndSend()}>Review & Send</button>
        <button class="button quiet small" onClick=${() => (current.history ? drafts.hideHistory() : drafts.loadHistory())}>History</button>
        <button class="button quiet small" disabled=${dirty || current.saving || current.conflict !== null}
          title="Keep the selected wording (or the whole message) as your writing style"
          onClick=${async () => {
            const area = body.current;
            const chosen = area && area.selectionStart !== area.selectionEnd ? area.value.slice(area.selectionStart, area.selectionEnd) : current.saved.body;
            setStyleNote((await endorse(current.draftId, current.base, chosen.trim())).words);
          }}>Keep as my style</button>
        <button class="button quiet small" onClick=${() => drafts.close()}>Close</button>
      </div>
    </div>`}
    ${!reviewing && html`<${History} current=${current} />`}
    <${Review} current=${current} />
  </section>`;
}
