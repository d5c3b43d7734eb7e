// Where lessons come from: the site's folder (lessons/index.json lists them; lessons/NAME.md is
// one) or a lesson pasted into the page (kept in this page only: a link to it says so). Each
// read once and kept, as {lesson (format.js's parse), error}.
import { siteUrl } from '../store.js';
import { parseLesson, MAX_LESSON } from './format.js';

export const PASTED = 'pasted';
const cache = new Map();   // name -> Promise<{lesson} | {error}>
let pasted = null;

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
  if (name === PASTED) return Promise.resolve(pasted ?? { error: 'This link is to a lesson that was pasted into another page, so this page does not have it: paste the lesson again (Lessons, "Paste a lesson").' });
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

/** Keeps a pasted lesson (this page only) and returns its parse. */
export function pasteLesson(text) {
  const s = String(text ?? '');
  pasted = { lesson: parseLesson(s.length > MAX_LESSON ? s.slice(0, MAX_LESSON + 1) : s) };
  return pasted.lesson;
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
