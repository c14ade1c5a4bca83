// Calls in the browser, with calling on: the stack runs the call provider stand-in
// (`steward-demo-calls`, its control address in STEWARD_DEMO_CALLS_URL), the call-ingress
// listener and the call worker (STEWARD_CALL_WORKER_PID). The brief's approval card shows the
// whole brief and the call settings revision it is pinned to; Calls lists the call, shows its
// brief, cancels it before it is placed (the call worker paused meanwhile, so it waits) and
// deletes it after a confirmation; an approved call is placed, answered and read back with its
// transcript; a simulated call in flows from the provider's signed webhook through ingress and
// the call worker to a `New call result` notification that opens it; the view reads on a phone
// in the dark appearance, and axe finds nothing serious.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, send, screenshot, violations, PHONE } from "./support.mjs";

const DEMO_CALLS = process.env.STEWARD_DEMO_CALLS_URL ?? "";
const CALL_WORKER = Number(process.env.STEWARD_CALL_WORKER_PID);

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
  // The call worker pauses until the call is cancelled: an approved call waits for it.
  assert.ok(CALL_WORKER > 0, "the stack names its call worker");
  process.kill(CALL_WORKER, "SIGSTOP");
  try {
    await approveAndCancel(page, card, revision);
  } finally {
    process.kill(CALL_WORKER, "SIGCONT");
  }
  const view = page.getByRole("main", { name: "Calls" });
  const detail = view.getByRole("region", { name: "Call to +15557654321" });

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

/**
 * Approves the call on `card`, finds it in Calls waiting to be placed under `revision`, and
 * cancels it.
 * @param {import("playwright-core").Page} page
 * @param {import("playwright-core").Locator} card
 * @param {string} revision
 */
async function approveAndCancel(page, card, revision) {
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
}

/**
 * Waits until the server holds a pending `call_finished` notification, and opens it from
 * Notifications.
 * @param {import("playwright-core").Page} page
 */
async function openCallResult(page) {
  await page.waitForFunction(
    async () => {
      const response = await fetch("/v1/notifications");
      const { notifications } = await response.json();
      return notifications.some((/** @type {{kind: string}} */ notification) => notification.kind === "call_finished");
    },
    null,
    { timeout: 30_000, polling: 500 },
  );
  await page.getByRole("button", { name: /^Notifications/ }).click();
  const entry = page.getByRole("main", { name: "Notifications" }).getByRole("button", { name: /New call result/ });
  await entry.waitFor();
  assert.equal(await entry.count(), 1, "one call result waits");
  await entry.click();
}

test("an approved call is placed and answered, and a call in arrives as a notification; both open with their transcripts", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const brief = {
    to: "+15557650000",
    purpose: "Tell the workshop that the varnish arrives on Friday.",
    may_say: "The varnish arrives on Friday morning.",
  };
  await send(page, `/tool calls.place ${JSON.stringify(brief)}`);
  const card = page.locator("section.card.attention", { hasText: "calls.place" });
  await card.getByRole("button", { name: "Approve once" }).click();
  await page.locator(".message.assistant", { hasText: "calls.place returned" }).waitFor({ timeout: 20_000 });

  // The call worker places it; the stand-in answers, ends it and delivers the signed webhook;
  // the call worker settles it with its `call_finished` notification.
  await openCallResult(page);
  const view = page.getByRole("main", { name: "Calls" });
  const placed = view.getByRole("region", { name: `Call to ${brief.to}` });
  await placed.waitFor({ timeout: 10_000 });
  await placed.getByText(/^Finished/).waitFor();
  const said = (await placed.getByRole("list", { name: "Transcript" }).textContent()) ?? "";
  assert.match(said, /Steward Hello, this is Steward, calling on behalf of Alex Rivera\./);
  assert.ok(said.includes(brief.purpose), `the purpose was said: ${said}`);
  assert.match(said, /Recipient Yes, speaking/);
  assert.match((await placed.locator(".call-summary").textContent()) ?? "", /acknowledged/);
  await view.getByRole("button", { name: new RegExp(`Call to \\${brief.to}.*Finished`) }).waitFor();
  await screenshot(page, "calls-outbound-transcript");

  // Someone calls the number.
  const response = await fetch(`${DEMO_CALLS}/demo/inbound`, { method: "POST" });
  assert.equal(response.status, 200, await response.text());
  await openCallResult(page);
  const message = view.getByRole("region", { name: "Message from +15550100199" });
  await message.waitFor({ timeout: 10_000 });
  const heard = (await message.getByRole("list", { name: "Transcript" }).textContent()) ?? "";
  assert.match(heard, /Caller Hi, it's Sam from the bakery/);
  assert.match((await message.locator(".call-summary").textContent()) ?? "", /rye loaf is back on Thursday/);
  assert.equal(await message.getByRole("button", { name: "Cancel call" }).count(), 0, "a finished call cannot be cancelled");
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "calls-inbound-transcript");
  // Opening a call result acknowledged it.
  await page.waitForFunction(
    async () => {
      const { notifications } = await (await fetch("/v1/notifications")).json();
      return notifications.every((/** @type {{kind: string}} */ notification) => notification.kind !== "call_finished");
    },
    null,
    { timeout: 10_000, polling: 250 },
  );
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
  // A call in, read on the phone.
  const before = (await (await page.request.get("/v1/calls")).json()).calls.length;
  const response = await fetch(`${DEMO_CALLS}/demo/inbound`, { method: "POST" });
  assert.equal(response.status, 200, await response.text());
  await page.waitForFunction(
    async (count) => (await (await fetch("/v1/calls")).json()).calls.length > count,
    before,
    { timeout: 30_000, polling: 500 },
  );
  // Calls again, from the sidebar, reads the list afresh.
  await page.getByRole("button", { name: "Back to conversations" }).first().click();
  await page.getByRole("button", { name: "Calls", exact: true }).click();
  await view.getByRole("button", { name: /Message from \+15550100199/ }).first().click();
  const message = view.getByRole("region", { name: "Message from +15550100199" });
  await message.getByRole("list", { name: "Transcript" }).waitFor();
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "calls-transcript-phone-dark");
  assert.deepEqual(problems, []);
  await context.close();
});
