// Panels: the unit of the page. A panel is one figure of a view, a plain object
//   {name, title, view, query({model, modelName, state}) -> data, render(data, {state, dispatch}) -> Node}
// query() makes the core call (or reads the site's data file) and returns plain data; render()
// builds the panel's content from that data alone. A view lists its panels in order; a panel also
// mounts alone (<cs-panel name="report-claims">), which is what an embed or a slide shows.
import { el } from '../parts/dom.js';
import { CsView } from '../views/common.js';
import { store, getModel } from '../store.js';

/** Checks a panel's shape once, when its module is loaded. */
export function definePanel(panel) {
  for (const k of ['name', 'title', 'view']) if (typeof panel[k] !== 'string') throw new Error(`panel: ${k} must be a string`);
  for (const k of ['query', 'render']) if (typeof panel[k] !== 'function') throw new Error(`panel ${panel.name}: ${k} must be a function`);
  return Object.freeze({ needsModel: true, ...panel });
}

/**
 * Fills `section` with `panel` for the store's state: its heading, then what render() makes of
 * what query() returned. `modelName` is the model the panel shows (null for panels without one).
 */
export async function showPanel(section, panel, modelName) {
  const state = store.state;
  const model = panel.needsModel && modelName ? await getModel(modelName, { snapshot: state.snapshot }) : null;
  const data = await panel.query({ model, modelName, state });
  if (section.csData === data) return;   // a query that answers from its cache: nothing changed
  section.csData = data;
  const id = `cs-panel-${panel.name}-h`;
  section.classList.add('cs-panel');
  section.dataset.panel = panel.name;
  section.setAttribute('aria-labelledby', id);
  section.replaceChildren(el('h2', { id }, panel.title), panel.render(data, { state, dispatch: (a) => store.dispatch(a) }));
}

/**
 * <cs-panel name="NAME">: one panel alone (web/panels/NAME.js), for embeds and slides. It reads and
 * writes the page's store like any view, and shows whatever the store's state is.
 */
export class CsPanel extends CsView {
  get active() { return true; }

  connectedCallback() {
    this.classList.add('cs-view');
    super.connectedCallback();
  }

  get modelName() { return this.state.model ?? this._defaultModel ?? null; }

  async render() {
    const name = this.getAttribute('name') ?? '';
    if (!/^[a-z][a-z0-9-]{0,40}$/.test(name)) throw new Error(`"${name.slice(0, 40)}" is not a panel name`);
    const panel = (await import(`./${name}.js`)).default;
    this._section ??= this.appendChild(el('section'));
    await showPanel(this._section, panel, this.modelName);
    this.dataset.ready = 'true';
  }
}

if (!customElements.get('cs-panel')) customElements.define('cs-panel', CsPanel);
