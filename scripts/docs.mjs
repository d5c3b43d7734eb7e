// `npm run docs`: writes the parts of docs/ that are generated from the code, so they cannot
// drift from it: the table of measures a lesson's check may compare (docs/lessons.md, from
// web/lessons/measures.js as built into build/site). `--check` writes nothing and exits 1 when a
// generated part is out of date (tests/js/lessons.test.mjs runs it).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const VIEWS = { induction: 'Induction', ioi: 'IOI', circuits: 'Circuits', training: 'Training' };

/** The Markdown table of MEASURES: one row each, in their order. */
export function measuresTable(measures) {
  const rows = Object.entries(measures).map(([name, m]) =>
    `| \`${name}${m.head ? '(L1H1)' : ''}\` | ${VIEWS[m.view] ?? m.view} | ${m.about.replace(/\|/g, '\\|')} |`);
  return ['| measure | view | what it is |', '|---|---|---|', ...rows].join('\n');
}

const BEGIN = '<!-- measures: generated from web/lessons/measures.js by `npm run docs` -->';
const END = '<!-- end of measures -->';

/** docs/lessons.md with its measures table replaced by `table`. */
export function withTable(text, table) {
  const a = text.indexOf(BEGIN), b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error(`docs/lessons.md has no "${BEGIN}" ... "${END}" block`);
  return `${text.slice(0, a + BEGIN.length)}\n${table}\n${text.slice(b)}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { MEASURES } = await import(pathToFileURL(path.join(site, 'lessons', 'measures.js')).href);
  const file = path.join(root, 'docs', 'lessons.md');
  const text = readFileSync(file, 'utf8');
  const next = withTable(text, measuresTable(MEASURES));
  if (process.argv.includes('--check')) {
    if (next !== text) {
      console.error('docs/lessons.md: the measures table is out of date; run npm run docs');
      process.exit(1);
    }
  } else if (next !== text) {
    writeFileSync(file, next);
    console.log('wrote docs/lessons.md');
  }
}
