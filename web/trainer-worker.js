// The training Web Worker (a module worker: new Worker(url, {type: 'module'})): owns its own
// instance of the WASM module, runs one optimisation step per turn of its message loop (so
// pause / resume / stop / save messages are handled between any two steps), posts metrics every
// few steps and, on request, the model bytes (transferred, not copied). web/worker-client.js is
// the promise-based way to drive it; the protocol, for anyone posting by hand:
//
//   to the worker                                  from the worker
//   {type:'start', recipe, metricsEvery?,          {type:'started', id, config, tokenizer, steps, batch_size, seed, version, simd}
//    scoresEvery?, id?}
//   {type:'pause', id?}                            {type:'paused', id, step}
//   {type:'resume', id?}                           {type:'resumed', id, step}
//   {type:'stop', id?}                             {type:'stopped', id, step}   (also sent when the recipe's steps are done,
//                                                                                with reason 'finished' instead of 'stopped')
//   {type:'save', id?}                             {type:'saved', id, step, bytes: ArrayBuffer}
//                                                  {type:'metrics', step, latest, history: [...], scores: [...]}
//                                                                                every metricsEvery steps
//                                                  {type:'error', id, message}   (a bad recipe, divergence, a bad request)
//
// metrics are the trainer's per-step {step, loss, lr, grad_norm, loss_repeated, loss_fresh};
// history holds every step since the previous 'metrics' message, so a loss curve misses nothing.
// With scoresEvery = N > 0, the worker also records the head scores of the model every N steps
// (and before the first): scores holds {step, time, prefix_matching, previous_token} records
// ([n_layers * n_heads] each, on 8 rows of repeated random tokens, as the CLI's training metrics
// record them; time = performance.timeOrigin + performance.now() when that step was done, so
// the page can tell when each step happened on its own clock); scoresError, once, if they
// cannot be taken on this model.
// Training stops by itself after the recipe's `steps` (override with start's {steps}).
//
// With start's {workers: N} (N > 1, at most the batch size), each step's batch is split by rows
// into N shards: this worker computes the first and N - 1 helper workers (web/grad-worker.js,
// each with its own WASM instance) the others; the gradients are summed in shard order and one
// optimiser step taken. The run equals the one-worker run up to the order of summation, and
// needs no cross-origin isolation (the weights and gradients travel as transferred buffers).
// 'started' says how many workers run ({workers}).
import { init } from './wasm/circuitscope.js';

let helpers = [];      // the helper workers ({worker, pending}) of a data-parallel run
let stepping = null;   // the data-parallel step waiting for its helpers (a promise), or null

let instance = null;   // the initialised module
let trainer = null;    // the running trainer
let total = 0;         // steps to run
let every = 10;        // metrics every this many steps
let running = false;   // a step is scheduled or will be
let finished = false;  // stopped or done: no more steps
let history = [];      // metrics since the last 'metrics' message
let scoresEvery = 0;   // head scores every this many steps (0: none)
let scores = [];       // head-score records since the last 'metrics' message

// One step per task: a MessageChannel message is a fresh macrotask without setTimeout's
// 4 ms clamp, and the worker's own messages queue up between two of them.
const tick = new MessageChannel();
tick.port1.onmessage = () => step();
let scheduled = false;
function schedule() {
  if (!scheduled && running && !finished) {
    scheduled = true;
    tick.port2.postMessage(0);
  }
}

function flushMetrics() {
  if (history.length === 0 && scores.length === 0 && !scoresError) return;
  const msg = { type: 'metrics', step: trainer.stepsDone, latest: history[history.length - 1] ?? null, history, scores };
  if (scoresError) msg.scoresError = scoresError;
  self.postMessage(msg);
  history = [];
  scores = [];
  scoresError = null;
}

// The CLI's training metrics (src/analysis/training_metrics.cpp) score heads on 8 rows of
// repeated random tokens drawn with seed eval.seed + 17 (eval.seed is 1 by default).
// A model the scores cannot be taken on (e.g. a vocabulary too small for repeated random
// tokens) trains on without them; the next metrics message says why (scoresError).
let scoresError = null;
function recordScores() {
  let hs;
  try {
    hs = trainer.headScores({ batch: 8, seed: 18 });
  } catch (e) {
    scoresEvery = 0;
    scoresError = e?.message ?? String(e);
    return;
  }
  scores.push({
    step: trainer.stepsDone,
    time: performance.timeOrigin + performance.now(),
    prefix_matching: Array.from(hs.prefix_matching.data),
    previous_token: Array.from(hs.previous_token.data),
  });
}

function end(reason) {
  running = false;
  finished = true;
  stopHelpers();
  flushMetrics();
  return { type: 'stopped', reason, step: trainer ? trainer.stepsDone : 0 };
}

// A helper's reply to one request, or its error as a rejection.
function ask(helper, msg, transfer = []) {
  return new Promise((resolve, reject) => {
    helper.pending = { resolve, reject };
    helper.worker.postMessage(msg, transfer);
  });
}

function startHelper(recipe, wasmUrl) {
  const helper = { worker: new Worker(new URL('./grad-worker.js', import.meta.url), { type: 'module' }), pending: null };
  helper.worker.onmessage = (event) => {
    const p = helper.pending;
    helper.pending = null;
    if (!p) return;
    if (event.data?.type === 'error') p.reject(new Error(event.data.message));
    else p.resolve(event.data);
  };
  helper.worker.onerror = (event) => {
    event.preventDefault?.();
    const p = helper.pending;
    helper.pending = null;
    p?.reject(new Error(`a training helper worker failed${event.message ? `: ${event.message}` : ''}`));
  };
  return ask(helper, { type: 'init', recipe, wasmUrl }).then(() => helper);
}

function stopHelpers() {
  for (const h of helpers) {
    h.worker.terminate();
    const p = h.pending;
    h.pending = null;
    p?.reject(new Error('the run was stopped'));
  }
  helpers = [];
}

// One data-parallel step: shards to the helpers, the first one here, then the sum and the step.
async function parallelStep() {
  const shards = trainer.beginStep(helpers.length + 1);
  try {
    const weights = trainer.params();
    const step = trainer.stepsDone + 1;
    const replies = helpers.map((h, k) => {
      const w = k === helpers.length - 1 ? weights : weights.slice();
      return ask(h, { type: 'grad', step, weights: w, shard: shards[k + 1] }, [w.buffer]);
    });
    const own = trainer.shardGradient(shards[0]);
    const rest = await Promise.all(replies);
    return trainer.finishStep([own, ...rest]);
  } catch (e) {
    trainer.cancelStep();
    throw e;
  }
}

function failRun(e) {
  running = false;
  finished = true;
  stopHelpers();
  flushMetrics();
  self.postMessage({ type: 'error', id: null, message: e?.message ?? String(e) });
}

function step() {
  scheduled = false;
  if (!running || finished || !trainer || stepping) return;
  if (helpers.length) {
    stepping = parallelStep().then((m) => {
      stepping = null;
      history.push(m);
      afterStep();
    }, (e) => {
      stepping = null;
      if (!finished) failRun(e);  // (a stop during the step ends it quietly)
    });
    return;
  }
  try {
    history.push(trainer.step());
  } catch (e) {
    failRun(e);
    return;
  }
  afterStep();
}

function afterStep() {
  const done = trainer.stepsDone;
  if (scoresEvery > 0 && (done % scoresEvery === 0 || done >= total)) recordScores();
  if (done % every === 0) flushMetrics();
  if (done >= total) {
    self.postMessage({ ...end('finished'), id: null });
    return;
  }
  schedule();
}

async function start(msg) {
  if (trainer) throw new Error('start: a run has already been started in this worker (create a new worker for another run)');
  instance ??= await init(msg.wasmUrl ? { wasmUrl: msg.wasmUrl } : {});
  trainer = instance.trainer(msg.recipe);
  every = Number.isInteger(msg.metricsEvery) && msg.metricsEvery > 0 ? msg.metricsEvery : 10;
  total = Number.isInteger(msg.steps) && msg.steps > 0 ? msg.steps : trainer.steps;
  scoresEvery = Number.isInteger(msg.scoresEvery) && msg.scoresEvery > 0 ? msg.scoresEvery : 0;
  if (scoresEvery) recordScores();   // step 0: the untrained model
  const workers = Number.isInteger(msg.workers) ? Math.max(1, Math.min(msg.workers, trainer.batch_size, 16)) : 1;
  if (workers > 1) {
    try {
      helpers = await Promise.all(Array.from({ length: workers - 1 }, () => startHelper(msg.recipe, msg.wasmUrl)));
    } catch (e) {
      stopHelpers();
      throw new Error(`start: the helper workers for a ${workers}-worker run did not start (${e?.message ?? e})`);
    }
  }
  running = true;
  finished = false;
  schedule();
  return {
    type: 'started',
    config: trainer.config,
    tokenizer: trainer.tokenizer,
    steps: total,
    batch_size: trainer.batch_size,
    seed: trainer.seed,
    version: instance.version,
    workers: helpers.length + 1,
    simd: instance.simd,
  };
}

function needTrainer(what) {
  if (!trainer) throw new Error(`${what}: no run has been started`);
}

async function handle(msg) {
  switch (msg?.type) {
    case 'start':
      return start(msg);
    case 'pause':
      needTrainer('pause');
      running = false;
      // A step the helpers are computing finishes first, so the step reported is where it stays.
      if (stepping) await stepping;
      flushMetrics();
      return { type: 'paused', step: trainer.stepsDone };
    case 'resume':
      needTrainer('resume');
      if (finished) throw new Error('resume: the run has already stopped');
      running = true;
      if (!stepping) schedule();
      return { type: 'resumed', step: trainer.stepsDone };
    case 'stop':
      needTrainer('stop');
      return end('stopped');
    case 'save': {
      needTrainer('save');
      const bytes = trainer.save();
      return { type: 'saved', step: trainer.stepsDone, bytes: bytes.buffer, transfer: [bytes.buffer] };
    }
    default:
      throw new Error(`trainer worker: unknown message type ${JSON.stringify(msg?.type)}`);
  }
}

// Messages are handled one at a time, in order (start awaits the module's initialisation).
let queue = Promise.resolve();
self.onmessage = (event) => {
  const msg = event.data;
  queue = queue.then(async () => {
    try {
      const { transfer, ...reply } = await handle(msg);
      self.postMessage({ ...reply, id: msg?.id ?? null }, transfer ?? []);
    } catch (e) {
      self.postMessage({ type: 'error', id: msg?.id ?? null, message: e?.message ?? String(e) });
    }
  });
};
