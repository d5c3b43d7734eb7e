// The training Web Worker (a module worker: new Worker(url, {type: 'module'})): owns its own
// instance of the WASM module, runs one optimisation step per turn of its message loop (so
// pause / resume / stop / save messages are handled between any two steps), posts metrics every
// few steps and, on request, the model bytes (transferred, not copied). web/worker-client.js is
// the promise-based way to drive it; the protocol, for anyone posting by hand:
//
//   to the worker                                  from the worker
//   {type:'start', recipe, metricsEvery?, id?}     {type:'started', id, config, tokenizer, steps, batch_size, seed, version}
//   {type:'pause', id?}                            {type:'paused', id, step}
//   {type:'resume', id?}                           {type:'resumed', id, step}
//   {type:'stop', id?}                             {type:'stopped', id, step}   (also sent when the recipe's steps are done,
//                                                                                with reason 'finished' instead of 'stopped')
//   {type:'save', id?}                             {type:'saved', id, step, bytes: ArrayBuffer}
//                                                  {type:'metrics', step, latest, history: [...]}   every metricsEvery steps
//                                                  {type:'error', id, message}   (a bad recipe, divergence, a bad request)
//
// metrics are the trainer's per-step {step, loss, lr, grad_norm, loss_repeated, loss_fresh};
// history holds every step since the previous 'metrics' message, so a loss curve misses nothing.
// Training stops by itself after the recipe's `steps` (override with start's {steps}).
import { init } from './wasm/circuitscope.js';

let instance = null;   // the initialised module
let trainer = null;    // the running trainer
let total = 0;         // steps to run
let every = 10;        // metrics every this many steps
let running = false;   // a step is scheduled or will be
let finished = false;  // stopped or done: no more steps
let history = [];      // metrics since the last 'metrics' message

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
  if (history.length === 0) return;
  self.postMessage({ type: 'metrics', step: trainer.stepsDone, latest: history[history.length - 1], history });
  history = [];
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
