// `npm run docs`: writes the parts of docs/ that are generated from the code, so they cannot
// drift from it: the table of measures a lesson's check may compare (docs/lessons.md, from
// web/lessons/measures.js as built into build/site), and the API reference (docs/api-reference.md,
// from the declarations in wasm/circuitscope.d.ts, read by TypeScript's own parser). `--check`
// writes nothing and exits 1 when a generated part is out of date (tests/js/lessons.test.mjs and
// tests/js/api-docs.test.mjs check each).
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

// ------------------------------------------------------------------------------------------------
// The API reference: every declaration of wasm/circuitscope.d.ts in its order, with its doc
// comment, and for an interface a table of its members.

/** The text of the doc comment just before a node ('' without one), as Markdown paragraphs. */
function docOf(node) {
  const lead = node.getFullText().slice(0, node.getFullText().length - node.getText().length);
  const m = /\/\*\*([\s\S]*?)\*\/\s*$/.exec(lead);
  if (!m) return '';
  // `<` would open an HTML tag in Markdown (<BOS>): written as an entity.
  return m[1].split('\n').map((l) => l.replace(/^\s*\* ?/, '')).join('\n').trim().replace(/</g, '&lt;');
}

/** A declaration's text on one line (its comments and line breaks removed). */
const oneLine = (node) => node.getText().replace(/\/\*[\s\S]*?\*\//g, '').replace(/\s+/g, ' ').replace(/;$/, '').replace(/\{ /g, '{ ').trim();
const cell = (s) => s.replace(/\|/g, '\\|').replace(/\n+/g, ' ');

/** docs/api-reference.md's text, from the .d.ts at `file`. */
export async function apiReference(file = path.join(root, 'wasm', 'circuitscope.d.ts'), project = path.join(root, 'tests', 'types', 'tsconfig.json')) {
  const { API } = await import('typescript/unstable/sync');
  const { SyntaxKind: K } = await import('typescript/unstable/ast');
  const api = new API({ cwd: root });
  try {
    const sf = api.updateSnapshot({ openProject: project }).getProjects()[0].program.getSourceFile(file);
    if (!sf) throw new Error(`${path.relative(root, file)} is not in the project ${path.relative(root, project)}`);
    const out = ['# API reference', '',
      '<!-- generated from wasm/circuitscope.d.ts by `npm run docs`: edit the declarations, not this file -->', '',
      'Every declaration of `wasm/circuitscope.d.ts`, the types of `wasm/circuitscope.js`, in the order the file gives them, with its',
      'doc comment. [The JavaScript API](api.md) is the guide: how to load the module, a model and a trainer, and an example.', ''];
    const fns = [];
    for (const st of sf.statements) {
      const name = st.name?.text;
      if (st.kind === K.InterfaceDeclaration) {
        out.push(`## ${name}`, '');
        const doc = docOf(st);
        if (doc) out.push(doc, '');
        const heritage = st.heritageClauses?.length ? ` ${[...st.heritageClauses].map((h) => h.getText()).join(' ')}` : '';
        if (heritage || st.typeParameters?.length) out.push(`\`interface ${oneLine(st).replace(/\s*\{[\s\S]*$/, '').replace(/^export interface /, '')}\``, '');
        if (st.members.length) {
          out.push('| member | what it is |', '|---|---|');
          for (const m of st.members) out.push(`| \`${cell(oneLine(m))}\` | ${cell(docOf(m))} |`);
          out.push('');
        }
      } else if (st.kind === K.TypeAliasDeclaration) {
        out.push(`## ${name}`, '', `\`${cell(oneLine(st).replace(/^export /, ''))}\``, '');
        const doc = docOf(st);
        if (doc) out.push(doc, '');
      } else if (st.kind === K.FunctionDeclaration || st.kind === K.VariableStatement) {
        fns.push(`| \`${cell(oneLine(st).replace(/^export (declare )?/, ''))}\` | ${cell(docOf(st))} |`);
      }
    }
    if (fns.length) out.push('## Module functions and constants', '', '| declaration | what it is |', '|---|---|', ...fns, '');
    return out.join('\n');
  } finally {
    api.close();
  }
}

/** Writes (or with check, compares) one generated file; true when it was up to date. */
function update(file, next, check) {
  const text = (() => { try { return readFileSync(file, 'utf8'); } catch { return null; } })();
  if (next === text) return true;
  if (check) console.error(`${path.relative(root, file)} is out of date; run npm run docs`);
  else { writeFileSync(file, next); console.log(`wrote ${path.relative(root, file)}`); }
  return false;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const check = process.argv.includes('--check');
  const { MEASURES } = await import(pathToFileURL(path.join(site, 'lessons', 'measures.js')).href);
  const lessons = path.join(root, 'docs', 'lessons.md');
  const ok = [
    update(lessons, withTable(readFileSync(lessons, 'utf8'), measuresTable(MEASURES)), check),
    update(path.join(root, 'docs', 'api-reference.md'), await apiReference(), check),
  ];
  if (check && !ok.every(Boolean)) process.exit(1);
}
