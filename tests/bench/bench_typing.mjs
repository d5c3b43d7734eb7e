// Typing at the real shape: what the induction view's core call costs per keystroke on random
// weights of attn-only-2l's shape (2 layers, d_model 512, 8 heads of 64, n_ctx 1,024, d_vocab
// 48,262, LNPre), in WebAssembly (SIMD128, or relaxed SIMD) under node, one thread. The passes
// are those of the view's call, analyseText() (web/panels/induction/analysis.js), asked on token
// ids: run(ids, undefined, {into, logits: false, textScores: true, topk: 5}), and while ablating
// the clean run(ids, undefined, {probsOf}) after it. Rows:
//   append     one token typed at the end of a T-token text (a clean run after a clean run: the
//              core computes only the new position, changed_from = T - 1)
//   middle     one token changed at T / 2 (the later half is computed)
//   full       the same call computing every position (the first token changed), as every
//              keystroke cost before the incremental pass
//   ablated    one token typed at the end with L0H1 ablated: the view's two passes, the ablated
//              pass and the clean one asked for its probability of the ablated top 5 (each kept
//              pass is the session's own, so both are incremental while they fit the core's budget)
//   ablated_full  the same two calls computing every position (the first token changed), as
//              every such keystroke cost before each intervention had its own kept pass
//   forward    a full pass over 1,024 tokens, patterns and top-k included
//   patch      the patching panel's call (patch(), the repeat broken, denoising, positions 'auto')
//              on a block typed twice, 1,024 and 512 tokens: each patched pass starts at the
//              patched head's layer and computes the two logits compared
//   memory     the module's memory after that pass, one model in a fresh module, against the
//              target of 1.5 x the float32 weights + 100 MB
// Nothing here asserts a time. Needs `npm run build`.
// --shape arena: the same on ARENA's attn_only_2L_half shape (bench_series.mjs SHAPES); --relaxed:
// the relaxed-SIMD module (the one Chromium runs).
//   node tests/bench/bench_typing.mjs [--keystrokes N] [--tokens T] [--shape attn-only-2l|arena] [--relaxed] [--json]
import { performance } from 'node:perf_hooks';
import { intArg, summary, simd128Instance } from './common.mjs';
import { shapeArg } from './bench_series.mjs';

async function main() {
  const n = intArg('--keystrokes', 20);
  const T = intArg('--tokens', 512);
  const cs = await simd128Instance();
  const shape = shapeArg();
  const V = shape.V;
  const file = shape.file();
  const model = cs.load(file);
  const c = model.config;
  const C = Math.min(c.n_ctx, 1024);   // the full pass: 1,024 tokens (ARENA's context is 2,048)
  const into = { patterns: new Float32Array(c.n_layers * c.n_heads * C * C), loss: new Float32Array(C) };
  const opts = { into, logits: false, textScores: true, topk: 5 };
  let s = 12345;
  const tok = () => { s = (s * 1103515245 + 12345) >>> 0; return s % V; };
  const ids = Array.from({ length: C + n + 8 }, tok);
  const time = (f) => { const t0 = performance.now(); const r = f(); return [performance.now() - t0, r]; };
  const rows = { append: [], middle: [], full: [], ablated: [], ablated_full: [] };
  const from = { append: [], middle: [], full: [], ablated: [] };
  const run = (a) => model.run(Int32Array.from(a), undefined, opts);
  const ablate = { ablate: [{ layer: 0, head: 1 }] };
  const clean = { patterns: false, logits: false, into: { loss: new Float32Array(C) } };
  const ablated = (a) => {   // the induction view's two calls with a head ablated
    const r = model.run(Int32Array.from(a), ablate, opts);
    model.run(Int32Array.from(a), undefined, { ...clean, probsOf: r.top_ids.data });
    return r;
  };
  run(ids.slice(0, T - 1));                    // warm-up and the text before the first keystroke
  for (let i = 0; i < n + 2; i++) {
    const base = ids.slice(i, i + T - 1);
    run(base);
    const [ta, ra] = time(() => run([...base, ids[i + T]]));     // a token typed at the end
    const mid = [...base, ids[i + T]];
    mid[T >> 1] = tok();
    const [tm, rm] = time(() => run(mid));                        // a token changed in the middle
    mid[0] = tok();
    const [tf, rf] = time(() => run(mid));                        // every position
    ablated(base);
    const [tb, rb] = time(() => ablated([...base, ids[i + T]]));  // typed with a head ablated
    const first = [...base, ids[i + T]];
    first[0] = tok();
    const [tc] = time(() => ablated(first));                      // the same, every position
    if (i < 2) continue;                                          // warm-up
    rows.append.push(ta); rows.middle.push(tm); rows.full.push(tf); rows.ablated.push(tb); rows.ablated_full.push(tc);
    from.append.push(ra.changed_from); from.middle.push(rm.changed_from); from.full.push(rf.changed_from);
    from.ablated.push(rb.changed_from);
  }
  const long = ids.slice(0, C);
  const fwd = [];
  let refused = null;
  for (let i = 0; i < 4 && !refused; i++) {
    long[0] = tok();   // every position computed
    try {
      const [t] = time(() => run(long));
      if (i > 0) fwd.push(t);
    } catch (e) {
      refused = e.message;   // the core's budget (what a page shows), printed as measured
    }
  }
  // The patching panel's call on a block typed twice: 1,024 and 512 tokens.
  const patching = {};
  for (const n of [C, C >> 1]) {
    const twice = Int32Array.from([...ids.slice(0, n >> 1), ...ids.slice(0, n >> 1)]);
    const times = [];
    let passes = 0;
    try {
      for (let i = 0; i < 3; i++) {
        const [t, r] = time(() => model.patch(twice, { positions: 'auto', seed: i }));
        times.push(t);
        passes = r.passes;
      }
      patching[n] = { ...summary(times), passes };
    } catch (e) {
      patching[n] = { refused: e.message };   // the core's budget, in its words
    }
  }
  model.delete();
  // The memory target: one model in a fresh module, the view's call over every position of the
  // context; the module's memory (which never shrinks) against 1.5 x the float32 weights + 100 MB.
  const fresh = await simd128Instance();
  const one = fresh.load(file);
  const weights = fresh.memory().allocated;
  let memRefused = null;
  try {
    one.run(Int32Array.from(long), undefined, opts);
  } catch (e) {
    memRefused = e.message;
  }
  const memory = { weights_mb: weights / 2 ** 20, heap_mb: fresh.memory().heapSize / 2 ** 20, allocated_mb: fresh.memory().allocated / 2 ** 20, refused: memRefused };
  memory.target_mb = 1.5 * memory.weights_mb + 100;
  one.delete();
  const out = {
    shape: `${shape.describe}, random weights`, tokens: T, keystrokes: n,
    append: summary(rows.append), middle: summary(rows.middle), full: summary(rows.full), ablated: summary(rows.ablated), ablated_full: summary(rows.ablated_full), forward_1024: refused ? { refused } : summary(fwd),
    patch: patching,
    changed_from: { append: from.append[0], middle: from.middle[0], full: from.full[0], ablated: from.ablated[0] },
    memory,
  };
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(out, null, 2));
    return;
  }
  const line = (x) => (x.refused ? `refused: ${x.refused}` : `median ${x.median_ms.toFixed(1)} ms (min ${x.min_ms.toFixed(1)}, max ${x.max_ms.toFixed(1)})`);
  console.log(`typing at ${out.shape}, WebAssembly (${cs.simd === 'relaxed' ? 'relaxed SIMD' : 'SIMD128'}) under node, one thread; the induction view's run() call:`);
  console.log(`  a token appended at ${T} tokens (computed from ${out.changed_from.append}): ${line(out.append)}`);
  console.log(`  a token changed at ${T >> 1} of ${T} (computed from ${out.changed_from.middle}): ${line(out.middle)}`);
  console.log(`  every position computed (from ${out.changed_from.full}):            ${line(out.full)}`);
  console.log(`  a token appended with L0H1 ablated, the view's two calls (the ablated one computed from ${out.changed_from.ablated}): ${line(out.ablated)}`);
  console.log(`  the same two calls computing every position:        ${line(out.ablated_full)}`);
  console.log(`  a full pass over ${C} tokens: ${line(out.forward_1024)} (target: <= 1,500 ms)`);
  for (const [n, x] of Object.entries(out.patch).reverse())
    console.log(`  the patching panel's call over ${n} tokens (every head; ${x.passes ?? 0} passes): ${line(x)}`);
  console.log(`  WASM memory after that pass, one model in a fresh module: ${memory.heap_mb.toFixed(0)} MB (${memory.allocated_mb.toFixed(0)} MB allocated, ` +
    `the weights ${memory.weights_mb.toFixed(0)} MB; target: <= 1.5 x weights + 100 = ${memory.target_mb.toFixed(0)} MB)${memRefused ? ` (the pass was refused: ${memRefused})` : ''}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
