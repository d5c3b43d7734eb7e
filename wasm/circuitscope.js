// The friendly JS API over the Embind module (circuitscope.mjs + circuitscope.wasm, which sit
// beside this file): init() loads the WebAssembly once; load(bytes) opens a model file and
// returns an object with its parsed config, tokenize(), run() and delete(); trainer(recipe)
// starts a training run from a recipe and returns an object with step(), save() and delete().
import createCircuitscope from './circuitscope.mjs';

const isNode = typeof process === 'object' && process !== null && !!process.versions?.node &&
  typeof window === 'undefined';

let defaultInstance = null;

function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError('load: expected the model file as a Uint8Array or an ArrayBuffer');
}

function toInt32(ids) {
  if (ids instanceof Int32Array) return ids;
  if (Array.isArray(ids) || ArrayBuffer.isView(ids)) return Int32Array.from(ids);
  throw new TypeError('run: expected token ids as an Int32Array or an array of integers');
}

// Embind may surface an error as something other than an Error (e.g. a bare number when an
// exception escapes uncaught); make sure callers always get an Error with a message.
function asError(e) {
  if (e instanceof Error) return e;
  return new Error(`circuitscope: internal error (${String(e)})`);
}

function wrap(mod, handle) {
  let parsed;
  try {
    parsed = JSON.parse(handle.config());
  } catch (e) {
    handle.delete();
    throw asError(e);
  }
  let alive = true;
  const live = (what) => {
    if (!alive) throw new Error(`${what}: this model has been deleted`);
  };
  return {
    config: parsed.config,
    tokenizer: parsed.tokenizer,
    info: parsed.info ?? {},
    tokenize(text) {
      live('tokenize');
      if (typeof text !== 'string') throw new TypeError('tokenize: expected a string');
      try {
        return handle.tokenize(text);
      } catch (e) {
        throw asError(e);
      }
    },
    run(ids) {
      live('run');
      try {
        return handle.run(toInt32(ids));
      } catch (e) {
        throw asError(e);
      }
    },
    /**
     * Benchmark entry: one forward pass over a [B, T] batch (ids row-major, B * T of them) into
     * the model's own cache; returns the mean next-token loss. Copies nothing bulk out.
     */
    forwardBatch(ids, B, T) {
      live('forwardBatch');
      try {
        return handle.forwardBatch(toInt32(ids), B, T);
      } catch (e) {
        throw asError(e);
      }
    },
    delete() {
      if (alive) {
        alive = false;
        handle.delete();
      }
    },
  };
}

function recipeJson(recipe) {
  if (typeof recipe === 'string') return recipe;
  if (recipe !== null && typeof recipe === 'object' && !Array.isArray(recipe)) return JSON.stringify(recipe);
  throw new TypeError('trainer: expected the recipe as an object or a JSON string');
}

function wrapTrainer(handle) {
  let parsed;
  try {
    parsed = JSON.parse(handle.config());
  } catch (e) {
    handle.delete();
    throw asError(e);
  }
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
      try {
        return handle.save();
      } catch (e) {
        throw asError(e);
      }
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
 * browser it is fetched from beside this file (or from options.wasmUrl).
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
  return {
    module: mod,
    version: mod.version(),
    load(bytes) {
      let handle;
      try {
        handle = new mod.Model(toBytes(bytes));
      } catch (e) {
        throw asError(e);
      }
      return wrap(mod, handle);
    },
    trainer(recipe) {
      const json = recipeJson(recipe);
      let handle;
      try {
        handle = new mod.Trainer(json);
      } catch (e) {
        throw asError(e);
      }
      return wrapTrainer(handle);
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
