// Report: recomputes, from the shipped models alone, every claim of the seeds that these models
// can test, with the seed's figure, the measured figure and a one-line verdict. Two steps:
// measure_report() runs the models and returns the figures as plain data; report_json() writes
// the claims (text, thresholds, verdicts) from those figures alone.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cs {

// The sweep over seeds recorded beside a symbolic IOI model (NAME.seeds.json).
struct SeedSweep {
  int solved = 0, runs = 0;
  double min_accuracy = 0, max_accuracy = 0, mean_accuracy = 0;
};

// A symbolic IOI model (seed 001) on the 60 sequences of the task.
struct IoiFigures {
  int n_heads = 0;
  double accuracy = 0, mean_logit_diff = 0, mean_prob_io = 0, mean_prob_s = 0;
  std::vector<double> head_cos_sum, head_cos_diff, head_diff;  // [n_layers * n_heads] means over the sequences
  SeedSweep sweep;
  std::vector<double> cut_accuracy;  // [3] with Q-, K-, V-composition cut (two-layer models only; else empty)
  // The same under each ablation kind (kAblations order: zero, mean, mean-all, resample), [4][3],
  // and each cut's accuracy on every random seed of the sweep that solves the task, [4][3][seeds].
  std::vector<std::vector<double>> cut_by_kind;
  std::vector<std::vector<std::vector<double>>> sweep_cuts;
};

// An IOI model on sentence templates, on each split of its task.
struct TemplateSplitFigures {
  std::string split;  // ioi_split_name()
  int n = 0;
  double accuracy = 0, mean_prob_io = 0, mean_prob_s = 0;
};
struct TemplateFigures {
  std::string name;
  int n_layers = 0, n_heads = 0;
  std::size_t n_names = 0, n_templates = 0;
  int holdout_templates = 0;
  double holdout_pair_fraction = 0;
  std::vector<TemplateSplitFigures> splits;  // in kIoiSplits order
  double train = 0, held_out_templates = 0, held_out_both = 0;  // accuracies
  // On the held-out-both split: p(IO), p(S), and each head's direct effect on logit(IO) + logit(S)
  // (sum share) and logit(IO) - logit(S) (difference share) and the cosines of its output with
  // those directions, [n_layers * n_heads].
  double both_prob_io = 0, both_prob_s = 0;
  std::vector<double> head_sum, head_diff, head_cos_sum, head_cos_diff;
  // The most contrastive head (largest difference share) and the most additive other head
  // (largest sum share; the same head when there is one), as flat indices l * n_heads + h.
  int additive = 0, contrastive = 0;
};

// A character model's best prefix-matching (induction) head on repeated random characters.
struct CharHeadFigures {
  std::string name;
  double best_prefix_matching = 0;
  std::string head;  // "L1H2"
  // The same for every training seed: seed 0 (the shipped model) first, then
  // models/seeds/NAME.seedN.safetensors.
  struct Seed {
    int seed = 0;
    double best_prefix_matching = 0;
    std::string head;
  };
  std::vector<Seed> seeds;
};

// What a character model's training metrics say about its phase change.
struct TrainingFigures {
  std::string name;
  int seed = 0;                           // the training seed (0: the shipped run)
  bool expect_phase_change = false;
  int icl_early = 0, icl_late = 0;        // the ICL score's token positions
  double icl_first = 0, icl_last = 0;     // the ICL score at the first and last record
  int phase_change = -1;                  // step, or -1 for none
  int before_phase_change = -1;           // PhaseChange::before_step (two records before it), or -1
  double icl_before = 0, icl_after = 0;   // 250 steps either side of the phase change
  // Their standard errors over the validation windows (NaN when the metrics file has no icl_se).
  double icl_first_se = 0, icl_last_se = 0, icl_before_se = 0, icl_after_se = 0;
  double bump_rise = 0;                   // largest validation-loss rise within 500 steps of it
  int bump_at = -1, turn = -1;            // where that rise is; the PCA trajectory's sharpest turn
  // Every training seed of the recipe, the shipped seed 0 first, then the extra seeds trained
  // into models/seeds/ (NAME.seedN.metrics.json); each of these has no seeds of its own.
  std::vector<TrainingFigures> seeds;
};

// Held-out sentences written twice, per model: the loss ratio of the second copy to the first,
// and where its induction head looks while it reads the second copy.
struct RepeatModelFigures {
  std::string name, head;
  double median = 0;          // median over the sentences of loss(second) / loss(first)
  long halved = 0;            // sentences with a ratio of at most 0.5
  double first_a = 0, first_b = 0;  // the first sentence's loss per character, first and second copy
  double target = 0, bos = 0, match1 = 0, match2 = 0;  // attention shares, means over the sentences
  // The median ratio and halved count of every training seed (seed 0, the shipped model, first;
  // then models/seeds/NAME.seedN.safetensors), each with its own induction head.
  struct Seed {
    int seed = 0;
    std::string head;
    double median = 0;
    long halved = 0;
  };
  std::vector<Seed> seeds;
};
struct RepeatFigures {
  std::size_t n_sentences = 0;
  std::string first_sentence;
  std::vector<RepeatModelFigures> models;
};

// char-2l's previous-token head into its induction head: composition scores and path cuts.
struct KCompositionFigures {
  int prev_head = 0, induction_head = 0;   // heads of layer 0 and layer 1
  double prev_score = 0, prefix_matching = 0;
  double composition[3] = {0, 0, 0};       // Q, K, V
  double baseline = 0;                     // random-matrix composition baseline
  double clean_loss = 0;                   // loss on the repeated half
  double cut_loss[3] = {0, 0, 0};          // the same with the Q, K, V path cut
};

// char-1l: each head's OV copying statistic, and the top skip-trigrams of the most copying head.
struct CopyingFigures {
  std::string model;                  // the one-layer model measured
  std::vector<double> copying_score;  // [n_heads]
  int best = 0;
  struct Trigram {
    std::string source, dest, out;  // token labels
  };
  std::vector<Trigram> top;  // at most 6
};

// char-1l's snapshots against the corpus's leading terms (seed 002).
struct LeadingTermsFigures {
  std::string model;   // the one-layer model measured
  std::string corpus;  // the text its statistics are counted on (in the models folder)
  struct Step {
    int step = 0;
    double direct = 0, best_ov = 0;  // cosines: direct path with the bigram term, best head's OV with the context term
  };
  std::vector<Step> steps;  // the shipped snapshots (normal initialisation, AdamW), window 8
  // The seed's own measurement (models/char-1l.leading.json, from `circuitscope leading`): per
  // step 0..N from small weights under full-batch gradient descent, the direct path's cosine with the
  // bigram term, the best head's OV cosine (the larger of the context term and context x B^T B) and
  // W_U's Gram matrix with B^T B.
  std::string curve_command;
  double init_scale = 0, lr = 0;
  std::vector<int> curve_steps;
  std::vector<double> curve_direct, curve_best_ov, curve_gram;
};

// The ICL score with its standard error on held-out text at a run's snapshots (models/NAME.icl.json,
// written by `circuitscope icl ... --json` in scripts/train-models.sh), for the sub-word models.
struct IclPoint {
  int step = 0;
  double icl = 0, se = 0;
  int windows = 0;
  bool paired = false;                   // the paired estimator (the file records its blocks)
  double late_loss = 0, early_loss = 0;  // paired: the mean loss of the same tokens with B and with A tokens before them
};
// One training run's ICL figures: the sub-word models of one family trained with one seed.
struct SubwordIclRun {
  struct Model {
    std::string name;
    int n_layers = 0;
    bool smeared = false;
    std::vector<IclPoint> points;  // by step
  };
  std::vector<Model> models;  // the two-layer model first
  int phase_change = -1;      // the two-layer model's, from its training metrics
  int before_step = -1;       // its PhaseChange::before_step: the ICL row's "before"
  int icl_early = 0, icl_late = 0;  // the score's token positions (the training metrics')
  int seed = 0;               // the training seed (0: the shipped models)
};
// The shipped run first (models/NAME.icl.json), then each extra training seed
// (models/seeds/NAME.seedN.icl.json, the models trained with that seed).
struct SubwordIclFigures {
  std::vector<SubwordIclRun> seeds;
};

struct ReportFigures {
  IoiFigures ioi_1l1h, ioi_1l2h, ioi_1l2h_nopos, ioi_2l1h;
  std::vector<TemplateFigures> templates;
  std::vector<CharHeadFigures> char_heads;
  std::vector<TrainingFigures> training;
  RepeatFigures repeat;
  KCompositionFigures k_composition;
  CopyingFigures copying;
  LeadingTermsFigures leading_terms;
  // The sub-word (byte-pair) models on natural text: training figures as above, the ICL score
  // with its standard error at the snapshots, and the copying statistic of the one-layer model.
  std::vector<TrainingFigures> subword_training;
  SubwordIclFigures subword_icl;
  RepeatFigures subword_repeat;  // bpe-2l and bpe-1l-smeared on sentences of the held-out books
  CopyingFigures subword_copying;
  LeadingTermsFigures subword_leading_terms;
};

// Reads models_dir (the shipped *.safetensors, *.metrics.json, *.seeds.json, snapshots/,
// corpus/ and the extra training seeds in seeds/) and measures every figure the report states. Throws std::runtime_error naming a
// missing file.
ReportFigures measure_report(const std::string& models_dir);
// {"claims": [{id, seed, claim, seed_figure, measured, verdict, view}], "char_scores": {...}}
// from the figures alone.
nlohmann::json report_json(const ReportFigures& figures);
// A claim's outcome from the verdict the report wrote: "reproduced", "partly" (a verdict
// "partly: ...", or one part of a claim reproduced and another not, e.g. "bump: reproduced on 3
// of 3 seeds; turn: not reproduced (0 of 3 seeds)"), "not reproduced", or "measured" ("measured
// only", "shown": no threshold). Throws std::logic_error for a verdict with none of them.
std::string claim_outcome(const std::string& verdict);
// report_json(measure_report(models_dir)).
nlohmann::json build_report(const std::string& models_dir);
// The same as Markdown (REPORT.md).
std::string report_markdown(const nlohmann::json& report);

}  // namespace cs
