// What one forward pass over a single sequence gives the page besides the cache itself: the
// context-length check with the sentence a user reads, the per-position next-token loss, the
// residual stream at every stage and every head's output stacked layer-major, the top-k next
// tokens and the head scores on the text (run()'s options), all from the one pass.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "analysis/scores.h"
#include "analysis/text_scores.h"
#include "model.h"
#include "params.h"

namespace cs {

// Throws "<what>: no tokens to run" for T = 0 and "<what>: 301 tokens is longer than the model's
// context of 256 tokens" for T > n_ctx.
void check_context_length(const Config& c, int T, const std::string& what);

// Entry t = -log p(token t+1 | tokens 0..t) of a one-sequence pass; NaN at the last position.
std::vector<float> position_losses(const ActivationCache<float>& cache, const std::vector<int>& ids);  // [T]

// Stage 0 = blocks.0.hook_resid_pre (resid_final for a 0-layer model), stage l+1 =
// blocks.l.hook_resid_post: [L + 1, B * T, D].
std::vector<float> residual_stages(const ActivationCache<float>& cache);
// Every layer's blocks.l.attn.hook_result [H, B * T, D], one after another: [L, H, B * T, D].
std::vector<float> head_results(const ActivationCache<float>& cache);

struct RunOptions {
  bool resid = false, result = false;
  int topk = 0;              // 0: none
  bool text_scores = false;
  int repeat_at = -1;        // text scores: the repeated block holding this position (find_repeat)
};
struct RunExtras {
  std::vector<float> loss;                 // [T], position_losses
  // The mean loss per predicted token (mean_token_loss over the tokens after a leading <BOS>), and,
  // with text scores and a repeated block, over its first and its second copy (NaN otherwise):
  // the induction-heads paper's measure of in-context copying.
  double mean_loss = 0, first_copy_loss = 0, second_copy_loss = 0;
  std::vector<float> resid;                // [L + 1, T, D] when asked for
  std::vector<float> result;               // [L, H, T, D] when asked for
  std::optional<TopK> top;                 // ids, probs [1, T, k] when topk > 0
  std::optional<TextScores> text_scores;   // when asked for (<BOS> first is left out)
};
// The mean of the losses of predicting tokens from .. to - 1 (loss[i - 1] is the loss of predicting
// token i; the first token is never predicted), over the finite ones; NaN when there are none.
double mean_token_loss(const std::vector<float>& loss, int from, int to);

// One forward pass over `ids` under `iv` into `cache` (reused between calls: nothing allocates
// when T repeats), and the extras `o` asks for. bos_id: the vocabulary's <BOS> (-1 if none).
RunExtras run_sequence(const Params<float>& p, const std::vector<int>& ids, const Intervention& iv, const RunOptions& o,
                       int bos_id, ActivationCache<float>& cache, const std::string& what = "run");

}  // namespace cs
