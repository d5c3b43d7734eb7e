// One opened model as the page's API uses it: the model file, the forward cache kept between
// run() calls, and for a sentence-template IOI model its task and name tokens. Each method is one
// call of the JS API (wasm/convert.cpp converts its arguments and its result and nothing else),
// with the defaults, choices and checks those calls rely on: which IOI task a model carries,
// which sequences and names it uses, the context-length check, the shape of a batch, how spectra
// and per-head cosines are tabulated.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/circuits.h"
#include "analysis/corpus_stats.h"
#include "analysis/forward_outputs.h"
#include "analysis/ioi.h"
#include "analysis/patching.h"
#include "analysis/scores.h"
#include "io.h"
#include "ioi_templates.h"

namespace cs {

// Every head's spectrum in tables: copying and positive_fraction [L, H]; re and im [L, H, K]
// (K the longest spectrum; shorter ones padded with 0).
struct SpectraTable {
  int L = 0, H = 0, K = 0;
  std::vector<float> copying, positive_fraction;  // [L * H]
  std::vector<float> re, im;                      // [L * H * K]
};
SpectraTable spectra_table(const std::vector<Spectrum>& spectra, int n_layers, int n_heads);

// Head scores with the repeated-token batch and the choices that made it.
struct HeadScoresRun {
  HeadScores scores;
  RepeatedTokens tokens;
  RepeatedTokensSpec spec;  // resolved
};
// Seed 004 on the weights `p` of a model with tokenizer `tok`: the unset choices of `spec`
// resolved (resolve_repeated_tokens), the batch made and scored.
// The reference sequences of mean and resample ablation for a model without an IOI task (seed 004's
// repeated random tokens, made as long as the context): rows of [BOS] + R + R + ..., R the head
// scores' random segment (distinct tokens of random_token_pool, L = min(pool, (n_ctx - 1) / 2)),
// repeated and cut at n_ctx tokens, seed 0. As many rows as keep every head's output on them
// within kMaxAblationReferenceBytes, at most kMaxAblationReferenceRows; fewer than
// kMinAblationReferenceRows is refused with a sentence that gives the size.
constexpr double kMaxAblationReferenceBytes = 64.0 * (1 << 20);
constexpr int kMaxAblationReferenceRows = 32;
constexpr int kMinAblationReferenceRows = 8;
Batch repeated_reference_sequences(const Tokenizer& tok, const Config& c);

HeadScoresRun head_scores_run(const Params<float>& p, const Tokenizer& tok, const RepeatedTokensSpec& spec);

// Corpus statistics and their cosines with the model's tables (seed 002).
struct CorpusStatsRun {
  CorpusStats stats;
  double direct_path_cosine = 0;
  std::vector<float> ov_cosine;  // [L * H]
};

// The number of sequences of `n` ids in a [B, T] batch, checked: throws "<what>: 10 token ids do
// not make 3 sequence(s) of equal length". Returns T.
int batch_length(std::size_t n, int B, const std::string& what);

// "train" | "held-out pairs" | "held-out templates" | "held-out both" -> the split; throws naming
// the four otherwise.
IoiSplit ioi_split_from_name(const std::string& name);

// What ModelSession::patch is asked: the clean input, and either a corruption the core makes
// (`kind`, `seed`) or the caller's own corrupted input with its answer position and tokens.
struct PatchRequest {
  std::vector<int> clean;
  std::string kind = "auto";          // "auto" | "swap_names" | "break_repeat" (when corrupted is empty)
  std::uint64_t seed = 0;             // break_repeat's draw
  std::vector<int> corrupted;         // the caller's corrupted input (same length), or empty
  int pos = -1;                       // with `corrupted`: the answer position (-1: the last)
  int correct = -1, wrong = -1;       // with `corrupted`: the two tokens compared (both required)
  PatchDirection direction = PatchDirection::Denoise;
  // Each: every head also patched at each position alone; Whole: at every position at once only;
  // EachIfItFits: each position when that stays within kMaxPatchWork, else whole heads only with
  // PatchRun::note saying why (what a page asks for on a text of any length).
  enum class Positions { Each, Whole, EachIfItFits } positions = Positions::Each;
};
struct PatchRun {
  Corruption corruption;  // kind "given" for the caller's own corrupted input
  PatchResult result;
  std::string note;  // why each position alone was left out (EachIfItFits), or empty
};
// {tokens, corruption: {kind, tokens, pos, correct, wrong, changed, description}, direction,
// clean_logit_diff, corrupted_logit_diff, normalised, head [L][H], head_effect [L][H],
// head_pos [L][H][T], head_pos_effect [L][H][T] (the last two absent without per_position),
// passes}: what `circuitscope patch --json` prints.
nlohmann::json patch_run_json(const std::vector<int>& clean, const PatchRun& run);

// The forward passes run() and forward_batch() keep, so that the next pass over the same model,
// intervention and text reuses their positions: one per intervention, of the session that ran
// last on this thread (another session's run drops them: the page shows one model's text at a
// time, and passes kept for models no longer shown would hold memory a long session never got
// back), the least recently used dropped when together they would exceed this many bytes
// (forward_bytes of each). A pass larger than this alone is kept alone. At attn-only-2l's shape
// the induction view's clean pass over 540 tokens takes 40 MB and its ablated pass 57 MB (each
// head's output kept), so both are kept up to about 650 tokens; one pass of 1,024 takes 108 MB.
// (The page's memory target at that shape leaves about 65 MB beside one 1,024-token pass.)
constexpr double kKeptPassBytes = 128.0 * (1 << 20);

class ModelSession {
 public:
  explicit ModelSession(ModelFile file);
  // A session drops its kept passes when it goes, so that deleting every model gives all their
  // memory back (tests/hardening/corrupt-models-wasm.mjs checks it).
  ~ModelSession();
  ModelSession(ModelSession&&) = default;
  ModelSession& operator=(ModelSession&&) = default;

  const ModelFile& file() const { return file_; }
  const Config& config() const { return file_.cfg; }
  // {"config", "tokenizer", "info"}
  nlohmann::json describe() const;
  // With <BOS> first when the vocabulary has one (as the CLI does).
  std::vector<Token> tokenize(const std::string& text) const;
  // The text as the views run it: tokenize(), then (with `fit`), past the context, the <BOS> the
  // tokenizer put first (if any) followed by the last n_ctx - bos tokens, so the newest text is
  // what the model sees.
  struct ContextTokens {
    std::vector<Token> tokens;
    int bos = 0;        // 1 when tokens[0] is the <BOS> tokenize() put first
    int truncated = 0;  // tokens of the text left out from the start
  };
  ContextTokens tokenize_to_context(const std::string& text, bool fit = true) const;

  // One forward pass and run()'s extras, into this session's kept pass under `iv` (see
  // kKeptPassBytes): a pass after this session's last run() under the same intervention is
  // incremental when the intervention allows it (forward_incremental): the positions before the
  // first changed token are kept, and x.changed_from says where recomputing began. So typing with
  // a head ablated (an ablated and a clean pass per keystroke) computes only the new positions.
  RunExtras run(const std::vector<int>& ids, const Intervention& iv, const RunOptions& o);
  // What the induction view draws for a text, from one call: the text fitted to the context
  // (tokenize_to_context), the bytes each token stands for, how many tokens read as <UNK>, one
  // pass under `iv` (run(): losses, the top `topk` next tokens at every position, the `top_keys`
  // keys each query attends to most in every head, and the text scores of the repeated block
  // holding position `at`, else the longest; no logits), and under
  // an intervention the same text without it, for comparison: its losses, its mean loss and its
  // probability of each of the intervened pass's top k. Each pass is incremental in its own kept
  // pass, as run()'s are. `read_pass` is given the intervened pass's cache and changed_from
  // before the clean pass runs (the clean pass may take its place within kKeptPassBytes): the API
  // copies the patterns there. No pass runs when the text gives no tokens. Without `last_row`,
  // the last position's top k (and the clean pass's probabilities of them) are left out, with the
  // rows of tokens appended after it, unless `at` picks one (RunOptions::last_row and shown_row:
  // at a large vocabulary each such row reads all of W_U, most of a keystroke); the page asks
  // for them once typing pauses.
  // What the induction view shows: the top 5 next tokens and the 3 keys each head attends to most.
  static constexpr int kTextTopK = 5, kTextTopKeys = 3;
  struct TextAnalysis {
    ContextTokens tokens;
    int unk_id = -1;                   // the vocabulary's <UNK> (-1 without one)
    int unknown = 0;                   // tokens read as <UNK>
    std::string bytes;                 // token i's bytes are bytes[byte_offsets[i], byte_offsets[i + 1])
    std::vector<int> byte_offsets;     // [T + 1]
    bool ran = false;                  // false: no tokens, no pass
    RunOptions options;                // what the pass under iv was asked for
    RunExtras run;                     // under iv
    bool compared = false;             // iv is not empty: the clean pass below ran
    std::vector<float> clean_loss;     // [T]
    double clean_mean_loss = 0;
    std::vector<float> clean_probs_of;  // [T, topk]: the clean pass's probability of run's top k
  };
  TextAnalysis analyse_text(const std::string& text, const Intervention& iv, int at, int topk, int top_keys, bool last_row = true,
                            const std::function<void(const ActivationCache<float>&, int changed_from)>& read_pass = {});
  // The cache of this session's last run() or forward_batch() (empty when the budget dropped it).
  const ActivationCache<float>& cache() const;
  // One forward pass over a [B, T] batch into a kept pass of its own; the mean next-token loss.
  double forward_batch(const std::vector<int>& ids, int B, int T);
  // The bytes of every kept pass on this thread (forward_bytes of each; all of one session), at
  // most kKeptPassBytes unless one pass alone is larger.
  static double kept_bytes();

  Attribution attribution(const std::vector<int>& ids, int pos, const Intervention& iv, int target = -1) const;
  // With every choice of spec unset (the default batch), computed once per session and kept.
  HeadScoresRun head_scores(const RepeatedTokensSpec& spec) const;
  // The head every view and panel shows when the state names none (one rule, here): the strongest
  // induction head, the largest prefix-matching score of the default head scores (seed 004; the
  // first in layer-then-head order on a tie); nullopt for a model without attention layers.
  std::optional<std::pair<int, int>> default_head() const;
  TopK top_k(const std::vector<int>& ids, int k) const;  // [1, T, k]
  // ids row-major [B, T].
  AblationResult ablate(const std::vector<int>& ids, int B, const Intervention& iv, int icl_early, int icl_late) const;
  SpectraTable spectra(bool ov) const;
  CorpusStatsRun corpus_stats(const std::vector<int>& ids, int window) const;

  // IOI: the template task when the model file's info carries one ("task": {"kind":
  // "ioi_templates", ...}), else the symbolic task.
  const IoiTemplateTask* ioi_task() const { return task_ ? &*task_ : nullptr; }
  // The task for the page: ioi_template_task_json plus "splits" [{split, what}] and
  // "template_info" [{index, text, readable: [order 0, order 1], held_out}]; null without a task.
  nlohmann::json ioi_task_json() const;
  // Which IOI task the model is for: "templates" (it carries a template task), "symbolic" (its
  // vocabulary is the symbolic task's, <BOS> <MID> and the names A..F, so ioi_evaluate and the
  // symbolic sentences run on it), else "" (not an IOI model). The page's rule for where a model
  // file opens.
  std::string ioi_kind() const;
  // The names whose probabilities ioi() reports: the task's names, or the symbolic A..F.
  const std::vector<int>& ioi_name_ids() const { return name_ids_; }
  // Their texts, in that order (ioiSentence's io and s count in it); empty for a model that is
  // not an IOI model (ioi_kind() "").
  std::vector<std::string> ioi_names() const;
  IoiAnalysis ioi(const std::vector<int>& ids, const Intervention& iv) const;
  // The task's sequences: a template model's split (HeldOutBoth by default) evenly subsampled to
  // at most kMaxTemplateRows rows and padded with <PAD>, or the symbolic task's 60.
  Batch ioi_sequences(std::optional<IoiSplit> split) const;
  IoiEvaluation ioi_evaluate(const Intervention& iv, std::optional<IoiSplit> split) const;
  // ioi() of every sequence of ioi_sequences(split), each cut after its prediction position (the
  // position its mask marks: a template row's padding is left out), with the tokens analysed.
  // Refuses a model of another vocabulary, as ioi_evaluate does.
  struct IoiRow {
    std::vector<int> tokens;
    IoiAnalysis analysis;
  };
  std::vector<IoiRow> ioi_all(const Intervention& iv, std::optional<IoiSplit> split) const;
  // One sentence: a template model reads the whole row, a symbolic model order, io and s.
  IoiSentence ioi_sentence(const IoiTemplateRow& row) const;

  // Activation patching (analysis/patching.h). corrupt(): the standard corruption of `ids`; kind
  // "auto" is swap_names for an IOI model (a template task, or a vocabulary with <MID>) and
  // break_repeat otherwise (which skips a leading <BOS> and never draws <BOS>, <PAD>, <UNK> or <MID>).
  Corruption corrupt(const std::vector<int>& ids, const std::string& kind, std::uint64_t seed) const;
  PatchRun patch(const PatchRequest& rq, const Intervention& iv) const;

  static constexpr int kMaxTemplateRows = 2000;

  // Seed 001 (mean and resample ablation): iv with the reference run its ablation kind reads, the
  // task's sequences: the symbolic task's 60, or a template model's training split evenly
  // subsampled to kAblationReferenceRows rows (positions past its padded length have no mean); for
  // a model without an IOI task, repeated_reference_sequences().
  // iv unchanged when its kind is zero, it carries a reference or it has nothing to replace.
  // run(), patch(), ioi(), ioi_all() and ioi_evaluate() apply it.
  Intervention with_ablation_reference(const Intervention& iv) const;
  static constexpr int kAblationReferenceRows = 256;

 private:
  ModelFile file_;
  std::optional<IoiTemplateTask> task_;
  std::vector<int> names_;     // the template task's name tokens (what ioi_names reads); empty for symbolic
  std::vector<int> name_ids_;  // names_, or the symbolic names
  mutable std::shared_ptr<const AblationReference> reference_;  // with_ablation_reference's, made once
  mutable std::shared_ptr<const HeadScoresRun> default_scores_;  // head_scores({})'s, made once
};

}  // namespace cs
