// The chosen head's attention pattern, enlarged: the state's head, or (none chosen) the model's
// strongest induction head by the random-token scores. Up to 40 tokens the tokens label both axes;
// past that a cell is one pixel, scaled up by the stylesheet, and a keystroke repaints only the
// rows from the changed token on. Hovering a cell says which token attends to which and how much,
// and shows that query token's attention in the token strip (through the view).
import { el } from '../../parts/dom.js';
import { drawPattern, hoverPattern, describeCell } from '../../parts/attention-pattern.js';
import { headName } from '../../store.js';
import { definePanel } from '../panel.js';
import { analyse, chosenHead, tokenText, unchangedRows, repeatOf } from './analysis.js';
import { HOVER } from './tokens.js';
import { fmt } from '../../parts/format.js';

const memo = new WeakMap();   // model -> the last data

export default definePanel({
  name: 'induction-pattern',
  title: 'The selected head',
  view: 'induction',

  async query({ model, state }) {
    const a = analyse(model, state);
    const head = chosenHead(model, state);
    const name = head ? headName(...head) : null;
    const ablated = !!name && (state.ablate || []).includes(name);
    const pos = state.pos ?? null;
    const last = memo.get(model);
    if (last && last.a === a && last.name === name && last.ablated === ablated && last.pos === pos) return last;
    const data = { a, head, name, ablated, pos };
    memo.set(model, data);
    return data;
  },

  render(data, ctx) {
    const canvas = el('canvas', { class: 'ind-big', width: 256, height: 256, role: 'img' });
    // One pixel a cell, the canvas has room for more tokens than it shows: the box shows its
    // top-left T x T cells (drawPattern's room).
    const box = el('div', { class: 'ind-big-box' }, canvas);
    const caption = el('p', { class: 'ind-big-caption' });
    const readout = el('p', { class: 'ind-big-hover cs-hover', 'aria-hidden': 'true' });
    const none = el('p', { class: 'muted', hidden: true }, 'This model has no attention heads.');
    const node = el('figure', { class: 'ind-big-fig' }, box, el('figcaption', {}, caption, readout), none);
    node.csPattern = { canvas, box, caption, readout, none, drawn: null, drawnName: null, hover: null, data, shown: {} };
    hoverPattern(canvas, (cell) => {
      readout.textContent = describeCell(cell);
      node.dispatchEvent(new CustomEvent(HOVER, { bubbles: true, detail: { pos: cell ? cell.q : null } }));
    });
    update(node, data);
    return node;
  },

  update,
});

function update(node, data) {
  const s = node.csPattern;
  s.data = data;
  const { a, head, name, ablated } = data;
  const none = !a.run || !head;   // no tokens, or a model without attention heads
  if (s.box.hidden !== none) s.box.hidden = none;
  s.none.hidden = !!head;
  if (none) {
    if (s.shown.caption) { s.shown.caption = ''; s.caption.textContent = ''; }
    s.drawn = null;
    return true;
  }
  const c = a.config;
  if (s.drawn !== a || s.drawnName !== name) {
    const from = s.drawnName === name ? unchangedRows(s.drawn, a) : 0;
    s.drawn = a;
    s.drawnName = name;
    const g = drawPattern(s.canvas, { pattern: a.run.patterns.data, offset: (head[0] * c.n_heads + head[1]) * a.T * a.T, T: a.T, labels: (k) => tokenText(a, k) }, { from, room: true });
    const width = g.side ? `${(100 * g.side) / a.T}%` : '';
    if (s.canvas.style.width !== width) s.canvas.style.width = width;
    s.box.classList.toggle('ind-big-pixels', !!g.side);
  }
  const label = `Attention pattern of ${name} over ${a.T} tokens${ablated ? ' (this head is ablated: its pattern is computed but its output is zeroed)' : ''}`;
  if (s.shown.label !== label) { s.shown.label = label; s.canvas.setAttribute('aria-label', label); }
  const sc = a.scores.find((x) => x.name === name);
  const caption = `${name}${ablated ? ' (ablated)' : ''}: rows = query (attending) token, columns = key token. This text: prefix matching ${fmt(sc?.prefix)}, previous token ${fmt(sc?.previous)}` +
    (repeatOf(a) ? `, induction stripe ${fmt(sc?.stripe)}` : '') + '.';
  if (s.shown.caption !== caption) { s.shown.caption = caption; s.caption.textContent = caption; }
  markRow(s);
  return true;
}

/** Marks the hovered query token (null: none) as data-row on the canvas; the view calls it for token hovers. */
export function hoverRow(node, pos) {
  const s = node?.csPattern;
  if (!s || s.hover === pos) return;
  s.hover = pos;
  markRow(s);
}

function markRow(s) {
  const p = s.hover ?? s.data.pos;
  const row = p === null || p === undefined || p >= s.data.a.T ? '' : String(p);
  if (s.canvas.dataset.row !== row) s.canvas.dataset.row = row;
}
