// The logit lens at the IOI sequence's last position (the core's ioi().lens): the residual
// stream read through the unembedding after the embedding and after each layer, as logit(IO),
// logit(S), p(IO) and p(S).
import { el } from '../../parts/dom.js';
import { bar } from '../../parts/prob-bars.js';
import { definePanel } from '../panel.js';
import { ioiInput } from './analysis.js';
import { fmt } from '../../parts/format.js';

/** One row per stage: [{stage, logitIo, logitS, probIo, probS}]. */
function stages(lens) {
  return Array.from({ length: lens.logit_io.shape[0] }, (_, i) => ({
    stage: i === 0 ? 'embedding' : `after layer ${i - 1}`,
    logitIo: lens.logit_io.data[i], logitS: lens.logit_s.data[i], probIo: lens.prob_io.data[i], probS: lens.prob_s.data[i],
  }));
}

function lensRow({ stage, logitIo, logitS, probIo, probS }) {
  const gap = probIo - probS;
  return el('tr', {},
    el('th', { scope: 'row' }, stage),
    el('td', { class: 'num' }, fmt(logitIo)),
    el('td', { class: 'num' }, fmt(logitS)),
    el('td', { class: 'num' }, fmt(probIo, 3)),
    el('td', { class: 'num' }, fmt(probS, 3)),
    el('td', {}, bar(gap, 1, { label: `p(IO) − p(S) = ${fmt(gap)}` })));
}

export default definePanel({
  name: 'ioi-lens',
  title: 'Logit lens',
  view: 'ioi',

  query: ioiInput,

  render(d) {
    const r = d.result;
    return el('div', {},
      el('p', { class: 'cs-explain' }, r ? r.lensExplain : ''),
      el('table', { class: 'cs-table' },
        el('thead', {}, el('tr', {}, ['stage', 'logit IO', 'logit S', 'p(IO)', 'p(S)', ''].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', { class: 'cs-lens' }, r ? stages(r.a.lens).map(lensRow) : [])));
  },
});
