// Probability and signed-value bars: a horizontal bar for one number (diverging around 0, or plain
// from 0), and rows of label, bar and value laid out as a grid (a list of names with their
// probabilities). Plain functions of the numbers they are given; no knowledge of the store.
import { el } from './dom.js';
import { divergingColor } from './colour.js';
import { fmt } from './format.js';


/** A percentage with one decimal (none for exactly 0 or 1). */
export const pct = (x) => `${(100 * x).toFixed(x === 1 || x === 0 ? 0 : 1)}%`;

/** A horizontal bar for a value in [-bound, bound] (diverging) or [0, bound]. */
export function bar(value, bound, { diverging = true, label = '' } = {}) {
  const v = Number.isFinite(value) ? value : 0;
  const frac = Math.min(1, Math.abs(v) / (bound || 1));
  const fill = el('span', {
    class: ['cs-bar-fill', v < 0 ? 'neg' : 'pos'],
    style: diverging
      ? { width: `${50 * frac}%`, left: v < 0 ? `${50 - 50 * frac}%` : '50%', background: divergingColor(v < 0 ? -0.35 - 0.65 * frac : 0.35 + 0.65 * frac) }
      : { width: `${100 * frac}%`, left: '0' },
  });
  return el('span', { class: ['cs-bar', diverging ? 'diverging' : 'plain'], role: 'img', 'aria-label': label || fmt(v) },
    diverging ? el('span', { class: 'cs-bar-axis' }) : null, fill);
}

/**
 * One row of a bar list: its label (text or nodes), a plain bar for a probability `p` and the
 * value as a percentage. `name` labels the bar for screen readers; `className` and `dataset`
 * go on the row.
 */
export function probRow({ label, p, name, className = null, dataset = {} }) {
  return el('div', { class: ['cs-bar-row', className], role: 'listitem', dataset },
    el('span', { class: 'cs-bar-label' }, label),
    bar(p, 1, { diverging: false, label: `${name}: ${pct(p)}` }),
    el('span', { class: 'cs-bar-value' }, pct(p)));
}

/** The list holding bar rows (label | bar | value, one grid). */
export function probBars(rows, label) {
  return el('div', { class: 'cs-bars', role: 'list', 'aria-label': label }, rows);
}
