// Attachments: files upload at once with progress, a failed upload is retried, a file is removed,
// and a large JPEG carrying location metadata is sent as a re-encoded JPEG of at most 2000 pixels
// with no metadata; the sent message previews it from the artifact bytes.
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

/**
 * A 3000×1500 JPEG drawn in the page, with an Exif block naming a GPS position spliced in after
 * its start marker, as a camera would write it.
 * @param {import("playwright-core").Page} page
 */
async function photoWithLocation(page) {
  const base64 = await page.evaluate(async () => {
    const canvas = new OffscreenCanvas(3000, 1500);
    const context = /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext("2d"));
    for (let i = 0; i < 400; i += 1) {
      context.fillStyle = `hsl(${(i * 37) % 360} 60% ${30 + (i % 40)}%)`;
      context.fillRect((i * 97) % 3000, (i * 53) % 1500, 180, 120);
    }
    const blob = await canvas.convertToBlob({ type: "image/jpeg", quality: 0.95 });
    const bytes = new Uint8Array(await blob.arrayBuffer());
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return btoa(text);
  });
  const jpeg = Buffer.from(base64, "base64");
  const payload = Buffer.concat([Buffer.from("Exif\0\0", "latin1"), Buffer.from("GPSLatitude 38.7223 N GPSLongitude 9.1393 W", "latin1")]);
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
  return Buffer.concat([jpeg.subarray(0, 2), app1, jpeg.subarray(2)]);
}

/** The width and height in a JPEG's frame header. @param {Buffer} bytes */
function jpegSize(bytes) {
  for (let at = 2; at + 8 < bytes.length; ) {
    if (bytes[at] !== 0xff) break;
    const marker = bytes[at + 1];
    if (marker >= 0xc0 && marker <= 0xc3) return { width: bytes.readUInt16BE(at + 7), height: bytes.readUInt16BE(at + 5) };
    at += 2 + bytes.readUInt16BE(at + 2);
  }
  return { width: 0, height: 0 };
}

test("files upload with progress, retry and removal, and a large photo is re-encoded without its location", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  await page.getByRole("button", { name: "New chat" }).click();
  const photo = await photoWithLocation(page);
  assert.ok(photo.includes(Buffer.from("GPSLatitude")), "the original carries a location");

  // The first upload of notes.txt fails on the way; its retry goes through.
  let failedOnce = false;
  await page.route("**/artifacts", async (route) => {
    const body = route.request().postDataBuffer();
    if (!failedOnce && body?.includes(Buffer.from("notes.txt"))) {
      failedOnce = true;
      await route.abort("connectionreset");
    } else {
      await route.continue();
    }
  });
  // Slow uploads, so their progress shows.
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: 64 * 1024 });

  const chooser = page.getByLabel("Attach files");
  await chooser.setInputFiles([
    { name: "photo.jpg", mimeType: "image/jpeg", buffer: photo },
    { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("milk, eggs, bread\n") },
    { name: "remove-me.txt", mimeType: "text/plain", buffer: Buffer.from("not wanted\n") },
  ]);
  const files = page.getByRole("list", { name: "Files to send" });
  await files.getByRole("progressbar", { name: "Uploading photo.jpg" }).waitFor({ timeout: 20_000 });
  await files.getByRole("button", { name: "Remove remove-me.txt" }).click();
  await files.getByRole("button", { name: "Retry" }).click({ timeout: 20_000 });
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await page.waitForFunction(() => document.querySelectorAll(".pending-file.done").length === 2, null, { timeout: 30_000 });
  assert.equal(await files.getByText("remove-me.txt").count(), 0);

  await page.getByRole("textbox", { name: "Message", exact: true }).fill("Here are the files");
  await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
  await page.locator(".message.assistant", { hasText: "You said: Here are the files" }).waitFor({ timeout: 20_000 });
  const sent = page.locator(".message.user", { hasText: "Here are the files" });
  await sent.getByText("notes.txt").waitFor();
  const preview = sent.getByRole("img", { name: "photo.jpg" });
  await preview.waitFor({ timeout: 20_000 });
  assert.equal(await files.count(), 0, "the composer's files went with the message");
  await screenshot(page, "attachments-desktop-light");

  // The stored bytes: a JPEG, 2000 pixels on its long edge, with no Exif block left.
  const [session, artifact] = await Promise.all([preview.getAttribute("data-session"), preview.getAttribute("data-artifact")]);
  const metadata = await (await page.request.get(`/v1/sessions/${session}/artifacts/${artifact}`)).json();
  assert.equal(metadata.media_type, "image/jpeg");
  assert.equal(metadata.filename, "photo.jpg");
  const bytes = await (await page.request.get(`/v1/sessions/${session}/artifacts/${artifact}/content`)).body();
  const stored = { soi: bytes[0] === 0xff && bytes[1] === 0xd8, ...jpegSize(bytes), exif: bytes.includes(Buffer.from("Exif")), gps: bytes.includes(Buffer.from("GPS")) };
  assert.ok(bytes.length < photo.length, `${bytes.length} bytes, from ${photo.length}`);
  assert.equal(await preview.evaluate((img) => /** @type {HTMLImageElement} */ (img).naturalWidth), 2000, "the preview shows the stored bytes");
  assert.deepEqual(stored, { soi: true, width: 2000, height: 1000, exif: false, gps: false });

  // Opened again, the preview revalidates its cached bytes: If-None-Match, answered 304.
  /** @type {Array<[number, string | undefined]>} */
  const reads = [];
  page.on("response", async (response) => {
    if (response.url().endsWith(`/artifacts/${artifact}/content`)) {
      reads.push([response.status(), (await response.request().allHeaders())["if-none-match"]]);
    }
  });
  const read = page.waitForResponse((response) => response.url().endsWith(`/artifacts/${artifact}/content`));
  await page.getByRole("button", { name: "New chat" }).click();
  await page.getByRole("complementary").getByRole("button", { name: "photo.jpg", exact: true }).first().click();
  await page.locator(".message.user").getByRole("img", { name: "photo.jpg" }).waitFor();
  await read;
  // The listener above records it once it has read the request's headers.
  for (let tries = 0; tries < 100 && reads.length === 0; tries += 1) await page.waitForTimeout(20);
  assert.deepEqual(reads, [[304, metadata.etag]]);
  assert.deepEqual(problems.filter((problem) => !problem.includes("net::ERR_")), []);
  await context.close();
});

test("a picture whose bytes retention removed shows its name, marked expired", async () => {
  const { page, context, problems } = await newPage(browser);
  await connect(page);
  const csrf = { "X-Steward-CSRF": "1" };
  const stamp = Date.now().toString(36);
  const created = await page.request.post("/v1/sessions", { headers: csrf, data: { agent_id: "default", metadata: { title: `Old photo ${stamp}` } } });
  const session = (await created.json()).session_id;
  const pixel = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPj/HwADBwIAMCbHYQAAAABJRU5ErkJggg==", "base64");
  const upload = await page.request.post(`/v1/sessions/${session}/artifacts?filename=old.png`, {
    headers: { ...csrf, "Content-Type": "image/png" },
    data: pixel,
  });
  const artifact = (await upload.json()).artifact_id;
  const sent = await page.request.post(`/v1/sessions/${session}/messages`, {
    headers: { ...csrf, "Idempotency-Key": `expired-${stamp}` },
    data: { text: "An old photo", attachments: [artifact] },
  });
  assert.equal(sent.status(), 202);
  // The server's answer once retention removed the bytes (tested against the real server in
  // the api suite): 410 artifact_expired.
  await page.route(`**/v1/sessions/${session}/artifacts/${artifact}/content`, (route) =>
    route.fulfill({
      status: 410,
      contentType: "application/problem+json",
      body: JSON.stringify({ type: "urn:steward:problem:artifact_expired", title: "Artifact expired", status: 410, code: "artifact_expired" }),
    }),
  );
  await page.reload();
  await page.getByRole("region", { name: "History" }).getByRole("button", { name: `Old photo ${stamp}`, exact: true }).click();
  const chip = page.locator(".message.user .file-chip");
  await chip.filter({ hasText: "expired" }).waitFor({ timeout: 20_000 });
  assert.match(await chip.innerText(), /^old\.png · \d+ B · expired$/);
  await screenshot(page, "attachment-expired");
  assert.equal(await page.locator(".message.user").getByRole("img", { name: "old.png" }).count(), 0);
  assert.deepEqual(problems.filter((problem) => !problem.includes("410")), []);
  await context.close();
});
