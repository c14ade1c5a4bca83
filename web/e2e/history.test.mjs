// The sidebar's history against the server's index: a row the index stops listing leaves only
// once its own read confirms the server deleted it (and that prune clears the artifact cache),
// a focused approval card survives, and a server without the history routes gets an explicit
// upgrade message rather than a generic error.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { launch, newPage, connect, send, screenshot } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const CSRF = { "X-Steward-CSRF": "1" };

/** A 1×1 PNG. */
const PIXEL = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPj/HwADBwIAMCbHYQAAAABJRU5ErkJggg==", "base64");

/** A conversation made with the page's own session. @param {import("playwright-core").Page} page @param {string} title */
async function conversation(page, title) {
  const response = await page.request.post("/v1/sessions", { headers: CSRF, data: { agent_id: "default", metadata: { title } } });
  assert.equal(response.status(), 201);
  return /** @type {string} */ ((await response.json()).session_id);
}

/** Sends a message of one picture into `session`. @param {import("playwright-core").Page} page @param {string} session */
async function picture(page, session) {
  const upload = await page.request.post(`/v1/sessions/${session}/artifacts?filename=dot.png`, {
    headers: { ...CSRF, "Content-Type": "image/png" },
    data: PIXEL,
  });
  assert.equal(upload.status(), 201);
  const artifact = (await upload.json()).artifact_id;
  const message = await page.request.post(`/v1/sessions/${session}/messages`, {
    headers: { ...CSRF, "Idempotency-Key": randomUUID() },
    data: { text: "A dot", attachments: [artifact] },
  });
  assert.equal(message.status(), 202, await message.text());
}

/**
 * Makes the index leave out `hidden` sessions (the server still has them), counting the point
 * reads of each. @param {import("playwright-core").Page} page @param {Set<string>} hidden
 */
async function hideFromIndex(page, hidden) {
  /** @type {Map<string, number>} */
  const reads = new Map();
  page.on("request", (request) => {
    const match = /\/v1\/sessions\/([0-9a-f-]{36})$/.exec(new URL(request.url()).pathname);
    if (request.method() === "GET" && match) reads.set(match[1], (reads.get(match[1]) ?? 0) + 1);
  });
  await page.route(/\/v1\/sessions\?/, async (route) => {
    const response = await route.fetch();
    const page = await response.json();
    page.sessions = page.sessions.filter((/** @type {{session_id: string}} */ row) => !hidden.has(row.session_id));
    await route.fulfill({ response, json: page });
  });
  return reads;
}

/** Has the page read the index again now (as it does on focus). @param {import("playwright-core").Page} page */
async function reconcileNow(page) {
  const read = page.waitForResponse((response) => /\/v1\/sessions\?/.test(response.url()));
  await page.evaluate(() => window.dispatchEvent(new Event("focus")));
  await read;
}

test("a row the index drops stays while the server has it, and goes once its read confirms the delete, clearing the artifact cache", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const stamp = Date.now().toString(36);
  const kept = await conversation(page, `Still here ${stamp}`);
  const gone = await conversation(page, `Deleted elsewhere ${stamp}`);
  const pictured = await conversation(page, `A picture ${stamp}`);
  await picture(page, pictured);
  await page.reload();
  const history = page.getByRole("region", { name: "History" });
  for (const title of [`Still here ${stamp}`, `Deleted elsewhere ${stamp}`, `A picture ${stamp}`]) {
    await history.getByRole("button", { name: title, exact: true }).waitFor();
  }

  // The picture's bytes are cached: opened again, they are revalidated (If-None-Match, 304).
  /** @type {Array<string | undefined>} */
  const conditional = [];
  page.on("request", (request) => {
    if (request.url().endsWith("/content")) conditional.push(request.headers()["if-none-match"]);
  });
  const open = async () => {
    await history.getByRole("button", { name: `A picture ${stamp}`, exact: true }).click();
    await page.locator(".message.user").getByRole("img", { name: "dot.png" }).waitFor({ timeout: 20_000 });
  };
  // The preview shows once its bytes have been answered for, so each open has asked by then.
  await open();
  await page.getByRole("button", { name: "New chat" }).click();
  await open();
  assert.equal(conditional.length, 2);
  assert.ok(conditional[1], "the cached bytes were revalidated");

  // The index stops listing both; one is still on the server, the other was deleted elsewhere.
  const reads = await hideFromIndex(page, new Set([kept, gone]));
  const deleted = await page.request.delete(`/v1/sessions/${gone}`, { headers: CSRF });
  assert.equal(deleted.status(), 204);
  await reconcileNow(page);
  await history.getByRole("button", { name: `Deleted elsewhere ${stamp}`, exact: true }).waitFor({ state: "detached" });
  assert.ok((reads.get(gone) ?? 0) >= 1, "the deleted row was read before it left");
  assert.ok((reads.get(kept) ?? 0) >= 1, "the kept row was read");
  await page.waitForTimeout(300);
  assert.equal(await history.getByRole("button", { name: `Still here ${stamp}`, exact: true }).count(), 1, "a row the server still has stays");

  // The confirmed prune cleared the cache: the picture is fetched whole again.
  await page.getByRole("button", { name: "New chat" }).click();
  await open();
  assert.equal(conditional.length, 3);
  assert.equal(conditional[2], undefined, "no cached bytes left to revalidate");
  // The deleted conversation's own read answered 404, which the browser logs.
  assert.deepEqual(problems.filter((problem) => !problem.includes("404")), []);
  await context.close();
});

test("a focused approval card survives its conversation leaving the index", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const stamp = Date.now().toString(36);
  const id = await conversation(page, `Plants ${stamp}`);
  await page.reload();
  await page.getByRole("region", { name: "History" }).getByRole("button", { name: `Plants ${stamp}`, exact: true }).click();
  await send(page, '/tool notes.add {"text": "Water the plants"}');
  const card = page.getByRole("region", { name: "Approval for notes.add" });
  const approve = card.getByRole("button", { name: "Approve once" });
  await approve.waitFor({ timeout: 20_000 });
  await approve.focus();
  const reads = await hideFromIndex(page, new Set([id]));
  await reconcileNow(page);
  await page.waitForTimeout(300);
  assert.ok((reads.get(id) ?? 0) >= 1, "the dropped row was read");
  assert.ok(await approve.isVisible(), "the card is still shown");
  assert.equal(await approve.evaluate((button) => button === document.activeElement), true, "and still focused");
  assert.deepEqual(problems, []);
  await context.close();
});

test("a server without the history routes gets an explicit upgrade message", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const stamp = Date.now().toString(36);
  await conversation(page, `Old server ${stamp}`);
  await page.reload();
  const history = page.getByRole("region", { name: "History" });
  const row = history.getByRole("button", { name: `Old server ${stamp}`, exact: true });
  await row.waitFor();
  const notAllowed = (/** @type {import("playwright-core").Route} */ route) =>
    route.fulfill({
      status: 405,
      contentType: "application/problem+json",
      body: JSON.stringify({ type: "urn:steward:problem:method_not_allowed", title: "Method not allowed", status: 405, code: "method_not_allowed" }),
    });
  // Deleting: the route answers 405, and the row stays with the message.
  await page.route(/\/v1\/sessions\/[0-9a-f-]{36}$/, (route) => (route.request().method() === "DELETE" ? notAllowed(route) : route.fallback()));
  await history.getByRole("button", { name: `Actions for Old server ${stamp}` }).click();
  await page.getByRole("button", { name: "Delete conversation…" }).click();
  await page.getByRole("alertdialog").getByRole("button", { name: "Delete" }).click();
  const upgrade = /older Steward without conversation history: upgrade it/;
  await history.getByRole("alert").filter({ hasText: upgrade }).waitFor();
  assert.equal(await row.count(), 1, "nothing was deleted");

  // Listing: the index answers 405 too.
  await page.route(/\/v1\/sessions\?/, notAllowed);
  await reconcileNow(page);
  await page.getByRole("complementary").getByRole("alert").filter({ hasText: upgrade }).first().waitFor();
  await screenshot(page, "history-upgrade-message");
  assert.deepEqual(problems.filter((problem) => !problem.includes("405")), []);
  await context.close();
});
