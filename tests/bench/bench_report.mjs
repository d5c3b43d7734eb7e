// Prints `npm run bench`'s report from the JSON files scripts/bench.sh collects in one run:
//   native.json        Google Benchmark (bench_model.cpp): forward, train step, char-2l sequence
//   wasm.json          bench_wasm.mjs: the same calls in WebAssembly under node
//   gemm-native.json   build/native/gemm_bench: GEMM GFLOP/s per shape, the arithmetic limit, and
//                      the same for every wider kernel the CPU runs (AVX2, AVX-512) with its FMA limit
//   gemm-wasm.json     bench_gemm.mjs: the same in WebAssembly
//   peers.json         peers/bench_peers.mjs: tfjs-wasm and onnxruntime-web    (optional)
//   browser.json       bench_browser.mjs: keystroke latency, in-browser training (optional)
// The arithmetic floor of a pass is its FLOPs (counted below from the reference recipe, causal
// half only) divided by the measured WebAssembly limit. Nothing here asserts a time.
//   node tests/bench/bench_report.mjs DIR
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { realShapeLines } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2];
if (!dir) {
  console.error('usage: node tests/bench/bench_report.mjs DIR   (the folder scripts/bench.sh writes)');
  process.exit(2);
}
const read = (name, optional = false) => {
  const p = path.join(dir, name);
  if (!existsSync(p)) {
    if (optional) return null;
    throw new Error(`${p} is missing`);
  }
  return JSON.parse(readFileSync(p, 'utf8'));
};
const native = read('native.json');
const wasm = read('wasm.json');
const gemmNative = read('gemm-native.json');
const gemmWasm = read('gemm-wasm.json');
const peers = read('peers.json', true);
const browser = read('browser.json', true);
const recipe = JSON.parse(readFileSync(path.join(here, 'reference_recipe.json'), 'utf8'));

const toMs = { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 };
function stats(times) {
  const t = [...times].sort((a, b) => a - b);
  const mid = t.length >> 1;
  return { n: t.length, median_ms: t.length % 2 ? t[mid] : (t[mid - 1] + t[mid]) / 2, min_ms: t[0], max_ms: t[t.length - 1] };
}
// Per-call samples of one native benchmark: its "iteration" runs (one call each).
function nativeStats(prefix) {
  const runs = native.benchmarks.filter((b) => b.run_type === 'iteration' && b.name.startsWith(prefix + '/'));
  if (!runs.length) throw new Error(`no ${prefix} runs in native.json`);
  return stats(runs.map((b) => (b.real_time * toMs[b.time_unit]) / b.iterations));
}

// ---- FLOPs of the reference model (multiply-add = 2), counting only the causal half of the
// attention products: T(T+1)/2 (query, key) pairs per sequence and head.
const m = recipe.model;
const B = recipe.batch_size, T = m.n_ctx, D = m.d_model, H = m.n_heads, Dh = m.d_head, L = m.n_layers;
const V = recipe.tokenizer.size + 1, N = B * T, HDh = H * Dh;
const pairs = B * H * (T * (T + 1)) / 2;
const proj = 2 * N * D * HDh;              // one of Q, K, V or O for every head
const attn = 2 * pairs * Dh;               // one of q k^T, pattern v (and each of their gradients)
const unembed = 2 * N * D * V;
const forwardFlops = L * (4 * proj + 2 * attn) + unembed;
// Backward: dlogits W_U^T and resid^T dlogits; per layer dz and dW_O, the four attention
// gradients (dP, dv, dq, dk), dW_Q/K/V and dx through W_Q/K/V.
const backwardFlops = 2 * unembed + L * (2 * proj + 4 * attn + 6 * proj);
const trainFlops = forwardFlops + backwardFlops;

const limit = gemmWasm.limit.gflops_median;  // GFLOP/s, WebAssembly, one core
const floorMs = (flops) => flops / (limit * 1e6);

const f = (x) => (x == null ? '—' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const cell = (r) => (r ? `${f(r.median_ms)} (${f(r.min_ms)}–${f(r.max_ms)})` : '—');
function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cols) => cols.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}
const ratio = (a, b) => (a && b ? (a.median_ms / b.median_ms).toFixed(2) + '×' : '—');

const nf = nativeStats('BM_Forward'), nt = nativeStats('BM_TrainStep'), nc = nativeStats('BM_Char2l');
// The same calls with the fastest kernel this CPU runs (AVX2 or AVX-512 with fused multiply-adds).
const fastRuns = native.benchmarks.filter((b) => b.run_type === 'iteration' && b.name.startsWith('BM_ForwardFast/'));
const fastKernel = fastRuns[0]?.label || null;
const nff = fastRuns.length ? nativeStats('BM_ForwardFast') : null;
const ntf = fastRuns.length ? nativeStats('BM_TrainStepFast') : null;
const nt2 = native.benchmarks.some((b) => b.name.startsWith('BM_TrainStepFast2/')) ? nativeStats('BM_TrainStepFast2') : null;
const wf = wasm.forward, wt = wasm.train_step, wc = wasm.char2l_sequence;
const tf = peers?.tfjs_wasm?.forward, tt = peers?.tfjs_wasm?.train_step;
const o1 = peers?.ort_web_1t?.forward, o2 = peers?.ort_web_2t?.forward;

console.log(`== reference model: ${L} layers, d_model ${D}, ${H} heads x ${Dh}, n_ctx ${T}, d_vocab ${V}, batch ${B}`);
console.log(`   ms per call, median (min–max); native = the portable SSE4.2 kernel (the page's arithmetic), ` +
  `native ${fastKernel || 'fast'} = the fastest kernel this CPU runs; peers run the same weights, tokens and loss`);
table(['', 'native', `native ${fastKernel || 'fast'}`, 'WASM (ours)', 'tfjs-wasm', 'ort-web 1 thread', 'ort-web 2 threads'], [
  ['forward + loss', cell(nf), cell(nff), cell(wf), cell(tf), cell(o1), cell(o2)],
  ['training step', cell(nt), cell(ntf), cell(wt), cell(tt), '—', '—'],
]);
console.log('');
console.log(`FLOPs (causal half): forward ${(forwardFlops / 1e9).toFixed(3)} G, training step ${(trainFlops / 1e9).toFixed(3)} G`);
console.log(`WebAssembly arithmetic limit (measured, 4-wide multiply + add, one core): ${limit.toFixed(1)} GFLOP/s` +
  ` (best ${gemmWasm.limit.gflops_best.toFixed(1)}); native SSE4.2: ${gemmNative.limit.gflops_median.toFixed(1)}`);
console.log(`floor = FLOPs / limit: forward ${floorMs(forwardFlops).toFixed(1)} ms, training step ${floorMs(trainFlops).toFixed(1)} ms`);
console.log('');
table(['ratio (medians)', 'forward', 'training step'], [
  ['WASM / floor', (wf.median_ms / floorMs(forwardFlops)).toFixed(2) + '×', (wt.median_ms / floorMs(trainFlops)).toFixed(2) + '×'],
  ['WASM / native SSE4.2', ratio(wf, nf), ratio(wt, nt)],
  [`native ${fastKernel || 'fast'} / native SSE4.2`, ratio(nff, nf), ratio(ntf, nt)],
  [`native ${fastKernel || 'fast'} on 2 threads / 1 thread`, '—', ratio(nt2, ntf)],
  ['tfjs-wasm / WASM', ratio(tf, wf), ratio(tt, wt)],
  ['ort-web 1 thread / WASM', ratio(o1, wf), '—'],
  ['ort-web 2 threads / WASM (1 thread)', ratio(o2, wf), '—'],
  ['WASM GFLOP/s', (forwardFlops / (wf.median_ms * 1e6)).toFixed(1), (trainFlops / (wt.median_ms * 1e6)).toFixed(1)],
]);
if (peers && !peers.ok) console.log('\nWARNING: a peer did not reproduce our loss or logits (see peers.json)');

console.log('');
console.log('== GEMM kernel (src/kernels/gemm.cpp) on the reference model\'s shapes, one layer\'s calls per sample');
const byWhat = new Map(gemmNative.shapes.map((s) => [s.shape.what, s]));
const gf = (s) => s.shape.flops / (s.ms_median * 1e6);
table(['product', 'M x N x K', 'calls', 'native GFLOP/s', 'WASM GFLOP/s', 'WASM % of limit'],
  gemmWasm.shapes.map((s) => {
    const n = byWhat.get(s.shape.what);
    return [s.shape.what, `${s.shape.M}x${s.shape.N}x${s.shape.K}`, s.shape.calls, n ? gf(n).toFixed(1) : '—', gf(s).toFixed(1),
      ((100 * gf(s)) / limit).toFixed(0) + '%'];
  }));
// Native kernels at the machine's width, each against its own measured fused multiply-add limit.
for (const k of gemmNative.kernels || []) {
  const base = new Map(gemmNative.shapes.map((x) => [x.shape.what, x]));
  console.log('');
  console.log(`native ${k.kernel}: limit (${k.limit.what}, measured) ${k.limit.gflops_median.toFixed(1)} GFLOP/s (best ${k.limit.gflops_best.toFixed(1)})`);
  table(['product', `SSE4.2 GFLOP/s`, `${k.kernel} GFLOP/s`, `% of ${k.kernel} limit`], k.shapes.map((x) => {
    const b = base.get(x.shape.what);
    return [x.shape.what, b ? gf(b).toFixed(1) : '—', gf(x).toFixed(1), ((100 * gf(x)) / k.limit.gflops_median).toFixed(0) + '%'];
  }));
  const tk = k.shapes.reduce((a, x) => a + x.shape.flops, 0) / k.shapes.reduce((a, x) => a + x.ms_median * 1e6, 0);
  console.log(`all shapes: native ${k.kernel} ${tk.toFixed(1)} GFLOP/s = ${((100 * tk) / k.limit.gflops_median).toFixed(0)}% of its limit`);
}
console.log('');
const totalW = gemmWasm.shapes.reduce((a, s) => a + s.shape.flops, 0) / gemmWasm.shapes.reduce((a, s) => a + s.ms_median * 1e6, 0);
console.log(`all shapes: WASM ${totalW.toFixed(1)} GFLOP/s = ${((100 * totalW) / limit).toFixed(0)}% of the limit; ` +
  `vector exponential: WASM ${gemmWasm.exp.million_per_s_median.toFixed(0)} M/s, native ${gemmNative.exp.million_per_s_median.toFixed(0)} M/s`);

console.log('');
console.log(`== shipped char-2l, one sequence of ${wc.tokens} tokens, forward + loss: native ${cell(nc)} ms, WASM ${cell(wc)} ms`);

if (browser) {
  console.log('');
  console.log(`== in Chromium ${browser.chromium} (tests/bench/bench_browser.mjs; load average ${browser.machine.load_average_1min.before} before, ${browser.machine.load_average_1min.after} after)`);
  const k = browser.keystroke;
  const line = (r) => `median ${f(r.median_ms)} ms (min ${f(r.min_ms)}, max ${f(r.max_ms)}) over ${r.n}`;
  console.log(`keystroke to rendered induction view, ${k.model}, ${k.tokens} tokens, ${k.viewport}:`);
  console.log(`  keystroke as a frame begins (the work):            ${line(k.frame_aligned)}`);
  console.log(`  keystroke at a random point of the frame (+ vsync): ${line(k.random_phase)}`);
  for (const r of [browser.realshape, browser.arena]) if (r) for (const text of realShapeLines(r, line)) console.log(text);
  if (browser.workers) {
    const w = browser.workers;
    console.log(`reference model's training step in the page's worker (${w.steps} steps, a sample per ${w.steps_per_sample ?? 1}): 1 worker ${line(w.one_worker)}; ` +
      `2 workers ${line(w.two_workers)}; speed-up ${w.speedup}×`);
  }
  if (browser.tokenize) {
    for (const x of browser.tokenize.texts) {
      console.log(`tokenizer.json (GPT-2's), ${x.chars} characters of prose (${x.tokens} tokens): WebAssembly core ${f(x.wasm_ms)} ms, ` +
        `@huggingface/tokenizers ${f(x.tokenizers_js_ms)} ms in the same page (${f(x.tokenizers_js_ms / x.wasm_ms)}x); ids ${x.same_ids ? 'identical' : 'DIFFER'}`);
    }
  }
  const tr = browser.training;
  console.log(`in-browser training of ${tr.recipe} (${tr.steps} steps, Web Worker): ${f(tr.steps_per_second)} steps/s; ` +
    (tr.phase_change_step != null
      ? `phase change at step ${tr.phase_change_step}, ${f(tr.phase_change_seconds)} s after Start`
      : `no phase change in ${f(tr.train_seconds)} s`));
}

// ---- Relaxed SIMD: the relaxed-SIMD module (circuitscope-relaxed.wasm, fused multiply-adds in
// the kernels) beside the SIMD128 one, from the optional files scripts/bench.sh writes with
// --relaxed: wasm-relaxed.json (bench_wasm.mjs --relaxed) and gemm-wasm-relaxed.json
// (bench_gemm.mjs --relaxed).
const wasmRelaxed = read('wasm-relaxed.json', true);
const gemmRelaxed = read('gemm-wasm-relaxed.json', true);
if (wasmRelaxed || gemmRelaxed) {
  console.log('');
  console.log('== relaxed SIMD (circuitscope-relaxed.wasm: f32x4.relaxed_madd in the kernels) beside SIMD128 (circuitscope.wasm), node');
  if (wasmRelaxed) {
    const speedup = (a, b) => (a && b ? (a.median_ms / b.median_ms).toFixed(2) + '×' : '—');
    table(['ms per call, median (min–max)', 'WASM SIMD128', 'WASM relaxed', 'SIMD128 / relaxed'], [
      ['forward + loss', cell(wf), cell(wasmRelaxed.forward), speedup(wf, wasmRelaxed.forward)],
      ['training step', cell(wt), cell(wasmRelaxed.train_step), speedup(wt, wasmRelaxed.train_step)],
      [`char-2l, ${wc.tokens} tokens`, cell(wc), cell(wasmRelaxed.char2l_sequence), speedup(wc, wasmRelaxed.char2l_sequence)],
      ['GFLOP/s forward, training step', `${(forwardFlops / (wf.median_ms * 1e6)).toFixed(1)}, ${(trainFlops / (wt.median_ms * 1e6)).toFixed(1)}`,
        `${(forwardFlops / (wasmRelaxed.forward.median_ms * 1e6)).toFixed(1)}, ${(trainFlops / (wasmRelaxed.train_step.median_ms * 1e6)).toFixed(1)}`, ''],
    ]);
  }
  if (gemmRelaxed) {
    const fusedLimit = gemmRelaxed.limit_madd.gflops_median;
    console.log(`arithmetic limit, GFLOP/s (median): multiply + add ${gemmWasm.limit.gflops_median.toFixed(1)} (SIMD128 build), ` +
      `${gemmRelaxed.limit.gflops_median.toFixed(1)} (relaxed build); ` +
      `fused multiply-add (relaxed_madd) ${fusedLimit.toFixed(1)}${gemmRelaxed.limit_madd.fused ? '' : ' (NOT a relaxed build)'}`);
    const relaxedBy = new Map(gemmRelaxed.shapes.map((s) => [s.shape.what, s]));
    table(['product', 'SIMD128 GFLOP/s', 'relaxed GFLOP/s', 'relaxed % of fused limit'],
      gemmWasm.shapes.map((s) => {
        const r = relaxedBy.get(s.shape.what);
        return [s.shape.what, gf(s).toFixed(1), r ? gf(r).toFixed(1) : '—', r ? ((100 * gf(r)) / fusedLimit).toFixed(0) + '%' : '—'];
      }));
    const totalR = gemmRelaxed.shapes.reduce((a, s) => a + s.shape.flops, 0) / gemmRelaxed.shapes.reduce((a, s) => a + s.ms_median * 1e6, 0);
    console.log(`all shapes: SIMD128 ${totalW.toFixed(1)} GFLOP/s, relaxed ${totalR.toFixed(1)} GFLOP/s; ` +
      `vector exponential: SIMD128 ${gemmWasm.exp.million_per_s_median.toFixed(0)} M/s, relaxed ${gemmRelaxed.exp.million_per_s_median.toFixed(0)} M/s`);
  }
}
