// The sentence-template builder (models whose ioiTask() is not null): a template (those held out
// of training are marked), the order, two of the model's names, a place and an object, e.g.
// "When Mary and John went to the store, John gave a drink to" -> Mary; then the sentence as the
// core builds it, its tokens, and the split it belongs to. Patched in place on every change.
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { ioiInput } from './analysis.js';
import { field, nameControls, messageParts, syncShared } from './builder.js';

let uid = 0;

function build(dispatch) {
  const id = `cs-ioi-tpl-${++uid}`;
  const set = (values) => dispatch({ type: 'set', values });
  const node = el('div');
  const r = /** @type {any} */ ({ ...nameControls(id, node, set), ...messageParts() });
  r.tpl = el('select', { id: `${id}-tpl`, class: 'cs-tpl-select', onchange: () => set({ tpl: Number(r.tpl.value) }) });
  r.place = el('select', { id: `${id}-place`, onchange: () => set({ place: r.place.value }) });
  r.object = el('select', { id: `${id}-object`, onchange: () => set({ object: r.object.value }) });
  r.tplNote = el('p', { class: 'cs-note' });
  r.sentenceLine = el('p', { class: 'cs-sentence', 'aria-label': 'The sentence the model sees' });
  r.split = el('p', { class: 'cs-note cs-split' });
  node.append(
    el('div', { class: 'cs-controls' }, field('Template', r.tpl), field('Place', r.place), field('Object', r.object)),
    r.tplNote, r.row, r.notice, r.message, r.sentenceLine, r.sequence, r.split);
  node.csRefs = r;
  return node;
}

/** The options of the task (once per task); the templates' texts follow the order. */
function syncOptions(node, r, task, order, modelName) {
  if (node.csTask !== modelName) {
    node.csTask = modelName;
    r.place.replaceChildren(...task.places.map((p) => el('option', { value: p }, p)));
    r.object.replaceChildren(...task.objects.map((o) => el('option', { value: o }, o)));
    r.tpl.replaceChildren(...task.templates.map((_, i) => el('option', { value: String(i) })));
    node.csOrder = null;
  }
  if (node.csOrder !== order) {
    node.csOrder = order;
    task.template_info.forEach((info, i) => {
      const o = r.tpl.options[i];
      o.textContent = `${i + 1}. ${info.readable[order]}${info.held_out ? '  (held out of training)' : ''}`;
      o.dataset.heldOut = String(info.held_out);
    });
  }
}

/** The sentence with its answer (or the template alone while the names are wrong), and its split. */
function syncSentence(r, d) {
  const { task, names, sentence } = d;
  if (!sentence) {
    r.sentenceLine.replaceChildren(el('span', { class: 'cs-note' }, `Template: ${task.template_info[d.t].readable[d.order]}`));
    delete r.sentenceLine.dataset.sentence;
    r.split.replaceChildren();
    delete r.split.dataset.split;
    return;
  }
  r.sentenceLine.replaceChildren(
    el('q', { class: 'cs-sentence-text' }, sentence.text), ' → ?',
    el('span', { class: 'cs-note' }, `  (the answer: ${names[d.io]})`));
  r.sentenceLine.dataset.sentence = sentence.text;
  const train = sentence.split === 'train';
  r.split.replaceChildren(
    el('span', { class: ['cs-badge', train ? 'ok' : 'held'] }, train ? 'trained on' : 'held out of training'),
    ` Split "${sentence.split}": the template was ${d.heldT ? 'held out of training' : 'trained on'}; the name pair ${names[d.io]} and ${names[d.s]} was ${sentence.pairHeld ? 'held out of training' : 'trained on'}.`);
  r.split.dataset.split = sentence.split;
}

function update(node, d) {
  if (d.kind !== 'templates' || !node.csRefs) return false;
  node.csData = d;
  const r = node.csRefs;
  syncOptions(node, r, d.task, d.order, d.modelName);
  syncShared(r, d);
  r.tpl.value = String(d.t);
  r.place.value = d.task.places[d.place];
  r.object.value = d.task.objects[d.object];
  r.place.disabled = !d.usesPlace;
  r.object.disabled = !d.usesObject;
  const unused = [!d.usesPlace && 'place', !d.usesObject && 'object'].filter(Boolean);
  r.tplNote.textContent = unused.length ? `This template has no ${unused.join(' and no ')}.` : '';
  syncSentence(r, d);
  return true;
}

export default definePanel({
  name: 'ioi-sentence',
  title: 'Build a sentence',
  view: 'ioi',

  query: ioiInput,

  render(d, { dispatch }) {
    if (d.kind !== 'templates') return el('p', { class: 'cs-note' }, `${d.modelName} is a symbolic IOI model: build a sequence instead (the panel ioi-sequence).`);
    const node = build(dispatch);
    update(node, d);
    return node;
  },

  update,
});
