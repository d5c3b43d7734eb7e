// The head-score table: per head, the core's scores on the typed text (prefix matching, previous
// token, and the induction stripe when the text holds a repeated block; run({textScores})) beside
// its scores on repeated random tokens (headScores(): prefix matching and OV copying). The table
// is rebuilt when its columns change; otherwise a keystroke rewrites only the numbers that moved.
// A column's heading sorts the rows by it, highest first (the store's hsort, so a link keeps it);
// pressed again, it puts the heads back in order.
import { el } from '../../parts/dom.js';
import { headName } from '../../store.js';
import { definePanel } from '../panel.js';
import { analyse, randomScores, chosenHead, repeatOf } from './analysis.js';
import { fmt } from '../../parts/format.js';
import { downloadCSV } from '../../parts/download.js';

const memo = new WeakMap();   // model -> the last data

export default definePanel({
  name: 'induction-scores',
  title: 'Head scores',
  view: 'induction',

  async query({ model, state }) {
    const a = analyse(model, state);
    const random = await randomScores(model);
    const head = chosenHead(model, state);
    const selected = head ? headName(...head) : null;
    const sort = state.hsort ?? null;
    const last = memo.get(model);
    if (last && last.a === a && last.selected === selected && last.sort === sort) return last;
    const data = { a, random, selected, sort };
    memo.set(model, data);
    return data;
  },

  render(data, ctx) {
    const table = el('table', { class: 'ind-scores' });
    const node = el('div', {},
      el('p', { class: 'explain' }, 'Columns marked "this text" score each head on the current text and its patterns (prefix matching: attention from a token to the token after an earlier copy of it; previous token: to the token just before); columns marked "random tokens" come from headScores(): 16 sequences of [BOS] R R with R random tokens, without ablations (induction-heads paper).'),
      el('div', { class: 'table-wrap' }, table),
      el('div', { class: 'button-row cs-png-skip controls-only' },
        el('button', { type: 'button', class: 'ind-scores-csv', onclick: () => downloadCSV('circuitscope-head-scores.csv', scoreRows(node.csScores.data)) }, 'Download head scores (CSV)')));
    node.csScores = { table, layout: null, rows: [], data, ctx };
    update(node, data, ctx);
    return node;
  },

  update,
});

// The sortable columns: the store's hsort value, the heading, its second line, the value of a
// head's row, and the column's name in the CSV.
/** @type {[string, string, string, (x: any, i: number, rs: any) => number | undefined, string][]} */
const COLUMNS = [
  ['prefix', 'Prefix matching', 'this text', (x) => x.prefix, 'prefix_matching_text'],
  ['previous', 'Previous token', 'this text', (x) => x.previous, 'previous_token_text'],
  ['stripe', 'Induction stripe', 'this text, repeated block', (x) => x.stripe, 'induction_stripe_text'],
  ['rprefix', 'Prefix matching', 'random tokens', (x, i, rs) => rs?.scores?.prefix_matching.data[i], 'prefix_matching_random'],
  ['rcopy', 'Copying', 'random tokens, OV', (x, i, rs) => rs?.scores?.copying.data[i], 'copying_random'],
];

/** A column heading whose button sorts the table by it (or, when it already does, puts it back in head order). */
function th(s, key, title, sub) {
  const on = s.data.sort === key;
  return el('th', { scope: 'col', 'aria-sort': on ? 'descending' : 'none' },
    el('button', { type: 'button', class: 'ind-sort', title: on ? 'Back to head order' : 'Sort by this column, highest first',
      onclick: () => s.ctx.dispatch({ type: 'set', values: { hsort: on ? null : key } }) }, title, el('br'), el('small', {}, sub), on ? ' ▼' : ''));
}

/** The heads' indices in the order shown: by the sort column, highest first (NaN and missing values last, ties in head order). */
function order({ a, random: rs, sort }) {
  const idx = a.scores.map((_, i) => i);
  const col = COLUMNS.find((c) => c[0] === sort);
  if (!col) return idx;
  const v = (i) => { const x = col[3](a.scores[i], i, rs); return Number.isFinite(x) ? x : -Infinity; };
  return idx.sort((i, j) => v(j) - v(i) || i - j);
}

/**
 * The table as CSV rows, the core's numbers unrounded: one row per head (layer, head), the scores
 * on this text (run({textScores}); the stripe only with a repeated block) and on random tokens
 * (headScores(); empty until they arrive).
 */
function scoreRows({ a, random: rs }) {
  const hasRepeat = !!repeatOf(a);
  const cols = COLUMNS.filter(([key]) => key !== 'stripe' || hasRepeat);
  const value = (col, x, i) => { const v = col[3](x, i, rs); return v === undefined ? '' : v; };
  return [['head', 'layer', 'head_index', ...cols.map((col) => col[4])],
    ...a.scores.map((x, i) => [x.name, x.layer, x.head, ...cols.map((col) => value(col, x, i))])];
}

function update(node, data, ctx) {
  const s = node.csScores;
  s.data = data;
  if (ctx) s.ctx = ctx;
  const { a, random: rs, selected } = data;
  const c = a.config;
  const hasRepeat = !!repeatOf(a);
  const layout = `${c.n_layers}x${c.n_heads}|${hasRepeat}|${data.sort}`;
  if (s.config !== c || s.layout !== layout) {
    s.config = c;
    s.layout = layout;
    const head = el('tr', {}, el('th', { scope: 'col' }, 'Head'),
      ...COLUMNS.filter(([key]) => key !== 'stripe' || hasRepeat).map(([key, title, sub]) => th(s, key, title, sub)));
    s.rows = [];
    for (let l = 0; l < c.n_layers; l++) {
      for (let h = 0; h < c.n_heads; h++) {
        const cells = { prefix: el('td', {}), previous: el('td', {}), stripe: hasRepeat ? el('td', {}) : null, rpm: el('td', {}), rcopy: el('td', {}) };
        const tr = el('tr', {}, el('th', { scope: 'row' }, headName(l, h)), cells.prefix, cells.previous, cells.stripe, cells.rpm, cells.rcopy);
        s.rows.push({ tr, cells, shown: {} });
      }
    }
    s.table.replaceChildren(el('thead', {}, head), s.body = el('tbody', {}));
    s.order = '';
  }
  const shown = order(data);
  if (s.order !== shown.join()) {   // the rows move when the sort column's values change order
    s.order = shown.join();
    s.body.replaceChildren(...shown.map((i) => s.rows[i].tr));
  }
  const put = (row, key, n, text) => { if (row.shown[key] !== text) { row.shown[key] = text; n.textContent = text; } };
  const rv = (k, i) => (rs?.scores ? fmt(rs.scores[k].data[i]) : rs?.error ? 'error' : '…');
  a.scores.forEach((x, i) => {
    const row = s.rows[i];
    if (!row) return;
    const sel = x.name === selected;
    if (row.shown.sel !== sel) { row.shown.sel = sel; row.tr.classList.toggle('selected', sel); }
    put(row, 'prefix', row.cells.prefix, fmt(x.prefix));
    put(row, 'previous', row.cells.previous, fmt(x.previous));
    if (row.cells.stripe) {
      put(row, 'stripe', row.cells.stripe, fmt(x.stripe));
      const d = fmt(x.stripe, 4);
      if (row.cells.stripe.dataset.stripe !== d) row.cells.stripe.dataset.stripe = d;
    }
    put(row, 'rpm', row.cells.rpm, rv('prefix_matching', i));
    put(row, 'rcopy', row.cells.rcopy, rv('copying', i));
  });
  return true;
}
