// The live charts of a training run in the page: the loss per step (with the loss on repeated and
// fresh tokens when the recipe reports them) and, for the induction recipes, every head's
// prefix-matching score with the phase change marked once the run has ended. Drawn at most once
// a frame; the charts are made once per run (again only if their series change) and get new data.
import { LineChart } from '../../parts/line-chart.js';
import { COLORS, headSeries } from './shipped.js';
import { fmt } from '../../parts/format.js';
import { trainingRun } from '../../store.js';

const pos = (v) => (v >= 0 ? v : null);

/** The loss chart: made when the run's kind of loss records changes, then new data each frame. */
function drawLoss(run, thin) {
  const live = run.live;
  const repeated = thin.some((x) => x.loss_repeated >= 0);
  const lossKey = repeated ? 'repeated' : 'plain';
  if (live.lossKey !== lossKey) {
    live.loss?.destroy();
    live.loss?.element.remove();
    live.lossKey = lossKey;
    const series = [{ name: 'batch loss', color: COLORS[0] }];
    if (repeated) series.push({ name: 'loss on repeated tokens', color: COLORS[1] }, { name: 'loss on fresh tokens', color: COLORS[2], dashed: true });
    live.loss = new LineChart({ title: `Training ${run.key}: loss per step`, xLabel: 'step', yLabel: 'loss (nats)', series });
    run.refs.chart.prepend(live.loss.element);
  }
  live.loss.setData(thin.map((x) => x.step), repeated
    ? [thin.map((x) => x.loss), thin.map((x) => pos(x.loss_repeated)), thin.map((x) => pos(x.loss_fresh))]
    : [thin.map((x) => x.loss)]);
}

/** The prefix-matching chart of the head scores the worker recorded. */
function drawScores(run) {
  const live = run.live;
  const sc = run.scores;
  const n = sc[0].prefix_matching.length;
  if (!live.scores || live.heads !== n) {
    live.scores?.destroy();
    live.scores?.element.remove();
    live.heads = n;
    live.scores = new LineChart({ title: 'Prefix-matching (induction) score per head', xLabel: 'step', yLabel: 'score', yMin: 0, series: headSeries(n, run.heads ?? n) });
    run.refs.chart.append(live.scores.element);
  }
  const pc = run.phase;
  live.scores.setMarker(pc ? { x: pc.step, label: `step ${pc.step}`, legend: `phase change (step ${pc.step}, ${fmt(pc.seconds, 1)} s)` } : null);
  live.scores.setData(sc.map((x) => x.step), Array.from({ length: n }, (_, i) => sc.map((x) => x.prefix_matching[i])));
}

function draw(run) {
  const h = run.history;
  const last = h.at(-1);
  if (!last) return;
  // Steps per second between the first and the latest metrics message (not up to now, so a
  // redraw after the run ends does not lower it).
  const secs = ((run.lastAt ?? performance.now()) - run.t0) / 1000;
  const rate = secs > 0 ? (last.step - run.stepsAt0) / secs : NaN;
  if (run.client?.state === 'running' || run.client?.state === 'starting') {
    run.refs.status.textContent = `Step ${last.step} of ${run.steps} · loss ${fmt(last.loss, 3)} · ${fmt(rate, 0)} steps/s` +
      (run.workers > 1 ? ` on ${run.workers} workers` : '');
  }
  trainingRun.update({ step: last.step, stepsPerSecond: rate });
  // Thin long histories to at most ~600 points for drawing.
  const every = Math.max(1, Math.ceil(h.length / 600));
  run.live ??= {};
  drawLoss(run, h.filter((_, i) => i % every === 0 || i === h.length - 1));
  if (run.scores?.length) drawScores(run);
}

/** Draws the run's charts in the next animation frame (once, however many messages come first). */
export function scheduleDraw(run) {
  if (run.frame) return;
  run.frame = requestAnimationFrame(() => {
    run.frame = 0;
    draw(run);
  });
}
