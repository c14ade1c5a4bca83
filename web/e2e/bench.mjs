// The web client's budgets, for `cargo xtask bench` (not a test): prints one JSON object.
//   node bench.mjs <session with many events> <its persisted event count>
// with STEWARD_URL, STEWARD_TOKEN_FILE and CHROMIUM set as for the tests.
// - shell bytes: what the first load transfers of script and style, brotli as the browser asks;
// - first paint of the connection page, cold, beside the first paint of a static page of the
//   same size served from loopback by Node in the same run (the reference);
// - the conversation of many events: time until every message shows, and the longest task
//   while it opens and while it is scrolled through from top to bottom.
import http from "node:http";
import { launch, newPage, BASE, TOKEN } from "./support.mjs";

const [session, events] = process.argv.slice(2);

async function shellBytes() {
  const page = await (await fetch(`${BASE}/`)).text();
  const assets = new Set(["/app.css", "/app/main.js"]);
  for (const match of page.matchAll(/(?:href|src)="(\/[^"]+\.(?:m?js|css))"/g)) assets.add(match[1]);
  // The modules main.js imports, transitively.
  const queue = [...assets].filter((asset) => asset.endsWith("js"));
  while (queue.length) {
    const asset = /** @type {string} */ (queue.pop());
    const text = await (await fetch(`${BASE}${asset}`)).text();
    for (const match of text.matchAll(/(?:import|from)\s*["']([^"']+\.m?js)["']/g)) {
      const resolved = new URL(match[1], `${BASE}${asset}`).pathname;
      if (!assets.has(resolved)) {
        assets.add(resolved);
        queue.push(resolved);
      }
    }
  }
  return { assets: assets.size, bytes: await compressedTotal(assets) };
}

/** The bytes each asset takes on the wire, compressed as a browser asks (Node's http client
 * does not decompress). @param {Set<string>} assets */
async function compressedTotal(assets) {
  let total = 0;
  for (const asset of assets) {
    total += await new Promise((resolve, reject) => {
      const request = http.get(`${BASE}${asset}`, { headers: { "Accept-Encoding": "br, gzip" } }, (response) => {
        let size = 0;
        response.on("data", (chunk) => (size += chunk.length));
        response.on("end", () => resolve(size));
      });
      request.on("error", reject);
    });
  }
  return total;
}

async function firstPaint(browser, url) {
  const { page, context } = await newPage(browser, { origin: url });
  await page.goto(url);
  const paint = await page.evaluate(
    () =>
      new Promise((resolve) => {
        const found = performance.getEntriesByName("first-contentful-paint")[0];
        if (found) return resolve(found.startTime);
        new PerformanceObserver((list) => resolve(list.getEntries()[0].startTime)).observe({ type: "paint", buffered: true });
      }),
  );
  await context.close();
  return paint;
}

async function conversation(browser) {
  const { page, context } = await newPage(browser);
  await page.addInitScript(() => {
    // @ts-ignore collected for the bench
    window.longTasks = [];
    new PerformanceObserver((list) => {
      // @ts-ignore
      for (const entry of list.getEntries()) window.longTasks.push(entry.duration);
    }).observe({ type: "longtask", buffered: true });
  });
  await page.goto("/");
  await page.getByLabel("Token").fill(TOKEN);
  await page.getByRole("button", { name: "Connect" }).click();
  await page.getByRole("button", { name: "New chat" }).waitFor();
  await page.evaluate(() => {
    // @ts-ignore
    window.longTasks = [];
  });
  const started = Date.now();
  await page.goto(`/#session=${session}`);
  // The seeded conversation is runs of three events; its last answer is the last run's.
  const runs = Math.floor(Number(events) / 3);
  await page.locator(".message.assistant", { hasText: `Here is answer ${runs - 1}:` }).waitFor({ timeout: 120_000 });
  const openMs = Date.now() - started;
  const opening = await page.evaluate(() => Math.max(0, ...(/** @type {any} */ (window).longTasks)));
  await page.evaluate(() => {
    // @ts-ignore
    window.longTasks = [];
  });
  // Scrolled up to the first message (earlier ones render as they come into view), then down.
  await page.mouse.move(800, 400);
  const first = page.locator(".message.user", { hasText: "Question number 0:" });
  for (let step = 0; step < 2000 && !(await first.count()); step += 1) {
    await page.mouse.wheel(0, -2400);
    await page.waitForTimeout(20);
  }
  for (let step = 0; step < 200; step += 1) {
    await page.mouse.wheel(0, 2400);
    await page.waitForTimeout(10);
  }
  const rendered = await page.locator(".message.user").count();
  const scrolling = await page.evaluate(() => Math.max(0, ...(/** @type {any} */ (window).longTasks)));
  await context.close();
  return { open_ms: openMs, longest_task_opening_ms: opening, longest_task_scrolling_ms: scrolling, messages: rendered };
}

const reference = http.createServer((request, response) => {
  response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  response.end(`<!doctype html><html lang="en"><meta charset="utf-8"><title>reference</title><p>Steward</p></html>`);
});
await new Promise((resolve) => reference.listen(0, "127.0.0.1", () => resolve(undefined)));
const referenceUrl = `http://127.0.0.1:${/** @type {import("node:net").AddressInfo} */ (reference.address()).port}`;

const browser = await launch();
try {
  const shell = await shellBytes();
  // Median of five cold loads each, alternating.
  const ours = [];
  const theirs = [];
  for (let round = 0; round < 5; round += 1) {
    ours.push(await firstPaint(browser, BASE));
    theirs.push(await firstPaint(browser, referenceUrl));
  }
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const result = {
    shell_assets: shell.assets,
    shell_bytes: shell.bytes,
    first_paint_ms: median(ours),
    reference_first_paint_ms: median(theirs),
    ...(session ? await conversation(browser) : {}),
  };
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
  reference.close();
}
