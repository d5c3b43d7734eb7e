// Lesson Markdown to DOM, in three layers. marked makes the HTML with raw HTML in the lesson
// shown as text (a lesson is Markdown: `<script>` in it reads as "<script>", and no tag a lesson
// writes ever reaches a parser); DOMPurify cleans what marked made (links only to https:, to this
// page's own links (#v=...) and to the glossary; images only from the site, by a path that does
// not climb out of the lessons' folder with ".."); and the page's
// content security policy refuses whatever might still try. A lesson is text someone else wrote:
// it never runs code in the page.
import { Marked } from '../vendor/marked.mjs';
import DOMPurify from '../vendor/purify.mjs';

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);
const markdown = new Marked({ gfm: true, async: false, renderer: { html: ({ text }) => escapeHtml(text) } });

const PURIFY = {
  ALLOWED_TAGS: ['p', 'a', 'em', 'strong', 'code', 'pre', 'ul', 'ol', 'li', 'blockquote', 'h3', 'h4', 'br', 'hr',
    'table', 'thead', 'tbody', 'tr', 'th', 'td', 'del', 'sub', 'sup', 'kbd', 'img'],
  ALLOWED_ATTR: ['href', 'title', 'alt', 'src', 'colspan', 'rowspan'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

let hooked = false;
function hook() {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.nodeName === 'A') {
      const href = node.getAttribute('href') ?? '';
      const glossary = /^glossary(?:\.md)?#([a-z0-9-]{1,60})$/.exec(href);
      if (glossary) {
        node.setAttribute('href', `#glossary-${glossary[1]}`);
        node.setAttribute('data-glossary', glossary[1]);
      } else if (/^https:\/\//i.test(href)) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      } else if (!/^#v=\d/.test(href)) {
        node.removeAttribute('href');   // anything else (http:, a relative path, another scheme): text only
      }
    }
    // Images from the site itself only (the policy would refuse any other, with an error), and
    // by a plain path: none with a ".." segment, which would reach files beside the lessons.
    if (node.nodeName === 'IMG') {
      const src = node.getAttribute('src') ?? '';
      if (!/^(?![a-z][a-z0-9+.-]*:|\/\/)[\w./-]+$/i.test(src) || src.split('/').includes('..')) node.remove();
    }
  });
}

/** Markdown (a lesson's text) as a cleaned DocumentFragment. */
export function renderMarkdown(text) {
  hook();
  let html;
  try {
    html = /** @type {string} */ (markdown.parse(String(text ?? '')));
  } catch (e) {
    html = e instanceof RangeError
      ? '<p>This text nests quotes, lists or emphasis too deep to be read as Markdown.</p>'
      : `<p>This text could not be read as Markdown (${escapeHtml(String(e?.message ?? e).split('\n')[0])}).</p>`;
  }
  return /** @type {DocumentFragment} */ (/** @type {unknown} */ (DOMPurify.sanitize(html, PURIFY)));
}
