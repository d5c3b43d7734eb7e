// Activation patching as the IOI and Induction views' -patching panels draw it (the core's
// model.patch(): every number here is the core's): the clean and the corrupted input with the
// changed tokens marked, the two logit differences, the normalised effect of patching each head
// [layer × head] and each head at each position [head × position, token labels] as diverging
// heatmaps around 0 (the shared heatmap part), a legend, a read-out of the hovered cell with its
// exact values, a caption in plain words, and the direction switch (off | denoise | noise).
//
//   const node = patchFigure(ctx, {id, onDirection(value)})   the panel's node, then
//   showPatch(node, data)                                     draws `data` into it (again and again)
// data: {direction: null | 'denoise' | 'noise', error?: sentence, and with a
//   result: clean, corrupted: [{text, changed}] (one per position), sep ('' for characters),
//   description, what (the logit difference in words), cleanDiff, corruptedDiff, normalised,
//   passes, note (the core's sentence when each position alone was left out, or ''), L, H, T,
//   pos, head, headEffect [L*H], headPos, headPosEffect [L*H*T] (null then), labels [T]
//   (short token labels), names [T] (the tokens in full), cell (pixels), and for a model with
//   MLPs mlp, mlpEffect [L] (each layer's MLP output patched at every position; else null)}
// The read-out (.cs-patch-hover) carries data-map, data-head, data-pos, data-effect and
// data-value, and each canvas its geometry (data-x0, data-y0, data-cell), so a test can point at
// a cell and read what the page says there.
import { el } from './dom.js';
import { heatmap } from './heatmap.js';
import { divergingColor } from './colour.js';
import { fmt } from './format.js';

const CHOICES = [['', 'off'], ['denoise', 'denoise: clean into corrupted'], ['noise', 'noise: corrupted into clean']];

const CAPTION = {
  denoise: 'Denoising: the model reads the corrupted input, and one head\'s output is replaced by what that head wrote when it read the clean input — at every position (the first map), or at one position only (the second). Each cell is its own forward pass, in which the later layers see the patched output. The colour says how much of the clean answer that one patch brings back: 1 (red) all of it, 0 (white) none, below 0 (blue) the corrupted answer gets stronger.',
  noise: 'Noising: the model reads the clean input, and one head\'s output is replaced by what that head wrote when it read the corrupted input — at every position (the first map), or at one position only (the second). Each cell is its own forward pass, in which the later layers see the patched output. The colour is on the same scale as denoising: 1 (red) the patch changes nothing, 0 (white) it breaks the answer as much as the whole corruption does, below 0 (blue) more.',
};
const OFF = 'Activation patching runs the model on a clean input and on a corrupted one (the standard corruption for this model), then copies one head\'s output from one run into the other, and measures how the answer moves. Choose a direction to compute it (one forward pass per head, and per head and position).';

/** The panel's node: the direction switch, then a body that showPatch() fills. */
export function patchFigure({ id, onDirection }) {
  const select = el('select', { id: `${id}-patch`, onchange: () => onDirection(select.value || null) },
    CHOICES.map(([value, text]) => el('option', { value }, text)));
  const body = el('div', { class: 'cs-patch-body' });
  const node = el('div', { class: 'cs-patch' },
    el('div', { class: 'cs-controls controls-only' }, el('div', { class: 'cs-field' }, el('label', { for: select.id }, 'Patch each head\'s output'), select)),
    body);
  node.csPatch = { select, body, shown: undefined };
  return node;
}

/** A row of tokens, the changed ones marked. */
function inputLine(label, tokens, sep) {
  return el('p', { class: 'cs-patch-input' }, el('span', { class: 'cs-patch-label' }, label),
    el('span', { class: sep ? 'cs-patch-tokens words' : 'cs-patch-tokens' },
      tokens.map((t, i) => el('span', { class: t.changed ? 'cs-patch-tok changed' : 'cs-patch-tok', dataset: { pos: i }, title: t.changed ? `position ${i}: changed` : `position ${i}` }, t.text))));
}

/** The colour scale: swatches from -bound to +bound. */
function legend(bound) {
  return el('div', { class: 'legend cs-patch-legend', 'aria-hidden': 'true' },
    el('span', { class: 'legend-unit' }, 'normalised effect:'),
    [-1, -0.5, 0, 0.5, 1].map((x) => {
      const sw = el('span', { class: 'swatch' });
      sw.style.backgroundColor = divergingColor(x);
      return el('span', { class: 'legend-item' }, sw, fmt(x * bound, bound < 2 ? 1 : 0));
    }));
}

/** Writes the hovered cell of `canvas` (geometry g) into `out` with `describe(r, c)`. */
function hoverCells(canvas, g, out, describe) {
  Object.assign(canvas.dataset, { x0: g.x0, y0: g.y0, cell: g.cell });
  const show = (ev) => {
    const rect = canvas.getBoundingClientRect();
    const x = (ev.clientX - rect.left) * (canvas.width / rect.width) - g.x0;
    const y = (ev.clientY - rect.top) * (canvas.height / rect.height) - g.y0;
    const c = Math.floor(x / g.cell), r = Math.floor(y / g.cell);
    const inside = r >= 0 && c >= 0 && r < g.rows && c < g.cols;
    const d = inside ? describe(r, c) : null;
    out.textContent = d ? d.text : '';
    for (const k of ['map', 'head', 'pos', 'effect', 'value']) {
      if (d && d[k] !== undefined) out.dataset[k] = String(d[k]); else delete out.dataset[k];
    }
  };
  canvas.addEventListener('mousemove', show);
  canvas.addEventListener('mouseleave', () => { out.textContent = ''; });
}

/** The two heatmaps, their legend and read-out. */
function maps(d) {
  const { L, H, T } = d;
  let bound = 1;   // the colour scale: at least ±1 (a full restoration), wider when an effect is
  for (const v of d.headEffect) bound = Math.max(bound, Math.abs(v));
  for (const v of d.headPosEffect ?? []) bound = Math.max(bound, Math.abs(v));
  const out = el('p', { class: 'cs-hover cs-patch-hover', 'aria-live': 'polite' });
  const name = (k) => `L${Math.floor(k / H)}H${k % H}`;
  const headCanvas = el('canvas', { class: 'cs-patch-heads', width: 10, height: 10, role: 'img', tabindex: 0,
    'aria-label': `Normalised effect of patching each head at every position, ${L} layers by ${H} heads` });
  const gh = heatmap(headCanvas, { data: d.headEffect, rows: L, cols: H }, {
    palette: 'diverging', min: -bound, max: bound, cell: 40,
    labelsX: Array.from({ length: H }, (_, h) => `H${h}`), labelsY: Array.from({ length: L }, (_, l) => `L${l}`) });
  hoverCells(headCanvas, gh, out, (r, c) => {
    const k = r * H + c;
    return { map: 'head', head: name(k), effect: d.headEffect[k], value: d.head[k],
      text: `${name(k)} at every position: effect ${fmt(d.headEffect[k], 3)} (logit difference ${fmt(d.head[k], 3)})` };
  });
  const figures = [el('figure', { class: 'cs-figure' }, headCanvas, el('figcaption', {}, 'each head, every position'))];
  if (d.headPosEffect) {
    const posCanvas = el('canvas', { class: 'cs-patch-positions', width: 10, height: 10, role: 'img', tabindex: 0,
      'aria-label': `Normalised effect of patching each head at one position, ${L * H} heads by ${T} positions` });
    const gp = heatmap(posCanvas, { data: d.headPosEffect, rows: L * H, cols: T }, {
      palette: 'diverging', min: -bound, max: bound, cell: d.cell, labelsX: d.labels,
      labelsY: Array.from({ length: L * H }, (_, k) => name(k)) });
    hoverCells(posCanvas, gp, out, (r, c) => {
      const k = r * T + c;
      const after = c > d.pos ? ' (after the answer position: no effect)' : '';
      return { map: 'position', head: name(r), pos: c, effect: d.headPosEffect[k], value: d.headPos[k],
        text: `${name(r)} at position ${c} (${d.names[c]}): effect ${fmt(d.headPosEffect[k], 3)} (logit difference ${fmt(d.headPos[k], 3)})${after}` };
    });
    figures.push(el('figure', { class: 'cs-figure' }, el('div', { class: 'cs-heat-wrap cs-patch-wrap' }, posCanvas), el('figcaption', {}, 'each head at each position')));
  }
  // Each layer's MLP output (a model with MLPs), patched at every position: one line each.
  const mlps = d.mlpEffect ? el('ul', { class: 'cs-patch-mlps' }, ...Array.from(d.mlpEffect, (e, l) =>
    el('li', { dataset: { mlp: `L${l}MLP`, effect: String(e) } }, `MLP of layer ${l}, every position: effect ${fmt(e, 3)} (logit difference ${fmt(d.mlp[l], 3)})`))) : null;
  return [el('div', { class: 'cs-figures' }, figures), ...(mlps ? [mlps] : []), legend(bound), out];
}

/** The body for a result. */
function result(d) {
  const parts = [
    el('p', { class: 'cs-explain' }, CAPTION[d.direction]),
    inputLine('clean', d.clean, d.sep), inputLine('corrupted', d.corrupted, d.sep),
    el('p', { class: 'cs-note' }, `The corruption: ${d.description}.`),
    el('p', { class: 'cs-patch-diffs' }, `${d.what}: clean ${fmt(d.cleanDiff, 3)}, corrupted ${fmt(d.corruptedDiff, 3)} (${d.passes} forward passes).`),
  ];
  if (d.note) parts.push(el('p', { class: 'cs-note cs-patch-whole-only' }, d.note));
  if (!d.normalised) parts.push(el('p', { class: 'cs-message' }, 'The clean and the corrupted input give the same logit difference, so there is nothing to restore: every effect is 0.'));
  if (!d.L) parts.push(el('p', { class: 'cs-note' }, 'This model has no attention heads to patch.'));
  else parts.push(...maps(d));
  return parts;
}

/** Draws `data` into a node made by patchFigure() (nothing when it shows that data already). */
export function showPatch(node, data) {
  const s = node.csPatch;
  s.select.value = data.direction ?? '';
  if (s.shown === data) return;
  s.shown = data;
  node.dataset.direction = data.direction ?? 'off';
  node.dataset.state = !data.direction ? 'off' : data.error ? 'refused' : 'shown';
  if (data.cleanDiff !== undefined) Object.assign(node.dataset, { cleanDiff: data.cleanDiff, corruptedDiff: data.corruptedDiff });
  else { delete node.dataset.cleanDiff; delete node.dataset.corruptedDiff; }
  if (!data.direction) s.body.replaceChildren(el('p', { class: 'cs-explain' }, OFF));
  else if (data.error) s.body.replaceChildren(el('p', { class: 'cs-message cs-patch-refused', role: 'status' }, data.error));
  else s.body.replaceChildren(...result(data));
}
