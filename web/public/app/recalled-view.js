// Under an answer in a conversation: which memories it used, each with `Not relevant here` for
// that conversation. Kept out of the first page's modules with Memory's (see shell.js): fetched
// once connected when the token may read memories, the toggle shows once it is here.
import { h } from "../vendor/preact.mjs";
import { useState } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";
import { holds } from "./api.js";
import * as chat from "./chat.js";
import * as memory from "./memory.js";

const html = htm.bind(h);

/** Whether the page offers Memory (the toggle shows only then). */
export const offered = memory.offered;

/** Which memories an answer used: read when first opened, each with `Not relevant here` for this
 * conversation. @param {{runId: string}} props */
export function RecalledToggle({ runId }) {
  const [open, setOpen] = useState(false);
  /** The memories marked not relevant here from this answer. */
  const [excluded, setExcluded] = useState(/** @type {string[]} */ ([]));
  const held = memory.recalled.value.get(runId);
  const session = chat.selectedId.value;
  return html`<button class="button quiet small" aria-expanded=${open ? "true" : "false"} onClick=${() => {
      if (!open && held === undefined) memory.loadRecalled(runId);
      setOpen(!open);
    }}>Memories used</button>
    ${open &&
    html`<div class="recalled" role="region" aria-label="Memories this answer used">
      ${held === undefined
        ? html`<p class="summary">Loading…</p>`
        : held === "failed"
          ? html`<p class="error">The memories this answer used could not be read.</p>`
          : held.length === 0
            ? html`<p class="summary">This answer used no memories.</p>`
            : html`<ul>${held.map(
                (belief) => html`<li key=${belief.memory_id}>${belief.statement}
                  ${excluded.includes(belief.memory_id)
                    ? html` <span class="summary">Not used in this conversation again</span>`
                    : holds("memory.write") &&
                      session &&
                      html` <button class="button quiet small" disabled=${memory.busy.value} onClick=${async () => {
                        if (await memory.review(belief.memory_id, "not_relevant_here", session)) {
                          setExcluded([...excluded, belief.memory_id]);
                        }
                      }}>Not relevant here</button>`}</li>`,
              )}</ul>`}
    </div>`}`;
}
