// Parts of the two IOI builders (panels/ioi/sequence.js for the symbolic task, sentence.js for the
// sentence templates): the order, the two name fields with the model's names as suggestions, the
// messages about the input, and the tokens the model sees. Plain functions; a builder panel keeps
// the refs on its node and its latest data in node.csData, which the fields' handlers read.
import { el } from '../../parts/dom.js';
import { shownName, resolveName, findWord } from './analysis.js';

/** Whether the model knows a typed name (it is used as soon as it does). */
function knows(d, text) {
  return d.kind === 'templates' ? findWord(text, d.names) >= 0 : resolveName(text, d.names, d.letters) !== null;
}

export const field = (labelText, control, extra) => el('div', { class: 'cs-field' }, el('label', { for: control.id }, labelText), control, extra);

/**
 * The order picker, the IO and S fields and their suggestions: {order, io, s, datalist, row}.
 * A name is used as soon as it is one the model knows (typing or picking from the list); anything
 * else when the field is committed (Enter or leaving it), so that no message flickers while a
 * name is half typed. Leaving a field shows the name as the model spells it.
 */
export function nameControls(id, node, set) {
  const order = el('select', { id: `${id}-order`, onchange: () => set({ order: order.value }) },
    el('option', { value: 'IOSS' }, 'IO S S  (e.g. "Mary John John")'),
    el('option', { value: 'SIOS' }, 'S IO S  (e.g. "John Mary John")'));
  const datalist = el('datalist', { id: `${id}-known` });
  const nameInput = (key) => {
    const input = el('input', {
      type: 'text', id: `${id}-${key}`, list: datalist.id, autocomplete: 'off', spellcheck: 'false', maxlength: 64,
      oninput: () => { if (knows(node.csData, input.value)) set({ [key]: input.value.trim() }); },
      onchange: () => set({ [key]: input.value.trim() }),
      onblur: () => { input.value = shownName(node.csData.kind, input.value.trim(), node.csData.names, node.csData.letters); },
    });
    return input;
  };
  const io = nameInput('io');
  const s = nameInput('s');
  const row = el('div', { class: 'cs-controls' },
    field('Order', order), field('Indirect object (said once)', io), field('Subject (said twice)', s), datalist);
  return { order, io, s, datalist, row };
}

/** The notice (link settings the model lacks), the message (what is wrong with the names) and the tokens. */
export function messageParts() {
  return {
    notice: el('p', { class: 'cs-notice', role: 'status', hidden: true }),
    message: el('p', { class: 'cs-message', role: 'alert', hidden: true }),
    sequence: el('p', { class: 'cs-sequence', 'aria-label': 'The tokens the model sees' }),
  };
}

/** The token strip: each token's text, tagged (IO, S, or the symbolic letter) below it. */
export function tokenStrip(strip) {
  return (strip ?? []).map(({ text, tag }) => el('span', { class: 'cs-token' },
    el('span', { class: 'cs-token-text' }, text),
    el('span', { class: 'cs-token-id' }, tag)));
}

/** Shows the data's names, order, notices, problems and tokens in the shared parts. */
export function syncShared(r, d) {
  r.order.value = d.order ? 'SIOS' : 'IOSS';
  if (r.knownFor !== d.names.join('\n')) {
    r.knownFor = d.names.join('\n');
    r.datalist.replaceChildren(...d.names.map((n) => el('option', { value: n })));
  }
  for (const [input, text] of [[r.io, d.ioText], [r.s, d.sText]]) {
    if (document.activeElement !== input) input.value = shownName(d.kind, text, d.names, d.letters);
  }
  r.notice.textContent = (d.notices ?? []).join(' ');
  r.notice.hidden = !d.notices?.length;
  r.message.textContent = d.problems.join(' ');
  r.message.hidden = d.problems.length === 0;
  r.sequence.replaceChildren(...tokenStrip(d.strip));
}
