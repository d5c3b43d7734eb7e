// The QK and OV panels (circuits-qk, circuits-ov): one head's full circuit as a zoomable heatmap in
// the core's display order (rows and cols of model.qk/ov with {sort, top}), a hover read-out per
// cell, and the circuit's largest and smallest entries.
import { el } from '../../parts/dom.js';
import { heatmap, MAX_SIDE } from '../../parts/heatmap.js';
import { downloadCSV } from '../../parts/download.js';
import { NONE, showToken, chosenHead, tableOrder, circuitOf, entryTable } from './head.js';
import { fmt } from '../../parts/format.js';

/**
 * A circuit's table as a heatmap at the state's zoom (d: rows, cols, sub, vocab, zoom, rowName,
 * colName), `describe(g)` its accessible label: [the heatmap's wrapper, the hover read-out, a note
 * when the zoom asked for would make the figure larger than a canvas may be ('' otherwise)].
 */
export function circuitHeat(d, describe) {
  const canvas = el('canvas', { width: 10, height: 10, role: 'img', tabindex: 0 });
  const hover = el('p', { class: 'cs-hover', 'aria-live': 'polite' });
  const labelled = d.zoom >= 10;
  const g = heatmap(canvas, { data: d.sub, rows: d.rows.length, cols: d.cols.length }, {
    palette: 'diverging', cell: d.zoom,
    labelsX: labelled ? d.cols.map((c) => showToken(d.vocab[c])) : null,
    labelsY: labelled ? d.rows.map((i) => showToken(d.vocab[i])) : null,
  });
  canvas.setAttribute('aria-label', describe(g));
  hoverCells(canvas, hover, g, d);
  const limited = g.limited
    ? el('p', { class: 'cs-note cs-zoom-note' }, `At ${d.zoom} pixels a cell, ${d.rows.length} × ${d.cols.length} tokens would not fit on one canvas (${MAX_SIDE.toLocaleString('en')} pixels a side): cells are drawn ${+g.cell.toFixed(1)} pixels${labelled && !g.labelled ? ', without token labels' : ''}. Show fewer tokens to zoom in.`)
    : '';
  return [el('div', { class: 'cs-heat-wrap' }, canvas), hover, limited];
}

/** Writes "row · col: value" for the cell under the pointer into `out`. */
export function hoverCells(canvas, out, g, d) {
  canvas.addEventListener('mousemove', (ev) => {
    const rect = canvas.getBoundingClientRect();
    const x = (ev.clientX - rect.left) * (canvas.width / rect.width) - g.x0;
    const y = (ev.clientY - rect.top) * (canvas.height / rect.height) - g.y0;
    const c = Math.floor(x / g.cell), r = Math.floor(y / g.cell);
    if (r < 0 || c < 0 || r >= d.rows.length || c >= d.cols.length) { out.textContent = ''; return; }
    out.textContent = `${d.rowName} ${showToken(d.vocab[d.rows[r]])} · ${d.colName} ${showToken(d.vocab[d.cols[c]])}: ${fmt(d.sub[r * d.cols.length + c])}`;
  });
}

/** The table shown (the core's rows x cols in display order) as CSV rows: a corner cell naming both axes, then the tokens. */
function shownRows(circuit, vocab) {
  const [rowAxis, colAxis] = circuit.shown.axes;
  const C = circuit.cols.length, d = circuit.shown.data;
  return [[`${rowAxis} \\ ${colAxis}`, ...Array.from(circuit.cols, (j) => vocab[j])],
    ...Array.from(circuit.rows, (r, i) => [vocab[r], ...d.subarray(i * C, (i + 1) * C)])];
}

/** A button that downloads the table a circuit panel shows as CSV (file `name`). */
export function tableButton(label, name, circuit, vocab) {
  return el('div', { class: 'button-row cs-png-skip controls-only' },
    el('button', { type: 'button', class: 'cs-table-csv', onclick: () => downloadCSV(name, shownRows(circuit, vocab)) }, label));
}

/** The core's sentence when its search for the largest or smallest entries stopped short of a large table ('' when exact). */
export function searchNotes(circuit) {
  const notes = [circuit.search.top.note, circuit.search.bottom.note].filter(Boolean);
  return notes.length ? el('p', { class: 'cs-note cs-search-note' }, notes.join(' ')) : '';
}

/** The top-entry tables of a circuit (and for OV its CSV download). */
function tops(kind, circuit, vocab) {
  const tok = (i) => showToken(vocab[i]);
  if (kind === 'qk') {
    const heads = ['dest (query)', 'src (key)', 'score'];
    return [entryTable('Largest QK entries', heads, circuit.top.map((e) => [tok(e.dest), tok(e.src), fmt(e.value)])),
      entryTable('Smallest QK entries', heads, circuit.bottom.slice(0, 6).map((e) => [tok(e.dest), tok(e.src), fmt(e.value)]))];
  }
  const heads = ['src (attended)', 'out (logit)', 'value'];
  return [entryTable('Largest OV entries', heads, circuit.top.map((e) => [tok(e.src), tok(e.out), fmt(e.value)])),
    entryTable('Smallest OV entries', heads, circuit.bottom.slice(0, 6).map((e) => [tok(e.src), tok(e.out), fmt(e.value)])),
    el('button', { type: 'button', onclick: () => downloadCSV('ov-top.csv', [['src', 'out', 'value'], ...circuit.top.map((e) => [vocab[e.src], vocab[e.out], e.value])]) }, 'Download OV top entries (CSV)')];
}

/**
 * The panel object of one circuit: kind 'qk' | 'ov', its title, explanation and axis names.
 * query() answers from the head's shared core call and returns the same data while the model,
 * head, order and zoom stay the same.
 */
export function circuitPanel({ kind, title, explain, rowName, colName }) {
  let last = null;
  return {
    name: `circuits-${kind}`, title, view: 'circuits',

    query({ model, state }) {
      const cfg = model.config;
      const zoom = Number(state.zoom ?? 12);
      if (!cfg.n_layers) return NONE;
      const [l, h] = chosenHead(model, state.head);
      const circuit = circuitOf(model, kind, l, h, tableOrder(state));
      if (last?.circuit === circuit && last.zoom === zoom) return last;
      const rows = Array.from(circuit.rows), cols = Array.from(circuit.cols);
      last = { circuit, zoom, l, h, rows, cols, sub: circuit.shown.data, vocab: model.tokenizer.vocab, rowName, colName, shape: circuit.shape };
      return last;
    },

    render(d) {
      if (d.none) return el('p', { class: 'cs-note' }, 'This model has no attention heads.');
      const [figure, hover, limited] = circuitHeat(d, (g) => `Full ${kind.toUpperCase()} circuit of L${d.l}H${d.h}: ${d.rows.length} × ${d.cols.length} tokens, values ${fmt(g.min)} to ${fmt(g.max)}; the largest entries are in the table below.`);
      return el('div', {}, el('p', { class: 'cs-explain' }, explain), figure, hover, limited,
        tableButton(`Download the ${kind.toUpperCase()} table shown (CSV)`, `circuitscope-${kind}-L${d.l}H${d.h}.csv`, d.circuit, d.vocab),
        searchNotes(d.circuit), el('div', { class: 'cs-scroll' }, tops(kind, d.circuit, d.vocab)));
    },
  };
}
