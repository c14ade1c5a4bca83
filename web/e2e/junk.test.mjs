// The junk first pass in the browser, against the demo mailbox with the demo owner's reviewed
// packet (`filter` mode): spam kept out of Important reads `Suspected spam` with the filter's
// explanation in Other mail; its detail offers Report spam and Not spam; Not spam clears the
// flag (no mailbox write) and the explanation goes with it; axe on the detail.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, screenshot, violations } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Opens Email's Other mail. @param {import("playwright-core").Page} page */
async function otherMail(page) {
  await page.getByRole("tab", { name: "Email" }).click();
  await page.getByRole("list", { name: "Important conversations" }).locator(".mail-row").first().waitFor({ timeout: 30_000 });
  await page.getByRole("button", { name: "Other mail" }).click();
  return page.getByRole("list", { name: "Other mail" }).locator(".mail-row");
}

test("filtered spam reads Suspected spam with its explanation, and Not spam clears it", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await otherMail(page);
  // The account says the filter is on.
  await page.locator(".freshness").filter({ hasText: "Junk filter on" }).waitFor();
  await page.getByRole("searchbox", { name: "Search mail" }).fill("Wallet locked");
  await page.getByRole("searchbox", { name: "Search mail" }).press("Enter");
  const spam = rows.filter({ hasText: "Wallet locked" });
  await spam.waitFor({ timeout: 30_000 });
  assert.match(await spam.textContent() ?? "", /Suspected spam/);
  assert.match(await spam.textContent() ?? "", /Kept out of Important by the junk filter: it reads as spam \(99\.9% sure\)/);

  await spam.locator(".mail-open").click();
  const pane = page.getByRole("region", { name: "Conversation" });
  await pane.getByRole("heading", { name: "Wallet locked" }).waitFor();
  assert.match(await pane.locator(".mail-tags").textContent() ?? "", /Suspected spam/);
  assert.match(await pane.locator(".reason.junk").textContent() ?? "", /Mark it Important or Not spam to bring it back/);
  await pane.getByRole("button", { name: "Report spam" }).waitFor();
  const notSpam = pane.getByRole("button", { name: "Not spam" });
  await notSpam.waitFor();
  await screenshot(page, "junk-suspected-spam");
  assert.deepEqual(await violations(page), [], "a filtered conversation's detail");

  await notSpam.click();
  await pane.locator(".reason.junk").waitFor({ state: "detached" });
  assert.doesNotMatch(await pane.locator(".mail-tags").textContent() ?? "", /Suspected spam/);
  assert.equal(await pane.getByRole("button", { name: "Not spam" }).count(), 0);
  assert.doesNotMatch(await spam.textContent() ?? "", /Suspected spam/, "the row follows");
  // What the server says now: the flag is cleared and nothing was written to the mailbox.
  const id = await spam.getAttribute("data-thread");
  const thread = await (await page.request.get(`/v1/email/threads/${id}`)).json();
  assert.equal(thread.suspected_spam, false);
  assert.equal(thread.junk, null);
  assert.equal(thread.place, "inbox", "still in the provider's Inbox: no label changed");
  assert.deepEqual(problems, []);
  await context.close();
});

test("bulk mail kept out says so, and is never marked as spam", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const rows = await otherMail(page);
  const letter = rows.filter({ hasText: "issue" }).first();
  await letter.waitFor({ timeout: 30_000 });
  assert.match(await letter.textContent() ?? "", /it reads as bulk mail \(99\.5% sure\)/);
  assert.doesNotMatch(await letter.textContent() ?? "", /Suspected spam/);
  // The account says which mode is in force.
  const accounts = await (await page.request.get("/v1/email/accounts")).json();
  assert.deepEqual(accounts.accounts[0].junk_filter, { mode: "filter", in_force: "filter", reason: null });
  assert.deepEqual(problems, []);
  await context.close();
});
