// TransformerLens state dicts through the WASM module's load(bytes): a shipped model written in
// TransformerLens's layout (tests/js/tlens-fixture.mjs) gives the same logits as the original,
// reports itself (info.source "transformerlens", tokenizer kind "ids") and takes token ids as
// text; unsupported and damaged files give the loader's sentence. Needs the WASM build.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { root, cs } from './module.mjs';
import { roundedCopy, toTransformerLens, transformerLensTensors, writeSafetensors } from './tlens-fixture.mjs';

const read = (name) => readFileSync(path.join(root, 'models', name));
let api;
before(async () => { api = await cs(); });
const opened = [];
after(() => { for (const m of opened) m.delete(); });
// As written (from_pretrained_no_processing): the logits compare exactly with the original's.
const load = (bytes) => {
  const m = api.load(bytes, { processing: 'none' });
  opened.push(m);
  return m;
};

function assertSameLogits(a, b, ids, tol) {
  const la = a.run(ids).logits.data;
  const lb = b.run(ids).logits.data;
  assert.equal(la.length, lb.length);
  let worst = 0;
  for (let i = 0; i < la.length; i++) worst = Math.max(worst, Math.abs(la[i] - lb[i]));
  assert.ok(worst <= tol, `logits differ by ${worst}`);
}

test('a shipped model saved in TransformerLens\'s layout loads with the same logits and a token-id tokenizer', () => {
  const bytes = read('ioi-templates-2l.safetensors');
  const ours = load(bytes);
  const tl = load(toTransformerLens(bytes));
  assert.deepEqual({ ...tl.config, use_bias: false }, ours.config);
  assert.equal(tl.config.use_bias, true);
  assert.equal(tl.info.source, 'transformerlens');
  assert.match(tl.info.note, /text is token ids separated by spaces/);
  assert.equal(tl.tokenizer.kind, 'ids');
  assert.equal(tl.tokenizer.vocab.length, ours.config.d_vocab);
  assert.deepEqual(tl.tokenText([12, 7]), ['#12', '#7']);
  const ids = Int32Array.from({ length: 20 }, (_, i) => (7 * i + 3) % ours.config.d_vocab);
  assertSameLogits(ours, tl, ids, 1e-6);
  // Text is ids: the same tokens typed as text run the same pass.
  const text = Array.from(ids).join(' ');
  assert.deepEqual(Array.from(tl.tokenize(text).ids), Array.from(ids));
  assertSameLogits(tl, tl, ids, 0);
  assert.deepEqual(Array.from(tl.run(text).logits.data), Array.from(tl.run(ids).logits.data));
  assert.throws(() => tl.tokenize('1 2 999'), /"999" at character 4 is not a token id: this model has no tokenizer, so type token ids from 0 to 88/);
  // The analyses work on it.
  assert.ok(tl.headScores());
  assert.ok(tl.qk(1, 0, { k: 3 }));
  assert.ok(tl.eigen(0, 1));
  // Saved from the page, it becomes a circuitscope file that keeps the token-id tokenizer.
  const again = load(tl.save());
  assert.equal(again.tokenizer.kind, 'ids');
  assertSameLogits(tl, again, ids, 0);
});

test('F16 and BF16 state dicts read as float32, shortformer from the metadata', () => {
  const bytes = read('char-1l.safetensors');  // shortformer
  for (const dtype of ['F16', 'BF16']) {
    const tl = load(toTransformerLens(bytes, { dtype, positionalEmbeddingType: 'shortformer' }));
    const rounded = load(roundedCopy(bytes, dtype));
    assert.equal(tl.config.pos_embed, 'shortformer');
    const ids = Int32Array.from({ length: 30 }, (_, i) => (5 * i + 2) % 82);
    assertSameLogits(rounded, tl, ids, 1e-5);
  }
  const plain = load(toTransformerLens(bytes));
  assert.equal(plain.config.pos_embed, 'standard');
  assert.match(plain.info.note, /needs positional_embedding_type in its __metadata__/);
  // Without any hint, LNPre and no normalization look the same: refused, with the line that writes it.
  assert.throws(() => api.load(toTransformerLens(bytes, { metadata: null })),
    /circuitscope will not guess which: save it with: safetensors\.torch\.save_file\(model\.state_dict\(\)/);
});

test('unsupported and damaged TransformerLens files: the loader\'s sentence', () => {
  const bytes = read('ioi-2l1h.safetensors');
  const { tensors } = transformerLensTensors(bytes);
  const f32 = (name, shape) => ({ name, dtype: 'F32', shape, bytes: Buffer.alloc(4 * shape.reduce((a, b) => a * b, 1)) });
  const edit = (fn, meta = {}) => writeSafetensors(fn(tensors.map((t) => ({ ...t }))), { format: 'pt', normalization_type: 'None', ...meta });
  const cases = [
    [edit((ts) => ts.map((t) => (t.name === 'blocks.1.attn.W_Q' ? { ...t, shape: [2, 32, 8] } : t))),
      /tensor blocks\.1\.attn\.W_Q has shape \[2,32,8\], but embed\.W_E, pos_embed\.W_pos and blocks\.0\.attn\.W_Q make it \[1,32,16\]/],
    [edit((ts) => ts.filter((t) => t.name !== 'blocks.0.attn.W_O')), /tensor blocks\.0\.attn\.W_O is missing/],
    [edit((ts) => [...ts, f32('ln_final.w', [32]), f32('ln_final.b', [32])]), /__metadata__ says normalization_type is "None", but the file holds LayerNorm weights/],
    [edit((ts) => [...ts, f32('blocks.0.mlp.W_in', [32, 4])]), /the model has MLPs \(blocks\.0\.mlp\.W_in is \[32, 4\]\) but the file does not say their activation/],
    [edit((ts) => [...ts, f32('blocks.0.mlp.W_in', [32, 4])], { act_fn: 'gelu' }), /tensor blocks\.0\.mlp\.W_out is missing/],
    [edit((ts) => ts.map((t) => (t.name === 'blocks.1.attn.mask' ? { ...t, shape: [4, 4] } : t))),
      /tensor blocks\.1\.attn\.mask has shape \[4,4\], but pos_embed\.W_pos gives n_ctx 5, so it must be \[5,5\]/],
    [writeSafetensors([f32('weights', [3])], null), /has neither circuitscope's __metadata__ \(config and tokenizer\) nor TransformerLens's tensor embed\.W_E/],
  ];
  for (const [file, want] of cases) {
    assert.throws(() => api.load(file), (e) => {
      assert.ok(e instanceof Error);
      assert.match(e.message, /^model file: /);
      assert.match(e.message, want);
      assert.doesNotMatch(e.message, /\n/);
      return true;
    });
  }
});
