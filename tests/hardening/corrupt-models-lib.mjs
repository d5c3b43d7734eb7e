// The corrupt-model corpus: seeded damage to the shipped model files (truncations at every
// structural boundary, bad header lengths, headers that are not objects, wrong dtypes, shapes and
// offsets, missing and unknown tensors, bad config values, NaN/Inf/huge weights, random byte
// flips) plus legal but enormous or overflowing models built from scratch, and a runner that puts
// each file through the CLI and checks what comes back. Used by tests/hardening/corrupt-models.mjs
// (the full corpus) and tests/js/corrupt-models.test.mjs (a seeded sample inside npm test).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { toTransformerLens, transformerLensTensors, writeSafetensors } from '../js/tlens-fixture.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// splitmix64: the same seed gives the same corpus everywhere.
export function rng(seed) {
  let s = BigInt.asUintN(64, BigInt(seed));
  const next = () => {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    return z ^ (z >> 31n);
  };
  return { below: (n) => Number(next() % BigInt(n)), next };
}

// ------------------------------------------------------------------ reading and writing files
function u64le(v) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)));
  return b;
}

export function split(bytes) {
  const n = Number(bytes.readBigUInt64LE(0));
  const headerText = bytes.subarray(8, 8 + n).toString('utf8');
  return { header: JSON.parse(headerText), headerText, data: bytes.subarray(8 + n), headerLen: n };
}

// headerText is raw text (so that it can hold what JSON.stringify cannot write, e.g. 1e400).
export function join(headerText, data, lenOverride) {
  let h = headerText;
  while (Buffer.byteLength(h) % 8) h += ' ';
  const hb = Buffer.from(h, 'utf8');
  return Buffer.concat([u64le(lenOverride ?? hb.length), hb, Buffer.from(data)]);
}

// JSON text with big integers written exactly (JSON.stringify cannot hold 2^63).
function stringify(x) {
  if (typeof x === 'bigint') return x.toString();
  if (x && x.__raw !== undefined) return x.__raw;
  if (Array.isArray(x)) return `[${x.map(stringify).join(',')}]`;
  if (x && typeof x === 'object') return `{${Object.entries(x).map(([k, v]) => `${JSON.stringify(k)}:${stringify(v)}`).join(',')}}`;
  return JSON.stringify(x);
}
const raw = (text) => ({ __raw: text });

function editHeader(src, fn) {
  const header = JSON.parse(JSON.stringify(src.header));
  fn(header);
  return join(stringify(header), src.data);
}

function editConfig(src, fn) {
  return editHeader(src, (h) => {
    const c = JSON.parse(h.__metadata__.config);
    fn(c);
    h.__metadata__.config = stringify(c);
  });
}

function tensors(src) {
  return Object.keys(src.header).filter((k) => k !== '__metadata__');
}

function setFloats(src, name, fn) {
  const data = Buffer.from(src.data);
  const e = src.header[name];
  const [b, end] = e.data_offsets;
  const size = e.dtype === 'F16' ? 2 : 4;
  for (let i = 0, off = b; off < end; off += size, ++i) {
    const v = fn(i);
    if (v === undefined) continue;
    if (size === 4) data.writeFloatLE(v, off);
    else data.writeUInt16LE(f16bits(v), off);
  }
  return join(JSON.stringify(src.header), data);
}

function f16bits(v) {
  if (Number.isNaN(v)) return 0x7e00;
  if (!Number.isFinite(v) || Math.abs(v) >= 65520) return v < 0 ? 0xfc00 : 0x7c00;
  const f = new Float32Array([v]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = ((u >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign;
  if (exp >= 31) return sign | 0x7c00;
  return sign | (exp << 10) | ((u >>> 13) & 0x3ff);
}

// A consistent model file for a config (weights from fill(i) or small values).
export function buildModel(cfg, vocab, fill = (i) => ((i * 7919) % 13 - 6) / 20) {
  const { n_layers: L, n_heads: H, d_model: D, d_head: Dh, n_ctx: T } = cfg;
  const V = vocab.length;
  const list = [['embed.W_E', [V, D]]];
  if (cfg.pos_embed !== 'none') list.push(['pos_embed.W_pos', [T, D]]);
  for (let l = 0; l < L; ++l) {
    for (const w of ['W_Q', 'W_K', 'W_V']) list.push([`blocks.${l}.attn.${w}`, [H, D, Dh]]);
    list.push([`blocks.${l}.attn.W_O`, [H, Dh, D]]);
  }
  list.push(['unembed.W_U', [D, V]]);
  const header = {
    __metadata__: {
      format: 'circuitscope', format_version: '1',
      config: JSON.stringify({ ...cfg, d_vocab: V, smeared_keys: false, use_bias: false }),
      tokenizer: JSON.stringify({ kind: 'char', vocab }), info: '{}',
    },
  };
  let off = 0;
  const chunks = [];
  for (const [name, shape] of list) {
    const n = shape.reduce((a, b) => a * b, 1);
    const buf = Buffer.alloc(4 * n);
    for (let i = 0; i < n; ++i) buf.writeFloatLE(fill(i, name), 4 * i);
    header[name] = { dtype: 'F32', shape, data_offsets: [off, off + 4 * n] };
    off += 4 * n;
    chunks.push(buf);
  }
  return join(JSON.stringify(header), Buffer.concat(chunks));
}

// ------------------------------------------------------------------ the corpus
const CHAR_VOCAB = ['<BOS>', '<UNK>', ...'abcdefghij ']
/** A character vocabulary of V tokens: <BOS>, <UNK>, a..j, space, then CJK ideographs (U+4E00 on, then U+20000 on). */
function largeVocabulary(V) {
  const out = [...CHAR_VOCAB];
  for (let cp = 0x4e00; out.length < V && cp <= 0x9fff; ++cp) out.push(String.fromCodePoint(cp));
  for (let cp = 0x20000; out.length < V; ++cp) out.push(String.fromCodePoint(cp));
  return out;
}
const INT_FIELDS = ['n_layers', 'n_heads', 'd_model', 'd_head', 'n_ctx', 'd_vocab'];
const BAD_INTS = [0, -1, 2n ** 32n, 2n ** 32n + 2n, 2n ** 63n, 2n ** 64n - 1n, 1.5, 2.5, '2', null, true, [], raw('1e400'), raw('-1e400'), 1e300];

// Every case: {name, bytes, text} (text: what `run --text` feeds it). Deterministic for a seed.
function pick(r, list, n) {
  const idx = list.map((_, i) => i);
  for (let i = 0; i < n && i < idx.length; ++i) {
    const j = i + r.below(idx.length - i);
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  return idx.slice(0, n).sort((a, b) => a - b).map((i) => list[i]);
}

export function generateCorpus({ seed = 1, flipsPerModel = 30 } = {}) {
  const r = rng(seed);
  const cases = [];
  const modelFiles = fs.readdirSync(path.join(ROOT, 'models')).filter((f) => f.endsWith('.safetensors')).sort();
  const sources = modelFiles.map((f) => path.join('models', f));
  sources.push('models/snapshots/char-2l/step500.safetensors'); // an F16 file
  for (const rel of sources) {
    const bytes = fs.readFileSync(path.join(ROOT, rel));
    const src = split(bytes);
    const base = path.basename(rel, '.safetensors') + (rel.includes('snapshots') ? '-f16' : '');
    const tok = JSON.parse(src.header.__metadata__.tokenizer);
    const text = tok.kind === 'word' ? tok.vocab.slice(2, 6).join(' ') : 'Alice was beginning to get very tired.';
    const add = (name, b) => cases.push({ name: `${base}:${name}`, bytes: b, text });
    const names = tensors(src);
    const end = 8 + src.headerLen;

    // Truncations at every structural boundary.
    const cuts = new Set([0, 1, 4, 7, 8, 9, end - 1, end, end + 1, bytes.length - 1]);
    for (const n of names) {
      const [b, e] = src.header[n].data_offsets;
      for (const x of [b, b + 1, e - 1, e]) cuts.add(end + x);
    }
    for (const c of [...cuts].sort((a, b) => a - b)) if (c >= 0 && c < bytes.length) add(`truncated at ${c}`, bytes.subarray(0, c));
    // Header lengths.
    for (const [what, len] of [['0', 0n], ['past the end', BigInt(bytes.length)], ['2^63', 2n ** 63n], ['2^64-1', 2n ** 64n - 1n],
      ['one short', BigInt(src.headerLen - 1)], ['one long', BigInt(src.headerLen + 1)]]) {
      const b = Buffer.from(bytes);
      b.writeBigUInt64LE(len, 0);
      add(`header length ${what}`, b);
    }
    // Headers that are not objects or not JSON.
    for (const h of ['[]', '1', '"text"', 'null', 'true', '{', '', '{"__metadata__":', '['.repeat(100000), '{"a":1e400}'])
      add(`header ${JSON.stringify(h.slice(0, 12))}`, join(h, src.data));
    // Metadata.
    add('no metadata', editHeader(src, (h) => delete h.__metadata__));
    add('metadata an array', editHeader(src, (h) => { h.__metadata__ = []; }));
    add('config not a string', editHeader(src, (h) => { h.__metadata__.config = { n_layers: 1 }; }));
    add('config not JSON', editHeader(src, (h) => { h.__metadata__.config = '{n_layers'; }));
    add('config an array', editHeader(src, (h) => { h.__metadata__.config = '[1,2]'; }));
    add('tokenizer empty vocab', editHeader(src, (h) => { h.__metadata__.tokenizer = '{"kind":"char","vocab":[]}'; }));
    add('tokenizer vocab numbers', editHeader(src, (h) => { h.__metadata__.tokenizer = '{"kind":"word","vocab":[1,2]}'; }));
    add('info 1e400', editHeader(src, (h) => { h.__metadata__.info = '{"step":1e400}'; }));
    // Config values: every bad value on the first source and the F16 one, a seeded five per
    // field on the others (the config reader does not depend on the model).
    const everyValue = rel === sources[0] || rel.includes('snapshots');
    for (const f of INT_FIELDS) {
      const values = everyValue ? BAD_INTS : pick(r, BAD_INTS, 5);
      for (const v of values) add(`config ${f}=${stringify(v)}`, editConfig(src, (c) => { c[f] = v; }));
    }
    for (const [f, v] of [['pos_embed', 'rotary'], ['pos_embed', 3], ['use_bias', 1], ['smeared_keys', 'yes'], ['init_std', raw('1e400')], ['init_std', 'x'], ['extra', 1]])
      add(`config ${f}=${stringify(v)}`, editConfig(src, (c) => { c[f] = v; }));
    // Tensor entries: the first and last tensors and one seeded other (every tensor of the first
    // source), each with every edit.
    const chosen = everyValue ? names : [...new Set([names[0], names[names.length - 1], names[r.below(names.length)]])];
    for (const n of chosen) {
      for (const d of ['I64', 'F64', 'BF16', 'f32', 5, null]) add(`${n} dtype ${d}`, editHeader(src, (h) => { h[n].dtype = d; }));
      const sh = src.header[n].shape;
      for (const [what, s] of [['reversed', [...sh].reverse()], ['extra dim', [...sh, 1]], ['negative', sh.map((x, i) => (i ? x : -x))],
        ['2^31', [2n ** 31n, ...sh.slice(1)]], ['2^32', [2n ** 32n + BigInt(sh[0]), ...sh.slice(1)]], ['fraction', [sh[0] + 0.5, ...sh.slice(1)]],
        ['string', sh.map(String)], ['empty', []], ['scalar', 3]])
        add(`${n} shape ${what}`, editHeader(src, (h) => { h[n].shape = s; }));
      const [b, e] = src.header[n].data_offsets;
      const other = names[(names.indexOf(n) + 1) % names.length];
      for (const [what, o] of [['reversed', [e, b]], ['past the end', [b + src.data.length, e + src.data.length]], ['overlapping', src.header[other].data_offsets],
        ['shifted', [b + 4, e + 4]], ['2^64-1', [2n ** 64n - 1n, 2n ** 64n - 1n]], ['negative', [-4, e]], ['fraction', [b + 0.5, e]], ['one', [b]], ['strings', [String(b), String(e)]]])
        add(`${n} offsets ${what}`, editHeader(src, (h) => { h[n].data_offsets = o; }));
      add(`${n} missing`, editHeader(src, (h) => delete h[n]));
      add(`${n} not an object`, editHeader(src, (h) => { h[n] = 'F32'; }));
      // Values.
      for (const [what, fn] of [['NaN', (i) => (i === 1 ? NaN : undefined)], ['Inf', (i) => (i === 0 ? Infinity : undefined)],
        ['-Inf', (i) => (i === 2 ? -Infinity : undefined)], ['one 3e38', (i) => (i === 0 ? 3e38 : undefined)],
        ['all 1e19', () => 1e19], ['all float max', () => 3.4028234663852886e38], ['all 1e4', () => 1e4], ['one 10001', (i) => (i === 0 ? 10001 : undefined)]])
        add(`${n} ${what}`, setFloats(src, n, fn));
    }
    add('unknown tensor', editHeader(src, (h) => { h['blocks.99.attn.W_Q'] = { dtype: 'F32', shape: [1], data_offsets: [0, 4] }; }));
    add('trailing bytes', join(JSON.stringify(src.header), Buffer.concat([src.data, Buffer.alloc(12)])));
    // Random byte flips, in the header and in the data.
    for (let k = 0; k < flipsPerModel; ++k) {
      const b = Buffer.from(bytes);
      const inHeader = k % 2 === 0;
      const flips = 1 + r.below(8);
      for (let j = 0; j < flips; ++j) {
        const at = inHeader ? 8 + r.below(src.headerLen) : end + r.below(Math.max(1, src.data.length));
        if (at < b.length) b[at] ^= 1 + r.below(255);
      }
      add(`flip ${k} (${inHeader ? 'header' : 'data'})`, b);
    }
  }
  // Legal but enormous (or overflowing) models, built whole.
  const big = (name, cfg, fill, vocab = CHAR_VOCAB) => cases.push({ name: `built:${name}`, bytes: buildModel(cfg, vocab, fill), text: 'abc abc' });
  const c0 = { n_layers: 1, n_heads: 1, d_model: 1, d_head: 1, n_ctx: 8, pos_embed: 'none' };
  big('64 layers x 64 heads, n_ctx 8192', { ...c0, n_layers: 64, n_heads: 64, n_ctx: 8192 });
  big('16 layers x 16 heads, n_ctx 8192', { ...c0, n_layers: 16, n_heads: 16, n_ctx: 8192 });
  big('n_ctx 8192, one head', { ...c0, n_ctx: 8192 });
  big('n_ctx 4096, 4 heads', { ...c0, n_heads: 4, n_ctx: 4096 });
  big('n_ctx 4000 standard positions', { ...c0, n_ctx: 4000, pos_embed: 'standard' });
  big('d_head 1024, d_model 1', { ...c0, d_head: 1024 });
  big('d_model 4096', { ...c0, d_model: 4096 });
  big('8 layers of weights 9999', { ...c0, n_layers: 8, n_heads: 4, d_model: 16, d_head: 8 }, () => 9999);
  big('4 layers of weights 1000', { ...c0, n_layers: 4, n_heads: 4, d_model: 16, d_head: 8 }, (i) => (i % 2 ? 1000 : -1000));
  big('2 layers of weights 100', { ...c0, n_layers: 2, n_heads: 2, d_model: 16, d_head: 8 }, () => 100);
  big('256 heads', { ...c0, n_layers: 16, n_heads: 16 });
  big('257 heads', { ...c0, n_layers: 1, n_heads: 64, d_model: 2 });
  big('0 layers', { ...c0, n_layers: 0 });
  // Legal files of a large vocabulary: every call on them must answer or refuse within about a
  // second (a [V, V] table or V^2 work is refused before it starts), never stall.
  for (const V of [50_000, 60_000]) {
    big(`${V.toLocaleString('en')}-token vocabulary, 2 layers x 4 heads, 64 wide`, { ...c0, n_layers: 2, n_heads: 4, d_model: 64, d_head: 16, n_ctx: 64, pos_embed: 'standard' },
      undefined, largeVocabulary(V));
  }
  transformerLensCases(cases, r);
  pthCases(cases, r);
  return cases;
}

// ------------------------------------------------------------------ .pth files (torch.save's zip)
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// A zip of STORED entries [{name, data, method?, size?}] (size: what the headers claim), as
// torch.save lays one out without its alignment padding.
export function storedZip(entries) {
  const locals = [], centrals = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8'), data = Buffer.from(e.data);
    const size = e.size ?? data.length, crc = crc32(data), method = e.method ?? 0;
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0); lh.writeUInt16LE(20, 4); lh.writeUInt16LE(method, 8);
    lh.writeUInt32LE(crc, 14); lh.writeUInt32LE(size, 18); lh.writeUInt32LE(size, 22); lh.writeUInt16LE(name.length, 26);
    const ch = Buffer.alloc(46);
    ch.writeUInt32LE(0x02014b50, 0); ch.writeUInt16LE(20, 4); ch.writeUInt16LE(20, 6); ch.writeUInt16LE(method, 10);
    ch.writeUInt32LE(crc, 16); ch.writeUInt32LE(size, 20); ch.writeUInt32LE(size, 24); ch.writeUInt16LE(name.length, 28);
    ch.writeUInt32LE(offset, 42);
    locals.push(lh, name, data);
    centrals.push(ch, name);
    offset += 30 + name.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(entries.length, 8); end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12); end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

// A real torch.save file of a tiny TransformerLens model (tests/cpp/fixtures/pth/make_fixtures.py),
// cut and flipped, and hostile archives and pickles: a pickle that calls os.system or
// builtins.eval, 100,000-deep nesting, an entry named with "..", a compressed entry, and a few
// bytes claiming a 3 GB entry. Each must be refused with a sentence; nothing runs.
function pthCases(cases, r) {
  const real = fs.readFileSync(path.join(ROOT, 'tests/cpp/fixtures/pth/tl_attn_only.pth'));
  const add = (name, b) => cases.push({ name: `pth:${name}`, bytes: Buffer.from(b), text: '1 2 1 2' });
  add('real, no config', real);
  for (let k = 0; k < 12; ++k) add(`cut ${k}`, real.subarray(0, 1 + r.below(real.length - 1)));
  for (let k = 0; k < 12; ++k) {
    const b = Buffer.from(real);
    b[r.below(b.length)] ^= 1 + r.below(255);
    add(`flip ${k}`, b);
  }
  const pickle = (body) => Buffer.concat([Buffer.from([0x80, 0x02]), Buffer.from(body, 'latin1'), Buffer.from('.')]);
  const archive = (pkl, extra = []) => storedZip([{ name: 'archive/data.pkl', data: pkl }, { name: 'archive/version', data: '3\n' }, ...extra]);
  const str = (t) => { const n = Buffer.alloc(4); n.writeUInt32LE(t.length); return `X${n.toString('latin1')}${t}`; };
  add('os.system', archive(pickle(`cos\nsystem\n${str('echo pwned')}\x85R`)));
  add('builtins.eval', archive(pickle(`cbuiltins\neval\n${str('1+1')}\x85R`)));
  add('nesting 100000', archive(pickle('('.repeat(100000) + ']'.repeat(100000))));
  add('name with ..', storedZip([{ name: 'archive/../data.pkl', data: pickle('}') }]));
  add('compressed entry', storedZip([{ name: 'archive/data.pkl', data: pickle('}'), method: 8 }]));
  add('claims 3 GB', storedZip([{ name: 'archive/data.pkl', data: pickle('}'), size: 3 * 1024 ** 3 }]));
  add('empty state dict', archive(pickle('}')));
}

// TransformerLens state dicts (tests/js/tlens-fixture.mjs) of two shipped models: valid ones in
// F32, F16 and BF16, unsupported or damaged ones, and random byte flips. Their text is token ids.
function transformerLensCases(cases, r) {
  for (const rel of ['models/ioi-2l1h.safetensors', 'models/char-1l.safetensors']) {
    const bytes = fs.readFileSync(path.join(ROOT, rel));
    const base = `tlens-${path.basename(rel, '.safetensors')}`;
    const add = (name, b) => cases.push({ name: `${base}:${name}`, bytes: Buffer.from(b), text: '1 2 3 1 2 3' });
    for (const dtype of ['F32', 'F16', 'BF16']) add(dtype, toTransformerLens(bytes, { dtype }));
    const { tensors } = transformerLensTensors(bytes);
    const D = tensors.find((t) => t.name === 'embed.W_E').shape[1];
    const f32 = (name, shape) => ({ name, dtype: 'F32', shape, bytes: Buffer.alloc(4 * shape.reduce((a, b) => a * b, 1)) });
    const edit = (name, fn) => add(name, writeSafetensors(fn(tensors.map((t) => ({ ...t }))), { format: 'pt', normalization_type: 'None' }));
    const reshape = (n, shape) => (ts) => ts.map((t) => (t.name === n ? { ...t, shape } : t));
    edit('LayerNorm', (ts) => [...ts, f32('ln_final.w', [D]), f32('ln_final.b', [D])]);
    edit('MLP', (ts) => [...ts, f32('blocks.0.mlp.b_in', [4 * D])]);
    edit('no W_O', (ts) => ts.filter((t) => t.name !== 'blocks.0.attn.W_O'));
    edit('no W_pos', (ts) => ts.filter((t) => t.name !== 'pos_embed.W_pos'));
    edit('W_Q shape', reshape('blocks.0.attn.W_Q', [2, D, 3]));
    edit('mask shape', reshape('blocks.0.attn.mask', [2, 2]));
    edit('IGNORE shape', reshape('blocks.0.attn.IGNORE', [1]));
    edit('unknown tensor', (ts) => [...ts, f32('blocks.0.attn.W_Z', [1])]);
    edit('mask not causal', (ts) => ts.map((t) => (t.name === 'blocks.0.attn.mask' ? { ...t, bytes: Buffer.alloc(t.bytes.length, 1) } : t)));
    const valid = Buffer.from(toTransformerLens(bytes));
    const end = 8 + Number(valid.readBigUInt64LE(0));
    for (let k = 0; k < 10; ++k) {
      const b = Buffer.from(valid);
      const at = k % 2 === 0 ? 8 + r.below(end - 8) : end + r.below(valid.length - end);
      b[at] ^= 1 + r.below(255);
      add(`flip ${k}`, b);
    }
  }
}

// ------------------------------------------------------------------ running and checking
// Library exception texts that must never reach a user.
const INTERNALS = /json\.exception|\[json\.|std::|bad_alloc|basic_string|vector::|_M_|what\(\)|terminate called|Assertion|AddressSanitizer|runtime error:/;
const NONFINITE = /(^|[^a-zA-Z_])[-+]?(nan|inf|infinity)([^a-zA-Z_]|$)/i;

function runOne(bin, args, { timeoutMs, memKb }) {
  return new Promise((resolve) => {
    // prlimit (util-linux) sets the address-space limit without a shell in between.
    const as = memKb === 'unlimited' ? 'unlimited' : String(Number(memKb) * 1024);
    const child = spawn('prlimit', [`--as=${as}`, '--', bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '', timedOut = false;
    child.stdout.on('data', (d) => { if (out.length < 1 << 20) out += d; });
    child.stderr.on('data', (d) => { if (err.length < 1 << 16) err += d; });
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, out, err, timedOut }); });
  });
}

// What is wrong with one run's outcome, or null if it is acceptable.
export function judge(cmd, res) {
  if (res.timedOut) return 'timed out';
  if (res.signal) return `killed by ${res.signal}`;
  if (res.code === 0) {
    if (NONFINITE.test(res.out)) return 'printed nan/inf with exit 0';
    return null;
  }
  if (res.code !== 1) return `exit status ${res.code}`;
  const lines = res.err.trimEnd().split('\n');
  if (lines.length !== 1) return `error of ${lines.length} lines`;
  if (!lines[0].startsWith(`circuitscope ${cmd}: `)) return 'error without the command prefix';
  if (INTERNALS.test(res.err)) return 'library text in the error';
  if (NONFINITE.test(res.out)) return 'printed nan/inf';
  return null;
}

// Runs every case through `inspect` and `run --text`; returns figures and failures.
export async function runCorpus(cases, { bin = path.join(ROOT, 'build/native/circuitscope'), dir = path.join(ROOT, 'build/hardening/corrupt-models'),
  timeoutMs = 10000, memKb = 4 * 1024 * 1024, jobs = 2, onProgress } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  const stats = { files: cases.length, runs: 0, ok: 0, refused: 0, failures: [] };
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const i = next++;
      const c = cases[i];
      const file = path.join(dir, `${String(i).padStart(5, '0')}.safetensors`);
      fs.writeFileSync(file, c.bytes);
      for (const [cmd, args] of [['inspect', ['inspect', file]], ['run', ['run', file, '--text', c.text]]]) {
        const res = await runOne(bin, args, { timeoutMs, memKb });
        ++stats.runs;
        const bad = judge(cmd, res);
        if (bad) stats.failures.push({ case: c.name, file, cmd, problem: bad, stderr: res.err.slice(0, 300) });
        else if (res.code === 0) ++stats.ok;
        else ++stats.refused;
      }
      if (onProgress) onProgress(i + 1, cases.length);
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  return stats;
}

// A seeded sample of n cases (every kind represented in proportion).
export function sample(cases, n, seed = 1) {
  const r = rng(seed);
  const idx = cases.map((_, i) => i);
  for (let i = 0; i < Math.min(n, idx.length); ++i) {
    const j = i + r.below(idx.length - i);
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  return idx.slice(0, n).sort((a, b) => a - b).map((i) => cases[i]);
}

// ------------------------------------------------------------------ the WASM module
// The same corpus through the WebAssembly module (build/wasm/circuitscope.js), one instance in a
// worker thread (corrupt-models-wasm-worker.mjs): each file is loaded and, when it loads, every
// call the page makes on a model is made, then delete(). A call passes when it returns finite
// numbers or throws an Error whose message is one line with no library or runtime text.

// Values documented as NaN: the last position's loss (no target), the text scores and the copy
// losses when the text has no repeat (wasm/circuitscope.d.ts, RunResult and TextScores;
// judgeWasmCall holds the copy losses to finite values when there is a repeat).
function nanAllowed(call, where, i, length) {
  if (call !== 'run') return false;
  if (where === '.loss.data') return i === length - 1;
  return where.startsWith('.text_scores.') || where === '.first_copy_loss' || where === '.second_copy_loss';
}

// The first non-finite number in a result (every number, Float32Array and Float64Array), or null.
export function nonFinite(call, value, where = '') {
  if (typeof value === 'number') return Number.isFinite(value) || nanAllowed(call, where, 0, 1) ? null : `${where || 'result'} = ${value}`;
  if (value instanceof Float32Array || value instanceof Float64Array) {
    for (let i = 0; i < value.length; ++i) {
      if (!Number.isFinite(value[i]) && !nanAllowed(call, where, i, value.length)) return `${where}[${i}] = ${value[i]}`;
    }
    return null;
  }
  if (ArrayBuffer.isView(value) || value === null || typeof value !== 'object') return null;
  for (const [k, v] of Object.entries(value)) {
    const bad = nonFinite(call, v, `${where}.${k}`);
    if (bad) return bad;
  }
  return null;
}

// Text from the C++ runtime, the JSON library, Emscripten or the JS engine that must never reach
// a user, and the wrapper's placeholder for a throw that was not an Error.
const WASM_INTERNALS = /json\.exception|\[json\.|std::|bad_alloc|bad_array_new_length|basic_string|vector::|_M_|what\(\)|terminate called|Assertion|Aborted|abort\(|RuntimeError|unreachable|memory access out of bounds|out of memory|Cannot enlarge memory|call stack|wasm-function|\.wasm:|internal error|undefined is not|is not a function|Cannot read prop/i;

// {outcome: 'finite' | 'refused' | 'failed', problem?, message?} for one call's {value} or {error}.
export function judgeWasmCall(call, outcome) {
  const { value, error } = outcome;
  if (!('error' in outcome)) {
    let bad = nonFinite(call, value);
    if (!bad && call === 'run' && value?.repeat && !(Number.isFinite(value.first_copy_loss) && Number.isFinite(value.second_copy_loss))) {
      bad = `.first_copy_loss / .second_copy_loss = ${value.first_copy_loss} / ${value.second_copy_loss} with a repeat`;
    }
    return bad ? { outcome: 'failed', problem: `non-finite output: ${bad}` } : { outcome: 'finite' };
  }
  if (error instanceof WebAssembly.RuntimeError) return { outcome: 'failed', problem: `trap: ${error.message}`, message: String(error.message) };
  if (!(error instanceof Error)) return { outcome: 'failed', problem: `threw a non-Error: ${String(error)}` };
  const message = String(error.message);
  if (!message.trim()) return { outcome: 'failed', problem: 'an Error without a message' };
  if (message.includes('\n')) return { outcome: 'failed', problem: 'a message of several lines', message };
  if (WASM_INTERNALS.test(message)) return { outcome: 'failed', problem: 'library or runtime text in the message', message };
  return { outcome: 'refused', message };
}

// Runs every case through the module; returns figures and failures. timeoutMs bounds each call
// (a call past it ends the worker, counts as a failure and a new worker takes the next file):
// 5 s, five times the core's budget of about a second (kMaxCircuitWork) for a loaded machine; the
// summary prints the slowest call, the figure to watch.
export async function runCorpusWasm(cases, { wrapper = path.join(ROOT, 'build/wasm/circuitscope.js'), timeoutMs = 5000, onProgress } = {}) {
  const { Worker } = await import('node:worker_threads');
  const t0 = Date.now();
  const stats = {
    files: cases.length, loaded: 0, calls: 0, finite: 0, refused: 0, failures: [], messages: new Map(),
    maxDrift: 0, driftFile: null, peakHeap: 0, startHeap: 0, baseline: 0, restarts: 0, slowest: { ms: 0 }, perCall: {},
  };
  let worker = null;
  let pending = null;  // the handler of the worker's next message
  const mailbox = [];  // messages that came while nothing was waiting
  const deliver = (msg) => (pending ? pending(msg) : mailbox.push(msg));
  const wait = (handler) => { pending = handler; while (pending && mailbox.length) pending(mailbox.shift()); };
  const start = () => new Promise((resolve, reject) => {
    mailbox.length = 0;
    worker = new Worker(new URL('./corrupt-models-wasm-worker.mjs', import.meta.url), { workerData: { wrapper } });
    worker.on('message', deliver);
    worker.on('error', (error) => deliver({ type: 'error', error }));
    worker.on('exit', (code) => deliver({ type: 'exit', code }));
    const timer = setTimeout(() => deliver({ type: 'timeout' }), Math.max(60000, 3 * timeoutMs));
    wait((msg) => {
      pending = null;
      clearTimeout(timer);
      if (msg.type === 'ready') return resolve(msg);
      worker.removeAllListeners();
      worker.terminate();
      reject(new Error(`the corrupt-model worker did not start: ${msg.error?.message ?? (msg.type === 'timeout' ? 'no answer' : `exit ${msg.code}`)}`));
    });
  });
  const next = (type) => new Promise((resolve) => wait((msg) => { if (msg.type === type) { pending = null; resolve(msg); } }));
  const ready = await start();
  stats.baseline = ready.baseline;
  stats.startHeap = stats.peakHeap = ready.heapSize;
  for (let i = 0; i < cases.length; ++i) {
    const c = cases[i];
    let call = 'load';
    let timer = null;
    const fail = (problem) => stats.failures.push({ case: c.name, index: i, call, problem });
    const outcome = await new Promise((resolve) => {
      const arm = () => { clearTimeout(timer); timer = setTimeout(() => resolve({ type: 'timeout' }), timeoutMs); };
      arm();
      const bytes = new Uint8Array(c.bytes).buffer;  // a copy, moved to the worker
      worker.postMessage({ name: c.name, bytes, text: c.text }, [bytes]);
      wait((msg) => {
        if (msg.type === 'call') { call = msg.call; arm(); return; }
        pending = null;
        resolve(msg);
      });
    });
    clearTimeout(timer);
    if (outcome.type !== 'done') {
      fail(outcome.type === 'timeout' ? `no answer within ${timeoutMs / 1000} s` : `the worker died (${outcome.error?.message ?? `exit ${outcome.code}`})`);
      ++stats.calls;
      pending = null;
      worker.removeAllListeners();
      await worker.terminate();
      ++stats.restarts;
      await start();
      continue;
    }
    for (const r of outcome.results) {
      ++stats.calls;
      stats.perCall[r.call] ??= { calls: 0, finite: 0, refused: 0, failed: 0, maxMs: 0 };
      const p = stats.perCall[r.call];
      ++p.calls;
      ++p[r.outcome];
      p.maxMs = Math.max(p.maxMs, r.ms);
      if (r.ms > stats.slowest.ms) stats.slowest = { ms: r.ms, call: r.call, case: c.name };
      if (r.outcome === 'finite') ++stats.finite;
      else if (r.outcome === 'refused') {
        ++stats.refused;
        const key = `${r.call}: ${r.message.replace(/-?\d+(\.\d+)?(e[+-]?\d+)?/g, 'N')}`;
        stats.messages.set(key, (stats.messages.get(key) ?? 0) + 1);
      } else {
        call = r.call;
        fail(r.problem + (r.message ? ` (${r.message.slice(0, 200)})` : ''));
      }
    }
    if (outcome.results[0]?.outcome === 'finite') ++stats.loaded;
    if (outcome.heapSize > stats.peakHeap) { stats.peakHeap = outcome.heapSize; stats.peakFile = c.name; }
    if (outcome.trapped) {
      ++stats.restarts;
      await next('ready');
    } else {
      const drift = outcome.allocAfter - outcome.allocBefore;
      if (Math.abs(drift) > Math.abs(stats.maxDrift)) { stats.maxDrift = drift; stats.driftFile = c.name; }
      if (drift !== 0) { call = 'delete'; fail(`malloc'd bytes went from ${outcome.allocBefore} to ${outcome.allocAfter} (${drift > 0 ? '+' : ''}${drift})`); }
      stats.endAllocated = outcome.allocAfter;
    }
    if (onProgress) onProgress(i + 1, cases.length);
  }
  await worker.terminate();
  stats.seconds = (Date.now() - t0) / 1000;
  const mb = (b) => `${(b / 1048576).toFixed(0)} MB`;
  stats.summary = `corrupt models (WASM module): ${stats.files} files (${stats.loaded} loaded), ${stats.calls} calls: ` +
    `${stats.finite} finite, ${stats.refused} refused with a sentence, ${stats.failures.length} failures; ` +
    `malloc'd bytes after delete() ${stats.maxDrift === 0 ? 'always back at the baseline' : `off by up to ${stats.maxDrift} (${stats.driftFile})`}, ` +
    `heap ${mb(stats.startHeap)} -> peak ${mb(stats.peakHeap)}${stats.peakFile ? ` (${stats.peakFile})` : ''}, ${stats.restarts} restarts, slowest call ${stats.slowest.call ?? '-'} ${(stats.slowest.ms / 1000).toFixed(1)} s ` +
    `(${stats.seconds.toFixed(0)} s)`;
  return stats;
}
