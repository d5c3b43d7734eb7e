// The reproduction report: models/REPORT.md and models/report.json are what `circuitscope report`
// computes from the shipped models (regenerated, not typed in), and every claim row is complete.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, existsSync, readdirSync } from 'node:fs';

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
    assert.ok(['reproduced', 'partly', 'not reproduced', 'measured'].includes(c.outcome), `${c.id}: outcome ${c.outcome}`);
  }
  // The headline counts each outcome (the Reproduction view shows its sentence).
  const count = (o) => report.claims.filter((c) => c.outcome === o).length;
  const sum = report.summary;
  assert.deepEqual([sum.reproduced, sum.partly, sum.not_reproduced, sum.measured, sum.total],
    [count('reproduced'), count('partly'), count('not reproduced'), count('measured'), report.claims.length]);
  assert.ok(sum.sentence.startsWith(`${sum.reproduced} of ${sum.total} claims reproduced; ${sum.partly} partly`), sum.sentence);
  // A claim reproduced on every seed for one of its parts and on none for another is "partly".
  assert.ok(report.claims.some((c) => c.outcome === 'partly' && /: reproduced on 3 of 3 seeds; .*: not reproduced/.test(c.verdict)));
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

// The training seeds of a recipe the report reads: seed 0 (the shipped run,
// models/NAME.metrics.json) and models/seeds/NAME.seedN.metrics.json for N = 1, 2, ...
function trainingSeeds(name) {
  const files = [`models/${name}.metrics.json`];
  for (let n = 1; existsSync(`models/seeds/${name}.seed${n}.metrics.json`); n++) files.push(`models/seeds/${name}.seed${n}.metrics.json`);
  return files.map((f) => JSON.parse(readFileSync(f, 'utf8')));
}

const f3 = (x) => x.toFixed(3);
const count = (xs) => xs.filter(Boolean).length;

test('the induction claims over training seeds (character and sub-word models): at least 3 seeds, each seed\'s figures from its metrics file, the verdict counting them', () => {
  const report = JSON.parse(readFileSync('models/report.json', 'utf8'));
  const row = (id) => {
    const c = report.claims.find((x) => x.id === id);
    assert.ok(c, `no row ${id}`);
    return c;
  };
  // The sub-word models' two-layer and smeared rows have no per-run ICL row (their metrics' ICL
  // curve is too noisy; the icl-jump-bpe row reads the denser icl files of the prose models instead).
  for (const [name, expect] of [['char-2l', true], ['char-1l-smeared', true], ['char-1l', false],
    ['bpe-2l', true], ['bpe-1l-smeared', true], ['bpe-1l', false], ['bpe-2l-prose', true]]) {
    const metrics = trainingSeeds(name);
    assert.ok(metrics.length >= 3, `${name}: only ${metrics.length} training seeds in models/ and models/seeds/`);
    const subword = name.startsWith('bpe-');
    const iclRow = !subword || !expect;
    const icl = row(iclRow ? `icl-${name}` : `phase-change-${name}`);
    assert.deepEqual(icl.seeds.map((s) => s.seed), metrics.map((_, i) => i), `${name}: the seeds the report read`);
    metrics.forEach((m, i) => {
      const s = icl.seeds[i];
      assert.equal(s.icl_first, m.records[0].icl, `${name} seed ${i}: ICL at step 0`);
      assert.equal(s.icl_last, m.records.at(-1).icl, `${name} seed ${i}: ICL at the end`);
      const withSe = typeof m.records[0].icl_se === 'number';
      if (iclRow && !withSe) assert.ok(icl.measured.includes(`${f3(s.icl_first)} -> ${f3(s.icl_last)}`), `${name} seed ${i}: ICL figures in the text`);
      if (iclRow && withSe) assert.ok(icl.measured.includes(`${f3(s.icl_first)} ± ${f3(m.records[0].icl_se)} -> ${f3(s.icl_last)} ± ${f3(m.records.at(-1).icl_se)}`),
        `${name} seed ${i}: ICL figures in the text`);
      // A phase change is where the best head's prefix matching passes half its final value:
      // the record there must be at least half of the final best, the one before below it.
      if (s.phase_change >= 0) {
        const best = (r) => Math.max(...r.prefix_matching);
        const k = m.records.findIndex((r) => r.step === s.phase_change);
        assert.ok(k > 0, `${name} seed ${i}: the phase change is a recorded step`);
        assert.ok(best(m.records[k]) >= best(m.records.at(-1)) / 2 && best(m.records[k - 1]) < best(m.records.at(-1)) / 2,
          `${name} seed ${i}: prefix matching at the phase change`);
      }
      assert.equal(s.meets_icl, expect ? s.phase_change >= 0 && s.icl_last < s.icl_first - 0.3 : s.phase_change < 0, `${name} seed ${i}`);
      assert.equal(s.meets_phase_change, expect ? s.phase_change >= 0 : s.phase_change < 0, `${name} seed ${i}`);
    });
    const n = metrics.length;
    if (iclRow) assert.ok(icl.verdict.includes(`${count(icl.seeds.map((s) => s.meets_icl))} of ${n} seeds`), `${name}: ${icl.verdict}`);
    if (!expect) continue;
    const pc = row(`phase-change-${name}`);
    assert.ok(pc.verdict.includes(`${count(pc.seeds.map((s) => s.meets_phase_change))} of ${n} seeds`), `${name}: ${pc.verdict}`);
    assert.ok(pc.measured.includes(`at steps ${pc.seeds.map((s) => (s.phase_change >= 0 ? s.phase_change : 'none')).join(', ')}`), pc.measured);
    const bump = row(`bump-${name}`);
    for (const s of bump.seeds.filter((x) => x.phase_change >= 0)) {
      assert.equal(s.meets_bump, s.bump_rise > 0.005);
      assert.equal(s.meets_turn, s.turn >= 0 && Math.abs(s.turn - s.phase_change) <= 500);
    }
    const bumps = count(bump.seeds.map((s) => s.meets_bump)), turns = count(bump.seeds.map((s) => s.meets_turn));
    assert.match(bump.verdict, new RegExp(`^bump \\(a rise over 0\\.005 nats\\): .*${bumps} of ${n} seeds.*; turn \\(within 500 steps\\): .*${turns} of ${n} seeds`), bump.verdict);
  }
  for (const [id, name, meets] of [['induction-2l', 'char-2l', (x) => x >= 0.3], ['induction-1l', 'char-1l', (x) => x < 0.1],
    ['induction-smeared', 'char-1l-smeared', (x) => x >= 0.3]]) {
    const c = row(id);
    const n = trainingSeeds(name).length;
    assert.deepEqual(c.seeds.map((s) => s.seed), [...Array(n).keys()], `${id}: every training seed's best prefix-matching head`);
    assert.equal(c.seeds[0].best_prefix_matching, report.char_scores[name].best_prefix_matching, `${id}: seed 0 is the shipped model`);
    for (const s of c.seeds) {
      assert.equal(s.meets, meets(s.best_prefix_matching), `${id} seed ${s.seed}`);
      assert.ok(c.measured.includes(`${f3(s.best_prefix_matching)} (${s.head})`), `${id} seed ${s.seed}: in the text`);
    }
    assert.ok(c.verdict.includes(`${count(c.seeds.map((s) => s.meets))} of ${n} seeds`), `${id}: ${c.verdict}`);
  }
  for (const [id, name] of [['repeat-sentence', 'char-2l'], ['repeat-sentence', 'char-1l-smeared'], ['repeat-sentence-bpe', 'bpe-2l'],
    ['repeat-sentence-bpe', 'bpe-1l-smeared']]) {
    const repeat = row(id);
    const seeds = repeat.seeds.filter((s) => s.model === name);
    assert.deepEqual(seeds.map((s) => s.seed), trainingSeeds(name).map((_, i) => i), `${name}: every training seed's repeated-sentence ratio`);
    for (let i = 1; i < seeds.length; i++) assert.ok(existsSync(`models/seeds/${name}.seed${i}.safetensors`), `${name} seed ${i}: the model file`);
    assert.ok(repeat.measured.includes(`median ratio ${seeds.map((s) => s.median.toFixed(2)).join(', ')}`), `${name}: medians in the text`);
    for (const s of seeds) assert.equal(s.meets, s.median <= 0.5);
    assert.ok(repeat.verdict.includes(`${name}: `) && repeat.verdict.split(`${name}: `)[1].includes(`${count(seeds.map((s) => s.meets))} of ${seeds.length} seeds`),
      `${name}: ${repeat.verdict}`);
  }
});

// The models of the sub-word ICL row (src/report.cpp's kIclFamily), the two-layer model first.
const PROSE = ['bpe-2l-prose', 'bpe-1l-prose'];
const sign = (x) => (x >= 0 ? '+' : '-') + Math.abs(x).toFixed(3);

test('the sub-word ICL row: its figures are the prose models\' paired icl files at the last snapshot before bpe-2l-prose\'s phase change and at the end, and the end is what circuitscope icl gives', () => {
  const report = JSON.parse(readFileSync('models/report.json', 'utf8'));
  const row = report.claims.find((c) => c.id === 'icl-jump-bpe');
  assert.ok(row, 'no icl-jump-bpe row');
  const metrics = JSON.parse(readFileSync('models/bpe-2l-prose.metrics.json', 'utf8'));
  const pc = report.claims.find((c) => c.id === 'phase-change-bpe-2l-prose').seeds[0].phase_change;
  assert.ok(pc > 0, 'bpe-2l-prose has a phase change');
  assert.ok(row.measured.includes(`: phase change of bpe-2l-prose at step ${pc};`), row.measured);
  assert.deepEqual(row.seeds[0].models.map((m) => m.model), PROSE);
  for (const name of PROSE) {
    const icl = JSON.parse(readFileSync(`models/${name}.icl.json`, 'utf8')).sort((a, b) => a.step - b.step);
    const before = icl.filter((p) => p.step < pc).at(-1), end = icl.at(-1);
    assert.ok(before, `${name}: a snapshot before step ${pc}`);
    assert.equal(end.step, metrics.records.at(-1).step, `${name}: the last point is the end of training`);
    for (const p of icl) {
      assert.equal(p.early, 50);
      assert.equal(p.late, 500);
      assert.ok(p.paired && p.windows >= 4096, `${name} step ${p.step}: paired, on 4,096 tokens or more`);
      assert.ok(p.se <= 0.021, `${name} step ${p.step}: standard error ${p.se} (the issue asks for at most 0.02)`);
      assert.ok(Math.abs(p.late_loss - p.early_loss - p.icl) < 1e-9, `${name} step ${p.step}: the score is the late loss minus the early one`);
    }
    assert.ok(row.measured.includes(`${name} ${sign(before.icl)} ± ${before.se.toFixed(3)} -> ${sign(end.icl)} ± ${end.se.toFixed(3)}`),
      `${name}: its figures are not in the row: ${row.measured}`);
    if (name === PROSE[0]) {
      assert.ok(row.measured.includes(`with 500 tokens before them ${before.late_loss.toFixed(3)} -> ${end.late_loss.toFixed(3)}, with 50 ${before.early_loss.toFixed(3)} -> ${end.early_loss.toFixed(3)}`),
        `${name}: the losses behind the score are not in the row: ${row.measured}`);
    }
  }
  // The one-layer model's end, recomputed: the same held-out tokens give the same figure (the kernel
  // may round differently).
  const last = JSON.parse(readFileSync('models/bpe-1l-prose.icl.json', 'utf8')).sort((a, b) => a.step - b.step).at(-1);
  const fresh = JSON.parse(execFileSync(CLI, ['icl', 'models/bpe-1l-prose.safetensors', '--file', 'models/corpus/gutenberg-valid.txt',
    '--early', String(last.early), '--late', String(last.late), '--windows', String(last.windows), '--kernel', 'auto', '--json'],
  { encoding: 'utf8', maxBuffer: 1 << 24 }))[0];
  assert.equal(fresh.windows, last.windows);
  assert.ok(Math.abs(fresh.icl - last.icl) < 1e-4 && Math.abs(fresh.se - last.se) < 1e-4, `bpe-1l-prose: ${JSON.stringify(fresh)} vs ${JSON.stringify(last)}`);
});

test('the sub-word ICL row over training seeds: each seed\'s icl files hold the last snapshot before that seed\'s bpe-2l-prose phase change and the end, and the verdict counts the seeds', () => {
  const report = JSON.parse(readFileSync('models/report.json', 'utf8'));
  const row = report.claims.find((c) => c.id === 'icl-jump-bpe');
  const pcs = report.claims.find((c) => c.id === 'phase-change-bpe-2l-prose').seeds;
  assert.ok(row.seeds.length >= 3, `only ${row.seeds.length} seeds in the icl-jump-bpe row`);
  assert.deepEqual(row.seeds.map((s) => s.seed), pcs.map((s) => s.seed), 'the row covers every training seed of bpe-2l-prose');
  for (const s of row.seeds) {
    const pc = pcs.find((p) => p.seed === s.seed).phase_change;
    assert.equal(s.phase_change, pc, `seed ${s.seed}`);
    assert.ok(s.before_step < pc, `seed ${s.seed}: step ${s.before_step} comes before the phase change at ${pc}`);
    // The one-layer control's files count where they exist (npm run models trains it on every seed; the shipped seed's is required).
    const names = PROSE.filter((n, i) => i === 0 || s.seed === 0 || existsSync(`models/seeds/${n}.seed${s.seed}.icl.json`));
    assert.deepEqual(s.models.map((m) => m.model), names, `seed ${s.seed}: the models`);
    assert.equal('meets_one_layer' in s, names.includes('bpe-1l-prose'), `seed ${s.seed}: a one-layer verdict only with a one-layer model`);
    for (const m of s.models) {
      const file = s.seed === 0 ? `models/${m.model}.icl.json` : `models/seeds/${m.model}.seed${s.seed}.icl.json`;
      const points = JSON.parse(readFileSync(file, 'utf8')).sort((a, b) => a.step - b.step);
      const before = points.filter((p) => p.step <= s.before_step).at(-1), end = points.at(-1);
      assert.equal(m.before_step, before.step, `${file}: the point before the phase change`);
      assert.equal(m.before, before.icl, file);
      assert.equal(m.after, end.icl, file);
      assert.equal(m.after_early_loss, end.early_loss, file);
      for (const p of points) assert.ok(p.se <= 0.021 && p.windows >= 4096 && p.paired, `${file} step ${p.step}: ${p.windows} tokens, standard error ${p.se}`);
      assert.ok(row.measured.includes(`${m.model} ${sign(m.before)} ± ${m.before_se.toFixed(3)} -> ${sign(m.after)} ± ${m.after_se.toFixed(3)}`),
        `${file}: its figures are not in the row`);
      if (m.model === 'bpe-1l-prose') assert.equal(s.meets_one_layer, m.after - m.before > -0.1, `seed ${s.seed}: bpe-1l-prose`);
      if (m.model === 'bpe-2l-prose') {
        const fall = m.after - m.before, se = Math.hypot(m.after_se, m.before_se);
        assert.equal(s.meets_two_layer, fall < -3 * se && m.before > -0.15 && m.after <= -0.3, `seed ${s.seed}: bpe-2l-prose`);
        assert.equal(s.falls, fall < -3 * se, `seed ${s.seed}: bpe-2l-prose's fall against 3 standard errors`);
      }
    }
  }
  const n = row.seeds.length;
  const ones = row.seeds.filter((s) => 'meets_one_layer' in s);
  assert.ok(row.verdict.startsWith(`2-layer jump: `) && row.verdict.includes(`${count(row.seeds.map((s) => s.meets_two_layer))} of ${n} seeds`), row.verdict);
  assert.ok(row.verdict.includes(`a fall of over 3 standard errors on ${count(row.seeds.map((s) => s.falls))} of ${n} seeds`), row.verdict);
  const onesMet = count(ones.map((s) => s.meets_one_layer));
  assert.ok(ones.length >= 1 && row.verdict.includes(`1-layer no rise: ${ones.length === 1 ? (onesMet ? 'reproduced (one seed)' : 'not reproduced (one seed)') : ''}`), row.verdict);
  if (ones.length > 1) assert.ok(row.verdict.includes(`${onesMet} of ${ones.length} seeds`), row.verdict);
});

test('circuitscope icl --before-phase-change scores the last snapshot before the run\'s phase change and the end, and refuses a run without one', () => {
  const report = JSON.parse(readFileSync('models/report.json', 'utf8'));
  const pc = report.claims.find((c) => c.id === 'phase-change-bpe-2l').seeds[0].phase_change;
  const snaps = readdirSync('models/snapshots/bpe-2l').filter((f) => f.endsWith('.safetensors')).map((f) => `models/snapshots/bpe-2l/${f}`);
  const steps = snaps.map((f) => Number(/step(\d+)/.exec(f)[1]));
  const rows = JSON.parse(execFileSync(CLI, ['icl', 'models/bpe-2l.safetensors', ...snaps, '--before-phase-change', 'models/bpe-2l.metrics.json',
    '--file', 'models/corpus/gutenberg-valid.txt', '--early', '20', '--late', '244', '--windows', '8', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(rows.map((r) => r.step), [Math.max(...steps.filter((x) => x < pc)), 6000]);
  for (const row of rows) assert.ok(row.paired && row.windows === 8 && row.blocks >= 0, JSON.stringify(row));
  // bpe-2l's last rows of W_pos collapse (rows 251 and 253 to 255 under 0.7 of their neighbours' norm).
  assert.ok(rows[1].collapsed_positions.includes(253), JSON.stringify(rows[1].collapsed_positions));
  const r = spawnSync(CLI, ['icl', 'models/bpe-0l.safetensors', '--before-phase-change', 'models/bpe-0l.metrics.json',
    '--file', 'models/corpus/gutenberg-valid.txt', '--early', '20', '--late', '244', '--windows', '8'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /this run has no phase change/);
});

test('circuitscope icl never scores positions past those training reached, and pairs every late token with itself as an early one', () => {
  // bpe-2l trained on 256-token windows: token 244 is the last the score may use.
  const past = spawnSync(CLI, ['icl', 'models/bpe-2l.safetensors', '--file', 'models/corpus/gutenberg-valid.txt', '--early', '20', '--late', '245',
    '--windows', '8'], { encoding: 'utf8' });
  assert.equal(past.status, 1);
  assert.match(past.stderr, /late token 245 is past the last position it may use in this model \(244: 12 below its context of 256/);
  // No attention, no positions in the residual: a token costs the same with any context, so the paired score is 0.
  const [zero] = JSON.parse(execFileSync(CLI, ['icl', 'models/bpe-0l.safetensors', '--file', 'models/corpus/gutenberg-valid.txt',
    '--early', '20', '--late', '244', '--windows', '64', '--json'], { encoding: 'utf8' }));
  assert.ok(Math.abs(zero.icl) < 1e-5 && zero.late_loss > 1, JSON.stringify(zero));
});
