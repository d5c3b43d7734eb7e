// Head scores on repeated random tokens (previous-token, duplicate-token, prefix-matching, copying),
// per-token loss, top-k predictions, the in-context-learning score and head ablation, as the
// induction-heads seed (seeds/004, Olsson et al. 2022) defines them.
//
// Layout of the repeated-random-token batch used throughout: each row is [BOS] + R + R with R a
// segment of L random tokens, so T = 2L + 1; position 0 is BOS, positions 1..L the first copy and
// L+1..2L the second. The token at position i of the second copy (i > L) first appeared at i - L,
// and the token after that earlier copy is at i - L + 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model.h"
#include "params.h"
#include "tensor.h"
#include "tokenizer.h"

namespace cs {

// The induction-heads paper's in-context-learning score compares token index 500 with index 50.
constexpr int kPaperIclEarly = 50;
constexpr int kPaperIclLate = 500;

// A batch of [BOS] + R + R sequences.
struct RepeatedTokens {
  int B = 0;                // sequences
  int L = 0;                // length of the random segment R
  int first = 0, n = 0;     // R's tokens are drawn from the ids [first, first + n)
  int bos = 0;              // id put at position 0
  std::vector<int> tokens;  // [B, T], T = 2L + 1
  int T() const { return 2 * L + 1; }
};

// Seed 004 (induction-heads paper, "repeated random tokens"): B rows of [BOS] + R + R, R drawn with
// the portable Rng from [first, first + n). With `distinct` (and L <= n) the tokens of one R are all
// different, so each token of the second copy has exactly one earlier copy and the scores below
// are unambiguous; otherwise they are drawn independently. Throws std::invalid_argument on bad sizes.
RepeatedTokens make_repeated_tokens(int B, int L, int first, int n, int bos, std::uint64_t seed, bool distinct = true);

// The ids random tokens are drawn from: [first, first + n), every id after the vocabulary's
// leading special tokens (<BOS>, <UNK>, <PAD>, <MID>, ...: texts of the form "<...>").
struct TokenPool {
  int first = 0, n = 0;
};
TokenPool random_token_pool(const Tokenizer& tok);

// The repeated-random-token batch of the head scores with every unset choice (< 0) filled in
// the one way the page, the trainer and the CLI fill it: first / n from random_token_pool, L the
// largest segment that fits the context (min(n, (n_ctx - 1) / 2)), bos the <BOS> id (0 without
// one), batch 16, seed 0. Throws with a sentence when 2L + 1 exceeds n_ctx.
struct RepeatedTokensSpec {
  int L = -1, batch = -1, first = -1, n = -1, bos = -1;
  long long seed = -1;
};
RepeatedTokensSpec resolve_repeated_tokens(const RepeatedTokensSpec& spec, const Tokenizer& tok, int n_ctx);
// The same for a model of config c, sized so the scores fit: when batch and L are both left unset
// and the forward pass would need more than kMaxForwardBytes of activations, or its unembed and
// the copying score together more than kMaxCircuitWork multiply-adds (head_scores_work; a large
// vocabulary: 48k tokens x 512 wide is 2.5e7 a token for each), the batch shrinks first (to 1),
// then L (halving, to 8). A small model keeps 16 x the whole context, as before.
RepeatedTokensSpec resolve_repeated_tokens(const RepeatedTokensSpec& spec, const Tokenizer& tok, const Config& c);
// The multiply-adds of the head scores of a resolved spec: unembed and copying score.
double head_scores_work(const Config& c, const RepeatedTokensSpec& r);
RepeatedTokens make_repeated_tokens(const RepeatedTokensSpec& resolved);

// A repeated random segment to type: the text boxes' starting text for a model whose tokenizer
// does not read prose (word-level, token ids), and the induction view's "Insert a repeated random
// sequence" for any model. R + R, R of L distinct tokens drawn (seeded) from the random-token
// pool (L = `length`, by default 12, at most (n_ctx - 1) / 2), keeping only tokens that can be
// typed: the tokenizer reads the token's text back as that one token (a word holding a space or a
// comma reads as other words) and the text is not only white space (a space or a newline would
// not show in the text box). `text` is R + R written as decode() writes it, `segment` R alone;
// `tokens` is what tokenizing `text` gives (<BOS> first when the vocabulary has one). Empty when
// L < 2 or fewer than 2 tokens of the pool can be typed. Display text, not a measurement.
struct SampleText {
  std::string text, segment;
  std::vector<int> tokens;
};
SampleText repeated_sample_text(const Tokenizer& tok, int n_ctx, std::uint64_t seed, int length = -1);

// Per-head scores, each [n_layers, n_heads]. Attention scores are averaged over rows and positions.
struct HeadScores {
  // Mean attention from position i to i-1, over i = 1..2L.
  Tensor<float> previous_token;   // [n_layers, n_heads]
  // Mean attention from a second-copy position i (L < i <= 2L) to its earlier copy i - L.
  Tensor<float> duplicate_token;  // [n_layers, n_heads]
  // Prefix matching (the induction score): mean attention from a second-copy position i to the
  // token right after its earlier copy, i - L + 1.
  Tensor<float> prefix_matching;  // [n_layers, n_heads]
  // Copying: does the head's OV circuit raise the logit of the token it attends to? For every
  // source position j = 1..2L we take what the head would write if it attended only to j,
  //   u = v_j W_O W_U   (v_j = hook_v at j, bias included; W_U restricted to the ids [first, first+n)),
  // and score where the source token tok_j falls among those n logits, signed and normalised:
  //   c_j = (u[tok_j] - mean u) / (max u - mean u)   if u[tok_j] >= mean u,
  //   c_j = (u[tok_j] - mean u) / (mean u - min u)   otherwise            (0 if u is constant).
  // The score is the mean of c_j over rows and positions, in [-1, 1]: 1 when the source token is
  // always the top logit (a perfect copying head), -1 when it is always the bottom one
  // (anti-copying, the paper's "negative copying score"), about 0 for a random OV circuit.
  // It reads only the OV circuit (v at the source position), so it is independent of where the
  // head actually attends: prefix matching is the QK half of the definition, copying the OV half.
  Tensor<float> copying;          // [n_layers, n_heads]
};

// Seed 004: the scores from a cache of a forward pass over `rt.tokens` (throws if the cache's
// shape does not match `rt`).
HeadScores head_scores(const Params<float>& p, const ActivationCache<float>& cache, const RepeatedTokens& rt);
// Seed 004: runs the forward pass itself (no intervention).
HeadScores head_scores(const Params<float>& p, const RepeatedTokens& rt);

// Cross-entropy at every position with a next token: entry [b, t] = -log p(token t+1 | tokens 0..t)
// of row b. Seed 004's per-token loss vector. Shape [B, T-1].
Tensor<float> per_token_loss(const ActivationCache<float>& cache);
// The cross-entropy of `target` from one row of logits (an Eigen row of floats): the log-sum-exp
// in double, shifted by the row's maximum, minus the target's logit. What per_token_loss gives at
// each position, and the paired ICL score at its one scored position.
template <class Row>
float next_token_loss(const Row& row, int target) {
  const double mx = row.maxCoeff();
  const double lse = mx + std::log((row.template cast<double>().array() - mx).exp().sum());
  return static_cast<float>(lse - row(target));
}

// The k most probable next tokens at every position, most probable first.
struct TopK {
  int k = 0;
  Tensor<int> ids;      // [B, T, k]
  Tensor<float> probs;  // [B, T, k] softmax probabilities
};
// Seed 004 (what the model predicts at each position); throws if k < 1 or k > d_vocab.
TopK top_k_predictions(const ActivationCache<float>& cache, int k);
// One row of it: the k largest of V logits (a larger value first, the smaller id on a tie) into
// ids, and their softmax probabilities (exp(logit - lse), lse = log_sum_exp_row) into probs.
void top_k_row(const float* logits, int V, int k, float lse, int* ids, float* probs);
// The same k largest of a row read a block at a time in vocabulary order: the n logits of ids v0 ..
// v0 + n - 1 merged into the `count` (ids, values) kept so far, count growing to k.
void top_k_add(const float* logits, int n, int v0, int k, int* ids, float* values, int& count);
// Throws "top-k: k must be between 1 and the vocabulary size V, got k" unless 1 <= k <= V.
void check_top_k(int k, int V);

// Seed 004's in-context-learning score: the mean over rows of loss[b, late] - loss[b, early], with
// loss from per_token_loss ([B, T-1]; index t is the loss of predicting token t+1). The paper uses
// early = 50, late = 500; negative means later tokens are predicted better. Throws if an index is
// out of range.
// The ICL score with its standard error over the rows (each row is one window: its loss at
// `late` minus its loss at `early`; the standard error is the rows' sample standard deviation over
// sqrt(B), 0 for one row).
struct IclEstimate {
  double mean = 0, se = 0;
  int n = 0;
  int blocks = 0, block = 0;  // icl_from_blocks: the standard error's blocks and pairs per block (0: over the values)
  double late_loss = 0, early_loss = 0;  // icl_paired: the mean losses the difference is of
};
IclEstimate icl_estimate(const Tensor<float>& per_token, int early, int late);
// Per-row differences, appended to `out` (for an estimate pooled over several batches).
void icl_differences(const Tensor<float>& per_token, int early, int late, std::vector<double>* out);
IclEstimate icl_from_differences(const std::vector<double>& d);
double icl_score(const Tensor<float>& per_token, int early, int late);

// A forward pass under an intervention, and what it changed relative to the same tokens without it.
struct AblationResult {
  Tensor<float> logits;           // [B, T, V] with the intervention
  Tensor<float> per_token;        // [B, T-1] with the intervention
  double loss = 0;                // mean of per_token
  double icl = 0;                 // icl_score(per_token, early, late)
  Tensor<float> logits_delta;     // [B, T, V] intervened - clean
  Tensor<float> per_token_delta;  // [B, T-1] intervened - clean
  double clean_loss = 0, clean_icl = 0;
  double loss_delta = 0, icl_delta = 0;  // intervened - clean
};

// Seed 004, argument 3 (ablating heads and measuring the change in the ICL score): tokens [B, T].
AblationResult ablate(const Params<float>& p, const std::vector<int>& tokens, int B, int T, const Intervention& iv,
                      int icl_early, int icl_late);

// Zero-ablation of one head, as an Intervention (a convenience for `ablate`).
Intervention zero_ablation(int layer, int head);

}  // namespace cs
