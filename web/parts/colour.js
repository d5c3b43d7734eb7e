// Colour for the page's figures (colour-blind safe): CSS colour strings for DOM cells, [r, g, b]
// palettes for canvas loops, and pixel tables (palette sampled as 32-bit pixel words) for heatmaps.

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
/** @param {string} h @returns {[number, number, number]} */
function hexToRgb(h) {
  let v = hexCache.get(h);
  if (!v) {
    v = [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
    hexCache.set(h, v);
  }
  return v;
}

/** @param {string[]} stops @param {number} t @returns {[number, number, number]} */
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

