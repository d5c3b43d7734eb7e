// Opening a model file in the page: Files (the header's file picker, files dropped on the page: a
// model file with, optionally, its TransformerLens config.json and its Hugging Face tokenizer.json)
// or bytes (a model trained in the Training view) go through the core's reader (loadFile(file,
// {config, tokenizer}) streams a File into it; load(bytes) for bytes), and the model is registered as "local:NAME" (local-models.js). The bytes never leave the page:
// nothing here fetches. A file over the core's limits.maxModelFileBytes is refused before it is read; a file the
// loader refuses gives the loader's sentence. On success the store gets an `opened` action
// (store.js: the view that shows the model); the app shell (app.js) says the sentence it carries.
import { getModule, newModule, store } from './store.js';
import { registerLocal } from './local-models.js';
import { vocabularyText, readsText } from './parts/format.js';

const MB = 1024 * 1024;
const shownName = (file) => String(file ?? 'the file').slice(0, 80);
const layers = (c) => (c.n_layers ? `${c.n_layers} layer${c.n_layers === 1 ? '' : 's'} of ${c.n_heads} head${c.n_heads === 1 ? '' : 's'}` : 'no attention layers');

/**
 * Opens a model file (a File, or bytes such as a model trained in the Training view) named `file`
 * and registers the model. `firstView`: show it in the first view that offers it (IOI for an IOI
 * model, else Induction); otherwise the app decides. onProgress(read, total) as a File is read.
 * Resolves to {entry, message}; rejects with an Error whose message is a sentence for the page
 * ("Could not open x.safetensors: model file: ...").
 * @param {Blob | Uint8Array | ArrayBuffer} source @param {string} file
 */
export async function openModel(source, file, { firstView = false, view = null, config = undefined, tokenizer = undefined, series = null, note: extraNote = '', onProgress = undefined } = {}) {
  const model = await loadModel(source, file, { config, tokenizer, onProgress });
  let entry;
  try {
    entry = registerLocal(file, model, { size: isBlob(source) ? /** @type {Blob} */ (source).size : /** @type {ArrayBuffer} */ (source).byteLength, series });
  } catch (e) {
    model.delete();
    throw new Error(`Could not open ${shownName(file)}: ${String(e?.message ?? e)}`);
  }
  const c = model.config;
  const note = typeof model.info?.note === 'string' ? ` ${model.info.note}` : '';
  const message = `Opened ${shownName(file)} as ${entry.name} (${layers(c)}, ${vocabularyText(model.tokenizer)}). It stays in this page: nothing is uploaded.${note}${extraNote}`;
  store.dispatch({ type: 'opened', model: entry.name, views: entry.views, readsText: readsText(model.tokenizer), view: view ?? (firstView ? entry.views[0] : null), message });
  return { entry, message };
}

// A File or Blob (or an object with its size and arrayBuffer()), as opposed to bytes.
const isBlob = (x) => typeof x?.arrayBuffer === 'function' && typeof x.size === 'number';

/**
 * A model file through the core's loader (with a config.json's and a tokenizer.json's text), or
 * a sentence. A File is read as a stream straight into the core's reader (loadFile), so a 200 MB
 * file is never held whole beside its weights, and one over the core's limits is refused before
 * it is read. Each file is loaded in a WebAssembly instance of its own, so a refused file (the
 * instance is dropped with the error) or a closed one gives its memory back.
 * @param {Blob | Uint8Array | ArrayBuffer} source @param {string} file
 */
async function loadModel(source, file, { config = undefined, tokenizer = undefined, onProgress = undefined } = {}) {
  if (isBlob(source)) await checkSize(source, file);
  const cs = await newModule();
  /** @type {{config?: string, tokenizer?: string}} */
  const options = {};
  if (config !== undefined) options.config = config;
  if (tokenizer !== undefined) options.tokenizer = tokenizer;
  try {
    if (isBlob(source)) return await cs.loadFile(/** @type {Blob} */ (source), options, onProgress);
    const bytes = /** @type {Uint8Array | ArrayBuffer} */ (source);
    return cs.load(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), options);
  } catch (e) {
    throw new Error(`Could not open ${shownName(file)}: ${String(e?.message ?? e)}`);
  }
}

/** Refuses, in a sentence, a File over the core's size limit or an empty one, before it is read. */
async function checkSize(blob, file) {
  const { limits } = await getModule();
  if (blob.size > limits.maxModelFileBytes) {
    throw new Error(`Could not open ${shownName(file)}: it is ${Math.round(blob.size / MB)} MB, and the page opens model files of up to ${Math.round(limits.maxModelFileBytes / MB)} MB (the core's limit is ${Math.round(limits.maxWeights / MB)} M weights, ${Math.round(limits.maxWeights * 4 / MB)} MB as float32).`);
  }
  if (blob.size === 0) throw new Error(`Could not open ${shownName(file)}: the file is empty.`);
}

const isJson = (file) => /\.json$/i.test(String(file?.name ?? ''));
const isModel = (file) => /\.(safetensors|pth)$/i.test(String(file?.name ?? ''));
const MAX_FOLDER_FILES = 2000;   // a TransformerLens run has about 200 checkpoints
const MAX_FOLDER_DEPTH = 3;      // e.g. attn-only-2l/checkpoints/NAME_N.pth

/**
 * The files of a folder chosen or dropped (a model's folder as the hub serves it, or a run with
 * its checkpoints/): its model files (.safetensors, .pth), its config.json and its tokenizer.json,
 * at any depth up to MAX_FOLDER_DEPTH; everything else (README.md, tokenizer_config.json,
 * special_tokens_map.json, merges.txt, ...) is left out, and `left` says how many were.
 * @param {File[]} files @returns {{files: File[], left: number}}
 */
export function folderFiles(files) {
  // A folder input gives every file under the folder, with its path (run/checkpoints/x.pth: 2 folders).
  const deep = (f) => String(f.webkitRelativePath ?? '').split('/').length - 1 > MAX_FOLDER_DEPTH;
  const kept = files.filter((f) => !deep(f) && (isModel(f) || /^config\.json$/i.test(String(f.name)) || isTokenizer(f)))
    .slice(0, MAX_FOLDER_FILES);
  return { files: kept, left: files.length - kept.length };
}

/**
 * The files under the folders (and files) of a drop, read from its entries
 * (DataTransferItem.webkitGetAsEntry(), taken while the drop event lasts): null when nothing
 * dropped is a folder (the plain file list serves), else folderFiles() of every file found, at
 * most MAX_FOLDER_FILES of them.
 * @param {any[]} entries
 */
export async function droppedFolderFiles(entries) {
  if (!entries.some((e) => e?.isDirectory)) return null;
  /** @type {File[]} */
  const out = [];
  const walk = async (entry, depth) => {
    if (!entry || out.length >= MAX_FOLDER_FILES) return;
    if (entry.isFile) {
      out.push(await new Promise((resolve, reject) => entry.file(resolve, reject)));
    } else if (entry.isDirectory && depth < MAX_FOLDER_DEPTH) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
        if (!batch.length) break;
        for (const e of batch) await walk(e, depth + 1);
      }
    }
  };
  for (const e of entries) await walk(e, 0);
  return folderFiles(out);
}
const isText = (file) => /\.txt$/i.test(String(file?.name ?? ''));
// Hugging Face names its tokenizer file tokenizer.json; any other .json is a TransformerLens config.
const isTokenizer = (file) => /(^|[^a-z0-9])tokenizer\.json$/i.test(String(file?.name ?? ''));
const isConfig = (file) => isJson(file) && !isTokenizer(file);

/** A chosen JSON (or text) file's text, or a sentence saying why it cannot be read. */
async function jsonText(file, limit, why) {
  if (file.size > limit) throw new Error(`Could not open ${shownName(file.name)}: ${why}, this one is ${Math.round(file.size / MB)} MB.`);
  try {
    return await file.text();
  } catch (e) {
    throw new Error(`Could not read ${shownName(file.name)}: ${String(e?.message ?? e)}`);
  }
}

/**
 * Opens Files chosen or dropped together: one model file (.safetensors, or a .pth as torch.save
 * writes it) and, optionally, the TransformerLens config.json the hub ships beside it, which says
 * what a state dict cannot (the core reads and checks it), and a Hugging Face tokenizer.json (a
 * .json file of that name), with which the model reads typed text. Resolves to {entry, message} (the
 * message names the config and any file left unopened); rejects with a sentence.
 * onProgress(name, read, total): bytes of the model file read so far; note: words added to the
 * message (what a folder left out).
 * @param {Iterable<File>} files
 * @param {{onProgress?: (name: string, read: number, total: number) => void, note?: string}} [options]
 */
export async function openModelFiles(files, { onProgress, note = '' } = {}) {
  const list = [...(files ?? [])].filter((f) => f && typeof f.arrayBuffer === 'function');
  if (!list.length) throw new Error('Nothing to open: drop or choose a model file (.safetensors or .pth), with its config.json if it has one.');
  const configs = list.filter(isConfig), tokenizers = list.filter(isTokenizer), texts = list.filter(isText);
  const models = list.filter((f) => !isJson(f) && !isText(f));
  if (!models.length) {
    if (!configs.length) throw new Error(`Could not open ${shownName(tokenizers[0].name)} alone: a tokenizer.json says how a model reads text, so choose it together with the model's weights (a .pth or .safetensors file).`);
    throw new Error(`Could not open ${shownName(configs[0].name)} alone: a config.json describes a model, so choose it together with the model's weights (a .pth or .safetensors file).`);
  }
  if (tokenizers.length > 1) {
    throw new Error(`Could not open ${shownName(models[0].name)}: ${tokenizers.length} tokenizer.json files were chosen with it; choose the one that belongs to it.`);
  }
  if (configs.length > 1) {
    throw new Error(`Could not open ${shownName(models[0].name)}: ${configs.length} .json files were chosen with it (${configs.map((f) => shownName(f.name)).join(', ')}); choose the one config.json that belongs to it.`);
  }
  const config = configs.length ? await jsonText(configs[0], 16 * MB, 'a TransformerLens config.json is a few kilobytes') : undefined;
  const { limits } = await getModule();
  const tokenizer = tokenizers.length
    ? await jsonText(tokenizers[0], limits.maxTokenizerBytes, `circuitscope reads tokenizer files of up to ${Math.round(limits.maxTokenizerBytes / MB)} MB`)
    : undefined;
  if (texts.length > 1) throw new Error(`Could not open ${shownName(models[0].name)}: ${texts.length} .txt files were chosen with it; choose one held-out text for the checkpoints.`);
  const read = [...configs.slice(0, 1), ...tokenizers].map((f) => shownName(f.name));
  const withConfig = (read.length ? ` Read with ${read.join(' and ')}.` : '') + note;
  const series = await seriesOf(models);
  if (series) return openSeries(series, { config, tokenizer, text: texts[0], withConfig, onProgress });
  const left = models.slice(1).map((f) => shownName(f.name));
  const extra = (left.length ? ` (One model at a time: ${left.join(', ')} ${left.length === 1 ? 'was' : 'were'} not opened; several checkpoints of one run open together when each name ends with its number, as NAME_N.pth or stepN.safetensors.)` : '')
    + (texts.length ? ` (${shownName(texts[0].name)} was not read: a held-out text is for a series of checkpoints.)` : '');
  return openModel(models[0], models[0].name, { config, tokenizer, note: `${withConfig}${extra}`,
    onProgress: onProgress && ((read, total) => onProgress(models[0].name, read, total)) });
}

/**
 * The chosen model files as the checkpoints of one training run, or null when they are not one:
 * two or more files whose names end with their number (the core's checkpointLabel: NAME_N.pth,
 * stepN.safetensors) and at most one without (the final model, e.g. model_final.pth). Two files
 * with one number are refused in a sentence.
 * @param {File[]} models
 */
async function seriesOf(models) {
  if (models.length < 2) return null;
  const cs = await getModule();
  const labelled = [], other = [];
  for (const file of models) {
    const label = cs.checkpointLabel(file.name);
    (label === null ? other : labelled).push({ label, file });
  }
  if (labelled.length < 2 || other.length > 1) return null;
  labelled.sort((a, b) => a.label - b.label);
  for (let i = 1; i < labelled.length; i++) {
    if (labelled[i].label === labelled[i - 1].label) {
      throw new Error(`Could not open the checkpoints: ${shownName(labelled[i - 1].file.name)} and ${shownName(labelled[i].file.name)} have the same number ${labelled[i].label}; choose one checkpoint per number.`);
    }
  }
  const checkpoints = labelled.map((c) => ({ label: c.label, snapshot: `step${c.label}`, file: c.file }));
  return { checkpoints, final: other[0] ?? labelled.at(-1).file };
}

/**
 * Opens a checkpoint series: the final model (model_final.pth, else the last checkpoint) is read
 * now and shown in the Training view; each other checkpoint is read from its File only when the
 * Training view scores it or a view shows it, with the same config.json and tokenizer.json.
 */
async function openSeries({ checkpoints, final }, { config, tokenizer, text, withConfig, onProgress }) {
  const { limits } = await getModule();
  let heldOut = null;
  if (text) {
    heldOut = await jsonText(text, limits.maxHeldOutBytes, `the checkpoints are scored on at most ${Math.round(limits.maxHeldOutBytes / MB)} MB of held-out text`);
  }
  const open = async (file) => loadModel(file, file.name, { config, tokenizer });
  const series = { checkpoints, text: heldOut, textName: text ? shownName(text.name) : null, open };
  const withText = text ? ` The Training view scores them on ${shownName(text.name)}.` : '';
  return openModel(final, final.name, { config, tokenizer, series, view: 'training',
    onProgress: onProgress && ((read, total) => onProgress(final.name, read, total)),
    note: `${withConfig} With ${checkpoints.length} checkpoints of its training (${checkpoints[0].label} to ${checkpoints.at(-1).label}), read one at a time when they are scored or shown.${withText}` });
}

/** Opens one File (from a file input or a drop). */
export async function openModelFile(file) {
  if (!file || typeof file.arrayBuffer !== 'function') throw new Error('Nothing to open: drop or choose a model file (.safetensors or .pth).');
  return openModel(file, file.name);
}
