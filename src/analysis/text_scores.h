// Head scores on any text the user typed (previous-token, prefix-matching and the induction
// stripe of a repeated block), read from the attention patterns of one forward pass, and the
// longest repeated block of a token sequence. What the induction view shows on every keystroke
// (induction-heads seed, seeds/004: the same scores as head_scores, on the text instead of on
// repeated random tokens).
#pragma once
#include <optional>
#include <vector>

#include "model.h"
#include "tensor.h"

namespace cs {

constexpr int kHeldRepeatMin = 8;  // the induction view compares the copies of blocks this long

// A block of tokens that occurs twice without overlapping: first copy [a, a + r), second copy
// [a + d, a + d + r).
struct Repeat {
  int a = 0, d = 0, r = 0;
  bool held = false;      // chosen because one of its copies holds the position asked for (`at`)
  bool compared = false;  // r >= kHeldRepeatMin: long enough for the induction view to compare its copies
};

// The longest such block over ids[from ..] (the earliest start and smallest distance among equals),
// or nothing below 4 tokens. With `at` >= 0, the longest among the blocks of at least
// kHeldRepeatMin tokens one of whose copies holds position `at` (the token the user picked: the
// block just inserted, or another the user points at), and the longest of all when no such block
// holds it. O(T^2).
std::optional<Repeat> find_repeat(const std::vector<int>& ids, int from, int at = -1);

struct TextScores {
  // Mean attention from query q to q - 1, over q = from + 1 .. T - 1 (NaN without such q).
  Tensor<float> previous_token;   // [n_layers, n_heads]
  // Prefix matching: over the queries q > from whose token occurred before (at j >= from, with
  // j + 1 < q), the mean over those q of the attention summed over every such j + 1 (NaN if none).
  Tensor<float> prefix_matching;  // [n_layers, n_heads]
  // The induction stripe of `repeat`: mean attention from each second-copy token q (a + d <= q <
  // a + d + r) to the token after its first copy, q - d + 1 (only when that is before q, i.e. d > 1).
  // NaN when there is no repeat.
  Tensor<float> stripe;           // [n_layers, n_heads]
  std::optional<Repeat> repeat;   // find_repeat(tokens, from, at)
};

// Each query's part of the previous-token and prefix-matching sums of every head, kept between the
// passes of one session (KeptRun): a pass that changed the rows from q on reads only the pattern
// rows from q on (at attn-only-2l's shape, reading every row was 4.6 ms of a 14 ms keystroke).
struct TextScoreRows {
  int from = -1, heads = 0, T = 0;  // what they were computed for: `from`, L x H heads, T queries
  std::vector<float> previous;      // [heads, T]: pattern[q, q - 1]
  std::vector<double> prefix;       // [heads, T]: the attention summed over q's key cells
  std::vector<char> has_cells;      // [T]: whether q has key cells (counts towards the mean)
};

// Seed 004's scores on the text of a one-sequence forward pass (cache.n_batch == 1). `from` is 1
// when the sequence starts with a <BOS> that the scores leave out, else 0 (text_scores_from).
// The stripe is that of find_repeat(tokens, from, at). With `rows`, the queries before `unchanged`
// (whose pattern rows and tokens are those of the pass `rows` was filled from, with the same
// `from`) are read from it rather than from the patterns, and `rows` is filled for this pass: the
// same sums in the same order, so the same bits.
TextScores text_scores(const ActivationCache<float>& cache, int from, int at = -1, TextScoreRows* rows = nullptr,
                       int unchanged = 0);
// 1 when tokens start with bos_id (>= 0), else 0.
int text_scores_from(const std::vector<int>& tokens, int bos_id);

}  // namespace cs
