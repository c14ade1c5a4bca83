// Attachments: each chosen or dropped file uploads at once (multipart, with progress, retry and
// removal); images other than small PNG, GIF and WebP are re-encoded as JPEG with a long edge of
// at most 2000 pixels first, which drops every metadata block (location included). Artifact
// bytes are read with If-None-Match into an in-memory LRU cache of at most 32 MiB, cleared when
// the page is hidden or the connection changes; nothing is written to disk. Uploads use
// XMLHttpRequest, the one browser API that reports upload progress.
import { signal } from "../vendor/signals-core.mjs";
import { ApiError, describe, onForget } from "./api.js";

/**
 * @typedef {{key: string, name: string, type: string, size: number, progress: number,
 *   state: "preparing" | "uploading" | "done" | "failed", artifactId: string | null, error: string | null,
 *   blob: Blob | null, request: XMLHttpRequest | null}} Pending
 */

/** The files of the message being written. @type {import("../vendor/signals-core.mjs").Signal<Pending[]>} */
export const pending = signal([]);

/** PNG, GIF and WebP at most this size are sent as they are. */
const SMALL_IMAGE_BYTES = 1024 * 1024;
const LONG_EDGE = 2000;
const KEPT_AS_IS = ["image/png", "image/gif", "image/webp"];
/** Types the browser can decode and a JPEG can carry; anything else (SVG, HEIC) is sent as is. */
const REENCODED = ["image/jpeg", "image/png", "image/gif", "image/webp", "image/bmp", "image/avif"];

/** @param {string} key @param {Partial<Pending>} change */
function set(key, change) {
  pending.value = pending.value.map((item) => (item.key === key ? { ...item, ...change } : item));
}

/**
 * What is uploaded for `file`: the file itself, or a JPEG re-encoding of it.
 * @param {File} file
 * @returns {Promise<{blob: Blob, name: string, type: string}>}
 */
export async function prepare(file) {
  const type = file.type || "application/octet-stream";
  const small = KEPT_AS_IS.includes(type) && file.size <= SMALL_IMAGE_BYTES;
  if (!REENCODED.includes(type) || small) return { blob: file, name: file.name, type };
  const bitmap = await createImageBitmap(file, { imageOrientation: "from-image" });
  const scale = Math.min(1, LONG_EDGE / Math.max(bitmap.width, bitmap.height));
  const width = Math.max(1, Math.round(bitmap.width * scale));
  const height = Math.max(1, Math.round(bitmap.height * scale));
  const canvas = new OffscreenCanvas(width, height);
  const context = /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext("2d"));
  // JPEG has no transparency: transparent pixels become white, not black.
  context.fillStyle = "#ffffff";
  context.fillRect(0, 0, width, height);
  context.drawImage(bitmap, 0, 0, width, height);
  bitmap.close();
  const blob = await canvas.convertToBlob({ type: "image/jpeg", quality: 0.86 });
  const name = file.name.replace(/\.[^./]*$/, "") + ".jpg";
  return { blob, name, type: "image/jpeg" };
}

/**
 * Adds files to the message and starts their uploads into `sessionId` (resolved when needed).
 * @param {FileList | File[]} files
 * @param {() => Promise<string>} sessionId
 */
export function add(files, sessionId) {
  for (const file of Array.from(files)) {
    /** @type {Pending} */
    const item = {
      key: crypto.randomUUID(),
      name: file.name,
      type: file.type,
      size: file.size,
      progress: 0,
      state: "preparing",
      artifactId: null,
      error: null,
      blob: null,
      request: null,
    };
    pending.value = [...pending.value, item];
    prepare(file)
      .then(({ blob, name, type }) => {
        set(item.key, { blob, name, type, size: blob.size });
        return upload(item.key, sessionId);
      })
      .catch((error) => set(item.key, { state: "failed", error: describe(error) }));
  }
}

/**
 * Uploads one prepared file, reporting progress.
 * @param {string} key @param {() => Promise<string>} sessionId
 */
async function upload(key, sessionId) {
  const item = pending.value.find((entry) => entry.key === key);
  if (!item?.blob) return;
  let session;
  try {
    session = await sessionId();
  } catch (error) {
    set(key, { state: "failed", error: describe(error) });
    return;
  }
  const form = new FormData();
  form.append("file", new File([item.blob], item.name, { type: item.type || "application/octet-stream" }));
  const request = new XMLHttpRequest();
  set(key, { state: "uploading", progress: 0, error: null, request });
  request.open("POST", `/v1/sessions/${encodeURIComponent(session)}/artifacts`);
  request.setRequestHeader("X-Steward-CSRF", "1");
  request.setRequestHeader("Accept", "application/json");
  request.upload.onprogress = (event) => {
    if (event.lengthComputable) set(key, { progress: event.loaded / event.total });
  };
  request.onload = () => {
    if (request.status === 201) {
      const artifact = JSON.parse(request.responseText);
      set(key, { state: "done", progress: 1, artifactId: artifact.artifact_id, request: null });
    } else {
      let detail = `The server answered ${request.status}.`;
      try {
        detail = JSON.parse(request.responseText).detail ?? detail;
      } catch {
        // not a problem document
      }
      set(key, { state: "failed", error: detail, request: null });
    }
  };
  request.onerror = () => set(key, { state: "failed", error: "The upload did not reach the server.", request: null });
  request.onabort = () => set(key, { request: null });
  request.send(form);
}

/** Tries a failed upload again. @param {string} key @param {() => Promise<string>} sessionId */
export function retry(key, sessionId) {
  const item = pending.value.find((entry) => entry.key === key);
  if (item?.state !== "failed") return;
  if (!item.blob) {
    set(key, { error: "This file could not be read; remove it and choose it again." });
    return;
  }
  upload(key, sessionId);
}

/** Takes a file off the message, stopping its upload. @param {string} key */
export function remove(key) {
  pending.value.find((entry) => entry.key === key)?.request?.abort();
  pending.value = pending.value.filter((entry) => entry.key !== key);
}

/** The uploaded artifacts of the message, once every file is uploaded; `null` while any is not. */
export function ready() {
  if (pending.value.some((entry) => entry.state !== "done")) return null;
  return pending.value.map((entry) => /** @type {string} */ (entry.artifactId));
}

export function clearPending() {
  for (const entry of pending.value) entry.request?.abort();
  pending.value = [];
}

// ---------------------------------------------------------------------------------------------
// The artifact byte cache.

const CACHE_LIMIT = 32 * 1024 * 1024;
/** @type {Map<string, {etag: string | null, blob: Blob, url: string}>} Insertion order is recency. */
const cache = new Map();
let cached = 0;

/**
 * An object URL of an artifact's bytes: from the cache when the server answers 304.
 * @param {string} sessionId @param {string} artifactId
 */
export async function artifactUrl(sessionId, artifactId) {
  const held = cache.get(artifactId);
  /** @type {Record<string, string>} */
  const headers = {};
  if (held?.etag) headers["If-None-Match"] = held.etag;
  const response = await fetch(`/v1/sessions/${encodeURIComponent(sessionId)}/artifacts/${encodeURIComponent(artifactId)}/content`, {
    headers,
    credentials: "same-origin",
    redirect: "error",
    cache: "no-store",
  });
  if (response.status === 304 && held) {
    cache.delete(artifactId);
    cache.set(artifactId, held);
    return held.url;
  }
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  const blob = await response.blob();
  if (held) drop(artifactId);
  if (blob.size <= CACHE_LIMIT) {
    const entry = { etag: response.headers.get("ETag"), blob, url: URL.createObjectURL(blob) };
    cache.set(artifactId, entry);
    cached += blob.size;
    for (const [key] of cache) {
      if (cached <= CACHE_LIMIT) break;
      drop(key);
    }
    return entry.url;
  }
  return URL.createObjectURL(blob);
}

/** @param {string} key */
function drop(key) {
  const entry = cache.get(key);
  if (!entry) return;
  URL.revokeObjectURL(entry.url);
  cached -= entry.blob.size;
  cache.delete(key);
}

export function clearCache() {
  for (const key of [...cache.keys()]) drop(key);
}

/** How many bytes the cache holds (for the tests). */
export function cachedBytes() {
  return cached;
}

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "hidden") clearCache();
});

onForget(() => {
  clearPending();
  clearCache();
});
