// A reader's progress in the site's lessons, kept in this browser (localStorage) as well as in
// the link: a lesson opened again from the list of lessons shows the steps done before. The
// link's steps done and the kept ones are merged (a step once done stays done). Storage may be
// missing or refuse (a private window, a sandboxed frame, a full quota): then progress lives in
// the link only, as before, and nothing fails. A pasted lesson keeps its progress in its link
// only (its name, "pasted", is not one lesson's).
import { PASTED } from './files.js';

const PREFIX = 'circuitscope.lesson.';
const STEP = /^\d{1,2}$/;   // the link's step numbers: 0 to 99

/** The storage key of a lesson's progress. */
export const storageKey = (name) => `${PREFIX}${name}`;

/** The page's localStorage, or null where reading it throws. @returns {Pick<Storage, 'getItem' | 'setItem'> | null} */
function pageStorage() {
  try { return globalThis.localStorage ?? null; } catch { return null; }
}

/** Two lists of steps done as one, each once, in step order. */
export function mergeDone(a, b) {
  return [...new Set([...(a ?? []), ...(b ?? [])].map(String))].filter((s) => STEP.test(s)).sort((x, y) => Number(x) - Number(y));
}

/**
 * The steps of lesson `name` kept as done in `storage` (the page's by default): ['0', '2'].
 * @param {string} name
 * @param {Pick<Storage, 'getItem'> | null} [storage]
 * @returns {string[]}
 */
export function savedDone(name, storage = pageStorage()) {
  if (!name || name === PASTED || name === 'index' || !storage) return [];
  try {
    const list = JSON.parse(storage.getItem(storageKey(name)) ?? '[]');
    return Array.isArray(list) ? mergeDone(list.filter((s) => typeof s === 'string'), []) : [];
  } catch {
    return [];
  }
}

/**
 * Keeps `done` as steps done of lesson `name` (added to those kept before); returns all of them.
 * Where storage refuses, returns `done` itself (merged) and keeps nothing.
 * @param {string} name
 * @param {string[]} done
 * @param {Pick<Storage, 'getItem' | 'setItem'> | null} [storage]
 * @returns {string[]}
 */
export function saveDone(name, done, storage = pageStorage()) {
  const all = mergeDone(savedDone(name, storage), done);
  if (!name || name === PASTED || name === 'index' || !storage) return all;
  try { storage.setItem(storageKey(name), JSON.stringify(all)); } catch { /* storage refused: the link keeps it */ }
  return all;
}
