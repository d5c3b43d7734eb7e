// <cs-lesson>: the lesson pane beside the view. It shows the store's lesson (state.lesson: a
// lesson of the site, "pasted", or "index" for the list), its steps as links (each opens the
// step's own state: the lesson, the step and the steps done are part of the link, so progress
// lives in the link, and in this browser too: progress.js), the current step's text (render.js)
// and its check (checks.js), which turns green once the reader has done the experiment and marks
// the step done in the store. A lesson opened from the list opens its first step's own state.
// The panel a step names is outlined and scrolled into view as soon as its view shows it (the
// view may still be loading when the step opens).
import { el } from '../parts/dom.js';
import { store, linkOf, modelOf, getModel, trainingRun } from '../store.js';
import { renderMarkdown } from './render.js';
import { loadLesson, lessonIndex, pasteLesson, loadGlossary, PASTED } from './files.js';
import { holds, measuresOf, measureKey } from './checks.js';
import { MEASURES } from './measures.js';
import { savedDone, saveDone, mergeDone } from './progress.js';

export const TAG = 'cs-lesson';

/** The link of step `i` of lesson `name`: its own state, the lesson, the step, the steps done. */
function stepLink(name, lesson, i, state) {
  const st = lesson.steps[i];
  const s = st.state ? { ...st.state, ...Object.fromEntries(st.keep.filter((k) => state[k] !== null).map((k) => [k, state[k]])) } : state;
  return `#${linkOf({ ...s, embed: state.embed, hide: state.hide, lesson: name, step: i || null, done: state.done, lessonText: state.lessonText }).hash}`;
}

/** The measures' values for the state: {key: number}; a measure of another view is left out. */
async function measure(check, state) {
  const out = {};
  const wanted = measuresOf(check.when);
  if (!wanted.length) return out;
  const modelName = await modelOf(state);
  // The Training view's measures read its records and the in-page run, not the model's weights.
  const needsModel = wanted.some((t) => MEASURES[t.measure].view === state.view && state.view !== 'training');
  const model = modelName && needsModel ? await getModel(modelName, { snapshot: state.snapshot }) : null;
  for (const t of wanted) {
    const def = MEASURES[t.measure];
    try {
      if (def.view === state.view && (model || def.view === 'training')) out[measureKey(t)] = await def.get({ model, modelName, state }, t.head);
    } catch { /* not available for this state */ }
  }
  return out;
}

export class CsLesson extends HTMLElement {
  connectedCallback() {
    this.classList.add('cs-lesson');
    this.setAttribute('aria-label', 'Lesson');
    this._off = store.subscribe((s, prev) => {
      if (s.lesson !== prev.lesson || s.step !== prev.step || s.done !== prev.done || s.lessonText !== prev.lessonText) this.render();
      else { this.check(); this.applyFocus(); }
    });
    // A check on the in-page training run is read again as the run moves (it changes no setting).
    this._offRun = trainingRun.subscribe(() => { if (this._readsRun) this.check(); });
    this._onRendered = () => { this.check(); this.applyFocus(); };
    document.getElementById('view-host')?.addEventListener('cs-rendered', this._onRendered);
    this.addEventListener('click', (e) => this.onClick(e));
    this.render();
  }

  disconnectedCallback() {
    this._off?.();
    this._offRun?.();
    this._watch?.disconnect();
    this._watch = null;
    document.getElementById('view-host')?.removeEventListener('cs-rendered', this._onRendered);
  }

  onClick(e) {
    // A step's link is made when it is followed, so that it keeps what the reader has now.
    const step = /** @type {HTMLAnchorElement | null} */ (/** @type {HTMLElement} */ (e.target).closest?.('a[data-step]'));
    if (step && this._lesson) step.href = stepLink(store.state.lesson, this._lesson, Number(step.dataset.step), store.state);
    // A lesson of the list opens its first step (made now too); one not read yet, once it is.
    const open = /** @type {HTMLAnchorElement | null} */ (/** @type {HTMLElement} */ (e.target).closest?.('a[data-lesson]'));
    if (open && !e.defaultPrevented && e.button === 0 && !e.ctrlKey && !e.metaKey && !e.shiftKey) {
      const name = open.dataset.lesson;
      if (read.has(name)) open.href = firstStepLink(name, read.get(name));
      else {
        e.preventDefault();
        loadLesson(name).then((got) => { if (got.lesson) read.set(name, got.lesson); location.hash = got.lesson ? firstStepLink(name, got.lesson) : open.hash; });
      }
    }
    const a = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest?.('a[data-glossary]'));
    if (!a) return;
    e.preventDefault();
    this.showTerm(a.dataset.glossary);
  }

  async render() {
    const seq = (this._seq = (this._seq ?? 0) + 1);
    const { lesson: name, step } = store.state;
    this.dataset.ready = 'false';
    if (!name) { this.replaceChildren(); this._focus = null; this.applyFocus(); return; }
    const got = name === 'index' ? { index: await lessonIndex() } : await loadLesson(name);
    if (seq !== this._seq) return;
    this._lesson = got.lesson ?? null;
    if (got.lesson) {
      read.set(name, got.lesson);
      // The steps done kept in this browser join the link's (and the link's are kept).
      const done = saveDone(name, [...store.state.done]);
      if (done.join() !== mergeDone(store.state.done, []).join()) { store.dispatch({ type: 'set', values: { done } }); return; }
    }
    const close = el('button', { type: 'button', class: 'cs-lesson-close', onclick: () => store.dispatch({ type: 'lesson', lesson: null }) }, 'Close lessons');
    if (got.index) {
      this.replaceChildren(close, ...indexView(got.index));
      // Each lesson's link opens its first step: made as each lesson is read.
      for (const a of this.querySelectorAll('a[data-lesson]')) {
        const n = /** @type {HTMLAnchorElement} */ (a).dataset.lesson;
        loadLesson(n).then((l) => { if (l.lesson && seq === this._seq) { read.set(n, l.lesson); /** @type {HTMLAnchorElement} */ (a).href = firstStepLink(n, l.lesson); } });
      }
    }
    else if (got.error) this.replaceChildren(close, el('p', { class: 'error', role: 'alert' }, got.error), el('p', {}, el('a', { href: `#${linkOf({ ...store.state, lesson: 'index', step: null, done: [] }).hash}` }, 'All lessons')));
    else {
      // The lesson's problems are an alert the first time it is shown, not at each step after.
      const first = this._shown !== got.lesson;
      this._shown = got.lesson;
      this.replaceChildren(close, ...stepView(name, got.lesson, Math.min(step ?? 0, got.lesson.steps.length - 1), store.state, first).filter(Boolean));
    }
    this.dataset.lesson = name;
    this.dataset.step = String(step ?? 0);
    this.dataset.ready = 'true';
    this._checked = null;
    this._focus = this._lesson?.steps[Math.min(step ?? 0, this._lesson.steps.length - 1)]?.panel ?? null;
    this.applyFocus();
    const st = this._lesson?.steps[Math.min(step ?? 0, this._lesson.steps.length - 1)];
    this._readsRun = !!st?.check && measuresOf(st.check.when).some((t) => MEASURES[t.measure].readsRun);
    this.check();
  }

  /** Evaluates the step's check for the store's state (after the view shows it) and marks it. */
  async check() {
    const lesson = this._lesson;
    const state = store.state;
    const i = Math.min(state.step ?? 0, (lesson?.steps.length ?? 1) - 1);
    const st = lesson?.steps[i];
    const box = /** @type {HTMLElement | null} */ (this.querySelector('.cs-lesson-check'));
    if (!st?.check || !box) return;
    const run = trainingRun.state;
    const key = this._readsRun ? `${store.version} ${run.state} ${run.step} ${run.phaseChangeStep}` : `${store.version}`;
    if (this._checked === key) return;
    this._checked = key;
    const values = await measure(st.check, state).catch(() => ({}));
    if (store.state !== state || !box.isConnected) return;
    const base = st.state ?? state;
    const met = st.check.when.map((c) => holds(c, state, base, values));
    const ok = met.every(Boolean);
    const wasDone = state.done.includes(String(i));
    box.dataset.met = String(ok || wasDone);
    box.querySelectorAll('li').forEach((li, k) => { li.dataset.met = String(met[k]); });
    if (ok && !wasDone) {
      const done = [...state.done, String(i)];
      saveDone(state.lesson, done);
      store.dispatch({ type: 'set', values: { done } });
    }
  }

  /**
   * Outlines the step's panel (this._focus) if its view shows it; if not yet (the view is still
   * loading, or another view is shown), watches the views until it does.
   */
  applyFocus() {
    const found = focusPanel(this._focus);
    if (found || !this._focus || !this.isConnected) {
      this._watch?.disconnect();
      this._watch = null;
      return;
    }
    const host = document.getElementById('view-host');
    if (!host || this._watch) return;
    this._watch = new MutationObserver(() => this.applyFocus());
    this._watch.observe(host, { childList: true, subtree: true, attributes: true, attributeFilter: ['hidden', 'data-panel'] });
  }

  async showTerm(id) {
    const g = await loadGlossary();
    const t = g.terms?.get(id);
    const box = this.querySelector('.cs-lesson-term') ?? this.appendChild(el('aside', { class: 'cs-lesson-term', role: 'note' }));
    box.replaceChildren(
      el('button', { type: 'button', class: 'cs-lesson-term-close', 'aria-label': 'Close the glossary entry', onclick: () => box.remove() }, '×'),
      ...(t ? [el('h3', {}, t.term), renderMarkdown(t.markdown)] : [el('p', {}, g.error ?? `The glossary has no entry "${id}".`)]),
      el('p', {}, el('a', { href: `glossary.html#${id}`, target: '_blank' }, 'The whole glossary')));
    box.scrollIntoView({ block: 'nearest' });
  }
}

/** Lessons read so far, by name, for their links to be made at once. @type {Map<string, any>} */
const read = new Map();

/** The link that opens lesson `name` at its first step, with the steps done kept in this browser. */
function firstStepLink(name, lesson) {
  const state = store.state;
  return stepLink(name, lesson, 0, { ...state, done: mergeDone(savedDone(name), state.lesson === name ? state.done : []), lessonText: null });
}

/** The list of lessons, and a box to paste one. */
function indexView({ lessons, error }) {
  const area = el('textarea', { rows: 6, spellcheck: 'false', 'aria-label': 'A lesson in Markdown', placeholder: '# My lesson\n\n## First step\n...' });
  const paste = el('button', {
    type: 'button',
    onclick: () => {
      const { text, lesson } = pasteLesson(area.value);
      store.dispatch({ type: 'lesson', lesson: PASTED, step: 0, state: lesson.steps[0]?.state ?? null, lessonText: text });
    },
  }, 'Open this lesson');
  return [
    el('h2', {}, 'Lessons'),
    error ? el('p', { class: 'error', role: 'alert' }, error) : el('ol', { class: 'cs-lesson-list' }, ...lessons.map((l) => el('li', {},
      el('a', { href: read.has(l.name) ? firstStepLink(l.name, read.get(l.name)) : `#${linkOf({ ...store.state, lesson: l.name, step: null, done: savedDone(l.name), lessonText: null }).hash}`, dataset: { lesson: l.name } }, l.title ?? l.name),
      l.summary ? el('p', { class: 'muted' }, l.summary) : null))),
    el('details', { class: 'cs-lesson-paste' }, el('summary', {}, 'Paste a lesson'),
      el('p', { class: 'muted' }, 'A lesson file in the format docs/lessons.md describes. "Copy link" then carries the lesson itself (compressed), so students open it from the link alone.'), area, paste),
  ];
}

/** A step: the lesson's title, the steps as links, the step's text, its check, and the way on. */
function stepView(name, lesson, i, state, first = false) {
  const st = lesson.steps[i];
  const nav = (j, label) => (j < 0 || j >= lesson.steps.length ? el('span', {}) : el('a', { class: 'cs-lesson-nav', href: stepLink(name, lesson, j, state), dataset: { step: j } }, label));
  const check = st?.check;
  return [
    el('p', { class: 'cs-lesson-crumbs' }, el('a', { href: `#${linkOf({ ...state, lesson: 'index', step: null }).hash}` }, 'All lessons')),
    el('h2', {}, lesson.title),
    problemsView(lesson.problems, first),
    i === 0 && lesson.intro.trim() ? el('div', { class: 'cs-lesson-intro' }, renderMarkdown(lesson.intro)) : null,
    el('ol', { class: 'cs-lesson-steps' }, ...lesson.steps.map((s, j) => {
      const done = state.done.includes(String(j));
      return el('li', { dataset: { done: String(done) }, 'aria-current': j === i ? 'step' : null },
        el('a', { href: stepLink(name, lesson, j, state), dataset: { step: j } }, s.title, done ? el('span', { class: 'cs-lesson-sr' }, ' (done)') : null));
    })),
    st ? el('section', { class: 'cs-lesson-step', 'aria-labelledby': 'cs-lesson-step-h' },
      el('h3', { id: 'cs-lesson-step-h' }, `${i + 1}. ${st.title}`),
      renderMarkdown(st.markdown),
      check ? el('div', { class: 'cs-lesson-check', role: 'status', dataset: { met: String(state.done.includes(String(i))) } },
        el('p', { class: 'cs-lesson-check-todo' }, check.hint || 'Try it: this step turns green when you have.'),
        el('p', { class: 'cs-lesson-check-done' }, `✓ ${check.say || 'Done.'}`),
        el('ul', { class: 'cs-lesson-conditions' }, ...check.when.map((c) => el('li', {}, c.text)))) : null,
      st.link ? el('p', {}, el('a', { href: stepLink(name, lesson, i, state), class: 'cs-lesson-reset' }, 'Start this step again')) : null) : null,
    el('p', { class: 'cs-lesson-way' }, nav(i - 1, '← Previous'), nav(i + 1, 'Next →')),
  ];
}

const SHOWN_PROBLEMS = 12;

/**
 * A lesson file's problems, open under its title (an alert when the lesson is first shown, a
 * note after, so that moving between steps does not announce them again), the first
 * SHOWN_PROBLEMS of them listed.
 */
function problemsView(problems, first) {
  if (!problems.length) return null;
  const n = problems.length;
  return el('div', { class: 'cs-lesson-problems', role: first ? 'alert' : 'note' },
    el('p', {}, `This lesson file has ${n.toLocaleString('en')} problem${n > 1 ? 's' : ''}; it opens as far as it can be read:`),
    el('ul', {}, ...problems.slice(0, SHOWN_PROBLEMS).map((p) => el('li', {}, p)),
      n > SHOWN_PROBLEMS ? el('li', {}, `and ${(n - SHOWN_PROBLEMS).toLocaleString('en')} more`) : null));
}

/** Outlines the panel a step points at and brings it into view; whether the view shows it. */
function focusPanel(name) {
  for (const p of document.querySelectorAll('.cs-lesson-focus')) if (/** @type {HTMLElement} */ (p).dataset.panel !== name) p.classList.remove('cs-lesson-focus');
  if (!name) return false;
  const p = document.querySelector(`#view-host .view:not([hidden]) section.cs-panel[data-panel="${CSS.escape(name)}"]`);
  if (p && !p.classList.contains('cs-lesson-focus')) {
    p.classList.add('cs-lesson-focus');
    p.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  }
  return !!p;
}

if (!customElements.get(TAG)) customElements.define(TAG, CsLesson);
