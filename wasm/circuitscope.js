// The friendly JS API over the Embind module (circuitscope.mjs + circuitscope.wasm, which sit
// beside this file): init() loads the WebAssembly once; load(bytes) opens a model file and
// returns an object with its parsed config and every analysis (run, attribution, qk, ov, eigen,
// composition, headScores, ablate, ioi, ...) plus delete(); trainer(recipe) starts a training run
// and returns an object with step(), save() and delete(). Results are plain objects whose bulk
// arrays are copied typed arrays tagged {data, shape, axes} (see circuitscope.d.ts). This file
// only chooses defaults and checks arguments; every computation happens in the C++ core.
import createCircuitscope from './circuitscope.mjs';

const isNode = typeof process === 'object' && process !== null && !!process.versions?.node &&
  typeof window === 'undefined';

let defaultInstance = null;
let readyModule = null;  // the first module instance that finished loading (for phaseChange)

/** The induction-heads paper's in-context-learning score compares token index 500 with 50. */
export const PAPER_ICL_EARLY = 50;
export const PAPER_ICL_LATE = 500;

function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError('load: expected the model file as a Uint8Array or an ArrayBuffer');
}

function toInt32(ids, what = 'run') {
  if (ids instanceof Int32Array) return ids;
  if (Array.isArray(ids) || ArrayBuffer.isView(ids)) {
    for (let i = 0; i < ids.length; i++) {
      if (!Number.isInteger(Number(ids[i]))) {
        throw new TypeError(`${what}: token id ${String(ids[i])} at position ${i} is not an integer`);
      }
    }
    return Int32Array.from(ids);
  }
  throw new TypeError(`${what}: expected token ids as an Int32Array or an array of integers`);
}

// Embind may surface an error as something other than an Error (e.g. a bare number when an
// exception escapes uncaught); make sure callers always get an Error with a message.
function asError(e) {
  if (e instanceof Error) return e;
  return new Error(`circuitscope: internal error (${String(e)})`);
}

function call(fn) {
  try {
    return fn();
  } catch (e) {
    throw asError(e);
  }
}

// Options objects: undefined is {}; unknown keys are an error (a typo should not be ignored).
function opts(options, allowed, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${what}: options must be an object {${allowed.join(', ')}}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${what}: unknown option "${key}" (expected ${allowed.join(', ')})`);
    }
  }
  return options;
}

const bool = (x, fallback) => (x === undefined ? fallback : !!x);

// The handle's config() JSON; on failure the handle is freed and the error rethrown readably.
function parseConfig(handle) {
  try {
    return JSON.parse(handle.config());
  } catch (e) {
    handle.delete();
    throw asError(e);
  }
}

// run()'s {into}: caller-owned Float32Arrays that receive patterns, logits and loss instead of
// new arrays (so a view that runs on every keystroke allocates nothing). Each is optional and
// must hold at least the result (e.g. n_layers * n_heads * n_ctx * n_ctx floats for patterns, to
// fit any sequence); the result's data is then a subarray of it.
function runBuffers(into, config, T) {
  if (typeof into !== 'object' || Array.isArray(into)) {
    throw new TypeError('run: options.into must be an object {patterns?, logits?, loss?} of Float32Arrays');
  }
  const need = {
    patterns: config.n_layers * config.n_heads * T * T,
    logits: T * config.d_vocab,
    loss: T,
  };
  const out = {};
  for (const [key, value] of Object.entries(into)) {
    if (!(key in need)) throw new TypeError(`run: unknown buffer "${key}" in options.into (expected patterns, logits, loss)`);
    if (value === undefined || value === null) continue;
    if (!(value instanceof Float32Array)) throw new TypeError(`run: options.into.${key} must be a Float32Array`);
    if (value.length < need[key]) {
      throw new RangeError(`run: options.into.${key} holds ${value.length} floats, ${need[key]} are needed for ${T} tokens`);
    }
    out[key] = value;
  }
  return out;
}

// Head scores on repeated random tokens, for a model or a trainer (the same options). The core
// fills in every option left out (cs::resolve_repeated_tokens: the random-token pool from the
// tokenizer, the longest L that fits, <BOS>, batch 16, seed 0) and returns the values it used.
function headScores(handle, options) {
  const o = opts(options, ['L', 'batch', 'seed', 'first', 'n', 'bos'], 'headScores');
  return call(() => handle.headScores(o));
}

function wrap(mod, handle) {
  const parsed = parseConfig(handle);
  const config = parsed.config;
  const tokenizer = parsed.tokenizer;
  const vocab = tokenizer.vocab ?? [];
  const bosId = vocab.indexOf('<BOS>');
  let alive = true;
  let last = null;  // {tokens, intervention} of the last run()
  const live = (what) => {
    if (!alive) throw new Error(`${what}: this model has been deleted`);
  };
  // Text is tokenized (with <BOS> first when the vocabulary has one); ids pass through.
  const tokens = (input, what) => {
    if (typeof input === 'string') return call(() => handle.tokenize(input)).ids;
    return toInt32(input, what);
  };

  const model = {
    config,
    tokenizer,
    info: parsed.info ?? {},
    tokenize(text) {
      live('tokenize');
      if (typeof text !== 'string') throw new TypeError('tokenize: expected a string');
      return call(() => handle.tokenize(text));
    },
    /** Token texts of ids (for labels). */
    tokenText(ids) {
      return Array.from(ids, (id) => vocab[id] ?? `#${id}`);
    },
    run(input, intervention, options) {
      live('run');
      const o = opts(options, ['resid', 'result', 'patterns', 'logits', 'into', 'topk', 'textScores'], 'run');
      const ids = tokens(input, 'run');
      const into = o.into === undefined || o.into === null ? undefined : runBuffers(o.into, config, ids.length);
      const out = call(() => handle.run(ids, intervention, {
        resid: bool(o.resid, false), result: bool(o.result, false), patterns: bool(o.patterns, true),
        logits: bool(o.logits, true), into, topk: o.topk ?? 0, textScores: bool(o.textScores, false),
      }));
      out.tokens = Int32Array.from(ids);
      last = { tokens: out.tokens, intervention };
      return out;
    },
    attribution(pos, options) {
      live('attribution');
      const o = opts(options, ['tokens', 'intervention'], 'attribution');
      let ids;
      let intervention = o.intervention;
      if (o.tokens !== undefined) {
        ids = tokens(o.tokens, 'attribution');
      } else {
        if (!last) throw new Error('attribution: no tokens given and nothing has been run yet (call run() first or pass {tokens})');
        ids = last.tokens;
        if (!('intervention' in o)) intervention = last.intervention;
      }
      if (pos === undefined) pos = ids.length - 1;
      else if (Number.isInteger(pos) && pos < 0) pos += ids.length;
      return call(() => handle.attribution(ids, pos, intervention));
    },
    qk(layer, head, options) {
      live('qk');
      const o = opts(options, ['k', 'table', 'factors'], 'qk');
      return call(() => handle.qk(layer, head, o.k ?? 10, bool(o.table, true), bool(o.factors, false)));
    },
    ov(layer, head, options) {
      live('ov');
      const o = opts(options, ['k', 'table', 'factors'], 'ov');
      return call(() => handle.ov(layer, head, o.k ?? 10, bool(o.table, true), bool(o.factors, false)));
    },
    posQk(layer, head, options) {
      live('posQk');
      const o = opts(options, ['k', 'table', 'factors'], 'posQk');
      return call(() => handle.posQk(layer, head, o.k ?? 10, bool(o.table, true), bool(o.factors, false)));
    },
    eigen(layer, head) {
      live('eigen');
      return call(() => handle.eigen(layer, head));
    },
    spectra() {
      live('spectra');
      return call(() => handle.spectra());
    },
    composition(options) {
      live('composition');
      const o = opts(options, ['samples', 'seed'], 'composition');
      return call(() => handle.composition(o.samples ?? 200, o.seed ?? 0));
    },
    headScores(options) {
      live('headScores');
      return headScores(handle, options);
    },
    topK(input, k = 5) {
      live('topK');
      const ids = tokens(input, 'topK');
      return call(() => handle.topK(ids, k));
    },
    ablate(input, intervention, options) {
      live('ablate');
      const o = opts(options, ['iclEarly', 'iclLate', 'batch'], 'ablate');
      let ids;
      let B = o.batch ?? 1;
      if (input && typeof input === 'object' && input.data && Array.isArray(input.shape)) {
        // A tagged [B, T] batch (e.g. headScores().tokens).
        ids = toInt32(input.data, 'ablate');
        if (input.shape.length === 2) B = input.shape[0];
      } else {
        ids = tokens(input, 'ablate');
      }
      const T = Number.isInteger(B) && B > 0 ? Math.floor(ids.length / B) : 0;
      const late = o.iclLate ?? Math.max(0, Math.min(PAPER_ICL_LATE, T - 2));
      const early = o.iclEarly ?? Math.min(PAPER_ICL_EARLY, Math.floor(late / 2));
      const out = call(() => handle.ablate(ids, B, intervention, early, late));
      Object.assign(out, { icl_early: early, icl_late: late });
      return out;
    },
    ioi(input, intervention) {
      live('ioi');
      if (input === undefined || input === null) {
        // The core's whole-task evaluation refuses a model of another vocabulary (with its
        // sentence); the per-sequence analysis below would not.
        call(() => handle.ioiEvaluate(intervention, undefined));
        const seqs = call(() => handle.ioiSequences(undefined));
        const [n, T] = seqs.shape;
        const pad = vocab.indexOf('<PAD>');  // template rows end in <PAD>; symbolic ones have none
        const out = [];
        for (let i = 0; i < n; i++) {
          let end = (i + 1) * T;
          while (end > i * T + 1 && seqs.data[end - 1] === pad) end--;
          const ids = seqs.data.slice(i * T, end);
          const a = call(() => handle.ioi(ids, intervention));
          a.tokens = ids;
          out.push(a);
        }
        return out;
      }
      const ids = tokens(input, 'ioi');
      const a = call(() => handle.ioi(ids, intervention));
      a.tokens = Int32Array.from(ids);
      return a;
    },
    ioiSequences(split) {
      live('ioiSequences');
      return call(() => handle.ioiSequences(split));
    },
    ioiEvaluate(intervention, split) {
      live('ioiEvaluate');
      return call(() => handle.ioiEvaluate(intervention, split));
    },
    ioiTask() {
      live('ioiTask');
      return call(() => handle.ioiTask());
    },
    ioiSentence(options) {
      live('ioiSentence');
      const o = opts(options, ['template', 'order', 'io', 's', 'place', 'object'], 'ioiSentence');
      return call(() => handle.ioiSentence(o));
    },
    cutComposition(input) {
      live('cutComposition');
      return call(() => handle.cutComposition(input));
    },
    skipTrigrams(layer, head, options) {
      live('skipTrigrams');
      const o = opts(options, ['k', 'maxBugs'], 'skipTrigrams');
      return call(() => handle.skipTrigrams(layer, head, o.k ?? 20, o.maxBugs ?? 32));
    },
    corpusStats(input, options) {
      live('corpusStats');
      const o = opts(options, ['window', 'leadingTerms'], 'corpusStats');
      let ids = tokens(input, 'corpusStats');
      // Text: drop the <BOS> tokenize() puts first (a stream, not a sequence).
      if (typeof input === 'string' && bosId >= 0 && ids[0] === bosId) ids = ids.subarray(1);
      return call(() => handle.corpusStats(ids, o.window ?? 8, bool(o.leadingTerms, false)));
    },
    save() {
      live('save');
      return call(() => handle.save());
    },
    /**
     * Benchmark entry: one forward pass over a [B, T] batch (ids row-major, B * T of them) into
     * the model's own cache; returns the mean next-token loss. Copies nothing bulk out.
     */
    forwardBatch(ids, B, T) {
      live('forwardBatch');
      return call(() => handle.forwardBatch(toInt32(ids, 'forwardBatch'), B, T));
    },
    /** Frees the model's memory inside the module; the object is unusable afterwards. */
    delete() {
      if (alive) {
        alive = false;
        last = null;
        handle.delete();
      }
    },
  };
  return model;
}

function recipeJson(recipe) {
  if (typeof recipe === 'string') return recipe;
  if (recipe !== null && typeof recipe === 'object' && !Array.isArray(recipe)) return JSON.stringify(recipe);
  throw new TypeError('trainer: expected the recipe as an object or a JSON string');
}

function wrapTrainer(handle) {
  const parsed = parseConfig(handle);
  let alive = true;
  const live = (what) => {
    if (!alive) throw new Error(`${what}: this trainer has been deleted`);
  };
  return {
    config: parsed.config,
    tokenizer: parsed.tokenizer,
    recipe: parsed.recipe,
    steps: parsed.steps,
    batch_size: parsed.batch_size,
    seed: parsed.seed,
    /** Steps completed so far. */
    get stepsDone() {
      live('stepsDone');
      return handle.stepsDone();
    },
    /**
     * Head scores of the model as it stands (the same as load(save()).headScores(options), without
     * the round trip): previous-token, duplicate-token, prefix-matching and copying [L, H].
     */
    headScores(options) {
      live('headScores');
      return headScores(handle, options);
    },
    /**
     * Runs n optimisation steps (default 1), each its own call into the module, and returns the
     * metrics of the LAST one: {step, loss, lr, grad_norm, loss_repeated, loss_fresh}. Call it in
     * a loop to record every step. Throws an Error ("training diverged at step ...") on NaN/Inf.
     */
    step(n = 1) {
      live('step');
      if (!Number.isInteger(n) || n < 1) throw new RangeError('step: n must be a positive integer');
      let metrics;
      try {
        for (let i = 0; i < n; i++) metrics = handle.step();
      } catch (e) {
        throw asError(e);
      }
      return metrics;
    },
    /** The model as it stands, as model-file bytes (a fresh Uint8Array) that load() accepts. */
    save() {
      live('save');
      return call(() => handle.save());
    },
    delete() {
      if (alive) {
        alive = false;
        handle.delete();
      }
    },
  };
}

/**
 * Loads the WebAssembly module. In node the .wasm file next to this one is read from disk; in a
 * browser (page or worker) it is fetched from beside this file (or from options.wasmUrl).
 */
export async function init(options = {}) {
  const moduleOptions = {};
  if (options.wasmBinary) {
    moduleOptions.wasmBinary = options.wasmBinary;
  } else if (isNode) {
    const { readFile } = await import('node:fs/promises');
    moduleOptions.wasmBinary = await readFile(new URL('./circuitscope.wasm', import.meta.url));
  } else {
    const wasmUrl = options.wasmUrl ?? new URL('./circuitscope.wasm', import.meta.url).href;
    moduleOptions.locateFile = (path) => (path.endsWith('.wasm') ? wasmUrl : path);
  }
  if (options.print) moduleOptions.print = options.print;
  if (options.printErr) moduleOptions.printErr = options.printErr;
  const mod = await createCircuitscope(moduleOptions);
  if (!readyModule) readyModule = mod;
  return {
    module: mod,
    version: mod.version(),
    load(bytes) {
      const b = toBytes(bytes);
      const handle = call(() => new mod.Model(b));
      return wrap(mod, handle);
    },
    trainer(recipe) {
      const json = recipeJson(recipe);
      const handle = call(() => new mod.Trainer(json));
      return wrapTrainer(handle);
    },
    /** {heapSize, allocated} in bytes: the module's linear memory and malloc's live bytes. */
    memory() {
      return mod.memoryStats();
    },
    /** The phase change of training records (see the module-level phaseChange). */
    phaseChange(records, options) {
      return phaseChangeWith(mod, records, options);
    },
  };
}

async function sharedInstance(options) {
  if (!defaultInstance) defaultInstance = init(options);
  try {
    return await defaultInstance;
  } catch (e) {
    defaultInstance = null;
    throw e;
  }
}

/** Opens a model file with a shared, lazily initialised module. */
export async function load(bytes, options = {}) {
  return (await sharedInstance(options)).load(bytes);
}

/** Starts a training run with the shared, lazily initialised module. */
export async function trainer(recipe, options = {}) {
  return (await sharedInstance(options)).trainer(recipe);
}

function phaseChangeWith(mod, records, options) {
  const o = opts(options, ['nHeads'], 'phaseChange');
  if (records !== undefined && records !== null && !Array.isArray(records)) {
    throw new TypeError('phaseChange: records must be an array of {step, prefix_matching}');
  }
  return call(() => mod.phaseChange(records ?? [], o.nHeads));
}

/**
 * The phase change of a training run, as the core defines it (cs::phase_change, the report's
 * definition): over records [{step, prefix_matching}] in step order (the metrics files' records
 * or a trainer's), the first record whose best head (over all heads) reaches half the final
 * record's best score; null when that final best is below 0.1 (no induction head formed) or there
 * are no records. {nHeads} splits the flat head index into layer and head. Synchronous: needs a
 * module that has finished loading in this thread (after await init(), load() or trainer()).
 */
export function phaseChange(records, options) {
  if (!readyModule) throw new Error('phaseChange: the WebAssembly module has not been loaded yet (await init(), load() or trainer() first)');
  return phaseChangeWith(readyModule, records, options);
}

/**
 * Reads one element of a tagged array: at(t, i, j, ...) with one index per axis (row-major).
 * Throws a RangeError for a wrong number of indices or an index outside its axis.
 */
export function at(t, ...index) {
  if (index.length !== t.shape.length) {
    throw new RangeError(`at: expected ${t.shape.length} indices (${t.axes.join(', ')}), got ${index.length}`);
  }
  let flat = 0;
  for (let d = 0; d < index.length; d++) {
    const i = index[d];
    if (!Number.isInteger(i) || i < 0 || i >= t.shape[d]) {
      throw new RangeError(`at: index ${i} is outside axis ${t.axes[d]} (0..${t.shape[d] - 1})`);
    }
    flat = flat * t.shape[d] + i;
  }
  return t.data[flat];
}

/** The index tuple and value of the largest element of a tagged array. */
export function argmax(t) {
  let best = 0;
  for (let i = 1; i < t.data.length; i++) if (t.data[i] > t.data[best]) best = i;
  const index = new Array(t.shape.length);
  let rest = best;
  for (let d = t.shape.length - 1; d >= 0; d--) {
    index[d] = rest % t.shape[d];
    rest = Math.floor(rest / t.shape[d]);
  }
  return { index, value: t.data[best] };
}
