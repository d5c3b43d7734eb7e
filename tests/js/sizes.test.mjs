// Size limits that keep the code readable (issue: "the longest function in src/ and the longest
// class in web/ are each under 150 lines"): every class in web/ (JavaScript) and every function
// in src/ (C++, including lambdas' enclosing function and member functions defined out of line)
// is under 150 lines. Counted from the line that opens the block to the line that closes it,
// by brace matching that skips strings, characters and comments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { blocks } from './sizes.mjs';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const LIMIT = 150;

function files(dir, ext) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p, ext));
    else if (ext.some((e) => name.endsWith(e))) out.push(p);
  }
  return out;
}

test(`every class in web/ is under ${LIMIT} lines`, () => {
  const found = files(path.join(ROOT, 'web'), ['.js']).flatMap((f) =>
    blocks(readFileSync(f, 'utf8'), /^\s*(?:export\s+)?(?:default\s+)?class\s+([A-Za-z0-9_$]+)/).map((b) => ({ ...b, file: path.relative(ROOT, f) })));
  assert.ok(found.length >= 5, `found only ${found.length} classes: the counter is broken`);
  const long = found.filter((b) => b.lines >= LIMIT).map((b) => `${b.file}:${b.start} ${b.name} (${b.lines} lines)`);
  assert.deepEqual(long, [], `classes of ${LIMIT} lines or more`);
});

test(`every function in src/ is under ${LIMIT} lines`, () => {
  // A function definition starts at column 0 (the code's style: no indented namespace bodies)
  // with a name followed by '(' and is not a control statement, namespace, class or enum.
  const head = /^(?!namespace\b|struct\b|class\b|enum\b|union\b|extern\b|typedef\b|using\b|static_assert\b|#)[A-Za-z_][\w:<>,*&~ ]*?\b([A-Za-z_~][\w:~]*)\s*\(/;
  const found = files(path.join(ROOT, 'src'), ['.cpp', '.h']).flatMap((f) =>
    blocks(readFileSync(f, 'utf8'), head).map((b) => ({ ...b, file: path.relative(ROOT, f) })));
  assert.ok(found.length >= 50, `found only ${found.length} functions: the counter is broken`);
  const long = found.filter((b) => b.lines >= LIMIT).map((b) => `${b.file}:${b.start} ${b.name} (${b.lines} lines)`);
  assert.deepEqual(long, [], `functions of ${LIMIT} lines or more`);
});

test('the counters see a long block (so the limits above can fail)', () => {
  const body = Array.from({ length: LIMIT }, (_, i) => `  x${i}(); // "}" '{'`).join('\n');
  assert.equal(blocks(`class Big {\n${body}\n}\n`, /^\s*class\s+(\w+)/)[0].lines, LIMIT + 2);
  assert.equal(blocks(`static int f(int a) {\n${body}\n}\n`, /^[A-Za-z_][\w:<>,*& ]*?\b([A-Za-z_]\w*)\s*\(/)[0].name, 'f');
});
