// The analysis API of the WASM module through the JS wrapper (build/wasm/circuitscope.js): every
// tagged tensor is well-formed, results agree with independent computations (attribution parts
// sum to run()'s logits, circuit tables equal products of the weights read straight from the
// file, eigenvalues sum to the table's trace, ...), the shipped models show their known
// behaviour, bad input gives a readable Error, and load/run/delete cycles do not leak.
// Needs `npm run build` (build/wasm/circuitscope.js and its module).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSafetensors } from './safetensors.mjs';
import { wrapperModule } from './module.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const charBytes = readFileSync(path.join(root, 'models', 'char-2l.safetensors'));
const ioiBytes = readFileSync(path.join(root, 'models', 'ioi-1l2h.safetensors'));
const TEXT = 'Once upon a time there was a cat. Once upon a time there was a dog.';

/** @typedef {import('../../wasm/circuitscope.js').LoadedModel} LoadedModel */
/** @typedef {import('../../wasm/circuitscope.js').Intervention} Intervention */
/** @typedef {import('../../wasm/circuitscope.js').Recipe} Recipe */
/** @type {typeof import('../../wasm/circuitscope.js')} */
let api;   // the wrapper module's exports
/** @type {import('../../wasm/circuitscope.js').Circuitscope} */
let cs;    // an initialised instance
/** @type {LoadedModel} */
let char;  // char-2l
/** @type {LoadedModel} */
let ioi;   // ioi-1l2h

before(async () => {
  api = await wrapperModule();
  cs = await api.init();
  char = cs.load(charBytes);
  ioi = cs.load(ioiBytes);
});

after(() => {
  char?.delete();
  ioi?.delete();
});

// ------------------------------------------------------------------------------ helpers

// Row-major dense matrices: {rows, cols, data}.
const mat = (rows, cols, data) => ({ rows, cols, data });
// Slice i along the first axis of a 3-d weight [n, r, c] as an [r, c] matrix.
function slice(t, i) {
  const [, r, c] = t.shape;
  return mat(r, c, t.data.subarray(i * r * c, (i + 1) * r * c));
}
const whole = (t) => mat(t.shape[0], t.shape[1], t.data);
function matmul(a, b) {
  assert.equal(a.cols, b.rows);
  const out = new Float64Array(a.rows * b.cols);
  for (let i = 0; i < a.rows; i++) {
    for (let k = 0; k < a.cols; k++) {
      const x = a.data[i * a.cols + k];
      if (x === 0) continue;
      for (let j = 0; j < b.cols; j++) out[i * b.cols + j] += x * b.data[k * b.cols + j];
    }
  }
  return mat(a.rows, b.cols, out);
}
function transpose(a) {
  const out = new Float64Array(a.rows * a.cols);
  for (let i = 0; i < a.rows; i++) for (let j = 0; j < a.cols; j++) out[j * a.rows + i] = a.data[i * a.cols + j];
  return mat(a.cols, a.rows, out);
}

const product = (shape) => shape.reduce((x, y) => x * y, 1);
const isTagged = (x) => x !== null && typeof x === 'object' && ArrayBuffer.isView(x.data) && Array.isArray(x.shape);

// Every tagged array inside a result (recursively): [path, tagged].
function taggedIn(value, where = 'result', out = []) {
  if (isTagged(value)) {
    out.push([where, value]);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => taggedIn(v, `${where}[${i}]`, out));
  } else if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    for (const [k, v] of Object.entries(value)) taggedIn(v, `${where}.${k}`, out);
  }
  return out;
}

function assertWellFormed(result, what, minCount = 1) {
  const found = taggedIn(result, what);
  assert.ok(found.length >= minCount, `${what}: expected at least ${minCount} tagged arrays, found ${found.length}`);
  for (const [where, t] of found) {
    assert.ok(t.data instanceof Float32Array || t.data instanceof Int32Array, `${where}: data is a Float32Array or Int32Array`);
    assert.equal(t.data.length, product(t.shape), `${where}: data.length ${t.data.length} != product(${t.shape})`);
    assert.equal(t.axes.length, t.shape.length, `${where}: axes ${JSON.stringify(t.axes)} vs shape ${JSON.stringify(t.shape)}`);
    assert.ok(t.axes.every((a) => typeof a === 'string' && a.length > 0), `${where}: axis names`);
    assert.ok(t.shape.every((d) => Number.isInteger(d) && d >= 0), `${where}: shape entries are integers`);
    // A copy, not a view into the module's heap.
    assert.notEqual(t.data.buffer, /** @type {{HEAP8?: Int8Array}} */ (cs.module).HEAP8?.buffer, `${where}: a view into the WASM heap`);
  }
  return found.length;
}

function close(actual, expected, tol, what) {
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual} vs ${expected} (tolerance ${tol})`);
}

// Largest |a - b| relative to the largest |b|.
function relMaxDiff(a, b) {
  assert.equal(a.length, b.length);
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return diff / Math.max(scale, 1e-30);
}

function throwsReadable(fn, pattern, what) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Error, `${what}: got ${typeof e} ${String(e)}, not an Error`);
    assert.match(e.message, pattern, `${what}: message "${e.message}"`);
    return true;
  }, what);
}

// ------------------------------------------------------------------------------ tests

test('every result of every method is made of well-formed tagged arrays', () => {
  const r = char.run(TEXT, undefined, { resid: true, result: true });
  const T = r.tokens.length;
  const { n_layers: L, n_heads: H, d_model: D, d_vocab: V, d_head: Dh, n_ctx: C } = char.config;
  assert.deepEqual(r.logits.shape, [T, V]);
  assert.deepEqual(r.logits.axes, ['pos', 'd_vocab']);
  assert.deepEqual(r.patterns.shape, [L, H, T, T]);
  assert.deepEqual(r.patterns.axes, ['layer', 'head', 'query_pos', 'key_pos']);
  assert.deepEqual(r.resid.shape, [L + 1, T, D]);
  assert.deepEqual(r.result.shape, [L, H, T, D]);
  assert.equal(char.run(TEXT).resid, undefined, 'resid only on request');

  const results = {
    run: r,
    attribution: char.attribution(),
    qk: char.qk(1, 2, { factors: true }),
    ov: char.ov(1, 2, { factors: true }),
    posQk: char.posQk(0, 1, { k: 3 }),
    spectra: char.spectra(),
    composition: char.composition({ samples: 20 }),
    headScores: char.headScores({ batch: 2 }),
    topK: char.topK(TEXT, 3),
    ablate: char.ablate(TEXT, { ablate: [{ layer: 1, head: 2 }] }),
    analyseText: char.analyseText(TEXT, { ablate: [{ layer: 1, head: 2 }] }),
    corpusStats: char.corpusStats(TEXT, { window: 3, leadingTerms: true }),
    ioi: ioi.ioi('A B B <MID>'),
    ioiAll: ioi.ioi(),
    ioiEvaluate: ioi.ioiEvaluate(),
    ioiSequences: ioi.ioiSequences(),
  };
  let count = 0;
  for (const [name, result] of Object.entries(results)) count += assertWellFormed(result, name);
  assert.ok(count > 60, `checked ${count} tagged arrays`);

  assert.deepEqual(results.qk.table.shape, [V, V]);
  assert.deepEqual(results.qk.table.axes, ['dest_token', 'src_token']);
  assert.deepEqual(results.qk.A.shape, [V, Dh]);
  assert.deepEqual(results.ov.table.axes, ['src_token', 'out_token']);
  assert.deepEqual(results.posQk.table.shape, [C, C]);
  assert.deepEqual(results.posQk.table.axes, ['query_pos', 'key_pos']);
  assert.deepEqual(results.composition.scores.shape, [3, L, H, L, H]);
  assert.deepEqual(results.composition.scores.axes, ['kind', 'src_layer', 'src_head', 'dst_layer', 'dst_head']);
  for (const k of ['previous_token', 'duplicate_token', 'prefix_matching', 'copying']) {
    assert.deepEqual(results.headScores[k].shape, [L, H], k);
    assert.deepEqual(results.headScores[k].axes, ['layer', 'head'], k);
  }
  assert.deepEqual(results.topK.ids.shape, [T, 3]);
  assert.deepEqual(results.ablate.logits.shape, [1, T, V]);
  assert.deepEqual(results.ablate.per_token.shape, [1, T - 1]);
  assert.deepEqual(results.ioiSequences.shape, [60, 5]);
  assert.equal(results.ioiAll.length, 60);
  const e = char.eigen(1, 2);
  for (const s of [e.ov, e.qk]) {
    assert.ok(s.re instanceof Float64Array && s.im instanceof Float64Array);
    assert.equal(s.re.length, Dh);
    assert.equal(s.im.length, Dh);
  }
});

test('attribution: parts sum to run()\'s logits, and each head\'s paths sum to its part', () => {
  for (const [model, input, iv] of /** @type {[LoadedModel, string, Intervention | undefined][]} */ ([
    [char, TEXT, undefined],
    [char, TEXT, { ablate: [{ layer: 0, head: 1 }], cut: [{ from: [0, 3], to: [1, 2], input: 'v' }] }],
    [ioi, 'A B B <MID>', undefined],
  ])) {
    const r = model.run(input, iv);
    const T = r.tokens.length;
    const V = model.config.d_vocab;
    for (const pos of [0, Math.floor(T / 2), T - 1]) {
      const a = model.attribution(pos);  // the last run's tokens and intervention
      assert.equal(a.pos, pos);
      assert.equal(a.token, r.tokens[pos]);
      const P = a.names.length;
      assert.equal(P, 3 + model.config.n_layers * model.config.n_heads);
      const logits = r.logits.data.subarray(pos * V, (pos + 1) * V);
      let worst = 0;
      for (let v = 0; v < V; v++) {
        let s = 0;
        for (let p = 0; p < P; p++) s += a.parts.data[p * V + v];
        worst = Math.max(worst, Math.abs(s - logits[v]));
        assert.equal(a.logits.data[v], logits[v]);
      }
      assert.ok(worst < 1e-3, `parts sum to the logits within ${worst}`);
      // Paths grouped by head sum to that head's part.
      const Q = a.path_names.length;
      const sums = new Float64Array(P * V);
      for (let q = 0; q < Q; q++) for (let v = 0; v < V; v++) sums[a.path_part[q] * V + v] += a.paths.data[q * V + v];
      for (const p of new Set(a.path_part)) {
        for (let v = 0; v < V; v++) close(sums[p * V + v], a.parts.data[p * V + v], 1e-3, `${a.names[p]} paths, logit ${v}`);
      }
    }
  }
  // Explicit tokens instead of the last run's.
  const ids = char.tokenize('abc').ids;
  const a = char.attribution(-1, { tokens: ids });
  assert.equal(a.pos, ids.length - 1);
});

test('qk / ov / posQk tables equal the products of the weights read from the file', () => {
  const { tensors } = readSafetensors(charBytes);
  const WE = whole(tensors['embed.W_E']);
  const WU = whole(tensors['unembed.W_U']);
  const Wpos = whole(tensors['pos_embed.W_pos']);
  for (const [l, h] of [[0, 1], [1, 2]]) {
    const WQ = slice(tensors[`blocks.${l}.attn.W_Q`], h);
    const WK = slice(tensors[`blocks.${l}.attn.W_K`], h);
    const WV = slice(tensors[`blocks.${l}.attn.W_V`], h);
    const WO = slice(tensors[`blocks.${l}.attn.W_O`], h);
    const qkTable = matmul(matmul(WE, WQ), transpose(matmul(WE, WK)));  // W_E W_Q W_K^T W_E^T
    const ovTable = matmul(matmul(matmul(WE, WV), WO), WU);             // W_E W_V W_O W_U
    const posTable = matmul(matmul(Wpos, WQ), transpose(matmul(Wpos, WK)));
    const qk = char.qk(l, h, { k: 5 });
    const ov = char.ov(l, h, { k: 5 });
    const pq = char.posQk(l, h, { k: 5 });
    assert.ok(relMaxDiff(qk.table.data, qkTable.data) < 1e-5, `L${l}H${h} QK table`);
    assert.ok(relMaxDiff(ov.table.data, ovTable.data) < 1e-5, `L${l}H${h} OV table`);
    assert.ok(relMaxDiff(pq.table.data, posTable.data) < 1e-5, `L${l}H${h} positional QK table`);
    // Top and bottom entries are the table's extremes, best first, with matching values.
    const V = qkTable.rows;
    const sorted = Array.from(qkTable.data).sort((x, y) => y - x);
    assert.equal(qk.top.length, 5);
    qk.top.forEach((e, i) => {
      close(e.value, sorted[i], 1e-6 * Math.abs(sorted[0]), `qk top ${i}`);
      close(e.value, qkTable.data[e.dest * V + e.src], 1e-9 * Math.abs(sorted[0]) + 1e-9, `qk top ${i} position`);
    });
    close(qk.bottom[0].value, sorted[sorted.length - 1], 1e-6 * Math.abs(sorted[0]), 'qk bottom');
    const ovMax = Math.max(...ovTable.data);
    close(ov.top[0].value, ovMax, 1e-6 * Math.abs(ovMax), 'ov top');
    close(ov.top[0].value, ovTable.data[ov.top[0].src * V + ov.top[0].out], 1e-9 * Math.abs(ovMax), 'ov top position');
    // The factors multiply to the table.
    const f = char.ov(l, h, { factors: true, table: false });
    assert.equal(f.table, undefined);
    const AB = matmul(mat(...f.A.shape, f.A.data), mat(...f.B.shape, f.B.data));
    assert.ok(relMaxDiff(AB.data, ovTable.data) < 1e-5, 'A B = table');
  }
});

test('composedQk: the K- and Q-composition terms equal products of the weights; it orders like qk() and refuses what has no term', () => {
  const { tensors } = readSafetensors(charBytes);
  const WE = whole(tensors['embed.W_E']);
  const w = (l, name, h) => slice(tensors[`blocks.${l}.attn.${name}`], h);
  const [l1, h1, l2, h2] = [0, 1, 1, 1];
  const moved = matmul(matmul(WE, w(l1, 'W_V', h1)), w(l1, 'W_O', h1));   // W_E W_OV^{h1}
  const kTerm = matmul(matmul(WE, w(l2, 'W_Q', h2)), transpose(matmul(moved, w(l2, 'W_K', h2))));
  const qTerm = matmul(matmul(moved, w(l2, 'W_Q', h2)), transpose(matmul(WE, w(l2, 'W_K', h2))));
  const k = char.composedQk(l2, h2, { through: [l1, h1], k: 3, sort: 'both', top: 20 });
  const q = char.composedQk(l2, h2, { through: [l1, h1], input: 'q' });
  assertWellFormed(k, 'composedQk');
  assert.deepEqual(k.table.axes, ['dest_token', 'src_read_token']);
  assert.deepEqual(q.table.axes, ['dest_read_token', 'src_token']);
  assert.ok(relMaxDiff(k.table.data, kTerm.data) < 1e-5, 'K-composition term');
  assert.ok(relMaxDiff(q.table.data, qTerm.data) < 1e-5, 'Q-composition term');
  const V = kTerm.rows;
  close(k.top[0].value, Math.max(...kTerm.data), 1e-6 * Math.max(...kTerm.data), 'the largest entry');
  close(k.top[0].value, kTerm.data[k.top[0].dest * V + k.top[0].src], 1e-5, 'named by dest and src');
  assert.deepEqual({ rows: Array.from(k.rows), cols: Array.from(k.cols) }, arrangeReference(k.table, 'both', 20));
  throwsReadable(() => char.composedQk(1, 1, { through: [1, 0] }), /not in an earlier layer/, 'same layer');
  // @ts-expect-error: an input composedQk does not take
  throwsReadable(() => char.composedQk(1, 1, { through: [0, 1], input: 'v' }), /'q' or 'k'/, 'V');
  throwsReadable(() => char.composedQk(1, 1, { through: [0, 9] }), /no head L0H9/, 'no such head');
  // @ts-expect-error: no through
  throwsReadable(() => char.composedQk(1, 1, {}), /through must be the earlier head/, 'no through');
});

test('attribution of any target token: its parts sum to its logit, and the paths are ordered by their share of it', () => {
  const a0 = char.attribution(-1, { tokens: TEXT });
  assert.equal(a0.target, a0.predicted);
  const V = a0.logits.shape[0];
  for (const target of [0, 5, V - 1]) {
    const a = char.attribution(-1, { tokens: TEXT, target });
    assert.equal(a.target, target);
    assert.equal(a.predicted, a0.predicted);
    let sum = 0;
    for (let p = 0; p < a.parts.shape[0]; p++) sum += a.parts.data[p * V + target];
    close(sum, a.logits.data[target], 1e-4, `parts of token ${target}`);
    const share = (i) => Math.abs(a.paths.data[i * V + target]);
    for (let i = 1; i < a.path_order.length; i++) assert.ok(share(a.path_order[i - 1]) >= share(a.path_order[i]));
  }
  throwsReadable(() => char.attribution(-1, { tokens: TEXT, target: V }), /target token \d+ is outside the vocabulary/, 'target past the vocabulary');
});

// The display order the page used to compute itself (web/views/circuits.js's arrange(), before
// the core returned it): the top N rows / columns by variance, kept in index order, then by
// decreasing mean; JavaScript's sort is stable, so ties keep index order.
function arrangeReference(table, sort, top) {
  const [R, C] = table.shape;
  const d = table.data;
  const rowMean = new Float64Array(R), colMean = new Float64Array(C), rowVar = new Float64Array(R), colVar = new Float64Array(C);
  for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) { rowMean[i] += d[i * C + j] / C; colMean[j] += d[i * C + j] / R; }
  for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) {
    rowVar[i] += (d[i * C + j] - rowMean[i]) ** 2;
    colVar[j] += (d[i * C + j] - colMean[j]) ** 2;
  }
  let rows = [...Array(R).keys()];
  let cols = [...Array(C).keys()];
  const n = Number(top);
  if (n > 0 && n < R) rows = rows.sort((a, b) => rowVar[b] - rowVar[a]).slice(0, n).sort((a, b) => a - b);
  if (n > 0 && n < C) cols = cols.sort((a, b) => colVar[b] - colVar[a]).slice(0, n).sort((a, b) => a - b);
  if (sort === 'row' || sort === 'both') rows.sort((a, b) => rowMean[b] - rowMean[a]);
  if (sort === 'col' || sort === 'both') cols.sort((a, b) => colMean[b] - colMean[a]);
  return { rows, cols };
}

test('circuit display order: rows and cols are the top-N by variance, then by mean, as the page showed them', () => {
  for (const [model, l, h] of [[char, 0, 0], [char, 1, 2], [ioi, 0, 1]]) {
    for (const kind of ['qk', 'ov']) {
      for (const sort of ['none', 'row', 'col', 'both']) {
        for (const top of [0, 10, 40, 80]) {
          const c = model[kind](l, h, { k: 1, sort, top });
          const want = arrangeReference(c.table, sort, top);
          assert.ok(c.rows instanceof Int32Array && c.cols instanceof Int32Array, 'Int32Arrays');
          assert.deepEqual(Array.from(c.rows), want.rows, `L${l}H${h} ${kind} ${sort} top ${top}: rows`);
          assert.deepEqual(Array.from(c.cols), want.cols, `L${l}H${h} ${kind} ${sort} top ${top}: cols`);
          // shown: the table's entries at rows x cols, in that order.
          const C = c.table.shape[1];
          assert.deepEqual(c.shown.shape, [c.rows.length, c.cols.length]);
          assert.deepEqual(c.shown.axes, c.table.axes);
          const picked = Float32Array.from({ length: c.rows.length * c.cols.length }, (_, i) => c.table.data[c.rows[Math.floor(i / c.cols.length)] * C + c.cols[i % c.cols.length]]);
          assert.ok(relMaxDiff(c.shown.data, picked) < 1e-6, `L${l}H${h} ${kind} ${sort} top ${top}: shown`);
          for (const side of ['top', 'bottom']) assert.deepEqual(c.search[side], { exact: true, rows_searched: c.search[side].rows_searched, bound: 0, note: '' });
        }
      }
    }
  }
  // The default is every row and column in index order; without the table only when asked.
  const plain = char.qk(0, 0, { k: 1 });
  assert.deepEqual(Array.from(plain.rows), [...Array(plain.shape[0]).keys()]);
  assert.equal(char.qk(0, 0, { k: 1, table: false }).rows, undefined);
  assert.equal(char.qk(0, 0, { k: 1, table: false }).shown, undefined);
  assert.equal(char.ov(0, 0, { k: 1, table: false, top: 5 }).rows.length, 5);
  // @ts-expect-error: a sort there is not
  throwsReadable(() => char.qk(0, 0, { sort: 'token' }), /table sort must be 'none', 'row', 'col' or 'both', got 'token'/, 'a bad sort');
  throwsReadable(() => char.ov(0, 0, { top: -1 }), /top must be 0 \(every row and column\) or more, got -1/, 'a negative top');
});

test('eigenvalues: they sum to the table\'s trace, come in conjugate pairs, and copying is Re(sum)/sum|.|', () => {
  for (const [l, h] of [[0, 0], [1, 2]]) {
    const e = char.eigen(l, h);
    for (const [kind, table] of /** @type {['ov' | 'qk', import('../../wasm/circuitscope.js').Tagged<Float32Array>][]} */ ([['ov', char.ov(l, h).table], ['qk', char.qk(l, h).table]])) {
      const s = e[kind];
      const V = table.shape[0];
      let trace = 0;
      for (let i = 0; i < V; i++) trace += table.data[i * V + i];
      const sumRe = s.re.reduce((x, y) => x + y, 0);
      const sumIm = s.im.reduce((x, y) => x + y, 0);
      const sumAbs = s.re.reduce((acc, re, i) => acc + Math.hypot(re, s.im[i]), 0);
      close(sumRe, trace, 1e-4 * sumAbs, `L${l}H${h} ${kind}: sum of eigenvalues = trace`);
      close(sumIm, 0, 1e-6 * sumAbs, `L${l}H${h} ${kind}: imaginary parts cancel`);
      close(s.copying, sumRe / sumAbs, 1e-9, `L${l}H${h} ${kind}: copying score`);
      for (let i = 1; i < s.re.length; i++) {
        assert.ok(Math.hypot(s.re[i - 1], s.im[i - 1]) >= Math.hypot(s.re[i], s.im[i]) - 1e-9, 'by decreasing |lambda|');
      }
    }
  }
  const sp = char.spectra();
  close(sp.ov.copying.data[1 * 4 + 2], char.eigen(1, 2).ov.copying, 1e-6, 'spectra() agrees with eigen()');
});

test('composition: all zeros for a 1-layer model; char-2l has scores only from layer 0 to layer 1', () => {
  const one = ioi.composition({ samples: 50 });
  assert.ok(one.scores.data.every((x) => x === 0), '1-layer composition is zero');
  assert.ok(one.baseline > 0 && one.baseline < 1);
  const c = char.composition();
  const { n_layers: L, n_heads: H } = char.config;
  let positive = 0;
  for (let k = 0; k < 3; k++) {
    for (let l1 = 0; l1 < L; l1++) {
      for (let h1 = 0; h1 < H; h1++) {
        for (let l2 = 0; l2 < L; l2++) {
          for (let h2 = 0; h2 < H; h2++) {
            const x = api.at(c.scores, k, l1, h1, l2, h2);
            if (l1 >= l2) assert.equal(x, 0);
            else if (x > 0) positive++;
            assert.ok(x >= 0 && x <= 1);
          }
        }
      }
    }
  }
  assert.equal(positive, 3 * H * H, 'every earlier -> later pair has a score');
  assert.deepEqual(c.kinds, ['q', 'k', 'v']);
  // The induction circuit: the strongest K-composition runs from the layer-0 previous-token head
  // into the layer-1 induction head (first measured: L0H1 -> L1H2, 0.246 against a baseline of
  // 0.124 +- 0.007). The heads are found by their scores, so a retrained model still passes.
  const hsc = char.headScores();
  const prevHead = [0, 1, 2, 3].reduce((a, h) => (api.at(hsc.previous_token, 0, h) > api.at(hsc.previous_token, 0, a) ? h : a), 0);
  const indHead = [0, 1, 2, 3].reduce((a, h) => (api.at(hsc.prefix_matching, 1, h) > api.at(hsc.prefix_matching, 1, a) ? h : a), 0);
  let best = { v: -1 };
  for (let h1 = 0; h1 < H; h1++) {
    for (let h2 = 0; h2 < H; h2++) {
      const v = api.at(c.scores, 1, 0, h1, 1, h2);
      if (v > best.v) best = { v, h1, h2 };
    }
  }
  assert.deepEqual([best.h1, best.h2], [prevHead, indHead],
    `strongest K-composition L0H${best.h1} -> L1H${best.h2}; previous-token head L0H${prevHead}, induction head L1H${indHead}`);
  assert.ok(best.v > c.baseline + 10 * c.baseline_std, `K-composition ${best.v} vs baseline ${c.baseline} +- ${c.baseline_std}`);
  assert.equal(c.baseline_samples, 200);
});

test('headScores on char-2l: the best prefix-matching head scores above 0.3 and copies', () => {
  const s = char.headScores();
  const best = api.argmax(s.prefix_matching);
  // First measured: L1H2, 0.640 with the defaults (L 80, batch 16, seed 0); 0.638-0.642 over seeds 0-3.
  assert.ok(best.value > 0.3, `best prefix-matching score ${best.value}`);
  assert.equal(best.index[0], 1, 'the induction head is in layer 1');
  assert.ok(api.at(s.copying, ...best.index) > 0.5, 'the induction head copies');
  // Layer-0 heads do not do induction; L0H1 is a previous-token head.
  for (let h = 0; h < 4; h++) assert.ok(api.at(s.prefix_matching, 0, h) < 0.1);
  assert.ok(api.argmax(s.previous_token).value > 0.5);
  assert.deepEqual(s.tokens.shape, [16, 2 * s.L + 1]);
  assert.equal(s.first, 2, 'skips <BOS> and <UNK>');
});

test('topK agrees with softmax of run()\'s logits; ablate\'s clean and intervened runs agree with run()', () => {
  const r = char.run(TEXT);
  const V = char.config.d_vocab;
  const T = r.tokens.length;
  const k = 4;
  const top = char.topK(TEXT, k);
  for (const t of [0, 10, T - 1]) {
    const row = Array.from(r.logits.data.subarray(t * V, (t + 1) * V));
    const m = Math.max(...row);
    const z = row.reduce((acc, x) => acc + Math.exp(x - m), 0);
    const order = row.map((x, i) => [x, i]).sort((a, b) => b[0] - a[0]);
    for (let j = 0; j < k; j++) {
      assert.equal(api.at(top.ids, t, j), order[j][1], `pos ${t} rank ${j}`);
      close(api.at(top.probs, t, j), Math.exp(order[j][0] - m) / z, 1e-5, `pos ${t} rank ${j} probability`);
    }
  }

  const iv = { ablate: [{ layer: 1, head: 2 }, { layer: 0, head: 1, mean: new Float32Array(64).fill(0.01) }] };
  const ab = char.ablate(TEXT, iv);
  const ivRun = char.run(TEXT, iv);
  assert.ok(relMaxDiff(ab.logits.data, ivRun.logits.data) < 1e-6, 'ablate logits = run under the intervention');
  for (let i = 0; i < ab.logits.data.length; i++) {
    close(ab.logits_delta.data[i], ivRun.logits.data[i] - r.logits.data[i], 1e-4, 'logits_delta');
  }
  for (let t = 0; t < T - 1; t++) close(ab.per_token.data[t], ivRun.loss.data[t], 1e-4, `per_token ${t}`);
  const meanClean = Array.from(r.loss.data.subarray(0, T - 1)).reduce((x, y) => x + y, 0) / (T - 1);
  close(ab.clean_loss, meanClean, 1e-4, 'clean loss');
  close(ab.loss_delta, ab.loss - ab.clean_loss, 1e-9, 'loss delta');
  assert.equal(ab.icl_late, T - 2);
  close(ab.icl, ab.per_token.data[ab.icl_late] - ab.per_token.data[ab.icl_early], 1e-5, 'icl score');
  // Ablating the induction head on repeated random tokens hurts the second copy.
  const hs = char.headScores({ batch: 4 });
  const [il, ih] = api.argmax(hs.prefix_matching).index;
  const induction = char.ablate(hs.tokens, { ablate: [{ layer: il, head: ih }] });
  assert.equal(induction.logits.shape[0], 4);
  assert.ok(induction.loss_delta > 0.1, `ablating L${il}H${ih} raises the loss on repeated tokens by ${induction.loss_delta}`);
});

test('run() into caller buffers: the same numbers, no new arrays; patterns and logits on request', () => {
  const { n_layers: L, n_heads: H, d_vocab: V, n_ctx: C } = char.config;
  const into = { patterns: new Float32Array(L * H * C * C), logits: new Float32Array(C * V), loss: new Float32Array(C) };
  const iv = { ablate: [{ layer: 0, head: 1 }] };
  for (const [text, intervention] of /** @type {[string, Intervention | undefined][]} */ ([[TEXT, undefined], ['short', iv], [TEXT.repeat(3), undefined]])) {
    const fresh = char.run(text, intervention);
    const T = fresh.tokens.length;
    const r = char.run(text, intervention, { into });
    for (const [k, n] of /** @type {['patterns' | 'logits' | 'loss', number][]} */ ([['patterns', L * H * T * T], ['logits', T * V], ['loss', T]])) {
      assert.equal(r[k].data.buffer, into[k].buffer, `${k}: a view of the caller's buffer`);
      assert.equal(r[k].data.byteOffset, 0, k);
      assert.equal(r[k].data.length, n, `${k}: exactly the result`);
      assert.deepEqual(r[k].shape, fresh[k].shape, k);
      assert.deepEqual(r[k].axes, fresh[k].axes, k);
      assert.deepEqual(Array.from(r[k].data), Array.from(fresh[k].data), `${k}: the same values as a fresh copy`);
    }
  }
  // One buffer given, the others copied as usual.
  const some = char.run(TEXT, undefined, { into: { loss: into.loss } });
  assert.equal(some.loss.data.buffer, into.loss.buffer);
  assert.notEqual(some.patterns.data.buffer, into.patterns.buffer);
  // Left out on request; the loss always comes.
  const bare = char.run(TEXT, iv, { patterns: false, logits: false });
  assert.equal(bare.patterns, undefined);
  assert.equal(bare.logits, undefined);
  assert.deepEqual(Array.from(bare.loss.data), Array.from(char.run(TEXT, iv).loss.data));
  // Buffers that do not fit are refused before anything runs.
  throwsReadable(() => char.run(TEXT, undefined, { into: { patterns: new Float32Array(10) } }), /run: options\.into\.patterns holds 10 floats, \d+ are needed for \d+ tokens/, 'a short buffer');
  // @ts-expect-error: not a Float32Array
  throwsReadable(() => char.run(TEXT, undefined, { into: { loss: new Float64Array(C) } }), /options\.into\.loss must be a Float32Array/, 'not a Float32Array');
  // @ts-expect-error: a buffer run() does not have
  throwsReadable(() => char.run(TEXT, undefined, { into: { resid: new Float32Array(10) } }), /unknown buffer "resid"/, 'an unknown buffer');
  // @ts-expect-error: not an object
  throwsReadable(() => char.run(TEXT, undefined, { into: [] }), /options\.into must be an object/, 'an array');
});

test('typing: a run after the same model\'s run under the same intervention computes from the first changed token and gives a fresh run\'s results', () => {
  const opts = { topk: 5, textScores: true, logits: true };
  const texts = [TEXT.slice(0, 21), TEXT.slice(0, 30), TEXT.slice(0, 30).replace('time', 'tame'), TEXT.slice(0, 12), TEXT];
  const ablate = { ablate: [{ layer: 0, head: 0 }], ablateMlp: [] };
  // Full passes, first: each in a session of its own.
  const freshRun = (t, iv) => {
    const own = cs.load(charBytes);
    try {
      const f = own.run(t, iv, opts);
      assert.equal(f.changed_from, 0);
      return f;
    } finally {
      own.delete();
    }
  };
  const fresh = texts.map((t) => freshRun(t, undefined));
  const freshAblated = texts.map((t) => freshRun(t, ablate));
  const other = cs.load(charBytes);
  try {
    char.run(TEXT.slice(0, 20), undefined, opts);
    char.run(TEXT.slice(0, 20), ablate, opts);
    const typed = texts.map((next, i) => {
      // The ablated pass and the clean pass in turn, as the induction view makes them with a
      // head ablated: each intervention's kept pass is its own.
      const a = char.run(next, ablate, opts);
      const r = char.run(next, undefined, opts);
      for (const k of ['logits', 'patterns', 'loss', 'top_ids', 'top_probs']) {
        assert.deepEqual(Array.from(r[k].data), Array.from(fresh[i][k].data), `${k} after typing "${next}"`);
        assert.deepEqual(Array.from(a[k].data), Array.from(freshAblated[i][k].data), `${k} after typing "${next}" with L0H0 ablated`);
      }
      assert.equal(a.changed_from, r.changed_from);
      return r.changed_from;
    });
    // <BOS> + characters: the first changed token's position (at least the last position is
    // computed, so a text cut short recomputes its last token).
    assert.deepEqual(typed, [21, 22, TEXT.indexOf('time') + 2, 12, 13]);
    // A path cut is applied to every position: its passes are whole.
    const cut = /** @type {Intervention} */ ({ cut: [{ from: [0, 0], to: [1, 0], input: 'k' }] });
    char.run(TEXT.slice(0, 20), cut, opts);
    assert.equal(char.run(TEXT.slice(0, 21), cut, opts).changed_from, 0);
    // Another model's run drops this model's kept passes.
    char.run(TEXT.slice(0, 20), undefined, opts);
    other.run('x', undefined, { patterns: false, logits: false });
    assert.equal(char.run(TEXT.slice(0, 21), undefined, opts).changed_from, 0);
  } finally {
    other.delete();
  }
});

test('run({probsOf}): the probabilities of given tokens equal those of the full vocabulary', () => {
  const abl = char.run(TEXT, { ablate: [{ layer: 1, head: 0 }] }, { topk: 5, patterns: false, logits: false });
  const clean = char.run(TEXT, undefined, { probsOf: abl.top_ids.data, patterns: false, logits: false });
  const all = char.run(TEXT, undefined, { topk: char.config.d_vocab, patterns: false, logits: false });
  const T = abl.tokens.length, V = char.config.d_vocab;
  assert.deepEqual(clean.probs_of.shape, [T, 5]);
  for (let t = 0; t < T; t++)
    for (let j = 0; j < 5; j++) {
      const id = abl.top_ids.data[t * 5 + j];
      const row = all.top_ids.data.subarray(t * V, (t + 1) * V);
      assert.ok(Math.abs(clean.probs_of.data[t * 5 + j] - all.top_probs.data[t * V + row.indexOf(id)]) < 1e-6, `position ${t}, token ${id}`);
    }
  throwsReadable(() => char.run(TEXT, undefined, { probsOf: [1, 2, 3] }), /probsOf holds 3 ids, not \d+ rows of 0/, 'a table of the wrong size');
  throwsReadable(() => char.run('ab', undefined, { probsOf: [1, 2, 3, 99999, 4, 5] }), /outside the vocabulary/, 'an unknown id');
});

test('analyseText(): the induction view\'s call equals tokenize({fit}), run() and the clean run({probsOf}) asked one by one', () => {
  const iv = { ablate: [{ layer: 1, head: 0 }] };
  const C = char.config.n_ctx;
  const text = `${TEXT} \u00e9`.repeat(8);   // longer than the context, with a character char-2l lacks
  const into = { patterns: new Float32Array(char.config.n_layers * char.config.n_heads * C * C), loss: new Float32Array(C), cleanLoss: new Float32Array(C) };
  const a = char.analyseText(text, iv, { at: 40, topk: 5, into });
  const fit = char.tokenize(text, { fit: true });
  assert.deepEqual(a.ids, fit.ids);
  assert.deepEqual([a.begins, a.ends, a.bos, a.truncated], [fit.begins, fit.ends, fit.bos, fit.truncated]);
  assert.ok(a.truncated > 0);
  assert.equal(a.unknown, Array.from(a.ids).filter((id) => id === a.unk_id).length);
  assert.ok(a.unknown > 0 && a.unk_id === char.tokenizer.vocab.indexOf('<UNK>'));
  assert.deepEqual(a.bytes, char.tokenBytes(a.ids));
  assert.equal(a.run.patterns.data.buffer, into.patterns.buffer, 'the patterns are written into the caller\'s buffer');
  assert.equal(a.clean.loss.data.buffer, into.cleanLoss.buffer);
  // The separate calls, on a fresh copy of the model (no kept pass to start from).
  const other = cs.load(charBytes);
  try {
    const r = other.run(a.ids, iv, { logits: false, textScores: true, repeatAt: 40, topk: 5, topKeys: 3 });
    const clean = other.run(a.ids, undefined, { logits: false, patterns: false, probsOf: r.top_ids.data });
    assert.deepEqual(a.run.patterns.data, r.patterns.data);
    assert.deepEqual(a.run.loss.data, r.loss.data);
    assert.deepEqual(a.run.top_ids.data, r.top_ids.data);
    assert.deepEqual(a.run.text_scores, r.text_scores);
    assert.deepEqual(a.run.repeat, r.repeat);
    assert.deepEqual(a.run.top_keys, r.top_keys);
    // top_keys: each pattern row's three largest weights, the earlier key on a tie.
    const T = a.ids.length, rows = r.patterns.data.length / T;
    assert.deepEqual(r.top_keys.shape, [char.config.n_layers, char.config.n_heads, T, 3]);
    for (let row = 0; row < rows; row += 37) {
      const q = row % T, P = r.patterns.data.subarray(row * T, (row + 1) * T);
      const want = Array.from({ length: q + 1 }, (_, k) => k).sort((x, y) => P[y] - P[x] || x - y).slice(0, 3);
      while (want.length < 3) want.push(-1);
      assert.deepEqual(Array.from(r.top_keys.data.subarray(row * 3, row * 3 + 3)), want, `row ${row}`);
    }
    assert.ok(a.run.repeat.a <= 40 && 40 < a.run.repeat.a + a.run.repeat.d + a.run.repeat.r, 'the block holding position 40');
    assert.deepEqual(a.clean.loss.data, clean.loss.data);
    assert.deepEqual(a.clean.probs_of.data, clean.probs_of.data);
    assert.equal(a.clean.mean_loss, clean.mean_loss);
  } finally {
    other.delete();
  }
  // {lastRow: false} (what the view asks while typing): the last token's top k and the clean
  // pass's probabilities of them left out, every other row as above; asked again with it (only
  // that row computed, in the kept passes) or with `at` on the last token, the whole analysis.
  const T = a.ids.length, K = 5;
  const full = { ids: Array.from(a.run.top_ids.data), probs: Array.from(a.run.top_probs.data), clean: Array.from(a.clean.probs_of.data), loss: Array.from(a.run.loss.data) };
  const lazy = char.analyseText(text, iv, { at: 40, lastRow: false });
  assert.equal(lazy.run.last_row, false);
  assert.deepEqual(Array.from(lazy.run.loss.data), full.loss);
  assert.deepEqual(Array.from(lazy.run.top_ids.data.subarray(0, (T - 1) * K)), full.ids.slice(0, (T - 1) * K));
  assert.deepEqual(Array.from(lazy.run.top_probs.data.subarray(0, (T - 1) * K)), full.probs.slice(0, (T - 1) * K));
  assert.deepEqual(Array.from(lazy.clean.probs_of.data.subarray(0, (T - 1) * K)), full.clean.slice(0, (T - 1) * K));
  assert.deepEqual(Array.from(lazy.run.top_ids.data.subarray((T - 1) * K)), [-1, -1, -1, -1, -1]);
  assert.ok([...lazy.run.top_probs.data.subarray((T - 1) * K), ...lazy.clean.probs_of.data.subarray((T - 1) * K)].every(Number.isNaN));
  for (const again of [char.analyseText(text, iv, { at: 40, lastRow: true }), char.analyseText(text, iv, { at: T - 1, lastRow: false })]) {
    assert.equal(again.run.last_row, true);
    assert.equal(again.run.changed_from, T - 1, 'the same text: only the last position computed again');
    assert.deepEqual([Array.from(again.run.top_ids.data), Array.from(again.run.top_probs.data), Array.from(again.clean.probs_of.data)], [full.ids, full.probs, full.clean]);
  }
  // Without an intervention there is no clean pass to compare with (a text of no tokens runs no pass: the core test).
  assert.equal(char.analyseText(TEXT).clean, null);
  throwsReadable(() => char.analyseText(TEXT, undefined, { into: { patterns: new Float32Array(4) } }), /into.patterns holds 4 floats/, 'a short buffer');
  throwsReadable(() => char.analyseText(TEXT, undefined, { topk: -1 }), /topk must be 0 or more/, 'a negative topk');
  throwsReadable(() => char.analyseText(TEXT, undefined, /** @type {any} */ ({ depth: 2 })), /unknown option "depth"/, 'an unknown option');
  throwsReadable(() => char.analyseText(/** @type {any} */ (42)), /expected a string/, 'not a string');
});

test('analyseText() into one buffer, edit after edit: the patterns equal a fresh pass\'s (rows before the first change are written only once)', () => {
  const { n_layers: L, n_heads: H, n_ctx: C } = char.config;
  const into = { patterns: new Float32Array(L * H * C * C) }, other = { patterns: new Float32Array(L * H * C * C) };
  const ivs = [undefined, { ablate: [{ layer: 1, head: 0 }] }];
  const fresh = cs.load(charBytes);
  let seed = 7;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor(seed / 65536) % n; };
  const letters = 'the cat sat on a mat. ';
  let text = 'the cat sat on the mat. the cat';
  let rowsOnly = 0, prev = null;
  const shown = [];
  try {
    for (let step = 0; step < 60; step++) {
      const at = rand(text.length + 1), ch = letters[rand(letters.length)];
      const edit = rand(5);
      if (edit === 0) text += ch;
      else if (edit === 1) text = text.slice(0, -1) + ch;   // as many tokens
      else if (edit === 2 && text.length > 4) text = text.slice(0, -1);
      else if (edit === 3) text = text.slice(0, at) + ch + text.slice(at + 1);   // as many tokens, changed in the middle
      else text = text.slice(0, at) + ch + text.slice(at);
      const iv = ivs[rand(5) === 0 ? 1 : 0];
      const between = rand(8) === 0;
      if (between) char.run(text, iv, { patterns: false });   // the kept pass moves on: the buffer's rows are not its
      const buffers = rand(8) === 0 ? other : into;
      const a = char.analyseText(text, iv, { into: buffers, lastRow: rand(2) === 0 });
      assert.equal(a.run.patterns.data.buffer, buffers.patterns.buffer);
      // Compared after the edits: another model's pass would drop this one's kept passes.
      shown.push({ ids: a.ids, iv, patterns: a.run.patterns.data.slice() });
      const T = a.ids.length;
      if (!between && prev && prev.buffers === buffers && prev.T === T && prev.iv === iv && a.run.changed_from > 0) rowsOnly++;
      prev = { buffers, T, iv };
    }
    // A pass between two calls into the same buffer (as many tokens, the same intervention) whose
    // tokens the second call's agree with: the buffer's rows are the first call's, not that pass's.
    char.analyseText('the cat sat on the mat', undefined, { into });
    char.run('the dog sat on the mat', undefined, { patterns: false });
    const b = char.analyseText('the dog sat on the mat', undefined, { into });
    shown.push({ ids: b.ids, iv: undefined, patterns: b.run.patterns.data.slice() });
    shown.forEach(({ ids, iv, patterns }, step) => {
      const want = fresh.run(ids, iv, { logits: false }).patterns.data;
      assert.ok(Buffer.from(patterns.buffer).equals(Buffer.from(want.buffer, want.byteOffset, want.byteLength)), `step ${step}: the patterns differ from a fresh pass's`);
    });
  } finally {
    fresh.delete();
  }
  assert.ok(rowsOnly >= 5, `calls that wrote only the changed rows: ${rowsOnly}`);
});

test('a shipped recipe with its files written in trains the shipped model\'s tokenizer; fewer steps drop later snapshots', () => {
  const recipe = JSON.parse(readFileSync(path.join(root, 'models', 'recipes', 'char-1l-smeared.json'), 'utf8'));
  assert.deepEqual(cs.recipeFiles(recipe), ['../corpus/train.txt']);
  assert.deepEqual(cs.recipeFiles(JSON.stringify({ tokenizer: { kind: 'ioi_symbolic' }, data: { kind: 'ioi_symbolic' } })), []);
  const text = readFileSync(path.join(root, 'models', 'corpus', 'train.txt'), 'utf8');
  const inline = cs.recipeWithTexts(recipe, { '../corpus/train.txt': text });
  assert.equal(inline.data.text, text);
  assert.equal(inline.tokenizer.text, text);
  assert.equal(inline.data.path, '../corpus/train.txt', 'the path stays: the model file records it');
  const short = cs.recipeWithSteps(inline, 40);
  assert.equal(short.steps, 40);
  assert.deepEqual(short.snapshots, [0]);
  const shipped = cs.load(readFileSync(path.join(root, 'models', 'char-1l-smeared.safetensors')));
  const tr = cs.trainer({ ...short, batch_size: 2 });
  try {
    tr.step();
    const m = cs.load(tr.save());
    try {
      assert.deepEqual(m.tokenizer.vocab, shipped.tokenizer.vocab, 'the vocabulary built from the text is the shipped model\'s');
      const recorded = /** @type {any} */ (m.info.recipe);
      assert.ok(recorded.data.path === '../corpus/train.txt' && !('text' in recorded.data) && !('text' in recorded.tokenizer),
        'the model file records where the text came from, not the text');
    } finally {
      m.delete();
    }
  } finally {
    tr.delete();
    shipped.delete();
  }
  throwsReadable(() => cs.recipeWithTexts(recipe, {}), /^recipe: tokenizer\.corpus names the file \.\.\/corpus\/train\.txt, whose text was not given$/, 'a missing file');
  // @ts-expect-error: a text that is not a string
  throwsReadable(() => cs.recipeWithTexts(recipe, { '../corpus/train.txt': 3 }), /the text of \.\.\/corpus\/train\.txt is not a string/, 'a text that is not a string');
  throwsReadable(() => cs.recipeFiles('{"steps": 1,'), /^recipe: not valid JSON/, 'bad JSON');
  throwsReadable(() => cs.recipeWithSteps(recipe, 0), /^recipe: steps must be from 1 to 10000000, got 0/, 'no steps');
  assert.throws(() => cs.recipeWithSteps(recipe, 2.5), /steps must be a whole number, got 2\.5/);
});

test('a trainer\'s headScores() equals headScores() of the model it saves', () => {
  /** @type {Recipe} */
  const recipe = {
    name: 'scores', model: { n_layers: 2, n_heads: 2, d_model: 32, d_head: 16, n_ctx: 48, pos_embed: 'shortformer' },
    tokenizer: { kind: 'synthetic', size: 48 }, data: { kind: 'repeated_segment', seq_len: 48, min_len: 8, max_len: 23 },
    optimizer: { lr: 0.01 }, schedule: { kind: 'constant', warmup_steps: 5 }, steps: 10, batch_size: 8, seed: 3,
  };
  const tr = cs.trainer(recipe);
  try {
    tr.step(3);
    const a = tr.headScores({ batch: 8, seed: 18 });
    const m = cs.load(tr.save());
    try {
      const b = m.headScores({ batch: 8, seed: 18 });
      for (const k of ['previous_token', 'duplicate_token', 'prefix_matching', 'copying', 'tokens']) {
        assert.deepEqual(a[k].shape, b[k].shape, k);
        assert.deepEqual(Array.from(a[k].data), Array.from(b[k].data), k);
      }
      for (const k of ['L', 'batch', 'seed', 'first', 'n', 'bos']) assert.equal(a[k], b[k], k);
      assert.deepEqual(a.prefix_matching.shape, [2, 2]);
      assert.equal(a.first, 1, 'skips <BOS>');
      assert.equal(a.L, 23, 'the longest segment that fits n_ctx 48');
    } finally {
      m.delete();
    }
    throwsReadable(() => tr.headScores({ L: 30 }), /headScores: 2L \+ 1: 61 tokens is longer than the model's context of 48 tokens/, 'L too long');
    // @ts-expect-error: an option headScores does not have
    throwsReadable(() => tr.headScores({ bogus: 1 }), /headScores: unknown option "bogus"/, 'unknown option');
  } finally {
    tr.delete();
  }
});

test('run under an intervention: every head ablated leaves only the direct path W_E[token] W_U', () => {
  const { tensors } = readSafetensors(charBytes);
  const WE = whole(tensors['embed.W_E']);
  const WU = whole(tensors['unembed.W_U']);
  const ablateAll = [];
  for (let l = 0; l < 2; l++) for (let h = 0; h < 4; h++) ablateAll.push({ layer: l, head: h });
  const r = char.run('hello', { ablate: ablateAll }, { resid: true, result: true });
  const V = char.config.d_vocab;
  const D = char.config.d_model;
  for (let t = 0; t < r.tokens.length; t++) {
    const row = mat(1, D, WE.data.subarray(r.tokens[t] * D, (r.tokens[t] + 1) * D));
    const expected = matmul(row, WU).data;
    assert.ok(relMaxDiff(r.logits.data.subarray(t * V, (t + 1) * V), expected) < 1e-5, `pos ${t}`);
  }
  assert.ok(r.result.data.every((x) => x === 0), 'ablated heads output zero');
  // Without intervention: resid_post = resid_pre + sum of head results (no biases), and the last
  // stage unembeds to the logits.
  const c = char.run('hello', undefined, { resid: true, result: true });
  const T = c.tokens.length;
  for (let l = 0; l < 2; l++) {
    for (let t = 0; t < T; t++) {
      for (let d = 0; d < D; d++) {
        let s = api.at(c.resid, l, t, d);
        for (let h = 0; h < 4; h++) s += api.at(c.result, l, h, t, d);
        close(api.at(c.resid, l + 1, t, d), s, 1e-4, `resid stage ${l + 1} pos ${t}`);
      }
    }
  }
  const final = mat(T, D, c.resid.data.subarray(2 * T * D));
  assert.ok(relMaxDiff(c.logits.data, matmul(final, WU).data) < 1e-5, 'last stage x W_U = logits');
  // removePos changes a shortformer model's attention but not its direct path.
  const noPos = char.run('hello', { removePos: true });
  assert.ok(relMaxDiff(noPos.patterns.data, c.patterns.data) > 1e-3);
});

test('IOI: ioi-1l2h solves all 60 sequences; the analysis adds up; cuts and ablations are data', () => {
  const e = ioi.ioiEvaluate();
  assert.equal(e.n, 60);
  assert.equal(e.accuracy, 1);
  assert.equal(e.correct, 60);
  assert.ok(e.mean_logit_diff > 1, `mean logit diff ${e.mean_logit_diff}`);
  const seqs = ioi.ioiSequences();
  const all = ioi.ioi();
  for (let i = 0; i < 60; i++) {
    const a = all[i];
    assert.deepEqual(Array.from(a.tokens), Array.from(seqs.data.subarray(i * 5, i * 5 + 5)));
    assert.equal(a.predicted, a.io);
    assert.equal(e.predicted.data[i], a.predicted);
    close(e.logit_diff.data[i], a.logit_diff, 1e-4, `sequence ${i} logit diff`);
    const parts = a.head_diff.data.reduce((x, y) => x + y, 0) + a.direct_diff + a.bias_diff;
    close(parts, a.logit_diff, 1e-3, `sequence ${i}: heads + direct + bias = logit diff`);
    close(a.lens.logit_io.data[1] - a.lens.logit_s.data[1], a.logit_diff, 1e-3, 'the logit lens ends at the logits');
  }
  // One sequence by text, checked against run().
  const a = ioi.ioi('C D D <MID>');
  const r = ioi.run('C D D <MID>');
  const V = ioi.config.d_vocab;
  assert.equal(a.io, ioi.tokenizer.vocab.indexOf('C'));
  assert.equal(a.s, ioi.tokenizer.vocab.indexOf('D'));
  close(a.logit_io, r.logits.data[4 * V + a.io], 1e-4, 'logit of IO');
  // Ablating both heads breaks the task; the intervention reaches ioiEvaluate.
  const broken = ioi.ioiEvaluate({ ablate: [{ layer: 0, head: 0 }, { layer: 0, head: 1 }] });
  assert.ok(broken.accuracy < 0.5, `accuracy with both heads ablated ${broken.accuracy}`);
  // cutComposition: nothing to cut in one layer; every layer-0 -> layer-1 pair in two.
  assert.deepEqual(ioi.cutComposition('v'), { ablate: [], ablateMlp: [], cut: [], removePos: false, ablation: 'zero' });
  const cuts = char.cutComposition('k');
  assert.equal(cuts.cut.length, 16);
  assert.ok(cuts.cut.every((c) => c.input === 'k' && c.from[0] === 0 && c.to[0] === 1));
  char.run(TEXT, cuts);  // the returned object is a valid intervention
  // A model of another vocabulary is refused with a sentence.
  throwsReadable(() => char.ioiEvaluate(), /IOI: .*vocabulary has 8 tokens .* this model's has 82/, 'ioiEvaluate on char-2l');
  throwsReadable(() => char.ioi(), /IOI: .*vocabulary has 8 tokens .* this model's has 82/, 'ioi() on char-2l');
  throwsReadable(() => ioi.ioi('A B C <MID>'), /IOI: a sequence must name one person once/, 'not an IOI sequence');
});

test('IOI on sentence templates: the model carries its task; splits, names and padding are handled', () => {
  const m = cs.load(readFileSync(path.join(root, 'models', 'ioi-templates-2l.safetensors')));
  try {
    const task = m.ioiTask();
    assert.equal(task.kind, 'ioi_templates');
    assert.equal(task.names.length, 40);
    assert.equal(task.templates.length, 12);
    assert.equal(ioi.ioiTask(), null, 'a symbolic model has no task');
    assert.deepEqual([m.ioiKind(), ioi.ioiKind(), char.ioiKind()], ['templates', 'symbolic', null], 'which IOI task each model is for');
    assert.deepEqual([m.ioiNames(), ioi.ioiNames(), char.ioiNames()], [task.names, ['A', 'B', 'C', 'D', 'E', 'F'], []], 'the names ioi() reports');
    // Held-out templates are solved (REPORT.md); the split reaches the evaluation.
    const held = m.ioiEvaluate(undefined, 'held-out templates');
    assert.ok(held.accuracy > 0.9, `held-out templates ${held.accuracy}`);
    const seqs = m.ioiSequences('train');
    assert.equal(seqs.shape[0], 2000);
    assert.ok(Array.from(seqs.data).includes(1), 'short sentences are padded with <PAD>');
    // One sentence by text, in both orders: IO and S are found among the names only.
    const vocab = m.tokenizer.vocab;
    for (const text of ['When Mary and John went to the store, John gave a drink to',
      'When John and Mary went to the store, John gave a drink to']) {
      const a = m.ioi(text);
      assert.equal(vocab[a.io], 'Mary', text);
      assert.equal(vocab[a.s], 'John', text);
      assert.equal(vocab[a.predicted], 'Mary', text);
      const parts = a.head_diff.data.reduce((x, y) => x + y, 0) + a.direct_diff + a.bias_diff;
      close(parts, a.logit_diff, 1e-3, 'heads + direct + bias = logit diff');
    }
    // ioi() over the split trims each row's padding and analyses its last word.
    const all = m.ioi();
    assert.equal(all.length, m.ioiEvaluate().n);
    assert.ok(all.every((a) => a.tokens[a.tokens.length - 1] !== 1 && vocab[a.tokens[a.tokens.length - 1]] === 'to'));
    throwsReadable(() => m.ioi('When Mary and Zorro went to the store, Zorro gave a drink to'), /unknown word "Zorro"/, 'unknown name');
    throwsReadable(() => m.ioi('When Mary and John went to the store, Mary gave a drink to John and'), /IOI: the sentence must name one person once/, 'no IO');
    // @ts-expect-error: a split there is not
    throwsReadable(() => m.ioiEvaluate(undefined, 'test'), /IOI split must be/, 'bad split');
  } finally {
    m.delete();
  }
});

test('skipTrigrams read their qk and ov values from the full tables; corpusStats matches hand counts', () => {
  const st = ioi.skipTrigrams(0, 1, { k: 8 });
  assert.equal(st.top.length, 8);
  const qk = ioi.qk(0, 1).table;
  const ov = ioi.ov(0, 1).table;
  for (const t of st.top) {
    close(t.qk, api.at(qk, t.dest, t.source), 1e-4 * Math.abs(t.qk) + 1e-5, 'skip-trigram qk');
    close(t.ov, api.at(ov, t.source, t.out), 1e-4 * Math.abs(t.ov) + 1e-5, 'skip-trigram ov');
  }
  for (let i = 1; i < st.top.length; i++) assert.ok(st.top[i - 1].score >= st.top[i].score);

  // Stream 2 3 2 4 2 3 over V = 8: bigram rows of 2 are {3: 2/3, 4: 1/3}; 3 -> 2; 4 -> 2.
  const cstats = ioi.corpusStats([2, 3, 2, 4, 2, 3], { window: 1, leadingTerms: true, interchange: true });
  close(api.at(cstats.bigram, 2, 3), 2 / 3, 1e-6, 'B[2,3]');
  close(api.at(cstats.bigram, 2, 4), 1 / 3, 1e-6, 'B[2,4]');
  close(api.at(cstats.bigram, 3, 2), 1, 1e-6, 'B[3,2]');
  close(api.at(cstats.bigram, 0, 0), 0, 0, 'unseen row is zero');
  // Interchange B^T B: column 2 of B is (0,0,0,1,1,...) -> I[2,2] = 2.
  close(api.at(cstats.interchange, 2, 2), 2, 1e-6, 'I[2,2]');
  assert.ok(cstats.direct_path_cosine >= -1 && cstats.direct_path_cosine <= 1);
  assert.deepEqual(cstats.ov_cosine.shape, [1, 2]);
  assert.deepEqual(cstats.ov_leading_term.shape, [8, 8]);
  // B^T B only when asked: it costs V^3 and no cosine needs it.
  const plain = ioi.corpusStats([2, 3, 2, 4, 2, 3], { window: 1 });
  assert.equal(plain.interchange, undefined);
  assert.equal(plain.direct_path_cosine, cstats.direct_path_cosine);
  // Text: tokenized without the leading <BOS>.
  const fromText = char.corpusStats('abab');
  const a = char.tokenize('a').ids.at(-1);
  const b = char.tokenize('b').ids.at(-1);
  close(api.at(fromText.bigram, a, b), 1, 1e-6, 'text bigram a -> b');
  close(api.at(fromText.bigram, 0, a), 0, 0, 'no <BOS> in the stream');
});

test('tokenize({fit}): past the context, the <BOS> and the newest tokens, as the views run a long text', () => {
  const n = char.config.n_ctx;
  const text = 'Twinkle, twinkle, little star. '.repeat(20);
  const all = char.tokenize(text);
  assert.equal(all.bos, 1);
  assert.equal(all.truncated, 0);
  assert.ok(all.ids.length > n + 10);
  const fit = char.tokenize(text, { fit: true });
  const from = all.ids.length - (n - 1);
  assert.equal(fit.truncated, from - 1);
  assert.equal(fit.bos, 1);
  for (const k of ['ids', 'begins', 'ends']) {
    assert.equal(fit[k].length, n);
    assert.deepEqual(Array.from(fit[k]), [all[k][0], ...all[k].subarray(from)], k);
  }
  const short = char.tokenize('abc', { fit: true });
  assert.deepEqual([short.ids.length, short.truncated, short.bos], [4, 0, 1]);
  assert.throws(() => char.tokenize(text, /** @type {any} */ ({ fits: true })), /tokenize: unknown option "fits"/);
});

test('save() gives bytes that load back into the same model', () => {
  const bytes = char.save();
  assert.ok(bytes instanceof Uint8Array && bytes.length > 1000);
  const again = cs.load(bytes);
  try {
    assert.deepEqual(again.config, char.config);
    assert.deepEqual(again.tokenizer, char.tokenizer);
    assert.deepEqual(Array.from(again.run(TEXT).logits.data), Array.from(char.run(TEXT).logits.data));
  } finally {
    again.delete();
  }
});

test('bad files and bad arguments throw Errors with a readable sentence', () => {
  throwsReadable(() => cs.load(new Uint8Array([1, 2, 3])), /^model file: /, 'a 3-byte file');
  const corrupt = Uint8Array.from(charBytes);
  corrupt[20] ^= 0xff;  // inside the JSON header
  throwsReadable(() => cs.load(corrupt), /^model file: /, 'a corrupt header');
  throwsReadable(() => cs.load(charBytes.subarray(0, charBytes.length - 100)), /^model file: /, 'a truncated file');
  // @ts-expect-error: not bytes
  throwsReadable(() => cs.load('not bytes'), /load: expected the model file/, 'a string');

  throwsReadable(() => char.qk(2, 0), /no head L2H0 in a model with 2 layer\(s\) of 4 head\(s\)/, 'bad layer');
  throwsReadable(() => char.ov(0, -1), /no head L0H-1/, 'bad head');
  throwsReadable(() => char.eigen(0, 1.5), /eigen: head must be an integer, got 1\.5/, 'fractional head');
  // @ts-expect-error: a string layer
  throwsReadable(() => char.qk('0', 0), /qk: layer must be an integer, got "0"/, 'a string layer');
  throwsReadable(() => char.skipTrigrams(0, 7), /no head L0H7/, 'skip-trigrams head');
  throwsReadable(() => ioi.posQk(0, 5), /no head L0H5/, 'posQk head');
  // @ts-expect-error: an option qk does not have
  throwsReadable(() => char.qk(0, 0, { K: 3 }), /qk: unknown option "K"/, 'an unknown option');
  throwsReadable(() => char.topK(TEXT, 0), /top-k: k must be between 1 and the vocabulary size 82, got 0/, 'k = 0');
  throwsReadable(() => char.headScores({ L: 200 }), /longer than the model's context of 256/, 'L too long');

  // Interventions: bad shapes, indices and fields.
  throwsReadable(() => char.run(TEXT, { ablate: [{ layer: 5, head: 0 }] }), /intervention: there is no head L5H0 in a model with 2 layers of 4 heads/, 'ablate a missing head');
  // @ts-expect-error: no head
  throwsReadable(() => char.run(TEXT, { ablate: [{ layer: 0 }] }), /run: the intervention: ablate\[0\]\.head must be an integer, got undefined/, 'no head');
  throwsReadable(() => char.run(TEXT, { ablate: [{ layer: 0, head: 0, mean: new Float32Array(5) }] }), /the mean for L0H0 must have d_model \(64\) or n_ctx\*d_model values, got 5/, 'mean of the wrong length');
  // @ts-expect-error: ablate not an array
  throwsReadable(() => char.run(TEXT, { ablate: { layer: 0, head: 0 } }), /ablate must be an array/, 'ablate not an array');
  throwsReadable(() => char.run(TEXT, { cut: [{ from: [1, 0], to: [0, 0], input: 'q' }] }), /a path can only be cut from an earlier layer to a later one/, 'backwards cut');
  throwsReadable(() => char.run(TEXT, { cut: [{ from: [0, 0], to: [1, 9], input: 'q' }] }), /a path cut names a head that does not exist/, 'cut to a missing head');
  // @ts-expect-error: an input there is not
  throwsReadable(() => char.run(TEXT, { cut: [{ from: [0, 0], to: [1, 0], input: 'x' }] }), /cut\[0\]\.input must be 'q', 'k' or 'v', got "x"/, 'bad input');
  // @ts-expect-error: from not a pair
  throwsReadable(() => char.run(TEXT, { cut: [{ from: 0, to: [1, 0], input: 'q' }] }), /cut\[0\]\.from must be \[layer, head\]/, 'from not a pair');
  // @ts-expect-error: a misspelt field
  throwsReadable(() => char.run(TEXT, { ablations: [] }), /the intervention has an unknown field "ablations"/, 'misspelt field');
  // @ts-expect-error: not a boolean
  throwsReadable(() => char.run(TEXT, { removePos: 'yes' }), /removePos must be true or false/, 'removePos not a boolean');
  // @ts-expect-error: a string intervention
  throwsReadable(() => char.run(TEXT, 'ablate L0H0'), /the intervention must be an object/, 'a string intervention');
  throwsReadable(() => char.ablate(TEXT, { ablate: [{ layer: 9, head: 0 }] }), /no head L9H0/, 'ablate()');
  throwsReadable(() => ioi.ioiEvaluate({ cut: [{ from: [0, 0], to: [0, 1], input: 'k' }] }), /earlier layer to a later one/, 'ioiEvaluate()');
  throwsReadable(() => char.attribution(0, { tokens: TEXT, intervention: { ablate: [{ layer: 0, head: 8 }] } }), /no head L0H8/, 'attribution()');

  // Tokens: too long, out of range, empty, unknown words.
  throwsReadable(() => char.run('x'.repeat(300)), /run: 301 tokens is longer than the model's context of 256 tokens/, 'text too long');
  throwsReadable(() => ioi.run('A B B <MID> A'), /run: 6 tokens is longer than the model's context of 5 tokens/, 'IOI text too long');
  throwsReadable(() => char.run([0, 500]), /token id 500 at position 1/, 'id out of range');
  throwsReadable(() => char.run([0, 1.5]), /run: token id 1.5 at position 1 is not an integer/, 'fractional id');
  throwsReadable(() => char.run([]), /run: no tokens to run/, 'no tokens');
  throwsReadable(() => ioi.tokenize('A B Zed'), /Zed/, 'a word not in the vocabulary');
  throwsReadable(() => char.attribution(999), /attribution: position 999 is outside the sequence/, 'bad position');
  throwsReadable(() => ioi.posQk(0, 0, { k: -1 }), /top-k: k must be 0 or more, got -1/, 'negative k');

  const m = cs.load(ioiBytes);
  m.delete();
  throwsReadable(() => m.run('A B B <MID>'), /run: this model has been deleted/, 'after delete()');
  m.delete();  // twice is harmless
});

test('1,000 load / run / delete cycles leave the WASM heap flat', () => {
  const ids = char.tokenize(TEXT).ids;
  const cycle = () => {
    const m = cs.load(charBytes);
    m.run(ids);
    m.delete();
  };
  for (let i = 0; i < 5; i++) cycle();  // warm-up: the allocator reaches its working size
  const before = cs.memory();
  const heap8 = /** @type {{HEAP8: Int8Array}} */ (cs.module).HEAP8.length;
  for (let i = 0; i < 1000; i++) cycle();
  const after = cs.memory();
  assert.equal(after.heapSize, before.heapSize, `linear memory grew from ${before.heapSize} to ${after.heapSize} bytes`);
  assert.equal(/** @type {{HEAP8: Int8Array}} */ (cs.module).HEAP8.length, heap8);
  assert.equal(after.allocated, before.allocated, `malloc'd bytes went from ${before.allocated} to ${after.allocated}`);
  // A failed load leaks nothing either.
  for (let i = 0; i < 100; i++) assert.throws(() => cs.load(charBytes.subarray(0, 1000)));
  assert.equal(cs.memory().allocated, before.allocated, 'failed loads free what they allocated');
});

test('sampleText(): a word vocabulary with spaces and commas in some words still gets a starting text it can read', () => {
  const vocab = ['<BOS>', ...Array.from({ length: 30 }, (_, i) => (i % 3 ? `w${i}` : `two words ${i}`)), 'a,b'];
  /** @type {Recipe} */
  const recipe = {
    name: 'words', model: { n_layers: 1, n_heads: 2, d_model: 16, d_head: 8, n_ctx: 40 },
    tokenizer: { kind: 'word', vocab }, data: { kind: 'repeated_segment', seq_len: 40 },
    optimizer: { lr: 0.01 }, schedule: { kind: 'constant' }, steps: 1, batch_size: 2, seed: 1,
  };
  const tr = cs.trainer(recipe);
  const m = cs.load(tr.save());
  tr.delete();
  try {
    for (const seed of [0, 1, 2]) {
      const { text, tokens } = m.sampleText({ seed });
      assert.ok(text.length > 0, 'no starting text');
      const back = m.tokenize(text);
      assert.deepEqual(Array.from(back.ids), Array.from(tokens), `"${text}" does not read back as its tokens`);
      assert.equal(tokens.length, 1 + 2 * 12);
      for (const id of tokens.subarray(1)) assert.match(vocab[id], /^w\d+$/, `an untypable word in "${text}"`);
    }
    assert.deepEqual(m.sampleText({ seed: 5 }), m.sampleText({ seed: 5 }));
    throwsReadable(() => m.sampleText({ seed: -1 }), /sampleText: seed/, 'a negative seed');
    assert.equal(m.sampleText({ length: 15 }).tokens.length, 1 + 2 * 15, 'a length asked for');
    assert.equal(m.sampleText({ length: 40 }).tokens.length, 1 + 2 * 19, 'capped at (n_ctx - 1) / 2');
    // A character model (the induction view's inserted sequence): characters that show, R then R.
    const r = char.sampleText({ seed: 3, length: 20 });
    assert.equal([...r.segment].length, 20);
    assert.equal(r.text, r.segment + r.segment);
    assert.doesNotMatch(r.segment, /\s/);
    // @ts-expect-error: an option sampleText does not have
    throwsReadable(() => m.sampleText({ bogus: 1 }), /sampleText: unknown option "bogus"/, 'unknown option');
  } finally {
    m.delete();
  }
});

test('defaultHead(): the strongest induction head of the default head scores, the same object every time; null without layers', () => {
  const d = char.defaultHead();
  const hs = char.headScores();
  const pm = Array.from(hs.prefix_matching.data);
  const best = pm.indexOf(Math.max(...pm));
  const H = char.config.n_heads;
  assert.deepEqual({ layer: d.layer, head: d.head, name: d.name }, { layer: Math.floor(best / H), head: best % H, name: `L${Math.floor(best / H)}H${best % H}` });
  assert.equal(d.prefix_matching, pm[best]);
  assert.deepEqual(char.defaultHead(), d, 'the same head every call');
  assert.deepEqual(Array.from(char.headScores().prefix_matching.data), pm, 'the kept default scores are the ones computed');
  const zero = cs.load(readFileSync(path.join(root, 'models/char-0l.safetensors')));
  try {
    assert.equal(zero.defaultHead(), null);
  } finally {
    zero.delete();
  }
});

test('loadFile reads a Blob as a stream into the same model as load(bytes), reports its progress, and refuses a damaged one with load()\'s sentence', async () => {
  const fromBytes = cs.load(charBytes);
  const seen = [];
  const fromFile = await cs.loadFile(new Blob([charBytes]), {}, (read, total) => seen.push([read, total]));
  try {
    assert.deepEqual(fromFile.config, fromBytes.config);
    const ids = fromBytes.tokenize(TEXT).ids;
    assert.deepEqual(fromFile.run(ids).logits.data, fromBytes.run(ids).logits.data);
    assert.ok(seen.length >= 1 && seen.every(([r, t], i) => t === charBytes.length && r > (seen[i - 1]?.[0] ?? 0)), JSON.stringify(seen.slice(0, 5)));
    assert.equal(seen.at(-1)[0], charBytes.length);
  } finally {
    fromFile.delete();
    fromBytes.delete();
  }
  // A value made NaN near the end, and the file cut short: the sentences load() gives.
  const damaged = new Uint8Array(charBytes);
  damaged.set([0, 0, 0xc0, 0x7f], damaged.length - 8);
  const sentence = async (bytes) => {
    const byLoad = (() => { try { cs.load(bytes); } catch (e) { return e.message; } return null; })();
    const byFile = await cs.loadFile(new Blob([bytes])).then((m) => { m.delete(); return null; }, (e) => e.message);
    return [byLoad, byFile];
  };
  const [nanLoad, nanFile] = await sentence(damaged);
  assert.match(nanLoad, /^model file: tensor .* has a non-finite value \(NaN\) at index \d+/);
  assert.equal(nanFile, nanLoad);
  const [cutLoad, cutFile] = await sentence(charBytes.subarray(0, charBytes.length - 100));
  assert.match(cutLoad, /^model file: /);
  assert.equal(cutFile, cutLoad);
  const before = cs.memory().allocated;
  await assert.rejects(cs.loadFile(new Blob([damaged])), /non-finite/);
  assert.equal(cs.memory().allocated, before, 'a refused file leaves no bytes behind');
  // A header refused in the first piece: the rest of the file is not read (the stream is cancelled).
  const badHeader = new Uint8Array(charBytes);
  badHeader.set([0, 0, 0, 0, 0, 1, 0, 0]);   // a header of 2^40 bytes
  let pulls = 0, cancelled = false, offset = 0;
  const stream = () => new ReadableStream({
    type: 'bytes',
    pull(c) {
      if (offset >= badHeader.length) { c.close(); return; }
      pulls++;
      c.enqueue(badHeader.slice(offset, offset + 1024));
      offset += 1024;
    },
    cancel() { cancelled = true; },
  });
  const file = { size: badHeader.length, arrayBuffer: async () => badHeader.buffer, stream };
  // @ts-expect-error: not a Blob, only what loadFile reads of one (size, arrayBuffer, stream)
  await assert.rejects(cs.loadFile(file), /^Error: model file: /);
  assert.ok(cancelled, 'the stream was cancelled');
  assert.ok(pulls <= 3 && pulls * 1024 < badHeader.length, `${pulls} pieces of ${badHeader.length} bytes read`);
});
