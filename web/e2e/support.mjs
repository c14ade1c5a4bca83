// Shared by the end-to-end tests: Debian's Chromium driven by playwright-core against the stack
// `cargo xtask test` started (STEWARD_URL, with its token in STEWARD_TOKEN_FILE).
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const BASE = process.env.STEWARD_URL ?? "http://127.0.0.1:8080";
export const TOKEN = readFileSync(process.env.STEWARD_TOKEN_FILE ?? "../../var/api-token", "utf8").trim();
export const ARTIFACTS = process.env.STEWARD_ARTIFACTS ?? "../../target/web-e2e";
mkdirSync(join(ARTIFACTS, "screenshots"), { recursive: true });

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Widths the layouts are checked at. */
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 860 };

/** Launches Chromium with nothing reaching outside the machine. */
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-default-apps",
    ],
  });
}

/**
 * A fresh page (its own cookies and storage) in `colorScheme` at `viewport` on `origin`; every
 * request it makes is checked to stay on that origin, and page errors are collected.
 * @param {import("playwright-core").Browser} browser
 */
export async function newPage(browser, { viewport = DESKTOP, colorScheme = "light", origin = BASE } = {}) {
  const context = await browser.newContext({ viewport, colorScheme, baseURL: origin });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/status of 40[13]/.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.origin !== new URL(origin).origin && url.protocol !== "data:" && url.protocol !== "blob:") {
      problems.push(`a request left the origin: ${request.url()}`);
    }
  });
  return { context, page, problems };
}

/** Opens the page and connects with the token. @param {import("playwright-core").Page} page */
export async function connect(page) {
  await page.goto("/");
  await page.getByLabel("Token").fill(TOKEN);
  await page.getByRole("button", { name: "Connect" }).click();
  await page.getByRole("button", { name: "New chat" }).waitFor();
}

/** Sends `text` from the composer with Return. @param {import("playwright-core").Page} page @param {string} text */
export async function send(page, text) {
  // Exactly the composer: a conversation's title (a sidebar button's label) may hold the word.
  const composer = page.getByRole("textbox", { name: "Message", exact: true });
  await composer.fill(text);
  await composer.press("Enter");
}

/** Saves a screenshot as a test artifact, returning its path. */
export async function screenshot(page, name) {
  const path = join(ARTIFACTS, "screenshots", `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/**
 * The serious and critical violations axe finds on the page (WCAG 2 A and AA rules and best
 * practices). axe is evaluated through the debugging protocol, which the page's CSP does not
 * govern; the page itself never loads it.
 * @param {import("playwright-core").Page} page
 */
export async function violations(page) {
  await page.evaluate(axeSource);
  const results = await page.evaluate(() =>
    // @ts-ignore axe is global once evaluated
    window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } }),
  );
  return results.violations
    .filter((/** @type {any} */ v) => v.impact === "serious" || v.impact === "critical")
    .map((/** @type {any} */ v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((/** @type {any} */ n) => n.target.join(" ")).join(", ")}`);
}
