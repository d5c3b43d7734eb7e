// The lesson format: a Markdown file (docs/lessons.md documents it).
//
//   # The lesson's title
//   Paragraphs before the first step: what the lesson is about.
//   ## A step's title            (each second-level heading starts a step)
//   Markdown: the text beside the live view.
//   ```step
//   link: #v=2&view=induction&model=char-2l&text=...   (the state the step opens: the link
//   keep: text                                            "Copy link" gave, whole or its #v=
//   panel: induction-pattern                              part; settings kept from the reader's
//   ```                                                   page instead, and the panel pointed
//                                                         at: optional)
//   ```check
//   when: ablate has L0H1         (every `when` must hold; see checks.js)
//   when: secondCopyLoss > 1.5
//   hint: Click L0H1 in the head grid to ablate it.      (shown until the check passes)
//   say: The stripe is gone: without L0H1 ...            (shown when it passes)
//   ```
//
// parseLesson(text, {page}) -> {title, intro, steps: [{title, markdown, link, state, keep, panel,
// check}], problems}: every problem is a sentence with its line, and a lesson with problems still
// opens (a step whose link cannot be read keeps the page's state; a condition that cannot be read
// is left out and listed). A step's link is a hash (#v=...) or a full URL of this page (`page`,
// the page's address: the same origin and path); a URL of another site or page is a problem.
// Quotes and lists nest at most MAX_NESTING deep on a line (deeper markers are left out, so
// that marked, which reads nesting by recursion, never runs out of stack), and a text marked
// still cannot read (emphasis nested thousands deep) is read again with its emphasis marks as
// plain characters. Markdown is split with marked's lexer; rendering is render.js's.
import { marked } from '../vendor/marked.mjs';
import { decodeHash } from '../store.js';
import { parseCondition } from './checks.js';

export const MAX_LESSON = 200_000;   // characters of a lesson file
export const MAX_STEPS = 100;        // the link's step numbers go up to 99
// Settings a step may keep from the page instead of its link (`keep: text`): the reader's own.
// Quotes and lists inside one another, on one line: more would be no lesson's, and thousands
// exhaust the stack of marked's recursive reading.
export const MAX_NESTING = 16;
export const KEEPABLE = ['text', 'model', 'snapshot', 'head', 'names', 'io', 's', 'order', 'tpl', 'place', 'object'];

/** The `key: value` lines of a directive block: [{key, value, line}] (line counted from 1). */
function directives(token, firstLine, problems) {
  const out = [];
  token.text.split('\n').forEach((raw, i) => {
    const s = raw.trim();
    if (!s || s.startsWith('//')) return;
    const m = /^([a-z]+):\s*(.*)$/.exec(s);
    if (m) out.push({ key: m[1], value: m[2], line: firstLine + 1 + i });
    else problems.push(`line ${firstLine + 1 + i}: "${s.slice(0, 60)}" is not "key: value"`);
  });
  return out;
}

/** A page's path with its index.html left out ("/a/index.html" and "/a/" are one page). */
const pagePath = (u) => u.pathname.replace(/\/index\.html$/, '/');

/**
 * A step's `link:` as the hash it opens: {hash} or {problem} (a sentence without its line). A
 * hash (`#v=...`, or `v=...`), or a full URL of the page `page` (its origin and path).
 */
function linkHash(value, page) {
  if (!/^[a-z][a-z0-9+.-]*:/i.test(value)) return { hash: value };
  let url;
  try { url = new URL(value); } catch { return { problem: `"${value.slice(0, 60)}" is neither a link of this page (#v=...) nor a web address` }; }
  let here = null;
  try { here = page ? new URL(page) : null; } catch { /* no page: no full URL can be this page's */ }
  if (!here || url.origin !== here.origin) {
    return { problem: `is to another site (${url.origin === 'null' ? url.protocol : url.origin}), not this page: use the link "Copy link" gives on the page that shows the lesson, or only its #v=... part` };
  }
  if (pagePath(url) !== pagePath(here)) return { problem: `is to another page (${url.pathname.slice(0, 60)}), not this one (${here.pathname.slice(0, 60)}): use the link "Copy link" gives here, or only its #v=... part` };
  if (!url.hash) return { problem: 'has no #v=... part: the settings of a view are the part after #' };
  return { hash: url.hash };
}

function stepBlock(step, lines, problems, page) {
  for (const { key, value, line } of lines) {
    if (key === 'link') {
      const { hash, problem } = linkHash(value, page);
      const { state, error } = problem ? { state: null, error: null } : decodeHash(hash);
      if (problem) problems.push(`line ${line}: the step's link ${problem}`);
      else if (error) problems.push(`line ${line}: the step's link ${error.replace(/^This link /, '').replace(/, so the default view is shown\.$/, '')}`);
      else { step.link = hash.replace(/^#?/, '#'); step.state = state; }
    } else if (key === 'keep') {
      const keys = value.split(',').map((k) => k.trim()).filter(Boolean);
      const bad = keys.filter((k) => !KEEPABLE.includes(k));
      if (bad.length) problems.push(`line ${line}: "${bad[0].slice(0, 30)}" is not a setting a step can keep (${KEEPABLE.join(', ')})`);
      step.keep = keys.filter((k) => KEEPABLE.includes(k));
    } else if (key === 'panel') {
      if (/^[a-z][a-z0-9]{0,20}-[a-z][a-z0-9-]{0,40}$/.test(value)) step.panel = value;
      else problems.push(`line ${line}: "${value.slice(0, 40)}" is not a panel name such as induction-pattern`);
    } else problems.push(`line ${line}: a step block has link, keep and panel, not "${key}"`);
  }
}

function checkBlock(step, lines, problems) {
  const check = { when: [], hint: '', say: '' };
  for (const { key, value, line } of lines) {
    if (key === 'when') {
      try { check.when.push(parseCondition(value)); } catch (e) { problems.push(`line ${line}: ${e.message}`); }
    } else if (key === 'hint' || key === 'say') check[key] = check[key] ? `${check[key]} ${value}` : value;
    else problems.push(`line ${line}: a check block has when, hint and say, not "${key}"`);
  }
  if (check.when.length) step.check = check;
}

// A line's quote and list markers: "> ", "- ", "* ", "+ ", "1. ", "1) ", each after at most
// three spaces (a list marker needs a space after it, as in Markdown).
const MARKER = /[ ]{0,3}(?:>[ \t]?|(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))/y;
const SHOWN_PROBLEMS = 5;

/** The text with every line's quote and list nesting bounded to MAX_NESTING (see the header). */
function boundNesting(src, problems) {
  const deep = [];
  const lines = src.split('\n').map((line, i) => {
    if (line.length <= MAX_NESTING) return line;   // each marker is a character at least
    let depth = 0;
    let end = 0;
    let keep = 0;
    MARKER.lastIndex = 0;
    for (let m; (m = MARKER.exec(line)) && m[0].length; end = MARKER.lastIndex) if (++depth === MAX_NESTING) keep = MARKER.lastIndex;
    if (depth <= MAX_NESTING) return line;
    deep.push(`line ${i + 1}: quotes and lists nest ${depth.toLocaleString('en')} deep here; a lesson nests them at most ${MAX_NESTING} deep, so the deeper ones are left out`);
    return line.slice(0, keep) + line.slice(end);
  });
  problems.push(...deep.slice(0, SHOWN_PROBLEMS));
  if (deep.length > SHOWN_PROBLEMS) problems.push(`and ${(deep.length - SHOWN_PROBLEMS).toLocaleString('en')} more lines nest too deep`);
  return deep.length ? lines.join('\n') : src;
}

/** The text with emphasis marks (* _ ~) outside code as plain characters (escaped). */
function plainEmphasis(src) {
  let fence = null;
  return src.split('\n').map((line) => {
    const f = /^[ ]{0,3}(`{3,}|~{3,})/.exec(line);
    if (f && (!fence || f[1][0] === fence[0] && f[1].length >= fence.length)) { fence = fence ? null : f[1]; return line; }
    return fence ? line : line.replace(/(`+)[^`]*?\1|[*_~]/g, (m) => (m.length === 1 ? `\\${m}` : m));
  }).join('\n');
}

const tooDeep = (e) => e instanceof RangeError || /call stack|too much recursion/i.test(String(e?.message));

/** marked's tokens for the text; one nested too deep to read is read without its emphasis. */
function lex(src, problems) {
  try {
    return marked.lexer(src);
  } catch (e) {
    if (!tooDeep(e)) throw e;
  }
  // The line with the most emphasis marks, to point at.
  let most = 0;
  let marks = -1;
  src.split('\n').forEach((l, i) => { const n = (l.match(/[*_~]/g) ?? []).length; if (n > marks) { marks = n; most = i; } });
  problems.push(`line ${most + 1}: the lesson nests emphasis (* _ ~) too deep to read, so its emphasis marks are shown as they are written`);
  return marked.lexer(plainEmphasis(src));
}

/**
 * Reads a lesson file; see the header. `page`: the address of the page that shows the lesson
 * (its full URL links are read against it; by default the page's own). Never throws.
 * @param {unknown} text
 * @param {{page?: string | null}} [options]
 */
export function parseLesson(text, { page = globalThis.location?.href ?? null } = {}) {
  const problems = [];
  let src = String(text ?? '');
  if (src.length > MAX_LESSON) {
    problems.push(`the lesson is ${src.length.toLocaleString('en')} characters; only the first ${MAX_LESSON.toLocaleString('en')} are read`);
    src = src.slice(0, MAX_LESSON);
  }
  const lesson = { title: '', intro: '', steps: [], problems };
  let tokens;
  try {
    tokens = lex(boundNesting(src.replace(/\r\n?/g, '\n'), problems), problems);
  } catch (e) {
    problems.push(tooDeep(e) ? 'the Markdown nests too deep to read' : `the Markdown could not be read (${String(e?.message ?? e).split('\n')[0]})`);
    return lesson;
  }
  let line = 1;
  let step = null;
  for (const t of tokens) {
    const here = line;
    line += (t.raw.match(/\n/g) || []).length;
    if (t.type === 'heading' && t.depth === 1 && !lesson.title && !step) { lesson.title = t.text; continue; }
    if (t.type === 'heading' && t.depth === 2) {
      if (lesson.steps.length >= MAX_STEPS) { problems.push(`line ${here}: a lesson has at most ${MAX_STEPS} steps; the rest are left out`); break; }
      step = { title: t.text, markdown: '', link: null, state: null, keep: [], panel: null, check: null };
      lesson.steps.push(step);
      continue;
    }
    if (t.type === 'code' && (t.lang === 'step' || t.lang === 'check')) {
      if (!step) { problems.push(`line ${here}: a ${t.lang} block before the first step (a ## heading)`); continue; }
      if (t.lang === 'step') stepBlock(step, directives(t, here, problems), problems, page);
      else checkBlock(step, directives(t, here, problems), problems);
      continue;
    }
    if (step) step.markdown += t.raw;
    else lesson.intro += t.raw;
  }
  if (!lesson.title) lesson.title = 'Untitled lesson';
  if (!lesson.steps.length) problems.push('the lesson has no steps (each step starts with a ## heading)');
  return lesson;
}
