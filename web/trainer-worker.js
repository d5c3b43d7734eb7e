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
import { init } from './wasm/circuitscope.js';

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
  flushMetrics();
  return { type: 'stopped', reason, step: trainer ? trainer.stepsDone : 0 };
}

function step() {
  scheduled = false;
  if (!running || finished || !trainer) return;
  try {
    history.push(trainer.step());
  } catch (e) {
    running = false;
    finished = true;
    flushMetrics();
    self.postMessage({ type: 'error', id: null, message: e?.message ?? String(e) });
    return;
  }
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
      flushMetrics();
      return { type: 'paused', step: trainer.stepsDone };
    case 'resume':
      needTrainer('resume');
      if (finished) throw new Error('resume: the run has already stopped');
      running = true;
      schedule();
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
