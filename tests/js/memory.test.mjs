// Memory given back: opening, using and closing large model files one after another leaves the
// module's allocations at their baseline, and its WebAssembly memory (which can grow but never
// shrink) stops growing once it holds one file's work: the tenth file reuses what the first two
// took. Each file is random weights of attn-only-2l's layers with a 23,500-token vocabulary
// (100 MB of float32 weights), run over 200 tokens, its QK circuit's shown table and top entries
// read, then closed. 12 s on a 2-core machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wrapperModule } from './module.mjs';
import { shapeWithVocab } from '../bench/bench_series.mjs';

test('ten 100 MB model files opened, used and closed: allocations back at the baseline, the memory stops growing', async () => {
  const api = await wrapperModule();
  const cs = await api.init();   // an instance of its own: nothing else in its memory
  const V = 23500;
  const file = shapeWithVocab('attn-only-2l', V);
  assert.ok(file.length > 100e6 * 0.98, `a file of about 100 MB (${file.length} bytes)`);
  const baseline = cs.memory().allocated;
  const heap = [];
  for (let i = 0; i < 10; i++) {
    const m = cs.load(file);
    const r = m.run(Int32Array.from({ length: 200 }, (_, j) => (j * 7919 + i) % V), undefined, { logits: false });
    assert.equal(r.loss.shape[0], 200);
    const q = m.qk(i % 2, i % 8, { k: 5, table: false, top: 40 });
    assert.deepEqual(q.shown.shape, [40, 40]);
    assert.ok(cs.memory().allocated > baseline + file.length * 0.9, 'the weights were in the module while open');
    m.delete();
    const { allocated, heapSize } = cs.memory();
    // What stays is the kept forward cache's and GEMM's per-thread scratch, bounded and reused.
    assert.ok(allocated - baseline < 4 * 2 ** 20, `file ${i + 1}: ${((allocated - baseline) / 2 ** 20).toFixed(1)} MB still allocated after delete()`);
    heap.push(heapSize);
  }
  for (let i = 2; i < heap.length; i++) assert.equal(heap[i], heap[1], `the memory grew at file ${i + 1}: ${heap.map((h) => (h / 2 ** 20).toFixed(0)).join(', ')} MB`);
});
