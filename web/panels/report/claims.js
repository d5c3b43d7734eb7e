// The reproduction report's claims (models/report.json, written by `circuitscope report`:
// {claims: [{id, seed, claim, seed_figure, measured, verdict, view}]}): each claim of the seeds
// beside what the shipped models measure, each row linking to the view that shows it.
import { el } from '../../parts/dom.js';
import { downloadCSV } from '../../parts/download.js';
import { getJSON, decodeHash, encodeState } from '../../store.js';
import { definePanel } from '../panel.js';

/**
 * The report's `view` ("#view=ioi&model=ioi-2l1h&cut=Q", written by the C++ report in the
 * link form of version 1, without the version) as a link the page opens: versioned, checked by
 * the same codec as any shared link; null when it is not one.
 */
export function viewLink(view) {
  if (typeof view !== 'string' || !view.startsWith('#')) return null;
  const p = new URLSearchParams(view.slice(1));
  if (!p.has('v')) p.set('v', '1');
  const { state, error } = decodeHash(p.toString());
  return error ? null : `#${encodeState(state)}`;
}

// The core's outcome of each verdict (circuitscope report: claim_outcome): a tick, half a tick,
// a cross, or neither for a figure measured without a threshold.
const OUTCOMES = {
  reproduced: ['cs-verdict-reproduced', '✓'], partly: ['cs-verdict-partly', '◐'],
  'not reproduced': ['cs-verdict-not', '✗'], measured: ['cs-verdict-neutral', '–'],
};
const outcomeClass = (outcome) => OUTCOMES[outcome] ?? OUTCOMES.measured;

const SEEDS = {
  '000': 'framework, one layer', '001': 'minimal IOI circuit', '002': 'gradient leading terms',
  '003': 'mathematical framework', '004': 'induction heads',
};
const SRC = 'models/report.json';

export default definePanel({
  name: 'report-claims',
  title: 'Reproduction report: the source papers\' claims, measured',
  view: 'report',
  needsModel: false,

  async query() {
    const report = await getJSON(SRC);
    return { claims: Array.isArray(report?.claims) ? report.claims : null, summary: typeof report?.summary?.sentence === 'string' ? report.summary.sentence : '' };
  },

  render({ claims, summary }) {
    if (!claims) {
      return el('p', { class: 'cs-unavailable', role: 'status', dataset: { missing: 'report' } },
        `The report is not available yet: ${SRC} has not been generated. Run \`circuitscope report\` after training the model zoo, then rebuild the site.`);
    }
    const rows = claims.map((c) => {
      const verdict = String(c.verdict ?? '');
      const [cls, mark] = outcomeClass(c.outcome);
      const view = viewLink(c.view);
      return el('tr', { dataset: { id: String(c.id ?? '') } },
        el('td', {}, String(c.claim ?? '')),
        el('td', {}, `${String(c.seed ?? '')}${SEEDS[c.seed] ? ` (${SEEDS[c.seed]})` : ''}`),
        el('td', {}, String(c.seed_figure ?? '')),
        el('td', {}, String(c.measured ?? '')),
        el('td', { class: cls }, `${mark} ${verdict}`),
        el('td', {}, view ? el('a', { href: view, 'aria-label': `Open the view for: ${String(c.claim ?? '')}` }, 'open view') : ''));
    });
    const csv = claims.map(({ id, seed, claim, seed_figure, measured, verdict, outcome, view }) => ({ id, seed, claim, seed_figure, measured, verdict, outcome, view }));
    return el('div', {},
      el('p', { class: 'cs-note', role: 'status' }, `${summary} Each row links to the view that shows it.`),
      el('div', { class: 'cs-scroll' }, el('table', { class: 'cs-table cs-report-table' },
        el('thead', {}, el('tr', {}, ['claim', 'source', "source's figure", 'measured here', 'verdict', 'see it'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, rows))),
      el('div', { class: 'cs-buttons' }, el('button', { type: 'button', onclick: () => downloadCSV('report.csv', csv) }, 'Download CSV')));
  },
});
