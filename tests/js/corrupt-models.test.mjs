// A seeded sample of the corrupt-model corpus (tests/hardening/corrupt-models-lib.mjs) through the
// native CLI: every run exits 0 with finite output or 1 with a one-line sentence, never a signal,
// a hang, nan/inf or library text. The full corpus: node tests/hardening/corrupt-models.mjs --all
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, generateCorpus, runCorpus, sample } from '../hardening/corrupt-models-lib.mjs';

const BIN = path.join(ROOT, 'build/native/circuitscope');

test('a seeded sample of 150 corrupt model files (300 runs): a sentence or finite output, never a crash', { skip: !fs.existsSync(BIN) && 'build/native/circuitscope is not built' }, async () => {
  const cases = sample(generateCorpus({ seed: 1 }), 150, 7);
  const stats = await runCorpus(cases, { bin: BIN, dir: path.join(ROOT, 'build/hardening/corrupt-models-sample'), jobs: 2 });
  console.log(`# corrupt models: ${stats.files} files, ${stats.runs} runs, ${stats.ok} finite, ${stats.refused} refused, ${stats.failures.length} failures`);
  assert.equal(stats.runs, 300);
  assert.ok(stats.refused > 150, `only ${stats.refused} refusals`);
  assert.deepEqual(stats.failures, []);
});
