// Where lessons come from: the site's folder (lessons/index.json lists them; lessons/NAME.md is
// one) or a lesson pasted into the page, which the store keeps (lessonText) and the link carries
// compressed, so a teacher's own lesson reaches students as a link. Each read once and kept.
import { siteUrl, store, MAX_LESSON_TEXT } from '../store.js';
import { parseLesson, MAX_LESSON } from './format.js';

export const PASTED = 'pasted';
const cache = new Map();   // name -> Promise<{lesson} | {error}>
let pasted = null;         // {text, lesson}: the last pasted lesson read

/** The site's lessons: [{name, title, summary, covers}] (lessons/index.json), or {error}. */
export async function lessonIndex() {
  try {
    const r = await fetch(siteUrl('lessons/index.json'));
    if (!r.ok) throw new Error(`lessons/index.json: HTTP ${r.status}`);
    const list = await r.json();
    if (!Array.isArray(list?.lessons)) throw new Error('lessons/index.json has no list of lessons');
    return { lessons: list.lessons.filter((l) => typeof l?.name === 'string' && /^[a-z0-9][a-z0-9-]{0,40}$/.test(l.name)) };
  } catch (e) {
    return { error: `The list of lessons could not be loaded (${e.message}).` };
  }
}

/** A lesson by name: {lesson} or {error: a sentence}. */
export function loadLesson(name) {
  if (name === PASTED) {
    const text = store.state.lessonText;
    if (typeof text !== 'string') return Promise.resolve({ error: 'This link is to a pasted lesson, but the lesson is not in the link (it was too long for one): paste the lesson again (Lessons, "Paste a lesson").' });
    if (pasted?.text !== text) pasted = { text, lesson: parseLesson(text) };
    return Promise.resolve({ lesson: pasted.lesson });
  }
  if (!cache.has(name)) {
    cache.set(name, (async () => {
      try {
        const r = await fetch(siteUrl(`lessons/${name}.md`));
        if (!r.ok) return { error: `The lesson "${name}" is not on this site (lessons/${name}.md: HTTP ${r.status}).` };
        const text = await r.text();
        return { lesson: parseLesson(text) };
      } catch (e) {
        return { error: `The lesson "${name}" could not be loaded (${e.message}).` };
      }
    })());
  }
  return cache.get(name);
}

/**
 * A pasted lesson: {text (what the link carries, at most MAX_LESSON_TEXT characters), lesson
 * (its parse), cut (true when the text was longer and its end was left out)}.
 */
export function pasteLesson(raw) {
  const s = String(raw ?? '');
  const text = s.slice(0, Math.min(MAX_LESSON, MAX_LESSON_TEXT));
  pasted = { text, lesson: parseLesson(text) };
  if (text.length < s.length) pasted.lesson.problems.unshift(`the lesson is ${s.length.toLocaleString('en')} characters; only the first ${text.length.toLocaleString('en')} are kept (a link can carry no more)`);
  return { ...pasted, cut: text.length < s.length };
}

/** The glossary (lessons/glossary.md): {terms: Map(id -> {term, markdown}), sources} or {error}. */
let glossary = null;
export function loadGlossary() {
  glossary ??= (async () => {
    try {
      const r = await fetch(siteUrl('lessons/glossary.md'));
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const terms = new Map();
      const [head, ...parts] = (await r.text()).split(/^## /m);
      const sources = head.replace(/^# .*\n/, '').trim();
      for (const part of parts) {
        const [head, ...rest] = part.split('\n');
        const m = /^(.*?)\s*\{#([a-z0-9-]+)\}\s*$/.exec(head);
        if (m) terms.set(m[2], { term: m[1], markdown: rest.join('\n').trim() });
      }
      return { terms, sources };
    } catch (e) {
      return { error: `The glossary could not be loaded (${e.message}).` };
    }
  })();
  return glossary;
}
