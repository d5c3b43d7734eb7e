// The attention pattern of every head on the IOI sequence or sentence (the core's run()): rows
// are the query (the position attending), columns the key, darker is more attention; the
// causal triangle is blank. One figure per head, drawn by the shared attention-pattern part (as
// the Induction view's), with the hovered cell named under it.
import { el } from '../../parts/dom.js';
import { drawPattern, hoverPattern, describeCell } from '../../parts/attention-pattern.js';
import { definePanel } from '../panel.js';
import { ioiInput } from './analysis.js';

/**
 * One head's pattern as a figure: `data` holds T×T attention weights from `offset`; labelsX label
 * the axes (short), labelsY the figure's description; `cell` is the cell size.
 */
export function patternFigure({ data, offset = 0, size }, { name, labelsX, labelsY, cell }) {
  const canvas = el('canvas', { width: 220, height: 180, role: 'img', 'aria-label': `Attention pattern of head ${name} over: ${labelsY.join(' ')}` });
  drawPattern(canvas, { pattern: data, offset, T: size, labels: labelsX }, { cellPx: cell, labelled: 64 });
  const readout = el('figcaption', { class: 'cs-pattern-hover' }, name);
  hoverPattern(canvas, (c) => { readout.textContent = c ? `${name}: ${describeCell(c)}` : name; });
  return el('figure', { class: 'cs-figure' }, canvas, readout);
}

/** Every head's figure from patterns of shape [layers, heads, T, T]. */
export function patternFigures({ data, shape: [L, H, T] }, labels) {
  const out = [];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) out.push(patternFigure({ data, offset: (l * H + h) * T * T, size: T }, { ...labels, name: `L${l}H${h}` }));
  }
  return out;
}

export default definePanel({
  name: 'ioi-patterns',
  title: 'Attention patterns',
  view: 'ioi',

  query: ioiInput,

  render(d) {
    const r = d.result;
    return el('div', {},
      el('p', { class: 'cs-explain' }, 'Rows are the query (the position attending), columns the key. Darker means more attention.'),
      el('div', { class: 'cs-patterns' }, r ? patternFigures(r.patterns, { labelsX: r.labelsX, labelsY: r.labelsY, cell: r.cell }) : []));
  },
});
