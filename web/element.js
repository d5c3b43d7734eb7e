// CsView, the base class of every <cs-*> element (the views in views/ and <cs-panel> in
// panels/panel.js, so a panel never imports from a view's folder): it reads its store (the page's, store.js),
// renders while it is the store's view, records the store version it rendered, and gives every
// panel a PNG button and an Embed button (the embed code of that panel alone). A view or panel
// on a page of its own links its stylesheet (views/views.css) into the page itself,
// so a host page needs no stylesheet of ours. Shared drawing lives in web/parts/, panels in
// web/panels/.
import { store as pageStore, createStore, modelsFor } from './store.js';
import { el } from './parts/dom.js';
import { downloadPNG } from './parts/download.js';
import { embedCode } from './embed-code.js';

const STYLESHEET = new URL('./views/views.css', import.meta.url).href;

/** Links the views' stylesheet into the document once (unless the page links it already). */
function linkStyles() {
  if ([...document.querySelectorAll('link[rel~="stylesheet"]')].some((l) => /** @type {HTMLLinkElement} */ (l).href === STYLESHEET)) return;
  document.head.append(el('link', { rel: 'stylesheet', href: STYLESHEET, 'data-circuitscope': '' }));
}

/**
 * Gives every panel of `view` (section.cs-panel with a heading) a button that downloads it as a
 * PNG, named after the heading, and (for panels the store can name, data-panel) an Embed button:
 * in the app it asks the app for the embed code of that panel alone (a cs-embed event); on a page
 * of its own it copies that code itself. Hidden with the other controls in embed mode.
 */
function panelButtons(view) {
  for (const panel of view.querySelectorAll('section.cs-panel')) {
    if (panel.querySelector(':scope > .cs-panel-tools')) continue;
    const heading = panel.querySelector('h2, h3');
    if (!heading) continue;
    const title = heading.textContent.trim();
    const file = `circuitscope-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'panel'}.png`;
    const tools = el('span', { class: 'cs-panel-tools cs-png-skip controls-only' }, el('button', {
      type: 'button', class: 'cs-panel-png', 'aria-label': `Download the panel "${title}" as PNG`,
      title: 'Download this panel as PNG', onclick: () => downloadPNG(file, panel).catch((e) => view.showError(e)),
    }, 'PNG'));
    const name = panel.dataset.panel;
    if (name) {
      tools.append(el('button', {
        type: 'button', class: 'cs-panel-embed', 'aria-label': `Copy embed code for the panel "${title}"`,
        title: 'Copy embed code: this panel alone, in an iframe that sizes itself', onclick: () => embedPanel(view, name, title),
      }, 'Embed'));
    }
    panel.prepend(tools);
  }
}

async function embedPanel(view, panel, title) {
  if (view.inApp) {
    view.dispatchEvent(new CustomEvent('cs-embed', { detail: { panel, title }, bubbles: true, composed: true }));
    return;
  }
  const { code, note } = embedCode({ ...view.state, view: panel.split('-')[0] }, { panel, title });
  try {
    await navigator.clipboard.writeText(code);
    view.announce(`Embed code copied to the clipboard.${note}`);
  } catch {
    view.announce(`Embed code (the clipboard is not available here): ${code}`);
  }
}


const draws = new WeakMap();   // view -> {next: the draw asked for and not yet begun, last: the last one}

/**
 * A view's draw() (async, reading view.state when it starts), one at a time: a render asked for
 * while a draw runs waits for it, and every render asked for meanwhile shares the one draw that
 * follows, so the last draw shows the latest state, and the promise each caller gets resolves
 * after a draw that began after its call. (The IOI view overrides render(): a newer state must
 * not wait for its slow panels.)
 */
function drawInTurn(view) {
  if (!draws.has(view)) draws.set(view, { next: null, last: null });
  const d = draws.get(view);
  if (d.next) return d.next;
  const next = (d.last ?? Promise.resolve()).catch(() => {}).then(() => {
    if (d.next === next) d.next = null;
    return view.draw();
  });
  d.next = d.last = next;
  return next;
}

/**
 * class MyView extends CsView { static view = 'mine'; render() {...} }  customElements.define('cs-my', MyView);
 * A view holds no state of its own: `this.state` is its store's (`this.store`: in the app, the
 * page's one store, store.js), render() reads it (called after connect and after each change of
 * the store, at most once per animation frame, and only while the view is the store's view), and
 * every control changes it with `this.dispatch(action)` or `this.update({key: value})` (a 'set'
 * action). Mounted alone in another page, a view or panel has a store of its own (two panels on
 * one host page asking for two models show two models), sets its view and reads its attributes
 * into it once.
 * `this.modelName` is the model the view shows: the state's, or the view's default from
 * models/index.json.
 */
export class CsView extends HTMLElement {
  /** Attributes a view mounted alone reads into the store (name -> store key). */
  static attributes = ['model', 'snapshot', 'text', 'head'];
  /** The store's name of this view (views set it; a lone panel derives its own). @type {string | undefined} */
  static view = undefined;

  constructor() {
    super();
    this._frame = 0;
    this._unsubscribe = null;
    /** @type {(() => void) | null} */
    this._onTheme = null;
    this._store = /** @type {ReturnType<typeof createStore> | null} */ (null);
  }

  /** The store this element reads and writes: the page's in the app, its own when mounted alone. */
  get store() { return (this._store ??= this.inApp ? pageStore : createStore()); }
  get state() { return this.store.state; }
  get inApp() { return !!this.closest('[data-cs-app]'); }

  /** Whether the store shows this view (a view mounted alone always shows). */
  get active() { return this.state.view === this.viewName; }

  /** The view this element belongs to (a view's static `view`; a lone panel's, from its name). */
  get viewName() { return this.viewClass.view; }
  /** This element's class, typed (for its static fields). @returns {typeof CsView} */
  get viewClass() { return /** @type {typeof CsView} */ (this.constructor); }

  /** The model this view shows: the state's, or the first models/index.json lists for the view. */
  get modelName() { return this.state.model ?? this._defaultModel ?? null; }

  dispatch(action) { this.store.dispatch(action); }
  /** A plain change of settings (a 'set' action). */
  update(values) { this.store.dispatch({ type: 'set', values }); }

  connectedCallback() {
    linkStyles();
    if (!this.inApp && !this._attrsRead) {
      this._attrsRead = true;
      const values = this.viewClass.view ? { view: this.viewClass.view } : {};
      for (const a of this.viewClass.attributes) if (this.hasAttribute(a)) values[a] = this.getAttribute(a);
      if (Object.keys(values).length) this.update(values);
    }
    this._unsubscribe ??= this.store.subscribe(() => this.requestRender());
    // A theme change (theme.js): the panels draw afresh, canvases reading the new colours.
    this._onTheme ??= () => {
      for (const s of this.querySelectorAll('section')) /** @type {any} */ (s).csData = undefined;
      this.requestRender();
    };
    window.addEventListener('cs-theme-change', this._onTheme);
    modelsFor(this.viewName).then((list) => {
      this._defaultModel = list[0]?.name ?? null;
      this.requestRender();
    });
  }

  disconnectedCallback() {
    this._unsubscribe?.();
    this._unsubscribe = null;
    if (this._onTheme) window.removeEventListener('cs-theme-change', this._onTheme);
    if (this._frame) cancelAnimationFrame(this._frame);
    if (this._nowFrame) cancelAnimationFrame(this._nowFrame);
    this._frame = 0;
    this._nowFrame = 0;
  }

  requestRender() {
    if (this._frame || !this.isConnected || !this.active || this._defaultModel === undefined) return;
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._render();
    });
  }

  /**
   * Renders at once rather than in the next animation frame, so that what an input handler
   * changed is painted in the coming frame together with the input itself (a render in the next
   * frame's callbacks would show it one frame later). At most once per frame: a second call
   * before the next frame falls back to requestRender(), so input faster than the display
   * still costs one render per frame.
   */
  renderNow() {
    if (!this.isConnected || !this.active) return;
    if (this._nowFrame) { this.requestRender(); return; }
    if (this._frame) { cancelAnimationFrame(this._frame); this._frame = 0; }
    this._nowFrame = requestAnimationFrame(() => { this._nowFrame = 0; });
    this._render();
  }

  /** Draws the view from this.state: its draw(), one at a time (drawInTurn), unless a view overrides this. @returns {void | Promise<void>} */
  render() { return typeof (/** @type {any} */ (this)).draw === 'function' ? drawInTurn(this) : undefined; }

  /** Renders, then records the store's version it rendered (data-version; see store.js). */
  _render() {
    const version = (this._renderVersion = this.store.version);
    const done = () => this.markRendered(version);
    try {
      const r = this.render?.();
      if (r && typeof r.then === 'function') r.then(done, (e) => { this.showError(e); done(); });
      else done();
    } catch (e) {
      this.showError(e);
      done();
    }
  }
  /**
   * Records that the view shows the store's version it is rendering (data-version), with the
   * panels' PNG buttons. An async render may call it early, when what it still computes only
   * fills in a panel that says so (the IOI split accuracy); it is called again at the end.
   */
  markRendered(version = this._renderVersion) {
    this.addPanelExports();   // panels an async render filled in have their button too
    if (!(Number(this.dataset.version) > version)) this.dataset.version = String(version);
  }

  /** Gives every panel its PNG and Embed buttons (panelButtons). */
  addPanelExports() { panelButtons(this); }

  /**
   * Says what an action just did (a passing remark, not part of the state): in the app's status
   * line, or alone on a page, in an alert box at the top of the view.
   */
  announce(message) {
    if (this.inApp) {
      this.dispatchEvent(new CustomEvent('cs-status', { detail: { message }, bubbles: true, composed: true }));
      return;
    }
    let box = this.querySelector(':scope > .cs-view-status');
    if (!box) box = this.insertBefore(el('p', { class: 'cs-view-status status', role: 'status' }), this.firstChild);
    box.textContent = message;
  }

  /** Reports an error inside the view (role=alert) and to the app (cs-error event). */
  showError(e) {
    const message = e?.message ?? String(e);
    this.dispatchEvent(new CustomEvent('cs-error', { detail: { message }, bubbles: true, composed: true }));
    let box = this.querySelector(':scope > .cs-view-error');
    if (!box) {
      box = el('p', { class: 'cs-view-error error', role: 'alert' });
      this.prepend(box);
    }
    box.textContent = message;
  }

  clearError() {
    this.querySelector(':scope > .cs-view-error')?.remove();
  }
}
