// <cs-ioi>: indirect-object identification, a list of panels (web/panels/ioi/). Two kinds of task:
//  - the symbolic task of seed 001: build a sequence "<BOS> IO S S <MID>" or "<BOS> S IO S <MID>"
//    from six names (tokens A-F that can be given display names);
//  - the sentence-template models (model.ioiTask() not null): a template builder. Pick a template
//    (those held out of training are marked), the order, two of the model's names, a place and an
//    object: "When Mary and John went to the store, John gave a drink to" -> Mary.
// Either way: which name the model predicts and its probability for each name (right or wrong),
// how each head splits the logit difference into the additive (sum) and contrastive (difference)
// directions, the attention patterns and a logit lens; switch between the shipped architectures
// with their accuracy (symbolic: over all 60 sequences, with the seeds' spread; templates: on the
// training split and the three held-out splits), and remove the positional embedding or cut
// Q/K/V composition (2-layer models), live.
//
// Embed it on any page, this site's or another's (SITE is where the site is served; paths
// resolve from the module's URL):
//   <script type="module" src="SITE/views/ioi.js"></script>
//   <cs-ioi model="ioi-1l2h"></cs-ioi>
// or one panel alone: <script type="module" src="SITE/panels/panel.js"></script>
//   <cs-panel name="ioi-prediction" model="ioi-1l2h"></cs-panel>
// (it links its own stylesheet, views/views.css; from another origin the site must send the CORS
// headers the README lists), or as an iframe that sizes itself: each panel's Embed button copies
// one (the panel alone, optionally without controls, with the host line
//   <script src="https://HOST/embed.js" async></script>).
// (panels: ioi-architecture, ioi-accuracy, ioi-zoo, ioi-sequence or ioi-sentence, ioi-prediction,
// ioi-heads, ioi-patterns, ioi-patching, ioi-lens).
// Attributes (standalone) or state keys (set by the app as `element.state = {...}`):
//   model (ioi-1l1h | ioi-1l2h | ioi-2l1h | ioi-1l2h-nopos | ioi-templates-1l2h | ioi-templates-2l),
//   order (IOSS | SIOS), io, s (symbolic: A..F or a display name; templates: one of the model's
//   names, in any case; unset: the first two names), names (symbolic: six display names,
//   comma-separated), tpl (templates: the template's index, from 0), place, object (templates: a
//   place and an object of the task), removePos ("1"), cut (Q | K | V), patch (denoise | noise:
//   activation patching, the ioi-patching panel).
// Changes the user makes are reported with a bubbling `cs-state` event (detail: the changed keys).
// All user text reaches the page through textContent (el() never parses HTML).
import { el } from '../parts/dom.js';
import { getModel } from '../store.js';
import { CsView } from '../element.js';
import { showPanel } from '../panels/panel.js';
import architecture from '../panels/ioi/architecture.js';
import * as accuracy from '../panels/ioi/accuracy.js';
import * as zoo from '../panels/ioi/zoo.js';
import sequence from '../panels/ioi/sequence.js';
import sentence from '../panels/ioi/sentence.js';
import prediction from '../panels/ioi/prediction.js';
import heads from '../panels/ioi/heads.js';
import patterns from '../panels/ioi/patterns.js';
import lens from '../panels/ioi/lens.js';
import patching from '../panels/ioi/patching.js';

export const TAG = 'cs-ioi';

// The sections, in order; the builder shows the sequence or the sentence panel (by the model).
const SECTIONS = ['architecture', 'accuracy', 'zoo', 'builder', 'prediction', 'heads', 'patterns', 'patching', 'lens'];
const RESULTS = { prediction, heads, patterns, patching, lens };

export class CsIoi extends CsView {
  static view = 'ioi';
  static attributes = ['model', 'order', 'io', 's', 'names', 'tpl', 'place', 'object', 'patch'];

  async render() {
    this.classList.add('cs-view');
    if (!this._sections) {
      this._sections = Object.fromEntries(SECTIONS.map((k) => [k, el('section')]));
      this.replaceChildren(...Object.values(this._sections));
    }
    this.dataset.ready = 'false';
    this.dataset.complete = 'false';
    const seq = (this._seq = (this._seq ?? 0) + 1);
    const state = this.state;
    const name = this.modelName;
    let model;
    try {
      model = await getModel(name);
    } catch (e) {
      if (seq === this._seq) this.showError(new Error(`${name} is not available: ${e.message}`));
      return;
    }
    // A newer render, or a change of the state that one will show, makes this one stale.
    const stale = () => seq !== this._seq || this.state !== state;
    if (stale()) return;
    this.clearError();
    const s = this._sections;
    const kind = model.ioiKind() === 'templates' ? 'templates' : 'symbolic';
    this.dataset.kind = kind;
    await showPanel(s.architecture, architecture, name, this.store);
    await showPanel(s.builder, kind === 'templates' ? sentence : sequence, name, this.store);
    for (const [k, panel] of Object.entries(RESULTS)) await showPanel(s[k], panel, name, this.store);
    if (stale()) return;
    // The view is open (data-ready) once the sentence and its results are shown. The accuracy
    // (on the four splits of a template model, computed once per model and intervention: about
    // a second the first time) and the models compared show "computing" until they are there;
    // data-complete says when they are.
    this.dataset.ready = 'true';
    this.markRendered();
    const args = { model, modelName: name, state };
    const acc = await this.showSlow(s.accuracy, accuracy, args, stale);
    if (!acc || stale()) return;
    this.dataset.accuracy = acc.accuracy ?? '';
    if (!(await this.showSlow(s.zoo, zoo, args, stale)) || stale()) return;
    this.dataset.complete = 'true';
  }

  /**
   * Shows a panel whose query waits for a computation (`mod.prepare(args)`): its pending data
   * first, when the result is not there yet, then (unless the render went stale) the result.
   */
  async showSlow(section, mod, args, stale) {
    const wait = mod.prepare(args);
    if (!wait.value) {
      await showPanel(section, { ...mod.default, query: () => mod.pending(args) }, args.modelName, this.store);
      await wait.promise;
      if (stale()) return null;
    }
    return showPanel(section, mod.default, args.modelName, this.store);
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsIoi);
