// Helpers shared by the benchmark scripts (bench_wasm.mjs, gemm/bench_gemm.mjs, peers/): the
// command-line numbers, the reference batch, the timing statistics and the built module; and the
// lines a real shape's result in Chromium prints (bench_browser.mjs and bench_report.mjs).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const wrapper = path.join(root, 'build', 'wasm', 'circuitscope.js');

// An instance of the built WASM module, or a sentence to build it first: the SIMD128 one, or with
// --relaxed on the command line the relaxed-SIMD one (the module Chromium runs; node 20 needs the
// flag set here).
export async function simd128Instance() {
  if (!existsSync(wrapper)) throw new Error(`${path.relative(root, wrapper)} is missing: run \`npm run build\` first`);
  const relaxed = process.argv.includes('--relaxed');
  if (relaxed) (await import('node:v8')).setFlagsFromString('--experimental-wasm-relaxed-simd');
  const { init } = await import(pathToFileURL(wrapper).href);
  return init({ simd: relaxed ? 'relaxed' : 'simd128' });
}

// The value after `name` on the command line, as a positive integer, or `def` when absent.
export function intArg(name, def) {
  const i = process.argv.indexOf(name);
  if (i < 0) return def;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} needs a positive integer`);
  return v;
}

// The benchmark batch, identical to reference_tokens() in bench_model.cpp: <BOS> (0) first in
// every sequence, then 1 + (i * 37 + 11) mod 95 at flat index i.
export function referenceTokens(B, T) {
  const ids = new Int32Array(B * T);
  for (let i = 0; i < ids.length; i++) ids[i] = i % T === 0 ? 0 : 1 + ((i * 37 + 11) % 95);
  return ids;
}

// Median, min and max of a list of times in milliseconds, with the list itself (in call order).
export function summary(times) {
  const s = [...times].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { n: s.length, median_ms: median, min_ms: s[0], max_ms: s[s.length - 1], times_ms: times };
}

/** A real shape's result in Chromium (bench_browser.mjs realShape()) as the lines it and bench_report.mjs print; `line` formats {median_ms, min_ms, max_ms, n}. */
export function realShapeLines(r, line) {
  return [
    `${r.shape ?? "attn-only-2l's shape"} with GPT-2's vocabulary (${r.file_mb} MB file, random weights), Open file with its tokenizer.json:`,
    `  choosing the files to the induction view rendered: ${r.open_to_rendered_ms} ms (target: <= 3,000 ms)`,
    `  keystroke at the end of ${r.tokens} tokens, as a frame begins: ${line(r.frame_aligned)} (target: median <= 16 ms)`,
    `    of which the number of tokens stayed: ${line(r.same_count)}; it changed: ${line(r.count_changed)}`,
    `  a full pass over 1,024 tokens (the view's run() call, ${r.forward_1024.simd}): ${line(r.forward_1024)} (target: median <= 1,500 ms)`,
  ];
}
