// Unit tests of the tool activity bundles (web/public/app/bundles.js) in Node, on the vectors the
// terminal client's SDK checks too (tests/vectors/bundles.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { bundle, bundleLabel } from "../public/app/bundles.js";

const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/bundles.json", import.meta.url), "utf8"));

/** What a client shows for an item, in the vectors' words. @param {any} item */
function shown(item) {
  if (item.kind === "bundle") return `bundle ${item.tool} x${item.count} ${item.failed} failed ${item.risk ?? "-"}`;
  if (item.kind === "tool") return `tool ${item.tool} ${item.status}`;
  return item.kind;
}

test("the vectors cover every rule", () => {
  assert.ok(vectors.cases.length >= 8);
});

for (const vector of vectors.cases) {
  test(vector.name, () => {
    const items = vector.items.map((/** @type {any} */ item, /** @type {number} */ index) => ({ ...item, key: `k${index}` }));
    assert.deepEqual(bundle(items).map(shown), vector.shown);
  });
}

test("a bundle's label says how many, how many failed and the highest risk", () => {
  assert.equal(bundleLabel({ kind: "bundle", key: "k", tool: "notes.add", count: 3, failed: 0, risk: "high" }), "notes.add × 3 · done · high risk");
  assert.equal(
    bundleLabel({ kind: "bundle", key: "k", tool: "mcp.mail_read.search_threads", count: 4, failed: 1, risk: null }),
    "mcp.mail_read.search_threads × 4 · 3 done, 1 failed",
  );
});
