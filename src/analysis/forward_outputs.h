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

// Refuses logits computed outside the cache (unembed_rows, unembed_entry) that hold NaN or Inf,
// naming the first stage that overflowed as check_output_finite does.
void check_rows_finite(const std::vector<float>& rows, const ActivationCache<float>& cache);

// Throws "<what>: no tokens to run" for T = 0 and "<what>: 301 tokens is longer than the model's
// context of 256 tokens" for T > n_ctx.
void check_context_length(const Config& c, int T, const std::string& what);

// Stage 0 = blocks.0.hook_resid_pre (resid_final for a 0-layer model), stage l+1 =
// blocks.l.hook_resid_post: [L + 1, B * T, D].
std::vector<float> residual_stages(const ActivationCache<float>& cache);
// Every layer's blocks.l.attn.hook_result [H, B * T, D], one after another: [L, H, B * T, D]
// (computed from hook_z where the cache did not keep them: cs::head_results).
std::vector<float> head_results(const Params<float>& p, const ActivationCache<float>& cache);

struct RunOptions {
  bool resid = false, result = false;
  // Keep the logits [T, V] in the cache (to copy them out). Without, the pass stops at ln_final
  // and what is read from the logits (loss, top k, probs_of) is computed from blocks of
  // kLogitBlock columns for every row at once (at most 32 MB each), with the same bits: at a
  // 50,000-token vocabulary the whole table is 100 MB at 512 tokens.
  bool logits = true;
  int topk = 0;              // 0: none
  bool text_scores = false;
  int repeat_at = -1;        // text scores: the repeated block holding this position (find_repeat)
  // Token ids [T, probs_k] whose probabilities to return (e.g. the clean pass's probability of an
  // ablated pass's top k); empty: none.
  std::vector<int> probs_of;
  int probs_k = 0;
  int top_keys = 0;          // the keys each query attends to most, per head (top_attended_keys); 0: none
  // false: the last position's row of logits is not computed (no loss reads it): its top k are
  // -1 with probability NaN and its probs_of NaN. At a 50,000-token vocabulary that row reads all
  // of W_U, most of a keystroke at the end of a text. A token appended after it would read the
  // row only for its log-sum-exp (the new token's loss): rows the last pass left out stay out,
  // with every row after them, while the first changed token is at or after the first of them
  // (RunExtras::pending_from says from where); a pass with last_row computes them all.
  bool last_row = true;
  // A row whose top k the caller shows (e.g. the picked token): computed whatever last_row says.
  int shown_row = -1;
};
struct RunExtras {
  // Positions before this one hold what the previous pass of the same model gave them (its tokens
  // up to there were these and the pass was incremental, model.h forward_incremental); 0 when every
  // position was computed. A view redraws only rows from here.
  int changed_from = 0;
  // Rows from here on were not computed (RunOptions::last_row): their top k are -1, their
  // probabilities and the losses they give NaN. T when every row was.
  int pending_from = 0;
  // Entry t = -log p(token t+1 | tokens 0..t); NaN at the last position.
  std::vector<float> loss;                 // [T]
  // The mean loss per predicted token (mean_token_loss over the tokens after a leading <BOS>), and,
  // with text scores and a repeated block, over its first and its second copy (NaN otherwise):
  // the induction-heads paper's measure of in-context copying.
  double mean_loss = 0, first_copy_loss = 0, second_copy_loss = 0;
  std::vector<float> resid;                // [L + 1, T, D] when asked for
  std::vector<float> result;               // [L, H, T, D] when asked for
  std::optional<TopK> top;                 // ids, probs [1, T, k] when topk > 0
  std::vector<float> probs_of;             // [T, probs_k]: softmax probability of each asked id
  std::optional<TextScores> text_scores;   // when asked for (<BOS> first is left out)
  std::vector<int> top_keys;               // [L, H, T, top_keys] when asked for
};
// The k keys each query position attends to most, for every head: [L, H, T, k], the largest
// attention weight first, the earlier key on a tie, -1 where a query has fewer than k keys (query
// q sees keys 0..q). Rows before `from` are taken from `before` (the same table of an earlier
// pass over `before_T` tokens, the same up to `from`), or computed when it is empty.
std::vector<int> top_attended_keys(const ActivationCache<float>& cache, int k, int from = 0,
                                   const std::vector<int>& before = {}, int before_T = 0);
// The mean of the losses of predicting tokens from .. to - 1 (loss[i - 1] is the loss of predicting
// token i; the first token is never predicted), over the finite ones; NaN when there are none.
double mean_token_loss(const std::vector<float>& loss, int from, int to);

// One forward pass over `ids` under `iv` into `cache` (reused between calls: nothing allocates
// when T repeats), and the extras `o` asks for. bos_id: the vocabulary's <BOS> (-1 if none).
// With `kept` (the extras of the pass `cache` holds, made with these weights and this
// intervention), a pass is incremental when the intervention allows it: only the positions from
// the first changed token are computed, and the losses, top-k rows and text-score parts before it
// are taken from `kept`, and so are the probs_of rows that ask for the same ids as before; `kept`
// then holds this pass's.
struct KeptRun {
  std::vector<float> loss;
  std::optional<TopK> top;
  // Each row's log-sum-exp of the logits; NaN where no row was computed (a last row left out):
  // a row with it has its top k and probs_of too.
  std::vector<float> lse;
  TextScoreRows text_rows;  // each query's part of the text scores (empty when the pass had none)
  std::vector<int> probs_ids;  // the pass's probs_of ids [T, probs_k] and their probabilities
  std::vector<float> probs;
  int probs_k = 0;
  std::vector<int> top_keys;  // the pass's top_attended_keys (empty when it had none), and its k and T
  int top_keys_k = 0, top_keys_T = 0;
  bool valid = false;  // false: the cache's pass is not the one these rows belong to
};
RunExtras run_sequence(const Params<float>& p, const std::vector<int>& ids, const Intervention& iv, const RunOptions& o,
                       int bos_id, ActivationCache<float>& cache, const std::string& what = "run",
                       KeptRun* kept = nullptr);

}  // namespace cs
