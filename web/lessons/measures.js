// The numbers a lesson's check may compare (checks.js), each read from what the core computed
// for the page's state, through the same caches the views' panels use (so a check makes no core
// call of its own when the view is showing that state). A measure is
//   {view, head?, readsRun?, about, get({model, modelName, state}, head) -> number | null (or a Promise of one)}
// where `view` is the view whose state it reads (the step must show that view), `head` says it
// takes a head as in prefix(L1H4), `readsRun` that it reads the in-page training run (a check is
// read again as the run moves), and null means "not available for this state" (a check
// comparing it is then not met). docs/lessons.md lists them with `about`.
import { parseHead, trainingRun } from '../store.js';
import { analyse, repeatOf } from '../panels/induction/analysis.js';
import { ioiInput } from '../panels/ioi/analysis.js';
import { eigenOf } from '../panels/circuits/head.js';
import { shippedRun, snapshotStep, recordAt } from '../panels/training/shipped.js';

/** A measure's head: "L1H4", or "shown" for the head the state shows. [layer, head] or []. */
const headOf = (head, state) => parseHead(head === 'shown' ? state.head : head) ?? [];

// With every row's loss (lastRow: the view leaves the rows typed at the end out until typing pauses).
const induction = (f) => ({ view: 'induction', get: ({ model, state }) => { const a = analyse(model, state, { lastRow: true }); return a.run ? f(a) : null; } });
const inductionHead = (key) => ({
  view: 'induction', head: true,
  get: ({ model, state }, head) => {
    const [l, h] = headOf(head, state);
    const row = analyse(model, state).scores.find((r) => r.layer === l && r.head === h);
    return row ? row[key] : null;
  },
});
const ioi = (key) => ({ view: 'ioi', get: (args) => { const r = ioiInput(args).result?.a; return r ? Number(r[key]) : null; } });
// A head's entry of the core's per-head table (head_diff, head_sum: [layers, heads]).
const ioiHead = (key) => ({
  view: 'ioi', head: true,
  get: (args, head) => {
    const t = ioiInput(args).result?.a?.[key];
    const [l, h] = headOf(head, args.state);
    return t && l < t.shape[0] && h < t.shape[1] ? Number(t.data[l * t.shape[1] + h]) : null;
  },
});
const eigen = (circuit) => ({
  view: 'circuits', head: true,
  get: ({ model, state }, head) => {
    const [l, h] = headOf(head, state);
    return l < model.config.n_layers && h < model.config.n_heads ? eigenOf(model, l, h)[circuit].copying : null;
  },
});
// A field of the Training view's record at the state's snapshot (its curves' source, shipped.js:
// models/<name>.metrics.json as `circuitscope train` wrote it, or a series opened in the page):
// the record of the snapshot's step, or the last one for the trained model.
const curve = (key) => ({
  view: 'training',
  get: async ({ modelName, state }) => {
    if (!modelName) return null;
    const v = recordAt(await shippedRun(modelName), snapshotStep(state))?.[key];
    return Number.isFinite(v) ? v : null;
  },
});
// The in-page training run (store.js's trainingRun): null before one has started.
const training = (key) => ({
  view: 'training', readsRun: true,
  get: () => { const run = trainingRun.state; return run.state === 'idle' || run[key] === null ? null : Number(run[key]); },
});

/** @type {Record<string, {view: string, head?: boolean, readsRun?: boolean, about: string, get: (args: any, head?: string) => number | null | Promise<number | null>}>} */
export const MEASURES = Object.freeze({
  meanLoss: { ...induction((a) => a.run.mean_loss), about: 'the mean loss per token of the text, in nats (with the ablations and cuts in force)' },
  cleanMeanLoss: { ...induction((a) => a.clean.mean_loss), about: 'the same without the ablations and cuts' },
  repeatLength: { ...induction((a) => repeatOf(a)?.r ?? 0), about: 'the length in tokens of the longest repeated block of the text (0 below 8 tokens)' },
  firstCopyLoss: { ...induction((a) => (repeatOf(a) ? a.run.first_copy_loss : null)), about: 'the mean loss on the first copy of the repeated block' },
  secondCopyLoss: { ...induction((a) => (repeatOf(a) ? a.run.second_copy_loss : null)), about: 'the mean loss on its second copy (low when an induction head copies)' },
  prefix: { ...inductionHead('prefix'), about: "a head's prefix-matching score on the text" },
  previous: { ...inductionHead('previous'), about: "a head's previous-token score on the text" },
  stripe: { ...inductionHead('stripe'), about: "a head's induction stripe on the repeated block" },
  ioiCorrect: { ...ioi('correct'), about: 'IOI: 1 when the model predicts the indirect object, else 0' },
  logitDiff: { ...ioi('logit_diff'), about: 'IOI: logit(IO) - logit(S), in nats' },
  probIO: { ...ioi('prob_io'), about: 'IOI: the probability of the indirect object' },
  probS: { ...ioi('prob_s'), about: 'IOI: the probability of the subject' },
  headDiff: { ...ioiHead('head_diff'), about: "IOI: a head's direct effect on logit(IO) - logit(S) (the heads table's difference)" },
  headSum: { ...ioiHead('head_sum'), about: "IOI: a head's direct effect on logit(IO) + logit(S) (the heads table's sum)" },
  ovCopying: { ...eigen('ov'), about: "a head's OV copying score from its eigenvalues (near 1: copies tokens)" },
  qkMatching: { ...eigen('qk'), about: "a head's QK same-token score from its eigenvalues" },
  iclScore: { ...curve('icl'), about: "the in-context learning score the Training view draws, at the snapshot shown (the trained model's without one): the loss at the late token minus at the early one, in nats (negative: later tokens are predicted better)" },
  iclSE: { ...curve('icl_se'), about: 'its standard error over the held-out windows, where the metrics file gives one' },
  trainStep: { ...training('step'), about: 'the step the in-page training run has reached' },
  phaseChangeStep: { ...training('phaseChangeStep'), about: "the step of the in-page run's phase change, once the run has found one" },
});
