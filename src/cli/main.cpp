// circuitscope: the native command line (train from a recipe, run a model on text, inspect a file).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <regex>
#include <memory>
#include <new>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/ioi.h"
#include "analysis/model_session.h"
#include "analysis/patching.h"
#include "analysis/training_metrics.h"
#include "checks.h"
#include "io.h"
#include "ioi_templates.h"
#include "kernels/gemm.h"
#include "model.h"
#include "report.h"
#include "tokenizer/hf.h"
#include "tokenizer/utf8.h"
#include "train.h"

namespace {

using nlohmann::json;

const char* kUsage =
    "circuitscope: train, run and inspect attention-only transformers\n"
    "\n"
    "usage:\n"
    "  circuitscope train RECIPE.json [--out FILE] [--steps N] [--seed N] [--no-snapshots] [--log-every N] [--f16] [--threads N] [--checkpoint DIR] [--resume DIR] [--stop-after N]\n"
    "      Train a model from a recipe; writes the model (and any snapshots the recipe asks for).\n"
    "  circuitscope run MODEL (--text TEXT | --file FILE) [--top K] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
    "      Per-token loss and the top K next-token predictions for a text.\n"
    "  circuitscope inspect MODEL [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
    "      The config, tokenizer and parameter table of a model file (.safetensors, or a TransformerLens .pth).\n"
    "      --config: the TransformerLens config.json beside the weights; --no-processing: the weights as written\n"
    "      (from_pretrained_no_processing) instead of TransformerLens's fold_ln and centring.\n"
    "  circuitscope patch MODEL --text TEXT [--kind K] [--seed N] [--noise] [--heads-only] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
    "      Activation patching of every head and MLP (and each at every position) on the logit difference.\n"
    "  circuitscope sweep RECIPE.json [--seeds N] [--out FILE]\n"
    "      Train a symbolic-IOI recipe with seeds 0..N-1, keep the median seed's model, write the spread.\n"
    "  circuitscope ioi MODEL [--cut q|k|v] [--ablation KIND] [--seed N] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
    "      Accuracy on the 60 symbolic IOI sequences, optionally with a composition cut.\n"
    "  circuitscope report [--models DIR] [--check]\n"
    "      Measure the seeds' claims on the shipped models; write DIR/REPORT.md and DIR/report.json.\n"
    "  circuitscope icl MODEL [MORE ...] --file TEXT [--windows N] [--early A] [--late B] [--batch K] [--unpaired] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
    "      The in-context-learning score (loss at token B minus token A) on held-out text, with its standard error.\n"
    "  circuitscope series CHECKPOINT... [--text FILE] [--out METRICS.json] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
    "      Score the checkpoints of one training run (NAME_N.pth, stepN.safetensors) as the trainer scores its own.\n"
    "  circuitscope leading RECIPE.json [--steps N] [--init-scale S] [--optimizer gd|adamw] [--lr X] [--rows N] [--json] [--out FILE]\n"
    "      Cosines of the learned tables with their gradient leading terms over the first steps from small weights.\n"
    "  circuitscope tokenize --tokenizer TOKENIZER.json (--text TEXT | --jsonl FILE) [--special]\n"
    "      Token ids, byte and UTF-16 ranges of texts under a Hugging Face tokenizer.json.\n"
    "  circuitscope help [COMMAND]\n"
    "\n"
    "Every command takes --kernel NAME (or the environment variable CS_KERNEL): the matrix-product\n"
    "kernel, one of auto, portable, plain, sse, avx2, avx512 (those this CPU runs). train and sweep use\n"
    "auto, the fastest (AVX-512 or AVX2 with fused multiply-adds where the CPU has them); the others\n"
    "use portable, the SSE4.2 kernel whose results equal the web page's bit for bit. report always\n"
    "uses portable, so REPORT.md is the same on every machine.\n";

const std::map<std::string, std::string> kHelp = {
    {"train",
     "circuitscope train RECIPE.json [--out FILE] [--steps N] [--seed N] [--no-snapshots] [--log-every N] [--f16] [--threads N] [--checkpoint DIR] [--checkpoint-every N] [--resume DIR] [--stop-after N]\n"
     "  Trains the model a recipe describes (architecture, tokenizer, data, optimizer, schedule,\n"
     "  steps, batch_size, seed) and writes it as a safetensors model file.\n"
     "  --out FILE      where to write the model (default: the recipe's \"output\")\n"
     "  --steps N       train N steps instead of the recipe's (its schedule spans them; snapshots it lists\n"
     "                  past N are skipped)\n"
     "  --seed N        override the recipe's seed (0 to 2147483647): the initial weights and the\n"
     "                  training data drawn; the model file's info records the recipe with this seed\n"
     "  --no-snapshots  skip the snapshots the recipe lists (the model and metrics are still written)\n"
     "  --log-every N   print a progress line every N steps (default 50)\n"
     "  --f16           store the weights as float16 (half the size)\n"
     "  --threads N     split each batch's rows across N threads (data-parallel: each computes its\n"
     "                  rows' gradient, the gradients are summed in a fixed order, one optimiser step);\n"
     "                  the same run as with 1 thread up to the order of summation (default 1)\n"
     "  --checkpoint DIR keep the run resumable in the folder DIR (the weights, the optimiser's moments,\n"
     "                  the random generator and the metrics so far), rewritten every --checkpoint-every\n"
     "                  steps (default 500) and when --stop-after stops the run\n"
     "  --resume DIR    continue the run kept in DIR (made by the same recipe, seed and settings; --steps\n"
     "                  may differ): it continues bit for bit, to the same model and metrics as a run that\n"
     "                  never stopped; it keeps checkpointing to DIR unless --checkpoint names another\n"
     "  --stop-after N  stop after N steps, with a checkpoint, to resume later (long runs in parts)\n"
     "  Snapshots listed in the recipe are written as float16 files DIR/snapshots/NAME/stepN.safetensors\n"
     "  beside the model DIR/NAME.safetensors; a recipe with \"eval\" also writes DIR/NAME.metrics.json.\n"
     "  Same recipe, same seed, same build and kernel: the same weights, bit for bit. The avx2 and\n"
     "  avx512 kernels give the same bits as each other; portable (the page's arithmetic) rounds\n"
     "  differently, so its runs differ from theirs by float rounding that grows over training.\n"},
    {"run",
     "circuitscope run MODEL (--text TEXT | --file FILE) [--top K] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
     "  Tokenizes the text (a <BOS> token first), runs the model and prints, for every token,\n"
     "  the loss of predicting it and the model's top K guesses for the next token.\n"
     "  --json prints {\"tokens\", \"token_text\", \"loss\", \"logits\", \"top\"} instead of a table.\n"
     "  --tokenizer TOKENIZER.json: for a file saved from TransformerLens, which carries no tokenizer, the\n"
     "  Hugging Face tokenizer to read the text with (its <BOS> is <|endoftext|>, or --bos TOKEN).\n"},
    {"sweep",
     "circuitscope sweep RECIPE.json [--seeds N] [--out FILE]\n"
     "  Trains an IOI recipe once per seed 0..N-1 (default 10), measures each model's accuracy and\n"
     "  mean logit difference over all 60 sequences of the symbolic task (for sentence templates:\n"
     "  over the held-out templates and name pairs, each split printed), writes the model of the\n"
     "  median seed (ranked by accuracy, then mean logit difference; the lower middle for an even\n"
     "  count) to FILE (default: the recipe's \"output\") and every seed's figures to\n"
     "  FILE-without-extension.seeds.json. The shipped model is the median, not the luckiest.\n"
     "  For a symbolic recipe of two or more layers each seed also gets \"cuts\": its accuracy with\n"
     "  the Q-, K- and V-composition cut under each ablation kind (zero, mean, mean-all, resample;\n"
     "  see circuitscope help ioi).\n"},
    {"ioi",
     "circuitscope ioi MODEL [--cut q|k|v] [--ablation KIND] [--seed N] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
     "  Accuracy, mean logit difference and mean p(IO), p(S) of a symbolic IOI model over all 60\n"
     "  sequences of the task. --cut cuts that input (query, key or value) of every head from the output\n"
     "  of every head of every earlier layer (seed 001's composition cut). --ablation says what replaces\n"
     "  the cut heads' contribution: zero (default: removed), mean (the head's output averaged over the\n"
     "  60 sequences, at each position), mean-all (averaged over the 60 sequences and their positions),\n"
     "  resample (the head's output on another of the 60 sequences, drawn from --seed, default 0).\n"
     "  --json prints {accuracy, correct, n, mean_logit_diff, mean_prob_io, mean_prob_s, cut, ablation}.\n"},
    {"report",
     "circuitscope report [--models DIR] [--check]\n"
     "  Recomputes, from the shipped models in DIR (default models), every claim of the seeds these\n"
     "  models can test, and writes DIR/REPORT.md and DIR/report.json. The induction claims are also\n"
     "  measured on the extra training seeds DIR/seeds/NAME.seedN.{metrics.json,safetensors} (N = 1, 2, ...)\n"
     "  and give each seed's figure and on how many seeds they hold. With --check it writes nothing\n"
     "  and exits 1 if the committed files differ from what it computes.\n"},
    {"patch",
     "circuitscope patch MODEL --text TEXT [--kind K] [--seed N] [--noise] [--heads-only] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
     "  Corrupts the text the standard way (--kind auto: swap_names for an IOI model, the second\n"
     "  mention of the subject becoming the indirect object; break_repeat otherwise, the first copy\n"
     "  of the longest repeated block replaced by tokens drawn with --seed, default 0), then patches\n"
     "  each head's output (hook_result), and each layer's MLP output (hook_mlp_out) in a model with\n"
     "  MLPs, from the clean run into the corrupted one (--noise: from the\n"
     "  corrupted run into the clean one), at every position and at each position alone, and prints\n"
     "  the logit difference logit[correct] - logit[wrong] at the answer position and the normalised\n"
     "  effect (patched - corrupted) / (clean - corrupted). --heads-only skips the per-position table.\n"
     "  --json prints {tokens, corruption, direction, clean_logit_diff, corrupted_logit_diff,\n"
     "  normalised, head, head_effect, head_pos, head_pos_effect, [mlp, mlp_effect, mlp_pos_effect,] passes}.\n"},
    {"leading",
     "circuitscope leading RECIPE.json [--steps N] [--init-scale S] [--optimizer gd|adamw] [--lr X] [--rows N] [--json] [--out FILE]\n"
     "  Gradient leading terms (seed 002) measured as the seed measures them: the recipe's model with its\n"
     "  initial weights multiplied by S (default 0.01), trained on one fixed batch of --rows sequences\n"
     "  from the recipe's data (default: the recipe's batch_size) for N steps (default 50) of full-batch\n"
     "  gradient descent with learning rate X (default: the recipe's optimizer.lr), or with the recipe's\n"
     "  AdamW and schedule (--optimizer adamw). At every step 0..N it prints the batch's loss and the\n"
     "  cosine of W_E W_U with the bigram term (and of what the steps added to W_E W_U), of W_U's Gram\n"
     "  matrix with B^T B, and of the best head's OV circuit with the context term Phi and with Phi\n"
     "  composed with B^T B; the statistics are counted on that batch, the context over the whole prefix.\n"
     "  --json prints the curve (every head) as JSON; --out FILE also writes it there (the report reads\n"
     "  models/char-1l.leading.json). Deterministic for a recipe, its options and the kernel.\n"},
    {"icl",
     "circuitscope icl MODEL [MORE ...] --file TEXT [--windows N] [--early A] [--late B] [--batch K] [--before-phase-change METRICS] [--unpaired] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
     "  The in-context-learning score (induction-heads seed, 004) on held-out text, on paired windows: N\n"
     "  target tokens spread evenly over the text (default 1000), each predicted once with the B tokens\n"
     "  before it (default 500) and once with the A tokens before it (default 50), both after <BOS>; the\n"
     "  score is the mean of loss with B minus loss with A, so the same tokens are compared. Its standard\n"
     "  error comes from blocks of consecutive pairs that span twice a window of text (neighbouring windows\n"
     "  share text). B may be at most n_ctx - 12, or 12 below the window the recipe in the file trained\n"
     "  on when that is shorter. Several models (e.g. a run's snapshots) are scored on the same windows.\n"
     "  --json prints [{model, step (the training step the file records, if any), icl, se, windows, block,\n"
     "  blocks, late_loss, early_loss, early, late, collapsed_positions}] (collapsed_positions: rows of\n"
     "  W_pos under 0.7 times the median norm of the rows within 8 of them).\n"
     "  --unpaired: the earlier definition (the training metrics of bpe-2l and its siblings use it): N\n"
     "  evenly spaced windows of <BOS> and B+1 tokens, loss at token B minus token A of each window,\n"
     "  standard error over the windows.\n"
     "  --before-phase-change METRICS scores only two of the files: the last at or before the record two\n"
     "  before the phase change of the run in METRICS (a NAME.metrics.json; the phase change is where the\n"
     "  best head's prefix matching passes half its final value, and the record just before it is often\n"
     "  already changing) and the one with the largest step.\n"},
    {"tokenize",
     "circuitscope tokenize --tokenizer TOKENIZER.json (--text TEXT | --jsonl FILE) [--special]\n"
     "  Reads a Hugging Face tokenizer.json (byte-pair models such as GPT-2's and GPT-NeoX's) and\n"
     "  tokenizes the text, or every line of FILE (each a JSON string), printing one JSON line per text:\n"
     "  {\"ids\", \"bytes\" (each token's [begin, end) in the text's UTF-8), \"spans\" (the same in UTF-16\n"
     "  units, widened to whole characters), \"decoded\" (the ids decoded again)}, or {\"error\"} for a\n"
     "  text that cannot be tokenized. --special adds the post-processor's special tokens.\n"},
    {"series",
     "circuitscope series CHECKPOINT... [--text FILE] [--out METRICS.json] [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
     "  Scores each checkpoint of one training run, one file at a time, with the record the trainer\n"
     "  keeps for its own runs: validation loss and per-token losses on windows of held-out text, the\n"
     "  paired ICL score with its standard error, every head's prefix-matching, copying and\n"
     "  previous-token scores and the loss on repeated random tokens; then the phase change and the\n"
     "  per-token-loss trajectory (PCA) over the series. Each file's label is the number its name ends\n"
     "  with (TransformerLens's checkpoints/NAME_N.pth: tokens seen; circuitscope's stepN.safetensors).\n"
     "  --text FILE      held-out text (read with the model's tokenizer); without it, only the head scores\n"
     "  --out FILE       write the series as a metrics file (the Training view's format)\n"
     "  --json           print the metrics file instead of the table\n"
     "  --config, --no-processing, --tokenizer, --bos: as for run; every checkpoint is read with them\n"},
    {"inspect",
     "circuitscope inspect MODEL [--json] [--config CONFIG.json] [--no-processing] [--tokenizer TOKENIZER.json [--bos TOKEN]]\n"
     "  Prints the config, tokenizer summary, training info and every tensor with its shape.\n"},
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> opts;
};

Args parse_args(int argc, char** argv, int start, const std::map<std::string, bool>& known /* name -> takes value */) {
  Args a;
  for (int i = start; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0) {
      auto it = known.find(s);
      if (it == known.end()) throw UsageError("unknown option " + s);
      if (it->second) {
        if (i + 1 >= argc) throw UsageError("option " + s + " needs a value");
        a.opts[s] = argv[++i];
      } else {
        a.opts[s] = "1";
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

// A number written plainly: an optional minus, digits, and for a fraction one point and an
// exponent. std::stoi and std::stod would also take leading spaces, "+3", hex and "inf".
bool plain_number(const std::string& s, bool fraction) {
  static const std::regex whole("-?[0-9]+"), real("-?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  return std::regex_match(s, fraction ? real : whole);
}

int to_int(const std::string& s, const std::string& opt, int lo, int hi) {
  try {
    if (!plain_number(s, false)) throw std::invalid_argument("");
    std::size_t used = 0;
    int v = std::stoi(s, &used);
    if (used != s.size() || v < lo || v > hi) throw std::out_of_range("");
    return v;
  } catch (const std::exception&) {
    throw UsageError(opt + " must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not \"" + s + "\"");
  }
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (!ec && type != std::filesystem::file_type::regular && type != std::filesystem::file_type::not_found)
    throw std::runtime_error("cannot read " + path + ": it is not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string dirname_of(const std::string& p) {
  auto k = p.find_last_of('/');
  return k == std::string::npos ? "" : p.substr(0, k);
}

// The model file's name without its extension: models/char-2l.safetensors -> models/char-2l.
std::string output_stem(const std::string& out) {
  const std::string ext = ".safetensors";
  if (out.size() > ext.size() && out.compare(out.size() - ext.size(), ext.size(), ext) == 0)
    return out.substr(0, out.size() - ext.size());
  return out;
}

// Snapshots go to DIR/snapshots/NAME/stepN.safetensors beside the model DIR/NAME.safetensors.
std::string snapshot_path(const std::string& out, int step) {
  std::string stem = output_stem(out);
  auto k = stem.find_last_of('/');
  std::string dir = k == std::string::npos ? "" : stem.substr(0, k + 1);
  std::string name = k == std::string::npos ? stem : stem.substr(k + 1);
  return dir + "snapshots/" + name + "/step" + std::to_string(step) + ".safetensors";
}

json read_recipe_json(const std::string& path) {
  const std::string text = read_file(path);
  json j;
  if (const auto problem = cs::read_json(text, j)) throw std::runtime_error("recipe " + path + " " + *problem);
  return j;
}

// Runs f, turning the core's "recipe: ...", "config: ...", "data: ..." errors into sentences that
// name the recipe file: "recipe models/recipes/x.json: steps must be ...".
template <class F>
auto with_recipe(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const cs::TrainingDiverged&) {
    throw;
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    for (const char* prefix : {"recipe: ", "data: "})
      if (m.rfind(prefix, 0) == 0) m = m.substr(std::string(prefix).size());
    throw std::runtime_error("recipe " + path + ": " + m);
  }
}

// Writes text to path (refusing a path that exists and is not a regular file).
void write_text(const std::string& path, const std::string& text) {
  cs::check_output_path(path);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path + " (does the directory exist and is it writable?)");
}

int cmd_train(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {{"--out", true}, {"--steps", true}, {"--seed", true}, {"--no-snapshots", false},
                                      {"--log-every", true}, {"--f16", false}, {"--threads", true}, {"--checkpoint", true},
                                      {"--checkpoint-every", true}, {"--resume", true}, {"--stop-after", true}});
  if (a.positional.size() != 1) throw UsageError("train takes one recipe file");
  const std::string recipe_path = a.positional[0];
  json j = read_recipe_json(recipe_path);
  if (a.opts.count("--steps")) j = cs::recipe_with_steps(j, to_int(a.opts["--steps"], "--steps", 1, 10000000));
  // --seed replaces the recipe's seed, so the model file's info (which holds the recipe) records it.
  if (a.opts.count("--seed") && j.is_object()) j["seed"] = to_int(a.opts["--seed"], "--seed", 0, 2147483647);
  cs::Recipe r = with_recipe(recipe_path, [&] { return cs::recipe_from_json(j, dirname_of(recipe_path)); });
  if (a.opts.count("--no-snapshots")) r.snapshots.clear();
  std::string out = a.opts.count("--out") ? a.opts["--out"] : r.output;
  if (out.empty()) throw UsageError("the recipe names no \"output\"; give --out FILE");
  const int log_every = a.opts.count("--log-every") ? to_int(a.opts["--log-every"], "--log-every", 1, 1000000) : 50;
  const cs::Dtype dtype = a.opts.count("--f16") ? cs::Dtype::F16 : cs::Dtype::F32;
  const int threads = a.opts.count("--threads") ? to_int(a.opts["--threads"], "--threads", 1, 64) : 1;
  // Refuse a bad output path before training, not after.
  cs::check_output_path(out);
  for (int s : r.snapshots) cs::check_output_path(snapshot_path(out, s));
  // Checkpoints: --checkpoint DIR every --checkpoint-every steps (default 500) and when the run
  // stops; --resume DIR continues a run from its checkpoint (and keeps checkpointing there unless
  // --checkpoint says where); --stop-after N stops after N more steps, at a checkpoint.
  const std::string resume = a.opts.count("--resume") ? a.opts["--resume"] : "";
  const std::string ckpt_dir = a.opts.count("--checkpoint") ? a.opts["--checkpoint"] : resume;
  const int ckpt_every = a.opts.count("--checkpoint-every") ? to_int(a.opts["--checkpoint-every"], "--checkpoint-every", 1, 10000000) : 500;
  const int stop_after = a.opts.count("--stop-after") ? to_int(a.opts["--stop-after"], "--stop-after", 1, 10000000) : 0;
  if (stop_after > 0 && ckpt_dir.empty()) throw UsageError("--stop-after needs --checkpoint DIR, where the run is kept to resume");
  if (!ckpt_dir.empty()) cs::check_output_path(ckpt_dir + "/model.safetensors.part");
  cs::Trainer tr = with_recipe(recipe_path, [&] { return cs::Trainer(r); });
  std::printf("training %s: %d layers, %d heads, d_model %d, d_vocab %d, %zu parameters, %d steps of batch %d (kernel %s)\n",
              r.name.c_str(), r.model.n_layers, r.model.n_heads, r.model.d_model, tr.tokenizer().size(),
              cs::param_count(tr.model_file().cfg), r.steps, r.batch_size, cs::kernels::gemm_kernel_name());
  if (threads > 1) std::printf("each batch split across %d threads\n", std::min(threads, r.batch_size));
  auto t0 = std::chrono::steady_clock::now();
  if (!r.snapshots.empty()) {
    const std::string dir = snapshot_path(out, 0).substr(0, snapshot_path(out, 0).find_last_of('/'));
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create the snapshot folder " + dir + " (" + ec.message() + ")");
  }
  auto save_snapshot = [&](int step) {
    cs::ModelFile f = tr.model_file();
    cs::save_model_file(snapshot_path(out, step), f, cs::Dtype::F16);
  };
  std::optional<cs::Trainer::Checkpoint> resumed;
  if (!resume.empty()) {
    resumed = cs::load_checkpoint(resume);
    with_recipe(recipe_path, [&] {
      tr.restore(*resumed);
      return 0;
    });
    std::printf("resumed from %s at step %d\n", resume.c_str(), tr.steps_done());
  }
  for (int s : r.snapshots)
    if (s == 0 && !resumed) save_snapshot(0);
  // Metrics recorded during training, written beside the model as NAME.metrics.json.
  std::unique_ptr<cs::Evaluator> evaluator;
  std::vector<cs::EvalRecord> records;
  double loss_sum = 0;
  int loss_n = 0;
  if (!r.eval.is_null()) {
    cs::EvalSpec spec = with_recipe(recipe_path, [&] { return cs::eval_spec_from_json(r.eval, r.base_dir); });
    if (spec.every > 0) {
      evaluator = with_recipe(recipe_path, [&] {
        return std::make_unique<cs::Evaluator>(spec, tr.recipe(), tr.tokenizer(), tr.data_source());
      });
      if (!resumed) records.push_back(evaluator->evaluate(tr.params(), 0, std::nan("")));
    }
  }
  double ema = -1;
  if (resumed) {
    // The CLI's own part of the checkpoint: the metrics so far and the running losses.
    const json& st = resumed->state;
    try {
      if (evaluator)
        for (const auto& rec : st.at("records")) records.push_back(cs::eval_record_from_json(rec));
      loss_sum = st.at("loss_sum").get<double>();
      loss_n = st.at("loss_n").get<int>();
      ema = st.at("ema").get<double>();
    } catch (const std::exception& e) {
      throw std::runtime_error("checkpoint " + resume + ": its training log is damaged (" + e.what() + ")");
    }
  }
  auto save_ckpt = [&] {
    cs::Trainer::Checkpoint c = tr.checkpoint();
    json recs = json::array();
    for (const auto& rec : records) recs.push_back(cs::eval_record_json(rec));
    c.state.update({{"records", recs}, {"loss_sum", loss_sum}, {"loss_n", loss_n}, {"ema", ema}});
    cs::save_checkpoint(ckpt_dir, c);
  };
  const int first_step = tr.steps_done();
  for (int s = first_step; s < r.steps; ++s) {
    cs::StepMetrics m = tr.step_parallel(std::min(threads, r.batch_size));
    ema = ema < 0 ? m.loss : 0.95 * ema + 0.05 * m.loss;
    loss_sum += m.loss;
    ++loss_n;
    if (evaluator && (m.step % evaluator->spec().every == 0 || m.step == r.steps)) {
      records.push_back(evaluator->evaluate(tr.params(), m.step, loss_sum / loss_n));
      loss_sum = 0;
      loss_n = 0;
    }
    if (m.step % log_every == 0 || m.step == r.steps) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("step %6d  loss %.4f (avg %.4f)  lr %.2e  |g| %.3f", m.step, m.loss, ema, m.lr, m.grad_norm);
      if (m.loss_repeated >= 0) std::printf("  repeated %.3f fresh %.3f", m.loss_repeated, m.loss_fresh);
      std::printf("  %.1fs\n", secs);
      std::fflush(stdout);
    }
    for (int snap : r.snapshots)
      if (snap == m.step && snap != r.steps) save_snapshot(snap);
    const bool stopping = stop_after > 0 && m.step - first_step == stop_after && m.step != r.steps;
    if (!ckpt_dir.empty() && m.step != r.steps && (m.step % ckpt_every == 0 || stopping)) save_ckpt();
    if (stopping) {
      std::printf("stopped at step %d of %d; continue with --resume %s\n", m.step, r.steps, ckpt_dir.c_str());
      return 0;
    }
  }
  cs::save_model_file(out, tr.model_file(), dtype);
  if (evaluator) {
    const std::string path = output_stem(out) + ".metrics.json";
    nlohmann::json mj = cs::metrics_json(evaluator->spec(), records);
    mj["recipe"] = r.name;
    write_text(path, mj.dump() + "\n");
    std::printf("wrote %s (%zu records)\n", path.c_str(), records.size());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s (%.1f s)\n", out.c_str(), secs);
  return 0;
}

int cmd_sweep(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {{"--seeds", true}, {"--out", true}});
  if (a.positional.size() != 1) throw UsageError("sweep takes one recipe file");
  const std::string recipe_path = a.positional[0];
  const int n = a.opts.count("--seeds") ? to_int(a.opts["--seeds"], "--seeds", 1, 1000) : 10;
  json j = read_recipe_json(recipe_path);
  struct Run {
    int seed;
    cs::IoiEvaluation ev;
    cs::ModelFile model;
    json splits;  // templates: accuracy per split
    json cuts;    // symbolic, 2+ layers: {kind: {Q, K, V}} accuracy under each composition cut
  };
  std::vector<Run> runs;
  std::string out;
  for (int seed = 0; seed < n; ++seed) {
    if (!j.is_object()) throw std::runtime_error("recipe " + recipe_path + ": expected a JSON object, got " + cs::json_value_words(j));
    j["seed"] = seed;
    const cs::Recipe r = with_recipe(recipe_path, [&] { return cs::recipe_from_json(j, dirname_of(recipe_path)); });
    const std::string kind =
        r.data.is_object() && r.data.contains("kind") && r.data["kind"].is_string() ? r.data["kind"].get<std::string>() : "";
    if (kind != "ioi_symbolic" && kind != "ioi_templates")
      throw std::runtime_error("sweep measures an IOI task; this recipe's data is neither \"ioi_symbolic\" nor \"ioi_templates\"");
    out = a.opts.count("--out") ? a.opts["--out"] : r.output;
    if (out.empty()) throw UsageError("the recipe names no \"output\"; give --out FILE");
    cs::check_output_path(out);
    cs::check_output_path(output_stem(out) + ".seeds.json");
    cs::Trainer tr = with_recipe(recipe_path, [&] { return cs::Trainer(r); });
    for (int s = 0; s < r.steps; ++s) tr.step();
    cs::ModelFile mf = tr.model_file();
    // Symbolic: all 60 sequences. Templates: templates and name pairs held out of training, the
    // split that says whether the model learned the task rather than its training sentences.
    json splits = json::object(), cuts;
    cs::IoiEvaluation ev;
    if (kind == "ioi_symbolic") {
      ev = cs::ioi_evaluate(tr.params());
      std::printf("%s seed %d: %d/%d correct, mean logit difference %.3f, p(IO) %.3f, p(S) %.3f\n", r.name.c_str(), seed,
                  ev.correct, ev.n, ev.mean_logit_diff, ev.mean_prob_io, ev.mean_prob_s);
      const auto acc = cs::ioi_cut_accuracies(tr.params());
      for (std::size_t a = 0; a < acc.size(); ++a) {
        const char* kname = cs::ablation_name(cs::kAblations[a]);
        cuts[kname] = {{"Q", acc[a][0]}, {"K", acc[a][1]}, {"V", acc[a][2]}};
        std::printf("  cut under %s ablation: Q %.3f, K %.3f, V %.3f\n", kname, acc[a][0], acc[a][1], acc[a][2]);
      }
    } else {
      const cs::IoiTemplateTask task = cs::ioi_template_task(r.data);
      const std::vector<int> names = cs::ioi_template_name_ids(task, mf.tokenizer);
      for (cs::IoiSplit sp : cs::kIoiSplits) {
        cs::IoiEvaluation e = cs::ioi_evaluate(mf.params, cs::ioi_template_sequences(task, mf.tokenizer, sp, 4000), {}, names);
        splits[cs::ioi_split_name(sp)] = {{"accuracy", e.accuracy}, {"n", e.n}, {"mean_logit_diff", e.mean_logit_diff}};
        std::printf("%s seed %d, %s: %d/%d correct, mean logit difference %.3f, p(IO) %.3f, p(S) %.3f\n", r.name.c_str(), seed,
                    cs::ioi_split_name(sp), e.correct, e.n, e.mean_logit_diff, e.mean_prob_io, e.mean_prob_s);
        if (sp == cs::IoiSplit::HeldOutBoth) ev = e;
      }
    }
    std::fflush(stdout);
    runs.push_back({seed, ev, std::move(mf), splits, cuts});
  }
  std::vector<int> order(runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    if (runs[x].ev.accuracy != runs[y].ev.accuracy) return runs[x].ev.accuracy < runs[y].ev.accuracy;
    if (runs[x].ev.mean_logit_diff != runs[y].ev.mean_logit_diff) return runs[x].ev.mean_logit_diff < runs[y].ev.mean_logit_diff;
    return runs[x].seed < runs[y].seed;
  });
  const Run& median = runs[order[(order.size() - 1) / 2]];
  cs::save_model_file(out, median.model);
  json seeds = json::array();
  double acc_sum = 0;
  int solved = 0;
  for (const Run& r : runs) {
    seeds.push_back({{"seed", r.seed}, {"correct", r.ev.correct}, {"n", r.ev.n}, {"accuracy", r.ev.accuracy},
                     {"mean_logit_diff", r.ev.mean_logit_diff}, {"mean_prob_io", r.ev.mean_prob_io},
                     {"mean_prob_s", r.ev.mean_prob_s}});
    if (!r.splits.empty()) seeds.back()["splits"] = r.splits;
    if (!r.cuts.is_null()) seeds.back()["cuts"] = r.cuts;
    acc_sum += r.ev.accuracy;
    solved += r.ev.correct == r.ev.n;
  }
  json summary = {{"recipe", j.value("name", "")}, {"seeds", seeds}, {"median_seed", median.seed},
                  {"mean_accuracy", acc_sum / runs.size()}, {"min_accuracy", runs[order.front()].ev.accuracy},
                  {"max_accuracy", runs[order.back()].ev.accuracy}, {"solved", solved}, {"runs", runs.size()}};
  const std::string summary_path = output_stem(out) + ".seeds.json";
  write_text(summary_path, summary.dump(2) + "\n");
  std::printf("%d of %zu seeds solved the task; mean accuracy %.3f (min %.3f, max %.3f); median seed %d -> %s\n", solved,
              runs.size(), acc_sum / runs.size(), runs[order.front()].ev.accuracy, runs[order.back()].ev.accuracy,
              median.seed, out.c_str());
  return 0;
}

int cmd_report(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {{"--models", true}, {"--check", false}});
  if (!a.positional.empty()) throw UsageError("report takes no positional arguments");
  const std::string dir = a.opts.count("--models") ? a.opts["--models"] : "models";
  json report = cs::build_report(dir);
  const std::string md = cs::report_markdown(report), js = report.dump(2) + "\n";
  const std::string md_path = dir + "/REPORT.md", js_path = dir + "/report.json";
  if (a.opts.count("--check")) {
    std::string old_md, old_js;
    try {
      old_md = read_file(md_path);
      old_js = read_file(js_path);
    } catch (const std::exception&) {
    }
    if (old_md != md || old_js != js) {
      std::fprintf(stderr, "circuitscope report: %s or %s differs from what the shipped models give; run circuitscope report\n",
                   md_path.c_str(), js_path.c_str());
      std::fputs(md.c_str(), stderr);
      return 1;
    }
    std::printf("%s and %s match the shipped models\n", md_path.c_str(), js_path.c_str());
    return 0;
  }
  write_text(md_path, md);
  write_text(js_path, js);
  std::fputs(md.c_str(), stdout);
  return 0;
}

double to_double(const std::string& s, const std::string& opt, double lo, double hi) {
  try {
    if (!plain_number(s, true)) throw std::invalid_argument("");
    std::size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() || !(v >= lo && v <= hi)) throw std::out_of_range("");
    return v;
  } catch (const std::exception&) {
    throw UsageError(opt + " must be a number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not \"" + s + "\"");
  }
}

int cmd_leading(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      {{"--steps", true}, {"--init-scale", true}, {"--optimizer", true}, {"--lr", true}, {"--rows", true}, {"--json", false}, {"--out", true}});
  if (a.positional.size() != 1) throw UsageError("leading takes one recipe file");
  const std::string recipe_path = a.positional[0];
  json j = read_recipe_json(recipe_path);
  const cs::Recipe r = with_recipe(recipe_path, [&] { return cs::recipe_from_json(j, dirname_of(recipe_path)); });
  cs::LeadingCurveSpec spec;
  if (a.opts.count("--steps")) spec.steps = to_int(a.opts["--steps"], "--steps", 0, 100000);
  if (a.opts.count("--init-scale")) spec.init_scale = to_double(a.opts["--init-scale"], "--init-scale", 1e-12, 1e6);
  if (a.opts.count("--optimizer")) spec.optimizer = a.opts["--optimizer"];
  if (spec.optimizer != "gd" && spec.optimizer != "adamw") throw UsageError("--optimizer must be gd or adamw");
  if (a.opts.count("--lr")) spec.lr = to_double(a.opts["--lr"], "--lr", 1e-12, 1e6);
  if (a.opts.count("--rows")) spec.rows = to_int(a.opts["--rows"], "--rows", 1, 4096);
  const cs::LeadingCurve c = cs::leading_term_curve(r, spec);
  const json out = cs::leading_curve_json(c);
  if (a.opts.count("--out")) write_text(a.opts["--out"], out.dump(1) + "\n");
  if (a.opts.count("--json")) {
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  std::printf("%s: init_scale %g, %s, lr %g, %d rows of %d tokens\n", c.recipe.c_str(), c.spec.init_scale, c.spec.optimizer.c_str(),
              c.lr, c.rows, c.seq_len);
  std::printf("%5s %8s %8s %8s %8s %8s %8s   (cosines; OV: best head)\n", "step", "loss", "direct", "d-change", "U-gram", "OV.Phi",
              "OV.PhiBB");
  for (const auto& p : c.points) {
    double ov = -1, ovc = -1;
    for (double x : p.ov) ov = std::max(ov, x);
    for (double x : p.ov_composed) ovc = std::max(ovc, x);
    std::printf("%5d %8.4f %8.4f %8.4f %8.4f", p.step, p.loss, p.direct, p.direct_change, p.unembed_gram);
    if (p.ov.empty()) std::printf(" %8s %8s\n", "-", "-");  // no attention heads
    else std::printf(" %8.4f %8.4f\n", ov, ovc);
  }
  return 0;
}

// A tokenizer.json's text, refused before reading when it is larger than the core reads.
std::string read_tokenizer_file(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > cs::hf::kMaxFileBytes)
    throw std::runtime_error(path + " is " + std::to_string(bytes >> 20) + " MB; circuitscope reads tokenizer files of up to " +
                             std::to_string(cs::hf::kMaxFileBytes >> 20) + " MB");
  return read_file(path);
}

// The options of every command that opens a model file: a TransformerLens config.json beside the
// weights, the weights as written, a Hugging Face tokenizer.json, its <BOS> token.
std::map<std::string, bool> with_load_options(std::map<std::string, bool> known) {
  known.insert({{"--config", true}, {"--no-processing", false}, {"--tokenizer", true}, {"--bos", true}});
  return known;
}

// A model file with those options (--config, --no-processing, --tokenizer, --bos).
cs::ModelFile load_with_options(const std::string& path, Args& a) {
  cs::LoadOptions o;
  if (a.opts.count("--no-processing")) o.processing = cs::Processing::none();
  if (a.opts.count("--config")) o.tl_config = read_file(a.opts["--config"]);
  if (a.opts.count("--tokenizer")) o.tokenizer_json = read_tokenizer_file(a.opts["--tokenizer"]);
  if (a.opts.count("--bos")) o.bos_token = a.opts["--bos"];
  return cs::load_model_file(path, o);
}

int cmd_icl(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, with_load_options({{"--file", true}, {"--windows", true}, {"--early", true}, {"--late", true}, {"--batch", true},
                                                         {"--json", false}, {"--before-phase-change", true}, {"--unpaired", false}}));
  const bool unpaired = a.opts.count("--unpaired") > 0;
  if (a.positional.empty()) throw UsageError("icl takes one or more model files");
  if (!a.opts.count("--file")) throw UsageError("icl needs --file TEXT, the held-out text to score");
  const int windows = a.opts.count("--windows") ? to_int(a.opts["--windows"], "--windows", 1, 1000000) : 1000;
  const int early = a.opts.count("--early") ? to_int(a.opts["--early"], "--early", 0, cs::kMaxCtx) : 50;
  const int late = a.opts.count("--late") ? to_int(a.opts["--late"], "--late", 1, cs::kMaxCtx) : 500;
  const int batch = a.opts.count("--batch") ? to_int(a.opts["--batch"], "--batch", 1, 1024) : 16;
  if (late <= early) throw UsageError("--late must be above --early");
  const std::string text = read_file(a.opts["--file"]);
  // The training step a file records (a snapshot's or a finished run's), or -1.
  auto step_of = [](const cs::ModelFile& m) {
    return m.info.is_object() && m.info.contains("step") && m.info["step"].is_number_integer() ? m.info["step"].get<int>() : -1;
  };
  // The files to score, with those already read (--before-phase-change reads each once to place it).
  std::vector<std::string> paths = a.positional;
  std::vector<std::optional<cs::ModelFile>> loaded(paths.size());
  if (a.opts.count("--before-phase-change")) {
    // Keep two files: the last at or before the run's "before the phase change" (the core's one
    // definition, PhaseChange::before_step over the metrics' records) and the one with the largest step.
    const std::string mpath = a.opts["--before-phase-change"];
    json mt;
    const std::string mtext = read_file(mpath);
    if (const auto problem = cs::read_json(mtext, mt)) throw std::runtime_error("metrics file " + mpath + " " + *problem);
    if (!mt.is_object() || !mt.contains("records") || !mt["records"].is_array())
      throw std::runtime_error(mpath + ": not a metrics file (it has no \"records\" list)");
    const auto pc = cs::phase_change(mt["records"]);
    if (!pc) {
      char threshold[32];
      std::snprintf(threshold, sizeof threshold, "%g", cs::kMinInductionScore);
      throw std::runtime_error(mpath + ": this run has no phase change (no head's prefix matching reaches " + std::string(threshold) + ")");
    }
    int before_step = -1, end_step = -1;
    std::optional<cs::ModelFile> before_m, end_m;
    std::string before_path, end_path;
    for (const std::string& path : paths) {
      cs::ModelFile m = load_with_options(path, a);
      const int s = step_of(m);
      if (s < 0) throw std::runtime_error(path + ": the file records no training step, so it cannot be placed before or after the phase change");
      if (pc->before_step >= 0 && s <= pc->before_step && s > before_step) before_step = s, before_m = m, before_path = path;
      if (s > end_step) end_step = s, end_m = std::move(m), end_path = path;
    }
    if (!before_m)
      throw std::runtime_error("no file comes at or before step " + std::to_string(pc->before_step) + ", two records before the phase change at step " +
                               std::to_string(pc->step) + " of " + mpath);
    paths = {before_path, end_path};
    loaded.clear();
    loaded.push_back(std::move(before_m));
    loaded.push_back(std::move(end_m));
  }
  json out = json::array();
  std::string tok_json;
  std::optional<cs::IclPairedWindows> pairs;
  std::vector<cs::Batch> batches;  // --unpaired
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    const cs::ModelFile m = loaded[i] ? std::move(*loaded[i]) : load_with_options(path, a);
    if (unpaired && late + 2 > m.cfg.n_ctx)
      throw std::runtime_error(path + ": the score needs windows of " + std::to_string(late + 2) + " tokens but this model's context holds " +
                               std::to_string(m.cfg.n_ctx) + "; use a smaller --late");
    if (!unpaired) try {
        cs::check_icl_index(late, m.cfg.n_ctx, cs::trained_window(m.info));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(path + ": " + e.what() + " (--late)");
      }
    const std::string tj = m.tokenizer.to_json().dump();
    if (tok_json.empty()) {
      tok_json = tj;
      const std::vector<int> ids = m.tokenizer.encode_ids(text, false);
      if (unpaired)
        batches = cs::icl_window_batches(ids, m.tokenizer.bos_id(), late + 2, windows, batch);
      else
        pairs = cs::icl_paired_windows(ids, m.tokenizer.bos_id(), early, late, windows, batch);
    } else if (tj != tok_json) {
      throw std::runtime_error(path + ": its tokenizer differs from the first model's, so the windows would differ");
    }
    const cs::IclEstimate e = unpaired ? cs::icl_over_batches(m.params, batches, early, late) : cs::icl_paired(m.params, *pairs);
    const std::vector<int> collapsed = unpaired ? std::vector<int>() : cs::collapsed_positions(cs::position_norms(m.params));
    json row = {{"model", path}, {"icl", e.mean}, {"se", e.se}, {"windows", e.n}, {"early", early}, {"late", late}};
    if (!unpaired)
      row.update({{"paired", true}, {"block", e.block}, {"blocks", e.blocks}, {"late_loss", e.late_loss}, {"early_loss", e.early_loss},
                  {"collapsed_positions", collapsed}});
    if (step_of(m) >= 0) row["step"] = step_of(m);
    out.push_back(row);
    if (!a.opts.count("--json") && unpaired) {
      std::printf("%s  ICL %+.4f +- %.4f nats (%d unpaired windows, loss at token %d minus token %d)\n", path.c_str(), e.mean, e.se, e.n, late, early);
    } else if (!a.opts.count("--json")) {
      std::printf("%s  ICL %+.4f +- %.4f nats (%d paired windows, %d blocks; loss %.4f with %d tokens of context minus %.4f with %d)\n",
                  path.c_str(), e.mean, e.se, e.n, e.blocks, e.late_loss, late, e.early_loss, early);
      if (!collapsed.empty()) {
        std::string rows;
        for (int t : collapsed) rows += (rows.empty() ? "" : ", ") + std::to_string(t);
        std::printf("  collapsed W_pos rows (norm under %.1f of their neighbours'): %s\n", cs::kCollapsedPositionRatio, rows.c_str());
      }
    }
  }
  if (a.opts.count("--json")) std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

int cmd_run(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, with_load_options({{"--text", true}, {"--file", true}, {"--top", true}, {"--json", false}}));
  if (a.positional.size() != 1) throw UsageError("run takes one model file");
  if (a.opts.count("--text") == a.opts.count("--file")) throw UsageError("run needs exactly one of --text TEXT or --file FILE");
  const std::string text = a.opts.count("--text") ? a.opts["--text"] : read_file(a.opts["--file"]);
  const int top = a.opts.count("--top") ? to_int(a.opts["--top"], "--top", 1, 1000) : 3;
  cs::ModelFile m = load_with_options(a.positional[0], a);
  std::vector<cs::Token> toks = m.tokenizer.encode(text, m.tokenizer.bos_id() >= 0);
  if (static_cast<int>(toks.size()) > m.cfg.n_ctx)
    throw std::runtime_error("the text has " + std::to_string(toks.size()) + " tokens but this model's context holds " +
                             std::to_string(m.cfg.n_ctx) + "; shorten it");
  const int T = static_cast<int>(toks.size());
  std::vector<int> ids;
  for (const auto& t : toks) ids.push_back(t.id);
  cs::ActivationCache<float> cache;
  cs::forward(m.params, ids, 1, T, cache);
  try {
    cs::check_finite(cache);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("model file " + a.positional[0] + ": " + e.what());
  }
  cs::LossResult lr = cs::loss_from_logits(cache, cs::next_token_batch(ids, 1, T));
  for (int t = 0; t + 1 < T; ++t)  // the last position predicts nothing
    if (!std::isfinite(lr.per_token[t]))
      throw std::runtime_error("model file " + a.positional[0] + ": the loss overflowed float32; the model's weights are too large to compute with");
  const int V = m.cfg.d_vocab;
  auto lg = cache.logits.mat();
  std::vector<std::vector<std::pair<int, double>>> tops(T);
  for (int t = 0; t < T; ++t) {
    double mx = lg.row(t).maxCoeff();
    double z = 0;
    for (int v = 0; v < V; ++v) z += std::exp(lg(t, v) - mx);
    std::vector<int> idx(V);
    for (int v = 0; v < V; ++v) idx[v] = v;
    std::partial_sort(idx.begin(), idx.begin() + std::min(top, V), idx.end(), [&](int x, int y) { return lg(t, x) > lg(t, y); });
    for (int k = 0; k < std::min(top, V); ++k) tops[t].push_back({idx[k], std::exp(lg(t, idx[k]) - mx) / z});
  }
  if (a.opts.count("--json")) {
    json out;
    out["tokens"] = ids;
    json texts = json::array(), loss = json::array(), logits = json::array(), tj = json::array();
    for (int t = 0; t < T; ++t) {
      texts.push_back(m.tokenizer.token_text(ids[t]));
      // loss[t] is the loss of predicting token t from the tokens before it (null for the first).
      if (t == 0) loss.push_back(nullptr);
      else loss.push_back(lr.per_token[t - 1]);
      json row = json::array();
      for (int v = 0; v < V; ++v) row.push_back(lg(t, v));
      logits.push_back(row);
      json tr = json::array();
      for (auto& [id, p] : tops[t]) tr.push_back({{"token", m.tokenizer.token_text(id)}, {"id", id}, {"p", p}});
      tj.push_back(tr);
    }
    out["token_text"] = texts;
    out["loss"] = loss;
    out["logits"] = logits;
    out["top"] = tj;
    std::cout << out.dump() << "\n";
    return 0;
  }
  auto show = [](const std::string& s) {
    json j = s;
    return j.dump();
  };
  // Pads to 12 characters, not bytes: a token drawn with ␣ or another non-ASCII character keeps
  // the columns aligned (one column per code point; combining marks and wide characters aside).
  auto padded = [](const std::string& s) {
    int cols = 0;
    for (unsigned char c : s) cols += (c & 0xC0) != 0x80;
    return s + std::string(static_cast<std::size_t>(std::max(0, 12 - cols)), ' ');
  };
  std::printf("%4s  %-12s %8s   top %d next-token predictions\n", "pos", "token", "loss", top);
  double sum = 0;
  for (int t = 0; t < T; ++t) {
    std::string l = t == 0 ? "" : (std::ostringstream() << std::fixed << std::setprecision(3) << lr.per_token[t - 1]).str();
    if (t > 0) sum += lr.per_token[t - 1];
    std::printf("%4d  %s %8s  ", t, padded(show(m.tokenizer.token_text(ids[t]))).c_str(), l.c_str());
    for (auto& [id, p] : tops[t]) std::printf(" %s %.2f", show(m.tokenizer.token_text(id)).c_str(), p);
    std::printf("\n");
  }
  if (T > 1) std::printf("mean loss over %d predicted tokens: %.4f nats\n", T - 1, sum / (T - 1));
  return 0;
}

int cmd_series(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, with_load_options({{"--text", true}, {"--out", true}, {"--json", false}}));
  if (a.positional.empty()) throw UsageError("series takes the checkpoint files of one run");
  std::vector<std::pair<std::int64_t, std::string>> files;
  for (const std::string& path : a.positional) {
    const auto label = cs::checkpoint_label(path);
    if (!label)
      throw UsageError(path + " has no checkpoint number at the end of its name (NAME_N.pth, stepN.safetensors); give the checkpoints only");
    for (const auto& [l, other] : files)
      if (l == *label) throw UsageError(path + " and " + other + " have the same checkpoint number " + std::to_string(l));
    files.push_back({*label, path});
  }
  std::sort(files.begin(), files.end());
  const std::string text = a.opts.count("--text") ? read_file(a.opts["--text"]) : std::string();
  std::vector<cs::EvalRecord> records;
  json entries = json::array();
  int n_heads = 0;
  for (const auto& [label, path] : files) {
    // One checkpoint in memory at a time.
    cs::ModelFile m = load_with_options(path, a);
    cs::CheckpointEval e;
    try {
      e = cs::evaluate_checkpoint(m.params, m.tokenizer, text, label, cs::CheckpointEvalOptions(), cs::trained_window(m.info));
    } catch (const std::invalid_argument& err) {
      throw std::runtime_error(path + ": " + err.what());
    }
    json entry = cs::checkpoint_eval_json(e);
    if (!entries.empty() && entry["spec"] != entries[0]["spec"])
      throw std::runtime_error(path + " is not a checkpoint of the same model as " + files.front().second + " (it is scored differently)");
    if (entries.empty()) n_heads = m.cfg.n_heads;
    entries.push_back(std::move(entry));
    if (!a.opts.count("--json"))
      std::fprintf(stderr, "scored %s (%zu of %zu)\n", path.c_str(), records.size() + 1, files.size());
    records.push_back(std::move(e.record));
  }
  json mj = cs::checkpoint_metrics_json(entries, "series:");
  const cs::EvalSpec spec = cs::checkpoint_spec_from_json(entries[0]["spec"]);
  const auto pc = cs::phase_change(mj["records"], n_heads);
  if (a.opts.count("--out")) {
    std::ofstream f(a.opts["--out"]);
    if (!f) throw std::runtime_error("cannot write " + a.opts["--out"]);
    f << mj.dump(1) << "\n";
  }
  if (a.opts.count("--json")) {
    std::cout << mj.dump() << "\n";
    return 0;
  }
  auto num = [](double x, int prec) {
    if (!std::isfinite(x)) return std::string("-");
    return (std::ostringstream() << std::fixed << std::setprecision(prec) << x).str();
  };
  std::printf("%14s %10s %16s %10s  %s\n", "checkpoint", "valid", spec.icl_pairs ? ("icl " + std::to_string(spec.icl_late) + "-" + std::to_string(spec.icl_early)).c_str() : "icl",
              "repeated", "best prefix-matching head");
  for (const auto& r : records) {
    int best = -1;
    for (std::size_t i = 0; i < r.prefix_matching.size(); ++i)
      if (best < 0 || r.prefix_matching[i] > r.prefix_matching[static_cast<std::size_t>(best)]) best = static_cast<int>(i);
    std::string head = best < 0 ? "-" : "L" + std::to_string(best / std::max(1, n_heads)) + "H" + std::to_string(best % std::max(1, n_heads)) + " " +
                                            num(r.prefix_matching[static_cast<std::size_t>(best)], 3);
    std::string icl = std::isfinite(r.icl) ? num(r.icl, 3) + " +- " + num(r.icl_se, 3) : "-";
    std::printf("%14lld %10s %16s %10s  %s\n", static_cast<long long>(r.step), num(r.valid_loss, 4).c_str(), icl.c_str(),
                num(r.repeated_loss, 3).c_str(), head.c_str());
  }
  if (pc)
    std::printf("phase change at checkpoint %lld: L%dH%d passes half (%.3f) of the final best prefix-matching score %.3f\n",
                static_cast<long long>(pc->step), pc->layer, pc->head, pc->threshold, pc->final_score);
  else
    std::printf("no phase change: no head's final prefix-matching score reaches %g\n", cs::kMinInductionScore);
  return 0;
}

int cmd_ioi(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, with_load_options({{"--cut", true}, {"--ablation", true}, {"--seed", true}, {"--json", false}}));
  if (a.positional.size() != 1) throw UsageError("ioi takes one model file");
  cs::ModelFile m = load_with_options(a.positional[0], a);
  cs::check_symbolic_vocabulary(m.cfg);
  cs::Intervention iv;
  std::string cut;
  if (a.opts.count("--cut")) {
    cut = a.opts["--cut"];
    if (cut != "q" && cut != "k" && cut != "v") throw UsageError("--cut must be q, k or v, got \"" + cut + "\"");
    if (m.cfg.n_layers < 2) throw std::runtime_error("this model has one layer: there is no composition to cut");
    iv = cs::cut_composition(m.cfg, cut == "q" ? cs::Input::Q : cut == "k" ? cs::Input::K : cs::Input::V);
  }
  if (a.opts.count("--ablation")) {
    try {
      iv.ablation = cs::ablation_from_name(a.opts["--ablation"], "--ablation");
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  if (a.opts.count("--seed")) iv.resample_seed = static_cast<std::uint64_t>(to_int(a.opts["--seed"], "--seed", 0, 1 << 30));
  const cs::IoiEvaluation ev = cs::ioi_evaluate(m.params, iv);
  if (a.opts.count("--json")) {
    json out = {{"accuracy", ev.accuracy}, {"correct", ev.correct}, {"n", ev.n}, {"mean_logit_diff", ev.mean_logit_diff},
                {"mean_prob_io", ev.mean_prob_io}, {"mean_prob_s", ev.mean_prob_s}, {"cut", cut.empty() ? json() : json(cut)},
                {"ablation", cs::ablation_name(iv.ablation)}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s%s: %d/%d correct (accuracy %.1f%%), mean logit difference %.3f, p(IO) %.3f, p(S) %.3f\n",
              cut.empty() ? "no cut" : (std::string("cut ") + cut + "-composition").c_str(),
              cut.empty() ? "" : (std::string(", ") + cs::ablation_name(iv.ablation) + " ablation").c_str(), ev.correct, ev.n,
              100 * ev.accuracy, ev.mean_logit_diff, ev.mean_prob_io, ev.mean_prob_s);
  return 0;
}

int cmd_inspect(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, with_load_options({{"--json", false}}));
  if (a.positional.size() != 1) throw UsageError("inspect takes one model file");
  cs::ModelFile m = load_with_options(a.positional[0], a);
  json tensors = json::array();
  std::size_t total = 0;
  cs::for_each_param(m.params, [&](const std::string& name, const cs::Tensor<float>& t) {
    tensors.push_back({{"name", name}, {"shape", t.shape}, {"numel", t.size()}});
    total += t.size();
  });
  if (a.opts.count("--json")) {
    json tj = m.tokenizer.to_json();
    tj.erase("tokenizer_json");  // the file itself: its summary says what it configures
    json out = {{"config", cs::config_to_json(m.cfg)}, {"tokenizer", tj}, {"info", m.info},
                {"tensors", tensors}, {"n_params", total}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("config:\n%s\n", cs::config_to_json(m.cfg).dump(2).c_str());
  std::printf("tokenizer: %s, %d tokens\n", m.tokenizer.kind_name(), m.tokenizer.size());
  std::printf("tokenizer stages: %s\n", m.tokenizer.pipeline().summary().dump().c_str());
  if (m.tokenizer.bos_id() >= 0) std::printf("<BOS> put first: id %d\n", m.tokenizer.bos_id());
  if (m.info.contains("source") && m.info["source"].is_string() && m.info.contains("note") && m.info["note"].is_string())
    std::printf("source: %s\nnote: %s\n", m.info["source"].get<std::string>().c_str(), m.info["note"].get<std::string>().c_str());
  if (m.info.contains("step")) std::printf("trained steps: %s\n", m.info["step"].dump().c_str());
  std::printf("%-32s %-16s %10s\n", "tensor", "shape", "values");
  for (auto& t : tensors)
    std::printf("%-32s %-16s %10zu\n", t["name"].get<std::string>().c_str(), cs::shape_str(t["shape"].get<cs::Shape>()).c_str(),
                t["numel"].get<std::size_t>());
  std::printf("total parameters: %zu\n", total);
  return 0;
}

// One text's tokens as a JSON line for `tokenize`.
json tokenize_line(const cs::tok::Pipeline& t, const std::string& text, bool special) {
  const cs::tok::Encoding e = t.encode(text, special);
  json bytes = json::array(), spans = json::array();
  for (const auto& [b, en] : e.bytes) bytes.push_back({b, en});
  for (const auto& [b, en] : cs::utf16_spans(text, e.bytes)) spans.push_back({b, en});
  return {{"ids", e.ids}, {"bytes", bytes}, {"spans", spans}, {"decoded", t.decode(e.ids)}};
}

int cmd_tokenize(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {{"--tokenizer", true}, {"--text", true}, {"--jsonl", true}, {"--special", false}});
  if (!a.positional.empty()) throw UsageError("tokenize takes no file names; give the tokenizer with --tokenizer");
  if (!a.opts.count("--tokenizer")) throw UsageError("tokenize needs --tokenizer TOKENIZER.json");
  if (a.opts.count("--text") == a.opts.count("--jsonl")) throw UsageError("tokenize needs one of --text TEXT or --jsonl FILE");
  const auto tok = cs::hf::from_text(read_tokenizer_file(a.opts["--tokenizer"]));
  const bool special = a.opts.count("--special") > 0;
  if (a.opts.count("--text")) {
    std::cout << tokenize_line(*tok, a.opts["--text"], special).dump() << "\n";
    return 0;
  }
  std::ifstream in(a.opts["--jsonl"], std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + a.opts["--jsonl"]);
  std::string line;
  long long n = 0;
  while (std::getline(in, line)) {
    ++n;
    json out;
    json text;
    if (const auto problem = cs::read_json(line, text)) {
      out = {{"error", "Line " + std::to_string(n) + " " + *problem}};
    } else if (!text.is_string()) {
      out = {{"error", "Line " + std::to_string(n) + " is not a JSON string"}};
    } else {
      try {
        out = tokenize_line(*tok, text.get_ref<const std::string&>(), special);
      } catch (const std::invalid_argument& e) {
        std::string why = e.what();
        if (!why.empty()) why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
        out = {{"error", "Line " + std::to_string(n) + ": " + why}};
      }
    }
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  }
  return 0;
}

int cmd_patch(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      with_load_options({{"--text", true}, {"--kind", true}, {"--seed", true}, {"--noise", false}, {"--heads-only", false}, {"--json", false}}));
  if (a.positional.size() != 1) throw UsageError("patch takes one model file");
  if (!a.opts.count("--text")) throw UsageError("patch needs --text TEXT");
  cs::ModelSession m(load_with_options(a.positional[0], a));
  cs::PatchRequest rq;
  for (const auto& t : m.tokenize(a.opts["--text"])) rq.clean.push_back(t.id);
  if (a.opts.count("--kind")) rq.kind = a.opts["--kind"];
  if (a.opts.count("--seed")) rq.seed = static_cast<std::uint64_t>(to_int(a.opts["--seed"], "--seed", 0, 1 << 30));
  rq.direction = a.opts.count("--noise") ? cs::PatchDirection::Noise : cs::PatchDirection::Denoise;
  if (a.opts.count("--heads-only")) rq.positions = cs::PatchRequest::Positions::Whole;
  const cs::PatchRun run = m.patch(rq, cs::Intervention());
  if (a.opts.count("--json")) {
    std::cout << cs::patch_run_json(rq.clean, run).dump() << "\n";
    return 0;
  }
  const cs::Tokenizer& tok = m.file().tokenizer;
  const cs::Corruption& k = run.corruption;
  const cs::PatchResult& r = run.result;
  auto text = [&](int id) { return json(tok.token_text(id)).dump(); };
  std::printf("corruption (%s): %s\n", k.kind.c_str(), k.description.c_str());
  std::printf("answer at position %d: logit[%s] - logit[%s]\n", k.pos, text(k.correct).c_str(), text(k.wrong).c_str());
  std::printf("clean %.4f, corrupted %.4f; %s, %d forward passes\n", r.clean_diff, r.corrupted_diff,
              r.direction == cs::PatchDirection::Denoise ? "clean heads patched into the corrupted run"
                                                         : "corrupted heads patched into the clean run",
              r.passes);
  if (!r.normalised) std::printf("the two runs give the same logit difference: effects are shown as 0\n");
  const int H = m.config().n_heads, T = r.T;
  std::printf("%-6s %9s %8s%s\n", "head", "patched", "effect", rq.positions != cs::PatchRequest::Positions::Whole ? "   effect at each position" : "");
  for (int l = 0; l < m.config().n_layers; ++l)
    for (int h = 0; h < H; ++h) {
      std::printf("L%dH%-3d %9.4f %8.3f", l, h, r.head.data[l * H + h], r.head_effect.data[l * H + h]);
      if (rq.positions != cs::PatchRequest::Positions::Whole)
        for (int t = 0; t < T; ++t) std::printf(" %6.3f", r.head_pos_effect.data[(static_cast<std::size_t>(l) * H + h) * T + t]);
      std::printf("\n");
    }
  for (int l = 0; l < static_cast<int>(r.mlp.data.size()); ++l) {
    std::printf("L%dMLP  %9.4f %8.3f", l, r.mlp.data[l], r.mlp_effect.data[l]);
    if (rq.positions != cs::PatchRequest::Positions::Whole)
      for (int t = 0; t < T; ++t) std::printf(" %6.3f", r.mlp_pos_effect.data[static_cast<std::size_t>(l) * T + t]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      if (argc >= 3 && kHelp.count(argv[2])) std::fputs(kHelp.at(argv[2]).c_str(), stdout);
      else std::fputs(kUsage, stdout);
      return 0;
    }
    for (int i = 2; i < argc; ++i)
      if (std::string(argv[i]) == "--help" && kHelp.count(cmd)) {
        std::fputs(kHelp.at(cmd).c_str(), stdout);
        return 0;
      }
    // --kernel NAME / CS_KERNEL, taken out of argv before the command reads its options.
    std::string kernel = (cmd == "train" || cmd == "sweep") ? "auto" : "portable";
    if (const char* env = std::getenv("CS_KERNEL"); env && *env) kernel = env;
    for (int i = 2; i < argc; ++i)
      if (std::string(argv[i]) == "--kernel") {
        if (i + 1 >= argc) throw UsageError("--kernel needs a name: auto, portable, plain, sse, avx2 or avx512");
        kernel = argv[i + 1];
        for (int j = i; j + 2 < argc; ++j) argv[j] = argv[j + 2];
        argc -= 2;
        break;
      }
    if (cmd == "report") kernel = "portable";
    try {
      cs::kernels::set_gemm_kernel(kernel);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (cmd == "train") return cmd_train(argc, argv);
    if (cmd == "run") return cmd_run(argc, argv);
    if (cmd == "inspect") return cmd_inspect(argc, argv);
    if (cmd == "sweep") return cmd_sweep(argc, argv);
    if (cmd == "report") return cmd_report(argc, argv);
    if (cmd == "patch") return cmd_patch(argc, argv);
    if (cmd == "ioi") return cmd_ioi(argc, argv);
    if (cmd == "leading") return cmd_leading(argc, argv);
    if (cmd == "icl") return cmd_icl(argc, argv);
    if (cmd == "series") return cmd_series(argc, argv);
    if (cmd == "tokenize") return cmd_tokenize(argc, argv);
    std::fprintf(stderr, "circuitscope: unknown command \"%s\"\n\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "circuitscope %s: %s\n\n%s", cmd.c_str(), e.what(), kHelp.count(cmd) ? kHelp.at(cmd).c_str() : kUsage);
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "circuitscope %s: ran out of memory; the model or recipe asks for more than this machine has\n",
                 cmd.c_str());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(stderr, "circuitscope %s: cannot use the path %s (%s)\n", cmd.c_str(), e.path1().string().c_str(),
                 e.code().message().c_str());
    return 1;
  } catch (const nlohmann::json::exception&) {
    // Every user-facing JSON read goes through checks.h; this is a value of an unexpected type
    // that slipped past, told without the library's text.
    std::fprintf(stderr, "circuitscope %s: a value in the input has a type or size circuitscope cannot read\n", cmd.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "circuitscope %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
