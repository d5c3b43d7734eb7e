// Each head's direct effect on the IOI logits (the core's ioi()): projected on logit(IO) −
// logit(S) (contrastive) and on logit(IO) + logit(S) (additive), with the cosines, then the direct
// path and the bias; the most contrastive and most additive heads as the core names them, with
// their shares. The numbers of the prediction can be downloaded (JSON, and the heads as CSV).
import { el } from '../../parts/dom.js';
import { bar, pct } from '../../parts/prob-bars.js';
import { downloadCSV, downloadJSON } from '../../parts/download.js';
import { definePanel } from '../panel.js';
import { ioiInput } from './analysis.js';
import { fmt } from '../../parts/format.js';

/** Each head's row, each MLP's (models with MLPs), then the direct path and the bias: [{part, diff, sum, cd?, cs?}]. */
export function headRows(a) {
  const [L, H] = a.head_diff.shape;
  const rows = [];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const k = l * H + h;
      rows.push({ part: `L${l}H${h}`, diff: a.head_diff.data[k], sum: a.head_sum.data[k], cd: a.head_cos_diff.data[k], cs: a.head_cos_sum.data[k] });
    }
  }
  // A model with MLPs: each layer's MLP output is a term of its own (null without MLPs).
  if (a.mlp_diff) for (let l = 0; l < a.mlp_diff.data.length; l++) rows.push({ part: `MLP${l}`, diff: a.mlp_diff.data[l], sum: a.mlp_sum.data[l] });
  rows.push({ part: 'direct path (embedding)', diff: a.direct_diff, sum: a.direct_sum });
  rows.push({ part: 'bias', diff: a.bias_diff, sum: a.bias_sum });
  return rows;
}

/** The table body: one row per part, the values with bars on a common scale. */
function headTable(rows) {
  const bound = Math.max(1e-6, ...rows.flatMap((x) => [Math.abs(x.diff), Math.abs(x.sum)]));
  return el('tbody', { class: 'cs-heads' }, rows.map((x) => el('tr', {},
    el('th', { scope: 'row' }, x.part),
    el('td', { class: 'num' }, fmt(x.diff)), el('td', {}, bar(x.diff, bound, { label: `${x.part} difference ${fmt(x.diff)}` })),
    el('td', { class: 'num' }, fmt(x.sum)), el('td', {}, bar(x.sum, bound, { label: `${x.part} sum ${fmt(x.sum)}` })),
    el('td', { class: 'num' }, x.cd === undefined ? '' : fmt(x.cd)),
    el('td', { class: 'num' }, x.cs === undefined ? '' : fmt(x.cs)))));
}

/** Which head adds most and which contrasts most, as the core names them, with their shares. */
function headsNote(a, rows) {
  const H = a.head_diff.shape[1];
  const share = (t, name) => { const [l, h] = name.slice(1).split('H').map(Number); return t.data[l * H + h]; };
  const parts = [];
  if (rows.length > 3 && a.most_contrastive) parts.push(`Most contrastive head: ${a.most_contrastive} (${pct(share(a.head_share_diff, a.most_contrastive))} of the logit difference).`);
  if (rows.length > 3 && a.most_additive) parts.push(`Most additive head: ${a.most_additive} (${pct(share(a.head_share_sum, a.most_additive))} of logit(IO) + logit(S)).`);
  parts.push(`The parts sum to the logit difference ${fmt(a.logit_diff)}.`);
  return parts.join(' ');
}

/** What the panels show, for the JSON download. @returns {any} */
export function numbersOf(d) {
  const { a, prob, predicted, right } = d.result;
  const common = { predicted, right, prob_io: a.prob_io, prob_s: a.prob_s, logit_diff: a.logit_diff };
  if (d.kind === 'symbolic') {
    return { model: d.model, sequence: d.words, names: Object.fromEntries(d.letters.map((L, i) => [L, d.names[i]])), io: d.io, s: d.s, ...common,
      probabilities: Object.fromEntries(d.letters.map((L, i) => [L, prob[a.name_ids[i]]])), heads: headRows(a) };
  }
  const { task, names, t } = d;
  return {
    model: d.modelName, task: 'ioi_templates', sentence: d.sentence.text,
    template: { index: t, text: task.templates[t], held_out: d.heldT },
    order: d.order ? 'SIOS' : 'IOSS', place: d.usesPlace ? task.places[d.place] : null, object: d.usesObject ? task.objects[d.object] : null,
    pair_held_out: d.sentence.pairHeld, split: d.sentence.split, tokens: d.words, intervention: d.intervention,
    io: names[d.io], s: names[d.s], ...common,
    probabilities: Object.fromEntries(names.map((n, i) => [n, prob[a.name_ids[i]]])), heads: headRows(a),
  };
}

function downloadHeadsCSV(d) {
  const n = numbersOf(d);
  // With a template sentence, every row carries it (one table, no comment lines).
  const sentence = typeof n.sentence === 'string' ? [n.sentence] : [];
  downloadCSV('circuitscope-ioi-heads.csv', [
    ['part', 'difference', 'sum', 'cos_difference', 'cos_sum', ...(sentence.length ? ['sentence'] : [])],
    ...n.heads.map((x) => [x.part, x.diff, x.sum, x.cd ?? '', x.cs ?? '', ...sentence])]);
}

export default definePanel({
  name: 'ioi-heads',
  title: 'Each head\'s direct effect on the logits',
  view: 'ioi',

  query: ioiInput,

  render(d) {
    const a = d.result?.a;
    const rows = a ? headRows(a) : [];
    return el('div', {},
      el('p', { class: 'cs-explain' }, 'Projected on logit(IO) − logit(S) (the contrastive, difference direction: it separates the two names) and on logit(IO) + logit(S) (the additive, sum direction: it raises both names over the rest).'),
      el('table', { class: 'cs-table' },
        el('thead', {}, el('tr', {}, ['part', 'difference: logit(IO) − logit(S)', '', 'sum: logit(IO) + logit(S)', '', 'cos with difference', 'cos with sum'].map((h) => el('th', { scope: 'col' }, h)))),
        headTable(rows)),
      el('p', { class: 'cs-note' }, a ? headsNote(a, rows) : ''),
      el('div', { class: 'button-row controls-only' },
        el('button', { type: 'button', onclick: () => d.result && downloadJSON('circuitscope-ioi.json', numbersOf(d)) }, 'Download the numbers (JSON)'),
        el('button', { type: 'button', onclick: () => d.result && downloadHeadsCSV(d) }, 'Per-head contributions (CSV)')));
  },
});
