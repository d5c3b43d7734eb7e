// Head scores on typed text and the longest repeated block: hand-built attention patterns score
// what they were built to (a previous-token head 1 on previous-token, an induction head 1 on
// prefix matching and on the stripe), and find_repeat finds the block the induction view marks.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/forward_outputs.h"
#include "analysis/text_scores.h"
#include "test_util.h"

namespace cs {
namespace {

// A one-sequence cache with one layer of two heads whose patterns are given by fn(head, q, k).
template <class Fn>
ActivationCache<float> hand_cache(const std::vector<int>& ids, Fn fn) {
  const int T = static_cast<int>(ids.size()), H = 2;
  ActivationCache<float> c;
  c.n_batch = 1;
  c.n_pos = T;
  c.tokens = ids;
  c.layers.resize(1);
  c.layers[0].pattern.resize({1, H, T, T});
  for (int h = 0; h < H; ++h)
    for (int q = 0; q < T; ++q)
      for (int k = 0; k < T; ++k) c.layers[0].pattern.data[(static_cast<std::size_t>(h) * T + q) * T + k] = fn(h, q, k);
  return c;
}

TEST(FindRepeat, FindsTheLongestNonOverlappingBlock) {
  // <BOS>=0, then 5 6 7 8 9 | 3 | 5 6 7 8 9: first copy at 1, distance 6, length 5.
  const std::vector<int> ids{0, 5, 6, 7, 8, 9, 3, 5, 6, 7, 8, 9};
  auto r = find_repeat(ids, 1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->a, 1);
  EXPECT_EQ(r->d, 6);
  EXPECT_EQ(r->r, 5);
  EXPECT_FALSE(r->compared);  // 5 tokens: too short for the view to compare its copies
  EXPECT_FALSE(find_repeat({0, 1, 2, 3, 1, 2, 3}, 0).has_value());  // 3 tokens: below 4
  // A run longer than the distance overlaps itself: capped at d.
  auto o = find_repeat({4, 4, 4, 4, 4, 4, 4, 4, 4}, 0);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->r, 4);
  EXPECT_EQ(o->d, 4);
  EXPECT_EQ(o->a, 0);
}

TEST(FindRepeat, PrefersTheBlockHoldingTheGivenPosition) {
  // A long block (10..21 twice, at 1 and 13), two other tokens (25, 26), a block of 8 (30..37
  // twice, at 27 and 35) and one of 5 (50..54 twice, at 43 and 48): with no position, the long
  // one; with a position in either copy of the 8-token block, that block; a position in no block,
  // or in a block shorter than kHeldRepeatMin (the 5-token one), falls back to the longest.
  std::vector<int> ids{0};
  auto twice = [&](int lo, int hi) { for (int k = 0; k < 2; ++k) for (int t = lo; t < hi; ++t) ids.push_back(t); };
  twice(10, 22);
  ids.push_back(3);
  ids.push_back(4);
  twice(30, 38);
  twice(50, 55);
  ASSERT_EQ(ids.size(), 53u);
  const auto longest = find_repeat(ids, 1);
  ASSERT_TRUE(longest.has_value());
  EXPECT_EQ(longest->a, 1);
  EXPECT_EQ(longest->r, 12);
  EXPECT_FALSE(longest->held);
  EXPECT_TRUE(longest->compared);
  for (int at : {27, 34, 35, 42}) {
    const auto r = find_repeat(ids, 1, at);
    ASSERT_TRUE(r.has_value()) << at;
    EXPECT_EQ(r->a, 27) << at;
    EXPECT_EQ(r->d, 8) << at;
    EXPECT_EQ(r->r, 8) << at;
    EXPECT_TRUE(r->held) << at;
    EXPECT_TRUE(r->compared) << at;  // exactly kHeldRepeatMin
  }
  EXPECT_EQ(find_repeat(ids, 1, 5)->a, 1);     // inside the long block's first copy
  EXPECT_TRUE(find_repeat(ids, 1, 5)->held);
  EXPECT_FALSE(find_repeat(ids, 1, 999)->held);  // no block holds it: the longest
  for (int at : {25, 26, 45, 50, 999}) EXPECT_EQ(find_repeat(ids, 1, at)->r, 12) << at;
}

TEST(TextScores, HandBuiltHeadsScoreOne) {
  const std::vector<int> ids{0, 5, 6, 7, 8, 9, 3, 5, 6, 7, 8, 9};
  const int T = static_cast<int>(ids.size());
  // Head 0 attends to the previous token; head 1 to the token after the earlier copy of the
  // current token (the induction pattern), else to itself.
  ActivationCache<float> c = hand_cache(ids, [&](int h, int q, int k) -> float {
    if (h == 0) return q == 0 ? (k == 0 ? 1.f : 0.f) : (k == q - 1 ? 1.f : 0.f);
    const bool second = q >= 7;
    return second ? (k == q - 6 + 1 ? 1.f : 0.f) : (k == q ? 1.f : 0.f);
  });
  const TextScores s = text_scores(c, text_scores_from(ids, 0));
  ASSERT_TRUE(s.repeat.has_value());
  EXPECT_EQ(s.repeat->d, 6);
  EXPECT_FLOAT_EQ(s.previous_token.data[0], 1.0f);
  EXPECT_FLOAT_EQ(s.stripe.data[1], 1.0f);
  EXPECT_FLOAT_EQ(s.prefix_matching.data[1], 1.0f);
  EXPECT_FLOAT_EQ(s.stripe.data[0], 0.0f);
  // Head 1 never attends to q - 1 (itself, or q - 5 in the second copy).
  EXPECT_FLOAT_EQ(s.previous_token.data[1], 0.0f);
  (void)T;
}

TEST(TextScores, NoRepeatGivesNaNStripe) {
  const std::vector<int> ids{0, 1, 2, 3, 4};
  ActivationCache<float> c = hand_cache(ids, [](int, int q, int k) { return k == q ? 1.f : 0.f; });
  const TextScores s = text_scores(c, 1);
  EXPECT_FALSE(s.repeat.has_value());
  EXPECT_TRUE(std::isnan(s.stripe.data[0]));
  EXPECT_TRUE(std::isnan(s.prefix_matching.data[0]));  // no token occurs twice
  EXPECT_FLOAT_EQ(s.previous_token.data[0], 0.0f);
}

TEST(RunSequence, ExtrasComeFromTheOnePass) {
  const Config cfg = testing::tiny_config(2, PosEmbed::Standard, false, true);
  const Params<float> p = testing::random_params<float>(cfg, 3);
  const std::vector<int> ids{0, 1, 2, 3, 1, 2};
  ActivationCache<float> cache;
  RunOptions o;
  o.resid = o.result = true;
  o.topk = 3;
  o.text_scores = true;
  const RunExtras x = run_sequence(p, ids, Intervention(), o, 0, cache);
  const int T = 6, L = cfg.n_layers, D = cfg.d_model, H = cfg.n_heads;
  ASSERT_EQ(x.loss.size(), 6u);
  EXPECT_TRUE(std::isnan(x.loss[5]));
  EXPECT_EQ(x.resid.size(), static_cast<std::size_t>(L + 1) * T * D);
  EXPECT_EQ(x.result.size(), static_cast<std::size_t>(L) * H * T * D);
  ASSERT_TRUE(x.top.has_value());
  EXPECT_EQ(x.top->ids.shape, (Shape{1, T, 3}));
  // The top-k probabilities are the softmax of the logits.
  for (int t = 0; t < T; ++t) {
    double z = 0, mx = -1e30;
    for (int v = 0; v < cfg.d_vocab; ++v) mx = std::max(mx, static_cast<double>(cache.logits.data[t * cfg.d_vocab + v]));
    for (int v = 0; v < cfg.d_vocab; ++v) z += std::exp(cache.logits.data[t * cfg.d_vocab + v] - mx);
    const int id = x.top->ids.data[t * 3];
    EXPECT_NEAR(x.top->probs.data[t * 3], std::exp(cache.logits.data[t * cfg.d_vocab + id] - mx) / z, 1e-6);
  }
  ASSERT_TRUE(x.text_scores.has_value());
  EXPECT_EQ(x.text_scores->previous_token.shape, (Shape{L, H}));
  // The mean loss over every predicted token (bos_id 0: ids[0] is the <BOS>, never predicted), and
  // over the repeat's two copies.
  EXPECT_NEAR(x.mean_loss, (x.loss[0] + x.loss[1] + x.loss[2] + x.loss[3] + x.loss[4]) / 5.0, 1e-6);
  EXPECT_TRUE(std::isnan(x.first_copy_loss)) << "no repeat of 4 or more tokens";
  EXPECT_TRUE(std::isnan(mean_token_loss(x.loss, 5, 5)));
  EXPECT_NEAR(mean_token_loss(x.loss, 0, 6), x.mean_loss, 1e-9);  // the last position (NaN) and token 0 are left out
  // The last stage of the residual stream is the final one.
  for (int i = 0; i < T * D; ++i) EXPECT_EQ(x.resid[static_cast<std::size_t>(L) * T * D + i], cache.resid_final.data[i]);
  EXPECT_THROW(run_sequence(p, std::vector<int>(7, 1), Intervention(), o, 0, cache), std::invalid_argument);
  try {
    check_context_length(cfg, 7, "run");
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "run: 7 tokens is longer than the model's context of 6 tokens");
  }
}

// The loss on each copy of a repeated block, from the same pass (the Induction view's cards).
TEST(RunSequence, CopyLossesAreTheMeansOverEachCopy) {
  Config cfg = testing::tiny_config(2, PosEmbed::Standard, false, true);
  cfg.n_ctx = 12;
  const Params<float> p = testing::random_params<float>(cfg, 5);
  const std::vector<int> ids{0, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5};
  ActivationCache<float> cache;
  RunOptions o;
  o.text_scores = true;
  const RunExtras x = run_sequence(p, ids, Intervention(), o, 0, cache);
  ASSERT_TRUE(x.text_scores.has_value() && x.text_scores->repeat.has_value());
  const Repeat& r = *x.text_scores->repeat;
  EXPECT_EQ(r.r, 5);
  double first = 0, second = 0;
  for (int i = r.a; i < r.a + r.r; ++i) first += x.loss[i - 1];
  for (int i = r.a + r.d; i < r.a + r.d + r.r; ++i) second += x.loss[i - 1];
  EXPECT_NEAR(x.first_copy_loss, first / r.r, 1e-6);
  EXPECT_NEAR(x.second_copy_loss, second / r.r, 1e-6);
}

}  // namespace
}  // namespace cs
