// The shipped models' tokenizers keep their ids: every shipped model file tokenizes the same texts
// to the same ids and spans as when tokenizer-ids.json was written (a SHA-256 of the encodings per
// file). The texts: 3,000 of the Hugging Face oracle's generated texts (corpus windows, every
// script, combining marks, emoji, white space, digits, code), and for a word-level model, sentences
// of its own words with punctuation, typed specials and unknown words. A text the tokenizer refuses
// counts as "refused", without its message. Rewrite the file (only when a change of ids is meant,
// which changes what every shipped model reads) with CS_WRITE_TOKENIZER_IDS=1.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { cs, root } from './module.mjs';
import { texts } from './hf-texts.mjs';
import { rng } from '../rng.mjs';

const GOLDEN = path.join(root, 'tests', 'js', 'tokenizer-ids.json');
const MODELS = fs.readdirSync(path.join(root, 'models')).filter((f) => f.endsWith('.safetensors')).sort();

function wordTexts(vocab, n, seed) {
  const r = rng(seed);
  const pick = r.pick;
  const extra = ['', ' ', '  ', '\n', ',', '.', '<', '>', '<MID', 'zzz', "'s", '<BOS>'];
  const out = [];
  for (let i = 0; i < n; ++i) {
    const len = 1 + r.int(12);
    let s = '';
    for (let k = 0; k < len; ++k) s += (r.next() < 0.8 ? pick(vocab) : pick(extra)) + (r.next() < 0.7 ? ' ' : '');
    out.push(s);
  }
  return out;
}

function digest(model, list) {
  const h = createHash('sha256');
  for (const t of list) {
    let line;
    try {
      const e = model.tokenize(t);
      line = JSON.stringify([Array.from(e.ids), Array.from(e.begins), Array.from(e.ends)]);
    } catch {
      line = 'refused';
    }
    h.update(line).update('\n');
  }
  // The vocabulary as the page draws it and the bytes each token stands for.
  const all = Int32Array.from({ length: model.tokenizer.vocab.length }, (_, i) => i);
  const b = model.tokenBytes(all);
  h.update(JSON.stringify(model.tokenText(all))).update(b.bytes).update(new Uint8Array(b.offsets.buffer));
  return h.digest('hex');
}

test('every shipped model tokenizes 3,000 texts to the ids and spans recorded for it', async () => {
  const m = await cs();
  const general = texts(3000, 7);
  const got = {};
  for (const file of MODELS) {
    const model = m.load(fs.readFileSync(path.join(root, 'models', file)));
    try {
      const list = model.tokenizer.kind === 'word' ? wordTexts(model.tokenizer.vocab, 3000, 11) : general;
      got[file] = digest(model, list);
    } finally {
      model.delete();
    }
  }
  if (process.env.CS_WRITE_TOKENIZER_IDS === '1') fs.writeFileSync(GOLDEN, `${JSON.stringify(got, null, 2)}\n`);
  const want = JSON.parse(fs.readFileSync(GOLDEN, 'utf8'));
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), 'the shipped model files changed: rewrite tokenizer-ids.json');
  for (const file of MODELS) assert.equal(got[file], want[file], `${file} tokenizes differently from when tokenizer-ids.json was written`);
});
