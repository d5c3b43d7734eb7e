// Plain-canvas heatmaps: one cell per entry, optional token labels on the margins, a mask for the
// causal triangle; returns the geometry so callers map pointer positions back to cells.
import { palettes, pixelTable, packPixel, PIXEL_LEVELS } from './colour.js';

/** The largest side, in pixels, of a canvas heatmap() sizes from a cell size. */
export const MAX_SIDE = 4096;

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
 * the margins when given; column labels wider than a cell, such as sub-word tokens, are written
 * upwards when two or more are), cell (pixel size of a cell; default fits canvas.width), mask(r, c)
 * (true = draw as blank, e.g. the causal upper triangle), maxSide (the canvas's largest side
 * when `cell` sizes it: the cell shrinks to fit, MAX_SIDE by default). The canvas's CSS size is
 * left alone. Returns {cell, limited (the cell asked for did not fit), labelled (labels were
 * drawn), x0, y0, rows, cols} so callers can map pointer positions back to cells and say when
 * the zoom was limited and what it cost.
 */
export function heatmap(canvas, tagged, options = {}) {
  const rows = tagged.rows ?? tagged.shape[tagged.shape.length - 2];
  const cols = tagged.cols ?? tagged.shape[tagged.shape.length - 1];
  const data = tagged.data;
  const offset = tagged.offset ?? 0;
  const { mask = null, maxSide = MAX_SIDE } = options;
  let { labelsX = null, labelsY = null } = options;
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
  const margin = (labels) => Math.ceil(Math.max(...labels.map((s) => String(s).length), 1) * font * 0.62) + 6;
  // Two or more column labels wider than a cell of size c.
  const crowded = (c) => labelsX.filter((s) => String(s).length * font * 0.62 > c).length >= 2;
  let marginX = labelsY ? margin(labelsY) : 0;
  let marginY = labelsX ? font + 6 : 0;
  const fit = () => options.cell || Math.max(1, Math.min((canvas.width - marginX) / cols, (canvas.height - marginY) / rows));
  let cell = fit();
  // Column labels are turned upright when two or more do not fit across a cell (sub-word or word
  // tokens; a character model's one "BOS" leaves them as they are).
  let upright = labelsX ? crowded(cell) : false;
  if (upright) {
    marginY = margin(labelsX);
    cell = fit();
  }
  // A cell size asked for is kept only while the canvas stays within maxSide pixels a side (all
  // 2,048 tokens of a byte-pair vocabulary at 8 pixels would be a canvas of 16,384 x 16,384,
  // a gigabyte that takes seconds to draw); a cell shrunk below a label's height loses the
  // labels (a small cell asked for keeps them: its labels are the caller's choice).
  const asked = cell;
  if (options.cell) {
    const within = () => Math.min(cell, (maxSide - marginX) / cols, (maxSide - marginY) / rows);
    cell = within();
    if (cell < asked && labelsX && !upright && crowded(cell)) {
      upright = true;
      marginY = margin(labelsX);
      cell = within();
    }
    if (cell < asked && cell < font && (labelsX || labelsY)) {
      labelsX = labelsY = null;
      marginX = marginY = 0;
      cell = Math.min(asked, maxSide / cols, maxSide / rows);
    }
  }
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
    // The text colour of the theme: a canvas drawn before it joins the page has no computed style
    // yet, so the page's body colour stands in (it follows the theme, as the panels' text does).
    const style = getComputedStyle(canvas.isConnected ? canvas : document.body);
    ctx.fillStyle = style.color || '#000';
    ctx.font = `${font}px ui-monospace, monospace`;
    ctx.textBaseline = 'middle';
    if (labelsY) {
      ctx.textAlign = 'right';
      labelsY.forEach((s, r) => ctx.fillText(String(s), marginX - 3, marginY + (r + 0.5) * cell));
    }
    if (labelsX && upright) {
      ctx.textAlign = 'left';
      labelsX.forEach((s, c) => {
        ctx.save();
        ctx.translate(marginX + (c + 0.5) * cell, marginY - 3);
        ctx.rotate(-Math.PI / 2);
        ctx.fillText(String(s), 0, 0);
        ctx.restore();
      });
    } else if (labelsX) {
      ctx.textAlign = 'center';
      labelsX.forEach((s, c) => ctx.fillText(String(s), marginX + (c + 0.5) * cell, marginY / 2));
    }
  }
  return { cell, limited: cell < asked, labelled: !!(labelsX || labelsY), x0: marginX, y0: marginY, rows, cols, min, max };
}

