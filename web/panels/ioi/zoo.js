// The shipped IOI models side by side (no intervention): for the symbolic task, each
// architecture's accuracy over all 60 sequences with the spread over its training seeds
// (models/<name>.seeds.json); for the sentence-template models, each model's accuracy on the four
// splits. The model shown is marked. Models that fail to load say so.
import { el } from '../../parts/dom.js';
import { pct } from '../../parts/prob-bars.js';
import { definePanel } from '../panel.js';
import { getJSON } from '../../store.js';
import { ioiModels, splitAccuracy } from './evaluation.js';
import { taskOf } from './analysis.js';

const entries = new Map();   // kind -> {value, promise}: the rows of the table
const shown = new Map();     // `${kind}|${current}` -> the panel's data

// The table's rows hold what it shows of each model, not the model (a panel's data is plain).
async function rowsOf(kind, list) {
  if (kind === 'symbolic') {
    return Promise.all(list.filter((m) => !m.templates).map(async ({ model, ...m }) => ({
      ...m, accuracy: m.error ? undefined : model.ioiEvaluate().accuracy, seeds: await getJSON(`models/${m.name}.seeds.json`),
    })));
  }
  const models = list.filter((m) => m.templates);
  const rows = await Promise.all(models.map(async ({ model, ...m }) => (m.error ? m : { ...m, splits: await splitAccuracy(model, m.name, {}).promise })));
  const first = models.find((m) => !m.error);
  return { rows, splits: first ? taskOf(first.model).splits : [] };
}

function entry(kind) {
  if (!entries.has(kind)) {
    const e = { value: null };
    e.promise = ioiModels().promise.then((list) => rowsOf(kind, list)).then((v) => (e.value = v));
    e.promise.catch(() => entries.delete(kind));
    entries.set(kind, e);
  }
  return entries.get(kind);
}

// The IOI view shows a model of either task; a model of neither is shown as the symbolic task's.
const kindOf = (model) => (model.ioiKind() === 'templates' ? 'templates' : 'symbolic');

/** The comparison the panel waits for: {value, promise}. */
export function prepare({ model }) {
  return entry(kindOf(model));
}

const PENDING = { symbolic: { pending: true, kind: 'symbolic' }, templates: { pending: true, kind: 'templates' } };

/** What the panel shows while the models load (the table without rows). */
export function pending({ model }) {
  return PENDING[kindOf(model)];
}

function symbolicTable({ rows, current }) {
  return el('table', { class: 'cs-table' },
    el('caption', {}, 'Accuracy over all 60 sequences (the shipped model, no intervention) and the spread over the training seeds'),
    el('thead', {}, el('tr', {}, ['model', 'architecture', 'shipped model', 'seeds solved (100%)', 'mean accuracy of seeds', 'range'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, (rows ?? []).map((m) => el('tr', { class: m.name === current ? 'current' : null, dataset: { model: m.name, accuracy: m.accuracy ?? '' } },
      el('th', { scope: 'row' }, m.name === current ? `▸ ${m.name}` : m.name),
      el('td', {}, m.label),
      el('td', { class: 'num' }, m.error ? 'not available' : pct(m.accuracy)),
      el('td', { class: 'num' }, m.seeds ? `${m.seeds.solved} of ${m.seeds.runs}` : 'not available'),
      el('td', { class: 'num' }, m.seeds ? pct(m.seeds.mean_accuracy) : '–'),
      el('td', { class: 'num' }, m.seeds ? `${pct(m.seeds.min_accuracy)}–${pct(m.seeds.max_accuracy)}` : '–')))));
}

function templateTable({ rows, splits, current }) {
  return el('table', { class: 'cs-table' },
    el('caption', {}, 'The sentence-template models compared (the shipped models, no intervention)'),
    el('thead', {}, el('tr', {}, ['model', 'architecture', ...(splits ?? []).map((x) => x.split)].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, (rows ?? []).map((m) => el('tr', { class: m.name === current ? 'current' : null, dataset: { model: m.name } },
      el('th', { scope: 'row' }, m.name === current ? `▸ ${m.name}` : m.name),
      el('td', {}, m.label.replace(/^sentence templates: /, '')),
      splits.map(({ split }) => el('td', { class: 'num', dataset: { split } },
        m.error ? 'not available' : m.splits[split].error ? '–' : pct(m.splits[split].accuracy)))))));
}

export default definePanel({
  name: 'ioi-zoo',
  title: 'The shipped models compared',
  view: 'ioi',

  async query(args) {
    const kind = kindOf(args.model);
    const key = `${kind}|${args.modelName}`;
    if (!shown.has(key)) {
      const v = await entry(kind).promise;
      shown.set(key, kind === 'symbolic' ? { kind, rows: v, current: args.modelName } : { kind, ...v, current: args.modelName });
    }
    return shown.get(key);
  },

  render(d) {
    return d.kind === 'symbolic' ? symbolicTable(d) : templateTable(d);
  },
});
