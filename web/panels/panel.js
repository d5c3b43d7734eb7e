// Panels: the unit of the page. A panel is one figure of a view, a plain object
//   {name, title, view, query({model, modelName, state}) -> data, render(data, ctx) -> Node,
//    update?(node, data, ctx) -> boolean}
// where ctx = {state, dispatch}. query() makes the core call (or reads the site's data file) and
// returns plain data; render() builds the panel's content from that data alone. update(), when a
// panel has one, changes the node render() made to show new data in place and returns true (for
// panels redrawn on every keystroke); false means "render afresh".
//
// Files: web/panels/VIEW/PART.js holds the panel named "VIEW-PART" (its default export), e.g.
// panels/induction/tokens.js is "induction-tokens". A view lists its panels in order; a panel also
// mounts alone (<cs-panel name="induction-tokens">), which is what an embed or a slide shows: on
// any page, with <script type="module" src="SITE/panels/panel.js"></script> and no stylesheet
// (views link theirs), or in the app as #...&embed=1&panel=induction-tokens (each panel's Embed
// button copies that iframe).
// Panels of one view that need the same core call share it through a cache in the view's folder
// (e.g. panels/induction/analysis.js), so a page with four panels still makes one call.
import { el } from '../parts/dom.js';
import { CsView } from '../element.js';
import { getModel, siteUrl } from '../store.js';
import { TERMS } from './terms.js';
import { decodeMock } from './mock.js';

const NAME = /^([a-z][a-z0-9]{0,20})-([a-z][a-z0-9-]{0,40})$/;

/** The glossary terms under a panel's heading (panels/terms.js), each a link to its entry. */
function termsLine(name) {
  const terms = TERMS[name];
  if (!terms?.length) return [];
  const links = terms.flatMap(([label, id], i) => [i ? ', ' : '', el('a', { href: siteUrl(`glossary.html#${id}`), class: 'cs-term', target: '_blank', rel: 'noopener' }, label)]);
  return [el('p', { class: 'cs-terms' }, 'Terms: ', ...links)];
}

/** Checks a panel's shape once, when its module is loaded. */
export function definePanel(panel) {
  for (const k of ['name', 'title', 'view']) if (typeof panel[k] !== 'string') throw new Error(`panel: ${k} must be a string`);
  for (const k of ['query', 'render']) if (typeof panel[k] !== 'function') throw new Error(`panel ${panel.name}: ${k} must be a function`);
  const m = NAME.exec(panel.name);
  if (!m || m[1] !== panel.view) throw new Error(`panel ${panel.name}: the name must be "${panel.view}-<part>"`);
  return Object.freeze({ needsModel: true, update: null, ...panel });
}

/** The module URL of the panel called `name` ("VIEW-PART" -> ./VIEW/PART.js); throws on other names. */
export function panelPath(name) {
  const m = NAME.exec(name);
  if (!m) throw new Error(`"${String(name).slice(0, 40)}" is not a panel name (a view and a part, e.g. "induction-tokens")`);
  return `./${m[1]}/${m[2]}.js`;
}

/**
 * Fills `section` with `panel` for the store's state: its heading, then what render() makes of
 * what query() returned (or, when the section already shows this panel and the panel has
 * update(), the same node updated in place). `modelName` is the model the panel shows (null for
 * panels without one); `st` the store of the view showing it (view.store). Returns the panel's data.
 */
export async function showPanel(section, panel, modelName, st) {
  const state = st.state;
  const model = panel.needsModel && modelName ? await getModel(modelName, { snapshot: state.snapshot }) : null;
  const data = await panel.query({ model, modelName, state });
  drawPanel(section, panel, data, { state, dispatch: (a) => st.dispatch(a) });
  return data;
}

/**
 * Fills `section` with `panel` drawing `data` (what its query returned, or a mock's recorded
 * data): its heading, then render()'s node, or the node already shown updated in place.
 */
export function drawPanel(section, panel, data, ctx) {
  if (section.csData === data) return;   // a query that answers from its cache: nothing changed
  section.csData = data;
  if (section.csPanel === panel && section.csNode && panel.update?.(section.csNode, data, ctx)) return;
  const id = `cs-panel-${panel.name}-h`;
  section.classList.add('cs-panel');
  section.dataset.panel = panel.name;
  section.setAttribute('aria-labelledby', id);
  section.csPanel = panel;
  section.csNode = panel.render(data, ctx);
  section.replaceChildren(el('h2', { id }, panel.title), ...termsLine(panel.name), section.csNode);
}

/** The URL of the mock (mock.js) of the panel called `name`: ./VIEW/mocks/PART.json. */
export const mockPath = (name) => panelPath(name).replace(/\/([^/]+)\.js$/, '/mocks/$1.json');

/** The mock of the panel called `name`, its data decoded: {panel, attrs, state, data}. */
export async function loadMock(name) {
  const url = new URL(mockPath(name), import.meta.url);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`The panel ${name} has no recorded data (${url.pathname}: ${res.status}); \`npm run mocks\` records it`);
  const mock = await res.json();
  return { ...mock, data: decodeMock(mock.data) };
}

/**
 * <cs-panel name="VIEW-PART">: one panel alone (web/panels/VIEW/PART.js), for embeds and slides.
 * Alone on a host page it has a store of its own (CsView.store), filled from the same attributes
 * a view reads (model, snapshot, text, head; and patch, for the -patching panels); in the app it
 * reads and writes the page's store and leaves the store's view alone. It shows its view's
 * default model when the state names none. With the attribute `mock` it draws the panel's recorded
 * data instead (panels/VIEW/mocks/PART.json, mock.js), loading no model: for looking at a panel
 * while changing its drawing, and for the test that draws every panel without a model.
 */
export class CsPanel extends CsView {
  static attributes = [...CsView.attributes, 'patch'];
  /** @type {HTMLElement | null} */
  _section = null;
  /** The mock drawn with the attribute `mock` (loadMock). @type {{state: object, data: any} | null} */
  _mock = null;

  get active() { return true; }

  get viewName() { return NAME.exec(this.getAttribute('name') ?? '')?.[1]; }

  connectedCallback() {
    this.classList.add('cs-view');
    super.connectedCallback();
  }

  async render() {
    const name = this.getAttribute('name') ?? '';
    const panel = (await import(panelPath(name))).default;
    this._section ??= this.appendChild(el('section'));
    if (this.hasAttribute('mock')) {
      // The panel's recorded data (mock.js), drawn with the state it was recorded in: no model.
      this._mock ??= await loadMock(name);
      drawPanel(this._section, panel, this._mock.data, { state: this._mock.state, dispatch: (a) => this.store.dispatch(a) });
    } else await showPanel(this._section, panel, this.modelName, this.store);
    this.dataset.ready = 'true';
  }
}

if (!customElements.get('cs-panel')) customElements.define('cs-panel', CsPanel);
