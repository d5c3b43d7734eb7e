// The symbolic IOI task's builder: the order ("<BOS> IO S S <MID>" or "<BOS> S IO S <MID>"), which
// of the six names (the core's, A..F) is the indirect object and which the subject (by letter or display name),
// and the six display names; then the tokens the model sees. Patched in place on every change,
// so focus and the text being typed stay.
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { ioiInput, DEFAULT_NAMES, parseNames } from './analysis.js';
import { nameControls, messageParts, syncShared } from './builder.js';

let uid = 0;

function build(dispatch, letters) {
  const id = `cs-ioi-seq-${++uid}`;
  const set = (values) => dispatch({ type: 'set', values });
  const node = el('div');
  const r = /** @type {any} */ ({ ...nameControls(id, node, set), ...messageParts() });
  r.nameInputs = letters.map((L, i) => {
    const input = el('input', {
      type: 'text', id: `${id}-name-${L}`, size: 8, autocomplete: 'off', spellcheck: 'false', maxlength: 24,
      onblur: () => { input.value = input.value.replace(/,/g, ' ').trim() || DEFAULT_NAMES[i]; },
      onchange: () => {
        const names = parseNames(node.csData.names);
        names[i] = input.value.replace(/,/g, ' ').trim() || DEFAULT_NAMES[i];
        set({ names: names.join(',') });
      },
    });
    return input;
  });
  node.append(
    r.row,
    el('fieldset', { class: 'cs-names' },
      el('legend', {}, `Display names (the model still sees the tokens ${letters[0]}–${letters[letters.length - 1]})`),
      letters.map((L, i) => el('span', { class: 'cs-field cs-inline' }, el('label', { for: r.nameInputs[i].id }, `${L} =`), r.nameInputs[i]))),
    r.notice, r.message, r.sequence);
  node.csRefs = r;
  return node;
}

function update(node, d) {
  if (d.kind !== 'symbolic' || !node.csRefs) return false;
  node.csData = d;
  const r = node.csRefs;
  syncShared(r, d);
  r.nameInputs.forEach((input, i) => { if (document.activeElement !== input) input.value = d.names[i]; });
  return true;
}

export default definePanel({
  name: 'ioi-sequence',
  title: 'Build a sequence',
  view: 'ioi',

  query: ioiInput,

  render(d, { dispatch }) {
    if (d.kind !== 'symbolic') return el('p', { class: 'cs-note' }, `${d.modelName} is a sentence-template model: build a sentence instead (the panel ioi-sentence).`);
    const node = build(dispatch, d.letters);
    update(node, d);
    return node;
  },

  update,
});
