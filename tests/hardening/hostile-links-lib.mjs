// The hostile-link corpus: links the app makes (encodeState of valid states: every view, every
// model of models/index.json, the build's snapshots, heads, ablations, cuts, short and compressed
// text, IOI settings), then damaged on purpose: script and HTML payloads in every key and value,
// prototype names as keys and values, damaged, truncated, oversized and exploding compressed
// text, bad versions and numbers, unknown models and snapshots, cuts that go backwards,
// duplicated keys, broken percent-encoding, very long and empty hashes, unicode and RTL text.
// Seeded (tests/rng.mjs): the same seed gives the same links. hostileLinks() gives the whole
// corpus (distinct links, at least 1,000); sampleLinks() a seeded sample that still has every kind.
// openLinks() opens links in Chromium and checks each one (see checkPage below).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { rng } from '../rng.mjs';
import { VIEW_SETTLED as SETTLED } from '../browser/settled.mjs';

/** The site's store.js, index and manifest, and each model's config (from its file header). */
export async function loadSite(site) {
  const S = await import(pathToFileURL(path.join(site, 'store.js')).href);
  const LZ = (await import(pathToFileURL(path.join(site, 'vendor', 'lz-string.mjs')).href)).default;
  const index = JSON.parse(readFileSync(path.join(site, 'models', 'index.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(path.join(site, 'models', 'manifest.json'), 'utf8'));
  const models = index.map((m) => {
    const name = m.file.replace(/\.safetensors$/, '');
    const bytes = readFileSync(path.join(site, 'models', m.file));
    const n = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
    const config = JSON.parse(header.__metadata__.config);
    return { name, views: m.views, kind: m.kind, config, snapshots: manifest.snapshots?.[name] ?? [] };
  });
  return { S, LZ, models };
}

// ------------------------------------------------------------------------------------------------
// The links the app makes

const PROSE = ['Alice was beginning to get very tired of sitting by her sister on the bank. ',
  'the cat sat on the mat, ', 'Hello hello ', 'One, two, three! ', 'é ✓ 😀 שלום ', 'xq zv '];

function heads(config) {
  const out = [];
  for (let l = 0; l < config.n_layers; l++) for (let h = 0; h < config.n_heads; h++) out.push(`L${l}H${h}`);
  return out;
}

/** Valid states, as a person gets them by using the page: [{state, what}]. */
export function validStates({ models }, r) {
  const out = [];
  const add = (what, values) => out.push({ what, state: { view: 'induction', ...values } });
  add('default', {});
  for (const view of ['induction', 'ioi', 'circuits', 'training', 'report']) add(`view ${view}`, { view });
  for (const m of models) {
    const hs = heads(m.config);
    for (const view of m.views) {
      add(`${view} ${m.name}`, { view, model: m.name });
      if (hs.length && view !== 'training') {
        add(`${view} ${m.name} head`, { view, model: m.name, head: r.pick(hs) });
        add(`${view} ${m.name} ablate`, { view, model: m.name, ablate: [...new Set([r.pick(hs), r.pick(hs)])].sort() });
      }
      if (m.config.n_layers >= 2) {
        const early = hs.filter((h) => h.startsWith('L0'));
        const late = hs.filter((h) => h.startsWith('L1'));
        add(`${view} ${m.name} cut`, { view, model: m.name, cut: [`${r.pick(early)}>${r.pick(late)}.${r.pick(['q', 'k', 'v'])}`] });
      }
      if (view === 'induction' || view === 'circuits') {
        add(`${view} ${m.name} short text`, { view, model: m.name, text: r.pick(PROSE) });
        let long = '';
        while (long.length < 600) long += r.pick(PROSE);
        add(`${view} ${m.name} long text`, { view, model: m.name, text: long + long, pos: r.int(200) });
      }
      if (view === 'circuits') add(`${view} ${m.name} tables`, { view, model: m.name, sort: r.pick(['row', 'col', 'both']), top: r.pick(['all', '80', '20', '10']), zoom: 3 + r.int(26) });
      for (const snapshot of m.snapshots.filter((_, i) => i % 5 === 0)) add(`${view} ${m.name} ${snapshot}`, { view, model: m.name, snapshot });
      if (view === 'ioi') {
        const templates = m.name.startsWith('ioi-templates');
        add(`ioi ${m.name} settings`, templates
          ? { view, model: m.name, io: 'Mary', s: 'John', tpl: r.int(12), place: 'store', object: 'drink', order: r.pick(['IOSS', 'SIOS']) }
          : { view, model: m.name, io: 'A', s: 'B', order: 'SIOS', names: 'Ann,Bo,Cy,Di,Ed,Flo', cut: ['*>*.q'], nopos: m.config.pos_embed !== 'none' });
      }
    }
  }
  add('embed', { view: 'induction', embed: true, hide: ['controls', 'header'] });
  return out;
}

// ------------------------------------------------------------------------------------------------
// What goes into the links

// Each payload, if it ever ran, sets window.__pwned or opens a dialog (both are trapped).
export const PAYLOADS = [
  '<script>window.__pwned=1</script>',
  '<img src=x onerror="window.__pwned=2">',
  'javascript:window.__pwned=3',
  '"><svg onload=window.__pwned=4>',
  "'><img src=x onerror=alert(5)>",
  '${window.__pwned=6}',
  '`${alert(7)}`',
  '{{constructor.constructor("window.__pwned=8")()}}',
  '<iframe srcdoc="<script>parent.__pwned=9</script>">',
  '</textarea><script>alert(10)</script>',
  '<a href="javascript:alert(11)">x</a>',
  '<svg><animate onbegin=alert(12) attributeName=x dur=1s>',
  '<style>@import "http://evil.example/x.css";</style>',
  '<img src="http://evil.example/pixel.png">',
  '<details open ontoggle=window.__pwned=13>',
  'L1H2" onmouseover="window.__pwned=14',
];
export const PROTO = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];
const KEYS = ['v', 'view', 'model', 'snapshot', 'text', 'tz', 'pos', 'head', 'ablate', 'cut', 'nopos', 'names', 'order', 'io', 's',
  'tpl', 'place', 'object', 'sort', 'top', 'zoom', 'embed', 'hide', 'panel', 'lesson', 'step', 'done', 'lt', 'abl'];
const NUMBER_KEYS = ['pos', 'tpl', 'zoom', 'nopos', 'embed', 'step'];
const BAD_NUMBERS = ['-1', '1.5', '0.0', '1e3', '1e999', '-0', '0x10', '0b1', '0o7', 'Infinity', '-Infinity', 'NaN', '', ' 1', '1 ',
  '99999999999999999999', '9007199254740993', '١٢', '１２', '+3', '3px', '1_000', '0e0', '00000000000000000001', String(2 ** 31), String(2 ** 53)];
const BAD_VERSIONS = ['0', '3', '-1', '1e999', 'NaN', '', '2.0', '02', ' 2', '2 ', '+2', '0x2', 'Infinity', '99999999', '1e0', 'two', '２', '%32', '2%00'];
const BAD_MODELS = ['nope', '..', '../../etc', '../../etc/passwd', 'char-2l.safetensors', 'CHAR-2L', 'char-2l/', 'char-2l%2F..',
  'models/char-2l', '.', '-', 'a'.repeat(64), 'a'.repeat(65), 'char-2l\u202e', 'char‐2l', 'undefined', 'null', ' char-2l', 'index',
  'manifest', 'report', 'http://evil.example/m', '//evil.example/m', 'corpus', 'snapshots'];
const BAD_SNAPSHOTS = ['step999999', 'step-1', '..', '../../etc', 'step', 'step0/../../x', 'step1e3', 'STEP0', 'step00', 'step0.safetensors',
  'step999999999', 'step9999999999', 'final', 'step250 ', 'step\u202e0'];
const BAD_HEADS = ['L99H99', 'L2H0', 'L0H4', 'L-1H0', 'L0H-1', 'L1.5H0', 'l0h0', 'L0H0 ', 'L00H00', 'L123H1', 'H0', 'L0', 'L0H0H0', '*', 'L\u0661H0'];
const BAD_CUTS = ['L1H0>L0H0.k', 'L0H0>L0H0.q', 'L1H1>L1H1.v', 'L0H1>L0H2.k', 'L1H0>L1H3.q', 'L0H0>L9H0.k', 'L0H0>L1H0.x', 'L0H0>L1H0',
  '*>L0H0.q', 'L1H0>*.v', '*>*', '>', 'L0H0>>L1H0.k', 'L0H0>L1H0.k.q', 'Q', 'K,V', '*>*.Q', 'L0H0<L1H0.k'];
const UNICODE = ['\u202eevil\u202c', 'שלום', 'مرحبا', '😀', 'e\u0301', '\u200b', '\uFEFF', '\u0000', '\u001b[31m', 'Ω≈ç√', '\uD800',
  'a\u0301\u0301\u0301\u0301\u0301\u0301', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '\u2066x\u2069', 'ﷺ', '\u0085', 'Ｍａｒｙ'];
const BROKEN_PERCENT = ['%E0%A4%A', '%', '%%', '%zz', '%G0', '%00', '%0A', '%ED%A0%80', '%C0%AF', '%FF%FE', '%E2%80%AE', '%2', '%%32',
  '%25', '%26v%3D3', '%3D%3D'];

/** encodeURIComponent, with a lone surrogate written as the bytes of its (invalid) UTF-8 form. */
const enc = (s) => s.split(/([\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff])/)
  .map((part, i) => (i % 2 ? [0xe0 | (part.charCodeAt(0) >> 12), 0x80 | ((part.charCodeAt(0) >> 6) & 63), 0x80 | (part.charCodeAt(0) & 63)]
    .map((b) => `%${b.toString(16).toUpperCase()}`).join('') : encodeURIComponent(part))).join('');
/** A hash with key=value (values percent-encoded) from a list of pairs. */
const pairs = (list) => list.map(([k, v]) => (v === undefined ? enc(k) : `${enc(k)}=${enc(v)}`)).join('&');
/** The pairs of a hash (without '#'). */
const split = (hash) => [...new URLSearchParams(hash)];
/** A link's pairs with one key set (replacing the first, or added at a random place). */
function withKey(list, key, value, r) {
  const out = list.map(([k, v]) => [k, v]);
  const i = out.findIndex(([k]) => k === key);
  if (i >= 0) out[i] = [key, value];
  else out.splice(1 + r.int(out.length), 0, [key, value]);
  return out;
}

// A bit writer for lz-string's stream (6 bits a character of its URI-safe alphabet), so that
// compressed text that explodes can be written without compressing a huge string first.
const KEY = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-$';
function lzStream(write) {
  const bits = [];
  const put = (value, n) => { for (let i = 0; i < n; i++) bits.push((value >> i) & 1); };
  write(put);
  while (bits.length % 6) bits.push(0);
  let s = '';
  for (let i = 0; i < bits.length; i += 6) s += KEY[bits.slice(i, i + 6).reduce((a, b) => a * 2 + b, 0)];
  return s;
}
/**
 * Compressed text that decompresses to one character repeated: each code is the newest entry of
 * the dictionary, one longer than the one before, so `codes` codes give codes^2 / 2 characters.
 */
export function lzBomb(codes, { end = true } = {}) {
  return lzStream((put) => {
    let numBits = 3;
    let enlargeIn = 4;
    let dictSize = 4;
    put(0, 2);
    put(97, 8);                         // the literal 'a' (entry 3)
    for (let i = 0; i < codes; i++) {
      put(dictSize, numBits);           // the entry about to be made: w + w[0]
      dictSize++;
      if (--enlargeIn === 0) { enlargeIn = 2 ** numBits; numBits++; }
    }
    if (end) put(2, numBits);
  });
}

// ------------------------------------------------------------------------------------------------
// The corpus

/**
 * Every hostile link: [{hash, kind, note}] (hash includes its '#', or is '' for none), distinct,
 * at least 1,000. Deterministic for a seed.
 */
export function hostileLinks(site, { seed = 1 } = {}) {
  const { S, LZ } = site;
  const r = rng(seed);
  const bases = validStates(site, r).map(({ state, what }) => ({ what, hash: S.encodeState({ ...S.DEFAULT_STATE, ...state }) }));
  const out = [];
  const seen = new Set();
  const add = (kind, note, hash) => {
    const h = hash === '' || hash.startsWith('#') ? hash : `#${hash}`;
    if (seen.has(h)) return;
    seen.add(h);
    out.push({ hash: h, kind, note });
  };
  const base = () => r.pick(bases);
  const compressed = bases.filter((b) => /(^|&)tz=/.test(b.hash));

  // The valid links themselves open (and are the control: they must show their view).
  for (const b of bases) add('valid', b.what, b.hash);

  // Script and HTML payloads in every key's value, as a key, in the text and the compressed text.
  // Every key gets six payloads (the keys take the payloads in turn, so each payload is in many keys).
  for (const [k, key] of [...KEYS, 'removePos', 'unknown'].entries()) {
    for (const p of Array.from({ length: 6 }, (_, j) => PAYLOADS[(k * 6 + j) % PAYLOADS.length])) {
      const b = base();
      // lt: a pasted lesson (lesson=pasted) whose title, step and text are the payload.
      const value = key === 'tz' ? LZ.compressToEncodedURIComponent(p) : key === 'lt' ? LZ.compressToEncodedURIComponent(`# ${p}\n\n## ${p}\n\n${p}\n\n\`\`\`check\nwhen: text is ${p}\nsay: ${p}\n\`\`\`\n`) : p;
      const kv = withKey(split(b.hash), key, value, r);
      add('script', `${key}=payload (${b.what})`, pairs(key === 'lt' ? [...kv, ['lesson', 'pasted']] : kv));
    }
  }
  for (const p of PAYLOADS) {
    const b = base();
    add('script', `payload as a key (${b.what})`, pairs(withKey(split(b.hash), p, '1', r)));
    add('script', `payload as raw hash (${b.what})`, `${b.hash}&${p}`);
    add('script', 'version-1 quoted payload', pairs([['v', '1'], ['view', 'ioi'], ['io', JSON.stringify(p)], ['s', JSON.stringify(p)]]));
    add('script', 'payload as the whole hash', p);
    add('script', 'long payload text', pairs([['v', '2'], ['text', p.repeat(1 + r.int(20))]]));
  }
  for (let i = 0; i < 30; i++) {
    const b = base();
    const key = r.pick(KEYS);
    add('script', `payload inside a valid value (${key})`, pairs(withKey(split(b.hash), key, `${split(b.hash).find(([k]) => k === key)?.[1] ?? ''}${r.pick(PAYLOADS)}`, r)));
  }

  // Prototype names as keys and as values.
  for (const name of PROTO) {
    for (const key of KEYS) {
      if (r.next() < 0.5) continue;   // each prototype name in about half the keys
      const b = base();
      add('prototype', `${key}=${name}`, pairs(withKey(split(b.hash), key, name, r)));
    }
    add('prototype', `${name} as a key`, pairs(withKey(split(base().hash), name, '1', r)));
    add('prototype', `${name}[x] as a key`, pairs(withKey(split(base().hash), `${name}[polluted]`, '1', r)));
    add('prototype', `${name}.x as a key`, `${base().hash}&${name}.polluted=1&${name}%5Bpolluted%5D=1`);
    add('prototype', `${name} as a key, payload value`, pairs(withKey(split(base().hash), name, r.pick(PAYLOADS), r)));
  }
  add('prototype', 'every prototype name at once', `v=2&${PROTO.map((p) => `${p}=1`).join('&')}`);

  // Compressed text: damaged, truncated, oversized, exploding.
  for (const b of compressed.filter((_, i) => i % 2 === 0)) {
    const tz = split(b.hash).find(([k]) => k === 'tz')[1];
    const set = (v) => pairs(withKey(split(b.hash), 'tz', v, r));
    for (let i = 0; i < 3; i++) add('tz', `truncated (${b.what})`, set(tz.slice(0, 1 + r.int(tz.length - 1))));
    for (let i = 0; i < 3; i++) {
      const chars = [...tz];
      for (let k = 0; k < 1 + r.int(5); k++) chars[r.int(chars.length)] = KEY[r.int(64)];
      add('tz', `bytes changed (${b.what})`, set(chars.join('')));
    }
    add('tz', `characters outside the alphabet (${b.what})`, set(tz.slice(0, 20) + '@@!!~~' + tz.slice(20)));
    add('tz', `doubled (${b.what})`, set(tz + tz));
    add('tz', `text and tz both (${b.what})`, `${b.hash}&text=${enc('plain')}`);
  }
  for (let i = 0; i < 40; i++) {
    let s = '';
    const n = [1, 2, 5, 50, 500, 5000][i % 6];
    for (let k = 0; k < n; k++) s += KEY[r.int(64)];
    add('tz', `random characters (${n})`, pairs(withKey(split(base().hash), 'tz', s, r)));
  }
  for (const v of ['', ' ', '+', '-', '$', 'A', 'AA', 'AAAA', 'E', 'Q', 'BA', 'BAA', 'IA', 'IAA', 'null', 'undefined', '\u0000', '%E0%A4%A', '===', 'Zm9v']) {
    add('tz', `tz=${JSON.stringify(v)}`, `v=2&tz=${v}`);
  }
  add('tz', 'a megabyte of compressed text', `v=2&tz=${'N4Ig'.repeat(256 * 1024)}`);
  add('tz', 'a megabyte of text', `v=2&text=${'a'.repeat(1 << 20)}`);
  add('tz', 'compressed text of 150,000 characters', pairs([['v', '2'], ['tz', LZ.compressToEncodedURIComponent('ab'.repeat(75_000))]]));
  for (const codes of [100, 445, 446, 1000, 5000, 14_000, 20_000, 26_000]) {
    add('tz', `exploding compressed text (${codes} codes, ${Math.round(codes * codes / 2).toLocaleString('en')} characters)`, `v=2&view=induction&tz=${lzBomb(codes)}`);
  }
  add('tz', 'exploding compressed text without its end', `v=2&tz=${lzBomb(20_000, { end: false })}`);
  add('tz', 'exploding compressed text, circuits', `v=2&view=circuits&tz=${lzBomb(26_000)}`);
  add('tz', 'a code past the dictionary', `v=2&tz=${lzStream((put) => { put(0, 2); put(97, 8); put(7, 3); put(2, 3); })}`);
  add('tz', 'a first code that is not a literal', `v=2&tz=${lzStream((put) => { put(3, 2); put(4, 3); put(4, 3); put(2, 3); })}`);
  add('tz', 'a 16-bit literal of a lone surrogate', `v=2&tz=${lzStream((put) => { put(1, 2); put(0xD800, 16); put(2, 3); })}`);
  add('tz', 'compressed payload with control characters', pairs([['v', '2'], ['tz', LZ.compressToEncodedURIComponent('\u0000\u001b[2J<script>alert(1)</script>\u202e'.repeat(20))]]));

  // Versions.
  for (const v of BAD_VERSIONS) {
    const list = split(base().hash).filter(([k]) => k !== 'v');
    add('version', `v=${JSON.stringify(v)}`, pairs([['v', v], ...list]));
  }
  for (let i = 0; i < 10; i++) add('version', 'no version', pairs(split(base().hash).filter(([k]) => k !== 'v')));
  add('version', 'v without =', 'v&view=ioi');
  add('version', 'v=1 with version-2 keys', split(base().hash).map(([k, v]) => (k === 'v' ? 'v=1' : `${k}=${enc(v)}`)).join('&'));
  add('version', 'v=2 then v=3', `v=2&v=3&view=ioi`);
  add('version', 'v=3 then v=2', `v=3&v=2&view=ioi`);
  add('version', 'version 1, bad removePos', 'v=1&view=ioi&removePos=%22maybe%22');
  add('version', 'version 1, bad quoted JSON', 'v=1&view=ioi&io=%22%5Cu12%22&s=%22%22%22');
  add('version', 'version 1, cut of junk', 'v=1&view=ioi&cut=Q,X,,V,%3Cb%3E');
  add('version', 'version 1, quoted prototype', 'v=1&view=%22__proto__%22&model=%22constructor%22');

  // Numbers.
  for (const key of NUMBER_KEYS) for (const n of BAD_NUMBERS) if (r.next() < 0.6) add('number', `${key}=${JSON.stringify(n)}`, pairs(withKey(split(base().hash), key, n, r)));
  for (const n of ['99999', '100000', '0', '5000']) add('number', `pos=${n}, long text`, pairs(withKey(split(r.pick(compressed).hash), 'pos', n, r)));
  for (const n of ['999', '1000', '12', '11']) add('number', `tpl=${n} on a template model`, `v=2&view=ioi&model=ioi-templates-2l&tpl=${n}`);
  for (const n of ['2', '3', '28', '29']) add('number', `zoom=${n}`, `v=2&view=circuits&zoom=${n}`);

  // Models and snapshots.
  for (const m of BAD_MODELS) for (const view of ['induction', 'ioi', 'circuits', 'training']) {
    if (r.next() < 0.5) add('model', `model=${JSON.stringify(m)} (${view})`, pairs([['v', '2'], ['view', view], ['model', m]]));
  }
  for (const m of site.models) {
    for (const view of ['induction', 'ioi', 'circuits', 'training', 'report'].filter((v) => !m.views.includes(v))) {
      add('model', `${m.name} on the ${view} view, which does not offer it`, `v=2&view=${view}&model=${m.name}`);
    }
  }
  for (const s of BAD_SNAPSHOTS) {
    for (const model of [null, 'char-2l', 'ioi-1l2h']) {
      add('snapshot', `snapshot=${JSON.stringify(s)} (${model ?? 'default model'})`, pairs([['v', '2'], ...(model ? [['model', model]] : []), ['snapshot', s]]));
    }
  }
  for (const m of site.models) {
    const s = m.snapshots.length ? 'step999999' : 'step0';
    add('snapshot', `${m.name}: snapshot it does not have`, `v=2&view=${m.views[0]}&model=${m.name}&snapshot=${s}`);
  }
  add('snapshot', 'snapshot on the report view', 'v=2&view=report&snapshot=step0');

  // Heads and cuts that do not fit the model.
  for (const m of site.models) {
    for (const h of BAD_HEADS) if (r.next() < 0.4) add('head', `${m.name} head=${h}`, pairs([['v', '2'], ['view', m.views[0]], ['model', m.name], ['head', h]]));
    for (const h of BAD_HEADS) if (r.next() < 0.2) add('head', `${m.name} ablate=${h}`, pairs([['v', '2'], ['view', m.views[0]], ['model', m.name], ['ablate', `L0H0,${h}`]]));
    for (const c of BAD_CUTS) if (r.next() < 0.4) add('cut', `${m.name} cut=${c}`, pairs([['v', '2'], ['view', m.views[0]], ['model', m.name], ['cut', c]]));
    if (m.config.pos_embed === 'none') for (const view of m.views) add('cut', `${m.name}: nopos without positions`, `v=2&view=${view}&model=${m.name}&nopos=1`);
  }
  add('cut', 'every head ablated 300 times', `v=2&ablate=${'L0H0,'.repeat(300)}L1H1`);
  add('cut', '256 distinct ablations', `v=2&ablate=${Array.from({ length: 256 }, (_, i) => `L${i % 100}H${i >> 7}`).join(',')}`);
  add('cut', 'empty entries', 'v=2&ablate=,,,&cut=,');

  // Duplicated keys.
  for (let i = 0; i < 40; i++) {
    const a = split(base().hash);
    const b = split(base().hash);
    const key = r.pick(KEYS.filter((k) => k !== 'v'));
    const v1 = a.find(([k]) => k === key)?.[1] ?? r.pick(['1', 'ioi', 'L0H0', 'x']);
    const v2 = b.find(([k]) => k === key)?.[1] ?? r.pick(PAYLOADS);
    add('duplicate', `${key} twice`, pairs([...a, [key, v2], [key, v1]]));
  }
  add('duplicate', 'two whole links', `${base().hash}&${base().hash}`);

  // Percent-encoding errors and separators.
  for (const p of BROKEN_PERCENT) {
    add('percent', `${p} as the hash`, p);
    for (const key of ['view', 'model', 'text', 'io', 'names']) if (r.next() < 0.5) add('percent', `${key}=…${p}`, `v=2&${key}=x${p}`);
    add('percent', `${p} in a key`, `v=2&vi${p}ew=ioi`);
  }
  for (const h of ['&', '&&&', '=', '==', '=&=', '?', '?v=2', '/v=2', '!v=2', '#v=2', '##v=2', 'v=2;view=ioi', 'v=2&&&view=ioi', 'v=2&=ioi',
    'v==2', 'v=2=2', 'v=2&view', 'v=2&view=', '+', 'v=2+', 'v+=2', ' v=2', 'v=2#view=ioi', 'v=2&view=ioi#x', 'javascript:alert(1)',
    'http://evil.example/#v=2', 'v=2&view=%69%6f%69', 'v=2&%76iew=ioi', 'V=2', 'v=2&VIEW=ioi', 'v=2&view=IOI']) {
    add('percent', `hash ${JSON.stringify(h)}`, h);
  }

  // Length.
  for (const n of [MAXLEN(S) - 10, MAXLEN(S), MAXLEN(S) + 1, 100_000, 1 << 20, 2 * (1 << 20) - 4096]) {
    const prefix = 'v=2&text=';
    add('long', `hash of ${n.toLocaleString('en')} characters`, prefix + 'b'.repeat(Math.max(0, n - prefix.length)));
  }
  add('long', '10,000 unknown keys', `v=2&${Array.from({ length: 10_000 }, (_, i) => `k${i}=${i}`).join('&')}`);
  add('long', '10,000 empty pairs', `v=2${'&'.repeat(10_000)}`);
  add('long', 'names of 401 characters', `v=2&view=ioi&names=${'n'.repeat(401)}`);
  add('long', 'names of 400 characters', `v=2&view=ioi&names=${'n,'.repeat(200)}`);
  add('long', 'a key of 60,000 characters', `v=2&${'k'.repeat(60_000)}=1`);
  add('long', 'text of 100,001 characters', pairs([['v', '2'], ['tz', LZ.compressToEncodedURIComponent('xy'.repeat(50_000) + 'z')]]));
  add('long', 'text of 100,000 characters', pairs([['v', '2'], ['tz', LZ.compressToEncodedURIComponent('xy'.repeat(50_000))]]));

  // Empty.
  for (const h of ['', '#', '#?', '#&', '#v', '#v=', '#=', '# ', '#%20', '#\t', '#%00']) add('empty', `hash ${JSON.stringify(h)}`, h.startsWith('#') ? h : `#${h}`);

  // Unicode and right-to-left text in names and text.
  for (const u of UNICODE) {
    for (const key of ['io', 's', 'names', 'place', 'object', 'text', 'model', 'view']) {
      if (r.next() < 0.6) {
        const value = key === 'names' ? Array.from({ length: 6 }, () => u).join(',') : u;
        add('unicode', `${key}=${JSON.stringify(u)}`, pairs([['v', '2'], ['view', key === 'text' ? r.pick(['induction', 'circuits']) : 'ioi'],
          ...(key === 'place' || key === 'object' ? [['model', 'ioi-templates-2l']] : []), [key, value]]));
      }
    }
  }
  add('unicode', 'RTL override around a whole link', `%E2%80%AE${base().hash}`);

  // Random damage to real links, until the corpus has enough.
  const damage = [
    (h) => h.slice(0, r.int(h.length)),
    (h) => { const i = r.int(h.length); return h.slice(0, i) + r.pick(['%', '&', '=', '#', '<', '"', '%E0']) + h.slice(i); },
    (h) => h.replace(/=[^&]*/, `=${enc(r.pick([...PAYLOADS, ...PROTO, ...BAD_NUMBERS]))}`),
    (h) => h.split('&').reverse().join('&'),
    (h) => h.replace(/&/g, r.pick(['&amp;', ';', '&&'])),
    (h) => encodeURIComponent(h),
  ];
  for (let i = 0; i < 100; i++) {
    const b = base();
    add('damaged', `${b.what}, damaged`, r.pick(damage)(b.hash));
  }
  return out;
}
const MAXLEN = (S) => S.MAX_HASH;

/**
 * A seeded sample of n links with every kind in it: kinds take turns, each giving its links in
 * a seeded order.
 */
export function sampleLinks(links, n, seed = 1) {
  const r = rng(seed);
  const byKind = new Map();
  for (const l of links) {
    if (!byKind.has(l.kind)) byKind.set(l.kind, []);
    byKind.get(l.kind).push(l);
  }
  for (const list of byKind.values()) {
    for (let i = list.length - 1; i > 0; i--) { const j = r.int(i + 1); [list[i], list[j]] = [list[j], list[i]]; }
  }
  const out = [];
  const lists = [...byKind.values()];
  for (let i = 0; out.length < Math.min(n, links.length); i++) {
    for (const list of lists) if (i < list.length && out.length < n) out.push(list[i]);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Opening links in Chromium

// Set before any script of the page runs: a payload that ran leaves a trace in __hostileHits, and
// every content-security-policy violation (a payload that reached the DOM as HTML) in __hostileCsp.
const TRAP = () => {
  const w = /** @type {any} */ (window);
  w.__hostileHits = [];
  w.__hostileCsp = [];
  Object.defineProperty(window, '__pwned', { configurable: false, get() { return undefined; }, set(v) { w.__hostileHits.push(`__pwned=${v}`); } });
  for (const f of ['alert', 'confirm', 'prompt']) w[f] = (m) => { w.__hostileHits.push(`${f}(${m})`); };
  // When the page heard of the link (a hashchange; 0 for a fresh page): what came before was the
  // browser's own work on the URL.
  w.__hostileHeard = 0;
  window.addEventListener('hashchange', () => { w.__hostileHeard = performance.now(); }, true);
  document.addEventListener('securitypolicyviolation', (e) => w.__hostileCsp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`.trim()));
};

/** Words in a message that show the page's internals rather than a sentence for a person. */
export const INTERNALS = [/TypeError|RangeError|SyntaxError|ReferenceError|InternalError|RuntimeError/, /\bundefined\b/, /\[object/,
  /is not a function/, /Cannot read propert/, /\bNaN\b/, /std::/, /(?<!\.)\bjson\b/i, /\bat \S+ \(/, /\.m?js:\d+/, /Invalid string length/,
  /Maximum call stack/, /out of memory/i, /wasm-function/, /\bnull\b/];

/**
 * A message with the link's own values left out: a message may quote what the link said
 * (`pos: "NaN" is not a whole number`); only the page's own words are checked for internals.
 */
export function withoutQuotes(message, hash) {
  let values = [];
  try { values = [...new URLSearchParams(String(hash).replace(/^#/, ''))].flat(); } catch { /* none */ }
  values = values.flatMap((v) => [v, v.replace(/^"|"$/g, '')]);
  return message.replace(/"([^"]*)"/g, (m, inner) => (inner && values.some((v) => v.includes(inner)) ? '"…"' : m))
    .replace(/\b(model|snapshot) (\S+)/g, (m, k, name) => (values.includes(name) ? `${k} …` : m));
}

const LATE_MS = 20_000;   // how long an unsettled page is given beyond the guard, to tell slow from stuck
/** A link cut to n characters for a message, with its whole length said. */
export const short = (h, n = 200) => (h.length > n ? `${h.slice(0, n)}… (${h.length.toLocaleString('en')} characters)` : h);

/** In the page: the store's version and view, and what the shown view says it rendered. */
function shownVersion() {
  const s = /** @type {any} */ (window).__cs?.store;
  const v = /** @type {HTMLElement | null} */ (document.querySelector('#view-host > .view:not([hidden])'));
  const said = [...document.querySelectorAll('#app-status, #app-error, .cs-view-error, .cs-unavailable')].map((e) => (e.textContent ?? '').trim().slice(0, 200)).filter(Boolean);
  return { store: s?.version ?? null, view: s?.state.view ?? null, body: document.body.dataset.view ?? null, element: v?.localName ?? null, version: v?.dataset.version ?? null, ready: v?.dataset.ready ?? null, said };
}

/** Looks at the page once its view settled: what a hostile link may have left behind. */
function inspect() {
  const w = /** @type {any} */ (window);
  const visible = (e) => e && e.checkVisibility?.() !== false && !e.closest('[hidden]');
  const out = { hits: w.__hostileHits ?? [], csp: w.__hostileCsp ?? [], injected: [], messages: [] };
  for (const e of document.querySelectorAll('*')) {
    for (const a of e.attributes) {
      if (/^on/i.test(a.name)) out.injected.push(`<${e.localName} ${a.name}>`);
      if (/^(href|src|action|formaction|xlink:href|srcdoc|data)$/i.test(a.name) && /^\s*(javascript|vbscript):|<script/i.test(a.value)) out.injected.push(`<${e.localName} ${a.name}=${a.value.slice(0, 40)}>`);
    }
    if (/^(iframe|frame|object|embed|base|meta|link|style)$/.test(e.localName) && !e.closest('head')) out.injected.push(`<${e.localName}>`);
    if (e.localName === 'script' && (!e.src || new URL(e.src).origin !== location.origin)) out.injected.push(`<script ${e.src || 'inline'}>`);
    if (e.localName === 'img' && e.getAttribute('src') && !/^(favicon\.svg|data:|blob:)/.test(e.getAttribute('src'))) out.injected.push(`<img src=${e.getAttribute('src').slice(0, 40)}>`);
  }
  for (const e of document.querySelectorAll('#app-status, #app-error, [role="alert"], [role="status"], .error, .status, .cs-view-error')) {
    const t = (e.textContent ?? '').trim();
    if (t && visible(e) && !out.messages.includes(t)) out.messages.push(t);
  }
  const v = document.querySelector('#view-host > .view:not([hidden])');
  const r = v?.getBoundingClientRect();
  out.view = v?.localName ?? null;
  out.viewBox = r ? [Math.round(r.width), Math.round(r.height)] : null;
  out.viewText = (v?.textContent ?? '').trim().length;
  out.blank = !v || !visible(v) || r.width < 200 || r.height < 100 || out.viewText < 40;
  out.hashError = document.body.dataset.hashError === 'true';
  out.status = document.querySelector('#app-status')?.hidden ? '' : (document.querySelector('#app-status')?.textContent ?? '');
  out.state = w.__cs?.store.state;
  return out;
}

/**
 * Opens each link in Chromium, with the page's content security policy sent as a header:
 * `fresh` in a new page (navigation), `hashchange` in a page that is kept (location.hash set),
 * or both. Checks each against FAILURE kinds. Returns [{link, mode, ms, failures: [{kind, what}]}].
 * options: lanes (pages working side by side), limit (settle limit, ms), timeout (ms).
 */
export async function openLinks(links, { site, modes = ['fresh', 'hashchange'], alternate = false, lanes = 2, limit = 1000, timeout = 10_000, defaultState, onResult = () => {} }) {
  const { launchChromium, startCspProxy } = await import('../browser/chromium.mjs');
  const { CSP } = await import('../../scripts/serve.mjs');
  // An empty page (no script, no style) the proxy serves, for the browser's own time to open a
  // URL as long as a link: Chromium takes over a second to open a megabyte URL whatever the page.
  const proxy = await startCspProxy(site, CSP, (req, res, url) => {
    if (url.pathname !== EMPTY_PAGE) return false;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><meta charset="utf-8"><title>empty</title><p>empty');
    return true;
  });
  const browser = await launchChromium();
  const results = [];
  const jobs = [];
  // Each link in every mode, or (alternate) the links take the modes in turn. Fresh and
  // hashchange opens interleave, so both lanes do both.
  links.forEach((link, i) => { for (const mode of alternate ? [modes[i % modes.length]] : modes) jobs.push({ link, mode }); });
  let next = 0;
  try {
    await Promise.all(Array.from({ length: lanes }, async () => {
      const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
      await context.addInitScript(TRAP);
      // A first page warms the context (its HTTP cache): the first page of a browser is slow
      // whatever its link.
      const warm = await context.newPage();
      await warm.goto(`${proxy.origin}/#v=2`);
      await warm.waitForFunction(SETTLED, 0, { timeout: 60_000, polling: 'raf' });
      await warm.close();
      let kept = null;   // the page links open in by hashchange
      try {
        while (next < jobs.length) {
          const job = jobs[next++];
          let result;
          if (job.mode === 'fresh') {
            const page = await watchedPage(context, proxy.origin);
            try {
              result = await openOne(page, job.link, 'fresh', { origin: proxy.origin, limit, timeout, defaultState });
            } finally {
              await page.close().catch(() => {});
            }
          } else {
            if (!kept || kept.isClosed() || kept.crashed) {
              await kept?.close().catch(() => {});
              kept = await watchedPage(context, proxy.origin);
              await kept.goto(`${proxy.origin}/#v=2`);
              await kept.waitForFunction(SETTLED, 0, { timeout: 60_000, polling: 'raf' });
            }
            result = await openOne(kept, job.link, 'hashchange', { origin: proxy.origin, limit, timeout, defaultState });
            if (result.failures.some((f) => f.kind === 'unsettled' || f.kind === 'crash')) { await kept.close().catch(() => {}); kept = null; }
          }
          // On this shared machine a page can be slow for reasons of its own: a link is slow
          // only if it is slow twice.
          if (result.failures.length && result.failures.every((f) => f.kind === 'slow')) {
            const again = job.mode === 'fresh' ? await watchedPage(context, proxy.origin) : kept;
            try {
              const second = await openOne(again, job.link, job.mode, { origin: proxy.origin, limit, timeout, defaultState });
              if (second.ms !== null && (result.ms === null || second.ms < result.ms)) result = { ...second, first: result.ms };
            } finally {
              if (job.mode === 'fresh') await again.close().catch(() => {});
            }
          }
          if (job.mode === 'fresh' && result.failures.some((f) => f.kind === 'slow') && job.link.hash.length > LONG_URL) {
            result = await againstFloor(context, proxy.origin, job.link, result, limit);
          }
          results.push(result);
          onResult(result, results.length, jobs.length);
        }
      } finally {
        await context.close().catch(() => {});
      }
    }));
  } finally {
    await browser.close().catch(() => {});
    await proxy.close();
  }
  return results;
}

const EMPTY_PAGE = '/__empty.html';
const LONG_URL = 64 * 1024;   // links longer than this (the most a link may hold) are timed against the floor

/**
 * A fresh open of a link over LONG_URL characters that settled past the limit, timed against the
 * browser's floor: the wall time (from the navigation's request) to open the empty page with the
 * same fragment. Slow only if the page took more than `limit` beyond that floor; the result
 * keeps both times (wall, floor).
 */
async function againstFloor(context, origin, link, result, limit) {
  const page = await watchedPage(context, origin);
  try {
    const t = Date.now();
    await page.goto(`${origin}${EMPTY_PAGE}${link.hash}`, { waitUntil: 'load' });
    const floor = Date.now() - t;
    const over = result.wall - floor;
    const failures = result.failures.filter((f) => f.kind !== 'slow');
    if (over > limit) failures.push({ kind: 'slow', what: `settled ${Math.round(over)} ms after an empty page with the same URL opened (${Math.round(result.wall)} ms against ${floor} ms)` });
    return { ...result, floor, failures };
  } finally {
    await page.close().catch(() => {});
  }
}

/** A page whose errors, console errors, dialogs and requests to other origins go to page.log. */
async function watchedPage(context, origin) {
  const page = await context.newPage();
  page.log = [];
  page.on('pageerror', (e) => page.log.push({ kind: 'pageerror', what: String(e.message).slice(0, 300) }));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const text = m.text();
    page.log.push({ kind: /Content Security Policy/i.test(text) ? 'csp' : 'console', what: text.slice(0, 300) });
  });
  page.on('dialog', (d) => { page.log.push({ kind: 'script', what: `dialog ${d.type()}: ${d.message()}` }); d.dismiss().catch(() => {}); });
  page.on('request', (req) => {
    const url = req.url();
    if (/^(data|blob):/.test(url)) return;
    let o = null;
    try { o = new URL(url).origin; } catch { /* not a URL */ }
    if (o !== origin) page.log.push({ kind: 'other-origin', what: url.slice(0, 200) });
  });
  page.on('response', (r) => { if (r.status() >= 400) page.log.push({ kind: 'http', what: `${r.status()} ${r.url().slice(0, 200)}` }); });
  page.on('crash', () => { page.crashed = true; page.log.push({ kind: 'crash', what: 'the page crashed' }); });
  return page;
}

async function openOne(page, link, mode, { origin, limit, timeout: guard, defaultState }) {
  // The guard catches a page that never settles. A link of megabytes takes the browser itself
  // seconds to deliver (its floor, below), about 10 s on this 2-core machine in a clean-clone
  // npm test of 2026-12-04, so such a link gets three times the guard.
  const timeout = link.hash.length > LONG_URL ? 3 * guard : guard;
  page.log.length = 0;
  const failures = [];
  let ms = null;
  let minVersion = 0;
  let t0 = 0;
  let heard = null;   // ms from setting the hash to the page's hashchange event
  let wall = null;   // fresh: ms from the navigation's request to the settled view, by the clock
  page.lastOpened = null;
  const started = Date.now();
  let phase = mode === 'fresh' ? 'the link' : 'the kept page\'s zoom';   // what is being waited for
  try {
    if (mode === 'fresh') {
      await page.goto(`${origin}/${link.hash}`, { waitUntil: 'commit', timeout });
    } else {
      // Put the kept page in a state no link of the corpus gives (a zoom the link does not
      // name), so that the link's state is a change the store counts and the view renders.
      const zoom = /(^|[#&])zoom=27(&|$)/.test(link.hash) ? 26 : 27;
      minVersion = await page.evaluate((zoom) => {
        const w = /** @type {any} */ (window);
        w.__hostileHits.length = 0;
        w.__hostileCsp.length = 0;
        w.__cs.store.dispatch({ type: 'set', values: { zoom } });
        return w.__cs.store.version;
      }, zoom);
      await page.waitForFunction(SETTLED, minVersion, { timeout, polling: 'raf' });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      page.log.length = 0;
      t0 = await page.evaluate((hash) => { const t = performance.now(); location.hash = hash; return t; }, link.hash);
      minVersion += 1;
      phase = 'the link';
    }
    const handle = await page.waitForFunction(SETTLED, minVersion, { timeout, polling: 'raf' });
    const done = await handle.jsonValue();
    if (mode === 'fresh') wall = Date.now() - started;
    ms = done - t0;
    if (mode === 'hashchange') heard = await page.evaluate(() => /** @type {any} */ (window).__hostileHeard - 0) - t0;
    if (ms > limit) failures.push({ kind: 'slow', what: `settled in ${Math.round(ms)} ms${heard !== null ? ` (the hashchange event came ${Math.round(heard)} ms after the hash was set)` : ''}` });
    // Time for a payload's handlers (an image's onerror) to fire, had one reached the DOM.
    await page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 50)));
  } catch (e) {
    // What the page showed when the guard ran out, and whether it settles at all given LATE_MS
    // more: a page that does was slow (on this 2-core machine under load a fresh open took up
    // to 21 s, a hashchange to the Training view 13 s, in a run beside a busy loop) and is listed
    // as such; one that does not is stuck, and fails.
    const shown = page.crashed ? null : await page.evaluate(shownVersion).catch(() => null);
    const late = page.crashed ? null : await page.waitForFunction(SETTLED, minVersion, { timeout: LATE_MS, polling: 'raf' })
      .then((h) => h.jsonValue()).catch(() => null);
    const what = `${String(e.message).split('\n')[0].slice(0, 200)} waiting for ${phase}${page.previous ? ` (the page showed ${short(page.previous, 120)} before)` : ''}; ${shown ? `it showed ${JSON.stringify(shown)} (store version ${minVersion} asked for)` : 'the page could not be read'}`;
    if (late !== null && phase === 'the link') {
      ms = late - t0;
      failures.push({ kind: 'slow', what: `settled only after ${Math.round(ms)} ms: ${what}` });
    } else if (late !== null) {
      // The kept page settled its zoom late: the link was not opened (ms null; opened again below).
      failures.push({ kind: 'slow', what: `not opened: ${what}; settled ${LATE_MS / 1000} s later` });
    } else failures.push({ kind: page.crashed ? 'crash' : 'unsettled', what: `${what}; not settled ${LATE_MS / 1000} s later` });
  }
  page.previous = link.hash;
  if (!page.crashed) {
    const seen = await page.evaluate(inspect).catch((e) => ({ error: e.message }));
    if (seen.error) failures.push({ kind: 'unsettled', what: `the page could not be inspected: ${seen.error.slice(0, 100)}` });
    else {
      for (const h of seen.hits) failures.push({ kind: 'script', what: h });
      for (const c of seen.csp) failures.push({ kind: 'csp', what: c.slice(0, 200) });
      for (const i of seen.injected) failures.push({ kind: 'injected', what: i });
      if (seen.blank) failures.push({ kind: 'blank', what: `view ${seen.view} ${JSON.stringify(seen.viewBox)}, ${seen.viewText} characters` });
      for (const m of seen.messages) {
        const plain = withoutQuotes(m, link.hash);
        const bad = INTERNALS.find((re) => re.test(plain));
        if (bad) failures.push({ kind: 'internals', what: `${m.slice(0, 300)} (${bad})` });
      }
      if (seen.hashError) {
        if (!/could not be read/.test(seen.status)) failures.push({ kind: 'no-message', what: 'the link was refused without a sentence' });
        if (defaultState && JSON.stringify(seen.state) !== JSON.stringify(defaultState)) failures.push({ kind: 'not-default', what: JSON.stringify(seen.state).slice(0, 200) });
      } else if (/could not be read/.test(seen.status)) {
        failures.push({ kind: 'stale-message', what: `the link opened, but the page says: ${seen.status.slice(0, 200)}` });
      }
      if (link.kind === 'valid' && seen.hashError) failures.push({ kind: 'valid-refused', what: seen.status.slice(0, 200) });
      // What the link opened: its own view, or (refused) the default one.
      page.lastOpened = seen.hashError ? 'refused' : `${seen.state?.view} ${seen.state?.model ?? ''}`.trim();
    }
  }
  for (const l of page.log) failures.push(l);
  return { link, mode, ms, wall, heard, failures, opened: page.lastOpened };
}

/** {median, max, n} of settle times (ms). */
export function settleFigures(results) {
  const s = results.map((r) => r.ms).filter((x) => x !== null).sort((a, b) => a - b);
  const n = s.length;
  return { n, median: n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN, max: s[n - 1], p95: s[Math.floor(n * 0.95)] };
}
