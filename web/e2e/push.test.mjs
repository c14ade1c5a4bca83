// Web Push in the web client. Settings offers notifications (checking the permission first and
// taking a refusal quietly), subscribes with the server's key and registers the subscription as
// a device, again on every load, and revokes it on Forget. No push service is reachable here, so
// the browser's subscription is the test's (PushManager answered in the page) and pushes reach
// the service worker through the DevTools protocol (`ServiceWorker.deliverPushMessage`).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { BASE, launch, newPage, connect, send, screenshot, PHONE } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const ORIGIN = new URL(BASE).origin;

/**
 * The page's PushManager, answered by the test: a subscription with a made-up endpoint and the
 * key it was asked for, kept in the page's storage like a browser keeps its own. `permission`
 * overrides what `Notification.permission` says and what asking answers.
 * @param {import("playwright-core").BrowserContext} context
 * @param {{permission?: string}} [options]
 */
async function answerPushManager(context, { permission } = {}) {
  await context.addInitScript((permission) => {
    const KEY = "test.push-subscription";
    const P256DH = "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
    const AUTH = "_ordMnz7uTCmrpBTeUV4Bw";
    /** @param {{endpoint: string, key: number[]}} stored */
    const subscription = (stored) => ({
      endpoint: stored.endpoint,
      options: { applicationServerKey: Uint8Array.from(stored.key).buffer, userVisibleOnly: true },
      toJSON: () => ({ endpoint: stored.endpoint, expirationTime: null, keys: { p256dh: P256DH, auth: AUTH } }),
      unsubscribe: async () => {
        localStorage.removeItem(KEY);
        return true;
      },
    });
    PushManager.prototype.getSubscription = async function () {
      const stored = JSON.parse(localStorage.getItem(KEY) ?? "null");
      return stored && subscription(stored);
    };
    PushManager.prototype.subscribe = async function (/** @type {any} */ options) {
      const stored = { endpoint: `https://push.example.test/send/${crypto.randomUUID()}`, key: Array.from(new Uint8Array(options.applicationServerKey)) };
      localStorage.setItem(KEY, JSON.stringify(stored));
      return subscription(stored);
    };
    if (permission) {
      Object.defineProperty(Notification, "permission", { get: () => permission });
      Notification.requestPermission = async () => /** @type {NotificationPermission} */ ("denied");
    }
  }, permission ?? null);
}

/** @param {import("playwright-core").Page} page */
async function openSettings(page) {
  await page.getByRole("button", { name: "Settings" }).click();
  return page.getByRole("region", { name: "Notifications on this browser" });
}

test("Settings turns notifications on, registers the subscription on every load and revokes it on Forget", async () => {
  const { page, context, problems } = await newPage(browser, { viewport: PHONE });
  await context.grantPermissions(["notifications"], { origin: ORIGIN });
  await answerPushManager(context);
  await connect(page);
  const card = await openSettings(page);
  await card.getByText("Get an alert on this device").waitFor();
  await card.scrollIntoViewIfNeeded();
  await screenshot(page, "push-settings-off-phone");

  const registered = page.waitForResponse((r) => r.url().endsWith("/v1/devices/web-push") && r.request().method() === "POST");
  await card.getByRole("button", { name: "Turn on notifications" }).click();
  const first = await registered;
  assert.equal(first.status(), 201);
  const body = first.request().postDataJSON();
  assert.match(body.endpoint, /^https:\/\/push\.example\.test\/send\//);
  assert.deepEqual(Object.keys(body).sort(), ["auth", "client_device_id", "endpoint", "p256dh"]);
  const device = (await first.json()).client_device_id;
  assert.equal(device, body.client_device_id);
  await card.getByText("On for this browser").waitFor();
  await screenshot(page, "push-settings-on-phone");

  // Every load registers the subscription again (the same device).
  const again = page.waitForResponse((r) => r.url().endsWith("/v1/devices/web-push") && r.request().method() === "POST");
  await page.reload();
  const repeated = await again;
  assert.equal(repeated.status(), 200);
  assert.equal(repeated.request().postDataJSON().client_device_id, device);

  // The push service renewed the subscription: the service worker tells the page, which
  // registers it again.
  const renewed = page.waitForResponse((r) => r.url().endsWith("/v1/devices/web-push") && r.request().method() === "POST");
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker"));
  await worker.evaluate(() => self.dispatchEvent(new ExtendableEvent("pushsubscriptionchange")));
  assert.equal((await renewed).status(), 200);

  // Forget revokes the device before the session ends.
  const order = [];
  page.on("request", (request) => {
    if (request.method() === "DELETE") order.push(new URL(request.url()).pathname);
  });
  await (await openSettings(page)).waitFor();
  await page.getByRole("button", { name: "Forget this connection" }).click();
  await page.getByRole("button", { name: "Connect" }).waitFor();
  assert.deepEqual(order, [`/v1/devices/${device}`, "/v1/web/session"]);
  assert.equal(await page.evaluate(() => localStorage.getItem("test.push-subscription")), null, "unsubscribed");
  assert.deepEqual(problems, []);
  await context.close();
});

test("a refusal is respected without an error, and a server without Web Push leaves the rest working", async () => {
  {
    const { page, context, problems } = await newPage(browser, { colorScheme: "dark" });
    await answerPushManager(context, { permission: "default" });
    await connect(page);
    const card = await openSettings(page);
    await card.getByRole("button", { name: "Turn on notifications" }).click();
    await card.getByText("Notifications are blocked for this site").waitFor();
    await screenshot(page, "push-settings-blocked-desktop-dark");
    assert.equal(await card.getByRole("alert").count(), 0, "a refusal is not an error");
    assert.equal(await card.getByRole("button").count(), 0, "nothing to press again");
    assert.deepEqual(problems, []);
    await context.close();
  }
  {
    const { page, context, problems } = await newPage(browser);
    await answerPushManager(context, { permission: "denied" });
    let asked = 0;
    page.on("request", (request) => {
      if (request.url().endsWith("/v1/devices/web-push") && request.method() === "POST") asked += 1;
    });
    await connect(page);
    const card = await openSettings(page);
    await card.getByText("Notifications are blocked for this site").waitFor();
    assert.equal(await card.getByRole("alert").count(), 0);
    assert.equal(asked, 0);
    assert.deepEqual(problems, []);
    await context.close();
  }
  {
    const { page, context, problems } = await newPage(browser);
    await context.grantPermissions(["notifications"], { origin: ORIGIN });
    await answerPushManager(context);
    await page.route("**/v1/devices/web-push", (route) =>
      route.fulfill({ status: 404, contentType: "application/problem+json", body: JSON.stringify({ type: "about:blank", title: "Not found", status: 404, code: "not_found" }) }),
    );
    await connect(page);
    const card = await openSettings(page);
    await card.getByText("This server does not offer notifications to browsers.").waitFor();
    assert.equal(await card.getByRole("alert").count(), 0);
    await page.getByRole("button", { name: "New chat" }).click();
    await send(page, "Hello there");
    await page.locator(".message.assistant").first().waitFor({ timeout: 20_000 });
    assert.deepEqual(problems.filter((p) => !p.includes("404")), []);
    await context.close();
  }
});

/**
 * The service worker's registration id, for the DevTools protocol.
 * @param {import("playwright-core").CDPSession} cdp
 */
async function registrationId(cdp) {
  /** @type {Promise<string>} */
  const found = new Promise((resolve) => {
    cdp.on("ServiceWorker.workerRegistrationUpdated", (event) => {
      const live = event.registrations.find((r) => !r.isDeleted && r.scopeURL.startsWith(ORIGIN));
      if (live) resolve(live.registrationId);
    });
  });
  await cdp.send("ServiceWorker.enable");
  return found;
}

/** The alerts the service worker shows. @param {import("playwright-core").Page} page */
function shown(page) {
  return page.evaluate(async () =>
    (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data })),
  );
}

/** @param {import("playwright-core").Page} page @param {(alerts: any[]) => boolean} until */
async function waitShown(page, until) {
  for (let i = 0; i < 100; i += 1) {
    const alerts = await shown(page);
    if (until(alerts)) return alerts;
    await page.waitForTimeout(100);
  }
  throw new Error(`the alerts never settled: ${JSON.stringify(await shown(page))}`);
}

test("the service worker shows alerts per conversation, not for the one in view, opens the card on a click and closes obsolete ones", async () => {
  const { page, context, problems } = await newPage(browser);
  await context.grantPermissions(["notifications"], { origin: ORIGIN });
  await answerPushManager(context);
  await connect(page);
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
  const cdp = await context.newCDPSession(page);
  const registration = await registrationId(cdp);
  /** @param {unknown} payload */
  const deliver = (payload) =>
    cdp.send("ServiceWorker.deliverPushMessage", { origin: ORIGIN, registrationId: registration, data: JSON.stringify(payload) });

  // A real approval, in the conversation this focused page shows.
  await send(page, '/tool notes.add {"text": "Buy stamps"}');
  await page.getByRole("button", { name: "Approve once" }).waitFor({ timeout: 20_000 });
  const pending = (await (await page.request.get("/v1/notifications")).json()).notifications;
  // The newest: earlier test files leave approvals of their own pending (the list is oldest first).
  const approval = pending.filter((/** @type {any} */ n) => n.kind === "approval" && n.payload.approval_id).at(-1);
  assert.ok(approval, "the approval's notification is pending");
  const session = approval.payload.session_id;
  const alert = { alert: "Approval needed: notes.add", steward: approval.payload };

  await deliver(alert);
  await page.waitForTimeout(4_000);
  const state = await page.evaluate(() => ({ focused: document.hasFocus(), visibility: document.visibilityState }));
  assert.deepEqual(
    (await shown(page)).filter((a) => a.tag === `session:${session}`),
    [],
    `not shown while its conversation is in view in a focused window (the page: ${JSON.stringify(state)})`,
  );

  // Elsewhere in the page: an older alert for that conversation, then the approval replaces it.
  await page.getByRole("button", { name: "New chat" }).click();
  const older = { v: 1, kind: "question", notification_id: crypto.randomUUID(), session_id: session, question_id: crypto.randomUUID() };
  await deliver({ alert: "Your agent has a question", steward: older });
  let alerts = await waitShown(page, (all) => all.some((a) => a.tag === `session:${session}`));
  assert.equal(alerts[0].body, "Your agent has a question");
  await deliver(alert);
  alerts = await waitShown(page, (all) => all.some((a) => a.body === alert.alert));
  assert.deepEqual(
    alerts.map((a) => ({ title: a.title, body: a.body, tag: a.tag, id: a.data.notification_id })),
    [{ title: "Steward", body: "Approval needed: notes.add", tag: `session:${session}`, id: approval.notification_id }],
    "one alert per conversation, the newer text",
  );
  // A member outside the closed dictionary never reaches the alert's data.
  await deliver({ alert: "A scheduled task has an outcome", steward: { v: 1, kind: "schedule_outcome", notification_id: crypto.randomUUID(), occurrence_id: crypto.randomUUID(), subject: "Salary" } });
  alerts = await waitShown(page, (all) => all.length === 2);
  const outcome = alerts.find((a) => a.tag.startsWith("occurrence:"));
  assert.deepEqual(Object.keys(outcome.data).sort(), ["kind", "notification_id", "occurrence_id", "v"]);

  // Obsolete (withdrawn by the server): closed.
  await deliver({ steward: { v: 1, kind: "withdrawn", notification_id: outcome.data.notification_id } });
  await waitShown(page, (all) => all.length === 1);

  // A click opens the conversation at its approval card, acknowledges and closes the alert.
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker"));
  await worker.evaluate(async () => {
    const sw = /** @type {any} */ (self);
    const [clicked] = await sw.registration.getNotifications();
    sw.dispatchEvent(new sw.NotificationEvent("notificationclick", { notification: clicked }));
  });
  await page.waitForFunction(() => document.activeElement?.textContent?.includes("Approve once"), null, { timeout: 20_000 });
  await page.waitForFunction(
    async (id) => !(await (await fetch("/v1/notifications")).json()).notifications.some((/** @type {any} */ n) => n.notification_id === id),
    approval.notification_id,
    { timeout: 10_000 },
  );
  await waitShown(page, (all) => all.length === 0);

  // With no window open, a click opens one at a link naming the same: it opens the card too.
  const link = `/#${new URLSearchParams(Object.entries(approval.payload).map(([key, value]) => [key, String(value)]))}`;
  await page.getByRole("button", { name: "New chat" }).click();
  await page.goto(link);
  await page.waitForFunction(() => document.activeElement?.textContent?.includes("Approve once"), null, { timeout: 20_000 });
  assert.equal(new URL(page.url()).hash, "", "the link is consumed");

  // An alert the server no longer lists is closed when the page reads the list.
  await page.getByRole("button", { name: "New chat" }).click();
  const stale = { v: 1, kind: "question", notification_id: crypto.randomUUID(), session_id: crypto.randomUUID() };
  await deliver({ alert: "Your agent has a question", steward: stale });
  await waitShown(page, (all) => all.length === 1);
  await page.getByRole("button", { name: /^Notifications/ }).click();
  await waitShown(page, (all) => all.length === 0);

  assert.deepEqual(problems, []);
  await context.close();
});
