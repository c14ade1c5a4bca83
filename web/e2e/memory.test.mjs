// Memory and People in the browser, with AGENT_MEMORY_API_ENABLED on: a preference said in a
// conversation becomes a belief Memory lists, the next answer shows it under "Memories used"
// (with Not relevant here), and Memory reviews it (Inspect evidence, Mark reviewed, Not true,
// Delete memory after a confirmation that Keep dismisses). People lists the demo mailbox's
// correspondents, gathered by the async worker: a profile with contacts, timeline and open
// threads; Pin and Mark reviewed move them between the collections; Relationship; Repair
// identity links a number and splits it off to a new person, who is then forgotten after a
// confirmation. Import history reads a range within its record limit, its session outside the
// conversations. Both views read on a phone in the dark appearance, and axe finds nothing
// serious.
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

const PREFERENCE = "I prefer green tea in the morning.";
const BELIEF = "Prefers green tea in the morning";

/** Opens a view from the sidebar. @param {import("playwright-core").Page} page @param {string} name */
async function open(page, name) {
  await page.getByRole("complementary").getByRole("button", { name, exact: true }).click();
  return page.getByRole("main", { name });
}

test("a preference said in a conversation is remembered, used in the next answer and reviewed in Memory", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  await page.getByRole("button", { name: "New chat" }).click();
  await send(page, PREFERENCE);
  await page.locator(".message.assistant").first().waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 20_000 });

  // The belief forms when the run ends; Memory lists it.
  let view = await open(page, "Memory");
  const row = view.locator("li.memory-row", { hasText: BELIEF });
  for (let attempt = 0; attempt < 20 && (await row.count()) === 0; attempt += 1) {
    await page.waitForTimeout(250);
    await view.getByLabel("State").selectOption("active");
    await view.getByLabel("State").selectOption("");
  }
  await row.waitFor({ timeout: 5_000 });
  assert.match((await row.textContent()) ?? "", /Preference · Not reviewed/);
  await row.getByRole("button", { name: "Inspect evidence" }).click();
  const evidence = view.getByRole("region", { name: "Evidence" });
  await evidence.getByRole("link", { name: "The conversation" }).waitFor();
  await evidence.getByText("Not used in any answer yet.").waitFor();
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "memory-list");

  // The next answer in that conversation used it.
  await evidence.getByRole("link", { name: "The conversation" }).click();
  await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
  await send(page, "Which tea should I buy for the morning?");
  const answers = page.locator(".message.assistant");
  await answers.nth(1).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 20_000 });
  await answers.nth(1).getByRole("button", { name: "Memories used" }).click();
  const used = answers.nth(1).getByRole("region", { name: "Memories this answer used" });
  await used.getByText(BELIEF).waitFor({ timeout: 10_000 });
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "memory-used-in-chat");
  await used.getByRole("button", { name: "Not relevant here" }).click();
  await used.getByText("Not used in this conversation again").waitFor();

  // Review in Memory: reviewed, not true, then deleted after a confirmation.
  view = await open(page, "Memory");
  await row.getByRole("button", { name: "Mark reviewed" }).click();
  await row.getByText(/Preference · Reviewed/).waitFor();
  await row.getByRole("button", { name: "Not true" }).click();
  await row.getByText(/Preference · Not true/).waitFor();
  await row.getByRole("button", { name: "Delete memory…" }).click();
  const confirm = row.getByRole("alertdialog", { name: "Delete this memory?" });
  await confirm.waitFor();
  assert.match((await confirm.textContent()) ?? "", /will not form it, or anything close to it, again/);
  assert.match((await confirm.textContent()) ?? "", /The messages it came from stay/);
  assert.deepEqual(await violations(page), []);
  await confirm.getByRole("button", { name: "Keep" }).click();
  await confirm.waitFor({ state: "detached" });
  await row.getByRole("button", { name: "Delete memory…" }).click();
  await confirm.getByRole("button", { name: "Delete memory" }).click();
  await row.waitFor({ state: "detached", timeout: 10_000 });
  const listed = await (await page.request.get("/v1/memories")).json();
  assert.ok(!listed.memories.some((/** @type {any} */ memory) => memory.statement === BELIEF), "the server no longer holds it");

  // What the owner wrote in the demo mailbox's sent mail waits for review.
  // (The async worker forms it when it gathers the demo mailbox after its first update.)
  const flagged = view.locator("li.memory-row", { hasText: "Prefers calls in the morning" });
  await view.getByLabel("Needs review only").check();
  for (let attempt = 0; attempt < 40 && (await flagged.count()) === 0; attempt += 1) {
    await page.waitForTimeout(500);
    await view.getByLabel("Needs review only").uncheck();
    await view.getByLabel("Needs review only").check();
  }
  await flagged.waitFor({ timeout: 5_000 });
  assert.match((await flagged.textContent()) ?? "", /Needs review · From your mail/);
  await view.getByLabel("Needs review only").uncheck();

  // Saying it again forms nothing: the statement was deleted.
  await page.getByRole("complementary").getByRole("button", { name: "New chat" }).click();
  await send(page, "I prefer green tea in the morning!");
  await page.locator(".message.assistant").first().waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 20_000 });
  await page.waitForTimeout(1_000);
  const again = await (await page.request.get("/v1/memories")).json();
  assert.ok(!again.memories.some((/** @type {any} */ memory) => memory.statement.startsWith("Prefers green tea")), "not formed again");
  assert.deepEqual(problems, []);
  await context.close();
});

test("People: a correspondent's profile, the collections, Repair identity and Forget person", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const view = await open(page, "People");
  // The async worker gathers the demo mailbox after its first update.
  const ada = view.getByRole("button", { name: /^Ada Lovelace/ });
  for (let attempt = 0; attempt < 40 && (await ada.count()) === 0; attempt += 1) {
    await page.waitForTimeout(500);
    await view.getByRole("tab", { name: "Pinned" }).click();
    await view.getByRole("tab", { name: "Everyone" }).click();
  }
  await ada.waitFor({ timeout: 5_000 });
  await view.getByRole("tab", { name: "Needs review" }).click();
  await ada.click();
  const profile = view.getByRole("region", { name: "Ada Lovelace" });
  await profile.waitFor();
  const shown = (await profile.textContent()) ?? "";
  assert.match(shown, /Email: ada@analytical\.example/);
  assert.match(shown, /From them: Re: About/);
  assert.match(shown, /To them: About/);
  const threads = profile.getByRole("list", { name: "Open threads" });
  assert.match((await threads.textContent()) ?? "", /Question about/, "the question awaiting a reply is an open thread");
  // What she said of herself in the demo mailbox: a fact with its evidence, and her number.
  assert.match(shown, /Phone: \+442079460101/);
  const fact = profile.locator("li.fact", { hasText: "Works at the Analytical Society" });
  await fact.getByRole("button", { name: "Inspect evidence" }).click();
  await fact.getByText("A message in your mail").waitFor();
  await fact.getByRole("button", { name: "Correct…" }).click();
  await fact.getByLabel("Correction").fill("Works at the Royal Society");
  await fact.getByRole("button", { name: "Save" }).click();
  await fact.getByText("(you corrected “Works at the Analytical Society”)").waitFor();
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "people-profile");

  // Pin and review: Pinned lists her, Needs review no longer does.
  await profile.getByRole("button", { name: "Pin" }).click();
  await profile.getByRole("button", { name: "Unpin" }).waitFor();
  await profile.getByRole("button", { name: "Mark reviewed" }).click();
  await profile.getByRole("button", { name: "Mark reviewed" }).waitFor({ state: "detached" });
  await ada.waitFor({ state: "detached" });
  await view.getByRole("tab", { name: "Pinned" }).click();
  await ada.waitFor();
  await profile.getByRole("button", { name: "Relationship…" }).click();
  await profile.getByLabel("How they relate to you").fill("colleague");
  await profile.getByRole("button", { name: "Save" }).click();
  await profile.getByText("Your colleague · Pinned").waitFor();

  // Repair identity: link a number, then split it off to someone else.
  await profile.getByRole("button", { name: "Repair identity: link…" }).click();
  const linking = profile.getByRole("form", { name: "Link a contact" });
  await linking.getByLabel("Kind").selectOption("phone");
  await linking.getByLabel("Number").fill("+44 20 7946 0199");
  await linking.getByRole("button", { name: "Link" }).click();
  await profile.getByText("Phone: +442079460199").waitFor();
  await profile.getByRole("button", { name: "Repair identity: split off…" }).click();
  const splitting = profile.getByRole("form", { name: "Split off" });
  await splitting.getByLabel("+442079460199").check();
  await splitting.getByLabel("Their name").fill("Ada's office");
  assert.deepEqual(await violations(page), []);
  await splitting.getByRole("button", { name: "Split off" }).click();
  const office = view.getByRole("region", { name: "Ada's office" });
  await office.waitFor();
  assert.match((await office.textContent()) ?? "", /Phone: \+442079460199/);

  // Forget the new person, after a confirmation.
  await office.getByRole("button", { name: "Forget person…" }).click();
  const confirm = office.getByRole("alertdialog", { name: "Forget Ada's office?" });
  await confirm.waitFor();
  assert.match((await confirm.textContent()) ?? "", /will not rebuild them from the same addresses or numbers/);
  assert.deepEqual(await violations(page), []);
  await confirm.getByRole("button", { name: "Forget person" }).click();
  await office.waitFor({ state: "detached" });
  await page.getByRole("status").filter({ hasText: "Forgotten." }).waitFor();
  const people = await (await page.request.get("/v1/people?limit=100")).json();
  assert.ok(!people.people.some((/** @type {any} */ person) => person.name === "Ada's office"), "the server forgot them");
  assert.deepEqual(problems, []);
  await context.close();
});

test("Import history reads a range of synced mail within its record limit, outside the conversations", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const view = await open(page, "People");
  const card = view.getByRole("region", { name: "Import history" });
  await card.waitFor();
  const form = card.getByRole("form", { name: "Import history" });
  await form.getByLabel("From").fill("2020-01-01");
  await form.getByLabel("Record limit").fill("5");
  // A cap that is not an amount is refused with the server's words; nothing starts.
  await form.getByLabel("Spending cap (USD)").fill("lots");
  await form.getByRole("button", { name: "Import" }).click();
  await card.getByRole("alert").filter({ hasText: /decimal|amount|cost/i }).waitFor();
  assert.deepEqual((await (await page.request.get("/v1/people/imports")).json()).imports, []);
  // The browser logs the refused request's 422; it is the answer this step expects.
  const expected = problems.filter((problem) => /status of 422/.test(problem));
  assert.equal(expected.length, 1, `${problems}`);
  problems.splice(problems.indexOf(expected[0]), 1);

  await form.getByLabel("Spending cap (USD)").fill("0");
  await form.getByRole("button", { name: "Import" }).click();
  await card.getByRole("status").filter({ hasText: "Import started." }).waitFor();
  const item = card.getByRole("list", { name: "Imports" }).getByRole("listitem").first();
  await item.filter({ hasText: "Done: the record limit was reached" }).waitFor({ timeout: 30_000 });
  assert.match((await item.textContent()) ?? "", /5 of at most 5 messages/);
  const imported = (await (await page.request.get("/v1/people/imports")).json()).imports[0];
  assert.deepEqual(
    [imported.state, imported.stop_reason, imported.records_read, imported.since],
    ["completed", "record_limit", 5, "2020-01-01"],
  );
  // Its session is not among the conversations.
  const sessions = (await (await page.request.get("/v1/sessions?limit=100")).json()).sessions;
  assert.ok(!sessions.some((/** @type {any} */ session) => session.session_id === imported.session_id));
  assert.equal(await page.getByRole("complementary").getByText(/Import history/).count(), 0);
  assert.deepEqual(await violations(page), []);
  await item.scrollIntoViewIfNeeded();
  await screenshot(page, "people-import");
  assert.deepEqual(problems, []);
  await context.close();
});

test("Memory and People read on a phone in the dark appearance", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE, colorScheme: "dark" });
  await connect(page);
  await page.getByRole("complementary").getByRole("button", { name: "People", exact: true }).click();
  const view = page.getByRole("main", { name: "People" });
  await view.getByRole("button", { name: /^Grace Hopper/ }).click();
  await view.getByRole("region", { name: "Grace Hopper" }).waitFor();
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "people-phone-dark");
  await view.getByRole("button", { name: "Back to conversations" }).click();
  await page.getByRole("complementary").getByRole("button", { name: "Memory", exact: true }).click();
  await page.getByRole("main", { name: "Memory" }).getByRole("group", { name: "Filters" }).waitFor();
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "memory-phone-dark");
  assert.deepEqual(problems, []);
  await context.close();
});
