// The lesson format (web/lessons/format.js, checks.js, as built into build/site): the shipped
// lessons read without a problem, every step opens a link the page reads and names a panel that
// exists, every glossary link has its entry; conditions parse and decide as documented, and
// mistakes give sentences with their line; a step's link may be a whole URL of the page; nesting
// thousands deep is bounded and said in words; progress kept in storage (progress.js) survives
// storage that refuses. The browser half (a student following every lesson, hostile lessons) is
// tests/browser/lessons.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rng } from '../rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const load = (p) => import(pathToFileURL(path.join(site, p)).href);
const { parseLesson } = await load('lessons/format.js');
const { parseCondition, holds } = await load('lessons/checks.js');
const S = await load('store.js');

const dir = path.join(root, 'web', 'lessons');
const index = JSON.parse(readFileSync(path.join(dir, 'index.json'), 'utf8')).lessons;
const glossary = new Set([...readFileSync(path.join(dir, 'glossary.md'), 'utf8').matchAll(/^## .*\{#([a-z0-9-]+)\}\s*$/gm)].map((m) => m[1]));

test('the index lists every lesson file, and each reads without a problem', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.md') && f !== 'glossary.md').map((f) => f.replace(/\.md$/, ''));
  assert.deepEqual(index.map((l) => l.name).sort(), files.sort());
  assert.ok(index.length >= 5, 'five lessons ship');
  for (const { name } of index) {
    const text = readFileSync(path.join(dir, `${name}.md`), 'utf8');
    const lesson = parseLesson(text);
    assert.deepEqual(lesson.problems, [], name);
    assert.ok(lesson.steps.length >= 3, `${name} has steps`);
    for (const [i, st] of lesson.steps.entries()) {
      assert.ok(st.state, `${name} step ${i + 1} opens a link`);
      assert.ok(st.check?.when.length, `${name} step ${i + 1} has a check`);
      if (st.panel) {
        assert.ok(S.PANELS.includes(st.panel), `${name} step ${i + 1}: panel ${st.panel} exists`);
        assert.equal(st.panel.split('-')[0], st.state.view, `${name} step ${i + 1}: the panel is in the step's view`);
      }
    }
    for (const m of text.matchAll(/\(glossary#([a-z0-9-]+)\)/g)) assert.ok(glossary.has(m[1]), `${name}: glossary#${m[1]} has an entry`);
  }
});

// docs/lessons.md's table of measures is generated from measures.js (npm run docs): a measure
// added, renamed or redescribed there and not here fails this.
test("docs/lessons.md lists exactly the measures measures.js defines, as npm run docs writes them", async () => {
  const { measuresTable, withTable } = await import(pathToFileURL(path.join(root, 'scripts', 'docs.mjs')).href);
  const { MEASURES } = await load('lessons/measures.js');
  const text = readFileSync(path.join(root, 'docs', 'lessons.md'), 'utf8');
  assert.equal(withTable(text, measuresTable(MEASURES)), text, 'docs/lessons.md is out of date: run npm run docs');
  for (const name of Object.keys(MEASURES)) assert.match(text, new RegExp(`\\| \`${name}(\\(L1H1\\))?\` \\|`), name);
});

// The README's lesson for teachers (its indented block) and docs/lessons.md's example read as
// written: no problem, a link, a panel of the step's view, a check.
test('the lessons the README and docs/lessons.md show read without a problem', () => {
  for (const file of ['README.md', 'docs/lessons.md']) {
    const md = readFileSync(path.join(root, file), 'utf8');
    const start = md.search(/^ {4,}# /m);
    assert.ok(start >= 0, `${file} shows a lesson`);
    const indent = md.slice(start).match(/^ */)[0].length;
    const lines = [];
    for (const line of md.slice(start).split('\n')) {
      if (line.trim() && line.length - line.trimStart().length < indent) break;
      lines.push(line.slice(indent));
    }
    const lesson = parseLesson(lines.join('\n'));
    assert.deepEqual(lesson.problems, [], file);
    assert.ok(lesson.steps.length >= 1, `${file}: a step`);
    for (const st of lesson.steps) {
      assert.ok(st.state && st.check?.when.length, `${file}: the step opens a link and has a check`);
      if (st.panel) assert.equal(st.panel.split('-')[0], st.state.view, `${file}: the panel is in the step's view`);
    }
  }
});

test('conditions parse as documented and decide against the state and the measures', () => {
  const base = { ...S.DEFAULT_STATE, view: 'induction', text: 'abc' };
  const state = { ...base, ablate: ['L0H1'], text: 'abcd', nopos: true, cut: ['*>*.k'] };
  const values = { 'secondCopyLoss()': 2, 'firstCopyLoss()': 2.5, 'prefix(L1H1)': 0.8 };
  const cases = [
    ['ablate has L0H1', true], ['ablate has L1H1', false], ['ablate is L0H1', true], ['cut has *>*.k', true],
    ['view is induction', true], ['view is not induction', false], ['nopos is 1', true], ['head is set', false],
    ['text changed', true], ['text is set', true], ['secondCopyLoss > 0.5 * firstCopyLoss', true],
    ['secondCopyLoss > firstCopyLoss', false], ['prefix(L1H1) >= 0.8', true], ['prefix(L1H1) < 0.5', false],
    ['probIO > 0.5', false],   // a measure with no value for this state is never met
  ];
  for (const [line, expected] of cases) assert.equal(holds(parseCondition(line), state, base, values), expected, line);
  const wrong = [
    ['colour is red', /not a setting of the page/], ['secondLoss > 1', /no measure "secondLoss"/], ['prefix > 0.5', /needs a head/],
    ['meanLoss(L0H1) > 1', /takes no head/], ['head has L0H1', /not a list/], ['ablate is', /not a condition|needs a value/],
    ['text changed now', /nothing may follow/], ['constructor > 1', /no measure/], ['__proto__ is x', /not a setting/],
  ];
  for (const [line, re] of wrong) assert.throws(() => parseCondition(line), re, line);
});

test('mistakes in a lesson are listed with their line, and the lesson still opens', () => {
  const text = '# T\n\n## One\n\n```step\nlink: #v=9\npanel: Not A Panel\n```\n\n```check\nwhen: secondLoss > 1\nwhen: ablate has L0H1\ncolour: red\n```\n';
  const lesson = parseLesson(text);
  assert.equal(lesson.steps.length, 1);
  assert.equal(lesson.steps[0].check.when.length, 1, 'the good condition is kept');
  assert.equal(lesson.problems.length, 4, lesson.problems.join('\n'));
  assert.match(lesson.problems.join('\n'), /line 6: the step's link .*version 9/);
  assert.match(lesson.problems.join('\n'), /line 11: there is no measure "secondLoss"/);
  assert.match(parseLesson('just text').problems.join(), /no steps/);
});

test('random and hostile lesson text never throws', () => {
  const r = rng(7);
  const pieces = ['# ', '## ', '```step\n', '```check\n', '```\n', 'when: ', 'link: #v=2&', '<script>', '\u0000', '😀', '\n', 'a'.repeat(50), '[x](glossary#', ')', '*>*.k', 'constructor'];
  for (let n = 0; n < 500; n++) {
    const text = Array.from({ length: r.int(60) }, () => r.pick(pieces)).join('');
    const lesson = parseLesson(text);
    assert.ok(Array.isArray(lesson.steps) && Array.isArray(lesson.problems));
  }
  const huge = parseLesson('## s\n'.repeat(150) + 'x'.repeat(250_000));
  assert.equal(huge.steps.length, 100);
  assert.ok(huge.problems.some((p) => /at most 100 steps/.test(p)));
});

test('every panel lists its glossary terms (web/panels/terms.js), and every term has its entry', async () => {
  const { TERMS } = await load('panels/terms.js');
  assert.deepEqual(Object.keys(TERMS).sort(), [...S.PANELS].sort(), 'a terms line for every panel');
  for (const [panel, terms] of Object.entries(TERMS)) {
    assert.ok(terms.length > 0, panel);
    for (const [label, id] of terms) assert.ok(glossary.has(id), `${panel}: "${label}" links to glossary#${id}, which has no entry`);
  }
});

test("a step's link may be the full URL Copy link gives, of this page; another site's is a problem in words", () => {
  const page = 'https://example.org/circuitscope/index.html?x=1#v=2&view=induction';
  const lesson = (link) => parseLesson(`# T\n\n## One\n\n\`\`\`step\nlink: ${link}\n\`\`\`\n`, { page });
  for (const link of ['https://example.org/circuitscope/#v=2&view=ioi&model=ioi-1l2h', 'https://example.org/circuitscope/index.html#v=2&view=ioi&model=ioi-1l2h', '#v=2&view=ioi&model=ioi-1l2h', 'v=2&view=ioi&model=ioi-1l2h']) {
    const l = lesson(link);
    assert.deepEqual(l.problems, [], link);
    assert.equal(l.steps[0].state.view, 'ioi', link);
    assert.equal(l.steps[0].state.model, 'ioi-1l2h', link);
    assert.equal(l.steps[0].link, '#v=2&view=ioi&model=ioi-1l2h', link);
  }
  for (const [link, re] of [['https://other.example/circuitscope/#v=2&view=ioi', /line 6: the step's link is to another site \(https:\/\/other\.example\)/],
    ['https://example.org/elsewhere/#v=2&view=ioi', /line 6: the step's link is to another page \(\/elsewhere\/\)/],
    ['https://example.org/circuitscope/', /line 6: the step's link has no #v=/]]) {
    const l = lesson(link);
    assert.equal(l.steps[0].state, null, link);
    assert.match(l.problems.join('\n'), re, link);
    assert.doesNotMatch(l.problems.join('\n'), /undefined|Error/, link);
  }
});

test('quotes, lists and emphasis nested thousands deep are read to a bounded depth, and the lesson says so in words', async () => {
  const { marked } = await load('vendor/marked.mjs');
  const deep = {
    quotes: '>'.repeat(5000) + ' deep',
    spaced: '> '.repeat(5000) + 'deep',
    lists: '- '.repeat(5000) + 'deep',
    mixed: '> 1. '.repeat(3000) + 'deep',
    emphasis: '*a '.repeat(5000) + 'deep' + '*'.repeat(5000),
  };
  for (const [kind, body] of Object.entries(deep)) {
    const lesson = parseLesson(`# T\n\n## One\n\n${body}\n\n## Two\n\ntext\n`);
    assert.equal(lesson.steps.length, 2, kind);
    const said = lesson.problems.join('\n');
    assert.match(said, /line 5: .*nest/, `${kind}: ${said.slice(0, 200)}`);
    assert.doesNotMatch(said, /call stack|RangeError/i, kind);
    assert.match(lesson.steps[0].markdown, /deep/, kind);
    assert.doesNotThrow(() => marked.parse(lesson.steps[0].markdown), kind);
  }
  const shallow = parseLesson('# T\n\n## One\n\n> > quoted\n\n- a\n  - b\n\n*a **b** c*\n');
  assert.deepEqual(shallow.problems, [], 'ordinary nesting is no problem');
});

test('progress is kept per lesson in storage, merged with the link, and storage that fails changes nothing', async () => {
  const P = await load('lessons/progress.js');
  const mem = new Map();
  const storage = { getItem: (k) => mem.get(k) ?? null, setItem: (k, v) => { mem.set(k, String(v)); } };
  assert.deepEqual(P.savedDone('ioi-circuit', storage), []);
  assert.deepEqual(P.saveDone('ioi-circuit', ['0', '2'], storage), ['0', '2']);
  assert.deepEqual(P.saveDone('ioi-circuit', ['1'], storage), ['0', '1', '2'], 'saving adds to what was kept');
  assert.deepEqual(P.savedDone('ioi-circuit', storage), ['0', '1', '2']);
  assert.deepEqual(P.savedDone('induction-heads', storage), [], 'each lesson its own');
  assert.deepEqual(P.mergeDone(['3'], ['10', '1']), ['1', '3', '10']);
  mem.set(P.storageKey('ioi-circuit'), '{"not": "a list"}');
  assert.deepEqual(P.savedDone('ioi-circuit', storage), [], 'damaged storage reads as nothing');
  mem.set(P.storageKey('ioi-circuit'), '["0", "x", 7, "999"]');
  assert.deepEqual(P.savedDone('ioi-circuit', storage), ['0'], 'only step numbers');
  const broken = { getItem: () => { throw new Error('SecurityError'); }, setItem: () => { throw new Error('QuotaExceededError'); } };
  assert.deepEqual(P.savedDone('ioi-circuit', broken), []);
  assert.deepEqual(P.saveDone('ioi-circuit', ['1'], broken), ['1']);
  assert.deepEqual(P.savedDone('ioi-circuit', null), []);
  assert.deepEqual(P.savedDone('pasted', storage), [], 'a pasted lesson keeps its progress in its link only');
});
