// Training: recipes, AdamW, OneCycle, gradient clipping and the step-wise Trainer.
#include "train.h"

#include "io.h"

#include "checks.h"
#include "ioi_templates.h"

#include <algorithm>
#include <utility>
#include <filesystem>
#include <exception>
#include <functional>
#if !defined(__EMSCRIPTEN__)
#include <condition_variable>
#include <mutex>
#include <thread>
#endif
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace cs {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::string join_path(const std::string& base, const std::string& p) {
  if (base.empty() || p.empty() || p[0] == '/') return p;
  return base.back() == '/' ? base + p : base + "/" + p;
}

void reject_unknown(const nlohmann::json& j, const std::set<std::string>& known, const std::string& where) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) throw std::invalid_argument("recipe: unknown field \"" + it.key() + "\" in " + where);
}

// A number field of a recipe section ("optimizer", "schedule"), finite and within [lo, hi].
double num(const nlohmann::json& j, const char* k, double def, const std::string& where, double lo = -1e300,
           double hi = 1e300) {
  return json_number_or(j, k, def, lo, hi, "recipe: " + where + ".");
}

// A tokenizer's corpus: the text itself ("text", what a page that reads no files passes) or the
// file "corpus" names.
std::string corpus_text(const nlohmann::json& spec, const std::string& base_dir, const char* missing) {
  if (spec.contains("text") && spec["text"].is_string()) return spec["text"].get<std::string>();
  if (!spec.contains("corpus") || !spec["corpus"].is_string()) throw std::invalid_argument(std::string("recipe: ") + missing);
  const std::string path = join_path(base_dir, spec["corpus"].get<std::string>());
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::invalid_argument("recipe: cannot read the corpus " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The recipe's "eval" section, checked here for types and ranges (training_metrics.cpp reads it
// afterwards and only then knows the data): every field is an exactly read integer.
void check_eval(const nlohmann::json& e) {
  if (!e.is_object()) throw std::invalid_argument("recipe: \"eval\" must be an object, got " + json_value_words(e));
  const std::string w = "recipe: eval.";
  json_int_or(e, "every", 0, 0, 10000000, w);
  json_int_or(e, "batch", 8, 1, 1024, w);
  json_int_or(e, "icl_early", 20, 0, kMaxCtx, w);
  json_int_or(e, "icl_late", 200, 1, kMaxCtx, w);
  json_int_or(e, "repeat_len", 0, 0, kMaxCtx, w);
  json_int_or(e, "seed", 1, 0, 2147483647, w);
  if (e.contains("valid_path")) json_to_string(e["valid_path"], w + "valid_path");
}

double cos_anneal(double start, double end, double pct) { return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1.0); }

}  // namespace

Tokenizer make_tokenizer(const nlohmann::json& spec, const std::string& base_dir, const nlohmann::json* data) {
  if (!spec.is_object() || !spec.contains("kind") || !spec["kind"].is_string())
    throw std::invalid_argument("recipe: tokenizer must be an object with a \"kind\"");
  const std::string kind = spec["kind"].get<std::string>();
  if (kind == "synthetic") {
    if (!spec.contains("size")) throw std::invalid_argument("recipe: a synthetic tokenizer needs an integer \"size\"");
    return synthetic_tokenizer(json_to_int32(spec["size"], "recipe: tokenizer.size", 2, 100000));
  }
  if (kind == "ioi_symbolic") {
    if (!spec.contains("names")) return ioi_symbolic_tokenizer();
    const auto& n = spec["names"];
    if (!n.is_array()) throw std::invalid_argument("recipe: tokenizer.names must be a list of strings, got " + json_value_words(n));
    std::vector<std::string> names;
    for (std::size_t i = 0; i < n.size(); ++i) names.push_back(json_to_string(n[i], "recipe: tokenizer.names[" + std::to_string(i) + "]"));
    return ioi_symbolic_tokenizer(names);
  }
  if (kind == "char") {
    // The vocabulary itself, as a model file stores it (what a page that cannot read files passes).
    if (spec.contains("vocab")) return Tokenizer::from_json(spec);
    const std::string text = corpus_text(spec, base_dir, "a char tokenizer needs a \"corpus\" file (or its \"text\") to build its vocabulary from, or its \"vocab\"");
    const int max_chars = json_int_or(spec, "max_chars", 1000, 0, kMaxVocab - 2, "recipe: tokenizer.");
    return Tokenizer::build_char(text, max_chars);
  }
  if (kind == "bpe") {
    if (spec.contains("vocab")) return Tokenizer::from_json(spec);
    const std::string text = corpus_text(spec, base_dir, "a bpe tokenizer needs a \"corpus\" file (or its \"text\") to learn its merges from, or its \"vocab\" and \"merges\"");
    const int max_chars = json_int_or(spec, "max_chars", 1000, 0, kMaxVocab - 2, "recipe: tokenizer.");
    const int vocab_size = json_int_or(spec, "vocab_size", 2048, 3, kMaxBpeVocab, "recipe: tokenizer.");
    return Tokenizer::build_bpe(text, vocab_size, max_chars);
  }
  if (kind == "word") return Tokenizer::from_json(spec);
  if (kind == "ioi_templates") {
    // Built from the task itself: the recipe's data object, which the caller passes as `data`.
    if (!data || !data->is_object() || !data->contains("kind") || (*data)["kind"] != "ioi_templates")
      throw std::invalid_argument("recipe: an ioi_templates tokenizer needs ioi_templates data");
    return ioi_template_tokenizer(ioi_template_task(*data));
  }
  throw std::invalid_argument("recipe: unknown tokenizer kind \"" + printable_text(kind) +
                              "\" (synthetic, ioi_symbolic, ioi_templates, char, bpe, word)");
}

namespace {

void read_optimizer(const nlohmann::json& o, OptimConfig& opt) {
  if (!o.is_object()) throw std::invalid_argument("recipe: \"optimizer\" must be an object, got " + json_value_words(o));
  reject_unknown(o, {"kind", "lr", "betas", "eps", "weight_decay", "grad_clip"}, "optimizer");
  if (o.contains("kind") && o["kind"] != "adamw") throw std::invalid_argument("recipe: the only optimizer is \"adamw\"");
  opt.lr = num(o, "lr", opt.lr, "optimizer", 0, 1e300);
  if (o.contains("betas")) {
    const auto& b = o["betas"];
    if (!b.is_array() || b.size() != 2) throw std::invalid_argument("recipe: optimizer.betas must be two numbers, got " + json_value_words(b));
    opt.beta1 = json_to_number(b[0], "recipe: optimizer.betas[0]", 0, 1);
    opt.beta2 = json_to_number(b[1], "recipe: optimizer.betas[1]", 0, 1);
  }
  opt.eps = num(o, "eps", opt.eps, "optimizer", 0, 1e6);
  opt.weight_decay = num(o, "weight_decay", opt.weight_decay, "optimizer", 0, 1e6);
  opt.grad_clip = num(o, "grad_clip", opt.grad_clip, "optimizer", -1e30, 1e30);
  if (!(opt.lr > 0)) throw std::invalid_argument("recipe: optimizer.lr must be positive");
  if (!(opt.beta1 >= 0 && opt.beta1 < 1 && opt.beta2 >= 0 && opt.beta2 < 1))
    throw std::invalid_argument("recipe: optimizer.betas must be in [0, 1)");
  if (!(opt.eps > 0)) throw std::invalid_argument("recipe: optimizer.eps must be positive");
}

void read_schedule(const nlohmann::json& s, Schedule& sc) {
  if (!s.is_object()) throw std::invalid_argument("recipe: \"schedule\" must be an object, got " + json_value_words(s));
  reject_unknown(s, {"kind", "pct_start", "div_factor", "final_div_factor", "cycle_momentum", "base_momentum",
                     "max_momentum", "warmup_steps"},
                 "schedule");
  if (s.contains("kind")) sc.kind = json_to_string(s["kind"], "recipe: schedule.kind");
  if (sc.kind != "onecycle" && sc.kind != "constant")
    throw std::invalid_argument("recipe: schedule.kind must be \"onecycle\" or \"constant\"");
  sc.pct_start = num(s, "pct_start", sc.pct_start, "schedule");
  sc.div_factor = num(s, "div_factor", sc.div_factor, "schedule", 0, 1e30);
  sc.final_div_factor = num(s, "final_div_factor", sc.final_div_factor, "schedule", 0, 1e30);
  sc.base_momentum = num(s, "base_momentum", sc.base_momentum, "schedule", 0, 1);
  sc.max_momentum = num(s, "max_momentum", sc.max_momentum, "schedule", 0, 1);
  sc.cycle_momentum = json_bool_or(s, "cycle_momentum", sc.cycle_momentum, "recipe: schedule.");
  sc.warmup_steps = json_int_or(s, "warmup_steps", 0, 0, 10000000, "recipe: schedule.");
  if (!(sc.pct_start > 0 && sc.pct_start < 1)) throw std::invalid_argument("recipe: schedule.pct_start must be in (0, 1)");
  if (!(sc.div_factor > 0 && sc.final_div_factor > 0)) throw std::invalid_argument("recipe: schedule div factors must be positive");
}

}  // namespace

namespace {
// Where a recipe names a file its trainer reads: {section, key}.
constexpr std::pair<const char*, const char*> kRecipeFiles[] = {{"tokenizer", "corpus"}, {"data", "path"}, {"data", "names_path"}};

// The recipe as a model file records it: a text written in beside the path it came from is left
// out (the file names its source, as one trained from the files does, not megabytes of corpus).
nlohmann::json recorded_recipe(nlohmann::json j) {
  for (const auto& [section, key] : kRecipeFiles) {
    if (!j.is_object() || !j.contains(section) || !j[section].is_object() || !j[section].contains(key)) continue;
    j[section].erase(std::string(key) == "names_path" ? "names" : "text");
  }
  return j;
}
}  // namespace

std::vector<std::string> recipe_files(const nlohmann::json& recipe) {
  std::vector<std::string> out;
  if (!recipe.is_object()) return out;
  for (const auto& [section, key] : kRecipeFiles) {
    const auto s = recipe.find(section);
    if (s == recipe.end() || !s->is_object()) continue;
    const auto v = s->find(key);
    if (v != s->end() && v->is_string() && std::find(out.begin(), out.end(), v->get<std::string>()) == out.end())
      out.push_back(v->get<std::string>());
  }
  return out;
}

nlohmann::json recipe_with_texts(const nlohmann::json& recipe, const std::map<std::string, std::string>& texts) {
  nlohmann::json r = recipe;
  for (const auto& [section, key] : kRecipeFiles) {
    if (!r.is_object() || !r.contains(section) || !r[section].is_object() || !r[section].contains(key) || !r[section][key].is_string())
      continue;
    nlohmann::json& s = r[section];
    const std::string path = s[key].get<std::string>();
    const auto t = texts.find(path);
    if (t == texts.end())
      throw std::invalid_argument(std::string("recipe: ") + section + "." + key + " names the file " + printable_text(path) +
                                  ", whose text was not given");
    if (std::string(key) == "names_path") {
      nlohmann::json names;
      if (const auto problem = read_json(t->second, names))
        throw std::invalid_argument("recipe: the names file " + printable_text(path) + " " + *problem);
      s["names"] = names.is_object() && names.contains("names") ? names["names"] : names;
    } else {
      s["text"] = t->second;
    }
  }
  return r;
}

nlohmann::json recipe_with_steps(const nlohmann::json& recipe, int steps) {
  if (steps < 1 || steps > 10000000) throw std::invalid_argument("recipe: steps must be from 1 to 10000000, got " + std::to_string(steps));
  nlohmann::json r = recipe;
  if (!r.is_object()) return r;  // recipe_from_json says what is wrong with it
  r["steps"] = steps;
  if (r.contains("snapshots") && r["snapshots"].is_array()) {
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& s : r["snapshots"])
      if (!s.is_number() || !(s.get<double>() > steps)) kept.push_back(s);
    r["snapshots"] = kept;
  }
  return r;
}

Recipe recipe_from_json(const nlohmann::json& j, const std::string& base_dir) {
  if (!j.is_object()) throw std::invalid_argument("recipe: expected a JSON object, got " + json_value_words(j));
  reject_unknown(j, {"name", "description", "model", "tokenizer", "data", "optimizer", "schedule", "steps", "batch_size",
                     "seed", "init_scale", "snapshots", "eval_every", "eval", "output"},
                 "the recipe");
  Recipe r;
  r.source = recorded_recipe(j);
  r.name = j.contains("name") ? json_to_string(j["name"], "recipe: name") : std::string("unnamed");
  if (!j.contains("model")) throw std::invalid_argument("recipe: \"model\" (the architecture) is required");
  if (!j.contains("tokenizer")) throw std::invalid_argument("recipe: \"tokenizer\" is required");
  if (!j.contains("data")) throw std::invalid_argument("recipe: \"data\" is required");
  r.tokenizer = j["tokenizer"];
  r.data = j["data"];
  for (const char* key : {"path", "names_path"})
    if (r.data.is_object() && r.data.contains(key) && r.data[key].is_string())
      r.data[key] = join_path(base_dir, r.data[key].get<std::string>());
  if (r.tokenizer.is_object() && r.tokenizer.contains("corpus") && r.tokenizer["corpus"].is_string())
    r.tokenizer["corpus"] = join_path(base_dir, r.tokenizer["corpus"].get<std::string>());
  if (r.data.is_object() && r.data.contains("kind") && r.data["kind"] == "ioi_templates") {
    // Read exactly here: the task reader (ioi_templates.cpp) takes them as given.
    json_int_or(r.data, "holdout_templates", 0, 0, 1000000, "recipe: data.");
    json_number_or(r.data, "holdout_pair_fraction", 0, 0, 1, "recipe: data.");
  }
  nlohmann::json m = j["model"];
  if (!m.is_object()) throw std::invalid_argument("recipe: \"model\" must be an object, got " + json_value_words(m));
  if (!m.contains("d_vocab")) m["d_vocab"] = 1;  // replaced by the tokenizer's size
  r.model = config_from_json(m);
  if (j.contains("optimizer")) read_optimizer(j["optimizer"], r.optim);
  if (j.contains("schedule")) read_schedule(j["schedule"], r.schedule);
  r.steps = json_int_or(j, "steps", r.steps, 1, 10000000, "recipe: ");
  r.batch_size = json_int_or(j, "batch_size", r.batch_size, 1, 4096, "recipe: ");
  r.seed = j.contains("seed") ? json_to_u64(j["seed"], "recipe: seed") : 0;
  r.init_scale = json_number_or(j, "init_scale", 1.0, 1e-12, 1e6, "recipe: ");
  r.eval_every = json_int_or(j, "eval_every", 0, 0, 10000000, "recipe: ");
  if (j.contains("snapshots")) {
    if (!j["snapshots"].is_array())
      throw std::invalid_argument("recipe: snapshots must be a list of steps, got " + json_value_words(j["snapshots"]));
    for (std::size_t i = 0; i < j["snapshots"].size(); ++i)
      r.snapshots.push_back(json_to_int32(j["snapshots"][i], "recipe: snapshots[" + std::to_string(i) + "]", 0, r.steps));
  }
  if (j.contains("output")) r.output = join_path(base_dir, json_to_string(j["output"], "recipe: output"));
  if (j.contains("eval")) {
    check_eval(j["eval"]);
    r.eval = j["eval"];
  }
  r.base_dir = base_dir;
  return r;
}

double schedule_lr(const Schedule& s, double max_lr, int step, int total) {
  step = std::max(0, std::min(step, total - 1));  // past the end: hold the final value
  if (s.kind == "constant") {
    if (s.warmup_steps > 0 && step < s.warmup_steps) return max_lr * (step + 1) / s.warmup_steps;
    return max_lr;
  }
  const double initial = max_lr / s.div_factor;
  const double min_lr = initial / s.final_div_factor;
  const double end1 = s.pct_start * total - 1.0;
  const double end2 = total - 1.0;
  if (step <= end1) return cos_anneal(initial, max_lr, end1 > 0 ? step / end1 : 1.0);
  return cos_anneal(max_lr, min_lr, end2 > end1 ? (step - end1) / (end2 - end1) : 1.0);
}

double schedule_beta1(const Schedule& s, double beta1, int step, int total) {
  if (s.kind != "onecycle" || !s.cycle_momentum) return beta1;
  step = std::max(0, std::min(step, total - 1));
  const double end1 = s.pct_start * total - 1.0;
  const double end2 = total - 1.0;
  if (step <= end1) return cos_anneal(s.max_momentum, s.base_momentum, end1 > 0 ? step / end1 : 1.0);
  return cos_anneal(s.base_momentum, s.max_momentum, end2 > end1 ? (step - end1) / (end2 - end1) : 1.0);
}

AdamW::AdamW(const Params<float>& like, const OptimConfig& cfg)
    : cfg_(cfg), m_(make_params<float>(like.cfg)), v_(make_params<float>(like.cfg)) {}

void AdamW::restore(const Params<float>& m, const Params<float>& v, int t, double b2_pow) {
  if (!(m.cfg == m_.cfg) || !(v.cfg == v_.cfg)) throw std::invalid_argument("checkpoint: the optimiser's moments are for another model");
  if (t < 0 || !(b2_pow > 0 && b2_pow <= 1)) throw std::invalid_argument("checkpoint: the optimiser's step count is damaged");
  m_ = m;
  v_ = v;
  t_ = t;
  b2_pow_ = b2_pow;
}

void AdamW::step(Params<float>& p, const Params<float>& g, double lr, double beta1) {
  ++t_;
  b2_pow_ *= cfg_.beta2;
  const double bc1 = 1.0 - std::pow(beta1, t_);  // PyTorch corrects with the current beta1: 1 - beta1^t
  const double bc2 = 1.0 - b2_pow_;
  const float decay = static_cast<float>(1.0 - lr * cfg_.weight_decay);
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(cfg_.beta2), eps = static_cast<float>(cfg_.eps);
  tp_.clear(), tg_.clear(), tm_.clear(), tv_.clear();
  for_each_tensor(p, [&](Tensor<float>& t) { tp_.push_back(&t); });
  for_each_tensor(g, [&](const Tensor<float>& t) { tg_.push_back(&t); });
  for_each_tensor(m_, [&](Tensor<float>& t) { tm_.push_back(&t); });
  for_each_tensor(v_, [&](Tensor<float>& t) { tv_.push_back(&t); });
  for (std::size_t k = 0; k < tp_.size(); ++k) {
    float* pp = tp_[k]->ptr();
    const float* gg = tg_[k]->ptr();
    float* mm = tm_[k]->ptr();
    float* vv = tv_[k]->ptr();
    const std::size_t n = tp_[k]->size();
    for (std::size_t i = 0; i < n; ++i) {
      pp[i] *= decay;
      mm[i] = b1 * mm[i] + (1 - b1) * gg[i];
      vv[i] = b2 * vv[i] + (1 - b2) * gg[i] * gg[i];
      pp[i] -= step_size * mm[i] / (std::sqrt(vv[i]) * inv_sqrt_bc2 + eps);
    }
  }
}

double clip_grad_norm(Params<float>& g, double max_norm) {
  double sq = 0;
  for_each_tensor(g, [&](const Tensor<float>& t) {
    for (float x : t.data) sq += static_cast<double>(x) * x;
  });
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    const float s = static_cast<float>(max_norm / (norm + 1e-6));
    for_each_tensor(g, [&](Tensor<float>& t) {
      for (float& x : t.data) x *= s;
    });
  }
  return norm;
}

namespace {

void check_finite(const Params<float>& p, const char* what, int step) {
  bool finite = true;
  for_each_tensor(p, [&](const Tensor<float>& t) {
    for (float x : t.data) finite &= std::isfinite(x);
  });
  if (finite) return;
  // Only now build the names, to say which tensor it was.
  for_each_param(p, [&](const std::string& name, const Tensor<float>& t) {
    for (float x : t.data)
      if (!std::isfinite(x))
        throw TrainingDiverged("training diverged at step " + std::to_string(step) + ": " + std::string(what) + " " + name + " contains " +
                               (std::isnan(x) ? "NaN" : "Inf") + "; try a smaller learning rate or stronger gradient clipping");
  });
}

// Weights past what a model file may hold: the run is running away, and its result could be
// neither saved nor computed with.
void check_bounded(const Params<float>& p, int step) {
  float mx = 0;
  for_each_tensor(p, [&](const Tensor<float>& t) {
    for (float x : t.data) mx = std::max(mx, std::fabs(x));
  });
  if (mx <= kMaxAbsWeight) return;
  for_each_param(p, [&](const std::string& name, const Tensor<float>& t) {
    for (float x : t.data)
      if (std::fabs(x) > kMaxAbsWeight)
        throw TrainingDiverged("training diverged at step " + std::to_string(step) + ": the weight " + name + " reached " +
                               float_text(x) + ", beyond the +-" + float_text(kMaxAbsWeight) +
                               " a model file may hold; try a smaller learning rate or stronger gradient clipping");
  });
}

}  // namespace

Trainer::Trainer(const Recipe& r)
    : recipe_(r),
      tok_(make_tokenizer(r.tokenizer, "", &r.data)),
      data_(make_data_source(r.data, tok_)),
      params_(),
      opt_(make_params<float>([&] {
             Config c = r.model;
             c.d_vocab = tok_.size();
             check_size(c, kTrainLimit);  // the limits again, now with the tokenizer's size, before allocating
             return c;
           }()),
           r.optim),
      rng_(r.seed * 0x9E3779B97F4A7C15ULL + 1) {
  recipe_.model.d_vocab = tok_.size();
  if (data_->seq_len() > recipe_.model.n_ctx)
    throw std::invalid_argument("recipe: the data's sequences (" + std::to_string(data_->seq_len()) +
                                " tokens) are longer than the model's n_ctx (" + std::to_string(recipe_.model.n_ctx) + ")");
  const double bytes = forward_bytes(recipe_.model, recipe_.batch_size, data_->seq_len());
  if (bytes > kMaxTrainBytes)
    throw std::invalid_argument("recipe: a batch of " + std::to_string(recipe_.batch_size) + " sequences of " +
                                std::to_string(data_->seq_len()) + " tokens would need " +
                                std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                                " MB of activations per step; circuitscope allows at most " +
                                std::to_string(static_cast<long long>(kMaxTrainBytes / (1 << 20))) +
                                " MB (use a smaller batch_size or data.seq_len)");
  if (recipe_.eval.is_object()) {
    // The evaluator runs batches of eval.batch sequences of the same length.
    const int eb = json_int_or(recipe_.eval, "batch", 8, 1, 1024, "recipe: eval.");
    const double eval_bytes = forward_bytes(recipe_.model, eb, data_->seq_len());
    if (eval_bytes > kMaxTrainBytes)
      throw std::invalid_argument("recipe: an eval batch of " + std::to_string(eb) + " sequences of " +
                                  std::to_string(data_->seq_len()) + " tokens would need " +
                                  std::to_string(static_cast<long long>(eval_bytes / (1 << 20))) +
                                  " MB of activations; circuitscope allows at most " +
                                  std::to_string(static_cast<long long>(kMaxTrainBytes / (1 << 20))) +
                                  " MB (use a smaller eval.batch)");
  }
  params_ = init_params<float>(recipe_.model, r.seed);
  if (recipe_.init_scale != 1.0) scale_params(params_, recipe_.init_scale);
  grads_ = make_params<float>(recipe_.model);
  cache_.keep_result = false;  // backward does not read each head's output
}

namespace {
std::string loss_problem(double loss, double start, int number) {
  if (!std::isfinite(loss))
    return "training diverged at step " + std::to_string(number) + ": the loss is " + (std::isnan(loss) ? "NaN" : "Inf") +
           "; try a smaller learning rate or stronger gradient clipping";
  // A run whose loss climbs far above where it started is running away even while it is finite
  // (a learning rate of 10 reaches 1e10 nats): stop it while the weights can still be saved.
  if (loss > kRunawayFactor * start)
    return "training diverged at step " + std::to_string(number) + ": the loss is " + float_text(static_cast<float>(loss)) +
           " nats, more than " + std::to_string(static_cast<int>(kRunawayFactor)) + " times its start (" +
           float_text(static_cast<float>(start)) + "); try a smaller learning rate or stronger gradient clipping";
  return "";
}
}  // namespace

StepMetrics Trainer::step() {
  if (pending_) throw std::logic_error("Trainer::step: a step begun by begin_step is not finished");
  const int number = done_ + 1;   // 1-based, as StepMetrics::step and the messages count
  DataBatch d = data_->next(rng_, recipe_.batch_size);
  forward(params_, d.batch.tokens, d.batch.B, d.batch.T, cache_);
  loss_from_logits(cache_, d.batch, loss_);
  const LossResult& lr = loss_;
  if (done_ == 0) start_loss_ = std::max(lr.loss, std::log(static_cast<double>(tok_.size())));
  if (std::string why = loss_problem(lr.loss, start_loss_, number); !why.empty()) throw TrainingDiverged(why);
  backward(params_, cache_, d.batch, grads_);
  return apply_gradient(d, lr.loss, lr.per_token, false);
}

// The rest of a step once grads_ holds the whole batch's gradient: clip it, take the optimiser
// step, count the step and return its metrics.
StepMetrics Trainer::apply_gradient(const DataBatch& d, double loss, const std::vector<float>& per_token, bool check_loss) {
  StepMetrics m;
  const int step = done_;         // 0-based, for the schedule
  const int number = done_ + 1;
  if (check_loss) {
    if (done_ == 0) start_loss_ = std::max(loss, std::log(static_cast<double>(tok_.size())));
    if (std::string why = loss_problem(loss, start_loss_, number); !why.empty()) throw TrainingDiverged(why);
  }
  check_finite(grads_, "the gradient of", number);
  m.grad_norm = clip_grad_norm(grads_, recipe_.optim.grad_clip);
  m.lr = schedule_lr(recipe_.schedule, recipe_.optim.lr, step, recipe_.steps);
  opt_.step(params_, grads_, m.lr, schedule_beta1(recipe_.schedule, recipe_.optim.beta1, step, recipe_.steps));
  check_finite(params_, "the weight", number);
  check_bounded(params_, number);
  m.loss = loss;
  double sr = 0, sf = 0;
  int nr = 0, nf = 0;
  for (std::size_t i = 0; i < per_token.size(); ++i) {
    if (d.batch.mask[i] == 0) continue;
    if (!d.repeated.empty() && d.repeated[i]) sr += per_token[i], ++nr;
    else sf += per_token[i], ++nf;
  }
  m.loss_repeated = nr ? sr / nr : -1;
  m.loss_fresh = nf ? sf / nf : -1;
  last_loss_ = loss;
  m.step = ++done_;
  return m;
}

#if !defined(__EMSCRIPTEN__)
// Threads kept from step to step (each keeps its GEMM scratch and caches warm): run_parts(n, fn)
// calls fn(0) on the caller's thread and fn(1) .. fn(n-1) on the pool's, and returns when all are
// done.
class WorkerPool {
 public:
  explicit WorkerPool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { loop(i + 1); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  int threads() const { return static_cast<int>(threads_.size()); }  // besides the calling thread
  template <class F>
  void run_parts(int n, F& fn) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      job_ = [&fn](std::size_t i) { fn(i); };
      count_ = n;
      remaining_ = n - 1;
      ++generation_;
    }
    wake_.notify_all();
    fn(0);
    std::unique_lock<std::mutex> lk(mu_);
    done_.wait(lk, [this] { return remaining_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(int index) {
    std::uint64_t seen = 0;
    for (;;) {
      std::function<void(std::size_t)> job;
      {
        std::unique_lock<std::mutex> lk(mu_);
        wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (index >= count_) continue;
        job = job_;
      }
      job(static_cast<std::size_t>(index));
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (--remaining_ == 0) done_.notify_one();
      }
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::function<void(std::size_t)> job_;
  std::uint64_t generation_ = 0;
  int count_ = 0, remaining_ = 0;
  bool stop_ = false;
};
#else
class WorkerPool {};
#endif

Batch batch_rows(const Batch& b, int row0, int rows) {
  if (row0 < 0 || rows < 1 || row0 + rows > b.B) throw std::invalid_argument("batch_rows: rows outside the batch");
  Batch s;
  s.B = rows, s.T = b.T;
  const std::size_t from = static_cast<std::size_t>(row0) * b.T, to = from + static_cast<std::size_t>(rows) * b.T;
  s.tokens.assign(b.tokens.begin() + from, b.tokens.begin() + to);
  s.targets.assign(b.targets.begin() + from, b.targets.begin() + to);
  s.mask.assign(b.mask.begin() + from, b.mask.begin() + to);
  if (b.mask_total > 0) {
    s.mask_total = b.mask_total;
  } else {
    double msum = 0;
    for (float m : b.mask) msum += m;
    s.mask_total = msum > 0 ? msum : 1.0;  // an all-masked batch: every shard's loss is 0 either way
  }
  return s;
}

void shard_gradient(const Params<float>& p, const Batch& shard, ActivationCache<float>& cache, ShardResult& out) {
  forward(p, shard.tokens, shard.B, shard.T, cache);
  LossResult lr;
  lr.per_token.swap(out.per_token);
  loss_from_logits(cache, shard, lr);
  out.loss = lr.loss;
  out.per_token.swap(lr.per_token);
  if (out.grads.cfg != p.cfg) out.grads = make_params<float>(p.cfg);  // backward overwrites every value
  backward(p, cache, shard, out.grads);
}

std::vector<float> flatten(const Params<float>& p) {
  std::vector<float> out;
  out.reserve(param_count(p.cfg));
  for_each_tensor(p, [&](const Tensor<float>& t) { out.insert(out.end(), t.data.begin(), t.data.end()); });
  return out;
}

void unflatten(const float* data, std::size_t n, Params<float>& p) {
  const std::size_t want = param_count(p.cfg);
  if (n != want)
    throw std::invalid_argument("weights: " + std::to_string(n) + " values given, the model has " + std::to_string(want));
  std::size_t at = 0;
  for_each_tensor(p, [&](Tensor<float>& t) {
    std::copy(data + at, data + at + t.data.size(), t.data.begin());
    at += t.data.size();
  });
}

const ShardResult& Trainer::shard_result(const Batch& shard) {
  if (shard.T > recipe_.model.n_ctx || shard.B < 1 || shard.tokens.size() != static_cast<std::size_t>(shard.B) * shard.T)
    throw std::invalid_argument("shard: its tokens do not form [B, T] rows this model can read");
  shard_gradient(params_, shard, cache_, own_result_);
  return own_result_;
}

std::vector<float> Trainer::params_flat() const { return flatten(params_); }

void Trainer::set_params_flat(const float* data, std::size_t n) { unflatten(data, n, params_); }

std::vector<Batch> Trainer::begin_step(int shards) {
  if (pending_) throw std::logic_error("Trainer::begin_step: the step begun before is not finished");
  if (shards < 1 || shards > recipe_.batch_size)
    throw std::invalid_argument("a step can be split into 1 to " + std::to_string(recipe_.batch_size) +
                                " shards (the batch size), not " + std::to_string(shards));
  pending_batch_ = data_->next(rng_, recipe_.batch_size);
  const Batch& b = pending_batch_.batch;
  pending_shards_.clear();
  int row = 0;
  for (int i = 0; i < shards; ++i) {
    const int rows = b.B / shards + (i < b.B % shards ? 1 : 0);
    pending_shards_.push_back(batch_rows(b, row, rows));
    row += rows;
  }
  pending_ = true;
  return pending_shards_;
}

StepMetrics Trainer::finish_step(const std::vector<const ShardResult*>& results) {
  if (!pending_) throw std::logic_error("Trainer::finish_step: no step was begun");
  if (results.size() != pending_shards_.size())
    throw std::invalid_argument("finish_step: " + std::to_string(results.size()) + " results for " +
                                std::to_string(pending_shards_.size()) + " shards");
  std::vector<float> per_token;
  per_token.reserve(pending_batch_.batch.mask.size());
  double loss = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ShardResult& r = *results[i];
    const Batch& sh = pending_shards_[i];
    if (r.per_token.size() != sh.mask.size() || r.grads.cfg != params_.cfg)
      throw std::invalid_argument("finish_step: the result of shard " + std::to_string(i) + " does not match its shard");
    loss += r.loss;
    per_token.insert(per_token.end(), r.per_token.begin(), r.per_token.end());
  }
  // grads_ = shard 0 + shard 1 + ... in this order, whatever order they finished in.
  {
    std::vector<Tensor<float>*> dst;
    for_each_tensor(grads_, [&](Tensor<float>& t) { dst.push_back(&t); });
    for (std::size_t i = 0; i < results.size(); ++i) {
      std::size_t k = 0;
      for_each_tensor(results[i]->grads, [&](const Tensor<float>& t) {
        Tensor<float>& d = *dst[k++];
        if (i == 0) d.data.assign(t.data.begin(), t.data.end());
        else
          for (std::size_t j = 0; j < d.data.size(); ++j) d.data[j] += t.data[j];
      });
    }
  }
  pending_ = false;
  const DataBatch d = std::move(pending_batch_);
  return apply_gradient(d, loss, per_token, true);
}

StepMetrics Trainer::step_parallel(int shards) {
  if (shards == 1) return step();
  std::vector<Batch> parts = begin_step(shards);
  if (shard_caches_.size() != parts.size()) {
    shard_caches_.resize(parts.size());
    shard_results_.resize(parts.size());
  }
  std::vector<std::exception_ptr> errors(parts.size());
  auto work = [&](std::size_t i) {
    try {
      shard_gradient(params_, parts[i], shard_caches_[i], shard_results_[i]);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
#if defined(__EMSCRIPTEN__)
  for (std::size_t i = 0; i < parts.size(); ++i) work(i);
#else
  if (!pool_ || pool_->threads() != static_cast<int>(parts.size()) - 1)
    pool_ = std::make_shared<WorkerPool>(static_cast<int>(parts.size()) - 1);
  pool_->run_parts(static_cast<int>(parts.size()), work);
#endif
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (errors[i]) {
      cancel_step();
      std::rethrow_exception(errors[i]);
    }
  std::vector<const ShardResult*> results;
  for (const ShardResult& r : shard_results_) results.push_back(&r);
  return finish_step(results);
}

Trainer::Checkpoint Trainer::checkpoint() const {
  if (pending_) throw std::logic_error("Trainer::checkpoint: a step begun by begin_step is not finished");
  Checkpoint c;
  c.model = model_file();
  c.adam_m = opt_.m();
  c.adam_v = opt_.v();
  c.state = {{"step", done_}, {"adam_t", opt_.t()}, {"b2_pow", opt_.b2_pow()}, {"rng", rng_.state()},
             {"start_loss", start_loss_}, {"last_loss", last_loss_}, {"recipe", recipe_.source}};
  return c;
}

void Trainer::restore(const Checkpoint& c) {
  if (pending_) throw std::logic_error("Trainer::restore: a step begun by begin_step is not finished");
  const nlohmann::json& s = c.state;
  for (const char* k : {"step", "adam_t", "b2_pow", "rng", "start_loss", "last_loss", "recipe"})
    if (!s.is_object() || !s.contains(k)) throw std::invalid_argument(std::string("checkpoint: its state has no \"") + k + "\"");
  nlohmann::json mine = recipe_.source, theirs = s["recipe"];
  for (nlohmann::json* x : {&mine, &theirs})  // neither changes the run up to where it stopped
    if (x->is_object()) x->erase("steps"), x->erase("snapshots");
  if (mine != theirs)
    throw std::invalid_argument("checkpoint: it was made by another recipe (or the same with another seed or other settings); "
                                "resume it with the recipe that made it");
  if (!(c.model.cfg == params_.cfg)) throw std::invalid_argument("checkpoint: its weights are for another model");
  if (!s["step"].is_number_integer() || !s["adam_t"].is_number_integer() || !s["rng"].is_number_unsigned() ||
      !s["b2_pow"].is_number() || !s["start_loss"].is_number() || !s["last_loss"].is_number())
    throw std::invalid_argument("checkpoint: its state is damaged");
  const int step = s["step"].get<int>();
  if (step < 0 || step > recipe_.steps)
    throw std::invalid_argument("checkpoint: it is at step " + std::to_string(step) + ", past this recipe's " + std::to_string(recipe_.steps) +
                                " steps");
  opt_.restore(c.adam_m, c.adam_v, s["adam_t"].get<int>(), s["b2_pow"].get<double>());
  params_ = c.model.params;
  rng_.set_state(s["rng"].get<std::uint64_t>());
  done_ = step;
  start_loss_ = s["start_loss"].get<double>();
  last_loss_ = s["last_loss"].get<double>();
}

void save_checkpoint(const std::string& dir, const Trainer::Checkpoint& c) {
  namespace fs = std::filesystem;
  const std::string tmp = dir + ".saving", old = dir + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw std::runtime_error("cannot create the checkpoint folder " + tmp + " (" + ec.message() + ")");
  ModelFile model = c.model;
  model.info["checkpoint"] = c.state;
  save_model_file(tmp + "/model.safetensors", model, Dtype::F32);
  ModelFile m{c.model.cfg, c.model.tokenizer, c.adam_m, {{"checkpoint_part", "adam_m"}}};
  save_model_file(tmp + "/adam_m.safetensors", m, Dtype::F32);
  m.params = c.adam_v;
  m.info = {{"checkpoint_part", "adam_v"}};
  save_model_file(tmp + "/adam_v.safetensors", m, Dtype::F32);
  fs::remove_all(old, ec);
  if (fs::exists(dir)) fs::rename(dir, old, ec);
  if (ec) throw std::runtime_error("cannot replace the checkpoint " + dir + " (" + ec.message() + ")");
  fs::rename(tmp, dir, ec);
  if (ec) throw std::runtime_error("cannot write the checkpoint " + dir + " (" + ec.message() + ")");
  fs::remove_all(old, ec);
}

Trainer::Checkpoint load_checkpoint(const std::string& dir) {
  Trainer::Checkpoint c;
  try {
    c.model = load_model_file(dir + "/model.safetensors");
    ModelFile m = load_model_file(dir + "/adam_m.safetensors"), v = load_model_file(dir + "/adam_v.safetensors");
    if (!c.model.info.contains("checkpoint") || !c.model.info["checkpoint"].is_object())
      throw std::invalid_argument("its model.safetensors is a model, not a checkpoint");
    c.state = c.model.info["checkpoint"];
    c.model.info.erase("checkpoint");
    c.adam_m = std::move(m.params);
    c.adam_v = std::move(v.params);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint " + dir + ": " + e.what());
  }
  return c;
}

ModelFile Trainer::model_file() const {
  ModelFile f;
  f.cfg = recipe_.model;
  f.tokenizer = tok_;
  f.params = params_;
  f.info = {{"recipe", recipe_.source}, {"step", done_}, {"train_loss", last_loss_}};
  nlohmann::json task = data_->describe();
  if (!task.is_null()) f.info["task"] = task;
  return f;
}

}  // namespace cs
