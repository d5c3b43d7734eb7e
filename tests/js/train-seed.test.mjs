// circuitscope train --seed N and --no-snapshots: the seed replaces the recipe's (a different seed
// gives different weights, the same seed the same ones, and the model's info records it), and
// --no-snapshots writes the model without the snapshots the recipe lists. The report's extra
// training seeds (models/seeds/) are made this way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readSafetensors } from './safetensors.mjs';

const CLI = 'build/native/circuitscope';

const recipe = {
  name: 'seed-test',
  model: { n_layers: 1, n_heads: 2, d_model: 16, d_head: 8, n_ctx: 24, pos_embed: 'shortformer' },
  tokenizer: { kind: 'synthetic', size: 16 },
  data: { kind: 'repeated_segment', seq_len: 24 },
  optimizer: { lr: 0.01 },
  schedule: { kind: 'constant' },
  steps: 3,
  batch_size: 4,
  seed: 3,
  snapshots: [0, 2],
};

function trainIn(dir, extra) {
  const out = path.join(dir, 'm.safetensors');
  execFileSync(CLI, ['train', path.join(dir, '..', 'recipe.json'), '--out', out, '--kernel', 'portable', ...extra], { encoding: 'utf8' });
  const file = readSafetensors(readFileSync(out));
  return { out, file, snapshots: existsSync(path.join(dir, 'snapshots', 'm', 'step2.safetensors')) };
}

function infoOf(out) {
  return JSON.parse(execFileSync(CLI, ['inspect', out, '--json'], { encoding: 'utf8' })).info;
}

const weights = (f) => Object.keys(f.tensors).sort().flatMap((k) => Array.from(f.tensors[k].data));

test('train --seed replaces the recipe seed, is recorded in the model, and --no-snapshots skips the snapshots', () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build`);
  const root = mkdtempSync(path.join(os.tmpdir(), 'cs-seed-'));
  try {
    writeFileSync(path.join(root, 'recipe.json'), JSON.stringify(recipe));
    const run = (name, extra) => {
      const dir = path.join(root, name);
      execFileSync('mkdir', ['-p', dir]);
      return trainIn(dir, extra);
    };
    const base = run('base', []);
    const same = run('same', ['--seed', '3']);
    const other = run('other', ['--seed', '5', '--no-snapshots']);
    const again = run('again', ['--seed', '5', '--no-snapshots']);
    assert.equal(infoOf(base.out).recipe.seed, 3);
    assert.equal(infoOf(other.out).recipe.seed, 5, 'the model info records the --seed value');
    assert.deepEqual(weights(same.file), weights(base.file), '--seed equal to the recipe seed gives the recipe run');
    assert.notDeepEqual(weights(other.file), weights(base.file), 'another seed gives other weights');
    assert.deepEqual(weights(again.file), weights(other.file), 'the same seed twice gives the same weights');
    assert.ok(base.snapshots, 'without --no-snapshots the recipe snapshots are written');
    assert.ok(!other.snapshots && !existsSync(path.join(root, 'other', 'snapshots')), '--no-snapshots writes none');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('train --seed: a bad value gets a sentence, before any training', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'cs-seed-'));
  try {
    const rp = path.join(root, 'recipe.json');
    writeFileSync(rp, JSON.stringify(recipe));
    for (const bad of ['-1', 'two', '1.5', '99999999999', ' 3', '3 ', '+3', '0x10', '']) {
      const r = spawnSync(CLI, ['train', rp, '--out', path.join(root, 'x.safetensors'), '--seed', bad], { encoding: 'utf8' });
      assert.notEqual(r.status, 0, `--seed ${bad} was accepted`);
      assert.match(r.stderr, /--seed must be a whole number from 0 to 2147483647, not "/, `--seed ${bad}: ${r.stderr}`);
      assert.ok(!existsSync(path.join(root, 'x.safetensors')), `--seed ${bad} still wrote a model`);
    }
    // A recipe's init_std is the weights' standard deviation: a negative or zero one is refused
    // (it used to be read silently as "use the default").
    for (const init of [-1, 0]) {
      writeFileSync(rp, JSON.stringify({ ...recipe, model: { ...recipe.model, init_std: init } }));
      const r = spawnSync(CLI, ['train', rp, '--out', path.join(root, 'x.safetensors')], { encoding: 'utf8' });
      assert.notEqual(r.status, 0, `init_std ${init} was accepted`);
      assert.match(r.stderr, /init_std must be a positive number/, `init_std ${init}: ${r.stderr}`);
    }
    writeFileSync(rp, JSON.stringify(recipe));
    const r = spawnSync(CLI, ['train', rp, '--seed'], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /option --seed needs a value/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
