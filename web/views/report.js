// <cs-report>: the reproduction view, a list of panels (web/panels/): the report's claims, each
// row linking to the view that shows it.
//
// Embed it on any page, this site's or another's (SITE is where the site is served):
//   <script type="module" src="SITE/views/report.js"></script>
//   <cs-report></cs-report>
// or one panel alone: <script type="module" src="SITE/panels/panel.js"></script>
//   <cs-panel name="report-claims"></cs-panel>
// (it links its own stylesheet, views/views.css; from another origin the site must send the CORS
// headers the README lists), or as an iframe that sizes itself: each panel's Embed button copies
// one (the panel alone, optionally without controls, with the host line
//   <script src="https://HOST/embed.js" async></script>).
import { el } from '../parts/dom.js';
import { CsView } from '../element.js';
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
    await Promise.all(PANELS.map((p, i) => showPanel(this._sections[i], p, null, this.store)));
    this.dataset.ready = 'true';
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsReport);
