// Downloads: CSV and JSON of a panel's numbers, and a PNG of a panel as it looks on the page (the
// DOM rasterised onto a canvas: text, tables, canvases, inline SVG and uPlot legends).
import { el } from './dom.js';


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
  saveBlob(name, new Blob([JSON.stringify(obj, (k, v) => (ArrayBuffer.isView(v) ? Array.from(/** @type {any} */ (v)) : v), 2)], { type: 'application/json' }));
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

// Legend swatches (uPlot's .u-marker in the line charts of line-chart.js) get their borders drawn
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
 * The box (relative to `box`) that clips what `e` draws: the intersection of its ancestors up to
 * `root` whose overflow is not visible (a figure showing part of a larger canvas, a scrolled
 * table), or null when none clips. `memo` keeps each ancestor's answer for one export.
 */
function clipOf(e, root, box, memo) {
  const p = e.parentElement;
  if (!p || p === root || !root.contains(p)) return null;
  if (memo.has(p)) return memo.get(p);
  let clip = clipOf(p, root, box, memo);
  const s = getComputedStyle(p);
  if (s.overflowX !== 'visible' || s.overflowY !== 'visible') {
    const r = p.getBoundingClientRect();
    const own = { x0: r.left - box.left, y0: r.top - box.top, x1: r.right - box.left, y1: r.bottom - box.top };
    clip = clip ? { x0: Math.max(clip.x0, own.x0), y0: Math.max(clip.y0, own.y0), x1: Math.min(clip.x1, own.x1), y1: Math.min(clip.y1, own.y1) } : own;
  }
  memo.set(p, clip);
  return clip;
}

/** Runs draw() on ctx clipped to `clip` (as clipOf gives it; none: unclipped). */
async function clipped(ctx, clip, draw) {
  if (!clip) return draw();
  ctx.save();
  ctx.beginPath();
  ctx.rect(clip.x0, clip.y0, Math.max(0, clip.x1 - clip.x0), Math.max(0, clip.y1 - clip.y0));
  ctx.clip();
  try { await draw(); } finally { ctx.restore(); }
}

/**
 * A canvas: its pixels. Any other element: its canvases (heatmaps, the uPlot line charts) and
 * inline SVG charts laid out at their on-screen positions, plus its other text nodes (each drawn
 * at its box in its computed colour) and its form controls' values, on the element's background colour. Elements marked .cs-png-skip (the export buttons) are left
 * out. What an ancestor's overflow hides stays hidden (clipOf: the enlarged attention pattern's
 * canvas is larger than the part its box shows). Good enough for panels of canvases, charts
 * and labels; no CSS effects.
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
    const memo = new Map();
    for (const e of element.querySelectorAll('*')) {
      if (skipped(e) || (e instanceof SVGElement && !(e instanceof SVGSVGElement))) continue;
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden') continue;
      const r = e.getBoundingClientRect();
      await clipped(ctx, clipOf(e, element, box, memo), async () => {
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
      });
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
      await clipped(ctx, clipOf(t, element, box, memo), () => {
        ctx.fillStyle = s.color;
        ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
        ctx.textBaseline = 'top';
        if (rects.length === 1) {
          ctx.fillText(text.replace(/\s+/g, ' ').trim(), r.left - box.left, r.top - box.top);
          return;
        }
        // Text wrapped over several lines (e.g. a chart title in a narrow column): word by word,
        // each at its own box.
        for (const m of text.matchAll(/\S+/g)) {
          range.setStart(t, m.index);
          range.setEnd(t, m.index + m[0].length);
          const w = range.getClientRects()[0];
          if (w) ctx.fillText(m[0], w.left - box.left, w.top - box.top);
        }
      });
    }
    // Form controls (they have no text nodes): a box with the current value, a select's chosen
    // option, a checkbox's tick or a slider's position, where the panel shows them (and clipped as
    // the rest).
    for (const c of element.querySelectorAll('select, input, textarea')) {
      if (skipped(c) || c.type === 'hidden') continue;
      const s = getComputedStyle(c);
      const r = c.getBoundingClientRect();
      if (s.display === 'none' || s.visibility === 'hidden' || !r.width || !r.height) continue;
      const x = r.left - box.left, y = r.top - box.top;
      await clipped(ctx, clipOf(c, element, box, memo), () => {
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
      });
    }
  }
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
  if (blob) saveBlob(name, blob);
}
