// Shared helpers for circuitscope's views (web/views/*.js): a DOM builder that never parses HTML,
// plain-canvas heatmaps with colour-blind-safe palettes, the store's model loader re-exported,
// downloads (CSV, JSON, PNG) and CsView, the base class of every <cs-*> view element.
// Import from a view: `import { el, heatmap, getModel, CsView } from './common.js';`
// Paths are resolved from store.js's URL, so views also work when another page includes them.
import { store, modelsFor } from '../store.js';

// ---------------------------------------------------------------------------------------------
// DOM

/**
 * el('button', {class: 'x', onclick: fn, dataset: {a: 1}, 'aria-label': 'y'}, 'text', child...)
 * Strings become text nodes (never HTML). attrs: `class`, `style` (object only), `dataset`,
 * `on<event>` functions, boolean true/false attributes, `value`/`checked`/`disabled`/`hidden`
 * as properties, others as attributes (null/undefined skipped). Children may be nested arrays.
 */
export function el(tag, attrs, ...children) {
  const node = tag.includes(':') || tag === 'svg'
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.replace(/^svg:/, ''))
    : document.createElement(tag);
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class' || k === 'className') node.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'dataset') for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = String(dv);
    else if (k === 'style' && typeof v === 'object') {
      for (const [sk, sv] of Object.entries(v)) {
        if (sk.startsWith('--')) node.style.setProperty(sk, sv); else node.style[sk] = sv;
      }
    } else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected' || k === 'indeterminate') node[k] = v;
    else if (v === true) node.setAttribute(k, '');
    else node.setAttribute(k, String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else if (c instanceof Node) node.append(c);
    else node.append(document.createTextNode(String(c)));
  }
}

/** Escapes nothing and needs nothing: text always goes through textContent. */
export function setText(node, text) {
  node.textContent = text == null ? '' : String(text);
  return node;
}

// ---------------------------------------------------------------------------------------------
// Colour (colour-blind safe)

// ColorBrewer RdBu (11 classes), reversed so negative = blue, zero = white, positive = red.
const RDBU = ['#053061', '#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7',
  '#fddbc7', '#f4a582', '#d6604d', '#b2182b', '#67001f'];
// Sequential: viridis-like (perceptually uniform, colour-blind safe), light to dark reversed so
// that 0 is pale and 1 is dark on a white page.
const SEQ = ['#fcfdbf', '#fde725', '#b5de2b', '#6ece58', '#35b779', '#1f9e89',
  '#26828e', '#31688e', '#3e4989', '#482878', '#440154'];
// Loss palette (sequential, ColorBrewer YlOrRd-like through purple): low loss pale, high loss dark.
const ORANGES = ['#fff5eb', '#fee6ce', '#fdd0a2', '#fdae6b', '#fd8d3c', '#f16913',
  '#d94801', '#a63603', '#7f2704'];

const hexCache = new Map();
function hexToRgb(h) {
  let v = hexCache.get(h);
  if (!v) {
    v = [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
    hexCache.set(h, v);
  }
  return v;
}

function ramp(stops, t) {
  if (!Number.isFinite(t)) return [160, 160, 160];
  t = Math.min(1, Math.max(0, t));
  const x = t * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = hexToRgb(stops[i]);
  const b = hexToRgb(stops[i + 1]);
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}

const css = ([r, g, b]) => `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;

/** x in [-1, 1] (clamped): blue - white - red (ColorBrewer RdBu). Returns an rgb() string. */
export function divergingColor(x) { return css(ramp(RDBU, (x + 1) / 2)); }
/** x in [0, 1] (clamped): pale yellow to dark purple (viridis stops). Returns an rgb() string. */
export function sequentialColor(x) { return css(ramp(SEQ, x)); }
/** x in [0, 1] (clamped): pale to dark orange (ColorBrewer Oranges), for losses. */
export function lossColor(x) { return css(ramp(ORANGES, x)); }
/** [r, g, b] (0..255) variants for canvas pixel loops. */
export const palettes = {
  diverging: (x) => ramp(RDBU, (x + 1) / 2),
  sequential: (x) => ramp(SEQ, x),
  loss: (x) => ramp(ORANGES, x),
};
/** Black or white text, whichever reads better on an [r, g, b] background. */
export function textOn([r, g, b]) { return (0.299 * r + 0.587 * g + 0.114 * b) > 140 ? '#000' : '#fff'; }
export function lossTextColor(x) { return textOn(ramp(ORANGES, x)); }

// ---------------------------------------------------------------------------------------------
// Heatmap

// Pixels as 32-bit words over ImageData's bytes (R, G, B, A in memory order).
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const clamp8 = new Uint8ClampedArray(4);
/** An [r, g, b] colour (0..255, rounded and clamped as ImageData does) as one opaque pixel word. */
export function packPixel([r, g, b], alpha = 255) {
  clamp8[0] = r; clamp8[1] = g; clamp8[2] = b; clamp8[3] = alpha;
  return LITTLE_ENDIAN
    ? ((clamp8[3] << 24) | (clamp8[2] << 16) | (clamp8[1] << 8) | clamp8[0]) >>> 0
    : ((clamp8[0] << 24) | (clamp8[1] << 16) | (clamp8[2] << 8) | clamp8[3]) >>> 0;
}

/** Levels of pixelTable(): a value t in [0, 1] is drawn with entry Math.round(t * (PIXEL_LEVELS - 1)). */
export const PIXEL_LEVELS = 1024;
const tables = new WeakMap();   // palette function -> [table over [0, 1], table over [-1, 1]]
/**
 * palette(x) sampled at PIXEL_LEVELS points of [0, 1] (of [-1, 1] when diverging) as pixel words
 * for a Uint32Array over ImageData's bytes. Cached per palette function (pass a function that
 * lives as long as the page, not a new one per call).
 */
export function pixelTable(palette, diverging = false) {
  let pair = tables.get(palette);
  if (!pair) { pair = [null, null]; tables.set(palette, pair); }
  const which = diverging ? 1 : 0;
  if (!pair[which]) {
    const lut = new Uint32Array(PIXEL_LEVELS);
    for (let i = 0; i < PIXEL_LEVELS; i++) {
      const x = i / (PIXEL_LEVELS - 1);
      lut[i] = packPixel(palette(diverging ? 2 * x - 1 : x));
    }
    pair[which] = lut;
  }
  return pair[which];
}

// One off-screen canvas per size, reused by heatmap() for its unscaled pixels.
const scratch = new Map();
function scratchCanvas(w, h) {
  const key = `${w}x${h}`;
  let c = scratch.get(key);
  if (!c) {
    if (scratch.size > 8) scratch.clear();
    c = typeof OffscreenCanvas !== 'undefined' ? new OffscreenCanvas(w, h) : Object.assign(document.createElement('canvas'), { width: w, height: h });
    scratch.set(key, c);
  }
  return c;
}

/**
 * Draws a 2-D tagged array ({data, shape: [rows, cols]}) or {data, rows, cols} onto a canvas, one
 * cell per entry. options: palette 'sequential' (default; min..max -> 0..1) or 'diverging'
 * (symmetric around 0: -max(|min|,|max|)..+), min, max, labelsX/labelsY (string arrays drawn on
 * the margins when given), cell (pixel size of a cell; default fits canvas.width), mask(r, c)
 * (true = draw as blank, e.g. the causal upper triangle). The canvas's CSS size is left alone.
 * Returns {cell, x0, y0, rows, cols} so callers can map pointer positions back to cells.
 */
export function heatmap(canvas, tagged, options = {}) {
  const rows = tagged.rows ?? tagged.shape[tagged.shape.length - 2];
  const cols = tagged.cols ?? tagged.shape[tagged.shape.length - 1];
  const data = tagged.data;
  const offset = tagged.offset ?? 0;
  const { labelsX = null, labelsY = null, mask = null } = options;
  const palette = options.palette === 'diverging' ? palettes.diverging
    : typeof options.palette === 'function' ? options.palette : palettes.sequential;
  let min = options.min;
  let max = options.max;
  if (min === undefined || max === undefined) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < rows * cols; i++) {
      const v = data[offset + i];
      if (Number.isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; }
    }
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    if (min === undefined) min = lo;
    if (max === undefined) max = hi;
  }
  const diverging = options.palette === 'diverging';
  const bound = Math.max(Math.abs(min), Math.abs(max)) || 1;
  const span = max - min || 1;
  const ctx = canvas.getContext('2d');
  const font = 11;
  const marginX = labelsY ? Math.ceil(Math.max(...labelsY.map((s) => String(s).length), 1) * font * 0.62) + 6 : 0;
  const marginY = labelsX ? font + 6 : 0;
  let cell = options.cell;
  if (!cell) cell = Math.max(1, Math.min((canvas.width - marginX) / cols, (canvas.height - marginY) / rows));
  const w = Math.ceil(cols * cell);
  const h = Math.ceil(rows * cell);
  if (options.resize !== false && options.cell) {
    canvas.width = marginX + w;
    canvas.height = marginY + h;
  }
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  // Pixels first (fast for large maps), then scale up without smoothing.
  const img = new ImageData(cols, rows);
  const px = new Uint32Array(img.data.buffer);
  // A 1024-entry colour table: one palette call per level, not per cell.
  const N = PIXEL_LEVELS;
  const lut = pixelTable(palette, diverging);
  const nan = packPixel(palette(NaN));
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = data[offset + r * cols + c];
      const k = r * cols + c;
      if (mask && mask(r, c)) continue;   // left transparent
      if (!Number.isFinite(v)) { px[k] = nan; continue; }
      let t = diverging ? (v / bound + 1) / 2 : (v - min) / span;
      t = t < 0 ? 0 : t > 1 ? 1 : t;
      px[k] = lut[Math.round(t * (N - 1))];
    }
  }
  const tmp = scratchCanvas(cols, rows);
  tmp.getContext('2d').putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(tmp, 0, 0, cols, rows, marginX, marginY, w, h);
  if (labelsX || labelsY) {
    const style = getComputedStyle(canvas);
    ctx.fillStyle = style.color || '#000';
    ctx.font = `${font}px ui-monospace, monospace`;
    ctx.textBaseline = 'middle';
    if (labelsY) {
      ctx.textAlign = 'right';
      labelsY.forEach((s, r) => ctx.fillText(String(s), marginX - 3, marginY + (r + 0.5) * cell));
    }
    if (labelsX) {
      ctx.textAlign = 'center';
      labelsX.forEach((s, c) => ctx.fillText(String(s), marginX + (c + 0.5) * cell, marginY / 2));
    }
  }
  return { cell, x0: marginX, y0: marginY, rows, cols, min, max };
}

// ---------------------------------------------------------------------------------------------
// The module and models: the store owns the registry and the cache; views import them from here.

export { getModule, getModel, getModelIndex, getSnapshots, getJSON, siteUrl } from '../store.js';

// ---------------------------------------------------------------------------------------------
// Downloads

function saveBlob(name, blob) {
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function csvCell(v) {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** rows: array of arrays (first row = header) or array of objects (keys of the first = header). */
export function toCSV(rows) {
  if (!rows.length) return '';
  if (!Array.isArray(rows[0])) {
    const keys = Object.keys(rows[0]);
    rows = [keys, ...rows.map((r) => keys.map((k) => r[k]))];
  }
  return rows.map((r) => r.map(csvCell).join(',')).join('\n') + '\n';
}

export function downloadCSV(name, rows) {
  saveBlob(name, new Blob([toCSV(rows)], { type: 'text/csv' }));
}

export function downloadJSON(name, obj) {
  saveBlob(name, new Blob([JSON.stringify(obj, (k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v), 2)], { type: 'application/json' }));
}

// SVG presentation properties that the page's stylesheets set: copied into a clone as
// presentation attributes (not a style attribute, which the content security policy forbids) so
// the chart looks the same when rendered as a standalone image, which sees no stylesheet.
const SVG_STYLE_PROPS = ['fill', 'fill-opacity', 'stroke', 'stroke-width', 'stroke-dasharray', 'stroke-opacity', 'opacity',
  'font-size', 'font-family', 'font-weight', 'text-anchor', 'dominant-baseline', 'visibility', 'display'];

// An inline <svg> as an image: cloned with its computed styles inlined, serialised, and loaded
// from a data: URL (which the page's content security policy allows for images).
async function svgImage(svg) {
  const clone = svg.cloneNode(true);
  const src = [svg, ...svg.querySelectorAll('*')];
  const dst = [clone, ...clone.querySelectorAll('*')];
  src.forEach((e, i) => {
    const cs = getComputedStyle(e);
    for (const p of SVG_STYLE_PROPS) {
      const v = cs.getPropertyValue(p);
      if (v) dst[i].setAttribute(p, v);
    }
  });
  const box = svg.getBoundingClientRect();
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.setAttribute('width', String(box.width));
  clone.setAttribute('height', String(box.height));
  const img = new Image();
  img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(new XMLSerializer().serializeToString(clone))}`;
  await img.decode();
  return img;
}

// Legend swatches (uPlot's .u-marker in the line charts of charts.js) get their borders drawn
// too: a dashed border is how a dashed series or marker shows in a legend.
const SWATCHES = '.u-marker';
function drawBorders(ctx, s, x, y, w, h) {
  for (const side of ['Top', 'Right', 'Bottom', 'Left']) {
    const bw = parseFloat(s[`border${side}Width`]);
    const style = s[`border${side}Style`];
    if (!(bw > 0) || style === 'none' || style === 'hidden') continue;
    const vertical = side === 'Left' || side === 'Right';
    const at = side === 'Top' ? y + bw / 2 : side === 'Bottom' ? y + h - bw / 2 : side === 'Left' ? x + bw / 2 : x + w - bw / 2;
    ctx.save();
    ctx.strokeStyle = s[`border${side}Color`];
    ctx.lineWidth = bw;
    ctx.setLineDash(style === 'dashed' ? [2 * bw, bw] : style === 'dotted' ? [bw, bw] : []);
    ctx.beginPath();
    if (vertical) { ctx.moveTo(at, y); ctx.lineTo(at, y + h); } else { ctx.moveTo(x, at); ctx.lineTo(x + w, at); }
    ctx.stroke();
    ctx.restore();
  }
}

/**
 * A canvas: its pixels. Any other element: its canvases (heatmaps, the uPlot line charts) and
 * inline SVG charts laid out at their on-screen positions, plus its other text nodes (each drawn
 * at its box in its computed colour) and its form controls' values, on the element's background colour. Elements marked .cs-png-skip (the export buttons) are left
 * out. Good enough for panels of canvases, charts and labels; no CSS effects.
 */
export async function downloadPNG(name, element) {
  let canvas = element;
  if (!(element instanceof HTMLCanvasElement)) {
    const box = element.getBoundingClientRect();
    const scale = window.devicePixelRatio || 1;
    canvas = document.createElement('canvas');
    canvas.width = Math.ceil(box.width * scale);
    canvas.height = Math.ceil(box.height * scale);
    const ctx = canvas.getContext('2d');
    ctx.scale(scale, scale);
    let bg = getComputedStyle(element).backgroundColor;
    for (let n = element; n && (!bg || bg === 'rgba(0, 0, 0, 0)' || bg === 'transparent'); n = n.parentElement) {
      bg = getComputedStyle(n).backgroundColor;
    }
    ctx.fillStyle = !bg || bg === 'rgba(0, 0, 0, 0)' ? '#fff' : bg;
    ctx.fillRect(0, 0, box.width, box.height);
    // Backgrounds of coloured inline elements (e.g. loss-coloured tokens), then canvases, then text.
    const skipped = (e) => e.closest('.cs-png-skip') || e.closest('svg')?.parentElement?.closest('svg');
    for (const e of element.querySelectorAll('*')) {
      if (skipped(e) || (e instanceof SVGElement && !(e instanceof SVGSVGElement))) continue;
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden') continue;
      const r = e.getBoundingClientRect();
      if (e instanceof SVGSVGElement) {
        if (r.width && r.height) ctx.drawImage(await svgImage(e), r.left - box.left, r.top - box.top, r.width, r.height);
      } else if (e instanceof HTMLCanvasElement) {
        // As on screen: canvases the stylesheet enlarges without smoothing stay sharp.
        ctx.imageSmoothingEnabled = s.imageRendering !== 'pixelated';
        ctx.drawImage(e, r.left - box.left, r.top - box.top, r.width, r.height);
      } else if (s.backgroundColor && s.backgroundColor !== 'rgba(0, 0, 0, 0)') {
        ctx.fillStyle = s.backgroundColor;
        ctx.fillRect(r.left - box.left, r.top - box.top, r.width, r.height);
      }
      if (e.matches(SWATCHES)) drawBorders(ctx, s, r.left - box.left, r.top - box.top, r.width, r.height);
    }
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      const text = t.textContent;
      if (!text.trim() || !t.parentElement || t.parentElement.closest('svg, .cs-png-skip')) continue;
      const s = getComputedStyle(t.parentElement);
      if (s.display === 'none' || s.visibility === 'hidden') continue;
      range.selectNodeContents(t);
      const rects = range.getClientRects();
      if (!rects.length) continue;
      const r = rects[0];
      ctx.fillStyle = s.color;
      ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
      ctx.textBaseline = 'top';
      if (rects.length === 1) {
        ctx.fillText(text.replace(/\s+/g, ' ').trim(), r.left - box.left, r.top - box.top);
        continue;
      }
      // Text wrapped over several lines (e.g. a chart title in a narrow column): word by word, each
      // at its own box.
      for (const m of text.matchAll(/\S+/g)) {
        range.setStart(t, m.index);
        range.setEnd(t, m.index + m[0].length);
        const w = range.getClientRects()[0];
        if (w) ctx.fillText(m[0], w.left - box.left, w.top - box.top);
      }
    }
    // Form controls (they have no text nodes): a box with the current value, a select's chosen
    // option, a checkbox's tick or a slider's position, where the panel shows them.
    for (const c of element.querySelectorAll('select, input, textarea')) {
      if (skipped(c) || c.type === 'hidden') continue;
      const s = getComputedStyle(c);
      const r = c.getBoundingClientRect();
      if (s.display === 'none' || s.visibility === 'hidden' || !r.width || !r.height) continue;
      const x = r.left - box.left, y = r.top - box.top;
      ctx.save();
      ctx.strokeStyle = s.borderTopColor;
      ctx.fillStyle = s.color;
      ctx.lineWidth = 1;
      if (c.type === 'range') {
        const lo = Number(c.min || 0), hi = Number(c.max || 100);
        const f = hi > lo ? (Number(c.value) - lo) / (hi - lo) : 0;
        ctx.beginPath();
        ctx.moveTo(x + 4, y + r.height / 2);
        ctx.lineTo(x + r.width - 4, y + r.height / 2);
        ctx.stroke();
        ctx.beginPath();
        ctx.arc(x + 4 + f * (r.width - 8), y + r.height / 2, Math.min(6, r.height / 2), 0, 2 * Math.PI);
        ctx.fill();
      } else {
        ctx.strokeRect(x + 0.5, y + 0.5, r.width - 1, r.height - 1);
        const value = c.type === 'checkbox' || c.type === 'radio' ? (c.checked ? '✓' : '')
          : c instanceof HTMLSelectElement ? (c.selectedOptions[0]?.text ?? '') : c.value;
        ctx.beginPath();
        ctx.rect(x + 1, y + 1, r.width - 2, r.height - 2);
        ctx.clip();
        ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
        ctx.textBaseline = 'middle';
        const pad = c.type === 'checkbox' || c.type === 'radio' ? 1 : parseFloat(s.paddingLeft) || 2;
        ctx.fillText(String(value).replace(/\s+/g, ' '), x + pad, y + r.height / 2);
      }
      ctx.restore();
    }
  }
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
  if (blob) saveBlob(name, blob);
}

// ---------------------------------------------------------------------------------------------
// The base class of views

/**
 * class MyView extends CsView { static view = 'mine'; render() {...} }  customElements.define('cs-my', MyView);
 * A view holds no state of its own: `this.state` is the page's store (store.js), render() reads
 * it (called after connect and after each change of the store, at most once per animation
 * frame, and only while the view is the store's view), and every control changes it with
 * `this.dispatch(action)` or `this.update({key: value})` (a 'set' action). Mounted alone in
 * another page, a view sets the store's view to its own and reads its attributes into it once.
 * `this.modelName` is the model the view shows: the state's, or the view's default from
 * models/index.json.
 */
export class CsView extends HTMLElement {
  /** Attributes a view mounted alone reads into the store (name -> store key). */
  static attributes = ['model', 'snapshot', 'text', 'head'];

  constructor() {
    super();
    this._frame = 0;
    this._unsubscribe = null;
  }

  get state() { return store.state; }

  get inApp() { return !!this.closest('[data-cs-app]'); }

  /** Whether the store shows this view (a view mounted alone always shows). */
  get active() { return store.state.view === this.constructor.view; }

  /** The model this view shows: the state's, or the first models/index.json lists for the view. */
  get modelName() { return this.state.model ?? this._defaultModel ?? null; }

  dispatch(action) { store.dispatch(action); }

  /** A plain change of settings (a 'set' action). */
  update(values) { store.dispatch({ type: 'set', values }); }

  connectedCallback() {
    if (!this.inApp && !this._attrsRead) {
      this._attrsRead = true;
      const values = this.constructor.view ? { view: this.constructor.view } : {};
      for (const a of this.constructor.attributes) if (this.hasAttribute(a)) values[a] = this.getAttribute(a);
      if (Object.keys(values).length) this.update(values);
    }
    this._unsubscribe ??= store.subscribe(() => this.requestRender());
    modelsFor(this.constructor.view).then((list) => {
      this._defaultModel = list[0]?.name ?? null;
      this.requestRender();
    });
  }

  disconnectedCallback() {
    this._unsubscribe?.();
    this._unsubscribe = null;
    if (this._frame) cancelAnimationFrame(this._frame);
    if (this._nowFrame) cancelAnimationFrame(this._nowFrame);
    this._frame = 0;
    this._nowFrame = 0;
  }

  requestRender() {
    if (this._frame || !this.isConnected || !this.active || this._defaultModel === undefined) return;
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._render();
    });
  }

  /**
   * Renders at once rather than in the next animation frame, so that what an input handler
   * changed is painted in the coming frame together with the input itself (a render in the next
   * frame's callbacks would show it one frame later). At most once per frame: a second call
   * before the next frame falls back to requestRender(), so input faster than the display
   * still costs one render per frame.
   */
  renderNow() {
    if (!this.isConnected || !this.active) return;
    if (this._nowFrame) { this.requestRender(); return; }
    if (this._frame) { cancelAnimationFrame(this._frame); this._frame = 0; }
    this._nowFrame = requestAnimationFrame(() => { this._nowFrame = 0; });
    this._render();
  }

  /** Renders, then records the store's version it rendered (data-version; see store.js). */
  _render() {
    const version = store.version;
    const done = () => {
      this.addPanelExports();   // panels an async render filled in have their button too
      if (!(Number(this.dataset.version) > version)) this.dataset.version = String(version);
    };
    try {
      const r = this.render?.();
      if (r && typeof r.then === 'function') r.then(done, (e) => { this.showError(e); done(); });
      else done();
    } catch (e) {
      this.showError(e);
      done();
    }
  }
  /**
   * Gives every panel (section.cs-panel with a heading) a button that downloads it as a PNG,
   * named after the heading. Hidden with the other controls in embed mode.
   */
  addPanelExports() {
    for (const panel of this.querySelectorAll('section.cs-panel')) {
      if (panel.querySelector(':scope > .cs-panel-png')) continue;
      const heading = panel.querySelector('h2, h3');
      if (!heading) continue;
      const title = heading.textContent.trim();
      const file = `circuitscope-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'panel'}.png`;
      const button = el('button', {
        type: 'button', class: 'cs-panel-png cs-png-skip controls-only', 'aria-label': `Download the panel "${title}" as PNG`,
        title: 'Download this panel as PNG', onclick: () => downloadPNG(file, panel).catch((e) => this.showError(e)),
      }, 'PNG');
      panel.prepend(button);
    }
  }

  /**
   * Says what an action just did (a passing remark, not part of the state): in the app's status
   * line, or alone on a page, in an alert box at the top of the view.
   */
  announce(message) {
    if (this.inApp) {
      this.dispatchEvent(new CustomEvent('cs-status', { detail: { message }, bubbles: true, composed: true }));
      return;
    }
    let box = this.querySelector(':scope > .cs-view-status');
    if (!box) box = this.insertBefore(el('p', { class: 'cs-view-status status', role: 'status' }), this.firstChild);
    box.textContent = message;
  }

  /** Reports an error inside the view (role=alert) and to the app (cs-error event). */
  showError(e) {
    const message = e?.message ?? String(e);
    this.dispatchEvent(new CustomEvent('cs-error', { detail: { message }, bubbles: true, composed: true }));
    let box = this.querySelector(':scope > .cs-view-error');
    if (!box) {
      box = el('p', { class: 'cs-view-error error', role: 'alert' });
      this.prepend(box);
    }
    box.textContent = message;
  }

  clearError() {
    this.querySelector(':scope > .cs-view-error')?.remove();
  }
}
