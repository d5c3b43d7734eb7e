// The reference model (or any attention-only model of standard positions without biases, with no
// normalization or TransformerLens's LNPre, such as attn-only-2l's shape) as an ONNX graph (opset
// 17, standard operators only), built from the shared weights: forward pass and mean next-token
// cross-entropy, with the same operations in the same order as src/model.cpp (with LNPre, each
// layer's q, k, v and the unembedding read LayerNormalization(x) with unit scale, epsilon 1e-5):
//   x      = W_E[tokens] + W_pos[0:T]                                   [B, T, D]
//   per layer, all heads at once (weights rearranged as in common.mjs):
//   q, k, v = x W_Q, x W_K, x W_V  -> [B, H, T, d_head] (k as [B, H, d_head, T])
//   pattern = softmax(q k^T / sqrt(d_head) + causal mask of -inf)       [B, H, T, T]
//   x      += (pattern v, heads side by side) W_O                       [B, T, D]
//   logits  = x W_U                                                     [B, T, V]
//   loss    = mean over rows and positions 0..T-2 of -log softmax(logits)[next token]
// Input "tokens": int64 [B, T]. Outputs "loss" (a scalar) and "logits".
import { DataType, tensor, node, valueInfo, graph, model } from './onnx_proto.mjs';
import { headsSideBySide, headsStacked } from './common.mjs';

// Collects nodes and initializers, and names intermediate values.
class GraphBuilder {
  constructor() {
    this.nodes = [];
    this.initializers = [];
    this.count = 0;
  }

  // A constant tensor; returns its name.
  constant(name, dataType, dims, data) {
    this.initializers.push(tensor(name, dataType, dims, data));
    return name;
  }

  floats(name, dims, data) {
    return this.constant(name, DataType.FLOAT, dims, data instanceof Float32Array ? data : Float32Array.from(data));
  }

  int64s(name, values) {
    return this.constant(name, DataType.INT64, [values.length], BigInt64Array.from(values.map(BigInt)));
  }

  // One operator; returns the name of its (single) output, `out` or a fresh one.
  op(opType, inputs, attrs = {}, out = null) {
    const output = out ?? `${opType.toLowerCase()}_${this.count++}`;
    this.nodes.push(node(opType, inputs, [output], attrs, `${opType}_${this.nodes.length}`));
    return output;
  }
}

// weights: loadWeights() result; B, T: the batch shape the graph is fixed to. Returns the
// encoded model (Uint8Array).
export function buildReferenceOnnx(weights, B, T) {
  const { config: c, tensors: W } = weights;
  const { n_layers: L, n_heads: H, d_head: Dh, d_model: D, d_vocab: V } = c;
  const norm = c.normalization_type ?? 'none';
  if (c.use_bias || c.smeared_keys || c.pos_embed !== 'standard' || (c.d_mlp ?? 0) > 0 || !['none', 'LNPre'].includes(norm))
    throw new Error('the ONNX peer covers attention-only models with standard positions, no biases, no smeared keys, and no normalization or LNPre');
  const g = new GraphBuilder();
  // LNPre (TransformerLens): (x - mean) / sqrt(mean((x - mean)^2) + 1e-5), no weight or bias.
  const ones = norm === 'LNPre' ? g.floats('ln_ones', [D], new Float32Array(D).fill(1)) : null;
  const lnPre = (t) => (ones ? g.op('LayerNormalization', [t, ones], { axis: -1, epsilon: 1e-5 }) : t);

  const WE = g.floats('W_E', W['embed.W_E'].shape, W['embed.W_E'].data);
  const Wpos = g.floats('W_pos', [T, D], W['pos_embed.W_pos'].data.subarray(0, T * D));
  const WU = g.floats('W_U', W['unembed.W_U'].shape, W['unembed.W_U'].data);
  const scale = g.floats('scale', [], [1 / Math.sqrt(Dh)]);
  const mask = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) mask[i * T + j] = -Infinity;
  const causal = g.floats('causal_mask', [T, T], mask);
  const splitHeads = g.int64s('shape_b_t_h_dh', [B, T, H, Dh]);
  const joinHeads = g.int64s('shape_b_t_hdh', [B, T, H * Dh]);

  // resid = W_E[tokens] + W_pos[0:T]
  let x = g.op('Add', [g.op('Gather', [WE, 'tokens'], { axis: 0 }), Wpos]);

  for (let l = 0; l < L; l++) {
    const p = `blocks.${l}.attn.`;
    const weight = (n, arrange) => {
      const t = arrange(W[p + n]);
      return g.floats(p + n, t.shape, t.data);
    };
    const Wq = weight('W_Q', headsSideBySide); // [D, H * Dh]
    const Wk = weight('W_K', headsSideBySide);
    const Wv = weight('W_V', headsSideBySide);
    const Wo = weight('W_O', headsStacked); // [H * Dh, D]
    // [B, T, H * Dh] -> [B, T, H, Dh] -> perm
    const xn = lnPre(x);   // blocks.l.ln1 (what attention reads; the stream itself is not normalized)
    const heads = (w, perm) => g.op('Transpose', [g.op('Reshape', [g.op('MatMul', [xn, w]), splitHeads])], { perm });
    const q = heads(Wq, [0, 2, 1, 3]); // [B, H, T, Dh]
    const kT = heads(Wk, [0, 2, 3, 1]); // [B, H, Dh, T]
    const v = heads(Wv, [0, 2, 1, 3]); // [B, H, T, Dh]
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [q, kT]), scale]), causal]);
    const pattern = g.op('Softmax', [scores], { axis: -1 });
    const z = g.op('MatMul', [pattern, v]); // [B, H, T, Dh]
    const zSide = g.op('Reshape', [g.op('Transpose', [z], { perm: [0, 2, 1, 3] }), joinHeads]); // [B, T, H * Dh]
    x = g.op('Add', [x, g.op('MatMul', [zSide, Wo])]);
  }
  const logits = g.op('MatMul', [lnPre(x), WU], {}, 'logits'); // [B, T, V] (ln_final first with LNPre)

  // loss: positions 0..T-2 predict the token after them.
  const zero = g.int64s('zero', [0]);
  const one = g.int64s('one', [1]);
  const two = g.int64s('two', [2]);
  const last = g.int64s('t_minus_1', [T - 1]);
  const tEnd = g.int64s('t', [T]);
  const logp = g.op('LogSoftmax', [g.op('Slice', [logits, zero, last, one])], { axis: -1 }); // [B, T-1, V]
  const targets = g.op('Unsqueeze', [g.op('Slice', ['tokens', one, tEnd, one]), two]); // [B, T-1, 1]
  const picked = g.op('GatherElements', [logp, targets], { axis: 2 }); // [B, T-1, 1]
  g.op('Neg', [g.op('ReduceMean', [picked], { keepdims: 0 })], {}, 'loss');

  const body = graph({
    name: 'circuitscope_reference',
    nodes: g.nodes,
    initializers: g.initializers,
    inputs: [valueInfo('tokens', DataType.INT64, [B, T])],
    outputs: [valueInfo('loss', DataType.FLOAT, []), valueInfo('logits', DataType.FLOAT, [B, T, V])],
  });
  return model({ graph: body, irVersion: 8, opset: 17, producer: 'circuitscope bench_peers' });
}
