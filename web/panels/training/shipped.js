// What the Training panels of the shipped run share, loaded once per model: its records
// (models/<name>.metrics.json; for a model file opened in the page, the scores of the checkpoints
// opened with it, series.js, or none), the core's phase change over them, its head count and the
// training snapshots the site has. Also the colours and names its charts use.
import { getModel, getModule, getJSON, getSnapshots, getSeeds } from '../../store.js';
import { stylesReady } from '../../parts/line-chart.js';
import { argmax } from '../../wasm/circuitscope.js';
import { fmt } from '../../parts/format.js';
import { isLocalName, localModel } from '../../local-models.js';
import { scoreSeries } from './series.js';

export const COLORS = ['var(--cs-line-1)', 'var(--cs-line-2)', 'var(--cs-line-3)', 'var(--cs-line-4)', 'var(--cs-line-5)', 'var(--cs-line-6)', 'var(--cs-line-7)', 'var(--cs-line-8)'];

/** The name of flat head i of n scores with H heads a layer ("L1H2", or "head 5" when n is not a multiple of H). */
export const headLabel = (i, n, H) => (n % H === 0 ? `L${Math.floor(i / H)}H${i % H}` : `head ${i}`);

/** The series of a prefix-matching chart: one line per head, dashed past the eighth colour. */
export const headSeries = (n, H) => Array.from({ length: n }, (_, i) => ({ name: headLabel(i, n, H), color: COLORS[i % COLORS.length], dashed: i >= COLORS.length }));

/** The strongest prefix-matching head of headScores() as "LxHy (score)", as the core's argmax names it. */
export function strongestHead(hs) {
  const { index: [l, h], value } = argmax(hs.prefix_matching);
  return `L${l}H${h} (${fmt(value)})`;
}

const runs = new Map();   // model name -> Promise of its shipped run

async function load(name) {
  const cs = await getModule();   // the core's phaseChange()
  let model = null;
  try { model = await getModel(name); } catch { /* not trained yet */ }
  // A model file opened in the page has no metrics file on the site (its name is not a file's).
  const local = isLocalName(name);
  const entry = local ? localModel(name) : null;
  // A series opened in the page: its checkpoints scored now (a sentence in `error` if one fails).
  let metrics = null, source = `${name}.metrics.json`, error = null;
  if (entry?.series) {
    try {
      const scored = await scoreSeries(entry);
      metrics = scored.metrics;
      source = `the ${entry.series.checkpoints.length} checkpoints opened${scored.source ? `, scored on ${scored.source}` : ' (head scores only: the model reads no typed text and no held-out text was chosen)'}`;
    } catch (e) {
      error = String(e?.message ?? e);
    }
  } else if (!local) {
    metrics = await getJSON(`models/${name}.metrics.json`);
  }
  await stylesReady;   // uPlot's stylesheet, so the charts are laid out right from the start
  const snaps = (await getSnapshots(name)).map((s) => Number(s.replace(/^step/, ''))).sort((a, b) => a - b);
  // A series' records are labelled by the numbers in its files' names (tokens seen, for TransformerLens's).
  const series = !!entry?.series;
  const run = { name, metrics, recs: null, hasModel: !!model, snaps, minInductionScore: cs.minInductionScore, local, series, source, error, seeds: [],
    xLabel: series ? 'checkpoint (the number in its file name)' : 'training step', stepWord: series ? 'checkpoint' : 'step' };
  const recs = Array.isArray(metrics?.records) && metrics.records.length ? metrics.records : null;
  if (!recs) return run;
  const n = recs[0].prefix_matching?.length ?? 0;
  const nHeads = model?.config?.n_heads;
  const H = nHeads > 0 ? nHeads : Math.max(1, n);
  const steps = recs.map((x) => x.step);
  return { ...run, recs, n, H, steps, pc: cs.phaseChange(recs, { nHeads: H }), seeds: series || local ? [] : await seedRuns(cs, name, steps, H) };
}

/**
 * The extra training seeds of a shipped run (the same recipe with another random seed, whose
 * records the site holds): [{seed, recs (aligned to the shipped run's steps; null where a seed has
 * no record), pc (the core's phase change over its records, or null)}]. A seed whose file is
 * missing or recorded other steps is left out.
 */
async function seedRuns(cs, name, steps, H) {
  const out = [];
  for (const seed of await getSeeds(name)) {
    const m = await getJSON(`models/seeds/${name}.seed${seed}.metrics.json`);
    const recs = Array.isArray(m?.records) ? m.records : [];
    const at = new Map(recs.map((r) => [r.step, r]));
    if (!recs.length || !recs.every((r) => steps.includes(r.step))) continue;
    out.push({ seed, recs: steps.map((s) => at.get(s) ?? null), pc: cs.phaseChange(recs, { nHeads: H }) });
  }
  return out;
}

/**
 * The shipped run of model `name`: {name, metrics, recs (null when the metrics are missing),
 * steps, n (prefix-matching scores a record), H (heads a layer), pc (the core's phase change or
 * null), hasModel, snaps (snapshot steps, increasing), minInductionScore (the core's: a final
 * prefix-matching score below it means no induction head formed), local, series (a
 * checkpoint series opened in the page), source (where the records come from, for sentences),
 * error (why a series could not be scored, or null), xLabel and stepWord (what the steps are),
 * seeds (the extra training seeds' records, seedRuns())}.
 * The same object every time.
 */
export function shippedRun(name) {
  if (!runs.has(name)) {
    const p = load(name);
    p.catch(() => runs.delete(name));
    runs.set(name, p);
  }
  return runs.get(name);
}

/** The training step of the state's snapshot ("step7000" -> 7000), or null for the trained model. */
export function snapshotStep(state) {
  const m = /^step(\d+)$/.exec(String(state.snapshot ?? ''));
  return m ? Number(m[1]) : null;
}

/**
 * The run's record at a training step: the last record at or before it (the record of that step
 * when the metrics have one), the last record for step null (the trained model), or null.
 */
export function recordAt(run, step) {
  if (!run.recs) return null;
  let out = null;
  for (const r of run.recs) if (step === null || r.step <= step) out = r;
  return out;
}
