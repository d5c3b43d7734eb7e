// Line charts for circuitscope's views: a small wrapper around uPlot (MIT, vendored from
// node_modules/uplot into vendor/ by scripts/build.sh), drawn on a <canvas>.
//
//   const chart = new LineChart({ title, xLabel, yLabel, series: [{name, color, dashed, thin}], yMin,
//     marker: {x, label, legend}, band: {series, caption} });
//   parent.append(chart.element);              // a <figure class="cs-figure cs-uplot">
//   chart.setData(xs, [ys0, ys1, ...], widths?);  // aligned arrays; non-finite values are gaps
//   chart.setMarker({x: 850, label: 'step 850', legend: 'phase change (step 850)'});
//   destroyCharts(parent);                     // before dropping charts (uPlot holds window listeners)
//
// Colours may be CSS custom properties ('var(--cs-line-1)'): they are read from the page's
// styles when the chart is built (canvas needs real colours), and the charts are rebuilt when the
// colour scheme changes. The chart is built once it is laid out and sized to its container's
// width (a ResizeObserver follows it), so charts made before they are on the page, or in a
// hidden view, get the right size. The marker (e.g. the phase change) is a dashed vertical line
// with its label, drawn by a uPlot draw hook, and listed in the legend. The legend shows each
// series' value at the hovered step, and the last values otherwise.
// A band (option band: {series, caption}) shades y ± w around one series, w from the `widths`
// given to setData (aligned with xs; e.g. a standard error read from a file: the chart adds and
// subtracts, it computes no statistic). It is drawn under the lines, in the series' colour, where
// both the value and its width are finite; the y axis reaches its edges; its caption (a
// <figcaption class="cs-uplot-caption">) says what it is, and shows only while a width is finite.
// The figure holds a role="img" element whose aria-label is a one-line summary of the chart, and
// data-* attributes for tests: data-chart="uplot", data-points (x values), data-series,
// data-marker (the marker's x, once drawn) and data-marker-px (its canvas column, device pixels),
// data-band (the points the band was drawn over, once drawn; absent without one).
// The uPlot stylesheet and line-chart.css are added to the document by this module if it lacks them,
// with paths resolved from this file's URL (as store.js's siteUrl does), so embedded views work.
import uPlot from '../vendor/uPlot.mjs';
import { el } from './dom.js';

const STYLES = [new URL('../vendor/uPlot.min.css', import.meta.url).href, new URL('./line-chart.css', import.meta.url).href];

// Resolves when `link` has loaded or failed (a link that already has failed: after 3 s).
const loaded = (link) => (link.sheet ? Promise.resolve() : new Promise((resolve) => {
  link.addEventListener('load', resolve);
  link.addEventListener('error', resolve);
  setTimeout(resolve, 3000);
}));

/** Resolves when the chart stylesheets are loaded (or failed to: charts then still draw). */
export const stylesReady = typeof document === 'undefined' ? Promise.resolve() : Promise.all(STYLES.map((href) => {
  let link = /** @type {HTMLLinkElement[]} */ ([...document.querySelectorAll('link[rel~="stylesheet"]')]).find((l) => l.href === href);
  if (!link) {
    link = el('link', { rel: 'stylesheet', href });
    document.head.append(link);
  }
  return loaded(link);
})).then(() => undefined);

// Okabe-Ito, in case a page uses the views without views.css (which defines --cs-line-*).
const FALLBACK = { '--cs-line-1': '#0072b2', '--cs-line-2': '#d55e00', '--cs-line-3': '#009e73', '--cs-line-4': '#cc79a7',
  '--cs-line-5': '#e69f00', '--cs-line-6': '#56b4e9', '--cs-line-7': '#f0e442', '--cs-line-8': '#999999',
  '--cs-border': '#d5d8dc', '--cs-bad': '#a0301f' };

/** A colour usable on a canvas: 'var(--x)' read from `node`'s computed style; others as they are. */
function resolveColor(node, color) {
  const m = /^var\((--[\w-]+)\)$/.exec(String(color).trim());
  if (!m) return color;
  return getComputedStyle(node).getPropertyValue(m[1]).trim() || FALLBACK[m[1]] || '#888';
}

// Legend values: fixed decimals by magnitude, so they do not jump about while the cursor moves.
const fmtVal = (v) => {
  if (v == null || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (Number.isInteger(v) || a >= 100) return String(Math.round(v));
  if (a < 0.0005) return '0.000';
  return v.toFixed(a >= 10 ? 1 : 3);
};
// An axis tick that fits the axis's width whatever the range: 8.1e+9, 120,000, 0.25, 1e-5.
const fmtTick = (v) => {
  if (v == null || !Number.isFinite(v)) return '';
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(1).replace(/\.0e/, 'e');
  return Number(v.toPrecision(4)).toLocaleString('en', { maximumFractionDigits: 3 });
};
const finite = (v) => v != null && Number.isFinite(v);
const firstFinite = (arr) => arr?.find(finite) ?? null;
const lastFinite = (arr) => arr?.findLast(finite) ?? null;

const charts = new Set();   // built charts, rebuilt when the colour scheme changes
const rebuildAll = () => {
  for (const c of charts) {
    if (c.element.isConnected) c.rebuild(); else c.unbuild();
  }
};
if (typeof matchMedia !== 'undefined') matchMedia('(prefers-color-scheme: dark)').addEventListener('change', rebuildAll);
// The page's Theme control (theme.js) changes the colours without the system's scheme changing.
if (typeof window !== 'undefined') window.addEventListener('cs-theme-change', rebuildAll);

/** Destroys the LineCharts inside `root` (uPlot keeps window listeners until then). */
export function destroyCharts(root) {
  for (const f of root.querySelectorAll('figure.cs-uplot')) f.csChart?.destroy();
}

/** A chart's one-line summary: its title, x range, series ranges, band and marker. */
function summaryLabel(o, data, marker, band) {
  const xs = data[0];
  const parts = [o.title ?? 'Chart'];
  if (xs.length) {
    const series = o.series.map((s, i) => {
      const a = firstFinite(data[i + 1]), b = lastFinite(data[i + 1]);
      return a == null ? null : `${s.name} from ${fmtVal(a)} to ${fmtVal(b)}`;
    }).filter(Boolean);
    parts.push(`${o.xLabel ?? 'x'} ${fmtVal(xs[0])} to ${fmtVal(xs.at(-1))}`);
    if (series.length) parts.push(series.length <= 4 ? series.join(', ') : `${series.length} series`);
  } else {
    parts.push('no data yet');
  }
  if (band && o.band?.caption) parts.push(o.band.caption);
  if (marker && Number.isFinite(marker.x)) parts.push(`dashed line: ${marker.legend ?? marker.label ?? `x = ${marker.x}`}`);
  return parts.join('; ') + '.';
}

/**
 * The y scale: padded 5% each way, reaching down to yMin (without padding below it) when given,
 * and out to the band's edges (`extent()`: [lo, hi] or null).
 */
const yScale = (yMin, extent) => ({
  range: (u, lo, hi) => {
    const e = extent();
    if (e) { lo = lo == null ? e[0] : Math.min(lo, e[0]); hi = hi == null ? e[1] : Math.max(hi, e[1]); }
    if (lo == null || hi == null) return [yMin ?? 0, 1];
    if (yMin !== undefined) lo = Math.min(lo, yMin);
    if (hi === lo) { hi = lo + 1; if (yMin === undefined || lo > yMin) lo -= 1; }
    const pad = (hi - lo) * 0.05;
    return [yMin !== undefined && lo === yMin ? lo : lo - pad, hi + pad];
  },
});

/** A vertical line at x across the plot, in the canvas's device pixels; returns its column. */
function vline(u, x, color, width, dash) {
  const { top, height } = u.bbox;
  const px = Math.round(u.valToPos(x, 'x', true));
  const r = uPlot.pxRatio || window.devicePixelRatio || 1;
  u.ctx.save();
  u.ctx.strokeStyle = color;
  u.ctx.lineWidth = width * r;
  u.ctx.setLineDash(dash.map((d) => d * r));
  u.ctx.beginPath();
  u.ctx.moveTo(px, top);
  u.ctx.lineTo(px, top + height);
  u.ctx.stroke();
  u.ctx.restore();
  return px;
}

/**
 * The band under the lines: one filled polygon (y + w forwards, y - w back) for each run of
 * points where both are finite, in the band series' colour, translucent; data-band on the figure.
 */
function drawBand(chart, u, color) {
  const fig = chart.element;
  const b = chart.band;
  const s = chart.options.band?.series;
  if (!b || s == null) { delete fig.dataset.band; return; }
  const xs = u.data[0];
  const ys = u.data[s + 1];
  const ok = (i) => finite(ys?.[i]) && finite(b[i]);
  const px = (k) => u.valToPos(xs[k], 'x', true);
  const py = (v) => u.valToPos(v, 'y', true);
  const ctx = u.ctx;
  ctx.save();
  ctx.beginPath();
  ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
  ctx.clip();
  ctx.fillStyle = color;
  ctx.globalAlpha = 0.22;
  let drawn = 0;
  for (let i = 0; i < xs.length;) {
    if (!ok(i)) { i++; continue; }
    let j = i;
    while (j + 1 < xs.length && ok(j + 1)) j++;
    ctx.beginPath();
    for (let k = i; k <= j; k++) ctx[k === i ? 'moveTo' : 'lineTo'](px(k), py(ys[k] + b[k]));
    for (let k = j; k >= i; k--) ctx.lineTo(px(k), py(ys[k] - b[k]));
    ctx.closePath();
    ctx.fill();
    drawn += j - i + 1;
    i = j + 1;
  }
  ctx.restore();
  fig.dataset.band = String(drawn);
}

/** The draw hook of the marker: a dashed line with its label; data-marker(-px) on the figure. */
function drawMarker(chart, u, color) {
  const fig = chart.element;
  const m = chart.marker;
  if (!m || !Number.isFinite(m.x)) { delete fig.dataset.marker; delete fig.dataset.markerPx; return; }
  const { left, top, width } = u.bbox;
  const x = Math.round(u.valToPos(m.x, 'x', true));
  if (x < left - 1 || x > left + width + 1) return;
  vline(u, m.x, color, 1.5, [5, 4]);
  if (m.label) {
    const ctx = u.ctx;
    const r = uPlot.pxRatio || window.devicePixelRatio || 1;
    ctx.save();
    ctx.fillStyle = color;
    ctx.font = `${Math.round(11 * r)}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    const w = ctx.measureText(m.label).width;
    const right = x + 3 * r + w <= left + width;
    ctx.textAlign = right ? 'left' : 'right';
    ctx.fillText(m.label, right ? x + 3 * r : x - 3 * r, top + 3 * r);
    ctx.restore();
  }
  fig.dataset.marker = String(m.x);
  fig.dataset.markerPx = String(x);
}

/**
 * uPlot's options for a LineChart, with the page's current colours (typed loosely: uPlot's
 * Options type wants tuples where this builds arrays).
 * @returns {any}
 */
function uplotOptions(chart) {
  const o = chart.options;
  const fig = chart.element;
  const fg = getComputedStyle(fig).color || '#000';
  const grid = resolveColor(fig, 'var(--cs-border)');
  const markColor = resolveColor(fig, 'var(--cs-bad)');
  const snapColor = resolveColor(fig, 'var(--cs-accent)');
  const pr = window.devicePixelRatio || 1;
  const colors = o.series.map((s) => resolveColor(fig, s.color));
  const bandColor = o.band ? colors[o.band.series] : null;
  const axis = (label, size, labelSize) => ({
    label, stroke: fg, font: '11px system-ui, sans-serif', labelFont: '12px system-ui, sans-serif',
    labelSize, labelGap: 0, gap: 3, size,
    grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1, size: 4 },
    values: (u, splits) => splits.map(fmtTick),
  });
  const dashed = (i) => o.series[i - 1]?.dashed;
  return {
    width: chart.width, height: chart.height(),
    scales: { x: { time: false }, y: yScale(o.yMin, () => chart.bandExtent()) },
    series: [
      { label: o.xLabel ?? 'x', value: (u, v, si, idx) => fmtVal(idx == null ? lastFinite(u.data[0]) : v) },
      ...o.series.map((s, i) => ({
        label: s.name, stroke: colors[i], width: s.thin ? 1 : 1.8, dash: s.dashed ? [4 * pr, 3 * pr] : undefined,
        spanGaps: true, points: { show: false },
        value: (u, v, si, idx) => fmtVal(idx == null ? lastFinite(u.data[si]) : v),
      })),
    ],
    axes: [axis(o.xLabel, 26, 16), axis(o.yLabel, 52, 18)],
    legend: {
      live: true,
      markers: {
        width: 2,
        stroke: (u, i) => colors[i - 1],
        fill: (u, i) => (dashed(i) ? 'transparent' : colors[i - 1]),
        dash: (u, i) => (dashed(i) ? 'dashed' : 'solid'),
      },
      // Outside the role="img" element, so screen readers still read the legend's values.
      mount: (u, table) => fig.append(table),
    },
    cursor: { drag: { x: false, y: false, setScale: false }, points: { size: 6 } },
    hooks: {
      drawClear: [(u) => drawBand(chart, u, bandColor)],
      draw: [(u) => { if (chart.snapshotX !== null && chart.snapshotX !== undefined) vline(u, chart.snapshotX, snapColor, 2, []); },
        (u) => drawMarker(chart, u, markColor)],
    },
  };
}

export class LineChart {
  /**
   * options: title, xLabel, yLabel, series [{name, color, dashed, thin}], yMin (the y axis reaches at
   * least down to it, without padding below), marker {x, label, legend} or null,
   * band {series (an index into series), caption} or absent, height (CSS pixels of the plot with
   * its axes; default 230).
   */
  constructor(options) {
    this.options = options;
    this.marker = options.marker ?? null;
    this.snapshotX = null;   // the snapshot in use: a solid line
    this.data = [[], ...options.series.map(() => [])];
    this.band = null;        // the band's half-widths, aligned with the x values, or null
    this.width = 0;
    this.u = null;
    this.sizer = el('div', { class: 'cs-uplot-sizer' });
    this.plot = el('div', { class: 'cs-uplot-plot', role: 'img' });
    this.caption = options.band?.caption ? el('figcaption', { class: 'cs-uplot-caption', hidden: true }, options.band.caption) : null;
    this.element = el('figure', { class: 'cs-figure cs-uplot', dataset: { chart: 'uplot', points: 0, series: options.series.length } },
      options.title ? el('div', { class: 'cs-uplot-title' }, options.title) : null, this.sizer, this.plot, this.caption);
    this.element.csChart = this;
    this.updateLabel();
    this.resizer = new ResizeObserver((entries) => {
      const w = Math.floor(entries.at(-1).contentRect.width);
      if (w <= 0 || w === this.width) return;   // hidden (display: none) or unchanged
      this.width = w;
      if (this.u) this.u.setSize({ width: w, height: this.height() });
      else this.build();
    });
    this.resizer.observe(this.sizer);
  }

  height() { return this.options.height ?? (this.width < 420 ? 200 : 230); }

  /**
   * xs: x values (increasing); ys: one array per series (null / NaN / undefined are gaps);
   * widths: the band's half-widths (with the band option; null or none finite: no band).
   */
  setData(xs, ys, widths = null) {
    const clean = (a) => Array.from(a, (v) => (v != null && Number.isFinite(v) ? v : null));
    this.data = [clean(xs), ...this.options.series.map((_, i) => clean(ys[i] ?? []))];
    const w = this.options.band && widths ? clean(widths) : null;
    this.band = w && w.some((v) => v !== null) ? w : null;
    if (this.caption) this.caption.hidden = !this.band;
    this.element.dataset.points = String(this.data[0].length);
    this.updateLabel();
    this.u?.setData(this.data);
  }

  /** A solid line at x (the snapshot in use), or none for null; data-snapshot holds its x. */
  setSnapshot(x) {
    const v = Number.isFinite(x) ? x : null;
    if (this.snapshotX === v) return;
    this.snapshotX = v;
    if (v === null) delete this.element.dataset.snapshot; else this.element.dataset.snapshot = String(v);
    this.u?.redraw(false);
  }

  setMarker(marker) {
    const same = (a, b) => (a && b ? a.x === b.x && a.label === b.label && a.legend === b.legend : a === b);
    if (same(this.marker, marker ?? null)) return;
    this.marker = marker ?? null;
    this.updateLabel();
    if (this.u) { this.markerLegend(); this.u.redraw(false); }
  }

  /** The one-line summary read by screen readers. */
  updateLabel() {
    this.plot.setAttribute('aria-label', summaryLabel(this.options, this.data, this.marker, this.band));
  }

  /** [lowest, highest] edge of the band, or null without one. */
  bandExtent() {
    const ys = this.band ? this.data[this.options.band.series + 1] : null;
    if (!ys) return null;
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < ys.length; i++) {
      if (ys[i] === null || this.band[i] === null) continue;
      lo = Math.min(lo, ys[i] - this.band[i]);
      hi = Math.max(hi, ys[i] + this.band[i]);
    }
    return lo <= hi ? [lo, hi] : null;
  }

  /** Builds (or rebuilds) the uPlot instance with the page's current colours. */
  build() {
    this.u?.destroy();
    this.u = null;
    this.u = new uPlot(uplotOptions(this), this.data, this.plot);
    this.markerLegend();
    charts.add(this);
  }

  /** The marker's entry at the end of the legend (a dashed swatch and its text). */
  markerLegend() {
    const body = this.u?.root && this.element.querySelector('.u-legend tbody');
    if (!body) return;
    body.querySelector('.cs-marker-legend')?.remove();
    const m = this.marker;
    if (!m || !Number.isFinite(m.x)) return;
    body.append(el('tr', { class: 'u-series cs-marker-legend' },
      el('th', {}, el('div', { class: 'u-marker' }), el('div', { class: 'u-label' }, m.legend ?? m.label ?? 'marker')),
      el('td', { class: 'u-value' })));
  }

  rebuild() { if (this.u) this.build(); }

  /** Drops the uPlot instance of a chart off the page; it is built again if the chart is laid out again. */
  unbuild() {
    this.u?.destroy();
    this.u = null;
    this.width = 0;
    charts.delete(this);
  }

  destroy() {
    this.resizer.disconnect();
    this.u?.destroy();
    this.u = null;
    charts.delete(this);
  }
}
