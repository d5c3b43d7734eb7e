// The page's state, one plain object, and its mirror in the URL hash: versioned, readable for
// short values, lz-string-compressed for long text, validated on read. decodeHash never throws:
// a hash it cannot read gives the default state and a message the page shows.
//
// Hash form: #v=1&view=induction&model=char-2l&head=L1H2&ablate=L0H1,L1H3&text=...
//   text    short text, percent-encoded; long text goes as tz=<lz-string encodedURIComponent>
//   head    "L{layer}H{head}"; ablate: comma-separated heads
//   cut     comma-separated paths "L{l}H{h}>L{l}H{h}.{q|k|v}" (from > to . input), or the IOI
//           view's cut of all composition: Q, K or V
//   IOI:    order IOSS | SIOS; io, s: the names (symbolic: A..F or a display name; templates: one
//           of the model's names), short text; tpl: the template's index (from 0); place, object:
//           words of the template task. The view checks them against the model and says so when
//           one does not fit. (Links made before these keys were known carry order/io/s as JSON
//           strings, e.g. io=%22A%22: still read.)
//   nopos   1 = act as if W_pos were zero
//   embed=1 minimal chrome; hide=controls,header hides those too
//   Keys the shell does not know (a view's own settings) are carried as JSON values, checked
//   to be short primitives or flat arrays of them.
import LZString from './vendor/lz-string.mjs';

export const VERSION = 1;
export const MAX_HASH = 64 * 1024;         // characters of the hash we accept
const MAX_TEXT = 100_000;                  // characters of text after decompression
export const VIEWS = ['induction', 'ioi', 'circuits', 'training', 'report'];
const HIDEABLE = ['controls', 'header'];
const HEAD = /^L\d{1,2}H\d{1,2}$/;
const CUT = /^L\d{1,2}H\d{1,2}>L\d{1,2}H\d{1,2}\.[qkv]$/;
const NAME = /^[\w.-]{1,64}$/;
const EXTRA_KEY = /^[a-z][A-Za-z0-9_]{0,31}$/;
const IOI_CUT = /^[QKV]$/;
const WORD = /^[\p{L}\p{N}']{1,40}$/u;
const NAME_TEXT = /^[^\u0000-\u001f\u007f]{0,64}$/u;   // short text, no control characters

export const DEFAULT_STATE = Object.freeze({
  v: VERSION,
  view: 'induction',
  model: null,        // null: the view's default model
  snapshot: null,     // e.g. "step1000" (models/snapshots/<model>/<snapshot>.safetensors)
  text: null,         // null: the view's sample text
  names: null,        // IOI: the six symbolic names' display names, comma-separated
  order: null,        // IOI: "IOSS" | "SIOS" (null: IOSS)
  io: null,           // IOI: the indirect object's name (null: the view's default)
  s: null,            // IOI: the subject's name
  tpl: null,          // IOI, sentence templates: the template's index
  place: null,        // IOI, sentence templates: the place and the object
  object: null,
  head: null,         // "L1H2"
  ablate: [],         // ["L0H1", ...]
  cut: [],            // ["L0H1>L1H2.k", ...]
  nopos: false,
  pos: null,          // the focused token position
  embed: false,
  hide: [],
});

// Per known key: [parse(string) -> value | throws, format(value) -> string | null (= leave out)].
const list = (re, what) => [
  (s) => {
    const items = s === '' ? [] : s.split(',');
    if (items.length > 256) throw new Error(`${what}: too many entries`);
    for (const x of items) if (!re.test(x)) throw new Error(`${what}: "${x.slice(0, 40)}" is not valid`);
    return [...new Set(items)];
  },
  (a) => (a && a.length ? a.join(',') : null),
];
const name = (what) => [
  (s) => { if (!NAME.test(s)) throw new Error(`${what}: "${s.slice(0, 40)}" is not a valid name`); return s; },
  (x) => x ?? null,
];
// A value links used to carry as a JSON string (before the key was known): "\"A\"" -> "A".
const unquote = (s) => {
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) {
    try { const v = JSON.parse(s); if (typeof v === 'string') return v; } catch { /* not JSON: as written */ }
  }
  return s;
};
const text = (re, what, describe) => [
  (raw) => { const s = unquote(raw); if (!re.test(s)) throw new Error(`${what}: "${s.slice(0, 40)}" is not ${describe}`); return s; },
  (x) => (x === null || x === undefined ? null : String(x)),
];
const bool = (what) => [
  (s) => { if (s !== '0' && s !== '1') throw new Error(`${what} must be 0 or 1`); return s === '1'; },
  (b) => (b ? '1' : null),
];
const KNOWN = {
  view: [(s) => { if (!VIEWS.includes(s)) throw new Error(`there is no view "${s.slice(0, 40)}"`); return s; }, (x) => x],
  model: name('model'),
  snapshot: name('snapshot'),
  names: [(s) => { if (s.length > 1000) throw new Error('names: too long'); return s; }, (x) => x ?? null],
  head: [(s) => { if (!HEAD.test(s)) throw new Error(`head: "${s.slice(0, 40)}" is not of the form L1H2`); return s; }, (x) => x ?? null],
  ablate: list(HEAD, 'ablate'),
  // The IOI view sets a lone 'Q' | 'K' | 'V' (a string); it is read back as ['Q'], which the
  // view reads the same and other views ignore (it is not a path).
  cut: [list(new RegExp(`${CUT.source}|${IOI_CUT.source}`), 'cut')[0], (a) => (Array.isArray(a) ? (a.length ? a.join(',') : null) : a ? String(a) : null)],
  order: text(/^(IOSS|SIOS)$/, 'order', 'IOSS or SIOS'),
  io: text(NAME_TEXT, 'io', 'a name'),
  s: text(NAME_TEXT, 's', 'a name'),
  tpl: [(s) => { if (!/^\d{1,3}$/.test(s)) throw new Error(`tpl: "${s.slice(0, 40)}" is not a template number`); return Number(s); }, (x) => (x === null || x === undefined || x === '' ? null : String(x))],
  place: text(WORD, 'place', 'a word'),
  object: text(WORD, 'object', 'a word'),
  nopos: bool('nopos'),
  pos: [(s) => { const n = Number(s); if (!/^\d{1,5}$/.test(s)) throw new Error('pos must be a whole number'); return n; }, (x) => (x === null || x === undefined ? null : String(x))],
  embed: bool('embed'),
  hide: list(new RegExp(`^(${HIDEABLE.join('|')})$`), 'hide'),
};

function checkExtra(key, value) {
  const prim = (x) => x === null || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x)) ||
    (typeof x === 'string' && x.length <= 2000);
  if (prim(value)) return value;
  if (Array.isArray(value) && value.length <= 1024 && value.every(prim)) return value;
  throw new Error(`${key}: unsupported value`);
}

/** The hash (without '#') that encodes a state; default values are left out. */
export function encodeState(state) {
  const p = new URLSearchParams();
  p.set('v', String(VERSION));
  for (const [key, value] of Object.entries(state)) {
    if (key === 'v' || key === 'text' || value === undefined) continue;
    if (KNOWN[key]) {
      const def = DEFAULT_STATE[key];
      if (JSON.stringify(value) === JSON.stringify(def)) continue;
      const s = KNOWN[key][1](value);
      if (s !== null && s !== undefined) p.set(key, s);
    } else if (EXTRA_KEY.test(key) && value !== null) {
      p.set(key, JSON.stringify(value));
    }
  }
  if (typeof state.text === 'string') {
    const plain = encodeURIComponent(state.text);
    const packed = LZString.compressToEncodedURIComponent(state.text);
    if (plain.length <= 120 || plain.length <= packed.length) p.set('text', state.text);
    else p.set('tz', packed);
  }
  return p.toString();
}

/**
 * Reads a hash ('#...' or '...'). Returns {state, error}: state is always a full, valid state
 * (the default one when error is set); error is a sentence for the page, or null.
 */
export function decodeHash(hash) {
  const fresh = () => ({ ...DEFAULT_STATE, ablate: [], cut: [], hide: [] });
  const raw = String(hash ?? '').replace(/^#/, '');
  if (!raw) return { state: fresh(), error: null };
  const fail = (why) => ({ state: fresh(), error: `This link could not be read (${why}), so the default view is shown.` });
  if (raw.length > MAX_HASH) return fail(`it is ${Math.round(raw.length / 1024)} KB, more than the ${MAX_HASH / 1024} KB a link may hold`);
  let p;
  try {
    p = new URLSearchParams(raw);
  } catch {
    return fail('it is not a list of settings');
  }
  const v = p.get('v');
  if (v === null) return fail('it has no version number');
  if (v !== String(VERSION)) return fail(/^\d+$/.test(v) ? `it was made by version ${v} of the page; this is version ${VERSION}` : 'its version is not a number');
  const state = fresh();
  try {
    for (const [key, value] of p) {
      if (key === 'v') continue;
      if (key === 'text') {
        if (value.length > MAX_TEXT) throw new Error('the text is too long');
        state.text = value;
      } else if (key === 'tz') {
        const text = LZString.decompressFromEncodedURIComponent(value);
        if (typeof text !== 'string' || (text === '' && value !== '') || text === null) throw new Error('the compressed text is damaged');
        if (text.length > MAX_TEXT) throw new Error('the text is too long');
        state.text = text;
      } else if (KNOWN[key]) {
        state[key] = KNOWN[key][0](value);
      } else if (EXTRA_KEY.test(key)) {
        let parsed;
        try { parsed = JSON.parse(value); } catch { throw new Error(`${key}: not a valid value`); }
        state[key] = checkExtra(key, parsed);
      } else {
        throw new Error(`unknown setting "${key.slice(0, 40)}"`);
      }
    }
  } catch (e) {
    return fail(e.message);
  }
  return { state, error: null };
}

/** "L1H2" -> [1, 2] (null if not a head). */
export function parseHead(s) {
  const m = typeof s === 'string' && /^L(\d+)H(\d+)$/.exec(s);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

export const headName = (l, h) => `L${l}H${h}`;

/** "L0H1>L1H2.k" -> {from: [0, 1], to: [1, 2], input: 'k'} (the run() intervention form). */
export function parseCut(s) {
  const m = typeof s === 'string' && /^L(\d+)H(\d+)>L(\d+)H(\d+)\.([qkv])$/.exec(s);
  return m ? { from: [+m[1], +m[2]], to: [+m[3], +m[4]], input: m[5] } : null;
}

/** The run() intervention of a state: {ablate, cut, removePos} (empty fields left out). */
export function interventionOf(state, config) {
  const inside = (h) => h && (!config || (h[0] < config.n_layers && h[1] < config.n_heads));
  const ablate = (state.ablate || []).map(parseHead).filter(inside).map(([layer, head]) => ({ layer, head }));
  const cut = (state.cut || []).map(parseCut).filter((c) => c && inside(c.from) && inside(c.to));
  const out = {};
  if (ablate.length) out.ablate = ablate;
  if (cut.length) out.cut = cut;
  if (state.nopos) out.removePos = true;
  return out;
}
