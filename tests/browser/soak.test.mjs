// A seeded sample of the long-session soak (tests/hardening/soak-lib.mjs): after a warm-up over
// every view, model and snapshot, SOAK_INTERACTIONS (default 400) random interactions with
// whatever the shown view offers; no uncaught error, no message with internals, every view
// settles, and the WASM heap's allocations come back to the warm-up's level once the warm-up's
// visits are repeated (within 4 MB). The full run: node tests/hardening/soak.mjs (10,000).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSoak } from '../hardening/soak-run.mjs';

const N = Number(process.env.SOAK_INTERACTIONS ?? 400);
const SEED = Number(process.env.SOAK_SEED ?? 1);

test(`soak: ${N} random interactions across every view and model (seed ${SEED})`, async (t) => {
  const r = await runSoak({ interactions: N, seed: SEED, log: (m) => t.diagnostic(m) });
  const mb = (b) => (b / 2 ** 20).toFixed(1);
  t.diagnostic(`${r.interactions} interactions in ${r.seconds.toFixed(0)} s; WASM allocated ${mb(r.before.wasmAllocated)} -> ${mb(r.after.wasmAllocated)} MB, heap ${mb(r.before.wasmHeap)} -> ${mb(r.after.wasmHeap)} MB; JS heap ${mb(r.before.jsHeap)} -> ${mb(r.after.jsHeap)} MB`);
  t.diagnostic(`slowest: ${r.slowest.map((x) => `${x.name} ${x.ms} ms`).join('; ')}`);
  assert.deepEqual(r.errors, [], 'uncaught errors');
  assert.deepEqual(r.internals, [], 'messages that show internals');
  assert.deepEqual(r.unsettled, [], 'interactions after which the view did not settle');
  assert.ok(r.after.wasmAllocated - r.before.wasmAllocated < 4 * 2 ** 20,
    `WASM allocations grew from ${mb(r.before.wasmAllocated)} to ${mb(r.after.wasmAllocated)} MB`);
});
