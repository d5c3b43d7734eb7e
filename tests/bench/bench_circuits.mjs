// The Circuits view's core calls at the real shape: random weights of attn-only-2l's shape
// (2 layers, d_model 512, 8 heads of 64, n_ctx 1,024, d_vocab 48,262, LNPre), in WebAssembly
// (SIMD128) under node, one thread. Each call is the one a panel makes (web/panels/circuits/):
// qk / ov / composedQk with {k: 12, table: false, sort: 'none', top: 40} (the 40 rows and columns
// that vary most, their entries, and the 12 largest and smallest entries), posQk the same, eigen,
// spectra, composition, and headScores (the induction view's head scores on repeated random
// tokens, a fresh seed each call). A call the core refuses prints its sentence, as the page shows it. For
// the top entries it prints how many rows the search read (of 48,262) and whether that was all.
// Nothing here asserts a time. Needs `npm run build`.
// --shape arena: the same on ARENA's attn_only_2L_half shape (bench_series.mjs SHAPES).
//   node tests/bench/bench_circuits.mjs [--reps N] [--shape attn-only-2l|arena] [--json]
import { performance } from 'node:perf_hooks';
import { intArg, summary, simd128Instance } from './common.mjs';
import { shapeArg } from './bench_series.mjs';

async function main() {
  const reps = intArg('--reps', 3);
  const cs = await simd128Instance();
  const shape = shapeArg();
  const model = cs.load(shape.file());
  const view = { k: 12, table: false, sort: 'none', top: 40 };
  let scoreSeed = 0;
  const calls = {
    qk: () => model.qk(0, 0, view),
    ov: () => model.ov(1, 0, view),
    composedQk: () => model.composedQk(1, 0, { through: [0, 0], input: 'k', ...view }),
    posQk: () => model.posQk(1, 0, view),
    eigen: () => model.eigen(1, 0),
    spectra: () => model.spectra(),
    composition: () => model.composition(),
    // A seed of its own each time: the default scores are computed once per model and kept.
    headScores: () => model.headScores({ seed: ++scoreSeed }),
  };
  const out = { shape: `${shape.describe}, random weights`, calls: {} };
  for (const [name, call] of Object.entries(calls)) {
    const times = [];
    let r = null, refused = null;
    for (let i = 0; i < reps && !refused; i++) {
      const t0 = performance.now();
      try { r = call(); } catch (e) { refused = e.message; }
      times.push(performance.now() - t0);
    }
    out.calls[name] = { ...summary(times), refused };
    if (r?.search) out.calls[name].search = { rows_searched: r.search.top.rows_searched, rows: r.shape[0], exact: r.search.top.exact };
  }
  out.heap_mb = cs.memory().heapSize / 2 ** 20;
  model.delete();
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(out, null, 2));
    return;
  }
  console.log(`the Circuits view's core calls at ${out.shape}, WebAssembly (SIMD128) under node, one thread (target: <= 1,000 ms each; headScores <= 2,000 ms):`);
  for (const [name, x] of Object.entries(out.calls)) {
    const searched = x.search ? `; top entries from ${x.search.rows_searched} of ${x.search.rows} rows${x.search.exact ? ' (exact)' : ''}` : '';
    console.log(`  ${name.padEnd(12)} median ${x.median_ms.toFixed(0)} ms (min ${x.min_ms.toFixed(0)}, max ${x.max_ms.toFixed(0)})${searched}${x.refused ? `; refused: ${x.refused}` : ''}`);
  }
  console.log(`  WASM heap: ${out.heap_mb.toFixed(0)} MB`);
}

main().catch((e) => { console.error(e); process.exit(1); });
