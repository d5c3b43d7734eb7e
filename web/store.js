// The page's one state. A store holds it, every control in every view changes it through
// dispatch(action), the views and the shell subscribe to it, and the URL hash is its only
// serialisation (versioned; links of version 1 still open). The store also owns the model
// registry (models/index.json says which views offer which model) and the model cache.
//
// Hash form (version 2): #v=2&view=induction&model=char-2l&head=L1H2&ablate=L0H1,L1H3&text=...
//   model    a shipped model (models/index.json) or local:NAME, a model file opened in the page
//            (local-models.js): its link opens only where the same file is opened too
//   text     short text, percent-encoded; long text goes as tz=<lz-string encodedURIComponent>
//   head     "L{layer}H{head}"; ablate: comma-separated heads, and "L{layer}MLP" for a layer's MLP
//            output (models with MLPs, e.g. TransformerLens's gelu-Nl)
//   cut      comma-separated composition cuts "FROM>TO.INPUT": FROM, TO a head or * (every
//            head), INPUT q, k or v. "*>*.q" cuts every path into every head's query: the IOI
//            view's "cut Q-composition". This is the one intervention encoding: in the store,
//            in the link, and (expanded by interventionOf) at the core's boundary.
//   nopos    1 = act as if W_pos were zero
//   abl      what replaces an ablated or cut head's contribution (IOI and Induction views): zero
//            (default, left out of the link: removed, as every link without abl meant), mean (the
//            head's output averaged over reference sequences, at each position), mean-all
//            (averaged over the sequences and their positions), resample (the head's output on
//            another reference sequence, drawn with a fixed seed). The reference sequences are
//            the IOI task's for an IOI model, else repeated random tokens as long as the context
//            (the core's repeated_reference_sequences). The core computes the means and
//            resamples; it goes to the boundary as the intervention's `ablation`. The Circuits and
//            Training views ablate nothing: a link giving them abl other than zero is refused
//            with a sentence.
//   IOI      order IOSS | SIOS; io, s: the names; names: six display names of the symbolic
//            task; tpl, place, object: the sentence template, its place and object
//   Circuits sort (token | row | col | both), top (all | 80 | 40 | 20 | 10), zoom (3..28); target: the
//            token id whose logit the path expansion explains; through: the earlier head of the
//            composed QK circuit ("L0H1"), compose: its input (k | q)
//   hsort    Induction's head-score table: the column its rows are sorted by, highest first
//            (prefix | previous | stripe | rprefix | rcopy; absent = in head order)
//   patch    activation patching in the IOI and Induction views (their -patching panels): denoise
//            (each head's output from the clean run into the corrupted one) | noise (the other
//            way); absent = off. The corrupted input is the core's standard corruption of the
//            view's input (swap the names; break the repeat), so it needs no key of its own.
//   embed=1  minimal chrome; hide=controls,header hides those too
//   panel    with embed=1: the one panel shown ("VIEW-PART", one of PANELS, of the link's view)
//   lesson   a lesson of the site (lessons/NAME.md; "index" is the list of lessons; "pasted": the
//            lesson in lt) shown beside the view; step: its step (from 0); done: the steps whose
//            check passed (0,2,...); lt: a pasted lesson's Markdown, lz-string compressed
// Unknown keys are ignored (a later version's setting does not stop an older page opening the
// link); values are checked, and a link that cannot be read gives the default state and a
// sentence. decodeHash never throws.
import LZString from './vendor/lz-string.mjs';
import { isLocalName, localModel, localModels, onLocalClosed } from './local-models.js';

export const VERSION = 2;
/** The kinds of ablation the core offers for cuts (the intervention's `ablation`). */
export const ABLATIONS = Object.freeze(['zero', 'mean', 'mean-all', 'resample']);
export const MAX_HASH = 64 * 1024;         // characters of the hash we accept
export const MAX_TEXT = 100_000;           // characters of text after decompression
export const MAX_LESSON_TEXT = 60_000;     // characters of a pasted lesson carried in a link
export const VIEWS = ['induction', 'ioi', 'circuits', 'training', 'report'];
export const VIEW_TITLES = { induction: 'Induction', ioi: 'IOI', circuits: 'Circuits', training: 'Training', report: 'Reproduction' };
const HIDEABLE = ['controls', 'header'];
/** Every panel's name ("VIEW-PART" is web/panels/VIEW/PART.js): what a link's panel= may name. */
export const PANELS = Object.freeze([
  'induction-tokens', 'induction-heads', 'induction-pattern', 'induction-scores',
  'ioi-architecture', 'ioi-sequence', 'ioi-sentence', 'ioi-prediction', 'ioi-heads', 'ioi-patterns', 'ioi-lens', 'ioi-accuracy', 'ioi-zoo',
  'induction-patching', 'ioi-patching',
  'circuits-qk', 'circuits-ov', 'circuits-eigen', 'circuits-trigrams', 'circuits-composition', 'circuits-attribution', 'circuits-composedqk',
  'training-curves', 'training-snapshots', 'training-trajectory', 'training-leading', 'training-train',
  'report-claims',
]);
const HEAD_RE = /^L\d{1,2}H\d{1,2}$/;
const ABLATE_RE = /^L\d{1,2}(?:H\d{1,2}|MLP)$/;   // a head, or a layer's MLP output
const END_RE = '(?:L\\d{1,2}H\\d{1,2}|\\*)';
const CUT_RE = new RegExp(`^${END_RE}>${END_RE}\\.[qkv]$`);
const NAME_RE = /^[\w.-]{1,64}$/;
const MODEL_RE = /^(?:local:)?[\w.-]{1,64}$/;   // a shipped model, or a file opened in the page (local-models.js)
const WORD_RE = /^[\p{L}\p{N}']{1,40}$/u;
const SHORT_TEXT_RE = /^[^\u0000-\u001f\u007f]{0,64}$/u;   // short text, no control characters

export const DEFAULT_STATE = Object.freeze({
  view: 'induction',
  model: null,        // null: the view's default model (the first models/index.json lists for it)
  snapshot: null,     // e.g. "step1000" (models/snapshots/<model>/<snapshot>.safetensors)
  text: null,         // null: the view's sample text
  pos: null,          // the focused token position
  head: null,         // "L1H2"
  ablate: Object.freeze([]),
  cut: Object.freeze([]),
  nopos: false,
  abl: 'zero',        // IOI: the ablation kind of the cuts, zero | mean | mean-all | resample
  names: null,        // IOI: the six symbolic names' display names, comma-separated
  order: null,        // IOI: "IOSS" | "SIOS" (null: IOSS)
  io: null,           // IOI: the indirect object's name (null: the view's default)
  s: null,            // IOI: the subject's name
  tpl: null,          // IOI, sentence templates: the template's index
  place: null,        // IOI, sentence templates: the place and the object
  object: null,
  sort: null,         // Circuits: how the tables' rows and columns are ordered (null: token)
  top: null,          // Circuits: rows and columns shown (null: 40)
  zoom: null,         // Circuits: cell size in pixels (null: 12)
  hsort: null,        // Induction: the head-score table's sort column (null: head order)
  patch: null,        // IOI, Induction: activation patching, 'denoise' | 'noise' (null: off)
  target: null,       // Circuits: the token id the path expansion explains (null: the prediction)
  through: null,      // Circuits: the earlier head of the composed QK circuit (null: the previous layer's H0)
  compose: null,      // Circuits: the composed QK circuit's input, k | q (null: k)
  embed: false,
  hide: Object.freeze([]),
  panel: null,        // embed: the one panel shown alone ("VIEW-PART", a panel of the view)
  lesson: null,       // a lesson's name (lessons/NAME.md), "index" (the list), or null (no lesson)
  step: null,         // the lesson's step, from 0 (null: 0)
  done: Object.freeze([]),   // the steps whose check passed, as strings ("0", "2")
  lessonText: null,   // the Markdown of a pasted lesson (lesson "pasted"), carried in the link
});

// ------------------------------------------------------------------------------------------------
// Fields: parse(string) -> value (throws a sentence), format(value) -> string | null (left out)

const bad = (what, s, describe) => new Error(`${what}: "${String(s).slice(0, 40)}" is not ${describe}`);
const oneOf = (what, values) => ({
  parse: (s) => { if (!values.includes(s)) throw bad(what, s, `one of ${values.join(', ')}`); return s; },
  format: (x) => x,
});
const matching = (what, re, describe) => ({
  parse: (s) => { if (!re.test(s)) throw bad(what, s, describe); return s; },
  format: (x) => x,
});
const list = (what, re, describe) => ({
  parse: (s) => {
    const items = s === '' ? [] : s.split(',');
    if (items.length > 256) throw new Error(`${what}: more than 256 entries`);
    for (const x of items) if (!re.test(x)) throw bad(what, x, describe);
    return [...new Set(items)].sort();
  },
  format: (a) => a.join(','),
});
const integer = (what, lo, hi) => ({
  parse: (s) => {
    const n = Number(s);
    if (!/^\d{1,6}$/.test(s) || n < lo || n > hi) throw bad(what, s, `a whole number from ${lo} to ${hi}`);
    return n;
  },
  format: (x) => String(x),
});
const flag = (what) => ({
  parse: (s) => { if (s !== '0' && s !== '1') throw bad(what, s, '0 or 1'); return s === '1'; },
  format: (b) => (b ? '1' : null),
});

const FIELDS = new Map(Object.entries({
  view: oneOf('view', VIEWS),
  model: matching('model', MODEL_RE, 'a model name'),
  snapshot: matching('snapshot', /^step\d{1,15}$/, 'a snapshot name such as step1000'),
  pos: integer('pos', 0, 99_999),
  head: matching('head', HEAD_RE, 'a head such as L1H2'),
  ablate: list('ablate', ABLATE_RE, 'a head such as L1H2 or a layer\'s MLP such as L0MLP'),
  cut: list('cut', CUT_RE, 'a cut such as L0H1>L1H2.k'),
  nopos: flag('nopos'),
  abl: oneOf('abl', ABLATIONS),
  names: { parse: (s) => { if (s.length > 400 || !/^[^\u0000-\u001f\u007f]*$/u.test(s)) throw bad('names', s, 'a list of six names'); return s; }, format: (x) => x },
  order: oneOf('order', ['IOSS', 'SIOS']),
  io: matching('io', SHORT_TEXT_RE, 'a name'),
  s: matching('s', SHORT_TEXT_RE, 'a name'),
  tpl: integer('tpl', 0, 999),
  place: matching('place', WORD_RE, 'a word'),
  object: matching('object', WORD_RE, 'a word'),
  sort: oneOf('sort', ['token', 'row', 'col', 'both']),
  top: oneOf('top', ['all', '80', '40', '20', '10']),
  zoom: integer('zoom', 3, 28),
  hsort: oneOf('hsort', ['prefix', 'previous', 'stripe', 'rprefix', 'rcopy']),
  patch: oneOf('patch', ['denoise', 'noise']),
  target: integer('target', 0, 999_999),
  through: matching('through', HEAD_RE, 'a head such as L0H1'),
  compose: oneOf('compose', ['k', 'q']),
  embed: flag('embed'),
  hide: list('hide', new RegExp(`^(${HIDEABLE.join('|')})$`), HIDEABLE.join(' or ')),
  panel: { parse: (s) => { if (!PANELS.includes(s)) throw bad('panel', s, 'a panel such as induction-tokens'); return s; }, format: (x) => x },
  lesson: matching('lesson', /^[a-z0-9][a-z0-9-]{0,40}$/, 'a lesson name such as induction-heads'),
  step: integer('step', 0, 99),
  done: list('done', /^\d{1,2}$/, 'a step number'),
}));

const fresh = () => ({ ...DEFAULT_STATE });
const same = (a, b) => a === b || JSON.stringify(a) === JSON.stringify(b);

/** The hash (without '#') that encodes a state; default values are left out. */
export function encodeState(state) {
  const p = new URLSearchParams();
  p.set('v', String(VERSION));
  for (const [key, field] of FIELDS) {
    const value = state[key];
    if (value === undefined || value === null || same(value, DEFAULT_STATE[key])) continue;
    const s = field.format(value);
    if (s !== null && s !== undefined) p.set(key, s);
  }
  if (typeof state.text === 'string') {
    const text = wellFormed(state.text);
    const plain = encodeURIComponent(text);
    const packed = LZString.compressToEncodedURIComponent(text);
    if (plain.length <= 120 || plain.length <= packed.length) p.set('text', text);
    else p.set('tz', packed);
  }
  if (typeof state.lessonText === 'string') p.set('lt', LZString.compressToEncodedURIComponent(wellFormed(state.lessonText)));
  return p.toString();
}

/**
 * The hash the app writes for a state: all of it, or, when the text is too long for a link (over
 * MAX_TEXT characters, or a hash over MAX_HASH), the state without its text. {hash, textLeftOut}.
 * The text is compressed once here, never for a text that is too long anyway.
 */
export function linkOf(state) {
  if ((state.text ?? '').length <= MAX_TEXT) {
    const hash = encodeState(state);
    if (hash.length <= MAX_HASH) return { hash, textLeftOut: false };
  }
  const hash = encodeState({ ...state, text: null, pos: null });
  if (hash.length <= MAX_HASH) return { hash, textLeftOut: true };
  // A pasted lesson too long for a link: the link leaves it out as well (and says so).
  return { hash: encodeState({ ...state, text: null, pos: null, lessonText: null }), textLeftOut: true, lessonLeftOut: true };
}

// Version 1 carried some settings as JSON strings (io=%22A%22), the IOI view's cut of all
// composition as a bare Q | K | V, and its positions switch as removePos.
const unquote = (s) => {
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) {
    try { const v = JSON.parse(s); if (typeof v === 'string') return v; } catch { /* as written */ }
  }
  return s;
};
function upgradeV1(key, value) {
  if (key === 'cut') return ['cut', value.split(',').filter(Boolean).map((c) => (/^[QKV]$/.test(c) ? `*>*.${c.toLowerCase()}` : c)).join(',')];
  if (key === 'removePos') return ['nopos', unquote(value) === '1' || value === 'true' ? '1' : '0'];
  return [key, unquote(value)];
}

// lz-string's decompressFromEncodedURIComponent, stopping as soon as the text passes `max`
// characters: a few kilobytes of compressed text can stand for hundreds of millions of characters
// (each code one character longer than the one before), which lz-string would build in full, and
// a damaged stream can make it throw a TypeError. Returns the text, null if the stream is
// damaged, or Infinity if the text would be longer than max.
const URI_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-$';
export function unpackText(packed, max = MAX_TEXT) {
  const s = packed.replace(/ /g, '+');
  if (s === '') return null;
  const value = (i) => Math.max(0, URI_SAFE.indexOf(s.charAt(i)));   // past the end or outside the alphabet: 0, as lz-string
  let val = value(0), position = 32, index = 1;
  const read = (n) => {   // n bits, least significant first
    let bits = 0;
    for (let power = 1; power < 2 ** n; power *= 2) {
      if (val & position) bits += power;
      position >>= 1;
      if (position === 0) { position = 32; val = value(index++); }
    }
    return bits;
  };
  const literal = (code) => String.fromCharCode(read(code === 0 ? 8 : 16));
  const first = read(2);
  if (first === 2) return '';
  if (first === 3) return null;
  let w = literal(first);
  const dict = [null, null, null, w];
  const out = [w];
  let length = 1, numBits = 3, enlargeIn = 4;
  for (;;) {
    if (index > s.length) return null;          // the stream ends without its end mark
    let code = read(numBits);
    if (code === 2) return out.join('');
    if (code < 2) {
      dict.push(literal(code));
      code = dict.length - 1;
      if (--enlargeIn === 0) { enlargeIn = 2 ** numBits; numBits++; }
    }
    let entry;
    if (code < dict.length && dict[code]) entry = dict[code];
    else if (code === dict.length) entry = w + w.charAt(0);
    else return null;
    length += entry.length;
    if (length > max) return Infinity;
    out.push(entry);
    dict.push(w + entry.charAt(0));
    w = entry;
    if (--enlargeIn === 0) { enlargeIn = 2 ** numBits; numBits++; }
  }
}

// Text with its lone surrogates (which compressed text can hold) replaced by U+FFFD, as a text=
// of broken UTF-8 reads: such a text could not be percent-encoded into the next link.
const wellFormed = (t) => (typeof t.toWellFormed === 'function' ? t.toWellFormed() : t.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));

function readText(key, value) {
  const tooLong = new Error(`its text is longer than ${MAX_TEXT.toLocaleString('en')} characters`);
  let text = value;
  if (key === 'tz') {
    text = unpackText(value, MAX_TEXT);
    if (text === Infinity) throw tooLong;
    if (typeof text !== 'string' || (text === '' && value !== '')) throw new Error('its compressed text is damaged');
  }
  if (text.length > MAX_TEXT) throw tooLong;
  return wellFormed(text);
}

function readLessonText(value) {
  const text = unpackText(value, MAX_LESSON_TEXT);
  if (text === Infinity) throw new Error(`its lesson is longer than ${MAX_LESSON_TEXT.toLocaleString('en')} characters`);
  if (typeof text !== 'string') throw new Error('its lesson is damaged');
  return wellFormed(text);
}

/** What decodeHash says of a link of `length` characters, longer than MAX_HASH: {state, error}. */
export function refusedLink(length) {
  return { state: fresh(), error: `This link could not be read (it is ${Math.round(length / 1024)} KB, more than the ${MAX_HASH / 1024} KB a link may hold), so the default view is shown.` };
}

/**
 * Reads a hash ('#...' or '...'). Returns {state, error}: state is always a full, valid state
 * (the default one when error is set); error is a sentence for the page, or null.
 */
export function decodeHash(hash) {
  const raw = String(hash ?? '').replace(/^#/, '');
  if (!raw) return { state: fresh(), error: null };
  const fail = (why) => ({ state: fresh(), error: `This link could not be read (${why}), so the default view is shown.` });
  if (raw.length > MAX_HASH) return refusedLink(raw.length);
  let p;
  try { p = new URLSearchParams(raw); } catch { return fail('it is not a list of settings'); }
  const v = p.get('v');
  if (v === null) return fail('it has no version number');
  if (v !== '1' && v !== String(VERSION)) {
    return fail(/^\d{1,6}$/.test(v) ? `it was made by version ${v} of the page; this is version ${VERSION}` : 'its version is not a number');
  }
  const state = fresh();
  try {
    for (const [rawKey, rawValue] of p) {
      if (rawKey === 'v') continue;
      const [key, value] = v === '1' ? upgradeV1(rawKey, rawValue) : [rawKey, rawValue];
      if (key === 'text' || key === 'tz') state.text = readText(key, value);
      else if (key === 'lt') state.lessonText = readLessonText(value);
      else if (FIELDS.has(key)) state[key] = FIELDS.get(key).parse(value);
      // any other key: a setting this page does not know; ignored
    }
  } catch (e) {
    return fail(e.message);
  }
  if (state.panel && !state.panel.startsWith(`${state.view}-`)) return fail(`the panel ${state.panel} is not one of the ${VIEW_TITLES[state.view]} view's`);
  return { state, error: null };
}

// ------------------------------------------------------------------------------------------------
// Heads, cuts and the intervention

/** "L1H2" -> [1, 2] (null if not a head). */
export function parseHead(s) {
  const m = typeof s === 'string' && /^L(\d+)H(\d+)$/.exec(s);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

export const headName = (l, h) => `L${l}H${h}`;

/** "L0MLP" -> 0 (the layer whose MLP output it names), else null. */
export function parseMlp(s) {
  const m = typeof s === 'string' && /^L(\d+)MLP$/.exec(s);
  return m ? Number(m[1]) : null;
}
export const mlpName = (l) => `L${l}MLP`;

/**
 * [layer, head] a view or panel shows: the state's head when the model has it, else the core's
 * one default (model.defaultHead(): the strongest induction head); null without attention layers.
 */
export function shownHead(model, head) {
  const c = model.config;
  if (!c.n_layers) return null;
  const sel = parseHead(head);
  if (sel && sel[0] < c.n_layers && sel[1] < c.n_heads) return sel;
  const d = model.defaultHead();
  return d ? [d.layer, d.head] : null;
}

/** "L0H1>L1H2.k" -> {from: [0, 1], to: [1, 2], input: 'k'}; an end of * is null (every head). */
export function parseCut(s) {
  const m = typeof s === 'string' && /^(L\d+H\d+|\*)>(L\d+H\d+|\*)\.([qkv])$/.exec(s);
  return m ? { from: m[1] === '*' ? null : parseHead(m[1]), to: m[2] === '*' ? null : parseHead(m[2]), input: m[3] } : null;
}

/** Every head of a config as [layer, head]. */
function heads(config) {
  const out = [];
  for (let l = 0; l < config.n_layers; l++) for (let h = 0; h < config.n_heads; h++) out.push([l, h]);
  return out;
}

/**
 * The core's intervention for a state: {ablate: [{layer, head}], ablateMlp: [{layer}], cut:
 * [{from, to, input}], removePos, ablation}. Cuts with * ends name every head there (only paths from an earlier layer
 * to a later one exist); ablation (the state's abl) comes with the cuts and head ablations when it is not zero.
 * Call after checkState(): heads outside the model are not expected here.
 */
export function interventionOf(state, config) {
  const out = {};
  const ablate = (state.ablate || []).map(parseHead).filter(Boolean).map(([layer, head]) => ({ layer, head }));
  const ablateMlp = (state.ablate || []).map(parseMlp).filter((l) => l !== null).map((layer) => ({ layer }));
  const cut = [];
  const seen = new Set();
  for (const c of (state.cut || []).map(parseCut).filter(Boolean)) {
    for (const from of c.from ? [c.from] : heads(config)) {
      for (const to of c.to ? [c.to] : heads(config)) {
        const key = `${from}>${to}.${c.input}`;
        if (from[0] < to[0] && !seen.has(key)) { seen.add(key); cut.push({ from, to, input: c.input }); }
      }
    }
  }
  if (ablate.length) out.ablate = ablate;
  if (ablateMlp.length) out.ablateMlp = ablateMlp;
  if (cut.length) out.cut = cut;
  if ((cut.length || ablate.length) && state.abl && state.abl !== 'zero') out.ablation = state.abl;
  if (state.nopos) out.removePos = true;
  return out;
}

/**
 * Checks a state against the model it names: heads inside the model, cuts from an earlier layer
 * into a later one, a snapshot the model has. A sentence saying what does not fit, or null.
 */
export function checkState(state, { config, snapshots = [] }) {
  const name = state.model ?? 'the model';
  const inside = (h) => h && h[0] < config.n_layers && h[1] < config.n_heads;
  const size = config.n_layers ? `${config.n_layers} layer${config.n_layers > 1 ? 's' : ''} of ${config.n_heads} head${config.n_heads > 1 ? 's' : ''}` : 'no attention heads';
  for (const h of [state.head, state.through, ...(state.ablate || [])]) {
    const mlp = parseMlp(h);
    if (mlp !== null) {
      if (!(config.d_mlp > 0)) return `${name} has no MLP to ablate (${h}): it is attention-only`;
      if (mlp >= config.n_layers) return `${name} has no layer ${mlp} (it has ${size})`;
    } else if (h && !inside(parseHead(h))) return `${name} has no head ${h} (it has ${size})`;
  }
  for (const s of state.cut || []) {
    const c = parseCut(s);
    if ((c.from && !inside(c.from)) || (c.to && !inside(c.to))) return `${name} has no path ${s} (it has ${size})`;
    if (c.from && c.to && c.from[0] >= c.to[0]) return `the cut ${s} does not go from an earlier layer to a later one`;
  }
  if (state.target !== null && state.target !== undefined && !(state.target < config.d_vocab)) return `${name} has no token ${state.target} (its vocabulary has ${config.d_vocab})`;
  if (state.snapshot && !snapshots.includes(state.snapshot)) return `${name} has no training snapshot ${state.snapshot}`;
  if (state.nopos && config.pos_embed === 'none') return `${name} has no positional embedding to remove`;
  if (state.abl && state.abl !== 'zero') {
    if (state.view !== 'ioi' && state.view !== 'induction') return `the ${state.abl} ablation (abl=${state.abl}) replaces what the IOI and Induction views remove; this view removes nothing`;
    if ((state.ablate || []).some((h) => parseMlp(h) !== null)) return `the ${state.abl} ablation (abl=${state.abl}) is kept for heads only: an MLP is zero-ablated, so leave abl out of a link that ablates one`;
  }
  return null;
}

// ------------------------------------------------------------------------------------------------
// Actions: the only way the state changes. Each is plain data, so a test can replay them.

const RESET_ON_MODEL = { snapshot: null, head: null, ablate: [], cut: [], nopos: false, abl: 'zero', pos: null, target: null, through: null };
const toggled = (arr, x) => (arr.includes(x) ? arr.filter((y) => y !== x) : [...arr, x].sort());

/** The next state after an action (a pure function). */
export function reduce(state, action) {
  switch (action.type) {
    case 'view':      // another tab: heads and interventions belong to the view left behind; the app
                      // passes the model when the new view offers it too
      if (action.view === state.view) return state;
      return { ...state, view: action.view, head: null, ablate: [], cut: [], nopos: false, abl: 'zero', pos: null, panel: null,
        patch: null,
        model: action.model ?? null, snapshot: action.model && action.model === state.model ? state.snapshot : null };
    case 'model':
      return { ...state, ...RESET_ON_MODEL, model: action.model, tpl: null, io: null, s: null, place: null, object: null };
    case 'opened': {  // a model file opened in the page: {type: 'opened', model, views (that offer
                      // it), readsText (its tokenizer reads typed text), view (asked for, or null),
                      // message (the sentence the page shows)}: shown in the view asked for, else
                      // in this view when it offers the model and shows one model, else in its first
      const target = action.view ?? (['induction', 'ioi', 'circuits'].includes(state.view) && action.views.includes(state.view) ? state.view : action.views[0]);
      const next = reduce(state, target !== state.view ? { type: 'view', view: target, model: action.model } : { type: 'model', model: action.model });
      // Text typed for a character or sub-word model is not text for a word or token-id vocabulary.
      return action.readsText || next.text === null ? next : { ...next, text: null };
    }
    case 'snapshot':
      return { ...state, snapshot: action.snapshot ?? null };
    case 'toggleAblate':
      return { ...state, ablate: toggled(state.ablate, action.head) };
    case 'toggleCut':
      return { ...state, cut: toggled(state.cut, action.cut) };
    case 'set': {     // plain settings: {type: 'set', values: {head: 'L1H2', text: '...'}}
      const next = { ...state };
      for (const [k, v] of Object.entries(action.values)) if (Object.hasOwn(DEFAULT_STATE, k)) next[k] = Array.isArray(v) ? [...new Set(v)].sort() : v;
      return next;
    }
    case 'replace':   // a whole state read from a link
      return { ...fresh(), ...action.state };
    case 'lesson': {  // a lesson's step: {type: 'lesson', lesson, step, state}: the step's own state
                      // (its link, decoded), keeping the page's chrome and, in the same lesson,
                      // the steps done; lesson null closes the lesson and keeps the view
      if (!action.lesson) return { ...state, lesson: null, step: null, done: [], lessonText: null };
      const sameLesson = action.lesson === state.lesson && (action.lessonText ?? state.lessonText) === state.lessonText;
      const lessonText = action.lesson === 'pasted' ? action.lessonText ?? state.lessonText : null;
      const keep = { embed: state.embed, hide: state.hide, done: sameLesson ? state.done : [], lessonText };
      return { ...(action.state ? { ...fresh(), ...action.state } : state), ...keep, lesson: action.lesson, step: action.step || null };
    }
    default:
      throw new Error(`unknown action ${action.type}`);
  }
}

/**
 * A store: {state, version, dispatch(action), subscribe(fn) -> unsubscribe}. `version` counts the
 * changes; a view records the version it last rendered (data-version), so a test can tell when
 * the page shows the store's state.
 */
export function createStore(initial = fresh()) {
  let version = 0;
  const value = observable({ ...fresh(), ...initial }, Object.keys(DEFAULT_STATE), same, () => { version += 1; });
  return {
    get state() { return value.get(); },
    get version() { return version; },
    dispatch(action) { value.set(reduce(value.get(), action), action); },
    subscribe: value.subscribe,
  };
}

/**
 * A frozen object that tells its listeners when it changes: {get(), set(next, ...extra),
 * subscribe(fn) -> unsubscribe}. set() does nothing when `equal` holds for every one of `keys`;
 * otherwise it calls changed() and then fn(next, prev, ...extra) for each listener.
 */
function observable(initial, keys, equal, changed = () => {}) {
  let value = Object.freeze(initial);
  const listeners = new Set();
  return {
    get: () => value,
    set(next, ...extra) {
      if (keys.every((k) => equal(next[k], value[k]))) return;
      const prev = value;
      value = Object.freeze(next);
      changed();
      for (const fn of [...listeners]) fn(value, prev, ...extra);
    },
    subscribe(fn) { listeners.add(fn); return () => listeners.delete(fn); },
  };
}

/** The page's store (one per page; a view mounted alone in another page uses it too). */
export const store = createStore();

// ------------------------------------------------------------------------------------------------
// The in-page training run ("Train it yourself"): what it is doing, which no link carries (a link
// opens a view, not a run in progress). Its panel writes it (panels/training/run.js, live.js);
// lessons' checks read it (lessons/measures.js) and follow it (lessons/lesson.js); the Training
// view mirrors it on its element as data-* attributes for tests and benchmarks.

/** No run yet: state is idle | starting | running | paused | stopped | failed. */
export const NO_TRAINING_RUN = Object.freeze({
  state: 'idle', recipe: null, step: 0, steps: 0, stepsPerSecond: null, workers: 1,
  phaseChangeStep: null, phaseChangeSeconds: null, trainSeconds: null, trainedLoaded: false,
});

/**
 * A training run's state: {state (NO_TRAINING_RUN's fields), update(values), reset(values),
 * subscribe(fn) -> unsubscribe}; fn(state) after every change.
 */
export function createTrainingRun() {
  const value = observable(NO_TRAINING_RUN, Object.keys(NO_TRAINING_RUN), (a, b) => a === b);
  return {
    get state() { return value.get(); },
    update(values) { value.set({ ...value.get(), ...values }); },
    reset(values = {}) { value.set({ ...NO_TRAINING_RUN, ...values }); },
    subscribe: value.subscribe,
  };
}

/** The page's training run (one at a time: starting one in another view replaces it). */
export const trainingRun = createTrainingRun();

// ------------------------------------------------------------------------------------------------
// The model registry and cache

const SITE = new URL('./', import.meta.url);   // the site root (this file sits there)
export const siteUrl = (p) => new URL(p, SITE).href;

const jsonCache = new Map();
/** Fetches (once) a JSON file of the site (e.g. 'models/report.json'); null if missing or bad. */
export function getJSON(p) {
  if (!jsonCache.has(p)) jsonCache.set(p, fetch(siteUrl(p)).then((r) => (r.ok ? r.json() : null)).catch(() => null));
  return jsonCache.get(p);
}

let indexPromise = null;
/**
 * The models of the site, from models/index.json alone: [{file, name, title, description,
 * views}] (name = file without .safetensors; views = the views that offer it). Never rejects.
 */
export function getModelIndex() {
  indexPromise ??= getJSON('models/index.json').then((index) => (Array.isArray(index) ? index : [])
    .filter((m) => m && typeof m.file === 'string' && Array.isArray(m.views))
    .map((m) => ({ ...m, name: m.file.replace(/\.safetensors$/, '') })));
  return indexPromise;
}

/**
 * The models a view offers, in models/index.json's order (the first is its default), then the
 * model files opened in this page that suit the view (local-models.js; {local: false} leaves them out).
 */
export async function modelsFor(view, { local = true } = {}) {
  const shipped = (await getModelIndex()).filter((m) => m.views.includes(view));
  return local ? [...shipped, ...localModels().filter((m) => m.views.includes(view))] : shipped;
}

/** The model a state shows: its own, or its view's default. */
export async function modelOf(state) {
  if (state.model) return state.model;
  return (await modelsFor(state.view))[0]?.name ?? null;
}

/**
 * A model's snapshot names (e.g. ["step0", "step100", ...]), from the build's manifest; for a
 * checkpoint series opened in the page, its checkpoints but the opened one; [] if none.
 */
export async function getSnapshots(name) {
  if (isLocalName(name)) return [...(localModel(name)?.snapshots ?? [])];
  const s = (await getJSON('models/manifest.json'))?.snapshots?.[name];
  return Array.isArray(s) ? s : [];
}

/**
 * The extra training seeds of a shipped model whose records the site holds
 * (models/seeds/NAME.seedN.metrics.json), e.g. [1, 2]; none for a model opened in the page.
 * @param {string} name
 * @returns {Promise<number[]>}
 */
export async function getSeeds(name) {
  if (isLocalName(name)) return [];
  const s = (await getJSON('models/manifest.json'))?.seeds?.[name];
  return Array.isArray(s) ? s : [];
}

let modulePromise = null;
/**
 * The initialised WASM API (one instance for the page): the relaxed-SIMD module where the browser
 * has relaxed SIMD, else the SIMD128 one; which one is <html data-wasm="relaxed|simd128">.
 * @returns {Promise<import('./wasm/circuitscope.js').Circuitscope>}
 */
export function getModule() {
  if (!modulePromise) {
    modulePromise = import(siteUrl('wasm/circuitscope.js')).then((m) => m.init()).then((api) => {
      if (typeof document !== 'undefined') document.documentElement.dataset.wasm = api.simd;
      return api;
    });
    modulePromise.catch(() => { modulePromise = null; });
  }
  return modulePromise;
}

// Model files opened in the page each get a WebAssembly instance of their own (newModule): a
// module's memory can only grow, so a file kept in the page's one instance would hold its
// megabytes for as long as the tab, refused files included. An instance nothing holds any more
// (its file refused, or closed: closeLocal) is collected with all its memory.
let separateModules = 0;
const collected = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry(() => { separateModules -= 1; }) : null;
/**
 * A new WASM instance (the page's .wasm, compiled once, instantiated again) for one model file.
 * @returns {Promise<import('./wasm/circuitscope.js').Circuitscope>}
 */
export async function newModule() {
  const api = await import(siteUrl('wasm/circuitscope.js')).then((m) => m.init({ separate: true }));
  separateModules += 1;
  collected?.register(api.module, null);
  return api;
}
/** How many of newModule()'s instances have not been collected yet (for tests and the soak). */
export const separateModulesAlive = () => separateModules;

const modelCache = new Map();
/**
 * Loads (once) and returns models/<name>.safetensors as a LoadedModel, or with a snapshot
 * models/snapshots/<name>/<snapshot>.safetensors. Models are shared between views: never
 * delete() one from here. Rejects with an Error saying which file could not be fetched or opened.
 * @param {string} name @param {{snapshot?: string | null}} [options]
 * @returns {Promise<import('./wasm/circuitscope.js').LoadedModel>}
 */
export function getModel(name, { snapshot = null } = {}) {
  if (isLocalName(name)) return getLocalModel(name, snapshot);
  if (!NAME_RE.test(String(name)) || (snapshot && !NAME_RE.test(String(snapshot)))) {
    return Promise.reject(new Error(`"${name}${snapshot ? '/' + snapshot : ''}" is not a model name.`));
  }
  const key = snapshot ? `${name}/${snapshot}` : name;
  if (!modelCache.has(key)) {
    const file = snapshot ? `models/snapshots/${name}/${snapshot}.safetensors` : `models/${name}.safetensors`;
    const p = (async () => {
      const cs = await getModule();
      const res = await fetch(siteUrl(file));
      if (!res.ok) throw new Error(`Could not fetch ${file} (HTTP ${res.status}).`);
      const bytes = new Uint8Array(await res.arrayBuffer());
      try {
        return cs.load(bytes);
      } catch (e) {
        throw new Error(`Could not open ${file}: ${e.message}`);
      }
    })();
    p.catch(() => modelCache.delete(key));
    modelCache.set(key, p);
  }
  return modelCache.get(key);
}

// The checkpoints of series read for a view, newest use last: at most two stay in memory (a
// TransformerLens checkpoint is 200 MB); the one read longest ago is freed when a third is asked for.
const checkpointCache = new Map();   // "local:NAME/stepN" -> Promise of a LoadedModel
const KEEP_CHECKPOINTS = 2;
onLocalClosed((name) => { for (const key of [...checkpointCache.keys()]) if (key.startsWith(`${name}/`)) checkpointCache.delete(key); });

/** A model file opened in this page (never fetched: it is in the page or it is not there), or one checkpoint of its series. */
function getLocalModel(name, snapshot) {
  const entry = MODEL_RE.test(name) ? localModel(name) : undefined;
  if (!entry) return Promise.reject(new Error(`${String(name).slice(0, 80)} is a model file opened in another page: open the same file here (Open a model file) to see it.`));
  if (!snapshot) return Promise.resolve(entry.model);
  const checkpoint = entry.snapshots.includes(snapshot) ? entry.series.checkpoints.find((c) => c.snapshot === snapshot) : null;
  if (!checkpoint) {
    return Promise.reject(new Error(entry.series ? `${name} has no checkpoint ${snapshot}.` : `${name} is a model file opened in this page: it has no training snapshots (open several checkpoints of its run together to see them).`));
  }
  const key = `${name}/${snapshot}`;
  let p = checkpointCache.get(key);
  checkpointCache.delete(key);
  if (!p) {
    p = entry.series.open(checkpoint.file);
    p.catch(() => checkpointCache.delete(key));
  }
  checkpointCache.set(key, p);
  while (checkpointCache.size > KEEP_CHECKPOINTS) {
    const [oldKey, old] = checkpointCache.entries().next().value;
    checkpointCache.delete(oldKey);
    old.then((m) => m.delete(), () => {});
  }
  return p;
}
