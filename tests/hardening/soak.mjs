// A long session in the page: 10,000 seeded interactions across every view and shipped model
// (soak-lib.mjs), with the WASM and JS heaps before (after a warm-up over every view, model and
// snapshot) and after.
//   node tests/hardening/soak.mjs [--interactions N] [--seed S]
// Needs the built site (npm run build). Exits 1 on any uncaught error, message with internals or
// view that did not settle.
import { runSoak } from './soak-run.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const interactions = arg('interactions', 10_000);
const seed = arg('seed', 1);
const mb = (b) => `${(b / 2 ** 20).toFixed(1)} MB`;
const r = await runSoak({ interactions, seed, log: (m) => console.log(m) });
console.log(`soak: ${r.interactions} interactions (seed ${seed}) in ${r.seconds.toFixed(0)} s after ${r.visits} warm-up visits; ` +
  `${r.errors.length} uncaught errors, ${r.internals.length} messages with internals, ${r.unsettled.length} unsettled; ` +
  `WASM heap ${mb(r.before.wasmHeap)} -> ${mb(r.after.wasmHeap)}, allocated ${mb(r.before.wasmAllocated)} -> ${mb(r.after.wasmAllocated)}; ` +
  `JS heap ${mb(r.before.jsHeap)} -> ${mb(r.after.jsHeap)}`);
for (const line of [...r.errors, ...r.internals, ...r.unsettled.map((u) => `unsettled: ${u}`)].slice(0, 40)) console.log(`  ${line}`);
process.exit(r.errors.length || r.internals.length || r.unsettled.length ? 1 : 0);
