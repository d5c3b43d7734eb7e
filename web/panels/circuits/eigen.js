// The eigenvalues of the chosen head's OV and QK circuits in the complex plane, with the copying
// statistic (framework paper, "Summarizing OV/QK Matrices"; seed 000): model.eigen().
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { NONE, chosenHead, eigenOf } from './head.js';
import { fmt } from '../../parts/format.js';
import { downloadCSV } from '../../parts/download.js';

/** Eigenvalues in the complex plane, as an SVG scatter with the axes through 0. */
function eigenPlot(spec, title) {
  const W = 240, P = 28;
  const n = spec.re.length;
  let r = 1e-9;
  for (let i = 0; i < n; i++) r = Math.max(r, Math.abs(spec.re[i]), Math.abs(spec.im[i]));
  r *= 1.1;
  const sx = (x) => P + ((x + r) / (2 * r)) * (W - 2 * P);
  const sy = (y) => W - P - ((y + r) / (2 * r)) * (W - 2 * P);
  const svg = el('svg', { class: 'cs-chart', viewBox: `0 0 ${W} ${W}`, width: W, height: W, role: 'img',
    'aria-label': `${title}: ${n} eigenvalues; copying statistic ${fmt(spec.copying)}; ${Math.round(100 * spec.positive_fraction)}% with a positive real part` });
  svg.append(
    el('svg:line', { class: 'axis', x1: sx(-r), y1: sy(0), x2: sx(r), y2: sy(0) }),
    el('svg:line', { class: 'axis', x1: sx(0), y1: sy(-r), x2: sx(0), y2: sy(r) }),
    el('svg:text', { x: sx(r), y: sy(0) - 4, 'text-anchor': 'end' }, 'Re'),
    el('svg:text', { x: sx(0) + 4, y: sy(r) + 10 }, 'Im'),
    el('svg:text', { x: sx(r), y: sy(0) + 14, 'text-anchor': 'end' }, fmt(r / 1.1, 1)),
    el('svg:text', { x: sx(-r), y: sy(0) + 14 }, fmt(-r / 1.1, 1)));
  for (let i = 0; i < n; i++) {
    svg.append(el('svg:circle', { cx: sx(spec.re[i]), cy: sy(spec.im[i]), r: 3.5, fill: spec.re[i] >= 0 ? 'var(--cs-line-1)' : 'var(--cs-line-2)', 'fill-opacity': 0.8 },
      el('svg:title', {}, `${fmt(spec.re[i], 3)} ${spec.im[i] >= 0 ? '+' : '−'} ${fmt(Math.abs(spec.im[i]), 3)}i`)));
  }
  return el('figure', { class: 'cs-figure' }, svg,
    el('figcaption', {}, `${title}: copying ${fmt(spec.copying)}, ${Math.round(100 * spec.positive_fraction)}% positive (blue ● Re ≥ 0, orange ● Re < 0)`));
}

/** The core's eigenvalues of both circuits as CSV rows (by decreasing |λ|, as the core orders them), with each circuit's summary. */
function eigenRows(e) {
  const rows = [['head', 'circuit', 'rank', 're', 'im', 'copying', 'positive_fraction']];
  for (const kind of ['ov', 'qk']) {
    const s = e[kind];
    for (let i = 0; i < s.re.length; i++) rows.push([e.name, kind.toUpperCase(), i, s.re[i], s.im[i], s.copying, s.positive_fraction]);
  }
  return rows;
}

const named = new WeakMap();   // model.eigen() result -> {ov, qk, name}

export default definePanel({
  name: 'circuits-eigen',
  title: 'Eigenvalues',
  view: 'circuits',

  query({ model, state }) {
    if (!model.config.n_layers) return NONE;
    const [l, h] = chosenHead(model, state.head);
    const e = eigenOf(model, l, h);
    if (!named.has(e)) named.set(e, { ov: e.ov, qk: e.qk, name: `L${l}H${h}` });
    return named.get(e);   // the same object while the head stays, so nothing redraws
  },

  render(e) {
    return el('div', {},
      el('p', { class: 'cs-explain' }, 'Positive real eigenvalues of the OV circuit mean a copying head (attending to a token raises that token); the copying statistic is Re(Σλ)/Σ|λ|.'),
      el('div', { class: 'cs-figures' }, e.none ? [] : [eigenPlot(e.ov, 'OV eigenvalues'), eigenPlot(e.qk, 'QK eigenvalues')]),
      e.none ? '' : el('div', { class: 'button-row cs-png-skip controls-only' },
        el('button', { type: 'button', class: 'cs-eigen-csv', onclick: () => downloadCSV(`circuitscope-eigenvalues-${e.name}.csv`, eigenRows(e)) }, 'Download eigenvalues (CSV)')));
  },
});
