// Email mode in the browser, against the stack's demo mailbox (steward-demo-mail, refreshed by
// the async worker): the priority inbox and its rows, Other mail, search and pages, the reading
// pane without remote content, the resizable inbox pane kept across mode switches, archive
// restored on failure and on an uncertain outcome then archived for real and moved back, and
// refresh on opening, every minute while visible, stopped when hidden and after three status
// failures.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, screenshot, PHONE } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Opens Email mode and waits for the inbox's first rows. @param {import("playwright-core").Page} page */
async function openEmail(page) {
  await page.getByRole("tab", { name: "Email" }).click();
  const rows = page.getByRole("list", { name: "Important conversations" }).locator(".mail-row");
  // The async worker fills the projection on its first update; the page refreshes on opening.
  await rows.first().waitFor({ timeout: 30_000 });
  return rows;
}

test("Email's modules stay out of the first load and are fetched when Email first shows", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  await page.getByRole("button", { name: "New chat" }).waitFor();
  const fetched = () =>
    page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .map((entry) => new URL(entry.name).pathname)
        .filter((path) => /^\/app\/(inbox|email|drafts|draft-view|learning|learning-view|subscriptions|subscriptions-view)(\.[0-9a-f]{16})?\.js$/.test(path))
        .map((path) => path.replace(/^\/app\/([a-z-]+).*$/, "$1"))
        .sort(),
    );
  assert.deepEqual(await fetched(), [], "Chat loads none of Email");
  await openEmail(page);
  assert.deepEqual(await fetched(), [
    "draft-view",
    "drafts",
    "email",
    "inbox",
    "learning",
    "learning-view",
    "subscriptions",
    "subscriptions-view",
  ]);
  assert.deepEqual(problems, []);
  await context.close();
});

test("Email that cannot be fetched offers a reload, which brings it", async () => {
  const { page, context, problems } = await newPage(browser);
  await page.route(/\/app\/inbox\.[0-9a-f]{16}\.js$/, (route) => route.abort());
  await connect(page);
  await page.getByRole("tab", { name: "Email" }).click();
  await page.getByRole("alert").filter({ hasText: "Email could not be loaded" }).waitFor();
  await page.unrouteAll();
  await page.getByRole("button", { name: "Reload" }).click();
  await openEmail(page);
  assert.deepEqual(problems.filter((problem) => !/inbox|Failed to fetch dynamically imported module|ERR_FAILED/.test(problem)), []);
  await context.close();
});

test("the priority inbox: five important rows, state lines, the reading pane, Other mail, search, pages", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await openEmail(page);
  assert.equal(await rows.count(), 5, "the initial request shows the five most important");
  const first = rows.first();
  assert.match(await first.innerText(), /Needs reply/);
  const line = first.locator(".state");
  assert.equal(await line.innerText(), "Needs reply");
  const colour = await line.evaluate((element) => getComputedStyle(element).color);
  const amber = await page.evaluate(() => {
    const probe = document.createElement("span");
    probe.style.color = "var(--amber-text)";
    document.body.append(probe);
    const value = getComputedStyle(probe).color;
    probe.remove();
    return value;
  });
  assert.equal(colour, amber, "a state needing the owner reads in amber");
  // Freshness and historical coverage of the account, and the junk filter the demo runs.
  const freshness = await page.locator(".freshness[data-account='demo']").innerText();
  assert.match(freshness, /^Updated .+ · mail since .+\d{4} · Junk filter on$/);
  // One account: no account label on the rows.
  assert.equal(await page.locator(".mail-row .account").count(), 0);

  await first.locator(".mail-open").click();
  const pane = page.getByRole("region", { name: "Conversation" });
  await pane.locator(".mail-text", { hasText: "Can you confirm the time" }).waitFor();
  assert.ok(await pane.getByRole("button", { name: "Archive in Gmail" }).isVisible());
  assert.ok(await pane.getByRole("button", { name: "Report spam" }).isVisible());
  await screenshot(page, "email-desktop-light");

  // Other mail: newsletters, whose HTML is text here and whose remote image is never loaded.
  await page.getByRole("button", { name: "Other mail" }).click();
  const other = page.getByRole("list", { name: "Other mail" }).locator(".mail-row");
  await other.filter({ hasText: "issue" }).first().waitFor();
  await other.filter({ hasText: "issue" }).first().locator(".mail-open").click();
  await pane.locator(".mail-text", { hasText: "five picks for you" }).waitFor();
  assert.equal(await pane.locator("img").count(), 0, "no remote content");
  // Pages: more rows on request.
  const before = await other.count();
  await page.getByRole("button", { name: "Show more" }).click();
  await page.waitForFunction((count) => document.querySelectorAll(".mail-row").length > count, before);

  // Search.
  await page.getByRole("searchbox", { name: "Search mail" }).fill("receipt");
  await page.getByRole("searchbox", { name: "Search mail" }).press("Enter");
  await page.waitForFunction(() => {
    const subjects = [...document.querySelectorAll(".mail-row .subject")].map((element) => element.textContent ?? "");
    return subjects.length > 0 && subjects.every((subject) => /receipt/i.test(subject));
  });
  assert.deepEqual(problems, []);
  await context.close();
});

test("the inbox pane resizes between 280 and 560 and keeps its width and selection across modes", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await openEmail(page);
  await rows.nth(1).locator(".mail-open").click();
  const divider = page.getByRole("separator", { name: "Resize the inbox" });
  await divider.focus();
  for (let step = 0; step < 20; step += 1) await divider.press("ArrowRight");
  assert.equal(await divider.getAttribute("aria-valuenow"), "560");
  const box = await page.locator(".inbox-pane").boundingBox();
  assert.equal(Math.round(box?.width ?? 0), 560);
  // Dragged past the minimum: 280.
  const handle = await divider.boundingBox();
  if (!handle) throw new Error("no divider");
  await page.mouse.move(handle.x + 3, handle.y + 200);
  await page.mouse.down();
  await page.mouse.move(40, handle.y + 200, { steps: 5 });
  await page.mouse.up();
  assert.equal(await divider.getAttribute("aria-valuenow"), "280");
  const selected = await page.locator(".mail-row.current .subject").innerText();
  await page.getByRole("tab", { name: "Chat" }).click();
  await page.getByRole("button", { name: "New chat" }).waitFor();
  await page.getByRole("tab", { name: "Email" }).click();
  assert.equal(await divider.getAttribute("aria-valuenow"), "280");
  assert.equal(await page.locator(".mail-row.current .subject").innerText(), selected);
  const reading = await page.getByRole("region", { name: "Conversation" }).boundingBox();
  assert.ok((reading?.width ?? 0) >= 360, "the reading pane keeps at least 360");
  assert.deepEqual(problems, []);
  await context.close();
});

test("on a phone the inbox and the conversation take turns; dark appearance", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE, colorScheme: "dark" });
  await connect(page);
  const rows = await openEmail(page);
  await screenshot(page, "email-phone-dark-inbox");
  await rows.first().locator(".mail-open").click();
  const pane = page.getByRole("region", { name: "Conversation" });
  await pane.locator(".mail-text", { hasText: "Can you confirm the time" }).waitFor();
  assert.equal(await page.locator(".inbox-pane").isVisible(), false);
  await screenshot(page, "email-phone-dark-reading");
  await pane.getByRole("button", { name: "Back to the inbox" }).click();
  await rows.first().waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});

/**
 * Answers the next archive request with an operation that settles as `state` without reaching
 * the server. @param {import("playwright-core").Page} page @param {string} state
 */
async function failNextArchive(page, state) {
  const id = crypto.randomUUID();
  const operation = (/** @type {string} */ now) => ({
    operation_id: id,
    kind: "archive",
    state: now,
    account_id: "demo",
    thread_id: null,
    error: now === "queued" ? null : state === "uncertain" ? "mail.outcome_unknown" : "mail.refused",
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
    reconciled_at: null,
  });
  await page.route("**/v1/email/threads/*/archive", (route) => route.fulfill({ status: 202, json: operation("queued") }), { times: 1 });
  // Settled a few seconds later, so that the row is seen gone before it comes back.
  await page.route(`**/v1/email/operations/${id}`, async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await route.fulfill({ status: 200, json: operation(state) });
  });
}

test("archive: the row leaves at once, comes back with an error on failure or uncertainty, and goes for real", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await openEmail(page);
  const first = rows.first();
  const subject = await first.locator(".subject").innerText();
  const second = await rows.nth(1).locator(".subject").innerText();
  await first.locator(".mail-open").click();
  const pane = page.getByRole("region", { name: "Conversation" });
  await pane.getByRole("heading", { name: subject }).waitFor();
  const row = page.locator(".mail-row", { hasText: subject });

  for (const [state, words] of [
    ["failed", /Archiving failed \(mail\.refused\)/],
    ["uncertain", /Archiving may not have happened \(mail\.outcome_unknown\); it will not be repeated/],
  ]) {
    await failNextArchive(page, /** @type {string} */ (state));
    await row.getByRole("checkbox", { name: `Archive in Gmail: ${subject}` }).click();
    // Gone at once, and the next conversation opened in its place.
    await row.waitFor({ state: "detached", timeout: 2_500 });
    await pane.getByRole("heading", { name: second }).waitFor();
    // Back, with the error.
    await row.getByRole("alert").filter({ hasText: words }).waitFor({ timeout: 10_000 });
    await screenshot(page, `email-desktop-archive-${state}`);
    await row.locator(".mail-open").click();
  }
  await page.unrouteAll();

  // For real: the row goes and stays gone; in Other mail it reads Handled and can move back.
  await row.getByRole("checkbox", { name: `Archive in Gmail: ${subject}` }).click();
  await row.waitFor({ state: "detached", timeout: 2_500 });
  await page.waitForResponse((response) => response.url().includes("/v1/email/threads?") && response.ok(), { timeout: 15_000 });
  assert.equal(await row.count(), 0);
  await page.getByRole("button", { name: "Other mail" }).click();
  await page.getByRole("searchbox", { name: "Search mail" }).fill(subject);
  await page.getByRole("searchbox", { name: "Search mail" }).press("Enter");
  const handled = page.locator(".mail-row", { hasText: subject });
  await handled.locator(".state", { hasText: "Handled" }).waitFor();
  assert.equal(await handled.getByRole("checkbox").getAttribute("aria-checked"), "true");
  await screenshot(page, "email-desktop-handled");
  await handled.locator(".mail-open").click();
  await pane.getByRole("button", { name: "Move to Inbox" }).click();
  await handled.waitFor({ state: "detached", timeout: 15_000 });
  await page.getByRole("button", { name: "Important" }).click();
  await page.locator(".mail-row", { hasText: subject }).waitFor({ timeout: 15_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

/** Makes the page hidden or visible as a switched-away tab is. @param {import("playwright-core").Page} page @param {boolean} hidden */
async function setHidden(page, hidden) {
  await page.evaluate((value) => {
    Object.defineProperty(document, "hidden", { configurable: true, get: () => value });
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (value ? "hidden" : "visible") });
    document.dispatchEvent(new Event("visibilitychange"));
  }, hidden);
}

test("refresh: on opening, every minute while visible, stopped when hidden or in Chat, and after three status failures", async () => {
  const { page, context, problems } = await newPage(browser);
  await page.clock.install();
  await connect(page);
  let refreshes = 0;
  let listings = 0;
  let statusReads = 0;
  // Listings answered since the last status read: the client arms the next refresh's timer
  // only after the refresh's listing has been read, so the clock may move only once it has.
  let listingsSettled = 0;
  page.on("request", (request) => {
    if (request.method() === "POST" && /\/v1\/email\/accounts\/[^/]+\/refresh$/.test(request.url())) refreshes += 1;
    if (request.method() === "GET" && request.url().includes("/v1/email/threads?")) listings += 1;
    if (request.method() === "GET" && request.url().includes("/v1/email/operations/")) {
      statusReads += 1;
      listingsSettled = 0;
    }
  });
  page.on("requestfinished", (request) => {
    if (request.method() === "GET" && request.url().includes("/v1/email/threads?")) listingsSettled += 1;
  });
  /** Waits (in real time) until `condition` holds. @param {() => boolean} condition @param {string} what */
  const until = async (condition, what) => {
    for (let tries = 0; tries < 300 && !condition(); tries += 1) await page.waitForTimeout(50);
    assert.ok(condition(), what);
  };
  const quietly = async (/** @type {number} */ ms) => {
    await page.clock.fastForward(ms);
    await page.waitForTimeout(300);
  };

  await openEmail(page);
  // Opening: one refresh, settled, then the listing read again.
  await until(() => refreshes === 1 && statusReads >= 1 && listingsSettled >= 1, "a refresh on opening, then the listing again");
  // The answer has arrived; the page has read it and armed the next refresh once the list is no
  // longer busy (both happen in the same turn of its event loop).
  await page.locator('ul.mail-rows[aria-busy="false"]').waitFor();
  const afterFirst = listings;
  await quietly(50_000);
  assert.equal(refreshes, 1, "not before a minute");
  await quietly(11_000);
  await until(() => refreshes === 2 && listings > afterFirst, "another a minute later");

  await page.waitForTimeout(300);
  await setHidden(page, true);
  await quietly(180_000);
  assert.equal(refreshes, 2, "none while hidden");
  await setHidden(page, false);
  await until(() => refreshes === 3, "one at once when shown again");

  await page.getByRole("tab", { name: "Chat" }).click();
  await quietly(180_000);
  assert.equal(refreshes, 3, "none in Chat");

  // Three status failures in a row stop refresh until the next active one.
  await page.route("**/v1/email/operations/*", (route) =>
    route.fulfill({ status: 503, json: { code: "not_ready", status: 503, title: "Service not ready" } }),
  );
  const readsBefore = statusReads;
  await page.getByRole("tab", { name: "Email" }).click();
  await until(() => refreshes === 4, "a refresh when Email shows again");
  for (let tick = 0; tick < 40 && statusReads < readsBefore + 3; tick += 1) await quietly(4_000);
  await page.getByText("Email could not be refreshed").waitFor();
  assert.equal(statusReads, readsBefore + 3);
  await quietly(180_000);
  assert.equal(refreshes, 4, "stopped after three failures");
  assert.equal(statusReads, readsBefore + 3, "no fourth status read");
  await page.unrouteAll();
  await setHidden(page, true);
  await setHidden(page, false);
  await until(() => refreshes === 5, "the next active refresh starts again");
  await page.getByText("Email could not be refreshed").waitFor({ state: "detached" });
  assert.deepEqual(problems.filter((problem) => !problem.includes("503")), []);
  await context.close();
});

test("a server without Email shows it as unavailable while Chat works", async () => {
  const { page, context, problems } = await newPage(browser);
  await page.route("**/v1/email/**", (route) =>
    route.fulfill({ status: 404, json: { code: "not_found", status: 404, title: "Not found" } }),
  );
  await connect(page);
  await page.getByRole("tab", { name: "Email" }).click();
  await page.getByText("Email is not available").waitFor();
  await page.getByRole("tab", { name: "Chat" }).click();
  await page.getByRole("button", { name: "New chat" }).waitFor();
  assert.deepEqual(problems.filter((problem) => !problem.includes("404")), []);
  await context.close();
});
