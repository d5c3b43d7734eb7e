// Helpers shared by bench_peers.mjs and the peer runners: tests/bench/common.mjs's command-line
// numbers, reference batch and timing statistics, plus timed calls and the shared weights file.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { readSafetensors } from '../../js/safetensors.mjs';
import { summary } from '../common.mjs';

export { intArg, referenceTokens, summary } from '../common.mjs';

// The value after `name` on the command line, as a string (required).
export function stringArg(name) {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`${name} is required`);
  return process.argv[i + 1];
}

// Calls `fn` (sync or async) `warmup` times untimed, then `reps` times, each call timed on its own
// with performance.now(). Returns the statistics and the value of the last call.
export async function timeCalls(fn, warmup, reps) {
  let last;
  for (let i = 0; i < warmup; i++) last = await fn();
  const times = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    last = await fn();
    times.push(performance.now() - t0);
  }
  return { stats: { ...summary(times), warmup }, last };
}

// The weights file written by bench_peers.mjs (our module's safetensors output) as
// {config, tensors: {name: {shape, data: Float32Array}}}. The file holds F32 values, so the
// conversion through the test reader's Float64Array is exact.
export function loadWeights(file) {
  const { tensors, metadata } = readSafetensors(readFileSync(file));
  const out = {};
  for (const [name, t] of Object.entries(tensors)) out[name] = { shape: t.shape, data: Float32Array.from(t.data) };
  const config = typeof metadata.config === 'string' ? JSON.parse(metadata.config) : metadata.config;
  return { config, tensors: out };
}

// Rearranges a per-head weight [H, rows, cols] so that all heads sit side by side:
// W_Q/W_K/W_V [H, d_model, d_head] -> [d_model, H * d_head] (column h * d_head + j is head h's
// column j), so that one matrix product gives every head's q (or k, v) at once.
export function headsSideBySide({ shape, data }) {
  const [H, R, C] = shape;
  const out = new Float32Array(H * R * C);
  for (let h = 0; h < H; h++)
    for (let r = 0; r < R; r++)
      for (let c = 0; c < C; c++) out[r * H * C + h * C + c] = data[(h * R + r) * C + c];
  return { shape: [R, H * C], data: out };
}

// W_O [H, d_head, d_model] read as [H * d_head, d_model]: the same numbers, already in the order
// that matches headsSideBySide(), so z (all heads side by side) times it sums the heads' outputs.
export function headsStacked({ shape, data }) {
  const [H, R, C] = shape;
  return { shape: [H * R, C], data };
}

// Writes one line of JSON to stdout and makes sure it is flushed before the process ends.
export function printJson(obj) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(obj) + '\n', resolve));
}
