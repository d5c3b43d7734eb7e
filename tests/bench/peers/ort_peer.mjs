// Peer runner: the reference model's forward pass and loss in onnxruntime-web (WebAssembly
// execution provider) under node, with a fixed number of threads. Started by bench_peers.mjs, one
// process per thread count, because onnxruntime-web sets its thread pool once per process (at
// its first session) from env.wasm.numThreads.
//   node tests/bench/peers/ort_peer.mjs --weights FILE --logits-out FILE --threads N
//        [--forward-reps N] [--warmup N] [--batch B] [--seq T]
// Prints one line of JSON: versions, settings, forward timing, the loss of the last timed call.
// Writes the logits of one untimed run ([B, T, V] float32) to --logits-out for bench_peers.mjs
// to compare with our module's.
import { writeFileSync } from 'node:fs';
import * as ort from 'onnxruntime-web';
import { intArg, stringArg, referenceTokens, timeCalls, loadWeights, printJson } from './common.mjs';
import { buildReferenceOnnx } from './reference_onnx.mjs';

async function main() {
  const weights = loadWeights(stringArg('--weights'));
  const logitsOut = stringArg('--logits-out');
  const threads = intArg('--threads', 1);
  const reps = intArg('--forward-reps', 30);
  const warmup = intArg('--warmup', 5);
  const B = intArg('--batch', 16);
  const T = intArg('--seq', weights.config.n_ctx);

  ort.env.wasm.numThreads = threads;
  ort.env.wasm.proxy = false;
  ort.env.logLevel = 'error';

  const modelBytes = buildReferenceOnnx(weights, B, T);
  const session = await ort.InferenceSession.create(modelBytes, {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
  });

  const ids = referenceTokens(B, T);
  const tokens = new ort.Tensor('int64', BigInt64Array.from(ids, (x) => BigInt(x)), [B, T]);
  const feeds = { tokens };

  // The check run: loss and logits, untimed.
  const check = await session.run(feeds, ['loss', 'logits']);
  writeFileSync(logitsOut, Buffer.from(check.logits.data.buffer, check.logits.data.byteOffset, check.logits.data.byteLength));
  const checkLoss = check.loss.data[0];
  check.loss.dispose();
  check.logits.dispose();

  // Timed calls fetch only the loss, as our forwardBatch returns only the loss; reading it
  // back is part of each call.
  const forward = async () => {
    const out = await session.run(feeds, ['loss']);
    const loss = out.loss.data[0];
    out.loss.dispose();
    return loss;
  };
  const { stats, last } = await timeCalls(forward, warmup, reps);
  await session.release();

  await printJson({
    version: ort.env.versions?.web ?? null,
    execution_provider: 'wasm',
    threads,
    num_threads_setting: ort.env.wasm.numThreads,
    graph: 'ONNX opset 17 built in JS (tests/bench/peers/reference_onnx.mjs), fixed shapes, graphOptimizationLevel all',
    model_bytes: modelBytes.length,
    forward: { ...stats, loss: last },
    check_loss: checkLoss,
  });
}

main().catch((e) => {
  console.error(e instanceof Error ? e.stack : String(e));
  process.exit(1);
});
