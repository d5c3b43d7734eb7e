// The accuracy of the IOI model shown, under the intervention in force (and without it, for
// comparison): over all 60 sequences for the symbolic task; on the training split and the three
// held-out splits for a sentence-template model (the core's ioiEvaluate(); up to 2,000 sentences
// per split, computed once per model and intervention, so the first time takes a moment).
import { el } from '../../parts/dom.js';
import { pct } from '../../parts/prob-bars.js';
import { definePanel } from '../panel.js';
import { interventionOf } from '../../store.js';
import { changes, cutInput, taskOf } from './analysis.js';
import { splitAccuracy, allOf } from './evaluation.js';
import { fmt } from '../../parts/format.js';

const memo = new WeakMap();   // model -> {key, data}
const pendingData = new Map();   // model name -> the data shown while the splits are computed

function inputs({ model, modelName, state }) {
  const iv = interventionOf(state, model.config);
  return { iv, key: `${modelName}|${JSON.stringify(iv)}|${cutInput(state)}`, words: changes(iv, state) };
}

/** The evaluations the panel waits for: {value, promise} (value null until they are computed). */
export function prepare(args) {
  const { model, modelName } = args;
  if (!taskOf(model)) return { value: true, promise: Promise.resolve(true) };
  const { iv, words } = inputs(args);
  return allOf([splitAccuracy(model, modelName, iv), splitAccuracy(model, modelName, words.length ? {} : iv)]);
}

/** What the panel shows while prepare() computes. */
export function pending({ modelName }) {
  if (!pendingData.has(modelName)) pendingData.set(modelName, { pending: true, modelName });
  return pendingData.get(modelName);
}

function compute(args) {
  const { model, modelName } = args;
  const { iv, words } = inputs(args);
  if (!taskOf(model)) {
    const ev = model.ioiEvaluate(iv);
    return { kind: 'symbolic', modelName, ev, clean: words.length ? model.ioiEvaluate().accuracy : ev.accuracy, changes: words, accuracy: ev.accuracy };
  }
  const [ev, clean] = prepare(args).value;
  return { kind: 'templates', modelName, splits: taskOf(model).splits, ev, clean, changes: words, accuracy: ev.train.error ? null : ev.train.accuracy };
}

function symbolicLine({ modelName, ev, clean, changes: c }) {
  return [el('strong', {}, `${modelName}: ${pct(ev.accuracy)}`),
    ` correct over all ${ev.n} sequences (${ev.correct}/${ev.n})${c.length ? ' ' + c.join(' and ') : ''}`,
    c.length ? `; ${pct(clean)} without the intervention` : '',
    `. Mean p(IO) ${fmt(ev.mean_prob_io)}, p(S) ${fmt(ev.mean_prob_s)}.`];
}

const cell = (x, f) => (x.error ? '–' : f(x));

function templateLine({ modelName, splits, ev, changes: c }) {
  return [el('strong', {}, `${modelName}: ${ev.train.error ? '–' : pct(ev.train.accuracy)}`),
    ' on the training split, ',
    ...splits.slice(1).map(({ split }, i) => `${i ? ', ' : ''}${cell(ev[split], (x) => pct(x.accuracy))} on ${split}`),
    c.length ? ` (${c.join(' and ')})` : '',
    '.'];
}

/** The table of the splits: [{split, what}] with each split's evaluation (and the clean accuracy). */
function splitTable(d) {
  const extra = d.pending ? false : d.changes.length > 0;
  const head = ['split', 'what it holds', 'accuracy', 'correct', 'mean p(IO)', 'mean p(S)', 'mean logit difference', ...(extra ? ['accuracy without the intervention'] : [])];
  const rows = d.pending ? [] : d.splits.map(({ split, what }) => {
    const x = d.ev[split];
    return el('tr', { dataset: { split, accuracy: x.error ? '' : String(x.accuracy) } },
      el('th', { scope: 'row' }, split),
      el('td', {}, what),
      el('td', { class: 'num' }, cell(x, (y) => pct(y.accuracy))),
      el('td', { class: 'num' }, cell(x, (y) => `${y.correct}/${y.n}`)),
      el('td', { class: 'num' }, cell(x, (y) => fmt(y.mean_prob_io, 3))),
      el('td', { class: 'num' }, cell(x, (y) => fmt(y.mean_prob_s, 3))),
      el('td', { class: 'num' }, cell(x, (y) => fmt(y.mean_logit_diff))),
      extra ? el('td', { class: 'num' }, cell(d.clean[split], (y) => pct(y.accuracy))) : null);
  });
  return el('table', { class: 'cs-table cs-split-table', dataset: { ready: String(!d.pending) } },
    el('caption', {}, 'Accuracy of this model on each split (up to 2,000 sentences each, both orders), with the intervention above'),
    el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows));
}

export default definePanel({
  name: 'ioi-accuracy',
  title: 'Accuracy',
  view: 'ioi',

  async query(args) {
    const { key } = inputs(args);
    const hit = memo.get(args.model);
    if (hit?.key === key) return hit.data;
    await prepare(args).promise;
    const data = compute(args);
    memo.set(args.model, { key, data });
    return data;
  },

  render(d) {
    const line = el('p', { class: 'cs-accuracy', role: 'status', 'aria-live': 'polite' });
    if (d.pending) {
      line.textContent = `${d.modelName}: computing the accuracy on each split…`;
      return el('div', {}, line, splitTable(d));
    }
    line.append(...(d.kind === 'symbolic' ? symbolicLine(d) : templateLine(d)));
    return el('div', {}, line, d.kind === 'templates' ? splitTable(d) : null);
  },
});
