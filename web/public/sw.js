// Caches the app shell only: the page, its script, style and vendored modules. Nothing under
// /v1 (or /health) is ever cached or even intercepted: the API's answers go to the network.
const CACHE = "steward-shell-v1";
const SHELL = [
  "/",
  "/app.css",
  "/app/main.js",
  "/app/shell.js",
  "/app/sidebar-view.js",
  "/app/conversation-view.js",
  "/app/settings-view.js",
  "/app/api.js",
  "/app/chat.js",
  "/app/approvals.js",
  "/app/markdown.js",
  "/app/preferences.js",
  "/vendor/preact.mjs",
  "/vendor/hooks.mjs",
  "/vendor/htm.mjs",
  "/vendor/signals-core.mjs",
  "/vendor/signals.mjs",
  "/manifest.webmanifest",
  "/icon.svg",
];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys().then((keys) => Promise.all(keys.filter((key) => key !== CACHE).map((key) => caches.delete(key)))),
  );
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  if (!SHELL.includes(url.pathname)) return; // /v1, /health and anything else: not ours
  // Network first, so a new build shows at once; the cached shell serves when offline.
  event.respondWith(
    fetch(event.request)
      .then((response) => {
        const copy = response.clone();
        if (response.ok) caches.open(CACHE).then((cache) => cache.put(event.request, copy));
        return response;
      })
      .catch(() => caches.match(event.request).then((cached) => cached ?? Response.error())),
  );
});
