// Head scores on repeated random tokens (seed 004): hand-built previous-token and induction heads
// score near 1 on their own score, uniform attention scores what it must, ablation and the ICL score.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/scores.h"
#include "analysis/circuits.h"
#include "checks.h"
#include "params.h"

namespace cs {
namespace {

constexpr int kTokens = 30;        // R is drawn from ids 1..30 (0 is BOS)
constexpr int kV = kTokens + 1;    // vocabulary
constexpr int kL = 10;             // |R|
constexpr int kT = 2 * kL + 1;     // [BOS] + R + R
constexpr float kSharp = 30.0f;    // attention logit of the intended key (others get 0)

// Hand-built 2-layer attention-only model (standard positions, one head per layer) whose
// residual stream has three one-hot blocks: token [0, V), previous token [V, 2V), position [2V, 2V+n_ctx).
//   L0H0: previous-token head. Q reads position i into head dim i, K reads position j into head
//         dim j+1, so only j = i-1 scores; OV copies the token block into the previous-token block.
//   L1H0: induction head. Q reads the current token, K reads the previous-token block, so position
//         i attends where the previous token equals its own token; OV copies the token block onto
//         the logits with gain `copy_gain` (W_U reads the token block as the identity).
// With induction = false only layer 0 exists (a 1-layer previous-token model).
Params<float> hand_built(bool induction, float copy_gain = 10.0f) {
  Config c;
  c.n_layers = induction ? 2 : 1;
  c.n_heads = 1;
  c.d_vocab = kV;
  c.n_ctx = kT;
  c.d_model = 2 * kV + kT;
  c.d_head = std::max(kT + 1, kV);
  c.pos_embed = PosEmbed::Standard;
  Params<float> p = make_params<float>(c);
  const int D = c.d_model, Dh = c.d_head, TOK = 0, PREV = kV, POS = 2 * kV;
  const float s = kSharp * std::sqrt(static_cast<float>(Dh));  // undo the 1/sqrt(d_head) scale
  for (int t = 0; t < kV; ++t) p.W_E.data[t * D + TOK + t] = 1.0f;
  for (int i = 0; i < kT; ++i) p.W_pos.data[i * D + POS + i] = 1.0f;
  for (int t = 0; t < kV; ++t) p.W_U.data[(TOK + t) * kV + t] = 1.0f;
  auto& l0 = p.blocks[0];
  for (int i = 0; i < kT; ++i) {
    l0.W_Q.data[(POS + i) * Dh + i] = s;
    l0.W_K.data[(POS + i) * Dh + i + 1] = 1.0f;
  }
  for (int t = 0; t < kV; ++t) {
    l0.W_V.data[(TOK + t) * Dh + t] = 1.0f;
    l0.W_O.data[t * D + PREV + t] = 1.0f;
  }
  if (induction) {
    auto& l1 = p.blocks[1];
    for (int t = 0; t < kV; ++t) {
      l1.W_Q.data[(TOK + t) * Dh + t] = s;
      l1.W_K.data[(PREV + t) * Dh + t] = 1.0f;
      l1.W_V.data[(TOK + t) * Dh + t] = 1.0f;
      l1.W_O.data[t * D + TOK + t] = copy_gain;
    }
  }
  return p;
}

RepeatedTokens test_tokens(int B = 16, std::uint64_t seed = 7) { return make_repeated_tokens(B, kL, 1, kTokens, 0, seed); }

TEST(RepeatedTokens, LayoutIsBosThenTheSegmentTwice) {
  RepeatedTokens rt = test_tokens(4);
  ASSERT_EQ(rt.tokens.size(), static_cast<std::size_t>(4 * kT));
  for (int b = 0; b < 4; ++b) {
    const int* row = &rt.tokens[b * kT];
    EXPECT_EQ(row[0], 0);
    for (int i = 1; i <= kL; ++i) {
      EXPECT_GE(row[i], 1);
      EXPECT_LE(row[i], kTokens);
      EXPECT_EQ(row[i + kL], row[i]);
      for (int j = 1; j < i; ++j) EXPECT_NE(row[i], row[j]) << "distinct tokens within R";
    }
  }
  // Deterministic in the seed.
  EXPECT_EQ(test_tokens(4, 3).tokens, test_tokens(4, 3).tokens);
  EXPECT_NE(test_tokens(4, 3).tokens, test_tokens(4, 4).tokens);
  EXPECT_THROW(make_repeated_tokens(2, 1, 1, 10, 0, 0), std::invalid_argument);
}

TEST(HeadScores, HandBuiltPreviousTokenHeadScoresNearOne) {
  Params<float> p = hand_built(false);
  HeadScores s = head_scores(p, test_tokens());
  std::printf("[ scores ] hand-built previous-token head: previous %.4f duplicate %.4f prefix %.4f copying %.4f\n",
              s.previous_token.data[0], s.duplicate_token.data[0], s.prefix_matching.data[0], s.copying.data[0]);
  EXPECT_EQ(s.previous_token.shape, (Shape{1, 1}));
  EXPECT_GT(s.previous_token.data[0], 0.99f);
  EXPECT_LT(s.duplicate_token.data[0], 0.01f);
  EXPECT_LT(s.prefix_matching.data[0], 0.01f);
  // Its OV circuit writes into a block W_U does not read: no effect on any logit.
  EXPECT_NEAR(s.copying.data[0], 0.0f, 1e-6);
}

TEST(HeadScores, HandBuiltInductionHeadScoresNearOneOnPrefixMatchingAndCopying) {
  Params<float> p = hand_built(true);
  HeadScores s = head_scores(p, test_tokens());
  for (int l = 0; l < 2; ++l)
    std::printf("[ scores ] hand-built induction model L%dH0: previous %.4f duplicate %.4f prefix %.4f copying %.4f\n", l,
                s.previous_token.data[l], s.duplicate_token.data[l], s.prefix_matching.data[l], s.copying.data[l]);
  EXPECT_EQ(s.prefix_matching.shape, (Shape{2, 1}));
  EXPECT_GT(s.previous_token.data[0], 0.99f);  // L0H0
  EXPECT_GT(s.prefix_matching.data[1], 0.99f);  // L1H0
  EXPECT_LT(s.duplicate_token.data[1], 0.01f);
  EXPECT_LT(s.previous_token.data[1], 0.2f);  // ~uniform in the first copy, where nothing matches
  EXPECT_NEAR(s.copying.data[1], 1.0f, 1e-5);  // OV = gain * identity on the token block
  // A negated OV circuit is a perfect anti-copier.
  Params<float> anti = hand_built(true, -10.0f);
  EXPECT_NEAR(head_scores(anti, test_tokens()).copying.data[1], -1.0f, 1e-5);
}

TEST(HeadScores, UniformAttentionGivesTheUniformBaseline) {
  Params<float> p = hand_built(true);
  for (auto& b : p.blocks) b.W_Q.zero();  // all scores 0: attention 1/(i+1) over positions 0..i
  HeadScores s = head_scores(p, test_tokens());
  double pm = 0, prev = 0;
  for (int i = kL + 1; i < kT; ++i) pm += 1.0 / (i + 1);
  for (int i = 1; i < kT; ++i) prev += 1.0 / (i + 1);
  pm /= kL;
  prev /= kT - 1;
  std::printf("[ scores ] uniform attention: prefix matching %.4f (1/(i+1) averaged: %.4f), previous %.4f\n",
              s.prefix_matching.data[1], pm, s.previous_token.data[1]);
  for (int l = 0; l < 2; ++l) {
    EXPECT_NEAR(s.prefix_matching.data[l], pm, 1e-5);
    EXPECT_NEAR(s.duplicate_token.data[l], pm, 1e-5);
    EXPECT_NEAR(s.previous_token.data[l], prev, 1e-5);
  }
  EXPECT_LT(s.prefix_matching.data[1], 0.1f);
}

TEST(HeadScores, RandomHeadsScoreNearZeroOnCopying) {
  Config c;
  c.n_layers = 2;
  c.n_heads = 8;
  c.d_model = 64;
  c.d_head = 16;
  c.n_ctx = 64;
  c.d_vocab = 61;
  c.pos_embed = PosEmbed::Shortformer;
  Params<float> p = init_params<float>(c, 11);
  RepeatedTokens rt = make_repeated_tokens(8, 25, 1, 60, 0, 5);
  HeadScores s = head_scores(p, rt);
  double mean = 0, max_abs = 0;
  for (float x : s.copying.data) mean += x, max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
  mean /= s.copying.size();
  std::printf("[ scores ] 16 random heads: mean copying score %.4f, largest |score| %.4f\n", mean, max_abs);
  EXPECT_LT(std::fabs(mean), 0.1);
  EXPECT_LT(max_abs, 0.35);
  for (float x : s.prefix_matching.data) EXPECT_LT(x, 0.3f);
}

TEST(HeadScores, CacheMustMatchTheTokens) {
  Params<float> p = hand_built(true);
  RepeatedTokens a = test_tokens(4, 1), b = test_tokens(4, 2);
  ActivationCache<float> cache;
  forward(p, a.tokens, a.B, a.T(), cache);
  EXPECT_THROW(head_scores(p, cache, b), std::invalid_argument);
  EXPECT_NO_THROW(head_scores(p, cache, a));
}

TEST(PerTokenLoss, MatchesLossFromLogitsAndTopKIsSorted) {
  Params<float> p = hand_built(true);
  RepeatedTokens rt = test_tokens(4);
  ActivationCache<float> cache;
  forward(p, rt.tokens, rt.B, rt.T(), cache);
  Tensor<float> pt = per_token_loss(cache);
  ASSERT_EQ(pt.shape, (Shape{4, kT - 1}));
  LossResult ref = loss_from_logits(cache, next_token_batch(rt.tokens, rt.B, rt.T()));
  double mean = 0;
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t + 1 < kT; ++t) {
      EXPECT_NEAR(pt.data[b * (kT - 1) + t], ref.per_token[b * kT + t], 1e-5);
      mean += pt.data[b * (kT - 1) + t];
    }
  EXPECT_NEAR(mean / pt.size(), ref.loss, 1e-5);

  TopK top = top_k_predictions(cache, 3);
  ASSERT_EQ(top.ids.shape, (Shape{4, kT, 3}));
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < kT; ++t) {
      const float* pr = &top.probs.data[(b * kT + t) * 3];
      EXPECT_GE(pr[0], pr[1]);
      EXPECT_GE(pr[1], pr[2]);
      EXPECT_LE(pr[0] + pr[1] + pr[2], 1.0f + 1e-5f);
      // In the second copy the induction head predicts the next token of the segment.
      if (t > kL && t + 1 < kT) {
        EXPECT_EQ(top.ids.data[(b * kT + t) * 3], rt.tokens[b * kT + t + 1]);
        EXPECT_GT(pr[0], 0.9f);
      }
    }
  EXPECT_THROW(top_k_predictions(cache, 0), std::invalid_argument);
  EXPECT_THROW(top_k_predictions(cache, kV + 1), std::invalid_argument);
}

TEST(Ablation, NothingChangesNothing) {
  Params<float> p = hand_built(true);
  RepeatedTokens rt = test_tokens(4);
  AblationResult r = ablate(p, rt.tokens, rt.B, rt.T(), Intervention(), 3, 15);
  EXPECT_EQ(r.loss_delta, 0.0);
  EXPECT_EQ(r.icl_delta, 0.0);
  for (float x : r.logits_delta.data) EXPECT_EQ(x, 0.0f);
  for (float x : r.per_token_delta.data) EXPECT_EQ(x, 0.0f);
  EXPECT_EQ(r.logits.shape, (Shape{4, kT, kV}));
}

TEST(Ablation, RemovingEitherHalfOfTheInductionCircuitRemovesInContextLearning) {
  Params<float> p = hand_built(true);
  RepeatedTokens rt = test_tokens(16);
  // Early index 3 predicts a token of the first copy; late index 15 one of the second.
  const int early = 3, late = 15;
  AblationResult ind = ablate(p, rt.tokens, rt.B, rt.T(), zero_ablation(1, 0), early, late);
  AblationResult prev = ablate(p, rt.tokens, rt.B, rt.T(), zero_ablation(0, 0), early, late);
  std::printf("[ scores ] hand-built induction model: ICL score %.3f nats (loss %.3f); ablate L1H0: ICL %+.3f (delta %+.3f), "
              "ablate L0H0: ICL %+.3f (delta %+.3f)\n",
              ind.clean_icl, ind.clean_loss, ind.icl, ind.icl_delta, prev.icl, prev.icl_delta);
  EXPECT_LT(ind.clean_icl, -2.0);
  EXPECT_GT(ind.icl_delta, 2.0);
  EXPECT_GT(prev.icl_delta, 2.0);
  EXPECT_GT(ind.loss_delta, 0.5);
  EXPECT_NEAR(ind.icl, ind.clean_icl + ind.icl_delta, 1e-9);
  EXPECT_THROW(ablate(p, rt.tokens, rt.B, rt.T(), Intervention(), 0, kT - 1), std::invalid_argument);
}

TEST(IclScore, IsLateMinusEarlyAveragedOverRows) {
  Tensor<float> pt({2, 4});
  pt.data = {4, 3, 2, 1, 5, 5, 5, 2};
  EXPECT_NEAR(icl_score(pt, 0, 3), ((1 - 4) + (2 - 5)) / 2.0, 1e-12);
  EXPECT_NEAR(icl_score(pt, 1, 2), 0.5 * ((2 - 3) + 0), 1e-12);
  EXPECT_THROW(icl_score(pt, kPaperIclEarly, kPaperIclLate), std::invalid_argument);
}

TEST(RandomTokenPool, SkipsTheLeadingSpecialTokens) {
  const Tokenizer chars = Tokenizer::build_char("abcab <x>");
  const TokenPool c = random_token_pool(chars);  // <BOS> <UNK>, then the characters
  EXPECT_EQ(c.first, 2);
  EXPECT_EQ(c.n, chars.size() - 2);
  const Tokenizer words = Tokenizer::build_word({"<BOS>", "<MID>", "A", "B", "<PAD>"});
  const TokenPool w = random_token_pool(words);  // only the leading ones
  EXPECT_EQ(w.first, 2);
  EXPECT_EQ(w.n, 3);
}

// The text boxes' starting text for a word or id vocabulary: every token in it can be typed, so
// the text tokenizes back to the tokens it was written from (a word holding a space or a comma
// used to make the page's own starting text fail to tokenize).
TEST(SampleText, UsesOnlyTokensThatReadBackAsThemselves) {
  std::vector<std::string> vocab = {"<BOS>"};
  for (int i = 0; i < 40; ++i) vocab.push_back(i % 2 ? "w" + std::to_string(i) : "two words " + std::to_string(i));
  vocab.push_back("a,b");
  const Tokenizer words = Tokenizer::build_word(vocab);
  for (std::uint64_t seed : {0ull, 1ull, 7ull}) {
    const SampleText t = repeated_sample_text(words, 64, seed);
    ASSERT_FALSE(t.text.empty());
    EXPECT_EQ(t.tokens, words.encode_ids(t.text, true)) << t.text;
    ASSERT_EQ(t.tokens.size(), 1u + 2 * 12) << t.text;  // <BOS> + R + R, L = 12
    EXPECT_EQ(t.tokens[0], words.bos_id());
    for (std::size_t i = 1; i < t.tokens.size(); ++i) {
      EXPECT_EQ(words.token_text(t.tokens[i])[0], 'w') << "an untypable token in " << t.text;
      if (i <= 12) EXPECT_EQ(t.tokens[i], t.tokens[i + 12]);
    }
    EXPECT_EQ(repeated_sample_text(words, 64, seed).text, t.text) << "the same seed, the same text";
  }
  EXPECT_NE(repeated_sample_text(words, 64, 0).text, repeated_sample_text(words, 64, 1).text);
  // A short context takes a shorter segment; too short for two tokens twice, no text.
  EXPECT_EQ(repeated_sample_text(words, 9, 0).tokens.size(), 1u + 2 * 4);
  EXPECT_TRUE(repeated_sample_text(words, 4, 0).text.empty());
  // Only one typable token: no segment of two distinct ones.
  EXPECT_TRUE(repeated_sample_text(Tokenizer::build_word({"<BOS>", "x y", "z", "p q"}), 64, 0).text.empty());
  // A token-id vocabulary: ids written as numbers, no <BOS>.
  const Tokenizer ids = Tokenizer::build_ids(30);
  const SampleText t = repeated_sample_text(ids, 64, 3);
  EXPECT_EQ(t.tokens, ids.encode_ids(t.text, false)) << t.text;
  EXPECT_EQ(t.tokens.size(), 24u);
  EXPECT_EQ(t.segment + " " + t.segment, t.text);
  // A length asked for, capped by the context.
  EXPECT_EQ(repeated_sample_text(ids, 64, 3, 20).tokens.size(), 40u);
  EXPECT_EQ(repeated_sample_text(ids, 21, 3, 20).tokens.size(), 20u);
}

// A character vocabulary (the induction view's inserted sequence): characters that show, never
// a space, a newline or a tab, run together; R then R.
TEST(SampleText, CharacterVocabulariesDrawCharactersThatShow) {
  const Tokenizer chars = Tokenizer::build_char("ab c\nd\te fgh");
  for (std::uint64_t seed : {0ull, 5ull}) {
    const SampleText t = repeated_sample_text(chars, 64, seed, 6);
    ASSERT_EQ(t.segment.size(), 6u) << t.segment;
    EXPECT_EQ(t.text, t.segment + t.segment);
    EXPECT_EQ(t.segment.find_first_of(" \n\t"), std::string::npos) << t.segment;
    EXPECT_EQ(t.tokens, chars.encode_ids(t.text, true));
  }
}

// A model of a TransformerLens toy model's shape (48k tokens, 512 wide, 1,024 context): the
// default batch would need gigabytes and minutes, so it shrinks until the pass fits; a small
// model keeps 16 sequences over its whole context.
TEST(RandomTokenPool, DefaultBatchIsSizedForTheModel) {
  const Tokenizer ids = Tokenizer::build_ids(48262);
  Config big;
  big.n_layers = 2, big.n_heads = 8, big.d_model = 512, big.d_head = 64, big.n_ctx = 1024, big.d_vocab = 48262;
  const RepeatedTokensSpec r = resolve_repeated_tokens(RepeatedTokensSpec(), ids, big);
  EXPECT_EQ(r.batch, 1);
  EXPECT_EQ(r.L, 8);
  EXPECT_LE(forward_bytes(big, r.batch, 2.0 * r.L + 1), kMaxForwardBytes);
  // The unembed and the copying score, each about 2.5e7 multiply-adds a position.
  EXPECT_LE(r.batch * ((2.0 * r.L + 1) * 512 * 48262 + 2.0 * r.L * 512 * r.n), kMaxCircuitWork);
  EXPECT_DOUBLE_EQ(head_scores_work(big, r), r.batch * ((2.0 * r.L + 1) * 512 * 48262 + 2.0 * r.L * 512 * r.n));
  RepeatedTokensSpec asked;
  asked.batch = 16;  // a choice of the caller's own is kept
  EXPECT_EQ(resolve_repeated_tokens(asked, ids, big).L, 511);
  Config small = big;
  small.d_vocab = 82, small.d_model = 64, small.n_ctx = 256;
  const RepeatedTokensSpec q = resolve_repeated_tokens(RepeatedTokensSpec(), Tokenizer::build_ids(82), small);
  EXPECT_EQ(q.batch, 16);
  EXPECT_EQ(q.L, 82);  // min(n, (256 - 1) / 2)
}

TEST(RandomTokenPool, ResolveFillsEveryUnsetChoiceOnce) {
  const Tokenizer chars = Tokenizer::build_char("abcdefghij");
  RepeatedTokensSpec spec;
  const RepeatedTokensSpec r = resolve_repeated_tokens(spec, chars, 9);
  EXPECT_EQ(r.first, 2);
  EXPECT_EQ(r.n, 10);
  EXPECT_EQ(r.L, 4);  // (9 - 1) / 2
  EXPECT_EQ(r.bos, 0);
  EXPECT_EQ(r.batch, 16);
  EXPECT_EQ(r.seed, 0);
  spec.L = 5;
  EXPECT_THROW(resolve_repeated_tokens(spec, chars, 9), std::invalid_argument);
  spec.L = 3;
  spec.first = 4;
  spec.seed = 9;
  const RepeatedTokensSpec q = resolve_repeated_tokens(spec, chars, 9);
  EXPECT_EQ(q.n, 8);  // the ids from first to the end
  const RepeatedTokens rt = make_repeated_tokens(q);
  EXPECT_EQ(rt.T(), 7);
  for (std::size_t i = 0; i < rt.tokens.size(); ++i)
    if (i % 7) EXPECT_GE(rt.tokens[i], 4);
}

}  // namespace
}  // namespace cs
