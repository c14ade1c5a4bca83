// Calls in the browser, with calling on (the stack's reviewed call configuration; no call
// worker runs here, so an approved call stays waiting to be placed): the brief's approval card
// shows the whole brief and the call settings revision it is pinned to; Calls lists the call,
// shows its brief, cancels it before it is placed and deletes it after a confirmation; the view
// reads on a phone in the dark appearance, and axe finds nothing serious.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, send, screenshot, violations, PHONE } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const BRIEF = {
  to: "+15557654321",
  purpose: "Confirm the delivery window for the oak table.",
  may_say: "Alex can take the delivery on Tuesday between 9 and 12, and the side door is open.",
  voicemail_message: "Hi, this is Steward for Alex Rivera about the oak table; please call back.",
};

test("a call's brief is approved as a whole, pinned to the call settings, then cancelled and deleted in Calls", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  await send(page, `/tool calls.place ${JSON.stringify(BRIEF)}`);
  const card = page.locator("section.card.attention", { hasText: "calls.place" });
  await card.waitFor({ timeout: 20_000 });
  const brief = card.getByRole("definition").filter({ hasText: /./ });
  const shown = (await card.locator("dl.call-brief").textContent()) ?? "";
  for (const words of [BRIEF.to, BRIEF.purpose, BRIEF.may_say, BRIEF.voicemail_message]) {
    assert.ok(shown.includes(words), `the card shows ${words}: ${shown}`);
  }
  const revision = (await card.locator("code.revision").textContent()) ?? "";
  assert.match(revision, /^[0-9a-f]{64}$/, "the whole revision the approval is pinned to");
  assert.ok((await brief.count()) >= 5);
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "calls-approval");
  await card.getByRole("button", { name: "Approve once" }).click();
  await page.locator(".message.assistant", { hasText: "calls.place returned" }).waitFor({ timeout: 20_000 });

  await page.getByRole("button", { name: "Calls", exact: true }).click();
  const view = page.getByRole("main", { name: "Calls" });
  const entry = view.getByRole("button", { name: /Call to \+15557654321.*Approved, waiting to be placed/ });
  await entry.waitFor({ timeout: 10_000 });
  await entry.click();
  const detail = view.getByRole("region", { name: "Call to +15557654321" });
  await detail.waitFor();
  assert.equal(await detail.locator("code.revision").textContent(), revision);
  assert.ok(((await detail.textContent()) ?? "").includes(BRIEF.may_say));
  await screenshot(page, "calls-detail");
  await detail.getByRole("button", { name: "Cancel call" }).click();
  await detail.getByText(/^Cancelled/).waitFor({ timeout: 10_000 });

  await detail.getByRole("button", { name: "Delete…" }).click();
  const confirm = detail.getByRole("alertdialog", { name: "Delete this call?" });
  await confirm.waitFor();
  assert.match((await confirm.textContent()) ?? "", /cannot be undone/);
  assert.match((await confirm.textContent()) ?? "", /Your own messages stay/);
  // Keep closes it; nothing is deleted.
  await confirm.getByRole("button", { name: "Keep" }).click();
  await confirm.waitFor({ state: "detached" });
  await view.getByRole("button", { name: /Call to \+15557654321.*Cancelled/ }).waitFor();
  await detail.getByRole("button", { name: "Delete…" }).click();
  await confirm.getByRole("button", { name: "Delete" }).click();
  await detail.waitFor({ state: "detached", timeout: 10_000 });
  await view.getByText("No calls yet.", { exact: false }).waitFor({ timeout: 10_000 });
  const listed = await (await page.request.get("/v1/calls")).json();
  assert.equal(listed.calls.length, 0, "the server no longer lists it");
  assert.deepEqual(problems, []);
  await context.close();
});

test("Calls reads on a phone in the dark appearance", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE, colorScheme: "dark" });
  await connect(page);
  await page.getByRole("button", { name: "New chat" }).click();
  await send(page, `/tool calls.place ${JSON.stringify({ ...BRIEF, voicemail_message: undefined })}`);
  const card = page.locator("section.card.attention", { hasText: "calls.place" });
  await card.waitFor({ timeout: 20_000 });
  assert.match((await card.locator("dl.call-brief").textContent()) ?? "", /Hang up without a message/);
  await screenshot(page, "calls-approval-phone-dark");
  await card.getByRole("button", { name: "Deny" }).click();
  await page.locator(".message.assistant", { hasText: "calls.place returned" }).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Back to conversations" }).first().click();
  await page.getByRole("button", { name: "Calls", exact: true }).click();
  const view = page.getByRole("main", { name: "Calls" });
  await view.getByRole("heading", { name: "Calls" }).waitFor();
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "calls-phone-dark");
  assert.deepEqual(problems, []);
  await context.close();
});
