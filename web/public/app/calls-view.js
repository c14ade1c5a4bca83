// The Calls view: the owner's calls, newest first; one call's summary and transcript (the
// owner's only; gone after 30 days), an outbound call's brief and the settings revision its
// approval is pinned to, cancelling a call not yet placed, and deleting with a confirmation.
import { h } from "../vendor/preact.mjs";
import htm from "../vendor/htm.mjs";
import { holds } from "./api.js";
import * as calls from "./calls.js";
import { showingMain } from "./shell.js";

const html = htm.bind(h);

/** @param {string | null | undefined} when */
function at(when) {
  return when ? new Date(when).toLocaleString([], { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" }) : "";
}

/** @param {number | null | undefined} seconds */
function length(seconds) {
  if (seconds == null) return "";
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes} min ${seconds % 60} s` : `${seconds} s`;
}

/** @param {{call: calls.Call}} props */
function Detail({ call }) {
  const summary = call.call;
  const id = summary.call_id;
  const confirming = calls.confirmingDelete.value === id;
  const settled = ["finished", "not_placed", "cancelled"].includes(summary.state);
  return html`<section class="card call-detail" aria-label=${calls.title(summary)}>
    <h2>${calls.title(summary)}</h2>
    <p class="summary">${[
      `${calls.STATE_WORDS[summary.state] ?? summary.state}${summary.failure ? `: ${calls.FAILURE_WORDS[summary.failure] ?? summary.failure}` : ""}`,
      at(summary.created_at),
      summary.duration_seconds != null ? length(summary.duration_seconds) : "",
    ]
      .filter(Boolean)
      .join(" · ")}</p>
    ${call.brief &&
    html`<dl class="frozen call-brief" aria-label="Brief">
      <dt>Call</dt><dd>${call.brief.to}</dd>
      <dt>Purpose</dt><dd class="mail-text">${call.brief.purpose}</dd>
      <dt>May say</dt><dd class="mail-text">${call.brief.may_say}</dd>
      <dt>On voicemail</dt><dd class="mail-text">${call.brief.voicemail_message ?? "Hang up without a message"}</dd>
      ${call.revision && html`<dt>Approved under call settings</dt><dd><code class="revision">${call.revision}</code></dd>`}
    </dl>`}
    ${summary.expired
      ? html`<p class="summary">The transcript and summary were removed 30 days after the call.</p>`
      : html`${call.summary && html`<h3>Summary</h3><p class="call-summary">${call.summary}</p>`}
        ${call.transcript &&
        call.transcript.length > 0 &&
        html`<h3>Transcript</h3>
          <ol class="call-transcript" aria-label="Transcript" tabindex="0">${call.transcript.map(
            (turn, index) => html`<li key=${index} class=${`turn ${turn.speaker}`}><strong>${turn.speaker === "assistant" ? "Steward" : summary.direction === "inbound" ? "Caller" : "Recipient"}</strong> ${turn.text}</li>`,
          )}</ol>`}`}
    <div class="controls">
      ${summary.state === "approved" &&
      holds("call.cancel") &&
      html`<button class="button hairline small" disabled=${calls.busy.value} onClick=${() => calls.cancelCall(id)}>Cancel call</button>`}
      ${settled &&
      holds("call.delete") &&
      !confirming &&
      html`<button class="button quiet small danger" onClick=${() => (calls.confirmingDelete.value = id)}>Delete…</button>`}
    </div>
    ${confirming &&
    html`<div class="card confirm-delete" role="alertdialog" aria-modal="false" aria-labelledby="delete-call-title" aria-describedby="delete-call-warning">
      <h3 id="delete-call-title">Delete this call?</h3>
      <p id="delete-call-warning" class="warning">Its transcript and summary are removed, and what Steward said about it in conversations is redacted. Your own messages stay. This cannot be undone.</p>
      <div class="controls">
        <button class="button filled small danger-fill" disabled=${calls.busy.value} onClick=${() => calls.deleteCall(id)}>Delete</button>
        <button class="button quiet small" onClick=${() => (calls.confirmingDelete.value = null)}>Keep</button>
      </div>
    </div>`}
  </section>`;
}

export function CallsView() {
  const list = calls.list.value;
  const shown = calls.shown.value;
  return html`<main class="main settings" aria-label="Calls">
    <div class="settings-inner">
      <div class="titlebar-lite">
        <button class="button quiet small back" onClick=${() => (showingMain.value = false)} aria-label="Back to conversations">‹</button>
        <h1>Calls</h1>
      </div>
      ${calls.error.value && html`<p class="error" role="alert">${calls.error.value}</p>`}
      ${!calls.available.value && html`<p class="summary">Calling is not turned on on this server.</p>`}
      ${shown && html`<${Detail} call=${shown} />`}
      ${calls.available.value &&
      (list.length === 0
        ? html`<p class="summary">No calls yet. Messages left on your public number and calls Steward places for you appear here.</p>`
        : html`<ul class="notifications calls">${list.map(
            (call) => html`<li key=${call.call_id}>
              <button class="card notification" aria-current=${shown?.call.call_id === call.call_id ? "true" : "false"} onClick=${() => calls.openCall(call.call_id)}>
                <strong>${calls.title(call)}</strong>
                <span class="summary">${calls.STATE_WORDS[call.state] ?? call.state} · ${at(call.created_at)}</span>
              </button>
            </li>`,
          )}</ul>`)}
    </div>
  </main>`;
}
