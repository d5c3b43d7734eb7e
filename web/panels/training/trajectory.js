// The per-token-loss PCA trajectory of the shipped run (induction-heads paper, seed 004): the
// records' per-token-loss vectors projected on their first two principal components (from
// models/<name>.metrics.json), points joined in training order, coloured by step, the phase
// change circled.
import { el } from '../../parts/dom.js';
import { sequentialColor } from '../../parts/colour.js';
import { definePanel } from '../panel.js';
import { shippedRun } from './shipped.js';
import { fmt } from '../../parts/format.js';

function ticks(lo, hi, n = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) out.push(+v.toPrecision(12));
  return out;
}

// The line charts of this view are uPlot charts (LineChart, parts/line-chart.js); this SVG chart draws the
// per-token-loss PCA trajectory only. That is a scatter in the PC1-PC2 plane, with points joined
// in training order and coloured by step, a tooltip per point and the phase change circled: its
// x (PC1) is not sorted, which uPlot's line mode needs; its scatter mode (mode 2) would need a
// custom paths renderer for the per-point colours, plus hover code for the point tooltips and the
// circle: more code than this whole function, for about a hundred points.
/**
 * A trajectory as SVG: points [[x, y], ...] joined in order; options {title, xLabel, yLabel,
 * colorOf(i) (each point's fill), pointLabel(i) (its tooltip), highlight: [x, y] (circled),
 * caption, width, height}.
 */
export function trajectoryChart(points, options = {}) {
  const W = options.width ?? 460, H = options.height ?? 240;
  const m = { l: 52, r: 12, t: 22, b: 38 };
  const p = points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  let [x0, x1] = p.length ? [Math.min(...p.map((q) => q[0])), Math.max(...p.map((q) => q[0]))] : [0, 1];
  let [y0, y1] = p.length ? [Math.min(...p.map((q) => q[1])), Math.max(...p.map((q) => q[1]))] : [0, 1];
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y1 = y0 + 1; y0 -= 1; }
  const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
  const sx = (x) => m.l + ((x - x0) / (x1 - x0)) * (W - m.l - m.r);
  const sy = (y) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  const svg = el('svg', { class: 'cs-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': options.title ?? 'chart' });
  if (options.title) svg.append(el('svg:text', { x: m.l, y: 13, 'font-weight': 600 }, options.title));
  for (const t of ticks(y0, y1)) {
    svg.append(el('svg:line', { class: 'grid', x1: m.l, x2: W - m.r, y1: sy(t), y2: sy(t) }),
      el('svg:text', { x: m.l - 5, y: sy(t) + 4, 'text-anchor': 'end' }, String(+t.toPrecision(4))));
  }
  for (const t of ticks(x0, x1)) {
    svg.append(el('svg:line', { class: 'axis', x1: sx(t), x2: sx(t), y1: H - m.b, y2: H - m.b + 4 }),
      el('svg:text', { x: sx(t), y: H - m.b + 15, 'text-anchor': 'middle' }, String(+t.toPrecision(4))));
  }
  svg.append(el('svg:line', { class: 'axis', x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b }),
    el('svg:line', { class: 'axis', x1: m.l, x2: m.l, y1: m.t, y2: H - m.b }));
  if (options.xLabel) svg.append(el('svg:text', { x: (m.l + W - m.r) / 2, y: H - 4, 'text-anchor': 'middle' }, options.xLabel));
  if (options.yLabel) svg.append(el('svg:text', { x: 12, y: (m.t + H - m.b) / 2, 'text-anchor': 'middle', transform: `rotate(-90 12 ${(m.t + H - m.b) / 2})` }, options.yLabel));
  if (p.length) {
    svg.append(el('svg:polyline', { class: 'line', stroke: 'var(--cs-border)', points: p.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ') }));
    p.forEach(([x, y], i) => svg.append(el('svg:circle', { cx: sx(x), cy: sy(y), r: 4, fill: options.colorOf(i), stroke: 'currentColor', 'stroke-width': 0.4 },
      el('svg:title', {}, options.pointLabel ? options.pointLabel(i) : `${fmt(x)}, ${fmt(y)}`))));
  }
  if (options.highlight) {
    const [hx, hy] = options.highlight;
    svg.append(el('svg:circle', { cx: sx(hx), cy: sy(hy), r: 8, fill: 'none', stroke: 'var(--cs-bad)', 'stroke-width': 2 }));
  }
  return el('figure', { class: 'cs-figure' }, svg, options.caption ? el('figcaption', {}, options.caption) : null);
}

export default definePanel({
  name: 'training-trajectory',
  title: 'Per-token-loss trajectory',
  view: 'training',
  needsModel: false,

  query({ modelName }) {
    return shippedRun(modelName);
  },

  render(run) {
    const pca = run.metrics?.pca;
    if (!run.recs || !(pca?.components?.length >= 2)) {
      return el('p', { class: 'cs-note' }, run.series ? `No per-token-loss trajectory: ${run.recs ? `the checkpoints of ${run.name} were scored without held-out text (${run.source})` : `the checkpoints of ${run.name} could not be scored`}.`
        : run.local ? `No per-token-loss trajectory: ${run.name} is a model file opened in this page, without training records.`
        : `No per-token-loss trajectory: ${run.name}.metrics.json ${run.recs ? 'holds no principal components' : 'is not available'}.`);
    }
    const { steps, pc } = run;
    const [c1, c2] = pca.components;
    const maxStep = Math.max(...steps) || 1;
    const pi = pc ? steps.indexOf(pc.step) : -1;
    return trajectoryChart(c1.map((x, i) => [x, c2[i]]), {
      title: `Per-token-loss PCA trajectory (PC1 ${fmt(100 * (pca.explained_variance?.[0] ?? NaN), 0)}%, PC2 ${fmt(100 * (pca.explained_variance?.[1] ?? NaN), 0)}% of variance)`,
      xLabel: 'PC1', yLabel: 'PC2', colorOf: (i) => sequentialColor(steps[i] / maxStep),
      pointLabel: (i) => `${run.stepWord} ${steps[i]}`, highlight: pi >= 0 ? [c1[pi], c2[pi]] : null,
      caption: `Points coloured by ${run.stepWord}: pale = early, dark = late (${run.stepWord} ${maxStep}).${pi >= 0 ? ` Circled: the phase change, ${run.stepWord} ${pc.step}.` : ''}`,
    });
  },
});
