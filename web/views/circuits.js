// <cs-circuits>: one head's circuits, as the framework paper reads them (seeds 000 and 003): the
// full QK table (which source token a destination token attends to) and the full OV table (what
// attending to a source token does to the output logits) as sortable, zoomable heatmaps with
// their top entries; the eigenvalues of both circuits in the complex plane with the copying
// statistic; skip-trigrams and the "bugs" they force (1-layer models); the Q/K/V composition
// scores against their random baseline; the composed QK circuit of a later head through an
// earlier one (K- or Q-composition); and the path expansion of one prediction (or of any target
// token) on text you type. Each figure is a panel (web/panels/circuits/); this element holds the controls and the
// layout.
//
// Embed it on any page, this site's or another's (SITE is where the site is served):
//   <script type="module" src="SITE/views/circuits.js"></script>
//   <cs-circuits model="char-2l" head="L1H0"></cs-circuits>
// (it links its own stylesheet, views/views.css; from another origin the site must send the CORS
// headers the README lists), or as an iframe that sizes itself: each panel's Embed button copies
// one (the panel alone, optionally without controls, with the host line
//   <script src="https://HOST/embed.js" async></script>).
// Attributes (standalone) or state keys (set by the app): model, head ("L{l}H{h}"), snapshot
// ("step1000": a training snapshot of that model, as <cs-training> reports it), sort (token |
// row | col | both), top (all | 10 | 20 | 40 | 80: rows and columns of highest variance), zoom
// (cell size in pixels), text (the text of the path expansion), target (the token it explains),
// through and compose (the composed QK circuit's earlier head and input). Every control writes to the
// page's store (store.js).
import { el } from '../parts/dom.js';
import { getModel, headName } from '../store.js';
import { CsView } from '../element.js';
import { showPanel } from '../panels/panel.js';
import { chosenHead, defaultText } from '../panels/circuits/head.js';
import qk from '../panels/circuits/qk.js';
import ov from '../panels/circuits/ov.js';
import eigen from '../panels/circuits/eigen.js';
import trigrams from '../panels/circuits/trigrams.js';
import composition from '../panels/circuits/composition.js';
import attribution from '../panels/circuits/attribution.js';
import composedqk from '../panels/circuits/composedqk.js';

export const TAG = 'cs-circuits';
const PANELS = [qk, ov, eigen, trigrams, composition, composedqk, attribution];
let uid = 0;

const field = (text, control) => el('div', { class: 'cs-field' }, el('label', { for: control.id }, text), control);

/** The view's controls: head, sort, top, zoom and the text of the path expansion. */
function controls(id, update) {
  const r = {};
  r.head = el('select', { id: `${id}-head`, onchange: () => update({ head: r.head.value }) });
  r.sort = el('select', { id: `${id}-sort`, onchange: () => update({ sort: r.sort.value }) },
    el('option', { value: 'token' }, 'by token (vocabulary order)'),
    el('option', { value: 'row' }, 'rows by row mean'),
    el('option', { value: 'col' }, 'columns by column mean'),
    el('option', { value: 'both' }, 'rows and columns by mean'));
  r.top = el('select', { id: `${id}-top`, onchange: () => update({ top: r.top.value }) },
    ['all', '80', '40', '20', '10'].map((v) => el('option', { value: v }, v === 'all' ? 'all tokens' : `top ${v} by variance`)));
  r.zoom = el('input', { type: 'range', id: `${id}-zoom`, min: 3, max: 28, step: 1, oninput: () => update({ zoom: Number(r.zoom.value) }) });
  r.text = el('textarea', { id: `${id}-text`, rows: 2, spellcheck: 'false', autocomplete: 'off', oninput: () => update({ text: r.text.value }) });
  r.snapshot = el('p', { class: 'cs-note', role: 'status' });
  r.status = el('p', { class: 'cs-note', role: 'status', 'aria-live': 'polite' });
  r.unavailable = el('p', { class: 'cs-unavailable', role: 'status', hidden: true });
  return r;
}

export class CsCircuits extends CsView {
  static view = 'circuits';
  static attributes = ['model', 'head', 'snapshot', 'sort', 'top', 'zoom', 'text', 'through', 'compose'];

  build() {
    const id = `cs-circuits-${++uid}`;
    this.classList.add('cs-view');
    const r = (this.refs = controls(id, (values) => this.update(values)));
    this.sections = PANELS.map(() => el('section'));
    const [qkS, ovS, eigenS, trigramS, compositionS, composedS, attributionS] = this.sections;
    this.replaceChildren(
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h` },
        el('h2', { id: `${id}-h` }, 'Circuits of one head'),
        el('div', { class: 'cs-controls' }, field('Head', r.head), field('Sort', r.sort), field('Show', r.top), field('Zoom (cell size)', r.zoom)),
        r.snapshot, r.status, r.unavailable),
      el('div', { class: 'cs-grid2' }, qkS, ovS),
      eigenS, trigramS, compositionS, composedS,
      el('div', { class: 'cs-controls' }, field('Text (the prediction after its last token is split into paths)', r.text)),
      attributionS);
  }

  async draw() {
    if (!this.refs) this.build();
    const r = this.refs;
    const st = this.state;
    const name = this.modelName;
    r.sort.value = st.sort ?? 'token';
    r.top.value = st.top ?? '40';
    r.zoom.value = String(st.zoom ?? 12);
    const snapshot = st.snapshot ?? '';
    let model;
    try {
      model = await getModel(name, snapshot ? { snapshot } : {});
    } catch (e) {
      r.unavailable.textContent = `${name}${snapshot ? ` (${snapshot})` : ''} is not available: ${e.message} It may not be trained yet.`;
      r.unavailable.hidden = false;
      this.dataset.ready = 'unavailable';
      return;
    }
    r.unavailable.hidden = true;
    r.snapshot.replaceChildren(...(snapshot
      ? [`Showing ${name} at training ${snapshot.replace('step', 'step ')}. `, el('button', { type: 'button', onclick: () => this.dispatch({ type: 'snapshot', snapshot: null }) }, 'Use the final model')]
      : [`The final trained ${name}.`]));
    this.showHead(model, name);
    const [qkData, , eigenData] = await Promise.all(PANELS.map((p, i) => showPanel(this.sections[i], p, name, this.store)));
    if (qkData.shape) this.dataset.qkShape = qkData.shape.join('x');
    if (eigenData.ov) this.dataset.ovCopying = String(eigenData.ov.copying);
    // An empty box (text "" in the link) is analysed as the default text, shown as the placeholder;
    // a link reopens with the box as its author left it, empty or not.
    r.text.placeholder = defaultText(model);
    if (document.activeElement !== r.text) r.text.value = st.text ?? defaultText(model);
    this.dataset.ready = 'true';
  }

  /** The head select (its options follow the model's shape) and the status line. */
  showHead(model, name) {
    const r = this.refs;
    const cfg = model.config;
    if (!cfg.n_layers) {
      r.head.replaceChildren();
      delete r.head.dataset.key;   // the next model with heads lists them again
      r.status.textContent = `${name} has no attention layers: its logits are the direct path W_E W_U alone (a bigram table), shown below as the path expansion.`;
      return;
    }
    const key = `${cfg.n_layers}x${cfg.n_heads}`;
    if (r.head.dataset.key !== key) {
      r.head.replaceChildren(...Array.from({ length: cfg.n_layers * cfg.n_heads }, (_, i) => {
        const v = headName(Math.floor(i / cfg.n_heads), i % cfg.n_heads);
        return el('option', { value: v }, v);
      }));
      r.head.dataset.key = key;
    }
    const [l, h] = chosenHead(model, this.state.head);
    r.head.value = headName(l, h);
    r.status.textContent = `${headName(l, h)} of ${name}: ${model.tokenizer.vocab.length} tokens. Hover a cell for its value; the tables list the largest and smallest entries.`;
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsCircuits);
