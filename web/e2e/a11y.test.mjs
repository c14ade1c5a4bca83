// Accessibility and looks: axe-core finds no serious or critical violation on the connection,
// chat, settings and Email screens in light and dark, and each is saved as a screenshot at phone and
// desktop widths (target/web-e2e/screenshots).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, send, screenshot, violations, PHONE, DESKTOP } from "./support.mjs";


/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

for (const colorScheme of /** @type {const} */ (["light", "dark"])) {
  test(`connection, chat and settings in ${colorScheme}: no serious violation, screenshots`, async () => {
    for (const [width, viewport] of /** @type {const} */ ([["desktop", DESKTOP], ["phone", PHONE]])) {
      const { page, context, problems } = await newPage(browser, { viewport, colorScheme });
      await page.goto("/");
      await page.getByLabel("Token").waitFor();
      assert.deepEqual(await violations(page), [], `connection, ${width}, ${colorScheme}`);
      await screenshot(page, `connection-${width}-${colorScheme}`);

      await connect(page);
      if (width === "phone") await page.getByRole("button", { name: "New chat" }).click();
      await send(page, "Show me some **Markdown**:\n\n| tool | risk |\n|---|---|\n| notes.add | medium |\n\n```\ncargo xtask dev\n```");
      await page.locator(".message.assistant", { hasText: "You said" }).waitFor({ timeout: 20_000 });
      await page.getByRole("button", { name: "Send" }).waitFor();
      await send(page, '/tool notes.add {"text": "Call the plumber on Tuesday"}');
      await page.getByRole("button", { name: "Approve once" }).waitFor({ timeout: 20_000 });
      assert.deepEqual(await violations(page), [], `chat, ${width}, ${colorScheme}`);
      await screenshot(page, `chat-${width}-${colorScheme}`);
      await page.getByRole("button", { name: "Deny" }).click();
      await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 20_000 });

      if (width === "phone") await page.getByRole("button", { name: "Back to conversations" }).first().click();
      await page.getByRole("button", { name: "Settings" }).click();
      await page.getByRole("region", { name: "Models" }).getByLabel("Chat model", { exact: true }).waitFor();
      assert.deepEqual(await violations(page), [], `settings, ${width}, ${colorScheme}`);
      await screenshot(page, `settings-${width}-${colorScheme}`);
      if (width === "phone") {
        await page.getByRole("button", { name: "Back to conversations" }).first().click();
        await screenshot(page, `sidebar-${width}-${colorScheme}`);
      }

      await page.getByRole("tab", { name: "Email" }).click();
      await page.locator(".mail-row").first().waitFor({ timeout: 30_000 });
      assert.deepEqual(await violations(page), [], `email inbox, ${width}, ${colorScheme}`);
      await page.locator(".mail-row .mail-open").first().click();
      await page.locator(".mail-text").first().waitFor();
      assert.deepEqual(await violations(page), [], `email conversation, ${width}, ${colorScheme}`);
      await screenshot(page, `email-${width}-${colorScheme}`);
      assert.deepEqual(problems, []);
      await context.close();
    }
  });
}
