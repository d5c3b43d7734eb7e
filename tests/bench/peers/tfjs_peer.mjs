// Peer runner: the reference model in TensorFlow.js with its WebAssembly backend under node.
// Started by bench_peers.mjs in a process of its own.
//   node tests/bench/peers/tfjs_peer.mjs --weights FILE --logits-out FILE
//        [--forward-reps N] [--train-reps N] [--warmup N] [--train-warmup N] [--batch B] [--seq T]
// Times (a) forward + mean next-token loss and (b) one training step: forward, loss, gradients
// of all parameters (tf.variableGrads), global-norm gradient clipping and an AdamW update written
// with tf ops the way our trainer does it (src/train.cpp: betas 0.9/0.999, eps 1e-8, decoupled
// weight decay, lr/clip/decay from the recipe). Every step trains on the same reference batch.
// Prints one line of JSON; writes the logits of one untimed forward ([B, T, V] float32) to
// --logits-out for bench_peers.mjs to compare with our module's.
//
// Notes on the tfjs side:
// - '@tensorflow/tfjs' is imported (not only tfjs-core) because its bundle is what registers the
//   gradient functions; tfjs-core's own node build has none. The backend is still set to 'wasm'.
// - The wasm backend has no gradient kernel for tf.gather, so tokens are embedded as
//   oneHot(tokens) x W_E, a matrix product; the same goes for picking the target log-probability.
// - Under node the wasm backend never uses threads (its WASM_HAS_MULTITHREAD_SUPPORT flag is
//   false there); SIMD is used when WebAssembly SIMD validates, which it does in node 20.
// - Per-head weights are kept with the heads side by side (see common.mjs), so each layer runs
//   one product for all heads' q, k or v and one batched product over [B, H] for the scores and
//   one for pattern x v.
// - Where the time goes: the wasm backend's BatchMatMul uses XNNPACK only for a single,
//   untransposed product; batched or transposed products (the attention scores, pattern x v,
//   and most products of the backward pass) run a plain blocked loop. On this 2-core machine
//   those two attention products take about 90 ms each per layer, most of the forward time.
//   Splitting them into 64 separate 2-D products per layer makes the products themselves fast
//   but measured no faster overall (the slicing and joining cost as much), so the plain batched
//   form is kept.
import { readFileSync, writeFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { version_wasm } from '@tensorflow/tfjs-backend-wasm';
import { intArg, stringArg, referenceTokens, timeCalls, loadWeights, headsSideBySide, headsStacked, printJson } from './common.mjs';

const recipe = JSON.parse(readFileSync(new URL('../reference_recipe.json', import.meta.url), 'utf8'));

// The parameters as tf.Variables (trainable), named after the model file's tensors.
function makeParams(weights) {
  const { config: c, tensors: W } = weights;
  if (c.use_bias || c.smeared_keys || c.pos_embed !== 'standard')
    throw new Error('the tfjs peer covers the reference architecture only: standard positions, no biases, no smeared keys');
  const v = (name, t) => tf.tidy(() => tf.variable(tf.tensor(t.data, t.shape, 'float32'), true, name));
  const p = {
    W_E: v('embed.W_E', W['embed.W_E']),
    W_pos: v('pos_embed.W_pos', W['pos_embed.W_pos']),
    W_U: v('unembed.W_U', W['unembed.W_U']),
    blocks: [],
  };
  for (let l = 0; l < c.n_layers; l++) {
    const n = `blocks.${l}.attn.`;
    p.blocks.push({
      W_Q: v(n + 'W_Q', headsSideBySide(W[n + 'W_Q'])), // [D, H * Dh]
      W_K: v(n + 'W_K', headsSideBySide(W[n + 'W_K'])),
      W_V: v(n + 'W_V', headsSideBySide(W[n + 'W_V'])),
      W_O: v(n + 'W_O', headsStacked(W[n + 'W_O'])), // [H * Dh, D]
    });
  }
  p.list = [p.W_E, p.W_pos, ...p.blocks.flatMap((b) => [b.W_Q, b.W_K, b.W_V, b.W_O]), p.W_U];
  return p;
}

// One-hot rows as float32. The wasm backend's OneHot kernel ignores a float32 dtype argument (it
// writes integer bits into the float buffer), so the int32 result is cast instead.
const oneHot = (ids, depth) => tf.cast(tf.oneHot(ids, depth), 'float32');

// Forward pass and loss on tokens (int32 tensor [B * T]); returns {logits [B * T, V], loss}.
// Call inside tf.tidy (or variableGrads) so the intermediates are freed.
function forward(p, c, tokens, B, T, causal) {
  const { n_heads: H, d_head: Dh, d_model: D, d_vocab: V, n_ctx } = c;
  const N = B * T;
  // resid = W_E[tokens] + W_pos[0:T]
  const embed = tf.matMul(oneHot(tokens, V), p.W_E); // [N, D]
  const pos = T === n_ctx ? p.W_pos : tf.slice(p.W_pos, [0, 0], [T, D]);
  let x = tf.reshape(tf.add(tf.reshape(embed, [B, T, D]), pos), [N, D]);
  const scale = 1 / Math.sqrt(Dh);
  for (const w of p.blocks) {
    // [N, H * Dh] -> [B, H, T, Dh]
    const heads = (m) => tf.transpose(tf.reshape(tf.matMul(x, m), [B, T, H, Dh]), [0, 2, 1, 3]);
    const q = heads(w.W_Q);
    const k = heads(w.W_K);
    const v = heads(w.W_V);
    // scores = q k^T / sqrt(d_head), causal mask; pattern = softmax
    const scores = tf.add(tf.mul(tf.matMul(q, k, false, true), scale), causal); // [B, H, T, T]
    const pattern = tf.softmax(scores);
    // z = pattern v; result summed over heads = (z, heads side by side) W_O
    const z = tf.reshape(tf.transpose(tf.matMul(pattern, v), [0, 2, 1, 3]), [N, H * Dh]);
    x = tf.add(x, tf.matMul(z, w.W_O));
  }
  const logits = tf.matMul(x, p.W_U); // [N, V]
  // loss = mean over rows and positions 0..T-2 of -log softmax(logits)[next token]
  const logp = tf.logSoftmax(tf.slice(tf.reshape(logits, [B, T, V]), [0, 0, 0], [B, T - 1, V]));
  const targets = tf.slice(tf.reshape(tokens, [B, T]), [0, 1], [B, T - 1]);
  const picked = tf.sum(tf.mul(logp, oneHot(targets, V)));
  const loss = tf.div(tf.neg(picked), B * (T - 1));
  return { logits, loss };
}

// AdamW as in src/train.cpp, after clipping the gradients' global norm to `clip`:
//   p <- p (1 - lr wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
//   p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
function makeAdamW(vars, { lr, weight_decay: wd, grad_clip: clip }) {
  const b1 = 0.9;
  const b2 = 0.999;
  const eps = 1e-8;
  const m = vars.map((v) => tf.tidy(() => tf.variable(tf.zerosLike(v), false)));
  const s = vars.map((v) => tf.tidy(() => tf.variable(tf.zerosLike(v), false)));
  let t = 0;
  return (grads) => {
    t += 1;
    const stepSize = lr / (1 - b1 ** t);
    const invSqrtBc2 = 1 / Math.sqrt(1 - b2 ** t);
    const decay = 1 - lr * wd;
    tf.tidy(() => {
      const g = vars.map((v) => grads[v.name]);
      // Scale by clip / (norm + 1e-6) when the norm exceeds clip, computed without a read-back.
      const norm = tf.sqrt(tf.addN(g.map((x) => tf.sum(tf.square(x)))));
      const factor = tf.minimum(1, tf.div(clip, tf.add(norm, 1e-6)));
      vars.forEach((v, i) => {
        const gi = tf.mul(g[i], factor);
        m[i].assign(tf.add(tf.mul(m[i], b1), tf.mul(gi, 1 - b1)));
        s[i].assign(tf.add(tf.mul(s[i], b2), tf.mul(tf.square(gi), 1 - b2)));
        const update = tf.div(m[i], tf.add(tf.mul(tf.sqrt(s[i]), invSqrtBc2), eps));
        v.assign(tf.sub(tf.mul(v, decay), tf.mul(update, stepSize)));
      });
    });
  };
}

async function main() {
  const weights = loadWeights(stringArg('--weights'));
  const logitsOut = stringArg('--logits-out');
  const forwardReps = intArg('--forward-reps', 30);
  const trainReps = intArg('--train-reps', 5);
  const warmup = intArg('--warmup', 3);
  const trainWarmup = intArg('--train-warmup', 2);
  const B = intArg('--batch', recipe.batch_size);
  const T = intArg('--seq', weights.config.n_ctx);
  const c = weights.config;

  await tf.setBackend('wasm');
  await tf.ready();
  if (tf.getBackend() !== 'wasm') throw new Error(`tfjs chose the ${tf.getBackend()} backend, not wasm`);
  const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
  const threads = (await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT')) ? 'multi' : 1;

  const p = makeParams(weights);
  const tokens = tf.tensor1d(referenceTokens(B, T), 'int32');
  const maskData = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) maskData[i * T + j] = -Infinity;
  const causal = tf.tensor2d(maskData, [T, T]);

  // The check run: logits and loss, untimed.
  const check = tf.tidy(() => forward(p, c, tokens, B, T, causal));
  const logits = check.logits.dataSync();
  writeFileSync(logitsOut, Buffer.from(logits.buffer, logits.byteOffset, logits.byteLength));
  const checkLoss = check.loss.dataSync()[0];
  tf.dispose(check);

  // (a) Forward + loss, the loss read back in each call.
  const before = tf.memory().numTensors;
  const fwd = () => {
    const loss = tf.tidy(() => forward(p, c, tokens, B, T, causal).loss);
    const x = loss.dataSync()[0];
    loss.dispose();
    return x;
  };
  const f = await timeCalls(fwd, warmup, forwardReps);
  const leakedForward = tf.memory().numTensors - before;

  // (b) Training steps on the same batch, the loss read back in each step (the loss is that of the
  // weights before the step's update).
  const adamw = makeAdamW(p.list, recipe.optimizer);
  const losses = [];
  const trainStep = () => {
    const { value, grads } = tf.variableGrads(() => forward(p, c, tokens, B, T, causal).loss, p.list);
    adamw(grads);
    tf.dispose(grads);
    const x = value.dataSync()[0];
    value.dispose();
    losses.push(x);
    return x;
  };
  const beforeTrain = tf.memory().numTensors;
  const t = await timeCalls(trainStep, trainWarmup, trainReps);
  const leakedTrain = tf.memory().numTensors - beforeTrain;

  await printJson({
    version: tf.version_core,
    backend_version: version_wasm,
    backend: tf.getBackend(),
    simd,
    threads,
    forward: { ...f.stats, loss: f.last },
    train_step: {
      ...t.stats,
      optimizer: 'adamw (tf ops, as src/train.cpp): betas 0.9/0.999, eps 1e-8, decoupled weight decay, global-norm clip',
      lr: recipe.optimizer.lr,
      weight_decay: recipe.optimizer.weight_decay,
      grad_clip: recipe.optimizer.grad_clip,
      batch: 'the fixed reference batch at every step',
      losses_per_step: losses, // warm-up steps first; the loss falls as the model fits the batch
    },
    check_loss: checkLoss,
    tensors_left_after: { forward: leakedForward, train: leakedTrain },
  });
}

main().catch((e) => {
  console.error(e instanceof Error ? e.stack : String(e));
  process.exit(1);
});
