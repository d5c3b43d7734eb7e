// Model: forward pass (filling the activation cache), masked cross-entropy and the backward pass,
// as named stages paired the way llm.c pairs attention_forward with attention_backward: each
// *_backward differentiates the *_forward of the same name, and each of its steps quotes, in a
// comment, the forward line it differentiates. Interventions act only through
// apply_intervention_at(), at the hook points the list of stages below marks.
#include "model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "checks.h"
#include "kernels/gemm.h"
#include "kernels/softmax.h"
#include "rng.h"

namespace cs {

namespace {

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

void check_intervention(const Config& c, const Intervention& iv, int Tl) {
  for (const auto& a : iv.ablations) {
    for (int t : a.positions)
      if (t < 0 || t >= Tl)
        throw std::invalid_argument("intervention: the ablation of L" + std::to_string(a.layer) + "H" + std::to_string(a.head) +
                                    " names position " + std::to_string(t) + ", outside the " + std::to_string(Tl) +
                                    " positions of the sequence");
    if (a.layer < 0 || a.layer >= c.n_layers || a.head < 0 || a.head >= c.n_heads)
      throw std::invalid_argument("intervention: there is no head L" + std::to_string(a.layer) + "H" +
                                  std::to_string(a.head) + " in a model with " + std::to_string(c.n_layers) +
                                  " layers of " + std::to_string(c.n_heads) + " heads");
    if (a.mean && a.mean_value.size() != static_cast<std::size_t>(c.d_model) &&
        a.mean_value.size() != static_cast<std::size_t>(c.n_ctx) * c.d_model)
      throw std::invalid_argument("intervention: the mean for L" + std::to_string(a.layer) + "H" +
                                  std::to_string(a.head) + " must have d_model (" + std::to_string(c.d_model) +
                                  ") or n_ctx*d_model values, got " + std::to_string(a.mean_value.size()));
  }
  for (const auto& a : iv.mlp_ablations) {
    const std::string name = "the MLP of layer " + std::to_string(a.layer);
    if (a.layer < 0 || a.layer >= c.n_layers)
      throw std::invalid_argument("intervention: there is no layer " + std::to_string(a.layer) + " in a model with " +
                                  std::to_string(c.n_layers) + " layers");
    if (c.d_mlp == 0)
      throw std::invalid_argument("intervention: this model is attention-only, so there is no MLP in layer " + std::to_string(a.layer) + " to ablate");
    for (int t : a.positions)
      if (t < 0 || t >= Tl)
        throw std::invalid_argument("intervention: the ablation of " + name + " names position " + std::to_string(t) + ", outside the " +
                                    std::to_string(Tl) + " positions of the sequence");
    if (a.mean && a.mean_value.size() != static_cast<std::size_t>(c.d_model) &&
        a.mean_value.size() != static_cast<std::size_t>(c.n_ctx) * c.d_model)
      throw std::invalid_argument("intervention: the value for " + name + " must have d_model (" + std::to_string(c.d_model) +
                                  ") or n_ctx*d_model values, got " + std::to_string(a.mean_value.size()));
    if (!a.mean && iv.ablation != Ablation::Zero)
      throw std::invalid_argument(std::string("intervention: the ") + ablation_name(iv.ablation) + " ablation of " + name +
                                  " would need its outputs on reference sequences, which are kept for heads only; zero-ablate the MLP or give its value");
  }
  for (const auto& k : iv.cuts) {
    auto bad = [&](int l, int h) { return l < 0 || l >= c.n_layers || h < 0 || h >= c.n_heads; };
    if (bad(k.src_layer, k.src_head) || bad(k.dst_layer, k.dst_head))
      throw std::invalid_argument("intervention: a path cut names a head that does not exist (L" +
                                  std::to_string(k.src_layer) + "H" + std::to_string(k.src_head) + " -> L" +
                                  std::to_string(k.dst_layer) + "H" + std::to_string(k.dst_head) + ")");
    if (k.src_layer >= k.dst_layer)
      throw std::invalid_argument("intervention: a path can only be cut from an earlier layer to a later one (L" +
                                  std::to_string(k.src_layer) + " -> L" + std::to_string(k.dst_layer) + ")");
  }
  bool replaces = !iv.cuts.empty();
  for (const auto& a : iv.ablations) replaces |= !a.mean;
  if (iv.ablation != Ablation::Zero && replaces) {
    const std::string kind = std::string("intervention: ") + ablation_name(iv.ablation) + " ablation";
    const AblationReference* ref = iv.reference.get();
    if (!ref || ref->B < 1)
      throw std::invalid_argument(kind + " needs the heads' outputs on reference sequences (the task's sequences); none were given");
    if (ref->result.size() != static_cast<std::size_t>(c.n_layers) * c.n_heads ||
        (ref->result.size() && ref->result[0].size() != static_cast<std::size_t>(ref->B) * ref->T * c.d_model))
      throw std::invalid_argument(kind + ": the reference outputs come from a model of another shape");
    if (Tl > ref->T)
      throw std::invalid_argument(kind + ": the sequence has " + std::to_string(Tl) + " tokens but the reference sequences only " +
                                  std::to_string(ref->T) + ", so positions past " + std::to_string(ref->T - 1) + " have no mean");
  }
}

}  // namespace

Batch next_token_batch(const std::vector<int>& ids, int B, int Tl) {
  if (B < 1 || Tl < 1 || ids.size() != static_cast<std::size_t>(B) * Tl)
    throw std::invalid_argument("batch: " + std::to_string(ids.size()) + " token ids do not make a [" + std::to_string(B) +
                                ", " + std::to_string(Tl) + "] batch");
  Batch b;
  b.B = B;
  b.T = Tl;
  b.tokens = ids;
  b.targets.assign(ids.size(), -1);
  b.mask.assign(ids.size(), 0.0f);
  for (int r = 0; r < B; ++r)
    for (int t = 0; t + 1 < Tl; ++t) {
      const std::size_t n = static_cast<std::size_t>(r) * Tl + t;
      b.targets[n] = ids[n + 1];
      b.mask[n] = 1.0f;
    }
  return b;
}


namespace {

using kernels::Causal;
using kernels::Op;

// C = alpha op(A) op(B) + beta C (see kernels/gemm.h for the arguments, the causal modes and the
// column-split output). Single precision runs the kernel layer; double precision (the gradient
// check) runs the same product through Eigen, computing every entry.
void mm(Op oa, Op ob, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
        float* C, int ldc, Causal causal = Causal::None, int c_split = 0, std::size_t c_split_stride = 0,
        float* const* c_blocks = nullptr) {
  kernels::GemmArgs g;
  g.op_a = oa, g.op_b = ob, g.M = M, g.N = N, g.K = K, g.alpha = alpha, g.A = A, g.lda = lda, g.B = B, g.ldb = ldb;
  g.beta = beta, g.C = C, g.ldc = ldc, g.causal = causal, g.c_split = c_split, g.c_split_stride = c_split_stride;
  g.c_blocks = c_blocks;
  kernels::sgemm(g);
}

void mm(Op oa, Op ob, int M, int N, int K, double alpha, const double* A, int lda, const double* B, int ldb,
        double beta, double* C, int ldc, Causal = Causal::None, int c_split = 0, std::size_t c_split_stride = 0,
        double* const* c_blocks = nullptr) {
  using Strided = Eigen::Map<const MatRM<double>, 0, Eigen::OuterStride<>>;
  const Strided a(A, oa == Op::N ? M : K, oa == Op::N ? K : M, Eigen::OuterStride<>(lda));
  const Strided b(B, ob == Op::N ? K : N, ob == Op::N ? N : K, Eigen::OuterStride<>(ldb));
  MatRM<double> prod(M, N);
  if (oa == Op::N && ob == Op::N) prod.noalias() = a * b;
  else if (oa == Op::N) prod.noalias() = a * b.transpose();
  else if (ob == Op::N) prod.noalias() = a.transpose() * b;
  else prod.noalias() = a.transpose() * b.transpose();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double* p = C + static_cast<std::size_t>(i) * ldc + j;
      if (c_split > 0) {
        const int blk = j / c_split;
        double* base = c_blocks ? c_blocks[blk] : C + static_cast<std::size_t>(blk) * c_split_stride;
        p = base + static_cast<std::size_t>(i) * ldc + j % c_split;
      }
      *p = alpha * prod(i, j) + (beta == 0.0 ? 0.0 : beta * *p);
    }
}

// The largest of x[0..n).
float max_of(const float* x, int n) { return kernels::max_of(x, n); }
double max_of(const double* x, int n) { return *std::max_element(x, x + n); }

// out[j] = exp(x[j] - shift), returning their sum.
float exp_shifted_sum(const float* x, float shift, float* out, int n) { return kernels::exp_shifted_sum(x, shift, out, n); }
double exp_shifted_sum(const double* x, double shift, double* out, int n) {
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += (out[j] = std::exp(x[j] - shift));
  return sum;
}

// p[0..n) = softmax(s[0..n)), p[n..width) = 0.
void softmax_row(const float* s, float* p, int n, int width) { kernels::softmax_row(s, p, n, width); }
void softmax_row(const double* s, double* p, int n, int width) {
  const double mx = *std::max_element(s, s + n);
  const double inv = 1.0 / exp_shifted_sum(s, mx, p, n);
  for (int j = 0; j < n; ++j) p[j] *= inv;
  std::fill(p + n, p + width, 0.0);
}

// ds[j] = p[j] (dp[j] - sum_k p[k] dp[k]) for j < n, ds[n..width) = 0.
void softmax_grad_row(const float* p, const float* dp, float* ds, int n, int width) {
  kernels::softmax_grad_row(p, dp, ds, n, width);
}
void softmax_grad_row(const double* p, const double* dp, double* ds, int n, int width) {
  double dot = 0;
  for (int j = 0; j < n; ++j) dot += p[j] * dp[j];
  for (int j = 0; j < n; ++j) ds[j] = p[j] * (dp[j] - dot);
  std::fill(ds + n, ds + width, 0.0);
}

// wcat[d, w*H*Dh + h*Dh + e] = W_w[h][d][e] for w in (Q, K, V): every head's projection side by
// side, so one product computes a projection for all heads.
// Rows of a pass few enough that the q, k and v products are made head by head (qkv_forward).
constexpr int kFewRows = 4;

template <class T>
void concat_qkv(const LayerParams<T>& w, int H, int D, int Dh, MatRM<T>& wcat) {
  wcat.resize(D, 3 * H * Dh);
  const Tensor<T>* mats[3] = {&w.W_Q, &w.W_K, &w.W_V};
  for (int m = 0; m < 3; ++m)
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        const T* src = mats[m]->ptr() + (static_cast<std::size_t>(h) * D + d) * Dh;
        std::copy(src, src + Dh, wcat.data() + static_cast<std::size_t>(d) * 3 * H * Dh + (m * H + h) * Dh);
      }
}

// TransformerLens's LayerNorm over each row of x [N, D] (LNPre when w is null):
//   xc = x - mean(x), scale = sqrt(mean(xc^2) + eps)   hook_scale      [N]
//   out = xc / scale * w + b                            hook_normalized [N, D]
// out may be x itself.
template <class T>
void layer_norm_forward(const T* x, int N, int D, const T* w, const T* b, T* scale, T* out) {
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<std::size_t>(n) * D;
    T* yr = out + static_cast<std::size_t>(n) * D;
    T mean = 0;
    for (int d = 0; d < D; ++d) mean += xr[d];
    mean /= T(D);
    T ms = 0;
    for (int d = 0; d < D; ++d) ms += (xr[d] - mean) * (xr[d] - mean);
    const T s = std::sqrt(ms / T(D) + T(kLnEps));
    scale[n] = s;
    const T inv = T(1) / s;
    for (int d = 0; d < D; ++d) {
      const T xhat = (xr[d] - mean) * inv;
      yr[d] = w ? xhat * w[d] + b[d] : xhat;
    }
  }
}

// The LayerNorm above, backwards: from dy [N, D] at its output and its input x [N, D] and scale,
//   xhat = (x - mean(x)) / scale ; g = dy * w (dy for LNPre)
//   dx += (g - mean(g) - xhat mean(g xhat)) / scale    (accumulated into dx)
//   dw = sum_n dy xhat ; db = sum_n dy                  (LN only; overwritten)
template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* scale, const T* w, int N, int D, T* dx, T* dw, T* db) {
  if (w) {
    std::fill(dw, dw + D, T(0));
    std::fill(db, db + D, T(0));
  }
  // xhat and g are recomputed in the second pass rather than kept: no allocation per call, as the
  // Workspace promises for a training step (the same expressions, so the same values).
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<std::size_t>(n) * D;
    const T* dyr = dy + static_cast<std::size_t>(n) * D;
    T* dxr = dx + static_cast<std::size_t>(n) * D;
    T mean = 0;
    for (int d = 0; d < D; ++d) mean += xr[d];
    mean /= T(D);
    const T inv = T(1) / scale[n];
    T mg = 0, mgx = 0;
    for (int d = 0; d < D; ++d) {
      const T xhat = (xr[d] - mean) * inv;
      const T g = w ? dyr[d] * w[d] : dyr[d];
      mg += g;
      mgx += g * xhat;
      if (w) {
        dw[d] += dyr[d] * xhat;
        db[d] += dyr[d];
      }
    }
    mg /= T(D);
    mgx /= T(D);
    for (int d = 0; d < D; ++d) {
      const T xhat = (xr[d] - mean) * inv;
      const T g = w ? dyr[d] * w[d] : dyr[d];
      dxr[d] += (g - mg - xhat * mgx) * inv;
    }
  }
}

// The MLP's activation and its derivative (TransformerLens act_fn; config.h).
template <class T>
T activation(Act a, T x) {
  switch (a) {
    case Act::GELU: return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
    case Act::GELUNew: {
      const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);  // sqrt(2/pi) (x + 0.044715 x^3)
      return T(0.5) * x * (T(1) + std::tanh(u));
    }
    case Act::ReLU: return x > T(0) ? x : T(0);
  }
  return x;
}
template <class T>
T activation_grad(Act a, T x) {
  switch (a) {
    case Act::GELU:  // d/dx 0.5 x (1 + erf(x / sqrt 2)) = 0.5 (1 + erf(x / sqrt 2)) + x phi(x)
      return T(0.5) * (T(1) + std::erf(x * T(0.7071067811865476))) + x * std::exp(T(-0.5) * x * x) * T(0.3989422804014327);
    case Act::GELUNew: {
      const T c = T(0.7978845608028654);
      const T th = std::tanh(c * (x + T(0.044715) * x * x * x));
      return T(0.5) * (T(1) + th) + T(0.5) * x * (T(1) - th * th) * c * (T(1) + T(3 * 0.044715) * x * x);
    }
    case Act::ReLU: return x > T(0) ? T(1) : T(0);
  }
  return T(1);
}

// ---------------------------------------------------------------------------------------------
// The stages. forward() runs them in this order, and backward() runs their *_backward partners
// in reverse; [brackets] mark the hook points where an Intervention acts:
//
//   embed_forward        hook_embed = W_E[tokens], hook_pos_embed = W_pos[0:T]
//   [Hook::PosEmbed]     remove_pos
//   residual_forward     resid = embed (+ pos, standard)
//   per layer:
//     attn_input_forward v_in = ln1(resid) (or resid), qk_in = v_in (+ pos, shortformer)
//     [Hook::AttnIn]     path cuts: a head's own inputs, ln1 of the stream minus the cut heads' results
//     qkv_forward        q = qk_in W_Q + b_Q, k = qk_in W_K + b_K, v = v_in W_V + b_V
//     smear_keys_forward k_j <- s k_j + (1 - s) k_{j-1}
//     attention_forward  scores = q k^T / sqrt(Dh), pattern = softmax(scores), z = pattern v
//     result_forward     result_h = z_h W_O[h]
//     [Hook::Result]     ablations
//     attn_out_forward   attn_out = sum_h result_h + b_O, resid_post (resid_mid) = resid_pre + attn_out
//     mlp_forward        (d_mlp > 0) mlp_out = act(ln2(resid_mid) W_in + b_in) W_out + b_out,
//     [Hook::MlpOut]     MLP ablations
//                        resid_post = resid_mid + mlp_out
//   unembed_forward      logits = ln_final(resid) W_U + b_U
//
// backward(): loss_backward (dlogits), unembed_backward (with ln_final), then per layer, last
// first: mlp_backward, attn_out_backward, result_backward, attention_backward,
// smear_keys_backward, qkv_backward (with ln1); then embed_backward (for embed_forward and
// residual_forward). A cache from a forward pass
// with an intervention is refused, so the backward stages have no hook points.
// ---------------------------------------------------------------------------------------------

// One pass's sizes (legend in tensor.h). P0 is the first position the pass computes: 0, or in
// an incremental pass over one sequence (B = 1) the first changed token, the cache keeping the
// positions before it; the forward stages compute rows P0..N-1 of the cache (R of them), and the
// residual stream they carry holds only those rows.
struct Dims {
  int B, Tl, N, H, D, Dh, V, HDh;
  std::size_t NDh;  // one head's [N, Dh] block of hook_q/k/v/z
  std::size_t TT;   // one [T, T] pattern
  int P0 = 0, R;    // the first position computed (B = 1 when > 0), the rows computed (N - P0)
  Dims(const Config& c, int B_, int Tl_, int P0_ = 0)
      : B(B_), Tl(Tl_), N(B_ * Tl_), H(c.n_heads), D(c.d_model), Dh(c.d_head), V(c.d_vocab), HDh(c.n_heads * c.d_head),
        NDh(static_cast<std::size_t>(B_) * Tl_ * c.d_head), TT(static_cast<std::size_t>(Tl_) * Tl_), P0(P0_),
        R(B_ * Tl_ - P0_) {}
  std::size_t off(int width) const { return static_cast<std::size_t>(P0) * width; }  // row P0 of a [N, width] block
  // The first row of head h, batch row b in a [H, B, T, Dh] tensor.
  std::size_t head_row0(int h, int b) const {
    return static_cast<std::size_t>(h) * NDh + static_cast<std::size_t>(b) * Tl * Dh;
  }
};

// What the current layer's attention reads, and whether positions enter at all.
template <class T>
struct Stream {
  MatRM<T>* resid = nullptr;  // the residual stream  [N, D]
  const T* v_in = nullptr;    // v's input: ln1(resid), or resid without normalization  [N, D]
  const T* qk_in = nullptr;   // q's and k's input: v_in, or v_in + pos (shortformer)  [N, D]
  bool has_pos = false;       // pos_embed is not none and not removed
  // Each head's own q, k and v input ([3 * H], index w * H + h for w in Q, K, V) when a path cut
  // recomputes the residual stream for this layer; empty otherwise.
  std::vector<const T*> head_in;
  std::vector<MatRM<T>> cut_in;  // the recomputed inputs head_in points to  [3 * H][N, D]
};

// out = x with pos added to every batch row's [T, D] block (the shortformer's input of Q and K).
template <class T, class X, class P>
void add_positions(const X& x, const P& pos, int B, int Tl, MatRM<T>& out) {
  out = x;
  for (int b = 0; b < B; ++b) out.middleRows(b * Tl, Tl) += pos;
}

// Checks what forward() is given; throws std::invalid_argument with a sentence.
void check_forward_args(const Config& c, const std::vector<int>& tokens, int B, int Tl, int logit_rows, bool scores,
                        bool results) {
  const int V = c.d_vocab;
  if (B < 1) throw std::invalid_argument("forward: the batch is empty");
  if (Tl < 1) throw std::invalid_argument("forward: the sequence is empty");
  if (Tl > c.n_ctx)
    throw std::invalid_argument("forward: the sequence has " + std::to_string(Tl) + " tokens but this model's context holds " +
                                std::to_string(c.n_ctx));
  if (tokens.size() != static_cast<std::size_t>(B) * Tl)
    throw std::invalid_argument("forward: expected " + std::to_string(B * Tl) + " tokens, got " + std::to_string(tokens.size()));
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= V)
      throw std::invalid_argument("forward: token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                                  " is outside the vocabulary (0.." + std::to_string(V - 1) + ")");
  // Sized for this pass, before anything is allocated (config.h): one sequence may use
  // kMaxForwardBytes, a training batch kMaxTrainBytes.
  const double need = forward_bytes(c, B, Tl, logit_rows, scores, results), limit = B == 1 ? kMaxForwardBytes : kMaxTrainBytes;
  if (need > limit)
    throw std::invalid_argument("forward: a pass over " + (B == 1 ? std::string() : std::to_string(B) + " x ") +
                                std::to_string(Tl) + " tokens would need " +
                                std::to_string(static_cast<long long>(need / (1 << 20))) +
                                " MB of activations; circuitscope allows at most " +
                                std::to_string(static_cast<long long>(limit / (1 << 20))) + " MB (use fewer tokens)");
}

// ---- Interventions: the one place an Intervention changes the forward pass ----

// Where forward() lets an Intervention act, named by the hook it changes.
enum class Hook {
  PosEmbed,  // hook_pos_embed: remove_pos zeroes it, and positions enter nowhere
  AttnIn,    // blocks.l.attn inputs: a path cut gives a head q, k or v input without the cut heads' results
  Result,    // blocks.l.attn.hook_result: an ablation replaces a head's output (its pattern stays visible)
  MlpOut,    // blocks.l.hook_mlp_out: an MLP ablation replaces the MLP's output
};

// Rows of a [B*T, D] block at `positions` of every batch row (all positions when empty) set to
// zero (!mean) or to `value` ([D], or [n_ctx, D] read at each position).
template <class M>
void replace_rows(M&& r, int B, int Tl, int P0, int D, bool mean, const std::vector<float>& value, const std::vector<int>& positions) {
  const bool per_pos = mean && value.size() != static_cast<std::size_t>(D);
  for (int b = 0; b < B; ++b)
    for (int t = P0; t < Tl; ++t) {
      if (!positions.empty() && std::find(positions.begin(), positions.end(), t) == positions.end()) continue;
      for (int d = 0; d < D; ++d) r(b * Tl + t, d) = !mean ? 0 : value[(per_pos ? static_cast<std::size_t>(t) * D : 0) + d];
    }
}

// What replaces head k's (flat index layer * H + head) output at position t of a batch row whose
// resample partner is reference row `partner` (Ablation other than Zero): [D] values.
const float* replacement(const Intervention& iv, int k, int t, int partner, int D) {
  const AblationReference& ref = *iv.reference;
  switch (iv.ablation) {
    case Ablation::Mean: return ref.mean[k].data() + static_cast<std::size_t>(t) * D;
    case Ablation::MeanAll: return ref.mean_all[k].data();
    case Ablation::Resample: return ref.result[k].data() + (static_cast<std::size_t>(partner) * ref.T + t) * D;
    case Ablation::Zero: break;
  }
  return nullptr;
}

// Each batch row's resample partner (zeros unless the kind is Resample).
std::vector<int> resample_partners(const Intervention& iv, const Dims& dm, const std::vector<int>& tokens) {
  std::vector<int> out(dm.B, 0);
  if (iv.ablation == Ablation::Resample)
    for (int b = 0; b < dm.B; ++b)
      out[b] = resample_row(*iv.reference, tokens.data() + static_cast<std::size_t>(b) * dm.Tl, dm.Tl, iv.resample_seed);
  return out;
}

// lp: the layer's weights (AttnIn reads its ln1); null for Hook::PosEmbed.
template <class T>
void apply_intervention_at(Hook hook, int layer, const Config& c, const LayerParams<T>* lp, const Intervention& iv,
                           const Dims& dm, Stream<T>& st, ActivationCache<T>& cache) {
  switch (hook) {
    case Hook::PosEmbed:
      if (iv.remove_pos) {
        cache.pos_embed.zero();  // [T, D]
        st.has_pos = false;
      }
      return;
    case Hook::AttnIn: {
      st.head_in.clear();
      bool cut_here = false;
      for (const auto& cut : iv.cuts) cut_here |= cut.dst_layer == layer;
      if (!cut_here) return;
      const int H = dm.H;
      st.head_in.assign(3 * H, nullptr);
      st.cut_in.assign(3 * H, MatRM<T>());
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < 3; ++w) st.head_in[w * H + h] = w == 2 ? st.v_in : st.qk_in;
      for (const auto& cut : iv.cuts) {
        if (cut.dst_layer != layer) continue;
        const int w = static_cast<int>(cut.input), slot = w * H + cut.dst_head;
        MatRM<T>& in = st.cut_in[slot];  // [N, D], the residual stream this input reads
        if (in.size() == 0) in = *st.resid;
        in -= cache.layers[cut.src_layer].result.slice(cut.src_head);
        if (iv.ablation != Ablation::Zero) {  // the cut head's contribution, replaced
          const std::vector<int> partner = resample_partners(iv, dm, cache.tokens);
          const int k = cut.src_layer * H + cut.src_head;
          for (int b = 0; b < dm.B; ++b)
            for (int t = 0; t < dm.Tl; ++t) {
              const float* v = replacement(iv, k, t, partner[b], dm.D);
              for (int d = 0; d < dm.D; ++d) in(b * dm.Tl + t, d) += static_cast<T>(v[d]);
            }
        }
      }
      // Each recomputed stream goes through ln1 on its own (its scale is its own) and, for q and
      // k, gets the shortformer's positions, as the layer's own input does.
      const LayerParams<T>& lw = *lp;
      std::vector<T> scale(dm.N);
      for (int slot = 0; slot < 3 * H; ++slot) {
        MatRM<T>& in = st.cut_in[slot];
        if (in.size() == 0) continue;
        if (c.normalization != Norm::None)
          layer_norm_forward(in.data(), dm.N, dm.D, c.normalization == Norm::LN ? lw.ln1_w.ptr() : nullptr,
                             lw.ln1_b.ptr(), scale.data(), in.data());
        if (slot < 2 * H && c.pos_embed == PosEmbed::Shortformer && st.has_pos)
          for (int b = 0; b < dm.B; ++b) in.middleRows(b * dm.Tl, dm.Tl) += cache.pos_embed.mat();
        st.head_in[slot] = in.data();
      }
      return;
    }
    case Hook::Result: {  // rows P0.. (an incremental pass keeps the earlier rows' replacement)
      const int B = dm.B, Tl = dm.Tl, D = dm.D, P0 = dm.P0;
      for (const auto& a : iv.ablations) {
        if (a.layer != layer) continue;
        auto r = cache.layers[layer].result.slice(a.head);  // [N, D]
        if (!a.mean && iv.ablation != Ablation::Zero) {  // the head's output on the reference sequences
          const std::vector<int> partner = resample_partners(iv, dm, cache.tokens);
          const int k = layer * dm.H + a.head;
          for (int b = 0; b < B; ++b)
            for (int t = P0; t < Tl; ++t) {
              if (!a.positions.empty() && std::find(a.positions.begin(), a.positions.end(), t) == a.positions.end()) continue;
              const float* v = replacement(iv, k, t, partner[b], D);
              for (int d = 0; d < D; ++d) r(b * Tl + t, d) = static_cast<T>(v[d]);
            }
        } else if (!a.positions.empty()) {  // only these positions (each row of the batch)
          const bool per_pos = a.mean && a.mean_value.size() != static_cast<std::size_t>(D);
          for (int b = 0; b < B; ++b)
            for (int t : a.positions)
              for (int d = 0; d < D && t >= P0; ++d)
                r(b * Tl + t, d) = !a.mean ? T(0) : static_cast<T>(a.mean_value[(per_pos ? static_cast<std::size_t>(t) * D : 0) + d]);
        } else if (!a.mean) {
          r.bottomRows(dm.R).setZero();
        } else if (a.mean_value.size() == static_cast<std::size_t>(D)) {
          RowVecT<T> m(D);
          for (int d = 0; d < D; ++d) m(d) = static_cast<T>(a.mean_value[d]);
          r.bottomRows(dm.R).rowwise() = m;
        } else {
          for (int b = 0; b < B; ++b)
            for (int t = P0; t < Tl; ++t)
              for (int d = 0; d < D; ++d) r(b * Tl + t, d) = static_cast<T>(a.mean_value[static_cast<std::size_t>(t) * D + d]);
        }
      }
      return;
    }
    case Hook::MlpOut:
      for (const auto& a : iv.mlp_ablations)
        if (a.layer == layer) replace_rows(cache.layers[layer].mlp_out.mat(), dm.B, dm.Tl, dm.P0, dm.D, a.mean, a.mean_value, a.positions);
      return;
  }
}

// ---- Forward stages ----

// hook_embed = W_E[tokens]  [B, T, D] ; hook_pos_embed = W_pos[0:T]  [T, D] (zeros if none)
template <class T>
void embed_forward(const Params<T>& p, const std::vector<int>& tokens, const Dims& dm, ActivationCache<T>& cache) {
  cache.embed.ensure({dm.B, dm.Tl, dm.D});
  auto emb = cache.embed.mat();
  auto WE = p.W_E.mat();
  for (int n = dm.P0; n < dm.N; ++n) emb.row(n) = WE.row(tokens[n]);
  cache.pos_embed.ensure({dm.Tl, dm.D});
  if (p.cfg.pos_embed != PosEmbed::None) cache.pos_embed.mat() = p.W_pos.mat().topRows(dm.Tl);
  else cache.pos_embed.zero();
}

// resid = embed (+ pos for standard)  [N, D]
template <class T>
void residual_forward(const Config& c, const Dims& dm, const ActivationCache<T>& cache, Stream<T>& st) {
  MatRM<T>& resid = *st.resid;
  resid = cache.embed.mat().bottomRows(dm.R);
  const int Tr = dm.Tl - dm.P0;  // positions computed in each batch row
  if (c.pos_embed == PosEmbed::Standard && st.has_pos)
    for (int b = 0; b < dm.B; ++b) resid.middleRows(b * Tr, Tr) += cache.pos_embed.mat().bottomRows(Tr);
}

// Gives layer l's cache its shapes for this pass (no allocation for a shape already seen).
template <class T>
void layer_buffers(const Config& c, const Dims& dm, bool keep_scores, bool keep_result, LayerCache<T>& lc) {
  const int B = dm.B, Tl = dm.Tl, H = dm.H, D = dm.D, Dh = dm.Dh;
  lc.resid_pre.ensure({B, Tl, D});
  lc.q.ensure({H, B, Tl, Dh});
  lc.k.ensure({H, B, Tl, Dh});
  lc.v.ensure({H, B, Tl, Dh});
  if (c.smeared_keys) lc.k_unsmeared.ensure({H, B, Tl, Dh});
  else lc.k_unsmeared = Tensor<T>();
  if (keep_scores) lc.attn_scores.ensure({B, H, Tl, Tl});
  else lc.attn_scores = Tensor<T>();
  // The pattern's upper triangle is zero and nothing writes it: zero it only when the buffer
  // is new (or reshaped), then write rows up to the diagonal.
  if (!lc.pattern.has_shape({B, H, Tl, Tl})) {
    lc.pattern.ensure({B, H, Tl, Tl});
    lc.pattern.zero();
  }
  lc.z.ensure({H, B, Tl, Dh});
  if (keep_result) lc.result.ensure({H, B, Tl, D});
  else lc.result = Tensor<T>();
  lc.attn_out.ensure({B, Tl, D});
  lc.resid_post.ensure({B, Tl, D});
  const bool norm = c.normalization != Norm::None, mlp = c.d_mlp > 0;
  const auto keep = [](bool on, Tensor<T>& t, std::initializer_list<int> shape) {
    if (on) t.ensure(shape);
    else t = Tensor<T>();
  };
  keep(norm, lc.ln1_scale, {B, Tl});
  keep(norm, lc.ln1_out, {B, Tl, D});
  keep(mlp, lc.resid_mid, {B, Tl, D});
  keep(mlp && norm, lc.ln2_scale, {B, Tl});
  keep(mlp && norm, lc.ln2_out, {B, Tl, D});
  keep(mlp, lc.mlp_pre, {B, Tl, c.d_mlp});
  keep(mlp, lc.mlp_post, {B, Tl, c.d_mlp});
  keep(mlp, lc.mlp_out, {B, Tl, D});
}

// v_in = ln1(resid)  blocks.l.ln1.hook_normalized [B, T, D]  (resid itself without normalization)
// Shortformer: positions enter only the inputs of Q and K, after ln1 (TransformerLens
// transformer_block.py).  qk_in = v_in + pos  [N, D]
template <class T>
void attn_input_forward(const Config& c, const Dims& dm, const LayerParams<T>& w, const ActivationCache<T>& cache,
                        Stream<T>& st, LayerCache<T>& lc, Workspace<T>& ws) {
  st.v_in = st.resid->data();
  if (c.normalization != Norm::None) {
    const bool ln = c.normalization == Norm::LN;
    layer_norm_forward(st.resid->data(), dm.R, dm.D, ln ? w.ln1_w.ptr() : nullptr, ln ? w.ln1_b.ptr() : nullptr,
                       lc.ln1_scale.ptr() + dm.P0, lc.ln1_out.ptr() + dm.off(dm.D));
    st.v_in = lc.ln1_out.ptr() + dm.off(dm.D);
  }
  st.qk_in = st.v_in;
  if (c.pos_embed == PosEmbed::Shortformer && st.has_pos) {
    const int Tr = dm.Tl - dm.P0;
    add_positions(CMapM<T>(st.v_in, dm.R, dm.D), cache.pos_embed.mat().bottomRows(Tr), dm.B, Tr, ws.qk_in);
    st.qk_in = ws.qk_in.data();
  }
}

// q = qk_in W_Q + b_Q, k = qk_in W_K + b_K, v = v_in W_V + b_V   hook_q/k/v [H, B, T, Dh]
// (k goes to hook_k_unsmeared when keys are smeared). Without a path cut, one product per input
// computes every head at once, written straight into the per-head layout; with one, each head
// reads its own stream.
template <class T>
void qkv_forward(const Config& c, const Dims& dm, const LayerParams<T>& w, const Stream<T>& st, LayerCache<T>& lc,
                 Workspace<T>& ws) {
  const int N = dm.R, H = dm.H, D = dm.D, Dh = dm.Dh, HDh = dm.HDh;  // rows P0.. (all, without an intervention's cut)
  Tensor<T>& k_out = c.smeared_keys ? lc.k_unsmeared : lc.k;
  if (st.head_in.empty() && N <= kFewRows) {
    // A few rows (an incremental pass's new positions): each head's products straight from W_Q,
    // W_K and W_V. Copying them side by side (3 MB at d_model 512) cost more than the products;
    // each entry is the same sum either way, so the bits are the same.
    const Tensor<T>* mats[3] = {&w.W_Q, &w.W_K, &w.W_V};
    T* outs[3] = {lc.q.ptr(), k_out.ptr(), lc.v.ptr()};
    for (int m = 0; m < 3; ++m)
      for (int h = 0; h < H; ++h)
        mm(Op::N, Op::N, N, Dh, D, T(1), m < 2 ? st.qk_in : st.v_in, D, mats[m]->ptr() + static_cast<std::size_t>(h) * D * Dh, Dh,
           T(0), outs[m] + h * dm.NDh + dm.off(Dh), Dh);
  } else if (st.head_in.empty()) {
    concat_qkv(w, H, D, Dh, ws.wcat);
    T* outs[3] = {lc.q.ptr(), k_out.ptr(), lc.v.ptr()};
    ws.blocks.resize(3 * H);
    for (int m = 0; m < 3; ++m)
      for (int h = 0; h < H; ++h) ws.blocks[m * H + h] = outs[m] + h * dm.NDh + dm.off(Dh);
    if (st.qk_in == st.v_in) {  // one product for q, k and v
      mm(Op::N, Op::N, N, 3 * HDh, D, T(1), st.v_in, D, ws.wcat.data(), 3 * HDh, T(0), nullptr, Dh, Causal::None,
         Dh, 0, ws.blocks.data());
    } else {  // q and k read the positions, v does not
      mm(Op::N, Op::N, N, 2 * HDh, D, T(1), st.qk_in, D, ws.wcat.data(), 3 * HDh, T(0), nullptr, Dh,
         Causal::None, Dh, 0, ws.blocks.data());
      mm(Op::N, Op::N, N, HDh, D, T(1), st.v_in, D, ws.wcat.data() + 2 * HDh, 3 * HDh, T(0), nullptr, Dh,
         Causal::None, Dh, 0, ws.blocks.data() + 2 * H);
    }
  } else {
    const auto in = [&](int slot) { return CMapM<T>(st.head_in[slot], N, D); };
    for (int h = 0; h < H; ++h) {
      k_out.slice(h).noalias() = in(H + h) * w.W_K.slice(h);
      lc.q.slice(h).noalias() = in(h) * w.W_Q.slice(h);
      lc.v.slice(h).noalias() = in(2 * H + h) * w.W_V.slice(h);
    }
  }
  if (c.use_bias)
    for (int h = 0; h < H; ++h) {
      lc.q.slice(h).bottomRows(N).rowwise() += w.b_Q.row(h);
      k_out.slice(h).bottomRows(N).rowwise() += w.b_K.row(h);
      lc.v.slice(h).bottomRows(N).rowwise() += w.b_V.row(h);
    }
}

// k_j <- s k_j + (1 - s) k_{j-1} for j > 0, s = sigmoid(alpha)   hook_k [H, B, T, Dh]
template <class T>
void smear_keys_forward(const Config& c, const Dims& dm, const LayerParams<T>& w, LayerCache<T>& lc) {
  if (!c.smeared_keys) return;
  const int B = dm.B, Tl = dm.Tl;
  for (int h = 0; h < dm.H; ++h) {
    auto k = lc.k.slice(h);
    auto kr = lc.k_unsmeared.slice(h);
    const T s = sigmoid(w.smear_alpha.data[h]);
    for (int b = 0; b < B; ++b) {
      if (dm.P0 == 0) k.row(b * Tl) = kr.row(b * Tl);
      for (int t = std::max(dm.P0, 1); t < Tl; ++t) k.row(b * Tl + t) = s * kr.row(b * Tl + t) + (T(1) - s) * kr.row(b * Tl + t - 1);
    }
  }
}

// scores = q k^T / sqrt(d_head) with the causal mask   hook_attn_scores [B, H, T, T] (if kept)
// pattern = softmax(scores)                            hook_pattern     [B, H, T, T]
// z = pattern v                                        hook_z           [H, B, T, Dh]
// An incremental pass computes the query rows P0.. against every key; its pattern rows are
// written whole (zeros past the diagonal), a full pass's up to the diagonal (the rest stays zero).
template <class T>
void attention_forward(const Dims& dm, bool keep_scores, LayerCache<T>& lc, Workspace<T>& ws) {
  const int Tl = dm.Tl, Dh = dm.Dh, P0 = dm.P0, rows = Tl - P0;
  const T scale = T(1) / std::sqrt(T(Dh));
  const Causal lower_c = P0 == 0 ? Causal::LowerC : Causal::None, lower_a = P0 == 0 ? Causal::LowerA : Causal::None;
  if (!keep_scores) ws.S.resize(rows, Tl);  // one head's scores at a time
  for (int h = 0; h < dm.H; ++h)
    for (int b = 0; b < dm.B; ++b) {
      const std::size_t bh = static_cast<std::size_t>(b) * dm.H + h;
      T* S = keep_scores ? lc.attn_scores.ptr() + bh * dm.TT : ws.S.data();  // [rows, T]
      T* P = lc.pattern.ptr() + bh * dm.TT + dm.off(Tl);                     // [rows, T]
      const std::size_t row0 = dm.head_row0(h, b);
      // scores = q k^T / sqrt(d_head), causal mask (a full pass computes only the lower triangle)
      mm(Op::N, Op::T, rows, Tl, Dh, scale, lc.q.ptr() + row0 + dm.off(Dh), Dh, lc.k.ptr() + row0, Dh, T(0), S, Tl, lower_c);
      for (int i = 0; i < rows; ++i) {
        T* Si = S + static_cast<std::size_t>(i) * Tl;
        T* Pi = P + static_cast<std::size_t>(i) * Tl;
        const int n = P0 + i + 1;  // keys this query sees
        if (keep_scores) std::fill(Si + n, Si + Tl, -std::numeric_limits<T>::infinity());
        // pattern = softmax(scores)
        softmax_row(Si, Pi, n, P0 == 0 ? n : Tl);
      }
      // z = pattern v (the pattern is zero above the diagonal)
      mm(Op::N, Op::N, rows, Dh, Tl, T(1), P, Tl, lc.v.ptr() + row0, Dh, T(0), lc.z.ptr() + row0 + dm.off(Dh), Dh, lower_a);
    }
}

// result_h = z_h W_O[h]   hook_result [H, B, T, D]
// (without hook_result: attn_out = sum_h z_h W_O[h], summed in place, head 0 first)
template <class T>
void result_forward(const Dims& dm, const LayerParams<T>& w, bool keep_result, LayerCache<T>& lc) {
  const int N = dm.N, D = dm.D, Dh = dm.Dh;
  for (int h = 0; h < dm.H; ++h) {
    const T* z = lc.z.ptr() + h * dm.NDh + dm.off(Dh);                   // [R, Dh]
    const T* WO = w.W_O.ptr() + static_cast<std::size_t>(h) * Dh * D;    // [Dh, D]
    if (keep_result)
      mm(Op::N, Op::N, dm.R, D, Dh, T(1), z, Dh, WO, D, T(0), lc.result.ptr() + static_cast<std::size_t>(h) * N * D + dm.off(D), D);
    else
      mm(Op::N, Op::N, dm.R, D, Dh, T(1), z, Dh, WO, D, T(h == 0 ? 0 : 1), lc.attn_out.ptr() + dm.off(D), D);
  }
}

// attn_out = sum_h result_h + b_O   hook_attn_out [B, T, D]
// resid_post = resid_pre + attn_out hook_resid_post [B, T, D] (hook_resid_mid with an MLP; the
// stream moves on), in one pass
template <class T>
void attn_out_forward(const Config& c, const Dims& dm, const LayerParams<T>& w, bool keep_result, MatRM<T>& resid,
                      LayerCache<T>& lc) {
  const int H = dm.H, D = dm.D;
  const std::size_t ND = static_cast<std::size_t>(dm.N) * D, off = dm.off(D);
  const T* res = lc.result.ptr();
  T* ao = lc.attn_out.ptr();
  T* rs = resid.data() - off;  // the stream holds rows P0..
  T* post = c.d_mlp > 0 ? lc.resid_mid.ptr() : lc.resid_post.ptr();
  if (keep_result) {
    for (std::size_t i = off; i < ND; ++i) {
      T a = res[i];
      for (int h = 1; h < H; ++h) a += res[h * ND + i];
      ao[i] = a;
    }
  }
  for (std::size_t i = off; i < ND; ++i) {
    const T a = c.use_bias ? ao[i] + w.b_O.data[i % D] : ao[i];
    ao[i] = a;
    post[i] = rs[i] += a;
  }
}

// (d_mlp > 0) x = ln2(resid_mid)                  blocks.l.ln2.hook_normalized [B, T, D]
// pre = x W_in + b_in                             blocks.l.mlp.hook_pre   [B, T, M]
// post = act(pre)                                 blocks.l.mlp.hook_post  [B, T, M]
// mlp_out = post W_out + b_out                    blocks.l.hook_mlp_out   [B, T, D]
// resid_post = resid_mid + mlp_out                blocks.l.hook_resid_post (the stream moves on)
template <class T>
void mlp_forward(const Config& c, const Dims& dm, int l, const LayerParams<T>& w, const Intervention& iv, Stream<T>& st,
                 ActivationCache<T>& cache) {
  if (c.d_mlp == 0) return;
  LayerCache<T>& lc = cache.layers[l];
  MatRM<T>& resid = *st.resid;
  const int N = dm.R, D = dm.D, M = c.d_mlp;  // rows P0..
  const T* x = lc.resid_mid.ptr() + dm.off(D);
  if (c.normalization != Norm::None) {
    const bool ln = c.normalization == Norm::LN;
    layer_norm_forward(x, N, D, ln ? w.ln2_w.ptr() : nullptr, ln ? w.ln2_b.ptr() : nullptr, lc.ln2_scale.ptr() + dm.P0,
                       lc.ln2_out.ptr() + dm.off(D));
    x = lc.ln2_out.ptr() + dm.off(D);
  }
  mm(Op::N, Op::N, N, M, D, T(1), x, D, w.W_in.ptr(), M, T(0), lc.mlp_pre.ptr() + dm.off(M), M);
  lc.mlp_pre.mat().bottomRows(N).rowwise() += w.b_in.vec();
  const std::size_t NM = static_cast<std::size_t>(dm.N) * M;
  const T* pre = lc.mlp_pre.ptr();
  T* post = lc.mlp_post.ptr();
  for (std::size_t i = dm.off(M); i < NM; ++i) post[i] = activation(c.act_fn, pre[i]);
  mm(Op::N, Op::N, N, D, M, T(1), post + dm.off(M), M, w.W_out.ptr(), D, T(0), lc.mlp_out.ptr() + dm.off(D), D);
  lc.mlp_out.mat().bottomRows(N).rowwise() += w.b_out.vec();
  apply_intervention_at(Hook::MlpOut, l, c, &w, iv, dm, st, cache);
  resid += lc.mlp_out.mat().bottomRows(N);
  lc.resid_post.mat().bottomRows(N) = resid;
}

// A block's outputs from its heads' z on: hook_result -> hook_resid_post, the stream (holding
// hook_resid_pre) moving on in st.resid. forward_from_layer starts a pass here.
template <class T>
void layer_outputs_forward(const Config& c, const Dims& dm, int l, const LayerParams<T>& w, const Intervention& iv,
                           bool keep_result, Stream<T>& st, ActivationCache<T>& cache) {
  LayerCache<T>& lc = cache.layers[l];
  result_forward(dm, w, keep_result, lc);
  apply_intervention_at(Hook::Result, l, c, &w, iv, dm, st, cache);
  attn_out_forward(c, dm, w, keep_result, *st.resid, lc);
  mlp_forward(c, dm, l, w, iv, st, cache);
}

// One block: hook_resid_pre -> hook_resid_post, the stream moving on in st.resid.
template <class T>
void layer_forward(const Config& c, const Dims& dm, int l, const LayerParams<T>& w, const Intervention& iv,
                   bool keep_result, Stream<T>& st, ActivationCache<T>& cache) {
  LayerCache<T>& lc = cache.layers[l];
  Workspace<T>& ws = cache.work;
  layer_buffers(c, dm, cache.keep_scores, keep_result, lc);
  lc.resid_pre.mat().bottomRows(dm.R) = *st.resid;
  attn_input_forward(c, dm, w, cache, st, lc, ws);
  apply_intervention_at(Hook::AttnIn, l, c, &w, iv, dm, st, cache);
  qkv_forward(c, dm, w, st, lc, ws);
  smear_keys_forward(c, dm, w, lc);
  attention_forward(dm, cache.keep_scores, lc, ws);
  layer_outputs_forward(c, dm, l, w, iv, keep_result, st, cache);
}

// x = ln_final(resid)  ln_final.hook_normalized [B, T, D]  (resid itself without normalization)
// logits = x W_U + b_U   [B, T, V]  (resid_final [B, T, D] keeps the stream before ln_final)
template <class T>
void unembed_forward(const Params<T>& p, const Dims& dm, const MatRM<T>& resid, ActivationCache<T>& cache) {
  const Config& c = p.cfg;
  const int N = dm.R, D = dm.D, V = dm.V;  // rows P0.. (x below points at row P0)
  cache.resid_final.ensure({dm.B, dm.Tl, D});
  cache.resid_final.mat().bottomRows(N) = resid;
  const T* x = resid.data();
  if (c.normalization != Norm::None) {
    const bool ln = c.normalization == Norm::LN;
    cache.ln_final_scale.ensure({dm.B, dm.Tl});
    cache.ln_final_out.ensure({dm.B, dm.Tl, D});
    layer_norm_forward(x, N, D, ln ? p.ln_final_w.ptr() : nullptr, ln ? p.ln_final_b.ptr() : nullptr,
                       cache.ln_final_scale.ptr() + dm.P0, cache.ln_final_out.ptr() + dm.off(D));
    x = cache.ln_final_out.ptr() + dm.off(D);
  } else {
    cache.ln_final_scale = Tensor<T>();
    cache.ln_final_out = Tensor<T>();
  }
  if (cache.skip_logits) {
    cache.logits = Tensor<T>();  // computed where read (unembed_rows)
    return;
  }
  if (cache.last_logits_only) {
    // logits[b, 0] = x[b, Tl-1] W_U + b_U: each row's last position only.
    MatRM<T>& last = cache.work.dx;
    last.resize(dm.B, D);
    for (int b = 0; b < dm.B; ++b)
      std::copy(x + (static_cast<std::size_t>(b) * dm.Tl + dm.Tl - 1) * D, x + (static_cast<std::size_t>(b) * dm.Tl + dm.Tl) * D,
                last.data() + static_cast<std::size_t>(b) * D);
    cache.logits.ensure({dm.B, 1, V});
    mm(Op::N, Op::N, dm.B, V, D, T(1), last.data(), D, p.W_U.ptr(), V, T(0), cache.logits.ptr(), V);
  } else {
    cache.logits.ensure({dm.B, dm.Tl, V});
    mm(Op::N, Op::N, N, V, D, T(1), x, D, p.W_U.ptr(), V, T(0), cache.logits.ptr() + dm.off(V), V);
  }
  if (p.cfg.use_bias) cache.logits.mat().bottomRows(cache.last_logits_only ? dm.B : N).rowwise() += p.b_U.vec();
}

// The stages in order over the rows dm says (all, or positions P0.. of one sequence).
template <class T>
void forward_rows(const Params<T>& p, const std::vector<int>& tokens, const Dims& dm, ActivationCache<T>& cache,
                  const Intervention& iv) {
  const Config& c = p.cfg;
  cache.n_batch = dm.B;
  cache.n_pos = dm.Tl;
  cache.tokens = tokens;
  cache.intervened = !iv.empty();
  // Cuts read earlier heads' results and ablations replace them: keep them then.
  const bool keep_result = cache.keep_result || !iv.empty();

  Stream<T> st;
  st.resid = &cache.work.resid;
  st.has_pos = c.pos_embed != PosEmbed::None;
  embed_forward(p, tokens, dm, cache);
  apply_intervention_at<T>(Hook::PosEmbed, -1, c, nullptr, iv, dm, st, cache);
  residual_forward(c, dm, cache, st);
  cache.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) layer_forward(c, dm, l, p.blocks[l], iv, keep_result, st, cache);
  unembed_forward(p, dm, *st.resid, cache);
}

// Layer `start` from its heads' outputs on (its attention as the cache holds it), then every later
// layer and the unembedding, over every row of a one-sequence pass (forward_from_layer).
template <class T>
void rows_from_layer(const Params<T>& p, const Dims& dm, int start, ActivationCache<T>& cache, const Intervention& iv) {
  const Config& c = p.cfg;
  cache.intervened = !iv.empty();
  Stream<T> st;
  st.resid = &cache.work.resid;
  st.has_pos = c.pos_embed != PosEmbed::None && !iv.remove_pos;
  LayerCache<T>& lc = cache.layers[start];
  *st.resid = lc.resid_pre.mat();
  lc.result.ensure({dm.H, dm.B, dm.Tl, dm.D});
  layer_outputs_forward(c, dm, start, p.blocks[start], iv, true, st, cache);
  for (int l = start + 1; l < c.n_layers; ++l) layer_forward(c, dm, l, p.blocks[l], iv, true, st, cache);
  unembed_forward(p, dm, *st.resid, cache);
}

// A [H, 1, T0, X] tensor (one sequence, each head's positions contiguous) laid out as
// [H, 1, T1, X], each head's first `keep` positions kept (the rest is overwritten later).
// Heads move in the order that never overwrites one not yet moved.
template <class T>
void relayout_heads(Tensor<T>& t, int H, int T0, int T1, int X, int keep) {
  if (T0 == T1) return;
  const std::size_t from = static_cast<std::size_t>(T0) * X, to = static_cast<std::size_t>(T1) * X, n = static_cast<std::size_t>(keep) * X;
  if (T1 > T0) t.data.resize(H * to);
  for (int i = 0; i < H; ++i) {
    const int h = T1 > T0 ? H - 1 - i : i;
    std::memmove(t.data.data() + h * to, t.data.data() + h * from, n * sizeof(T));
  }
  if (T1 <= T0) t.data.resize(H * to);
  t.shape = {H, 1, T1, X};
}

// The same for a [1, H, T0, T0] pattern: each head's first `keep` rows (zero past the diagonal
// and past `keep`) in a [T1, T1] block.
template <class T>
void relayout_pattern(Tensor<T>& t, int H, int T0, int T1, int keep) {
  if (T0 == T1) return;  // rows from `keep` on are written whole by the pass
  const std::size_t n0 = static_cast<std::size_t>(T0), n1 = static_cast<std::size_t>(T1);
  if (T1 > T0) t.data.resize(H * n1 * n1);
  for (int i = 0; i < H * keep; ++i) {
    const int r = T1 > T0 ? H * keep - 1 - i : i, h = r / keep, row = r % keep;
    T* dst = t.data.data() + (h * n1 + row) * n1;
    std::memmove(dst, t.data.data() + (h * n0 + row) * n0, keep * sizeof(T));
    std::fill(dst + keep, dst + n1, T(0));
  }
  if (T1 <= T0) t.data.resize(H * n1 * n1);
  t.shape = {1, H, T1, T1};
}

}  // namespace

template <class T>
void forward(const Params<T>& p, const std::vector<int>& tokens, int B, int Tl, ActivationCache<T>& cache,
             const Intervention& iv) {
  check_forward_args(p.cfg, tokens, B, Tl, cache.skip_logits ? 0 : cache.last_logits_only ? 1 : -1, cache.keep_scores,
                     cache.keep_result || !iv.empty());
  check_intervention(p.cfg, iv, Tl);
  forward_rows(p, tokens, Dims(p.cfg, B, Tl), cache, iv);
}

template <class T>
void forward_from_layer(const Params<T>& p, ActivationCache<T>& cache, const Intervention& iv, int layer) {
  const Config& c = p.cfg;
  const int Tl = cache.n_pos;
  if (cache.n_batch != 1 || layer < 0 || layer >= c.n_layers || cache.layers.size() != static_cast<std::size_t>(c.n_layers) ||
      cache.keep_scores || cache.last_logits_only || !cache.layers[layer].z.has_shape({c.n_heads, 1, Tl, c.d_head}))
    throw std::logic_error("forward_from_layer: the cache holds no one-sequence pass to start from at layer " + std::to_string(layer));
  check_intervention(c, iv, Tl);
  rows_from_layer(p, Dims(c, 1, Tl), layer, cache, iv);
}

template <class T>
T unembed_entry(const Params<T>& p, const ActivationCache<T>& cache, int pos, int token) {
  const int D = p.cfg.d_model, V = p.cfg.d_vocab;
  if (cache.n_batch != 1 || pos < 0 || pos >= cache.n_pos || token < 0 || token >= V)
    throw std::logic_error("unembed_entry: outside the one-sequence pass or the vocabulary");
  const Tensor<T>& x = p.cfg.normalization != Norm::None ? cache.ln_final_out : cache.resid_final;
  T out = 0;  // the same sums as the row's entry: a [1, 1] product over the same k blocks
  mm(Op::N, Op::N, 1, 1, D, T(1), x.ptr() + static_cast<std::size_t>(pos) * D, D, p.W_U.ptr() + token, V, T(0), &out, 1);
  if (p.cfg.use_bias) out += p.b_U.data[token];
  return out;
}

template <class T>
void head_results(const Params<T>& p, const ActivationCache<T>& cache, int layer, T* out) {
  const Config& c = p.cfg;
  const LayerCache<T>& lc = cache.layers.at(layer);
  const int N = cache.n_batch * cache.n_pos, D = c.d_model, Dh = c.d_head;
  const std::size_t ND = static_cast<std::size_t>(N) * D;
  if (lc.result.size() == static_cast<std::size_t>(c.n_heads) * ND) {
    std::copy(lc.result.data.begin(), lc.result.data.end(), out);
    return;
  }
  for (int h = 0; h < c.n_heads; ++h)  // as result_forward writes hook_result
    mm(Op::N, Op::N, N, D, Dh, T(1), lc.z.ptr() + static_cast<std::size_t>(h) * N * Dh, Dh,
       p.blocks[layer].W_O.ptr() + static_cast<std::size_t>(h) * Dh * D, D, T(0), out + h * ND, D);
}

template <class T>
void unembed_block(const Params<T>& p, const ActivationCache<T>& cache, int from, int to, int v0, int v1, std::vector<T>& out) {
  const int D = p.cfg.d_model, V = p.cfg.d_vocab, n = v1 - v0;
  if (cache.n_batch != 1 || from < 0 || to > cache.n_pos || from > to || v0 < 0 || v1 > V || v0 > v1)
    throw std::logic_error("unembed_block: rows or columns outside the one-sequence pass");
  const Tensor<T>& x = p.cfg.normalization != Norm::None ? cache.ln_final_out : cache.resid_final;
  out.resize(static_cast<std::size_t>(to - from) * n);
  if (to == from || n == 0) return;
  mm(Op::N, Op::N, to - from, n, D, T(1), x.ptr() + static_cast<std::size_t>(from) * D, D, p.W_U.ptr() + v0, V, T(0), out.data(), n);
  if (p.cfg.use_bias)
    for (int r = 0; r < to - from; ++r)
      for (int v = 0; v < n; ++v) out[static_cast<std::size_t>(r) * n + v] += p.b_U.data[v0 + v];
}

template <class T>
void unembed_rows(const Params<T>& p, const ActivationCache<T>& cache, int from, int to, std::vector<T>& out) {
  unembed_block(p, cache, from, to, 0, p.cfg.d_vocab, out);
}

template <class T>
int forward_incremental(const Params<T>& p, const std::vector<int>& tokens, ActivationCache<T>& cache,
                        const Intervention& iv) {
  const Config& c = p.cfg;
  const int Tl = static_cast<int>(tokens.size()), T0 = cache.n_pos;
  // Each head's output kept by the earlier pass exactly when this one keeps it (always under an
  // intervention).
  const bool keep_result = cache.keep_result || !iv.empty();
  const bool reusable = cache.n_batch == 1 && T0 > 0 && cache.intervened == !iv.empty() && incremental_intervention(iv) &&
                        !cache.keep_scores && !cache.last_logits_only &&
                        cache.layers.size() == static_cast<std::size_t>(c.n_layers) &&
                        (cache.skip_logits || cache.logits.has_shape({1, T0, c.d_vocab})) &&
                        std::all_of(cache.layers.begin(), cache.layers.end(), [&](const LayerCache<T>& lc) {
                          return keep_result ? lc.result.has_shape({c.n_heads, 1, T0, c.d_model}) : lc.result.size() == 0;
                        });
  int f = 0;
  if (reusable)
    while (f < std::min(Tl, T0) && tokens[f] == cache.tokens[f]) ++f;
  f = std::min(f, Tl - 1);  // at least the last position is computed (its logits, after a cut)
  if (f <= 0) {
    forward(p, tokens, 1, Tl, cache, iv);
    return 0;
  }
  check_forward_args(c, tokens, 1, Tl, cache.skip_logits ? 0 : -1, cache.keep_scores, keep_result);
  check_intervention(c, iv, Tl);
  const int H = c.n_heads, Dh = c.d_head;
  for (auto& lc : cache.layers) {
    for (Tensor<T>* t : {&lc.q, &lc.k, &lc.v, &lc.z})
      relayout_heads(*t, H, T0, Tl, Dh, f);
    if (c.smeared_keys) relayout_heads(lc.k_unsmeared, H, T0, Tl, Dh, f);
    if (keep_result) relayout_heads(lc.result, H, T0, Tl, c.d_model, f);
    relayout_pattern(lc.pattern, H, T0, Tl, f);
  }
  forward_rows(p, tokens, Dims(c, 1, Tl, f), cache, iv);
  return f;
}

bool same_intervention(const Intervention& a, const Intervention& b) {
  const auto head = [](const HeadAblation& x, const HeadAblation& y) {
    return x.layer == y.layer && x.head == y.head && x.mean == y.mean && x.mean_value == y.mean_value && x.positions == y.positions;
  };
  const auto mlp = [](const MlpAblation& x, const MlpAblation& y) {
    return x.layer == y.layer && x.mean == y.mean && x.mean_value == y.mean_value && x.positions == y.positions;
  };
  const auto cut = [](const PathCut& x, const PathCut& y) {
    return x.src_layer == y.src_layer && x.src_head == y.src_head && x.dst_layer == y.dst_layer && x.dst_head == y.dst_head &&
           x.input == y.input;
  };
  if (a.empty() && b.empty()) return true;  // the kind and the reference change nothing then
  return std::equal(a.ablations.begin(), a.ablations.end(), b.ablations.begin(), b.ablations.end(), head) &&
         std::equal(a.mlp_ablations.begin(), a.mlp_ablations.end(), b.mlp_ablations.begin(), b.mlp_ablations.end(), mlp) &&
         std::equal(a.cuts.begin(), a.cuts.end(), b.cuts.begin(), b.cuts.end(), cut) && a.remove_pos == b.remove_pos &&
         a.ablation == b.ablation && a.resample_seed == b.resample_seed && a.reference == b.reference;
}

const char* ablation_name(Ablation a) {
  switch (a) {
    case Ablation::Zero: return "zero";
    case Ablation::Mean: return "mean";
    case Ablation::MeanAll: return "mean-all";
    case Ablation::Resample: return "resample";
  }
  return "?";
}

Ablation ablation_from_name(const std::string& name, const std::string& where) {
  for (Ablation a : {Ablation::Zero, Ablation::Mean, Ablation::MeanAll, Ablation::Resample})
    if (name == ablation_name(a)) return a;
  throw std::invalid_argument(where + " must be 'zero', 'mean', 'mean-all' or 'resample', got \"" + name.substr(0, 40) + "\"");
}

// Seed 001 (ablating composition paths): every head's clean output on the reference sequences.
template <class T>
std::shared_ptr<const AblationReference> ablation_reference(const Params<T>& p, const std::vector<int>& tokens, int B, int Tl) {
  const Config& c = p.cfg;
  if (B < 1 || Tl < 1 || tokens.size() != static_cast<std::size_t>(B) * Tl)
    throw std::invalid_argument("ablation reference: " + std::to_string(tokens.size()) + " token ids do not make a [" +
                                std::to_string(B) + ", " + std::to_string(Tl) + "] batch");
  auto ref = std::make_shared<AblationReference>();
  ref->B = B;
  ref->T = Tl;
  ref->tokens = tokens;
  const int D = c.d_model, K = c.n_layers * c.n_heads;
  const std::size_t row = static_cast<std::size_t>(Tl) * D;
  ref->result.assign(K, std::vector<float>(static_cast<std::size_t>(B) * row));
  std::vector<std::vector<double>> acc(K, std::vector<double>(row, 0.0));
  // The rows go through the forward pass in chunks whose activations stay within 32 MB, so the
  // reference costs its own size, not a whole batch's cache besides.
  const int chunk = std::max(1, std::min(B, static_cast<int>(32.0 * (1 << 20) / std::max(1.0, forward_bytes(c, 1, Tl)))));
  ActivationCache<T> cache;
  cache.keep_result = true;
  for (int b0 = 0; b0 < B; b0 += chunk) {
    const int nb = std::min(chunk, B - b0);
    const std::vector<int> part(tokens.begin() + static_cast<std::ptrdiff_t>(b0) * Tl,
                                tokens.begin() + static_cast<std::ptrdiff_t>(b0 + nb) * Tl);
    forward(p, part, nb, Tl, cache);
    for (int l = 0; l < c.n_layers; ++l)
      for (int h = 0; h < c.n_heads; ++h) {
        const int k = l * c.n_heads + h;
        auto r = cache.layers[l].result.slice(h);  // [nb*T, D]
        float* out = ref->result[k].data() + static_cast<std::size_t>(b0) * row;
        for (int b = 0; b < nb; ++b)
          for (int t = 0; t < Tl; ++t)
            for (int d = 0; d < D; ++d) {
              const T x = r(b * Tl + t, d);
              out[static_cast<std::size_t>(b) * row + static_cast<std::size_t>(t) * D + d] = static_cast<float>(x);
              acc[k][static_cast<std::size_t>(t) * D + d] += static_cast<double>(x);
            }
      }
  }
  for (int k = 0; k < K; ++k) {
    std::vector<float> mean(row), all(D);
    for (int d = 0; d < D; ++d) {
      double s = 0;
      for (int t = 0; t < Tl; ++t) {
        mean[static_cast<std::size_t>(t) * D + d] = static_cast<float>(acc[k][static_cast<std::size_t>(t) * D + d] / B);
        s += acc[k][static_cast<std::size_t>(t) * D + d];
      }
      all[d] = static_cast<float>(s / (static_cast<double>(B) * Tl));
    }
    ref->mean.push_back(std::move(mean));
    ref->mean_all.push_back(std::move(all));
  }
  return ref;
}

int resample_row(const AblationReference& ref, const int* tokens, int Tl, std::uint64_t seed) {
  if (ref.B < 1) throw std::invalid_argument("resample ablation: there are no reference sequences to draw from");
  std::uint64_t h = seed;
  for (int t = 0; t < Tl; ++t) h = Rng(h ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(tokens[t]))).next_u64();
  const int first = Rng(h).below(ref.B);
  const int n = std::min(Tl, ref.T);
  for (int i = 0; i < ref.B; ++i) {
    const int r = (first + i) % ref.B;
    if (!std::equal(tokens, tokens + n, ref.tokens.begin() + static_cast<std::size_t>(r) * ref.T)) return r;
  }
  return first;
}

template <class T>
void loss_from_logits(const ActivationCache<T>& cache, const Batch& batch, LossResult& r) {
  const int N = cache.n_batch * cache.n_pos;
  if (cache.last_logits_only) throw std::logic_error("loss: the forward pass computed only each row's last logits");
  if (batch.B != cache.n_batch || batch.T != cache.n_pos || batch.targets.size() != static_cast<std::size_t>(N) ||
      batch.mask.size() != static_cast<std::size_t>(N))
    throw std::invalid_argument("loss: the batch's targets and mask do not match the forward pass");
  const int V = cache.logits.shape.back();
  std::vector<T>& e = cache.work.row;  // scratch for the exponentials
  e.resize(V);
  r.per_token.assign(N, std::numeric_limits<float>::quiet_NaN());
  double total = 0, msum = 0;
  for (int n = 0; n < N; ++n) {
    int tgt = batch.targets[n];
    if (tgt < 0 || tgt >= V) {
      if (batch.mask[n] != 0)
        throw std::invalid_argument("loss: target " + std::to_string(tgt) + " at position " + std::to_string(n) +
                                    " is outside the vocabulary");
      continue;
    }
    const double ce = cross_entropy_row(cache.logits.ptr() + static_cast<std::size_t>(n) * V, V, tgt, e);
    r.per_token[n] = static_cast<float>(ce);
    total += batch.mask[n] * ce;
    msum += batch.mask[n];
  }
  if (batch.mask_total > 0) msum = batch.mask_total;
  r.loss = msum > 0 ? total / msum : 0.0;
}

template <class T>
void LogSumExp<T>::add(const T* x, int n, T* scratch) {
  const T m = max_of(x, n);
  if (!any) {
    max = m, sum = exp_shifted_sum(x, m, scratch, n), any = true;
    return;
  }
  const T top = std::max(max, m);
  sum = sum * std::exp(max - top) + exp_shifted_sum(x, top, scratch, n);
  max = top;
}

template <class T>
T LogSumExp<T>::value() const {
  return max + std::log(sum);
}

template <class T>
T log_sum_exp_row(const T* logits, int V, std::vector<T>& scratch) {
  scratch.resize(std::min(V, kLogitBlock));
  LogSumExp<T> f;
  for (int v0 = 0; v0 < V; v0 += kLogitBlock) f.add(logits + v0, std::min(kLogitBlock, V - v0), scratch.data());
  return f.value();
}

template <class T>
double cross_entropy_row(const T* logits, int V, int target, std::vector<T>& scratch) {
  return static_cast<double>(log_sum_exp_row(logits, V, scratch) - logits[target]);
}

template <class T>
LossResult loss_from_logits(const ActivationCache<T>& cache, const Batch& batch) {
  LossResult r;
  loss_from_logits(cache, batch, r);
  return r;
}

namespace {

// ---- Backward stages: each differentiates the forward stage of the same name ----

// loss = sum_n mask_n CE_n / sum mask ; dCE/dlogits = softmax - onehot(target)   dlogits [N, V]
template <class T>
void loss_backward(const Dims& dm, const ActivationCache<T>& cache, const Batch& batch, MatRM<T>& dlogits) {
  const int N = dm.N, V = dm.V;
  double msum = 0;
  for (float m : batch.mask) msum += m;
  if (batch.mask_total > 0) msum = batch.mask_total;
  dlogits.resize(N, V);
  for (int n = 0; n < N; ++n) {
    T* d = dlogits.data() + static_cast<std::size_t>(n) * V;
    if (msum <= 0 || batch.mask[n] == 0) {
      std::fill(d, d + V, T(0));
      continue;
    }
    const T* lg = cache.logits.ptr() + static_cast<std::size_t>(n) * V;
    const T mx = *std::max_element(lg, lg + V);
    const T w = static_cast<T>(batch.mask[n] / msum) / exp_shifted_sum(lg, mx, d, V);
    for (int j = 0; j < V; ++j) d[j] *= w;
    d[batch.targets[n]] -= static_cast<T>(batch.mask[n] / msum);
  }
}

// logits = x W_U + b_U : dW_U = x^T dlogits, db_U = sum_n dlogits, dx = dlogits W_U^T  [N, D]
// x = ln_final(resid) : dresid from dx (layer_norm_backward), and dln_final.w, .b
// (without normalization x is resid, and dresid = dx)
template <class T>
void unembed_backward(const Params<T>& p, const Dims& dm, const ActivationCache<T>& cache, const MatRM<T>& dlogits,
                      Params<T>& g, Workspace<T>& ws) {
  const Config& c = p.cfg;
  const int N = dm.N, D = dm.D, V = dm.V;
  const bool norm = c.normalization != Norm::None, ln = c.normalization == Norm::LN;
  const T* x = norm ? cache.ln_final_out.ptr() : cache.resid_final.ptr();
  mm(Op::T, Op::N, D, V, N, T(1), x, D, dlogits.data(), V, T(0), g.W_U.ptr(), V);
  if (c.use_bias) g.b_U.vec() = dlogits.colwise().sum();
  MatRM<T>& dx = norm ? ws.dx : ws.dresid;
  dx.resize(N, D);
  mm(Op::N, Op::T, N, D, V, T(1), dlogits.data(), V, p.W_U.ptr(), V, T(0), dx.data(), D);
  if (!norm) return;
  ws.dresid.setZero(N, D);
  layer_norm_backward(dx.data(), cache.resid_final.ptr(), cache.ln_final_scale.ptr(), ln ? p.ln_final_w.ptr() : nullptr,
                      N, D, ws.dresid.data(), ln ? g.ln_final_w.ptr() : nullptr, ln ? g.ln_final_b.ptr() : nullptr);
}

// mlp_out = post W_out + b_out : db_out = sum_n dmlp_out, dW_out = post^T dmlp_out, dpost = dmlp_out W_out^T
// post = act(pre) : dpre = dpost act'(pre)
// pre = x W_in + b_in : db_in = sum_n dpre, dW_in = x^T dpre, dx = dpre W_in^T
// x = ln2(resid_mid) : dresid_mid += layer_norm_backward(dx)  (x = resid_mid without normalization)
// resid_post = resid_mid + mlp_out : dmlp_out = dresid, and dresid flows on to resid_mid.
// On return, ws.dresid holds the gradient at hook_resid_mid.
template <class T>
void mlp_backward(const Config& c, const Dims& dm, const LayerParams<T>& w, const LayerCache<T>& lc, LayerParams<T>& gw,
                  Workspace<T>& ws) {
  if (c.d_mlp == 0) return;
  const int N = dm.N, D = dm.D, M = c.d_mlp;
  const bool norm = c.normalization != Norm::None, ln = c.normalization == Norm::LN;
  MatRM<T>& dresid = ws.dresid;  // [N, D] = dmlp_out
  gw.b_out.vec() = dresid.colwise().sum();
  mm(Op::T, Op::N, M, D, N, T(1), lc.mlp_post.ptr(), M, dresid.data(), D, T(0), gw.W_out.ptr(), D);
  MatRM<T>& dh = ws.dmlp;  // [N, M]
  dh.resize(N, M);
  mm(Op::N, Op::T, N, M, D, T(1), dresid.data(), D, w.W_out.ptr(), D, T(0), dh.data(), M);
  const T* pre = lc.mlp_pre.ptr();
  T* d = dh.data();
  const std::size_t NM = static_cast<std::size_t>(N) * M;
  for (std::size_t i = 0; i < NM; ++i) d[i] *= activation_grad(c.act_fn, pre[i]);
  gw.b_in.vec() = dh.colwise().sum();
  const T* x = norm ? lc.ln2_out.ptr() : lc.resid_mid.ptr();
  mm(Op::T, Op::N, D, M, N, T(1), x, D, dh.data(), M, T(0), gw.W_in.ptr(), M);
  if (!norm) {
    mm(Op::N, Op::T, N, D, M, T(1), dh.data(), M, w.W_in.ptr(), M, T(1), dresid.data(), D);
    return;
  }
  MatRM<T>& dx = ws.dx;
  dx.resize(N, D);
  mm(Op::N, Op::T, N, D, M, T(1), dh.data(), M, w.W_in.ptr(), M, T(0), dx.data(), D);
  layer_norm_backward(dx.data(), lc.resid_mid.ptr(), lc.ln2_scale.ptr(), ln ? w.ln2_w.ptr() : nullptr, N, D,
                      dresid.data(), ln ? gw.ln2_w.ptr() : nullptr, ln ? gw.ln2_b.ptr() : nullptr);
}

// attn_out = sum_h result_h + b_O : db_O = sum_n dattn_out
// (resid_post = resid_pre + attn_out: dattn_out = dresid, and dresid flows on to resid_pre.)
template <class T>
void attn_out_backward(const Config& c, const MatRM<T>& dao, LayerParams<T>& gw) {
  if (c.use_bias) gw.b_O.vec() = dao.colwise().sum();
}

// result_h = z_h W_O[h] : dz = dattn_out W_O^T for every head at once (W_O is [H*Dh, D]
// row-major), into dz [N, H*Dh] ; dW_O[h] = z_h^T dattn_out, one head at a time.
template <class T>
void result_backward(const Dims& dm, const LayerParams<T>& w, const LayerCache<T>& lc, const MatRM<T>& dao, T* dz,
                     LayerParams<T>& gw) {
  const int N = dm.N, D = dm.D, Dh = dm.Dh, HDh = dm.HDh;
  mm(Op::N, Op::T, N, HDh, D, T(1), dao.data(), D, w.W_O.ptr(), D, T(0), dz, HDh);
  for (int h = 0; h < dm.H; ++h)
    mm(Op::T, Op::N, Dh, D, N, T(1), lc.z.ptr() + h * dm.NDh, Dh, dao.data(), D, T(0),
       gw.W_O.ptr() + static_cast<std::size_t>(h) * Dh * D, D);
}

// From dz [N, H*Dh] to dq | dk | dv, written into dqkv [N, 3*H*Dh] (row stride ldq).
template <class T>
void attention_backward(const Dims& dm, const LayerCache<T>& lc, const T* dz, T* dqkv, Workspace<T>& ws) {
  const int Tl = dm.Tl, Dh = dm.Dh, HDh = dm.HDh, ldq = 3 * HDh;
  const T scale = T(1) / std::sqrt(T(Dh));
  for (int h = 0; h < dm.H; ++h) {
    T* dq = dqkv + h * Dh;
    T* dk = dqkv + HDh + h * Dh;
    T* dv = dqkv + 2 * HDh + h * Dh;
    for (int b = 0; b < dm.B; ++b) {
      const std::size_t bh = static_cast<std::size_t>(b) * dm.H + h;
      const T* P = lc.pattern.ptr() + bh * dm.TT;  // [T, T]
      const std::size_t row0 = dm.head_row0(h, b);
      const std::size_t r0 = static_cast<std::size_t>(b) * Tl;
      const T* dzb = dz + r0 * HDh + h * Dh;
      T* dP = ws.dP.data();  // [T, T]
      T* dS = ws.dS.data();  // [T, T]
      // z = pattern v
      mm(Op::N, Op::T, Tl, Tl, Dh, T(1), dzb, HDh, lc.v.ptr() + row0, Dh, T(0), dP, Tl, Causal::LowerC);
      mm(Op::T, Op::N, Tl, Dh, Tl, T(1), P, Tl, dzb, HDh, T(0), dv + r0 * ldq, ldq, Causal::UpperA);
      // pattern = softmax(scores): dS = P * (dP - sum_j P dP)
      for (int i = 0; i < Tl; ++i) {
        const std::size_t o = static_cast<std::size_t>(i) * Tl;
        softmax_grad_row(P + o, dP + o, dS + o, i + 1, i + 1);
      }
      // scores = q k^T / sqrt(d_head)
      mm(Op::N, Op::N, Tl, Dh, Tl, scale, dS, Tl, lc.k.ptr() + row0, Dh, T(0), dq + r0 * ldq, ldq, Causal::LowerA);
      mm(Op::T, Op::N, Tl, Dh, Tl, scale, dS, Tl, lc.q.ptr() + row0, Dh, T(0), dk + r0 * ldq, ldq, Causal::UpperA);
    }
  }
}

// k_j = s kr_j + (1 - s) kr_{j-1} (j > 0), k_0 = kr_0 : dk in dqkv becomes dkr, and dalpha.
template <class T>
void smear_keys_backward(const Config& c, const Dims& dm, const LayerParams<T>& w, const LayerCache<T>& lc, T* dqkv,
                         LayerParams<T>& gw, Workspace<T>& ws) {
  if (!c.smeared_keys) return;
  const int B = dm.B, Tl = dm.Tl, N = dm.N, Dh = dm.Dh, HDh = dm.HDh, ldq = 3 * HDh;
  using Strided = Eigen::Map<MatRM<T>, 0, Eigen::OuterStride<>>;
  for (int h = 0; h < dm.H; ++h) {
    auto kr = lc.k_unsmeared.slice(h);
    const T s = sigmoid(w.smear_alpha.data[h]);
    T ds = 0;
    Strided dkm(dqkv + HDh + h * Dh, N, Dh, Eigen::OuterStride<>(ldq));
    MatRM<T>& dkr = ws.dkr;
    dkr.setZero(N, Dh);
    for (int b = 0; b < B; ++b) {
      dkr.row(b * Tl) += dkm.row(b * Tl);
      for (int t = 1; t < Tl; ++t) {
        int n = b * Tl + t;
        dkr.row(n) += s * dkm.row(n);
        dkr.row(n - 1) += (T(1) - s) * dkm.row(n);
        ds += dkm.row(n).dot(kr.row(n) - kr.row(n - 1));
      }
    }
    // s = sigmoid(alpha): ds/dalpha = s (1 - s)
    gw.smear_alpha.data[h] = ds * s * (T(1) - s);
    dkm = dkr;
  }
}

// q = qk_in W_Q + b_Q ; k = qk_in W_K + b_K ; v = v_in W_V + b_V, for every head at once:
// db = sum_n d(q|k|v) ; dW = x^T d(q|k|v), written into each head's [D, Dh] block ;
// dv_in = d(q|k|v) [W_Q|W_K|W_V]^T, the shortformer's dqk_in also reaching dpos ;
// v_in = ln1(resid_pre) : dresid_pre = dresid + layer_norm_backward(dv_in) (v_in = resid_pre
// without normalization). On return, dresid holds the gradient at hook_resid_pre.
template <class T>
void qkv_backward(const Config& c, const Dims& dm, const LayerParams<T>& w, const LayerCache<T>& lc, const T* v_in,
                  const T* qk_in, const T* dqkv, LayerParams<T>& gw, Workspace<T>& ws) {
  const int B = dm.B, Tl = dm.Tl, N = dm.N, D = dm.D, Dh = dm.Dh, HDh = dm.HDh, ldq = 3 * HDh;
  if (c.use_bias) {
    using CStrided = Eigen::Map<const MatRM<T>, 0, Eigen::OuterStride<>>;
    for (int h = 0; h < dm.H; ++h) {
      gw.b_Q.row(h) = CStrided(dqkv + h * Dh, N, Dh, Eigen::OuterStride<>(ldq)).colwise().sum();
      gw.b_K.row(h) = CStrided(dqkv + HDh + h * Dh, N, Dh, Eigen::OuterStride<>(ldq)).colwise().sum();
      gw.b_V.row(h) = CStrided(dqkv + 2 * HDh + h * Dh, N, Dh, Eigen::OuterStride<>(ldq)).colwise().sum();
    }
  }
  const std::size_t wstride = static_cast<std::size_t>(D) * Dh;
  mm(Op::T, Op::N, D, HDh, N, T(1), qk_in, D, dqkv, ldq, T(0), gw.W_Q.ptr(), Dh, Causal::None, Dh, wstride);
  mm(Op::T, Op::N, D, HDh, N, T(1), qk_in, D, dqkv + HDh, ldq, T(0), gw.W_K.ptr(), Dh, Causal::None, Dh, wstride);
  mm(Op::T, Op::N, D, HDh, N, T(1), v_in, D, dqkv + 2 * HDh, ldq, T(0), gw.W_V.ptr(), Dh, Causal::None, Dh, wstride);
  concat_qkv(w, dm.H, D, Dh, ws.wcat);
  MatRM<T>& dresid_pre = ws.dresid_pre;  // [N, D]
  dresid_pre = ws.dresid;
  // The gradient at the attention's input: added straight to dresid_pre without normalization,
  // through ln1 (ws.dx) with it.
  const bool norm = c.normalization != Norm::None, ln = c.normalization == Norm::LN;
  MatRM<T>& din = norm ? ws.dx : dresid_pre;
  const T beta = norm ? T(0) : T(1);
  if (norm) din.resize(N, D);
  if (c.pos_embed != PosEmbed::Shortformer) {
    mm(Op::N, Op::T, N, D, 3 * HDh, T(1), dqkv, ldq, ws.wcat.data(), ldq, beta, din.data(), D);
  } else {
    // qk_in = v_in + pos
    MatRM<T>& dqk_in = ws.dqk_in;  // [N, D]
    dqk_in.resize(N, D);
    mm(Op::N, Op::T, N, D, 2 * HDh, T(1), dqkv, ldq, ws.wcat.data(), ldq, T(0), dqk_in.data(), D);
    mm(Op::N, Op::T, N, D, HDh, T(1), dqkv + 2 * HDh, ldq, ws.wcat.data() + 2 * HDh, ldq, beta, din.data(), D);
    din += dqk_in;
    for (int b = 0; b < B; ++b) ws.dpos += dqk_in.middleRows(b * Tl, Tl);
  }
  if (norm)
    layer_norm_backward(din.data(), lc.resid_pre.ptr(), lc.ln1_scale.ptr(), ln ? w.ln1_w.ptr() : nullptr, N, D,
                        dresid_pre.data(), ln ? gw.ln1_w.ptr() : nullptr, ln ? gw.ln1_b.ptr() : nullptr);
  ws.dresid.swap(dresid_pre);
}

// One block backwards: ws.dresid goes from hook_resid_post's gradient to hook_resid_pre's.
template <class T>
void layer_backward(const Config& c, const Dims& dm, const LayerParams<T>& w, const LayerCache<T>& lc,
                    const ActivationCache<T>& cache, LayerParams<T>& gw, Workspace<T>& ws) {
  mlp_backward(c, dm, w, lc, gw, ws);
  const MatRM<T>& dao = ws.dresid;  // resid_post (resid_mid) = resid_pre + attn_out: dattn_out = dresid
  T* dz = ws.dz.data();
  T* dqkv = ws.dqkv.data();
  // v_in = ln1(resid_pre) and qk_in = v_in + pos (shortformer), as attn_input_forward computed them
  const T* v_in = c.normalization != Norm::None ? lc.ln1_out.ptr() : lc.resid_pre.ptr();
  const T* qk_in = v_in;
  if (c.pos_embed == PosEmbed::Shortformer) {
    add_positions(CMapM<T>(v_in, dm.N, dm.D), cache.pos_embed.mat(), dm.B, dm.Tl, ws.qk_in);
    qk_in = ws.qk_in.data();
  }
  attn_out_backward(c, dao, gw);
  result_backward(dm, w, lc, dao, dz, gw);
  attention_backward(dm, lc, dz, dqkv, ws);
  smear_keys_backward(c, dm, w, lc, dqkv, gw, ws);
  qkv_backward(c, dm, w, lc, v_in, qk_in, dqkv, gw, ws);
}

// resid_0 = embed (+ pos for standard) ; hook_pos_embed = W_pos[0:T] ; hook_embed = W_E[tokens]
template <class T>
void embed_backward(const Config& c, const Dims& dm, const ActivationCache<T>& cache, Params<T>& g, Workspace<T>& ws) {
  const int B = dm.B, Tl = dm.Tl;
  const MatRM<T>& dresid = ws.dresid;
  MatRM<T>& dpos_total = ws.dpos;  // [T, D]
  if (c.pos_embed == PosEmbed::Standard)
    for (int b = 0; b < B; ++b) dpos_total += dresid.middleRows(b * Tl, Tl);
  if (c.pos_embed != PosEmbed::None) g.W_pos.mat().topRows(Tl) += dpos_total;
  auto gWE = g.W_E.mat();
  for (int n = 0; n < dm.N; ++n) gWE.row(cache.tokens[n]) += dresid.row(n);
}

}  // namespace

template <class T>
void backward(const Params<T>& p, const ActivationCache<T>& cache, const Batch& batch, Params<T>& g) {
  const Config& c = p.cfg;
  if (cache.intervened) throw std::logic_error("backward: the cache came from a forward pass with an intervention");
  if (cache.last_logits_only) throw std::logic_error("backward: the forward pass computed only each row's last logits");
  const Dims dm(c, cache.n_batch, cache.n_pos);
  if (g.cfg != c || g.blocks.size() != p.blocks.size()) g = make_params<T>(c);
  for_each_tensor(g, [](Tensor<T>& t) { t.zero(); });
  Workspace<T>& ws = cache.work;

  loss_backward(dm, cache, batch, ws.dlogits);
  unembed_backward(p, dm, cache, ws.dlogits, g, ws);
  ws.dpos.setZero(dm.Tl, dm.D);  // the gradient reaching hook_pos_embed, summed over layers
  ws.dz.resize(dm.N, dm.HDh);
  ws.dqkv.resize(dm.N, 3 * dm.HDh);
  ws.dP.resize(dm.Tl, dm.Tl);
  if (ws.dS.rows() != dm.Tl || ws.dS.cols() != dm.Tl) ws.dS.setZero(dm.Tl, dm.Tl);  // its upper triangle stays zero
  for (int l = c.n_layers - 1; l >= 0; --l) layer_backward(c, dm, p.blocks[l], cache.layers[l], cache, g.blocks[l], ws);
  embed_backward(c, dm, cache, g, ws);
}

template <class T>
double loss_and_grad(const Params<T>& p, const Batch& batch, ActivationCache<T>& cache, Params<T>& grads) {
  forward(p, batch.tokens, batch.B, batch.T, cache);
  LossResult r = loss_from_logits(cache, batch);
  backward(p, cache, batch, grads);
  return r.loss;
}

#define CS_INSTANTIATE(T)                                                                                  \
  template void forward_from_layer<T>(const Params<T>&, ActivationCache<T>&, const Intervention&, int); \
  template int forward_incremental<T>(const Params<T>&, const std::vector<int>&, ActivationCache<T>&, const Intervention&); \
  template void unembed_rows<T>(const Params<T>&, const ActivationCache<T>&, int, int, std::vector<T>&); \
  template void head_results<T>(const Params<T>&, const ActivationCache<T>&, int, T*);                     \
  template T unembed_entry<T>(const Params<T>&, const ActivationCache<T>&, int, int);                      \
  template void forward<T>(const Params<T>&, const std::vector<int>&, int, int, ActivationCache<T>&,     \
                           const Intervention&);                                                         \
  template LossResult loss_from_logits<T>(const ActivationCache<T>&, const Batch&);                      \
  template double cross_entropy_row<T>(const T*, int, int, std::vector<T>&);                            \
  template T log_sum_exp_row<T>(const T*, int, std::vector<T>&);                                       \
  template struct LogSumExp<T>;                                                                          \
  template void unembed_block<T>(const Params<T>&, const ActivationCache<T>&, int, int, int, int, std::vector<T>&);                                       \
  template void loss_from_logits<T>(const ActivationCache<T>&, const Batch&, LossResult&);               \
  template void backward<T>(const Params<T>&, const ActivationCache<T>&, const Batch&, Params<T>&);      \
  template double loss_and_grad<T>(const Params<T>&, const Batch&, ActivationCache<T>&, Params<T>&);         \
  template std::shared_ptr<const AblationReference> ablation_reference<T>(const Params<T>&, const std::vector<int>&, int, int);
CS_INSTANTIATE(float)
CS_INSTANTIATE(double)
#undef CS_INSTANTIATE

namespace {

// The first index of t holding NaN or Inf (skip_neg_inf: -Inf is allowed), or -1.
long long first_bad(const Tensor<float>& t, bool skip_neg_inf = false, std::size_t from = 0) {
  const float* p = t.data.data();
  for (std::size_t i = from; i < t.data.size(); ++i) {
    const float x = p[i];
    if (std::isfinite(x)) continue;
    if (skip_neg_inf && x == -std::numeric_limits<float>::infinity()) continue;
    return static_cast<long long>(i);
  }
  return -1;
}

}  // namespace

void check_output_finite(const ActivationCache<float>& cache, int from_pos) {
  std::size_t from = static_cast<std::size_t>(std::max(0, from_pos)) * cache.logits.shape.back();
  if (cache.n_batch != 1 || cache.last_logits_only || from >= cache.logits.data.size()) from = 0;
  if (first_bad(cache.logits, false, from) < 0) return;
  check_finite(cache);   // names the first stage that overflowed
  throw std::runtime_error("the forward pass overflowed float32: logits holds NaN or Inf; the model's weights are too large to compute with");
}

void check_finite(const ActivationCache<float>& cache) {
  auto check = [](const Tensor<float>& t, const std::string& hook, bool skip_neg_inf = false) {
    const long long i = first_bad(t, skip_neg_inf);
    if (i < 0) return;
    const float x = t.data[static_cast<std::size_t>(i)];
    throw std::runtime_error("the forward pass overflowed float32: " + hook + " holds " +
                             (std::isnan(x) ? "NaN" : "Inf") + " (at index " + std::to_string(i) +
                             "); the model's weights are too large to compute with");
  };
  check(cache.embed, "hook_embed");
  check(cache.pos_embed, "hook_pos_embed");
  for (std::size_t l = 0; l < cache.layers.size(); ++l) {
    const LayerCache<float>& c = cache.layers[l];
    const std::string b = "blocks." + std::to_string(l) + ".";
    check(c.resid_pre, b + "hook_resid_pre");
    check(c.q, b + "attn.hook_q");
    check(c.k_unsmeared, b + "attn.hook_k_unsmeared");
    check(c.k, b + "attn.hook_k");
    check(c.v, b + "attn.hook_v");
    check(c.attn_scores, b + "attn.hook_attn_scores", true);  // masked scores are -inf by design
    check(c.pattern, b + "attn.hook_pattern");
    check(c.z, b + "attn.hook_z");
    check(c.result, b + "attn.hook_result");
    check(c.attn_out, b + "hook_attn_out");
    check(c.resid_post, b + "hook_resid_post");
  }
  check(cache.resid_final, "the final residual stream");
  check(cache.logits, "logits");
}

}  // namespace cs
