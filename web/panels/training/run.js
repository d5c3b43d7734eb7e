// A training run in the page ("Train it yourself"): the worker (worker-client.js) and the run's
// transient state, as plain functions over one object per panel:
//   run = {refs (the panel's controls and outputs), client, key, history, scores, phase, ...}.
// The run's progress goes into the page's training-run state (store.js's trainingRun), which
// lessons read and the Training view mirrors on its element for tests and benchmarks.
import { el } from '../../parts/dom.js';
import { getModule, trainingRun } from '../../store.js';
import { destroyCharts } from '../../parts/line-chart.js';
import { TrainerClient } from '../../worker-client.js';
import { readsFiles, resolveRecipe } from './recipes.js';
import { strongestHead } from './shipped.js';
import { scheduleDraw } from './live.js';
import { fmt } from '../../parts/format.js';
import { openModel } from '../../open-model.js';

const runs = new Set();   // runs with a worker, ended when their view leaves the page

export function setButtons(run, state) {
  const r = run.refs;
  r.start.disabled = state === 'running' || state === 'paused' || state === 'starting';
  r.pause.disabled = state !== 'running';
  r.resume.disabled = state !== 'paused';
  r.stop.disabled = !(state === 'running' || state === 'paused');
  r.download.disabled = !(state === 'running' || state === 'paused' || state === 'stopped');
  r.open.disabled = r.download.disabled;
  r.open.hidden = !r.root.closest('[data-cs-app]');   // the explorer's other views are in the app
  r.recipe.disabled = r.steps.disabled = r.start.disabled;
  trainingRun.update({ state });
}

/** Ends the runs inside `root` (their workers stop): when the view leaves the page. */
export function endRuns(root) {
  for (const run of runs) {
    if (!run.refs.root.isConnected || root.contains(run.refs.root)) { run.client?.terminate(); run.client = null; runs.delete(run); }
  }
}

/** A fresh run state for recipe `key` of `steps` steps, started at `startedAt` (ms since the epoch). */
function reset(run, key, steps, startedAt) {
  Object.assign(run, { key, steps, startedAt, history: [], scores: [], phase: null, heads: null, workers: 1, t0: null, lastAt: null, stepsAt0: 0, lastStep: 0, live: null });
  trainingRun.reset({ state: trainingRun.state.state, recipe: key, steps });
  run.refs.result.textContent = '';
  destroyCharts(run.refs.chart);
  run.refs.chart.replaceChildren();
}

function onMetrics(run, m) {
  if (run.t0 === null) { run.t0 = performance.now(); run.stepsAt0 = m.history[0]?.step - 1 || 0; }
  run.lastAt = performance.now();
  run.history.push(...m.history);
  for (const rec of m.scores ?? []) run.scores.push({ ...rec, seconds: (rec.time - run.startedAt) / 1000 });
  if (m.scoresError) run.refs.result.textContent = `Head scores are not available for this model: ${m.scoresError}`;
  run.lastStep = m.step;
  // The step count is current at once (the chart waits for the next frame), so a pause that
  // arrives right after this message reports the step the worker really stopped at.
  trainingRun.update({ step: m.step });
  scheduleDraw(run);
}

function onStopped(run, { step, reason }) {
  const seconds = (performance.timeOrigin + performance.now() - run.startedAt) / 1000;
  setButtons(run, 'stopped');
  run.refs.status.textContent = `${reason === 'finished' ? 'Finished' : 'Stopped'} at step ${step} of ${run.steps}, ${fmt(seconds, 1)} s after Start. Open it in the explorer's other views, or download the model for the CLI (circuitscope inspect FILE) or another page.`;
  trainingRun.update({ trainSeconds: seconds });
  markPhaseChange(run);
  checkTrained(run);
}

/**
 * How many Web Workers share a training step: one per core the browser reports, at most 4 (the
 * page's own thread needs little while training). The run is the same as on one worker up to the
 * order in which the shards' gradients are summed.
 */
export function trainingWorkers() {
  const cores = Number(globalThis.navigator?.hardwareConcurrency) || 1;
  return Math.max(1, Math.min(4, Math.floor(cores)));
}

export async function startRun(run) {
  const r = run.refs;
  // The clock of the run starts at the click: fetching the corpus, starting the worker and
  // its module are part of the wait for the phase change.
  const startedAt = performance.timeOrigin + performance.now();
  run.client?.terminate();
  run.client = null;
  const key = r.recipe.value;
  trainingRun.reset({ state: 'starting', recipe: key });
  setButtons(run, 'starting');
  const offered = run.recipes[key];
  const steps = Math.max(1, Math.min(100000, Math.round(Number(r.steps.value)) || offered.steps));
  let recipe;
  try {
    r.status.textContent = (await readsFiles(offered.recipe)) ? `Downloading the corpus for ${key}…` : `Starting ${key}…`;
    recipe = await resolveRecipe(offered.recipe, steps);
  } catch (e) {
    setButtons(run, 'failed');
    r.status.textContent = `Could not prepare ${key}: ${e.message}`;
    return;
  }
  reset(run, key, recipe.steps, startedAt);
  r.status.textContent = `Starting ${key}…`;
  const mine = (fn) => (x) => { if (client === run.client) fn(run, x); };
  const client = (run.client = new TrainerClient({
    onMetrics: mine(onMetrics),
    onStopped: mine(onStopped),
    onError: mine((_, e) => { setButtons(run, 'failed'); r.status.textContent = `Training failed: ${e.message}`; }),
  }));
  runs.add(run);
  try {
    const started = await client.start(recipe, { metricsEvery: 10, scoresEvery: offered.scoresEvery, workers: trainingWorkers() });
    if (client === run.client) {
      run.heads = started.config?.n_heads;
      run.workers = started.workers ?? 1;
      trainingRun.update({ workers: run.workers });
    }
    if (client === run.client && client.state === 'running') setButtons(run, 'running');
  } catch (e) {
    setButtons(run, 'failed');
    r.status.textContent = `Could not start: ${e.message}`;
  }
}

/** When a run ends: its phase change, as the core defines it, over the head scores it recorded. */
async function markPhaseChange(run) {
  const sc = run.scores;
  const cs = await getModule();
  const H = run.heads ?? sc?.[0]?.prefix_matching.length;
  const pc = sc?.length ? cs.phaseChange(sc, { nHeads: H }) : null;
  if (!pc) {
    run.phase = null;
    if (sc?.length) run.refs.status.append(` No phase change: no head's final prefix-matching score reached ${cs.minInductionScore}.`);
    return;
  }
  const rec = sc[pc.record];
  run.phase = { ...pc, seconds: rec.seconds };
  trainingRun.update({ phaseChangeStep: pc.step, phaseChangeSeconds: rec.seconds });
  run.refs.status.append(` Phase change at step ${pc.step}, ${fmt(rec.seconds, 1)} s after Start: the first record where the best head, L${pc.layer}H${pc.head}, passes half (${fmt(pc.threshold)}) of the final best prefix-matching score ${fmt(pc.final)}. (That is the head that formed first; the head strongest at the end, named below, may be another.)`);
  scheduleDraw(run);
}

export async function pauseRun(run) {
  if (!run.client) return;
  const { step } = await run.client.pause();
  setButtons(run, 'paused');
  run.refs.status.textContent = `Paused at step ${step}.`;
}

export async function resumeRun(run) {
  if (!run.client) return;
  await run.client.resume();
  setButtons(run, 'running');
}

export async function stopRun(run) {
  await run.client?.stop();
}

export async function downloadModel(run) {
  if (!run.client) return;
  const bytes = await run.client.save();
  const name = `${run.key}-step${run.lastStep ?? 0}.safetensors`;
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  const a = el('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 5000);
  checkTrained(run, bytes);
}

/**
 * "Open it in the explorer": the model as it stands, registered as a model file opened in this
 * page (open-model.js, the path a file the user opens takes) and shown in the Induction view
 * (the IOI view for an IOI recipe); every view that suits it then lists it.
 */
export async function openInExplorer(run) {
  if (!run.client) return;
  const r = run.refs;
  r.open.disabled = true;
  try {
    const bytes = await run.client.save();
    const { entry } = await openModel(bytes, `${run.key}-step${run.lastStep ?? 0}.safetensors`, { firstView: true });
    r.result.textContent = `Opened in the explorer as ${entry.name}: the model picker of every view that suits it lists it (${entry.views.join(', ')}).`;
  } catch (e) {
    r.result.textContent = `The trained model could not be opened in the explorer: ${e.message}`;
  } finally {
    r.open.disabled = r.download.disabled;
  }
}

/** Opens the trained model in this page's module and says how it does. */
async function checkTrained(run, bytes) {
  const out = run.refs.result;
  try {
    bytes ??= await run.client.save();
    const cs = await getModule();
    const m = cs.load(bytes);
    try {
      if (run.key.startsWith('ioi')) {
        const ev = m.ioiEvaluate();
        out.textContent = `The trained model (${bytes.length} bytes) opens in the page: ${fmt(100 * ev.accuracy, 0)}% of the 60 IOI sequences right.`;
      } else {
        out.textContent = `The trained model (${bytes.length} bytes) opens in the page: at the end of training (step ${run.lastStep ?? 0}), the strongest prefix-matching head is ${strongestHead(m.headScores({ batch: 8 }))}.`;
      }
      trainingRun.update({ trainedLoaded: true });
    } finally {
      m.delete();
    }
  } catch (e) {
    out.textContent = `The trained model could not be opened: ${e.message}`;
  }
}
