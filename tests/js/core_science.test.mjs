// What the page's views used to compute in JavaScript now comes from the core through the JS API:
// the softmax top-k of run(), the head scores on typed text and its repeated block, the IOI
// sentence builder, splits and held-out flags, the name probabilities and head roles of ioi(), the
// phase change, and the random-token pool of headScores(). Each is checked against the JavaScript
// the views used (kept here as the oracle), so the page shows the same numbers.
// Needs `npm run build` (build/wasm/circuitscope.js and its module).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, wrapper, wrapperModule } from './module.mjs';

const read = (f) => readFileSync(path.join(root, 'models', f));
const TEXT = 'Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing to do. ' +
  'Alice was beginning to get very tired of sitting by her sister on the bank';

let api;
let inst;
let char;
let ioi;
let tpl;

before(async () => {
  api = await wrapperModule();
  inst = await api.init();
  char = inst.load(read('char-2l.safetensors'));
  ioi = inst.load(read('ioi-1l2h.safetensors'));
  tpl = inst.load(read('ioi-templates-1l2h.safetensors'));
});

after(() => {
  char?.delete();
  ioi?.delete();
  tpl?.delete();
});

const close = (a, b, tol, what) => assert.ok(Math.abs(a - b) <= tol || (Number.isNaN(a) && Number.isNaN(b)), `${what}: ${a} vs ${b}`);

// ------------------------------------------------------------------ the views' JavaScript (oracle)

// web/views/induction.js findRepeat
function findRepeat(ids, from) {
  const T = ids.length;
  let best = null;
  for (let d = 1; d < T; d++) {
    let run = 0;
    for (let i = from; i + d < T; i++) {
      if (ids[i] === ids[i + d]) {
        run += 1;
        const r = Math.min(run, d);
        if (r >= 4 && (!best || r > best.r)) best = { a: i + 1 - r, d, r, held: false };
      } else run = 0;
    }
  }
  // The view compares the two copies of a block of 8 tokens or more (the core's kHeldRepeatMin).
  return best && { ...best, compared: best.r >= 8 };
}

// web/views/induction.js textScores, over run()'s patterns
function textScores(P, ids, T, L, H, repeat, bos) {
  const out = [];
  const before = new Int32Array(T);
  const last = new Map();
  const cellsOf = [];
  for (let q = 0; q < T; q++) {
    const p = last.get(ids[q]);
    before[q] = p === undefined ? -1 : p;
    last.set(ids[q], q);
    const cells = [];
    if (q > bos) for (let j = before[q]; j >= bos; j = before[j]) if (j + 1 < q) cells.push(q * T + j + 1);
    cellsOf.push(cells);
  }
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const base = (l * H + h) * T * T;
      let pm = 0; let pmN = 0; let pt = 0; let ptN = 0; let st = 0; let stN = 0;
      for (let q = bos + 1; q < T; q++) {
        pt += P[base + q * T + q - 1]; ptN += 1;
        if (cellsOf[q].length) { pm += cellsOf[q].reduce((s, c) => s + P[base + c], 0); pmN += 1; }
      }
      if (repeat) {
        for (let q = repeat.a + repeat.d; q < repeat.a + repeat.d + repeat.r; q++) {
          if (q - repeat.d + 1 < q) { st += P[base + q * T + q - repeat.d + 1]; stN += 1; }
        }
      }
      out.push({ prefix: pmN ? pm / pmN : NaN, previous: ptN ? pt / ptN : NaN, stripe: stN ? st / stN : NaN });
    }
  }
  return out;
}

// web/views/ioi.js ioiPairHeldOut
const M64 = (1n << 64n) - 1n;
function ioiPairHeldOut(task, a, b) {
  if (!(task.holdout_pair_fraction > 0)) return false;
  if (a > b) [a, b] = [b, a];
  let z = (((BigInt(a) << 32n) | BigInt(b)) + 0x9E3779B97F4A7C15n) & M64;
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & M64;
  z ^= z >> 31n;
  return Number(z >> 11n) * (1 / 9007199254740992) < task.holdout_pair_fraction;
}

// src/report.cpp phase_change_step
function reportPhaseChangeStep(records) {
  const best = (r) => Math.max(0, ...(r.prefix_matching ?? []));
  if (!records.length) return -1;
  const f = best(records.at(-1));
  if (f < 0.1) return -1;
  const r = records.find((x) => best(x) >= 0.5 * f);
  return r ? r.step : -1;
}

// ------------------------------------------------------------------ tests

test('run({topk}) returns the softmax top-k of its own logits', () => {
  const r = char.run(TEXT.slice(0, 60), undefined, { topk: 5 });
  const [T, V] = r.logits.shape;
  assert.deepEqual(r.top_ids.shape, [T, 5]);
  assert.deepEqual(r.top_probs.axes, ['pos', 'rank']);
  for (let t = 0; t < T; t++) {
    const row = Array.from(r.logits.data.subarray(t * V, (t + 1) * V));
    const mx = Math.max(...row);
    const z = row.reduce((s, x) => s + Math.exp(x - mx), 0);
    const order = row.map((_, i) => i).sort((a, b) => row[b] - row[a] || a - b).slice(0, 5);
    for (let k = 0; k < 5; k++) {
      assert.equal(r.top_ids.data[t * 5 + k], order[k], `pos ${t} rank ${k}`);
      close(r.top_probs.data[t * 5 + k], Math.exp(row[order[k]] - mx) / z, 1e-6, `pos ${t} rank ${k}`);
    }
  }
  assert.throws(() => char.run('ab', undefined, { topk: 0 + 10000 }), /top-k: k must be between 1 and the vocabulary size/);
});

test('run({textScores}) gives the induction view\'s scores and repeat, fast', () => {
  const { n_layers: L, n_heads: H } = char.config;
  for (const text of [TEXT, 'no repeat here', 'abcdabcd', 'x']) {
    const r = char.run(text, undefined, { textScores: true });
    const ids = r.tokens;
    const T = ids.length;
    const bos = ids[0] === char.tokenizer.vocab.indexOf('<BOS>') ? 1 : 0;
    const rep = findRepeat(ids, bos);
    assert.deepEqual(r.repeat, rep, text);
    const want = textScores(r.patterns.data, ids, T, L, H, rep, bos);
    for (const key of ['previous_token', 'prefix_matching', 'stripe']) {
      assert.deepEqual(r.text_scores[key].shape, [L, H]);
      assert.deepEqual(r.text_scores[key].axes, ['layer', 'head']);
    }
    want.forEach((w, i) => {
      close(r.text_scores.previous_token.data[i], w.previous, 1e-5, `${text}: previous ${i}`);
      close(r.text_scores.prefix_matching.data[i], w.prefix, 1e-5, `${text}: prefix ${i}`);
      close(r.text_scores.stripe.data[i], w.stripe, 1e-5, `${text}: stripe ${i}`);
    });
  }
  // repeatAt: the block holding a position (here an 8-character block typed twice after the
  // sentence), the same block findRepeat() gives; its stripe and copy losses are that block's.
  const text = `${TEXT} qzxwvkjq qzxwvkjq`;
  const ids = char.tokenize(text).ids;
  const at = ids.length - 2;
  const held = char.findRepeat(ids, { at });
  assert.ok(held && held.held && held.r >= 8 && held.r < findRepeat(ids, 1).r && at >= held.a + held.d && at < held.a + held.d + held.r, JSON.stringify(held));
  assert.deepEqual(char.findRepeat(ids), findRepeat(ids, 1), 'without a position: the longest');
  // A position in the sentence: the sentence's block, now chosen because it holds the position.
  assert.deepEqual(char.findRepeat(ids, { at: 3 }), { ...findRepeat(ids, 1), held: true }, 'a position in the sentence: the sentence');
  const rh = char.run(ids, undefined, { textScores: true, repeatAt: at });
  assert.deepEqual(rh.repeat, held);
  const wantHeld = textScores(rh.patterns.data, ids, ids.length, L, H, held, 1);
  wantHeld.forEach((w, i) => close(rh.text_scores.stripe.data[i], w.stripe, 1e-5, `held block: stripe ${i}`));
  const meanLoss = (from, to) => { let t = 0; for (let i = from; i < to; i++) t += rh.loss.data[i - 1]; return t / (to - from); };
  close(rh.second_copy_loss, meanLoss(held.a + held.d, held.a + held.d + held.r), 1e-5, 'second copy loss of the held block');
  close(rh.first_copy_loss, meanLoss(held.a, held.a + held.r), 1e-5, 'first copy loss of the held block');
  assert.throws(() => char.findRepeat(ids, { at: 1.5 }), /findRepeat: at/);
  // The induction head scores high on the stripe of the repeated sentence.
  const r = char.run(TEXT, undefined, { textScores: true });
  assert.ok(Math.max(...r.text_scores.stripe.data) > 0.2);
  // The keystroke path: 256 tokens into caller-owned buffers, with the scores and the top-k.
  const c = char.config;
  const into = { patterns: new Float32Array(c.n_layers * c.n_heads * c.n_ctx * c.n_ctx), logits: new Float32Array(c.n_ctx * c.d_vocab), loss: new Float32Array(c.n_ctx) };
  const long = TEXT.repeat(3).slice(0, c.n_ctx - 1);
  for (let i = 0; i < 5; i++) char.run(long, undefined, { into, textScores: true, topk: 5 });
  // The fastest of 30 calls (other processes share the machine); printed, not asserted.
  const times = { plain: Infinity, extras: Infinity };
  for (let i = 0; i < 30; i++) {
    let t0 = performance.now();
    char.run(long, undefined, { into });
    times.plain = Math.min(times.plain, performance.now() - t0);
    t0 = performance.now();
    char.run(long, undefined, { into, textScores: true, topk: 5 });
    times.extras = Math.min(times.extras, performance.now() - t0);
  }
  console.log(`# core-science: run(${c.n_ctx - 1} tokens, {into}) ${times.plain.toFixed(2)} ms; with {textScores, topk: 5} ${times.extras.toFixed(2)} ms (fastest of 30)`);
});

test('headScores() takes its token pool from the core', () => {
  const s = char.headScores({ batch: 2 });
  assert.equal(s.first, 2);  // after <BOS> <UNK>
  assert.equal(s.n, char.config.d_vocab - 2);
  assert.equal(s.L, Math.min(s.n, Math.floor((char.config.n_ctx - 1) / 2)));
  assert.equal(s.bos, 0);
  assert.equal(s.batch, 2);
  assert.equal(s.seed, 0);
  const t = tpl.headScores({ batch: 1, L: 5 });
  assert.equal(t.first, 2);  // after <BOS> <PAD>
  const i = ioi.headScores({ batch: 1, L: 2 });
  assert.equal(i.first, 2);  // after <BOS> <MID>
});

test('ioiTask() lists the splits, readable templates and held-out templates', () => {
  const task = tpl.ioiTask();
  assert.deepEqual(task.splits.map((x) => x.split), ['train', 'held-out pairs', 'held-out templates', 'held-out both']);
  for (const x of task.splits) assert.ok(x.what.length > 10);
  assert.equal(task.template_info.length, task.templates.length);
  task.template_info.forEach((t, i) => {
    assert.equal(t.index, i);
    assert.equal(t.text, task.templates[i]);
    assert.equal(t.held_out, i >= task.templates.length - task.holdout_templates);
    assert.equal((t.readable[0].match(/\[IO\]/g) ?? []).length, 1);
    assert.equal((t.readable[0].match(/\[S\]/g) ?? []).length, 2);
    assert.ok(t.readable[0].indexOf('[IO]') < t.readable[0].indexOf('[S]'), t.readable[0]);
    assert.ok(t.readable[1].indexOf('[S]') < t.readable[1].indexOf('[IO]'), t.readable[1]);
  });
  assert.equal(ioi.ioiTask(), null);
});

test('ioiSentence() builds the sentence, its tokens and its split', () => {
  const task = tpl.ioiTask();
  const N = task.names.length;
  const seen = new Set();
  for (let t = 0; t < task.templates.length; t++) {
    for (let io = 0; io < N; io += 3) {
      for (let s = 0; s < N; s += 5) {
        if (io === s) continue;
        const order = (io + s) % 2;
        const x = tpl.ioiSentence({ template: t, order, io, s, place: 0, object: 0 });
        assert.deepEqual(Array.from(x.tokens), Array.from(tpl.tokenize(x.text).ids), x.text);
        assert.deepEqual(x.words, tpl.tokenText(x.tokens));
        assert.equal(x.template_held_out, task.template_info[t].held_out);
        assert.equal(x.pair_held_out, ioiPairHeldOut(task, io, s), `${io}, ${s}`);
        const split = x.template_held_out ? (x.pair_held_out ? 'held-out both' : 'held-out templates') : (x.pair_held_out ? 'held-out pairs' : 'train');
        assert.equal(x.split, split);
        seen.add(split);
        const a = tpl.ioi(x.text);
        assert.equal(tpl.tokenText([a.io])[0], task.names[io]);
        assert.equal(tpl.tokenText([a.s])[0], task.names[s]);
        // roles: the IO name's token and the S name's two, as the IOI view tags them.
        assert.deepEqual(x.roles, x.words.map((w) => (w === task.names[io] ? 'IO' : w === task.names[s] ? 'S' : '')), x.text);
        assert.deepEqual([x.roles.filter((r) => r === 'IO').length, x.roles.filter((r) => r === 'S').length], [1, 2], x.text);
      }
    }
  }
  assert.ok(seen.size >= 3, [...seen].join(', '));
  const sym = ioi.ioiSentence({ io: 0, s: 1, order: 1 });
  assert.equal(sym.text, 'B A B <MID>');
  assert.deepEqual(sym.words, ['<BOS>', 'B', 'A', 'B', '<MID>']);
  assert.deepEqual(sym.roles, ['', 'S', 'IO', 'S', '']);
  assert.deepEqual(Array.from(sym.tokens), Array.from(ioi.tokenize(sym.text).ids));
  assert.throws(() => tpl.ioiSentence({ template: 99 }), /ioiSentence: template 99 is not one of the task's/);
  assert.throws(() => tpl.ioiSentence({ io: 1, s: 1 }), /two different names/);
  assert.throws(() => tpl.ioiSentence({ tpl: 1 }), /unknown option "tpl"/);
});

test('ioi() gives every name\'s probability, the top tokens and the head roles', () => {
  for (const [m, text] of [[ioi, 'A B B <MID>'], [tpl, tpl.ioiSentence({ template: 0, io: 0, s: 1 }).text]]) {
    const a = m.ioi(text);
    const V = m.config.d_vocab;
    assert.deepEqual(a.probs.shape, [V]);
    close(a.probs.data.reduce((x, y) => x + y, 0), 1, 1e-5, 'probs sum');
    close(a.probs.data[a.io], a.prob_io, 1e-6, 'p(IO)');
    close(a.probs.data[a.s], a.prob_s, 1e-6, 'p(S)');
    assert.equal(a.top_ids.data[0], a.predicted);
    assert.ok(a.name_ids.includes(a.io) && a.name_ids.includes(a.s));
    // The softmax the view computed from run()'s logits.
    const r = m.run(text);
    const [T] = r.logits.shape;
    const last = Array.from(r.logits.data.subarray((T - 1) * V, T * V));
    const mx = Math.max(...last);
    const z = last.reduce((s, x) => s + Math.exp(x - mx), 0);
    last.forEach((x, i) => close(a.probs.data[i], Math.exp(x - mx) / z, 1e-5, `p(${i})`));
    // The roles: the head writing the most along the difference, and the other head writing the
    // most along the sum.
    const H = m.config.n_heads;
    const name = (k) => `L${Math.floor(k / H)}H${k % H}`;
    const argmaxOf = (d, skip = -1) => d.reduce((b, x, i) => (i !== skip && (b < 0 || x > d[b]) ? i : b), -1);
    a.head_diff.data.forEach((x, i) => close(a.head_share_diff.data[i], x / a.logit_diff, 1e-4, 'share'));
    const con = argmaxOf(a.head_diff.data);
    assert.equal(a.most_contrastive, name(con));
    assert.equal(a.most_additive, name(argmaxOf(a.head_sum.data, con)));
    assert.notEqual(a.most_additive, a.most_contrastive);
  }
  // The whole-task analyses strip the template rows' <PAD> (looked up in the vocabulary).
  const pad = tpl.tokenizer.vocab.indexOf('<PAD>');
  const all = tpl.ioi(undefined);
  assert.ok(all.length > 0);
  for (const a of all.slice(0, 50)) assert.notEqual(a.tokens.at(-1), pad);
});

test('phaseChange() is the report\'s definition, on the main thread without a model', () => {
  for (const name of ['char-2l', 'char-1l', 'char-1l-smeared', 'char-0l']) {
    const { records } = JSON.parse(read(`${name}.metrics.json`).toString());
    const pc = api.phaseChange(records, { nHeads: 4 });
    assert.equal(pc ? pc.step : -1, reportPhaseChangeStep(records), name);
    assert.deepEqual(inst.phaseChange(records, { nHeads: 4 }), pc);
    if (pc) {
      const rec = records[pc.record];
      const best = Math.max(...rec.prefix_matching);
      close(rec.prefix_matching[pc.layer * 4 + pc.head], best, 0, `${name}: the head`);
      close(pc.threshold, pc.final / 2, 1e-12, 'threshold');
      assert.equal(pc.before_step, pc.record >= 2 ? records[pc.record - 2].step : -1, `${name}: the record two before`);
      assert.ok(pc.final >= 0.1);
    }
  }
  assert.equal(api.phaseChange([]), null);
  assert.equal(api.phaseChange(null), null);
  assert.equal(api.phaseChange([{ step: 0, prefix_matching: new Float32Array([0.05]) }]), null);
  const pc = api.phaseChange([{ step: 0, prefix_matching: [0, 0.1] }, { step: 7, prefix_matching: [0.3, 0.1] }, { step: 9, prefix_matching: [0.5, 0.2] }]);
  assert.deepEqual(pc, { step: 7, record: 1, layer: 0, head: 0, final: 0.5, threshold: 0.25, before_step: -1 });
  assert.throws(() => api.phaseChange([{ prefix_matching: [1] }]), /phaseChange: records\[0\]\.step must be an integer/);
});

test('phaseChange() before any module has loaded says what to do', () => {
  const script = `const m = await import(${JSON.stringify(pathToFileURL(wrapper).href)});
try { m.phaseChange([]); console.log('no error'); } catch (e) { console.log(e.message); }`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script]).toString();
  assert.match(out, /phaseChange: the WebAssembly module has not been loaded yet \(await init\(\), load\(\) or trainer\(\) first\)/);
});
