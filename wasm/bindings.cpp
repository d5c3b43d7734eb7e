// Embind bindings: type conversion only between JavaScript and the core in src/ (typed arrays
// in, copied typed arrays out, tagged with shape and axis names). All logic lives in src/.
// Every method catches std::exception and rethrows it as a JS Error with the same sentence.
//
// Conventions at this boundary (wasm/circuitscope.d.ts documents each result):
//   - bulk results are {data, shape, axes}: a new typed array (a copy, never a view into the
//     heap), its row-major shape and one axis name per dimension;
//   - scalar arguments arrive as JS values and are checked here ("qk: head must be an integer,
//     got 1.5"); ranges (no such head, too many tokens) are checked by the core, whose sentence
//     the caller gets;
//   - an intervention is a plain JS object, converted here into cs::Intervention:
//       {ablate: [{layer, head, mean?}], cut: [{from: [l, h], to: [l, h], input: 'q'|'k'|'v'}],
//        removePos: bool}
//     (mean: d_model or n_ctx * d_model numbers; without it the head is zero-ablated).
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>
#include <malloc.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/circuits.h"
#include "analysis/corpus_stats.h"
#include "analysis/forward_outputs.h"
#include "analysis/ioi.h"
#include "analysis/scores.h"
#include "analysis/text_scores.h"
#include "analysis/training_metrics.h"
#include "io.h"
#include "ioi_templates.h"
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

// ------------------------------------------------------------------------------ JS -> C++

// A short rendering of a JS value for error messages: "1.5", "\"x\"", "undefined", "[object Object]".
std::string describe(const val& x) {
  if (x.isString()) return "\"" + x.as<std::string>() + "\"";
  if (x.isArray()) return "an array";
  return val::global("String")(x).as<std::string>();
}

bool is_array_like(const val& x) {
  if (x.isUndefined() || x.isNull() || x.isString()) return false;
  return x.isArray() || val::global("ArrayBuffer").call<bool>("isView", x);
}

// Copies a JS typed array (or plain array of numbers) into a new std::vector<T>.
template <class T>
std::vector<T> copy_in(const val& array, const std::string& what) {
  if (!is_array_like(array))
    throw std::invalid_argument(what + " must be a typed array or an array of numbers, got " + describe(array));
  const std::size_t n = array["length"].as<std::size_t>();
  std::vector<T> out(n);
  if (n) {
    // The view is made after the allocation above and used at once: no heap growth in between.
    val view(emscripten::typed_memory_view(n, out.data()));
    view.call<void>("set", array);
  }
  return out;
}

int to_int(const val& x, const std::string& what) {
  if (!x.isNumber()) throw std::invalid_argument(what + " must be an integer, got " + describe(x));
  const double d = x.as<double>();
  if (!std::isfinite(d) || std::floor(d) != d || d < INT_MIN || d > INT_MAX)
    throw std::invalid_argument(what + " must be an integer, got " + describe(x));
  return static_cast<int>(d);
}

std::uint64_t to_seed(const val& x, const std::string& what) {
  if (!x.isNumber()) throw std::invalid_argument(what + " must be a non-negative integer, got " + describe(x));
  const double d = x.as<double>();
  if (!std::isfinite(d) || std::floor(d) != d || d < 0 || d > 9007199254740991.0)
    throw std::invalid_argument(what + " must be a non-negative integer, got " + describe(x));
  return static_cast<std::uint64_t>(d);
}

bool is_plain_object(const val& x) {
  return !x.isNull() && !x.isUndefined() && x.typeOf().as<std::string>() == "object" && !x.isArray() &&
         !val::global("ArrayBuffer").call<bool>("isView", x);
}

// Throws unless every own key of `obj` is one of `allowed`.
void check_keys(const val& obj, std::initializer_list<const char*> allowed, const std::string& what) {
  const val keys = val::global("Object").call<val>("keys", obj);
  const int n = keys["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    const std::string key = keys[i].as<std::string>();
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || key == a;
      list += list.empty() ? a : std::string(", ") + a;
    }
    if (!ok) throw std::invalid_argument(what + " has an unknown field \"" + key + "\" (expected " + list + ")");
  }
}

// [layer, head] as a two-element array.
std::pair<int, int> head_pair(const val& x, const std::string& what) {
  if (!x.isArray() || x["length"].as<int>() != 2)
    throw std::invalid_argument(what + " must be [layer, head], got " + describe(x));
  return {to_int(x[0], what + "[0] (layer)"), to_int(x[1], what + "[1] (head)")};
}

// The plain JS intervention object -> cs::Intervention. undefined / null: no intervention.
// Only types are checked here; the core checks that heads exist, that cuts go from an earlier
// layer to a later one and that means have d_model or n_ctx * d_model values.
cs::Intervention to_intervention(const val& js, const std::string& where) {
  cs::Intervention iv;
  if (js.isUndefined() || js.isNull()) return iv;
  const std::string what = where + ": the intervention";
  if (!is_plain_object(js))
    throw std::invalid_argument(what + " must be an object {ablate, cut, removePos}, got " + describe(js));
  check_keys(js, {"ablate", "cut", "removePos"}, what);

  const val ablate = js["ablate"];
  if (!ablate.isUndefined() && !ablate.isNull()) {
    if (!ablate.isArray()) throw std::invalid_argument(what + ": ablate must be an array, got " + describe(ablate));
    const int n = ablate["length"].as<int>();
    for (int i = 0; i < n; ++i) {
      const std::string w = what + ": ablate[" + std::to_string(i) + "]";
      const val a = ablate[i];
      if (!is_plain_object(a)) throw std::invalid_argument(w + " must be an object {layer, head, mean?}, got " + describe(a));
      check_keys(a, {"layer", "head", "mean"}, w);
      cs::HeadAblation h;
      h.layer = to_int(a["layer"], w + ".layer");
      h.head = to_int(a["head"], w + ".head");
      const val mean = a["mean"];
      if (!mean.isUndefined() && !mean.isNull()) {
        h.mean = true;
        h.mean_value = copy_in<float>(mean, w + ".mean");
      }
      iv.ablations.push_back(std::move(h));
    }
  }

  const val cut = js["cut"];
  if (!cut.isUndefined() && !cut.isNull()) {
    if (!cut.isArray()) throw std::invalid_argument(what + ": cut must be an array, got " + describe(cut));
    const int n = cut["length"].as<int>();
    for (int i = 0; i < n; ++i) {
      const std::string w = what + ": cut[" + std::to_string(i) + "]";
      const val c = cut[i];
      if (!is_plain_object(c))
        throw std::invalid_argument(w + " must be an object {from: [layer, head], to: [layer, head], input}, got " +
                                    describe(c));
      check_keys(c, {"from", "to", "input"}, w);
      cs::PathCut k;
      std::tie(k.src_layer, k.src_head) = head_pair(c["from"], w + ".from");
      std::tie(k.dst_layer, k.dst_head) = head_pair(c["to"], w + ".to");
      const val input = c["input"];
      const std::string s = input.isString() ? input.as<std::string>() : "";
      if (s == "q" || s == "Q") k.input = cs::Input::Q;
      else if (s == "k" || s == "K") k.input = cs::Input::K;
      else if (s == "v" || s == "V") k.input = cs::Input::V;
      else throw std::invalid_argument(w + ".input must be 'q', 'k' or 'v', got " + describe(input));
      iv.cuts.push_back(k);
    }
  }

  const val rp = js["removePos"];
  if (!rp.isUndefined() && !rp.isNull()) {
    if (!rp.isTrue() && !rp.isFalse()) throw std::invalid_argument(what + ": removePos must be true or false, got " + describe(rp));
    iv.remove_pos = rp.isTrue();
  }
  return iv;
}

// ------------------------------------------------------------------------------ C++ -> JS

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

val tagged(const cs::Tensor<float>& t, const std::vector<std::string>& axes) {
  return tagged(copy_out(t.ptr(), t.size(), "Float32Array"), t.shape, axes);
}

val tagged(const cs::Tensor<int>& t, const std::vector<std::string>& axes) {
  std::vector<std::int32_t> v(t.data.begin(), t.data.end());
  return tagged(copy_out(v.data(), v.size(), "Int32Array"), t.shape, axes);
}

val tagged(const std::vector<float>& v, const std::vector<int>& shape, const std::vector<std::string>& axes) {
  return tagged(copy_out(v.data(), v.size(), "Float32Array"), shape, axes);
}

val tagged_ints(const std::vector<int>& v, const std::vector<int>& shape, const std::vector<std::string>& axes) {
  std::vector<std::int32_t> w(v.begin(), v.end());
  return tagged(copy_out(w.data(), w.size(), "Int32Array"), shape, axes);
}

// A double matrix, rounded to float32.
val tagged(const cs::MatRM<double>& m, const std::vector<std::string>& axes) {
  std::vector<float> v(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) v[static_cast<std::size_t>(i * m.cols() + j)] = static_cast<float>(m(i, j));
  return tagged(v, {static_cast<int>(m.rows()), static_cast<int>(m.cols())}, axes);
}

// Top-k entries as [{<row_name>: i, <col_name>: j, value}], best first.
val entries(const std::vector<cs::Entry>& es, const char* row_name, const char* col_name) {
  val out = val::array();
  for (const auto& e : es) {
    val o = val::object();
    o.set(row_name, e.row);
    o.set(col_name, e.col);
    o.set("value", e.value);
    out.call<void>("push", o);
  }
  return out;
}

// {re, im (Float64Array [k], by decreasing |lambda|), copying, positive_fraction}
val spectrum_js(const cs::Spectrum& s) {
  std::vector<double> re, im;
  for (const auto& z : s.eigenvalues) re.push_back(z.real()), im.push_back(z.imag());
  val out = val::object();
  out.set("re", copy_out(re.data(), re.size(), "Float64Array"));
  out.set("im", copy_out(im.data(), im.size(), "Float64Array"));
  out.set("copying", s.copying_score);
  out.set("positive_fraction", s.positive_fraction);
  return out;
}

const std::vector<std::string> kLayerHead = {"layer", "head"};

// Reads an optional field of an options object (undefined when the object or the field is absent).
val opt(const val& opts, const char* key) {
  if (opts.isUndefined() || opts.isNull()) return val::undefined();
  return opts[key];
}
bool opt_bool(const val& opts, const char* key, bool fallback) {
  const val v = opt(opts, key);
  return v.isUndefined() || v.isNull() ? fallback : v.as<bool>();
}
int opt_int(const val& opts, const char* key, int fallback, const std::string& what) {
  const val v = opt(opts, key);
  return v.isUndefined() || v.isNull() ? fallback : to_int(v, what);
}

// headScores' options {L, batch, seed, first, n, bos}; unset ones are -1 (the core chooses).
cs::RepeatedTokensSpec repeated_tokens_spec(const val& opts) {
  cs::RepeatedTokensSpec s;
  s.L = opt_int(opts, "L", -1, "headScores: L");
  s.batch = opt_int(opts, "batch", -1, "headScores: batch");
  s.first = opt_int(opts, "first", -1, "headScores: first");
  s.n = opt_int(opts, "n", -1, "headScores: n");
  s.bos = opt_int(opts, "bos", -1, "headScores: bos");
  const val seed = opt(opts, "seed");
  if (!seed.isUndefined() && !seed.isNull()) s.seed = static_cast<long long>(to_seed(seed, "headScores: seed"));
  return s;
}

// {previous_token, duplicate_token, prefix_matching, copying: [L, H], tokens: [B, T], and the
// batch's L, batch, seed, first, n, bos}
val head_scores_js(const cs::HeadScores& s, const cs::RepeatedTokens& rt, const cs::RepeatedTokensSpec& spec) {
  val out = val::object();
  out.set("previous_token", tagged(s.previous_token, kLayerHead));
  out.set("duplicate_token", tagged(s.duplicate_token, kLayerHead));
  out.set("prefix_matching", tagged(s.prefix_matching, kLayerHead));
  out.set("copying", tagged(s.copying, kLayerHead));
  out.set("tokens", tagged_ints(rt.tokens, {rt.B, rt.T()}, {"batch", "pos"}));
  out.set("L", spec.L);
  out.set("batch", spec.batch);
  out.set("seed", static_cast<double>(spec.seed));
  out.set("first", spec.first);
  out.set("n", spec.n);
  out.set("bos", spec.bos);
  return out;
}

val repeat_js(const std::optional<cs::Repeat>& r) {
  if (!r) return val::null();
  val o = val::object();
  o.set("a", r->a);
  o.set("d", r->d);
  o.set("r", r->r);
  return o;
}

val text_scores_js(const cs::TextScores& t) {
  val o = val::object();
  o.set("previous_token", tagged(t.previous_token, kLayerHead));
  o.set("prefix_matching", tagged(t.prefix_matching, kLayerHead));
  o.set("stripe", tagged(t.stripe, kLayerHead));
  return o;
}

// A phase change (cs::phase_change) as {step, record, layer, head, final, threshold}, or null.
val phase_change_js(const std::optional<cs::PhaseChange>& pc) {
  if (!pc) return val::null();
  val o = val::object();
  o.set("step", pc->step);
  o.set("record", pc->record);
  o.set("layer", pc->layer);
  o.set("head", pc->head);
  o.set("final", pc->final_score);
  o.set("threshold", pc->threshold);
  return o;
}

val intervention_js(const cs::Intervention& iv) {
  val out = val::object();
  val ablate = val::array();
  for (const auto& a : iv.ablations) {
    val o = val::object();
    o.set("layer", a.layer);
    o.set("head", a.head);
    if (a.mean) o.set("mean", copy_out(a.mean_value.data(), a.mean_value.size(), "Float32Array"));
    ablate.call<void>("push", o);
  }
  val cut = val::array();
  for (const auto& k : iv.cuts) {
    val o = val::object();
    o.set("from", int_array({k.src_layer, k.src_head}));
    o.set("to", int_array({k.dst_layer, k.dst_head}));
    o.set("input", std::string(k.input == cs::Input::Q ? "q" : k.input == cs::Input::K ? "k" : "v"));
    cut.call<void>("push", o);
  }
  out.set("ablate", ablate);
  out.set("cut", cut);
  out.set("removePos", iv.remove_pos);
  return out;
}

}  // namespace

class Model {
 public:
  explicit Model(const val& bytes)
      : file_(guarded([&] {
          std::vector<std::uint8_t> buf = copy_in<std::uint8_t>(bytes, "model bytes");
          return cs::load_model_bytes(buf.data(), buf.size());
        })) {
    // A sentence-template IOI model carries its task (templates, names, places, objects).
    if (file_.info.is_object() && file_.info.contains("task") && file_.info["task"].is_object() &&
        file_.info["task"].value("kind", "") == "ioi_templates") {
      guarded([&] {
        task_ = cs::ioi_template_task(file_.info["task"]);
        has_task_ = true;
        names_ = cs::ioi_template_name_ids(task_, file_.tokenizer);
        return 0;
      });
    }
    name_ids_ = has_task_ ? names_ : cs::ioi_symbolic_name_ids(file_.tokenizer);
  }

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

  // One forward pass over a single sequence (B = 1), optionally under an intervention: logits,
  // attention patterns, the per-position next-token cross-entropy (the last position has no
  // target: NaN), and on request the residual stream at every stage and every head's output.
  // want_patterns / want_logits = false leave those out (nothing is copied for them). `into` is
  // undefined or an object whose Float32Arrays `patterns`, `logits`, `loss` (each optional, each
  // long enough: the JS wrapper checks) receive those results instead of new arrays; the
  // result's data is then a subarray of the caller's buffer. The activation cache is kept
  // between calls (as forwardBatch's), so a call allocates nothing when T does not change.
  val run(const val& ids_js, const val& iv_js, const val& opts) {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "run: token ids");
      const cs::Intervention iv = to_intervention(iv_js, "run");
      cs::RunOptions o;
      o.resid = opt_bool(opts, "resid", false);
      o.result = opt_bool(opts, "result", false);
      o.topk = opt_int(opts, "topk", 0, "run: topk");
      o.text_scores = opt_bool(opts, "textScores", false);
      const bool want_patterns = opt_bool(opts, "patterns", true), want_logits = opt_bool(opts, "logits", true);
      const val into = opt(opts, "into");
      const cs::RunExtras x = cs::run_sequence(file_.params, ids, iv, o, file_.tokenizer.bos_id(), cache_);
      const cs::ActivationCache<float>& cache = cache_;
      const int T = static_cast<int>(ids.size());
      const cs::Config& c = file_.cfg;
      const int L = c.n_layers, H = c.n_heads, V = c.d_vocab, D = c.d_model;
      const bool reuse = !into.isUndefined() && !into.isNull();
      auto buffer = [&](const char* key) { return reuse ? into[key] : val::undefined(); };
      val out = val::object();
      if (want_logits)
        out.set("logits", tagged(fill_or_copy(buffer("logits"), {{cache.logits.ptr(), cache.logits.size()}}), {T, V},
                                 {"pos", "d_vocab"}));
      if (want_patterns) {
        std::vector<std::pair<const float*, std::size_t>> parts;
        for (const auto& lc : cache.layers) parts.emplace_back(lc.pattern.ptr(), lc.pattern.size());
        out.set("patterns", tagged(fill_or_copy(buffer("patterns"), parts), {L, H, T, T},
                                   {"layer", "head", "query_pos", "key_pos"}));
      }
      out.set("loss", tagged(fill_or_copy(buffer("loss"), {{x.loss.data(), x.loss.size()}}), {T}, {"pos"}));
      if (o.resid) out.set("resid", tagged(x.resid, {L + 1, T, D}, {"stage", "pos", "d_model"}));
      if (o.result) out.set("result", tagged(x.result, {L, H, T, D}, {"layer", "head", "pos", "d_model"}));
      if (x.top) {
        const int k = x.top->k;
        out.set("top_ids", tagged_ints(x.top->ids.data, {T, k}, {"pos", "rank"}));
        out.set("top_probs", tagged(x.top->probs.data, {T, k}, {"pos", "rank"}));
      }
      if (x.text_scores) out.set("text_scores", text_scores_js(*x.text_scores));
      if (x.text_scores) out.set("repeat", repeat_js(x.text_scores->repeat));
      return out;
    });
  }

  // Path expansion of the logits at `pos` of one sequence run under `iv` (cs::attribution).
  val attribution(const val& ids_js, const val& pos_js, const val& iv_js) const {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "attribution: token ids");
      const int pos = to_int(pos_js, "attribution: pos");
      const cs::Intervention iv = to_intervention(iv_js, "attribution");
      const int T = static_cast<int>(ids.size());
      check_length(T, "attribution");
      cs::ActivationCache<float> cache;
      cs::forward<float>(file_.params, ids, 1, T, cache, iv);
      const cs::Attribution a = cs::attribution(file_.params, cache, 0, pos, iv);
      val out = val::object();
      out.set("pos", a.pos);
      out.set("token", a.token);
      out.set("logits", tagged(a.logits, {"d_vocab"}));
      out.set("names", str_array(a.names));
      out.set("parts", tagged(a.parts, {"part", "d_vocab"}));
      out.set("path_names", str_array(a.path_names));
      out.set("path_part", copy_out(a.path_part.data(), a.path_part.size(), "Int32Array"));
      out.set("paths", tagged(a.paths, {"path", "d_vocab"}));
      return out;
    });
  }

  // Full QK circuit W_E W_Q W_K^T W_E^T [V_dest, V_src] (unscaled): top/bottom-k entries, and on
  // request the materialised table and the two factors.
  val qk(const val& layer, const val& head, const val& k, bool table, bool factors) const {
    return guarded([&] {
      const cs::Factored f = cs::full_qk(file_.params, to_int(layer, "qk: layer"), to_int(head, "qk: head"));
      return factored_js(f, to_int(k, "qk: k"), table, factors, "dest_token", "src_token", "dest", "src");
    });
  }

  // Full OV circuit W_E W_V W_O W_U [V_src, V_out].
  val ov(const val& layer, const val& head, const val& k, bool table, bool factors) const {
    return guarded([&] {
      const cs::Factored f = cs::full_ov(file_.params, to_int(layer, "ov: layer"), to_int(head, "ov: head"));
      return factored_js(f, to_int(k, "ov: k"), table, factors, "src_token", "out_token", "src", "out");
    });
  }

  // Positional QK circuit W_pos W_Q W_K^T W_pos^T [C_query, C_key] (unscaled).
  val posQk(const val& layer, const val& head, const val& k, bool table, bool factors) const {
    return guarded([&] {
      const cs::Factored f = cs::pos_qk(file_.params, to_int(layer, "posQk: layer"), to_int(head, "posQk: head"));
      return factored_js(f, to_int(k, "posQk: k"), table, factors, "query_pos", "key_pos", "query", "key");
    });
  }

  // {ov: spectrum, qk: spectrum} of one head.
  val eigen(const val& layer_js, const val& head_js) const {
    return guarded([&] {
      const int layer = to_int(layer_js, "eigen: layer"), head = to_int(head_js, "eigen: head");
      val out = val::object();
      out.set("ov", spectrum_js(cs::ov_spectrum(file_.params, layer, head)));
      out.set("qk", spectrum_js(cs::qk_spectrum(file_.params, layer, head)));
      return out;
    });
  }

  // Every head's spectra: {ov: {copying, positive_fraction [L, H], re, im [L, H, Dh]}, qk: {...}}.
  val spectra() const {
    return guarded([&] {
      const cs::Config& c = file_.cfg;
      auto pack = [&](const std::vector<cs::Spectrum>& ss) {
        const int L = c.n_layers, H = c.n_heads;
        int K = 0;
        for (const auto& s : ss) K = std::max(K, static_cast<int>(s.eigenvalues.size()));
        std::vector<float> copying, positive, re(static_cast<std::size_t>(L) * H * K), im(re.size());
        for (std::size_t i = 0; i < ss.size(); ++i) {
          copying.push_back(static_cast<float>(ss[i].copying_score));
          positive.push_back(static_cast<float>(ss[i].positive_fraction));
          for (std::size_t j = 0; j < ss[i].eigenvalues.size(); ++j) {
            re[i * K + j] = static_cast<float>(ss[i].eigenvalues[j].real());
            im[i * K + j] = static_cast<float>(ss[i].eigenvalues[j].imag());
          }
        }
        val o = val::object();
        o.set("copying", tagged(copying, {L, H}, kLayerHead));
        o.set("positive_fraction", tagged(positive, {L, H}, kLayerHead));
        o.set("re", tagged(re, {L, H, K}, {"layer", "head", "eigenvalue"}));
        o.set("im", tagged(im, {L, H, K}, {"layer", "head", "eigenvalue"}));
        return o;
      };
      val out = val::object();
      out.set("ov", pack(cs::ov_spectra(file_.params)));
      out.set("qk", pack(cs::qk_spectra(file_.params)));
      return out;
    });
  }

  // Q/K/V composition scores [3, L, H, L, H] with the random baseline.
  val composition(const val& samples, const val& seed) const {
    return guarded([&] {
      const cs::CompositionScores s = cs::composition_scores(file_.params, to_int(samples, "composition: samples"),
                                                             to_seed(seed, "composition: seed"));
      val out = val::object();
      out.set("scores", tagged(s.scores, {"kind", "src_layer", "src_head", "dst_layer", "dst_head"}));
      out.set("kinds", str_array({"q", "k", "v"}));
      out.set("baseline", s.baseline);
      out.set("baseline_std", s.baseline_std);
      out.set("baseline_samples", s.baseline_samples);
      return out;
    });
  }

  // Head scores on `batch` rows of [bos] + R + R, R of length L drawn from ids [first, first + n).
  val headScores(const val& opts) const {
    return guarded([&] {
      const cs::RepeatedTokensSpec spec = cs::resolve_repeated_tokens(repeated_tokens_spec(opts), file_.tokenizer, file_.cfg.n_ctx);
      const cs::RepeatedTokens rt = cs::make_repeated_tokens(spec);
      return head_scores_js(cs::head_scores(file_.params, rt), rt, spec);
    });
  }

  // The k most probable next tokens at every position of one sequence.
  val topK(const val& ids_js, const val& k_js) const {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "topK: token ids");
      const int k = to_int(k_js, "topK: k");
      const int T = static_cast<int>(ids.size());
      check_length(T, "topK");
      cs::ActivationCache<float> cache;
      cs::forward<float>(file_.params, ids, 1, T, cache);
      const cs::TopK t = cs::top_k_predictions(cache, k);
      val out = val::object();
      out.set("ids", tagged_ints(t.ids.data, {T, k}, {"pos", "rank"}));
      out.set("probs", tagged(t.probs.data, {T, k}, {"pos", "rank"}));
      return out;
    });
  }

  // cs::ablate over a [B, T] batch (ids row-major).
  val ablate(const val& ids_js, const val& B_js, const val& iv_js, const val& early_js, const val& late_js) const {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "ablate: token ids");
      const int B = to_int(B_js, "ablate: batch");
      if (B < 1 || ids.empty() || ids.size() % static_cast<std::size_t>(B) != 0)
        throw std::invalid_argument("ablate: " + std::to_string(ids.size()) + " token ids do not make " +
                                    std::to_string(B) + " sequence(s) of equal length");
      const int T = static_cast<int>(ids.size() / B);
      check_length(T, "ablate");
      const cs::Intervention iv = to_intervention(iv_js, "ablate");
      const cs::AblationResult r = cs::ablate(file_.params, ids, B, T, iv, to_int(early_js, "ablate: iclEarly"),
                                              to_int(late_js, "ablate: iclLate"));
      const int V = file_.cfg.d_vocab;
      val out = val::object();
      out.set("logits", tagged(r.logits.data, {B, T, V}, {"batch", "pos", "d_vocab"}));
      out.set("per_token", tagged(r.per_token.data, {B, T - 1}, {"batch", "pos"}));
      out.set("logits_delta", tagged(r.logits_delta.data, {B, T, V}, {"batch", "pos", "d_vocab"}));
      out.set("per_token_delta", tagged(r.per_token_delta.data, {B, T - 1}, {"batch", "pos"}));
      out.set("loss", r.loss);
      out.set("icl", r.icl);
      out.set("clean_loss", r.clean_loss);
      out.set("clean_icl", r.clean_icl);
      out.set("loss_delta", r.loss_delta);
      out.set("icl_delta", r.icl_delta);
      return out;
    });
  }

  // IOI analysis of one sequence at its last position (cs::ioi_analyse).
  val ioi(const val& ids_js, const val& iv_js) const {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "ioi: token ids");
      check_length(static_cast<int>(ids.size()), "ioi");
      const cs::Intervention iv = to_intervention(iv_js, "ioi");
      const cs::IoiAnalysis a = cs::ioi_analyse(file_.params, ids, iv, names_);
      const int S = file_.cfg.n_layers + 1;
      val out = val::object();
      out.set("pos", a.pos);
      out.set("io", a.io);
      out.set("s", a.s);
      out.set("predicted", a.predicted);
      out.set("logit_io", a.logit_io);
      out.set("logit_s", a.logit_s);
      out.set("logit_diff", a.logit_diff);
      out.set("prob_io", a.prob_io);
      out.set("prob_s", a.prob_s);
      out.set("head_diff", tagged(a.head_diff, kLayerHead));
      out.set("head_sum", tagged(a.head_sum, kLayerHead));
      out.set("head_cos_diff", tagged(a.head_cos_diff, kLayerHead));
      out.set("head_cos_sum", tagged(a.head_cos_sum, kLayerHead));
      out.set("direct_diff", a.direct_diff);
      out.set("direct_sum", a.direct_sum);
      out.set("bias_diff", a.bias_diff);
      out.set("bias_sum", a.bias_sum);
      val lens = val::object();
      lens.set("logit_io", tagged(a.lens_logit_io, {S}, {"stage"}));
      lens.set("logit_s", tagged(a.lens_logit_s, {S}, {"stage"}));
      lens.set("prob_io", tagged(a.lens_prob_io, {S}, {"stage"}));
      lens.set("prob_s", tagged(a.lens_prob_s, {S}, {"stage"}));
      out.set("lens", lens);
      const int V = file_.cfg.d_vocab, K = static_cast<int>(a.top_ids.size());
      out.set("probs", tagged(a.probs, {V}, {"d_vocab"}));
      out.set("top_ids", tagged_ints(a.top_ids, {K}, {"rank"}));
      out.set("top_probs", tagged(a.top_probs, {K}, {"rank"}));
      out.set("name_ids", copy_out(name_ids_.data(), name_ids_.size(), "Int32Array"));
      out.set("head_share_diff", tagged(a.head_share_diff, kLayerHead));
      out.set("head_share_sum", tagged(a.head_share_sum, kLayerHead));
      out.set("most_contrastive", a.most_contrastive.empty() ? val::null() : val(a.most_contrastive));
      out.set("most_additive", a.most_additive.empty() ? val::null() : val(a.most_additive));
      return out;
    });
  }

  // The IOI task's sequences [B, T]: the 60 of the symbolic task, or for a sentence-template model
  // one split ('train' | 'held-out pairs' | 'held-out templates' | 'held-out both', the default),
  // padded with <PAD> after each sentence and evenly subsampled to at most 2,000 rows.
  val ioiSequences(const val& split_js) const {
    return guarded([&] {
      const cs::Batch b = has_task_ ? cs::ioi_template_sequences(task_, file_.tokenizer, split_of(split_js), kMaxTemplateRows)
                                    : cs::ioi_symbolic_sequences();
      return tagged_ints(b.tokens, {b.B, b.T}, {"sequence", "pos"});
    });
  }

  // Accuracy etc. over the IOI task's sequences (ioiSequences(split)), optionally under an intervention.
  val ioiEvaluate(const val& iv_js, const val& split_js) const {
    return guarded([&] {
      const cs::Intervention iv = to_intervention(iv_js, "ioiEvaluate");
      const cs::IoiEvaluation e =
          has_task_ ? cs::ioi_evaluate(file_.params, cs::ioi_template_sequences(task_, file_.tokenizer, split_of(split_js), kMaxTemplateRows),
                                       iv, names_)
                    : cs::ioi_evaluate(file_.params, iv);
      const int n = e.n;
      val out = val::object();
      out.set("n", e.n);
      out.set("correct", e.correct);
      out.set("accuracy", e.accuracy);
      out.set("mean_logit_diff", e.mean_logit_diff);
      out.set("mean_prob_io", e.mean_prob_io);
      out.set("mean_prob_s", e.mean_prob_s);
      out.set("mean_loss", e.mean_loss);
      out.set("predicted", tagged_ints(e.predicted, {n}, {"sequence"}));
      out.set("logit_diff", tagged(e.logit_diff, {n}, {"sequence"}));
      out.set("prob_io", tagged(e.prob_io, {n}, {"sequence"}));
      out.set("prob_s", tagged(e.prob_s, {n}, {"sequence"}));
      out.set("mean_head_diff", tagged(e.mean_head_diff, kLayerHead));
      out.set("mean_head_sum", tagged(e.mean_head_sum, kLayerHead));
      out.set("mean_head_cos_diff", tagged(e.mean_head_cos_diff, kLayerHead));
      out.set("mean_head_cos_sum", tagged(e.mean_head_cos_sum, kLayerHead));
      return out;
    });
  }

  // The sentence-template task as JSON ({kind, templates, names, places, objects, holdout_templates,
  // holdout_pair_fraction}), or null for any other model.
  // Also: splits [{split, what}] (the four evaluation splits and what each holds) and
  // template_info [{index, text, readable: [IO S S form, S IO S form], held_out}].
  val ioiTask() const {
    return guarded([&] {
      if (!has_task_) return val::null();
      nlohmann::json j = cs::ioi_template_task_json(task_);
      j["splits"] = nlohmann::json::array();
      for (cs::IoiSplit sp : cs::kIoiSplits)
        j["splits"].push_back({{"split", cs::ioi_split_name(sp)}, {"what", cs::ioi_split_description(sp)}});
      j["template_info"] = nlohmann::json::array();
      for (int t = 0; t < static_cast<int>(task_.templates.size()); ++t)
        j["template_info"].push_back({{"index", t},
                                      {"text", task_.templates[t]},
                                      {"readable", {cs::ioi_template_readable(task_, t, 0), cs::ioi_template_readable(task_, t, 1)}},
                                      {"held_out", cs::ioi_template_held_out(task_, t)}});
      return val::global("JSON").call<val>("parse", j.dump());
    });
  }

  // One sentence of the task: {template, order, io, s, place, object} (indices; symbolic models
  // read only order, io, s) -> {text, tokens, words, template_held_out, pair_held_out, split}.
  val ioiSentence(const val& opts) const {
    return guarded([&] {
      const int order = opt_int(opts, "order", 0, "ioiSentence: order");
      const int io = opt_int(opts, "io", 0, "ioiSentence: io"), s = opt_int(opts, "s", 1, "ioiSentence: s");
      val out = val::object();
      if (has_task_) {
        cs::IoiTemplateRow row;
        row.tpl = opt_int(opts, "template", 0, "ioiSentence: template");
        row.order = order;
        row.io = io;
        row.s = s;
        row.place = opt_int(opts, "place", 0, "ioiSentence: place");
        row.object = opt_int(opts, "object", 0, "ioiSentence: object");
        const cs::IoiSentence x = cs::ioi_template_sentence_of(task_, file_.tokenizer, row);
        out.set("text", x.text);
        out.set("tokens", copy_out(x.tokens.data(), x.tokens.size(), "Int32Array"));
        out.set("words", str_array(x.words));
        out.set("template_held_out", x.template_held_out);
        out.set("pair_held_out", x.pair_held_out);
        out.set("split", std::string(cs::ioi_split_name(x.split)));
      } else {
        const cs::IoiSymbolicSentence x = cs::ioi_symbolic_sentence(file_.tokenizer, io, s, order);
        out.set("text", x.text);
        out.set("tokens", copy_out(x.tokens.data(), x.tokens.size(), "Int32Array"));
        out.set("words", str_array(x.words));
        out.set("template_held_out", false);
        out.set("pair_held_out", false);
        out.set("split", std::string("train"));
      }
      return out;
    });
  }

  // The intervention cutting input 'q' | 'k' | 'v' of every head from every earlier layer's heads.
  val cutComposition(const val& input_js) const {
    return guarded([&] {
      const std::string s = input_js.isString() ? input_js.as<std::string>() : "";
      cs::Input input;
      if (s == "q" || s == "Q") input = cs::Input::Q;
      else if (s == "k" || s == "K") input = cs::Input::K;
      else if (s == "v" || s == "V") input = cs::Input::V;
      else throw std::invalid_argument("cutComposition: input must be 'q', 'k' or 'v', got " + describe(input_js));
      return intervention_js(cs::cut_composition(file_.cfg, input));
    });
  }

  // Skip-trigrams of one head (probe sequences start with the model's <BOS> when it has one).
  val skipTrigrams(const val& layer, const val& head, const val& k, const val& max_bugs) const {
    return guarded([&] {
      const cs::SkipTrigrams s = cs::skip_trigrams(file_.params, to_int(layer, "skipTrigrams: layer"),
                                                   to_int(head, "skipTrigrams: head"), to_int(k, "skipTrigrams: k"),
                                                   file_.tokenizer.bos_id(), to_int(max_bugs, "skipTrigrams: maxBugs"));
      val top = val::array();
      for (const auto& t : s.top) {
        val o = val::object();
        o.set("source", t.source);
        o.set("dest", t.dest);
        o.set("out", t.out);
        o.set("qk", t.qk);
        o.set("ov", t.ov);
        o.set("score", t.score);
        top.call<void>("push", o);
      }
      val bugs = val::array();
      for (const auto& b : s.bugs) {
        val o = val::object();
        o.set("source", b.source);
        o.set("dest", b.dest);
        o.set("out", b.out);
        o.set("own_out", b.own_out);
        o.set("partner_dest", b.partner_dest);
        o.set("score", b.score);
        o.set("crossed_in_top", b.crossed_in_top);
        o.set("p_own", b.p_own);
        o.set("p_crossed", b.p_crossed);
        o.set("p_crossed_without_source", b.p_crossed_without_source);
        bugs.call<void>("push", o);
      }
      val out = val::object();
      out.set("layer", s.layer);
      out.set("head", s.head);
      out.set("top", top);
      out.set("bugs", bugs);
      return out;
    });
  }

  // Corpus statistics of a token stream over this model's vocabulary, and the cosines between
  // their leading terms and the model's learned tables.
  val corpusStats(const val& ids_js, const val& window_js, bool leading_terms) const {
    return guarded([&] {
      const std::vector<int> ids = copy_in<int>(ids_js, "corpusStats: token ids");
      const cs::Config& c = file_.cfg;
      const cs::CorpusStats s = cs::corpus_stats(ids, c.d_vocab, to_int(window_js, "corpusStats: window"));
      std::vector<float> ov(static_cast<std::size_t>(c.n_layers) * c.n_heads);
      for (int l = 0; l < c.n_layers; ++l)
        for (int h = 0; h < c.n_heads; ++h) ov[static_cast<std::size_t>(l) * c.n_heads + h] =
            static_cast<float>(cs::ov_cosine(file_.params, s, l, h));
      val out = val::object();
      out.set("window", s.window);
      out.set("bigram", tagged(s.bigram, {"current_token", "next_token"}));
      out.set("interchange", tagged(s.interchange, {"next_token", "next_token_2"}));
      out.set("context", tagged(s.context, {"token", "context_token"}));
      out.set("current_freq", tagged(s.current_freq, {s.V}, {"token"}));
      out.set("next_freq", tagged(s.next_freq, {s.V}, {"token"}));
      out.set("direct_path_cosine", cs::direct_path_cosine(file_.params, s));
      out.set("ov_cosine", tagged(ov, {c.n_layers, c.n_heads}, kLayerHead));
      if (leading_terms) {
        out.set("direct_path_leading_term", tagged(cs::direct_path_leading_term(s), {"current_token", "next_token"}));
        out.set("ov_leading_term", tagged(cs::ov_leading_term(s), {"src_token", "out_token"}));
      }
      return out;
    });
  }

  // The model file (F32 safetensors bytes), copied into a new Uint8Array.
  val save() const {
    return guarded([&] {
      const std::vector<std::uint8_t> bytes = cs::save_model_bytes(file_);
      return copy_out(bytes.data(), bytes.size(), "Uint8Array");
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
      check_length(T, "forwardBatch");
      cache_.keep_result = false;  // the loss does not need each head's output
      cs::forward<float>(file_.params, ids, B, T, cache_);
      return cs::loss_from_logits<float>(cache_, cs::next_token_batch(ids, B, T)).loss;
    });
  }

 private:
  cs::ModelFile file_;
  cs::ActivationCache<float> cache_;  // run's and forwardBatch's, kept between calls
  // A sentence-template IOI model's task and its name tokens (empty otherwise).
  cs::IoiTemplateTask task_;
  bool has_task_ = false;
  std::vector<int> names_;
  std::vector<int> name_ids_;  // the names whose probabilities ioi() reports (template or symbolic)
  static constexpr int kMaxTemplateRows = 2000;

  static cs::IoiSplit split_of(const val& v) {
    if (v.isUndefined() || v.isNull()) return cs::IoiSplit::HeldOutBoth;
    const std::string s = v.isString() ? v.as<std::string>() : "";
    for (cs::IoiSplit sp : cs::kIoiSplits)
      if (s == cs::ioi_split_name(sp)) return sp;
    throw std::invalid_argument("IOI split must be 'train', 'held-out pairs', 'held-out templates' or 'held-out both', got " + describe(v));
  }

  void check_length(int T, const char* what) const { cs::check_context_length(file_.cfg, T, what); }

  // The pieces [ptr, ptr + n) one after another: copied into the caller's Float32Array `buffer`
  // (returning the subarray they fill) or, when buffer is undefined, into a new Float32Array.
  static val fill_or_copy(const val& buffer, const std::vector<std::pair<const float*, std::size_t>>& parts) {
    std::size_t total = 0;
    for (const auto& p : parts) total += p.second;
    if (buffer.isUndefined() || buffer.isNull()) {
      if (parts.size() == 1) return copy_out(parts[0].first, parts[0].second, "Float32Array");
      std::vector<float> out;
      out.reserve(total);
      for (const auto& p : parts) out.insert(out.end(), p.first, p.first + p.second);
      return copy_out(out.data(), out.size(), "Float32Array");
    }
    std::size_t offset = 0;
    for (const auto& p : parts) {
      // Each view is made and used at once: nothing allocates in between.
      buffer.call<void>("set", val(emscripten::typed_memory_view(p.second, p.first)), static_cast<double>(offset));
      offset += p.second;
    }
    return buffer.call<val>("subarray", 0, static_cast<double>(total));
  }

  static val factored_js(const cs::Factored& f, int k, bool table, bool factors, const char* row_axis,
                         const char* col_axis, const char* row_name, const char* col_name) {
    val out = val::object();
    out.set("shape", int_array({f.rows(), f.cols()}));
    out.set("axes", str_array({row_axis, col_axis}));
    out.set("top", entries(cs::topk(f, k, true), row_name, col_name));
    out.set("bottom", entries(cs::topk(f, k, false), row_name, col_name));
    if (table) out.set("table", tagged(cs::materialize(f), {row_axis, col_axis}));
    if (factors) {
      out.set("A", tagged(f.A, {row_axis, "inner"}));
      out.set("B", tagged(f.B, {"inner", col_axis}));
    }
    return out;
  }
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

  // Head scores of the model as it stands (cs::head_scores on the trainer's weights, as the
  // CLI's training metrics record them), on `batch` rows of [bos] + R + R, R of length L drawn
  // from ids [first, first + n). Same result as Model.headScores on the saved model.
  val headScores(const val& opts) const {
    return guarded([&] {
      const cs::RepeatedTokensSpec spec =
          cs::resolve_repeated_tokens(repeated_tokens_spec(opts), trainer_->tokenizer(), trainer_->recipe().model.n_ctx);
      const cs::RepeatedTokens rt = cs::make_repeated_tokens(spec);
      return head_scores_js(cs::head_scores(trainer_->params(), rt), rt, spec);
    });
  }

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

// cs::phase_change over records [{step, prefix_matching: number[] (n_layers * n_heads)}] (the
// metrics files' records, or the trainer's): {step, record, layer, head, final, threshold} or null.
val phaseChange(const val& records, const val& n_heads) {
  return guarded([&] {
    if (!records.isArray()) throw std::invalid_argument("phaseChange: records must be an array of {step, prefix_matching}");
    const int n = records["length"].as<int>();
    std::vector<int> steps;
    std::vector<std::vector<double>> pm;
    for (int i = 0; i < n; ++i) {
      const val r = records[i];
      if (!is_plain_object(r)) throw std::invalid_argument("phaseChange: record " + std::to_string(i) + " must be an object {step, prefix_matching}");
      steps.push_back(to_int(r["step"], "phaseChange: records[" + std::to_string(i) + "].step"));
      const val p = r["prefix_matching"];
      pm.push_back(p.isUndefined() || p.isNull() ? std::vector<double>{}
                                                 : copy_in<double>(p, "phaseChange: records[" + std::to_string(i) + "].prefix_matching"));
    }
    return phase_change_js(cs::phase_change(steps, pm, n_heads.isUndefined() || n_heads.isNull() ? 0 : to_int(n_heads, "phaseChange: nHeads")));
  });
}

// {heapSize: bytes of linear memory (grows, never shrinks), allocated: bytes malloc has handed
// out and not yet freed}: for leak checks.
val memoryStats() {
  const struct mallinfo mi = mallinfo();
  val out = val::object();
  out.set("heapSize", static_cast<double>(emscripten_get_heap_size()));
  out.set("allocated", static_cast<double>(mi.uordblks));
  return out;
}

EMSCRIPTEN_BINDINGS(circuitscope) {
  emscripten::function("version", &version);
  emscripten::function("memoryStats", &memoryStats);
  emscripten::function("phaseChange", &phaseChange);
  emscripten::class_<Model>("Model")
      .constructor<const val&>()
      .function("config", &Model::config)
      .function("tokenize", &Model::tokenize)
      .function("run", &Model::run)
      .function("attribution", &Model::attribution)
      .function("qk", &Model::qk)
      .function("ov", &Model::ov)
      .function("posQk", &Model::posQk)
      .function("eigen", &Model::eigen)
      .function("spectra", &Model::spectra)
      .function("composition", &Model::composition)
      .function("headScores", &Model::headScores)
      .function("topK", &Model::topK)
      .function("ablate", &Model::ablate)
      .function("ioi", &Model::ioi)
      .function("ioiSequences", &Model::ioiSequences)
      .function("ioiEvaluate", &Model::ioiEvaluate)
      .function("ioiTask", &Model::ioiTask)
      .function("ioiSentence", &Model::ioiSentence)
      .function("cutComposition", &Model::cutComposition)
      .function("skipTrigrams", &Model::skipTrigrams)
      .function("corpusStats", &Model::corpusStats)
      .function("save", &Model::save)
      .function("forwardBatch", &Model::forwardBatch);
  emscripten::class_<Trainer>("Trainer")
      .constructor<const std::string&>()
      .function("step", &Trainer::step)
      .function("stepsDone", &Trainer::stepsDone)
      .function("headScores", &Trainer::headScores)
      .function("save", &Trainer::save)
      .function("config", &Trainer::config);
}
