// The app shell: opens the link (the URL hash) into the store (store.js), shows the store's view
// (a <cs-*> custom element from views/, imported on first use), keeps the hash in step with the
// store, and owns the header's controls: the tabs, the one model picker, the snapshot picker,
// "Copy link" and "Copy embed code" (of the view, or of one panel: its Embed button). Every
// control dispatches to the store; the views read it. Embedded (embed=1), the page shows the view
// or, with panel=VIEW-PART, that panel alone (<cs-panel>), and posts its height to the host page
// (embed.js on the host sets the iframe's height from it).
// A view module that is missing or fails to load gives a "this view is not available" panel,
// never a broken page.
import {
  store, decodeHash, refusedLink, encodeState, linkOf, checkState, VIEWS, VIEW_TITLES, MAX_TEXT,
  modelsFor, modelOf, getModel, getModule, getSnapshots,
} from './store.js';
import { el } from './parts/dom.js';
import { embedCode } from './embed-code.js';
import { closeLocal, isLocalName, localModel } from './local-models.js';
import { droppedFolderFiles, folderFiles, openModelFiles } from './open-model.js';

// Every view needs the core: its fetch and compile start now, beside the model list and the view's
// own scripts, not after them.
getModule().catch(() => {});

/** @param {string} id @returns {any} */
const $ = (id) => document.getElementById(id);
const els = {
  tabs: /** @type {HTMLElement[]} */ ([...document.querySelectorAll('#tabs [role="tab"]')]),
  model: $('model-switch'),
  modelField: $('model-field'),
  snapshot: $('snapshot-switch'),
  snapshotField: $('snapshot-field'),
  copyLink: $('copy-link'),
  copyEmbed: $('copy-embed'),
  status: $('app-status'),
  error: $('app-error'),
  copyBox: $('copy-box'),
  copyText: $('copy-text'),
  copyLabel: $('copy-label'),
  copyBareField: $('copy-bare-field'),
  copyBare: $('copy-bare'),
  host: $('view-host'),
  lessonHost: $('lesson-host'),
  openLessons: $('open-lessons'),
  openFull: $('open-full'),
  openFile: $('open-file'),
  closeFile: $('close-file'),
  openFileInput: $('open-file-input'),
  openFolder: $('open-folder'),
  openFolderInput: $('open-folder-input'),
  dropHint: $('drop-hint'),
};

const views = new Map();        // view name (or "panel:VIEW-PART") -> Promise<{element, ok}>
let writing = false;            // the hash change we caused ourselves

function setStatus(message) {
  els.status.textContent = message || '';
  els.status.hidden = !message;
}

function showError(message) {
  els.error.textContent = message || '';
  els.error.hidden = !message;
}

// ------------------------------------------------------------------------------------------------
// The link: the store's serialisation

let textLeftOut = false;   // the last hash written left the text out (it said so once)

function writeHash() {
  const link = linkOf(store.state);
  if (link.textLeftOut && !textLeftOut) {
    setStatus(`The text is too long for a link (${store.state.text.length.toLocaleString('en')} characters; a link holds up to ${MAX_TEXT.toLocaleString('en')} and 64 KB): links from this page now leave it out.`);
  }
  textLeftOut = link.textLeftOut;
  const hash = `#${link.hash}`;
  if (location.hash === hash) return;
  writing = true;
  history.replaceState(null, '', hash);
  writing = false;
}

// Typing changes the text on every keystroke: its hash (the text compressed, then
// history.replaceState) is written once typing pauses, off the keystroke's frame. Any other
// change writes the hash at once, text included.
let hashTimer = 0;
function writeHashSoon() {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(() => { hashTimer = 0; writeHash(); }, 250);
}
window.addEventListener('pagehide', () => { if (hashTimer) { clearTimeout(hashTimer); hashTimer = 0; writeHash(); } });

/**
 * Opens a link: reads it, checks it against the model it names (heads, cuts, snapshot), and
 * puts it into the store; a link that does not fit gives the default view and a sentence.
 */
async function openHash() {
  const seq = ++openSeq;
  // A link too long to read, which boot.js took out of the address bar before anything loaded.
  const refused = Number(document.documentElement.dataset.refusedLink);
  delete document.documentElement.dataset.refusedLink;
  let { state, error } = refused ? refusedLink(refused) : decodeHash(location.hash);
  pendingLink = null;
  if (!error && isLocalName(state.model) && !localModel(state.model)) {
    // A link to a model file opened in another page: shown once the same file is opened here.
    pendingLink = state;
    error = `This link is to a model file opened in another page (${state.model}): open the same file here (Open a model file) to see it. Until then the default view is shown.`;
  }
  if (!error) error = await problemWith(state);
  if (seq !== openSeq) return;
  if (error) {
    setStatus(error.startsWith('This link') ? error : `This link could not be read (${error}), so the default view is shown.`);
    document.body.dataset.hashError = 'true';
    state = decodeHash('').state;
  } else {
    // A link that opens takes away the sentence about the last one that did not.
    if (document.body.dataset.hashError) setStatus('');
    delete document.body.dataset.hashError;
  }
  store.dispatch({ type: 'replace', state });
  applyChrome();
  render(store.state, null);
  if (!error) writeHash();
}
let openSeq = 0;
let pendingLink = null;         // the state of a link to a local model not opened here yet

/** What in a decoded state does not fit the site's models (a phrase), or null. */
async function problemWith(state) {
  const offered = await modelsFor(state.view);
  if (state.model && !offered.some((m) => m.name === state.model)) {
    return `the ${VIEW_TITLES[state.view]} view has no model "${state.model}"`;
  }
  const lessonProblem = await problemWithLesson(state);
  if (lessonProblem) return lessonProblem;
  const name = await modelOf(state);
  const needsModel = state.head || state.ablate.length || state.cut.length || state.nopos || state.snapshot || (state.abl && state.abl !== 'zero');
  if (!name || !needsModel) return null;
  const snapshots = await getSnapshots(name);
  if (state.snapshot && !snapshots.includes(state.snapshot)) return `${name} has no training snapshot ${state.snapshot}`;
  try {
    const model = await getModel(name);
    return checkState({ ...state, model: name }, { config: model.config, snapshots });
  } catch (e) {
    return e.message.replace(/\.$/, '');
  }
}

/** What in a link's lesson does not fit (a phrase), or null: a lesson the site lists, or a pasted one it carries. */
async function problemWithLesson({ lesson, lessonText }) {
  if (!lesson || lesson === 'index') return null;
  if (lesson === 'pasted') return typeof lessonText === 'string' ? null : 'it names a pasted lesson but does not carry it';
  const { lessonIndex } = await import('./lessons/files.js');
  const { lessons } = await lessonIndex();
  return lessons && !lessons.some((l) => l.name === lesson) ? `this site has no lesson "${lesson}"` : null;
}

// ------------------------------------------------------------------------------------------------
// Rendering the shell from the store

function applyChrome() {
  const s = store.state;
  document.body.classList.toggle('embed', !!s.embed);
  document.body.classList.toggle('hide-header', !!s.embed && s.hide.includes('header'));
  document.body.classList.toggle('hide-controls', !!s.embed && s.hide.includes('controls'));
  document.body.classList.toggle('embed-panel', !!s.embed && !!s.panel);
  els.openFull.hidden = !s.embed;
  showLesson(s.lesson);
  if (s.embed) els.openFull.href = `${location.pathname}#${linkOf({ ...s, embed: false, hide: [], panel: null }).hash}`;
  if (s.embed && window.parent !== window) followHeight();
}

// The lesson pane (lessons/lesson.js, loaded the first time a lesson is opened) beside the view.
let lessonModule = null;
async function showLesson(name) {
  document.body.classList.toggle('has-lesson', !!name);
  els.lessonHost.hidden = !name;
  if (!name || els.lessonHost.firstElementChild) return;
  try {
    lessonModule ??= import('./lessons/lesson.js');
    const { TAG } = await lessonModule;
    if (!els.lessonHost.firstElementChild) els.lessonHost.append(document.createElement(TAG));
  } catch (e) {
    lessonModule = null;
    els.lessonHost.replaceChildren(el('p', { class: 'error', role: 'alert' }, `The lessons are not available in this build of the page (${String(e?.message ?? e).split('\n')[0]}).`));
  }
}

// Embedded in another page: post the content's height to it whenever it changes, so that the
// host's embed.js can size the iframe to it (body.embed is a block formatting context, so its
// box holds its children's margins).
let heightObserver = null;
function followHeight() {
  if (heightObserver) return;
  let last = 0;
  heightObserver = new ResizeObserver(() => {
    const height = Math.ceil(document.body.getBoundingClientRect().height);
    if (height === last) return;
    last = height;
    window.parent.postMessage({ type: 'circuitscope:height', height }, '*');
  });
  heightObserver.observe(document.body);
}

/**
 * The element of a view, or (key "panel:VIEW-PART") of one panel alone, created on first use
 * (once, however many renders ask for it while its module loads).
 */
function viewElement(name) {
  if (!views.has(name)) views.set(name, createViewElement(name));
  return views.get(name);
}

async function createViewElement(name) {
  const entry = { element: null, ok: false };
  try {
    if (name.startsWith('panel:')) {
      await import('./panels/panel.js');
      entry.element = el('cs-panel', { name: name.slice(6) });
    } else {
      const module = await import(`./views/${name}.js`);
      const tag = module.TAG;
      if (!tag || !customElements.get(tag)) throw new Error(`views/${name}.js does not define its element`);
      entry.element = document.createElement(tag);
    }
    entry.ok = true;
  } catch (e) {
    entry.element = el('section', { class: 'panel unavailable', role: 'note' },
      el('h2', {}, VIEW_TITLES[name]),
      el('p', {}, `This view is not available in this build of the page (${e?.message ? String(e.message).split('\n')[0] : 'its module could not be loaded'}).`),
      el('p', {}, el('a', { href: '#v=2&view=induction' }, 'Go to the induction view')));
    entry.element.dataset.unavailable = name;
  }
  entry.element.classList.add('view');
  entry.element.hidden = true;
  els.host.append(entry.element);
  return entry;
}

let renderSeq = 0;
/** Shows the store's view and fills the header's pickers from the store. */
async function render(state, prev) {
  const seq = ++renderSeq;
  const name = state.view;
  for (const t of els.tabs) {
    const on = t.dataset.view === name;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
  }
  els.host.setAttribute('aria-labelledby', `tab-${name}`);
  document.body.dataset.view = name;
  document.title = `${VIEW_TITLES[name]} · circuitscope`;
  if (!prev || prev.view !== name || prev.model !== state.model || prev.snapshot !== state.snapshot) await fillPickers(state, seq);
  if (seq !== renderSeq) return;
  const entry = await viewElement(state.embed && state.panel ? `panel:${state.panel}` : name);
  if (seq !== renderSeq) return;
  for (const e of await Promise.all(views.values())) e.element.hidden = e !== entry;
  if (seq !== renderSeq) return;
  if (entry.ok) entry.element.requestRender();
}

async function fillPickers(state, seq) {
  const offered = await modelsFor(state.view);
  const current = await modelOf(state);
  const snapshots = current ? await getSnapshots(current) : [];
  if (seq !== renderSeq) return;
  els.modelField.hidden = offered.length === 0;
  els.model.replaceChildren(...offered.map((m) => el('option', { value: m.name, title: m.description || null }, m.title || m.name)));
  els.model.value = current ?? '';
  els.model.disabled = offered.length < 2;
  els.closeFile.hidden = !(current && localModel(current));
  els.snapshotField.hidden = snapshots.length === 0;
  els.snapshot.replaceChildren(
    el('option', { value: '' }, 'final model'),
    // A series opened in the page is labelled by its files' numbers (tokens seen, for TransformerLens's).
    ...snapshots.map((s) => el('option', { value: s }, `${isLocalName(current) ? 'checkpoint' : 'training step'} ${s.replace(/^step/, '')}`)));
  els.snapshot.value = state.snapshot ?? '';
  document.body.dataset.snapshot = state.snapshot ?? '';
}

store.subscribe((state, prev) => {
  const typing = Object.keys(state).every((k) => k === 'text' || k === 'pos' || state[k] === prev[k]);
  if (typing) {
    writeHashSoon();
  } else {
    clearTimeout(hashTimer);
    hashTimer = 0;
    writeHash();
  }
  if (state.embed !== prev.embed || state.hide !== prev.hide || state.lesson !== prev.lesson) applyChrome();
  if (state.view !== prev.view || state.model !== prev.model || state.snapshot !== prev.snapshot || state.panel !== prev.panel) render(state, prev);
});

// ------------------------------------------------------------------------------------------------
// The header's controls

els.model.addEventListener('change', () => store.dispatch({ type: 'model', model: els.model.value }));
els.snapshot.addEventListener('change', () => store.dispatch({ type: 'snapshot', snapshot: els.snapshot.value || null }));
els.openLessons.addEventListener('click', () => store.dispatch(store.state.lesson ? { type: 'lesson', lesson: null } : { type: 'lesson', lesson: 'index' }));

async function selectView(name) {
  if (!VIEWS.includes(name) || name === store.state.view) return;
  const keep = store.state.model && (await modelsFor(name)).some((m) => m.name === store.state.model);
  store.dispatch({ type: 'view', view: name, model: keep ? store.state.model : null });
}

els.tabs.forEach((tab, i) => {
  tab.addEventListener('click', () => selectView(tab.dataset.view));
  tab.addEventListener('keydown', (/** @type {KeyboardEvent} */ e) => {   // arrow keys move between tabs (WAI-ARIA tabs pattern)
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

els.host.addEventListener('cs-error', (/** @type {CustomEvent} */ e) => showError(e.detail?.message || 'Something went wrong in the view.'));
els.host.addEventListener('cs-status', (/** @type {CustomEvent} */ e) => setStatus(e.detail?.message ?? ''));

// Sent after every render: write only what is not already so.
els.host.addEventListener('cs-rendered', () => {
  if (!els.error.hidden || els.error.textContent) showError('');
  if (document.body.dataset.modelLoaded !== 'true') document.body.dataset.modelLoaded = 'true';
  if (document.body.dataset.ready !== 'true') document.body.dataset.ready = 'true';
});

window.addEventListener('hashchange', () => { if (!writing) openHash(); });

// ------------------------------------------------------------------------------------------------
// Copy link / embed code

async function copy(text, what, note = '') {
  els.copyBareField.hidden = what !== 'Embed code';
  els.copyText.value = text;
  els.copyLabel.textContent = `${what}:`;
  els.copyBox.hidden = false;
  try {
    await navigator.clipboard.writeText(text);
    setStatus(`${what} copied to the clipboard.${note}`);
  } catch {
    setStatus(`${what}: select the text below and copy it (the clipboard is not available here).${note}`);
  }
  els.copyText.focus();
  els.copyText.select();
}

/** The link to the store's state (with `extra` settings), and a note when its text had to go. */
function shareUrl(extra = {}) {
  const state = { ...store.state, ...extra };
  const url = new URL(location.href);
  const link = linkOf(state);
  url.hash = link.hash;
  const note = (link.textLeftOut ? ' The text is too long for a link, so the link leaves it out: send the text separately.' : '') +
    (link.lessonLeftOut ? ' The pasted lesson is too long for a link, so the link leaves it out: send the lesson file too.' : '') + localNote(state);
  return { href: url.href, note };
}

/** What the recipient of a link to a model file opened in this page needs to know ('' otherwise). */
function localNote(state) {
  if (!isLocalName(state.model)) return '';
  const file = localModel(state.model)?.file ?? 'its file';
  return ` It shows ${state.model}, a model file opened in this page (${file}), which is not part of the link: whoever opens the link needs the same file too, and opens it there with "Open a model file".`;
}

els.copyLink.addEventListener('click', () => {
  const { href, note } = shareUrl({ embed: false, hide: [], panel: null });
  copy(href, 'Link', note);
});
// What the copy box's embed code shows: the view (panel null) or one panel; "without controls"
// (the checkbox beside it) gives it again with hide=controls,header.
let embedding = { panel: null, title: '' };
function copyEmbed() {
  const { panel, title } = embedding;
  const { code, note } = embedCode(store.state, { panel, title, bare: els.copyBare.checked });
  copy(code, 'Embed code', note + localNote(store.state));
}
els.copyEmbed.addEventListener('click', () => {
  embedding = { panel: null, title: `${VIEW_TITLES[store.state.view]} view` };
  copyEmbed();
});
// A panel's Embed button (element.js) asks for the embed code of that panel alone.
els.host.addEventListener('cs-embed', (/** @type {CustomEvent} */ e) => {
  embedding = { panel: e.detail.panel, title: e.detail.title };
  copyEmbed();
});
els.copyBare.addEventListener('change', copyEmbed);

// ------------------------------------------------------------------------------------------------
// Opening a model file: the header's button (a file input) and a file dropped anywhere on the page
// (open-model.js reads and loads it; local-models.js keeps it). Nothing is uploaded.

async function openFiles(files, { left = 0 } = {}) {
  document.body.dataset.openFile = 'opening';
  showError('');
  delete document.body.dataset.openProgress;
  setStatus(`Opening ${files.map((f) => String(f?.name ?? 'the file').slice(0, 80)).join(' and ')}…`);
  // A large file takes a moment to read: the status line counts the megabytes (and
  // body[data-open-progress] the percentage, for tests).
  const MB = 1024 * 1024;
  const onProgress = (name, read, total) => {
    const pct = Math.floor((100 * read) / total);
    if (total < 8 * MB || String(pct) === document.body.dataset.openProgress) return;
    document.body.dataset.openProgress = String(pct);
    setStatus(read < total ? `Reading ${String(name).slice(0, 80)}: ${Math.round(read / MB)} of ${Math.round(total / MB)} MB (${pct}%)…`
      : `Opening ${String(name).slice(0, 80)} (${Math.round(total / MB)} MB): the core is checking and loading it…`);
  };
  try {
    if (!files.length) throw new Error(`Nothing to open in that folder: it holds no .safetensors or .pth file${left ? ` (${left} other file${left === 1 ? ' was' : 's were'} left out)` : ''}.`);
    await openModelFiles(files, { onProgress, note: left ? ` (${left} other file${left === 1 ? '' : 's'} of the folder left out: only model files, config.json and tokenizer.json are read.)` : '' });
  } catch (e) {
    // A refusal goes where people look (the alert box under the header, read out), not the grey line.
    document.body.dataset.openFile = 'failed';
    setStatus('');
    showError(String(e?.message ?? e));
  }
}

/**
 * After a model file was opened (the store's `opened` action has shown it): the link that waited
 * for it opens now, and the page says what was opened.
 */
async function afterOpened({ model, message }) {
  if (pendingLink && pendingLink.model === model) {
    const link = pendingLink;
    writing = true;
    history.replaceState(null, '', `#${encodeState(link)}`);
    writing = false;
    await openHash();
  }
  setStatus(message);
  document.body.dataset.openFile = 'opened';
}
store.subscribe((s, prev, action) => { if (action?.type === 'opened') afterOpened(action); });

// Closing a file opened in the page: the views move to the view's first shipped model, then the
// file leaves the registry, and with nothing holding its WebAssembly instance its memory goes.
els.closeFile.addEventListener('click', () => {
  const name = store.state.model;
  const entry = name && localModel(name);
  if (!entry) return;
  closeLocal(name);
  store.dispatch({ type: 'model', model: null });
  setStatus(`Closed ${entry.file.slice(0, 80)}: its memory is given back. Open it again to see it.`);
});

els.openFile.addEventListener('click', () => els.openFileInput.click());
els.openFolder.addEventListener('click', () => els.openFolderInput.click());
els.openFolderInput.addEventListener('change', () => {
  const all = [...(els.openFolderInput.files ?? [])];
  els.openFolderInput.value = '';
  if (all.length) { const { files, left } = folderFiles(all); openFiles(files, { left }); }
});
els.openFileInput.addEventListener('change', () => {
  const files = [...(els.openFileInput.files ?? [])];
  els.openFileInput.value = '';   // the same file chosen again is a change too
  if (files.length) openFiles(files);
});

// Dragging files over the page shows the drop hint; a drop opens the model file among them (with
// its config.json, if one was dropped too).
const carriesFiles = (/** @type {DragEvent} */ e) => [...(e.dataTransfer?.types ?? [])].includes('Files');
let dragDepth = 0;
function dropHint(on) {
  els.dropHint.hidden = !on;
  document.body.classList.toggle('dragging-file', on);
}
window.addEventListener('dragenter', (e) => { if (!carriesFiles(e)) return; e.preventDefault(); dragDepth += 1; dropHint(true); });
window.addEventListener('dragover', (e) => { if (!carriesFiles(e)) return; e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; dropHint(true); });
window.addEventListener('dragleave', (e) => { if (!carriesFiles(e)) return; dragDepth -= 1; if (dragDepth <= 0) { dragDepth = 0; dropHint(false); } });
window.addEventListener('drop', (e) => {
  if (!carriesFiles(e)) return;
  e.preventDefault();   // the browser would otherwise leave the page for the file
  dragDepth = 0;
  dropHint(false);
  // A dropped folder is read from its entries, which must be taken while the event lasts.
  const entries = [...(e.dataTransfer.items ?? [])].map((i) => i.webkitGetAsEntry?.() ?? null);
  const files = [...e.dataTransfer.files];
  droppedFolderFiles(entries).then((folder) => {
    if (folder) openFiles(folder.files, { left: folder.left });
    else if (files.length) openFiles(files);
  }, (err) => showError(`Could not read the dropped folder: ${String(err?.message ?? err)}`));
});

// ------------------------------------------------------------------------------------------------

// "ResizeObserver loop completed with undelivered notifications" is not an error of the page: an
// embedded page observes its body (followHeight), and when a chart sizes itself in its own
// observer's callback the body's new height is delivered in the next frame instead.
window.addEventListener('error', (e) => { if (!/^ResizeObserver loop/.test(e.message)) showError(`Unexpected error: ${e.message}`); });
window.addEventListener('unhandledrejection', (e) => showError(`Unexpected error: ${e.reason?.message ?? e.reason}`));

/** @type {any} */ (window).__cs = { store, encodeState };   // for the browser tests and the console
openHash();
