// What the IOI model predicts for the sequence or sentence built above: right or wrong, its most
// probable next token, p(IO), p(S) and the logit difference (the core's ioi()), and its
// probability for each name: all six of the symbolic task; for a template model the most
// probable names, and IO and S wherever they rank.
import { el } from '../../parts/dom.js';
import { pct, probRow, probBars } from '../../parts/prob-bars.js';
import { definePanel } from '../panel.js';
import { ioiInput } from './analysis.js';
import { fmt } from '../../parts/format.js';

const TOP_NAMES = 5;   // probability rows of a template model: the most probable names, plus IO and S
const badge = (right) => el('span', { class: ['cs-badge', right ? 'ok' : 'bad'] }, right ? '✓ right' : '✗ wrong');
const numbers = (a) => `p(IO) = ${fmt(a.prob_io, 3)}, p(S) = ${fmt(a.prob_s, 3)}, logit difference ${fmt(a.logit_diff)}.`;

function symbolic(d) {
  const { a, prob, predicted, right } = d.result;
  const { names, letters, io, s } = d;
  const showName = (L) => `${names[letters.indexOf(L)]} (${L})`;
  const verdict = [badge(right), ` The model's most probable next token is ${letters.includes(predicted) ? showName(predicted) : predicted}; the answer is ${showName(io)}. ${numbers(a)}`];
  const rows = letters.map((L, i) => {
    const p = prob[a.name_ids[i]];
    const role = L === io ? 'IO' : L === s ? 'S' : '';
    return probRow({ label: `${names[i]} (${L})${role ? ` · ${role}` : ''}`, p, name: names[i],
      className: role && `role-${role.toLowerCase()}`, dataset: { name: L, prob: p.toFixed(6) } });
  });
  return { verdict, rows, note: '', dataset: { ready: 'true', predicted, io, right: String(right) } };
}

function templates(d) {
  const { a, prob, predicted, right } = d.result;
  const { names, io, s } = d;
  const nameIds = Array.from(a.name_ids);   // the core's name tokens, in the task's order
  const verdict = [badge(right), ` The model's most probable next word is "${predicted}"${nameIds.includes(a.predicted) ? '' : ' (not a name)'}; the answer is ${names[io]}. ${numbers(a)}`];
  // The most probable names, and IO and S wherever they rank (the core's ranks among the names).
  const pName = nameIds.map((id) => prob[id]);
  const byProb = Array.from(a.name_order);
  const shown = byProb.filter((k, rank) => rank < TOP_NAMES || k === io || k === s);
  const rows = shown.map((k) => {
    const p = pName[k];
    const role = k === io ? 'IO' : k === s ? 'S' : '';
    const rank = byProb.indexOf(k) + 1;
    return probRow({
      label: [`${rank}. ${names[k]}${role ? ` · ${role}` : ''} `,
        el('span', { class: ['cs-mark', k === io ? 'ok' : 'bad'] }, k === io ? '✓ right answer' : '✗ wrong'),
        nameIds[k] === a.predicted ? el('span', { class: 'cs-mark' }, ' · predicted') : null],
      p, name: names[k], className: role && `role-${role.toLowerCase()}`,
      dataset: { name: names[k], prob: p.toFixed(6), role: role.toLowerCase(), rank: String(rank) },
    });
  });
  const mass = a.name_prob_total;
  const note = `Shown: the ${TOP_NAMES} most probable of the ${names.length} names, and IO and S wherever they rank (numbers are ranks among the names). All names together get ${pct(mass)}; the other words of the vocabulary ${pct(Math.max(0, 1 - mass))}.`;
  return { verdict, rows, note,
    dataset: { ready: 'true', predicted, io: names[io], s: names[s], right: String(right), sentence: d.sentence.text, probIo: String(a.prob_io), probS: String(a.prob_s) } };
}

export default definePanel({
  name: 'ioi-prediction',
  title: 'What the model predicts',
  view: 'ioi',

  query: ioiInput,

  render(d) {
    const shown = !d.result ? { verdict: [], rows: [], note: '', dataset: { ready: 'false' } }
      : d.kind === 'templates' ? templates(d) : symbolic(d);
    return el('div', {},
      el('div', { class: 'cs-results', dataset: shown.dataset }),
      el('p', { class: 'cs-verdict', role: 'status', 'aria-live': 'polite' }, shown.verdict),
      probBars(shown.rows, "The model's probability for each name"),
      el('p', { class: 'cs-note' }, shown.note));
  },
});
