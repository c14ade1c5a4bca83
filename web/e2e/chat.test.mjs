// The chat in real Chromium against the real stack and its scripted model: connect, send and
// see the streamed answer, approvals (approve and deny), a question, stop, Markdown injection.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, send, screenshot, TOKEN, PHONE, DESKTOP } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** A connected page in a context of its own. */
async function connected() {
  const opened = await newPage(browser);
  await connect(opened.page);
  return opened;
}

test("connecting exchanges the token for a cookie no script can read", async () => {
  const { page, context, problems } = await connected();
  const visible = await page.evaluate(() => ({
    cookie: document.cookie,
    local: JSON.stringify({ ...localStorage }),
    session: JSON.stringify({ ...sessionStorage }),
  }));
  assert.ok(!visible.cookie.includes("steward_session"), "the session cookie is HttpOnly");
  for (const stored of [visible.cookie, visible.local, visible.session]) assert.ok(!stored.includes(TOKEN), "the token is kept nowhere");
  const cookies = await context.cookies();
  const session = cookies.find((cookie) => cookie.name === "steward_session");
  assert.ok(session, "the browser holds the session cookie");
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  assert.deepEqual(problems, []);
  await context.close();
});

test("a wrong token keeps the form open with an explanation", async () => {
  const { page, context } = await newPage(browser);
  await page.goto("/");
  await page.getByLabel("Token").fill("not-the-token-but-long-enough-0123456789");
  await page.getByRole("button", { name: "Connect" }).click();
  await page.getByRole("alert").filter({ hasText: "not the one this server is configured with" }).waitFor();
  assert.equal(await page.getByLabel("Token").isVisible(), true);
  await context.close();
});

test("a message shows at once and its streamed answer arrives, each exactly once", async () => {
  const { page, context, problems } = await connected();
  await send(page, "Hello from the browser");
  // The optimistic bubble shows before any answer.
  await page.locator(".message.user", { hasText: "Hello from the browser" }).first().waitFor();
  const answer = page.locator(".message.assistant:not(.streaming)", { hasText: "You said: Hello from the browser" });
  await answer.waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor();
  assert.equal(await page.locator(".message.user", { hasText: "Hello from the browser" }).count(), 1);
  assert.equal(await page.locator(".message.user.pending").count(), 0, "the persisted message replaced the optimistic one");
  assert.equal(await answer.count(), 1);
  assert.equal(await page.locator(".message.assistant.streaming").count(), 0);
  // The new conversation is in the sidebar.
  await page.getByRole("complementary").getByRole("button", { name: "Hello from the browser" }).first().waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});

test("Shift-Return inserts a newline and Return sends", async () => {
  const { page, context } = await connected();
  const composer = page.getByRole("textbox", { name: "Message", exact: true });
  await composer.fill("first line");
  await composer.press("Shift+Enter");
  await composer.type("second line");
  assert.equal(await composer.inputValue(), "first line\nsecond line");
  await composer.press("Enter");
  await page.locator(".message.assistant", { hasText: "second line" }).waitFor({ timeout: 20_000 });
  assert.equal(await composer.inputValue(), "");
  await context.close();
});

test("a tool call waits for approval, is approved once and completes", async () => {
  const { page, context, problems } = await connected();
  await send(page, '/tool notes.add {"text": "Buy oat milk"}');
  const card = page.getByRole("region", { name: "Approval for notes.add" });
  await card.getByRole("button", { name: "Approve once" }).waitFor({ timeout: 20_000 });
  await page.getByRole("status").filter({ hasText: "Needs your approval" }).waitFor();
  assert.match(await card.locator(".detail").innerText(), /Buy oat milk/);
  const approve = card.getByRole("button", { name: "Approve once" });
  await approve.click();
  // One tap: the controls are gone or disabled, and the card collapses once it is resolved.
  await card.getByRole("button", { name: "Approved once: notes.add" }).waitFor({ timeout: 20_000 });
  await page.locator(".message.assistant", { hasText: "notes.add returned" }).waitFor({ timeout: 20_000 });
  assert.equal(await page.getByRole("status").filter({ hasText: "Needs your approval" }).count(), 0);
  assert.equal(await card.getByRole("button", { name: "Deny" }).count(), 0);
  // The collapsed card expands to its arguments without decision controls.
  await card.getByRole("button", { name: "Approved once: notes.add" }).click();
  assert.match(await card.locator(".detail").innerText(), /Buy oat milk/);
  assert.deepEqual(problems, []);
  await context.close();
});

test("a denied tool call is not run and the run goes on", async () => {
  const { page, context } = await connected();
  await send(page, '/tool notes.add {"text": "Never saved"}');
  const card = page.getByRole("region", { name: "Approval for notes.add" });
  await card.getByRole("button", { name: "Deny" }).click({ timeout: 20_000 });
  await card.getByRole("button", { name: "Denied: notes.add" }).waitFor({ timeout: 20_000 });
  await page.locator(".tool", { hasText: "notes.add · denied" }).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 20_000 });
  await context.close();
});

test("a question is answered with its id and the run completes", async () => {
  const { page, context } = await connected();
  await send(page, "/ask Which colour should the folder be?");
  const card = page.getByRole("region", { name: "Question" });
  await card.getByText("Which colour should the folder be?").waitFor({ timeout: 20_000 });
  await page.getByRole("status").filter({ hasText: "Needs your answer" }).waitFor();
  await card.getByLabel("Your answer").fill("Teal, please");
  await card.getByRole("button", { name: "Answer" }).click();
  await page.locator(".message.assistant", { hasText: "Teal, please" }).waitFor({ timeout: 20_000 });
  await card.getByText("Your answer:").waitFor();
  assert.equal(await page.getByRole("status").filter({ hasText: "Needs your answer" }).count(), 0);
  await context.close();
});

test("Stop cancels the run in progress", async () => {
  const { page, context } = await connected();
  await send(page, "/ask Should I wait?");
  await page.getByRole("region", { name: "Question" }).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Stop" }).click();
  await page.locator(".run-end", { hasText: "Stopped." }).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor();
  await context.close();
});

test("Markdown from the model never becomes script, an element with handlers or a javascript: link", async () => {
  const { page, context, problems } = await connected();
  await page.evaluate(() => {
    // @ts-ignore a marker any injected script would set
    window.injected = 0;
  });
  await send(
    page,
    [
      "Injection <script>window.injected = 1</script>",
      '<img src="x" onerror="window.injected = 2">',
      "[a link](javascript:window.injected=3) and [a safe one](https://example.org/page)",
      "```",
      "<b>code stays text</b>",
      "```",
    ].join("\n"),
  );
  const answer = page.locator(".message.assistant", { hasText: "You said: Injection" });
  await answer.waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor();
  assert.equal(await page.evaluate(() => /** @type {any} */ (window).injected), 0);
  assert.equal(await answer.locator("script, img, iframe, b, [onerror]").count(), 0);
  assert.equal(await page.locator('a[href^="javascript:"]').count(), 0);
  assert.match(await answer.innerText(), /<script>window.injected = 1<\/script>/);
  assert.match(await answer.innerText(), /<img src="x" onerror="window.injected = 2">/);
  const safe = answer.getByRole("link", { name: "a safe one" });
  assert.equal(await safe.getAttribute("href"), "https://example.org/page");
  assert.equal(await safe.getAttribute("rel"), "noopener noreferrer");
  assert.equal(await answer.locator("pre code").innerText(), "<b>code stays text</b>");
  await answer.getByRole("button", { name: "Copy code" }).waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});

test("a long argument is shown whole once its digest and the proposed call prove it; what nothing proves is refused", async () => {
  const { page, context } = await connected();
  const long = "All the milk in the world. ".repeat(30).trim();
  await send(page, `/tool notes.add {"text": "${long}"}`);
  const card = page.getByRole("region", { name: "Approval for notes.add" });
  await card.locator("button:not([disabled])", { hasText: "Approve once" }).waitFor({ timeout: 20_000 });
  await card.getByText("Shown whole: each shortened part matches its SHA-256 digest").waitFor();
  const shown = await card.getByLabel("Arguments").innerText();
  assert.ok(shown.includes(long), "the whole text, not its first 512 characters");
  // The page's own checks: a proposal that is not the approved call, no proposal at all, and a
  // cut whose digest was taken away.
  const verdicts = await page.evaluate(async () => {
    // The page's own module instance, under its content-hashed name.
    const url = performance
      .getEntriesByType("resource")
      .map((entry) => entry.name)
      .find((name) => /\/app\/chat(\.[0-9a-f]{16})?\.js$/.test(name));
    const chat = await import(/** @type {string} */ (url));
    const card = chat.transcript.value.find((item) => item.kind === "approval");
    const tampered = { text: `${card.whole.text} and one thing more` };
    return {
      whole: card.whole.text.length,
      tampered: (await chat.proveApproval({ ...card, proposals: [tampered] })).proof,
      none: (await chat.proveApproval({ ...card, proposals: [] })).proof,
      stripped: chat.refuseTruncated({ ...card, digests: {} }),
    };
  });
  assert.equal(verdicts.whole, long.length);
  assert.match(verdicts.tampered, /matches no call Steward proposed.*cannot be approved/);
  assert.match(verdicts.none, /proposed call was not found.*cannot be approved/);
  assert.match(String(verdicts.stripped), /cannot be approved/);
  await card.getByRole("button", { name: "Approve once" }).click();
  await card.getByRole("button", { name: "Approved once: notes.add" }).waitFor({ timeout: 20_000 });
  await context.close();
});

for (const [name, viewport] of [["phone", PHONE], ["desktop", DESKTOP]]) {
  test(`a send shows recipients, subject and a 3,000-character body whole, its last line in view before approval (${name})`, async () => {
    const { page, context, problems } = await newPage(browser, { viewport });
    await connect(page);
    if (name === "phone") await page.getByRole("button", { name: "New chat" }).click();
    // What an injected instruction would have the model do: harmless text past the first 512
    // characters, then what it found.
    const lines = Array.from({ length: 30 }, (_, n) => `${n + 1}. Thank you for the report; nothing here needs your attention at all.`);
    const last = "LAST LINE: and here is what search_threads found in your mailbox";
    const body = [...lines, last].join("\n");
    assert.ok(body.length > 2_000);
    const call = { account_id: "demo", to: ["ada@example.org"], subject: `Your report (${name})`, body: `${body}\n${"x".repeat(900)}\n${last}` };
    // A first line of its own titles the conversation (the scripted model reads the `/tool` line).
    await send(page, `Answer Ada's report (${name})\n/tool mcp.mail_send.send_message ${JSON.stringify(call)}`);
    const card = page.getByRole("region", { name: "Approval for mcp.mail_send.send_message" });
    await card.locator("button:not([disabled])", { hasText: "Approve once" }).waitFor({ timeout: 20_000 });
    const message = card.getByLabel("Message", { exact: true });
    await message.getByText("ada@example.org").waitFor();
    await message.getByText(`Your report (${name})`).waitFor();
    const bodyBox = card.getByLabel("Body");
    const seen = await bodyBox.evaluate((element, wanted) => {
      element.scrollIntoView({ block: "end" });
      element.scrollTop = element.scrollHeight;
      const text = /** @type {Text} */ (element.firstChild);
      const at = text.data.lastIndexOf(wanted);
      const range = document.createRange();
      range.setStart(text, at);
      range.setEnd(text, at + wanted.length);
      const line = range.getBoundingClientRect();
      const box = element.getBoundingClientRect();
      return {
        length: text.data.length,
        inBox: line.top >= box.top - 1 && line.bottom <= box.bottom + 1,
        inViewport: line.top >= 0 && line.bottom <= window.innerHeight,
        scrolls: element.scrollHeight > element.clientHeight,
      };
    }, last);
    assert.equal(seen.length, call.body.length, "the whole body, not its first 512 characters");
    assert.ok(seen.scrolls, "the body scrolls within the card");
    assert.ok(seen.inBox && seen.inViewport, JSON.stringify(seen));
    await screenshot(page, `approval-send-${name}`);
    await card.getByRole("button", { name: "Deny" }).click();
    await card.getByRole("button", { name: "Denied: mcp.mail_send.send_message" }).waitFor({ timeout: 20_000 });
    assert.deepEqual(problems, []);
    await context.close();
  });
}

test("Copy puts semantic HTML without colour and plain text on the clipboard; a code block copies its code", async () => {
  const { page, context } = await connected();
  await send(page, "Copy **this** and `that`\n\n```\nlet x = 1;\n```");
  const answer = page.locator(".message.assistant", { hasText: "You said: Copy" });
  await answer.waitFor({ timeout: 20_000 });
  await answer.locator(".actions").getByRole("button", { name: "Copy" }).click();
  await answer.locator(".actions").getByRole("button", { name: "Copied" }).waitFor();
  const copied = await page.evaluate(async () => {
    const [item] = await navigator.clipboard.read();
    return {
      types: item.types,
      html: await (await item.getType("text/html")).text(),
      plain: await (await item.getType("text/plain")).text(),
    };
  });
  assert.ok(copied.types.includes("text/html") && copied.types.includes("text/plain"), copied.types.join());
  assert.match(copied.html, /<strong>this<\/strong>/);
  assert.match(copied.html, /<code>that<\/code>/);
  assert.doesNotMatch(copied.html, /class=|style=|<button/);
  assert.match(copied.plain, /You said: Copy \*\*this\*\*/);
  await answer.getByRole("button", { name: "Copy code" }).click();
  await answer.getByRole("button", { name: "Copy code" }).filter({ hasText: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "let x = 1;");
  await context.close();
});

test("tool calls in a row of one tool collapse into one counted bundle showing their risk", async () => {
  const { page, context } = await connected();
  await send(page, "/tool notes.list {}\n/tool notes.list {}\n/tool notes.list {}");
  // The risk comes from the server: each call's events carry the tool's risk in the roster.
  await page.locator(".tool", { hasText: "notes.list × 3 · done · low risk" }).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor({ timeout: 20_000 });
  assert.equal(await page.locator(".tool", { hasText: "notes.list" }).count(), 1);
  await context.close();
});

test("the service worker caches the app shell and never an API answer", async () => {
  const { page, context } = await connected();
  await page.evaluate(() => navigator.serviceWorker.ready);
  await page.reload();
  await page.getByRole("button", { name: "New chat" }).waitFor();
  const cached = await page.evaluate(async () => {
    const urls = [];
    for (const name of await caches.keys()) {
      for (const request of await (await caches.open(name)).keys()) urls.push(new URL(request.url).pathname);
    }
    return { urls, controlled: navigator.serviceWorker.controller !== null };
  });
  assert.equal(cached.controlled, true);
  assert.ok(cached.urls.includes("/"), cached.urls.join());
  assert.ok(cached.urls.some((url) => /^\/app\/main\.[0-9a-f]{16}\.js$/.test(url)), cached.urls.join());
  assert.deepEqual(cached.urls.filter((url) => url.startsWith("/v1") || url.startsWith("/health")), []);
  await context.close();
});

test("a message the server does not accept leaves no bubble and comes back to the composer", async () => {
  const { page, context } = await connected();
  await send(page, "First, to make the conversation");
  await page.locator(".message.assistant", { hasText: "You said: First" }).waitFor({ timeout: 20_000 });
  await page.getByRole("button", { name: "Send" }).waitFor();
  await page.route("**/messages", (route) =>
    route.fulfill({
      status: 503,
      contentType: "application/problem+json",
      body: JSON.stringify({ type: "urn:steward:problem:not_ready", title: "Not ready", status: 503, code: "not_ready", detail: "The service is starting." }),
    }),
  );
  await send(page, "This one fails");
  await page.getByRole("alert").filter({ hasText: "The service is starting." }).waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Message", exact: true }).inputValue(), "This one fails");
  assert.equal(await page.locator(".message.user", { hasText: "This one fails" }).count(), 0);

  // A reply still in progress: the page attaches to it and queues nothing.
  await page.unroute("**/messages");
  await page.route("**/messages", (route) =>
    route.fulfill({
      status: 409,
      contentType: "application/problem+json",
      body: JSON.stringify({ type: "urn:steward:problem:active_run_exists", title: "A run is active", status: 409, code: "active_run_exists", run_id: "01a20000-0000-7000-8000-000000000000" }),
    }),
  );
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByRole("alert").filter({ hasText: "A reply is still in progress" }).waitFor();
  await page.getByRole("button", { name: "Stop" }).waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Message", exact: true }).inputValue(), "This one fails");
  await context.close();
});

test("a run cancelled at its deadline explains the deadline", async () => {
  const { page, context } = await connected();
  const created = await page.request.post("/v1/sessions", {
    headers: { "X-Steward-CSRF": "1" },
    data: { agent_id: "default", metadata: { title: "Deadline" } },
  });
  const session = (await created.json()).session_id;
  const run = "01a20000-0000-7000-8000-00000000d1ad";
  const frame = (/** @type {number} */ seq, /** @type {string} */ kind, /** @type {object} */ payload) =>
    `id: ${seq}\nevent: ${kind}\ndata: ${JSON.stringify({ seq, run_id: run, created_at: new Date().toISOString(), kind, payload })}\n\n`;
  // The stream as the server writes it, for a run its deadline cancelled.
  await page.route(`**/v1/sessions/${session}/events*`, (route) =>
    route.fulfill({
      status: 200,
      contentType: "text/event-stream",
      body:
        frame(1, "user.message.created", { run_id: run, message: { text: "A long job", attachments: [] } }) +
        frame(2, "run.cancelled", { run_id: run, state: "cancelled", reason: "deadline" }),
    }),
  );
  await page.goto(`/#session=${session}`);
  await page.locator(".run-end", { hasText: "ran out of time" }).waitFor({ timeout: 20_000 });
  assert.equal(await page.locator(".message.user", { hasText: "A long job" }).count(), 1);
  await context.close();
});
