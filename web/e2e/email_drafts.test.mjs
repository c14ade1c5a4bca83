// Drafts, Review & Send, feedback and learning in the browser, against the stack's demo
// mailbox: a reply saved as the owner types, a conflict with a save made elsewhere keeping both
// versions, the history and a restore, Review & Send refusing an approval that is not exactly
// the draft (a tampered subject; a cut string without its digest) before approving the real
// one, which the worker sends; feedback for an explicitly chosen person with Undo; the Learning
// card. (Named to run after email.test.mjs, whose rows it leaves changed.)
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

/**
 * Opens Email and the conversation whose subject is `subject`, found by searching the important
 * conversations: earlier tests send replies, and the worker's sync moves their conversations up
 * or down at its own pace, so a row's position is not a conversation's name.
 * @param {import("playwright-core").Page} page @param {string} subject
 */
async function open(page, subject) {
  const tab = page.getByRole("tab", { name: "Email" });
  if ((await tab.getAttribute("aria-selected")) !== "true") {
    // Showing Email refreshes the mailbox, then reads the listing again once the refresh's
    // operation has settled. Waiting for that read keeps it from replacing, later, rows a test
    // has changed since (feedback moving a conversation out of Important, say).
    let polled = false;
    const reread = page.waitForResponse(
      (response) => {
        if (response.url().includes("/v1/email/operations/")) polled = true;
        return polled && response.url().includes("/v1/email/threads?");
      },
      { timeout: 30_000 },
    );
    await tab.click();
    await reread;
  }
  const list = page.getByRole("list", { name: "Important conversations" });
  await list.locator(".mail-row").first().waitFor({ timeout: 30_000 });
  const search = page.getByRole("searchbox", { name: "Search mail" });
  await search.fill(subject);
  await search.press("Enter");
  await page.waitForFunction(
    (words) => {
      const subjects = [...document.querySelectorAll(".mail-row .subject")].map((element) => element.textContent ?? "");
      return subjects.length === 1 && subjects[0].includes(words);
    },
    subject,
    { timeout: 30_000 },
  );
  await list.locator(".mail-row .mail-open").click();
  const pane = page.getByRole("region", { name: "Conversation" });
  await pane.locator(".mail-message").first().waitFor();
  return pane;
}

/**
 * Opens the conversation `subject` and its new reply editor; returns the editor and the draft.
 * @param {import("playwright-core").Page} page @param {string} subject
 */
async function reply(page, subject) {
  const pane = await open(page, subject);
  const created = page.waitForResponse((response) => response.url().endsWith("/v1/email/drafts") && response.request().method() === "POST");
  await pane.getByRole("button", { name: "Reply", exact: true }).click();
  const draft = await (await created).json();
  const editor = page.getByRole("region", { name: "Reply" });
  await editor.getByText("Saved · revision 1").waitFor();
  return { editor, pane, draftId: draft.draft_id, draft };
}

/** Saves `body` over the draft as another device would. @param {import("playwright-core").Page} page */
async function saveElsewhere(page, draftId, expected, content) {
  const response = await page.request.put(`/v1/email/drafts/${draftId}`, {
    headers: { "X-Steward-CSRF": "1" },
    data: { expected_revision: expected, ...content },
  });
  assert.equal(response.status(), 200, await response.text());
  return response.json();
}

test("a reply saves as it is typed, a conflict keeps both versions, and history restores an earlier one", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const { editor, draftId, draft } = await reply(page, "Question about the garden party");
  assert.equal(await editor.getByLabel("Subject").inputValue(), draft.subject);
  assert.match(draft.subject, /^Re: /);
  assert.ok((await editor.getByLabel("To").inputValue()).includes("@"), "addressed to the sender");
  await editor.getByLabel("Message").fill("Ten works for me.");
  await editor.getByText("Saved · revision 2").waitFor();
  // The row says a reply is in progress.
  await page.locator(".mail-row.current .state", { hasText: "Draft" }).waitFor();

  // Another device saves revision 3; this page still edits from revision 2.
  await saveElsewhere(page, draftId, 2, { to: draft.to, cc: [], subject: draft.subject, body: "Eleven is better." });
  await editor.getByLabel("Message").fill("Ten works for me. See you there.");
  const conflict = page.getByRole("group", { name: "Conflicting versions" });
  await conflict.waitFor();
  assert.match(await conflict.getByRole("region", { name: "Saved version" }).innerText(), /revision 3[\s\S]*Eleven is better\./);
  assert.match(await conflict.getByRole("region", { name: "Your version" }).innerText(), /Ten works for me\. See you there\./);
  await screenshot(page, "draft-desktop-conflict");
  assert.deepEqual(await violations(page), [], "the conflict view");
  await conflict.getByRole("button", { name: "Keep mine" }).click();
  await editor.getByText("Saved · revision 4").waitFor();
  assert.equal(await editor.getByLabel("Message").inputValue(), "Ten works for me. See you there.");

  // History: every revision, newest first; restoring 3 makes it revision 5.
  await editor.getByRole("button", { name: "History" }).click();
  const history = page.getByRole("region", { name: "Draft history" });
  await history.getByText("Revision 4").waitFor();
  assert.equal(await history.locator("li").count(), 4);
  await screenshot(page, "draft-desktop-history");
  await history.getByRole("button", { name: "Restore revision 3" }).click();
  await editor.getByText("Saved · revision 5").waitFor();
  assert.equal(await editor.getByLabel("Message").inputValue(), "Eleven is better.");
  const stored = await (await page.request.get(`/v1/email/drafts/${draftId}`)).json();
  assert.equal(stored.restored_from, 3);
  assert.deepEqual(problems.filter((problem) => !/status of 409/.test(problem)), []);
  await context.close();
});

test("Review & Send refuses an approval that is not the draft and sends the one that is", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const { editor, pane, draftId } = await reply(page, "Question about the budget sheet");
  const body = `Thank you. ${"I will bring the notes. ".repeat(30)}`.trim();
  await editor.getByLabel("Message").fill(body);
  await editor.getByText("Saved · revision 2").waitFor();

  // What reaches the page says the approval would send another body.
  await page.route(`**/v1/email/drafts/${draftId}`, async (route) => {
    if (route.request().method() !== "GET") return route.continue();
    const response = await route.fetch();
    const draft = await response.json();
    if (draft.send?.approval) draft.send.approval.arguments.subject = "Something else";
    await route.fulfill({ response, json: draft });
  });
  await editor.getByRole("button", { name: "Review & Send" }).click();
  const review = pane.getByRole("region", { name: "Review and send" });
  await review.getByText(/does not match your draft: \/subject differs/).waitFor({ timeout: 30_000 });
  assert.equal(await review.getByRole("button", { name: "Approve once" }).count(), 0, "approve-once is never offered");
  await screenshot(page, "draft-desktop-refused");
  await page.unrouteAll({ behavior: "wait" });

  // The page's own check: a cut string without its digest, and a stray digest, are refused.
  const verdicts = await page.evaluate(async (text) => {
    const url = performance
      .getEntriesByType("resource")
      .map((entry) => entry.name)
      .find((name) => /\/app\/drafts(\.[0-9a-f]{16})?\.js$/.test(name));
    const drafts = await import(url);
    const frozen = { to: ["ada@example.org"], cc: [], subject: "Re: Plan", body: text };
    const where = { accountId: "demo", providerThreadId: null, threadId: null, sendTool: "mcp.mail_send.send_message" };
    const shown = { account_id: "demo", to: ["ada@example.org"], cc: [], subject: "Re: Plan", body: [...text].slice(0, 512).join("") };
    const tool = "mcp.mail_send.send_message";
    return {
      noDigest: await drafts.verify({ approval_id: "a", tool, status: "PENDING", arguments: shown, argument_digests: {} }, frozen, where),
      stray: await drafts.verify(
        { approval_id: "a", tool, status: "PENDING", arguments: { ...shown, body: text.slice(0, 10) }, argument_digests: { "/subject": "0".repeat(64) } },
        { ...frozen, body: text.slice(0, 10) },
        where,
      ),
      otherAccount: await drafts.verify(
        { approval_id: "a", tool: "mcp.mail_work_send.send_message", status: "PENDING", arguments: shown, argument_digests: {} },
        frozen,
        where,
      ),
    };
  }, body);
  assert.match(verdicts.noDigest ?? "", /\/body is cut without a digest/);
  assert.match(verdicts.stray ?? "", /digest for \/subject/);
  assert.match(verdicts.otherAccount ?? "", /account work/);

  // The real approval: the frozen revision, its long body proven by its digest.
  await review.getByRole("button", { name: "Edit" }).click();
  await editor.getByRole("button", { name: "Review & Send" }).click();
  const approve = review.getByRole("button", { name: "Approve once" });
  await approve.waitFor({ timeout: 30_000 });
  assert.match(await review.innerText(), /Exactly this message is sent, once/);
  await screenshot(page, "draft-desktop-review");
  assert.deepEqual(await violations(page), [], "Review & Send");
  await approve.click();
  await review.getByText("Sent.").waitFor({ timeout: 30_000 });
  const sent = await (await page.request.get(`/v1/email/drafts/${draftId}`)).json();
  assert.equal(sent.send.state, "sent");
  assert.equal(sent.send.approval.arguments.body, [...body].slice(0, 512).join(""));
  assert.ok(sent.send.approval.argument_digests["/body"], "the long body travelled as a digest");
  // Sent: the draft no longer changes.
  const again = await page.request.put(`/v1/email/drafts/${draftId}`, {
    headers: { "X-Steward-CSRF": "1" },
    data: { expected_revision: sent.revision, to: sent.to, cc: [], subject: sent.subject, body: "More" },
  });
  assert.equal(again.status(), 409);
  assert.equal((await again.json()).code, "email_draft_sending");
  assert.deepEqual(problems, []);
  await context.close();
});

test("a send's approval opened from its notification is reviewed in Email; Chat never approves it", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const { editor, pane, draftId } = await reply(page, "Question about Thursday's meeting");
  await editor.getByLabel("Message").fill("Thursday suits me.");
  await editor.getByText("Saved · revision 2").waitFor();
  await editor.getByRole("button", { name: "Review & Send" }).click();
  const review = pane.getByRole("region", { name: "Review and send" });
  await review.getByRole("button", { name: "Approve once" }).waitFor({ timeout: 30_000 });
  const waiting = await (await page.request.get(`/v1/email/drafts/${draftId}`)).json();
  const approvalId = waiting.send.approval.approval_id;
  // Another conversation closes the editor; the notification has to find the draft again.
  await open(page, "Update on the conference talk");
  await editor.waitFor({ state: "detached" });

  // In Chat (here through a link to the send session) the card is shown, never approvable.
  await page.getByRole("tab", { name: "Chat" }).click();
  await page.evaluate((id) => {
    window.location.hash = `#session=${id}`;
  }, waiting.send.session_id);
  const card = page.locator(`[data-approval="${approvalId}"]`);
  await card.getByText(/approve it from Review & Send, where it is checked against the draft/).waitFor({ timeout: 20_000 });
  assert.equal(await card.getByRole("button", { name: "Approve once" }).isDisabled(), true);
  await screenshot(page, "draft-chat-send-card");

  // Its notification (the only one left) opens the draft in Email, in Review & Send.
  const listed = async () => (await (await page.request.get("/v1/notifications")).json()).notifications;
  for (const other of (await listed()).filter((/** @type {any} */ n) => n.payload.approval_id !== approvalId)) {
    await page.request.post(`/v1/notifications/${other.notification_id}/acknowledge`, { headers: { "X-Steward-CSRF": "1" } });
  }
  assert.equal((await listed()).length, 1, "the send's notification waits");
  // The list shown at once may be the one read before; the click reads it again.
  const reread = page.waitForResponse((response) => response.url().endsWith("/v1/notifications") && response.request().method() === "GET");
  await page.getByRole("button", { name: /^Notifications/ }).click();
  await reread;
  const entries = page.getByRole("main", { name: "Notifications" }).getByRole("button", { name: /An action waits for your approval/ });
  for (let tries = 0; tries < 100 && (await entries.count()) !== 1; tries += 1) await page.waitForTimeout(100);
  await entries.click();
  await page.getByRole("main", { name: "Email" }).waitFor();
  const approve = review.getByRole("button", { name: "Approve once" });
  await approve.waitFor({ timeout: 30_000 });
  assert.match(await review.innerText(), /Thursday suits me\./);
  await approve.click();
  await review.getByText("Sent.").waitFor({ timeout: 30_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

test("the reply editor on a phone, dark", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE, colorScheme: "dark" });
  await connect(page);
  const { editor, draftId } = await reply(page, "Question about the new office");
  await editor.getByLabel("Message").fill("On my way.");
  await editor.getByText("Saved · revision 2").waitFor();
  // Recipients are typed as text, separators and all.
  const to = editor.getByLabel("To");
  await to.fill("");
  await to.pressSequentially("edsger@shortest.example, grace@cobol.example", { delay: 5 });
  assert.equal(await to.inputValue(), "edsger@shortest.example, grace@cobol.example");
  // Saved once typing stops (a pause mid-typing on a loaded machine may save a part first).
  const expected = ["edsger@shortest.example", "grace@cobol.example"];
  let saved = await (await page.request.get(`/v1/email/drafts/${draftId}`)).json();
  for (let tries = 0; tries < 100 && JSON.stringify(saved.to) !== JSON.stringify(expected); tries += 1) {
    await page.waitForTimeout(100);
    saved = await (await page.request.get(`/v1/email/drafts/${draftId}`)).json();
  }
  assert.deepEqual(saved.to, expected);
  assert.ok(saved.revision >= 3, "typing saved a new revision");
  await editor.getByText(`Saved · revision ${saved.revision}`).waitFor();
  await screenshot(page, "draft-phone-dark");
  assert.deepEqual(await violations(page), [], "the editor on a phone, dark");
  assert.deepEqual(problems, []);
  await context.close();
});

test("feedback applies to an explicitly chosen person and can be undone; learning controls in Settings", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const pane = await open(page, "Update on the conference talk");
  await pane.getByRole("button", { name: "Feedback" }).click();
  const form = pane.getByRole("group", { name: "Feedback" });
  await form.getByRole("radio", { name: "Less important" }).check();
  await form.getByRole("radio", { name: "A person" }).check();
  // A person's feedback needs the person chosen explicitly.
  assert.equal(await form.getByRole("button", { name: "Apply" }).isDisabled(), true);
  const person = form.getByRole("group", { name: "Which person" }).getByRole("radio").first();
  const address = (await person.locator("xpath=..").innerText()).trim();
  await person.check();
  // Changing the target clears the person chosen.
  await form.getByRole("radio", { name: "This conversation" }).check();
  await form.getByRole("radio", { name: "A person" }).check();
  assert.equal(await form.getByRole("button", { name: "Apply" }).isDisabled(), true);
  await person.check();
  await screenshot(page, "feedback-desktop-form");
  // A listing read before the feedback is answered after it (held here): its older copy of the
  // row must not take the reason away.
  /** @type {() => void} */
  let release = () => {};
  const released = new Promise((resolve) => (release = () => resolve(undefined)));
  /** @type {() => void} */
  let held = () => {};
  const holding = new Promise((resolve) => (held = () => resolve(undefined)));
  await page.route(
    "**/v1/email/threads?*",
    async (route) => {
      const before = await route.fetch();
      held();
      await released;
      await route.fulfill({ response: before });
    },
    { times: 1 },
  );
  await page.getByRole("searchbox", { name: "Search mail" }).press("Enter");
  await holding;
  await form.getByRole("button", { name: "Apply" }).click();
  // The answer names the scope applied; the row shows why.
  const applied = pane.getByRole("status").filter({ hasText: `Less important for mail from ${address}.` });
  await applied.waitFor();
  await pane.getByText(`Less important: your rule for mail from ${address}`).waitFor();
  const reason = page.locator(".mail-row.current .reason", { hasText: "Less important" });
  await reason.waitFor();
  const late = page.waitForResponse((response) => response.url().includes("/v1/email/threads?"));
  release();
  await late;
  await page.locator('ul.mail-rows[aria-busy="false"]').waitFor();
  assert.equal(await reason.count(), 1, "the late listing keeps the row feedback changed");
  await screenshot(page, "feedback-desktop-applied");
  await applied.getByRole("button", { name: "Undo" }).click();
  await applied.waitFor({ state: "detached" });
  assert.equal(await pane.locator("p.reason").count(), 0, "the classifier's answer again");

  await page.getByRole("tab", { name: "Chat" }).click();
  await page.getByRole("button", { name: "Settings" }).click();
  const card = page.getByRole("region", { name: "Learning" });
  await card.getByRole("button", { name: "Pause learning" }).click();
  await card.getByText(/Learning is paused/).waitFor();
  await card.getByLabel("Sender's address").fill("news@example.org");
  await card.getByRole("button", { name: "Exclude" }).click();
  await card.getByText("Mail from news@example.org").waitFor();
  await screenshot(page, "settings-learning");
  assert.deepEqual(await violations(page), [], "the Learning card");
  await card.getByRole("button", { name: "Resume learning" }).click();
  await card.getByRole("button", { name: "Pause learning" }).waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});

test("Steward proposes a reply that lands as a revision the owner edits", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const pane = await open(page, "Update on our trip in May");
  await pane.getByRole("button", { name: "Draft with Steward" }).click();
  const editor = page.getByRole("region", { name: "Reply" });
  await editor.getByText("Proposed by Steward · revision 2").waitFor({ timeout: 30_000 });
  assert.match(await editor.getByLabel("Message").inputValue(), /^Hi \w+,\n\nThank you for your message\./);
  await screenshot(page, "draft-desktop-proposed");
  await editor.getByLabel("Message").fill("Thanks, Grace. See you in May.");
  await editor.getByText("Saved · revision 3").waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});
