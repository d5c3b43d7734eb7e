// Activation patching through the WASM module (model.patch, model.corrupt) against the native
// CLI (`circuitscope patch --json`, the same core function): the same corruption exactly, and the
// same logit differences and effects within float32 rounding, for the shipped IOI models and the
// induction model; plus the result's shapes, the caller's own corrupted input, and the refusals.
// Needs `npm run build` (build/native/circuitscope and build/wasm/circuitscope.js).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cs, root } from './module.mjs';
import { toTransformerLens } from './tlens-fixture.mjs';

const cli = path.join(root, 'build', 'native', 'circuitscope');
const CASES = [
  ['ioi-1l2h', 'A B B <MID>', {}],
  ['ioi-1l2h', 'B A B <MID>', { direction: 'noise' }],
  ['ioi-templates-2l', 'When Jennifer and Michael went to the store, Michael gave a drink to', {}],
  ['char-2l', 'The quick brown fox. The quick brown fox', { seed: 3 }],
  ['char-2l', 'The quick brown fox. The quick brown fox', { direction: 'noise' }],
];

let instance;
const models = new Map();
function model(name) {
  if (!models.has(name)) models.set(name, instance.load(readFileSync(path.join(root, 'models', `${name}.safetensors`))));
  return models.get(name);
}

before(async () => {
  instance = await cs();
});

after(() => {
  for (const m of models.values()) m.delete();
});

function runCli(name, text, o) {
  assert.ok(existsSync(cli), `${path.relative(root, cli)} is missing: run \`npm run build\` first`);
  const args = ['patch', path.join(root, 'models', `${name}.safetensors`), '--text', text, '--json'];
  if (o.seed !== undefined) args.push('--seed', String(o.seed));
  if (o.direction === 'noise') args.push('--noise');
  return JSON.parse(execFileSync(cli, args, { encoding: 'utf8', maxBuffer: 1 << 28 }));
}

// Float32 forward passes natively (SSE) and in WASM (SIMD128) sum in different orders: a logit
// difference may move by about 1e-5 of the logits' scale.
function close(a, b, scale, what) {
  const tol = 2e-4 * Math.max(1, scale);
  assert.ok(Math.abs(a - b) <= tol, `${what}: native ${b}, WASM ${a} (|diff| ${Math.abs(a - b)} > ${tol})`);
}

for (const [name, text, options] of CASES) {
  test(`${name} ${JSON.stringify(text)} ${JSON.stringify(options)}: WASM patch() equals the native CLI`, () => {
    const m = model(name);
    const native = runCli(name, text, options);
    const r = m.patch(text, options);
    const { n_layers: L, n_heads: H } = m.config;
    const T = r.tokens.length;

    assert.deepEqual(Array.from(r.tokens), native.tokens);
    const k = r.corruption;
    assert.deepEqual(Array.from(k.tokens), native.corruption.tokens, 'the same corrupted tokens');
    for (const key of ['kind', 'pos', 'correct', 'wrong', 'changed', 'description']) {
      assert.deepEqual(k[key], native.corruption[key], `corruption.${key}`);
    }
    assert.deepEqual(m.corrupt(text, { seed: options.seed }).tokens, k.tokens, 'corrupt() makes the same corruption');
    assert.equal(r.direction, options.direction ?? 'denoise');
    assert.equal(r.normalised, native.normalised);
    assert.equal(r.passes, native.passes);
    assert.equal(r.passes, 2 + L * H * (k.pos + 2));

    const scale = Math.max(Math.abs(native.clean_logit_diff), Math.abs(native.corrupted_logit_diff));
    const gap = Math.abs(native.clean_logit_diff - native.corrupted_logit_diff);
    close(r.clean_logit_diff, native.clean_logit_diff, scale, 'clean logit difference');
    close(r.corrupted_logit_diff, native.corrupted_logit_diff, scale, 'corrupted logit difference');
    assert.ok(r.clean_logit_diff > r.corrupted_logit_diff + 1, 'the corruption lowers the logit difference');

    assert.deepEqual(r.head.shape, [L, H]);
    assert.deepEqual(r.head.axes, ['layer', 'head']);
    assert.deepEqual(r.head_pos.shape, [L, H, T]);
    assert.deepEqual(r.head_pos.axes, ['layer', 'head', 'pos']);
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < H; h++) {
        const i = l * H + h;
        close(r.head.data[i], native.head[l][h], scale, `L${l}H${h}`);
        close(r.head_effect.data[i] * gap, native.head_effect[l][h] * gap, scale, `L${l}H${h} effect`);
        for (let t = 0; t < T; t++) {
          close(r.head_pos.data[i * T + t], native.head_pos[l][h][t], scale, `L${l}H${h} at ${t}`);
          close(r.head_pos_effect.data[i * T + t] * gap, native.head_pos_effect[l][h][t] * gap, scale, `L${l}H${h} at ${t} effect`);
        }
      }
    }
  });
}

test('patch() with a corrupted input of your own gives the core corruption\'s numbers; heads only; no NaN', () => {
  const m = model('ioi-1l2h');
  const made = m.patch('A B B <MID>');
  const k = made.corruption;
  const given = m.patch('A B B <MID>', { corrupted: k.tokens, correct: k.correct, wrong: k.wrong, pos: -1 });
  assert.equal(given.corruption.kind, 'given');
  assert.deepEqual(given.corruption.changed, k.changed);
  assert.deepEqual(given.head.data, made.head.data);
  assert.deepEqual(given.head_pos.data, made.head_pos.data);

  const headsOnly = m.patch('A B B <MID>', { positions: false });
  assert.equal(headsOnly.head_pos, null);
  assert.equal(headsOnly.head_pos_effect, null);
  assert.deepEqual(headsOnly.head.data, made.head.data);

  const same = m.patch('A B B <MID>', { corrupted: 'A B B <MID>', correct: k.correct, wrong: k.wrong });
  assert.equal(same.normalised, false);
  for (const x of [...same.head_effect.data, ...same.head_pos_effect.data]) assert.equal(x, 0);
});

test('patch() and corrupt() refuse bad input with a sentence', () => {
  const ioi = model('ioi-1l2h');
  const char = model('char-2l');
  const prose = model('bpe-2l-prose');
  const LONG = Int32Array.from({ length: prose.config.n_ctx }, (_, i) => 3 + (i % 40));   // repeats every 40 tokens
  const cases = [
    [() => ioi.patch('A B B <MID>', { colour: 1 }), /unknown option "colour"/],
    [() => ioi.patch('A B B <MID>', { direction: 'sideways' }), /direction must be 'denoise'/],
    [() => ioi.patch('A B B <MID>', { corrupted: 'A B <MID>', correct: 2, wrong: 3 }), /same length/],
    [() => ioi.patch('A B B <MID>', { corrupted: 'A B A <MID>' }), /correct and the wrong answer/],
    [() => ioi.corrupt('A B B <MID>', { kind: 'shuffle' }), /kind must be 'auto'/],
    [() => char.corrupt('no repeat here'), /no block of 4 or more tokens/],
    [() => prose.patch(LONG), /at 479 positions would take about [\d.]+e\+\d+ multiply-adds/],
  ];
  for (const [fn, pattern] of cases) {
    assert.throws(fn, (e) => e instanceof Error && pattern.test(e.message), String(pattern));
  }
  // Whole heads only is cheap enough for the full context.
  const long = prose.patch(LONG, { positions: false });
  assert.equal(long.passes, 2 + prose.config.n_layers * prose.config.n_heads);
  assert.equal(long.note, '');
  // 'auto' (what the page asks for): each position where it fits, else whole heads with a sentence.
  assert.equal(char.patch('abcdefghij'.repeat(25) + 'abcd', { positions: 'auto' }).note, '');
  const auto = prose.patch(LONG, { positions: 'auto' });
  assert.equal(auto.head_pos, null);
  assert.deepEqual(auto.head.data, long.head.data);
  assert.match(auto.note, /^Each head is patched at every position at once only: patching it at each of the \d+ positions alone as well would take about [\d.]+e\+\d+ multiply-adds/);
  const short = ioi.patch('A B B <MID>', { positions: 'auto' });
  assert.equal(short.note, '');
  assert.deepEqual(short.head_pos.data, ioi.patch('A B B <MID>').head_pos.data);
  assert.throws(() => ioi.patch('A B B <MID>', { positions: 'some' }), /positions must be true, false or 'auto', got "some"/);
});

// A model with MLPs (LayerNorm, GELU; the TransformerLens family's shape, small): each layer's MLP
// output is ablated through the intervention's ablateMlp and patched like a head, in WASM as in
// the native CLI.
test('MLP outputs: ablateMlp changes the run, patch() patches each MLP as the native CLI does', async () => {
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const recipe = {
    name: 'mlp-patching', steps: 20, batch_size: 8, seed: 3,
    model: { n_layers: 2, n_heads: 2, d_model: 32, d_head: 16, n_ctx: 48, pos_embed: 'standard', normalization_type: 'LN', d_mlp: 64, act_fn: 'gelu' },
    tokenizer: { kind: 'synthetic', size: 40 },
    data: { kind: 'repeated_segment', seq_len: 48, min_len: 6, max_len: 20 },
    optimizer: { lr: 0.01 }, schedule: { kind: 'constant' },
  };
  const tr = instance.trainer(recipe);
  for (let i = 0; i < 20; i++) tr.step();
  const bytes = tr.save();
  tr.delete();
  const m = instance.load(bytes);
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-mlp-'));
  try {
    const ids = [0, 5, 9, 12, 20, 7, 33, 5, 9, 12, 20, 7, 33];
    const clean = m.run(ids, undefined, { patterns: false });
    for (const layer of [0, 1]) {
      const ablated = m.run(ids, { ablateMlp: [{ layer }] }, { patterns: false });
      assert.ok(Array.from(ablated.loss.data).some((x, i) => Number.isFinite(x) && Math.abs(x - clean.loss.data[i]) > 1e-4), `the MLP of layer ${layer} matters`);
    }
    const file = path.join(dir, 'mlp.safetensors');
    writeFileSync(file, bytes);
    const text = m.tokenText(ids.slice(1)).join(' ');   // the synthetic tokens are words t0, t1, ...
    const native = JSON.parse(execFileSync(cli, ['patch', file, '--text', text, '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 }));
    const r = m.patch(text);
    assert.deepEqual(Array.from(r.tokens), ids);
    assert.deepEqual(r.mlp.shape, [2]);
    assert.deepEqual(r.mlp_pos.axes, ['layer', 'pos']);
    const T = r.tokens.length;
    assert.equal(r.passes, 2 + (2 * 2 + 2) * (r.corruption.pos + 2));
    const scale = Math.max(Math.abs(native.clean_logit_diff), Math.abs(native.corrupted_logit_diff));
    for (let l = 0; l < 2; l++) {
      close(r.mlp.data[l], native.mlp[l], scale, `MLP ${l}`);
      for (let t = 0; t < T; t++) close(r.mlp_pos_effect.data[l * T + t], native.mlp_pos_effect[l][t], scale, `MLP ${l} at ${t} effect`);
    }
    // Refusals in words.
    assert.throws(() => m.run(ids, { ablateMlp: [{ layer: 2 }] }), /no layer 2/);
    assert.throws(() => m.run(ids, { ablateMlp: [{ layer: 0, head: 1 }] }), /unknown|head/);
    assert.throws(() => model('char-2l').run('abc', { ablateMlp: [{ layer: 0 }] }), /attention-only, so there is no MLP in layer 0/);
    assert.equal(model('char-2l').patch('The quick brown fox. The quick brown fox').mlp, null);
  } finally {
    m.delete();
    rmSync(dir, { recursive: true, force: true });
  }
});

// The CLI's ioi and patch open a TransformerLens file as run, inspect and series do: with its
// config.json (--config), which says what the tensors cannot; without it, refused in words.
test('CLI: ioi and patch take a TransformerLens file with --config', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-tlcli-'));
  try {
    const file = path.join(dir, 'tl-ioi.safetensors');
    writeFileSync(file, toTransformerLens(readFileSync(path.join(root, 'models', 'ioi-2l1h.safetensors')), { metadata: null }));
    const config = path.join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ n_layers: 2, d_model: 32, n_heads: 1, d_head: 16, n_ctx: 5, d_vocab: 8,
      normalization_type: null, positional_embedding_type: 'standard', attn_only: true, act_fn: null, eps: 1e-5, model_name: 'ioi' }));
    const run = (args) => JSON.parse(execFileSync(cli, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
    const own = run(['ioi', path.join(root, 'models', 'ioi-2l1h.safetensors'), '--cut', 'v', '--json']);
    const tl = run(['ioi', file, '--config', config, '--cut', 'v', '--json']);
    assert.equal(tl.accuracy, own.accuracy);
    assert.ok(Math.abs(tl.mean_logit_diff - own.mean_logit_diff) < 1e-4, `${tl.mean_logit_diff} vs ${own.mean_logit_diff}`);
    assert.throws(() => execFileSync(cli, ['ioi', file, '--json'], { stdio: 'pipe' }), (e) => /holds no LayerNorm weights/.test(String(e.stderr)));
    // char-2l in TransformerLens layout (shortformer): its text is token ids, a repeat to break.
    const chars = path.join(dir, 'tl-char.safetensors');
    writeFileSync(chars, toTransformerLens(readFileSync(path.join(root, 'models', 'char-2l.safetensors')), { metadata: null }));
    writeFileSync(config, JSON.stringify({ n_layers: 2, d_model: 64, n_heads: 4, d_head: 16, n_ctx: 256, normalization_type: null,
      positional_embedding_type: 'shortformer', attn_only: true, act_fn: null, eps: 1e-5, model_name: 'char-2l' }));
    const ids = '40 41 42 43 44 45 46 47 40 41 42 43 44 45 46 47';
    const patched = run(['patch', chars, '--config', config, '--text', ids, '--json']);
    assert.deepEqual([patched.head.length, patched.head[0].length], [2, 4]);
    assert.ok(patched.head.flat().every(Number.isFinite) && patched.head.flat().some((x) => Math.abs(x) > 0.01), JSON.stringify(patched.head));
    assert.throws(() => execFileSync(cli, ['patch', chars, '--text', ids], { stdio: 'pipe' }), (e) => /holds no LayerNorm weights/.test(String(e.stderr)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// The IOI terms of a model with LayerNorm and MLPs (an IOI recipe with normalization_type and
// d_mlp, trained here): every term read with the final scale frozen, each MLP a term of its own,
// and together they give the logit difference and sum, as for the attention-only models.
test('IOI terms of a LayerNorm + MLP model sum to its logits, MLPs included', () => {
  const recipe = {
    name: 'ioi-ln-mlp', steps: 30, batch_size: 60, seed: 1,
    model: { n_layers: 2, n_heads: 1, d_model: 32, d_head: 16, n_ctx: 5, pos_embed: 'standard', normalization_type: 'LN', d_mlp: 64, act_fn: 'gelu' },
    tokenizer: { kind: 'ioi_symbolic' }, data: { kind: 'ioi_symbolic' },
    optimizer: { lr: 0.01 }, schedule: { kind: 'constant' },
  };
  const tr = instance.trainer(recipe);
  for (let i = 0; i < 30; i++) tr.step();
  const m = instance.load(tr.save());
  tr.delete();
  try {
    const all = m.ioi();
    assert.equal(all.length, 60);
    for (const a of all.slice(0, 12)) {
      assert.deepEqual(a.mlp_diff.shape, [2]);
      const sum = (t) => Array.from(t.data).reduce((x, y) => x + y, 0);
      const diff = sum(a.head_diff) + sum(a.mlp_diff) + a.direct_diff + a.bias_diff;
      const total = sum(a.head_sum) + sum(a.mlp_sum) + a.direct_sum + a.bias_sum;
      assert.ok(Math.abs(diff - a.logit_diff) < 1e-3, `difference: terms ${diff} vs ${a.logit_diff}`);
      assert.ok(Math.abs(total - (a.logit_io + a.logit_s)) < 1e-3, `sum: terms ${total} vs ${a.logit_io + a.logit_s}`);
      assert.ok(Math.abs(a.lens.logit_io.data.at(-1) - a.logit_io) < 1e-3, 'the lens ends at the logits');
    }
    assert.ok(all.some((a) => Math.abs(a.mlp_diff.data[0]) > 1e-4), 'the MLPs carry part of the difference');
    assert.equal(model('ioi-2l1h').ioi()[0].mlp_diff, null, 'attention-only: no MLP terms');
  } finally {
    m.delete();
  }
});
