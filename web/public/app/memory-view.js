// The Memory and People views. Memory: the beliefs Steward formed, filtered by state, kind and
// the review flag, each reviewable (Mark reviewed, Not true, Delete with a confirmation) with
// its evidence. People: the owner's correspondents by collection, possible duplicates (Merge or
// Not the same), and a person's profile with its facts (Inspect evidence, Correct), timeline,
// open threads and Manage person (Repair identity, Forget person with a confirmation), and
// Import history (a range, record limit and spending cap; the imports' progress, Cancel).
import { h } from "../vendor/preact.mjs";
import { useEffect, useRef, useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import { holds } from "./api.js";
import * as memory from "./memory.js";
import * as imports from "./imports.js";
import * as people from "./people.js";
import { showingMain } from "./shell.js";

const html = htm.bind(h);

/** @param {string | null | undefined} when */
function at(when) {
  return when ? new Date(when).toLocaleString([], { day: "numeric", month: "short", year: "numeric" }) : "";
}

/** The title bar of a view, with the way back to the conversations on a phone. @param {{title: string}} props */
function TitleBar({ title }) {
  return html`<div class="titlebar-lite">
    <button class="button quiet small back" onClick=${() => (showingMain.value = false)} aria-label="Back to conversations">‹</button>
    <h1>${title}</h1>
  </div>`;
}

/** A link to the conversation or mail a piece of evidence names. @param {{session?: string | null, thread?: string | null}} props */
function Source({ session, thread }) {
  if (session) return html`<a href=${`#session=${session}`}>The conversation</a>`;
  if (thread) return html`<span>A message in your mail</span>`;
  return html`<span>A source since deleted</span>`;
}

// ---------------------------------------------------------------------------------------------
// Memory.

/** @param {{detail: memory.MemoryDetail}} props */
function MemoryDetail({ detail }) {
  const belief = detail.memory;
  return html`<section class="card memory-detail" aria-label="Evidence">
    <h2>Evidence</h2>
    <p class="summary">“${belief.statement}”, formed ${at(belief.formed_at)} from ${belief.origin === "email" ? "your mail" : "a conversation"}.</p>
    <ul class="evidence">${detail.evidence.map(
      (piece, index) => html`<li key=${index}><${Source} session=${piece.session_id} thread=${piece.email_thread_id} /> · ${at(piece.noted_at)}</li>`,
    )}</ul>
    <h3>Used in answers</h3>
    ${detail.recalls.length === 0
      ? html`<p class="summary">Not used in any answer yet.</p>`
      : html`<ul class="evidence">${detail.recalls.map(
          (recall) => html`<li key=${recall.run_id}><a href=${`#session=${recall.session_id}`}>An answer</a> · ${at(recall.recalled_at)}</li>`,
        )}</ul>`}
    <div class="controls"><button class="button quiet small" onClick=${() => (memory.shown.value = null)}>Close</button></div>
  </section>`;
}

/** @param {{belief: memory.Memory}} props */
function MemoryRow({ belief }) {
  const id = belief.memory_id;
  const confirming = memory.confirmingDelete.value === id;
  const writable = holds("memory.write");
  return html`<li class="card memory-row" data-memory=${id}>
    <p class="statement">${belief.statement}</p>
    <p class="summary">
      ${memory.KIND_WORDS[belief.kind] ?? belief.kind} · ${memory.STATUS_WORDS[belief.status] ?? belief.status}
      ${belief.needs_review && html` · <span class="tag amber">Needs review</span>`}
      ${belief.origin === "email" && " · From your mail"}
    </p>
    <div class="controls row-actions">
      <button class="button quiet small" onClick=${() => memory.inspect(id)}>Inspect evidence</button>
      ${writable &&
      belief.status !== "reviewed" &&
      html`<button class="button hairline small" disabled=${memory.busy.value} onClick=${() => memory.review(id, "mark_reviewed")}>Mark reviewed</button>`}
      ${writable &&
      belief.status !== "not_true" &&
      html`<button class="button quiet small" disabled=${memory.busy.value} onClick=${() => memory.review(id, "not_true")}>Not true</button>`}
      ${writable && !confirming && html`<button class="button quiet small danger" onClick=${() => (memory.confirmingDelete.value = id)}>Delete memory…</button>`}
    </div>
    ${confirming &&
    html`<div class="card confirm-delete" role="alertdialog" aria-modal="false" aria-labelledby=${`delete-${id}`} aria-describedby=${`delete-warning-${id}`}>
      <h3 id=${`delete-${id}`}>Delete this memory?</h3>
      <p id=${`delete-warning-${id}`} class="warning">Steward forgets it and will not form it, or anything close to it, again. The messages it came from stay.</p>
      <div class="controls">
        <button class="button filled small danger-fill" disabled=${memory.busy.value} onClick=${() => memory.remove(id)}>Delete memory</button>
        <button class="button quiet small" onClick=${() => (memory.confirmingDelete.value = null)}>Keep</button>
      </div>
    </div>`}
  </li>`;
}

export function MemoryView() {
  const { status, kind, needsReview } = memory.filters.value;
  const list = memory.list.value;
  return html`<main class="main settings" aria-label="Memory">
    <div class="settings-inner">
      <${TitleBar} title="Memory" />
      <p class="summary">What Steward believes about you and your life. It uses a belief in answers only once you review it, or when it came from a conversation; mail-derived beliefs wait for your review.</p>
      ${!memory.available.value && html`<p class="summary">Memory is not turned on on this server.</p>`}
      ${memory.available.value &&
      html`<div class="controls memory-filters" role="group" aria-label="Filters">
        <label for="memory-status">State</label>
        <select id="memory-status" value=${status} onChange=${(/** @type {any} */ e) => memory.filter({ status: e.currentTarget.value })}>
          <option value="">Any</option>
          ${Object.entries(memory.STATUS_WORDS).map(([value, words]) => html`<option value=${value}>${words}</option>`)}
        </select>
        <label for="memory-kind">Kind</label>
        <select id="memory-kind" value=${kind} onChange=${(/** @type {any} */ e) => memory.filter({ kind: e.currentTarget.value })}>
          <option value="">Any</option>
          ${Object.entries(memory.KIND_WORDS).map(([value, words]) => html`<option value=${value}>${words}</option>`)}
        </select>
        <label class="toggle"><input type="checkbox" checked=${needsReview}
          onChange=${(/** @type {any} */ e) => memory.filter({ needsReview: e.currentTarget.checked })} /> Needs review only</label>
      </div>`}
      ${memory.error.value && html`<p class="error" role="alert">${memory.error.value}</p>`}
      <p class="hint" role="status">${memory.notice.value ?? ""}</p>
      ${memory.shown.value && html`<${MemoryDetail} detail=${memory.shown.value} />`}
      ${memory.available.value &&
      html`<ul class="memory-rows" aria-label="Memories" aria-busy=${memory.loading.value ? "true" : "false"}>
        ${list.map((belief) => html`<${MemoryRow} key=${belief.memory_id} belief=${belief} />`)}
      </ul>`}
      ${memory.available.value && list.length === 0 && !memory.loading.value && html`<p class="empty">No memories here yet. Steward forms them from your conversations and your mail.</p>`}
      ${memory.nextCursor.value &&
      html`<button class="button quiet small more" disabled=${memory.loading.value} onClick=${() => memory.load(true)}>Show more</button>`}
    </div>
  </main>`;
}

// ---------------------------------------------------------------------------------------------
// People.

/** @param {{fact: import("../../types/wire").PersonFact, personId: string}} props */
function Fact({ fact, personId }) {
  const [inspecting, setInspecting] = useState(false);
  const [editing, setEditing] = useState(/** @type {string | null} */ (null));
  const evidence = fact.evidence;
  return html`<li class="fact">
    <p>${fact.correction ?? fact.statement}${fact.correction && html` <span class="summary">(you corrected “${fact.statement}”)</span>`}</p>
    <div class="controls row-actions">
      <button class="button quiet small" aria-expanded=${inspecting ? "true" : "false"} onClick=${() => setInspecting(!inspecting)}>Inspect evidence</button>
      ${people.writable() && editing === null && html`<button class="button quiet small" onClick=${() => setEditing(fact.correction ?? fact.statement)}>Correct…</button>`}
      ${people.writable() &&
      fact.correction &&
      editing === null &&
      html`<button class="button quiet small" disabled=${people.busy.value} onClick=${() => people.correct(personId, fact.fact_id, null)}>Undo correction</button>`}
    </div>
    ${inspecting &&
    html`<p class="summary evidence">${fact.source === "owner" ? "Your own word" : html`<${Source} session=${evidence.session_id} thread=${evidence.email_thread_id} />`} · noted ${at(fact.noted_at)}</p>`}
    ${editing !== null &&
    html`<form class="controls" onSubmit=${async (/** @type {Event} */ e) => {
      e.preventDefault();
      if (await people.correct(personId, fact.fact_id, editing.trim())) setEditing(null);
    }}>
      <label class="visually-hidden" for=${`correct-${fact.fact_id}`}>Correction</label>
      <input id=${`correct-${fact.fact_id}`} value=${editing} maxlength="300" onInput=${(/** @type {any} */ e) => setEditing(e.currentTarget.value)} />
      <button class="button filled small" type="submit" disabled=${people.busy.value || !editing.trim()}>Save</button>
      <button class="button quiet small" type="button" onClick=${() => setEditing(null)}>Cancel</button>
    </form>`}
  </li>`;
}

/** Repair identity: split contacts off to a new person, or link one. @param {{profile: people.PersonProfile}} props */
function Repair({ profile }) {
  const id = profile.person.person_id;
  const [chosen, setChosen] = useState(/** @type {string[]} */ ([]));
  const [name, setName] = useState("");
  const [kind, setKind] = useState(/** @type {"email" | "phone"} */ ("email"));
  const [value, setValue] = useState("");
  const key = (/** @type {{kind: string, value: string}} */ contact) => `${contact.kind}:${contact.value}`;
  if (people.managing.value === "split") {
    return html`<form class="card repair" aria-label="Split off" onSubmit=${(/** @type {Event} */ e) => {
      e.preventDefault();
      const contacts = profile.contacts.filter((contact) => chosen.includes(key(contact))).map((contact) => ({ kind: contact.kind, value: contact.value }));
      people.split(id, contacts, name.trim());
    }}>
      <h3>Split off to another person</h3>
      <p class="summary">Choose the contacts that belong to someone else. At least one stays with ${profile.person.name}.</p>
      ${profile.contacts.map(
        (contact) => html`<label class="choice" key=${key(contact)}><input type="checkbox" checked=${chosen.includes(key(contact))}
          onChange=${(/** @type {any} */ e) => setChosen(e.currentTarget.checked ? [...chosen, key(contact)] : chosen.filter((k) => k !== key(contact)))} /> ${contact.value}</label>`,
      )}
      <label for="split-name">Their name</label>
      <input id="split-name" value=${name} maxlength="200" onInput=${(/** @type {any} */ e) => setName(e.currentTarget.value)} />
      <div class="controls">
        <button class="button filled small" type="submit" disabled=${people.busy.value || chosen.length === 0 || chosen.length === profile.contacts.length || !name.trim()}>Split off</button>
        <button class="button quiet small" type="button" onClick=${() => (people.managing.value = null)}>Cancel</button>
      </div>
    </form>`;
  }
  return html`<form class="card repair" aria-label="Link a contact" onSubmit=${(/** @type {Event} */ e) => {
    e.preventDefault();
    people.link(id, { kind, value: value.trim() });
  }}>
    <h3>Link an address or number</h3>
    <p class="summary">It becomes ${profile.person.name}'s, also if it belongs to someone else now.</p>
    <label for="link-kind">Kind</label>
    <select id="link-kind" value=${kind} onChange=${(/** @type {any} */ e) => setKind(e.currentTarget.value)}>
      <option value="email">Email address</option>
      <option value="phone">Phone number</option>
    </select>
    <label for="link-value">${kind === "email" ? "Address" : "Number"}</label>
    <input id="link-value" value=${value} onInput=${(/** @type {any} */ e) => setValue(e.currentTarget.value)} />
    <div class="controls">
      <button class="button filled small" type="submit" disabled=${people.busy.value || !value.trim()}>Link</button>
      <button class="button quiet small" type="button" onClick=${() => (people.managing.value = null)}>Cancel</button>
    </div>
  </form>`;
}

/** @param {{profile: people.PersonProfile}} props */
function Profile({ profile }) {
  const person = profile.person;
  const id = person.person_id;
  const [relationship, setRelationship] = useState(/** @type {string | null} */ (null));
  const writable = people.writable();
  const managing = people.managing.value;
  const card = useRef(/** @type {HTMLElement | null} */ (null));
  // Opened from further down the list (on a phone, the whole page): the profile comes into view.
  useEffect(() => card.current?.scrollIntoView({ block: "start" }), [id]);
  return html`<section class="card person-profile" aria-label=${person.name} ref=${card}>
    <h2>${person.name}</h2>
    ${profile.names.length > 1 && html`<p class="summary">Also seen as ${profile.names.slice(1).join(", ")}</p>`}
    <p class="summary">${person.relationship ? `Your ${person.relationship}` : "No relationship noted"}${person.pinned ? " · Pinned" : ""}${person.needs_review ? " · Needs review" : ""}</p>
    ${writable &&
    html`<div class="controls">
      <button class="button hairline small" disabled=${people.busy.value}
        onClick=${() => people.change(id, { pinned: !person.pinned }, person.pinned ? "Unpinned." : "Pinned.")}>${person.pinned ? "Unpin" : "Pin"}</button>
      ${person.needs_review &&
      html`<button class="button hairline small" disabled=${people.busy.value} onClick=${() => people.change(id, { reviewed: true }, "Marked reviewed.")}>Mark reviewed</button>`}
      ${relationship === null && html`<button class="button quiet small" onClick=${() => setRelationship(person.relationship ?? "")}>Relationship…</button>`}
    </div>`}
    ${relationship !== null &&
    html`<form class="controls" onSubmit=${async (/** @type {Event} */ e) => {
      e.preventDefault();
      const text = relationship.trim();
      if (await people.change(id, { relationship: text ? text : null }, "Relationship saved.")) setRelationship(null);
    }}>
      <label for="relationship">How they relate to you</label>
      <input id="relationship" value=${relationship} maxlength="100" placeholder="sister, accountant…" onInput=${(/** @type {any} */ e) => setRelationship(e.currentTarget.value)} />
      <button class="button filled small" type="submit" disabled=${people.busy.value}>Save</button>
      <button class="button quiet small" type="button" onClick=${() => setRelationship(null)}>Cancel</button>
    </form>`}
    <h3>Contacts</h3>
    <ul class="contacts">${profile.contacts.map(
      (contact) => html`<li key=${`${contact.kind}:${contact.value}`}>${contact.kind === "email" ? "Email" : "Phone"}: ${contact.value}${contact.name_seen ? ` (as ${contact.name_seen})` : ""}</li>`,
    )}</ul>
    <h3>Facts</h3>
    ${profile.facts.length === 0
      ? html`<p class="summary">Nothing noted yet.</p>`
      : html`<ul class="facts">${profile.facts.map((fact) => html`<${Fact} key=${fact.fact_id} fact=${fact} personId=${id} />`)}</ul>`}
    <h3>Open threads</h3>
    ${profile.open_threads.length === 0
      ? html`<p class="summary">Nothing waits for your reply.</p>`
      : html`<ul class="timeline" aria-label="Open threads">${profile.open_threads.map((thread) => html`<li key=${thread.email_thread_id}>${thread.subject || "(no subject)"} · ${at(thread.latest_at)}</li>`)}</ul>`}
    <h3>Timeline</h3>
    ${profile.timeline.length === 0
      ? html`<p class="summary">No mail with them yet.</p>`
      : html`<ol class="timeline" aria-label="Timeline">${profile.timeline.map(
          (entry) => html`<li key=${entry.provider_message_id}>${entry.direction === "from_them" ? "From them" : "To them"}: ${entry.subject || "(no subject)"} · ${at(entry.sent_at)}</li>`,
        )}</ol>`}
    ${writable &&
    html`<h3>Manage person</h3>
      <div class="controls">
        <button class="button quiet small" aria-expanded=${managing === "split" ? "true" : "false"} disabled=${profile.contacts.length < 2} onClick=${() => (people.managing.value = "split")}>Repair identity: split off…</button>
        <button class="button quiet small" aria-expanded=${managing === "link" ? "true" : "false"} onClick=${() => (people.managing.value = "link")}>Repair identity: link…</button>
        <button class="button quiet small danger" onClick=${() => (people.managing.value = "forget")}>Forget person…</button>
      </div>`}
    ${(managing === "split" || managing === "link") && html`<${Repair} key=${`${id}-${managing}`} profile=${profile} />`}
    ${managing === "forget" &&
    html`<div class="card confirm-delete" role="alertdialog" aria-modal="false" aria-labelledby="forget-title" aria-describedby="forget-warning">
      <h3 id="forget-title">Forget ${person.name}?</h3>
      <p id="forget-warning" class="warning">Their record, contacts and facts are removed, and Steward will not rebuild them from the same addresses or numbers unless you link one again. Your mail stays.</p>
      <div class="controls">
        <button class="button filled small danger-fill" disabled=${people.busy.value} onClick=${() => people.forget(id)}>Forget person</button>
        <button class="button quiet small" onClick=${() => (people.managing.value = null)}>Keep</button>
      </div>
    </div>`}
    <div class="controls"><button class="button quiet small" onClick=${() => (people.shown.value = null)}>Close</button></div>
  </section>`;
}

function Duplicates() {
  const pairs = people.duplicates.value;
  if (pairs.length === 0 || !people.writable()) return null;
  return html`<section class="card duplicates" aria-label="Possible duplicates">
    <h2>Possible duplicates</h2>
    <ul>${pairs.map(
      (pair) => html`<li key=${`${pair.first.person_id}-${pair.second.person_id}`}>
        <span>${pair.first.name} and ${pair.second.name}</span>
        <span class="controls">
          <button class="button hairline small" disabled=${people.busy.value} onClick=${() => people.merge(pair.first.person_id, pair.second.person_id)}>Merge</button>
          <button class="button quiet small" disabled=${people.busy.value} onClick=${() => people.notTheSame(pair.first.person_id, pair.second.person_id)}>Not the same</button>
        </span>
      </li>`,
    )}</ul>
  </section>`;
}

/** A day as the date input writes it, `days` before today. @param {number} days */
function dayBefore(days) {
  const day = new Date(Date.now() - days * 86_400_000);
  return day.toISOString().slice(0, 10);
}

/** Import history: the range, record limit and spending cap, and the imports with their progress. */
function ImportHistory() {
  const [since, setSince] = useState(() => dayBefore(365));
  const [until, setUntil] = useState(() => dayBefore(0));
  const [limit, setLimit] = useState("1000");
  const [cap, setCap] = useState("1.00");
  useEffect(() => {
    imports.load();
    return () => imports.stop();
  }, []);
  const list = imports.imports.value;
  const running = list.some(imports.active);
  const writable = people.writable();
  return html`<section class="card imports" aria-label="Import history">
    <h2>Import history</h2>
    <p class="hint">Read the mail already synced on these days again into People: correspondents, what they say about
      themselves, and beliefs from mail you sent (for your review). The cap bounds what the memory model may cost.</p>
    ${writable &&
    html`<form class="import-form" aria-label="Import history" onSubmit=${(/** @type {Event} */ e) => {
      e.preventDefault();
      imports.start({ since, until, recordLimit: Number(limit), spendingCap: cap.trim() });
    }}>
      <div class="field"><label for="import-since">From</label>
        <input id="import-since" type="date" required value=${since} onInput=${(/** @type {any} */ e) => setSince(e.currentTarget.value)} /></div>
      <div class="field"><label for="import-until">To</label>
        <input id="import-until" type="date" required value=${until} onInput=${(/** @type {any} */ e) => setUntil(e.currentTarget.value)} /></div>
      <div class="field"><label for="import-limit">Record limit</label>
        <input id="import-limit" type="number" min="1" max="10000" required value=${limit} onInput=${(/** @type {any} */ e) => setLimit(e.currentTarget.value)} /></div>
      <div class="field"><label for="import-cap">Spending cap (USD)</label>
        <input id="import-cap" inputmode="decimal" required value=${cap} onInput=${(/** @type {any} */ e) => setCap(e.currentTarget.value)} /></div>
      <div class="controls"><button class="button filled small" type="submit" disabled=${imports.busy.value || running}>
        ${running ? "An import is running" : "Import"}</button></div>
    </form>`}
    ${imports.error.value && html`<p class="error" role="alert">${imports.error.value}</p>`}
    <p class="hint" role="status">${imports.notice.value ?? ""}</p>
    ${list.length > 0 &&
    html`<ul class="imports-list" aria-label="Imports">${list.map(
      (item) => html`<li key=${item.import_id} aria-busy=${imports.active(item) ? "true" : "false"}>
        <strong>${item.since} – ${item.until}</strong>
        <span class="summary">${imports.status(item)}</span>
        <span class="summary">${`${item.records_read} of at most ${item.record_limit} messages · ${item.people_created} new people · ${item.facts_noted} facts · ${item.beliefs_formed} beliefs · $${item.spent} of $${item.spending_cap}`}</span>
        ${writable && imports.active(item) &&
        html`<button class="button quiet small" disabled=${imports.busy.value} onClick=${() => imports.cancel(item.import_id)}>Cancel import</button>`}
      </li>`,
    )}</ul>`}
  </section>`;
}

export function PeopleView() {
  const list = people.list.value;
  const shown = people.shown.value;
  const tab = (/** @type {"" | "pinned" | "needs_review"} */ which, /** @type {string} */ label) =>
    html`<button role="tab" class="button quiet small" aria-selected=${people.collection.value === which ? "true" : "false"} onClick=${() => people.show(which)}>${label}</button>`;
  return html`<main class="main settings" aria-label="People">
    <div class="settings-inner">
      <${TitleBar} title="People" />
      ${!people.available.value && html`<p class="summary">People is not turned on on this server.</p>`}
      ${people.available.value &&
      html`<div role="tablist" aria-label="Collections" class="controls">${tab("", "Everyone")}${tab("pinned", "Pinned")}${tab("needs_review", "Needs review")}</div>`}
      ${people.error.value && html`<p class="error" role="alert">${people.error.value}</p>`}
      <p class="hint" role="status">${people.notice.value ?? ""}</p>
      <${Duplicates} />
      ${shown && html`<${Profile} key=${shown.person.person_id} profile=${shown} />`}
      ${people.available.value &&
      html`<ul class="notifications people" aria-label="People" aria-busy=${people.loading.value ? "true" : "false"}>${list.map(
        (person) => html`<li key=${person.person_id}>
          <button class="card notification" aria-current=${shown?.person.person_id === person.person_id ? "true" : "false"} onClick=${() => people.open(person.person_id)}>
            <strong>${person.name}</strong>
            <span class="summary">${[person.relationship, person.pinned ? "Pinned" : "", person.needs_review ? "Needs review" : ""].filter(Boolean).join(" · ") || "Reviewed"}</span>
          </button>
        </li>`,
      )}</ul>`}
      ${people.available.value && list.length === 0 && !people.loading.value && html`<p class="empty">No one here yet. Steward gathers the people you write with from your mail.</p>`}
      ${people.nextCursor.value &&
      html`<button class="button quiet small more" disabled=${people.loading.value} onClick=${() => people.load(true)}>Show more</button>`}
      ${people.available.value && html`<${ImportHistory} />`}
    </div>
  </main>`;
}
