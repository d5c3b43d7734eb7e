// Training metrics: what the shipped runs record while they train (train and validation loss, the
// in-context-learning score, per-head scores on repeated random tokens, the per-token-loss vector)
// and the principal-component trajectory of those vectors (induction-heads seed, 004_...).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/scores.h"
#include "params.h"
#include "tokenizer.h"
#include "train.h"

namespace cs {

// The recipe's "eval" object:
//   {"every": N, "valid_path": FILE, "batch": 8, "icl_early": 20, "icl_late": 200, "icl_windows": W,
//    "repeat_len": L, "seed": 1}
// valid_path: held-out text (char models); without it the validation set is a fixed batch from the
// training data source. icl_early/icl_late: token indices of the ICL score (the paper's 50 and 500
// need n_ctx > 500; n_ctx 256 models use 20 and 200). icl_windows: with valid_path, the ICL score
// and its standard error come from W evenly spaced windows of the held-out text (overlapping when
// the text is short), run `batch` at a time; 0 (the default) scores the validation batch itself.
// icl_pairs: with valid_path, the ICL score on P paired windows instead (icl_paired_windows below;
// icl_late at most 12 below the training window); not with icl_windows.
// repeat_len: length L of the random segment
// for the head scores ([BOS] R R, 2L+1 <= n_ctx); 0 chooses the largest that fits.
struct EvalSpec {
  int every = 0;
  std::string valid_path;
  int batch = 8;
  int icl_early = 20, icl_late = 200;
  int icl_windows = 0;
  int icl_pairs = 0;  // > 0: the ICL score on this many paired windows (icl_paired_windows) of valid_path
  int repeat_len = 0;
  std::uint64_t seed = 1;
};
EvalSpec eval_spec_from_json(const nlohmann::json& j, const std::string& base_dir = "");

// The ICL score's windows: `windows` evenly spaced windows of L tokens ([BOS] (or the window's
// first token when there is none) + L-1 tokens of `ids`; overlapping when the text is short), in
// batches of at most `batch` rows. Throws std::invalid_argument when the text is shorter than one.
std::vector<Batch> icl_window_batches(const std::vector<int>& ids, int bos, int L, int windows, int batch);
// The ICL score (loss at `late` minus loss at `early`) over every row of the batches, with its
// standard error over the rows. One definition for the trainer's metrics and `circuitscope icl`.
IclEstimate icl_over_batches(const Params<float>& p, const std::vector<Batch>& batches, int early, int late);

// The ICL score on paired windows, the estimator the report, `circuitscope icl` and the page use:
// `windows` target tokens of `ids`, evenly spaced from index `late` on, each predicted twice, once
// as the last token of a window <BOS> + the `late` tokens before it + the target (per-token index
// `late`) and once of a window <BOS> + the `early` tokens before it + the target (index `early`).
// Each pair's difference compares the same token with more and with less context, so what makes
// one token harder than another cancels. Neighbouring late windows share most of their text, so
// the standard error comes from blocks of consecutive pairs whose targets span at least twice a
// late window of text (IclEstimate::block pairs each; the last partial block counts in the mean but
// not in the spread).
struct IclPairedWindows {
  std::vector<Batch> late, early;  // batches of at most `batch` rows, pair r in row r % batch of batch r / batch
  int early_index = 0, late_index = 0;
  int pairs = 0;
  int block = 1;  // pairs per block of the standard error
};
// Throws std::invalid_argument when the text is shorter than one late window or the indices are out of order.
IclPairedWindows icl_paired_windows(const std::vector<int>& ids, int bos, int early, int late, int windows, int batch);
IclEstimate icl_paired(const Params<float>& p, const IclPairedWindows& w);
// The mean of `d` and its standard error from blocks of `block` consecutive values (the values'
// own spread when there are fewer than two whole blocks).
IclEstimate icl_from_blocks(const std::vector<double>& d, int block);
// The largest per-token index the ICL score may use in a model: n_ctx - 12, or 12 below the window
// length the model was trained on (the recipe its file records) when that is shorter: rows of W_pos
// past what training reached hold no learned position, and the last trained rows are where it
// collapses (bpe-2l's rows 249-254). `trained_len` is 0 when the file records no recipe.
int icl_last_index(int n_ctx, int trained_len);
// The window length the file's recorded recipe trained on (data.seq_len), or 0.
int trained_window(const nlohmann::json& info);
// Throws std::invalid_argument, in a sentence, when per-token index `late` is past icl_last_index.
void check_icl_index(int late, int n_ctx, int trained_len);

// The L2 norm of every row of W_pos (empty for a model without learned positions), and the rows
// that have collapsed: a norm below kCollapsedPositionRatio times the median of the rows within 8
// of it. A collapsed row is a position the model barely tells apart from <BOS>-free content; the
// heads that find the previous token by position stop doing so just after it.
constexpr double kCollapsedPositionRatio = 0.7;
std::vector<double> position_norms(const Params<float>& p);
std::vector<int> collapsed_positions(const std::vector<double>& norms);

struct EvalRecord {
  std::int64_t step = 0;           // the training step (or a checkpoint's label, e.g. tokens seen)
  double train_loss = 0;           // mean training loss over the steps since the last record
  double valid_loss = 0;           // mean next-token loss on the validation set
  double icl = 0;                  // loss at icl_late minus loss at icl_early, on the validation set
  double icl_se = 0;               // its standard error over the windows
  double repeated_loss = 0;        // mean loss on the second copy of repeated random tokens
  std::vector<float> prefix_matching, copying, previous_token;  // [n_layers * n_heads]
  std::vector<float> per_token;    // the validation set's per-token losses, flattened [B * (T-1)]
};

// A record as JSON and back (NaN, e.g. step 0's train_loss, as null): what a training checkpoint
// keeps of the metrics recorded so far. eval_record_from_json throws std::invalid_argument on a
// damaged record.
nlohmann::json eval_record_json(const EvalRecord& r);
EvalRecord eval_record_from_json(const nlohmann::json& j);

class Evaluator {
 public:
  Evaluator(const EvalSpec& spec, const Recipe& recipe, const Tokenizer& tok, DataSource& train_data);
  // A checkpoint series' evaluator (the checkpoints of a run whose recipe circuitscope does not
  // have, e.g. TransformerLens's checkpoints/*_N.pth): the same record from `held_out` token ids
  // (the text, without <BOS>): spec.batch evenly spaced windows of `window` tokens for the
  // validation loss and the per-token vector, the ICL score on spec.icl_pairs paired windows when
  // spec.icl_pairs > 0, and the head scores on repeated random tokens of the model's vocabulary.
  // `held_out` may be empty (a model that reads no text): the record's validation loss and ICL
  // score are then NaN and its per-token vector empty. Throws std::invalid_argument, in a
  // sentence, when the text is shorter than what the spec asks of it.
  // `trained_len`: the window length the model was trained on when its file records it (the ICL
  // score's late token stays 12 below it, icl_last_index), else 0.
  Evaluator(const EvalSpec& spec, const Config& c, const Tokenizer& tok, const std::vector<int>& held_out, int window,
            int trained_len = 0);
  EvalRecord evaluate(const Params<float>& p, std::int64_t step, double train_loss) const;
  const EvalSpec& spec() const { return spec_; }
  int window() const { return T_; }

 private:
  void init_held_out(const std::vector<int>& ids, const Config& c, const Tokenizer& tok, int trained_len, const char* what);
  void init_repeats(const Tokenizer& tok);

  EvalSpec spec_;
  int T_ = 0, first_ = 0, n_ = 0, bos_ = 0, L_ = 0;
  Batch valid_;
  std::vector<Batch> icl_batches_;  // icl_windows > 0: the ICL score's windows
  std::optional<IclPairedWindows> icl_pairs_;  // icl_pairs > 0
  bool has_icl_ = false;
  bool has_valid_ = true;
  int head_batch_ = 0;  // sequences of repeated random tokens for the head scores
};

// The evaluation a checkpoint series gets by default (Evaluator's second constructor), sized to the
// model so that one checkpoint costs about the same at any vocabulary: windows of min(n_ctx, 256)
// tokens, 8 of them, fewer while their unembed would pass 2e10 multiply-adds (at least 2); the ICL
// score at the paper's tokens 500 and 50 where the context allows them (icl_last_index of n_ctx
// and `trained_len`, the window the file says the model was trained on, or 0), else 200 and 20,
// else 4/5 and 1/10 of the last usable index; 64 pairs, fewer (at least 16) while their forward
// passes would pass 4e10 multiply-adds; no ICL score when `held_out_tokens` cannot hold one late
// window. `held_out_tokens` 0: no text (no validation windows, no ICL).
EvalSpec checkpoint_eval_spec(const Config& c, int held_out_tokens, int trained_len = 0);
int checkpoint_window(const Config& c);

// One checkpoint of a series scored: the record Evaluator's second constructor gives, on the
// held-out `text` (read with the model's tokenizer; empty, or a model that reads no text: no
// validation loss or ICL score), with checkpoint_eval_spec's choices where an option is < 0.
// The page, the API and `circuitscope series` score each checkpoint with this one function.
struct CheckpointEvalOptions {
  int window = -1, batch = -1, icl_early = -1, icl_late = -1, icl_pairs = -1, repeat_len = -1;
  long long seed = -1;
};
struct CheckpointEval {
  EvalRecord record;
  EvalSpec spec;            // what was measured (icl_pairs 0: no ICL score)
  int window = 0;           // tokens a validation window holds
  int held_out_tokens = 0;  // tokens of the text
};
constexpr std::size_t kMaxHeldOutBytes = 8u << 20;  // held-out text a checkpoint is scored on
// `trained_len`: as for checkpoint_eval_spec (trained_window of the file's info).
CheckpointEval evaluate_checkpoint(const Params<float>& p, const Tokenizer& tok, const std::string& text, std::int64_t step,
                                   const CheckpointEvalOptions& o = CheckpointEvalOptions(), int trained_len = 0);
// The held-out token ids checkpoint scores read from a text: encode_ids without <BOS>; refused
// with a sentence past kMaxHeldOutBytes of text.
std::vector<int> held_out_ids(const Tokenizer& tok, const std::string& text);
// The same for held-out text already tokenized (encode_ids without <BOS>, ids inside the model's
// vocabulary; at most kMaxHeldOutBytes of them): a series tokenizes its text once, not once per
// checkpoint, and gets the same scores.
CheckpointEval evaluate_checkpoint(const Params<float>& p, const Tokenizer& tok, const std::vector<int>& ids, std::int64_t step,
                                   const CheckpointEvalOptions& o = CheckpointEvalOptions(), int trained_len = 0);
// {record (eval_record_json), spec: {window, batch, icl_early, icl_late, icl_pairs, repeat_len,
// seed}, held_out_tokens}
nlohmann::json checkpoint_eval_json(const CheckpointEval& e);
// The inverse of checkpoint_eval_json's spec object (what the series' metrics_json is given);
// throws std::invalid_argument on a damaged one.
EvalSpec checkpoint_spec_from_json(const nlohmann::json& j);
// A series' metrics from its checkpoints' checkpoint_eval_json entries, in any order: metrics_json
// of their records in step order (without icl_indices when they have no ICL score). Every entry
// must have the first one's spec, all of it (scored alike: one model's checkpoints, one setting);
// refused otherwise with a sentence starting with `what`. The CLI's series and the page's
// checkpointMetrics both put a series together here.
nlohmann::json checkpoint_metrics_json(const nlohmann::json& entries, const std::string& what);

// The label of a checkpoint file in a series, from its name: the number its name ends with before
// the extension (TransformerLens's checkpoints/NAME_N.pth, N the tokens seen; circuitscope's
// snapshots stepN.safetensors), after '_', '-', '.' or "step"; nullopt for any other name (e.g.
// model_final.pth, which is the end of the series).
std::optional<std::int64_t> checkpoint_label(const std::string& file_name);

// The metrics file: the spec, every record, and the per-token-loss trajectory projected on its
// first `n_components` principal components (centred across records; components are the
// eigenvectors of the records' Gram matrix), with the variance each explains.
nlohmann::json metrics_json(const EvalSpec& spec, const std::vector<EvalRecord>& records, int n_components = 3);

// The phase change (induction-heads seed, 004: the step at which induction heads form), one
// definition for the report, the page and the trainer: over records in step order, each with every
// head's prefix-matching score, let best(r) be the largest score of record r over all heads (0 if
// none is positive). With F = best(last record): no phase change when F < kMinInductionScore (half
// of a near-zero score is met at step 0); otherwise the first record whose best(r) >= 0.5 F.
constexpr double kMinInductionScore = 0.1;
constexpr double kPhaseChangeFraction = 0.5;
struct PhaseChange {
  std::int64_t step = 0;  // the record's step
  int record = 0;         // its index among the records
  int layer = 0, head = 0;  // the head with the best score at that record (index / n_heads, index % n_heads)
  double final_score = 0;   // F
  double threshold = 0;     // 0.5 F
  // "Before the phase change", where the ICL score is compared with the end (the report's ICL row,
  // `circuitscope icl --before-phase-change`): the step of the record two before it, -1 if none.
  // The record just before it is often inside the change already: best(r) is under 0.5 F but
  // rising, and in bpe-2l-prose (seeds 0 and 1, records every 500 steps) the ICL score and the
  // previous-token head have already moved there (the ICL score by 0.17 and 0.42 nats).
  std::int64_t before_step = -1;
};
// steps[i] and prefix_matching[i] ([n_layers * n_heads], layer-major; may be empty) of record i.
// n_heads <= 0 counts every score as a head of layer 0.
std::optional<PhaseChange> phase_change(const std::vector<std::int64_t>& steps, const std::vector<std::vector<double>>& prefix_matching,
                                        int n_heads = 0);
// The same over a metrics file's "records" (objects with "step" and "prefix_matching"; a record
// without prefix_matching counts as having no scores).
std::optional<PhaseChange> phase_change(const nlohmann::json& records, int n_heads = 0);

// Gradient leading terms over the first steps of training (seed 002: from small weights, trained by
// full-batch gradient descent, the weights stay close to closed-form terms built from the bigram
// map B, B^T B and the context map Phi). The recipe's model, tokenizer and data source, its weights
// drawn as usual and multiplied by init_scale, one fixed batch of `rows` sequences drawn from its
// data source (the full batch, trained on at every step), and at every step 0..steps the cosine of
//   direct:       row-centred W_E W_U             with direct_path_leading_term (the bigram term)
//   direct_change: the same for W_E W_U minus its value at step 0 (0 at step 0): what the steps added
//   ov[l*H+h]:    row-centred W_E W_V W_O W_U     with ov_leading_term (the context term)
//   ov_composed:  the same table                  with ov_composed_leading_term (context x B^T B)
//   unembed_gram: W_U^T W_U (rows centred)        with unembed_gram_leading_term (B^T B)
// the statistics counted by batch_stats on that batch with the window of the whole sequence (what a
// head attending uniformly reads). optimizer "gd": p <- p - lr g (the seed's); "adamw": the
// recipe's AdamW, schedule and clipping as its Trainer steps them (AdamW's first steps are
// sign-like, which the seed's analysis does not cover).
struct LeadingCurveSpec {
  int steps = 50;
  double init_scale = 0.01;
  std::string optimizer = "gd";
  double lr = 0;  // 0: the recipe's optimizer.lr
  int rows = 0;   // 0: the recipe's batch_size
};
struct LeadingCurvePoint {
  int step = 0;
  double loss = 0;  // the batch's mean loss at these weights
  double direct = 0, direct_change = 0, unembed_gram = 0;
  std::vector<double> ov, ov_composed;  // [n_layers * n_heads]
};
struct LeadingCurve {
  std::string recipe;  // its name
  LeadingCurveSpec spec;
  double lr = 0;
  int rows = 0, seq_len = 0, d_vocab = 0, n_layers = 0, n_heads = 0, d_model = 0;
  std::vector<LeadingCurvePoint> points;  // steps 0..spec.steps
};
LeadingCurve leading_term_curve(const Recipe& recipe, const LeadingCurveSpec& spec);
nlohmann::json leading_curve_json(const LeadingCurve& c);
LeadingCurve leading_curve_from_json(const nlohmann::json& j);

}  // namespace cs
