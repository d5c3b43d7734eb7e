// Attention patterns on a canvas: row = query (the token attending), column = key (the token
// attended to), pale to dark blue for weights 0 to 1, the causal upper triangle left blank. One
// function draws both a small thumbnail and the enlarged figure:
//
//   drawPattern(canvas, {pattern, offset = 0, T, labels}, {from = 0, labelled = 40, cellPx = 14, maxPx = 520})
//     pattern: a Float32Array holding a T x T pattern at `offset` (e.g. one head of run().patterns);
//     labels: the tokens' names (an array, or a function i -> name), or null. With labels and at
//     most `labelled` tokens, the tokens label both axes and a cell is cellPx pixels (maxPx in
//     all at most); otherwise a cell is one pixel (the stylesheet scales the canvas without
//     smoothing) and only rows from..T-1 are drawn again: with a causal model and the same tokens
//     before `from`, the rows above are what the canvas already shows (pass 0 when unsure).
//     With `side` (a thumbnail) and T > side, the canvas is side x side pixels whatever T is and
//     each pixel shows the largest weight of its block of cells (rows and columns
//     floor(i T / side) .. floor((i + 1) T / side) - 1, the causal ones only), so a thin stripe
//     stays visible and a longer text does not resize the canvas.
//     With `room` (the enlarged figure) and one pixel a cell, the canvas is a multiple of 128
//     pixels a side, at least T, so typing does not resize it: the caller shows its top-left
//     T x T (the geometry's `side` is the canvas's side; scale it side / T times the box).
//     `canvas` may also be a slot of a thumbnail sheet (thumb-sheet.js): the pixels go to its
//     surface, one canvas drawing many slots.
//     Returns the geometry {cell, x0, y0, rows, cols}; it is also kept on the canvas for:
//   hoverPattern(canvas, onCell)  calls onCell({q, k, weight, query, key}) as the pointer moves over
//     a cell (weight null above the diagonal; query/key: the labels) and onCell(null) as it leaves.
//   describeCell(cell)            that cell as a sentence.
//   attnPalette(t) -> [r, g, b], attnColor(t) -> 'rgb(...)': the colours, for legends and tokens.
import { heatmap } from './heatmap.js';
import { pixelTable, packPixel, PIXEL_LEVELS } from './colour.js';

// ColorBrewer Blues (sequential, colour-blind safe, distinct from the orange losses).
const BLUES = [[247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225], [107, 174, 214], [66, 146, 198], [33, 113, 181], [8, 81, 156], [8, 48, 107]];
/** @param {number} t @returns {[number, number, number]} */
export function attnPalette(t) {
  if (!Number.isFinite(t)) return [160, 160, 160];
  t = Math.min(1, Math.max(0, t));
  const x = t * (BLUES.length - 1);
  const i = Math.min(BLUES.length - 2, Math.floor(x));
  const f = x - i;
  const a = BLUES[i];
  const b = BLUES[i + 1];
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}
export function attnColor(t) {
  const [r, g, b] = attnPalette(t);
  return `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;
}

const labelOf = (spec, i) => (typeof spec.labels === 'function' ? spec.labels(i) : spec.labels ? String(spec.labels[i]) : String(i));

const ROOM = 128;

export function drawPattern(canvas, spec, { from = 0, labelled = 40, cellPx = 14, maxPx = 520, side = 0, room = false } = {}) {
  const { pattern, offset = 0, T } = spec;
  const st = (canvas.csPattern ??= { mode: null, img: null, px: null, ctx: null, geom: null, spec: null });
  st.spec = spec;
  // A slot of a thumbnail sheet (thumb-sheet.js) is drawn on its surface, as on a canvas of its own.
  const surface = canvas.csSurface ?? canvas;
  if (side > 0 && T > side) return drawBlocks(surface, st, pattern, offset, T, side, from);
  if (spec.labels && T <= labelled && T > 0 && surface === canvas) {
    const cell = Math.max(1, Math.floor(Math.min(maxPx, cellPx * T) / T));
    const names = Array.from({ length: T }, (_, i) => labelOf(spec, i));
    st.mode = 'labelled';
    const draw = () => heatmap(canvas, { data: pattern, offset, rows: T, cols: T },
      { min: 0, max: 1, mask: (r, c) => c > r, palette: attnPalette, cell, labelsX: names, labelsY: names });
    st.geom = draw();
    // The labels take the canvas's text colour, which a canvas not yet in the page does not have:
    // drawn again once the caller has put it there (in the same task, before it is painted).
    if (!canvas.isConnected) queueMicrotask(() => { if (canvas.isConnected && st.spec === spec) st.geom = draw(); });
    return st.geom;
  }
  if (st.mode !== 'pixels') from = 0;
  st.mode = 'pixels';
  // The pixels are kept in an image at least T wide (it grows by doubling), so a text one token
  // longer or shorter paints only its rows from `from` on; resizing the canvas clears it, so then
  // the whole T x T square is put back from the kept image. With `room`, the canvas is a multiple
  // of ROOM pixels a side, resized only when T passes it or falls below it by more than ROOM:
  // the caller shows its top-left T x T (geometry.side is the canvas's side). A canvas resized at
  // every keystroke that changes the number of tokens costs the browser a new canvas each time.
  let put = from;
  const want = room ? (T > surface.width || T <= surface.width - ROOM || surface.width !== surface.height ? Math.ceil(T / ROOM) * ROOM : surface.width) : T;
  if (surface.width !== want || surface.height !== want) { surface.width = want; surface.height = want; put = 0; }
  if (!st.img || st.img.width < T) {
    // A fresh ImageData is transparent: the masked upper triangle is never written.
    const W = T ? Math.max(T, Math.min(2 * (st.img?.width ?? 0), 4096)) : 0;
    st.img = W ? new ImageData(W, W) : null;
    st.px = st.img ? new Uint32Array(st.img.data.buffer) : null;
    from = 0;
    put = 0;
  }
  st.geom = { cell: 1, x0: 0, y0: 0, rows: T, cols: T, min: 0, max: 1, side: want };
  if (put >= T) return st.geom;
  st.ctx ??= surface.getContext('2d');
  if (from < T) paintRows(st.px, st.img.width, pattern, offset, T, from);
  st.ctx.putImageData(st.img, 0, 0, 0, put, T, T - put);
  return st.geom;
}

// The pixel word of an attention weight v, as heatmap() draws 0..1 (NaN in the palette's NaN
// colour, values outside 0..1 clamped).
let attnLut = null, attnNan = 0;
function pixelOf(v) {
  if (!attnLut) {
    attnLut = pixelTable(attnPalette);
    attnNan = packPixel(attnPalette(NaN));
  }
  const top = PIXEL_LEVELS - 1;
  if (v >= 0) return attnLut[v >= 1 ? top : (v * top + 0.5) | 0];
  return v < 0 ? attnLut[0] : attnNan;
}

// Rows from..T-1 of a T x T pattern as pixel words of an image `W` wide: the lower triangle with
// the diagonal; the upper triangle (masked) is not written.
function paintRows(px, W, P, offset, T, from) {
  for (let r = from; r < T; r++) {
    const src = offset + r * T;
    const dst = r * W;
    for (let c = 0; c <= r; c++) px[dst + c] = pixelOf(P[src + c]);
  }
}

// The thumbnail of a T x T pattern longer than `side` cells: each pixel the largest causal weight
// of a square block of s x s cells (s = ceil(T / side), so at most `side` pixels a side; the last
// block row and column may be narrower), transparent where the block lies wholly above the
// diagonal. The blocks do not move when the text grows by a token (only when s changes), so a
// drawing with the same s computes again only the blocks holding rows from..T-1.
function drawBlocks(canvas, st, P, offset, T, side, from) {
  const s = Math.ceil(T / side), n = Math.ceil(T / s);
  if (st.mode !== 'blocks' || st.blockCells !== s) from = 0;
  st.mode = 'blocks';
  st.blockCells = s;
  if (!st.img || st.img.width !== side) {
    st.img = new ImageData(side, side);
    st.px = new Uint32Array(st.img.data.buffer);
    from = 0;
  }
  const i0 = Math.floor(Math.min(from, T) / s);   // the block row holding row `from`
  let put = i0;
  if (canvas.width !== n || canvas.height !== n) { canvas.width = n; canvas.height = n; put = 0; }   // cleared
  const px = st.px;
  px.fill(0, i0 * side);
  for (let i = i0; i < n; i++) {
    const r0 = i * s, r1 = Math.min(T, r0 + s);
    for (let j = 0; j <= i; j++) {   // blocks right of the diagonal block hold no causal cell
      const c0 = j * s, c1 = Math.min(T, c0 + s);
      let m = -Infinity, bad = false;
      for (let r = r0; r < r1; r++) {
        const row = offset + r * T;
        for (let c = c0, end = Math.min(c1, r + 1); c < end; c++) {
          const v = P[row + c];
          if (v > m) m = v;
          else if (v !== v) bad = true;   // NaN: drawn as the full drawing draws it
        }
      }
      if (m === -Infinity && !bad) continue;   // no causal cell in the block
      px[i * side + j] = pixelOf(bad ? NaN : m);
    }
  }
  st.ctx ??= canvas.getContext('2d');
  if (put < n) st.ctx.putImageData(st.img, 0, 0, 0, put, n, n - put);
  st.geom = { cell: 1 / s, x0: 0, y0: 0, rows: T, cols: T, min: 0, max: 1 };
  return st.geom;
}

/** The cell under a pointer event on a canvas drawn by drawPattern(), or null. */
export function cellAt(canvas, e) {
  const st = canvas.csPattern;
  if (!st?.geom || !st.spec) return null;
  const g = st.geom;
  const surface = canvas.csSurface ?? canvas;
  const r = canvas.getBoundingClientRect();
  if (!r.width || !r.height) return null;
  const q = Math.floor(((e.clientY - r.top) * (surface.height / r.height) - g.y0) / g.cell);
  const k = Math.floor(((e.clientX - r.left) * (surface.width / r.width) - g.x0) / g.cell);
  if (q < 0 || k < 0 || q >= g.rows || k >= g.cols) return null;
  const { pattern, offset = 0, T } = st.spec;
  return { q, k, weight: k <= q ? pattern[offset + q * T + k] : null, query: labelOf(st.spec, q), key: labelOf(st.spec, k) };
}

export function hoverPattern(canvas, onCell) {
  canvas.addEventListener('mousemove', (e) => onCell(cellAt(canvas, e)));
  canvas.addEventListener('mouseleave', () => onCell(null));
}

export function describeCell(c) {
  if (!c) return '';
  const pair = `${c.query} @${c.q} → ${c.key} @${c.k}`;
  return c.weight === null ? `${pair}: a token does not attend to a later one` : `${pair}: attention ${c.weight.toFixed(3)}`;
}
