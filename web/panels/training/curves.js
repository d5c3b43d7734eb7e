// The shipped run's curves (induction-heads paper, seed 004): train and validation loss, the
// in-context-learning score and every head's prefix-matching score over training, from
// models/<name>.metrics.json, with the phase change (the core's phaseChange()) as a dashed line
// and the snapshot in use (the state's snapshot) as a solid one. Line charts: parts/line-chart.js.
// Records that carry the ICL score's standard error over the held-out windows (icl_se, written by
// `circuitscope train`) get a shaded band of ± one standard error around the ICL curve, and a
// caption naming the number of windows (icl_indices.windows); older metrics files have none. The
// extra training seeds' ICL scores (models/seeds/, the same recipe with another random seed) are
// thinner lines on the same chart, and the sentence gives their phase changes.
import { el } from '../../parts/dom.js';
import { downloadCSV } from '../../parts/download.js';
import { LineChart, destroyCharts } from '../../parts/line-chart.js';
import { definePanel } from '../panel.js';
import { shippedRun, snapshotStep, recordAt, COLORS, headLabel, headSeries } from './shipped.js';
import { fmt } from '../../parts/format.js';

const shown = new WeakMap();   // run -> Map(snapshot step -> data)

/** "seeds 1 and 2" */
const seedList = (seeds) => `seed${seeds.length === 1 ? '' : 's'} ${seeds.length > 1 ? `${seeds.slice(0, -1).map((s) => s.seed).join(', ')} and ${seeds.at(-1).seed}` : seeds[0].seed}`;

/** What the extra training seeds show, after the shipped run's sentence ('' without any). */
function seedsSentence(run) {
  const { seeds } = run;
  if (!seeds.length) return '';
  const each = seeds.map((s) => `seed ${s.seed}: ${s.pc ? `phase change at step ${s.pc.step}` : 'no phase change'}`).join('; ');
  return ` The same recipe retrained with random ${seedList(seeds)} (thinner ICL lines): ${each}.`;
}

/** An ICL record as "−0.210 ± 0.047 at step 8000". */
const iclAt = (r, stepWord) => `${fmt(r.icl, 3)}${Number.isFinite(r.icl_se) ? ` ± ${fmt(r.icl_se, 3)}` : ''} at ${stepWord} ${r.step}`;

/** The ICL score before the phase change (the core's before_step, as the report compares) and at the end ('' without one). */
function iclSentence(run) {
  const { pc, stepWord } = run;
  const before = pc && pc.before_step >= 0 ? recordAt(run, pc.before_step) : null;
  const end = recordAt(run, null);
  if (!before || !Number.isFinite(before.icl) || !Number.isFinite(end.icl)) return '';
  return ` In-context learning score: ${iclAt(before, stepWord)} (two records before the phase change), ${iclAt(end, stepWord)} (the last record).`;
}

/** The phase-change sentence above the charts. */
function summary(run) {
  const { name, recs, pc, H, n, minInductionScore, source, stepWord } = run;
  if (pc) return `Phase change at ${stepWord} ${pc.step}: the first record where the best head (then ${headLabel(pc.layer * H + pc.head, n, H)}) passes half (${fmt(pc.threshold)}) of the final best prefix-matching score ${fmt(pc.final)} (the core's definition, the report's too, over the ${recs.length} records of ${source}; dashed line in every chart).${iclSentence(run)}${seedsSentence(run)}`;
  return recs.at(-1)?.prefix_matching?.length
    ? `No phase change: no head's final prefix-matching score reaches ${minInductionScore}, so no induction head formed in ${name} (over the ${recs.length} records of ${source}).${seedsSentence(run)}`
    : `No prefix-matching scores in ${source}, so no phase change can be marked.`;
}

/** The ICL band's caption: what the shading is, over how many held-out windows (when the file says). */
export function bandCaption(metrics) {
  const w = metrics?.icl_indices?.windows;
  return `shaded: ± 1 standard error over ${Number.isFinite(w) ? `${w} held-out window${w === 1 ? '' : 's'}` : 'the held-out windows'}`;
}

/** The loss, ICL and prefix-matching charts of a run. */
function charts(run) {
  const { metrics, recs, steps, pc, n, H, xLabel, stepWord } = run;
  const marker = pc ? { x: pc.step, label: `${stepWord} ${pc.step}`, legend: `phase change (${stepWord} ${pc.step})` } : null;
  const line = (series, options, ys, widths = null) => {
    const c = new LineChart({ series, ...options });
    c.setData(steps, ys, widths);
    return c.element;
  };
  // The standard errors as the file gives them (null where a record has none: no band there).
  const se = recs.some((x) => Number.isFinite(x.icl_se)) ? recs.map((x) => x.icl_se) : null;
  return [
    line([
      { name: 'train loss', color: COLORS[0] },
      { name: 'validation loss', color: COLORS[1] },
      { name: 'loss on repeated tokens', color: COLORS[2], dashed: true },
    ], { title: 'Loss (nats per token)', xLabel, yLabel: 'loss', marker },
    [recs.map((x) => x.train_loss), recs.map((x) => x.valid_loss), recs.map((x) => x.repeated_loss)]),
    line([{ name: run.seeds.length ? 'ICL score (shipped run)' : 'ICL score', color: COLORS[3] },
      ...run.seeds.map((s, i) => ({ name: `seed ${s.seed}`, color: COLORS[(4 + i) % COLORS.length], thin: true }))],
    { title: `In-context learning score (loss at token ${metrics.icl_indices?.late ?? 'late'} − token ${metrics.icl_indices?.early ?? 'early'})`, xLabel, yLabel: 'nats', marker,
      band: se ? { series: 0, caption: bandCaption(metrics) } : undefined },
    [recs.map((x) => x.icl), ...run.seeds.map((s) => s.recs.map((x) => x?.icl))], se),
    line(headSeries(n, H), { title: 'Prefix-matching (induction) score per head', xLabel, yLabel: 'score', marker, yMin: 0 },
      Array.from({ length: n }, (_, i) => recs.map((x) => x.prefix_matching?.[i]))),
  ];
}

const csv = (name, recs) => downloadCSV(`${name.replace(/^local:/, '')}-metrics.csv`, recs.map((x) => ({ step: x.step, train_loss: x.train_loss, valid_loss: x.valid_loss, icl: x.icl, icl_se: x.icl_se ?? '', repeated_loss: x.repeated_loss, prefix_matching: (x.prefix_matching ?? []).join(' ') })));

export default definePanel({
  name: 'training-curves',
  title: 'Training: the induction-head phase change',
  view: 'training',
  needsModel: false,

  async query({ modelName, state }) {
    const run = await shippedRun(modelName);
    const snapshot = snapshotStep(state);
    if (!shown.has(run)) shown.set(run, new Map());
    const byStep = shown.get(run);
    if (!byStep.has(snapshot)) byStep.set(snapshot, { run, snapshot });
    return byStep.get(snapshot);
  },

  render({ run, snapshot }) {
    if (!run.recs) {
      return el('div', {}, el('p', { role: 'status', 'aria-live': 'polite' }, el('span', { class: 'cs-unavailable', dataset: { missing: 'metrics' } },
        run.error ? `The checkpoints of ${run.name} could not be scored: ${run.error}`
        : run.local
          ? `${run.name} is a model file opened in this page: a model file carries no training records, so there are no curves to show. Open several checkpoints of its run together (TransformerLens's checkpoints/NAME_N.pth, or stepN.safetensors files, with its config.json and tokenizer.json, and a .txt of held-out text if you like) and they are scored here; a run trained below draws its own.`
          : `${run.name} is not trained yet: models/${run.name}.metrics.json is not available. Its curves appear here once the model zoo is trained and the site rebuilt.`)));
    }
    const grid = el('div', { class: 'cs-grid2' }, charts(run));
    const node = el('div', {}, el('p', { role: 'status', 'aria-live': 'polite' }, summary(run)), grid,
      el('div', {}, el('button', { type: 'button', onclick: () => csv(run.name, run.recs) }, 'Download the records (CSV)')));
    node.csRun = run;
    for (const f of grid.querySelectorAll('figure.cs-uplot')) f.csChart.setSnapshot(snapshot);
    return node;
  },

  /** The same run at another snapshot: the solid line moves. */
  update(node, { run, snapshot }) {
    if (node.csRun !== run) {
      if (node.csRun) destroyCharts(node);
      return false;
    }
    for (const f of node.querySelectorAll('figure.cs-uplot')) f.csChart?.setSnapshot(snapshot);
    return true;
  },
});
