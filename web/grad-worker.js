// A helper of the training worker (web/trainer-worker.js) for data-parallel training: it holds
// its own WASM instance and a trainer of the same recipe, and for every step takes the current
// weights and one shard of the batch and sends back that shard's gradient. The training worker
// sums the shards' gradients in order and takes the optimiser step (the core's begin/finish step).
//
//   to the helper                                   from the helper
//   {type:'init', recipe, wasmUrl?}                 {type:'ready'}
//   {type:'grad', step, weights, shard}             {type:'grad', step, grads, loss, per_token}  (buffers transferred)
//                                                   {type:'error', step?, message}
import { init } from './wasm/circuitscope.js';

let trainer = null;

/** @returns {Promise<[any, Transferable[]]>} the reply and the buffers it transfers */
async function handle(msg) {
  if (msg?.type === 'init') {
    if (trainer) throw new Error('init: this helper already holds a trainer');
    const instance = await init(msg.wasmUrl ? { wasmUrl: msg.wasmUrl } : {});
    trainer = instance.trainer(msg.recipe);
    return [{ type: 'ready' }, []];
  }
  if (msg?.type === 'grad') {
    if (!trainer) throw new Error('grad: the helper has no trainer yet');
    trainer.setParams(msg.weights);
    const r = trainer.shardGradient(msg.shard);
    return [{ type: 'grad', step: msg.step, grads: r.grads, loss: r.loss, per_token: r.per_token },
      [r.grads.buffer, r.per_token.buffer]];
  }
  throw new Error(`gradient worker: unknown message type ${JSON.stringify(msg?.type)}`);
}

let queue = Promise.resolve();
self.onmessage = (event) => {
  const msg = event.data;
  queue = queue.then(async () => {
    try {
      const [reply, transfer] = await handle(msg);
      self.postMessage(reply, { transfer });
    } catch (e) {
      self.postMessage({ type: 'error', step: msg?.step ?? null, message: e?.message ?? String(e) });
    }
  });
};
