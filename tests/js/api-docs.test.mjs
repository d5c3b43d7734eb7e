// The API reference (docs/api-reference.md) is what `npm run docs` generates from
// wasm/circuitscope.d.ts: a declaration added, changed or documented there and not regenerated
// fails here. Also: every declaration of the .d.ts has its section or row, and every link from the
// API guide (docs/api.md) into the reference names a section that exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { apiReference } = await import(pathToFileURL(path.join(root, 'scripts', 'docs.mjs')).href);
const read = (p) => readFileSync(path.join(root, p), 'utf8');

test('docs/api-reference.md is what npm run docs writes from wasm/circuitscope.d.ts', async () => {
  assert.equal(await apiReference(), read('docs/api-reference.md'), 'docs/api-reference.md is out of date: run npm run docs');
});

test('the reference has every exported declaration of the .d.ts, and the guide links only to its sections', async () => {
  const dts = read('wasm/circuitscope.d.ts');
  const ref = await apiReference();
  const sections = new Set([...ref.matchAll(/^## (.+)$/gm)].map((m) => m[1].toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-')));
  for (const [, kind, name] of dts.matchAll(/^export (?:declare )?(interface|type|function|const) (\w+)/gm)) {
    if (kind === 'interface' || kind === 'type') assert.ok(sections.has(name.toLowerCase()), `${kind} ${name} has no section`);
    else assert.match(ref, new RegExp(`^\\| \`(?:function |const )${name}\\b`, 'm'), `${kind} ${name} has no row`);
  }
  // A member's doc comment reaches its row (LoadedModel.run's first words).
  assert.match(ref, /\| `run\(tokens: TokensIn, intervention\?: Intervention, options\?: RunOptions\): RunResult` \| One forward pass over one sequence/);
  const links = [...read('docs/api.md').matchAll(/\(api-reference\.md#([^)]+)\)/g)].map((m) => m[1]);
  assert.ok(links.length >= 3);
  for (const a of links) assert.ok(sections.has(a), `docs/api.md links to api-reference.md#${a}, which is not a section`);
});
