// Activation patching (analysis/patching.h): every patched logit difference against the
// plain-loop oracle with the head's output replaced (tests/cpp/oracle_forward.h), denoising every
// head gives the clean run, patching nothing gives the corrupted run, a wrong position gives a
// different number (the comparison can fail), the normalised effect without NaN, the standard
// corruptions, the size refusal, and the shipped IOI and induction models.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "analysis/model_session.h"
#include "analysis/patching.h"
#include "io.h"
#include "oracle_forward.h"
#include "test_util.h"

namespace cs {
namespace {

using testing::Oracle;
using testing::OraclePatch;
using testing::oracle_forward;

std::vector<int> random_tokens(int V, int T, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(T);
  for (auto& x : t) x = rng.below(V);
  return t;
}

// A clean input and a corrupted one differing at positions 1 and 2 (never at pos = T - 1).
PatchSpec random_spec(const Config& c, std::uint64_t seed, PatchDirection dir) {
  PatchSpec s;
  const int T = c.n_ctx;
  s.clean = random_tokens(c.d_vocab, T, seed);
  s.corrupted = s.clean;
  s.corrupted[1] = (s.clean[1] + 1) % c.d_vocab;
  s.corrupted[2] = (s.clean[2] + 3) % c.d_vocab;
  s.pos = T - 1;
  s.correct = seed % c.d_vocab;
  s.wrong = (s.correct + 2) % c.d_vocab;
  s.direction = dir;
  return s;
}

double oracle_diff(const Oracle& o, const Config& c, const PatchSpec& s) {
  return o.logits[s.pos * c.d_vocab + s.correct] - o.logits[s.pos * c.d_vocab + s.wrong];
}

// The oracle's patch of head (l, h) from `source` at `positions` (empty: all), as [T, D] values.
OraclePatch oracle_patch(const Config& c, const Oracle& source, int l, int h, std::vector<int> positions) {
  const int T = static_cast<int>(source.results[l].size()) / (c.n_heads * c.d_model), D = c.d_model;
  OraclePatch pt;
  pt.layer = l, pt.head = h, pt.positions = std::move(positions);
  pt.value.assign(source.results[l].begin() + static_cast<std::size_t>(h) * T * D,
                  source.results[l].begin() + static_cast<std::size_t>(h + 1) * T * D);
  return pt;
}

void expect_near_diff(double got, double want, const std::string& what) {
  EXPECT_LE(std::abs(got - want), 1e-4 * std::max(1.0, std::abs(want))) << what << ": got " << got << ", oracle " << want;
}

std::vector<Config> patch_configs() {
  std::vector<Config> out;
  for (const Config& c : testing::all_option_configs())
    if (c.n_layers > 0) out.push_back(c);
  Config big;  // a more realistic shape
  big.n_layers = 2, big.n_heads = 4, big.d_model = 32, big.d_head = 8, big.n_ctx = 12, big.d_vocab = 30;
  big.pos_embed = PosEmbed::Standard;
  out.push_back(big);
  return out;
}

TEST(Patching, EveryHeadAndPositionMatchesThePlainLoopOracle) {
  int n = 0;
  for (const Config& c : patch_configs())
    for (PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
      SCOPED_TRACE(testing::config_name(c) + " " + patch_direction_name(dir));
      const Params<float> p = testing::random_params<float>(c, 300 + n);
      const PatchSpec s = random_spec(c, 17 + n++, dir);
      const PatchResult r = activation_patching(p, s);
      const Oracle clean = oracle_forward(p, s.clean, false), corrupted = oracle_forward(p, s.corrupted, false);
      expect_near_diff(r.clean_diff, oracle_diff(clean, c, s), "clean");
      expect_near_diff(r.corrupted_diff, oracle_diff(corrupted, c, s), "corrupted");
      const bool denoise = dir == PatchDirection::Denoise;
      const Oracle& source = denoise ? clean : corrupted;
      const std::vector<int>& target = denoise ? s.corrupted : s.clean;
      const int H = c.n_heads, T = c.n_ctx;
      ASSERT_EQ(r.head_pos.shape, (Shape{c.n_layers, H, T}));
      for (int l = 0; l < c.n_layers; ++l)
        for (int h = 0; h < H; ++h) {
          const std::string head = "L" + std::to_string(l) + "H" + std::to_string(h);
          const Oracle all = oracle_forward(p, target, false, {oracle_patch(c, source, l, h, {})});
          expect_near_diff(r.head.data[l * H + h], oracle_diff(all, c, s), head + " at every position");
          for (int t = 0; t < T; ++t) {
            const Oracle one = oracle_forward(p, target, false, {oracle_patch(c, source, l, h, {t})});
            expect_near_diff(r.head_pos.data[(l * H + h) * T + t], oracle_diff(one, c, s), head + " at position " + std::to_string(t));
          }
        }
      EXPECT_EQ(r.passes, 2 + c.n_layers * H * (1 + T));
    }
}

// Models with MLPs: each layer's MLP output is patched too, and every number is the plain-loop
// oracle's with that MLP's output replaced.
TEST(Patching, EveryMlpAndPositionMatchesThePlainLoopOracle) {
  int n = 0;
  for (const Config& c : {testing::tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LN, 8, Act::GELU),
                          testing::tiny_norm_mlp_config(2, PosEmbed::Shortformer, Norm::LNPre, 5, Act::ReLU),
                          testing::tiny_norm_mlp_config(1, PosEmbed::Standard, Norm::None, 4, Act::GELUNew)})
    for (PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
      SCOPED_TRACE(testing::config_name(c) + " " + patch_direction_name(dir));
      const Params<float> p = testing::random_params<float>(c, 500 + n);
      const PatchSpec s = random_spec(c, 29 + n++, dir);
      const PatchResult r = activation_patching(p, s);
      const bool denoise = dir == PatchDirection::Denoise;
      const Oracle source = oracle_forward(p, denoise ? s.clean : s.corrupted, false);
      const std::vector<int>& target = denoise ? s.corrupted : s.clean;
      const int L = c.n_layers, T = c.n_ctx, D = c.d_model;
      ASSERT_EQ(r.mlp.shape, (Shape{L}));
      ASSERT_EQ(r.mlp_pos.shape, (Shape{L, T}));
      for (int l = 0; l < L; ++l) {
        auto patch = [&](std::vector<int> positions) {
          OraclePatch pt;
          pt.layer = l, pt.mlp = true, pt.positions = std::move(positions), pt.value = source.mlp_outs[l];
          return pt;
        };
        expect_near_diff(r.mlp.data[l], oracle_diff(oracle_forward(p, target, false, {patch({})}), c, s), "MLP " + std::to_string(l));
        for (int t = 0; t < T; ++t)
          expect_near_diff(r.mlp_pos.data[l * T + t], oracle_diff(oracle_forward(p, target, false, {patch({t})}), c, s),
                           "MLP " + std::to_string(l) + " at position " + std::to_string(t));
        ASSERT_EQ(source.mlp_outs[l].size(), static_cast<std::size_t>(T) * D);
      }
      EXPECT_EQ(r.passes, 2 + (L * c.n_heads + L) * (1 + T));
    }
  // An attention-only model has no MLP rows.
  EXPECT_TRUE(activation_patching(testing::random_params<float>(patch_configs()[0], 1), random_spec(patch_configs()[0], 3, PatchDirection::Denoise)).mlp.empty());
}

TEST(Patching, DenoisingEveryHeadGivesTheCleanRunAndNothingTheCorrupted) {
  // The final residual stream at pos is its embedding (unchanged: the corruption is elsewhere)
  // plus every head's output there: with every head's output clean, the logits at pos are clean.
  for (const Config& c : patch_configs()) {
    SCOPED_TRACE(testing::config_name(c));
    const Params<float> p = testing::random_params<float>(c, 41);
    const PatchSpec s = random_spec(c, 5, PatchDirection::Denoise);
    const PatchResult r = activation_patching(p, s);
    ActivationCache<float> clean, patched, nothing;
    forward<float>(p, s.clean, 1, c.n_ctx, clean);
    Intervention iv;
    std::vector<OraclePatch> oracle_patches;
    const Oracle clean_oracle = oracle_forward(p, s.clean, false);
    for (int l = 0; l < c.n_layers; ++l)
      for (int h = 0; h < c.n_heads; ++h) {
        iv = patch_intervention(c, iv, clean, l, h, {});
        oracle_patches.push_back(oracle_patch(c, clean_oracle, l, h, {}));
      }
    forward<float>(p, s.corrupted, 1, c.n_ctx, patched, iv);
    const double all = patched.logits.mat()(s.pos, s.correct) - patched.logits.mat()(s.pos, s.wrong);
    EXPECT_NEAR(all, r.clean_diff, 1e-5 * std::max(1.0, std::abs(r.clean_diff)));
    expect_near_diff(oracle_diff(oracle_forward(p, s.corrupted, false, oracle_patches), c, s), r.clean_diff, "oracle, every head");
    forward<float>(p, s.corrupted, 1, c.n_ctx, nothing);
    EXPECT_NEAR(nothing.logits.mat()(s.pos, s.correct) - nothing.logits.mat()(s.pos, s.wrong), r.corrupted_diff, 1e-6);
    // Layer 0 at position 0 reads only token 0, the same in both inputs: patching it changes nothing.
    for (int h = 0; h < c.n_heads; ++h)
      EXPECT_NEAR(r.head_pos.data[h * c.n_ctx + 0], r.corrupted_diff, 1e-5 * std::max(1.0, std::abs(r.corrupted_diff)));
  }
}

TEST(Patching, AWrongPositionGivesADifferentNumber) {
  // The comparison above can fail: the oracle patched one position later disagrees somewhere.
  Config c = patch_configs().back();
  const Params<float> p = testing::random_params<float>(c, 8);
  const PatchSpec s = random_spec(c, 3, PatchDirection::Denoise);
  const PatchResult r = activation_patching(p, s);
  const Oracle clean = oracle_forward(p, s.clean, false);
  double worst = 0;
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h)
      for (int t = 0; t + 1 < c.n_ctx; ++t) {
        const Oracle shifted = oracle_forward(p, s.corrupted, false, {oracle_patch(c, clean, l, h, {t + 1})});
        worst = std::max(worst, std::abs(oracle_diff(shifted, c, s) - r.head_pos.data[(l * c.n_heads + h) * c.n_ctx + t]));
      }
  EXPECT_GT(worst, 1e-2);
}

TEST(Patching, PositionsAfterTheAnswerAreUnpatchedAndEffectsAreNormalised) {
  Config c = patch_configs().back();
  const Params<float> p = testing::random_params<float>(c, 12);
  PatchSpec s = random_spec(c, 9, PatchDirection::Denoise);
  s.pos = 6;
  const PatchResult r = activation_patching(p, s);
  ASSERT_TRUE(r.normalised);
  EXPECT_EQ(r.passes, 2 + c.n_layers * c.n_heads * (1 + s.pos + 1));
  const double gap = r.clean_diff - r.corrupted_diff;
  for (std::size_t i = 0; i < r.head_pos.data.size(); ++i) {
    const int t = static_cast<int>(i % c.n_ctx);
    if (t > s.pos) EXPECT_EQ(r.head_pos.data[i], static_cast<float>(r.corrupted_diff));
    EXPECT_NEAR(r.head_pos_effect.data[i], (r.head_pos.data[i] - r.corrupted_diff) / gap, 1e-4);
  }
  for (std::size_t i = 0; i < r.head.data.size(); ++i)
    EXPECT_NEAR(r.head_effect.data[i], (r.head.data[i] - r.corrupted_diff) / gap, 1e-4);
}

TEST(Patching, IdenticalRunsGiveZeroEffectsNotNaN) {
  Config c = patch_configs().back();
  const Params<float> p = testing::random_params<float>(c, 2);
  PatchSpec s = random_spec(c, 4, PatchDirection::Denoise);
  s.corrupted = s.clean;
  const PatchResult r = activation_patching(p, s);
  EXPECT_FALSE(r.normalised);
  EXPECT_EQ(r.clean_diff, r.corrupted_diff);
  for (float x : r.head_effect.data) EXPECT_EQ(x, 0.0f);
  for (float x : r.head_pos_effect.data) EXPECT_EQ(x, 0.0f);
}

// Each patched pass starts from the target run at the patched part's layer (forward_from_layer):
// every number is the bits of a whole forward pass under the same intervention, with the logits
// kept, over three layers, MLPs, smeared keys and base interventions before, at and after the
// patched layers (ablations, an MLP ablation, a path cut, the positions removed).
TEST(Patching, EachPassFromItsLayerGivesTheBitsOfAWholePass) {
  int n = 0;
  Config three = testing::tiny_norm_mlp_config(3, PosEmbed::Shortformer, Norm::LN, 5, Act::GELU, true);
  for (const Config& c : {testing::tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LNPre, 6, Act::GELU), three}) {
    std::vector<Intervention> bases(3);
    bases[1].ablations.push_back({0, 1});
    bases[1].ablations.push_back({1, 0});
    bases[1].mlp_ablations.push_back({c.n_layers - 1});
    bases[2].cuts.push_back({0, 0, c.n_layers - 1, 1, Input::K});
    bases[2].remove_pos = true;
    for (const Intervention& base : bases)
      for (PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
        SCOPED_TRACE(testing::config_name(c) + " " + patch_direction_name(dir) + " base " + std::to_string(n % 3));
        const Params<float> p = testing::random_params<float>(c, 700 + n);
        PatchSpec s = random_spec(c, 41 + n++, dir);
        s.pos = c.n_ctx - 3;
        const PatchResult r = activation_patching(p, s, base);
        const bool denoise = dir == PatchDirection::Denoise;
        const auto prefix = [&](const std::vector<int>& v) { return std::vector<int>(v.begin(), v.begin() + s.pos + 1); };
        const std::vector<int> src = prefix(denoise ? s.clean : s.corrupted), target = prefix(denoise ? s.corrupted : s.clean);
        const int P = s.pos + 1;
        ActivationCache<float> source;
        forward<float>(p, src, 1, P, source, base);
        const auto whole = [&](const Intervention& iv) {
          ActivationCache<float> cache;
          forward<float>(p, target, 1, P, cache, iv);
          const auto row = cache.logits.mat().row(s.pos);
          return static_cast<float>(static_cast<double>(row(s.correct)) - static_cast<double>(row(s.wrong)));
        };
        for (int l = 0; l < c.n_layers; ++l) {
          for (int h = 0; h < c.n_heads; ++h) {
            EXPECT_EQ(r.head.data[l * c.n_heads + h], whole(patch_intervention(c, base, source, l, h, {}))) << "L" << l << "H" << h;
            for (int t : {0, s.pos / 2, s.pos})
              EXPECT_EQ(r.head_pos.data[(l * c.n_heads + h) * c.n_ctx + t], whole(patch_intervention(c, base, source, l, h, {t})))
                  << "L" << l << "H" << h << " at " << t;
          }
          EXPECT_EQ(r.mlp.data[l], whole(patch_mlp_intervention(c, base, source, l, {}))) << "MLP " << l;
          EXPECT_EQ(r.mlp_pos.data[l * c.n_ctx + 1], whole(patch_mlp_intervention(c, base, source, l, {1}))) << "MLP " << l << " at 1";
        }
        if (::testing::Test::HasFailure()) return;
      }
  }
}

TEST(Patching, RefusesBadInputsAndTooMuchWork) {
  Config c = patch_configs().back();
  const Params<float> p = testing::random_params<float>(c, 2);
  PatchSpec s = random_spec(c, 4, PatchDirection::Denoise);
  PatchSpec shorter = s;
  shorter.corrupted.pop_back();
  EXPECT_THROW(activation_patching(p, shorter), std::invalid_argument);
  PatchSpec far = s;
  far.pos = c.n_ctx;
  EXPECT_THROW(activation_patching(p, far), std::invalid_argument);
  PatchSpec bad_token = s;
  bad_token.wrong = c.d_vocab;
  EXPECT_THROW(activation_patching(p, bad_token), std::invalid_argument);
  // The intervention refuses a position outside the pass.
  Intervention iv;
  HeadAblation a;
  a.positions = {c.n_ctx};
  iv.ablations.push_back(a);
  ActivationCache<float> cache;
  EXPECT_THROW(forward<float>(p, s.clean, 1, c.n_ctx, cache, iv), std::invalid_argument);

  Config wide;
  wide.n_layers = 4, wide.n_heads = 16, wide.d_model = 512, wide.d_head = 32, wide.n_ctx = 512, wide.d_vocab = 1000;
  EXPECT_GT(patching_work(wide, 512, true), kMaxPatchWork);
  const Params<float> pw = init_params<float>(wide, 1);
  PatchSpec big;
  big.clean = random_tokens(wide.d_vocab, 512, 1);
  big.corrupted = big.clean;
  big.pos = 511, big.correct = 1, big.wrong = 2;
  try {
    activation_patching(pw, big);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiply-adds"), std::string::npos) << e.what();
  }
}

TEST(Patching, SwapNamesChangesTheSecondSubject) {
  // <BOS>=0 <MID>=1, names 2.. (the symbolic vocabulary's order)
  Corruption k = ioi_swap_names({0, 2, 3, 3, 1});
  EXPECT_EQ(k.kind, "swap_names");
  EXPECT_EQ(k.tokens, (std::vector<int>{0, 2, 3, 2, 1}));
  EXPECT_EQ(k.pos, 4);
  EXPECT_EQ(k.correct, 2);
  EXPECT_EQ(k.wrong, 3);
  EXPECT_EQ(k.changed, (std::vector<int>{3}));
  k = ioi_swap_names({0, 3, 2, 3, 1});  // S IO S
  EXPECT_EQ(k.tokens, (std::vector<int>{0, 3, 2, 2, 1}));
  EXPECT_EQ(k.correct, 2);
  EXPECT_EQ(k.wrong, 3);
  EXPECT_THROW(ioi_swap_names({0, 2, 3, 4, 1}), std::invalid_argument);
}

TEST(Patching, BreakRepeatReplacesTheFirstCopy) {
  const std::vector<int> clean = {0, 9, 5, 6, 7, 8, 4, 5, 6, 7, 8};  // block 5 6 7 8 at 2 and 7
  const Corruption k = break_repeat(clean, 1, 30, {0}, 7);
  EXPECT_EQ(k.kind, "break_repeat");
  EXPECT_EQ(k.changed, (std::vector<int>{2, 3, 4, 5}));
  const std::set<int> in_clean(clean.begin(), clean.end());
  for (int i : k.changed) {
    EXPECT_EQ(in_clean.count(k.tokens[i]), 0u) << "position " << i;
    EXPECT_NE(k.tokens[i], 0);
  }
  for (int i = 0; i < static_cast<int>(clean.size()); ++i)
    if (i < 2 || i > 5) EXPECT_EQ(k.tokens[i], clean[i]);
  EXPECT_EQ(k.pos, 9);
  EXPECT_EQ(k.correct, 8);
  EXPECT_EQ(k.wrong, k.tokens[5]);
  EXPECT_EQ(break_repeat(clean, 1, 30, {0}, 7).tokens, k.tokens);  // seeded
  EXPECT_NE(break_repeat(clean, 1, 30, {0}, 8).tokens, k.tokens);
  EXPECT_THROW(break_repeat({0, 1, 2, 3, 4, 5}, 1, 30, {0}, 0), std::invalid_argument);  // no repeat
  EXPECT_THROW(break_repeat(clean, 1, 10, {0, 1, 2, 3}, 0), std::invalid_argument);  // no token left
}

TEST(Patching, ShippedIoiModelRestoresTheAnswer) {
  ModelSession m(load_model_file("models/ioi-1l2h.safetensors"));
  PatchRequest rq;
  rq.clean = {m.file().tokenizer.bos_id(), m.file().tokenizer.find("A"), m.file().tokenizer.find("B"),
              m.file().tokenizer.find("B"), m.file().tokenizer.find("<MID>")};
  const PatchRun run = m.patch(rq, Intervention());
  EXPECT_EQ(run.corruption.kind, "swap_names");
  EXPECT_GT(run.result.clean_diff, 0);
  EXPECT_LT(run.result.corrupted_diff, 0);
  EXPECT_TRUE(run.result.normalised);
  // Patching both heads (the whole layer) restores the clean answer exactly: one layer, and the
  // answer position's token is unchanged.
  double best = -1e9;
  for (float x : run.result.head_effect.data) best = std::max(best, static_cast<double>(x));
  EXPECT_GT(best, 0.3);
  const nlohmann::json j = patch_run_json(rq.clean, run);
  EXPECT_EQ(j["head_pos"].size(), 1u);
  EXPECT_EQ(j["head_pos"][0][0].size(), 5u);
}

// What the page asks for (positions EachIfItFits): each position on a short text; on a long one,
// where each position alone would exceed kMaxPatchWork, whole heads only and a sentence saying so;
// refused when even whole heads would.
TEST(Patching, EachPositionIfItFitsElseWholeHeadsWithANote) {
  ModelFile f;
  f.cfg = testing::tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LNPre, 0, Act::GELU);
  f.cfg.d_model = 256, f.cfg.d_head = 64, f.cfg.n_heads = 4, f.cfg.n_ctx = 512, f.cfg.d_vocab = 50;
  f.params = testing::random_params<float>(f.cfg, 5);
  f.tokenizer = Tokenizer::build_ids(f.cfg.d_vocab);
  ModelSession m(std::move(f));
  PatchRequest rq;
  rq.positions = PatchRequest::Positions::EachIfItFits;
  rq.correct = 1, rq.wrong = 2;
  for (int T : {12, 512}) {
    rq.clean = random_tokens(50, T, 3);
    rq.corrupted = rq.clean;
    rq.corrupted[1] = (rq.clean[1] + 1) % 50;
    const PatchRun run = m.patch(rq, Intervention());
    const bool fits = patching_work(m.config(), T, true) <= kMaxPatchWork;
    EXPECT_EQ(fits, T == 12);
    EXPECT_EQ(run.result.head_pos.data.empty(), !fits) << T;
    EXPECT_EQ(run.note.empty(), fits) << T;
    if (!fits) EXPECT_NE(run.note.find("each of the 512 positions"), std::string::npos) << run.note;
    EXPECT_EQ(run.result.passes, 2 + 2 * 4 * (fits ? 1 + T : 1));
  }
  rq.positions = PatchRequest::Positions::Each;
  EXPECT_THROW(m.patch(rq, Intervention()), std::invalid_argument);

  ModelFile g;  // attn-only-2l's attention: whole heads over 1,024 tokens are over the limit too
  g.cfg = testing::tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LNPre, 0, Act::GELU);
  g.cfg.d_model = 512, g.cfg.d_head = 64, g.cfg.n_heads = 8, g.cfg.n_ctx = 1024, g.cfg.d_vocab = 50;
  g.params = testing::random_params<float>(g.cfg, 5);
  g.tokenizer = Tokenizer::build_ids(g.cfg.d_vocab);
  ModelSession wide(std::move(g));
  rq.positions = PatchRequest::Positions::EachIfItFits;
  rq.clean = random_tokens(50, 1024, 3);
  rq.corrupted = rq.clean;
  rq.corrupted[1] = (rq.clean[1] + 1) % 50;
  try {
    wide.patch(rq, Intervention());
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("activation patching of 16 head(s) would take about"), std::string::npos) << what;
    EXPECT_EQ(what.find("whole heads only"), std::string::npos) << "no advice that would not help: " << what;
  }
}

TEST(Patching, ShippedInductionModelNeedsTheFirstCopy) {
  ModelSession m(load_model_file("models/char-2l.safetensors"));
  std::vector<int> ids;
  for (const Token& t : m.tokenize("The quick fox. The quick fox")) ids.push_back(t.id);
  PatchRequest rq;
  rq.clean = ids;
  const PatchRun run = m.patch(rq, Intervention());
  EXPECT_EQ(run.corruption.kind, "break_repeat");
  EXPECT_GT(run.result.clean_diff, run.result.corrupted_diff + 1.0);
  EXPECT_TRUE(run.result.normalised);
  EXPECT_THROW(m.corrupt(ids, "swap_names", 0), std::invalid_argument);
  EXPECT_THROW(m.corrupt(ids, "shuffle", 0), std::invalid_argument);
}

}  // namespace
}  // namespace cs
