#!/usr/bin/env node
// The corrupt-model corpus (tests/hardening/corrupt-models-lib.mjs) through the WebAssembly
// module (build/wasm/circuitscope.js), one instance in a worker thread: each file is loaded and,
// when it loads, run on a short text, then every analysis the page offers (head scores, head 0's
// QK and OV circuits and eigenvalues, composition, attribution, skip-trigrams for one layer, the
// IOI task), then deleted. Passes when every call returns finite numbers or throws an Error with
// a one-line message free of library and runtime text, no call passes the time limit (the worker
// is ended and a new one started), and the module's malloc'd bytes after each delete() are what
// they were before the load.
//
//   node tests/hardening/corrupt-models-wasm.mjs --all              the full corpus
//   node tests/hardening/corrupt-models-wasm.mjs --sample 300       a seeded sample
//   node tests/hardening/corrupt-models-wasm.mjs --all --only built:   the legal models built whole
//                                                                      (large vocabularies among them)
//   options: --seed N (default 1)  --timeout S (per call, default 5)  --only PREFIX (cases whose
//            name starts with it)  --messages (list every distinct refusal, numbers written N,
//            with its count)
import path from 'node:path';
import fs from 'node:fs';
import { ROOT, generateCorpus, runCorpusWasm, sample } from './corrupt-models-lib.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
};
const seed = Number(opt('--seed', 1));
let cases = generateCorpus({ seed });
if (!args.includes('--all')) cases = sample(cases, Number(opt('--sample', 300)), seed);
const only = opt('--only', null);
if (only !== null) cases = cases.filter((c) => c.name.startsWith(only));
const wrapper = path.join(ROOT, 'build/wasm/circuitscope.js');
if (!fs.existsSync(wrapper)) {
  console.error(`corrupt-models-wasm: ${path.relative(ROOT, wrapper)} is missing; build it first (bash scripts/build.sh wasm)`);
  process.exit(2);
}
const t0 = Date.now();
const stats = await runCorpusWasm(cases, {
  wrapper, timeoutMs: 1000 * Number(opt('--timeout', 5)),
  onProgress: (i, n) => { if (i % 250 === 0 || i === n) process.stderr.write(`  ${i}/${n} files (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`); },
});
if (args.includes('--messages')) {
  for (const [m, n] of [...stats.messages].sort((a, b) => b[1] - a[1])) console.log(`${String(n).padStart(6)}  ${m}`);
}
for (const [call, p] of Object.entries(stats.perCall)) {
  console.log(`  ${call.padEnd(12)} ${p.calls} calls: ${p.finite} finite, ${p.refused} refused, ${p.failed} failed; slowest ${p.maxMs.toFixed(0)} ms`);
}
for (const f of stats.failures.slice(0, 50)) console.log(`FAIL ${f.case} [${f.call}] ${f.problem}`);
console.log(stats.summary);
process.exit(stats.failures.length ? 1 : 0);
