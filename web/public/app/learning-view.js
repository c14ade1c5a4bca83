// Feedback on the open conversation (what, then what it applies to: this conversation, a person
// chosen explicitly, or its kind of content), the scope the server applied with Undo, and the
// Learning card of Settings: pause or resume, what was learnt with scoped resets, and the
// sources excluded from learning.
import { h } from "../vendor/preact.mjs";
import { useEffect, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import * as learning from "./learning.js";

const html = htm.bind(h);

/**
 * @param {{thread: {thread_id: string, kind: string | null, correspondents: {address: string}[]}, own: string | null, onChanged: (thread: any) => void}} props
 */
export function FeedbackMenu({ thread, own, onChanged }) {
  const [open, setOpen] = useState(false);
  const [what, setWhat] = useState(/** @type {learning.Signal | null} */ (null));
  const [scope, setScope] = useState(/** @type {learning.Scope} */ ("thread"));
  const [person, setPerson] = useState(/** @type {string | null} */ (null));
  const [busy, setBusy] = useState(false);
  const id = thread.thread_id;
  const people = [...new Set(thread.correspondents.map((who) => who.address.toLowerCase()))].filter(
    (address) => address !== (own ?? "").toLowerCase(),
  );
  const last = learning.given.value.get(id);
  const error = learning.feedbackErrors.value.get(id);
  // Changing what it applies to clears the person chosen before.
  const target = (/** @type {learning.Scope} */ next) => {
    setScope(next);
    setPerson(null);
  };
  const apply = async () => {
    if (!what) return;
    setBusy(true);
    const shown = await learning.give(id, what, scope, scope === "person" ? person : null);
    setBusy(false);
    if (shown) {
      onChanged(shown);
      setOpen(false);
      setWhat(null);
      target("thread");
    }
  };
  const undo = async () => {
    setBusy(true);
    const shown = await learning.undo(id);
    setBusy(false);
    if (shown) onChanged(shown);
  };
  const kind = thread.kind ? learning.KIND_WORDS[thread.kind] : null;
  const ready = what !== null && (scope !== "person" || person !== null) && !busy;
  return html`<div class="feedback">
    <button class="button hairline small" aria-expanded=${open} onClick=${() => setOpen(!open)}>Feedback</button>
    ${last &&
    html`<p class="feedback-applied" role="status">${learning.SIGNAL_WORDS[last.signal]} for ${learning.target(last)}.
      <button class="button quiet small" disabled=${busy} onClick=${undo}>Undo</button></p>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${open &&
    html`<div class="card feedback-form" role="group" aria-label="Feedback">
      <fieldset class="choices">
        <legend>This is</legend>
        ${/** @type {learning.Signal[]} */ (["important", "less_important", "needs_reply", "no_reply"]).map(
          (value) => html`<label class="choice"><input type="radio" name=${`signal-${id}`} checked=${what === value}
            onChange=${() => setWhat(value)} /><span>${learning.SIGNAL_WORDS[value]}</span></label>`,
        )}
      </fieldset>
      <fieldset class="choices">
        <legend>For</legend>
        <label class="choice"><input type="radio" name=${`scope-${id}`} checked=${scope === "thread"} onChange=${() => target("thread")} /><span>This conversation</span></label>
        ${people.length > 0 &&
        html`<label class="choice"><input type="radio" name=${`scope-${id}`} checked=${scope === "person"} onChange=${() => target("person")} /><span>A person</span></label>`}
        ${kind && html`<label class="choice"><input type="radio" name=${`scope-${id}`} checked=${scope === "kind"} onChange=${() => target("kind")} /><span>All ${kind}</span></label>`}
      </fieldset>
      ${scope === "person" &&
      html`<fieldset class="choices">
        <legend>Which person</legend>
        ${people.map(
          (address) => html`<label class="choice"><input type="radio" name=${`person-${id}`} checked=${person === address}
            onChange=${() => setPerson(address)} /><span>${address}</span></label>`,
        )}
      </fieldset>`}
      <div class="controls">
        <button class="button filled small" disabled=${!ready} onClick=${apply}>Apply</button>
        <button class="button quiet small" onClick=${() => setOpen(false)}>Cancel</button>
      </div>
    </div>`}
  </div>`;
}

/** Settings' Learning card; hidden on a server without Email mode. */
export function LearningCard() {
  const [kind, setKind] = useState(/** @type {"sender" | "label"} */ ("sender"));
  const [value, setValue] = useState("");
  const [confirming, setConfirming] = useState(false);
  useEffect(() => {
    learning.loadLearning();
  }, []);
  const state = learning.learning.value;
  if (state === "absent" || state === null) {
    return learning.learningError.value
      ? html`<section class="card" aria-label="Learning"><h2>Learning</h2><p class="error" role="alert">${learning.learningError.value}</p></section>`
      : null;
  }
  return html`<section class="card learning" aria-label="Learning">
    <h2>Learning</h2>
    <p class="summary">Your feedback on Email conversations becomes rules for later mail, and wording you keep becomes your writing style.
      ${state.paused ? " Learning is paused: no new rule forms and no wording is kept; rules in force still apply." : ""}</p>
    <div class="controls">
      <button class="button hairline small" onClick=${() => learning.pause(!state.paused)}>${state.paused ? "Resume learning" : "Pause learning"}</button>
    </div>
    <h3>Rules</h3>
    ${state.rules.length === 0
      ? html`<p class="summary">No rule about a person or a kind of content.</p>`
      : html`<ul class="rules">${state.rules.map(
          (rule) => html`<li key=${rule.feedback_id}><span>${learning.SIGNAL_WORDS[rule.signal]} for ${learning.target(rule)}</span>
            <button class="button quiet small" aria-label=${`Forget every rule for ${learning.target(rule)}`}
              onClick=${() => learning.reset(rule.scope === "person" ? { scope: "person", person: rule.person ?? "" } : { scope: "kind", kind: rule.kind ?? "" })}>Forget</button></li>`,
        )}</ul>`}
    <p class="summary">${state.style_samples === 0 ? "No wording kept as your style." : `${state.style_samples} passages kept as your writing style.`}</p>
    ${confirming
      ? html`<div class="confirm" role="alertdialog" aria-label="Reset everything learnt">
          <span>Forget every rule and your writing style? Feedback on single conversations stays.</span>
          <button class="button filled small danger-fill" onClick=${() => {
            setConfirming(false);
            learning.reset({ scope: "everything" });
          }}>Reset everything</button>
          <button class="button quiet small" onClick=${() => setConfirming(false)}>Cancel</button>
        </div>`
      : html`<div class="controls"><button class="button hairline small danger" onClick=${() => setConfirming(true)}>Reset everything…</button></div>`}
    <h3>Never learn from</h3>
    ${state.exclusions.length > 0 &&
    html`<ul class="rules">${state.exclusions.map(
      (exclusion) => html`<li key=${exclusion.exclusion_id}><span>${exclusion.kind === "sender" ? "Mail from" : "Label"} ${exclusion.value}</span>
        <button class="button quiet small" aria-label=${`Remove ${exclusion.value}`} onClick=${() => learning.include(exclusion.exclusion_id)}>Remove</button></li>`,
    )}</ul>`}
    <form class="exclude" onSubmit=${(/** @type {Event} */ e) => {
      e.preventDefault();
      if (!value.trim()) return;
      learning.exclude(kind, value).then((done) => done && setValue(""));
    }}>
      <label class="visually-hidden" for="exclude-kind">Source</label>
      <select id="exclude-kind" value=${kind} onChange=${(/** @type {any} */ e) => setKind(e.currentTarget.value)}>
        <option value="sender">Sender</option>
        <option value="label">Label</option>
      </select>
      <label class="visually-hidden" for="exclude-value">${kind === "sender" ? "Sender's address" : "Label id"}</label>
      <input id="exclude-value" value=${value} placeholder=${kind === "sender" ? "name@example.org" : "Label_12"}
        onInput=${(/** @type {any} */ e) => setValue(e.currentTarget.value)} />
      <button class="button hairline small" type="submit">Exclude</button>
    </form>
    ${learning.learningError.value && html`<p class="error" role="alert">${learning.learningError.value}</p>`}
  </section>`;
}
