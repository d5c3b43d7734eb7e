// Prints the native-versus-WASM benchmark table from Google Benchmark's JSON (bench_model.cpp)
// and bench_wasm.mjs's JSON, plus the GFLOP/s the forward pass implies.
//   node tests/bench/bench_report.mjs NATIVE.json WASM.json
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [nativePath, wasmPath] = process.argv.slice(2);
if (!nativePath || !wasmPath) {
  console.error('usage: node tests/bench/bench_report.mjs NATIVE.json WASM.json');
  process.exit(2);
}
const native = JSON.parse(readFileSync(nativePath, 'utf8'));
const wasm = JSON.parse(readFileSync(wasmPath, 'utf8'));
const recipe = JSON.parse(readFileSync(path.join(here, 'reference_recipe.json'), 'utf8'));

const toMs = { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 };

// Per-call samples of one native benchmark: its "iteration" runs (one call each).
function nativeStats(prefix) {
  const runs = native.benchmarks.filter((b) => b.run_type === 'iteration' && b.name.startsWith(prefix + '/'));
  if (!runs.length) throw new Error(`no ${prefix} runs in ${nativePath}`);
  const times = runs.map((b) => (b.real_time * toMs[b.time_unit]) / b.iterations).sort((a, b) => a - b);
  const mid = times.length >> 1;
  const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  return { n: times.length, median_ms: median, min_ms: times[0], max_ms: times[times.length - 1] };
}

const rows = [
  ['forward', nativeStats('BM_Forward'), wasm.forward],
  ['train step', nativeStats('BM_TrainStep'), wasm.train_step],
];

const f = (x) => (x >= 100 ? x.toFixed(1) : x.toFixed(2));
const cell = (r) => `${f(r.median_ms)} (${f(r.min_ms)}–${f(r.max_ms)}) n=${r.n}`;
const header = ['', 'native median ms (min–max)', 'WASM median ms (min–max)', 'WASM/native'];
const body = rows.map(([name, n, w]) => [name, cell(n), cell(w), (w.median_ms / n.median_ms).toFixed(2) + '×']);
const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
const line = (cols) => cols.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const r of body) console.log(line(r));

// Forward FLOPs (multiply-adds counted as 2): per layer the Q, K, V and O projections
// (4 * 2*N*D*(H*Dh)), the scores QK^T and the weighted sum PV over the full T x T grid
// (2 * 2*B*H*T*T*Dh, causal masking not subtracted), then the unembedding 2*N*D*V.
// Embedding lookups, softmax and the loss are not counted.
const m = recipe.model;
const B = recipe.batch_size;
const T = m.n_ctx;
const V = recipe.tokenizer.size + 1;
const N = B * T;
const HDh = m.n_heads * m.d_head;
const proj = 4 * 2 * N * m.d_model * HDh;
const attn = 2 * 2 * B * m.n_heads * T * T * m.d_head;
const unembed = 2 * N * m.d_model * V;
const flops = m.n_layers * (proj + attn) + unembed;
const gf = (ms) => (flops / (ms * 1e-3) / 1e9).toFixed(1);
console.log('');
console.log(`forward FLOPs counted: ${(flops / 1e9).toFixed(3)} GFLOP = ${m.n_layers} layers x ` +
  `(QKVO projections ${(proj / 1e6).toFixed(1)} M + QK^T and PV over full ${T}x${T} ${(attn / 1e6).toFixed(1)} M) ` +
  `+ unembedding ${(unembed / 1e6).toFixed(1)} M  [B=${B}, T=${T}, D=${m.d_model}, H=${m.n_heads}, Dh=${m.d_head}, V=${V}]`);
console.log(`forward GFLOP/s at the median: native ${gf(rows[0][1].median_ms)}, WASM ${gf(rows[0][2].median_ms)}`);
