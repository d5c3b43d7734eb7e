// WASM benchmarks under node, the counterpart of bench_model.cpp: the reference model of
// tests/bench/reference_recipe.json, timed per call with performance.now():
//   forward     Model.forwardBatch on a [16, 256] batch (forward + mean next-token loss)
//   train step  Trainer.step() (periodic batch, forward, loss, backward, grad clip, AdamW)
//   char-2l     Model.forwardBatch of the shipped models/char-2l.safetensors on one sequence:
//               <BOS> and the first 255 characters of models/corpus/valid.txt
// Each timed forward or step is its own call from JS (V8 optimises a WASM function only when it
// is entered again), after a few warm-up calls. Needs `npm run build` (build/wasm).
//   node tests/bench/bench_wasm.mjs [--forward-reps N] [--train-reps N] [--json] [--relaxed]
// --relaxed runs the relaxed-SIMD module (circuitscope-relaxed.wasm; node 20 needs
// --experimental-wasm-relaxed-simd, set here), otherwise the SIMD128 one.
import v8 from 'node:v8';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { intArg, referenceTokens, summary } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const wrapper = process.env.CS_WRAPPER || path.join(root, 'build', 'wasm', 'circuitscope.js');

const WARMUP_FORWARDS = 5;
const WARMUP_STEPS = 3;

async function main() {
  const forwardReps = intArg('--forward-reps', 30);
  const trainReps = intArg('--train-reps', 15);
  const json = process.argv.includes('--json');
  if (!existsSync(wrapper)) throw new Error(`${path.relative(root, wrapper)} is missing: run \`npm run build\` first`);
  const relaxed = process.argv.includes('--relaxed');
  if (relaxed) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  const { init } = await import(pathToFileURL(wrapper).href);
  const cs = await init({ simd: relaxed ? 'relaxed' : 'simd128' });
  const recipe = JSON.parse(readFileSync(path.join(here, 'reference_recipe.json'), 'utf8'));
  const B = recipe.batch_size;
  const T = recipe.model.n_ctx;

  // Forward: the trainer's initial weights (as bench_model.cpp uses them), saved and loaded.
  const init0 = cs.trainer(recipe);
  const model = cs.load(init0.save());
  init0.delete();
  const ids = referenceTokens(B, T);
  let loss = 0;
  for (let i = 0; i < WARMUP_FORWARDS; i++) loss = model.forwardBatch(ids, B, T);
  const forwardTimes = [];
  for (let i = 0; i < forwardReps; i++) {
    const t0 = performance.now();
    loss = model.forwardBatch(ids, B, T);
    forwardTimes.push(performance.now() - t0);
  }
  const forwardLoss = loss;
  model.delete();

  // Training steps.
  const tr = cs.trainer(recipe);
  for (let i = 0; i < WARMUP_STEPS; i++) tr.step();
  const trainTimes = [];
  let metrics;
  for (let i = 0; i < trainReps; i++) {
    const t0 = performance.now();
    metrics = tr.step();
    trainTimes.push(performance.now() - t0);
  }
  tr.delete();

  // The shipped char-2l on one 256-token sequence (bench_model.cpp's BM_Char2l).
  const char2l = cs.load(readFileSync(path.join(root, 'models', 'char-2l.safetensors')));
  const valid = readFileSync(path.join(root, 'models', 'corpus', 'valid.txt'), 'utf8');
  const T2 = char2l.config.n_ctx;
  const seq = Int32Array.from(char2l.tokenize(valid.slice(0, 4096)).ids.slice(0, T2));
  if (seq.length < T2) throw new Error('models/corpus/valid.txt is too short');
  for (let i = 0; i < WARMUP_FORWARDS; i++) char2l.forwardBatch(seq, 1, T2);
  const seqTimes = [];
  let seqLoss = 0;
  for (let i = 0; i < forwardReps; i++) {
    const t0 = performance.now();
    seqLoss = char2l.forwardBatch(seq, 1, T2);
    seqTimes.push(performance.now() - t0);
  }
  char2l.delete();

  const result = {
    node: process.version,
    v8: process.versions.v8,
    simd: cs.simd,
    forward: { ...summary(forwardTimes), warmup: WARMUP_FORWARDS, loss: forwardLoss },
    train_step: { ...summary(trainTimes), warmup: WARMUP_STEPS, last_loss: metrics.loss, steps_done: metrics.step },
    char2l_sequence: { ...summary(seqTimes), warmup: WARMUP_FORWARDS, loss: seqLoss, tokens: T2 },
    shape: { B, T, ...recipe.model, d_vocab: recipe.tokenizer.size + 1 },
  };
  if (json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  const f = (x) => x.toFixed(2);
  for (const [name, r] of [['forward', result.forward], ['train step', result.train_step], ['char-2l 256', result.char2l_sequence]]) {
    console.log(`${name.padEnd(10)} median ${f(r.median_ms)} ms (min ${f(r.min_ms)}, max ${f(r.max_ms)}) over ${r.n} calls`);
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.stack : String(e));
  process.exit(1);
});
