// Circuits: path expansion sums back to the logits, factored circuits equal explicit products,
// eigenvalues match the explicit V x V tables, composition scores match their definition, and
// skip-trigrams agree with brute force over the tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <set>
#include <tuple>

#include "analysis/circuits.h"
#include "test_util.h"

namespace cs {
namespace {

using cs::testing::all_option_configs;
using cs::testing::config_name;
using cs::testing::random_params;
using cs::testing::norm_mlp_configs;
using cs::testing::tiny_config;

template <class M>
MatRM<double> Dm(const M& m) {
  return m.template cast<double>();
}

std::vector<int> random_tokens(const Config& c, int n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(n);
  for (auto& x : t) x = rng.below(c.d_vocab);
  return t;
}

RowVecT<double> trow(const Tensor<float>& t, int r) {
  const int cols = t.shape.back();
  RowVecT<double> v(cols);
  for (int j = 0; j < cols; ++j) v(j) = t.data[static_cast<std::size_t>(r) * cols + j];
  return v;
}

int index_of(const std::vector<std::string>& names, const std::string& n) {
  auto it = std::find(names.begin(), names.end(), n);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

// Parts sum to the logits; each head's virtual paths sum to its part.
void expect_sums(const Attribution& a, const std::string& what) {
  const int V = a.logits.shape[0];
  RowVecT<double> total = RowVecT<double>::Zero(V);
  for (int r = 0; r < a.parts.shape[0]; ++r) total += trow(a.parts, r);
  EXPECT_LT((total - trow(a.logits, 0)).cwiseAbs().maxCoeff(), 1e-4) << what;
  std::vector<RowVecT<double>> groups(a.parts.shape[0], RowVecT<double>::Zero(V));
  std::vector<int> count(a.parts.shape[0], 0);
  for (std::size_t q = 0; q < a.path_names.size(); ++q) {
    groups[a.path_part[q]] += trow(a.paths, static_cast<int>(q));
    ++count[a.path_part[q]];
    EXPECT_EQ(a.path_names[q].rfind(a.names[a.path_part[q]] + "<-", 0), 0u) << a.path_names[q];
  }
  for (int r = 0; r < a.parts.shape[0]; ++r)
    if (count[r]) {
      EXPECT_LT((groups[r] - trow(a.parts, r)).cwiseAbs().maxCoeff(), 1e-4) << what << " " << a.names[r];
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Attribution
// ---------------------------------------------------------------------------------------------

TEST(CircuitsAttribution, PartsAndPathsSumBackForEveryArchitecture) {
  for (const Config& c : all_option_configs()) {
    const Params<float> p = random_params<float>(c, 11);
    const int B = 2, T = 5;
    ActivationCache<float> cache;
    forward(p, random_tokens(c, B * T, 5), B, T, cache);
    const MatRM<double> WU = Dm(p.W_U.mat());
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        Attribution a = attribution(p, cache, b, t);
        const std::string what = config_name(c) + " b" + std::to_string(b) + " t" + std::to_string(t);
        ASSERT_EQ(a.names.size(), static_cast<std::size_t>(3 + c.n_layers * c.n_heads)) << what;
        ASSERT_EQ(a.parts.shape, (Shape{3 + c.n_layers * c.n_heads, c.d_vocab})) << what;
        EXPECT_EQ(a.token, cache.tokens[b * T + t]);
        expect_sums(a, what);
        // The token direct path is W_E[token] W_U; the positional one W_pos[t] W_U (Standard only).
        RowVecT<double> e = Dm(p.W_E.mat()).row(a.token) * WU;
        EXPECT_LT((trow(a.parts, 0) - e).cwiseAbs().maxCoeff(), 1e-4) << what;
        RowVecT<double> pe = RowVecT<double>::Zero(c.d_vocab);
        if (c.pos_embed == PosEmbed::Standard) pe = Dm(p.W_pos.mat()).row(t) * WU;
        EXPECT_LT((trow(a.parts, 1) - pe).cwiseAbs().maxCoeff(), 1e-4) << what;
        if (!c.use_bias) {
          EXPECT_EQ(trow(a.parts, 2).cwiseAbs().maxCoeff(), 0.0) << what;
        }
        // Every head of layer >= 1 has one group of 3 + l2*H paths.
        std::size_t expect_q = 0;
        for (int l2 = 1; l2 < c.n_layers; ++l2) expect_q += c.n_heads * (3 + l2 * c.n_heads);
        EXPECT_EQ(a.path_names.size(), expect_q) << what;
      }
  }
}

// LayerNorm and MLPs: the final LayerNorm's scale frozen, every part centred and divided by it,
// MLPs as parts of their own; the rows still sum to the logits. Virtual-head paths freeze ln1's
// scale at each source position, list each earlier MLP as a source, and each group still sums to
// its head's part.
TEST(CircuitsAttribution, FrozenFinalScaleAndMlpPartsSumBack) {
  for (const Config& c : norm_mlp_configs()) {
    const Params<float> p = random_params<float>(c, 12);
    const int T = 5;
    ActivationCache<float> cache;
    forward(p, random_tokens(c, T, 6), 1, T, cache);
    for (int t = 0; t < T; ++t) {
      const Attribution a = attribution(p, cache, 0, t);
      const std::string what = config_name(c) + " t" + std::to_string(t);
      const int P = 3 + c.n_layers * c.n_heads + (c.d_mlp > 0 ? c.n_layers : 0);
      ASSERT_EQ(a.parts.shape, (Shape{P, c.d_vocab})) << what;
      if (c.d_mlp > 0) EXPECT_EQ(a.names.back(), "MLP" + std::to_string(c.n_layers - 1)) << what;
      std::size_t expect_q = 0;
      for (int l2 = 1; l2 < c.n_layers; ++l2) expect_q += c.n_heads * (3 + l2 * (c.n_heads + (c.d_mlp > 0 ? 1 : 0)));
      EXPECT_EQ(a.path_names.size(), expect_q) << what;
      if (c.d_mlp > 0 && c.n_layers > 1) EXPECT_NE(index_of(a.path_names, "L1H0<-MLP0"), -1) << what;
      expect_sums(a, what);
      if (c.normalization == Norm::None || c.n_layers == 0) continue;
      if (c.n_layers > 1) {
        // One path by hand: L0H1's output at each source j, centred, over ln1's scale there,
        // through diag(ln1.w) W_V W_O of L1H0, mixed by its pattern row, then the final LayerNorm.
        const float* pat = cache.layers[1].pattern.ptr() + static_cast<std::size_t>(t) * T;  // head 0, row t
        RowVecT<double> m = RowVecT<double>::Zero(c.d_model);
        for (int j = 0; j <= t; ++j) {
          RowVecT<double> x = Dm(cache.layers[0].result.slice(1)).row(j);
          x = (x.array() - x.mean()) / static_cast<double>(cache.layers[1].ln1_scale.data[j]);
          if (c.normalization == Norm::LN) x = x.cwiseProduct(Dm(p.blocks[1].ln1_w.mat()).reshaped(1, c.d_model));
          m += static_cast<double>(pat[j]) * x;
        }
        RowVecT<double> y = m * Dm(p.blocks[1].W_V.slice(0)) * Dm(p.blocks[1].W_O.slice(0));
        y = (y.array() - y.mean()) / static_cast<double>(cache.ln_final_scale.data[t]);
        MatRM<double> WU = Dm(p.W_U.mat());
        if (c.normalization == Norm::LN)
          for (int d = 0; d < c.d_model; ++d) WU.row(d) *= static_cast<double>(p.ln_final_w.data[d]);
        const int q = index_of(a.path_names, "L1H0<-L0H1");
        ASSERT_NE(q, -1) << what;
        EXPECT_LT((trow(a.paths, q) - y * WU).cwiseAbs().maxCoeff(), 1e-4) << what;
      }
      // A head's part is its output, centred, over the frozen scale, through diag(w) W_U.
      RowVecT<double> x = Dm(cache.layers[0].result.slice(1)).row(t);
      x = (x.array() - x.mean()) / static_cast<double>(cache.ln_final_scale.data[t]);
      MatRM<double> WU = Dm(p.W_U.mat());
      if (c.normalization == Norm::LN)
        for (int d = 0; d < c.d_model; ++d) WU.row(d) *= static_cast<double>(p.ln_final_w.data[d]);
      EXPECT_LT((trow(a.parts, 3 + 1) - x * WU).cwiseAbs().maxCoeff(), 1e-4) << what;
    }
  }
}

TEST(CircuitsAttribution, ThreeLayersPathsSumBack) {
  Config c = tiny_config(3, PosEmbed::Standard, true, true);
  const Params<float> p = random_params<float>(c, 3);
  ActivationCache<float> cache;
  forward(p, random_tokens(c, 6, 9), 1, 6, cache);
  for (int t = 0; t < 6; ++t) expect_sums(attribution(p, cache, 0, t), "3L t" + std::to_string(t));
}

// The prediction the page expands is the largest logit, and the paths come largest first.
TEST(CircuitsAttribution, PredictionAndPathOrder) {
  Config c = tiny_config(2, PosEmbed::Standard, false, true);
  const Params<float> p = random_params<float>(c, 5);
  ActivationCache<float> cache;
  forward(p, random_tokens(c, 6, 4), 1, 6, cache);
  const Attribution a = attribution(p, cache, 0, 5);
  const int V = c.d_vocab;
  for (int v = 0; v < V; ++v) EXPECT_LE(a.logits.data[v], a.logits.data[a.predicted]);
  ASSERT_EQ(a.path_order.size(), a.path_names.size());
  ASSERT_FALSE(a.path_order.empty());
  std::vector<int> seen(a.path_order.size(), 0);
  for (std::size_t i = 0; i < a.path_order.size(); ++i) {
    seen.at(static_cast<std::size_t>(a.path_order[i])) += 1;
    if (i == 0) continue;
    const auto size = [&](int q) { return std::abs(a.paths.data[static_cast<std::size_t>(q) * V + a.predicted]); };
    EXPECT_GE(size(a.path_order[i - 1]), size(a.path_order[i]));
  }
  for (int n : seen) EXPECT_EQ(n, 1);   // a permutation of the paths
}

// The virtual path L1Hh' <- L0Hh is exactly what cutting L0Hh out of L1Hh''s value input removes
// (a V-only cut leaves the pattern unchanged).
TEST(CircuitsAttribution, VirtualPathEqualsWhatAValueCutRemoves) {
  for (PosEmbed pe : {PosEmbed::None, PosEmbed::Standard, PosEmbed::Shortformer})
    for (bool bias : {false, true}) {
      Config c = tiny_config(2, pe, false, bias);
      const Params<float> p = random_params<float>(c, 21);
      const int T = 5;
      const std::vector<int> tok = random_tokens(c, T, 8);
      ActivationCache<float> full;
      forward(p, tok, 1, T, full);
      const MatRM<double> WU = Dm(p.W_U.mat());
      for (int h2 = 0; h2 < c.n_heads; ++h2)
        for (int h1 = 0; h1 < c.n_heads; ++h1) {
          Intervention iv;
          iv.cuts.push_back({0, h1, 1, h2, Input::V});
          ActivationCache<float> cut;
          forward(p, tok, 1, T, cut, iv);
          for (int t = 0; t < T; ++t) {
            Attribution a = attribution(p, full, 0, t);
            const int q = index_of(a.path_names, "L1H" + std::to_string(h2) + "<-L0H" + std::to_string(h1));
            ASSERT_GE(q, 0);
            RowVecT<double> removed =
                (Dm(full.layers[1].result.slice(h2)).row(t) - Dm(cut.layers[1].result.slice(h2)).row(t)) * WU;
            EXPECT_LT((trow(a.paths, q) - removed).cwiseAbs().maxCoeff(), 1e-4) << config_name(c);
            // And attributing the cut run gives that path as zero, with the sums still exact.
            Attribution ac = attribution(p, cut, 0, t, iv);
            EXPECT_EQ(trow(ac.paths, q).cwiseAbs().maxCoeff(), 0.0);
            expect_sums(ac, config_name(c) + " cut");
          }
        }
    }
}

TEST(CircuitsAttribution, InterventionsAreAccountedFor) {
  Config c = tiny_config(2, PosEmbed::Standard, false, true);
  const Params<float> p = random_params<float>(c, 4);
  Intervention iv;
  HeadAblation mean_abl;
  mean_abl.layer = 0;
  mean_abl.head = 1;
  mean_abl.mean = true;
  mean_abl.mean_value.assign(c.d_model, 0.3f);
  iv.ablations.push_back(mean_abl);
  HeadAblation zero_abl;
  zero_abl.layer = 1;
  zero_abl.head = 0;
  iv.ablations.push_back(zero_abl);
  iv.cuts.push_back({0, 0, 1, 1, Input::V});
  iv.cuts.push_back({0, 1, 1, 1, Input::K});
  iv.remove_pos = true;
  ActivationCache<float> cache;
  forward(p, random_tokens(c, 10, 2), 2, 5, cache, iv);
  EXPECT_THROW(attribution(p, cache, 0, 0), std::invalid_argument);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 5; ++t) {
      Attribution a = attribution(p, cache, b, t, iv);
      expect_sums(a, "intervened");
      EXPECT_EQ(trow(a.parts, 1).cwiseAbs().maxCoeff(), 0.0);  // positions removed
      EXPECT_EQ(trow(a.parts, index_of(a.names, "L1H0")).cwiseAbs().maxCoeff(), 0.0);
      for (const auto& n : a.path_names) EXPECT_NE(n.rfind("L1H0<-", 0), 0u) << "an ablated head has no paths";
      EXPECT_EQ(a.path_names.size(), static_cast<std::size_t>(3 + c.n_heads));
    }
}

// Any target token: parts sum to its logit, each head's paths to its part, and the path order is
// by each path's share of that token's logit; the default target is the prediction.
TEST(CircuitsAttribution, AnyTargetTokenPartsSumToItsLogit) {
  Config c = tiny_config(2, PosEmbed::Standard, true, true);
  const Params<float> p = random_params<float>(c, 8);
  ActivationCache<float> cache;
  forward(p, random_tokens(c, 6, 2), 1, 6, cache);
  const int V = c.d_vocab;
  EXPECT_EQ(attribution(p, cache, 0, 5).target, attribution(p, cache, 0, 5).predicted);
  for (int target = 0; target < V; ++target) {
    const Attribution a = attribution(p, cache, 0, 5, Intervention(), target);
    EXPECT_EQ(a.target, target);
    double sum = 0;
    for (int r = 0; r < a.parts.shape[0]; ++r) sum += a.parts.data[static_cast<std::size_t>(r) * V + target];
    EXPECT_NEAR(sum, a.logits.data[target], 1e-4) << "target " << target;
    std::vector<double> group(a.parts.shape[0], 0.0);
    for (std::size_t q = 0; q < a.path_names.size(); ++q) group[a.path_part[q]] += a.paths.data[q * V + target];
    for (int r = 3; r < a.parts.shape[0]; ++r)
      if (r >= 3 + c.n_heads) EXPECT_NEAR(group[r], a.parts.data[static_cast<std::size_t>(r) * V + target], 1e-4);
    for (std::size_t i = 1; i < a.path_order.size(); ++i)
      EXPECT_GE(std::abs(a.paths.data[static_cast<std::size_t>(a.path_order[i - 1]) * V + target]),
                std::abs(a.paths.data[static_cast<std::size_t>(a.path_order[i]) * V + target]));
  }
  EXPECT_THROW(attribution(p, cache, 0, 5, Intervention(), V), std::invalid_argument);
  EXPECT_THROW(attribution(p, cache, 0, 5, Intervention(), -2), std::invalid_argument);
}

TEST(CircuitsAttribution, RejectsBadIndices) {
  Config c = tiny_config(1, PosEmbed::None, false, false);
  const Params<float> p = random_params<float>(c, 1);
  ActivationCache<float> cache;
  forward(p, random_tokens(c, 4, 1), 1, 4, cache);
  EXPECT_THROW(attribution(p, cache, 1, 0), std::invalid_argument);
  EXPECT_THROW(attribution(p, cache, -1, 0), std::invalid_argument);
  EXPECT_THROW(attribution(p, cache, 0, 4), std::invalid_argument);
  Config c2 = tiny_config(2, PosEmbed::None, false, false);
  EXPECT_THROW(attribution(random_params<float>(c2, 1), cache, 0, 0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// 2. Factored full circuits
// ---------------------------------------------------------------------------------------------

TEST(CircuitsFull, EqualExplicitProducts) {
  for (PosEmbed pe : {PosEmbed::None, PosEmbed::Standard, PosEmbed::Shortformer}) {
    Config c = tiny_config(2, pe, false, false);
    const Params<float> p = random_params<float>(c, 7);
    const MatRM<double> WE = Dm(p.W_E.mat()), WU = Dm(p.W_U.mat());
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < c.n_heads; ++h) {
        const auto& w = p.blocks[l];
        MatRM<double> WQ = Dm(w.W_Q.slice(h)), WK = Dm(w.W_K.slice(h)), WV = Dm(w.W_V.slice(h)), WO = Dm(w.W_O.slice(h));
        MatRM<double> qk = WE * WQ * WK.transpose() * WE.transpose();
        MatRM<double> ov = WE * WV * WO * WU;
        Factored fq = full_qk(p, l, h), fo = full_ov(p, l, h);
        EXPECT_EQ(fq.inner(), c.d_head);
        ASSERT_EQ(fq.rows(), c.d_vocab);
        ASSERT_EQ(fq.cols(), c.d_vocab);
        EXPECT_LT((materialize(fq) - qk).cwiseAbs().maxCoeff(), 1e-9);
        EXPECT_LT((materialize(fo) - ov).cwiseAbs().maxCoeff(), 1e-9);
        for (int i = 0; i < c.d_vocab; ++i) {
          EXPECT_LT((row_of(fo, i) - ov.row(i)).cwiseAbs().maxCoeff(), 1e-9);
          for (int j = 0; j < c.d_vocab; ++j) {
            EXPECT_NEAR(entry(fq, i, j), qk(i, j), 1e-9);
            EXPECT_NEAR(entry(fo, i, j), ov(i, j), 1e-9);
          }
        }
        if (pe == PosEmbed::None) {
          EXPECT_THROW(pos_qk(p, l, h), std::invalid_argument);
        } else {
          const MatRM<double> WP = Dm(p.W_pos.mat());
          Factored fp = pos_qk(p, l, h);
          ASSERT_EQ(fp.rows(), c.n_ctx);
          EXPECT_LT((materialize(fp) - WP * WQ * WK.transpose() * WP.transpose()).cwiseAbs().maxCoeff(), 1e-9);
        }
      }
    EXPECT_THROW(full_qk(p, 2, 0), std::invalid_argument);
    EXPECT_THROW(full_ov(p, 0, 2), std::invalid_argument);
    EXPECT_THROW(full_ov(p, -1, 0), std::invalid_argument);
    EXPECT_THROW(entry(full_ov(p, 0, 0), 0, c.d_vocab), std::invalid_argument);
  }
}

// The K- and Q-composition terms of a later head's QK circuit, against plain loops over the
// weights: entry (a, b) is sum_i q_a[i] k_b[i] with, for K, q_a = W_E[a] W_Q^{h2} and
// k_b = (W_E[b] W_V^{h1} W_O^{h1}) W_K^{h2}; for Q, q_a = (W_E[a] W_V^{h1} W_O^{h1}) W_Q^{h2} and
// k_b = W_E[b] W_K^{h2}.
TEST(CircuitsFull, ComposedQkEqualsAPlainLoop) {
  Config c = tiny_config(3, PosEmbed::Shortformer, false, true);
  const Params<float> p = random_params<float>(c, 12);
  const int V = c.d_vocab, D = c.d_model, Dh = c.d_head;
  // x W for one row x of length D and W a [D, n] slice, in plain loops.
  auto times = [&](const std::vector<double>& x, const auto& W, int n) {
    std::vector<double> out(n, 0.0);
    for (int j = 0; j < n; ++j)
      for (int d = 0; d < static_cast<int>(x.size()); ++d) out[j] += x[d] * static_cast<double>(W(d, j));
    return out;
  };
  auto embed = [&](int t) {
    std::vector<double> x(D);
    for (int d = 0; d < D; ++d) x[d] = p.W_E.mat()(t, d);
    return x;
  };
  for (int l2 = 1; l2 < 3; ++l2)
    for (int l1 = 0; l1 < l2; ++l1)
      for (int h2 = 0; h2 < c.n_heads; ++h2)
        for (int h1 = 0; h1 < c.n_heads; ++h1)
          for (Input in : {Input::K, Input::Q}) {
            const auto& w1 = p.blocks[l1];
            const auto& w2 = p.blocks[l2];
            auto moved = [&](int t) { return times(times(embed(t), w1.W_V.slice(h1), Dh), w1.W_O.slice(h1), D); };
            const MatRM<double> m = materialize(composed_qk(p, l2, h2, l1, h1, in));
            ASSERT_EQ(m.rows(), V);
            ASSERT_EQ(m.cols(), V);
            for (int a = 0; a < V; ++a)
              for (int b = 0; b < V; ++b) {
                const std::vector<double> q = times(in == Input::K ? embed(a) : moved(a), w2.W_Q.slice(h2), Dh);
                const std::vector<double> k = times(in == Input::K ? moved(b) : embed(b), w2.W_K.slice(h2), Dh);
                double want = 0;
                for (int i = 0; i < Dh; ++i) want += q[i] * k[i];
                EXPECT_NEAR(m(a, b), want, 1e-9 * (1 + std::abs(want)));
              }
          }
  EXPECT_THROW(composed_qk(p, 1, 0, 1, 0, Input::K), std::invalid_argument);  // same layer
  EXPECT_THROW(composed_qk(p, 0, 0, 0, 1, Input::K), std::invalid_argument);
  EXPECT_THROW(composed_qk(p, 2, 0, 0, 0, Input::V), std::invalid_argument);
  EXPECT_THROW(composed_qk(p, 1, 0, 0, c.n_heads, Input::K), std::invalid_argument);
  EXPECT_THROW(composed_qk(p, 3, 0, 0, 0, Input::K), std::invalid_argument);
}

TEST(CircuitsFull, TopKMatchesSortingTheExplicitMatrix) {
  Config c = tiny_config(1, PosEmbed::None, false, false);
  const Params<float> p = random_params<float>(c, 5);
  Factored f = full_ov(p, 0, 1);
  MatRM<double> M = materialize(f);
  for (bool largest : {true, false}) {
    std::vector<double> all;
    for (int i = 0; i < M.rows(); ++i)
      for (int j = 0; j < M.cols(); ++j) all.push_back(M(i, j));
    std::sort(all.begin(), all.end());
    if (largest) std::reverse(all.begin(), all.end());
    const TopEntries found = top_entries(f, 6, largest);
    EXPECT_TRUE(found.exact);
    const std::vector<Entry>& top = found.entries;
    ASSERT_EQ(top.size(), 6u);
    for (int i = 0; i < 6; ++i) {
      EXPECT_NEAR(top[i].value, all[i], 1e-12);
      EXPECT_NEAR(M(top[i].row, top[i].col), top[i].value, 1e-12);
    }
    for (int r = 0; r < M.rows(); ++r) {
      std::vector<double> row(M.row(r).data(), M.row(r).data() + M.cols());
      std::sort(row.begin(), row.end());
      if (largest) std::reverse(row.begin(), row.end());
      std::vector<Entry> rt = row_topk(f, r, 3, largest);
      ASSERT_EQ(rt.size(), 3u);
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(rt[i].row, r);
        EXPECT_NEAR(rt[i].value, row[i], 1e-12);
        EXPECT_NEAR(M(r, rt[i].col), rt[i].value, 1e-12);
      }
    }
  }
  EXPECT_EQ(row_topk(f, 0, 100).size(), static_cast<std::size_t>(c.d_vocab));
  EXPECT_EQ(top_entries(f, 1000).entries.size(), static_cast<std::size_t>(c.d_vocab * c.d_vocab));
  EXPECT_THROW(row_topk(f, c.d_vocab, 1), std::invalid_argument);
  EXPECT_THROW(top_entries(f, -1), std::invalid_argument);
}

// The k best entries of A B, best first with ties in (row, col) order, straight from the product;
// only the given rows when `only` is not empty.
std::vector<Entry> dense_best(const MatRM<double>& M, int k, bool largest, const std::vector<int>& only = {}) {
  std::vector<Entry> all;
  for (int i = 0; i < M.rows(); ++i) {
    if (!only.empty() && std::find(only.begin(), only.end(), i) == only.end()) continue;
    for (int j = 0; j < M.cols(); ++j) all.push_back({M(i, j), i, j});
  }
  std::stable_sort(all.begin(), all.end(), [&](const Entry& a, const Entry& b) { return largest ? a.value > b.value : a.value < b.value; });
  all.resize(std::min<std::size_t>(k, all.size()));
  return all;
}

// Rows whose norm rules them out are not read, and the answer is still exact; a search cut short by
// its budget says so, gives the best of the rows it read (those of largest norm), and bounds the rest.
TEST(CircuitsFull, TopEntriesPruneByNormAndSayWhenTheBudgetCutsThemShort) {
  Rng rng(21);
  const int R = 600, C = 700, K = 8;
  Factored f{MatRM<double>(R, K), MatRM<double>(K, C)};
  for (int i = 0; i < R; ++i)
    for (int d = 0; d < K; ++d) f.A(i, d) = (rng.uniform() * 2 - 1) * (i % 50 == 7 ? 40.0 : 1.0);  // 12 strong rows
  for (int i = 0; i < K * C; ++i) f.B.data()[i] = rng.uniform() * 2 - 1;
  const MatRM<double> M = f.A * f.B;
  for (bool largest : {true, false}) {
    const TopEntries t = top_entries(f, 10, largest);
    EXPECT_TRUE(t.exact);
    EXPECT_LT(t.rows_searched, R) << "the strong rows' entries rule the others out";
    EXPECT_EQ(search_note(t, largest), "");
    const TopEntries both = extreme_entries(f, 10).side(largest);  // both sides in one pass
    EXPECT_TRUE(both.exact);
    ASSERT_EQ(both.entries.size(), t.entries.size());
    for (std::size_t i = 0; i < t.entries.size(); ++i) EXPECT_EQ(both.entries[i].value, t.entries[i].value);
    const std::vector<Entry> want = dense_best(M, 10, largest);
    ASSERT_EQ(t.entries.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(t.entries[i].row, want[i].row);
      EXPECT_EQ(t.entries[i].col, want[i].col);
      EXPECT_DOUBLE_EQ(t.entries[i].value, want[i].value);
    }
  }
  // Rows of like norms rule each other out late: a budget of about two blocks of rows cuts the
  // search short, and it says so.
  Factored g = f;
  for (int i = 0; i < R; ++i) g.A.row(i) = g.A.row(i).normalized() * (1 + 0.001 * (i % 13));
  const MatRM<double> N = g.A * g.B;
  std::vector<int> norm_order(R);
  for (int i = 0; i < R; ++i) norm_order[i] = i;
  std::stable_sort(norm_order.begin(), norm_order.end(), [&](int a, int b) { return g.A.row(a).norm() > g.A.row(b).norm(); });
  for (bool largest : {true, false}) {
    const TopEntries cut = top_entries(g, 10, largest, 2.0 * 32 * C * K);
    EXPECT_FALSE(cut.exact);
    EXPECT_GE(cut.rows_searched, 64);
    EXPECT_LT(cut.rows_searched, R);
    EXPECT_EQ(cut.rows, R);
    const std::vector<int> searched(norm_order.begin(), norm_order.begin() + cut.rows_searched);
    const std::vector<Entry> best_read = dense_best(N, 10, largest, searched);
    ASSERT_EQ(cut.entries.size(), best_read.size());
    for (std::size_t i = 0; i < best_read.size(); ++i) EXPECT_DOUBLE_EQ(cut.entries[i].value, best_read[i].value);
    for (int i : std::vector<int>(norm_order.begin() + cut.rows_searched, norm_order.end()))
      EXPECT_LE(N.row(i).cwiseAbs().maxCoeff(), cut.bound);
    const std::string note = search_note(cut, largest);
    EXPECT_NE(note.find("among the " + std::to_string(cut.rows_searched) + " rows of largest norm (of 600"), std::string::npos) << note;
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Eigenvalues
// ---------------------------------------------------------------------------------------------

// Each small-product eigenvalue matches an eigenvalue of the explicit V x V table, and the
// table's remaining eigenvalues are zero.
void expect_same_nonzero_eigenvalues(const Spectrum& s, const MatRM<double>& full, const std::string& what) {
  Eigen::ComplexEigenSolver<Eigen::MatrixXcd> es(full.cast<std::complex<double>>());
  std::vector<std::complex<double>> ev(es.eigenvalues().data(), es.eigenvalues().data() + es.eigenvalues().size());
  const double scale = 1.0 + full.norm();
  std::vector<bool> used(ev.size(), false);
  for (const auto& l : s.eigenvalues) {
    int best = -1;
    for (std::size_t i = 0; i < ev.size(); ++i)
      if (!used[i] && (best < 0 || std::abs(ev[i] - l) < std::abs(ev[best] - l))) best = static_cast<int>(i);
    ASSERT_GE(best, 0);
    EXPECT_LT(std::abs(ev[best] - l), 1e-7 * scale) << what;
    used[best] = true;
  }
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (!used[i]) {
      EXPECT_LT(std::abs(ev[i]), 1e-6 * scale) << what;
    }
}

TEST(CircuitsEigenvalues, MatchTheExplicitTables) {
  Config c = tiny_config(2, PosEmbed::Standard, false, false);
  const Params<float> p = random_params<float>(c, 13);
  std::vector<Spectrum> ovs = ov_spectra(p), qks = qk_spectra(p);
  ASSERT_EQ(ovs.size(), static_cast<std::size_t>(c.n_layers * c.n_heads));
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h) {
      Spectrum ov = ovs[l * c.n_heads + h], qk = qks[l * c.n_heads + h];
      ASSERT_EQ(ov.eigenvalues.size(), static_cast<std::size_t>(c.d_head));
      expect_same_nonzero_eigenvalues(ov, materialize(full_ov(p, l, h)), "OV");
      expect_same_nonzero_eigenvalues(qk, materialize(full_qk(p, l, h)), "QK");
      for (std::size_t i = 1; i < ov.eigenvalues.size(); ++i)
        EXPECT_GE(std::abs(ov.eigenvalues[i - 1]), std::abs(ov.eigenvalues[i]));
      double re = 0, ab = 0;
      for (auto& x : ov.eigenvalues) re += x.real(), ab += std::abs(x);
      EXPECT_NEAR(ov.copying_score, re / ab, 1e-12);
      EXPECT_GE(ov.copying_score, -1.0);
      EXPECT_LE(ov.copying_score, 1.0);
      EXPECT_GE(ov.positive_fraction, 0.0);
      EXPECT_LE(ov.positive_fraction, 1.0);
    }
  EXPECT_THROW(ov_spectrum(p, 2, 0), std::invalid_argument);
  EXPECT_EQ(spectrum(pos_qk(p, 0, 0)).eigenvalues.size(), static_cast<std::size_t>(c.d_head));
  Factored rect;
  rect.A = MatRM<double>::Ones(3, 2);
  rect.B = MatRM<double>::Ones(2, 4);
  EXPECT_THROW(spectrum(rect), std::invalid_argument);
}

// W_E near the identity and W_V W_O W_U = +I (or -I) on a d_head-dimensional subspace: the full
// OV table is a copying (anti-copying) projection.
Params<float> copying_model(float sign) {
  Config c;
  c.n_layers = 1;
  c.n_heads = 1;
  c.d_model = 8;
  c.d_head = 4;
  c.n_ctx = 4;
  c.d_vocab = 8;
  c.pos_embed = PosEmbed::None;
  Params<float> p = make_params<float>(c);
  Rng rng(3);
  auto WE = p.W_E.mat();
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) WE(i, j) = (i == j ? 1.0f : 0.0f) + static_cast<float>(0.05 * rng.normal());
  auto WU = p.W_U.mat();
  for (int i = 0; i < 8; ++i) WU(i, i) = 1.0f;
  for (int e = 0; e < 4; ++e) {
    p.blocks[0].W_V.slice(0)(e, e) = 1.0f;
    p.blocks[0].W_O.slice(0)(e, e) = sign;
  }
  return p;
}

TEST(CircuitsEigenvalues, CopyingHeadScoresNearPlusOneAndAntiCopyingNearMinusOne) {
  Spectrum cp = ov_spectrum(copying_model(1.0f), 0, 0);
  EXPECT_GT(cp.copying_score, 0.95);
  EXPECT_EQ(cp.positive_fraction, 1.0);
  for (auto& l : cp.eigenvalues) EXPECT_NEAR(l.real(), 1.0, 0.2);
  Spectrum anti = ov_spectrum(copying_model(-1.0f), 0, 0);
  EXPECT_LT(anti.copying_score, -0.95);
  EXPECT_EQ(anti.positive_fraction, 0.0);
}

// ---------------------------------------------------------------------------------------------
// 4. Composition scores
// ---------------------------------------------------------------------------------------------

// A score stands out when it exceeds the baseline by kCompositionSigmas standard deviations.
TEST(CircuitsComposition, AboveBaselineAndMaximum) {
  Config c = tiny_config(3, PosEmbed::Shortformer, false, true);
  const Params<float> p = random_params<float>(c, 21);
  const CompositionScores sc = composition_scores(p, 20, 1);
  ASSERT_EQ(sc.above_baseline.shape, sc.scores.shape);
  const double bar = sc.baseline + kCompositionSigmas * sc.baseline_std;
  const int L = c.n_layers, H = c.n_heads;
  double max = sc.baseline;
  for (int kind = 0; kind < 3; ++kind)
    for (int l1 = 0; l1 < L; ++l1)
      for (int h1 = 0; h1 < H; ++h1)
        for (int l2 = 0; l2 < L; ++l2)
          for (int h2 = 0; h2 < H; ++h2) {
            const std::size_t i = (((static_cast<std::size_t>(kind) * L + l1) * H + h1) * L + l2) * H + h2;
            const bool later = l1 < l2;
            EXPECT_EQ(sc.above_baseline.data[i], later && sc.scores.data[i] > bar ? 1.0f : 0.0f);
            if (later) max = std::max(max, static_cast<double>(sc.scores.data[i]));
          }
  EXPECT_EQ(sc.max_score, max);
}

TEST(CircuitsComposition, MatchesTheDefinitionAndIsZeroUnlessLater) {
  for (int layers : {1, 2, 3}) {
    Config c = tiny_config(layers, PosEmbed::Shortformer, false, true);
    const Params<float> p = random_params<float>(c, 17);
    CompositionScores sc = composition_scores(p, 20, 1);
    const int L = c.n_layers, H = c.n_heads;
    ASSERT_EQ(sc.scores.shape, (Shape{3, L, H, L, H}));
    auto at = [&](int kind, int l1, int h1, int l2, int h2) {
      return sc.scores.data[(((static_cast<std::size_t>(kind) * L + l1) * H + h1) * L + l2) * H + h2];
    };
    for (int l1 = 0; l1 < L; ++l1)
      for (int h1 = 0; h1 < H; ++h1)
        for (int l2 = 0; l2 < L; ++l2)
          for (int h2 = 0; h2 < H; ++h2) {
            if (l2 <= l1) {
              for (int kind = 0; kind < 3; ++kind) EXPECT_EQ(at(kind, l1, h1, l2, h2), 0.0f);
              continue;
            }
            const auto &a = p.blocks[l1], &b = p.blocks[l2];
            MatRM<double> OV1 = Dm(a.W_V.slice(h1)) * Dm(a.W_O.slice(h1));
            MatRM<double> OV2 = Dm(b.W_V.slice(h2)) * Dm(b.W_O.slice(h2));
            MatRM<double> QK2 = Dm(b.W_Q.slice(h2)) * Dm(b.W_K.slice(h2)).transpose();
            auto def = [](const MatRM<double>& X, const MatRM<double>& Y) {
              return (X * Y).norm() / (X.norm() * Y.norm());
            };
            EXPECT_NEAR(at(0, l1, h1, l2, h2), def(OV1, QK2), 1e-5);
            EXPECT_NEAR(at(1, l1, h1, l2, h2), def(OV1, MatRM<double>(QK2.transpose())), 1e-5);
            EXPECT_NEAR(at(2, l1, h1, l2, h2), def(OV1, OV2), 1e-5);
            EXPECT_NEAR(composition_score(OV1, OV2), def(OV1, OV2), 1e-12);
            EXPECT_GT(at(0, l1, h1, l2, h2), 0.0f);
          }
  }
}

// Rng::normals: the same draws from the same state, in any split at an even count; an odd count
// drops the last value; and the draws are standard normal (mean, variance, and the shares within
// one and two standard deviations).
TEST(CircuitsComposition, BulkNormalsAreStandardNormalAndReproducible) {
  std::vector<double> whole(12), parts(13, 99.0);
  Rng(5).normals(whole.data(), 12);
  Rng r(5);
  r.normals(parts.data(), 6);
  r.normals(parts.data() + 6, 6);
  EXPECT_EQ(parts[12], 99.0);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(parts[i], whole[i]) << i;
  std::vector<double> odd(5, 99.0);
  Rng(5).normals(odd.data(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(odd[i], whole[i]) << i;
  std::vector<double> many(200000);
  Rng(9).normals(many.data(), many.size());
  double s = 0, s2 = 0;
  int in1 = 0, in2 = 0;
  for (double v : many) s += v, s2 += v * v, in1 += std::fabs(v) < 1, in2 += std::fabs(v) < 2;
  const double n = static_cast<double>(many.size()), mean = s / n, var = s2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(in1 / n, 0.6827, 0.005);
  EXPECT_NEAR(in2 / n, 0.9545, 0.003);
}

TEST(CircuitsComposition, RandomBaselineIsTheMeanOfTheDefinitionAndStable) {
  const int D = 6, Dh = 3;
  // Replay the baseline's draws (A_l, A_r, B_l, B_r, each [D, Dh] row-major) and score explicitly.
  Rng rng(42);
  double sum = 0;
  for (int s = 0; s < 5; ++s) {
    MatRM<double> m[4];
    for (auto& x : m) {
      x.resize(D, Dh);
      rng.normals(x.data(), static_cast<std::size_t>(x.size()));
    }
    sum += composition_score(m[0] * m[1].transpose(), m[2] * m[3].transpose());
  }
  EXPECT_NEAR(random_composition_baseline(D, Dh, 5, 42), sum / 5, 1e-12);

  double sd = 0;
  const double b1 = random_composition_baseline(32, 8, 200, 0, &sd);
  EXPECT_GT(b1, 0.0);
  EXPECT_LT(b1, 1.0);
  EXPECT_GT(sd, 0.0);
  EXPECT_EQ(b1, random_composition_baseline(32, 8, 200, 0));
  EXPECT_NEAR(b1, random_composition_baseline(32, 8, 200, 99), 0.03);
  Config c = tiny_config(2, PosEmbed::None, false, false);
  CompositionScores sc = composition_scores(random_params<float>(c, 2));
  EXPECT_EQ(sc.baseline_samples, 200);
  EXPECT_GT(sc.baseline, 0.0);
  EXPECT_LT(sc.baseline, 1.0);
  EXPECT_THROW(random_composition_baseline(6, 3, 0, 0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// 5. Skip-trigrams
// ---------------------------------------------------------------------------------------------

double softmax_at(const ActivationCache<float>& cache, int row, int o) {
  RowVecT<double> lg = Dm(cache.logits.mat()).row(row);
  const double mx = lg.maxCoeff();
  return std::exp(lg(o) - mx) / (lg.array() - mx).exp().sum();
}

TEST(CircuitsSkipTrigrams, TopTriplesAgreeWithBruteForceOverTheTables) {
  Config c = tiny_config(1, PosEmbed::Shortformer, false, false);
  const Params<float> p = random_params<float>(c, 29);
  const int V = c.d_vocab, k = 12;
  for (int h = 0; h < c.n_heads; ++h) {
    const MatRM<double> QK = materialize(full_qk(p, 0, h)), OV = materialize(full_ov(p, 0, h));
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.d_head));
    auto score = [&](int s, int d, int o) {
      return (QK(d, s) - QK.row(d).mean()) * scale + (OV(s, o) - OV.row(s).mean());
    };
    std::vector<double> all;
    for (int s = 0; s < V; ++s)
      for (int d = 0; d < V; ++d)
        for (int o = 0; o < V; ++o) all.push_back(score(s, d, o));
    std::sort(all.rbegin(), all.rend());
    SkipTrigrams st = skip_trigrams(p, 0, h, k, -1, 8);
    ASSERT_EQ(st.top.size(), static_cast<std::size_t>(k));
    std::set<std::tuple<int, int, int>> top;
    for (int i = 0; i < k; ++i) {
      const SkipTrigram& t = st.top[i];
      EXPECT_NEAR(t.score, all[i], 1e-9);
      EXPECT_NEAR(t.score, score(t.source, t.dest, t.out), 1e-9);
      EXPECT_NEAR(t.qk, QK(t.dest, t.source), 1e-9);
      EXPECT_NEAR(t.ov, OV(t.source, t.out), 1e-9);
      top.insert({t.source, t.dest, t.out});
    }
    ASSERT_FALSE(st.bugs.empty());
    EXPECT_LE(st.bugs.size(), 8u);
    ActivationCache<float> cache;
    for (const SkipTrigramBug& g : st.bugs) {
      EXPECT_TRUE(top.count({g.source, g.dest, g.own_out}));
      EXPECT_TRUE(top.count({g.source, g.partner_dest, g.out}));
      EXPECT_NE(g.dest, g.partner_dest);
      EXPECT_NE(g.out, g.own_out);
      EXPECT_NEAR(g.score, score(g.source, g.dest, g.out), 1e-9);
      EXPECT_EQ(g.crossed_in_top, top.count({g.source, g.dest, g.out}) > 0);
      forward(p, {g.source, g.dest, g.dest, g.dest}, 2, 2, cache);
      EXPECT_NEAR(g.p_own, softmax_at(cache, 1, g.own_out), 1e-5);
      EXPECT_NEAR(g.p_crossed, softmax_at(cache, 1, g.out), 1e-5);
      EXPECT_NEAR(g.p_crossed_without_source, softmax_at(cache, 3, g.out), 1e-5);
    }
  }
}

// Source 0 is attended to from destinations 1 and 2; its OV row raises outputs 3 and 4. The head
// has learned "0 ... 1 -> 3" and "0 ... 2 -> 4" as strongly as the crossed "0 ... 1 -> 4": the
// crossed output leaks, well above its probability without the source.
Params<float> bug_model() {
  Config c;
  c.n_layers = 1;
  c.n_heads = 1;
  c.d_model = 12;
  c.d_head = 2;
  c.n_ctx = 4;
  c.d_vocab = 6;
  c.pos_embed = PosEmbed::None;
  Params<float> p = make_params<float>(c);
  for (int t = 0; t < 6; ++t) {
    p.W_E.mat()(t, t) = 1.0f;      // tokens in dims 0..5
    p.W_U.mat()(6 + t, t) = 1.0f;  // logits read dims 6..11: no direct path
  }
  auto& w = p.blocks[0];
  w.W_Q.slice(0)(1, 0) = 3.0f;
  w.W_Q.slice(0)(2, 0) = 3.0f;
  w.W_K.slice(0)(0, 0) = 3.0f;
  w.W_V.slice(0)(0, 1) = 1.0f;
  w.W_O.slice(0)(1, 6 + 3) = 6.0f;
  w.W_O.slice(0)(1, 6 + 4) = 5.5f;
  return p;
}

TEST(CircuitsSkipTrigrams, HandBuiltHeadShowsTheCrossedTripleLeak) {
  const Params<float> p = bug_model();
  for (int bos : {-1, 5}) {
    SkipTrigrams st = skip_trigrams(p, 0, 0, 4, bos);
    ASSERT_EQ(st.top.size(), 4u);
    std::set<std::tuple<int, int, int>> top;
    for (const auto& t : st.top) top.insert({t.source, t.dest, t.out});
    EXPECT_EQ(top, (std::set<std::tuple<int, int, int>>{{0, 1, 3}, {0, 2, 3}, {0, 1, 4}, {0, 2, 4}}));
    EXPECT_EQ(st.top[0].out, 3);  // 6 > 5.5
    EXPECT_NEAR(st.top[0].qk, 9.0, 1e-6);
    EXPECT_NEAR(st.top[0].ov, 6.0, 1e-6);
    const SkipTrigramBug* leak = nullptr;
    for (const auto& g : st.bugs)
      if (g.source == 0 && g.dest == 1 && g.out == 4) leak = &g;
    ASSERT_NE(leak, nullptr);
    EXPECT_EQ(leak->own_out, 3);
    EXPECT_EQ(leak->partner_dest, 2);
    EXPECT_TRUE(leak->crossed_in_top);
    EXPECT_GT(leak->p_own, 0.5);
    EXPECT_GT(leak->p_crossed, 0.3);
    EXPECT_NEAR(leak->p_crossed_without_source, 1.0 / 6.0, 1e-3);  // no source: uniform logits
    EXPECT_GT(leak->p_crossed, leak->p_crossed_without_source + 0.15);
    EXPECT_LE(st.bugs.size(), 4u);  // only four distinct crossed triples exist
  }
}

TEST(CircuitsSkipTrigrams, RejectsBadArguments) {
  const Params<float> p = bug_model();
  EXPECT_THROW(skip_trigrams(p, 1, 0, 4), std::invalid_argument);
  EXPECT_THROW(skip_trigrams(p, 0, 1, 4), std::invalid_argument);
  EXPECT_THROW(skip_trigrams(p, 0, 0, 0), std::invalid_argument);
  EXPECT_THROW(skip_trigrams(p, 0, 0, 4, 6), std::invalid_argument);
  EXPECT_THROW(skip_trigrams(p, 0, 0, 4, -1, -1), std::invalid_argument);
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

// Analyses are sized before they run: a 50,000-token vocabulary's full table is refused (with a
// sentence), as is top-k over it, while a narrow model's eigenvalues come from the small side.
TEST(CircuitsLimits, LargeAnalysesAreRefusedOrBounded) {
  Config big;
  big.n_layers = 1, big.n_heads = 1, big.d_model = 4, big.d_head = 16, big.n_ctx = 4, big.d_vocab = 50000;
  big.pos_embed = PosEmbed::None;
  const Params<float> p = random_params<float>(big, 5);
  const Factored qk = full_qk(p, 0, 0);
  try {
    materialize(qk);
    ADD_FAILURE() << "formed a 50000 x 50000 table";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the full 50000 x 50000 table"), std::string::npos) << e.what();
  }
  // Top-k over 2.5 billion entries answers within the budget, and says whether it read them all.
  const TopEntries t = top_entries(qk, 5);
  EXPECT_EQ(t.entries.size(), 5u);
  EXPECT_EQ(search_note(t, true).empty(), t.exact);
  if (!t.exact) EXPECT_LT(t.rows_searched, 50000);
  EXPECT_THROW(skip_trigrams(p, 0, 0, 4), std::invalid_argument);
  EXPECT_NO_THROW(row_topk(qk, 3, 5));

  // d_model 3 < d_head 12: the spectrum is computed on the 3 x 3 side, padded with zeros to 12,
  // and matches the explicit table's non-zero eigenvalues.
  Config narrow = big;
  narrow.d_model = 3, narrow.d_head = 12, narrow.d_vocab = 16;
  const Params<float> q = random_params<float>(narrow, 6);
  const Spectrum ov = ov_spectrum(q, 0, 0), qs = qk_spectrum(q, 0, 0);
  ASSERT_EQ(ov.eigenvalues.size(), 12u);
  ASSERT_EQ(qs.eigenvalues.size(), 12u);
  expect_same_nonzero_eigenvalues(ov, materialize(full_ov(q, 0, 0)), "narrow OV");
  expect_same_nonzero_eigenvalues(qs, materialize(full_qk(q, 0, 0)), "narrow QK");
  const Spectrum direct = spectrum(full_ov(q, 0, 0));
  EXPECT_NEAR(ov.copying_score, direct.copying_score, 1e-9);
}

}  // namespace
}  // namespace cs
