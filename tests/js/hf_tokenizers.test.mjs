// The oracle test of our Hugging Face tokenizer pipeline (src/tokenizer/, the CLI's `tokenize`
// command) against Hugging Face's own JS implementation, @huggingface/tokenizers (tokenizers.js).
// Two tokenizer.json files built from GPT-2's real vocabulary and merges (hf-tokenizer-files.mjs):
// GPT-2's own, and a NeoX-style one (NFC, Digits + ByteLevel, pair-form merges, normalized added
// tokens for runs of spaces). For each, 20,000 seeded texts (hf-texts.mjs; CS_HF_TEXTS=N for
// another count) go through tokenizers.js and through one run of
//   build/native/circuitscope tokenize --tokenizer FILE.json --jsonl TEXTS.jsonl
// which must give the same ids for every text, decode them as tokenizers.js does, and give offsets
// that follow the tokens' bytes. Texts with lone surrogates must be refused line by line, and
// malformed tokenizer files refused with a one-line sentence. Needs `npm run build`: a missing
// binary, or one without the `tokenize` command, fails the test (it is never skipped).
// CS_HF_TEXTS=N: N texts per tokenizer instead of 20,000; CS_HF_CLI=PATH: another binary.
//
// The reference is tokenizers.js with two documented corrections where it departs from the Rust
// `tokenizers` crate, which is what real files are written for and what our C++ follows:
//  - ByteLevel's regex: Rust (Oniguruma) reads \s as Unicode White_Space; JS's \s lacks U+0085 and
//    adds U+FEFF. The reference uses \p{White_Space} in that regex.
//  - Digits: Rust splits on char::is_numeric (general categories Nd, Nl, No: '٣', '²', '½', 'Ⅻ');
//    tokenizers.js on JS's \d, ASCII digits only. The reference uses \p{N}.
// How many texts each correction changes is printed as a diagnostic. decode() is called with
// clean_up_tokenization_spaces off: that clean-up belongs to transformers, not to tokenizer.json.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Tokenizer, ByteLevelPreTokenizer, DigitsPreTokenizer, SequencePreTokenizer } from '@huggingface/tokenizers';
import { root } from './module.mjs';
import { gpt2TokenizerJson, neoxTokenizerJson, writeTokenizerFile, GPT2_EOT, NEOX_SPACE_TOKENS, UNICODE_TO_BYTE } from './hf-tokenizer-files.mjs';
import { texts, badTexts } from './hf-texts.mjs';

// CS_HF_CLI=PATH runs another binary (another build directory) in place of build/native/circuitscope.
const CLI = process.env.CS_HF_CLI ? path.resolve(process.env.CS_HF_CLI) : path.join(root, 'build', 'native', 'circuitscope');
const SEED = 1;
const N = (() => {
  const v = process.env.CS_HF_TEXTS;
  if (v === undefined || v === '') return 20000;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`CS_HF_TEXTS must be a whole number of texts of at least 1, not ${JSON.stringify(v)}`);
  return n;
})();

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-hf-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const FILES = {
  'GPT-2': { json: gpt2TokenizerJson },
  'NeoX-style': { json: neoxTokenizerJson },
};
for (const [name, f] of Object.entries(FILES)) f.file = writeTokenizerFile(f.json(), tmp, `${name}.tokenizer.json`);

const RUST_BYTELEVEL = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?![^\p{White_Space}])|\p{White_Space}+/gu;
const RUST_DIGITS = /[^\p{N}]+|\p{N}/gu;

// tokenizers.js for a tokenizer.json object: {stock, ref} where ref carries the two corrections.
function jsTokenizers(json) {
  const config = { clean_up_tokenization_spaces: false };
  const stock = new Tokenizer(json, config);
  const ref = new Tokenizer(json, config);
  const fix = (p) => {
    if (!p) return;
    if (p instanceof ByteLevelPreTokenizer) {
      assert.ok(p.pattern instanceof RegExp, 'tokenizers.js: the ByteLevel pre-tokenizer has no .pattern to correct');
      p.pattern = RUST_BYTELEVEL;
    } else if (p instanceof DigitsPreTokenizer) {
      assert.ok(p.pattern instanceof RegExp && p.config.individual_digits === true, 'tokenizers.js: unexpected Digits pre-tokenizer');
      p.pattern = RUST_DIGITS;
    } else if (p instanceof SequencePreTokenizer && Array.isArray(p.tokenizers)) {
      p.tokenizers.forEach(fix);
    } else {
      assert.fail(`tokenizers.js: a pre-tokenizer this test does not know how to correct (${p.constructor.name})`);
    }
  };
  fix(ref.pre_tokenizer);
  return { stock, ref };
}

const encodeIds = (tok, text) => tok.encode(text, { add_special_tokens: false }).ids;
const decodeIds = (tok, ids) => (ids.length === 0 ? '' : tok.decode(ids));
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// The bytes of each token: added tokens are their content's UTF-8, the others their characters
// mapped back through the ByteLevel table.
function tokenByteLength(token, id, addedIds) {
  if (addedIds.has(id)) return Buffer.byteLength(token, 'utf8');
  let n = 0;
  for (const c of token) {
    if (!UNICODE_TO_BYTE.has(c)) throw new Error(`token ${JSON.stringify(token)} (id ${id}) has a character outside the ByteLevel alphabet`);
    n++;
  }
  return n;
}

// UTF-8 byte offset -> UTF-16 index, rounding down (begin) or up (end) to the character's bounds.
function offsetMaps(text) {
  const len = Buffer.byteLength(text, 'utf8');
  const down = new Int32Array(len + 1), up = new Int32Array(len + 1);
  let b = 0, u = 0;
  for (const ch of text) {
    const L = Buffer.byteLength(ch, 'utf8');
    for (let k = 0; k < L; k++) { down[b + k] = u; up[b + k] = k === 0 ? u : u + ch.length; }
    b += L; u += ch.length;
  }
  down[len] = up[len] = u;
  return { len, down, up };
}

// The reference results for one tokenizer file over the texts, with timings; memoised.
const refCache = new Map();
function reference(name, list) {
  const key = `${name}:${list.length}`;
  if (refCache.has(key)) return refCache.get(key);
  const json = FILES[name].json();
  const addedIds = new Set(json.added_tokens.map((t) => t.id));
  const { stock, ref } = jsTokenizers(json);
  const t0 = performance.now();
  const out = list.map((text) => {
    const e = ref.encode(text, { add_special_tokens: false });
    return { ids: e.ids, tokens: e.tokens };
  });
  const encodeMs = performance.now() - t0;
  const t1 = performance.now();
  for (const o of out) o.decoded = decodeIds(ref, o.ids);
  const decodeMs = performance.now() - t1;
  let stockDiffers = 0;
  // Only texts with U+0085, U+FEFF or a non-ASCII numeric character can differ.
  list.forEach((text, i) => { if (/[\u0085\uFEFF]|[^\P{N}0-9]/u.test(text) && !same(encodeIds(stock, text), out[i].ids)) stockDiffers++; });
  const r = { tok: ref, stock, addedIds, out, encodeMs, decodeMs, stockDiffers };
  refCache.set(key, r);
  return r;
}

// Runs the CLI over a list of texts (one JSONL file, one process); returns {status, signal,
// stderr, lines (parsed), ms}.
let runCount = 0;
function runCli(tokFile, list, { timeout = 20 * 60 * 1000 } = {}) {
  const jsonl = path.join(tmp, `texts-${runCount++}.jsonl`);
  fs.writeFileSync(jsonl, list.map((t) => JSON.stringify(t) + '\n').join(''));
  const t0 = performance.now();
  const r = spawnSync(CLI, ['tokenize', '--tokenizer', tokFile, '--jsonl', jsonl], { encoding: 'utf8', maxBuffer: 1 << 30, timeout });
  const ms = performance.now() - t0;
  return { ...r, ms, jsonl };
}

// Fails (never skips) unless the CLI exists and knows `tokenize`.
let cliChecked = false;
function requireCli() {
  if (cliChecked) return;
  const rel = path.relative(root, CLI).startsWith('..') ? CLI : path.relative(root, CLI);
  assert.ok(fs.existsSync(CLI), `${rel} is missing: build it with \`npm run build\` before running this test`);
  const r = runCli(FILES['GPT-2'].file, ['Hello world'], { timeout: 60000 });
  assert.ok(!r.error, `${rel} could not be run: ${r.error?.message}`);
  assert.ok(!/unknown command/i.test(r.stderr), `${rel} does not know the \`tokenize\` command (it said ${JSON.stringify(r.stderr.trim().split("\n")[0])}): rebuild it with \`npm run build\``);
  assert.equal(r.status, 0, `${rel} tokenize failed on "Hello world" (status ${r.status}, signal ${r.signal}): ${r.stderr.trim()}`);
  cliChecked = true;
}

function parseLines(stdout, expected, what) {
  const lines = stdout.split('\n');
  if (lines.at(-1) === '') lines.pop();
  assert.equal(lines.length, expected, `${what}: the CLI printed ${lines.length} lines for ${expected} input lines`);
  return lines.map((l, i) => {
    try { return JSON.parse(l); } catch { assert.fail(`${what}: output line ${i + 1} is not JSON: ${l.slice(0, 300)}`); }
  });
}

const INTERNALS = /json\.exception|\[json\.|nlohmann|std::|bad_alloc|basic_string|vector::|_M_|what\(\)|terminate called|Assertion|AddressSanitizer|runtime error:|exception/i;
// A one-line human sentence: starts with a capital or a quote (after the CLI's optional
// "circuitscope tokenize: " prefix, where the project's messages may start in lower case), has
// words, no library internals.
function sentenceProblem(s) {
  if (typeof s !== 'string' || s.trim() === '') return 'empty';
  if (s.includes('\n')) return 'more than one line';
  if (INTERNALS.test(s)) return 'library text';
  const prefixed = /^circuitscope tokenize: (.+)$/.exec(s);
  const body = prefixed ? prefixed[1] : s;
  if (!(prefixed ? /^["'“‘A-Za-z/.]/ : /^["'“‘A-Z]/).test(body)) return 'does not start like a sentence';
  if ((body.match(/\p{L}{2,}/gu) || []).length < 3) return 'too few words';
  if (body.length > 600) return 'too long';
  return null;
}

test('the oracle itself: tokenizers.js reads both files, knows GPT-2\'s ids, and its tokens tile the texts', (t) => {
  for (const name of Object.keys(FILES)) {
    const json = FILES[name].json();
    // The written file is what is read back.
    assert.deepEqual(JSON.parse(fs.readFileSync(FILES[name].file, 'utf8')), json);
    const { stock, ref } = jsTokenizers(json);
    for (const tok of [stock, ref]) {
      assert.deepEqual(encodeIds(tok, 'Hello world'), [15496, 995], name);
      assert.deepEqual(encodeIds(tok, ' the'), [262], name);
      assert.deepEqual(encodeIds(tok, '<|endoftext|>'), [GPT2_EOT], name);
      assert.deepEqual(encodeIds(tok, 'Hello world<|endoftext|> the'), [15496, 995, GPT2_EOT, 262], name);
      // encode adds nothing by default either: the ByteLevel post-processor adds no special tokens.
      assert.deepEqual(tok.encode('Hello world').ids, [15496, 995], name);
      assert.equal(tok.decode([15496, 995, GPT2_EOT, 262]), 'Hello world<|endoftext|> the', name);
    }
    if (name === 'GPT-2') {
      assert.deepEqual(encodeIds(ref, 'a  b'), [64, 220, 275]);
      assert.deepEqual(encodeIds(ref, '12345'), [10163, 2231]);
      assert.notDeepEqual(encodeIds(ref, 'e\u0301'), encodeIds(ref, '\u00e9'), 'GPT-2 has no normalizer');
    } else {
      assert.deepEqual(encodeIds(ref, 'a  b'), [64, NEOX_SPACE_TOKENS[0][0], 65], 'the added token for two spaces');
      assert.deepEqual(encodeIds(ref, '     x'), [NEOX_SPACE_TOKENS[2][0], 2124], 'the longest space run first');
      assert.deepEqual(encodeIds(ref, '12345'), [16, 17, 18, 19, 20], 'Digits, one by one');
      assert.deepEqual(encodeIds(ref, 'e\u0301'), encodeIds(ref, '\u00e9'), 'NFC');
      // The Digits correction: '½' is numeric for Rust (char::is_numeric), not a \d for JS.
      assert.deepEqual(encodeIds(stock, ' ½'), [25208]);
      assert.deepEqual(encodeIds(ref, ' ½'), [220, 23141]);
      assert.deepEqual(encodeIds(ref, 'x ٣'), [87, 220, 149, 96]);
    }
    // 'x \u0085y': JS reads ' \u0085' as a space and a symbol, one piece; Rust as two spaces' worth of pieces.
    assert.deepEqual(encodeIds(stock, 'x \u0085y'), [87, 1587, 227, 88], name);
    assert.deepEqual(encodeIds(ref, 'x \u0085y'), [87, 220, 126, 227, 88], name);
    assert.deepEqual(encodeIds(stock, 'x \uFEFFy'), [87, 220, 171, 119, 123, 88], name);
    assert.deepEqual(encodeIds(ref, 'x \uFEFFy'), [87, 27332, 119, 123, 88], name);
  }
  // The offsets rule on tokenizers.js's own tokens: for NFC-invariant texts the tokens' bytes add
  // up to the text's, and decode(encode(x)) == x for nearly all texts.
  const list = texts(Math.min(N, 3000), SEED);
  for (const name of Object.keys(FILES)) {
    const r = reference(name, list);
    let roundtrips = 0;
    list.forEach((text, i) => {
      const o = r.out[i];
      if (text.normalize('NFC') === text) {
        const total = o.tokens.reduce((a, tok, k) => a + tokenByteLength(tok, o.ids[k], r.addedIds), 0);
        assert.equal(total, Buffer.byteLength(text, 'utf8'), `${name}: the tokens of ${JSON.stringify(text)} do not add up to its bytes`);
        if (text.length > 0) assert.ok(o.ids.length > 0);
      }
      if (o.decoded === text) roundtrips++;
    });
    assert.ok(roundtrips > 0.8 * list.length, `${name}: only ${roundtrips} of ${list.length} texts decode back to themselves`);
    t.diagnostic(`${name}: ${roundtrips}/${list.length} texts round-trip through tokenizers.js`);
  }
});

for (const name of Object.keys(FILES)) {
  test(`${name} tokenizer.json: the CLI's ids, decoded text and offsets agree with tokenizers.js on ${N} texts`, (t) => {
    requireCli();
    const list = texts(N, SEED);
    const r = reference(name, list);
    t.diagnostic(`${name}: tokenizers.js encoded ${N} texts in ${r.encodeMs.toFixed(0)} ms and decoded them in ${r.decodeMs.toFixed(0)} ms; ` +
      `the Rust-compatibility corrections change ${r.stockDiffers} texts' ids`);
    const run = runCli(FILES[name].file, list);
    assert.ok(!run.error, `the CLI could not finish: ${run.error?.message}`);
    assert.equal(run.signal, null, `the CLI was killed by ${run.signal}`);
    assert.equal(run.status, 0, `the CLI exited with ${run.status}: ${run.stderr.slice(0, 2000)}`);
    t.diagnostic(`${name}: the CLI tokenized ${N} texts in ${run.ms.toFixed(0)} ms (one process, ${path.basename(run.jsonl)})`);
    const got = parseLines(run.stdout, list.length, name);

    // ids
    const idDiffs = [];
    list.forEach((text, i) => {
      const g = got[i];
      if (!g || !Array.isArray(g.ids) || !same(g.ids, r.out[i].ids)) idDiffs.push(i);
    });
    if (idDiffs.length) {
      const show = idDiffs.slice(0, 5).map((i) => {
        const g = got[i];
        const ourTokens = Array.isArray(g?.ids) ? g.ids.map((id) => r.tok.id_to_token(id) ?? `<${id}?>`) : null;
        return `  text ${i}: ${JSON.stringify(list[i])}\n    tokenizers.js: ${JSON.stringify(r.out[i].ids)} ${JSON.stringify(r.out[i].tokens)}\n` +
          `    circuitscope:  ${g?.error !== undefined ? `error ${JSON.stringify(g.error)}` : `${JSON.stringify(g?.ids)} ${JSON.stringify(ourTokens)}`}`;
      });
      assert.fail(`${name}: ${idDiffs.length} of ${list.length} texts get other ids than from tokenizers.js; the first ${show.length}:\n${show.join('\n')}`);
    }

    // decoded
    const decDiffs = [];
    let roundtrips = 0;
    list.forEach((text, i) => {
      const want = r.out[i].decoded;
      if (want === text) roundtrips++;
      if (got[i].decoded !== want || (want === text && got[i].decoded !== text)) decDiffs.push(i);
    });
    if (decDiffs.length) {
      const firstDiff = (a, b) => { let k = 0; while (k < a.length && a[k] === b?.[k]) k++; return k; };
      const show = decDiffs.slice(0, 5).map((i) => `  text ${i}: ${JSON.stringify(list[i])}\n    tokenizers.js decode: ${JSON.stringify(r.out[i].decoded)}\n` +
        `    circuitscope decoded: ${JSON.stringify(got[i].decoded)}\n    (they part at UTF-16 index ${firstDiff(r.out[i].decoded, got[i].decoded)})`);
      assert.fail(`${name}: ${decDiffs.length} texts decode otherwise than with tokenizers.js; the first ${show.length}:\n${show.join('\n')}`);
    }
    t.diagnostic(`${name}: ${roundtrips}/${list.length} texts decode back to themselves`);

    // offsets
    const offDiffs = [];
    let exact = 0;
    list.forEach((text, i) => {
      const g = got[i];
      const problem = offsetProblem(text, g, r.out[i], r.addedIds);
      if (problem === 'exact') exact++;
      else if (problem) offDiffs.push([i, problem]);
    });
    if (offDiffs.length) {
      const show = offDiffs.slice(0, 5).map(([i, p]) => `  text ${i}: ${JSON.stringify(list[i])}: ${p}\n    tokens ${JSON.stringify(r.out[i].tokens)}\n    bytes ${JSON.stringify(got[i].bytes)} spans ${JSON.stringify(got[i].spans)}`);
      assert.fail(`${name}: ${offDiffs.length} texts have wrong offsets; the first ${show.length}:\n${show.join('\n')}`);
    }
    assert.ok(exact > 0.5 * list.length, `${name}: only ${exact} texts had their offsets checked exactly`);
    t.diagnostic(`${name}: offsets checked exactly against tokenizers.js's tokens on ${exact} NFC-invariant texts, by the general rules on all`);
  });
}

// What is wrong with one text's offsets; 'exact' when they are right and were checked against the
// tokens' bytes, null when right by the general rules only.
function offsetProblem(text, g, want, addedIds) {
  const n = want.ids.length;
  if (!Array.isArray(g.bytes) || g.bytes.length !== n) return `${g.bytes?.length} byte ranges for ${n} tokens`;
  if (!Array.isArray(g.spans) || g.spans.length !== n) return `${g.spans?.length} spans for ${n} tokens`;
  const { len, down, up } = offsetMaps(text);
  for (let k = 0; k < n; k++) {
    const [b, e] = g.bytes[k] ?? [];
    if (!Number.isInteger(b) || !Number.isInteger(e) || g.bytes[k].length !== 2) return `byte range ${k} is ${JSON.stringify(g.bytes[k])}`;
    if (!(0 <= b && b <= e && e <= len)) return `byte range ${k} [${b},${e}) is outside [0,${len}]`;
    if (k > 0) {
      const [pb, pe] = g.bytes[k - 1];
      if (b < pb || e < pe) return `byte range ${k} [${b},${e}) goes back from [${pb},${pe})`;
      if (b > pe) return `a gap before byte range ${k} [${b},${e}) after [${pb},${pe})`;
    }
    const s = g.spans[k];
    if (!Array.isArray(s) || s.length !== 2 || s[0] !== down[b] || s[1] !== up[e]) {
      return `span ${k} is ${JSON.stringify(s)}, not [${down[b]},${up[e]}] from bytes [${b},${e})`;
    }
  }
  if (n > 0 && (g.bytes[0][0] !== 0 || g.bytes[n - 1][1] !== len)) return `the byte ranges run from ${g.bytes[0][0]} to ${g.bytes[n - 1][1]}, not over [0,${len})`;
  if (n === 0 && len > 0) return 'no tokens for a non-empty text';
  if (text.normalize('NFC') !== text) return null;
  let at = 0;
  for (let k = 0; k < n; k++) {
    const end = at + tokenByteLength(want.tokens[k], want.ids[k], addedIds);
    if (g.bytes[k][0] !== at || g.bytes[k][1] !== end) return `byte range ${k} is [${g.bytes[k]}), not [${at},${end}) from the tokens' bytes`;
    at = end;
  }
  return 'exact';
}

test('texts with lone surrogates are refused one by one with a sentence, and the texts after them answered', () => {
  requireCli();
  const bad = badTexts();
  const good = texts(200, SEED + 1);
  for (const name of Object.keys(FILES)) {
    const r = reference(name, good);
    const list = [...bad, ...good, bad[0], 'after the last bad one'];
    const run = runCli(FILES[name].file, list, { timeout: 120000 });
    assert.ok(!run.error, `the CLI could not finish: ${run.error?.message}`);
    assert.equal(run.signal, null, `the CLI was killed by ${run.signal}`);
    const got = parseLines(run.stdout, list.length, name);
    const refuse = (g, text) => {
      assert.ok(g && typeof g.error === 'string', `${name}: ${JSON.stringify(text)} was not refused: ${JSON.stringify(g).slice(0, 300)}`);
      const p = sentenceProblem(g.error);
      assert.equal(p, null, `${name}: the refusal of ${JSON.stringify(text)} is not a sentence (${p}): ${JSON.stringify(g.error)}`);
      assert.equal(g.ids, undefined, `${name}: a refused text has ids`);
    };
    bad.forEach((text, i) => refuse(got[i], text));
    refuse(got[bad.length + good.length], bad[0]);
    good.forEach((text, i) => {
      const g = got[bad.length + i];
      assert.ok(g && Array.isArray(g.ids), `${name}: ${JSON.stringify(text)} after the bad texts was not answered: ${JSON.stringify(g).slice(0, 300)}`);
      assert.deepEqual(g.ids, r.out[i].ids, `${name}: ${JSON.stringify(text)} after the bad texts`);
    });
    const last = got.at(-1);
    assert.deepEqual(last.ids, encodeIds(jsTokenizers(FILES[name].json()).ref, 'after the last bad one'));
  }
});

test('malformed tokenizer files are refused within 10 s with a one-line sentence on stderr', (t) => {
  requireCli();
  const gpt2 = gpt2TokenizerJson;
  const cases = [];
  const add = (label, obj) => cases.push([label, obj]);
  const full = JSON.stringify(gpt2());
  add('empty file', '');
  add('truncated JSON', full.slice(0, Math.floor(full.length / 2)));
  add('truncated JSON (a few bytes)', '{"version": "1.0", "model": {"ty');
  add('not JSON', 'tokenizer: gpt2\n');
  add('not an object (an array)', '[1, 2, 3]');
  add('not an object (a string)', '"tokenizer.json"');
  add('model missing', (() => { const j = gpt2(); delete j.model; return j; })());
  add('model null', { ...gpt2(), model: null });
  add('unknown model type Unigram', { ...gpt2(), model: { type: 'Unigram', unk_id: 0, vocab: [['<unk>', 0], ['a', -1.5], ['b', -2.5]], byte_fallback: false } });
  add('unknown model type Foo', (() => { const j = gpt2(); j.model.type = 'Foo'; return j; })());
  add('vocab not an object', (() => { const j = gpt2(); j.model.vocab = ['a', 'b']; return j; })());
  add('merges not a list', (() => { const j = gpt2(); j.model.merges = 'Ġ t'; return j; })());
  add('a merge of one token', (() => { const j = gpt2(); j.model.merges.splice(10, 0, 'Ġt'); return j; })());
  add('a merge of a token not in the vocab', (() => { const j = gpt2(); j.model.merges.splice(5, 0, 'Ġ \u4e00'); return j; })());
  add('a merge (pair form) of a token not in the vocab', (() => { const j = neoxTokenizerJson(); j.model.merges.push(['\u4e00', 'Ġ']); return j; })());
  add('duplicate ids in the vocab', (() => { const j = gpt2(); j.model.vocab['Ġzzqqzz'] = 15496; return j; })());
  add('a negative id in the vocab', (() => { const j = gpt2(); j.model.vocab['Ġzzqqzz'] = -1; return j; })());
  add('a merge whose result is not in the vocab', (() => {
    const j = gpt2();
    const letters = [...'QWXZJKVqwxzjkv'];
    let pair = null;
    for (const a of letters) for (const b of letters) if (!pair && !(a + b in j.model.vocab)) pair = `${a} ${b}`;
    assert.ok(pair, 'no pair of letters outside GPT-2\'s vocab');
    j.model.merges.splice(3, 0, pair);
    return j;
  })());
  add('unsupported pre_tokenizer Metaspace', { ...gpt2(), pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true } });
  add('unknown pre_tokenizer type in a Sequence', { ...gpt2(), pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Nonesuch' }, { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] } });
  add('unknown normalizer type', { ...gpt2(), normalizer: { type: 'Nonesuch' } });
  add('added_tokens not a list', { ...gpt2(), added_tokens: { id: 50256 } });

  const texts1 = path.join(tmp, 'one.jsonl');
  fs.writeFileSync(texts1, JSON.stringify('Hello world') + '\n');
  const problems = [];
  for (const [i, [label, obj]] of cases.entries()) {
    const file = writeTokenizerFile(obj, tmp, `bad-${i}.json`);
    const t0 = performance.now();
    const r = spawnSync(CLI, ['tokenize', '--tokenizer', file, '--jsonl', texts1], { encoding: 'utf8', timeout: 10000, maxBuffer: 1 << 26 });
    const ms = performance.now() - t0;
    const line = (r.stderr ?? '').replace(/\n$/, '');
    let p = null;
    if (r.error?.code === 'ETIMEDOUT') p = 'took more than 10 s';
    else if (r.error) p = `could not run: ${r.error.message}`;
    else if (r.signal) p = `killed by ${r.signal}`;
    else if (r.status === 0) p = `exit status 0, stdout ${JSON.stringify(r.stdout.slice(0, 200))}`;
    else if (r.stdout.trim() !== '') p = `printed ${JSON.stringify(r.stdout.slice(0, 200))} on stdout`;
    else p = sentenceProblem(line);
    if (p) problems.push(`  ${label}: ${p}; stderr ${JSON.stringify(line.slice(0, 500))}`);
    else t.diagnostic(`${label} (${ms.toFixed(0)} ms): ${line}`);
  }
  assert.equal(problems.length, 0, `malformed tokenizer files not refused properly:\n${problems.join('\n')}`);
});
