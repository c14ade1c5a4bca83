// Subscriptions in the browser, against the demo mailbox (newsletters signed with keys made at
// start, verified by the async worker's census through the demo's DNS server) and the demo's
// local one-click endpoint: every kind of row, Checking… rows not selectable, Select all, the
// selection cap, the one confirmation and its words, a real unsubscribe settled by polling, a
// failure restoring the row with its choices, the reading pane's Unsubscribe, and axe.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, screenshot, violations, PHONE } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Opens Email, then Subscriptions, once the census has verified the demo's signed senders. @param {import("playwright-core").Page} page */
async function openSubscriptions(page) {
  await page.getByRole("tab", { name: "Email" }).click();
  await page.getByRole("list", { name: "Important conversations" }).locator(".mail-row").first().waitFor({ timeout: 30_000 });
  const entry = page.getByRole("button", { name: "Subscriptions" });
  await entry.click();
  const rows = page.getByRole("list", { name: "Senders" }).locator(".subscription-row");
  await rows.filter({ hasText: "weeklyloop.example" }).filter({ hasText: "One-click request" }).waitFor({ timeout: 30_000 });
  return rows;
}

/** @param {import("playwright-core").Locator} rows @param {string} address */
function row(rows, address) {
  return rows.filter({ hasText: address });
}

test("every kind of sender shows in server order, and Checking… rows cannot be chosen", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await openSubscriptions(page);
  assert.equal(await rows.count(), 6);
  // Server order: newest arrival first.
  const senders = await rows.locator(".from").allTextContents();
  assert.equal(senders.length, 6);
  const oneClick = row(rows, "news@weeklyloop.example");
  assert.match(await oneClick.textContent() ?? "", /One-click request to weeklyloop\.example/);
  assert.match(await oneClick.textContent() ?? "", /32 conversations/);
  const mailto = row(rows, "digest@rustdigest.example");
  assert.match(await mailto.textContent() ?? "", /Sends an email to leave@rustdigest\.example/);
  const page_only = row(rows, "hello@gardennotes.example");
  assert.match(await page_only.textContent() ?? "", /Offers only a web page/);
  assert.ok(await page_only.getByRole("checkbox").isDisabled(), "a sender offering nothing cannot be chosen");
  const checking = row(rows, "club@bookclub.example");
  assert.match(await checking.textContent() ?? "", /Checking…/);
  assert.ok(await checking.getByRole("checkbox").isDisabled(), "an unverified sender cannot be chosen");
  await checking.getByRole("button", { name: "Keep" }).waitFor();
  await checking.getByRole("button", { name: "Report spam" }).waitFor();
  // No unsubscribe URI anywhere in the page.
  const text = await page.getByRole("region", { name: "Subscriptions" }).textContent();
  assert.doesNotMatch(text ?? "", /https:\/\/|\/unsubscribe\/|mailto:/);

  // Select all takes the eligible senders that offer something, and nothing else.
  await page.getByRole("button", { name: "Select all" }).click();
  const chosen = await rows.locator(".choose:checked").count();
  assert.equal(chosen, 4, "four senders offer one-click or mailto");
  assert.ok(!(await checking.getByRole("checkbox").isChecked()));
  await page.getByRole("button", { name: "Unsubscribe 4" }).waitFor();
  await screenshot(page, "subscriptions-desktop");
  assert.deepEqual(await violations(page), [], "the Subscriptions view");
  await page.getByRole("button", { name: "Clear" }).click();
  assert.deepEqual(problems, []);
  await context.close();
});

test("the Subscriptions view reads on a phone in the dark appearance", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE, colorScheme: "dark" });
  await connect(page);
  const rows = await openSubscriptions(page);
  await row(rows, "news@weeklyloop.example").getByRole("checkbox").check();
  await screenshot(page, "subscriptions-phone-dark");
  assert.deepEqual(await violations(page), [], "the Subscriptions view on a phone, dark");
  await page.getByRole("button", { name: "Back to the inbox" }).click();
  await page.getByRole("list", { name: "Important conversations" }).waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});

test("the confirmation names every sender and what is sent, says it cannot be undone, and archives nothing by default", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await openSubscriptions(page);
  await row(rows, "news@weeklyloop.example").getByRole("checkbox").check();
  await row(rows, "digest@rustdigest.example").getByRole("checkbox").check();
  await page.getByRole("button", { name: "Unsubscribe 2" }).click();
  const dialog = page.getByRole("alertdialog", { name: "Unsubscribe from 2 senders?" });
  await dialog.waitFor();
  const words = (await dialog.textContent()) ?? "";
  assert.match(words, /news@weeklyloop\.example.*One-click request to weeklyloop\.example/s);
  assert.match(words, /digest@rustdigest\.example.*Sends an email to leave@rustdigest\.example/s);
  assert.match(words, /This cannot be undone/);
  const archive = dialog.getByRole("checkbox", { name: "Also archive existing mail from these senders" });
  assert.equal(await archive.isChecked(), false);
  assert.deepEqual(await violations(page), [], "the confirmation");
  await screenshot(page, "subscriptions-confirmation");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await dialog.waitFor({ state: "detached" });
  assert.deepEqual(problems, []);
  await context.close();
});

test("selection stops at 25 senders", async () => {
  const { page, context } = await newPage(browser);
  // Thirty eligible senders, as a large mailbox would list them (the demo has six).
  await page.route(/\/v1\/email\/subscriptions\?/, (route) =>
    route.fulfill({
      json: {
        next_cursor: null,
        subscriptions: Array.from({ length: 30 }, (_, index) => ({
          subscription_id: `00000000-0000-4000-8000-${String(index).padStart(12, "0")}`,
          account_id: "demo",
          sender: { name: `List ${index}`, address: `list${index}@lists.example` },
          conversations: 3,
          last_arrival_at: new Date(Date.now() - index * 60_000).toISOString(),
          mechanism: "one_click",
          destination: `lists${index}.example`,
          state: "eligible",
          protected: false,
          evidence_digest: "a".repeat(64),
          revision: 1,
          last_error: null,
          unsubscribed_at: null,
        })),
      },
    }),
  );
  await connect(page);
  await page.getByRole("tab", { name: "Email" }).click();
  await page.getByRole("button", { name: "Subscriptions" }).click();
  const rows = page.getByRole("list", { name: "Senders" }).locator(".subscription-row");
  await rows.nth(29).waitFor();
  await page.getByRole("button", { name: "Select all" }).click();
  assert.equal(await rows.locator(".choose:checked").count(), 25);
  await page.getByRole("status").filter({ hasText: "at most 25 senders" }).waitFor();
  assert.ok(await rows.nth(27).getByRole("checkbox").isDisabled(), "a 26th cannot be chosen");
  await rows.nth(27).getByRole("checkbox").click({ force: true });
  assert.equal(await rows.locator(".choose:checked").count(), 25, "a 26th cannot be added");
  // One less, and another can be chosen again.
  await rows.nth(0).getByRole("checkbox").uncheck();
  await rows.nth(27).getByRole("checkbox").check();
  assert.equal(await rows.locator(".choose:checked").count(), 25);
  await page.getByRole("button", { name: "Unsubscribe 25" }).waitFor();
  await context.close();
});

test("a confirmed unsubscribe runs once, reads Unsubscribing…, and settles quietly", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await openSubscriptions(page);
  const events = row(rows, "events@cityevents.example");
  let commands = 0;
  /** @type {any} */
  let sent = null;
  page.on("request", (request) => {
    if (request.method() === "POST" && request.url().endsWith("/v1/email/subscriptions/unsubscribe")) {
      commands += 1;
      sent = request.postDataJSON();
    }
  });
  await events.getByRole("checkbox").check();
  await page.getByRole("button", { name: "Unsubscribe 1" }).click();
  await page.getByRole("alertdialog").getByRole("button", { name: "Unsubscribe" }).click();
  await events.filter({ hasText: "Unsubscribed" }).waitFor({ timeout: 30_000 });
  assert.equal(commands, 1, "exactly one command");
  assert.deepEqual(Object.keys(sent).sort(), ["also_archive", "targets"]);
  assert.equal(sent.also_archive, false);
  assert.deepEqual(Object.keys(sent.targets[0]).sort(), ["evidence_digest", "expected_revision", "subscription_id"]);
  assert.equal(await events.getByRole("alert").count(), 0, "success is quiet");
  assert.ok(await events.getByRole("checkbox").isDisabled());
  assert.deepEqual(problems, []);
  await context.close();
});

test("a failed unsubscribe restores the row with Try again, Report spam and Keep", async () => {
  const { page, context } = await newPage(browser);
  await page.route("**/v1/email/subscriptions/unsubscribe", (route) =>
    route.fulfill({
      status: 503,
      contentType: "application/problem+json",
      body: JSON.stringify({ type: "about:blank", title: "Service unavailable", status: 503, code: "service_unavailable" }),
    }),
  );
  await connect(page);
  const rows = await openSubscriptions(page);
  const deals = row(rows, "deals@traveldeals.example");
  await deals.getByRole("button", { name: "Unsubscribe" }).click();
  const dialog = page.getByRole("alertdialog", { name: "Unsubscribe from this sender?" });
  await dialog.getByRole("button", { name: "Unsubscribe" }).click();
  await deals.getByRole("alert").filter({ hasText: "Unsubscribe was not sent" }).waitFor();
  await deals.getByRole("button", { name: "Try again" }).waitFor();
  await deals.getByRole("button", { name: "Report spam" }).waitFor();
  await deals.getByRole("button", { name: "Keep" }).waitFor();
  assert.match((await deals.textContent()) ?? "", /Subscribed/, "the row is back as it was");
  await screenshot(page, "subscriptions-failure");
  await context.close();
});

test("a newsletter in the reading pane offers the same Unsubscribe with a one-row confirmation, on a phone too", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE });
  await connect(page);
  await page.getByRole("tab", { name: "Email" }).click();
  await page.getByRole("list", { name: "Important conversations" }).locator(".mail-row").first().waitFor({ timeout: 30_000 });
  await page.getByRole("button", { name: "Other mail" }).click();
  // Found by its subject, wherever earlier tests left it (Other mail holds archived mail too).
  const search = page.getByRole("searchbox", { name: "Search mail" });
  await search.fill("Crates of the week");
  await search.press("Enter");
  const digest = page.getByRole("list", { name: "Other mail" }).locator(".mail-row").filter({ hasText: "Rust Digest" }).first();
  await digest.waitFor({ timeout: 30_000 });
  await digest.locator(".mail-open").click();
  const pane = page.getByRole("region", { name: "Conversation" });
  await pane.getByText("Sends an email to leave@rustdigest.example").waitFor();
  await pane.getByRole("button", { name: "Unsubscribe" }).click();
  const dialog = pane.getByRole("alertdialog", { name: "Unsubscribe from this sender?" });
  await dialog.waitFor();
  assert.match((await dialog.textContent()) ?? "", /This cannot be undone/);
  await screenshot(page, "subscriptions-thread-phone");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  assert.deepEqual(problems, []);
  await context.close();
});
