// Damaged tokenizer.json files through the WASM module's load(bytes, {tokenizer}): 400 variants of
// a small byte-level file (cut short, bytes changed, a key removed, a value of another type, deep
// nesting). Each one either opens and tokenizes text, or is refused with an Error whose message is
// the core's sentence ("tokenizer.json: ..."), never an internal error; and the module's memory
// stays bounded. Seeded: a failure names its case number, replayable with the same seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cs } from './module.mjs';
import { tlVocabFixture } from './tlens-fixture.mjs';
import { rng } from '../rng.mjs';
import { BYTE_TO_UNICODE } from './hf-tokenizer-files.mjs';

const G = BYTE_TO_UNICODE[32];

function small() {
  const vocab = Object.fromEntries(BYTE_TO_UNICODE.map((c, i) => [c, i]));
  const merges = [[G, 't'], ['h', 'e'], [`${G}t`, 'he'], ['i', 'n'], [G, 'a']];
  let id = 256;
  for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = id++;
  return {
    version: '1.0',
    added_tokens: [{ id: id, content: '<|endoftext|>', special: true, normalized: false, single_word: false, lstrip: false, rstrip: false }],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] },
    post_processor: { type: 'ByteLevel', trim_offsets: true },
    decoder: { type: 'ByteLevel' },
    model: { type: 'BPE', dropout: null, unk_token: null, vocab, merges: merges.map(([a, b]) => `${a} ${b}`) },
  };
}

// Every [object, key] of a JSON value, to damage one of them.
function slots(v, out = []) {
  if (v && typeof v === 'object') for (const k of Object.keys(v)) { out.push([v, k]); slots(v[k], out); }
  return out;
}

const ODD = [null, true, -1, 1e400, 2 ** 40, 0.5, '', 'Unigram', [], {}, [[]], { type: 'Sequence' }, '\u0000', 'a b c'];

function variant(r, i) {
  const base = small();
  const text = JSON.stringify(base);
  switch (i % 5) {
    case 0: return text.slice(0, r.int(text.length));   // cut short
    case 1: {   // a few characters changed
      const a = [...text];
      for (let k = 0; k < 1 + r.int(4); k++) a[r.int(a.length)] = r.pick(['{', '}', '"', ',', ':', '0', '9', ' ', 'x', '\\', ']']);
      return a.join('');
    }
    case 2: { const s = r.pick(slots(base)); delete s[0][s[1]]; return JSON.stringify(base); }
    case 3: { const s = r.pick(slots(base)); s[0][s[1]] = r.pick(ODD); return JSON.stringify(base); }
    default: {   // a stage nested deeply
      let n = { type: 'NFC' };
      for (let k = 0; k < 1 + r.int(40); k++) n = { type: 'Sequence', normalizers: [n] };
      base.normalizer = n;
      return JSON.stringify(base);
    }
  }
}

test('400 damaged tokenizer.json files open or are refused in a sentence, with bounded memory', async (t) => {
  const c = await cs();
  const file = tlVocabFixture(300);
  const r = rng(2024);
  let opened = 0;
  let refused = 0;
  let heapAfterWarmup = 0;
  for (let i = 0; i < 400; i++) {
    const json = variant(r, i);
    let m = null;
    try {
      m = c.load(file, { tokenizer: json });
    } catch (e) {
      assert.ok(e instanceof Error, `case ${i}: threw ${String(e)}`);
      assert.match(e.message, /^tokenizer\.json: \S/, `case ${i}: ${e.message}`);
      assert.doesNotMatch(e.message, /internal error|std::|nlohmann|json\.exception/, `case ${i}: ${e.message}`);
      refused++;
    }
    if (m) {
      try {
        const t = m.tokenize('the 12 inn é <|endoftext|> x');
        assert.ok(t.ids.length > 1, `case ${i}: no tokens`);
        opened++;
      } catch (e) {
        assert.doesNotMatch(String(e?.message), /internal error/, `case ${i}: ${e?.message}`);
        refused++;
      } finally {
        m.delete();
      }
    }
    if (i === 49) heapAfterWarmup = c.memory().allocated;
  }
  t.diagnostic(`${opened} opened, ${refused} refused`);
  assert.ok(opened > 20 && refused > 100, `opened ${opened}, refused ${refused}: the variants should do both`);
  assert.ok(c.memory().allocated - heapAfterWarmup < 4 * 2 ** 20,
    `allocations grew by ${((c.memory().allocated - heapAfterWarmup) / 2 ** 20).toFixed(1)} MB over 350 files`);
});
