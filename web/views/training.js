// <cs-training>: how induction heads form during training (seed 004). For char-1l, char-2l and
// char-1l-smeared it plots, from models/<name>.metrics.json, the train and validation loss with
// the phase change marked, the in-context-learning score, every head's prefix-matching score and
// the PCA trajectory of the per-token-loss vectors; a step slider swaps in the training snapshots
// models/snapshots/<name>/step<N>.safetensors and reports the chosen one in the state
// ({snapshot: "step<N>"}) so the other views (e.g. <cs-circuits>) can show that snapshot.
// "Train it yourself" trains a recipe in a Web Worker (web/trainer-worker.js) with a live loss
// curve, pause / resume / stop, and "Download model" (a .safetensors file the page and the CLI load).
// For the induction recipes the worker also scores every head's prefix matching every 10 steps:
// a live chart, and when the run ends the phase change marked as the core's phaseChange() defines it, with
// the seconds from Start to that step (data-phase-change-step, data-phase-change-seconds,
// data-train-seconds on the element, for tests and benchmarks).
// The line charts are uPlot canvases (LineChart in parts/line-chart.js, which links uPlot's stylesheet
// itself); the PCA trajectory is an SVG scatter (trajectoryChart() below says why).
//
// Embed it on any page of the site:
//   <link rel="stylesheet" href="views/views.css">
//   <script type="module" src="views/training.js"></script>
//   <cs-training model="char-2l"></cs-training>
// Attributes (standalone) or state keys (set by the app): model (char-1l | char-2l |
// char-1l-smeared), snapshot ("step<N>"). Changes go out as `cs-state` events.
import { el } from '../parts/dom.js';
import { getModel, getModule, getJSON, getSnapshots, siteUrl } from '../store.js';
import { sequentialColor } from '../parts/colour.js';
import { downloadCSV } from '../parts/download.js';
import { CsView } from './common.js';
import { encodeState, DEFAULT_STATE } from '../store.js';

export const TAG = 'cs-training';
import { LineChart, destroyCharts, stylesReady } from '../parts/line-chart.js';
import { TrainerClient } from '../worker-client.js';

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const COLORS = ['var(--cs-line-1)', 'var(--cs-line-2)', 'var(--cs-line-3)', 'var(--cs-line-4)', 'var(--cs-line-5)', 'var(--cs-line-6)', 'var(--cs-line-7)', 'var(--cs-line-8)'];
let uid = 0;

// Recipes the browser can train: the shipped IOI recipes, inlined, a small induction model on
// repeated random segments, and the one-layer smeared-key character model, whose corpus text and
// vocabulary are fetched from the site and passed inline (the trainer reads no files here).
const IOI_BASE = {
  tokenizer: { kind: 'ioi_symbolic' }, data: { kind: 'ioi_symbolic' },
  optimizer: { lr: 0.01, weight_decay: 1.0, grad_clip: 1.0 }, schedule: { kind: 'onecycle', pct_start: 0.3 },
  steps: 2000, batch_size: 60, seed: 0,
};
const ioiModel = (n_layers, n_heads, pos_embed = 'standard') => ({ n_layers, n_heads, d_model: 32, d_head: 16, n_ctx: 5, pos_embed });
export const BROWSER_RECIPES = {
  'ioi-1l2h': { name: 'ioi-1l2h', description: 'Symbolic IOI, one layer of two heads (solves it).', model: ioiModel(1, 2), ...IOI_BASE },
  'ioi-1l1h': { name: 'ioi-1l1h', description: 'Symbolic IOI, one layer of one head (fails).', model: ioiModel(1, 1), ...IOI_BASE },
  'ioi-2l1h': { name: 'ioi-2l1h', description: 'Symbolic IOI, two layers of one head (composition).', model: ioiModel(2, 1), ...IOI_BASE },
  'ioi-1l2h-nopos': { name: 'ioi-1l2h-nopos', description: 'Symbolic IOI, one layer of two heads, no positional embedding.', model: ioiModel(1, 2, 'none'), ...IOI_BASE },
  'induction-2l': {
    name: 'induction-2l',
    description: 'Induction on random tokens, a segment of 8 to 23 repeated later: 2 layers of 2 heads (phase change near step 250).',
    model: { n_layers: 2, n_heads: 2, d_model: 32, d_head: 16, n_ctx: 48, pos_embed: 'shortformer' },
    tokenizer: { kind: 'synthetic', size: 48 },
    // The segment lengths of the core's behaviour test (tests/cpp/test_train.cpp). With the
    // default 4 to 12, seed 0 formed no induction head in 4,000 steps (prefix matching stayed
    // below 0.05); with these it forms at step 240 (0.03 -> 0.85).
    data: { kind: 'repeated_segment', seq_len: 48, min_len: 8, max_len: 23 },
    optimizer: { lr: 0.01, weight_decay: 0.01, grad_clip: 1.0 },
    schedule: { kind: 'constant', warmup_steps: 50 },
    steps: 600, batch_size: 64, seed: 0,
    scoresEvery: 10,                     // head scores every 10 steps (not part of the recipe)
  },
  'char-1l-smeared': {
    name: 'char-1l-smeared',
    description: 'The shipped one-layer character model with smeared keys, on the corpus (fetches 1.3 MB of text): its induction head forms near step 850.',
    model: { n_layers: 1, n_heads: 4, d_model: 64, d_head: 16, n_ctx: 256, pos_embed: 'shortformer', smeared_keys: true },
    corpus: 'models/corpus/train.txt',   // fetched and passed inline as data.text
    vocabFrom: 'char-1l-smeared',        // the tokenizer of this shipped model, passed inline
    data: { kind: 'text', seq_len: 256, repeat_fraction: 0.5, random_fraction: 0.2 },
    optimizer: { lr: 0.01, weight_decay: 0.01, grad_clip: 1.0 },
    schedule: { kind: 'onecycle', pct_start: 0.15, div_factor: 10, final_div_factor: 100 },
    steps: 1500, batch_size: 16, seed: 0,
    scoresEvery: 10,
  },
};

// Fills in what a recipe fetches from the site: the corpus text and the shipped model's vocabulary.
async function resolveRecipe(recipe) {
  const r = structuredClone(recipe);
  delete r.scoresEvery;
  if (r.corpus) {
    const res = await fetch(siteUrl(r.corpus));
    if (!res.ok) throw new Error(`could not download the corpus (${r.corpus}: HTTP ${res.status})`);
    r.data.text = await res.text();
    delete r.corpus;
  }
  if (r.vocabFrom) {
    const m = await getModel(r.vocabFrom);
    r.tokenizer = { kind: 'char', vocab: m.tokenizer.vocab };
    delete r.vocabFrom;
  }
  return r;
}

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

export class CsTraining extends CsView {
  static view = 'training';
  static attributes = ['model', 'snapshot'];

  disconnectedCallback() {
    super.disconnectedCallback();
    // The worker keeps training in the background only while the view is on the page.
    if (this._client && !this.isConnected) { this._client.terminate(); this._client = null; }
  }

  build() {
    const id = `cs-training-${++uid}`;
    this.classList.add('cs-view');
    const r = (this.refs = {});
    const field = (text, control) => el('div', { class: 'cs-field' }, el('label', { for: control.id }, text), control);
    r.summary = el('p', { role: 'status', 'aria-live': 'polite' });
    r.charts = el('div', { class: 'cs-grid2' });
    r.slider = el('input', { type: 'range', id: `${id}-step`, min: 0, max: 0, step: 1, disabled: true,
      oninput: () => { r.sliderValue.textContent = this.snapLabel(+r.slider.value); },
      onchange: () => this._snapSteps && this.dispatch({ type: 'snapshot', snapshot: +r.slider.value < this._snapSteps.length ? `step${this._snapSteps[+r.slider.value]}` : null }) });
    r.sliderValue = el('output', { for: r.slider.id });
    r.snapInfo = el('p', { class: 'cs-note', role: 'status', 'aria-live': 'polite' });

    r.recipe = el('select', { id: `${id}-recipe` }, Object.entries(BROWSER_RECIPES).map(([k, v]) => el('option', { value: k }, `${k}: ${v.description}`)));
    r.steps = el('input', { type: 'number', id: `${id}-steps`, min: 1, max: 100000, step: 1, value: '' });
    r.recipe.addEventListener('change', () => { r.steps.value = String(BROWSER_RECIPES[r.recipe.value].steps); });
    r.steps.value = String(BROWSER_RECIPES[r.recipe.value].steps);
    r.start = el('button', { type: 'button', onclick: () => this.startTraining() }, 'Start');
    r.pause = el('button', { type: 'button', disabled: true, onclick: () => this.pauseTraining() }, 'Pause');
    r.resume = el('button', { type: 'button', disabled: true, onclick: () => this.resumeTraining() }, 'Resume');
    r.stop = el('button', { type: 'button', disabled: true, onclick: () => this.stopTraining() }, 'Stop');
    r.download = el('button', { type: 'button', disabled: true, onclick: () => this.downloadModel() }, 'Download model');
    r.trainStatus = el('p', { class: 'cs-train-status', role: 'status', 'aria-live': 'polite' }, 'Not started.');
    r.trainChart = el('div', { class: 'cs-train-chart cs-grid2' });
    r.trainResult = el('p', { class: 'cs-note', role: 'status' });
    this.replaceChildren(
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h` },
        el('h2', { id: `${id}-h` }, 'Training: the induction-head phase change'),
        r.summary, r.charts,
        el('h3', {}, 'Snapshots'),
        el('div', { class: 'cs-controls' }, field('Training step of the snapshot to use', r.slider), r.sliderValue),
        r.snapInfo),
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-ht` },
        el('h2', { id: `${id}-ht` }, 'Train it yourself'),
        el('p', { class: 'cs-explain' }, 'Trains in a Web Worker in this page; nothing leaves your machine. The character model fetches the corpus from this site and trains on it here.'),
        el('div', { class: 'cs-controls' }, field('Recipe', r.recipe), field('Steps', r.steps)),
        el('div', { class: 'cs-buttons' }, r.start, r.pause, r.resume, r.stop, r.download),
        r.trainStatus, r.trainChart, r.trainResult));
  }

  async render() {
    if (!this.refs) this.build();
    const r = this.refs;
    const st = this.state;
    const name = this.modelName;
    if (this._metricsFor !== name) {
      this._metricsFor = name;
      this._loading = this.loadModelData(name);
    }
    await this._loading;
    if (this._metricsFor !== name) return;
    const snap = /^step(\d+)$/.exec(String(st.snapshot ?? ''));
    // The snapshot in use, as a solid line on every chart of the shipped run.
    for (const f of r.charts.querySelectorAll('figure.cs-uplot')) f.csChart?.setSnapshot(snap ? Number(snap[1]) : null);
    if (this._snapSteps) {
      const idx = snap ? this._snapSteps.indexOf(+snap[1]) : -1;
      if (document.activeElement !== r.slider) r.slider.value = String(idx >= 0 ? idx : this._snapSteps.length);
      r.sliderValue.textContent = this.snapLabel(idx >= 0 ? idx : this._snapSteps.length);
      r.slider.setAttribute('aria-valuetext', r.sliderValue.textContent);
      if (snap && this._snapShown !== `${name}/${st.snapshot}`) {
        this._snapShown = `${name}/${st.snapshot}`;
        r.snapInfo.textContent = `Loading ${st.snapshot} of ${name}…`;
        try {
          const m = await getModel(name, { snapshot: st.snapshot });
          const hs = m.headScores({ batch: 4 });
          let best = 0;
          for (let i = 1; i < hs.prefix_matching.data.length; i++) if (hs.prefix_matching.data[i] > hs.prefix_matching.data[best]) best = i;
          const H = m.config.n_heads;
          r.snapInfo.replaceChildren(`Using ${st.snapshot} of ${name} (train loss ${fmt(m.info.train_loss)}): its strongest prefix-matching head is L${Math.floor(best / H)}H${best % H} (${fmt(hs.prefix_matching.data[best])}). `,
            el('a', { href: `#${encodeState({ ...DEFAULT_STATE, view: 'circuits', model: name, snapshot: st.snapshot })}` }, 'See its circuits'), '.');
          this.dataset.snapshot = st.snapshot;
        } catch (e) {
          r.snapInfo.textContent = `${st.snapshot} of ${name} is not available: ${e.message}`;
        }
      } else if (!snap) {
        r.snapInfo.textContent = 'Move the slider to use a training snapshot instead of the final model (the choice is kept in the link and used by the other views).';
        this._snapShown = null;
      }
    }
    this.dataset.ready = 'true';
  }

  snapLabel(i) {
    if (!this._snapSteps) return '';
    return i < this._snapSteps.length ? `step ${this._snapSteps[i]}` : 'final model';
  }

  async loadModelData(name) {
    const r = this.refs;
    r.summary.textContent = `Loading the metrics of ${name}…`;
    this._cs = await getModule();   // the core's phaseChange()
    destroyCharts(r.charts);
    r.charts.replaceChildren();
    this._snapSteps = null;
    let model = null;
    try { model = await getModel(name); } catch { /* not trained yet */ }
    const metrics = await getJSON(`models/${name}.metrics.json`);
    await stylesReady;   // uPlot's stylesheet, so the charts are laid out right from the start
    if (this._metricsFor !== name) return;
    this.renderCharts(name, metrics, model?.config?.n_heads);
    // The snapshots the site has (the header's snapshot picker lists the same).
    const snaps = (await getSnapshots(name)).map((s) => Number(s.replace(/^step/, ''))).sort((a, b) => a - b);
    if (this._metricsFor !== name) return;
    this._snapSteps = snaps.length ? snaps : null;
    r.slider.disabled = !snaps.length;
    r.slider.max = String(snaps.length);  // the last position is the final model
    if (!snaps.length) r.snapInfo.textContent = model ? `${name} lists no training snapshots.` : `${name} is not trained yet: no snapshots to show.`;
  }

  renderCharts(name, metrics, nHeads) {
    const r = this.refs;
    const recs = Array.isArray(metrics?.records) ? metrics.records : null;
    if (!recs || !recs.length) {
      r.summary.replaceChildren(el('span', { class: 'cs-unavailable', dataset: { missing: 'metrics' } },
        `${name} is not trained yet: models/${name}.metrics.json is not available. Its curves appear here once the model zoo is trained and the site rebuilt.`));
      this.dataset.charts = 'missing';
      return;
    }
    const steps = recs.map((x) => x.step);
    const cs = this._cs;
    const n = recs[0].prefix_matching?.length ?? 0;
    const H = nHeads > 0 ? nHeads : Math.max(1, n);
    const pc = cs.phaseChange(recs, { nHeads: H });
    const headName = (i) => (n % H === 0 ? `L${Math.floor(i / H)}H${i % H}` : `head ${i}`);
    const marker = pc ? { x: pc.step, label: `step ${pc.step}`, legend: `phase change (step ${pc.step})` } : null;
    r.summary.replaceChildren(pc
      ? `Phase change at step ${pc.step}: the first record where the best head (then ${headName(pc.layer * H + pc.head)}) passes half (${fmt(pc.threshold)}) of the final best prefix-matching score ${fmt(pc.final)} (the core's definition, the report's too, over the ${recs.length} records of ${name}.metrics.json; dashed line in every chart).`
      : recs.at(-1)?.prefix_matching?.length
        ? `No phase change: no head's final prefix-matching score reaches ${cs.minInductionScore}, so no induction head formed in ${name}.`
        : `No prefix-matching scores in ${name}.metrics.json, so no phase change can be marked.`);
    this.dataset.phaseChange = pc ? String(pc.step) : '';
    const line = (series, options, ys) => {
      const c = new LineChart({ series, ...options });
      c.setData(steps, ys);
      return c.element;
    };
    const charts = [
      line([
        { name: 'train loss', color: COLORS[0] },
        { name: 'validation loss', color: COLORS[1] },
        { name: 'loss on repeated tokens', color: COLORS[2], dashed: true },
      ], { title: 'Loss (nats per token)', xLabel: 'training step', yLabel: 'loss', marker },
      [recs.map((x) => x.train_loss), recs.map((x) => x.valid_loss), recs.map((x) => x.repeated_loss)]),
      line([{ name: 'ICL score', color: COLORS[3] }],
        { title: `In-context learning score (loss at token ${metrics.icl_indices?.late ?? 'late'} − token ${metrics.icl_indices?.early ?? 'early'})`, xLabel: 'training step', yLabel: 'nats', marker },
        [recs.map((x) => x.icl)]),
      line(Array.from({ length: n }, (_, i) => ({ name: headName(i), color: COLORS[i % COLORS.length], dashed: i >= COLORS.length })),
        { title: 'Prefix-matching (induction) score per head', xLabel: 'training step', yLabel: 'score', marker, yMin: 0 },
        Array.from({ length: n }, (_, i) => recs.map((x) => x.prefix_matching?.[i]))),
    ];
    const pca = metrics.pca;
    if (pca?.components?.length >= 2) {
      const [c1, c2] = pca.components;
      const maxStep = Math.max(...steps) || 1;
      const pi = pc ? steps.indexOf(pc.step) : -1;
      charts.push(trajectoryChart(c1.map((x, i) => [x, c2[i]]), {
        title: `Per-token-loss PCA trajectory (PC1 ${fmt(100 * (pca.explained_variance?.[0] ?? NaN), 0)}%, PC2 ${fmt(100 * (pca.explained_variance?.[1] ?? NaN), 0)}% of variance)`,
        xLabel: 'PC1', yLabel: 'PC2', colorOf: (i) => sequentialColor(steps[i] / maxStep),
        pointLabel: (i) => `step ${steps[i]}`, highlight: pi >= 0 ? [c1[pi], c2[pi]] : null,
        caption: `Points coloured by step: pale = early, dark = late (step ${maxStep}).${pi >= 0 ? ` Circled: the phase change, step ${pc.step}.` : ''}`,
      }));
    }
    destroyCharts(r.charts);
    r.charts.replaceChildren(...charts,
      el('div', {}, el('button', { type: 'button', onclick: () => downloadCSV(`${name}-metrics.csv`, recs.map((x) => ({ step: x.step, train_loss: x.train_loss, valid_loss: x.valid_loss, icl: x.icl, repeated_loss: x.repeated_loss, prefix_matching: (x.prefix_matching ?? []).join(' ') }))) }, 'Download the records (CSV)')));
    this.dataset.charts = String(charts.length);
  }

  // ---- Train it yourself -------------------------------------------------------------------

  setButtons(state) {
    const r = this.refs;
    r.start.disabled = state === 'running' || state === 'paused' || state === 'starting';
    r.pause.disabled = state !== 'running';
    r.resume.disabled = state !== 'paused';
    r.stop.disabled = !(state === 'running' || state === 'paused');
    r.download.disabled = !(state === 'running' || state === 'paused' || state === 'stopped');
    r.recipe.disabled = r.steps.disabled = !r.start.disabled ? false : true;
    this.dataset.trainState = state;
  }

  async startTraining() {
    const r = this.refs;
    // The clock of the run starts at the click: fetching the corpus, starting the worker and
    // its module are part of the wait for the phase change.
    const startedAt = performance.timeOrigin + performance.now();
    this._client?.terminate();
    const key = r.recipe.value;
    this.dataset.trainStep = '0';
    this.setButtons('starting');
    r.trainStatus.textContent = BROWSER_RECIPES[key].corpus ? `Downloading the corpus for ${key}…` : `Starting ${key}…`;
    let recipe;
    try {
      recipe = await resolveRecipe(BROWSER_RECIPES[key]);
    } catch (e) {
      this.setButtons('failed');
      r.trainStatus.textContent = `Could not prepare ${key}: ${e.message}`;
      return;
    }
    const steps = Math.max(1, Math.min(100000, Math.round(Number(r.steps.value)) || recipe.steps));
    recipe.steps = steps;
    this._history = [];
    this._scores = [];
    this._startedAt = startedAt;
    this._phase = null;
    this._trainHeads = null;
    for (const k of ['phaseChangeStep', 'phaseChangeSeconds', 'trainSeconds']) delete this.dataset[k];
    this._trainKey = key;
    this._t0 = null;
    this._lastAt = null;
    this._stepsAt0 = 0;
    this._lastStep = 0;
    this.dataset.trainStep = '0';
    delete this.dataset.trainedLoaded;
    r.trainResult.textContent = '';
    destroyCharts(r.trainChart);
    r.trainChart.replaceChildren();
    this._live = null;
    this.setButtons('starting');
    r.trainStatus.textContent = `Starting ${key}…`;
    const client = (this._client = new TrainerClient({
      onMetrics: (m) => {
        if (client !== this._client) return;
        if (this._t0 === null) { this._t0 = performance.now(); this._stepsAt0 = m.history[0]?.step - 1 || 0; }
        this._lastAt = performance.now();
        this._history.push(...m.history);
        for (const rec of m.scores ?? []) this._scores.push({ ...rec, seconds: (rec.time - this._startedAt) / 1000 });
        if (m.scoresError) r.trainResult.textContent = `Head scores are not available for this model: ${m.scoresError}`;
        this._lastStep = m.step;
        // The step count is current at once (the chart waits for the next frame), so a pause that
        // arrives right after this message reports the step the worker really stopped at.
        this.dataset.trainStep = String(m.step);
        this.scheduleTrainDraw();
      },
      onStopped: ({ step, reason }) => {
        if (client !== this._client) return;
        const seconds = (performance.timeOrigin + performance.now() - this._startedAt) / 1000;
        this.setButtons('stopped');
        r.trainStatus.textContent = `${reason === 'finished' ? 'Finished' : 'Stopped'} at step ${step} of ${steps}, ${fmt(seconds, 1)} s after Start. Download the model to open it here or with the CLI (circuitscope inspect FILE).`;
        this.dataset.trainSeconds = seconds.toFixed(2);
        this.markPhaseChange();
        this.checkTrained();
      },
      onError: (e) => {
        if (client !== this._client) return;
        this.setButtons('failed');
        r.trainStatus.textContent = `Training failed: ${e.message}`;
      },
    }));
    try {
      const started = await client.start(recipe, { metricsEvery: 10, scoresEvery: BROWSER_RECIPES[key].scoresEvery ?? 0 });
      if (client === this._client) this._trainHeads = started.config?.n_heads;
      if (client === this._client && client.state === 'running') this.setButtons('running');
    } catch (e) {
      this.setButtons('failed');
      r.trainStatus.textContent = `Could not start: ${e.message}`;
    }
  }

  scheduleTrainDraw() {
    if (this._drawFrame) return;
    this._drawFrame = requestAnimationFrame(() => {
      this._drawFrame = 0;
      const r = this.refs;
      const h = this._history;
      const last = h.at(-1);
      if (!last) return;
      // Steps per second between the first and the latest metrics message (not up to now, so a
      // redraw after the run ends does not lower it).
      const secs = ((this._lastAt ?? performance.now()) - this._t0) / 1000;
      const rate = secs > 0 ? (last.step - this._stepsAt0) / secs : NaN;
      this._rate = rate;
      const total = BROWSER_RECIPES[this._trainKey] ? Number(this.refs.steps.value) : NaN;
      if (this._client?.state === 'running' || this._client?.state === 'starting') {
        r.trainStatus.textContent = `Step ${last.step} of ${total} · loss ${fmt(last.loss, 3)} · ${fmt(rate, 0)} steps/s`;
      }
      this.dataset.trainStep = String(last.step);
      this.dataset.stepsPerSecond = String(rate);
      // Thin long histories to at most ~600 points for drawing. The charts are made once per run
      // (again only if the series change) and get new data each frame.
      const every = Math.max(1, Math.ceil(h.length / 600));
      const thin = h.filter((_, i) => i % every === 0 || i === h.length - 1);
      const live = (this._live ??= {});
      const repeated = thin.some((x) => x.loss_repeated >= 0);
      const lossKey = repeated ? 'repeated' : 'plain';
      if (live.lossKey !== lossKey) {
        live.loss?.destroy();
        live.loss?.element.remove();
        live.lossKey = lossKey;
        const series = [{ name: 'batch loss', color: COLORS[0] }];
        if (repeated) series.push({ name: 'loss on repeated tokens', color: COLORS[1] }, { name: 'loss on fresh tokens', color: COLORS[2], dashed: true });
        live.loss = new LineChart({ title: `Training ${this._trainKey}: loss per step`, xLabel: 'step', yLabel: 'loss (nats)', series });
        r.trainChart.prepend(live.loss.element);
      }
      const pos = (v) => (v >= 0 ? v : null);
      live.loss.setData(thin.map((x) => x.step), repeated
        ? [thin.map((x) => x.loss), thin.map((x) => pos(x.loss_repeated)), thin.map((x) => pos(x.loss_fresh))]
        : [thin.map((x) => x.loss)]);
      const sc = this._scores;
      if (sc?.length) {
        const n = sc[0].prefix_matching.length;
        const H = this._trainHeads ?? n;
        if (!live.scores || live.heads !== n) {
          live.scores?.destroy();
          live.scores?.element.remove();
          live.heads = n;
          live.scores = new LineChart({
            title: 'Prefix-matching (induction) score per head', xLabel: 'step', yLabel: 'score', yMin: 0,
            series: Array.from({ length: n }, (_, i) => ({
              name: n % H === 0 ? `L${Math.floor(i / H)}H${i % H}` : `head ${i}`, color: COLORS[i % COLORS.length], dashed: i >= COLORS.length,
            })),
          });
          r.trainChart.append(live.scores.element);
        }
        const pc = this._phase;
        live.scores.setMarker(pc ? { x: pc.step, label: `step ${pc.step}`, legend: `phase change (step ${pc.step}, ${fmt(pc.seconds, 1)} s)` } : null);
        live.scores.setData(sc.map((x) => x.step), Array.from({ length: n }, (_, i) => sc.map((x) => x.prefix_matching[i])));
      }
    });
  }

  /** When a run ends: its phase change, as the core defines it, over the head scores it recorded. */
  async markPhaseChange() {
    const sc = this._scores;
    const cs = await getModule();
    const H = this._trainHeads ?? sc?.[0]?.prefix_matching.length;
    const pc = sc?.length ? cs.phaseChange(sc, { nHeads: H }) : null;
    if (!pc) {
      this._phase = null;
      if (sc?.length) this.refs.trainStatus.append(` No phase change: no head's final prefix-matching score reached ${cs.minInductionScore}.`);
      return;
    }
    const rec = sc[pc.record];
    this._phase = { ...pc, seconds: rec.seconds };
    this.dataset.phaseChangeStep = String(pc.step);
    this.dataset.phaseChangeSeconds = rec.seconds.toFixed(2);
    this.refs.trainStatus.append(` Phase change at step ${pc.step}, ${fmt(rec.seconds, 1)} s after Start: the first record where the best head, L${pc.layer}H${pc.head}, passes half (${fmt(pc.threshold)}) of the final best prefix-matching score ${fmt(pc.final)}.`);
    this.scheduleTrainDraw();
  }

  async pauseTraining() {
    if (!this._client) return;
    const { step } = await this._client.pause();
    this.setButtons('paused');
    this.refs.trainStatus.textContent = `Paused at step ${step}.`;
  }

  async resumeTraining() {
    if (!this._client) return;
    await this._client.resume();
    this.setButtons('running');
  }

  async stopTraining() {
    if (!this._client) return;
    await this._client.stop();
  }

  async downloadModel() {
    if (!this._client) return;
    const bytes = await this._client.save();
    const name = `${this._trainKey}-step${this._lastStep ?? 0}.safetensors`;
    const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
    const a = el('a', { href: url, download: name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 5000);
    this.checkTrained(bytes);
  }

  /** Opens the trained model in this page's module and says how it does. */
  async checkTrained(bytes) {
    const r = this.refs;
    try {
      bytes ??= await this._client.save();
      const cs = await getModule();
      const m = cs.load(bytes);
      try {
        if (this._trainKey.startsWith('ioi')) {
          const ev = m.ioiEvaluate();
          r.trainResult.textContent = `The trained model (${bytes.length} bytes) opens in the page: ${fmt(100 * ev.accuracy, 0)}% of the 60 IOI sequences right.`;
        } else {
          const hs = m.headScores({ batch: 8 });
          let best = 0;
          for (let i = 1; i < hs.prefix_matching.data.length; i++) if (hs.prefix_matching.data[i] > hs.prefix_matching.data[best]) best = i;
          const H = m.config.n_heads;
          r.trainResult.textContent = `The trained model (${bytes.length} bytes) opens in the page: strongest prefix-matching head L${Math.floor(best / H)}H${best % H} (${fmt(hs.prefix_matching.data[best])}).`;
        }
        this.dataset.trainedLoaded = 'true';
      } finally {
        m.delete();
      }
    } catch (e) {
      r.trainResult.textContent = `The trained model could not be opened: ${e.message}`;
    }
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsTraining);
