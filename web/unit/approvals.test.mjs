// Unit tests of the approval proof (web/public/app/approvals.js) in Node, on the vectors the
// terminal client's SDK checks too (tests/vectors/approvals.json): the same approvals must be
// proven or refused by both.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { displayOf, proveApproval, refuseTruncated } from "../public/app/approvals.js";

const vectors = JSON.parse(readFileSync(new URL("../../tests/vectors/approvals.json", import.meta.url), "utf8"));

test("the vectors cover proven and refused approvals", () => {
  const verdicts = new Set(vectors.cases.map((/** @type {{verdict: string}} */ c) => c.verdict));
  assert.deepEqual([...verdicts].sort(), ["proven", "refused"]);
  assert.ok(vectors.cases.length >= 10);
});

for (const vector of vectors.cases) {
  test(`${vector.verdict}: ${vector.name}`, async () => {
    const { whole, proof } = await proveApproval({
      arguments: vector.arguments,
      digests: vector.digests,
      proposals: vector.proposals,
    });
    if (vector.verdict === "proven") {
      assert.equal(proof, "proven");
      assert.deepEqual(whole, vector.whole, "the whole of what is approved is shown");
      // The page displays the whole value exactly as the server did.
      const { shown, digests } = await displayOf(vector.whole);
      assert.deepEqual(shown, vector.arguments);
      assert.deepEqual(digests, vector.digests);
    } else {
      assert.notEqual(proof, "proven");
      assert.equal(whole, null);
      assert.match(proof, /cannot be approved|cannot be shown whole/);
    }
  });
}

test("a structural refusal names the pointer", () => {
  const cut = vectors.cases.find((/** @type {{name: string}} */ c) => c.name === "a cut string without its digest");
  assert.match(String(refuseTruncated(cut)), /\/body/);
});
