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

test('the composition cuts under each ablation kind: the shipped figures are what circuitscope ioi measures, the spreads what the sweep recorded', () => {
  const report = JSON.parse(readFileSync('models/report.json', 'utf8'));
  const sweep = JSON.parse(readFileSync('models/ioi-2l1h.seeds.json', 'utf8'));
  const solved = sweep.seeds.filter((s) => s.accuracy === 1);
  assert.ok(solved.length > 0 && solved.every((s) => s.cuts), 'the sweep records every solving seed\'s cuts');
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  for (const kind of ['zero', 'mean', 'mean-all', 'resample']) {
    const row = report.claims.find((c) => c.id === `ioi-2l1h-cut-${kind}`);
    assert.ok(row, `no row for ${kind} ablation`);
    for (const input of ['Q', 'K', 'V']) {
      const out = JSON.parse(execFileSync(CLI, ['ioi', 'models/ioi-2l1h.safetensors', '--cut', input.toLowerCase(), '--ablation', kind, '--json'], { encoding: 'utf8' }));
      assert.equal(out.ablation, kind);
      assert.ok(row.measured.includes(`${input} ${pct(out.accuracy)},`) || row.measured.includes(`${input} ${pct(out.accuracy)};`),
        `${kind}: the shipped ${input} cut measures ${pct(out.accuracy)}; the report says ${row.measured}`);
      const acc = solved.map((s) => s.cuts[kind][input]);
      assert.ok(row.measured.includes(`${input} ${pct(Math.min(...acc))} to ${pct(Math.max(...acc))}`), `${kind} ${input}: spread over seeds`);
    }
  }
  assert.ok(report.claims.some((c) => c.id === 'ioi-2l1h-cut-kind'), 'the verdict row on which kind matches the seed');
});

test('the report command explains a missing models folder', () => {
  const r = spawnSync(CLI, ['report', '--models', '/nonexistent', '--check'], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /circuitscope report: /);
  execFileSync(CLI, ['help', 'report'], { encoding: 'utf8' });
});

test('the leading-terms row: its curve file is what circuitscope leading measures, and its verdict follows the seed\'s 0.99', () => {
  const report = JSON.parse(readFileSync('models/report.json', 'utf8'));
  const row = report.claims.find((c) => c.id === 'leading-terms');
  assert.ok(row, 'no leading-terms row');
  const curve = JSON.parse(readFileSync('models/char-1l.leading.json', 'utf8'));
  // The committed file is the command's output, regenerated here (50 steps of a small model: seconds).
  const cmd = row.measured.match(/`circuitscope (leading [^`]*)`/);
  assert.ok(cmd, `the row names the command that produced its curve: ${row.measured}`);
  const args = cmd[1].split(' ').filter((a) => a.length > 0);
  const outAt = args.indexOf('--out');
  assert.equal(args[outAt + 1], 'models/char-1l.leading.json');
  args.splice(outAt, 2, '--json');
  const fresh = JSON.parse(execFileSync(CLI, args, { encoding: 'utf8', maxBuffer: 1 << 26 }));
  assert.deepEqual(fresh, curve, 'models/char-1l.leading.json is not what the command gives');
  assert.equal(curve.points.length, curve.steps + 1);
  // The verdict: the highest cosine over steps 1..N above 0.99, for the direct path and for the best
  // head's OV circuit (the better of its two terms).
  const later = curve.points.filter((p) => p.step >= 1);
  const bestOv = (p) => Math.max(...p.ov.map((x, h) => Math.max(x, p.ov_composed[h])));
  const topDirect = Math.max(...later.map((p) => p.direct));
  const topOv = Math.max(...later.map(bestOv));
  const met = topDirect > 0.99 && topOv > 0.99;
  assert.equal(row.verdict.startsWith('reproduced'), met, `verdict "${row.verdict}" with highest direct ${topDirect}, OV ${topOv}`);
  const atDirect = later.find((p) => p.direct === topDirect).step, atOv = later.find((p) => bestOv(p) === topOv).step;
  assert.ok(row.measured.includes(`highest: direct path ${topDirect.toFixed(3)} at step ${atDirect}, OV ${topOv.toFixed(3)} at step ${atOv}`), row.measured);
  const last = curve.points[curve.points.length - 1];
  assert.ok(row.measured.includes(`step ${last.step}: direct path ${last.direct.toFixed(3)}`), row.measured);
});
