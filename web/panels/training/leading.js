// Gradient leading terms over training (seed 002): how closely the learned tables follow the
// corpus statistics that the first gradient steps predict, at every training snapshot of the
// shipped run and for the final model. For each, the core's corpusStats() over the text
// models/index.json names for the model (statistics_text: the character models' training corpus,
// the sub-word models' held-out text; the core's window, 8, as the Reproduction report measures it): the cosine
// of the row-centred direct path W_E W_U with the bigram term, and of each head's row-centred OV
// table with the context term. A chart over training steps, the state's snapshot marked, and the
// numbers as CSV. Above it, when models/index.json names a curve for the model ("leading":
// char-1l.leading.json or bpe-1l.leading.json, written by `circuitscope leading`, the curve the report's leading-terms row
// reads), the seed's own setting: every step of full-batch gradient descent from small weights,
// drawn as the file gives it.
import { el } from '../../parts/dom.js';
import { getModel, getModule, getJSON, getModelIndex, siteUrl } from '../../store.js';
import { definePanel } from '../panel.js';
import { LineChart, destroyCharts } from '../../parts/line-chart.js';
import { downloadCSV } from '../../parts/download.js';
import { shippedRun, COLORS, headLabel } from './shipped.js';
import { fmt } from '../../parts/format.js';

const results = new Map();    // model name -> the measured data (once asked for)
const texts = new Map();      // path under models/ -> Promise of the text

/** The corpusStats() cosines of every snapshot of `name` and of its final model, counted on the
 * text models/index.json names for it (statistics_text; the report counts on the same file). */
async function measure(name, statisticsText) {
  const run = await shippedRun(name);
  if (!run.snaps.length) return { name, none: `${name} has no training snapshots, so there is nothing to follow over training.` };
  if (!statisticsText) return { name, none: `models/index.json names no text to count ${name}'s statistics on (statistics_text), so the leading terms cannot be measured.` };
  if (!texts.has(statisticsText)) {
    texts.set(statisticsText, fetch(siteUrl(`models/${statisticsText}`)).then((r) => (r.ok ? r.text() : Promise.reject(new Error(`the text ${statisticsText} did not load (${r.status})`)))));
  }
  const text = await texts.get(statisticsText);
  const rows = [];
  for (const snapshot of [...run.snaps.map((s) => `step${s}`), null]) {
    const m = await getModel(name, snapshot ? { snapshot } : {});
    const st = m.corpusStats(text);   // the core's window for the leading terms (the report's)
    const step = snapshot ? Number(snapshot.slice(4)) : Number(m.info.step ?? run.steps?.at(-1) ?? NaN);
    rows.push({ step, direct: st.direct_path_cosine, ov: Array.from(st.ov_cosine.data) });
  }
  const c = (await getModel(name)).config;
  return { name, rows, L: c.n_layers, H: c.n_heads };
}

function csv(d) {
  const heads = Array.from({ length: d.L * d.H }, (_, i) => `ov_cosine_${headLabel(i, d.L * d.H, d.H)}`);
  downloadCSV(`circuitscope-leading-terms-${d.name}.csv`, [['step', 'direct_path_cosine', ...heads], ...d.rows.map((r) => [r.step, r.direct, ...r.ov])]);
}

/** The chart, its note and its CSV button for measured data `d`, the state's snapshot marked. */
function figure(d, snapshot) {
  if (d.none) return [el('p', { class: 'cs-note' }, d.none)];
  const n = d.L * d.H;
  const series = [{ name: 'direct path · bigram term', color: COLORS[0] },
    ...Array.from({ length: n }, (_, i) => ({ name: `${headLabel(i, n, d.H)} OV · context term`, color: COLORS[(i + 1) % COLORS.length], dashed: true }))];
  const chart = new LineChart({ series, title: 'Cosine of the learned table with its leading term', xLabel: 'training step', yLabel: 'cosine' });
  chart.setData(d.rows.map((r) => r.step), [d.rows.map((r) => r.direct), ...Array.from({ length: n }, (_, i) => d.rows.map((r) => r.ov[i]))]);
  chart.setSnapshot(snapshot);
  const first = d.rows[0], last = d.rows.at(-1);
  return [el('p', { role: 'status' }, `Direct path: ${fmt(first.direct)} at step ${first.step}, ${fmt(last.direct)} at the end (step ${last.step}).`),
    el('div', {}, chart.element),
    el('div', { class: 'button-row cs-png-skip controls-only' }, el('button', { type: 'button', class: 'cs-leading-csv', onclick: () => csv(d) }, 'Download the cosines (CSV)'))];
}

/** The committed small-initialisation curve (models/NAME.leading.json), drawn as it is. */
function smallInitFigure(c) {
  const n = c.n_layers * c.n_heads;
  const series = [{ name: 'direct path · bigram term', color: COLORS[0] }, { name: 'W_U Gram · BᵀB', color: COLORS[1] },
    ...Array.from({ length: n }, (_, i) => ({ name: `${headLabel(i, n, c.n_heads)} OV · Φ with BᵀB`, color: COLORS[(i + 2) % COLORS.length], dashed: true }))];
  const chart = new LineChart({ series, title: `From weights scaled by ${c.init_scale}, full-batch gradient descent (lr ${c.lr})`, xLabel: 'gradient step', yLabel: 'cosine' });
  const pts = c.points;
  chart.setData(pts.map((p) => p.step), [pts.map((p) => p.direct), pts.map((p) => p.unembed_gram), ...Array.from({ length: n }, (_, i) => pts.map((p) => p.ov_composed[i]))]);
  const last = pts.at(-1);
  return [el('p', { class: 'cs-explain' }, `The seed's own setting: ${c.recipe}'s model from weights scaled by ${c.init_scale}, trained by full-batch gradient descent on one batch of ${c.rows} sequences, with B, BᵀB and Φ counted on that batch (circuitscope leading; the Reproduction report's leading-terms row reads this curve). The seed reports cosines above 0.99.`),
    el('p', { role: 'status', class: 'cs-leading-small' }, `Step ${last.step}: direct path ${fmt(last.direct, 3)}, W_U Gram ${fmt(last.unembed_gram, 3)}.`),
    el('div', { class: 'cs-leading-small-chart' }, chart.element)];
}

const shown = new Map();   // "name/snapshot/measured" -> the panel's data (the same object while nothing changed)

export default definePanel({
  name: 'training-leading',
  title: 'Gradient leading terms over training',
  view: 'training',
  needsModel: false,

  // Measured only when asked (it loads every snapshot and counts the 1.3 MB corpus for each), so
  // the view does not wait for it; once measured, the figure shows at once.
  async query({ modelName, state }) {
    const m = /^step(\d+)$/.exec(String(state.snapshot ?? ''));
    const snapshot = m ? Number(m[1]) : null;
    const done = results.get(modelName) ?? null;
    const entry = (await getModelIndex()).find((e) => e.name === modelName);
    const curve = typeof entry?.leading === 'string' ? await getJSON(`models/${entry.leading}`) : null;
    const key = `${modelName}/${snapshot}/${!!done}/${!!curve}`;
    const window = (await getModule()).leadingTermsWindow;
    if (!shown.has(key)) shown.set(key, { name: modelName, snapshot, done, curve, statisticsText: entry?.statistics_text ?? null, window });
    return shown.get(key);
  },

  render({ name, snapshot, done, curve, statisticsText, window }) {
    const body = el('div', { class: 'cs-leading-snapshots' });
    const node = el('div', {},
      ...(curve?.points?.length ? smallInitFigure(curve) : []),
      el('p', { class: 'cs-explain' }, `Seed 002: from small weights every softmax is uniform, so the first gradient steps push the direct path W_E W_U towards the bigram statistics (diag(π)(B − 1/V)) and a head's OV table towards the context statistics (Φᵀ diag(ρ), window ${window}), counted on ${statisticsText ? `models/${statisticsText}` : 'the text models/index.json names'}. Each line is the cosine of a row-centred learned table with its term, at every training snapshot of ${name} and for the final model (the core's corpusStats(), as the Reproduction report measures char-1l and bpe-1l).`),
      body);
    node.csData = done;
    node.csCurve = curve;
    if (done) {
      body.replaceChildren(...figure(done, snapshot));
      return node;
    }
    const button = el('button', { type: 'button', class: 'cs-leading-measure', onclick: async () => {
      button.disabled = true;
      button.textContent = 'Measuring every snapshot…';
      const d = await measure(name, statisticsText).catch((e) => ({ name, none: `The leading terms could not be measured: ${e.message}` }));
      results.set(name, d);
      node.csData = d;
      if (node.isConnected) body.replaceChildren(...figure(d, snapshot));
      node.dataset.measured = 'true';
    } }, 'Measure over training');
    body.replaceChildren(el('div', { class: 'button-row controls-only' }, button));
    return node;
  },

  update(node, { snapshot, done, curve }) {
    if (!done || node.csData !== done || node.csCurve !== curve) {
      destroyCharts(node);
      return false;
    }
    for (const f of node.querySelectorAll('.cs-leading-snapshots figure.cs-uplot')) f.csChart?.setSnapshot(snapshot);
    return true;
  },
});
