// Caches the app shell only: the page, its script, style and vendored modules. Nothing under
// /v1 (or /health) is ever cached or even intercepted: the API's answers go to the network.
// Shows Web Push alerts (below): the server's text and the closed tap dictionary, nothing else.
const CACHE = "steward-shell-v2";
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

// ---------------------------------------------------------------------------------------------
// Web Push. A push carries `{"alert": text, "steward": tap}` (the alert text the server words:
// the next action, the tool for approvals, a schedule outcome with its title and time) or a
// withdrawal `{"steward": {"v": 1, "kind": "withdrawn", "notification_id"}}`. Alerts are tagged
// per conversation, so a newer one replaces an older one; one for the conversation a focused
// window shows is not shown; a click opens (or focuses) the page at that conversation and card.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const KINDS = ["approval", "question", "schedule_outcome", "call_finished", "withdrawn"];
const IDS = ["session_id", "run_id", "approval_id", "question_id", "occurrence_id", "call_id"];
const FALLBACK = {
  approval: "An action waits for your approval",
  question: "Your agent has a question",
  schedule_outcome: "A scheduled task has an outcome",
  call_finished: "New call result",
};

/** The closed version-1 tap dictionary in `value`, or null. */
function tapFrom(value) {
  if (!value || value.v !== 1 || !KINDS.includes(value.kind) || !UUID.test(String(value.notification_id))) return null;
  const tap = { v: 1, kind: value.kind, notification_id: value.notification_id };
  for (const key of IDS) if (typeof value[key] === "string" && UUID.test(value[key])) tap[key] = value[key];
  return tap;
}

/** One alert per conversation (or call, or schedule occurrence). */
function tagOf(tap) {
  if (tap.session_id) return `session:${tap.session_id}`;
  if (tap.call_id) return `call:${tap.call_id}`;
  if (tap.occurrence_id) return `occurrence:${tap.occurrence_id}`;
  return `notification:${tap.notification_id}`;
}

/** `event.waitUntil(work)`, and `work` still runs for an event this script did not get from the browser. */
function keep(event, work) {
  try {
    event.waitUntil(work);
  } catch {
    // A synthetic event cannot extend its lifetime; the work goes on regardless.
  }
  return work;
}

/** The page windows of this origin. */
function windows() {
  return self.clients.matchAll({ type: "window", includeUncontrolled: true });
}

/**
 * Which conversation `client` shows in a focused, visible window. A page busy loading may take a
 * moment to answer; one that does not answer within 3 s (frozen, or an older build) shows
 * nothing, and the alert is shown.
 */
function showing(client) {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    const timer = setTimeout(() => resolve(null), 3000);
    channel.port1.onmessage = (event) => {
      clearTimeout(timer);
      resolve(event.data?.session ?? null);
    };
    client.postMessage({ type: "steward.showing" }, [channel.port2]);
  });
}

async function onPush(event) {
  let data = null;
  try {
    data = event.data ? event.data.json() : null;
  } catch {
    data = null;
  }
  const tap = tapFrom(data?.steward);
  if (!tap) return;
  if (tap.kind === "withdrawn") {
    for (const shown of await self.registration.getNotifications()) {
      if (shown.data?.notification_id === tap.notification_id) shown.close();
    }
    return;
  }
  if (tap.session_id) {
    const shownBy = await Promise.all((await windows()).map(showing));
    if (shownBy.includes(tap.session_id)) return;
  }
  const text = typeof data.alert === "string" && data.alert.trim() ? data.alert.trim().slice(0, 240) : FALLBACK[tap.kind];
  await self.registration.showNotification("Steward", {
    body: text,
    tag: tagOf(tap),
    renotify: true,
    icon: "/icon.svg",
    data: tap,
  });
}

async function onClick(tap) {
  if (!tapFrom(tap)) return;
  const open = (await windows()).find((client) => new URL(client.url).origin === self.location.origin);
  if (open) {
    await open.focus().catch(() => undefined);
    open.postMessage({ type: "steward.open", tap });
    return;
  }
  const link = new URLSearchParams(Object.entries(tap).map(([key, value]) => [key, String(value)]));
  await self.clients.openWindow(`/#${link}`);
}

self.addEventListener("push", (event) => keep(event, onPush(event)));

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  keep(event, onClick(event.notification.data));
});

// The push service renewed the subscription: the page registers the new one when it next
// loads (push.js), since the session cookie, not this script, may speak to the API.
self.addEventListener("pushsubscriptionchange", (event) => {
  keep(
    event,
    windows().then((clients) => clients.forEach((client) => client.postMessage({ type: "steward.resubscribe" }))),
  );
});
