// Tool activity bundles (client contract, Runtime 9): adjacent calls of one tool collapse into
// one count-labelled bundle showing the highest risk among them. A bundle takes successful
// calls; a fetch or search tool's bundle also takes its failed ones (rejected, unavailable or
// failed). Anything else breaks a bundle: a message, another tool, an approval or question, a
// queued or running call, a denial, an uncertain outcome. The same rule, on the same vectors
// (tests/vectors/bundles.json), is the SDK's (crates/client/src/bundles.rs).

const RISKS = ["low", "medium", "high"];

/** Whether `tool` fetches or searches (its last name part says so). @param {string} tool */
export function fetchesOrSearches(tool) {
  const last = tool.slice(tool.lastIndexOf(".") + 1);
  return last.includes("fetch") || last.includes("search");
}

/**
 * Whether a call in `status` may be part of a bundle of `tool`.
 * @param {string} tool @param {string} status
 */
function bundleable(tool, status) {
  return status === "succeeded" || (status === "failed" && fetchesOrSearches(tool));
}

/** The higher of two risks (either may be missing). @param {string | null | undefined} a @param {string | null | undefined} b */
function higher(a, b) {
  const rank = (/** @type {string | null | undefined} */ risk) => (risk ? RISKS.indexOf(risk) : -1);
  return rank(b) > rank(a) ? (b ?? null) : (a ?? null);
}

/**
 * @typedef {{kind: "bundle", key: string, tool: string, count: number, failed: number, risk: string | null}} Bundle
 */

/**
 * The items as shown: runs of two or more bundleable calls of one tool become one bundle.
 * @template {{kind: string, key?: string, tool?: string, status?: string, risk?: string | null}} T
 * @param {T[]} items
 * @returns {Array<T | Bundle>}
 */
export function bundle(items) {
  /** @type {Array<T | Bundle>} */
  const out = [];
  for (const item of items) {
    const previous = out[out.length - 1];
    if (item.kind === "tool" && item.tool && item.status && bundleable(item.tool, item.status) && previous) {
      const failed = item.status === "failed" ? 1 : 0;
      if (
        previous.kind === "tool" &&
        "status" in previous &&
        previous.tool === item.tool &&
        previous.status &&
        bundleable(item.tool, previous.status)
      ) {
        out[out.length - 1] = {
          kind: "bundle",
          key: previous.key ?? "",
          tool: item.tool,
          count: 2,
          failed: (previous.status === "failed" ? 1 : 0) + failed,
          risk: higher(previous.risk, item.risk),
        };
        continue;
      }
      if (previous.kind === "bundle" && previous.tool === item.tool && "count" in previous) {
        out[out.length - 1] = {
          ...previous,
          count: previous.count + 1,
          failed: previous.failed + failed,
          risk: higher(previous.risk, item.risk),
        };
        continue;
      }
    }
    out.push(item);
  }
  return out;
}

/** A bundle's label: `notes.list × 3 · done · low risk`. @param {Bundle} bundled */
export function bundleLabel(bundled) {
  const done = bundled.failed === 0 ? "done" : `${bundled.count - bundled.failed} done, ${bundled.failed} failed`;
  return `${bundled.tool} × ${bundled.count} · ${done}${bundled.risk ? ` · ${bundled.risk} risk` : ""}`;
}
