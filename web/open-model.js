// Opening a model file in the page: a File (the header's file picker, a file dropped on the page)
// or bytes (a model trained in the Training view) go through the core's loader (load(bytes)),
// and the model is registered as "local:NAME" (local-models.js). The bytes never leave the page:
// nothing here fetches. A file over MAX_FILE_BYTES is refused before it is read; a file the
// loader refuses gives the loader's sentence. On success a `cs-model-opened` event goes to the
// document (detail: {entry, message, view}); the app shell (app.js) shows the model from it.
import { getModule } from './store.js';
import { registerLocal, MAX_FILE_BYTES } from './local-models.js';
import { vocabularyText } from './parts/format.js';

const MB = 1024 * 1024;
const shownName = (file) => String(file ?? 'the file').slice(0, 80);
const layers = (c) => (c.n_layers ? `${c.n_layers} layer${c.n_layers === 1 ? '' : 's'} of ${c.n_heads} head${c.n_heads === 1 ? '' : 's'}` : 'no attention layers');

/**
 * Opens model-file bytes named `file` and registers the model. `firstView`: show it in the first
 * view that offers it (IOI for an IOI model, else Induction); otherwise the app decides. Resolves to {entry, message}; rejects with an Error whose message is
 * a sentence for the page ("Could not open x.safetensors: model file: ...").
 */
export async function openModelBytes(bytes, file, { firstView = false } = {}) {
  const cs = await getModule();
  let model;
  try {
    model = cs.load(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
  } catch (e) {
    throw new Error(`Could not open ${shownName(file)}: ${String(e?.message ?? e)}`);
  }
  let entry;
  try {
    entry = registerLocal(file, model, { size: bytes.byteLength });
  } catch (e) {
    model.delete();
    throw new Error(`Could not open ${shownName(file)}: ${String(e?.message ?? e)}`);
  }
  const c = model.config;
  const note = typeof model.info?.note === 'string' ? ` ${model.info.note}` : '';
  const message = `Opened ${shownName(file)} as ${entry.name} (${layers(c)}, ${vocabularyText(model.tokenizer.kind, c.d_vocab)}). It stays in this page: nothing is uploaded.${note}`;
  document.dispatchEvent(new CustomEvent('cs-model-opened', { detail: { entry, message, view: firstView ? entry.views[0] : null } }));
  return { entry, message };
}

/** Opens a File (from a file input or a drop): size checked first, then read and loaded. */
export async function openModelFile(file) {
  if (!file || typeof file.arrayBuffer !== 'function') throw new Error('Nothing to open: drop or choose a .safetensors model file.');
  if (file.size > MAX_FILE_BYTES) {
    throw new Error(`Could not open ${shownName(file.name)}: it is ${Math.round(file.size / MB)} MB, and the page opens model files of up to ${MAX_FILE_BYTES / MB} MB (the core's limit is 64 M weights, 256 MB as float32).`);
  }
  if (file.size === 0) throw new Error(`Could not open ${shownName(file.name)}: the file is empty.`);
  let bytes;
  try {
    bytes = new Uint8Array(await file.arrayBuffer());
  } catch (e) {
    throw new Error(`Could not read ${shownName(file.name)}: ${String(e?.message ?? e)}`);
  }
  return openModelBytes(bytes, file.name);
}
