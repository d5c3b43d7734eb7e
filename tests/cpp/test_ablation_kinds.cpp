// The ablation kinds of an Intervention (seed 001's composition cuts): zero is the cut as it was,
// mean and mean-all put the cut head's averaged output back, resample its output on the partner
// sequence resample_row() draws; each checked against the stream recomputed by hand from clean passes.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "analysis/ioi.h"
#include "analysis/model_session.h"
#include "io.h"
#include "model.h"
#include "test_util.h"

namespace cs {
namespace {

constexpr int kT = 5;

std::vector<int> tokens_of(const Config& c, int B, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(static_cast<std::size_t>(B) * kT);
  for (int& x : t) x = rng.below(c.d_vocab);
  return t;
}

struct Fixture {
  Config c = testing::tiny_config(2, PosEmbed::Standard, false, true);
  Params<float> p = testing::random_params<float>(c, 77);
  std::vector<int> ref = tokens_of(c, 8, 3);  // [8, T] reference sequences
  std::vector<int> x = tokens_of(c, 3, 4);    // [3, T] the sequences run under the cut
  std::shared_ptr<const AblationReference> reference = ablation_reference(p, ref, 8, kT);
  ActivationCache<float> ref_cache, clean;
  Fixture() {
    forward(p, ref, 8, kT, ref_cache);
    forward(p, x, 3, kT, clean);
  }
  // The cut of L0H1's output from L1H0's value input under `kind`.
  Intervention cut(Ablation kind) const {
    Intervention iv;
    iv.cuts.push_back({0, 1, 1, 0, Input::V});
    iv.ablation = kind;
    iv.reference = reference;
    iv.resample_seed = 5;
    return iv;
  }
};

// L1H0's value input, by hand: the clean layer-1 stream minus L0H1's output plus `repl(b, t, d)`,
// through W_V and b_V; compared with what forward() gave under the cut.
template <class Repl>
void expect_value_input(const Fixture& f, const ActivationCache<float>& cut, Repl repl) {
  const int D = f.c.d_model, Dh = f.c.d_head;
  auto resid = f.clean.layers[1].resid_pre.mat();    // [B*T, D]
  auto src = f.clean.layers[0].result.slice(1);      // [B*T, D]
  auto WV = f.p.blocks[1].W_V.slice(0);              // [D, Dh]
  auto bV = f.p.blocks[1].b_V.row(0);                // [Dh]
  auto v = cut.layers[1].v.slice(0);                 // [B*T, Dh]
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < kT; ++t)
      for (int j = 0; j < Dh; ++j) {
        double want = bV(j);
        for (int d = 0; d < D; ++d) want += (resid(b * kT + t, d) - src(b * kT + t, d) + repl(b, t, d)) * WV(d, j);
        EXPECT_NEAR(v(b * kT + t, j), want, 1e-5) << "row " << b << ", position " << t;
      }
}

TEST(AblationKinds, ZeroIsTheCutAsItWasAndRemovesTheContribution) {
  Fixture f;
  Intervention plain;
  plain.cuts.push_back({0, 1, 1, 0, Input::V});
  ActivationCache<float> a, b;
  forward(f.p, f.x, 3, kT, a, plain);
  forward(f.p, f.x, 3, kT, b, f.cut(Ablation::Zero));  // a reference attached changes nothing
  EXPECT_EQ(a.logits.data, b.logits.data);
  expect_value_input(f, b, [](int, int, int) { return 0.0; });
  ActivationCache<float> none;
  forward(f.p, f.x, 3, kT, none);
  EXPECT_NE(none.logits.data, b.logits.data) << "the cut must change something";
}

TEST(AblationKinds, MeanPutsBackTheHeadsOutputAveragedOverTheReferenceAtEachPosition) {
  Fixture f;
  ActivationCache<float> cut;
  forward(f.p, f.x, 3, kT, cut, f.cut(Ablation::Mean));
  auto r = f.ref_cache.layers[0].result.slice(1);  // [8*T, D]
  expect_value_input(f, cut, [&](int, int t, int d) {
    double s = 0;
    for (int b = 0; b < 8; ++b) s += r(b * kT + t, d);
    return s / 8;
  });
}

TEST(AblationKinds, MeanAllPutsBackOneMeanOverSequencesAndPositions) {
  Fixture f;
  ActivationCache<float> cut;
  forward(f.p, f.x, 3, kT, cut, f.cut(Ablation::MeanAll));
  auto r = f.ref_cache.layers[0].result.slice(1);
  expect_value_input(f, cut, [&](int, int, int d) {
    double s = 0;
    for (int n = 0; n < 8 * kT; ++n) s += r(n, d);
    return s / (8 * kT);
  });
  ActivationCache<float> mean;
  forward(f.p, f.x, 3, kT, mean, f.cut(Ablation::Mean));
  EXPECT_NE(mean.logits.data, cut.logits.data) << "one mean and per-position means are different kinds";
}

TEST(AblationKinds, ResamplePutsBackTheHeadsOutputOnThePartnerSequence) {
  Fixture f;
  ActivationCache<float> cut;
  forward(f.p, f.x, 3, kT, cut, f.cut(Ablation::Resample));
  std::vector<int> partner;
  for (int b = 0; b < 3; ++b) {
    partner.push_back(resample_row(*f.reference, f.x.data() + b * kT, kT, 5));
    ASSERT_GE(partner.back(), 0);
    ASSERT_LT(partner.back(), 8);
    EXPECT_FALSE(std::equal(f.x.begin() + b * kT, f.x.begin() + (b + 1) * kT, f.ref.begin() + partner.back() * kT));
  }
  auto r = f.ref_cache.layers[0].result.slice(1);
  expect_value_input(f, cut, [&](int b, int t, int d) { return static_cast<double>(r(partner[b] * kT + t, d)); });

  // The partner depends on the sequence and the seed, not on the batch: row 1 alone gives the same.
  ActivationCache<float> one;
  forward(f.p, std::vector<int>(f.x.begin() + kT, f.x.begin() + 2 * kT), 1, kT, one, f.cut(Ablation::Resample));
  const int V = f.c.d_vocab;
  for (int i = 0; i < kT * V; ++i) EXPECT_NEAR(one.logits.data[i], cut.logits.data[kT * V + i], 1e-6);

  // A sequence that is itself a reference row never gets itself.
  for (int b = 0; b < 8; ++b) EXPECT_NE(resample_row(*f.reference, f.ref.data() + b * kT, kT, 5), b);
  // Other seeds draw other partners (over the 8 reference rows, some seed differs).
  std::set<int> seen;
  for (std::uint64_t s = 0; s < 16; ++s) seen.insert(resample_row(*f.reference, f.x.data(), kT, s));
  EXPECT_GT(seen.size(), 1u);
}

TEST(AblationKinds, HeadAblationUnderMeanEqualsTheGivenMean) {
  Fixture f;
  // The per-position mean of L0H0's output over the reference, computed here, given as the
  // ablation's own mean_value: the same pass as the kind Mean computing it.
  const int D = f.c.d_model;
  auto r = f.ref_cache.layers[0].result.slice(0);
  std::vector<float> m(static_cast<std::size_t>(f.c.n_ctx) * D, 0.0f);
  for (int t = 0; t < kT; ++t)
    for (int d = 0; d < D; ++d) {
      double s = 0;
      for (int b = 0; b < 8; ++b) s += r(b * kT + t, d);
      m[t * D + d] = static_cast<float>(s / 8);
    }
  Intervention given;
  HeadAblation a;
  a.layer = 0;
  a.head = 0;
  a.mean = true;
  a.mean_value = m;
  given.ablations.push_back(a);
  Intervention kind;
  kind.ablations.push_back({0, 0});
  kind.ablation = Ablation::Mean;
  kind.reference = f.reference;
  ActivationCache<float> x, y;
  forward(f.p, f.x, 3, kT, x, given);
  forward(f.p, f.x, 3, kT, y, kind);
  for (std::size_t i = 0; i < x.logits.data.size(); ++i) EXPECT_NEAR(x.logits.data[i], y.logits.data[i], 1e-5);

  // Resample: the head's output is the partner's, row by row.
  kind.ablation = Ablation::Resample;
  forward(f.p, f.x, 3, kT, y, kind);
  for (int b = 0; b < 3; ++b) {
    const int pr = resample_row(*f.reference, f.x.data() + b * kT, kT, 0);
    for (int t = 0; t < kT; ++t)
      for (int d = 0; d < D; ++d) EXPECT_EQ(y.layers[0].result.slice(0)(b * kT + t, d), r(pr * kT + t, d));
  }
}

TEST(AblationKinds, MeanWithoutReferenceSequencesIsRefusedWithASentence) {
  Fixture f;
  Intervention iv = f.cut(Ablation::Mean);
  iv.reference = nullptr;
  ActivationCache<float> cache;
  try {
    forward(f.p, f.x, 3, kT, cache, iv);
    FAIL() << "no error for a mean ablation without reference sequences";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mean ablation needs"), std::string::npos) << e.what();
  }
  // Without a cut or a plain ablation the kind has nothing to replace: no reference needed.
  Intervention nothing;
  nothing.ablation = Ablation::Resample;
  EXPECT_NO_THROW(forward(f.p, f.x, 3, kT, cache, nothing));
  EXPECT_EQ(ablation_from_name("mean-all", "x"), Ablation::MeanAll);
  EXPECT_THROW(ablation_from_name("average", "x"), std::invalid_argument);
}

// The page's path: a session fills in the task's reference (the 60 sequences), and one sequence
// analysed alone gets what it gets in the evaluation of all 60 under every kind.
TEST(AblationKinds, SessionAnalysesOfOneSequenceAgreeWithTheEvaluationOfAll) {
  ModelSession m(load_model_file("models/ioi-2l1h.safetensors"));
  const auto acc = ioi_cut_accuracies(m.file().params);
  const Batch seq = ioi_symbolic_sequences();
  for (std::size_t a = 0; a < std::size(kAblations); ++a)
    for (int k = 0; k < 3; ++k) {
      Intervention iv = cut_composition(m.file().cfg, static_cast<Input>(k));
      iv.ablation = kAblations[a];
      const IoiEvaluation ev = m.ioi_evaluate(iv, std::nullopt);
      EXPECT_EQ(ev.accuracy, acc[a][k]) << ablation_name(kAblations[a]) << " " << k;
      for (int b = 0; b < seq.B; b += 7) {
        const IoiAnalysis one = m.ioi(std::vector<int>(seq.tokens.begin() + b * seq.T, seq.tokens.begin() + (b + 1) * seq.T), iv);
        EXPECT_EQ(one.predicted, ev.predicted[b]);
        EXPECT_NEAR(one.logit_diff, ev.logit_diff[b], 1e-4);
      }
    }
}

// A model without an IOI task averages and resamples over repeated random tokens as long as its
// context: [BOS] + R + R + ..., the head scores' R; the reference (built in chunks of rows) holds
// what one forward pass over all the rows gives.
TEST(AblationKinds, AModelWithoutAnIoiTaskReadsRepeatedRandomTokens) {
  ModelSession chars(load_model_file("models/char-2l.safetensors"));
  const Config& c = chars.file().cfg;
  const Batch seq = repeated_reference_sequences(chars.file().tokenizer, c);
  ASSERT_EQ(seq.T, c.n_ctx);
  ASSERT_EQ(seq.B, kMaxAblationReferenceRows);  // 8 heads x 256 x 64 floats a row: 32 rows fit in 64 MB
  const RepeatedTokensSpec r = resolve_repeated_tokens({}, chars.file().tokenizer, c.n_ctx);
  std::set<std::vector<int>> segments;
  for (int b = 0; b < seq.B; ++b) {
    const int* row = seq.tokens.data() + static_cast<std::size_t>(b) * seq.T;
    EXPECT_EQ(row[0], chars.file().tokenizer.bos_id());
    for (int t = 1 + r.L; t < seq.T; ++t) ASSERT_EQ(row[t], row[t - r.L]) << b << " " << t;
    const std::vector<int> seg(row + 1, row + 1 + r.L);
    EXPECT_EQ(std::set<int>(seg.begin(), seg.end()).size(), static_cast<std::size_t>(r.L)) << "R's tokens are distinct";
    for (int x : seg) EXPECT_TRUE(x >= r.first && x < r.first + r.n);
    segments.insert(seg);
  }
  EXPECT_EQ(segments.size(), static_cast<std::size_t>(seq.B));

  Intervention iv = cut_composition(c, Input::K);
  iv.ablation = Ablation::Mean;
  const Intervention with = chars.with_ablation_reference(iv);
  ASSERT_TRUE(with.reference);
  const AblationReference& ref = *with.reference;
  EXPECT_EQ(ref.tokens, seq.tokens);
  ActivationCache<float> all;
  all.keep_result = true;
  forward(chars.file().params, seq.tokens, seq.B, seq.T, all);
  const int D = c.d_model;
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; h += 3) {
      auto res = all.layers[l].result.slice(h);
      const auto& kept = ref.result[l * c.n_heads + h];
      const auto& mean = ref.mean[l * c.n_heads + h];
      for (int t = 0; t < seq.T; t += 37)
        for (int d = 0; d < D; d += 5) {
          double s = 0;
          for (int b = 0; b < seq.B; ++b) {
            s += res(b * seq.T + t, d);
            ASSERT_NEAR(kept[(static_cast<std::size_t>(b) * seq.T + t) * D + d], res(b * seq.T + t, d), 1e-5);
          }
          ASSERT_NEAR(mean[static_cast<std::size_t>(t) * D + d], s / seq.B, 1e-5);
        }
    }
  // The page's run: every kind answers on a typed text and changes the loss the cut gives.
  const std::vector<int> ids = chars.file().tokenizer.encode_ids("the cat sat on the mat. the cat sat on the mat.", true);
  std::set<double> losses;
  for (Ablation a : kAblations) {
    iv.ablation = a;
    losses.insert(chars.run(ids, iv, {}).mean_loss);
  }
  EXPECT_EQ(losses.size(), std::size(kAblations));
  iv.cuts.clear();  // nothing to replace: no reference is made
  EXPECT_FALSE(chars.with_ablation_reference(iv).reference);

  // One such reference is kept at a time: asked again, the same; another model's replaces it, and
  // this one's is made again, equal to the first.
  EXPECT_EQ(chars.with_ablation_reference(cut_composition(c, Input::K)).reference, nullptr);
  Intervention mean = cut_composition(c, Input::K);
  mean.ablation = Ablation::Mean;
  const auto first = chars.with_ablation_reference(mean).reference;
  EXPECT_EQ(chars.with_ablation_reference(mean).reference, first);
  ModelSession other(load_model_file("models/char-2l-smeared.safetensors"));
  const auto theirs = other.with_ablation_reference(mean).reference;
  EXPECT_NE(theirs, first);
  const auto again = chars.with_ablation_reference(mean).reference;
  EXPECT_NE(again, first);
  EXPECT_EQ(again->mean, first->mean);

  // A model too large for 8 rows within the budget is refused with its size, before any pass.
  Config big = c;
  big.n_heads = 8;
  big.d_head = 64;
  big.d_model = 512;
  big.n_ctx = 1024;
  try {
    repeated_reference_sequences(chars.file().tokenizer, big);
    FAIL() << "no refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("would hold 256 MB"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cs
