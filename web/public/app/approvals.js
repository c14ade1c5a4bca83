// Approval proofs, with no page state: an approval shows its tool's arguments whole except
// strings over 512 characters, which the server cuts and proves with a SHA-256 in
// `argument_digests`. Nothing cut can be approved until a call the model proposed is shown to
// display exactly as the approval does (domain::approval::display_arguments; the terminal
// client's crates/client/src/approvals.rs checks the same, against the same test vectors in
// tests/vectors/approvals.json).

/** Strings the server cut for display are exactly this many characters, with a digest. */
export const DISPLAY_MAX_CHARS = 512;

/** The lowercase hex SHA-256 of `text`'s UTF-8. @param {string} text */
export async function sha256(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * `value` as the server displays it in an approval (domain::approval::display_arguments):
 * strings over 512 characters (code points) cut to their first 512, each with the SHA-256 of
 * the whole string keyed by its JSON Pointer.
 * @param {unknown} value
 * @returns {Promise<{shown: unknown, digests: Record<string, string>}>}
 */
export async function displayOf(value) {
  /** @type {Record<string, string>} */
  const digests = {};
  /** @param {unknown} node @param {string} pointer @returns {Promise<unknown>} */
  const cut = async (node, pointer) => {
    if (typeof node === "string") {
      const chars = [...node];
      if (chars.length <= DISPLAY_MAX_CHARS) return node;
      digests[pointer] = await sha256(node);
      return chars.slice(0, DISPLAY_MAX_CHARS).join("");
    }
    if (Array.isArray(node)) return Promise.all(node.map((entry, index) => cut(entry, `${pointer}/${index}`)));
    if (node && typeof node === "object") {
      /** @type {Record<string, unknown>} */
      const out = {};
      for (const [name, entry] of Object.entries(node)) out[name] = await cut(entry, `${pointer}/${pointerToken(name)}`);
      return out;
    }
    return node;
  };
  const shown = await cut(value, "");
  return { shown, digests };
}

/** Whether two JSON values are the same value (members in any order). @param {unknown} a @param {unknown} b @returns {boolean} */
function sameJson(a, b) {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((entry, index) => sameJson(entry, b[index]));
  }
  if (!a || !b || typeof a !== "object" || typeof b !== "object") return false;
  const left = Object.keys(a);
  const right = /** @type {Record<string, unknown>} */ (b);
  return left.length === Object.keys(b).length && left.every((name) => Object.hasOwn(right, name) && sameJson(/** @type {Record<string, unknown>} */ (a)[name], right[name]));
}

/**
 * Whether the approval's arguments can be shown whole: the model's proposed call of this tool
 * in this run whose display (cut strings and their digests) is exactly the approval's is the
 * whole of what it approves. An approval with nothing cut, and no string at the display limit,
 * is whole as it is. A digest that names no cut string refuses it outright.
 * @param {{arguments: unknown, digests: Record<string, string>, proposals: unknown[]}} card
 * @returns {Promise<{whole: unknown, proof: string}>}
 */
export async function proveApproval(card) {
  const digests = card.digests ?? {};
  const misplaced = misplacedDigests(card);
  if (misplaced.length) return { whole: null, proof: cannotCheck(misplaced) };
  const undigested = undigestedStrings(card);
  const cut = Object.keys(digests).length > 0;
  if (!cut && !undigested.length) return { whole: card.arguments, proof: "proven" };
  if (cut && !globalThis.crypto?.subtle) {
    return {
      whole: null,
      proof: "This page cannot compute SHA-256 (it is not served over HTTPS or from this computer), so the shortened text cannot be shown whole; it cannot be approved.",
    };
  }
  for (const proposal of card.proposals ?? []) {
    const display = await displayOf(proposal).catch(() => null);
    if (display && sameJson(display.shown, card.arguments) && sameJson(display.digests, digests)) {
      return { whole: proposal, proof: "proven" };
    }
  }
  if (undigested.length) return { whole: null, proof: cannotCheck(undigested) };
  return {
    whole: null,
    proof: (card.proposals ?? []).length
      ? "The shortened text matches no call Steward proposed, so what you would approve cannot be shown whole; it cannot be approved."
      : "Steward's proposed call was not found, so the shortened text cannot be shown whole; it cannot be approved.",
  };
}

/** A member name as a JSON Pointer token (RFC 6901). @param {string} name */
export function pointerToken(name) {
  return name.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * The value at a JSON Pointer (RFC 6901) in `root`, or `undefined`.
 * @param {unknown} root @param {string} pointer
 */
export function atPointer(root, pointer) {
  if (pointer === "") return root;
  let value = root;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return undefined;
    value = /** @type {Record<string, unknown>} */ (value)[key];
  }
  return value;
}

/**
 * The digests that name no string the server cut (one of exactly 512 characters) or are no
 * SHA-256, by pointer.
 * @param {{arguments: unknown, digests: Record<string, string>}} card
 */
function misplacedDigests(card) {
  /** @type {string[]} */
  const wrong = [];
  for (const [pointer, digest] of Object.entries(card.digests ?? {})) {
    const value = atPointer(card.arguments, pointer);
    const cut = typeof value === "string" && [...value].length === DISPLAY_MAX_CHARS;
    if (!cut || !/^[0-9a-f]{64}$/.test(String(digest))) wrong.push(pointer || "/");
  }
  return wrong;
}

/**
 * The strings at the display limit without a digest, by pointer: each may have been cut with
 * nothing to check it by (one of exactly 512 characters cannot be told apart), so only a
 * proposal that displays exactly so proves it.
 * @param {{arguments: unknown, digests: Record<string, string>}} card
 */
function undigestedStrings(card) {
  const digests = card.digests ?? {};
  /** @type {string[]} */
  const found = [];
  const walk = (/** @type {unknown} */ value, /** @type {string} */ pointer) => {
    if (typeof value === "string") {
      if ([...value].length >= DISPLAY_MAX_CHARS && !digests[pointer]) found.push(pointer || "/");
    } else if (Array.isArray(value)) {
      value.forEach((entry, index) => walk(entry, `${pointer}/${index}`));
    } else if (value && typeof value === "object") {
      for (const [name, entry] of Object.entries(value)) walk(entry, `${pointer}/${pointerToken(name)}`);
    }
  };
  walk(card.arguments, "");
  return found;
}

/** @param {string[]} pointers */
const cannotCheck = (pointers) =>
  `A shortened argument cannot be checked against its digest (${pointers.join(", ")}); it cannot be approved.`;

/**
 * Why an approval cannot be approved as shown, before any proposal is looked at, or `null`: a
 * digest naming anything but a cut string, or a string at the display limit without its digest.
 * @param {{arguments: unknown, digests: Record<string, string>}} card
 */
export function refuseTruncated(card) {
  const wrong = [...misplacedDigests(card), ...undigestedStrings(card)];
  return wrong.length ? cannotCheck(wrong) : null;
}
