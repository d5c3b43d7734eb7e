// Rebuilds names.json, the first names of the sentence-template IOI models, from Debian's
// python3-fake-factory 0.9.3-2 (Faker's en_US person provider, MIT/Expat licence): the 20 most
// frequent female and the 20 most frequent male first names by the provider's weights (US birth
// records of the 1960s-1990s), alternating female and male. The package file's sha256 is pinned.
//   node models/corpus/names.mjs
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = 'python3-fake-factory=0.9.3-2';
const SHA256 = '697fbc68d18d8f8e1df0f348fd0e5965e38fa028cbf72c1a29f5acc92a4ab14f';
const PER_SEX = 20;

const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'circuitscope-names-'));
try {
  execFileSync('apt-get', ['download', PACKAGE], { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] });
  const deb = join(work, readdirSync(work).find((f) => f.endsWith('.deb')));
  const got = createHash('sha256').update(readFileSync(deb)).digest('hex');
  if (got !== SHA256) throw new Error(`${PACKAGE}: sha256 ${got} does not match the pinned ${SHA256}`);
  execFileSync('dpkg-deb', ['-x', deb, join(work, 'x')]);
  const src = readFileSync(join(work, 'x/usr/lib/python3/dist-packages/faker/providers/person/en_US/__init__.py'), 'utf8');
  const table = (name) => {
    const start = src.indexOf(`${name} = OrderedDict((`);
    if (start < 0) throw new Error(`${name} not found in the provider`);
    const body = src.slice(start, src.indexOf('))', start));
    const rows = [...body.matchAll(/\('([A-Za-z]+)',\s*([0-9.e-]+)\)/g)].map((m) => [m[1], Number(m[2])]);
    return rows.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, PER_SEX).map((r) => r[0]);
  };
  const female = table('first_names_female'), male = table('first_names_male');
  const names = female.flatMap((f, i) => [f, male[i]]);
  const out = {
    source: `Debian package ${PACKAGE} (sha256 ${SHA256}), faker/providers/person/en_US: the ${PER_SEX} most frequent female and male first names`,
    licence: 'MIT (Expat), Copyright 2012 Daniele Faraglia; see LICENSE.md',
    names,
  };
  writeFileSync(join(here, 'names.json'), JSON.stringify(out, null, 2) + '\n');
  console.log(`names.json: ${names.length} names: ${names.join(' ')}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
