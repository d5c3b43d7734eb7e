// <cs-circuits>: one head's circuits, as the framework paper reads them (seeds 000 and 003): the
// full QK table (which source token a destination token attends to) and the full OV table (what
// attending to a source token does to the output logits) as sortable, zoomable heatmaps with
// their top entries; skip-trigrams and the "bugs" they force (1-layer models); the eigenvalues of
// both circuits in the complex plane with the copying statistic; the Q/K/V composition scores
// against their random baseline; and the path expansion of one prediction on text you type.
//
// Embed it on any page of the site:
//   <link rel="stylesheet" href="views/views.css">
//   <script type="module" src="views/circuits.js"></script>
//   <cs-circuits model="char-2l" head="L1H0"></cs-circuits>
// Attributes (standalone) or state keys (set by the app): model, head ("L{l}H{h}"), snapshot
// ("step1000": a training snapshot of that model, as <cs-training> reports it), sort (token |
// row | col | both), top (all | 10 | 20 | 40 | 80: rows and columns of highest variance), zoom
// (cell size in pixels), text (the text of the path expansion). Every control writes to the
// page's store (store.js).
import { el } from '../parts/dom.js';
import { heatmap } from '../parts/heatmap.js';
import { getModel } from '../store.js';
import { downloadCSV } from '../parts/download.js';
import { CsView } from './common.js';
import { showPanel } from '../panels/panel.js';
import composition from '../panels/circuits/composition.js';

export const TAG = 'cs-circuits';
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
let uid = 0;

/** A vocabulary entry made visible: space as ␣, newline as \n, tab as \t, other controls as \u…. */
export function showToken(s) {
  return String(s).replace(/ /g, '␣').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r')
    .replace(/[\u0000-\u001f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function parseHead(v, cfg) {
  const m = /^L(\d+)H(\d+)$/i.exec(String(v ?? ''));
  let l = m ? +m[1] : cfg.n_layers - 1;
  let h = m ? +m[2] : 0;
  if (!(l >= 0 && l < cfg.n_layers)) l = Math.max(0, cfg.n_layers - 1);
  if (!(h >= 0 && h < cfg.n_heads)) h = 0;
  return [l, h];
}

/** Row/column orders and subsets of a [R, C] table. */
function arrange(table, sort, top) {
  const [R, C] = table.shape;
  const d = table.data;
  const rowMean = new Float64Array(R), colMean = new Float64Array(C), rowVar = new Float64Array(R), colVar = new Float64Array(C);
  for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) { rowMean[i] += d[i * C + j] / C; colMean[j] += d[i * C + j] / R; }
  for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) {
    rowVar[i] += (d[i * C + j] - rowMean[i]) ** 2;
    colVar[j] += (d[i * C + j] - colMean[j]) ** 2;
  }
  let rows = [...Array(R).keys()];
  let cols = [...Array(C).keys()];
  const n = Number(top);
  if (n > 0 && n < R) rows = rows.sort((a, b) => rowVar[b] - rowVar[a]).slice(0, n).sort((a, b) => a - b);
  if (n > 0 && n < C) cols = cols.sort((a, b) => colVar[b] - colVar[a]).slice(0, n).sort((a, b) => a - b);
  if (sort === 'row' || sort === 'both') rows.sort((a, b) => rowMean[b] - rowMean[a]);
  if (sort === 'col' || sort === 'both') cols.sort((a, b) => colMean[b] - colMean[a]);
  const sub = new Float32Array(rows.length * cols.length);
  rows.forEach((r, i) => cols.forEach((c, j) => { sub[i * cols.length + j] = d[r * C + c]; }));
  return { rows, cols, sub };
}

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

export class CsCircuits extends CsView {
  static view = 'circuits';
  static attributes = ['model', 'head', 'snapshot', 'sort', 'top', 'zoom', 'text'];

  build() {
    const id = `cs-circuits-${++uid}`;
    this.classList.add('cs-view');
    const r = (this.refs = {});
    const field = (text, control) => el('div', { class: 'cs-field' }, el('label', { for: control.id }, text), control);
    r.head = el('select', { id: `${id}-head`, onchange: () => this.update({ head: r.head.value }) });
    r.sort = el('select', { id: `${id}-sort`, onchange: () => this.update({ sort: r.sort.value }) },
      el('option', { value: 'token' }, 'by token (vocabulary order)'),
      el('option', { value: 'row' }, 'rows by row mean'),
      el('option', { value: 'col' }, 'columns by column mean'),
      el('option', { value: 'both' }, 'rows and columns by mean'));
    r.top = el('select', { id: `${id}-top`, onchange: () => this.update({ top: r.top.value }) },
      ['all', '80', '40', '20', '10'].map((v) => el('option', { value: v }, v === 'all' ? 'all tokens' : `top ${v} by variance`)));
    r.zoom = el('input', { type: 'range', id: `${id}-zoom`, min: 3, max: 28, step: 1, oninput: () => this.update({ zoom: Number(r.zoom.value) }) });
    r.snapshot = el('p', { class: 'cs-note', role: 'status' });
    r.status = el('p', { class: 'cs-note', role: 'status', 'aria-live': 'polite' });
    r.unavailable = el('p', { class: 'cs-unavailable', role: 'status', hidden: true });
    r.qkCanvas = el('canvas', { width: 10, height: 10, role: 'img', tabindex: 0 });
    r.ovCanvas = el('canvas', { width: 10, height: 10, role: 'img', tabindex: 0 });
    r.qkHover = el('p', { class: 'cs-hover', 'aria-live': 'polite' });
    r.ovHover = el('p', { class: 'cs-hover', 'aria-live': 'polite' });
    r.qkTop = el('div', { class: 'cs-scroll' });
    r.ovTop = el('div', { class: 'cs-scroll' });
    r.trigrams = el('div');
    r.eigen = el('div', { class: 'cs-figures' });
    r.composition = el('section');
    r.text = el('textarea', { id: `${id}-text`, rows: 2, spellcheck: 'false', autocomplete: 'off',
      oninput: () => this.update({ text: r.text.value }) });
    r.attribution = el('div');
    const heat = (title, canvas, hover, top, explain) => el('div', {},
      el('h3', {}, title), el('p', { class: 'cs-explain' }, explain),
      el('div', { class: 'cs-heat-wrap' }, canvas), hover, top);
    this.replaceChildren(
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h` },
        el('h2', { id: `${id}-h` }, 'Circuits of one head'),
        el('div', { class: 'cs-controls' }, field('Head', r.head), field('Sort', r.sort), field('Show', r.top), field('Zoom (cell size)', r.zoom)),
        r.snapshot, r.status, r.unavailable,
        el('div', { class: 'cs-grid2' },
          heat('Full QK circuit', r.qkCanvas, r.qkHover, r.qkTop, 'W_E W_Q W_Kᵀ W_Eᵀ: rows are the destination (query) token, columns the source (key) token; red = attends more, blue = less (unscaled scores). For a layer-1 head this is the direct-path term only.'),
          heat('Full OV circuit', r.ovCanvas, r.ovHover, r.ovTop, 'W_E W_V W_O W_U: rows are the attended source token, columns the output logit it raises (red) or lowers (blue).')),
        el('h3', {}, 'Eigenvalues'),
        el('p', { class: 'cs-explain' }, 'Positive real eigenvalues of the OV circuit mean a copying head (attending to a token raises that token); the copying statistic is Re(Σλ)/Σ|λ|.'),
        r.eigen,
        el('h3', {}, 'Skip-trigrams'),
        r.trigrams),
      r.composition,
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-ha` },
        el('h2', { id: `${id}-ha` }, 'Path expansion of one prediction'),
        field('Text (the prediction after its last token is split into paths)', r.text),
        r.attribution));
    const hover = (canvas, out, kind) => {
      const show = (ev) => {
        const g = this._grid?.[kind];
        if (!g) return;
        const rect = canvas.getBoundingClientRect();
        const x = (ev.clientX - rect.left) * (canvas.width / rect.width) - g.x0;
        const y = (ev.clientY - rect.top) * (canvas.height / rect.height) - g.y0;
        const c = Math.floor(x / g.cell), rr = Math.floor(y / g.cell);
        if (rr < 0 || c < 0 || rr >= g.rowsIdx.length || c >= g.colsIdx.length) { out.textContent = ''; return; }
        out.textContent = `${g.rowName} ${showToken(g.vocab[g.rowsIdx[rr]])} · ${g.colName} ${showToken(g.vocab[g.colsIdx[c]])}: ${fmt(g.sub[rr * g.colsIdx.length + c])}`;
      };
      canvas.addEventListener('mousemove', show);
    };
    hover(r.qkCanvas, r.qkHover, 'qk');
    hover(r.ovCanvas, r.ovHover, 'ov');
  }

  async render() {
    if (!this.refs) this.build();
    const r = this.refs;
    const st = this.state;
    const name = this.modelName;
    r.sort.value = st.sort ?? 'token';
    r.top.value = st.top ?? '40';
    const zoom = st.zoom ?? 12;
    r.zoom.value = String(zoom);
    const snapshot = st.snapshot ?? '';
    const seq = (this._seq = (this._seq || 0) + 1);
    let model;
    try {
      model = await getModel(name, snapshot ? { snapshot } : {});
    } catch (e) {
      if (seq !== this._seq) return;
      r.unavailable.textContent = `${name}${snapshot ? ` (${snapshot})` : ''} is not available: ${e.message} It may not be trained yet.`;
      r.unavailable.hidden = false;
      this.dataset.ready = 'unavailable';
      return;
    }
    if (seq !== this._seq) return;
    r.unavailable.hidden = true;
    r.snapshot.replaceChildren(...(snapshot
      ? [`Showing ${name} at training ${snapshot.replace('step', 'step ')}. `, el('button', { type: 'button', onclick: () => this.dispatch({ type: 'snapshot', snapshot: null }) }, 'Use the final model')]
      : [`The final trained ${name}.`]));
    const cfg = model.config;
    const vocab = model.tokenizer.vocab;
    if (cfg.n_layers === 0) {
      r.head.replaceChildren();
      delete r.head.dataset.key;   // the next model with heads lists them again
      this._headKey = null;        // and draws its tables again
      r.status.textContent = `${name} has no attention layers: its logits are the direct path W_E W_U alone (a bigram table), shown below as the path expansion.`;
    }
    const [l, h] = cfg.n_layers ? parseHead(st.head, cfg) : [0, 0];
    if (cfg.n_layers) {
      const key = `${cfg.n_layers}x${cfg.n_heads}`;
      if (r.head.dataset.key !== key) {
        r.head.replaceChildren(...Array.from({ length: cfg.n_layers * cfg.n_heads }, (_, i) => {
          const v = `L${Math.floor(i / cfg.n_heads)}H${i % cfg.n_heads}`;
          return el('option', { value: v }, v);
        }));
        r.head.dataset.key = key;
      }
      r.head.value = `L${l}H${h}`;
      this.renderHead(model, name, snapshot, l, h, vocab, r.sort.value, r.top.value, zoom);
    } else {
      for (const k of ['qkTop', 'ovTop', 'trigrams', 'eigen']) r[k].replaceChildren();
      for (const c of [r.qkCanvas, r.ovCanvas]) { c.width = 1; c.height = 1; }
    }
    this._modelKey = `${name}/${snapshot}`;
    await showPanel(r.composition, composition, name);
    const defaultText = model.tokenizer.kind === 'word' ? 'A B B <MID>' : 'Alice was beginning to get very tired. Alice was beginning to get very t';
    if (document.activeElement !== r.text) r.text.value = st.text || defaultText;
    this.renderAttribution(model, st.text || defaultText);
    this.dataset.ready = 'true';
  }

  renderHead(model, name, snapshot, l, h, vocab, sort, top, zoom) {
    const r = this.refs;
    const key = `${name}/${snapshot}/${l}/${h}`;
    if (this._headKey !== key) {
      this._headKey = key;
      this._qk = model.qk(l, h, { k: 12 });
      this._ov = model.ov(l, h, { k: 12 });
      this._eigen = model.eigen(l, h);
      this._trigrams = model.config.n_layers === 1 ? model.skipTrigrams(l, h, { k: 15, maxBugs: 10 }) : null;
      this.renderTops(vocab);
    }
    r.status.textContent = `L${l}H${h} of ${name}: ${vocab.length} tokens. Hover a cell for its value; the tables list the largest and smallest entries.`;
    const labelled = zoom >= 10;
    this._grid = {};
    for (const [kind, circuit, canvas, rowName, colName] of [['qk', this._qk, r.qkCanvas, 'dest', 'src'], ['ov', this._ov, r.ovCanvas, 'src', 'out']]) {
      const { rows, cols, sub } = arrange(circuit.table, sort, top === 'all' ? 0 : top);
      const g = heatmap(canvas, { data: sub, rows: rows.length, cols: cols.length }, {
        palette: 'diverging', cell: zoom,
        labelsX: labelled ? cols.map((c) => showToken(vocab[c])) : null,
        labelsY: labelled ? rows.map((i) => showToken(vocab[i])) : null,
      });
      canvas.setAttribute('aria-label', `Full ${kind.toUpperCase()} circuit of L${l}H${h}: ${rows.length} × ${cols.length} tokens, values ${fmt(g.min)} to ${fmt(g.max)}; the largest entries are in the table below.`);
      this._grid[kind] = { ...g, rowsIdx: rows, colsIdx: cols, sub, vocab, rowName, colName };
    }
    canvasData(this, 'qk', this._qk, vocab);
  }

  renderTops(vocab) {
    const r = this.refs;
    const tok = (i) => showToken(vocab[i]);
    const table = (caption, heads, rows) => el('table', { class: 'cs-table' }, el('caption', {}, caption),
      el('thead', {}, el('tr', {}, heads.map((x) => el('th', { scope: 'col' }, x)))),
      el('tbody', {}, rows.map((row) => el('tr', {}, row.map((c, i) => el('td', { class: i === row.length - 1 ? 'num' : 'mono' }, c))))));
    r.qkTop.replaceChildren(
      table('Largest QK entries', ['dest (query)', 'src (key)', 'score'], this._qk.top.map((e) => [tok(e.dest), tok(e.src), fmt(e.value)])),
      table('Smallest QK entries', ['dest (query)', 'src (key)', 'score'], this._qk.bottom.slice(0, 6).map((e) => [tok(e.dest), tok(e.src), fmt(e.value)])));
    r.ovTop.replaceChildren(
      table('Largest OV entries', ['src (attended)', 'out (logit)', 'value'], this._ov.top.map((e) => [tok(e.src), tok(e.out), fmt(e.value)])),
      table('Smallest OV entries', ['src (attended)', 'out (logit)', 'value'], this._ov.bottom.slice(0, 6).map((e) => [tok(e.src), tok(e.out), fmt(e.value)])),
      el('button', { type: 'button', onclick: () => downloadCSV('ov-top.csv', [['src', 'out', 'value'], ...this._ov.top.map((e) => [vocab[e.src], vocab[e.out], e.value])]) }, 'Download OV top entries (CSV)'));
    r.eigen.replaceChildren(eigenPlot(this._eigen.ov, 'OV eigenvalues'), eigenPlot(this._eigen.qk, 'QK eigenvalues'));
    this.dataset.ovCopying = String(this._eigen.ov.copying);
    if (!this._trigrams) {
      r.trigrams.replaceChildren(el('p', { class: 'cs-note' }, 'Skip-trigrams read a head as "source … destination → output" directly from its QK and OV tables: that reading is exact for 1-layer models only. Choose char-1l, char-1l-smeared or an IOI 1-layer model.'));
      return;
    }
    const t = this._trigrams;
    r.trigrams.replaceChildren(
      el('p', { class: 'cs-explain' }, 'The strongest "source … destination → output" triples of this head (score in nats: centred QK / √d_head + centred OV). A "bug": two triples sharing a source force a crossed triple the head cannot avoid, because it is a product of two tables.'),
      table('Top skip-trigrams', ['source …', 'destination →', 'output', 'score'], t.top.map((x) => [tok(x.source), tok(x.dest), tok(x.out), fmt(x.score)])),
      t.bugs.length
        ? table('Bugs (crossed triples)', ['source …', 'destination →', 'leaked output', 'instead of', 'p(own)', 'p(leak)', 'p(leak) without source', 'score'],
          t.bugs.map((b) => [tok(b.source), tok(b.dest), tok(b.out), tok(b.own_out), fmt(b.p_own, 3), fmt(b.p_crossed, 3), fmt(b.p_crossed_without_source, 3), fmt(b.score)]))
        : el('p', { class: 'cs-note' }, 'No crossed triples among the top skip-trigrams of this head.'));
  }

  renderAttribution(model, text) {
    const r = this.refs;
    const key = `${this._modelKey}/${text}`;
    if (this._attrKey === key) return;
    this._attrKey = key;
    let a;
    try {
      if (!text) throw new Error('Type some text.');
      a = model.attribution(-1, { tokens: text });
    } catch (e) {
      r.attribution.replaceChildren(el('p', { class: 'cs-message', role: 'alert' }, `Cannot expand this text: ${e.message}`));
      return;
    }
    const vocab = model.tokenizer.vocab;
    const V = a.logits.shape[0];
    const best = a.predicted;   // the core's prediction, and its paths largest first (path_order)
    const partVals = a.names.map((n, i) => ({ name: n, value: a.parts.data[i * V + best] }));
    const pathVals = Array.from(a.path_order.subarray(0, 8), (i) => ({ name: a.path_names[i], value: a.paths.data[i * V + best] }));
    const bound = Math.max(1e-6, ...partVals.map((p) => Math.abs(p.value)), ...pathVals.map((p) => Math.abs(p.value)));
    const label = { embed: 'direct path (embedding → unembedding)', pos_embed: 'positional embedding', bias: 'biases' };
    const rows = (list, named) => list.map((p) => el('tr', {},
      el('th', { scope: 'row' }, named ? (label[p.name] ?? `head ${p.name}`) : p.name.replace('<-', ' ← ')),
      el('td', { class: 'num' }, fmt(p.value)),
      el('td', {}, barSvg(p.value, bound))));
    r.attribution.replaceChildren(
      el('p', {}, `After the last token "${showToken(vocab[a.token])}" (position ${a.pos}) the model predicts `,
        el('strong', { class: 'mono' }, showToken(vocab[best])), ` (logit ${fmt(a.logits.data[best])}). Its logit is the sum of:`),
      el('table', { class: 'cs-table', dataset: { part: 'parts' } }, el('tbody', {}, rows(partVals, true))),
      el('h3', {}, 'Largest virtual paths (one composition step deep)'),
      pathVals.length
        ? el('table', { class: 'cs-table' }, el('tbody', {}, rows(pathVals, false)))
        : el('p', { class: 'cs-note' }, 'No virtual paths: this model has no attention heads.'));
  }
}

/** Records the QK table's shape on the element for tests and scripts (no user data). */
function canvasData(view, kind, circuit) {
  view.dataset[`${kind}Shape`] = circuit.shape.join('x');
}

/** A diverging bar as a tiny SVG (blue negative, red positive). */
function barSvg(v, bound) {
  const W = 160, Hh = 12;
  const frac = Math.min(1, Math.abs(v) / bound);
  const x = v < 0 ? W / 2 - frac * W / 2 : W / 2;
  return el('svg', { class: 'cs-chart', viewBox: `0 0 ${W} ${Hh}`, width: W, height: Hh, role: 'img', 'aria-label': fmt(v) },
    el('svg:rect', { x, y: 1, width: Math.max(0.5, frac * W / 2), height: Hh - 2, fill: v < 0 ? '#2166ac' : '#b2182b' }),
    el('svg:line', { class: 'axis', x1: W / 2, x2: W / 2, y1: 0, y2: Hh }));
}

if (!customElements.get(TAG)) customElements.define(TAG, CsCircuits);
