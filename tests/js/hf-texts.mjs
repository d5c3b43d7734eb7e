// A deterministic generator of test texts for the Hugging Face tokenizer oracle test
// (hf_tokenizers.test.mjs): texts(n, seed) gives n texts from a seeded generator (tests/rng.mjs),
// the same list for the same (n, seed) on every machine; badTexts() gives texts holding lone
// surrogates, which a tokenizer must refuse rather than tokenize.
//
// The mix: windows of 1-400 characters of the real corpora (models/corpus/train.txt and
// gutenberg-valid.txt); code points of every script; combining-mark sequences (a base and several
// marks, often in non-canonical order, and decomposed precomposed letters, so that NFC reorders and
// composes); Hangul jamo (L V T sequences that NFC composes, archaic and compatibility jamo that it
// does not); emoji sequences (ZWJ, skin tones, variation selectors, flags, keycaps, tags); runs of
// mixed whitespace; digits and numbers (ASCII and other scripts' digits, fractions, numerals);
// source code; English contractions in both cases and with curly apostrophes; the added tokens
// (<|endoftext|>, runs of spaces) inside text; and mixtures of all of these.
//
// Unicode version: generated code points are drawn only from those ASSIGNED in Unicode 15.0
// (/usr/share/unicode/UnicodeData.txt and Scripts.txt of Debian's unicode-data package, which is
// 15.0; `apt-get install -y unicode-data`), the version our C++ tables follow, while Node's regex
// properties and String.prototype.normalize follow its ICU (process.versions.unicode, 17.0 on Node
// 20.20): code points assigned after 15.0 would make differences that are only a version gap.
// Normalization stability makes NFC agree across versions for assigned code points. Code points
// whose general category Node's \p{L} / \p{N} / \p{M} disagree with 15.0 about are dropped as well.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng } from '../rng.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const UCD = '/usr/share/unicode';

const EOT = '<|endoftext|>';

let ucdCache = null;
// Unicode 15.0 data: assigned code points with their general category and canonical combining
// class, scripts -> code points, canonical decompositions, emoji sequences.
function ucd() {
  if (ucdCache) return ucdCache;
  const dataFile = path.join(UCD, 'UnicodeData.txt');
  if (!fs.existsSync(dataFile)) {
    throw new Error(`${dataFile} is missing: install Debian's unicode-data package (apt-get install -y unicode-data)`);
  }
  const readme = fs.existsSync(path.join(UCD, 'Scripts.txt')) ? fs.readFileSync(path.join(UCD, 'Scripts.txt'), 'utf8').slice(0, 200) : '';
  if (!/Scripts-15\.0\.0/.test(readme)) throw new Error(`${UCD}/Scripts.txt is not Unicode 15.0.0's`);
  const gc = new Map();   // code point -> general category
  const ccc = new Map();  // code point -> canonical combining class (non-zero only)
  const decomp = [];      // [code point, [canonical decomposition]]
  let first = null;
  for (const line of fs.readFileSync(dataFile, 'utf8').split('\n')) {
    if (!line) continue;
    const f = line.split(';');
    const cp = parseInt(f[0], 16);
    if (f[1].endsWith(', First>')) { first = cp; continue; }
    const from = f[1].endsWith(', Last>') ? first : cp;
    for (let c = from; c <= cp; c++) gc.set(c, f[2]);
    if (Number(f[3]) > 0) ccc.set(cp, Number(f[3]));
    if (f[5] && !f[5].startsWith('<')) decomp.push([cp, f[5].split(' ').map((h) => parseInt(h, 16))]);
  }
  // Node's properties must agree with 15.0's categories for a code point to be drawn.
  const reL = /^\p{L}$/u, reN = /^\p{N}$/u, reM = /^\p{M}$/u;
  const agrees = (cp) => {
    const g = gc.get(cp);
    if (g === undefined || g === 'Cs') return false;
    const s = String.fromCodePoint(cp);
    return reL.test(s) === g.startsWith('L') && reN.test(s) === g.startsWith('N') && reM.test(s) === g.startsWith('M');
  };
  const scripts = new Map();  // script -> [code points]
  for (const line of fs.readFileSync(path.join(UCD, 'Scripts.txt'), 'utf8').split('\n')) {
    const m = /^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*(\w+)/.exec(line);
    if (!m) continue;
    const lo = parseInt(m[1], 16), hi = m[2] ? parseInt(m[2], 16) : lo;
    let list = scripts.get(m[3]);
    if (!list) scripts.set(m[3], (list = []));
    for (let c = lo; c <= hi; c++) if (agrees(c)) list.push(c);
  }
  for (const [k, v] of scripts) if (v.length === 0) scripts.delete(k);
  const marks = [...ccc.keys()].filter((c) => agrees(c) && gc.get(c) === 'Mn');
  // Full canonical decompositions of the precomposed letters (recursively).
  const dmap = new Map(decomp);
  const full = (cp) => (dmap.has(cp) ? dmap.get(cp).flatMap(full) : [cp]);
  const decomposable = decomp.filter(([cp, d]) => d.length > 1 && agrees(cp)).map(([cp]) => [cp, full(cp)]);
  const emoji = [];
  const emojiFile = path.join(UCD, 'emoji', 'emoji-test.txt');
  if (fs.existsSync(emojiFile)) {
    for (const line of fs.readFileSync(emojiFile, 'utf8').split('\n')) {
      const m = /^([0-9A-F ]+?)\s*;\s*(fully-qualified|minimally-qualified|unqualified|component)/.exec(line);
      if (m) emoji.push(String.fromCodePoint(...m[1].split(' ').map((h) => parseInt(h, 16))));
    }
  }
  const emojiBases = [...gc.keys()].filter((c) => c >= 0x1F300 && c <= 0x1FAFF && gc.get(c) === 'So');
  const assigned = [...gc.keys()].filter((c) => agrees(c));
  ucdCache = { gc, ccc, scripts: [...scripts.entries()], marks, decomposable, emoji, emojiBases, assigned };
  return ucdCache;
}

let corporaCache = null;
function corpora() {
  if (!corporaCache) {
    corporaCache = ['train.txt', 'gutenberg-valid.txt'].map((f) => fs.readFileSync(path.join(ROOT, 'models', 'corpus', f), 'utf8'));
  }
  return corporaCache;
}

const WHITESPACE = [' ', ' ', ' ', '  ', '   ', '    ', '\t', '\n', '\n', '\r\n', '\r', '\u000B', '\u000C',
  '\u00A0', '\u3000', '\u0085', '\u2028', '\u2029', '\u1680', '\u2003', '\u202F', '\u205F', '\u200B', '\uFEFF'];
const WORDS = ['the', 'of', 'and', 'a', 'to', 'in', 'is', 'you', 'that', 'it', 'he', 'was', 'for', 'on', 'are', 'as',
  'with', 'his', 'they', 'I', 'at', 'be', 'this', 'have', 'from', 'Hello', 'world', 'Alice', 'rabbit', 'token',
  'transformer', 'attention', 'induction', 'circuit', 'residual', 'QK', 'OV', 'GPT', 'NeoX', 'café', 'naïve',
  'Zürich', 'São', 'Paulo', 'Ελλάδα', 'Москва', '東京', '北京', 'सत्यमेव', 'العربية', 'עברית', 'ไทย', '한국어'];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];
const CONTRACTED = ["I'm", "you're", "we've", "he'll", "she'd", "it's", "don't", "can't", "won't", "they're",
  "I'd", "we'll", "you've", "that's", "isn't", "o'clock", "rock'n'roll", "'twas", "ma'am", "y'all'd've"];
const CODE = [
  'int main(int argc, char** argv) {\n  return 0;\n}\n',
  'for (let i = 0; i < n; i++) sum += a[i] * b[i];',
  'def f(x):\n    return {"k": [x, x**2, x // 3]}\n',
  '#include <vector>\nstd::vector<float> v(1 << 20, 0.5f);\n',
  'if (x != nullptr && x->next) { x = x->next; } // walk\n',
  'const re = /^\\s*(\\d+)\\s*$/u; // digits\n',
  'SELECT id, name FROM users WHERE age >= 18 ORDER BY name;',
  '<div class="box" data-x=\'1\'>&amp;&lt;tag&gt;</div>',
  '$ echo "$HOME" | sed -e \'s/a/b/g\' > /tmp/out.txt 2>&1',
  '\tpublic static void main(String[] args) {\n\t\tSystem.out.println("hi");\n\t}\n',
  'x = [1,2,3]\r\ny = {"a":1}\r\n',
  'fn main() { let v: Vec<u8> = b"\\x00\\xff".to_vec(); println!("{:?}", v); }',
  '    # indented comment\n        deeper = True\n',
  'a+=1;b-=2;c*=3;d/=4;e%=5;f<<=6;g>>=7;h&&=i||j??k',
  '{"ids":[15496,995],"bytes":[[0,5],[5,11]]}',
];
const NUMBERS = ['0', '7', '42', '123', '2024', '3.14159', '1,000,000', '-273.15', '1e-9', '0x1F', '0b1011', '10%',
  '½', '¾', '²', '³', '¹', '٠١٢٣٤٥٦٧٨٩', '۱۲۳', '०१२३४', '০১২', '๑๒๓', '１２３', 'Ⅻ', 'ⅷ', '〇', '𝟘𝟙𝟚', '①②', '⁴⁵', '₆₇'];
const APOSTROPHES = ["'", '\u2019', '\u2018', '\u02BC'];

function generator(r) {
  const { scripts, marks, decomposable, emoji, emojiBases, assigned } = ucd();
  const cps = (list, k) => { let s = ''; for (let i = 0; i < k; i++) s += String.fromCodePoint(r.pick(list)); return s; };
  const range = (lo, hi) => lo + r.int(hi - lo + 1);
  const shuffle = (a) => { for (let i = a.length - 1; i > 0; i--) { const j = r.int(i + 1); [a[i], a[j]] = [a[j], a[i]]; } return a; };

  const gen = {
    corpus() {
      const text = r.pick(corpora());
      const len = range(1, 400);
      const start = r.int(Math.max(1, text.length - len));
      return text.slice(start, start + len);  // the corpora are BMP-only: no pair is cut
    },
    script() {
      const [, list] = r.pick(scripts);
      let s = '';
      const k = range(1, 12);
      for (let i = 0; i < k; i++) {
        s += cps(list, range(1, 8));
        if (r.next() < 0.5) s += r.pick([' ', ' ', '\n', '', '.', ',', ' ', '\t']);
      }
      return s;
    },
    anyAssigned() { return cps(assigned, range(1, 20)); },
    marks() {
      let s = '';
      for (let w = range(1, 4); w > 0; w--) {
        if (r.next() < 0.5) {
          const base = r.pick(['a', 'e', 'o', 'u', 'A', 'E', 'O', 'n', 'c', 'z', 'α', 'ω', 'и', 'ק', 'ب', 'क', String.fromCodePoint(r.pick(assigned))]);
          const m = [];
          for (let k = range(1, 6); k > 0; k--) m.push(r.next() < 0.6 ? r.pick([0x301, 0x300, 0x302, 0x303, 0x308, 0x323, 0x327, 0x328, 0x31B, 0x30A, 0x304, 0x331, 0x345]) : r.pick(marks));
          s += base + String.fromCodePoint(...m);
        } else {
          // A precomposed letter, fully decomposed, its marks shuffled, maybe extra marks.
          const [, d] = r.pick(decomposable);
          const rest = shuffle(d.slice(1));
          if (r.next() < 0.3) rest.push(r.pick(marks));
          s += String.fromCodePoint(d[0], ...rest);
        }
        s += r.pick(['', ' ', ' ', 'x', '\n', '.']);
      }
      return s;
    },
    hangul() {
      let s = '';
      for (let k = range(1, 10); k > 0; k--) {
        const kind = r.int(6);
        if (kind <= 2) s += String.fromCodePoint(range(0x1100, 0x1112), range(0x1161, 0x1175)) + (r.next() < 0.5 ? String.fromCodePoint(range(0x11A8, 0x11C2)) : '');
        else if (kind === 3) s += String.fromCodePoint(0xAC00 + 28 * r.int(399)) + String.fromCodePoint(range(0x11A8, 0x11C2));  // LV + T composes
        else if (kind === 4) s += String.fromCodePoint(r.pick([range(0x1100, 0x11FF), range(0xA960, 0xA97C), range(0xD7B0, 0xD7C6), range(0x3131, 0x318E)]));
        else s += String.fromCodePoint(range(0xAC00, 0xD7A3));
        if (r.next() < 0.3) s += ' ';
      }
      return s;
    },
    emoji() {
      let s = '';
      for (let k = range(1, 6); k > 0; k--) {
        const kind = r.int(5);
        if (kind <= 1 && emoji.length) s += r.pick(emoji);
        else if (kind === 2) s += String.fromCodePoint(r.pick(emojiBases)) + (r.next() < 0.5 ? String.fromCodePoint(range(0x1F3FB, 0x1F3FF)) : '') + (r.next() < 0.4 ? r.pick(['\uFE0F', '\uFE0E']) : '');
        else if (kind === 3) s += String.fromCodePoint(r.pick(emojiBases), 0x200D, r.pick(emojiBases)) + (r.next() < 0.5 ? '\u200D' : '');
        else s += r.pick(['1\uFE0F\u20E3', '#\u20E3', '\u{1F1EF}\u{1F1F5}', '\u{1F1FA}', '\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}', '\u2764\uFE0F', '\u263A', '\u{1F44D}\u{1F3FD}']);
        s += r.pick(['', '', ' ', 'ok', '\n', ' wow ']);
      }
      return s;
    },
    whitespace() {
      let s = r.next() < 0.3 ? r.pick(WHITESPACE) : '';
      for (let k = range(1, 10); k > 0; k--) {
        if (r.next() < 0.6) s += r.pick(WORDS);
        for (let j = range(1, 4); j > 0; j--) s += r.pick(WHITESPACE);
      }
      return s;
    },
    numbers() {
      let s = '';
      for (let k = range(1, 8); k > 0; k--) {
        const kind = r.int(4);
        if (kind === 0) s += r.pick(NUMBERS);
        else if (kind === 1) s += String(r.int(10 ** range(1, 15)));
        else if (kind === 2) s += `${r.pick(WORDS)}${r.int(1000)}`;
        else s += `${r.int(100)}.${r.int(100)}`;
        s += r.pick([' ', ' ', ', ', '-', '', '\n', '/', ':', ' + ']);
      }
      return s;
    },
    code() {
      let s = r.pick(CODE);
      if (r.next() < 0.5) s += r.pick(CODE);
      if (r.next() < 0.3) { const a = r.int(s.length), b = a + r.int(s.length - a + 1); s = s.slice(a, b) || s; }
      return s;
    },
    contractions() {
      let s = '';
      for (let k = range(1, 8); k > 0; k--) {
        let w = r.next() < 0.5 ? r.pick(CONTRACTED) : r.pick(WORDS) + r.pick(CONTRACTIONS);
        if (r.next() < 0.3) w = w.toUpperCase();
        else if (r.next() < 0.15) w = w.replace(/[a-z]/g, (c) => (r.next() < 0.5 ? c.toUpperCase() : c));
        if (r.next() < 0.3) w = w.replace(/'/g, () => r.pick(APOSTROPHES));
        s += w + r.pick([' ', ' ', '', '\n', '  ', ', ', "'"]);
      }
      return s;
    },
    added() {
      let s = '';
      for (let k = range(1, 6); k > 0; k--) {
        s += r.pick([EOT, ` ${EOT}`, `${EOT} `, ` ${EOT} `, `${EOT}${EOT}`, 'word' + EOT + 'word', '<|endoftext|', '|endoftext|>', '<|EndOfText|>',
          '  ', '   ', '    ', '     ', '        ', 'a  b', 'x\u0301' + EOT, EOT + '\u0301', ' '.repeat(range(1, 30))]);
        if (r.next() < 0.6) s += r.pick([gen.corpus().slice(0, 40), r.pick(WORDS), ' ', '\n', r.pick(CONTRACTED)]);
      }
      return s;
    },
    mixture() {
      let s = '';
      const kinds = ['corpus', 'script', 'marks', 'hangul', 'emoji', 'whitespace', 'numbers', 'code', 'contractions', 'added'];
      for (let k = range(2, 5); k > 0; k--) {
        const piece = gen[r.pick(kinds)]();
        s += piece.length > 200 ? piece.slice(0, 200).replace(/[\uD800-\uDBFF]$/, '') : piece;
      }
      return s;
    },
  };
  // How often each kind is drawn.
  const weights = [['corpus', 24], ['script', 12], ['anyAssigned', 3], ['marks', 9], ['hangul', 4], ['emoji', 6], ['whitespace', 8],
    ['numbers', 7], ['code', 5], ['contractions', 7], ['added', 6], ['mixture', 9]];
  const total = weights.reduce((a, [, w]) => a + w, 0);
  return () => {
    let x = r.next() * total;
    for (const [kind, w] of weights) { if ((x -= w) < 0) return gen[kind](); }
    return gen.corpus();
  };
}

// A few hand-picked texts first (the examples checked by hand, edge cases).
const FIXED = ['', ' ', 'Hello world', ' the', 'Hello world<|endoftext|>', EOT, ' ' + EOT + ' ', 'e\u0301', '\u00e9', 'a\u0323\u0302',
  '\u1100\u1161\u11A8', '12345', ' 1 2 3', "I'M HE'LL they're you\u2019ve", '\u00A0\u3000\u0085\u2028', '\r\n\r\n', '\n\n\n  x',
  '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}\u200D\u{1F466}', '\u{1F44B}\u{1F3FF}', 'x \t\n y', 'a     b', '        ', 'ab  ', '\uFEFFbom',
  '٣ and ² and ½ and Ⅻ', '\u0000\u0001\u007F', 'Ǆǅǆ ﬁ ﬀ', '\u0345\u0301a'];

// n texts from the seeded generator (the fixed ones first). Only well-formed UTF-16 is returned.
export function texts(n = 20000, seed = 1) {
  const r = rng(seed);
  const next = generator(r);
  const out = FIXED.slice(0, n);
  while (out.length < n) {
    const t = next();
    if (!t.isWellFormed()) throw new Error(`hf-texts: generated a text with a lone surrogate: ${JSON.stringify(t)}`);
    out.push(t);
  }
  return out;
}

// Texts with lone surrogates (not valid Unicode, so there are no UTF-8 bytes to tokenize).
export function badTexts() {
  return ['\uD800', '\uDFFF', 'a\uDC00b', 'Hello \uD83D', '\uDE00\uD83D', 'ok\uD83D\uD83Dok', `${EOT}\uDBFF`, '\uD834 \uDD1E'];
}
