// The app shell: reads the state from the URL hash (state.js), shows one view (a <cs-*> custom
// element from views/, imported on first use) per tab, keeps the hash in step with the state
// the views report through `cs-state` events, switches models, copies links and embed code,
// and reports errors in the page. A view module that is missing or fails to load gives a
// "this view is not available" panel, never a broken page.
import { decodeHash, encodeState, DEFAULT_STATE, VIEWS } from './state.js';
import { el, getModelIndex } from './views/common.js';

const $ = (id) => document.getElementById(id);
const els = {
  tabs: [...document.querySelectorAll('#tabs [role="tab"]')],
  model: $('model-switch'),
  copyLink: $('copy-link'),
  copyEmbed: $('copy-embed'),
  status: $('app-status'),
  error: $('app-error'),
  copyBox: $('copy-box'),
  copyText: $('copy-text'),
  copyLabel: $('copy-label'),
  host: $('view-host'),
  openFull: $('open-full'),
};

let state = { ...DEFAULT_STATE };
const views = new Map();        // view name -> {element, ok}
let modelList = [];
let writing = false;            // the hash change we caused ourselves

function setStatus(message) {
  els.status.textContent = message || '';
  els.status.hidden = !message;
}

function showError(message) {
  els.error.textContent = message || '';
  els.error.hidden = !message;
}

function writeHash() {
  const hash = `#${encodeState(state)}`;
  if (location.hash === hash) return;
  writing = true;
  history.replaceState(null, '', hash);
  writing = false;
}

function applyChrome() {
  document.body.classList.toggle('embed', !!state.embed);
  document.body.classList.toggle('hide-header', !!state.embed && state.hide.includes('header'));
  document.body.classList.toggle('hide-controls', !!state.embed && state.hide.includes('controls'));
  els.openFull.hidden = !state.embed;
  if (state.embed) {
    const full = { ...state, embed: false, hide: [] };
    els.openFull.href = `${location.pathname}#${encodeState(full)}`;
  }
}

// ------------------------------------------------------------------------------------------------
// Views

const VIEW_TAG = { induction: 'cs-induction', ioi: 'cs-ioi', circuits: 'cs-circuits', training: 'cs-training', report: 'cs-report' };
const VIEW_TITLE = { induction: 'Induction', ioi: 'IOI', circuits: 'Circuits', training: 'Training', report: 'Reproduction' };

async function viewElement(name) {
  if (views.has(name)) return views.get(name);
  const entry = { element: null, ok: false, cls: null };
  views.set(name, entry);
  try {
    await import(`./views/${name}.js`);
    const tag = VIEW_TAG[name];
    const cls = customElements.get(tag);
    if (!cls) throw new Error(`views/${name}.js does not define <${tag}>`);
    entry.cls = cls;
    entry.element = document.createElement(tag);
    entry.ok = true;
  } catch (e) {
    entry.element = el('section', { class: 'panel unavailable', role: 'note' },
      el('h2', {}, VIEW_TITLE[name]),
      el('p', {}, `This view is not available in this build of the page (${e?.message ? String(e.message).split('\n')[0] : 'its module could not be loaded'}).`),
      el('p', {}, el('a', { href: '#v=1&view=induction' }, 'Go to the induction view')));
    entry.element.dataset.unavailable = name;
  }
  entry.element.classList.add('view');
  entry.element.hidden = true;
  els.host.append(entry.element);
  return entry;
}

function modelFits(entry, name) {
  if (!name) return true;
  const m = modelList.find((x) => x.name === name);
  if (!m) return false;
  return !entry?.cls?.modelFilter || entry.cls.modelFilter(m);
}

let showSeq = 0;
async function showView() {
  const seq = ++showSeq;
  const name = state.view;
  for (const t of els.tabs) {
    const on = t.dataset.view === name;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
  }
  els.host.setAttribute('aria-labelledby', `tab-${name}`);
  const entry = await viewElement(name);
  if (seq !== showSeq) return;
  await modelsReady;
  if (entry.ok && state.model && !modelFits(entry, state.model)) {
    // The model belongs to another kind of view: this one starts from its own default.
    state = { ...state, model: null, snapshot: null, head: null, ablate: [], cut: [], pos: null };
    writeHash();
  }
  for (const [n, e] of views) e.element.hidden = n !== name;
  if (entry.ok) entry.element.state = { ...state };
  fillModelSwitch(entry);
  document.body.dataset.view = name;
  document.title = `${VIEW_TITLE[name]} · circuitscope`;
}

// ------------------------------------------------------------------------------------------------
// Model switcher

let modelsReady = getModelIndex().then((list) => { modelList = list; });

function fillModelSwitch(entry) {
  const fits = modelList.filter((m) => !entry?.cls?.modelFilter || entry.cls.modelFilter(m));
  const current = state.model || entry?.cls?.defaultModel || fits[0]?.name || '';
  els.model.replaceChildren(...fits.map((m) => el('option', { value: m.name, title: m.description || null }, m.title || m.name)));
  if (!fits.some((m) => m.name === current) && current) {
    els.model.append(el('option', { value: current }, current));
  }
  els.model.value = current;
  els.model.disabled = fits.length === 0;
}

els.model.addEventListener('change', () => {
  state = { ...state, model: els.model.value, snapshot: null, head: null, ablate: [], cut: [], pos: null };
  writeHash();
  const entry = views.get(state.view);
  if (entry?.ok) entry.element.state = { ...state };
});

// ------------------------------------------------------------------------------------------------
// Tabs (arrow keys move between tabs, as in the WAI-ARIA tabs pattern)

function selectView(name) {
  if (!VIEWS.includes(name) || name === state.view) return;
  state = { ...state, view: name, head: null, ablate: [], cut: [], pos: null };
  writeHash();
  showView();
}

els.tabs.forEach((tab, i) => {
  tab.addEventListener('click', () => selectView(tab.dataset.view));
  tab.addEventListener('keydown', (e) => {
    let j = null;
    if (e.key === 'ArrowRight') j = (i + 1) % els.tabs.length;
    else if (e.key === 'ArrowLeft') j = (i - 1 + els.tabs.length) % els.tabs.length;
    else if (e.key === 'Home') j = 0;
    else if (e.key === 'End') j = els.tabs.length - 1;
    if (j === null) return;
    e.preventDefault();
    els.tabs[j].focus();
    selectView(els.tabs[j].dataset.view);
  });
});

// ------------------------------------------------------------------------------------------------
// Views report their changes

// Typing changes the text on every keystroke: its hash (the text compressed, then
// history.replaceState) is written once typing pauses, off the keystroke's frame. Any other
// change writes the hash at once, text included.
let hashTimer = 0;
function writeHashSoon() {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(() => { hashTimer = 0; writeHash(); }, 250);
}
window.addEventListener('pagehide', () => { if (hashTimer) { clearTimeout(hashTimer); hashTimer = 0; writeHash(); } });

els.host.addEventListener('cs-state', (e) => {
  const partial = e.detail || {};
  state = { ...state, ...partial };
  if ('text' in partial && Object.keys(partial).every((k) => k === 'text' || k === 'pos')) {
    writeHashSoon();
  } else {
    clearTimeout(hashTimer);
    hashTimer = 0;
    writeHash();
  }
  if ('model' in partial) fillModelSwitch(views.get(state.view));
  if (partial.model) document.body.dataset.modelLoaded = 'true';
});

els.host.addEventListener('cs-error', (e) => {
  showError(e.detail?.message || 'Something went wrong in the view.');
});

// Sent after every render: write only what is not already so.
els.host.addEventListener('cs-rendered', () => {
  if (!els.error.hidden || els.error.textContent) showError('');
  if (document.body.dataset.modelLoaded !== 'true') document.body.dataset.modelLoaded = 'true';
  if (document.body.dataset.ready !== 'true') document.body.dataset.ready = 'true';
});

window.addEventListener('hashchange', () => {
  if (writing) return;
  readHash();
  showView();
});

function readHash() {
  const { state: s, error } = decodeHash(location.hash);
  state = s;
  if (error) {
    setStatus(error);
    document.body.dataset.hashError = 'true';
  } else {
    delete document.body.dataset.hashError;
  }
  applyChrome();
  return error;
}

// ------------------------------------------------------------------------------------------------
// Copy link / embed code

async function copy(text, what) {
  els.copyText.value = text;
  els.copyLabel.textContent = `${what}:`;
  els.copyBox.hidden = false;
  try {
    await navigator.clipboard.writeText(text);
    setStatus(`${what} copied to the clipboard.`);
  } catch {
    setStatus(`${what}: select the text below and copy it (the clipboard is not available here).`);
  }
  els.copyText.focus();
  els.copyText.select();
}

function shareUrl(extra = {}) {
  const url = new URL(location.href);
  url.hash = encodeState({ ...state, ...extra });
  return url.href;
}

els.copyLink.addEventListener('click', () => copy(shareUrl({ embed: false, hide: [] }), 'Link'));
els.copyEmbed.addEventListener('click', () => {
  const src = shareUrl({ embed: true });
  const title = `circuitscope: ${VIEW_TITLE[state.view]} view`;
  const snippet = `<iframe src="${src.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}" title="${title}" width="100%" height="720" loading="lazy" style="border:0"></iframe>`;
  copy(snippet, 'Embed code');
});

// ------------------------------------------------------------------------------------------------

window.addEventListener('error', (e) => showError(`Unexpected error: ${e.message}`));
window.addEventListener('unhandledrejection', (e) => showError(`Unexpected error: ${e.reason?.message ?? e.reason}`));

const hashError = readHash();
if (!hashError) writeHash();
showView();
