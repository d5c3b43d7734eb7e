// <cs-training>: how induction heads form during training (seed 004). For char-1l, char-2l and
// char-1l-smeared it plots, from models/<name>.metrics.json, the train and validation loss with
// the phase change marked, the in-context-learning score, every head's prefix-matching score and
// the PCA trajectory of the per-token-loss vectors; a step slider swaps in the training snapshots
// models/snapshots/<name>/step<N>.safetensors and reports the chosen one in the state
// ({snapshot: "step<N>"}) so the other views (e.g. <cs-circuits>) can show that snapshot; the
// curves mark it with a solid line.
// "Train it yourself" trains a recipe in a Web Worker (web/trainer-worker.js) with a live loss
// curve, pause / resume / stop, and "Download model" (a .safetensors file the page and the CLI load).
// For the induction recipes the worker also scores every head's prefix matching every 10 steps:
// a live chart, and when the run ends the phase change marked as the core's phaseChange() defines it, with
// the seconds from Start to that step. The run's state (store.js's trainingRun) is mirrored on the
// element for tests and benchmarks: data-train-state, data-train-step, data-steps-per-second,
// data-train-workers, data-phase-change-step, data-phase-change-seconds, data-train-seconds,
// data-trained-loaded (none while no run has started).
// Each part is a panel (web/panels/training/); this element lays them out and records, for tests,
// data-charts (the shipped run's charts, or "missing"), data-phase-change and data-snapshot.
// A model file opened with checkpoints of its run (open-model.js) draws the same charts from the
// core's scores of each checkpoint (panels/training/series.js), with a line saying which one is
// being scored (data-series-scored="done/total").
//
// Embed it on any page, this site's or another's (SITE is where the site is served):
//   <script type="module" src="SITE/views/training.js"></script>
//   <cs-training model="char-2l"></cs-training>
// (it links its own stylesheet, views/views.css; from another origin the site must send the CORS
// headers the README lists), or as an iframe that sizes itself: each panel's Embed button copies
// one (the panel alone, optionally without controls, with the host line
//   <script src="https://HOST/embed.js" async></script>).
// In-browser training runs in a Web Worker, which a browser starts only from the page's own
// origin: on another site's page, "Train it yourself" works in the iframe embed.
// Attributes (standalone) or state keys (set by the app): model (char-1l | char-2l |
// char-1l-smeared), snapshot ("step<N>"). Changes go out as `cs-state` events.
import { el } from '../parts/dom.js';
import { CsView } from '../element.js';
import { showPanel } from '../panels/panel.js';
import curves from '../panels/training/curves.js';
import snapshots from '../panels/training/snapshots.js';
import trajectory from '../panels/training/trajectory.js';
import train from '../panels/training/train.js';
import leading from '../panels/training/leading.js';
import { endRuns } from '../panels/training/run.js';
import { onSeriesProgress, seriesProgress } from '../panels/training/series.js';
import { trainingRun } from '../store.js';

// The training run's fields and the data-* attributes that mirror them.
const RUN_ATTRIBUTES = {
  state: 'trainState', step: 'trainStep', stepsPerSecond: 'stepsPerSecond', workers: 'trainWorkers',
  phaseChangeStep: 'phaseChangeStep', phaseChangeSeconds: 'phaseChangeSeconds', trainSeconds: 'trainSeconds', trainedLoaded: 'trainedLoaded',
};
const SECONDS = new Set(['phaseChangeSeconds', 'trainSeconds']);

export const TAG = 'cs-training';
const PANELS = [curves, snapshots, trajectory, leading, train];

export class CsTraining extends CsView {
  static view = 'training';
  static attributes = ['model', 'snapshot'];

  disconnectedCallback() {
    super.disconnectedCallback();
    // The worker keeps training in the background only while the view is on the page.
    if (!this.isConnected) endRuns(this);
    this._offSeries?.();
    this._offSeries = null;
    this._offRun?.();
    this._offRun = null;
  }

  /** The training run's state on the element's data-* attributes (none while no run has started). */
  mirrorRun(run) {
    for (const [key, attr] of Object.entries(RUN_ATTRIBUTES)) {
      const v = run[key];
      if (run.state === 'idle' || v === null || v === false) delete this.dataset[attr];
      else this.dataset[attr] = SECONDS.has(key) ? v.toFixed(2) : String(v);
    }
  }

  /** A checkpoint series being scored (series.js): which checkpoint, above the panels. */
  showProgress(p) {
    if (!this._sections || p.name !== this.modelName) return;
    // Made for the first series shown: a view of the shipped runs has no such line.
    if (!this._progress) this.prepend(this._progress = el('p', { class: 'cs-note cs-series-progress', role: 'status', 'aria-live': 'polite', hidden: true }));
    const busy = p.done < p.total;
    this._progress.hidden = !busy;
    this._progress.textContent = busy ? `Scoring checkpoint ${p.done + 1} of ${p.total} (${String(p.file).slice(0, 80)}): validation loss, in-context learning score and head scores, one checkpoint in memory at a time…` : '';
    this.dataset.seriesScored = `${p.done}/${p.total}`;
  }

  async draw() {
    this.classList.add('cs-view');
    if (!this._sections) this.replaceChildren(...(this._sections = PANELS.map(() => el('section'))));
    this._offSeries ??= onSeriesProgress((p) => this.showProgress(p));
    if (!this._offRun) {
      this._offRun = trainingRun.subscribe((run) => this.mirrorRun(run));
      this.mirrorRun(trainingRun.state);
    }
    const scoring = seriesProgress.get(this.modelName);
    if (scoring) this.showProgress(scoring);
    else if (this._progress) {   // another model than the series: no line
      this._progress.remove();
      this._progress = null;
      delete this.dataset.seriesScored;
    }
    const [shown, snap, pca] = await Promise.all(PANELS.map((p, i) => showPanel(this._sections[i], p, this.modelName, this.store)));
    const run = shown.run;
    this.dataset.charts = run.recs ? String(3 + (pca.metrics?.pca?.components?.length >= 2 ? 1 : 0)) : 'missing';
    this.dataset.phaseChange = run.pc ? String(run.pc.step) : '';
    if (snap.info?.loaded) this.dataset.snapshot = snap.snapshot;
    this.dataset.ready = 'true';
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsTraining);
