// The lesson format: a Markdown file (the README's "Writing a lesson" documents it).
//
//   # The lesson's title
//   Paragraphs before the first step: what the lesson is about.
//   ## A step's title            (each second-level heading starts a step)
//   Markdown: the text beside the live view.
//   ```step
//   link: #v=2&view=induction&model=char-2l&text=...   (the state the step opens: a link the
//   keep: text                                            page made with "Copy link"; settings
//   panel: induction-pattern                              kept from the reader's page instead,
//   ```                                                   and the panel pointed at: optional)
//   ```check
//   when: ablate has L0H1         (every `when` must hold; see checks.js)
//   when: secondCopyLoss > 1.5
//   hint: Click L0H1 in the head grid to ablate it.      (shown until the check passes)
//   say: The stripe is gone: without L0H1 ...            (shown when it passes)
//   ```
//
// parseLesson(text) -> {title, intro, steps: [{title, markdown, link, state, keep, panel, check}],
// problems}: every problem is a sentence with its line, and a lesson with problems still opens
// (a step whose link cannot be read keeps the page's state; a condition that cannot be read is
// left out and listed). Markdown is split with marked's lexer; rendering is render.js's.
import { marked } from '../vendor/marked.mjs';
import { decodeHash } from '../store.js';
import { parseCondition } from './checks.js';

export const MAX_LESSON = 200_000;   // characters of a lesson file
export const MAX_STEPS = 100;        // the link's step numbers go up to 99
// Settings a step may keep from the page instead of its link (`keep: text`): the reader's own.
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

function stepBlock(step, lines, problems) {
  for (const { key, value, line } of lines) {
    if (key === 'link') {
      const { state, error } = decodeHash(value);
      if (error) problems.push(`line ${line}: the step's link ${error.replace(/^This link /, '').replace(/, so the default view is shown\.$/, '')}`);
      else { step.link = value.replace(/^#?/, '#'); step.state = state; }
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

/** Reads a lesson file; see the header. Never throws. */
export function parseLesson(text) {
  const problems = [];
  let src = String(text ?? '');
  if (src.length > MAX_LESSON) {
    problems.push(`the lesson is ${src.length.toLocaleString('en')} characters; only the first ${MAX_LESSON.toLocaleString('en')} are read`);
    src = src.slice(0, MAX_LESSON);
  }
  const lesson = { title: '', intro: '', steps: [], problems };
  let tokens;
  try {
    tokens = marked.lexer(src.replace(/\r\n?/g, '\n'));
  } catch (e) {
    problems.push(`the Markdown could not be read (${String(e?.message ?? e).split('\n')[0]})`);
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
      (t.lang === 'step' ? stepBlock : checkBlock)(step, directives(t, here, problems), problems);
      continue;
    }
    if (step) step.markdown += t.raw;
    else lesson.intro += t.raw;
  }
  if (!lesson.title) lesson.title = 'Untitled lesson';
  if (!lesson.steps.length) problems.push('the lesson has no steps (each step starts with a ## heading)');
  return lesson;
}
