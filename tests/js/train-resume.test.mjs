// circuitscope train --checkpoint / --resume / --stop-after: a run stopped at a checkpoint and
// resumed gives the same model, metrics and snapshots, byte for byte, as the run that never
// stopped; a checkpoint of another recipe or a damaged one is refused in a sentence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const CLI = 'build/native/circuitscope';

const recipe = {
  name: 'resume-test',
  model: { n_layers: 2, n_heads: 2, d_model: 16, d_head: 8, n_ctx: 24, pos_embed: 'shortformer' },
  tokenizer: { kind: 'synthetic', size: 16 },
  data: { kind: 'repeated_segment', seq_len: 24 },
  optimizer: { lr: 0.01 },
  schedule: { kind: 'onecycle', pct_start: 0.3 },
  steps: 20,
  batch_size: 4,
  seed: 3,
  snapshots: [0, 5, 15],
  eval: { every: 4, batch: 4 },
};

const train = (root, args) => spawnSync(CLI, ['train', path.join(root, 'recipe.json'), '--kernel', 'portable', ...args], { encoding: 'utf8' });

test('a run stopped at a checkpoint and resumed is the run that never stopped, byte for byte', () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build`);
  const root = mkdtempSync(path.join(os.tmpdir(), 'cs-resume-'));
  try {
    writeFileSync(path.join(root, 'recipe.json'), JSON.stringify(recipe));
    for (const d of ['whole', 'parts']) mkdirSync(path.join(root, d));
    const whole = train(root, ['--out', path.join(root, 'whole', 'm.safetensors')]);
    assert.equal(whole.status, 0, whole.stderr);
    const ckpt = path.join(root, 'ckpt');
    const out = path.join(root, 'parts', 'm.safetensors');
    // Three parts: 7 steps, 6 more (a checkpoint every 3 steps in between), then to the end.
    const first = train(root, ['--out', out, '--checkpoint', ckpt, '--checkpoint-every', '3', '--stop-after', '7']);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /stopped at step 7 of 20; continue with --resume/);
    assert.ok(!existsSync(out), 'a stopped run writes no model');
    const second = train(root, ['--out', out, '--resume', ckpt, '--stop-after', '6']);
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, /resumed from .* at step 7/);
    assert.match(second.stdout, /stopped at step 13 of 20/);
    const third = train(root, ['--out', out, '--resume', ckpt]);
    assert.equal(third.status, 0, third.stderr);
    const bytes = (p) => readFileSync(p);
    assert.ok(bytes(out).equals(bytes(path.join(root, 'whole', 'm.safetensors'))), 'the same model file');
    assert.equal(readFileSync(path.join(root, 'parts', 'm.metrics.json'), 'utf8'),
      readFileSync(path.join(root, 'whole', 'm.metrics.json'), 'utf8'), 'the same metrics, step 0 included once');
    for (const s of [0, 5, 15]) {
      const rel = path.join('snapshots', 'm', `step${s}.safetensors`);
      assert.ok(bytes(path.join(root, 'parts', rel)).equals(bytes(path.join(root, 'whole', rel))), `the same snapshot at step ${s}`);
    }

    // Another seed is another run: its checkpoint is refused, and nothing is written.
    const other = train(root, ['--out', path.join(root, 'o.safetensors'), '--seed', '4', '--resume', ckpt]);
    assert.equal(other.status, 1);
    assert.match(other.stderr, /made by another recipe/);
    assert.ok(!existsSync(path.join(root, 'o.safetensors')));
    // A damaged checkpoint names its folder and what is wrong.
    truncateSync(path.join(ckpt, 'adam_v.safetensors'), Math.floor(statSync(path.join(ckpt, 'adam_v.safetensors')).size / 2));
    const damaged = train(root, ['--out', path.join(root, 'd.safetensors'), '--resume', ckpt]);
    assert.equal(damaged.status, 1);
    assert.match(damaged.stderr, new RegExp(`checkpoint ${ckpt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
    const missing = train(root, ['--out', path.join(root, 'd.safetensors'), '--resume', path.join(root, 'nowhere')]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /checkpoint .*nowhere: /);
    // --stop-after needs somewhere to keep the run.
    const nowhere = train(root, ['--out', path.join(root, 'd.safetensors'), '--stop-after', '3']);
    assert.notEqual(nowhere.status, 0);
    assert.match(nowhere.stderr, /--stop-after needs --checkpoint DIR/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
