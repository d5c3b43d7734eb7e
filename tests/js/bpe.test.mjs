// A byte-pair (sub-word) model made entirely through the WASM API, as the page would: a Trainer
// from a recipe whose tokenizer learns its merges from inline text ({"kind":"bpe","text":...,
// "vocab_size":300}, a few KB of the held-out corpus), a few steps, save(), then load() as a Model.
// Checks that typed text becomes sub-word tokens whose UTF-16 spans tile the text (an emoji and a
// character the corpus lacks included, each read as <UNK>), that the saved tokenizer carries its
// merges, and that the native CLI (`circuitscope run MODEL --text T --json`) reads the same file
// into the same ids and the same per-token losses (within 1e-5, as wasm_vs_native.test.mjs).
// Needs `npm run build` (build/native/circuitscope and build/wasm/circuitscope.js).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cs, root } from './module.mjs';

const cli = path.join(root, 'build', 'native', 'circuitscope');
// About 6 KB of real prose, cut at a line end.
const valid = readFileSync(path.join(root, 'models', 'corpus', 'valid.txt'), 'utf8');
const CORPUS = valid.slice(0, valid.indexOf('\n', 6000) + 1);
// Typed text: words the merges know, a newline, an emoji (two UTF-16 units) and a character the
// corpus lacks.
const TYPED = 'Alice was beginning to get very tired of sitting by her sister.\nThe rabbit 🐇 said ж twice: the the';

const recipe = {
  name: 'bpe-js-test',
  model: { n_layers: 1, n_heads: 2, d_model: 32, d_head: 16, n_ctx: 128, pos_embed: 'shortformer' },
  tokenizer: { kind: 'bpe', text: CORPUS, vocab_size: 300 },
  data: { kind: 'text', text: CORPUS, seq_len: 128 },
  optimizer: { lr: 0.01 },
  schedule: { kind: 'constant', warmup_steps: 2 },
  steps: 6,
  batch_size: 8,
  seed: 5,
};

let tmp;
let bytes;      // the trained model file
let model;      // bytes loaded as a Model
let trained;    // {config, tokenizer, metrics} as the trainer reported them

before(async () => {
  const instance = await cs();
  const tr = instance.trainer(recipe);
  try {
    const metrics = [];
    for (let i = 0; i < recipe.steps; i++) metrics.push(tr.step());
    trained = { config: tr.config, tokenizer: tr.tokenizer, metrics };
    bytes = tr.save();
  } finally {
    tr.delete();
  }
  model = instance.load(bytes);
  tmp = mkdtempSync(path.join(os.tmpdir(), 'cs-bpe-'));
});

after(() => {
  model?.delete();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('the trainer learns a byte-pair vocabulary of 300 from the inline text and trains on it', () => {
  assert.equal(trained.tokenizer.kind, 'bpe');
  assert.equal(trained.config.d_vocab, 300, 'd_vocab is set from the tokenizer');
  assert.equal(trained.metrics.length, recipe.steps);
  for (const m of trained.metrics) assert.ok(Number.isFinite(m.loss) && m.loss > 0, `finite loss at step ${m.step}: ${m.loss}`);
});

test('the saved file loads as a bpe model whose tokenizer carries its merges', () => {
  const t = model.tokenizer;
  assert.equal(t.kind, 'bpe');
  assert.equal(model.config.d_vocab, 300);
  assert.equal(t.vocab.length, 300);
  assert.deepEqual(t.vocab.slice(0, 2), ['<BOS>', '<UNK>']);
  const merges = t.merges;
  assert.ok(Array.isArray(merges) && merges.length > 100, `merges: ${merges?.length}`);
  // Each merge joins two earlier tokens into the token it made (the core's numbering: merge k made
  // id (size - merges) + k).
  const first = t.vocab.length - merges.length;
  merges.forEach(([a, b], k) => {
    assert.ok(a < first + k && b < first + k, `merge ${k} joins earlier tokens`);
    assert.equal(t.vocab[first + k], t.vocab[a] + t.vocab[b], `merge ${k}: ${JSON.stringify(t.vocab[a])} + ${JSON.stringify(t.vocab[b])}`);
  });
  assert.ok(t.vocab.some((v) => /^ [a-z]{2,}$/i.test(v)), 'some sub-word tokens are words with their leading space');
  assert.deepEqual(trained.tokenizer.merges, t.merges, 'the trainer reported the tokenizer the file holds');
});

test('typed text becomes sub-word tokens whose UTF-16 spans tile it; unknown characters read as <UNK>', () => {
  const { ids, begins, ends } = model.tokenize(TYPED);
  const vocab = model.tokenizer.vocab;
  assert.equal(ids[0], 0, '<BOS> first');
  assert.deepEqual([begins[0], ends[0]], [0, 0], '<BOS> has an empty span');
  let at = 0;
  for (let k = 1; k < ids.length; k++) {
    assert.equal(begins[k], at, `token ${k} starts where token ${k - 1} ended`);
    assert.ok(ends[k] > begins[k], `token ${k} is not empty`);
    const s = TYPED.slice(begins[k], ends[k]);
    if (ids[k] !== 1) assert.equal(vocab[ids[k]], s, `token ${k}'s text is its span`);
    at = ends[k];
  }
  assert.equal(at, TYPED.length, 'the spans cover the whole text');
  assert.ok(ids.length - 1 < TYPED.length, `fewer tokens (${ids.length - 1}) than characters (${TYPED.length})`);
  const tokens = Array.from(ids, (id, k) => (k ? TYPED.slice(begins[k], ends[k]) : '<BOS>'));
  assert.ok(tokens.some((s) => s.length > 1 && s.startsWith(' ')), `a token with a leading space: ${JSON.stringify(tokens)}`);
  const emoji = tokens.indexOf('🐇');
  assert.ok(emoji > 0, 'the emoji is one token');
  assert.equal(ends[emoji] - begins[emoji], 2, 'the emoji spans two UTF-16 units');
  assert.equal(ids[emoji], 1, 'the emoji is not in the corpus: <UNK>');
  const zhe = tokens.indexOf('ж');
  assert.ok(zhe > 0 && ids[zhe] === 1, 'ж is not in the corpus: <UNK>');
  assert.ok(tokens.includes('\n'), 'the newline is a token of its own');
});

test('the native CLI reads the same file into the same ids and losses (within 1e-5)', (t) => {
  assert.ok(existsSync(cli), `${path.relative(root, cli)} is missing: run \`npm run build\` first`);
  const file = path.join(tmp, 'bpe-js-test.safetensors');
  writeFileSync(file, bytes);
  const native = JSON.parse(execFileSync(cli, ['run', file, '--text', TYPED, '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 }));
  const { ids } = model.tokenize(TYPED);
  assert.deepEqual(native.tokens, Array.from(ids), 'same token ids');
  const result = model.run(ids);
  const T = ids.length;
  assert.ok(Array.isArray(native.loss), 'the CLI gives per-token losses');
  let worst = 0;
  for (let p = 1; p < T; p++) {
    const a = native.loss[p];            // CLI: loss of predicting token p
    const b = result.loss.data[p - 1];   // WASM: loss at position p-1 of predicting token p
    worst = Math.max(worst, Math.abs(a - b));
    assert.ok(Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(a)), `loss of token ${p}: native ${a}, WASM ${b}`);
  }
  t.diagnostic(`largest |native - WASM| loss: ${worst.toExponential(2)} over ${T - 1} tokens`);
});
