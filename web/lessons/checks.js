// A lesson step's check: conditions that notice when the reader did the experiment. Each
// `when:` line of a ```check block is one condition; the step is done when all of them hold.
//
//   KEY is VALUE        a setting of the page (a key of the link: view, model, head, order, ...;
//                       a switch such as nopos is 1 or 0)
//   KEY is not VALUE
//   KEY has VALUE       a list setting holds VALUE (ablate has L0H1; cut has *>*.v)
//   KEY is set          the setting is not its default (text is set: the reader typed a text)
//   KEY changed         the setting differs from the step's own link (text changed)
//   A OP B              a comparison of numbers; OP is <, <=, > or >=; A and B are a number, a
//                       measure (measures.js: secondCopyLoss, prefix(L1H4), ...; a head's measure of
//                       the head the page shows: ovCopying(shown)) or NUMBER * measure
//
// parseCondition() reads a line into a condition (or throws a sentence naming what is wrong);
// holds() decides it for a state, the step's own state and the measures' values. The numbers
// themselves come from the core through measures.js: nothing here computes one.
import { DEFAULT_STATE } from '../store.js';
import { MEASURES } from './measures.js';

const OPS = { '<': (a, b) => a < b, '<=': (a, b) => a <= b, '>': (a, b) => a > b, '>=': (a, b) => a >= b };
const NUMBER = /^-?\d+(?:\.\d+)?$/;
const MEASURE = /^([A-Za-z]\w*)(?:\((L\d{1,2}H\d{1,2}|shown)\))?$/;
const KEYS = Object.keys(DEFAULT_STATE).filter((k) => !['embed', 'hide', 'lesson', 'step', 'done'].includes(k));

/** One term of a comparison: {number} or {scale, measure, head}. */
function term(s) {
  const t = s.trim();
  if (NUMBER.test(t)) return { number: Number(t) };
  const [scale, name] = t.includes('*') ? t.split('*').map((x) => x.trim()) : ['1', t];
  const m = MEASURE.exec(name);
  if (!NUMBER.test(scale) || !m) throw new Error(`"${t}" is not a number, a measure or NUMBER * measure`);
  const def = MEASURES[m[1]];
  if (!def || !Object.hasOwn(MEASURES, m[1])) throw new Error(`there is no measure "${m[1]}" (measures: ${Object.keys(MEASURES).join(', ')})`);
  if (def.head && !m[2]) throw new Error(`the measure ${m[1]} needs a head, as in ${m[1]}(L1H4)`);
  if (!def.head && m[2]) throw new Error(`the measure ${m[1]} takes no head`);
  return { scale: Number(scale), measure: m[1], head: m[2] ?? null };
}

/** A `when:` line as a condition object; throws a sentence when it is not one. */
export function parseCondition(line) {
  const text = String(line).trim();
  const m = /^(\w+)\s+(is not|is set|is|has|changed)(?:\s+(.*))?$/.exec(text);
  const cmp = m ? null : /^(.+?)\s*(<=|>=|<|>)\s*(.+)$/.exec(text);
  if (cmp) return { text, kind: 'compare', a: term(cmp[1]), op: cmp[2], b: term(cmp[3]) };
  if (!m) throw new Error(`"${text}" is not a condition (KEY is VALUE, KEY has VALUE, KEY is set, KEY changed, or A > B)`);
  const [, key, verb, value = ''] = m;
  if (!KEYS.includes(key)) throw new Error(`"${key}" is not a setting of the page (settings: ${KEYS.join(', ')})`);
  if ((verb === 'is set' || verb === 'changed') && value) throw new Error(`"${text}": nothing may follow "${verb}"`);
  if ((verb === 'is' || verb === 'is not' || verb === 'has') && !value) throw new Error(`"${text}" needs a value after "${verb}"`);
  if (verb === 'has' && !Array.isArray(DEFAULT_STATE[key])) throw new Error(`"${key}" is not a list, so "has" does not apply (use "is")`);
  return { text, kind: 'state', key, verb, value: value.trim() };
}

/** The measures a list of conditions reads: [{measure, head}], each once. */
export function measuresOf(conditions) {
  const out = new Map();
  for (const c of conditions) {
    if (c.kind !== 'compare') continue;
    for (const t of [c.a, c.b]) if (t.measure) out.set(`${t.measure}(${t.head ?? ''})`, { measure: t.measure, head: t.head });
  }
  return [...out.values()];
}

export const measureKey = (t) => `${t.measure}(${t.head ?? ''})`;

const shown = (v) => (Array.isArray(v) ? v.join(',') : v === null || v === undefined ? '' : typeof v === 'boolean' ? (v ? '1' : '0') : String(v));

/**
 * Whether a condition holds: `state` is the page's, `base` the step's own (its link), `values`
 * the measures' values by measureKey (a missing or non-finite value makes a comparison false).
 */
export function holds(c, state, base, values) {
  if (c.kind === 'compare') {
    const v = (t) => (t.measure ? t.scale * values[measureKey(t)] : t.number);
    const a = v(c.a);
    const b = v(c.b);
    return Number.isFinite(a) && Number.isFinite(b) && OPS[c.op](a, b);
  }
  const value = state[c.key];
  switch (c.verb) {
    case 'is': return shown(value) === c.value;
    case 'is not': return shown(value) !== c.value;
    case 'has': return Array.isArray(value) && value.includes(c.value);
    case 'is set': return shown(value) !== shown(DEFAULT_STATE[c.key]);
    case 'changed': return shown(value) !== shown(base[c.key]);
    default: return false;
  }
}
