// <cs-report>: the reproduction report. Reads models/report.json (written by `circuitscope
// report`: {claims: [{id, seed, claim, seed_figure, measured, verdict, view}]}) and lists each
// claim of the seeds beside what the shipped models measure, each row linking to the view that
// shows it (the `view` hash, e.g. "#view=ioi&model=ioi-2l1h&cut=Q").
//
// Embed it on any page of the site:
//   <link rel="stylesheet" href="views/views.css">
//   <script type="module" src="views/report.js"></script>
//   <cs-report></cs-report>
// Optional attribute `src` (default models/report.json, relative to the site root). No state of
// its own; links change the page's hash, which the app turns into state.
import { el, getJSON, downloadCSV, CsView } from './common.js';
import { decodeHash, encodeState } from '../store.js';

export const TAG = 'cs-report';

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

// Verdicts: reproduced (and the extensions' "solved", "appears", "shown") get a tick, "not ..."
// and "does not ..." a cross, anything else ("measured only") neither.
function verdictClass(verdict) {
  if (/^(not|does not|memorised)/i.test(verdict) || /: not /i.test(verdict)) return ['cs-verdict-not', '✗'];
  if (/^(reproduced|solved|appears|shown)/i.test(verdict)) return ['cs-verdict-reproduced', '✓'];
  return ['cs-verdict-neutral', '–'];
}

const SEEDS = {
  '000': 'framework, one layer', '001': 'minimal IOI circuit', '002': 'gradient leading terms',
  '003': 'mathematical framework', '004': 'induction heads',
};

export class CsReport extends CsView {
  static view = 'report';
  static attributes = [];

  async render() {
    if (this._built) return;
    this._built = true;
    this.classList.add('cs-view');
    const status = el('p', { class: 'cs-note', role: 'status' }, 'Loading the report…');
    const panel = el('section', { class: 'cs-panel', 'aria-labelledby': 'cs-report-h' },
      el('h2', { id: 'cs-report-h' }, 'Reproduction report: the seeds\' claims, measured'), status);
    this.replaceChildren(panel);
    const src = this.getAttribute('src') || 'models/report.json';
    const report = await getJSON(src);
    const claims = Array.isArray(report?.claims) ? report.claims : null;
    if (!claims) {
      status.textContent = '';
      panel.append(el('p', { class: 'cs-unavailable', role: 'status', dataset: { missing: 'report' } },
        `The report is not available yet: ${src} has not been generated. Run \`circuitscope report models\` after training the model zoo, then rebuild the site.`));
      this.dataset.ready = 'true';
      return;
    }
    const reproduced = claims.filter((c) => /^reproduced/i.test(String(c.verdict))).length;
    status.textContent = `${reproduced} of ${claims.length} claims reproduced. Each row links to the view that shows it.`;
    const tbody = el('tbody', {}, claims.map((c) => {
      const verdict = String(c.verdict ?? '');
      const [cls, mark] = verdictClass(verdict);
      const view = viewLink(c.view);
      return el('tr', { dataset: { id: String(c.id ?? '') } },
        el('td', {}, String(c.claim ?? '')),
        el('td', {}, `${String(c.seed ?? '')}${SEEDS[c.seed] ? ` (${SEEDS[c.seed]})` : ''}`),
        el('td', {}, String(c.seed_figure ?? '')),
        el('td', {}, String(c.measured ?? '')),
        el('td', { class: cls }, `${mark} ${verdict}`),
        el('td', {}, view ? el('a', { href: view, 'aria-label': `Open the view for: ${String(c.claim ?? '')}` }, 'open view') : ''));
    }));
    panel.append(
      el('div', { class: 'cs-scroll' }, el('table', { class: 'cs-table cs-report-table' },
        el('thead', {}, el('tr', {}, ['claim', 'seed', "seed's figure", 'measured here', 'verdict', 'see it'].map((h) => el('th', { scope: 'col' }, h)))),
        tbody)),
      el('div', { class: 'cs-buttons' },
        el('button', { type: 'button', onclick: () => downloadCSV('report.csv', claims.map(({ id, seed, claim, seed_figure, measured, verdict, view }) => ({ id, seed, claim, seed_figure, measured, verdict, view }))) }, 'Download CSV')));
    this.dataset.ready = 'true';
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsReport);
