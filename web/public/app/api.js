// The transport: same-origin requests to /v1 only, authenticated by the web session cookie
// (HttpOnly, so no script here ever holds a credential after the exchange).
import { signal } from "../vendor/signals-core.mjs";

/** @typedef {Partial<import("../../types/wire").Problem>} Problem */

export class ApiError extends Error {
  /** @param {number} status @param {Problem | null} problem */
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `The server answered ${status}.`);
    this.status = status;
    this.problem = problem;
    this.code = problem?.code ?? (status === 0 ? "network" : "http_" + status);
  }
}

/**
 * The connection as the page knows it: `unknown` while the first check runs, `disconnected`
 * when the form must show, `connected` with the scopes the session holds.
 * @type {import("../vendor/signals-core.mjs").Signal<{state: "unknown" | "disconnected" | "connected", scopes: string[], expiresAt: string | null, notice: string | null}>}
 */
export const connection = signal({ state: "unknown", scopes: [], expiresAt: null, notice: null });

/** Called whenever the server refuses the session (401): everything local is dropped. */
const forgetHandlers = new Set();
/** @param {() => void} handler */
export function onForget(handler) {
  forgetHandlers.add(handler);
}

/** Run by Forget while the session still holds, before it is revoked (a device's revocation). */
const beforeForgetHandlers = new Set();
/** @param {() => Promise<void>} handler */
export function beforeForget(handler) {
  beforeForgetHandlers.add(handler);
}

function dropLocalState(notice) {
  for (const handler of forgetHandlers) handler();
  connection.value = { state: "disconnected", scopes: [], expiresAt: null, notice };
}

/**
 * One request to the API. State-changing methods carry the CSRF header the cookie needs.
 * Redirects are refused; a 401 returns the page to the connection form, a 403 stays an error.
 * @param {string} method
 * @param {string} path
 * @param {{body?: unknown, headers?: Record<string, string>, signal?: AbortSignal}} [options]
 */
export async function api(method, path, options = {}) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json", ...options.headers };
  if (method !== "GET" && method !== "HEAD") headers["X-Steward-CSRF"] = "1";
  /** @type {RequestInit} */
  const init = { method, headers, credentials: "same-origin", redirect: "error", cache: "no-store", signal: options.signal };
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new ApiError(0, { detail: "The server cannot be reached." });
  }
  return read(response);
}

/** @param {Response} response */
async function read(response) {
  if (response.ok) {
    if (response.status === 204) return null;
    return response.json();
  }
  /** @type {Problem | null} */
  let problem = null;
  try {
    problem = await response.json();
  } catch {
    problem = null;
  }
  if (response.status === 401) dropLocalState("Your session has ended. Connect again with the token.");
  throw new ApiError(response.status, problem);
}

/** Asks the server which credential this page holds; the answer sets `connection`. */
export async function checkConnection() {
  try {
    const session = await api("GET", "/v1/web/session");
    connection.value = { state: "connected", scopes: session.scopes, expiresAt: session.expires_at, notice: null };
  } catch (error) {
    // No session yet is the ordinary first visit: the form, with nothing to apologise for.
    const first = error instanceof ApiError && error.status === 401;
    connection.value = { state: "disconnected", scopes: [], expiresAt: null, notice: first ? null : describe(error) };
  }
}

/**
 * Exchanges the token for a web session. The token is sent once and kept nowhere.
 * @param {string} token
 */
export async function connect(token) {
  let response;
  try {
    response = await fetch("/v1/web/session", {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
      credentials: "same-origin",
      redirect: "error",
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, { detail: "The server cannot be reached." });
  }
  if (response.status === 401) {
    throw new ApiError(401, { code: "unauthenticated", detail: "That token is not the one this server is configured with." });
  }
  const session = await read(response);
  // The browser keeps a Secure cookie only over HTTPS: check it was kept.
  try {
    await api("GET", "/v1/web/session");
  } catch {
    throw new ApiError(0, {
      detail: "The browser did not keep the session cookie. Off this machine, Steward must be served over HTTPS.",
    });
  }
  connection.value = { state: "connected", scopes: session.scopes, expiresAt: session.expires_at, notice: null };
}

/**
 * Revokes what this browser registered (its push device), then the session, then clears local
 * state even when either failed.
 */
export async function forget() {
  let notice = null;
  await Promise.allSettled([...beforeForgetHandlers].map((handler) => handler()));
  try {
    await api("DELETE", "/v1/web/session");
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) {
      notice = "The server could not be told; this browser has forgotten the connection anyway.";
    }
  }
  dropLocalState(notice);
}

/** @param {string} scope */
export function holds(scope) {
  return connection.value.scopes.includes(scope);
}

/** A sentence for an error, for the page. @param {unknown} error */
export function describe(error) {
  if (error instanceof ApiError) {
    if (error.code === "insufficient_scope") {
      return `The token does not allow this (it needs ${error.problem?.required_scope ?? "another scope"}).`;
    }
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
