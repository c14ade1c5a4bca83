// Folders are server state: the list, the agent's proposals, and the owner's moves. The index's
// `folder_id` wins on every reconciliation. A server without folders (404 or 405 to the list, or
// an index without `folder_id`) gets no further folder requests and the controls stay hidden.
import { signal, batch } from "../vendor/signals-core.mjs";
import { api, ApiError, describe, onForget } from "./api.js";
import { sessions, reconcile, fenceReconciliation, onReconciled } from "./chat.js";

/** @typedef {import("../../types/wire").Folder} Folder */
/** @typedef {import("../../types/wire").FolderProposal} Proposal */

/** @type {import("../vendor/signals-core.mjs").Signal<Folder[]>} */
export const folders = signal([]);
/** @type {import("../vendor/signals-core.mjs").Signal<Proposal[]>} */
export const proposals = signal([]);
/** `unknown` until the first list answers; `absent` hides every folder control for good. */
export const support = signal(/** @type {"unknown" | "present" | "absent"} */ ("unknown"));
export const folderError = signal(/** @type {string | null} */ (null));
/** Open folders; in solo mode (the default) at most one. */
export const open = signal(/** @type {Set<string>} */ (new Set()));
export const solo = signal(localStorage.getItem("steward.soloFolders") !== "false");

/** @param {unknown} error */
function unsupported(error) {
  return error instanceof ApiError && (error.status === 404 || error.status === 405) && error.code !== "folder_not_found";
}

/** Reads the folders and the pending proposals. */
export async function loadFolders() {
  if (support.value === "absent") return;
  if (sessions.value.length > 0 && !sessions.value.every((row) => "folder_id" in row)) {
    support.value = "absent";
    return;
  }
  try {
    const [list, pending] = await Promise.all([api("GET", "/v1/folders"), api("GET", "/v1/folder-proposals")]);
    batch(() => {
      folders.value = list.folders;
      proposals.value = pending.proposals;
      support.value = "present";
      folderError.value = null;
    });
  } catch (error) {
    if (unsupported(error)) support.value = "absent";
    else if (!(error instanceof ApiError && error.status === 401)) folderError.value = describe(error);
  }
}

/** @param {string} id */
export function toggle(id) {
  const next = new Set(solo.value ? [] : open.value);
  if (open.value.has(id)) next.delete(id);
  else next.add(id);
  open.value = next;
}

export function toggleSolo() {
  solo.value = !solo.value;
  localStorage.setItem("steward.soloFolders", String(solo.value));
  if (solo.value && open.value.size > 1) open.value = new Set([...open.value].slice(0, 1));
}

/**
 * One folder mutation: a move or delete fences reconciliation at its start (an index read
 * already under way cannot undo it), and every mutation fences it on its answer and reads again.
 * @template T
 * @param {() => Promise<T>} change
 * @param {boolean} fenceAtStart
 * @returns {Promise<T | undefined>}
 */
async function mutate(change, fenceAtStart) {
  if (fenceAtStart) fenceReconciliation();
  try {
    const result = await change();
    fenceReconciliation();
    folderError.value = null;
    return result;
  } catch (error) {
    folderError.value = describe(error);
    return undefined;
  } finally {
    await reconcile(); // the folders are read again after it
  }
}

/** @param {string} name */
export function createFolder(name) {
  return mutate(() => api("POST", "/v1/folders", { body: { name } }), false);
}

/** @param {string} id @param {string} name */
export function renameFolder(id, name) {
  return mutate(() => api("PATCH", `/v1/folders/${encodeURIComponent(id)}`, { body: { name } }), false);
}

/** Deletes a folder; its conversations return to the history. @param {string} id */
export function deleteFolder(id) {
  return mutate(() => api("DELETE", `/v1/folders/${encodeURIComponent(id)}`), true);
}

/**
 * Files a conversation, or (with `null`) returns it to the history: an explicit null.
 * @param {string} sessionId @param {string | null} folderId
 */
export function move(sessionId, folderId) {
  // The row moves at once; the server's answer and the next index read settle it.
  sessions.value = sessions.value.map((row) => (row.session_id === sessionId ? { ...row, folder_id: folderId } : row));
  return mutate(() => api("PATCH", `/v1/sessions/${encodeURIComponent(sessionId)}`, { body: { folder_id: folderId } }), true);
}

/** @param {string} id @param {string | null} name a new folder's name chosen on acceptance */
export function accept(id, name) {
  return mutate(
    () => api("POST", `/v1/folder-proposals/${encodeURIComponent(id)}/accept`, name ? { body: { name } } : {}),
    true,
  );
}

/** @param {string} id */
export function decline(id) {
  return mutate(() => api("POST", `/v1/folder-proposals/${encodeURIComponent(id)}/decline`), false);
}

onReconciled(loadFolders);

onForget(() => {
  batch(() => {
    folders.value = [];
    proposals.value = [];
    support.value = "unknown";
    open.value = new Set();
    folderError.value = null;
  });
});
