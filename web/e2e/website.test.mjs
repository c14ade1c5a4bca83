// Website Access in the browser, with the hosted browser on: the stack runs the browser role (on
// its own Xvfb) and the demo tea shop (`steward-demo-shop`, `https://shop.example`, its orders
// listed at STEWARD_DEMO_SHOP_ORDERS_URL). Settings adds the shop and begins the remote
// ceremony; `Continue in web browser` opens the role's sign-in page, where the owner signs in to
// the shop through its picture (`ada` / `tea`) and keeps the sign-in; the profile is then ready
// and chosen for new conversations. In a conversation on it the agent reads the shop, and every
// change waits for the owner: the first typing is allowed for the task (after a confirmation
// naming the scope, limits and exceptions), the next choice is covered by that task permission
// (shown above the composer, with Stop), and placing the order, a purchase, asks again whatever
// the permission says. The order reaches the shop only then. axe finds nothing serious.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, newPage, connect, send, screenshot, violations, PHONE } from "./support.mjs";

const ORDERS = process.env.STEWARD_DEMO_SHOP_ORDERS_URL ?? "";
const SHOP = "https://shop.example";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** The orders the shop took. @returns {Promise<string[][][]>} */
async function orders() {
  const response = await fetch(ORDERS);
  assert.equal(response.status, 200);
  return response.json();
}

/**
 * Clicks the sign-in page's picture where the website shows (x, y) in its own pixels.
 * @param {import("playwright-core").Locator} screen @param {[number, number]} at
 */
async function clickWebsite(screen, [x, y]) {
  // The image may report no size while its next picture loads: the scale is read once it has one.
  const scale = await screen.evaluate(async (/** @type {HTMLImageElement} */ image) => {
    while (!image.naturalWidth) await new Promise((resolve) => setTimeout(resolve, 20));
    return image.naturalWidth / image.getBoundingClientRect().width;
  });
  await screen.click({ position: { x: x / scale, y: y / scale } });
}

test("the owner signs in to a website remotely and the agent orders there only with approval", async () => {
  assert.ok(ORDERS, "the stack names the demo shop's orders");
  const before = (await orders()).length;
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  await page.getByRole("button", { name: "Settings" }).click();
  const card = page.getByRole("region", { name: "Website Access" });
  await card.waitFor({ timeout: 20_000 });
  await card.getByLabel("Website", { exact: true }).fill(SHOP);
  await card.getByLabel("Sign-in page").fill(`${SHOP}/signin`);
  await card.getByRole("button", { name: "Add and sign in" }).click();
  const link = card.getByRole("link", { name: "Continue in web browser" });
  await link.waitFor({ timeout: 20_000 });
  assert.match((await card.getByRole("status").first().textContent()) ?? "", /Waiting for you to sign in/);
  // Start over: the setup is made afresh, with a new single-use link.
  const first = await link.getAttribute("href");
  await card.getByRole("button", { name: "Start over" }).click();
  await page.waitForFunction(
    (old) => {
      const anchor = [...document.querySelectorAll("a")].find((a) => a.textContent === "Continue in web browser");
      return anchor && anchor.getAttribute("href") !== old;
    },
    first,
    { timeout: 20_000 },
  );
  // The link lives in the page's memory only.
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
  assert.ok(!stored.includes("sign-in"), `no sign-in link is stored: ${stored}`);
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "website-ceremony");

  // The sign-in page, in a tab of its own on the browser role's outside address.
  const [signIn] = await Promise.all([context.waitForEvent("page"), link.click()]);
  const screen = signIn.locator("#screen");
  await screen.waitFor({ state: "visible", timeout: 60_000 });
  await signIn.waitForFunction(() => /** @type {HTMLImageElement} */ (document.getElementById("screen")).naturalWidth > 0);
  assert.ok(!signIn.url().includes("#"), "the capability left the address at once");
  // What the page sent the website, named in a failure.
  const sent = [];
  signIn.on("request", (request) => {
    if (request.url().endsWith("/sign-in/input")) sent.push(request.postData());
  });
  // A picture that fails (one taken while the website loads its next page may) is not reported
  // unless three fail in a row, and the next picture takes the report back.
  const status = signIn.getByRole("status");
  let failing = 2;
  let served = 0;
  await signIn.route("**/sign-in/screen", async (route) => {
    if (failing > 0) {
      failing -= 1;
      await route.fulfill({ status: 502, contentType: "application/problem+json", body: '{"code":"browser.failed"}' });
    } else {
      served += 1;
      await route.continue();
    }
  });
  for (let waited = 0; failing > 0 || served === 0; waited += 1) {
    assert.ok(waited < 100, "the page asks for pictures again");
    await signIn.waitForTimeout(200);
  }
  assert.match((await status.textContent()) ?? "", /^Sign in below/);
  failing = 3;
  await signIn.waitForFunction(() => document.getElementById("status")?.textContent?.startsWith("Something went wrong"), null, { timeout: 20_000 });
  await signIn.waitForFunction(() => document.getElementById("status")?.textContent?.startsWith("Sign in below"), null, { timeout: 20_000 });
  await signIn.unroute("**/sign-in/screen");
  const typing = signIn.getByLabel("Type into the chosen field");
  await clickWebsite(screen, [120, 115]);
  await typing.fill("ada");
  await signIn.getByRole("button", { name: "Type", exact: true }).click();
  await clickWebsite(screen, [120, 165]);
  await typing.fill("tea");
  await signIn.getByRole("button", { name: "Type", exact: true }).click();
  await signIn.getByRole("button", { name: "Enter", exact: true }).click();
  await screenshot(signIn, "website-sign-in");
  // The shop answers the sign-in with its cookie; until then keeping is refused and may be tried again.
  const said = [];
  for (let attempt = 0; attempt < 20; attempt += 1) {
    await signIn.waitForFunction(() => !(/** @type {HTMLButtonElement} */ (document.getElementById("done")).disabled), null, { timeout: 150_000 });
    await signIn.getByRole("button", { name: "I'm signed in" }).click();
    // Keeping reads the browser's cookies and storage over DevTools: slow on a loaded machine.
    await signIn.waitForFunction(() => !document.getElementById("status")?.textContent?.includes("Keeping"), null, { timeout: 150_000 });
    said.push((await status.textContent()) ?? "");
    if (said[said.length - 1].startsWith("You are signed in")) break;
    await signIn.waitForTimeout(500);
  }
  assert.match(said[said.length - 1], /^You are signed in/, `${said.join(" | ")}; inputs sent: ${sent.join(" ")}`);
  // Each click reached the website where the picture was clicked, whenever its next picture was loading.
  const clicks = sent.map((body) => JSON.parse(body ?? "{}")).filter((input) => input.kind === "click");
  assert.deepEqual(clicks.map(({ x, y }) => [Math.round(x), Math.round(y)]), [[120, 115], [120, 165]]);
  await signIn.close();

  // Back in Steward: the profile is ready; new conversations use it.
  await page.bringToFront();
  // Read when the owner comes back; `Check status` while it still shows.
  const checkStatus = card.getByRole("button", { name: "Check status" });
  if (await checkStatus.count()) await checkStatus.click();
  const profile = card.getByRole("listitem", { name: SHOP }).filter({ hasText: "Signed in" });
  await profile.getByText("Signed in").waitFor({ timeout: 20_000 });
  await profile.getByLabel("Use in new conversations").check();
  await screenshot(page, "website-ready");

  await page.getByRole("button", { name: "New chat" }).click();
  await page.getByText(`This conversation can act on ${SHOP} as you`).waitFor();
  await send(
    page,
    [
      `/tool browser.act {"action":"navigate","url":"${SHOP}/"}`,
      '/tool browser.act {"action":"type","element":"e0","text":"Ada"}',
      '/tool browser.act {"action":"select","element":"e1","value":"large"}',
      '/tool browser.act {"action":"submit","element":"e2"}',
    ].join("\n"),
  );
  // Reading needs no approval; the first change asks, naming the action, the element and the page.
  const typeCard = page.locator("section.card.attention", { hasText: "Type into" });
  await typeCard.waitFor({ timeout: 60_000 });
  assert.match((await typeCard.getByRole("heading").textContent()) ?? "", /act on a website/);
  const shown = (await typeCard.locator("dl.browser-act").textContent()) ?? "";
  for (const words of ["Type into", "“Your name”", `${SHOP}/`, "Ada"]) assert.ok(shown.includes(words), `the card shows ${words}: ${shown}`);
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "website-act-approval");
  await typeCard.getByRole("button", { name: "Allow all actions for this task" }).click();
  const confirm = typeCard.getByRole("group", { name: "Allow all actions for this task" });
  const terms = (await confirm.textContent()) ?? "";
  assert.match(terms, /next 19 actions of this task on https:\/\/shop\.example for 15 minutes/);
  assert.match(terms, /Never purchases or signing out/);
  await screenshot(page, "website-allow-for-task");
  await confirm.getByRole("button", { name: "Allow for this task" }).click();

  // The choice is covered by the task permission; placing the order is a purchase and asks.
  const orderCard = page.locator("section.card.attention", { hasText: "Submit" });
  await orderCard.waitFor({ timeout: 60_000 });
  assert.match((await orderCard.locator("dl.browser-act").textContent()) ?? "", /purchases are never covered/);
  assert.equal(await orderCard.getByRole("button", { name: "Allow all actions for this task" }).count(), 0, "an exception offers no task permission");
  // The typing and the choice were both allowed by the task permission, and nothing else waits.
  const allowed = page.getByRole("button", { name: /Allowed for the task: browser\.act/ });
  await allowed.nth(1).waitFor();
  assert.equal(await allowed.count(), 2);
  assert.equal(await page.locator("section.card.attention").count(), 1, "only the purchase asks");
  const bar = page.getByRole("status", { name: "Task permission" });
  // What is left, read again as each covered action appears: the typing and the choice used two.
  await bar.getByText(/18 actions/).waitFor({ timeout: 20_000 });
  assert.match((await bar.textContent()) ?? "", /Allowed on https:\/\/shop\.example: 18 actions and 1?\d min left; never purchases or signing out\./);
  assert.equal((await orders()).length, before, "nothing ordered before the owner allows it");
  await screenshot(page, "website-task-permission");
  // Stopped at once: the bar goes.
  await bar.getByRole("button", { name: "Stop" }).click();
  await bar.waitFor({ state: "detached", timeout: 20_000 });
  const active = await (await page.request.get("/v1/browser/task-permissions")).json();
  assert.deepEqual(active.task_permissions, [], "the server lists none in force");

  await orderCard.getByRole("button", { name: "Allow once" }).click();
  await page.locator(".message.assistant", { hasText: "browser.act returned" }).last().waitFor({ timeout: 60_000 });
  const placed = await orders();
  assert.equal(placed.length, before + 1, "one order, placed once");
  assert.deepEqual(placed[placed.length - 1], [["name", "Ada"], ["size", "large"]]);
  assert.deepEqual(problems, []);
  await context.close();
});

test("Website Access reads on a phone in the dark appearance", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE, colorScheme: "dark" });
  await connect(page);
  await page.getByRole("button", { name: "Settings" }).click();
  const card = page.getByRole("region", { name: "Website Access" });
  await card.scrollIntoViewIfNeeded();
  await card.getByRole("listitem", { name: SHOP }).first().waitFor({ timeout: 20_000 });
  await card.getByRole("button", { name: /Task permissions: (none|\d+) active/ }).waitFor();
  assert.deepEqual(await violations(page), []);
  await screenshot(page, "website-phone-dark");
  assert.deepEqual(problems, []);
  await context.close();
});
