// Model: forward pass (filling the activation cache), masked cross-entropy and the backward pass.
// Each backward step quotes, in a comment, the forward line it differentiates.
#include "model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/gemm.h"
#include "kernels/softmax.h"

namespace cs {

namespace {

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

void check_intervention(const Config& c, const Intervention& iv) {
  for (const auto& a : iv.ablations) {
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

}  // namespace

template <class T>
void forward(const Params<T>& p, const std::vector<int>& tokens, int B, int Tl, ActivationCache<T>& cache,
             const Intervention& iv) {
  const Config& c = p.cfg;
  const int H = c.n_heads, D = c.d_model, Dh = c.d_head, V = c.d_vocab, HDh = H * Dh;
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
  check_intervention(c, iv);

  const int N = B * Tl;
  const std::size_t NDh = static_cast<std::size_t>(N) * Dh, TT = static_cast<std::size_t>(Tl) * Tl;
  const T scale = T(1) / std::sqrt(T(Dh));
  Workspace<T>& ws = cache.work;
  cache.n_batch = B;
  cache.n_pos = Tl;
  cache.tokens = tokens;
  cache.intervened = !iv.empty();

  // hook_embed = W_E[tokens]
  cache.embed.ensure({B, Tl, D});
  auto emb = cache.embed.mat();
  auto WE = p.W_E.mat();
  for (int n = 0; n < N; ++n) emb.row(n) = WE.row(tokens[n]);

  // hook_pos_embed = W_pos[0:T]
  cache.pos_embed.ensure({Tl, D});
  const bool has_pos = c.pos_embed != PosEmbed::None && !iv.remove_pos;
  if (has_pos) cache.pos_embed.mat() = p.W_pos.mat().topRows(Tl);
  else cache.pos_embed.zero();
  auto pos = cache.pos_embed.mat();

  MatRM<T>& resid = ws.resid;  // [N, D]
  resid = emb;
  if (c.pos_embed == PosEmbed::Standard && has_pos)
    for (int b = 0; b < B; ++b) resid.middleRows(b * Tl, Tl) += pos;

  cache.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerParams<T>& w = p.blocks[l];
    LayerCache<T>& lc = cache.layers[l];
    lc.resid_pre.ensure({B, Tl, D});
    lc.resid_pre.mat() = resid;
    lc.q.ensure({H, B, Tl, Dh});
    lc.k.ensure({H, B, Tl, Dh});
    lc.v.ensure({H, B, Tl, Dh});
    if (c.smeared_keys) lc.k_unsmeared.ensure({H, B, Tl, Dh});
    else lc.k_unsmeared = Tensor<T>();
    if (cache.keep_scores) lc.attn_scores.ensure({B, H, Tl, Tl});
    else lc.attn_scores = Tensor<T>();
    // The pattern's upper triangle is zero and nothing writes it: zero it only when the buffer
    // is new (or reshaped), then write rows up to the diagonal.
    if (!lc.pattern.has_shape({B, H, Tl, Tl})) {
      lc.pattern.ensure({B, H, Tl, Tl});
      lc.pattern.zero();
    }
    lc.z.ensure({H, B, Tl, Dh});
    // Cuts read earlier heads' results and ablations replace them: keep them then.
    const bool keep_result = cache.keep_result || !iv.empty();
    if (keep_result) lc.result.ensure({H, B, Tl, D});
    else lc.result = Tensor<T>();
    lc.attn_out.ensure({B, Tl, D});
    lc.resid_post.ensure({B, Tl, D});

    // Shortformer: positions enter only the inputs of Q and K.
    const MatRM<T>* qk_in = &resid;
    if (c.pos_embed == PosEmbed::Shortformer && has_pos) {
      ws.qk_in = resid;
      for (int b = 0; b < B; ++b) ws.qk_in.middleRows(b * Tl, Tl) += pos;
      qk_in = &ws.qk_in;
    }

    bool cut_here = false;
    for (const auto& cut : iv.cuts) cut_here |= cut.dst_layer == l;
    if (!cut_here) {
      // q = x W_Q + b_Q, k = x W_K + b_K, v = x W_V + b_V for every head in one product each,
      // written straight into hook_q/k/v's per-head layout.
      concat_qkv(w, H, D, Dh, ws.wcat);
      T* outs[3] = {lc.q.ptr(), c.smeared_keys ? lc.k_unsmeared.ptr() : lc.k.ptr(), lc.v.ptr()};
      ws.blocks.resize(3 * H);
      for (int m = 0; m < 3; ++m)
        for (int h = 0; h < H; ++h) ws.blocks[m * H + h] = outs[m] + h * NDh;
      if (qk_in == &resid) {  // one product for q, k and v
        mm(Op::N, Op::N, N, 3 * HDh, D, T(1), resid.data(), D, ws.wcat.data(), 3 * HDh, T(0), nullptr, Dh, Causal::None,
           Dh, 0, ws.blocks.data());
      } else {  // q and k read the positions, v does not
        mm(Op::N, Op::N, N, 2 * HDh, D, T(1), qk_in->data(), D, ws.wcat.data(), 3 * HDh, T(0), nullptr, Dh,
           Causal::None, Dh, 0, ws.blocks.data());
        mm(Op::N, Op::N, N, HDh, D, T(1), resid.data(), D, ws.wcat.data() + 2 * HDh, 3 * HDh, T(0), nullptr, Dh,
           Causal::None, Dh, 0, ws.blocks.data() + 2 * H);
      }
    } else {
      // A path cut: each head reads its own residual stream, minus the outputs of the earlier
      // heads whose path into it is cut.
      MatRM<T> in_q, in_k, in_v;
      for (int h = 0; h < H; ++h) {
        const MatRM<T>* xq = qk_in;
        const MatRM<T>* xk = qk_in;
        const MatRM<T>* xv = &resid;
        for (const auto& cut : iv.cuts) {
          if (cut.dst_layer != l || cut.dst_head != h) continue;
          auto src = cache.layers[cut.src_layer].result.slice(cut.src_head);
          if (cut.input == Input::Q) {
            if (xq == qk_in) in_q = *qk_in, xq = &in_q;
            in_q -= src;
          } else if (cut.input == Input::K) {
            if (xk == qk_in) in_k = *qk_in, xk = &in_k;
            in_k -= src;
          } else {
            if (xv == &resid) in_v = resid, xv = &in_v;
            in_v -= src;
          }
        }
        (c.smeared_keys ? lc.k_unsmeared : lc.k).slice(h).noalias() = *xk * w.W_K.slice(h);
        lc.q.slice(h).noalias() = *xq * w.W_Q.slice(h);
        lc.v.slice(h).noalias() = *xv * w.W_V.slice(h);
      }
    }

    if (!cache.keep_scores) ws.S.resize(Tl, Tl);  // one head's scores at a time
    for (int h = 0; h < H; ++h) {
      auto q = lc.q.slice(h);
      auto k = lc.k.slice(h);
      auto v = lc.v.slice(h);
      if (c.use_bias) {
        q.rowwise() += w.b_Q.row(h);
        (c.smeared_keys ? lc.k_unsmeared.slice(h) : k).rowwise() += w.b_K.row(h);
        v.rowwise() += w.b_V.row(h);
      }
      if (c.smeared_keys) {
        // k_j <- s k_j + (1 - s) k_{j-1} for j > 0, s = sigmoid(alpha)
        auto kr = lc.k_unsmeared.slice(h);
        const T s = sigmoid(w.smear_alpha.data[h]);
        for (int b = 0; b < B; ++b) {
          k.row(b * Tl) = kr.row(b * Tl);
          for (int t = 1; t < Tl; ++t) k.row(b * Tl + t) = s * kr.row(b * Tl + t) + (T(1) - s) * kr.row(b * Tl + t - 1);
        }
      }
      for (int b = 0; b < B; ++b) {
        const std::size_t bh = static_cast<std::size_t>(b) * H + h;
        T* S = cache.keep_scores ? lc.attn_scores.ptr() + bh * TT : ws.S.data();
        T* P = lc.pattern.ptr() + bh * TT;
        const std::size_t row0 = static_cast<std::size_t>(h) * NDh + static_cast<std::size_t>(b) * Tl * Dh;
        // scores = q k^T / sqrt(d_head), causal mask (only the lower triangle is computed)
        mm(Op::N, Op::T, Tl, Tl, Dh, scale, lc.q.ptr() + row0, Dh, lc.k.ptr() + row0, Dh, T(0), S, Tl, Causal::LowerC);
        for (int i = 0; i < Tl; ++i) {
          T* Si = S + static_cast<std::size_t>(i) * Tl;
          T* Pi = P + static_cast<std::size_t>(i) * Tl;
          if (cache.keep_scores) std::fill(Si + i + 1, Si + Tl, -std::numeric_limits<T>::infinity());
          // pattern = softmax(scores)
          softmax_row(Si, Pi, i + 1, i + 1);
        }
        // z = pattern v (the pattern is zero above the diagonal)
        mm(Op::N, Op::N, Tl, Dh, Tl, T(1), P, Tl, lc.v.ptr() + row0, Dh, T(0), lc.z.ptr() + row0, Dh, Causal::LowerA);
      }
      // result = z W_O (or, without hook_result, attn_out += z W_O)
      if (keep_result)
        mm(Op::N, Op::N, N, D, Dh, T(1), lc.z.ptr() + h * NDh, Dh, w.W_O.ptr() + static_cast<std::size_t>(h) * Dh * D, D,
           T(0), lc.result.ptr() + static_cast<std::size_t>(h) * N * D, D);
      else
        mm(Op::N, Op::N, N, D, Dh, T(1), lc.z.ptr() + h * NDh, Dh, w.W_O.ptr() + static_cast<std::size_t>(h) * Dh * D, D,
           T(h == 0 ? 0 : 1), lc.attn_out.ptr(), D);
    }
    // Ablations replace a head's output after it is computed (its pattern stays visible).
    for (const auto& a : iv.ablations) {
      if (a.layer != l) continue;
      auto r = lc.result.slice(a.head);
      if (!a.mean) {
        r.setZero();
      } else if (a.mean_value.size() == static_cast<std::size_t>(D)) {
        RowVecT<T> m(D);
        for (int d = 0; d < D; ++d) m(d) = static_cast<T>(a.mean_value[d]);
        r.rowwise() = m;
      } else {
        for (int b = 0; b < B; ++b)
          for (int t = 0; t < Tl; ++t)
            for (int d = 0; d < D; ++d) r(b * Tl + t, d) = static_cast<T>(a.mean_value[static_cast<std::size_t>(t) * D + d]);
      }
    }
    // attn_out = sum_h result_h + b_O ; resid_post = resid_pre + attn_out (in one pass)
    {
      const std::size_t ND = static_cast<std::size_t>(N) * D;
      const T* res = lc.result.ptr();
      T* ao = lc.attn_out.ptr();
      T* rs = resid.data();
      T* post = lc.resid_post.ptr();
      if (keep_result) {
        for (std::size_t i = 0; i < ND; ++i) {
          T a = res[i];
          for (int h = 1; h < H; ++h) a += res[h * ND + i];
          ao[i] = a;
        }
      }
      for (std::size_t i = 0; i < ND; ++i) {
        const T a = c.use_bias ? ao[i] + w.b_O.data[i % D] : ao[i];
        ao[i] = a;
        post[i] = rs[i] += a;
      }
    }
  }
  cache.resid_final.ensure({B, Tl, D});
  cache.resid_final.mat() = resid;
  // logits = resid W_U + b_U
  cache.logits.ensure({B, Tl, V});
  mm(Op::N, Op::N, N, V, D, T(1), resid.data(), D, p.W_U.ptr(), V, T(0), cache.logits.ptr(), V);
  if (c.use_bias) cache.logits.mat().rowwise() += p.b_U.vec();
}

template <class T>
void loss_from_logits(const ActivationCache<T>& cache, const Batch& batch, LossResult& r) {
  const int N = cache.n_batch * cache.n_pos;
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
    const T* lg = cache.logits.ptr() + static_cast<std::size_t>(n) * V;
    const T mx = *std::max_element(lg, lg + V);
    const T lse = mx + std::log(exp_shifted_sum(lg, mx, e.data(), V));
    double ce = static_cast<double>(lse - lg[tgt]);
    r.per_token[n] = static_cast<float>(ce);
    total += batch.mask[n] * ce;
    msum += batch.mask[n];
  }
  r.loss = msum > 0 ? total / msum : 0.0;
}

template <class T>
LossResult loss_from_logits(const ActivationCache<T>& cache, const Batch& batch) {
  LossResult r;
  loss_from_logits(cache, batch, r);
  return r;
}

template <class T>
void backward(const Params<T>& p, const ActivationCache<T>& cache, const Batch& batch, Params<T>& g) {
  const Config& c = p.cfg;
  if (cache.intervened) throw std::logic_error("backward: the cache came from a forward pass with an intervention");
  const int B = cache.n_batch, Tl = cache.n_pos, N = B * Tl;
  const int H = c.n_heads, D = c.d_model, Dh = c.d_head, V = c.d_vocab, HDh = H * Dh;
  const std::size_t NDh = static_cast<std::size_t>(N) * Dh, TT = static_cast<std::size_t>(Tl) * Tl;
  const T scale = T(1) / std::sqrt(T(Dh));
  if (g.cfg != c || g.blocks.size() != p.blocks.size()) g = make_params<T>(c);
  for_each_tensor(g, [](Tensor<T>& t) { t.zero(); });
  Workspace<T>& ws = cache.work;

  // loss = sum_n mask_n CE_n / sum mask ; dCE/dlogits = softmax - onehot(target)
  double msum = 0;
  for (float m : batch.mask) msum += m;
  MatRM<T>& dlogits = ws.dlogits;
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
  // logits = resid W_U + b_U
  mm(Op::T, Op::N, D, V, N, T(1), cache.resid_final.ptr(), D, dlogits.data(), V, T(0), g.W_U.ptr(), V);
  if (c.use_bias) g.b_U.vec() = dlogits.colwise().sum();
  MatRM<T>& dresid = ws.dresid;  // [N, D]
  dresid.resize(N, D);
  mm(Op::N, Op::T, N, D, V, T(1), dlogits.data(), V, p.W_U.ptr(), V, T(0), dresid.data(), D);

  const bool shortformer = c.pos_embed == PosEmbed::Shortformer;
  MatRM<T>& dpos_total = ws.dpos;  // gradient reaching hook_pos_embed
  dpos_total.setZero(Tl, D);
  ws.dz.resize(N, HDh);
  ws.dqkv.resize(N, 3 * HDh);
  ws.dP.resize(Tl, Tl);
  if (ws.dS.rows() != Tl || ws.dS.cols() != Tl) ws.dS.setZero(Tl, Tl);  // its upper triangle stays zero
  T* dz = ws.dz.data();
  T* dqkv = ws.dqkv.data();
  const int ldq = 3 * HDh;
  for (int l = c.n_layers - 1; l >= 0; --l) {
    const LayerParams<T>& w = p.blocks[l];
    LayerParams<T>& gw = g.blocks[l];
    const LayerCache<T>& lc = cache.layers[l];
    // resid_post = resid_pre + attn_out: dattn_out = dresid, and dresid flows on to resid_pre.
    const MatRM<T>& dao = dresid;
    // attn_out = sum_h result_h + b_O
    if (c.use_bias) gw.b_O.vec() = dao.colwise().sum();
    const T* resid_pre = lc.resid_pre.ptr();
    const T* qk_in = resid_pre;
    if (shortformer) {
      ws.qk_in = lc.resid_pre.mat();
      for (int b = 0; b < B; ++b) ws.qk_in.middleRows(b * Tl, Tl) += cache.pos_embed.mat();
      qk_in = ws.qk_in.data();
    }
    // result_h = z_h W_O[h]: dz for every head at once (W_O is [H*Dh, D] row-major) ...
    mm(Op::N, Op::T, N, HDh, D, T(1), dao.data(), D, w.W_O.ptr(), D, T(0), dz, HDh);
    for (int h = 0; h < H; ++h) {
      // ... and dW_O one head at a time.
      mm(Op::T, Op::N, Dh, D, N, T(1), lc.z.ptr() + h * NDh, Dh, dao.data(), D, T(0),
         gw.W_O.ptr() + static_cast<std::size_t>(h) * Dh * D, D);
      T* dq = dqkv + h * Dh;
      T* dk = dqkv + HDh + h * Dh;
      T* dv = dqkv + 2 * HDh + h * Dh;
      for (int b = 0; b < B; ++b) {
        const std::size_t bh = static_cast<std::size_t>(b) * H + h;
        const T* P = lc.pattern.ptr() + bh * TT;
        const std::size_t row0 = static_cast<std::size_t>(h) * NDh + static_cast<std::size_t>(b) * Tl * Dh;
        const std::size_t r0 = static_cast<std::size_t>(b) * Tl;
        const T* dzb = dz + r0 * HDh + h * Dh;
        T* dP = ws.dP.data();
        T* dS = ws.dS.data();
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
      if (c.smeared_keys) {
        // k_j = s kr_j + (1 - s) kr_{j-1} (j > 0), k_0 = kr_0
        auto kr = lc.k_unsmeared.slice(h);
        const T s = sigmoid(w.smear_alpha.data[h]);
        T ds = 0;
        using Strided = Eigen::Map<MatRM<T>, 0, Eigen::OuterStride<>>;
        Strided dkm(dk, N, Dh, Eigen::OuterStride<>(ldq));
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
      if (c.use_bias) {
        using CStrided = Eigen::Map<const MatRM<T>, 0, Eigen::OuterStride<>>;
        gw.b_Q.row(h) = CStrided(dq, N, Dh, Eigen::OuterStride<>(ldq)).colwise().sum();
        gw.b_K.row(h) = CStrided(dk, N, Dh, Eigen::OuterStride<>(ldq)).colwise().sum();
        gw.b_V.row(h) = CStrided(dv, N, Dh, Eigen::OuterStride<>(ldq)).colwise().sum();
      }
    }
    // q = qk_in W_Q + b_Q ; k = qk_in W_K + b_K ; v = resid_pre W_V + b_V, for every head at once:
    // dW = x^T d(q|k|v), written into each head's [D, Dh] block ...
    const std::size_t wstride = static_cast<std::size_t>(D) * Dh;
    mm(Op::T, Op::N, D, HDh, N, T(1), qk_in, D, dqkv, ldq, T(0), gw.W_Q.ptr(), Dh, Causal::None, Dh, wstride);
    mm(Op::T, Op::N, D, HDh, N, T(1), qk_in, D, dqkv + HDh, ldq, T(0), gw.W_K.ptr(), Dh, Causal::None, Dh, wstride);
    mm(Op::T, Op::N, D, HDh, N, T(1), resid_pre, D, dqkv + 2 * HDh, ldq, T(0), gw.W_V.ptr(), Dh, Causal::None, Dh, wstride);
    // ... and dx = d(q|k|v) [W_Q|W_K|W_V]^T.
    concat_qkv(w, H, D, Dh, ws.wcat);
    MatRM<T>& dresid_pre = ws.dresid_pre;
    dresid_pre = dresid;
    if (!shortformer) {
      mm(Op::N, Op::T, N, D, 3 * HDh, T(1), dqkv, ldq, ws.wcat.data(), ldq, T(1), dresid_pre.data(), D);
    } else {
      // qk_in = resid_pre + pos
      MatRM<T>& dqk_in = ws.dqk_in;
      dqk_in.resize(N, D);
      mm(Op::N, Op::T, N, D, 2 * HDh, T(1), dqkv, ldq, ws.wcat.data(), ldq, T(0), dqk_in.data(), D);
      mm(Op::N, Op::T, N, D, HDh, T(1), dqkv + 2 * HDh, ldq, ws.wcat.data() + 2 * HDh, ldq, T(1), dresid_pre.data(), D);
      dresid_pre += dqk_in;
      for (int b = 0; b < B; ++b) dpos_total += dqk_in.middleRows(b * Tl, Tl);
    }
    dresid.swap(dresid_pre);
  }
  // resid_0 = embed (+ pos for standard)
  if (c.pos_embed == PosEmbed::Standard)
    for (int b = 0; b < B; ++b) dpos_total += dresid.middleRows(b * Tl, Tl);
  if (c.pos_embed != PosEmbed::None) g.W_pos.mat().topRows(Tl) += dpos_total;
  // embed = W_E[tokens]
  auto gWE = g.W_E.mat();
  for (int n = 0; n < N; ++n) gWE.row(cache.tokens[n]) += dresid.row(n);
}

template <class T>
double loss_and_grad(const Params<T>& p, const Batch& batch, ActivationCache<T>& cache, Params<T>& grads) {
  forward(p, batch.tokens, batch.B, batch.T, cache);
  LossResult r = loss_from_logits(cache, batch);
  backward(p, cache, batch, grads);
  return r.loss;
}

#define CS_INSTANTIATE(T)                                                                                  \
  template void forward<T>(const Params<T>&, const std::vector<int>&, int, int, ActivationCache<T>&,     \
                           const Intervention&);                                                         \
  template LossResult loss_from_logits<T>(const ActivationCache<T>&, const Batch&);                      \
  template void loss_from_logits<T>(const ActivationCache<T>&, const Batch&, LossResult&);               \
  template void backward<T>(const Params<T>&, const ActivationCache<T>&, const Batch&, Params<T>&);      \
  template double loss_and_grad<T>(const Params<T>&, const Batch&, ActivationCache<T>&, Params<T>&);
CS_INSTANTIATE(float)
CS_INSTANTIATE(double)
#undef CS_INSTANTIATE

}  // namespace cs
