// Every head's attention pattern on the typed text as a thumbnail, one row per layer, with an
// Ablate toggle (zero-ablates the head's output) and its prefix-matching score on the text under
// each; selecting a thumbnail enlarges that head (the induction-pattern panel). Redrawn on every
// keystroke: update() repaints only the rows of each pattern from the first changed token on, and
// the thumbnails are one canvas (parts/thumb-sheet.js), so a keystroke changes one canvas, not one per head.
import { el } from '../../parts/dom.js';
import { headGrid, setHeadGrid, headCells } from '../../parts/head-grid.js';
import { drawPattern, hoverPattern, describeCell } from '../../parts/attention-pattern.js';
import { thumbSheet } from '../../parts/thumb-sheet.js';
import { headName } from '../../store.js';
import { definePanel } from '../panel.js';
import { analyse, chosenHead, tokenText, unchangedRows } from './analysis.js';
import { fmt } from '../../parts/format.js';

// A thumbnail's pixels: twice its 88 CSS pixels (sharp on a high-density screen). A longer text's
// pattern is shown at this size, each pixel the largest weight of its block (drawPattern's side).
const THUMB_PX = 176;
const memo = new WeakMap();   // model -> the last data

export default definePanel({
  name: 'induction-heads',
  title: 'Attention patterns',
  view: 'induction',

  async query({ model, state }) {
    const a = analyse(model, state);
    const head = chosenHead(model, state);
    const selected = head ? headName(...head) : null;
    const ablate = (state.ablate || []).join();
    const last = memo.get(model);
    if (last && last.a === a && last.selected === selected && last.ablate.join() === ablate) return last;
    const data = { a, selected, ablate: [...(state.ablate || [])] };
    memo.set(model, data);
    return data;
  },

  render(data, ctx) {
    const c = data.a.config;
    const node = el('div', { class: 'ind-heads' },
      el('p', { class: 'explain' }, `Every head's pattern: row = the token attending (query), column = the token attended to (key), darker = more attention. Select a head to enlarge it; the Ablate toggle zero-ablates that head's output${c.d_mlp > 0 ? ' (at the end of each layer, its MLP\'s output)' : ''}.`));
    const grid = headGrid({
      layers: c.n_layers, heads: c.n_heads, prefix: 'ind', mlps: c.d_mlp > 0,
      figure: () => el('span', { class: 'ind-thumb', 'aria-hidden': 'true' }),
      selectLabel: (name) => `${name}: enlarge its attention pattern`,
      onSelect: (name) => node.csHeads.ctx.dispatch({ type: 'set', values: { head: name } }),
      onAblate: (name) => node.csHeads.ctx.dispatch({ type: 'toggleAblate', head: name }),
      empty: 'This model has no attention layers: only the direct path from embedding to unembedding (a bigram model).',
    });
    // The thumbnails are slots of one canvas laid over the grid (thumb-sheet.js).
    const sheet = thumbSheet(grid, { side: THUMB_PX });
    const slots = new Map(headCells(grid).map((cell) => [cell.name, sheet.slot(cell.figure)]));
    for (const cell of headCells(grid)) hoverPattern(cell.figure, (x) => { cell.select.title = describeCell(x); });
    node.append(grid);
    node.csHeads = { grid, sheet, slots, config: c, drawn: null, ctx };
    update(node, data, ctx);
    return node;
  },

  update,
});

function update(node, data, ctx) {
  const s = node.csHeads;
  const { a } = data;
  if (s.config !== a.config) return false;   // another model: a new grid
  s.ctx = ctx;
  const byName = new Map(a.scores.map((x) => [x.name, x]));
  setHeadGrid(s.grid, {
    selected: data.selected, ablated: data.ablate,
    notes: (name) => (byName.has(name) ? `prefix ${fmt(byName.get(name).prefix)}` : ''),
  });
  // An ablated head's thumbnail is dimmed.
  const ablated = new Set(data.ablate);
  let dimmed = false;
  for (const [name, slot] of s.slots) {
    const alpha = ablated.has(name) ? 0.35 : 1;
    if (slot.alpha !== alpha) { slot.alpha = alpha; dimmed = true; }
  }
  // The pixels, once per analysis (not again for a change of head).
  if (!a.run || s.drawn === a) {
    if (dimmed) s.sheet.paint();
    return true;
  }
  const from = unchangedRows(s.drawn, a);
  s.drawn = a;
  const H = a.config.n_heads;
  const labels = (k) => tokenText(a, k);
  for (const cell of headCells(s.grid)) {
    drawPattern(cell.figure, { pattern: a.run.patterns.data, offset: (cell.l * H + cell.h) * a.T * a.T, T: a.T, labels }, { labelled: 0, from, side: THUMB_PX });
  }
  s.sheet.paint();
  return true;
}
