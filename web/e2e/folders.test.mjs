// Folders from the sidebar: create, move a conversation in and out, rename and delete; and an
// agent's proposal accepted under a name the owner chose.
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

/**
 * A conversation made through the API with the page's own session (and its CSRF header).
 * @param {import("playwright-core").Page} page @param {string} title
 */
async function conversation(page, title) {
  const response = await page.request.post("/v1/sessions", {
    headers: { "X-Steward-CSRF": "1" },
    data: { agent_id: "default", metadata: { title } },
  });
  assert.equal(response.status(), 201);
  return (await response.json()).session_id;
}

/**
 * The page's answer to filing or unfiling session `id`. @param {import("playwright-core").Page} page
 * @param {string} id
 */
function filed(page, id) {
  return page.waitForResponse((response) => response.request().method() === "PATCH" && response.url().endsWith(`/v1/sessions/${id}`));
}

/** @param {import("playwright-core").Page} page @param {string} id */
async function folderOf(page, id) {
  return (await (await page.request.get(`/v1/sessions/${id}`)).json()).folder_id;
}

test("a folder is created, filled, emptied, renamed and deleted from the sidebar", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const stamp = Date.now().toString(36);
  const lisbon = await conversation(page, `Trip to Lisbon ${stamp}`);
  await page.reload();
  const sidebar = page.getByRole("complementary");
  const history = sidebar.getByRole("region", { name: "History" });
  await history.getByRole("button", { name: `Trip to Lisbon ${stamp}`, exact: true }).waitFor();

  await sidebar.getByRole("button", { name: "New folder" }).click();
  await sidebar.getByLabel("New folder name").fill(`Travel ${stamp}`);
  await sidebar.getByRole("button", { name: "Create" }).click();
  const folder = sidebar.getByRole("button", { name: new RegExp(`^Travel ${stamp}`) });
  await folder.waitFor();

  await history.getByRole("button", { name: `Actions for Trip to Lisbon ${stamp}` }).click();
  // The sidebar moves it at once; the server is read once it has answered the move.
  let moved = filed(page, lisbon);
  await history.getByRole("button", { name: `Move to Travel ${stamp}` }).click();
  await page.waitForFunction(() => !document.querySelector('[aria-label="History"]')?.textContent?.includes("Trip to Lisbon"));
  await moved;
  assert.equal(await folderOf(page, lisbon) !== null, true, "the server filed it");
  assert.equal(await folder.getAttribute("aria-expanded"), "false", "folders start closed");
  await folder.click();
  const folders = sidebar.getByRole("region", { name: "Folders" });
  await folders.getByRole("button", { name: `Trip to Lisbon ${stamp}`, exact: true }).waitFor();

  await folders.getByRole("button", { name: `Actions for Trip to Lisbon ${stamp}` }).click();
  moved = filed(page, lisbon);
  await folders.getByRole("button", { name: "Remove from folder" }).click();
  await history.getByRole("button", { name: `Trip to Lisbon ${stamp}`, exact: true }).waitFor();
  await moved;
  assert.equal(await folderOf(page, lisbon), null, "unfiling sent an explicit null");

  await folders.getByRole("button", { name: `Actions for folder Travel ${stamp}` }).click();
  await folders.getByRole("button", { name: "Rename…" }).click();
  await folders.getByLabel("Folder name").fill(`Journeys ${stamp}`);
  await folders.getByRole("button", { name: "Rename" }).click();
  await folders.getByRole("button", { name: new RegExp(`^Journeys ${stamp}`) }).waitFor();
  await folders.getByRole("button", { name: `Actions for folder Journeys ${stamp}` }).click();
  await folders.getByRole("button", { name: "Delete folder" }).click();
  await page.waitForFunction((name) => !document.querySelector('[aria-label="Folders"]')?.textContent?.includes(name), `Journeys ${stamp}`);
  assert.deepEqual(problems, []);
  await context.close();
});

test("the agent's proposal is accepted under the owner's name and files the conversations", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const stamp = Date.now().toString(36);
  const soup = await conversation(page, `Soup ideas ${stamp}`);
  const bread = await conversation(page, `Bread timing ${stamp}`);
  await page.getByRole("button", { name: "New chat" }).click();
  await send(page, `/tool folders.propose {"folder_name": "Recipes ${stamp}", "session_ids": ["${soup}", "${bread}"]}`);
  await page.locator(".message.assistant", { hasText: "folders.propose returned" }).waitFor({ timeout: 20_000 });
  await page.reload();
  const card = page.getByRole("region", { name: `Suggested folder Recipes ${stamp}` });
  await card.getByText("File 2 conversations into a new folder?").waitFor();
  await card.getByText(`Soup ideas ${stamp}`).waitFor();
  await card.getByLabel("New folder").fill(`Cooking ${stamp}`);
  await card.getByRole("button", { name: "Accept" }).click();
  await card.waitFor({ state: "detached" });
  const sidebar = page.getByRole("complementary");
  const folder = sidebar.getByRole("button", { name: new RegExp(`^Cooking ${stamp}`) });
  await folder.waitFor();
  await folder.click();
  const folders = sidebar.getByRole("region", { name: "Folders" });
  await folders.getByRole("button", { name: `Soup ideas ${stamp}`, exact: true }).waitFor();
  await folders.getByRole("button", { name: `Bread timing ${stamp}`, exact: true }).waitFor();
  const filedInto = await folderOf(page, soup);
  assert.ok(filedInto);
  assert.equal(await folderOf(page, bread), filedInto);
  assert.deepEqual(problems, []);
  await context.close();
});

test("a server without folders shows no folder control and no error", async () => {
  const { page, context, problems } = await newPage(browser);
  const missing = (/** @type {import("playwright-core").Route} */ route) =>
    route.fulfill({
      status: 404,
      contentType: "application/problem+json",
      body: JSON.stringify({ type: "urn:steward:problem:not_found", title: "Not found", status: 404, code: "not_found" }),
    });
  await page.route("**/v1/folders", missing);
  await page.route("**/v1/folder-proposals", missing);
  await connect(page);
  await page.getByRole("region", { name: "History" }).waitFor();
  await page.waitForTimeout(500);
  assert.equal(await page.getByRole("region", { name: "Folders" }).count(), 0);
  assert.equal(await page.getByRole("alert").count(), 0);
  assert.deepEqual(problems.filter((problem) => !problem.includes("404")), []);
  await context.close();
});
