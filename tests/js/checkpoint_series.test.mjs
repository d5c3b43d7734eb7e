// A training run opened as its checkpoint files (the Training view's series, `circuitscope
// series`): each checkpoint scored by the core's one function (model.checkpointScores(), the record
// the trainer keeps), the series' metrics from checkpointMetrics(). Checked here: the WebAssembly
// module gives the native CLI's records; the shipped char-2l run's snapshots, opened as a series,
// put the phase change where the run's own metrics put it; a TransformerLens-layout series that
// reads no text gets head scores only; bad input gets a sentence.
// Needs `npm run build` (build/native/circuitscope and build/wasm/circuitscope.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { root, cs } from './module.mjs';
import { toTransformerLens } from './tlens-fixture.mjs';

const cli = path.join(root, 'build', 'native', 'circuitscope');
const snapDir = path.join(root, 'models', 'snapshots', 'char-2l');
const validPath = path.join(root, 'models', 'corpus', 'valid.txt');
const valid = readFileSync(validPath, 'utf8');
const snapshots = readdirSync(snapDir).filter((f) => /^step\d+\.safetensors$/.test(f))
  .sort((a, b) => parseInt(a.slice(4), 10) - parseInt(b.slice(4), 10));

/** Every checkpoint file scored in the module, one model at a time, then the series' metrics. */
// As the page scores a series: the held-out text tokenized once (heldOutIds), each checkpoint
// scored on those ids; the first is also scored on the text itself, which must give the same.
async function seriesInWasm(files, text) {
  const api = await cs();
  const scores = [];
  let ids = null;
  for (const f of files) {
    const m = api.load(readFileSync(f));
    try {
      const step = api.checkpointLabel(path.basename(f));
      if (ids === null) {
        ids = m.heldOutIds(text);
        assert.deepEqual(m.checkpointScores({ step, ids }), m.checkpointScores({ step, text }), 'ids or text: the same scores');
        assert.throws(() => m.checkpointScores({ step, ids, text }), /the held-out text or its ids, not both/);
        assert.throws(() => m.checkpointScores({ step, ids: [1, 2, m.config.d_vocab] }), /outside the model's vocabulary/);
      }
      scores.push(m.checkpointScores({ step, ids }));
    } finally {
      m.delete();
    }
  }
  return { scores, metrics: api.checkpointMetrics(scores) };
}

const close = (a, b, tol, what) => assert.ok(a === b || Math.abs(a - b) <= tol * (1 + Math.abs(b)), `${what}: ${a} vs ${b}`);

test('checkpointLabel reads the number a checkpoint file name ends with', async () => {
  const api = await cs();
  assert.equal(api.checkpointLabel('checkpoints/Attn_Only_2L512W_C4_Code_checkpoint_2457600.pth'), 2457600);
  assert.equal(api.checkpointLabel('step1250.safetensors'), 1250);
  assert.equal(api.checkpointLabel('ckpt_22000000000.pth'), 22000000000);
  assert.equal(api.checkpointLabel('model_final.pth'), null);
  assert.equal(api.checkpointLabel('config.json'), null);
  assert.throws(() => api.checkpointLabel(/** @type {any} */ (3)), /expected a file name/);
});

test('the module scores checkpoints as the native CLI does (char-2l snapshots on held-out text)', async () => {
  const files = ['step1000.safetensors', 'step1500.safetensors', 'step3000.safetensors'].map((f) => path.join(snapDir, f));
  const native = JSON.parse(execFileSync(cli, ['series', ...files, '--text', validPath, '--json'], { encoding: 'utf8' }));
  const { scores, metrics } = await seriesInWasm(files, valid);
  assert.equal(scores[0].spec.icl_late, 200);
  assert.equal(scores[0].spec.icl_early, 20);
  assert.equal(scores[0].spec.icl_pairs, 64);
  assert.equal(scores[0].spec.window, 256);
  assert.deepEqual(metrics.records.map((r) => r.step), [1000, 1500, 3000]);
  assert.deepEqual(native.records.map((r) => r.step), [1000, 1500, 3000]);
  assert.deepEqual(metrics.icl_indices, native.icl_indices);
  for (let i = 0; i < 3; i++) {
    const w = metrics.records[i], n = native.records[i];
    for (const k of ['valid_loss', 'icl', 'icl_se', 'repeated_loss']) close(w[k], n[k], 1e-5, `${k} of record ${i}`);
    assert.equal(w.train_loss, null);
    assert.equal(w.prefix_matching.length, 8);
    w.prefix_matching.forEach((x, h) => close(x, n.prefix_matching[h], 1e-5, `prefix matching of head ${h}`));
    assert.equal(w.per_token, undefined, 'the series keeps the trajectory, not the per-token vectors');
  }
  assert.equal(metrics.pca.components.length, 3);
  assert.equal(metrics.pca.n_positions, scores[0].record.per_token.length);
  metrics.pca.components.forEach((c, k) => c.forEach((x, i) => close(x, native.pca.components[k][i], 1e-4, `PC${k + 1} of record ${i}`)));
});

test('char-2l\'s snapshots opened as a series put the phase change where its run put it', async () => {
  const api = await cs();
  const { metrics } = await seriesInWasm(snapshots.map((f) => path.join(snapDir, f)), valid);
  const steps = metrics.records.map((r) => r.step);
  assert.deepEqual(steps, [...steps].sort((a, b) => a - b));
  const pc = api.phaseChange(metrics.records, { nHeads: 4 });
  const run = JSON.parse(readFileSync(path.join(root, 'models', 'char-2l.metrics.json'), 'utf8'));
  const shipped = api.phaseChange(run.records, { nHeads: 4 });
  assert.ok(pc && shipped);
  // The series' phase change is the first snapshot at or after the run's own (recorded every 50 steps).
  assert.equal(pc.step, steps.find((s) => s >= shipped.step), `series ${pc.step}, run ${shipped.step}`);
  assert.equal(`L${pc.layer}H${pc.head}`, `L${shipped.layer}H${shipped.head}`);
  // Before it the loss on repeated random tokens is near chance; after it, far below.
  const before = metrics.records[pc.record - 1], after = metrics.records.at(-1);
  assert.ok(before.repeated_loss > 3 && after.repeated_loss < 0.5, `${before.repeated_loss} -> ${after.repeated_loss}`);
});

test('a series that reads no text gets head scores only, and `circuitscope series` reads TransformerLens files', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cs-series-'));
  try {
    const files = ['step0', 'step1500', 'step5000'].map((s, i) => {
      const f = path.join(dir, `char2l_checkpoint_${[0, 1500, 5000][i]}.safetensors`);
      writeFileSync(f, toTransformerLens(readFileSync(path.join(snapDir, `${s}.safetensors`))));
      return f;
    });
    const { scores, metrics } = await seriesInWasm(files, '');
    assert.equal(scores[0].spec.icl_pairs, 0);
    assert.equal(metrics.icl_indices, undefined);
    assert.equal(metrics.pca, undefined);
    for (const r of metrics.records) {
      assert.equal(r.valid_loss, null);
      assert.equal(r.icl, null);
      assert.equal(r.prefix_matching.length, 8);
    }
    assert.ok(Math.max(...metrics.records[2].prefix_matching) > 0.5);
    assert.ok(Math.max(...metrics.records[0].prefix_matching) < 0.1);
    // The CLI reads the same files to the same phase change (random tokens from every id, the
    // character model's unseen ones too, so its induction head scores lower than on characters).
    const pc = (await cs()).phaseChange(metrics.records, { nHeads: 4 });
    const table = execFileSync(cli, ['series', ...files], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    assert.match(table, new RegExp(`phase change at checkpoint ${pc.step}: L${pc.layer}H${pc.head} `));
    // A name without a number, or two checkpoints with one number: a sentence, exit 2.
    assert.throws(() => execFileSync(cli, ['series', files[0], path.join(snapDir, '..', '..', 'char-2l.safetensors')], { stdio: 'pipe' }),
      (e) => e.status === 2 && /has no checkpoint number at the end of its name/.test(String(e.stderr)));
    assert.throws(() => execFileSync(cli, ['series', files[1], path.join(snapDir, 'step1500.safetensors')], { stdio: 'pipe' }),
      (e) => e.status === 2 && /have the same checkpoint number 1500/.test(String(e.stderr)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad series input gets a sentence and the module keeps working', async () => {
  const api = await cs();
  const m = api.load(readFileSync(path.join(snapDir, 'step1500.safetensors')));
  try {
    assert.throws(() => m.checkpointScores({ text: 'too short' }), /held-out text has \d+ tokens, fewer than one window of 256/);
    assert.throws(() => m.checkpointScores({ text: valid, iclLate: 250 }), /past the last position it may use/);
    assert.throws(() => m.checkpointScores({ step: 1.5 }), /step must be an integer/);
    assert.throws(() => m.checkpointScores({ text: /** @type {any} */ (3) }), /text must be a string/);
    assert.throws(() => m.checkpointScores(/** @type {any} */ ({ windows: 3 })), /unknown option "windows"/);
    assert.throws(() => api.checkpointMetrics([]), /non-empty list/);
    const a = m.checkpointScores({ step: 1, text: valid, iclPairs: 16 });
    const b = m.checkpointScores({ step: 2, text: valid, iclPairs: 32 });
    assert.throws(() => api.checkpointMetrics([a, b]), /scored with different settings/);
    assert.throws(() => api.checkpointMetrics([{ ...a, record: { ...a.record, copying: ['x'] } }]), /not a number/);
    // Still answers.
    assert.equal(api.checkpointMetrics([a, { ...a, record: { ...a.record, step: 0 } }]).records[0].step, 0);
  } finally {
    m.delete();
  }
});
