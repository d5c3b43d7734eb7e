// Forward pass: a plain-loop oracle (double precision, no Eigen) against the Eigen forward,
// and the interventions (head ablations, path cuts, positional-embedding removal).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "kernels/relaxed.h"
#include "model.h"
#include "oracle_forward.h"
#include "test_util.h"

namespace cs {
namespace {

using testing::Oracle;
using testing::oracle_forward;

void expect_close(double got, double want, double rel, const std::string& what) {
  ASSERT_LE(std::abs(got - want), rel * std::max(1.0, std::abs(want))) << what << ": got " << got << ", oracle " << want;
}

std::vector<int> random_tokens(const Config& c, int T, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(T);
  for (auto& x : t) x = rng.below(c.d_vocab);
  return t;
}

// Every config's logits and patterns against the oracle's loops, on one full context of random
// tokens; config i draws its weights from seed seed0 + i.
void expect_matches_oracle(const std::vector<Config>& configs, std::uint64_t seed0) {
  int n = 0;
  for (const Config& c : configs) {
    SCOPED_TRACE(testing::config_name(c));
    Params<float> p = testing::random_params<float>(c, seed0 + n++);
    std::vector<int> tok = random_tokens(c, c.n_ctx, n);
    ActivationCache<float> cache;
    forward(p, tok, 1, c.n_ctx, cache);
    Oracle o = oracle_forward(p, tok, false);
    for (std::size_t i = 0; i < o.logits.size(); ++i) expect_close(cache.logits.data[i], o.logits[i], 1e-5, "logit");
    for (int l = 0; l < c.n_layers; ++l)
      for (std::size_t i = 0; i < o.patterns[l].size(); ++i)
        expect_close(cache.layers[l].pattern.data[i], o.patterns[l][i], 1e-5, "pattern L" + std::to_string(l));
  }
}

TEST(Forward, EigenMatchesPlainLoopOracle) {
  std::vector<Config> configs = testing::all_option_configs();
  // Plus a larger, more realistic shape.
  Config big;
  big.n_layers = 2;
  big.n_heads = 4;
  big.d_model = 32;
  big.d_head = 8;
  big.n_ctx = 40;
  big.d_vocab = 30;
  big.smeared_keys = true;
  big.use_bias = true;
  configs.push_back(big);
  expect_matches_oracle(configs, 50);
}

// LayerNorm (LN, LNPre) and MLPs against the oracle's loops, plus one wider shape with both.
TEST(Forward, NormalizationAndMlpMatchPlainLoopOracle) {
  std::vector<Config> configs = testing::norm_mlp_configs();
  Config big = testing::tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LN, 64, Act::GELU);
  big.n_heads = 4, big.d_model = 32, big.d_head = 8, big.n_ctx = 40, big.d_vocab = 30, big.init_std = 0;
  configs.push_back(big);
  expect_matches_oracle(configs, 70);
}

// What ln1 hands attention is centred, of mean square 1 (up to eps) before w and b: LNPre's output.
TEST(Forward, LayerNormPreOutputIsCentredWithUnitScale) {
  Config c = testing::tiny_norm_mlp_config(1, PosEmbed::Standard, Norm::LNPre, 0, Act::GELU);
  Params<float> p = testing::random_params<float>(c, 5);
  std::vector<int> tok = random_tokens(c, c.n_ctx, 2);
  ActivationCache<float> cache;
  forward(p, tok, 1, c.n_ctx, cache);
  const auto x = cache.layers[0].ln1_out.mat();
  for (int t = 0; t < c.n_ctx; ++t) {
    EXPECT_NEAR(x.row(t).mean(), 0.0, 1e-6);
    EXPECT_NEAR(x.row(t).squaredNorm() / c.d_model, 1.0, 1e-3);
  }
}

// The activations are sized for each pass, not for the whole context: a model whose context is
// too long to compute in one pass opens, runs a short sequence, and refuses a long one in words.
TEST(Forward, ActivationsAreSizedForThePassItself) {
  Config c = testing::tiny_config(2, PosEmbed::Standard, false, false);
  c.n_heads = 8;
  c.n_ctx = 8192;
  ASSERT_NO_THROW(c.validate());
  Params<float> p = testing::random_params<float>(c, 3);
  ActivationCache<float> cache;
  ASSERT_NO_THROW(forward(p, random_tokens(c, 300, 1), 1, 300, cache));
  const std::string msg = testing::invalid_argument_message([&] { forward(p, random_tokens(c, 8000, 2), 1, 8000, cache); });
  EXPECT_TRUE(testing::contains(msg, "forward: a pass over 8000 tokens would need")) << msg;
  EXPECT_TRUE(testing::contains(msg, "MB of activations; circuitscope allows at most 256 MB (use fewer tokens)")) << msg;
  // The size counts what the pass keeps: 1,700 tokens fit without the attention scores (one
  // head's at a time) and are refused when the cache is asked to keep every head's scores.
  ASSERT_GT(forward_bytes(c, 1, 1700, -1, true, true), kMaxForwardBytes);
  ASSERT_LE(forward_bytes(c, 1, 1700, -1, false, true), kMaxForwardBytes);
  EXPECT_LT(forward_bytes(c, 1, 1700, -1, false, false), forward_bytes(c, 1, 1700, -1, false, true));
  ActivationCache<float> lean;
  ASSERT_NO_THROW(forward(p, random_tokens(c, 1700, 3), 1, 1700, lean));
  ActivationCache<float> full;
  full.keep_scores = true;
  EXPECT_TRUE(testing::contains(testing::invalid_argument_message([&] { forward(p, random_tokens(c, 1700, 3), 1, 1700, full); }),
                                "forward: a pass over 1700 tokens would need"));
}

TEST(Forward, BatchRowsAreIndependent) {
  Config c = testing::tiny_config(2, PosEmbed::Shortformer, true, true);
  Params<float> p = testing::random_params<float>(c, 9);
  std::vector<int> a = random_tokens(c, 5, 1), b = random_tokens(c, 5, 2), ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  ActivationCache<float> ca, cb, cab;
  forward(p, a, 1, 5, ca);
  forward(p, b, 1, 5, cb);
  forward(p, ab, 2, 5, cab);
  for (std::size_t i = 0; i < ca.logits.size(); ++i) {
    EXPECT_FLOAT_EQ(cab.logits.data[i], ca.logits.data[i]);
    EXPECT_FLOAT_EQ(cab.logits.data[ca.logits.size() + i], cb.logits.data[i]);
  }
}

TEST(Forward, RejectsBadInputWithASentence) {
  Config c = testing::tiny_config(1, PosEmbed::Standard, false, false);
  Params<float> p = testing::random_params<float>(c, 1);
  ActivationCache<float> cache;
  try {
    forward(p, std::vector<int>(7, 0), 1, 7, cache);
    FAIL() << "no error for a sequence longer than n_ctx";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("context holds 6"), std::string::npos) << e.what();
  }
  try {
    forward(p, {0, 1, 99}, 1, 3, cache);
    FAIL() << "no error for a token outside the vocabulary";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("token id 99"), std::string::npos) << e.what();
  }
  Intervention iv;
  iv.cuts.push_back({0, 0, 0, 1, Input::Q});
  EXPECT_THROW(forward(p, {0, 1}, 1, 2, cache, iv), std::invalid_argument);
}

// Zero-ablating every head leaves only the direct path: (embed + standard pos + output biases) W_U + b_U.
TEST(Interventions, ZeroAblatingEveryHeadGivesTheDirectPath) {
  for (const Config& c : testing::all_option_configs()) {
    if (c.n_layers == 0) continue;
    SCOPED_TRACE(testing::config_name(c));
    Params<float> p = testing::random_params<float>(c, 21);
    std::vector<int> tok = random_tokens(c, c.n_ctx, 5);
    Intervention iv;
    for (int l = 0; l < c.n_layers; ++l)
      for (int h = 0; h < c.n_heads; ++h) iv.ablations.push_back({l, h, false, {}});
    ActivationCache<float> cache;
    forward(p, tok, 1, c.n_ctx, cache, iv);
    const int D = c.d_model, V = c.d_vocab;
    for (int t = 0; t < c.n_ctx; ++t)
      for (int v = 0; v < V; ++v) {
        double s = c.use_bias ? p.b_U.data[v] : 0.0;
        for (int d = 0; d < D; ++d) {
          double x = p.W_E.data[tok[t] * D + d];
          if (c.pos_embed == PosEmbed::Standard) x += p.W_pos.data[t * D + d];
          if (c.use_bias)
            for (int l = 0; l < c.n_layers; ++l) x += p.blocks[l].b_O.data[d];
          s += x * p.W_U.data[d * V + v];
        }
        expect_close(cache.logits.data[t * V + v], s, 1e-5, "direct-path logit");
      }
    // The patterns are still computed and visible.
    EXPECT_GT(cache.layers[0].pattern.data[0], 0.99f);
  }
}

TEST(Interventions, CuttingEveryCompositionPathMakesLaterHeadsReadTheEmbeddings) {
  for (PosEmbed pos : {PosEmbed::None, PosEmbed::Standard, PosEmbed::Shortformer})
    for (bool bias : {false, true}) {
      Config c = testing::tiny_config(2, pos, true, bias);
      SCOPED_TRACE(testing::config_name(c));
      Params<float> p = testing::random_params<float>(c, 31);
      std::vector<int> tok = random_tokens(c, c.n_ctx, 6);
      Intervention iv;
      for (int h0 = 0; h0 < c.n_heads; ++h0)
        for (int h1 = 0; h1 < c.n_heads; ++h1)
          for (Input in : {Input::Q, Input::K, Input::V}) iv.cuts.push_back({0, h0, 1, h1, in});
      ActivationCache<float> cut, plain;
      forward(p, tok, 1, c.n_ctx, cut, iv);
      forward(p, tok, 1, c.n_ctx, plain);
      Oracle o = oracle_forward(p, tok, true);
      for (std::size_t i = 0; i < o.patterns[1].size(); ++i)
        expect_close(cut.layers[1].pattern.data[i], o.patterns[1][i], 1e-5, "layer-1 pattern");
      for (std::size_t i = 0; i < o.logits.size(); ++i) expect_close(cut.logits.data[i], o.logits[i], 1e-5, "logit");
      // And the cut really changed something.
      double diff = 0;
      for (std::size_t i = 0; i < plain.layers[1].pattern.size(); ++i)
        diff += std::abs(plain.layers[1].pattern.data[i] - cut.layers[1].pattern.data[i]);
      EXPECT_GT(diff, 1e-3);
    }
}

// With LayerNorm, a cut head's input is ln1 of its own stream (its own scale), MLPs included.
TEST(Interventions, CutPathsRecomputeLayerNormOnTheHeadsOwnInput) {
  for (Norm norm : {Norm::LN, Norm::LNPre})
    for (int mlp : {0, 5})
      for (PosEmbed pos : {PosEmbed::Standard, PosEmbed::Shortformer}) {
        Config c = testing::tiny_norm_mlp_config(2, pos, norm, mlp, Act::GELU);
        SCOPED_TRACE(testing::config_name(c));
        Params<float> p = testing::random_params<float>(c, 33);
        std::vector<int> tok = random_tokens(c, c.n_ctx, 8);
        Intervention iv;
        for (int h0 = 0; h0 < c.n_heads; ++h0)
          for (int h1 = 0; h1 < c.n_heads; ++h1)
            for (Input in : {Input::Q, Input::K, Input::V}) iv.cuts.push_back({0, h0, 1, h1, in});
        ActivationCache<float> cut;
        forward(p, tok, 1, c.n_ctx, cut, iv);
        Oracle o = oracle_forward(p, tok, true);
        for (std::size_t i = 0; i < o.patterns[1].size(); ++i)
          expect_close(cut.layers[1].pattern.data[i], o.patterns[1][i], 1e-5, "layer-1 pattern");
        for (std::size_t i = 0; i < o.logits.size(); ++i) expect_close(cut.logits.data[i], o.logits[i], 1e-5, "logit");
      }
}

TEST(Interventions, CuttingOneInputLeavesTheOthers) {
  Config c = testing::tiny_config(2, PosEmbed::Shortformer, false, false);
  Params<float> p = testing::random_params<float>(c, 41);
  std::vector<int> tok = random_tokens(c, c.n_ctx, 7);
  ActivationCache<float> plain, vcut;
  forward(p, tok, 1, c.n_ctx, plain);
  Intervention iv;
  iv.cuts.push_back({0, 1, 1, 0, Input::V});
  forward(p, tok, 1, c.n_ctx, vcut, iv);
  // A V cut changes values but not the pattern of L1H0; other heads are untouched. The cut
  // forward computes each head's Q, K and V with Eigen from its own input, the plain one with the
  // kernels: the same sums, so the same bits, except in the relaxed-SIMD build, whose kernels may
  // fuse multiply-adds (src/kernels/relaxed.h): there they agree within float32 rounding.
  const bool fused = kernels::relaxed_simd();
  for (std::size_t i = 0; i < plain.layers[1].pattern.size(); ++i) {
    const float a = vcut.layers[1].pattern.data[i], b = plain.layers[1].pattern.data[i];
    if (fused) EXPECT_NEAR(a, b, 1e-5f * std::max(1e-3f, std::abs(b))) << i;
    else EXPECT_FLOAT_EQ(a, b);
  }
  auto v0 = plain.layers[1].v.slice(0), v0c = vcut.layers[1].v.slice(0);
  EXPECT_GT((v0 - v0c).norm(), 1e-4);
  auto v1 = plain.layers[1].v.slice(1), v1c = vcut.layers[1].v.slice(1);
  if (fused) EXPECT_LE((v1 - v1c).norm(), 1e-5f * v1.norm());
  else EXPECT_EQ((v1 - v1c).norm(), 0.0f);
}

// Zero-ablating an MLP is the model whose W_out and b_out of that layer are zero; replacing it by
// a value is the model whose b_out is that value (W_out zero): bit for bit, at the positions asked.
TEST(Interventions, MlpAblationIsThatMlpWithoutItsOutput) {
  for (const Config& c : {testing::tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LN, 8, Act::GELU),
                          testing::tiny_norm_mlp_config(2, PosEmbed::Shortformer, Norm::None, 5, Act::ReLU)}) {
    SCOPED_TRACE(testing::config_name(c));
    const Params<float> p = testing::random_params<float>(c, 71);
    std::vector<int> ids = {1, 4, 2, 6, 0, 3};
    for (int l = 0; l < c.n_layers; ++l) {
      Params<float> q = p;
      q.blocks[l].W_out.zero();
      std::vector<float> value(c.d_model);
      for (int d = 0; d < c.d_model; ++d) value[d] = 0.25f * d - 0.5f;
      for (bool mean : {false, true}) {
        for (int d = 0; d < c.d_model; ++d) q.blocks[l].b_out.data[d] = mean ? value[d] : 0.0f;
        Intervention iv;
        iv.mlp_ablations.push_back({l, mean, mean ? value : std::vector<float>{}, {}});
        ActivationCache<float> a, b;
        forward(p, ids, 1, 6, a, iv);
        forward(q, ids, 1, 6, b);
        EXPECT_EQ(a.logits.data, b.logits.data) << "layer " << l << (mean ? " (value)" : " (zero)");
        // At positions 3 and 5 only: positions before 3 are the clean run's.
        iv.mlp_ablations[0].positions = {3, 5};
        ActivationCache<float> part, clean;
        forward(p, ids, 1, 6, part, iv);
        forward(p, ids, 1, 6, clean);
        const int V = c.d_vocab;
        for (int t = 0; t < 3; ++t)
          for (int v = 0; v < V; ++v) EXPECT_EQ(part.logits.data[t * V + v], clean.logits.data[t * V + v]);
        // The last layer's MLP at position 3 reaches only position 3's logits: there, as ablated everywhere.
        if (l == c.n_layers - 1)
          for (int v = 0; v < V; ++v) EXPECT_EQ(part.logits.data[3 * V + v], b.logits.data[3 * V + v]);
        bool changed = false;
        for (int v = 0; v < V; ++v) changed |= part.logits.data[3 * V + v] != clean.logits.data[3 * V + v];
        EXPECT_TRUE(changed) << "position 3 is ablated";
      }
    }
    // Refusals, in a sentence.
    Intervention bad;
    bad.mlp_ablations.push_back({c.n_layers, false, {}, {}});
    EXPECT_THROW(forward(p, ids, 1, 6, *std::make_unique<ActivationCache<float>>(), bad), std::invalid_argument);
    bad.mlp_ablations[0] = {0, false, {}, {6}};
    EXPECT_THROW(forward(p, ids, 1, 6, *std::make_unique<ActivationCache<float>>(), bad), std::invalid_argument);
    bad.mlp_ablations[0] = {0, true, {1.0f, 2.0f}, {}};
    EXPECT_THROW(forward(p, ids, 1, 6, *std::make_unique<ActivationCache<float>>(), bad), std::invalid_argument);
    bad.mlp_ablations[0] = {0, false, {}, {}};
    bad.ablation = Ablation::Mean;
    try {
      ActivationCache<float> x;
      forward(p, ids, 1, 6, x, bad);
      ADD_FAILURE() << "a mean ablation of an MLP without its value was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("kept for heads only"), std::string::npos) << e.what();
    }
  }
  Intervention none;
  none.mlp_ablations.push_back({0, false, {}, {}});
  const Params<float> attn = testing::random_params<float>(testing::tiny_config(1, PosEmbed::Standard, false, false), 1);
  ActivationCache<float> x;
  try {
    forward(attn, {1, 2}, 1, 2, x, none);
    ADD_FAILURE() << "an attention-only model took an MLP ablation";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("attention-only"), std::string::npos) << e.what();
  }
}

TEST(Interventions, MeanAblationAndPositionRemoval) {
  Config c = testing::tiny_config(1, PosEmbed::Standard, false, true);
  Params<float> p = testing::random_params<float>(c, 51);
  std::vector<int> tok = random_tokens(c, c.n_ctx, 8);
  Intervention iv;
  std::vector<float> mean(c.d_model);
  for (int d = 0; d < c.d_model; ++d) mean[d] = 0.1f * d;
  iv.ablations.push_back({0, 1, true, mean});
  ActivationCache<float> cache;
  forward(p, tok, 1, c.n_ctx, cache, iv);
  auto r = cache.layers[0].result.slice(1);
  for (int t = 0; t < c.n_ctx; ++t)
    for (int d = 0; d < c.d_model; ++d) EXPECT_FLOAT_EQ(r(t, d), mean[d]);
  // Removing positions equals a model whose W_pos is zero.
  Intervention nopos;
  nopos.remove_pos = true;
  Params<float> q = p;
  q.W_pos.zero();
  ActivationCache<float> a, b;
  forward(p, tok, 1, c.n_ctx, a, nopos);
  forward(q, tok, 1, c.n_ctx, b);
  for (std::size_t i = 0; i < a.logits.size(); ++i) EXPECT_FLOAT_EQ(a.logits.data[i], b.logits.data[i]);
  // Empty intervention changes nothing.
  ActivationCache<float> e1, e2;
  forward(p, tok, 1, c.n_ctx, e1);
  forward(p, tok, 1, c.n_ctx, e2, Intervention());
  EXPECT_EQ(e1.logits.data, e2.logits.data);
}

}  // namespace
}  // namespace cs
