// What the Circuits panels share: the head the state names (the store's shownHead, defaulting to
// the core's default head, the same in every view), and the core calls of one head, made once
// per (model, head, sort, top) however many panels read them.
import { tokenSample } from '../sample.js';
import { shownHead } from '../../store.js';
import { el } from '../../parts/dom.js';
import { fmt, showToken, readsText } from '../../parts/format.js';

/** What a panel of one head shows for a model without heads (the same object, so nothing redraws). */
export const NONE = Object.freeze({ none: true });


/** A vocabulary entry made visible (parts/format.js: space ␣, newline ↵, tab ⇥), as the token strip shows it. */
export { showToken };

/** [layer, head] of state.head in this model, else the core's default head (store.js shownHead; [0, 0] without layers). */
export function chosenHead(model, head) {
  return shownHead(model, head) ?? [0, 0];
}

/** top for every row and column: at least any table's size, so the core always returns the rows, columns and entries shown. */
const ALL = 2 ** 30;

/** The state's table order as the core's options: sort none | row | col | both, top N (all: ALL). */
export function tableOrder(state) {
  const sort = ['row', 'col', 'both'].includes(state.sort) ? state.sort : 'none';
  const n = Number(state.top ?? 40);
  const top = state.top === 'all' || !(n > 0) ? ALL : n;
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
  return memo(model, `${kind}/${l}/${h}/${order.sort}/${order.top}`, () => model[kind](l, h, { k: 12, table: false, ...order }));
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
  if (readsText(model.tokenizer)) return 'Alice was beginning to get very tired. Alice was beginning to get very t';
  if (model.ioiKind() === 'symbolic') return model.ioiSentence().text;   // the core's first sentence, "A B B <MID>"
  return tokenSample(model);   // another vocabulary (a model file opened in the page): a repeated random segment
};
