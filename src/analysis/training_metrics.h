// Training metrics: what the shipped runs record while they train (train and validation loss, the
// in-context-learning score, per-head scores on repeated random tokens, the per-token-loss vector)
// and the principal-component trajectory of those vectors (induction-heads seed, 004_...).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "params.h"
#include "tokenizer.h"
#include "train.h"

namespace cs {

// The recipe's "eval" object:
//   {"every": N, "valid_path": FILE, "batch": 8, "icl_early": 20, "icl_late": 200, "repeat_len": L, "seed": 1}
// valid_path: held-out text (char models); without it the validation set is a fixed batch from the
// training data source. icl_early/icl_late: token indices of the ICL score (the paper's 50 and 500
// need n_ctx > 500; n_ctx 256 models use 20 and 200). repeat_len: length L of the random segment
// for the head scores ([BOS] R R, 2L+1 <= n_ctx); 0 chooses the largest that fits.
struct EvalSpec {
  int every = 0;
  std::string valid_path;
  int batch = 8;
  int icl_early = 20, icl_late = 200;
  int repeat_len = 0;
  std::uint64_t seed = 1;
};
EvalSpec eval_spec_from_json(const nlohmann::json& j, const std::string& base_dir = "");

struct EvalRecord {
  int step = 0;
  double train_loss = 0;           // mean training loss over the steps since the last record
  double valid_loss = 0;           // mean next-token loss on the validation set
  double icl = 0;                  // loss at icl_late minus loss at icl_early, on the validation set
  double repeated_loss = 0;        // mean loss on the second copy of repeated random tokens
  std::vector<float> prefix_matching, copying, previous_token;  // [n_layers * n_heads]
  std::vector<float> per_token;    // the validation set's per-token losses, flattened [B * (T-1)]
};

class Evaluator {
 public:
  Evaluator(const EvalSpec& spec, const Recipe& recipe, const Tokenizer& tok, DataSource& train_data);
  EvalRecord evaluate(const Params<float>& p, int step, double train_loss) const;
  const EvalSpec& spec() const { return spec_; }

 private:
  EvalSpec spec_;
  int T_ = 0, first_ = 0, n_ = 0, bos_ = 0, L_ = 0;
  Batch valid_;
  bool has_icl_ = false;
};

// The metrics file: the spec, every record, and the per-token-loss trajectory projected on its
// first `n_components` principal components (centred across records; components are the
// eigenvectors of the records' Gram matrix), with the variance each explains.
nlohmann::json metrics_json(const EvalSpec& spec, const std::vector<EvalRecord>& records, int n_components = 3);

}  // namespace cs
