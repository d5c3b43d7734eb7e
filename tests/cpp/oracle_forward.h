// The plain-loop forward pass (double precision, no Eigen; LayerNorm and MLPs included) that the tests hold the Eigen forward
// to, with the ablation shape activation patching uses: a head's output replaced by given values.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "model.h"

namespace cs::testing {

// The oracle: the maths written as loops. With heads_read_stream_without_heads, heads in
// layers >= 1 read the residual stream without any earlier head's output (embeddings,
// positions and output biases only), which is what cutting every composition path means.
// With `patches`, a head's output (hook_result) is replaced by the patch's value at the patch's
// positions (every position when it lists none) before it is added to the residual stream: the
// activation-patching oracle (tests/cpp/test_patching.cpp).
struct OraclePatch {
  int layer = 0, head = 0;
  bool mlp = false;            // the layer's MLP output instead of a head's
  std::vector<int> positions;  // empty: every position
  std::vector<double> value;   // [T, D]
};

struct Oracle {
  std::vector<double> logits;                    // [T, V]
  std::vector<std::vector<double>> patterns;     // per layer: [H, T, T]
  std::vector<std::vector<double>> results;      // per layer: [H, T, D] each head's output (after patches)
  std::vector<std::vector<double>> mlp_outs;     // per layer: [T, D] the MLP's output (after patches; empty without MLPs)
};

// TransformerLens's LayerNorm of every row of x [T, D] (LNPre without w): centre, divide by
// sqrt(mean square + eps), then * w + b.
inline std::vector<double> oracle_layer_norm(const Config& c, const std::vector<double>& x, const Tensor<float>& w,
                                             const Tensor<float>& b) {
  if (c.normalization == Norm::None) return x;
  const int D = c.d_model, T = static_cast<int>(x.size()) / D;
  std::vector<double> y(x.size());
  for (int t = 0; t < T; ++t) {
    double mean = 0, ms = 0;
    for (int d = 0; d < D; ++d) mean += x[t * D + d] / D;
    for (int d = 0; d < D; ++d) ms += (x[t * D + d] - mean) * (x[t * D + d] - mean) / D;
    const double scale = std::sqrt(ms + kLnEps);
    for (int d = 0; d < D; ++d) {
      const double xhat = (x[t * D + d] - mean) / scale;
      y[t * D + d] = c.normalization == Norm::LN ? xhat * w.data[d] + b.data[d] : xhat;
    }
  }
  return y;
}

// The MLP's activation, as TransformerLens defines each act_fn.
inline double oracle_activation(Act a, double x) {
  if (a == Act::ReLU) return x > 0 ? x : 0;
  if (a == Act::GELUNew) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * std::pow(x, 3))));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

inline Oracle oracle_forward(const Params<float>& p, const std::vector<int>& tok, bool heads_read_stream_without_heads,
                             const std::vector<OraclePatch>& patches = {}) {
  const Config& c = p.cfg;
  const int T = static_cast<int>(tok.size()), D = c.d_model, H = c.n_heads, Dh = c.d_head, V = c.d_vocab;
  auto at = [](const Tensor<float>& t, std::size_t i) { return static_cast<double>(t.data[i]); };
  std::vector<double> resid(T * D), base(T * D), pos(T * D, 0.0);
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d) {
      if (c.pos_embed != PosEmbed::None) pos[t * D + d] = at(p.W_pos, t * D + d);
      resid[t * D + d] = at(p.W_E, tok[t] * D + d) + (c.pos_embed == PosEmbed::Standard ? pos[t * D + d] : 0.0);
    }
  base = resid;
  Oracle o;
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& w = p.blocks[l];
    // ln1 of the stream the heads read (itself without normalization)
    const std::vector<double> in =
        oracle_layer_norm(c, (heads_read_stream_without_heads && l >= 1) ? base : resid, w.ln1_w, w.ln1_b);
    std::vector<double> out(T * D, 0.0), pat(H * T * T, 0.0), res(H * T * D, 0.0);
    for (int h = 0; h < H; ++h) {
      std::vector<double> q(T * Dh, 0.0), k(T * Dh, 0.0), v(T * Dh, 0.0), ks(T * Dh);
      for (int t = 0; t < T; ++t)
        for (int e = 0; e < Dh; ++e) {
          double sq = 0, sk = 0, sv = 0;
          for (int d = 0; d < D; ++d) {
            double xqk = in[t * D + d] + (c.pos_embed == PosEmbed::Shortformer ? pos[t * D + d] : 0.0);
            sq += xqk * at(w.W_Q, (h * D + d) * Dh + e);
            sk += xqk * at(w.W_K, (h * D + d) * Dh + e);
            sv += in[t * D + d] * at(w.W_V, (h * D + d) * Dh + e);
          }
          if (c.use_bias) {
            sq += at(w.b_Q, h * Dh + e);
            sk += at(w.b_K, h * Dh + e);
            sv += at(w.b_V, h * Dh + e);
          }
          q[t * Dh + e] = sq;
          k[t * Dh + e] = sk;
          v[t * Dh + e] = sv;
        }
      ks = k;
      if (c.smeared_keys) {
        double s = 1.0 / (1.0 + std::exp(-at(w.smear_alpha, h)));
        for (int t = 1; t < T; ++t)
          for (int e = 0; e < Dh; ++e) ks[t * Dh + e] = s * k[t * Dh + e] + (1 - s) * k[(t - 1) * Dh + e];
      }
      for (int i = 0; i < T; ++i) {
        std::vector<double> sc(i + 1);
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int e = 0; e < Dh; ++e) s += q[i * Dh + e] * ks[j * Dh + e];
          sc[j] = s / std::sqrt(static_cast<double>(Dh));
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
        for (int j = 0; j <= i; ++j) pat[(h * T + i) * T + j] = sc[j] / sum;
        for (int e = 0; e < Dh; ++e) {
          double z = 0;
          for (int j = 0; j <= i; ++j) z += pat[(h * T + i) * T + j] * v[j * Dh + e];
          for (int d = 0; d < D; ++d) res[(h * T + i) * D + d] += z * at(w.W_O, (h * Dh + e) * D + d);
        }
      }
      for (const OraclePatch& pt : patches) {
        if (pt.mlp || pt.layer != l || pt.head != h) continue;
        for (int i = 0; i < T; ++i) {
          const bool here = pt.positions.empty() || std::find(pt.positions.begin(), pt.positions.end(), i) != pt.positions.end();
          if (here)
            for (int d = 0; d < D; ++d) res[(h * T + i) * D + d] = pt.value[i * D + d];
        }
      }
      for (int i = 0; i < T; ++i)
        for (int d = 0; d < D; ++d) out[i * D + d] += res[(h * T + i) * D + d];
    }
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d) {
        double bo = c.use_bias ? at(w.b_O, d) : 0.0;
        resid[t * D + d] += out[t * D + d] + bo;
        base[t * D + d] += bo;
      }
    std::vector<double> mlp_out;
    if (c.d_mlp > 0) {  // mlp_out = act(ln2(resid_mid) W_in + b_in) W_out + b_out, added to both streams
      const int M = c.d_mlp;
      const std::vector<double> x = oracle_layer_norm(c, resid, w.ln2_w, w.ln2_b);
      mlp_out.assign(static_cast<std::size_t>(T) * D, 0.0);
      for (int t = 0; t < T; ++t) {
        std::vector<double> post(M);
        for (int m = 0; m < M; ++m) {
          double pre = at(w.b_in, m);
          for (int d = 0; d < D; ++d) pre += x[t * D + d] * at(w.W_in, d * M + m);
          post[m] = oracle_activation(c.act_fn, pre);
        }
        for (int d = 0; d < D; ++d) {
          double y = at(w.b_out, d);
          for (int m = 0; m < M; ++m) y += post[m] * at(w.W_out, m * D + d);
          for (const OraclePatch& pt : patches)  // the MLP's output replaced here
            if (pt.mlp && pt.layer == l && (pt.positions.empty() || std::find(pt.positions.begin(), pt.positions.end(), t) != pt.positions.end()))
              y = pt.value[t * D + d];
          mlp_out[t * D + d] = y;
          resid[t * D + d] += y;
          base[t * D + d] += y;
        }
      }
    }
    o.mlp_outs.push_back(mlp_out);
    o.patterns.push_back(pat);
    o.results.push_back(res);
  }
  o.logits.assign(T * V, 0.0);
  const std::vector<double> fin = oracle_layer_norm(c, resid, p.ln_final_w, p.ln_final_b);
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) {
      double s = c.use_bias ? at(p.b_U, v) : 0.0;
      for (int d = 0; d < D; ++d) s += fin[t * D + d] * at(p.W_U, d * V + v);
      o.logits[t * V + v] = s;
    }
  return o;
}

}  // namespace cs::testing
