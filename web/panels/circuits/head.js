// What the Circuits panels share: the head the state names (the store's parseHead, defaulting to
// the last layer's first head), and the core calls of one head, made once per (model, head,
// sort, top) however many panels read them.
import { tokenSample } from '../sample.js';
import { parseHead } from '../../store.js';
import { el } from '../../parts/dom.js';
import { fmt, showToken, readsText } from '../../parts/format.js';

/** What a panel of one head shows for a model without heads (the same object, so nothing redraws). */
export const NONE = Object.freeze({ none: true });


/** A vocabulary entry made visible (parts/format.js: space ␣, newline ↵, tab ⇥), as the token strip shows it. */
export { showToken };

/** [layer, head] of state.head in a model of this config (its last layer's head 0 when unnamed or absent). */
export function chosenHead(cfg, head) {
  let [l, h] = parseHead(head) ?? [cfg.n_layers - 1, 0];
  if (!(l >= 0 && l < cfg.n_layers)) l = Math.max(0, cfg.n_layers - 1);
  if (!(h >= 0 && h < cfg.n_heads)) h = 0;
  return [l, h];
}

/** The state's table order as the core's options: sort none | row | col | both, top N (0: all). */
export function tableOrder(state) {
  const sort = ['row', 'col', 'both'].includes(state.sort) ? state.sort : 'none';
  const top = state.top === 'all' ? 0 : Number(state.top ?? 40) || 0;
  return { sort, top };
}

const circuits = new WeakMap();   // model -> Map(key -> result)
function memo(model, key, make) {
  if (!circuits.has(model)) circuits.set(model, new Map());
  const m = circuits.get(model);
  if (!m.has(key)) {
    if (m.size > 64) m.clear();
    m.set(key, make());
  }
  return m.get(key);
}

/** model.qk / model.ov of a head with its display order ({k: 12}); kind 'qk' | 'ov'. */
export function circuitOf(model, kind, l, h, order) {
  return memo(model, `${kind}/${l}/${h}/${order.sort}/${order.top}`, () => model[kind](l, h, { k: 12, ...order }));
}

/** model.eigen of a head. */
export const eigenOf = (model, l, h) => memo(model, `eigen/${l}/${h}`, () => model.eigen(l, h));

/** model.skipTrigrams of a head (1-layer models only: null otherwise). */
export const trigramsOf = (model, l, h) => memo(model, `trigrams/${l}/${h}`,
  () => (model.config.n_layers === 1 ? model.skipTrigrams(l, h, { k: 15, maxBugs: 10 }) : null));

/** A table with a caption, column heads and rows of cells (the last cell of a row is a number). */
export function entryTable(caption, heads, rows) {
  return el('table', { class: 'cs-table' }, el('caption', {}, caption),
    el('thead', {}, el('tr', {}, heads.map((x) => el('th', { scope: 'col' }, x)))),
    el('tbody', {}, rows.map((row) => el('tr', {}, row.map((c, i) => el('td', { class: i === row.length - 1 ? 'num' : 'mono' }, c))))));
}

/** The text the path expansion starts with, for a model's kind of tokenizer. */
export const defaultText = (model) => {
  const { kind, vocab } = model.tokenizer;
  if (readsText(kind)) return 'Alice was beginning to get very tired. Alice was beginning to get very t';
  if (kind === 'word' && vocab.includes('<MID>') && vocab.includes('A')) return 'A B B <MID>';   // symbolic IOI
  return tokenSample(model);   // another vocabulary (a model file opened in the page): a repeated random segment
};
