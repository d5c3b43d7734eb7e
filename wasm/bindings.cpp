// Embind bindings: type conversion only between JavaScript and the core in src/ (typed arrays
// in, copied typed arrays out, tagged with shape and axis names). All logic lives in src/.
// Every method catches std::exception and rethrows it as a JS Error with the same sentence.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io.h"
#include "model.h"
#include "train.h"

using emscripten::val;

namespace {

#ifndef CIRCUITSCOPE_VERSION
#define CIRCUITSCOPE_VERSION "0.0.0"
#endif

[[noreturn]] void throw_js_error(const std::string& message) {
  val::global("Error").new_(message).throw_();
  __builtin_unreachable();
}

// Runs fn(); a C++ exception becomes a JS Error with the same message. The JS error is thrown
// after the C++ exception has been fully handled (outside the catch block).
template <class F>
auto guarded(F&& fn) -> decltype(fn()) {
  std::string message;
  try {
    return fn();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "circuitscope: unexpected internal error";
  }
  throw_js_error(message);
}

// Copies a JS typed array (or plain array of numbers) into a new std::vector<T>.
template <class T>
std::vector<T> copy_in(const val& array, const char* what) {
  if (array.isUndefined() || array.isNull() || !array["length"].isNumber())
    throw std::invalid_argument(std::string(what) + " must be a typed array or an array of numbers");
  const std::size_t n = array["length"].as<std::size_t>();
  std::vector<T> out(n);
  if (n) {
    // The view is made after the allocation above and used at once: no heap growth in between.
    val view(emscripten::typed_memory_view(n, out.data()));
    view.call<void>("set", array);
  }
  return out;
}

// A new JS typed array holding a copy of [ptr, ptr + n): no view into the heap survives.
template <class T>
val copy_out(const T* ptr, std::size_t n, const char* ctor) {
  return val::global(ctor).new_(emscripten::typed_memory_view(n, ptr));
}

val int_array(const std::vector<int>& xs) {
  val out = val::array();
  for (int x : xs) out.call<void>("push", x);
  return out;
}

val str_array(const std::vector<std::string>& xs) {
  val out = val::array();
  for (const auto& x : xs) out.call<void>("push", x);
  return out;
}

val tagged(val data, const std::vector<int>& shape, const std::vector<std::string>& axes) {
  val out = val::object();
  out.set("data", data);
  out.set("shape", int_array(shape));
  out.set("axes", str_array(axes));
  return out;
}

}  // namespace

class Model {
 public:
  explicit Model(const val& bytes)
      : file_(guarded([&] {
          std::vector<std::uint8_t> buf = copy_in<std::uint8_t>(bytes, "model bytes");
          return cs::load_model_bytes(buf.data(), buf.size());
        })) {}

  // {"config": {...}, "tokenizer": {...}, "info": {...}} as a JSON string.
  std::string config() const {
    return guarded([&] {
      nlohmann::json j;
      j["config"] = cs::config_to_json(file_.cfg);
      j["tokenizer"] = file_.tokenizer.to_json();
      j["info"] = file_.info;
      return j.dump();
    });
  }

  // {ids, begins, ends}: Int32Arrays; spans in UTF-16 code units. A <BOS> token (an empty span)
  // comes first when the vocabulary has one, as in the native CLI.
  val tokenize(const std::string& text) const {
    return guarded([&] {
      const std::vector<cs::Token> toks = file_.tokenizer.encode(text, file_.tokenizer.bos_id() >= 0);
      std::vector<std::int32_t> ids, begins, ends;
      for (const auto& t : toks) {
        ids.push_back(t.id);
        begins.push_back(t.begin);
        ends.push_back(t.end);
      }
      val out = val::object();
      out.set("ids", copy_out(ids.data(), ids.size(), "Int32Array"));
      out.set("begins", copy_out(begins.data(), begins.size(), "Int32Array"));
      out.set("ends", copy_out(ends.data(), ends.size(), "Int32Array"));
      return out;
    });
  }

  // One forward pass over a single sequence (B = 1): logits, attention patterns and the
  // per-position next-token cross-entropy (the last position has no target: NaN).
  val run(const val& ids_js) const {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "run: token ids");
      const cs::Config& c = file_.cfg;
      const int T = static_cast<int>(ids.size());
      if (T == 0) throw std::invalid_argument("run: no tokens to run");
      if (T > c.n_ctx)
        throw std::invalid_argument("run: " + std::to_string(T) + " tokens is longer than the model's context of " +
                                    std::to_string(c.n_ctx) + " tokens");
      cs::ActivationCache<float> cache;
      cs::forward<float>(file_.params, ids, 1, T, cache);

      const cs::Batch batch = cs::next_token_batch(ids, 1, T);
      std::vector<float> loss(T, std::numeric_limits<float>::quiet_NaN());
      if (T > 1) {
        const cs::LossResult lr = cs::loss_from_logits<float>(cache, batch);
        for (int t = 0; t + 1 < T && t < static_cast<int>(lr.per_token.size()); ++t) loss[t] = lr.per_token[t];
      }

      const int L = c.n_layers, H = c.n_heads, V = c.d_vocab;
      std::vector<float> patterns(static_cast<std::size_t>(L) * H * T * T);
      for (int l = 0; l < L; ++l) {
        const cs::Tensor<float>& p = cache.layers[l].pattern;  // [B=1, H, T, T]
        std::copy(p.data.begin(), p.data.end(), patterns.begin() + static_cast<std::ptrdiff_t>(l) * H * T * T);
      }

      val out = val::object();
      out.set("logits", tagged(copy_out(cache.logits.ptr(), cache.logits.size(), "Float32Array"), {T, V},
                               {"pos", "d_vocab"}));
      out.set("patterns", tagged(copy_out(patterns.data(), patterns.size(), "Float32Array"), {L, H, T, T},
                                 {"layer", "head", "query_pos", "key_pos"}));
      out.set("loss", tagged(copy_out(loss.data(), loss.size(), "Float32Array"), {T}, {"pos"}));
      return out;
    });
  }

  // Benchmark entry: one forward pass over a [B, T] batch into this model's own cache (reused
  // from call to call), returning the mean next-token cross-entropy over the B * (T - 1)
  // positions that have a target. Nothing bulk is copied out, so a call times the forward pass.
  double forwardBatch(const val& ids_js, int B, int T) {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "forwardBatch: token ids");
      if (B < 1 || T < 1) throw std::invalid_argument("forwardBatch: B and T must be positive");
      if (ids.size() != static_cast<std::size_t>(B) * static_cast<std::size_t>(T))
        throw std::invalid_argument("forwardBatch: " + std::to_string(ids.size()) + " token ids do not make a [" +
                                    std::to_string(B) + ", " + std::to_string(T) + "] batch");
      if (T > file_.cfg.n_ctx)
        throw std::invalid_argument("forwardBatch: " + std::to_string(T) + " tokens is longer than the model's context of " +
                                    std::to_string(file_.cfg.n_ctx) + " tokens");
      cs::forward<float>(file_.params, ids, B, T, cache_);
      return cs::loss_from_logits<float>(cache_, cs::next_token_batch(ids, B, T)).loss;
    });
  }

 private:
  cs::ModelFile file_;
  cs::ActivationCache<float> cache_;  // forwardBatch's, kept between calls
};

// A training run driven one optimisation step per call (V8 optimises a WASM function only when
// it is entered again, so the loop over steps stays in JS). The recipe is the CLI's JSON; recipes
// whose tokenizer or data read files fail here with the C++ sentence ("recipe: cannot read ...").
class Trainer {
 public:
  explicit Trainer(const std::string& recipe_json)
      : trainer_(guarded([&] {
          nlohmann::json j;
          try {
            j = nlohmann::json::parse(recipe_json);
          } catch (const nlohmann::json::parse_error& e) {
            throw std::invalid_argument(std::string("recipe: not valid JSON: ") + e.what());
          }
          return std::make_unique<cs::Trainer>(cs::recipe_from_json(j));
        })) {}

  // {step, loss, lr, grad_norm, loss_repeated, loss_fresh}; step counts the steps completed.
  // loss_repeated / loss_fresh are -1 when the batch has no such tokens.
  val step() {
    return guarded([&] {
      const cs::StepMetrics m = trainer_->step();
      val out = val::object();
      out.set("step", m.step);
      out.set("loss", m.loss);
      out.set("lr", m.lr);
      out.set("grad_norm", m.grad_norm);
      out.set("loss_repeated", m.loss_repeated);
      out.set("loss_fresh", m.loss_fresh);
      return out;
    });
  }

  int stepsDone() const { return trainer_->steps_done(); }

  // The model file as it stands (F32 safetensors bytes), copied into a new Uint8Array.
  val save() const {
    return guarded([&] {
      const std::vector<std::uint8_t> bytes = cs::save_model_bytes(trainer_->model_file());
      return copy_out(bytes.data(), bytes.size(), "Uint8Array");
    });
  }

  // {"config", "tokenizer", "recipe", "steps", "batch_size", "seed"} as a JSON string; config has
  // d_vocab set from the tokenizer, recipe is the recipe as given.
  std::string config() const {
    return guarded([&] {
      const cs::Recipe& r = trainer_->recipe();
      nlohmann::json j;
      j["config"] = cs::config_to_json(r.model);
      j["tokenizer"] = trainer_->tokenizer().to_json();
      j["recipe"] = r.source;
      j["steps"] = r.steps;
      j["batch_size"] = r.batch_size;
      j["seed"] = r.seed;
      return j.dump();
    });
  }

 private:
  std::unique_ptr<cs::Trainer> trainer_;
};

std::string version() { return CIRCUITSCOPE_VERSION; }

EMSCRIPTEN_BINDINGS(circuitscope) {
  emscripten::function("version", &version);
  emscripten::class_<Model>("Model")
      .constructor<const val&>()
      .function("config", &Model::config)
      .function("tokenize", &Model::tokenize)
      .function("run", &Model::run)
      .function("forwardBatch", &Model::forwardBatch);
  emscripten::class_<Trainer>("Trainer")
      .constructor<const std::string&>()
      .function("step", &Trainer::step)
      .function("stepsDone", &Trainer::stepsDone)
      .function("save", &Trainer::save)
      .function("config", &Trainer::config);
}
