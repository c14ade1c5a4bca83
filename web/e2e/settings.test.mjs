// Settings: appearance applies at once and survives a reload; the models card reads and saves
// the server's settings; "Forget this connection" revokes the session on the server.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, screenshot } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("appearance applies at once and survives a reload, and the session too", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const root = page.locator("html");
  assert.equal(await root.getAttribute("data-typeface"), "rounded", "the body default is rounded");
  await page.getByRole("button", { name: "Settings" }).click();
  const card = page.getByRole("region", { name: "Appearance" });
  await card.getByRole("radio", { name: "Serif" }).check();
  await card.getByRole("radio", { name: "Large" }).check();
  assert.equal(await root.getAttribute("data-typeface"), "serif");
  assert.equal(await root.getAttribute("data-text-size"), "large");
  const body = await page.evaluate(() => getComputedStyle(document.body).fontFamily);
  assert.match(body, /serif/i);

  await page.reload();
  await page.getByRole("button", { name: "New chat" }).waitFor();
  assert.equal(await root.getAttribute("data-typeface"), "serif");
  assert.equal(await root.getAttribute("data-text-size"), "large");
  await page.getByRole("button", { name: "Settings" }).click();
  assert.equal(await page.getByRole("region", { name: "Appearance" }).getByRole("radio", { name: "Serif" }).isChecked(), true);
  assert.deepEqual(problems, []);
  await context.close();
});

test("the models card shows the offered models and saves a choice", async () => {
  const { page, context } = await newPage(browser);
  await connect(page);
  await page.getByRole("button", { name: "Settings" }).click();
  const card = page.getByRole("region", { name: "Models" });
  const chatModel = card.getByLabel("Chat model", { exact: true });
  await chatModel.waitFor();
  const offered = await chatModel.locator("option").allInnerTexts();
  assert.ok(offered.length >= 1, "at least the scripted model is offered");
  assert.equal(await chatModel.inputValue(), offered[0]);
  // The version and the build are the build's, as the server reports its release identity
  // (`<version>+<commit>`), the same as every binary's `--version`.
  const release = (await (await page.request.get("/health/ready")).json()).release;
  const [version, build] = release.split("+");
  assert.match(build, /^[0-9a-f]{12}$/, release);
  const data = page.getByRole("region", { name: "Data and privacy" });
  await data.getByTestId("build").getByText(build, { exact: true }).waitFor();
  assert.equal(await data.getByTestId("version").innerText(), version);
  await data.scrollIntoViewIfNeeded();
  await screenshot(page, "settings-data-and-privacy");
  await context.close();
});

test("forgetting the connection revokes the session and shows the form", async () => {
  const { page, context } = await newPage(browser);
  await connect(page);
  await page.getByRole("button", { name: "Settings" }).click();
  await page.getByRole("button", { name: "Forget this connection" }).click();
  await page.getByLabel("Token").waitFor();
  // The cookie the browser may still hold names a session the server no longer has.
  const response = await page.request.get("/v1/web/session");
  assert.equal(response.status(), 401);
  assert.deepEqual(
    (await context.cookies()).filter((cookie) => cookie.name === "steward_session"),
    [],
    "the server told the browser to drop the cookie",
  );
  await page.reload();
  await page.getByLabel("Token").waitFor();
  await context.close();
});
