// The page's logic: owns the WASM instance, loads a model (shipped or from disk), runs the text
// the user types and shows each token coloured by its per-token loss. Text only ever reaches the
// page through textContent.
import { init } from './wasm/circuitscope.js';

// Loss bins (nats) for colouring; each bin i has a CSS class loss-i in style.css.
const BINS = [0.5, 1, 2, 3, 4, 5, Infinity];
const BIN_LABELS = ['< 0.5', '0.5–1', '1–2', '2–3', '3–4', '4–5', '≥ 5'];
const CHAR_SAMPLE = 'The cat sat on the mat. The cat sat on the mat.';

const $ = (id) => document.getElementById(id);
const els = {
  select: $('model-select'),
  file: $('model-file'),
  status: $('model-status'),
  description: $('model-description'),
  error: $('error'),
  text: $('text-input'),
  note: $('note'),
  legend: $('legend'),
  mean: $('mean-loss'),
  tokens: $('tokens'),
  version: $('version'),
};

const state = {
  cs: null,         // the initialised module
  model: null,      // the loaded model
  modelName: '',
  pending: 0,       // animation-frame id of the next analysis
  loadSeq: 0,       // guards against out-of-order loads
};

// One message area; `kind` lets a successful analysis clear its own errors without hiding a
// message about a model file that failed to open.
function showError(message, kind = 'load') {
  els.error.textContent = message;
  els.error.dataset.kind = kind;
  els.error.hidden = false;
}

function clearError(kind) {
  if (kind && els.error.dataset.kind !== kind) return;
  els.error.textContent = '';
  delete els.error.dataset.kind;
  els.error.hidden = true;
}

// Ends a message with a full stop so that another sentence can follow it.
function sentence(message) {
  const m = String(message ?? '').trim();
  return /[.!?]$/.test(m) ? m : `${m}.`;
}

function setStatus(message) {
  els.status.textContent = message;
}

function setNote(message) {
  els.note.textContent = message || '';
  els.note.hidden = !message;
}

function binOf(loss) {
  for (let i = 0; i < BINS.length; i++) if (loss < BINS[i]) return i;
  return BINS.length - 1;
}

function buildLegend() {
  els.legend.replaceChildren();
  BIN_LABELS.forEach((label, i) => {
    const item = document.createElement('span');
    item.className = 'legend-item';
    const swatch = document.createElement('span');
    swatch.className = `swatch loss-${i}`;
    swatch.setAttribute('aria-hidden', 'true');
    const text = document.createElement('span');
    text.textContent = label;
    item.append(swatch, text);
    els.legend.append(item);
  });
  const unit = document.createElement('span');
  unit.className = 'legend-unit';
  unit.textContent = 'nats';
  els.legend.append(unit);
}

function describe(name, model, extra) {
  const c = model.config;
  const kind = model.tokenizer?.kind === 'word' ? 'word-level' : 'character-level';
  const arch = `${c.n_layers} layer${c.n_layers === 1 ? '' : 's'}, ${c.n_heads} head${c.n_heads === 1 ? '' : 's'} ` +
    `per layer, d_model ${c.d_model}, context ${c.n_ctx} tokens, ${c.d_vocab} ${kind} tokens`;
  els.description.textContent = extra ? `${extra} — ${arch}.` : `${arch}.`;
  setStatus(`Loaded ${name}.`);
}

function installModel(name, model, description) {
  if (state.model) state.model.delete();
  state.model = model;
  state.modelName = name;
  describe(name, model, description);
  els.text.disabled = false;
  if (!els.text.value && model.tokenizer?.kind !== 'word') els.text.value = CHAR_SAMPLE;
  if (model.tokenizer?.kind === 'word') {
    const words = (model.tokenizer.vocab || []).filter((w) => !/^<.*>$/.test(w)).slice(0, 8);
    els.text.placeholder = words.length ? `Type words from the vocabulary, e.g. ${words.join(' ')}` : 'Type here…';
  } else {
    els.text.placeholder = 'Type here…';
  }
  document.body.dataset.modelLoaded = 'true';
  document.body.dataset.nCtx = String(model.config.n_ctx);
  document.body.dataset.tokenizer = model.tokenizer?.kind ?? '';
  scheduleAnalysis();
}

async function loadBytes(name, bytes, description) {
  const seq = ++state.loadSeq;
  let model;
  try {
    model = state.cs.load(bytes);
  } catch (e) {
    const keep = state.model ? ` The previous model (${state.modelName}) is still loaded.` : '';
    showError(`Could not open ${name}: ${sentence(e.message)}${keep}`);
    setStatus(state.model ? `Loaded ${state.modelName}.` : 'No model loaded.');
    return false;
  }
  if (seq !== state.loadSeq) {
    model.delete();
    return false;
  }
  clearError();
  installModel(name, model, description);
  return true;
}

async function loadShipped(entry) {
  setStatus(`Loading ${entry.title || entry.file}…`);
  let bytes;
  try {
    const res = await fetch(`models/${encodeURIComponent(entry.file)}`);
    if (!res.ok) throw new Error(`the server answered ${res.status} ${res.statusText}`.trim());
    bytes = new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    showError(`Could not download ${entry.file}: ${e.message}`);
    setStatus(state.model ? `Loaded ${state.modelName}.` : 'No model loaded.');
    return;
  }
  await loadBytes(entry.title || entry.file, bytes, entry.description);
}

async function loadIndex() {
  let list = [];
  try {
    const res = await fetch('models/index.json');
    if (res.ok) list = await res.json();
    if (!Array.isArray(list)) throw new Error('models/index.json is not a list');
  } catch (e) {
    list = [];
    showError(`Could not read the list of shipped models: ${e.message}`);
  }
  list = list.filter((m) => m && typeof m.file === 'string');
  els.select.replaceChildren();
  if (!list.length) {
    const opt = document.createElement('option');
    opt.value = '';
    opt.textContent = 'No shipped models — open a file instead';
    els.select.append(opt);
    els.select.disabled = true;
    setStatus('No model loaded. Open a .safetensors model file.');
    return list;
  }
  list.forEach((m, i) => {
    const opt = document.createElement('option');
    opt.value = String(i);
    opt.textContent = m.title || m.file;
    els.select.append(opt);
  });
  els.select.disabled = false;
  return list;
}

// Runs the current text and redraws the tokens. Long text is cut to the model's context.
function analyse() {
  state.pending = 0;
  const model = state.model;
  if (!model) return;
  const text = els.text.value;
  const nCtx = model.config.n_ctx;
  let tokens;
  try {
    tokens = model.tokenize(text);
  } catch (e) {
    showError(`Could not tokenize the text: ${e.message}`, 'analysis');
    return;
  }
  let { ids, begins, ends } = tokens;
  // A <BOS> token has an empty span at 0; every real token covers at least one character.
  const hasBos = ids.length > 0 && begins[0] === 0 && ends[0] === 0;
  let note = '';
  if (ids.length > nCtx) {
    // Keep <BOS> and the last n_ctx - 1 tokens (for a character-level model: characters).
    const head = hasBos ? 1 : 0;
    const keep = nCtx - head;
    const from = ids.length - keep;
    const unit = model.tokenizer?.kind === 'word' ? 'tokens' : 'characters';
    note = `The text is longer than this model's context of ${nCtx} tokens: only the last ${keep} ${unit} are analysed.`;
    const cut = (a) => {
      const out = new Int32Array(nCtx);
      if (head) out[0] = a[0];
      out.set(a.subarray(from), head);
      return out;
    };
    ids = cut(ids);
    begins = cut(begins);
    ends = cut(ends);
  }
  let result = null;
  if (ids.length) {
    try {
      result = model.run(ids);
    } catch (e) {
      showError(`Could not run the model: ${e.message}`, 'analysis');
      return;
    }
  }
  clearError('analysis');
  setNote(note);
  render(text, ids, begins, ends, result ? result.loss.data : new Float32Array(0), note !== '');
}

function render(text, ids, begins, ends, loss, truncated) {
  const frag = document.createDocumentFragment();
  const vocab = state.model.tokenizer?.vocab || [];
  const first = ids.findIndex((_, i) => ends[i] > begins[i]);  // first real (non-special) token
  let cursor = 0;
  if (truncated && first >= 0 && begins[first] > 0) {
    cursor = begins[first];
    const skipped = document.createElement('span');
    skipped.className = 'skipped';
    skipped.textContent = text.slice(0, cursor);
    skipped.title = 'Outside the model context';
    frag.append(skipped);
  }
  let sum = 0;
  let count = 0;
  for (let i = 0; i < ids.length; i++) {
    if (ends[i] <= begins[i]) continue;  // <BOS> and other special tokens with no text
    if (begins[i] > cursor) frag.append(document.createTextNode(text.slice(cursor, begins[i])));
    const l = i > 0 ? loss[i - 1] : NaN;  // loss of predicting token i from tokens 0..i-1
    const span = document.createElement('span');
    const shown = text.slice(begins[i], ends[i]);
    span.textContent = shown;
    span.dataset.tokenId = String(ids[i]);
    span.tabIndex = 0;
    const label = JSON.stringify(vocab[ids[i]] ?? shown);
    if (Number.isFinite(l)) {
      span.className = `tok loss-${binOf(l)}`;
      span.dataset.loss = l.toFixed(4);
      span.title = `token ${label} (id ${ids[i]}): loss ${l.toFixed(3)} nats`;
      sum += l;
      count += 1;
    } else {
      span.className = 'tok no-loss';
      span.title = `token ${label} (id ${ids[i]}): first token, nothing predicts it`;
    }
    span.setAttribute('aria-label', span.title);
    frag.append(span);
    cursor = Math.max(cursor, ends[i]);
  }
  if (cursor < text.length) frag.append(document.createTextNode(text.slice(cursor)));
  els.tokens.replaceChildren(frag);
  els.mean.textContent = count ? `${(sum / count).toFixed(3)} nats over ${count} token${count === 1 ? '' : 's'}` : '–';
}

function scheduleAnalysis() {
  if (!state.pending) state.pending = requestAnimationFrame(analyse);
}

async function main() {
  buildLegend();
  try {
    state.cs = await init();
  } catch (e) {
    showError(`Could not start the WebAssembly module: ${e.message}`);
    setStatus('Not started.');
    return;
  }
  els.version.textContent = state.cs.version;
  const list = await loadIndex();

  els.select.addEventListener('change', () => {
    const entry = list[Number(els.select.value)];
    if (entry) loadShipped(entry);
  });
  els.file.addEventListener('change', async () => {
    const file = els.file.files?.[0];
    if (!file) return;
    setStatus(`Opening ${file.name}…`);
    let bytes;
    try {
      bytes = new Uint8Array(await file.arrayBuffer());
    } catch (e) {
      showError(`Could not read ${file.name}: ${e.message}`);
      return;
    }
    const ok = await loadBytes(file.name, bytes, 'opened from disk');
    if (ok && !els.select.disabled) els.select.selectedIndex = -1;
    els.file.value = '';
  });
  els.text.addEventListener('input', scheduleAnalysis);

  if (list.length) await loadShipped(list[0]);
  document.body.dataset.ready = 'true';
}

main();
