// The WebAssembly side of bench_gemm.cpp (read its header): loads build/wasm/bench/gemm_bench.mjs
// and calls each benchmark function once per timed sample, so V8 runs its optimised code, then
// prints the same JSON document as the native build/native/gemm_bench.
//   node tests/bench/gemm/bench_gemm.mjs [--reps N]        (default 15 samples, 3 warm-up)
//   node tests/bench/gemm/bench_gemm.mjs --relaxed [--reps N]
// --relaxed runs build/wasm/bench/gemm_bench-relaxed.mjs, whose kernels use f32x4.relaxed_madd
// (node 20 needs --experimental-wasm-relaxed-simd, set here). Either build also measures the
// limit through the kernels' madd() ("limit_madd"): fused multiply-adds in the relaxed build, the
// same multiply and add as "limit" in the SIMD128 one.
import v8 from 'node:v8';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { intArg, summary } from '../common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..', '..');
const relaxed = process.argv.includes('--relaxed');
if (relaxed) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
const modulePath = process.env.CS_GEMM_BENCH ||
  path.join(root, 'build', 'wasm', 'bench', relaxed ? 'gemm_bench-relaxed.mjs' : 'gemm_bench.mjs');
const WARMUP = 3;
const PEAK_ITERS = 2000000;

// Times fn once per sample, after the warm-up calls: {median, min, max} in milliseconds.
function sample(reps, fn) {
  const t = [];
  for (let r = 0; r < reps + WARMUP; r++) {
    const t0 = performance.now();
    fn();
    if (r >= WARMUP) t.push(performance.now() - t0);
  }
  const s = summary(t);
  return { median: s.median_ms, min: s.min_ms, max: s.max_ms };
}

const reps = intArg('--reps', 15);
if (!existsSync(modulePath)) throw new Error(`${path.relative(root, modulePath)} is missing: run \`npm run build\` first`);
// The module is built for the web environment (Emscripten 3.1.6 ES modules for node use
// __dirname, which ES modules lack): hand it the bytes instead of letting it fetch them.
const { default: create } = await import(pathToFileURL(modulePath).href);
const { readFileSync } = await import('node:fs');
const m = await create({ wasmBinary: readFileSync(modulePath.replace(/\.mjs$/, '.wasm')) });
const str = (ptr) => m.UTF8ToString(ptr);

let sink = 0;
const peak = sample(reps, () => { sink += m._cs_bench_peak(PEAK_ITERS, 1 + sink * 1e-9); });
let count = 0;
const ex = sample(reps, () => { count = m._cs_bench_exp(); });
// The limit through madd(): fused in the relaxed build.
const peakMadd = sample(reps, () => { sink += m._cs_bench_peak_madd(PEAK_ITERS, 1 + sink * 1e-9); });
const perIter = m._cs_bench_peak_flops_per_iter();
const out = {
  kernel: str(m._cs_bench_kernel()),
  reps,
  limit: {
    gflops_median: (PEAK_ITERS * perIter) / (peak.median * 1e6),
    gflops_best: (PEAK_ITERS * perIter) / (peak.min * 1e6),
    sink,
  },
  exp: { million_per_s_median: count / (ex.median * 1e3) },
  relaxed: m._cs_bench_relaxed() === 1,
  limit_madd: {
    fused: m._cs_bench_relaxed() === 1,
    gflops_median: (PEAK_ITERS * perIter) / (peakMadd.median * 1e6),
    gflops_best: (PEAK_ITERS * perIter) / (peakMadd.min * 1e6),
  },
  shapes: [],
};
for (let i = 0; i < m._cs_bench_shape_count(); i++) {
  const shape = JSON.parse(str(m._cs_bench_shape_json(i)));
  const s = sample(reps, () => m._cs_bench_gemm(i));
  out.shapes.push({ shape, ms_median: s.median, ms_min: s.min, ms_max: s.max });
}
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
