// The reproduction report: models/REPORT.md and models/report.json are what `circuitscope report`
// computes from the shipped models (regenerated, not typed in), and every claim row is complete.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';

const CLI = 'build/native/circuitscope';

test('circuitscope report --check: the committed report matches the shipped models', () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build`);
  const r = spawnSync(CLI, ['report', '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `report --check failed:\n${r.stderr.slice(0, 4000)}`);
});

test('every claim has its seed, figures, verdict and a view link', () => {
  const report = JSON.parse(readFileSync('models/report.json', 'utf8'));
  assert.ok(report.claims.length >= 15, `only ${report.claims.length} claims`);
  for (const c of report.claims) {
    for (const k of ['id', 'seed', 'claim', 'seed_figure', 'measured', 'verdict', 'view']) {
      assert.equal(typeof c[k], 'string', `${c.id}: ${k}`);
      assert.ok(c[k].length > 0, `${c.id}: empty ${k}`);
    }
    assert.match(c.view, /^#view=(induction|ioi|circuits|training)&model=[a-z0-9-]+/, c.id);
  }
  const md = readFileSync('models/REPORT.md', 'utf8');
  for (const c of report.claims) assert.ok(md.includes(c.measured.replaceAll('|', '\\|')), `${c.id} is not in REPORT.md`);
});

test('the report command explains a missing models folder', () => {
  const r = spawnSync(CLI, ['report', '--models', '/nonexistent', '--check'], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /circuitscope report: /);
  execFileSync(CLI, ['help', 'report'], { encoding: 'utf8' });
});
