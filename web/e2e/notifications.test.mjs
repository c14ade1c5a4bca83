// Notifications: the pending list from the server; opening one restores the conversation,
// focuses the approval card and acknowledges it.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, send } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("opening a notification focuses its approval card and acknowledges it", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  await send(page, '/tool notes.add {"text": "Water the plants"}');
  const approve = page.getByRole("button", { name: "Approve once" });
  await approve.waitFor({ timeout: 20_000 });
  const listed = async () => (await (await page.request.get("/v1/notifications")).json()).notifications;
  const mine = (await listed()).filter((/** @type {any} */ n) => n.kind === "approval");
  assert.ok(mine.length >= 1, "the approval is pending as a notification");

  await page.getByRole("button", { name: "New chat" }).click();
  await page.getByRole("button", { name: /^Notifications/ }).click();
  const list = page.getByRole("main", { name: "Notifications" });
  const entry = list.getByRole("button", { name: /An action waits for your approval.*Water the plants/ });
  await entry.waitFor();
  const before = (await listed()).length;
  await entry.click();
  await page.getByRole("main", { name: "Chat" }).waitFor();
  await page.waitForFunction(() => document.activeElement?.textContent?.includes("Approve once"), null, { timeout: 20_000 });
  await page.waitForFunction(
    async (count) => {
      const response = await fetch("/v1/notifications");
      return (await response.json()).notifications.length < count;
    },
    before,
    { timeout: 10_000 },
  );
  await approve.click();
  await page.locator(".message.assistant", { hasText: "notes.add returned" }).waitFor({ timeout: 20_000 });
  assert.deepEqual(problems, []);
  await context.close();
});
