// A seeded sample of the corrupt-model corpus (tests/hardening/corrupt-models-lib.mjs) through the
// native CLI: every run exits 0 with finite output or 1 with a one-line sentence, never a signal,
// a hang, nan/inf or library text; and a sample through the WASM module. The full corpora:
// node tests/hardening/corrupt-models.mjs --all, node tests/hardening/corrupt-models-wasm.mjs --all
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, generateCorpus, judgeWasmCall, runCorpus, runCorpusWasm, sample } from '../hardening/corrupt-models-lib.mjs';

const BIN = path.join(ROOT, 'build/native/circuitscope');

test('a seeded sample of 150 corrupt model files (300 runs): a sentence or finite output, never a crash', { skip: !fs.existsSync(BIN) && 'build/native/circuitscope is not built' }, async () => {
  const cases = sample(generateCorpus({ seed: 1 }), 150, 7);
  const stats = await runCorpus(cases, { bin: BIN, dir: path.join(ROOT, 'build/hardening/corrupt-models-sample'), jobs: 2 });
  console.log(`# corrupt models: ${stats.files} files, ${stats.runs} runs, ${stats.ok} finite, ${stats.refused} refused, ${stats.failures.length} failures`);
  assert.equal(stats.runs, 300);
  assert.ok(stats.refused > 150, `only ${stats.refused} refusals`);
  assert.deepEqual(stats.failures, []);
});

// The same corpus through the WebAssembly module (tests/hardening/corrupt-models-wasm.mjs for the
// whole of it): one instance in a worker thread loads each file and makes the page's calls on it.
const WRAPPER = path.join(ROOT, 'build/wasm/circuitscope.js');

test('the WASM judge: NaN outside the documented places, library text and traps fail', () => {
  const f32 = (...x) => ({ data: new Float32Array(x), shape: [x.length], axes: ['pos'] });
  assert.equal(judgeWasmCall('run', { value: { loss: f32(1, 2, NaN), text_scores: { stripe: f32(NaN) }, logits: f32(0) } }).outcome, 'finite');
  assert.match(judgeWasmCall('run', { value: { loss: f32(NaN, 2), logits: f32(0) } }).problem, /\.loss\.data\[0\] = NaN/);
  assert.equal(judgeWasmCall('headScores', { value: { previous_token: f32(0, Infinity) } }).outcome, 'failed');
  assert.equal(judgeWasmCall('eigen', { value: { ov: { re: new Float64Array([1]), copying: NaN } } }).outcome, 'failed');
  assert.equal(judgeWasmCall('load', { error: new Error('model file: tensor embed.W_E is missing') }).outcome, 'refused');
  for (const e of [new Error('std::bad_alloc'), new Error('[json.exception.parse_error.101] x'), new Error('two\nlines'),
    new Error('circuitscope: internal error (5)'), new WebAssembly.RuntimeError('unreachable'), 5])
    assert.equal(judgeWasmCall('load', { error: e }).outcome, 'failed', String(e));
});

test('a seeded sample of 400 corrupt model files and every built one through the WASM module: finite output or a sentence, memory back at its baseline', { skip: !fs.existsSync(WRAPPER) && 'build/wasm/circuitscope.js is not built' }, async () => {
  const all = generateCorpus({ seed: 1 });
  const picked = new Set(sample(all, 400, 7));
  const cases = all.filter((c) => picked.has(c) || c.name.startsWith('built:'));
  const stats = await runCorpusWasm(cases, { wrapper: WRAPPER });
  console.log(`# ${stats.summary}`);
  assert.ok(stats.files > 400);
  assert.ok(stats.loaded >= 20, `only ${stats.loaded} files loaded`);
  assert.deepEqual(stats.failures, []);
  assert.equal(stats.maxDrift, 0);
  assert.equal(stats.endAllocated, stats.baseline, 'malloc\'d bytes back at the baseline after the last file');
  assert.equal(stats.restarts, 0);
});
