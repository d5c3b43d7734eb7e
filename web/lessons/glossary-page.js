// glossary.html: every entry of lessons/glossary.md (files.js reads it) with its anchor, so that
// a caption or a lesson can link to glossary.html#TERM; the linked entry is outlined.
import { el } from '../parts/dom.js';
import { loadGlossary } from './files.js';
import { renderMarkdown } from './render.js';

const main = /** @type {HTMLElement} */ (document.getElementById('glossary'));
const g = await loadGlossary();
if (g.error) {
  main.replaceChildren(el('p', { class: 'error', role: 'alert' }, g.error));
} else {
  main.replaceChildren(
    el('h1', {}, 'Glossary'),
    el('p', {}, 'Every term the explorer and its lessons use, in a sentence or two, with the paper it comes from (', el('a', { href: 'lessons/glossary.md' }, 'the file'), ').'),
    el('p', {}, renderMarkdown(g.sources ?? '')),
    el('dl', { class: 'glossary-list' }, ...[...g.terms].flatMap(([id, t]) => [
      el('dt', { id }, el('a', { href: `#${id}` }, t.term)),
      el('dd', {}, renderMarkdown(t.markdown)),
    ])));
  const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  target?.scrollIntoView();
}
document.body.dataset.ready = 'true';
