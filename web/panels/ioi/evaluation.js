// The IOI models' accuracy, computed once and kept: the IOI models of the site (for the comparison
// tables) and a template model's accuracy on its four splits per (model, intervention). Each is
// an entry {value, promise}: the value once it is there, so a panel shows a cached result without
// a "computing" step, and the promise to wait for it.
import { getModel, modelsFor } from '../../store.js';
import { taskOf } from './analysis.js';

let zooPromise = null;
let zooValue = null;
/**
 * The IOI models of the site (models/index.json), each with its label (its title after the
 * name) and whether it is a sentence-template model (its ioiTask() says so): [{name, label,
 * templates, model | error}].
 */
export function ioiModels() {
  zooPromise ??= modelsFor('ioi', { local: false }).then((list) => Promise.all(list.map(async (m) => {
    const label = String(m.title || m.name).replace(/^[^:]*:\s*/, '');
    try {
      const model = await getModel(m.name);
      return { name: m.name, label, templates: !!taskOf(model), model };
    } catch (e) {
      return { name: m.name, label, templates: false, error: e.message };
    }
  }))).then((list) => (zooValue = list));
  return { value: zooValue, promise: zooPromise };
}

// Accuracy of a template model on its four splits, once per (model, intervention).
const splitCache = new Map();   // `${model}|${intervention}` -> {value, promise}
export function splitAccuracy(model, name, iv) {
  const key = `${name}|${JSON.stringify(iv)}`;
  let entry = splitCache.get(key);
  if (!entry) {
    entry = { value: null };
    entry.promise = (async () => {
      const out = {};
      for (const { split } of taskOf(model).splits) {
        await new Promise((resolve) => setTimeout(resolve, 0));   // the page stays responsive between splits
        try {
          const e = model.ioiEvaluate(iv, split);
          out[split] = { n: e.n, correct: e.correct, accuracy: e.accuracy, mean_prob_io: e.mean_prob_io, mean_prob_s: e.mean_prob_s, mean_logit_diff: e.mean_logit_diff };
        } catch (err) {
          out[split] = { error: err.message };
        }
      }
      entry.value = out;
      return out;
    })();
    entry.promise.catch(() => splitCache.delete(key));
    splitCache.set(key, entry);
  }
  return entry;
}

/** Several entries as one: {value: all values or null, promise: all values}. */
export function allOf(entries) {
  const value = entries.every((e) => e.value) ? entries.map((e) => e.value) : null;
  return { value, promise: Promise.all(entries.map((e) => e.promise)) };
}
