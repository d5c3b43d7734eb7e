// The worker thread of the WASM half of the corrupt-model corpus (runCorpusWasm in
// corrupt-models-lib.mjs): one module instance (build/wasm/circuitscope.js) takes the files one
// at a time. For each file it records the module's malloc'd bytes, loads the file and, when it
// loads, makes every call the page can make on a model (a forward pass, head scores, head 0's QK
// and OV circuits and eigenvalues, composition, attribution, skip-trigrams of a 1-layer model,
// the IOI task), deletes the model and records the malloc'd bytes again. Before each call it
// tells the main thread which call starts, so that the main thread can time it out (and end this
// worker) if it hangs. A trap (RuntimeError) leaves the instance unusable: a new one is made.
import { parentPort, workerData } from 'node:worker_threads';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { judgeWasmCall, ROOT } from './corrupt-models-lib.mjs';

const wrapper = await import(pathToFileURL(workerData.wrapper).href);
let cs = null;
let baseline = 0;

// The calls made on a loaded model, in the page's order and with the page's options
// (web/views/induction.js, circuits.js, panels/circuits/*.js, panels/training/leading.js, ioi.js).
function modelCalls(m, text) {
  const calls = [
    ['run', () => m.run(text, undefined, { textScores: true, topk: 5 })],
    ['headScores', () => m.headScores()],
    ['qk', () => m.qk(0, 0, { k: 12 })],
    ['ov', () => m.ov(0, 0, { k: 12 })],
    ['eigen', () => m.eigen(0, 0)],
    ['composition', () => m.composition({ samples: 100 })],
    ['attribution', () => m.attribution(-1, { tokens: text })],
    ['sampleText', () => m.sampleText()],
    ['spectra', () => m.spectra()],
    ['posQk', () => m.posQk(0, 0, { k: 12 })],
    ['corpusStats', () => m.corpusStats(text, { window: 8 })],
  ];
  if (m.config.n_layers > 1) calls.push(['composedQk', () => m.composedQk(1, 0, { through: [0, 0], k: 12 })]);
  if (m.config.n_layers === 1) calls.push(['skipTrigrams', () => m.skipTrigrams(0, 0, { k: 15, maxBugs: 10 })]);
  calls.push(['ioiTask', () => m.ioiTask()]);
  calls.push(['ioiEvaluate', () => m.ioiEvaluate()]);
  return calls;
}

// Every call once on two shipped models, so that what the module allocates once and keeps
// (static tables, the allocator's own bookkeeping) is in place before the baseline is taken.
function warmUp() {
  for (const f of ['char-2l.safetensors', 'char-1l.safetensors', 'ioi-1l2h.safetensors']) {
    const m = cs.load(fs.readFileSync(path.join(ROOT, 'models', f)));
    for (const [, fn] of modelCalls(m, 'A B B <MID>')) {
      try { fn(); } catch { /* a refusal: fine for a warm-up */ }
    }
    m.delete();
  }
}

async function fresh() {
  cs = await wrapper.init();
  warmUp();
  baseline = cs.memory().allocated;
}

// One file: [{call, outcome: 'finite' | 'refused' | 'failed', problem?, message?, ms}] and memory.
function check(c) {
  const before = cs.memory().allocated;
  const results = [];
  let trapped = false;
  const attempt = (name, fn) => {
    parentPort.postMessage({ type: 'call', call: name });
    const t0 = performance.now();
    let r;
    try {
      r = judgeWasmCall(name, { value: fn() });
    } catch (e) {
      r = judgeWasmCall(name, { error: e });
      if (e instanceof WebAssembly.RuntimeError || !(e instanceof Error)) trapped = true;
    }
    results.push({ call: name, ...r, ms: performance.now() - t0 });
    return r.outcome !== 'failed' || !trapped;
  };
  let m = null;
  attempt('load', () => { m = cs.load(c.bytes); return { config: m.config }; });
  if (m && !trapped) {
    for (const [name, fn] of modelCalls(m, c.text)) if (!attempt(name, fn)) break;
    if (!trapped) attempt('delete', () => m.delete());
  }
  const mem = cs.memory();
  return { results, trapped, allocBefore: before, allocAfter: mem.allocated, heapSize: mem.heapSize, baseline };
}

await fresh();
parentPort.postMessage({ type: 'ready', baseline, heapSize: cs.memory().heapSize });
parentPort.on('message', async (c) => {
  const out = check({ ...c, bytes: new Uint8Array(c.bytes) });
  parentPort.postMessage({ type: 'done', ...out });
  if (out.trapped) {
    await fresh();
    parentPort.postMessage({ type: 'ready', baseline, heapSize: cs.memory().heapSize });
  }
});
