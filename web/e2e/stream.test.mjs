// The server's stream drops mid-run: a cutting proxy in front of the stack ends each of the
// first event streams after a few persisted frames. The browser reconnects with Last-Event-ID
// and the page must show every message exactly once.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { launch, newPage, send, TOKEN, BASE } from "./support.mjs";

/** @type {import("playwright-core").Browser} */
let browser;
/** @type {net.Server} */
let proxy;
let cuts = 0;
const MAX_CUTS = 3;

before(async () => {
  browser = await launch();
  const upstream = new URL(BASE);
  proxy = net.createServer((client) => {
    const server = net.connect(Number(upstream.port), upstream.hostname);
    let stream = false;
    let frames = 0;
    // Connections are kept alive: any request on this one may be the stream's.
    client.on("data", (chunk) => {
      if (/^GET \/v1\/sessions\/[^ ]+\/events/m.test(chunk.toString("latin1"))) {
        stream = true;
        frames = 0;
      }
    });
    server.on("data", (chunk) => {
      if (!stream || cuts >= MAX_CUTS) return;
      frames += (chunk.toString("utf8").match(/^id:/gm) ?? []).length;
      if (frames >= 2) {
        cuts += 1;
        stream = false;
        // The bytes of this chunk still reach the browser; then the connection is gone.
        client.end();
        server.destroy();
      }
    });
    client.pipe(server);
    server.pipe(client);
    client.on("error", () => server.destroy());
    server.on("error", () => client.destroy());
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", () => resolve(undefined)));
});

after(async () => {
  await browser?.close();
  proxy?.close();
});

test("after streams cut mid-run, every message shows exactly once", async () => {
  const address = /** @type {net.AddressInfo} */ (proxy.address());
  const origin = `http://127.0.0.1:${address.port}`;
  const { page, context, problems } = await newPage(browser, { origin });
  await page.goto("/");
  await page.getByLabel("Token").fill(TOKEN);
  await page.getByRole("button", { name: "Connect" }).click();
  await page.getByRole("button", { name: "New chat" }).waitFor();

  await send(page, '/tool notes.add {"text": "Through a bad network"}');
  const card = page.getByRole("region", { name: "Approval for notes.add" });
  await card.getByRole("button", { name: "Approve once" }).click({ timeout: 30_000 });
  await page.locator(".message.assistant", { hasText: "notes.add returned" }).waitFor({ timeout: 30_000 });
  await send(page, "And once more after the cuts");
  await page.locator(".message.assistant", { hasText: "You said: And once more after the cuts" }).waitFor({ timeout: 30_000 });

  assert.ok(cuts >= 2, `the proxy cut ${cuts} streams`);
  assert.equal(await page.locator(".message.user", { hasText: "Through a bad network" }).count(), 1);
  assert.equal(await card.count(), 1);
  assert.equal(await page.locator(".message.assistant", { hasText: "notes.add returned" }).count(), 1);
  assert.equal(await page.locator(".message.user", { hasText: "And once more after the cuts" }).count(), 1);
  assert.equal(await page.locator(".message.assistant", { hasText: "You said: And once more after the cuts" }).count(), 1);
  const sequences = await page.locator(".message.user[data-seq]").evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-seq")));
  assert.equal(new Set(sequences).size, sequences.length, "no persisted message twice");
  // A cut stream is logged by the browser as a network error; nothing else may be.
  assert.deepEqual(problems.filter((problem) => !problem.includes("net::ERR_")), []);
  await context.close();
});
