// Benchmark peers: the benchmark's reference model (tests/bench/reference_recipe.json: 2
// attention-only layers, d_vocab 96, d_model 128, 4 heads of d_head 32, n_ctx 256, learned
// positions, no biases; a batch of 16 x 256 tokens) run in two other WebAssembly libraries under
// node, to put the numbers of tests/bench/bench_wasm.mjs in context:
//   tfjs_wasm    TensorFlow.js with its WebAssembly backend (SIMD on; it uses no threads under
//                node): (a) forward + mean next-token loss, (b) one training step (forward, loss,
//                gradients of every parameter, global-norm clip, AdamW as in src/train.cpp).
//   ort_web_1t   onnxruntime-web, WebAssembly execution provider, 1 thread: forward + loss, from an
//   ort_web_2t   ONNX graph written in JS (reference_onnx.mjs); the same with 2 threads.
//                Inference only.
//
// Same model, same inputs: the weights are the initial weights of our own module's trainer for
// the reference recipe (as bench_wasm.mjs times them), saved with Trainer.save() to a temporary
// safetensors file that every peer reads; the batch is tests/bench/common.mjs's referenceTokens(B, T);
// the loss is the mean cross-entropy of predicting token t+1 at positions 0..T-2 of every row.
// Our module's Model.forwardBatch gives the reference loss and Model.run the reference logits.
// Each peer must reproduce both (loss within 1e-3 relative; every logit within 1e-3 of the
// largest reference logit), else the script still prints its JSON and then exits with status 1.
// (The loss alone is a weak check at initialisation, where it sits close to log(96).)
//
// Timing follows bench_wasm.mjs: warm-up calls first, then every call timed on its own with
// performance.now(), the result read back to JS inside the timed call. Each peer runs in a child
// process of its own (tfjs_peer.mjs, ort_peer.mjs), one after the other, so that they do not share
// memory or thread pools; onnxruntime-web fixes its thread count once per process.
//
// With --shape attn-only-2l, the same comparison at TransformerLens's attn-only-2l shape instead
// (random weights: 2 layers, d_model 512, 8 heads of 64, d_vocab 48,262, LNPre; one row of
// --seq tokens, default 1,024): our module's forwardBatch on one thread, timed here, against
// onnxruntime-web on 1 and 2 threads (tfjs-wasm is left out: on the reference model it is
// already ten times slower than ours). Under node --experimental-wasm-relaxed-simd ours is the
// relaxed-SIMD module (the one Chromium runs), and the SIMD128 one is timed beside it.
//
//   node tests/bench/peers/bench_peers.mjs [--forward-reps N] [--train-reps N]
//   node tests/bench/peers/bench_peers.mjs --shape attn-only-2l [--forward-reps N] [--seq T]
// Defaults: 30 forward calls per peer; 5 tfjs training steps (about 2 s each). Needs the
// WebAssembly build (`npm run build`, build/wasm) and this folder's own packages
// (`npm ci --prefix tests/bench/peers`, which scripts/bench.sh runs). Prints one
// JSON document to stdout; progress goes to stderr.
import { readFileSync, writeFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { intArg, referenceTokens, timeCalls } from './common.mjs';
import { shapeWithVocab } from '../bench_series.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..', '..');
const wrapper = path.join(root, 'build', 'wasm', 'circuitscope.js');

const DEFAULT_TRAIN_REPS = 5;
const FORWARD_WARMUP = 5; // as bench_wasm.mjs
const TRAIN_WARMUP = 3; // as bench_wasm.mjs
const LOSS_RTOL = 1e-3;
const LOGITS_RTOL = 1e-3;

// Runs one peer script in a child process and returns the JSON it printed.
function runPeer(script, args) {
  const r = spawnSync(process.execPath, [path.join(here, script), ...args], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`${script} ${args.join(' ')} failed (status ${r.status ?? r.signal})`);
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

// Compares a peer's losses (of its check run and of its last timed call) and logits (a float32
// file [B, T, V]; its first ref.logits.length values) with ours.
function check(peer, logitsFile, ref) {
  const raw = readFileSync(logitsFile);
  const logits = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  if (logits.length < ref.logits.length) throw new Error(`${logitsFile}: ${logits.length} logits, expected at least ${ref.logits.length}`);
  let maxDiff = 0;
  for (let i = 0; i < ref.logits.length; i++) maxDiff = Math.max(maxDiff, Math.abs(logits[i] - ref.logits[i]));
  const peerLoss = peer.check_loss;
  const lossRelDiff = Math.max(...[peerLoss, peer.forward.loss].map((x) => Math.abs(x - ref.loss) / Math.abs(ref.loss)));
  const ok = lossRelDiff <= LOSS_RTOL && maxDiff <= LOGITS_RTOL * ref.maxAbsLogit;
  return { loss: peerLoss, loss_rel_diff: lossRelDiff, logits_max_abs_diff: maxDiff, logits_max_abs_ref: ref.maxAbsLogit, ok };
}

async function main() {
  const realShape = process.argv.includes('--shape');
  if (realShape && process.argv[process.argv.indexOf('--shape') + 1] !== 'attn-only-2l') throw new Error('--shape takes attn-only-2l');
  const forwardReps = intArg('--forward-reps', realShape ? 5 : 30);
  const trainReps = intArg('--train-reps', DEFAULT_TRAIN_REPS);
  if (!existsSync(wrapper)) throw new Error(`${path.relative(root, wrapper)} is missing: run \`npm run build\` first`);
  const recipe = JSON.parse(readFileSync(path.join(here, '..', 'reference_recipe.json'), 'utf8'));
  const B = realShape ? 1 : recipe.batch_size;
  const T = realShape ? intArg('--seq', 1024) : recipe.model.n_ctx;
  const ids = referenceTokens(B, T);

  // The shared weights, and our module's loss and logits for them.
  const { init } = await import(pathToFileURL(wrapper).href);
  const cs = await init();
  let bytes;
  if (realShape) {
    const raw = cs.load(shapeWithVocab('attn-only-2l', 48262), { processing: 'none' });   // the weights as written
    bytes = raw.save();
    raw.delete();
  } else {
    const trainer = cs.trainer(recipe);
    bytes = trainer.save();
    trainer.delete();
  }
  const model = cs.load(bytes);
  const config = model.config;
  const V = config.d_vocab;
  let ref, ours = null, ours128 = null;
  if (!realShape) {
    ref = { loss: model.forwardBatch(ids, B, T), logits: new Float32Array(B * T * V), maxAbsLogit: 0 };
    for (let b = 0; b < B; b++) ref.logits.set(model.run(ids.subarray(b * T, (b + 1) * T)).logits.data, b * T * V);
  } else {
    // One row of T tokens: a [T, V] table of logits is more than one pass may hold (the core
    // refuses it), so the pass computes its loss from blocks of logits as the induction view
    // does (run() with logits: false), and the logits compared are those of the first half of the
    // positions (a pass over them alone: causal, so the same rows).
    // A full pass of `m` on the row, timed as the peers are: another model's run in the same module
    // first, so that the pass is not incremental.
    const timeFullPass = async (mod, m) => {
      const other = mod.load(readFileSync(path.join(root, 'models', 'char-2l.safetensors')));
      const pass = () => {
        other.run(Int32Array.from([1, 2, 3]), undefined, { patterns: false, logits: false });
        return m.run(ids, undefined, { patterns: false, logits: false }).mean_loss;
      };
      try {
        return { loss: pass(), stats: (await timeCalls(pass, 1, forwardReps)).stats };
      } finally {
        other.delete();
      }
    };
    const timed = await timeFullPass(cs, model);   // ours, one thread
    ours = timed.stats;
    ref = { loss: timed.loss, logits: model.run(ids.subarray(0, T >> 1), undefined, { patterns: false }).logits.data.slice(), maxAbsLogit: 0 };
    if (cs.simd === 'relaxed') {   // the SIMD128 module too, where a browser lacks relaxed SIMD
      const cs128 = await init({ simd: 'simd128', separate: true });
      const m128 = cs128.load(bytes);
      ours128 = (await timeFullPass(cs128, m128)).stats;
      m128.delete();
    }
  }
  for (const x of ref.logits) ref.maxAbsLogit = Math.max(ref.maxAbsLogit, Math.abs(x));
  model.delete();

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'circuitscope-peers-'));
  const result = {
    node: process.version,
    v8: process.versions.v8,
    shape: realShape ? { B, T, ...config } : { B, T, ...recipe.model, d_vocab: V },
    weights: realShape
      ? "random weights of attn-only-2l's shape (tests/bench/bench_series.mjs shapeWithVocab, loaded unprocessed and saved), read by every peer"
      : 'initial weights of our trainer for tests/bench/reference_recipe.json (Trainer.save()), read by every peer',
    ...(ours ? { ours_1t: { module: cs.simd, forward: ours } } : {}),
    ...(ours128 ? { ours_1t_simd128: { module: 'simd128', forward: ours128 } } : {}),
    reference_loss: ref.loss,
    tolerances: { loss_rel: LOSS_RTOL, logits_abs_relative_to_max_ref_logit: LOGITS_RTOL },
    settings: {
      forward_reps: forwardReps,
      forward_warmup: FORWARD_WARMUP,
      train_reps: trainReps,
      train_warmup: TRAIN_WARMUP,
      train_reps_note: `default ${DEFAULT_TRAIN_REPS} (not 15 as bench_wasm.mjs): a tfjs training step takes about 2 s`,
    },
  };
  try {
    const weightsFile = path.join(tmp, 'weights.safetensors');
    writeFileSync(weightsFile, bytes);
    const warmup = realShape ? 1 : FORWARD_WARMUP;   // a real-shape forward takes seconds
    const common = ['--weights', weightsFile, '--batch', String(B), '--seq', String(T), '--forward-reps', String(forwardReps), '--warmup', String(warmup)];

    for (const threads of [1, 2]) {
      const name = `ort_web_${threads}t`;
      process.stderr.write(`bench_peers: ${name} ...\n`);
      const logitsFile = path.join(tmp, `${name}.logits`);
      const r = runPeer('ort_peer.mjs', [...common, '--threads', String(threads), '--logits-out', logitsFile]);
      result[name] = { ...r, check: check(r, logitsFile, ref) };
      delete result[name].check_loss;
    }

    if (!realShape) {
      process.stderr.write('bench_peers: tfjs_wasm ...\n');
      const logitsFile = path.join(tmp, 'tfjs.logits');
      const r = runPeer('tfjs_peer.mjs', [...common, '--train-reps', String(trainReps), '--train-warmup', String(TRAIN_WARMUP), '--logits-out', logitsFile]);
      result.tfjs_wasm = { ...r, check: check(r, logitsFile, ref) };
      delete result.tfjs_wasm.check_loss;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  if (ours) result.ours_vs_ort_web_2t = ours.median_ms / result.ort_web_2t.forward.median_ms;

  const failed = (realShape ? ['ort_web_1t', 'ort_web_2t'] : ['tfjs_wasm', 'ort_web_1t', 'ort_web_2t']).filter((k) => !result[k].check.ok);
  result.ok = failed.length === 0;
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  if (ours) {
    const ms = (x) => `${Math.round(x.median_ms)} ms`;
    process.stderr.write(`bench_peers: attn-only-2l's shape, one row of ${T} tokens, forward and loss, medians: ours (${cs.simd}, 1 thread) ${ms(ours)}; ` +
      `onnxruntime-web 1 thread ${ms(result.ort_web_1t.forward)}, 2 threads ${ms(result.ort_web_2t.forward)}; ours / theirs on 2 threads ${result.ours_vs_ort_web_2t.toFixed(2)}x (target: <= 1.0x)` +
      (ours128 ? `; ours with the SIMD128 module ${ms(ours128)}, ${(ours128.median_ms / result.ort_web_2t.forward.median_ms).toFixed(2)}x` : '') + '\n');
  }
  if (failed.length) {
    for (const k of failed) {
      const c = result[k].check;
      console.error(
        `bench_peers: ${k} does not reproduce our model: loss ${c.loss} vs ${ref.loss} (relative difference ${c.loss_rel_diff}), ` +
          `largest logit difference ${c.logits_max_abs_diff} (largest logit ${c.logits_max_abs_ref})`,
      );
    }
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.stack : String(e));
  process.exit(1);
});
