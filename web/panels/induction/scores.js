// The head-score table: per head, the core's scores on the typed text (prefix matching, previous
// token, and the induction stripe when the text holds a repeated block; run({textScores})) beside
// its scores on repeated random tokens (headScores(): prefix matching and OV copying). The table
// is rebuilt when its columns change; otherwise a keystroke rewrites only the numbers that moved.
import { el } from '../../parts/dom.js';
import { headName } from '../../store.js';
import { definePanel } from '../panel.js';
import { analyse, randomScores, settledHead, repeatOf } from './analysis.js';
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
    const head = await settledHead(model, state);
    const selected = head ? headName(...head) : null;
    const last = memo.get(model);
    if (last && last.a === a && last.selected === selected) return last;
    const data = { a, random, selected };
    memo.set(model, data);
    return data;
  },

  render(data) {
    const table = el('table', { class: 'ind-scores' });
    const node = el('div', {},
      el('p', { class: 'explain' }, 'Columns marked "this text" score each head on the current text and its patterns (prefix matching: attention from a token to the token after an earlier copy of it; previous token: to the token just before); columns marked "random tokens" come from headScores(): 16 sequences of [BOS] R R with R random tokens, without ablations (induction-heads paper).'),
      el('div', { class: 'table-wrap' }, table),
      el('div', { class: 'button-row cs-png-skip controls-only' },
        el('button', { type: 'button', class: 'ind-scores-csv', onclick: () => downloadCSV('circuitscope-head-scores.csv', scoreRows(node.csScores.data)) }, 'Download head scores (CSV)')));
    node.csScores = { table, layout: null, rows: [], data };
    update(node, data);
    return node;
  },

  update,
});

const th = (title, sub) => el('th', { scope: 'col' }, title, el('br'), el('small', {}, sub));

/**
 * The table as CSV rows, the core's numbers unrounded: one row per head (layer, head), the scores
 * on this text (run({textScores}); the stripe only with a repeated block) and on random tokens
 * (headScores(); empty until they arrive).
 */
function scoreRows({ a, random: rs }) {
  const hasRepeat = !!repeatOf(a);
  const head = ['head', 'layer', 'head_index', 'prefix_matching_text', 'previous_token_text', ...(hasRepeat ? ['induction_stripe_text'] : []),
    'prefix_matching_random', 'copying_random'];
  const random = (k, i) => (rs?.scores ? rs.scores[k].data[i] : '');
  return [head, ...a.scores.map((x, i) => [x.name, x.layer, x.head, x.prefix, x.previous, ...(hasRepeat ? [x.stripe] : []),
    random('prefix_matching', i), random('copying', i)])];
}

function update(node, data) {
  const s = node.csScores;
  s.data = data;
  const { a, random: rs, selected } = data;
  const c = a.config;
  const hasRepeat = !!repeatOf(a);
  const layout = `${c.n_layers}x${c.n_heads}|${hasRepeat}`;
  if (s.config !== c || s.layout !== layout) {
    s.config = c;
    s.layout = layout;
    const head = el('tr', {}, el('th', { scope: 'col' }, 'Head'), th('Prefix matching', 'this text'), th('Previous token', 'this text'),
      hasRepeat ? th('Induction stripe', 'this text, repeated block') : null, th('Prefix matching', 'random tokens'), th('Copying', 'random tokens, OV'));
    s.rows = [];
    for (let l = 0; l < c.n_layers; l++) {
      for (let h = 0; h < c.n_heads; h++) {
        const cells = { prefix: el('td', {}), previous: el('td', {}), stripe: hasRepeat ? el('td', {}) : null, rpm: el('td', {}), rcopy: el('td', {}) };
        const tr = el('tr', {}, el('th', { scope: 'row' }, headName(l, h)), cells.prefix, cells.previous, cells.stripe, cells.rpm, cells.rcopy);
        s.rows.push({ tr, cells, shown: {} });
      }
    }
    s.table.replaceChildren(el('thead', {}, head), el('tbody', {}, s.rows.map((r) => r.tr)));
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
