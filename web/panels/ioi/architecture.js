// The IOI task the model shown was trained on, and the interventions on its architecture: remove
// the positional embedding, or cut Q-, K- or V-composition (every path from layer 0 into the
// query, key or value of layer 1; models of two or more layers), with what replaces the cut
// heads' contribution (zero, a mean over the task's sequences, or a resample: the store's "abl",
// computed by the core). The controls write the store ("nopos", "cut": "*>*.q", "abl") and are
// patched in place, so focus stays where it was.
import { el } from '../../parts/dom.js';
import { pct } from '../../parts/prob-bars.js';
import { definePanel } from '../panel.js';
import { cutInput, taskOf } from './analysis.js';

let uid = 0;
const memo = new WeakMap();   // model -> {key, data}

const SYMBOLIC = 'The symbolic task of the IOI seed: in "<BOS> IO S S <MID>" or "<BOS> S IO S <MID>" the model must name the one said once (IO). One head alone cannot; two heads in one layer can; two layers of one head solve it through composition. The sentence-template models do the same on sentences.';

function explain(task, modelName) {
  if (!task) return SYMBOLIC;
  return `Indirect object identification on sentences: "When Mary and John went to the store, John gave a drink to" → Mary. ${modelName} knows ${task.names.length} first names and ${task.templates.length} templates; the last ${task.holdout_templates} templates and ${pct(task.holdout_pair_fraction)} of the name pairs were held out of training, so the splits below tell memorising from generalising.`;
}

function build(dispatch) {
  const id = `cs-ioi-arch-${++uid}`;
  const set = (values) => dispatch({ type: 'set', values });
  const removePos = el('input', { type: 'checkbox', id: `${id}-nopos`, onchange: () => set({ nopos: removePos.checked }) });
  const cut = el('select', { id: `${id}-cut`, onchange: () => set({ cut: cut.value ? [`*>*.${cut.value}`] : [] }) },
    el('option', { value: '' }, 'nothing'),
    el('option', { value: 'q' }, 'Q-composition (layer 0 → query of layer 1)'),
    el('option', { value: 'k' }, 'K-composition (layer 0 → key of layer 1)'),
    el('option', { value: 'v' }, 'V-composition (layer 0 → value of layer 1)'));
  const abl = el('select', { id: `${id}-abl`, onchange: () => set({ abl: abl.value }) },
    el('option', { value: 'zero' }, 'zero: the cut heads\' output is removed'),
    el('option', { value: 'mean' }, 'mean: replaced by its mean over the task\'s sequences, at each position'),
    el('option', { value: 'mean-all' }, 'mean-all: replaced by one mean over the sequences and positions'),
    el('option', { value: 'resample' }, 'resample: replaced by its output on another sequence of the task'));
  const cutNote = el('span', { class: 'cs-note' });
  const explainLine = el('p', { class: 'cs-explain' });
  const node = el('div', {},
    explainLine,
    el('div', { class: 'cs-controls' },
      el('div', { class: 'cs-field cs-check' }, removePos, el('label', { for: removePos.id }, 'Remove the positional embedding')),
      el('div', { class: 'cs-field' }, el('label', { for: cut.id }, 'Cut composition'), cut, cutNote),
      el('div', { class: 'cs-field' }, el('label', { for: abl.id }, 'Ablation'), abl)));
  node.csRefs = { removePos, cut, abl, cutNote, explainLine };
  return node;
}

function update(node, d) {
  const r = node.csRefs;
  r.explainLine.textContent = d.explain;
  r.removePos.checked = d.nopos;
  r.removePos.disabled = !d.hasPos;
  r.cut.value = d.cut;
  r.cut.disabled = !d.twoLayer;
  r.abl.value = d.abl;
  r.abl.disabled = !d.twoLayer;
  r.cutNote.textContent = d.twoLayer ? '' : 'only for models with two or more layers';
  return true;
}

export default definePanel({
  name: 'ioi-architecture',
  title: 'Indirect object identification: architecture',
  view: 'ioi',

  query({ model, modelName, state }) {
    const key = `${modelName}|${state.nopos}|${cutInput(state)}|${state.abl}`;
    const hit = memo.get(model);
    if (hit?.key === key) return hit.data;
    const data = {
      explain: explain(taskOf(model), modelName), nopos: state.nopos, cut: cutInput(state), abl: state.abl || 'zero',
      twoLayer: model.config.n_layers > 1, hasPos: model.config.pos_embed !== 'none',
    };
    memo.set(model, { key, data });
    return data;
  },

  render(d, { dispatch }) {
    const node = build(dispatch);
    update(node, d);
    return node;
  },

  update,
});
