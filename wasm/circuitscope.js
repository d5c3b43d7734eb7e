// The friendly JS API over the Embind module (circuitscope.mjs + circuitscope.wasm, which sit
// beside this file): init() loads the WebAssembly once; load(bytes) opens a model file and
// returns an object with its parsed config and every analysis (run, attribution, qk, ov, eigen,
// composition, headScores, ablate, ioi, ...) plus delete(); trainer(recipe) starts a training run
// and returns an object with step(), save() and delete(). Results are plain objects whose bulk
// arrays are copied typed arrays tagged {data, shape, axes} (see circuitscope.d.ts). This file
// only chooses defaults and checks arguments; every computation happens in the C++ core.
// The methods that only check their options and pass them on are rows of one table (MODEL_CALLS,
// TRAINER_CALLS); the few that do more (tokens in, buffers, the whole IOI task) are written out.
// `tsc -p tests/types` checks this file against circuitscope.d.ts through the JSDoc types below.
// The Emscripten module itself is imported by init(): circuitscope.mjs (SIMD128) or, where the
// engine has relaxed SIMD, circuitscope-relaxed.mjs (the same core with fused multiply-adds in
// its kernels; docs/developer-notes.md, "Relaxed SIMD").

/** @typedef {import('./circuitscope.js').LoadedModel} LoadedModel */
/** @typedef {import('./circuitscope.js').Trainer} Trainer */
/** @typedef {import('./circuitscope.js').Circuitscope} Circuitscope */
/** @typedef {import('./circuitscope.js').InitOptions} InitOptions */
/** @typedef {import('./circuitscope.js').LoadOptions} LoadOptions */
/** @typedef {import('./circuitscope.js').PhaseChange} PhaseChange */
/** @typedef {import('./circuitscope.js').PhaseChangeRecord} PhaseChangeRecord */
/** @typedef {import('./circuitscope.js').Tagged<Float32Array | Int32Array>} AnyTagged */
/** @typedef {Record<string, any>} Options */

const nodeProcess = /** @type {any} */ (globalThis).process;
const isNode = typeof nodeProcess === 'object' && nodeProcess !== null && !!nodeProcess.versions?.node &&
  typeof window === 'undefined';

/** @type {Promise<Circuitscope> | null} */
let defaultInstance = null;
/** @type {any} the first module instance that finished loading (for phaseChange) */
let readyModule = null;

/** The induction-heads paper's in-context-learning score compares token index 500 with 50. */
export const PAPER_ICL_EARLY = 50;
export const PAPER_ICL_LATE = 500;

/** @param {Uint8Array | ArrayBuffer | ArrayBufferView} bytes @returns {Uint8Array} */
function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError('load: expected the model file as a Uint8Array or an ArrayBuffer');
}

// The piece load() gives the module at a time, and the buffer loadFile() reads a File into.
const LOAD_PIECE = 16 << 20;
const FILE_PIECE = 4 << 20;

/**
 * The module's ModelReader for a file of `size` bytes: write(piece) the file's bytes in order,
 * then finish() for the model; delete() always (it frees the reader, not the model).
 * @param {any} mod @param {number} size @param {LoadOptions | undefined} options
 */
function modelReader(mod, size, options) {
  const reader = call(() => new mod.ModelReader(size, options ?? {}));
  return {
    write: (/** @type {Uint8Array} */ piece) => call(() => reader.write(piece)),
    finish: () => wrap(call(() => reader.finish())),
    delete: () => reader.delete(),
  };
}

/**
 * Writes a File's bytes to write(piece) as its stream gives them, calling onProgress(read, total).
 * A byte stream is read into one buffer, passed back each time: a fresh buffer for every piece
 * (the default reader) made reading 200 MB in Chromium three to seven times slower.
 * @param {Blob} file @param {(piece: Uint8Array) => void} write
 * @param {((read: number, total: number) => void) | undefined} onProgress
 */
async function streamFile(file, write, onProgress) {
  if (typeof file.stream !== 'function') {
    write(new Uint8Array(await file.arrayBuffer()));
    onProgress?.(file.size, file.size);
    return;
  }
  const stream = file.stream();
  /** @type {ReadableStreamBYOBReader | null} */
  let byob = null;
  try {
    byob = stream.getReader({ mode: 'byob' });
  } catch {
    byob = null;
  }
  const plain = byob ? null : stream.getReader();
  let buffer = new ArrayBuffer(FILE_PIECE);
  const next = () => (byob ? byob.read(new Uint8Array(buffer)) : /** @type {ReadableStreamDefaultReader<Uint8Array>} */ (plain).read());
  let read = 0;
  try {
    for (;;) {
      const { done, value } = await next();
      if (done || !value) break;
      write(value);
      read += value.length;
      onProgress?.(read, file.size);
      if (byob) buffer = /** @type {ArrayBuffer} */ (value.buffer);
    }
  } catch (e) {
    // A refused piece (or a failed read): the rest of the file is not read.
    (byob ?? plain)?.cancel().catch(() => {});
    throw e;
  }
}

/** @param {any} given @param {string} what @returns {Int32Array} */
function toInt32(given, what = 'run') {
  if (given instanceof Int32Array) return given;
  if (Array.isArray(given) || ArrayBuffer.isView(given)) {
    const ids = /** @type {ArrayLike<number>} */ (given);
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
/** @param {unknown} e @returns {Error} */
function asError(e) {
  if (e instanceof Error) return e;
  return new Error(`circuitscope: internal error (${String(e)})`);
}

/** @template T @param {() => T} fn @returns {T} */
function call(fn) {
  try {
    return fn();
  } catch (e) {
    throw asError(e);
  }
}

// Options objects: undefined is {}; unknown keys are an error (a typo should not be ignored).
/** @param {unknown} options @param {string[]} allowed @param {string} what @returns {Options} */
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

/** @param {unknown} x @param {boolean} fallback */
const bool = (x, fallback) => (x === undefined ? fallback : !!x);

/**
 * composedQk's options.through: the earlier head as [layer, head] (the core checks the numbers).
 * @param {any} x @returns {any[]}
 */
function through(x) {
  if (!Array.isArray(x) || x.length !== 2) throw new TypeError('composedQk: options.through must be the earlier head as [layer, head], e.g. [0, 1]');
  return x;
}

// The handle's config() JSON; on failure the handle is freed and the error rethrown readably.
/** @param {any} handle @returns {any} */
function parseConfig(handle) {
  try {
    return JSON.parse(handle.config());
  } catch (e) {
    handle.delete();
    throw asError(e);
  }
}

// run()'s and analyseText()'s {into}: caller-owned Float32Arrays that receive patterns, logits
// and losses instead of new arrays (so a view that runs on every keystroke allocates nothing).
// Each is optional and must hold at least the result for T tokens (analyseText, which tokenizes
// in the core, asks for n_ctx: e.g. n_layers * n_heads * n_ctx * n_ctx floats for patterns); the
// result's data is then a subarray of it.
/** @param {any} into @param {any} config @param {number} T @param {string} what @param {string[]} keys @returns {Options} */
function runBuffers(into, config, T, what, keys) {
  if (typeof into !== 'object' || Array.isArray(into)) {
    throw new TypeError(`${what}: options.into must be an object {${keys.map((k) => `${k}?`).join(', ')}} of Float32Arrays`);
  }
  /** @type {Record<string, number>} */
  const need = {
    patterns: config.n_layers * config.n_heads * T * T,
    logits: T * config.d_vocab,
    loss: T,
    cleanLoss: T,
  };
  /** @type {Options} */
  const out = {};
  for (const [key, value] of Object.entries(into)) {
    if (!keys.includes(key)) throw new TypeError(`${what}: unknown buffer "${key}" in options.into (expected ${keys.join(', ')})`);
    if (value === undefined || value === null) continue;
    if (!(value instanceof Float32Array)) throw new TypeError(`${what}: options.into.${key} must be a Float32Array`);
    if (value.length < need[key]) {
      throw new RangeError(`${what}: options.into.${key} holds ${value.length} floats, ${need[key]} are needed for ${T} tokens`);
    }
    out[key] = value;
  }
  return out;
}

// The calls that check their options and pass them on unchanged, one row each: name -> [the
// option keys (null: no options argument), where the options argument is, and the handle's
// arguments from the checked options and the call's own arguments]. Defaults the core does not
// choose itself are here.
/** @typedef {[string[] | null, number, (o: Options, ...args: any[]) => any[]]} CallRow */
/** @satisfies {Record<string, CallRow>} */
const MODEL_CALLS = {
  qk: [['k', 'table', 'factors', 'sort', 'top'], 2, (o, l, h) => [l, h, o.k ?? 10, bool(o.table, true), bool(o.factors, false), o.sort ?? 'none', o.top ?? 0]],
  ov: [['k', 'table', 'factors', 'sort', 'top'], 2, (o, l, h) => [l, h, o.k ?? 10, bool(o.table, true), bool(o.factors, false), o.sort ?? 'none', o.top ?? 0]],
  posQk: [['k', 'table', 'factors', 'sort', 'top'], 2, (o, l, h) => [l, h, o.k ?? 10, bool(o.table, true), bool(o.factors, false), o.sort ?? 'none', o.top ?? 0]],
  composedQk: [['through', 'input', 'k', 'table', 'factors', 'sort', 'top'], 2, (o, l, h) => [l, h, ...through(o.through), o.input ?? 'k', o.k ?? 10,
    bool(o.table, true), bool(o.factors, false), o.sort ?? 'none', o.top ?? 0]],
  eigen: [null, 0, (_, l, h) => [l, h]],
  spectra: [null, 0, () => []],
  composition: [['samples', 'seed'], 0, (o) => [o.samples ?? 200, o.seed ?? 0]],
  // The core fills in every option left out (the random-token pool from the tokenizer, the
  // longest L that fits, <BOS>, batch 16, seed 0) and returns the values it used.
  headScores: [['L', 'batch', 'seed', 'first', 'n', 'bos'], 0, (o) => [o]],
  sampleText: [['seed', 'length'], 0, (o) => [o.seed ?? 0, o.length ?? -1]],
  defaultHead: [null, 0, () => []],
  findRepeat: [['at'], 1, (o, ids) => [toInt32(ids, 'findRepeat'), o.at ?? -1]],
  ioiSequences: [null, 0, (_, split) => [split]],
  ioiEvaluate: [null, 0, (_, intervention, split) => [intervention, split]],
  ioiTask: [null, 0, () => []],
  ioiKind: [null, 0, () => []],
  ioiNames: [null, 0, () => []],
  ioiSentence: [['template', 'order', 'io', 's', 'place', 'object'], 0, (o) => [o]],
  cutComposition: [null, 0, (_, input) => [input]],
  skipTrigrams: [['k', 'maxBugs'], 2, (o, l, h) => [l, h, o.k ?? 20, o.maxBugs ?? 32]],
  save: [null, 0, () => []],
  // One checkpoint of a series: the core chooses every option left out (checkpoint_eval_spec).
  // The held-out ids checkpointScores reads from a text (no <BOS>): a series tokenizes once.
  heldOutIds: [null, 0, (_, text) => [text]],
  checkpointScores: [['step', 'text', 'ids', 'window', 'batch', 'iclEarly', 'iclLate', 'iclPairs', 'repeatLen', 'seed'], 0,
    (o) => [o.ids === undefined || o.ids === null ? o : { ...o, ids: toInt32(o.ids, 'checkpointScores: ids') }]],
};
/** @satisfies {Record<string, CallRow>} */
const TRAINER_CALLS = {
  headScores: MODEL_CALLS.headScores,
  save: [null, 0, () => []],
  // Data-parallel steps (the training worker's helpers each hold a trainer of the same recipe).
  beginStep: [null, 0, (/** @type {Options} */ _o, /** @type {number} */ n) => [n]],
  shardGradient: [null, 0, (/** @type {Options} */ _o, /** @type {any} */ shard) => [shard]],
  finishStep: [null, 0, (/** @type {Options} */ _o, /** @type {any[]} */ results) => [results]],
  cancelStep: [null, 0, () => []],
  params: [null, 0, () => []],
  setParams: [null, 0, (/** @type {Options} */ _o, /** @type {Float32Array} */ flat) => [flat]],
};

/**
 * The methods of a table's rows on a handle: each checks that the handle is alive, checks its
 * options, calls the handle and turns anything thrown into an Error.
 * @template {Record<string, CallRow>} R
 * @param {any} handle @param {R} table @param {(what: string) => void} live
 * @returns {{[K in keyof R]: (...args: any[]) => any}}
 */
function tableMethods(handle, table, live) {
  /** @type {Record<string, (...args: any[]) => any>} */
  const out = {};
  for (const [name, row] of Object.entries(table)) {
    const [keys, at, args] = /** @type {CallRow} */ (row);
    out[name] = (...given) => {
      live(name);
      const o = keys ? opts(given[at], keys, name) : {};
      return call(() => handle[name](...args(o, ...given)));
    };
  }
  return /** @type {any} */ (out);
}

/** @param {any} handle @returns {LoadedModel} */
function wrap(handle) {
  const parsed = parseConfig(handle);
  const config = parsed.config;
  const tokenizer = parsed.tokenizer;
  const vocab = tokenizer.vocab ?? [];
  const bosId = typeof tokenizer.bos_id === 'number' ? tokenizer.bos_id : -1;
  let alive = true;
  /** @type {{tokens: Int32Array, intervention: any} | null} */
  let last = null;  // the last run()'s
  /** @param {string} what */
  const live = (what) => {
    if (!alive) throw new Error(`${what}: this model has been deleted`);
  };
  // Text is tokenized (with <BOS> first when the vocabulary has one); ids pass through.
  /** @param {any} input @param {string} what @returns {Int32Array} */
  const tokens = (input, what) => {
    if (typeof input === 'string') return call(() => handle.tokenize(input, false)).ids;
    return toInt32(input, what);
  };

  /** @type {LoadedModel} */
  const model = {
    ...tableMethods(handle, MODEL_CALLS, live),
    config,
    tokenizer,
    info: parsed.info ?? {},
    tokenize(text, options) {
      live('tokenize');
      const o = opts(options, ['fit'], 'tokenize');
      if (typeof text !== 'string') throw new TypeError('tokenize: expected a string');
      return call(() => handle.tokenize(text, bool(o.fit, false)));
    },
    tokenBytes(ids) {
      live('tokenBytes');
      return call(() => handle.tokenBytes(toInt32(ids, 'tokenBytes')));
    },
    /** Token texts of ids (for labels). */
    tokenText(ids) {
      return Array.from(ids, (/** @type {number} */ id) => vocab[id] ?? `#${id}`);
    },
    run(input, intervention, options) {
      live('run');
      const o = opts(options, ['resid', 'result', 'patterns', 'logits', 'into', 'topk', 'textScores', 'repeatAt', 'probsOf', 'topKeys', 'lastRow'], 'run');
      const ids = tokens(input, 'run');
      const into = o.into === undefined || o.into === null ? undefined : runBuffers(o.into, config, ids.length, 'run', ['patterns', 'logits', 'loss']);
      const out = call(() => handle.run(ids, intervention, {
        resid: bool(o.resid, false), result: bool(o.result, false), patterns: bool(o.patterns, true),
        logits: bool(o.logits, true), into, topk: o.topk ?? 0, textScores: bool(o.textScores, false), repeatAt: o.repeatAt ?? -1, topKeys: o.topKeys ?? 0, lastRow: bool(o.lastRow, true),
        probsOf: o.probsOf === undefined || o.probsOf === null ? undefined : Int32Array.from(o.probsOf),
      }));
      out.tokens = Int32Array.from(ids);
      last = { tokens: out.tokens, intervention };
      return out;
    },
    analyseText(text, intervention, options) {
      live('analyseText');
      const o = opts(options, ['at', 'topk', 'topKeys', 'lastRow', 'into'], 'analyseText');
      if (typeof text !== 'string') throw new TypeError('analyseText: expected a string');
      const into = o.into === undefined || o.into === null ? undefined
        : runBuffers(o.into, config, config.n_ctx, 'analyseText', ['patterns', 'loss', 'cleanLoss']);
      const out = call(() => handle.analyseText(text, intervention, { at: o.at ?? -1, topk: o.topk, topKeys: o.topKeys, lastRow: bool(o.lastRow, true), into }));
      if (out.run) {
        out.run.tokens = out.ids;
        last = { tokens: out.ids, intervention };
      }
      return out;
    },
    attribution(pos, options) {
      live('attribution');
      const o = opts(options, ['tokens', 'intervention', 'target'], 'attribution');
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
      return call(() => handle.attribution(ids, pos, intervention, o.target));
    },
    topK(input, k = 5) {
      live('topK');
      const ids = tokens(input, 'topK');
      return call(() => handle.topK(ids, k));
    },
    ablate(given, intervention, options) {
      live('ablate');
      const o = opts(options, ['iclEarly', 'iclLate', 'batch'], 'ablate');
      const input = /** @type {any} */ (given);
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
      // Without tokens: every sequence of the task, each cut after its last word by the core.
      if (input === undefined || input === null) return call(() => handle.ioiAll(intervention, undefined));
      const ids = tokens(input, 'ioi');
      const a = call(() => handle.ioi(ids, intervention));
      a.tokens = Int32Array.from(ids);
      return a;
    },
    corrupt(input, options) {
      live('corrupt');
      const o = opts(options, ['kind', 'seed'], 'corrupt');
      const ids = tokens(input, 'corrupt');
      return call(() => handle.corrupt(ids, o));
    },
    patch(input, options) {
      live('patch');
      const o = opts(options, ['kind', 'seed', 'corrupted', 'pos', 'correct', 'wrong', 'direction', 'positions', 'intervention'], 'patch');
      const ids = tokens(input, 'patch');
      const given = { ...o };
      if (o.corrupted !== undefined && o.corrupted !== null) given.corrupted = tokens(o.corrupted, 'patch');
      if (Number.isInteger(o.pos) && o.pos < 0) given.pos = o.pos + ids.length;
      const out = call(() => handle.patch(ids, given));
      out.tokens = Int32Array.from(ids);
      return out;
    },
    corpusStats(input, options) {
      live('corpusStats');
      const o = opts(options, ['window', 'leadingTerms', 'interchange'], 'corpusStats');
      let ids = tokens(input, 'corpusStats');
      // Text: drop the <BOS> tokenize() puts first (a stream, not a sequence).
      if (typeof input === 'string' && bosId >= 0 && ids[0] === bosId) ids = ids.subarray(1);
      return call(() => handle.corpusStats(ids, o.window, bool(o.leadingTerms, false), bool(o.interchange, false)));
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

/** @param {unknown} recipe @param {string} [what] @returns {string} */
function recipeJson(recipe, what = 'trainer') {
  if (typeof recipe === 'string') return recipe;
  if (recipe !== null && typeof recipe === 'object' && !Array.isArray(recipe)) return JSON.stringify(recipe);
  throw new TypeError(`${what}: expected the recipe as an object or a JSON string`);
}

/** @param {any} handle @returns {Trainer} */
function wrapTrainer(handle) {
  const parsed = parseConfig(handle);
  let alive = true;
  /** @param {string} what */
  const live = (what) => {
    if (!alive) throw new Error(`${what}: this trainer has been deleted`);
  };
  return {
    ...tableMethods(handle, TRAINER_CALLS, live),
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
    delete() {
      if (alive) {
        alive = false;
        handle.delete();
      }
    },
  };
}

// The smallest module holding one f32x4.relaxed_madd (standard encoding, 0xfd 0x85 0x02):
// (func (param v128 v128 v128) (result v128) local.get 0 local.get 1 local.get 2 f32x4.relaxed_madd).
// An engine that validates it runs circuitscope-relaxed.wasm. The same bytes as RELAXED_PROBE in
// scripts/wasm-relaxed-opcodes.mjs.
const RELAXED_PROBE = Uint8Array.of(0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123, 3, 2, 1, 0,
  10, 13, 1, 11, 0, 32, 0, 32, 1, 32, 2, 253, 133, 2, 11);

/** True when this engine runs WebAssembly relaxed SIMD (f32x4.relaxed_madd validates). */
export function hasRelaxedSimd() {
  try {
    return WebAssembly.validate(RELAXED_PROBE);
  } catch {
    return false;
  }
}

/**
 * Which module init() loads: options.simd 'relaxed' or 'simd128', or by default ('auto') the
 * relaxed one where the engine validates relaxed SIMD, and in node only when
 * circuitscope-relaxed.wasm sits beside this file. A caller that hands over its own wasmBinary or
 * wasmUrl without options.simd gets 'simd128', the module those used to mean.
 * @param {InitOptions} options @returns {Promise<'relaxed' | 'simd128'>}
 */
async function chooseSimd(options) {
  const want = options.simd ?? (options.wasmBinary || options.wasmUrl ? 'simd128' : 'auto');
  if (want !== 'auto' && want !== 'relaxed' && want !== 'simd128') {
    throw new TypeError(`init: options.simd must be 'auto', 'relaxed' or 'simd128', not ${JSON.stringify(want)}`);
  }
  if (want === 'relaxed' && !hasRelaxedSimd()) {
    throw new Error('init: this engine does not run WebAssembly relaxed SIMD (node 20 needs --experimental-wasm-relaxed-simd)');
  }
  if (want !== 'auto') return want;
  if (!hasRelaxedSimd()) return 'simd128';
  if (isNode) {
    const { access } = await import('node:fs/promises');
    try {
      await access(new URL('./circuitscope-relaxed.wasm', import.meta.url));
    } catch {
      return 'simd128';
    }
  }
  return 'relaxed';
}

const compiledWasm = new Map();   // url -> Promise of its WebAssembly.Module: every init() after the first only instantiates
/** A .wasm compiled once per URL (compileWasmOnce). @param {string} url @returns {Promise<WebAssembly.Module>} */
function compileWasm(url) {
  let p = compiledWasm.get(url);
  if (!p) {
    p = compileWasmOnce(url);
    p.catch(() => compiledWasm.delete(url));
    compiledWasm.set(url, p);
  }
  return p;
}
/**
 * Fetches and compiles a .wasm, streaming where the server sends it as application/wasm, else from
 * its bytes. @param {string} url @returns {Promise<WebAssembly.Module>}
 */
async function compileWasmOnce(url) {
  if (typeof WebAssembly.compileStreaming === 'function') {
    try {
      return await WebAssembly.compileStreaming(fetch(url, { credentials: 'same-origin' }));
    } catch {
      // Another content type (or a failed fetch): fetched again below, and its status reported.
    }
  }
  const response = await fetch(url, { credentials: 'same-origin' });
  if (!response.ok) throw new Error(`init: ${url} could not be fetched (HTTP ${response.status})`);
  return WebAssembly.compile(await response.arrayBuffer());
}

/**
 * Loads the WebAssembly module (which one: chooseSimd above). In node the .wasm file next to this
 * one is read from disk; in a browser (page or worker) it is fetched from beside this file (or
 * from options.wasmUrl).
 */
/** @param {InitOptions & Record<string, any>} options @returns {Promise<Circuitscope>} */
export async function init(options = {}) {
  const simd = await chooseSimd(options);
  const wasmFile = simd === 'relaxed' ? './circuitscope-relaxed.wasm' : './circuitscope.wasm';
  /** @type {Record<string, any>} */
  const moduleOptions = {};
  /** @type {Promise<never> | null} */
  let failure = null;
  if (options.wasmBinary) {
    moduleOptions.wasmBinary = options.wasmBinary;
  } else if (isNode) {
    const { readFile } = await import('node:fs/promises');
    moduleOptions.wasmBinary = await readFile(new URL(wasmFile, import.meta.url));
  } else {
    const wasmUrl = options.wasmUrl ?? new URL(wasmFile, import.meta.url).href;
    moduleOptions.locateFile = (/** @type {string} */ path) => (path.endsWith('.wasm') ? wasmUrl : path);
    // The .wasm is fetched and compiled while the Emscripten glue (.mjs) is still on its way, not
    // after it: one round trip less before the first model opens.
    const compiled = compileWasm(wasmUrl);
    compiled.catch(() => {});   // reported below, once the glue asks for its instance
    failure = new Promise((_, reject) => {
      moduleOptions.instantiateWasm = (/** @type {WebAssembly.Imports} */ imports, /** @type {Function} */ receive) => {
        compiled.then((m) => WebAssembly.instantiate(m, imports).then((instance) => receive(instance, m))).catch(reject);
        return {};
      };
    });
  }
  if (options.print) moduleOptions.print = options.print;
  if (options.printErr) moduleOptions.printErr = options.printErr;
  const { default: createCircuitscope } = simd === 'relaxed' ? await import('./circuitscope-relaxed.mjs') : await import('./circuitscope.mjs');
  // A failed fetch, compile or instantiation rejects here: the glue would wait for its instance for ever.
  const mod = await (failure ? Promise.race([createCircuitscope(moduleOptions), failure]) : createCircuitscope(moduleOptions));
  if (!readyModule && !options.separate) readyModule = mod;
  return {
    module: mod,
    simd,
    version: mod.version(),
    minInductionScore: mod.minInductionScore,
    leadingTermsWindow: mod.leadingTermsWindow,
    limits: { maxWeights: mod.maxWeights, maxTrainWeights: mod.maxTrainWeights, maxModelFileBytes: mod.maxModelFileBytes, maxHeldOutBytes: mod.maxHeldOutBytes, maxTokenizerBytes: mod.maxTokenizerBytes },
    load(bytes, options) {
      const b = toBytes(bytes);
      // Given in pieces, so the module never holds a second copy of the whole file.
      const reader = modelReader(mod, b.length, options);
      try {
        for (let at = 0; at < b.length; at += LOAD_PIECE) reader.write(b.subarray(at, at + LOAD_PIECE));
        return reader.finish();
      } finally {
        reader.delete();
      }
    },
    async loadFile(file, options, onProgress) {
      if (!file || typeof file.size !== 'number' || typeof file.arrayBuffer !== 'function') throw new TypeError('loadFile: expected a File or Blob');
      const reader = modelReader(mod, file.size, options);
      try {
        await streamFile(file, reader.write, onProgress);
        return reader.finish();
      } finally {
        reader.delete();
      }
    },
    recipeFiles(recipe) {
      return call(() => mod.recipeFiles(recipeJson(recipe, 'recipeFiles')));
    },
    recipeWithTexts(recipe, texts) {
      return JSON.parse(call(() => mod.recipeWithTexts(recipeJson(recipe, 'recipeWithTexts'), texts)));
    },
    recipeWithSteps(recipe, steps) {
      // Only what Embind's int cannot carry is refused here; the core says which counts it takes.
      if (!Number.isInteger(steps) || Math.abs(steps) > 2 ** 31 - 1) throw new RangeError(`recipeWithSteps: steps must be a whole number, got ${String(steps).slice(0, 40)}`);
      return JSON.parse(call(() => mod.recipeWithSteps(recipeJson(recipe, 'recipeWithSteps'), steps)));
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
    checkpointMetrics(scores) {
      if (!Array.isArray(scores)) throw new TypeError('checkpointMetrics: give the list of checkpointScores() results');
      return call(() => mod.checkpointMetrics(JSON.stringify(scores)));
    },
    checkpointLabel(fileName) {
      if (typeof fileName !== 'string') throw new TypeError('checkpointLabel: expected a file name');
      return call(() => mod.checkpointLabel(fileName));
    },
  };
}

/** @param {InitOptions} options @returns {Promise<Circuitscope>} */
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
/** @param {Uint8Array | ArrayBuffer} bytes @param {InitOptions & LoadOptions} options @returns {Promise<LoadedModel>} */
export async function load(bytes, options = {}) {
  const { processing, config, tokenizer, bosToken } = options;
  return (await sharedInstance(options)).load(bytes, { processing, config, tokenizer, bosToken });
}

/** Starts a training run with the shared, lazily initialised module. */
/** @param {import('./circuitscope.js').Recipe | string} recipe @param {InitOptions} options @returns {Promise<Trainer>} */
export async function trainer(recipe, options = {}) {
  return (await sharedInstance(options)).trainer(recipe);
}

/**
 * @param {any} mod @param {PhaseChangeRecord[] | null | undefined} records @param {{nHeads?: number}} [options]
 * @returns {PhaseChange | null}
 */
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
/** @param {PhaseChangeRecord[] | null | undefined} records @param {{nHeads?: number}} [options] @returns {PhaseChange | null} */
export function phaseChange(records, options) {
  if (!readyModule) throw new Error('phaseChange: the WebAssembly module has not been loaded yet (await init(), load() or trainer() first)');
  return phaseChangeWith(readyModule, records, options);
}

/**
 * Reads one element of a tagged array: at(t, i, j, ...) with one index per axis (row-major).
 * Throws a RangeError for a wrong number of indices or an index outside its axis.
 */
/** @param {AnyTagged} t @param {number[]} index @returns {number} */
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
/** @param {AnyTagged} t @returns {{index: number[], value: number}} */
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
