// Training: AdamW with decoupled weight decay, PyTorch's OneCycle schedule, gradient-norm
// clipping, recipes (architecture + data + optimiser + schedule + seed) and a step-wise Trainer
// that the CLI and the WASM module both drive one call per step.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data.h"
#include "io.h"
#include "model.h"
#include "params.h"
#include "tokenizer.h"

namespace cs {

struct Schedule {
  std::string kind = "onecycle";  // "onecycle" | "constant"
  // onecycle, as torch.optim.lr_scheduler.OneCycleLR with anneal_strategy="cos", three_phase=False:
  double pct_start = 0.3, div_factor = 25.0, final_div_factor = 1e4;
  bool cycle_momentum = true;  // beta1 goes max_momentum -> base_momentum -> max_momentum
  double base_momentum = 0.85, max_momentum = 0.95;
  // constant: linear warm-up from 0 to lr over warmup_steps, then lr.
  int warmup_steps = 0;
};

struct OptimConfig {
  double lr = 1e-3;  // max_lr for onecycle
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.01;
  double grad_clip = 1.0;  // max global L2 norm; <= 0 disables
};

struct Recipe {
  std::string name;
  Config model;                 // d_vocab is set from the tokenizer
  nlohmann::json tokenizer;     // {"kind":"synthetic","size":n} | {"kind":"ioi_symbolic","names":[...]} |
                                // {"kind":"char","corpus":path} | {"kind":"word","vocab":[...]} |
                                // {"kind":"bpe","corpus":path (or "text":the corpus),"vocab_size":n,"max_chars":m}
  nlohmann::json data;          // see make_data_source
  OptimConfig optim;
  Schedule schedule;
  int steps = 1000;
  int batch_size = 16;
  std::uint64_t seed = 0;
  // Every initial weight (init_params' draw, model.init_std or 0.8/sqrt(d_model)) multiplied by
  // this; 1 (the default) leaves the draw untouched, bit for bit. The gradient-leading-terms seed
  // (002) starts from small weights, where every softmax is uniform: e.g. 0.01.
  double init_scale = 1.0;
  std::vector<int> snapshots;   // steps at which the CLI saves a snapshot
  int eval_every = 0;           // steps between metrics records (0: only at the end)
  std::string output;           // where the CLI writes the final model
  nlohmann::json eval;          // metrics to record while training (analysis/training_metrics.h), or null
  std::string base_dir;         // the recipe's folder (relative paths in it are resolved against it)
  nlohmann::json source;        // the recipe as given, stored in the model file
};

// Parses and validates a recipe; relative paths in it are resolved against base_dir.
// Throws std::invalid_argument with a sentence naming the field.
Recipe recipe_from_json(const nlohmann::json& j, const std::string& base_dir = "");
// The files a recipe's trainer reads, as the recipe writes them (relative to the recipe's folder):
// tokenizer.corpus, data.path and data.names_path, each once, in that order. The held-out text of
// "eval" is not among them: the evaluator reads it, and only the CLI runs one.
std::vector<std::string> recipe_files(const nlohmann::json& recipe);
// The recipe with those files' contents written into it, for a trainer that reads no files (the
// page fetches them and passes them here): tokenizer.corpus gains tokenizer.text, data.path
// data.text, data.names_path data.names (the file's list); a text given is used instead of its
// file, and the model file records the path, not the text. `texts` maps each path as
// recipe_files gives it to the file's text; a path missing from it is refused, naming the file.
nlohmann::json recipe_with_texts(const nlohmann::json& recipe, const std::map<std::string, std::string>& texts);
// The recipe trained for `steps` steps instead (its schedule spans them; steps from 1 to 10^7): the
// snapshots it lists past the new end are dropped. What `circuitscope train --steps` and the page's
// steps field do.
nlohmann::json recipe_with_steps(const nlohmann::json& recipe, int steps);
// `data` (the recipe's data object) is needed only by the ioi_templates kind, which builds its
// vocabulary from the task.
Tokenizer make_tokenizer(const nlohmann::json& spec, const std::string& base_dir = "", const nlohmann::json* data = nullptr);

// Learning rate and beta1 at optimiser step `step` (0-based) of `total` steps; steps past the end
// keep the last step's values (training on past the recipe's steps anneals no further).
double schedule_lr(const Schedule& s, double max_lr, int step, int total);
double schedule_beta1(const Schedule& s, double beta1, int step, int total);

class AdamW {
 public:
  AdamW(const Params<float>& like, const OptimConfig& cfg);
  // p <- p - lr * wd * p ; m <- b1 m + (1-b1) g ; v <- b2 v + (1-b2) g^2 ;
  // p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
  void step(Params<float>& p, const Params<float>& g, double lr, double beta1);
  int t() const { return t_; }
  // The moments and step count, for a checkpoint; restore throws std::invalid_argument unless the
  // moments have the parameters' shapes.
  const Params<float>& m() const { return m_; }
  const Params<float>& v() const { return v_; }
  double b2_pow() const { return b2_pow_; }
  void restore(const Params<float>& m, const Params<float>& v, int t, double b2_pow);

 private:
  OptimConfig cfg_;
  Params<float> m_, v_;
  std::vector<Tensor<float>*> tp_, tm_, tv_;  // the tensors of p, m_ and v_, in file order
  std::vector<const Tensor<float>*> tg_;      // and of g (refilled per step; no allocation once sized)
  int t_ = 0;
  double b2_pow_ = 1.0;
};

// Global L2 norm of all gradients; scales them to max_norm if larger. Returns the norm before.
double clip_grad_norm(Params<float>& g, double max_norm);

// Thrown when a step produces NaN or Inf, a loss more than kRunawayFactor times its start
// (the larger of the first step's loss and ln d_vocab, a uniform guess), or a weight beyond
// kMaxAbsWeight (config.h); the message names the step (1-based, as StepMetrics::step counts)
// and the tensor or the loss.
constexpr double kRunawayFactor = 10;
struct TrainingDiverged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct StepMetrics {
  int step = 0;        // steps completed after this one
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double loss_repeated = -1;  // mean loss on tokens predictable by copying (-1 if none in the batch)
  double loss_fresh = -1;     // mean loss on the other tokens
};

// Data-parallel training: a step's batch split by whole rows into shards, each shard's gradient
// computed on its own (another thread, another Web Worker), the gradients summed in shard order,
// one optimiser step. A shard's batch carries the whole batch's mask sum (Batch::mask_total), so
// its loss and gradient are its share of the whole batch's mean: the shards' sums equal the
// one-shard step's up to the order of summation.
struct ShardResult {
  Params<float> grads;          // this shard's share of the gradient
  double loss = 0;              // its share of the mean loss
  std::vector<float> per_token; // [rows, T] cross-entropy at every position
};
// One shard's forward, loss and backward, reusing `cache` and `out` between calls.
void shard_gradient(const Params<float>& p, const Batch& shard, ActivationCache<float>& cache, ShardResult& out);
// A gradient (or any Params) as one flat array in file order, and back (throws
// std::invalid_argument unless n is param_count(p.cfg)).
std::vector<float> flatten(const Params<float>& p);
void unflatten(const float* data, std::size_t n, Params<float>& p);
// Rows [row0, row0 + rows) of a batch as a shard of it (mask_total set to the whole batch's sum).
Batch batch_rows(const Batch& b, int row0, int rows);

class WorkerPool;  // train.cpp: the threads step_parallel keeps between steps

class Trainer {
 public:
  explicit Trainer(const Recipe& r);
  StepMetrics step();  // one optimisation step; throws TrainingDiverged
  // The same step split into `shards` shards of the batch computed on as many threads (natively;
  // one after another in WebAssembly, which has no threads here). shards = 1 is step() exactly.
  // At most batch_size shards.
  StepMetrics step_parallel(int shards);
  // The two halves of a step whose shards are computed elsewhere (the page's Web Workers): the
  // next batch, split into `shards` shards (the first B % shards of them one row larger)...
  std::vector<Batch> begin_step(int shards);
  // ...and, given every shard's result in shard order, the rest of the step (the same checks,
  // clipping and optimiser step as step()). Throws std::logic_error without a begun step, and
  // std::invalid_argument when a result does not match its shard.
  StepMetrics finish_step(const std::vector<const ShardResult*>& results);
  // Forgets a begun step (its batch is used up), e.g. when a worker computing a shard failed.
  void cancel_step() { pending_ = false; }
  // One shard's result with the trainer's weights, into a buffer the trainer keeps (valid until
  // the next call): what a worker holding a copy of the weights computes.
  const ShardResult& shard_result(const Batch& shard);
  // Every weight, tensor after tensor in file order (for_each_tensor), and back; set_params_flat
  // throws std::invalid_argument unless the size is param_count.
  std::vector<float> params_flat() const;
  void set_params_flat(const float* data, std::size_t n);
  int steps_done() const { return done_; }
  const Recipe& recipe() const { return recipe_; }
  const Params<float>& params() const { return params_; }
  const Tokenizer& tokenizer() const { return tok_; }
  DataSource& data_source() { return *data_; }
  ModelFile model_file() const;  // config, tokenizer, weights and training info

  // Everything the next step depends on (the weights, AdamW's moments and step count, the random
  // generator, the loss the runaway check compares with), so a run resumed from it continues bit
  // for bit: the same weights after N more steps as the run that never stopped. `state` holds the
  // counters and the recipe as given; a caller may add its own keys (the CLI keeps its metrics).
  struct Checkpoint {
    ModelFile model;
    Params<float> adam_m, adam_v;
    nlohmann::json state = nlohmann::json::object();
  };
  Checkpoint checkpoint() const;
  // Throws std::invalid_argument, in a sentence, when the checkpoint was made by another recipe
  // (the recipes as given must be equal but for "steps") or does not fit this model.
  void restore(const Checkpoint& c);

 private:
  Recipe recipe_;
  Tokenizer tok_;
  std::unique_ptr<DataSource> data_;
  Params<float> params_, grads_;
  AdamW opt_;
  // A step begun by begin_step (or step_parallel): its batch and shards.
  bool pending_ = false;
  DataBatch pending_batch_;
  std::vector<Batch> pending_shards_;
  std::vector<ActivationCache<float>> shard_caches_;  // step_parallel's, one per shard
  std::vector<ShardResult> shard_results_;
  std::shared_ptr<WorkerPool> pool_;
  ShardResult own_result_;  // shard_result's
  StepMetrics apply_gradient(const DataBatch& d, double loss, const std::vector<float>& per_token, bool check_loss);
  ActivationCache<float> cache_;
  LossResult loss_;  // reused from step to step
  Rng rng_;
  int done_ = 0;
  double last_loss_ = 0;
  double start_loss_ = 0;  // the first step's loss, at least ln d_vocab
};

// A checkpoint as a folder of three model files (model.safetensors: the weights, with the state
// in its info under "checkpoint"; adam_m.safetensors and adam_v.safetensors: the moments, float32).
// save_checkpoint writes to a temporary folder beside `dir` and renames it, so an interrupted save
// leaves the previous checkpoint whole. load_checkpoint's errors name the folder.
void save_checkpoint(const std::string& dir, const Trainer::Checkpoint& c);
Trainer::Checkpoint load_checkpoint(const std::string& dir);

}  // namespace cs
