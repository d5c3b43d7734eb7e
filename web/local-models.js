// Model files opened in this page (the header's "Open a model file", a file dropped on the page,
// or a model trained in the Training view): a registry the store (store.js) consults beside
// models/index.json, so getModel, modelsFor and the model picker serve them as they serve a
// shipped model. A local model is named "local:NAME", NAME from its file name (letters, digits,
// '.', '_' and '-'; a second file of the same name gets "-2", "-3", ...). Its bytes stay in the
// page: nothing here fetches or sends anything, and the model lives until it is closed (closeLocal)
// or the tab is.
//
// Which views offer a local model (viewsOf): Induction and Circuits always (any tokenizer; the
// Induction view's sample text comes from the core for token-id and word vocabularies); IOI when
// the core says the model is for an IOI task (ioiKind(): a template task, or the symbolic task's
// vocabulary <BOS> <MID> A..F, as the shipped symbolic models); Training always, where the curves say a model
// file carries no training records (only the shipped runs' metrics files have them). The first
// view listed is where the model opens: IOI for an IOI model, else Induction.
// Imports only parts/format.js (which imports nothing): store.js imports this module.

import { vocabularyText } from './parts/format.js';

export const LOCAL_PREFIX = 'local:';

const models = new Map();   // name -> entry, in the order they were opened
const listeners = new Set();

/** Whether a model name names a local model ("local:NAME"). */
export const isLocalName = (name) => typeof name === 'string' && name.startsWith(LOCAL_PREFIX);

/**
 * The local model called `name`: {name, file, title, description, views, local, model, size,
 * series, snapshots}, or undefined. `series` (null for a lone file) is a training run opened as
 * its checkpoint files: {checkpoints: [{label, snapshot: "step<label>", file (a File)}] in label
 * order, text (the held-out text chosen with them, or null), textName, open(file) -> Promise of
 * a LoadedModel read with the same config.json and tokenizer.json}. `snapshots` are the
 * checkpoints other than the opened model's file, as the store names snapshots.
 */
export const localModel = (name) => models.get(name);

/** Every local model, in the order opened. */
export const localModels = () => [...models.values()];

/** Calls fn(entry) whenever a model is registered; returns an unsubscribe function. */
export function onLocalModel(fn) { listeners.add(fn); return () => listeners.delete(fn); }

const closeListeners = new Set();
/** Calls fn(name) whenever a local model is closed; returns an unsubscribe function. */
export function onLocalClosed(fn) { closeListeners.add(fn); return () => closeListeners.delete(fn); }

/**
 * Closes a model file opened in the page: it leaves the registry (and its checkpoints the store's
 * cache), so once the views have moved to another model nothing holds its WebAssembly instance
 * and the browser takes back all of its memory (store.js newModule). Its handle is not deleted
 * here: a render still in flight may read it, and the instance goes as a whole. True when there
 * was such a model.
 */
export function closeLocal(name) {
  if (!models.delete(name)) return false;
  for (const fn of [...closeListeners]) fn(name);
  return true;
}

/** The name a file would get: "local:" and its name without .safetensors or .pth, made safe for a link. */
export function localNameFor(fileName) {
  const leaf = String(fileName ?? '').split(/[\\/]/).pop().replace(/\.(safetensors|pth)$/i, '');
  const base = leaf.replace(/[^\w.-]+/g, '-').replace(/^[-.]+|-+$/g, '').slice(0, 48) || 'model';
  let name = `${LOCAL_PREFIX}${base}`;
  for (let k = 2; models.has(name); k++) name = `${LOCAL_PREFIX}${base}-${k}`;
  return name;
}

/** The views that offer a model (see the header): the first is where it opens. */
export function viewsOf(model) {
  // An IOI model as the shipped ones are (the core's ioiKind(): a template task, or the symbolic
  // task's vocabulary) opens in the IOI view.
  return model.ioiKind() ? ['ioi', 'circuits', 'training'] : ['induction', 'circuits', 'training'];
}

/**
 * Registers a loaded model under the name its file gets. `file` is the file's name as the user
 * sees it, `size` its bytes. Returns the entry.
 */
export function registerLocal(file, model, { size = 0, series = null } = {}) {
  const name = localNameFor(file);
  const views = viewsOf(model);
  const checkpoints = series ? Object.freeze(series.checkpoints.map((c) => Object.freeze({ ...c }))) : null;
  const snapshots = Object.freeze(checkpoints ? checkpoints.filter((c) => c.file.name !== file).map((c) => c.snapshot) : []);
  const c = model.config;
  const shape = c.n_layers ? `${c.n_layers} layer${c.n_layers === 1 ? '' : 's'} of ${c.n_heads} head${c.n_heads === 1 ? '' : 's'}` : 'no attention layers';
  const entry = Object.freeze({
    name, file: String(file).slice(0, 200), size, local: true, model, views: Object.freeze(views),
    series: series ? Object.freeze({ ...series, checkpoints }) : null, snapshots,
    title: `${name} (local file${series ? `, ${checkpoints.length} checkpoints` : ''})`,
    description: `Opened from the file ${String(file).slice(0, 80)} in this page${series ? `, with ${checkpoints.length} checkpoints of its training` : ''}: ${shape}, ${vocabularyText(model.tokenizer)}`,
  });
  models.set(name, entry);
  for (const fn of [...listeners]) fn(entry);
  return entry;
}
