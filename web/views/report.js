// <cs-report>: the reproduction view, a list of panels (web/panels/): the report's claims, each
// row linking to the view that shows it.
//
// Embed it on any page of the site:
//   <link rel="stylesheet" href="views/views.css">
//   <script type="module" src="views/report.js"></script>
//   <cs-report></cs-report>
// or one panel alone: <script type="module" src="panels/panel.js"></script>
//   <cs-panel name="report-claims"></cs-panel>
import { el } from '../parts/dom.js';
import { CsView } from './common.js';
import { showPanel } from '../panels/panel.js';
import reportClaims from '../panels/report/claims.js';

export const TAG = 'cs-report';
const PANELS = [reportClaims];

export class CsReport extends CsView {
  static view = 'report';
  static attributes = [];

  async render() {
    this.classList.add('cs-view');
    if (!this._sections) this.replaceChildren(...(this._sections = PANELS.map(() => el('section'))));
    await Promise.all(PANELS.map((p, i) => showPanel(this._sections[i], p, null)));
    this.dataset.ready = 'true';
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsReport);
