// Model: forward pass (filling the activation cache), masked cross-entropy and the backward pass.
// Each backward step quotes, in a comment, the forward line it differentiates.
#include "model.h"

#include <cmath>
#include <limits>
#include <stdexcept>

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

template <class T>
void forward(const Params<T>& p, const std::vector<int>& tokens, int B, int Tl, ActivationCache<T>& cache,
             const Intervention& iv) {
  const Config& c = p.cfg;
  const int H = c.n_heads, D = c.d_model, Dh = c.d_head, V = c.d_vocab;
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
  const T scale = T(1) / std::sqrt(T(Dh));
  cache.n_batch = B;
  cache.n_pos = Tl;
  cache.tokens = tokens;
  cache.intervened = !iv.empty();

  // hook_embed = W_E[tokens]
  cache.embed.resize({B, Tl, D});
  auto emb = cache.embed.mat();
  auto WE = p.W_E.mat();
  for (int n = 0; n < N; ++n) emb.row(n) = WE.row(tokens[n]);

  // hook_pos_embed = W_pos[0:T]
  cache.pos_embed.resize({Tl, D});
  const bool has_pos = c.pos_embed != PosEmbed::None && !iv.remove_pos;
  if (has_pos) cache.pos_embed.mat() = p.W_pos.mat().topRows(Tl);
  auto pos = cache.pos_embed.mat();

  MatRM<T> resid = emb;  // [N, D]
  if (c.pos_embed == PosEmbed::Standard && has_pos)
    for (int b = 0; b < B; ++b) resid.middleRows(b * Tl, Tl) += pos;

  cache.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerParams<T>& w = p.blocks[l];
    LayerCache<T>& lc = cache.layers[l];
    lc.resid_pre.resize({B, Tl, D});
    lc.resid_pre.mat() = resid;
    lc.q.resize({H, B, Tl, Dh});
    lc.k.resize({H, B, Tl, Dh});
    lc.v.resize({H, B, Tl, Dh});
    lc.k_unsmeared = Tensor<T>();
    if (c.smeared_keys) lc.k_unsmeared.resize({H, B, Tl, Dh});
    lc.attn_scores.resize({B, H, Tl, Tl});
    lc.pattern.resize({B, H, Tl, Tl});
    lc.z.resize({H, B, Tl, Dh});
    lc.result.resize({H, B, Tl, D});
    lc.attn_out.resize({B, Tl, D});
    lc.resid_post.resize({B, Tl, D});

    // Shortformer: positions enter only the inputs of Q and K.
    MatRM<T> qk_in = resid;
    if (c.pos_embed == PosEmbed::Shortformer && has_pos)
      for (int b = 0; b < B; ++b) qk_in.middleRows(b * Tl, Tl) += pos;

    for (int h = 0; h < H; ++h) {
      // The inputs of this head, minus the outputs of any earlier heads whose path is cut.
      MatRM<T> in_q, in_k, in_v;
      const MatRM<T>* xq = &qk_in;
      const MatRM<T>* xk = &qk_in;
      const MatRM<T>* xv = &resid;
      for (const auto& cut : iv.cuts) {
        if (cut.dst_layer != l || cut.dst_head != h) continue;
        auto src = cache.layers[cut.src_layer].result.slice(cut.src_head);
        if (cut.input == Input::Q) {
          if (xq == &qk_in) in_q = qk_in, xq = &in_q;
          in_q -= src;
        } else if (cut.input == Input::K) {
          if (xk == &qk_in) in_k = qk_in, xk = &in_k;
          in_k -= src;
        } else {
          if (xv == &resid) in_v = resid, xv = &in_v;
          in_v -= src;
        }
      }
      auto q = lc.q.slice(h);
      auto k = lc.k.slice(h);
      auto v = lc.v.slice(h);
      // q = x W_Q + b_Q ; k = x W_K + b_K ; v = x W_V + b_V
      q.noalias() = *xq * w.W_Q.slice(h);
      k.noalias() = *xk * w.W_K.slice(h);
      v.noalias() = *xv * w.W_V.slice(h);
      if (c.use_bias) {
        q.rowwise() += w.b_Q.row(h);
        k.rowwise() += w.b_K.row(h);
        v.rowwise() += w.b_V.row(h);
      }
      if (c.smeared_keys) {
        // k_j <- s k_j + (1 - s) k_{j-1} for j > 0, s = sigmoid(alpha)
        auto kr = lc.k_unsmeared.slice(h);
        kr = k;
        const T s = sigmoid(w.smear_alpha.data[h]);
        for (int b = 0; b < B; ++b)
          for (int t = 1; t < Tl; ++t) k.row(b * Tl + t) = s * kr.row(b * Tl + t) + (T(1) - s) * kr.row(b * Tl + t - 1);
      }
      auto z = lc.z.slice(h);
      for (int b = 0; b < B; ++b) {
        MapM<T> S(lc.attn_scores.ptr() + (static_cast<std::size_t>(b) * H + h) * Tl * Tl, Tl, Tl);
        MapM<T> P(lc.pattern.ptr() + (static_cast<std::size_t>(b) * H + h) * Tl * Tl, Tl, Tl);
        // scores = q k^T / sqrt(d_head), causal mask
        S.noalias() = q.middleRows(b * Tl, Tl) * k.middleRows(b * Tl, Tl).transpose() * scale;
        for (int i = 0; i < Tl; ++i) {
          for (int j = i + 1; j < Tl; ++j) S(i, j) = -std::numeric_limits<T>::infinity();
          // pattern = softmax(scores)
          T mx = S.row(i).head(i + 1).maxCoeff();
          T sum = 0;
          for (int j = 0; j <= i; ++j) sum += (P(i, j) = std::exp(S(i, j) - mx));
          P.row(i).head(i + 1) /= sum;
          P.row(i).tail(Tl - i - 1).setZero();
        }
        // z = pattern v
        z.middleRows(b * Tl, Tl).noalias() = P * v.middleRows(b * Tl, Tl);
      }
      // result = z W_O
      auto r = lc.result.slice(h);
      r.noalias() = z * w.W_O.slice(h);
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
    // attn_out = sum_h result_h + b_O ; resid_post = resid_pre + attn_out
    auto ao = lc.attn_out.mat();
    ao.setZero();
    for (int h = 0; h < H; ++h) ao += lc.result.slice(h);
    if (c.use_bias) ao.rowwise() += w.b_O.vec();
    resid += ao;
    lc.resid_post.mat() = resid;
  }
  cache.resid_final.resize({B, Tl, D});
  cache.resid_final.mat() = resid;
  // logits = resid W_U + b_U
  cache.logits.resize({B, Tl, V});
  auto lg = cache.logits.mat();
  lg.noalias() = resid * p.W_U.mat();
  if (c.use_bias) lg.rowwise() += p.b_U.vec();
}

template <class T>
LossResult loss_from_logits(const ActivationCache<T>& cache, const Batch& batch) {
  const int N = cache.n_batch * cache.n_pos;
  if (batch.B != cache.n_batch || batch.T != cache.n_pos || batch.targets.size() != static_cast<std::size_t>(N) ||
      batch.mask.size() != static_cast<std::size_t>(N))
    throw std::invalid_argument("loss: the batch's targets and mask do not match the forward pass");
  auto lg = cache.logits.mat();
  const int V = static_cast<int>(lg.cols());
  LossResult r;
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
    T mx = lg.row(n).maxCoeff();
    T lse = mx + std::log((lg.row(n).array() - mx).exp().sum());
    double ce = static_cast<double>(lse - lg(n, tgt));
    r.per_token[n] = static_cast<float>(ce);
    total += batch.mask[n] * ce;
    msum += batch.mask[n];
  }
  r.loss = msum > 0 ? total / msum : 0.0;
  return r;
}

template <class T>
void backward(const Params<T>& p, const ActivationCache<T>& cache, const Batch& batch, Params<T>& g) {
  const Config& c = p.cfg;
  if (cache.intervened) throw std::logic_error("backward: the cache came from a forward pass with an intervention");
  const int B = cache.n_batch, Tl = cache.n_pos, N = B * Tl;
  const int H = c.n_heads, D = c.d_model, Dh = c.d_head, V = c.d_vocab;
  const T scale = T(1) / std::sqrt(T(Dh));
  if (g.cfg != c || g.blocks.size() != p.blocks.size()) g = make_params<T>(c);
  for_each_param(g, [](const std::string&, Tensor<T>& t) { t.zero(); });

  // loss = sum_n mask_n CE_n / sum mask ; dCE/dlogits = softmax - onehot(target)
  double msum = 0;
  for (float m : batch.mask) msum += m;
  MatRM<T> dlogits = MatRM<T>::Zero(N, V);
  auto lg = cache.logits.mat();
  if (msum > 0) {
    for (int n = 0; n < N; ++n) {
      if (batch.mask[n] == 0) continue;
      T mx = lg.row(n).maxCoeff();
      RowVecT<T> e = (lg.row(n).array() - mx).exp();
      e /= e.sum();
      e(batch.targets[n]) -= T(1);
      dlogits.row(n) = e * static_cast<T>(batch.mask[n] / msum);
    }
  }
  // logits = resid W_U + b_U
  auto resid_final = cache.resid_final.mat();
  g.W_U.mat().noalias() = resid_final.transpose() * dlogits;
  if (c.use_bias) g.b_U.vec() = dlogits.colwise().sum();
  MatRM<T> dresid = dlogits * p.W_U.mat().transpose();  // [N, D]

  const bool shortformer = c.pos_embed == PosEmbed::Shortformer;
  MatRM<T> dpos_total = MatRM<T>::Zero(Tl, D);  // gradient reaching hook_pos_embed
  MatRM<T> dq(N, Dh), dk(N, Dh), dv(N, Dh), dz(N, Dh), dqk_in(N, D);
  MatRM<T> dP(Tl, Tl), dS(Tl, Tl);
  for (int l = c.n_layers - 1; l >= 0; --l) {
    const LayerParams<T>& w = p.blocks[l];
    LayerParams<T>& gw = g.blocks[l];
    const LayerCache<T>& lc = cache.layers[l];
    // resid_post = resid_pre + attn_out: dattn_out = dresid, and dresid flows on to resid_pre.
    const MatRM<T>& dao = dresid;
    // attn_out = sum_h result_h + b_O
    if (c.use_bias) gw.b_O.vec() = dao.colwise().sum();
    auto resid_pre = lc.resid_pre.mat();
    MatRM<T> qk_in = resid_pre;
    if (shortformer)
      for (int b = 0; b < B; ++b) qk_in.middleRows(b * Tl, Tl) += cache.pos_embed.mat();
    dqk_in.setZero();
    MatRM<T> dresid_pre = dresid;
    for (int h = 0; h < H; ++h) {
      auto z = lc.z.slice(h);
      auto q = lc.q.slice(h);
      auto k = lc.k.slice(h);
      auto v = lc.v.slice(h);
      // result = z W_O
      gw.W_O.slice(h).noalias() = z.transpose() * dao;
      dz.noalias() = dao * w.W_O.slice(h).transpose();
      dq.setZero();
      dk.setZero();
      dv.setZero();
      for (int b = 0; b < B; ++b) {
        CMapM<T> P(lc.pattern.ptr() + (static_cast<std::size_t>(b) * H + h) * Tl * Tl, Tl, Tl);
        auto dzb = dz.middleRows(b * Tl, Tl);
        // z = pattern v
        dP.noalias() = dzb * v.middleRows(b * Tl, Tl).transpose();
        dv.middleRows(b * Tl, Tl).noalias() = P.transpose() * dzb;
        // pattern = softmax(scores): dS = P * (dP - sum_j P dP)
        for (int i = 0; i < Tl; ++i) {
          T dot = P.row(i).head(i + 1).dot(dP.row(i).head(i + 1));
          dS.row(i).head(i + 1) = P.row(i).head(i + 1).cwiseProduct((dP.row(i).head(i + 1).array() - dot).matrix());
          dS.row(i).tail(Tl - i - 1).setZero();
        }
        // scores = q k^T / sqrt(d_head)
        dq.middleRows(b * Tl, Tl).noalias() = dS * k.middleRows(b * Tl, Tl) * scale;
        dk.middleRows(b * Tl, Tl).noalias() = dS.transpose() * q.middleRows(b * Tl, Tl) * scale;
      }
      if (c.smeared_keys) {
        // k_j = s kr_j + (1 - s) kr_{j-1} (j > 0), k_0 = kr_0
        auto kr = lc.k_unsmeared.slice(h);
        const T s = sigmoid(w.smear_alpha.data[h]);
        T ds = 0;
        MatRM<T> dkr = MatRM<T>::Zero(N, Dh);
        for (int b = 0; b < B; ++b) {
          dkr.row(b * Tl) += dk.row(b * Tl);
          for (int t = 1; t < Tl; ++t) {
            int n = b * Tl + t;
            dkr.row(n) += s * dk.row(n);
            dkr.row(n - 1) += (T(1) - s) * dk.row(n);
            ds += dk.row(n).dot(kr.row(n) - kr.row(n - 1));
          }
        }
        // s = sigmoid(alpha): ds/dalpha = s (1 - s)
        gw.smear_alpha.data[h] = ds * s * (T(1) - s);
        dk = dkr;
      }
      // q = qk_in W_Q + b_Q ; k = qk_in W_K + b_K ; v = resid_pre W_V + b_V
      gw.W_Q.slice(h).noalias() = qk_in.transpose() * dq;
      gw.W_K.slice(h).noalias() = qk_in.transpose() * dk;
      gw.W_V.slice(h).noalias() = resid_pre.transpose() * dv;
      if (c.use_bias) {
        gw.b_Q.row(h) = dq.colwise().sum();
        gw.b_K.row(h) = dk.colwise().sum();
        gw.b_V.row(h) = dv.colwise().sum();
      }
      dqk_in.noalias() += dq * w.W_Q.slice(h).transpose();
      dqk_in.noalias() += dk * w.W_K.slice(h).transpose();
      dresid_pre.noalias() += dv * w.W_V.slice(h).transpose();
    }
    // qk_in = resid_pre (+ pos for shortformer)
    dresid_pre += dqk_in;
    if (shortformer)
      for (int b = 0; b < B; ++b) dpos_total += dqk_in.middleRows(b * Tl, Tl);
    dresid = std::move(dresid_pre);
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
  template void backward<T>(const Params<T>&, const ActivationCache<T>&, const Batch&, Params<T>&);      \
  template double loss_and_grad<T>(const Params<T>&, const Batch&, ActivationCache<T>&, Params<T>&);
CS_INSTANTIATE(float)
CS_INSTANTIATE(double)
#undef CS_INSTANTIATE

}  // namespace cs
