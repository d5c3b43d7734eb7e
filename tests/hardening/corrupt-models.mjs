#!/usr/bin/env node
// Generates the corrupt-model corpus (tests/hardening/corrupt-models-lib.mjs) into
// build/hardening/corrupt-models/ and runs every file through the CLI (`inspect` and
// `run --text`), each run under a 10 s timeout and a 4 GB address-space limit (prlimit --as).
// Passes when every run exits 0 with finite output or 1 with a one-line sentence: no signal, no
// hang, no nan/inf with exit 0, no library exception text.
//
//   node tests/hardening/corrupt-models.mjs --all              the full corpus
//   node tests/hardening/corrupt-models.mjs --sample 300       a seeded sample
//   options: --seed N (default 1)  --bin PATH (default build/native/circuitscope; e.g.
//            build/asan/circuitscope for the sanitizer build)  --timeout S  --jobs N
//            --mem KB|unlimited (address-space limit; default 4194304, unlimited for sanitizer builds, whose
//            shadow memory needs a large address space)
//            --write-only (generate the files, run nothing: a corpus for the fuzzer)
import path from 'node:path';
import fs from 'node:fs';
import { ROOT, generateCorpus, runCorpus, sample } from './corrupt-models-lib.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
};
const seed = Number(opt('--seed', 1));
let cases = generateCorpus({ seed });
if (!args.includes('--all')) cases = sample(cases, Number(opt('--sample', 300)), seed);
const bin = path.resolve(opt('--bin', path.join(ROOT, 'build/native/circuitscope')));
const dir = path.join(ROOT, 'build/hardening', path.basename(path.dirname(bin)) === 'native' ? 'corrupt-models' : `corrupt-models-${path.basename(path.dirname(bin))}`);

if (args.includes('--write-only')) {
  fs.mkdirSync(dir, { recursive: true });
  cases.forEach((c, i) => fs.writeFileSync(path.join(dir, `${String(i).padStart(5, '0')}.safetensors`), c.bytes));
  console.log(`wrote ${cases.length} corrupt model files to ${path.relative(ROOT, dir)}`);
  process.exit(0);
}
if (!fs.existsSync(bin)) {
  console.error(`corrupt-models: ${bin} is missing; build it first (bash scripts/build.sh native)`);
  process.exit(2);
}
const t0 = Date.now();
const stats = await runCorpus(cases, {
  bin, dir, timeoutMs: 1000 * Number(opt('--timeout', 10)), memKb: opt('--mem', 4 * 1024 * 1024), jobs: Number(opt('--jobs', 2)),
  onProgress: (i, n) => { if (i % 250 === 0 || i === n) process.stderr.write(`  ${i}/${n} files\n`); },
});
for (const f of stats.failures.slice(0, 50)) console.log(`FAIL ${f.case} [${f.cmd}] ${f.problem}: ${f.stderr.trim()} (${path.relative(ROOT, f.file)})`);
console.log(`corrupt models (seed ${seed}, ${path.relative(ROOT, bin)}): ${stats.files} files, ${stats.runs} runs: ` +
  `${stats.ok} ran with finite output, ${stats.refused} refused with a sentence, ${stats.failures.length} failures ` +
  `(${((Date.now() - t0) / 1000).toFixed(0)} s)`);
process.exit(stats.failures.length ? 1 : 0);
