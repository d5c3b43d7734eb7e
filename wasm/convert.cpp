// The WASM boundary's conversions and the page's two handles (see convert.h).
#include "convert.h"
#include "tokenizer/hf.h"

#include "checks.h"

#include <emscripten/heap.h>
#include <malloc.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/text_scores.h"
#include "analysis/training_metrics.h"

#ifndef CIRCUITSCOPE_VERSION
#define CIRCUITSCOPE_VERSION "0.0.0"
#endif

namespace csjs {

namespace {


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

// A whole number that a double holds exactly (|x| < 2^53): a training step or a checkpoint's label.
std::int64_t to_int53(const val& x, const std::string& what) {
  if (!x.isNumber()) throw std::invalid_argument(what + " must be an integer, got " + describe(x));
  const double d = x.as<double>();
  if (!std::isfinite(d) || std::floor(d) != d || std::abs(d) > 9007199254740991.0)
    throw std::invalid_argument(what + " must be an integer, got " + describe(x));
  return static_cast<std::int64_t>(d);
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
    throw std::invalid_argument(what + " must be an object {ablate, ablateMlp, cut, removePos, ablation}, got " + describe(js));
  check_keys(js, {"ablate", "ablateMlp", "cut", "removePos", "ablation"}, what);

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

  const val mlps = js["ablateMlp"];
  if (!mlps.isUndefined() && !mlps.isNull()) {
    if (!mlps.isArray()) throw std::invalid_argument(what + ": ablateMlp must be an array, got " + describe(mlps));
    const int n = mlps["length"].as<int>();
    for (int i = 0; i < n; ++i) {
      const std::string w = what + ": ablateMlp[" + std::to_string(i) + "]";
      const val a = mlps[i];
      if (!is_plain_object(a)) throw std::invalid_argument(w + " must be an object {layer, mean?}, got " + describe(a));
      check_keys(a, {"layer", "mean"}, w);
      cs::MlpAblation m;
      m.layer = to_int(a["layer"], w + ".layer");
      const val mean = a["mean"];
      if (!mean.isUndefined() && !mean.isNull()) {
        m.mean = true;
        m.mean_value = copy_in<float>(mean, w + ".mean");
      }
      iv.mlp_ablations.push_back(std::move(m));
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
  const val kind = js["ablation"];
  if (!kind.isUndefined() && !kind.isNull()) {
    if (!kind.isString()) throw std::invalid_argument(what + ": ablation must be 'zero', 'mean', 'mean-all' or 'resample', got " + describe(kind));
    iv.ablation = cs::ablation_from_name(kind.as<std::string>(), what + ": ablation");
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
val head_scores_js(const cs::HeadScoresRun& r) {
  const cs::HeadScores& s = r.scores;
  const cs::RepeatedTokens& rt = r.tokens;
  const cs::RepeatedTokensSpec& spec = r.spec;
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
  o.set("held", r->held);
  o.set("compared", r->compared);
  return o;
}

val text_scores_js(const cs::TextScores& t) {
  val o = val::object();
  o.set("previous_token", tagged(t.previous_token, kLayerHead));
  o.set("prefix_matching", tagged(t.prefix_matching, kLayerHead));
  o.set("stripe", tagged(t.stripe, kLayerHead));
  return o;
}

// A phase change (cs::phase_change) as {step, record, layer, head, final, threshold, before_step}, or null.
val phase_change_js(const std::optional<cs::PhaseChange>& pc) {
  if (!pc) return val::null();
  val o = val::object();
  o.set("step", static_cast<double>(pc->step));
  o.set("record", pc->record);
  o.set("layer", pc->layer);
  o.set("head", pc->head);
  o.set("final", pc->final_score);
  o.set("threshold", pc->threshold);
  o.set("before_step", static_cast<double>(pc->before_step));
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
  val mlps = val::array();
  for (const auto& a : iv.mlp_ablations) {
    val o = val::object();
    o.set("layer", a.layer);
    if (a.mean) o.set("mean", copy_out(a.mean_value.data(), a.mean_value.size(), "Float32Array"));
    mlps.call<void>("push", o);
  }
  out.set("ablate", ablate);
  out.set("ablateMlp", mlps);
  out.set("cut", cut);
  out.set("removePos", iv.remove_pos);
  out.set("ablation", std::string(cs::ablation_name(iv.ablation)));
  return out;
}

// The pieces [ptr, ptr + n) one after another: copied into the caller's Float32Array `buffer`
// (returning the subarray they fill) or, when buffer is undefined, into a new Float32Array.
val fill_or_copy(const val& buffer, const std::vector<std::pair<const float*, std::size_t>>& parts) {
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

val factored_js(const cs::Factored& f, int k, bool table, bool factors, const val& sort_js, const val& top_js,
                const char* row_axis, const char* col_axis, const char* row_name, const char* col_name) {
  const cs::TableSort sort = cs::table_sort_from_name(sort_js.isString() ? sort_js.as<std::string>() : describe(sort_js));
  const int top = to_int(top_js, "circuit: top");
  if (top < 0) throw std::invalid_argument("circuit: top must be 0 (every row and column) or more, got " + std::to_string(top));
  val out = val::object();
  out.set("shape", int_array({f.rows(), f.cols()}));
  out.set("axes", str_array({row_axis, col_axis}));
  val search = val::object();
  const cs::ExtremeEntries found = cs::extreme_entries(f, k);
  for (const bool largest : {true, false}) {
    const cs::TopEntries t = found.side(largest);
    out.set(largest ? "top" : "bottom", entries(t.entries, row_name, col_name));
    val s = val::object();
    s.set("exact", t.exact);
    s.set("rows_searched", t.rows_searched);
    s.set("bound", t.bound);
    s.set("note", cs::search_note(t, largest));
    search.set(largest ? "top" : "bottom", s);
  }
  out.set("search", search);
  cs::MatRM<double> full;
  if (table) {
    full = cs::materialize(f);
    out.set("table", tagged(full, {row_axis, col_axis}));
  }
  if (table || sort != cs::TableSort::None || top > 0) {
    // The display order from the factors, and the entries it shows (read from the table when it
    // was made, so the two agree exactly).
    const cs::TableOrder order = cs::table_order(f, sort, top);
    out.set("rows", copy_out(order.rows.data(), order.rows.size(), "Int32Array"));
    out.set("cols", copy_out(order.cols.data(), order.cols.size(), "Int32Array"));
    const cs::MatRM<double> shown = table ? cs::MatRM<double>(full(order.rows, order.cols)) : cs::gather(f, order.rows, order.cols);
    out.set("shown", tagged(shown, {row_axis, col_axis}));
  }
  if (factors) {
    out.set("A", tagged(f.A, {row_axis, "inner"}));
    out.set("B", tagged(f.B, {"inner", col_axis}));
  }
  return out;
}

// 'q' | 'k' | 'v' (either case) -> the input it names.
cs::Input to_input(const val& v, const std::string& what) {
  const std::string s = v.isString() ? v.as<std::string>() : "";
  if (s == "q" || s == "Q") return cs::Input::Q;
  if (s == "k" || s == "K") return cs::Input::K;
  if (s == "v" || s == "V") return cs::Input::V;
  throw std::invalid_argument(what + " must be 'q', 'k' or 'v', got " + describe(v));
}

// An IOI split name; undefined / null: none (the core's default).
std::optional<cs::IoiSplit> to_split(const val& v) {
  if (v.isUndefined() || v.isNull()) return std::nullopt;
  if (!v.isString())
    throw std::invalid_argument("IOI split must be 'train', 'held-out pairs', 'held-out templates' or 'held-out both', got " + describe(v));
  return cs::ioi_split_from_name(v.as<std::string>());
}

val json_js(const nlohmann::json& j) { return val::global("JSON").call<val>("parse", j.dump()); }

val spectra_js(const cs::SpectraTable& t) {
  val o = val::object();
  o.set("copying", tagged(t.copying, {t.L, t.H}, kLayerHead));
  o.set("positive_fraction", tagged(t.positive_fraction, {t.L, t.H}, kLayerHead));
  o.set("re", tagged(t.re, {t.L, t.H, t.K}, {"layer", "head", "eigenvalue"}));
  o.set("im", tagged(t.im, {t.L, t.H, t.K}, {"layer", "head", "eigenvalue"}));
  return o;
}

val ioi_evaluation_js(const cs::IoiEvaluation& e) {
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
}

val ioi_analysis_js(const cs::IoiAnalysis& a, int n_layers, int d_vocab, const std::vector<int>& name_ids) {
  const int S = n_layers + 1;
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
  const int M = static_cast<int>(a.mlp_diff.data.size());
  out.set("mlp_diff", M ? tagged(a.mlp_diff.data, {M}, {"layer"}) : val::null());
  out.set("mlp_sum", M ? tagged(a.mlp_sum.data, {M}, {"layer"}) : val::null());
  val lens = val::object();
  lens.set("logit_io", tagged(a.lens_logit_io, {S}, {"stage"}));
  lens.set("logit_s", tagged(a.lens_logit_s, {S}, {"stage"}));
  lens.set("prob_io", tagged(a.lens_prob_io, {S}, {"stage"}));
  lens.set("prob_s", tagged(a.lens_prob_s, {S}, {"stage"}));
  out.set("lens", lens);
  const int K = static_cast<int>(a.top_ids.size());
  out.set("probs", tagged(a.probs, {d_vocab}, {"d_vocab"}));
  out.set("top_ids", tagged_ints(a.top_ids, {K}, {"rank"}));
  out.set("top_probs", tagged(a.top_probs, {K}, {"rank"}));
  out.set("name_ids", copy_out(name_ids.data(), name_ids.size(), "Int32Array"));
  out.set("head_share_diff", tagged(a.head_share_diff, kLayerHead));
  out.set("head_share_sum", tagged(a.head_share_sum, kLayerHead));
  out.set("most_contrastive", a.most_contrastive.empty() ? val::null() : val(a.most_contrastive));
  out.set("most_additive", a.most_additive.empty() ? val::null() : val(a.most_additive));
  out.set("correct", a.correct);
  out.set("name_order", copy_out(a.name_order.data(), a.name_order.size(), "Int32Array"));
  out.set("name_prob_total", a.name_prob_total);
  return out;
}

val step_metrics_js(const cs::StepMetrics& m) {
  val out = val::object();
  out.set("step", m.step);
  out.set("loss", m.loss);
  out.set("lr", m.lr);
  out.set("grad_norm", m.grad_norm);
  out.set("loss_repeated", m.loss_repeated);
  out.set("loss_fresh", m.loss_fresh);
  return out;
}

}  // namespace

// ------------------------------------------------------------------------------ Model

namespace {

// options: {processing: "default" | "none"} (how a TransformerLens file is read:
// from_pretrained's processing, or from_pretrained_no_processing's none), {config}: a
// TransformerLens config.json (text or object) read beside the weights, {tokenizer}: a Hugging
// Face tokenizer.json's text for a file without a tokenizer, {bosToken}: its <BOS>.
cs::LoadOptions load_options(const val& options) {
  cs::LoadOptions opts;
  if (options.isUndefined() || options.isNull()) return opts;
  const val p = options["processing"];
  if (!p.isUndefined()) {
    const std::string s = p.isString() ? p.as<std::string>() : std::string("?");
    if (s == "none") opts.processing = cs::Processing::none();
    else if (s != "default")
      throw std::invalid_argument("load: options.processing must be \"default\" (TransformerLens's from_pretrained) or "
                                  "\"none\" (from_pretrained_no_processing)");
  }
  const val cfg = options["config"];
  if (cfg.isString()) opts.tl_config = cfg.as<std::string>();
  else if (!cfg.isUndefined() && !cfg.isNull())
    opts.tl_config = val::global("JSON").call<std::string>("stringify", cfg);
  if (!cfg.isUndefined() && !cfg.isNull() && opts.tl_config.empty())
    throw std::invalid_argument("load: options.config must be a TransformerLens config.json's text or its object");
  const val tok = options["tokenizer"];
  // A string's UTF-8 is at least as many bytes as its UTF-16 length: refuse a huge one
  // before it is copied into the module's memory, which never shrinks.
  if (tok.isString() && tok["length"].as<double>() > static_cast<double>(cs::hf::kMaxFileBytes))
    throw std::invalid_argument("tokenizer.json: the file is over " + std::to_string(cs::hf::kMaxFileBytes >> 20) +
                                " MB; circuitscope reads tokenizer files of up to " + std::to_string(cs::hf::kMaxFileBytes >> 20) + " MB");
  if (tok.isString()) opts.tokenizer_json = tok.as<std::string>();
  else if (!tok.isUndefined() && !tok.isNull())
    throw std::invalid_argument("load: options.tokenizer must be a Hugging Face tokenizer.json's text");
  const val bos = options["bosToken"];
  if (bos.isString()) opts.bos_token = bos.as<std::string>();
  else if (!bos.isUndefined() && !bos.isNull()) throw std::invalid_argument("load: options.bosToken must be a token's text");
  return opts;
}

}  // namespace

Model::Model(cs::ModelFile file) : session_(std::make_unique<cs::ModelSession>(std::move(file))) {}

// ------------------------------------------------------------------------------ ModelReader

ModelReader::ModelReader(double size, const val& options)
    : reader_(guarded([&] {
        if (!(size >= 0) || size > 9007199254740991.0 || std::floor(size) != size)
          throw std::invalid_argument("load: the file's size must be a whole number of bytes, got " + std::to_string(size));
        return std::make_unique<cs::ModelReader>(static_cast<std::uint64_t>(size), load_options(options));
      })) {}

void ModelReader::write(const val& bytes) {
  guarded([&] {
    if (!is_array_like(bytes)) throw std::invalid_argument("load: each piece of the file must be a Uint8Array, got " + describe(bytes));
    const std::size_t n = bytes["length"].as<std::size_t>();
    piece_.resize(n);  // kept between pieces: the module's memory is not grown for each
    if (n) {
      val view(emscripten::typed_memory_view(n, piece_.data()));
      view.call<void>("set", bytes);
    }
    reader_->write(piece_.data(), n);
    return 0;
  });
}

Model ModelReader::finish() {
  return guarded([&] {
    std::vector<std::uint8_t>().swap(piece_);
    return Model(reader_->finish());
  });
}

// {"config": {...}, "tokenizer": {...}, "info": {...}} as a JSON string.
std::string Model::config() const {
  return guarded([&] { return session_->describe().dump(); });
}

// {ids, begins, ends}: Int32Arrays; spans in UTF-16 code units; <BOS> (an empty span) first when
// the vocabulary has one.
namespace {
// {bytes: Uint8Array, offsets: Int32Array}: tokenBytes()'s result.
val token_bytes_js(const std::string& bytes, const std::vector<int>& offsets) {
  val out = val::object();
  out.set("bytes", copy_out(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), "Uint8Array"));
  out.set("offsets", copy_out(offsets.data(), offsets.size(), "Int32Array"));
  return out;
}

// {ids, begins, ends, bos, truncated} of tokens fitted to the context, set on `out`.
void set_context_tokens(val& out, const cs::ModelSession::ContextTokens& fitted) {
  std::vector<std::int32_t> ids, begins, ends;
  for (const auto& t : fitted.tokens) {
    ids.push_back(t.id);
    begins.push_back(t.begin);
    ends.push_back(t.end);
  }
  out.set("ids", copy_out(ids.data(), ids.size(), "Int32Array"));
  out.set("begins", copy_out(begins.data(), begins.size(), "Int32Array"));
  out.set("ends", copy_out(ends.data(), ends.size(), "Int32Array"));
  out.set("bos", fitted.bos);
  out.set("truncated", fitted.truncated);
}
}  // namespace

// The text comes as a val and is copied inside: Embind frees a std::string argument's buffer only
// when the call returns, so every refused text (a word not in the vocabulary, a token id out of
// range) would leave its bytes behind.
val Model::tokenize(const val& text, bool fit) const {
  return guarded([&] {
    if (!text.isString()) throw std::invalid_argument("tokenize: expected a string");
    val out = val::object();
    set_context_tokens(out, session_->tokenize_to_context(text.as<std::string>(), fit));
    return out;
  });
}

// The bytes each token stands for (cs::Tokenizer::token_bytes), one after another:
// {bytes: Uint8Array, offsets: Int32Array of ids.length + 1}; token i's are bytes[offsets[i],
// offsets[i + 1]).
val Model::tokenBytes(const val& ids_js) const {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "tokenBytes: token ids");
    std::vector<int> offsets;
    const std::string bytes = session_->file().tokenizer.token_bytes(ids, offsets);
    return token_bytes_js(bytes, offsets);
  });
}

namespace {
// The patterns [L, H, T, T] and (with want_logits) logits [T, V] of the pass `cache` holds, set
// on `out`, copied into the caller's buffers `into` where given (the result's data is then a
// subarray of the caller's buffer). Rows of each head's pattern before `from_row` are left as the
// caller's patterns buffer holds them (the caller knows they are this pass's).
void set_pass_tables(val& out, const cs::ActivationCache<float>& cache, const cs::Config& c, int T, bool want_patterns,
                     bool want_logits, const val& into, int from_row = 0) {
  const bool reuse = !into.isUndefined() && !into.isNull();
  auto buffer = [&](const char* key) { return reuse ? into[key] : val::undefined(); };
  if (want_logits)
    out.set("logits", tagged(fill_or_copy(buffer("logits"), {{cache.logits.ptr(), cache.logits.size()}}), {T, c.d_vocab},
                             {"pos", "d_vocab"}));
  if (want_patterns && reuse && from_row > 0) {
    const val buf = buffer("patterns");
    const std::size_t square = static_cast<std::size_t>(T) * T, kept = static_cast<std::size_t>(from_row) * T;
    for (std::size_t l = 0; l < cache.layers.size(); ++l)
      for (int h = 0; h < c.n_heads; ++h) {
        const std::size_t head = (l * c.n_heads + h) * square;
        // Each view is made and used at once: nothing allocates in between.
        buf.call<void>("set", val(emscripten::typed_memory_view(square - kept, cache.layers[l].pattern.ptr() + h * square + kept)),
                       static_cast<double>(head + kept));
      }
    out.set("patterns", tagged(buf.call<val>("subarray", 0, static_cast<double>(cache.layers.size() * c.n_heads * square)),
                               {c.n_layers, c.n_heads, T, T}, {"layer", "head", "query_pos", "key_pos"}));
  } else if (want_patterns) {
    std::vector<std::pair<const float*, std::size_t>> parts;
    for (const auto& lc : cache.layers) parts.emplace_back(lc.pattern.ptr(), lc.pattern.size());
    out.set("patterns", tagged(fill_or_copy(buffer("patterns"), parts), {c.n_layers, c.n_heads, T, T},
                               {"layer", "head", "query_pos", "key_pos"}));
  }
}

// The rest of run()'s result from its extras and the options `o` that made them: loss (into the
// caller's `loss_buffer` when given), changed_from, the mean losses, probs_of [T, probs_k], resid
// and result when asked, top_ids and top_probs with top k, text_scores and repeat with text
// scores, top_keys when asked.
void set_run_extras(val& out, const cs::RunExtras& x, const cs::RunOptions& o, const cs::Config& c, int T, const val& loss_buffer) {
  const int L = c.n_layers, H = c.n_heads, D = c.d_model;
  out.set("loss", tagged(fill_or_copy(loss_buffer, {{x.loss.data(), x.loss.size()}}), {T}, {"pos"}));
  out.set("changed_from", x.changed_from);
  out.set("last_row", x.pending_from >= T);
  out.set("pending_from", x.pending_from);
  out.set("mean_loss", x.mean_loss);
  if (!x.probs_of.empty()) out.set("probs_of", tagged(x.probs_of, {T, o.probs_k}, {"pos", "rank"}));
  out.set("first_copy_loss", x.first_copy_loss);
  out.set("second_copy_loss", x.second_copy_loss);
  if (o.resid) out.set("resid", tagged(x.resid, {L + 1, T, D}, {"stage", "pos", "d_model"}));
  if (o.result) out.set("result", tagged(x.result, {L, H, T, D}, {"layer", "head", "pos", "d_model"}));
  if (x.top) {
    const int k = x.top->k;
    out.set("top_ids", tagged_ints(x.top->ids.data, {T, k}, {"pos", "rank"}));
    out.set("top_probs", tagged(x.top->probs.data, {T, k}, {"pos", "rank"}));
  }
  if (x.text_scores) {
    out.set("text_scores", text_scores_js(*x.text_scores));
    out.set("repeat", repeat_js(x.text_scores->repeat));
  }
  if (o.top_keys > 0) out.set("top_keys", tagged_ints(x.top_keys, {L, H, T, o.top_keys}, {"layer", "head", "query_pos", "rank"}));
}

val buffer_of(const val& into, const char* key) {
  return into.isUndefined() || into.isNull() ? val::undefined() : into[key];
}
}  // namespace

// One forward pass (cs::ModelSession::run) and what options {resid, result, patterns, logits,
// into, topk, textScores, repeatAt, probsOf, topKeys, lastRow} ask for. `into` holds caller-owned Float32Arrays (patterns, logits,
// loss; each optional, each long enough: the JS wrapper checks) that receive those results
// instead of new arrays. Patterns and logits are copied straight from the session's cache, which
// is kept between calls.
val Model::run(const val& ids_js, const val& iv_js, const val& opts) {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "run: token ids");
    const cs::Intervention iv = to_intervention(iv_js, "run");
    cs::RunOptions o;
    o.resid = opt_bool(opts, "resid", false);
    o.result = opt_bool(opts, "result", false);
    o.topk = opt_int(opts, "topk", 0, "run: topk");
    o.text_scores = opt_bool(opts, "textScores", false);
    o.repeat_at = opt_int(opts, "repeatAt", -1, "run: repeatAt");
    o.top_keys = opt_int(opts, "topKeys", 0, "run: topKeys");
    o.last_row = opt_bool(opts, "lastRow", true);
    const val probs_of = opt(opts, "probsOf");
    if (!probs_of.isUndefined() && !probs_of.isNull()) {
      o.probs_of = copy_in<int>(probs_of, "run: probsOf");
      o.probs_k = ids.empty() ? 0 : static_cast<int>(o.probs_of.size() / ids.size());
    }
    const bool want_patterns = opt_bool(opts, "patterns", true), want_logits = opt_bool(opts, "logits", true);
    const val into = opt(opts, "into");
    o.logits = want_logits;  // without, the core computes logit rows only where it reads them
    written_.reset();  // this pass may change the kept pass analyseText's rows are counted from
    const cs::RunExtras x = session_->run(ids, iv, o);
    const int T = static_cast<int>(ids.size());
    val out = val::object();
    set_pass_tables(out, session_->cache(), session_->config(), T, want_patterns, want_logits, into);
    set_run_extras(out, x, o, session_->config(), T, buffer_of(into, "loss"));
    return out;
  });
}

// What the induction view draws for a text (cs::ModelSession::analyse_text), options {at, topk,
// topKeys, lastRow, into: {patterns, loss, cleanLoss}}: {ids, begins, ends, bos, truncated, unk_id, unknown,
// bytes: {bytes, offsets}, run (run()'s result with patterns, no logits) or null without tokens,
// clean: {loss, mean_loss, probs_of} under an intervention, else null}. The patterns are copied
// before the clean pass runs.
val Model::analyseText(const val& text, const val& iv_js, const val& opts) {
  return guarded([&] {
    if (!text.isString()) throw std::invalid_argument("analyseText: expected a string");
    const cs::Intervention iv = to_intervention(iv_js, "analyseText");
    const int at = opt_int(opts, "at", -1, "analyseText: at");
    const int topk = opt_int(opts, "topk", cs::ModelSession::kTextTopK, "analyseText: topk");
    const int top_keys = opt_int(opts, "topKeys", cs::ModelSession::kTextTopKeys, "analyseText: topKeys");
    const bool last_row = opt_bool(opts, "lastRow", true);
    const val into = opt(opts, "into");
    const cs::Config& c = session_->config();
    val run = val::null();
    const val patterns = buffer_of(into, "patterns");
    std::optional<PatternsWritten> was = std::move(written_);
    written_.reset();  // until this call has written its patterns
    const cs::ModelSession::TextAnalysis a = session_->analyse_text(text.as<std::string>(), iv, at, topk, top_keys, last_row,
                                                                    [&](const cs::ActivationCache<float>& cache, int changed_from) {
      const int T = cache.n_pos;
      // The caller's buffer holds the last pass of this intervention over T tokens: its rows
      // before this pass's first changed token are this pass's.
      const bool kept = was && !patterns.isUndefined() && was->buffer.strictlyEquals(patterns) && was->T == T && cs::same_intervention(was->iv, iv);
      run = val::object();
      set_pass_tables(run, cache, c, T, true, false, into, kept ? changed_from : 0);
      if (!patterns.isUndefined()) written_ = PatternsWritten{patterns, T, iv};
    });
    const int T = static_cast<int>(a.tokens.tokens.size());
    val out = val::object();
    set_context_tokens(out, a.tokens);
    out.set("unk_id", a.unk_id);
    out.set("unknown", a.unknown);
    out.set("bytes", token_bytes_js(a.bytes, a.byte_offsets));
    if (a.ran) set_run_extras(run, a.run, a.options, c, T, buffer_of(into, "loss"));
    out.set("run", run);
    val clean = val::null();
    if (a.compared) {
      clean = val::object();
      clean.set("loss", tagged(fill_or_copy(buffer_of(into, "cleanLoss"), {{a.clean_loss.data(), a.clean_loss.size()}}), {T}, {"pos"}));
      clean.set("mean_loss", a.clean_mean_loss);
      const int k = a.run.top ? a.run.top->k : 0;
      if (k > 0) clean.set("probs_of", tagged(a.clean_probs_of, {T, k}, {"pos", "rank"}));
    }
    out.set("clean", clean);
    return out;
  });
}

// Path expansion of the logits at `pos` (cs::attribution).
val Model::attribution(const val& ids_js, const val& pos_js, const val& iv_js, const val& target_js) const {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "attribution: token ids");
    const int pos = to_int(pos_js, "attribution: pos");
    const cs::Intervention iv = to_intervention(iv_js, "attribution");
    const int target = target_js.isUndefined() || target_js.isNull() ? -1 : to_int(target_js, "attribution: target");
    const cs::Attribution a = session_->attribution(ids, pos, iv, target);
    val out = val::object();
    out.set("pos", a.pos);
    out.set("token", a.token);
    out.set("logits", tagged(a.logits, {"d_vocab"}));
    out.set("names", str_array(a.names));
    out.set("parts", tagged(a.parts, {"part", "d_vocab"}));
    out.set("path_names", str_array(a.path_names));
    out.set("path_part", copy_out(a.path_part.data(), a.path_part.size(), "Int32Array"));
    out.set("paths", tagged(a.paths, {"path", "d_vocab"}));
    out.set("predicted", a.predicted);
    out.set("target", a.target);
    out.set("path_order", copy_out(a.path_order.data(), a.path_order.size(), "Int32Array"));
    return out;
  });
}

// Full QK circuit W_E W_Q W_K^T W_E^T [V_dest, V_src] (unscaled).
val Model::qk(const val& layer, const val& head, const val& k, bool table, bool factors, const val& sort,
    const val& top) const {
  return guarded([&] {
    const cs::Factored f = cs::full_qk(session_->file().params, to_int(layer, "qk: layer"), to_int(head, "qk: head"));
    return factored_js(f, to_int(k, "qk: k"), table, factors, sort, top, "dest_token", "src_token", "dest", "src");
  });
}

// Full OV circuit W_E W_V W_O W_U [V_src, V_out].
val Model::ov(const val& layer, const val& head, const val& k, bool table, bool factors, const val& sort,
    const val& top) const {
  return guarded([&] {
    const cs::Factored f = cs::full_ov(session_->file().params, to_int(layer, "ov: layer"), to_int(head, "ov: head"));
    return factored_js(f, to_int(k, "ov: k"), table, factors, sort, top, "src_token", "out_token", "src", "out");
  });
}

// The K- or Q-composition term of a later head's QK circuit through an earlier head (cs::composed_qk).
val Model::composedQk(const val& layer, const val& head, const val& src_layer, const val& src_head, const val& input_js,
    const val& k, bool table, bool factors, const val& sort, const val& top) const {
  return guarded([&] {
    const cs::Input input = to_input(input_js, "composedQk: input");
    const cs::Factored f = cs::composed_qk(session_->file().params, to_int(layer, "composedQk: layer"), to_int(head, "composedQk: head"),
                                           to_int(src_layer, "composedQk: through layer"), to_int(src_head, "composedQk: through head"), input);
    const bool key = input == cs::Input::K;
    return factored_js(f, to_int(k, "composedQk: k"), table, factors, sort, top, key ? "dest_token" : "dest_read_token",
                       key ? "src_read_token" : "src_token", "dest", "src");
  });
}

// Positional QK circuit W_pos W_Q W_K^T W_pos^T [C_query, C_key] (unscaled).
val Model::posQk(const val& layer, const val& head, const val& k, bool table, bool factors, const val& sort,
    const val& top) const {
  return guarded([&] {
    const cs::Factored f = cs::pos_qk(session_->file().params, to_int(layer, "posQk: layer"), to_int(head, "posQk: head"));
    return factored_js(f, to_int(k, "posQk: k"), table, factors, sort, top, "query_pos", "key_pos", "query", "key");
  });
}

// {ov: spectrum, qk: spectrum} of one head.
val Model::eigen(const val& layer_js, const val& head_js) const {
  return guarded([&] {
    const int layer = to_int(layer_js, "eigen: layer"), head = to_int(head_js, "eigen: head");
    val out = val::object();
    out.set("ov", spectrum_js(cs::ov_spectrum(session_->file().params, layer, head)));
    out.set("qk", spectrum_js(cs::qk_spectrum(session_->file().params, layer, head)));
    return out;
  });
}

// Every head's spectra: {ov: {copying, positive_fraction [L, H], re, im [L, H, K]}, qk: {...}}.
val Model::spectra() const {
  return guarded([&] {
    val out = val::object();
    out.set("ov", spectra_js(session_->spectra(true)));
    out.set("qk", spectra_js(session_->spectra(false)));
    return out;
  });
}

// Q/K/V composition scores [3, L, H, L, H] with the random baseline.
val Model::composition(const val& samples, const val& seed) const {
  return guarded([&] {
    const cs::CompositionScores s = cs::composition_scores(session_->file().params, to_int(samples, "composition: samples"),
                                                           to_seed(seed, "composition: seed"));
    val out = val::object();
    out.set("scores", tagged(s.scores, {"kind", "src_layer", "src_head", "dst_layer", "dst_head"}));
    out.set("kinds", str_array({"q", "k", "v"}));
    out.set("baseline", s.baseline);
    out.set("baseline_std", s.baseline_std);
    out.set("baseline_samples", s.baseline_samples);
    out.set("above_baseline", tagged(s.above_baseline, {"kind", "src_layer", "src_head", "dst_layer", "dst_head"}));
    out.set("max_score", s.max_score);
    out.set("sigmas", cs::kCompositionSigmas);
    return out;
  });
}

// Head scores on repeated random tokens; options {L, batch, seed, first, n, bos}, each optional.
val Model::headScores(const val& opts) const {
  return guarded([&] { return head_scores_js(session_->head_scores(repeated_tokens_spec(opts))); });
}

// ModelSession::default_head: {layer, head, name, prefix_matching}, or null without attention layers.
val Model::defaultHead() const {
  return guarded([&] {
    const auto h = session_->default_head();
    if (!h) return val::null();
    const cs::Config& c = session_->config();
    val out = val::object();
    out.set("layer", h->first);
    out.set("head", h->second);
    out.set("name", "L" + std::to_string(h->first) + "H" + std::to_string(h->second));
    out.set("prefix_matching", session_->head_scores(cs::RepeatedTokensSpec()).scores.prefix_matching.data[h->first * c.n_heads + h->second]);
    return out;
  });
}

// cs::find_repeat over ids (a leading <BOS> left out): the repeated block holding position `at`
// (else the longest), as run({textScores, repeatAt}) chooses it, without a forward pass.
val Model::findRepeat(const val& ids_js, const val& at_js) const {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "findRepeat: token ids");
    const int at = at_js.isUndefined() || at_js.isNull() ? -1 : to_int(at_js, "findRepeat: at");
    return repeat_js(cs::find_repeat(ids, cs::text_scores_from(ids, session_->file().tokenizer.bos_id()), at));
  });
}

// cs::repeated_sample_text: {text, segment, tokens}, a repeated random segment to type.
val Model::sampleText(const val& seed_js, const val& length_js) const {
  return guarded([&] {
    const std::uint64_t seed = seed_js.isUndefined() || seed_js.isNull() ? 0 : to_seed(seed_js, "sampleText: seed");
    const int length = length_js.isUndefined() || length_js.isNull() ? -1 : to_int(length_js, "sampleText: length");
    const cs::SampleText t = cs::repeated_sample_text(session_->file().tokenizer, session_->config().n_ctx, seed, length);
    val out = val::object();
    out.set("text", t.text);
    out.set("segment", t.segment);
    out.set("tokens", copy_out(t.tokens.data(), t.tokens.size(), "Int32Array"));
    return out;
  });
}

// The k most probable next tokens at every position of one sequence.
val Model::topK(const val& ids_js, const val& k_js) const {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "topK: token ids");
    const int k = to_int(k_js, "topK: k");
    const int T = static_cast<int>(ids.size());
    const cs::TopK t = session_->top_k(ids, k);
    val out = val::object();
    out.set("ids", tagged_ints(t.ids.data, {T, k}, {"pos", "rank"}));
    out.set("probs", tagged(t.probs.data, {T, k}, {"pos", "rank"}));
    return out;
  });
}

// cs::ablate over a [B, T] batch (ids row-major).
val Model::ablate(const val& ids_js, const val& B_js, const val& iv_js, const val& early_js, const val& late_js) const {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "ablate: token ids");
    const int B = to_int(B_js, "ablate: batch");
    const int T = cs::batch_length(ids.size(), B, "ablate");
    const cs::Intervention iv = to_intervention(iv_js, "ablate");
    const cs::AblationResult r =
        session_->ablate(ids, B, iv, to_int(early_js, "ablate: iclEarly"), to_int(late_js, "ablate: iclLate"));
    const int V = session_->config().d_vocab;
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
val Model::ioi(const val& ids_js, const val& iv_js) const {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "ioi: token ids");
    const cs::Intervention iv = to_intervention(iv_js, "ioi");
    const cs::Config& c = session_->config();
    return ioi_analysis_js(session_->ioi(ids, iv), c.n_layers, c.d_vocab, session_->ioi_name_ids());
  });
}

// ioi() of every sequence of the task's split, each with its `tokens` (cs::ModelSession::ioi_all).
val Model::ioiAll(const val& iv_js, const val& split_js) const {
  return guarded([&] {
    const cs::Intervention iv = to_intervention(iv_js, "ioi");
    const cs::Config& c = session_->config();
    val out = val::array();
    for (const auto& row : session_->ioi_all(iv, to_split(split_js))) {
      val a = ioi_analysis_js(row.analysis, c.n_layers, c.d_vocab, session_->ioi_name_ids());
      a.set("tokens", copy_out(row.tokens.data(), row.tokens.size(), "Int32Array"));
      out.call<void>("push", a);
    }
    return out;
  });
}

// The IOI task's sequences [B, T] (cs::ModelSession::ioi_sequences).
val Model::ioiSequences(const val& split_js) const {
  return guarded([&] {
    const cs::Batch b = session_->ioi_sequences(to_split(split_js));
    return tagged_ints(b.tokens, {b.B, b.T}, {"sequence", "pos"});
  });
}

// Accuracy etc. over the IOI task's sequences, optionally under an intervention.
val Model::ioiEvaluate(const val& iv_js, const val& split_js) const {
  return guarded([&] {
    const cs::Intervention iv = to_intervention(iv_js, "ioiEvaluate");
    return ioi_evaluation_js(session_->ioi_evaluate(iv, to_split(split_js)));
  });
}

// The sentence-template task (cs::ModelSession::ioi_task_json), or null for any other model.
val Model::ioiTask() const {
  return guarded([&] { return session_->ioi_task() ? json_js(session_->ioi_task_json()) : val::null(); });
}

val Model::ioiKind() const {
  return guarded([&] {
    const std::string kind = session_->ioi_kind();
    return kind.empty() ? val::null() : val(kind);
  });
}

// The names ioi() reports probabilities for, as text (cs::ModelSession::ioi_names).
val Model::ioiNames() const {
  return guarded([&] { return str_array(session_->ioi_names()); });
}

// One sentence of the task: options {template, order, io, s, place, object} (indices).
val Model::ioiSentence(const val& opts) const {
  return guarded([&] {
    cs::IoiTemplateRow row;
    row.tpl = opt_int(opts, "template", 0, "ioiSentence: template");
    row.order = opt_int(opts, "order", 0, "ioiSentence: order");
    row.io = opt_int(opts, "io", 0, "ioiSentence: io");
    row.s = opt_int(opts, "s", 1, "ioiSentence: s");
    row.place = opt_int(opts, "place", 0, "ioiSentence: place");
    row.object = opt_int(opts, "object", 0, "ioiSentence: object");
    const cs::IoiSentence x = session_->ioi_sentence(row);
    val out = val::object();
    out.set("text", x.text);
    out.set("tokens", copy_out(x.tokens.data(), x.tokens.size(), "Int32Array"));
    out.set("words", str_array(x.words));
    out.set("roles", str_array(x.roles));
    out.set("template_held_out", x.template_held_out);
    out.set("pair_held_out", x.pair_held_out);
    out.set("split", std::string(cs::ioi_split_name(x.split)));
    return out;
  });
}

// The intervention cutting input 'q' | 'k' | 'v' of every head from every earlier layer's heads.
val Model::cutComposition(const val& input_js) const {
  return guarded([&] {
    return intervention_js(cs::cut_composition(session_->config(), to_input(input_js, "cutComposition: input")));
  });
}

// Skip-trigrams of one head (probe sequences start with the model's <BOS> when it has one).
val Model::skipTrigrams(const val& layer, const val& head, const val& k, const val& max_bugs) const {
  return guarded([&] {
    const cs::SkipTrigrams s =
        cs::skip_trigrams(session_->file().params, to_int(layer, "skipTrigrams: layer"), to_int(head, "skipTrigrams: head"),
                          to_int(k, "skipTrigrams: k"), session_->file().tokenizer.bos_id(), to_int(max_bugs, "skipTrigrams: maxBugs"));
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
val Model::corpusStats(const val& ids_js, const val& window_js, bool leading_terms, bool interchange) const {
  return guarded([&] {
    const std::vector<int> ids = copy_in<int>(ids_js, "corpusStats: token ids");
    const int window = window_js.isUndefined() || window_js.isNull() ? cs::kLeadingTermsWindow : to_int(window_js, "corpusStats: window");
    const cs::CorpusStatsRun r = session_->corpus_stats(ids, window);
    const cs::CorpusStats& s = r.stats;
    const cs::Config& c = session_->config();
    val out = val::object();
    out.set("window", s.window);
    out.set("bigram", tagged(s.bigram, {"current_token", "next_token"}));
    if (interchange) out.set("interchange", tagged(cs::interchangeability_map(s.bigram), {"next_token", "next_token_2"}));
    out.set("context", tagged(s.context, {"token", "context_token"}));
    out.set("current_freq", tagged(s.current_freq, {s.V}, {"token"}));
    out.set("next_freq", tagged(s.next_freq, {s.V}, {"token"}));
    out.set("direct_path_cosine", r.direct_path_cosine);
    out.set("ov_cosine", tagged(r.ov_cosine, {c.n_layers, c.n_heads}, kLayerHead));
    if (leading_terms) {
      out.set("direct_path_leading_term", tagged(cs::direct_path_leading_term(s), {"current_token", "next_token"}));
      out.set("ov_leading_term", tagged(cs::ov_leading_term(s), {"src_token", "out_token"}));
    }
    return out;
  });
}

namespace {

std::string opt_string(const val& opts, const char* key, const std::string& fallback, const std::string& what) {
  const val v = opt(opts, key);
  if (v.isUndefined() || v.isNull()) return fallback;
  if (!v.isString()) throw std::invalid_argument(what + " must be a string, got " + describe(v));
  return v.as<std::string>();
}

// {kind, tokens: Int32Array, pos, correct, wrong, changed: number[], description}
val corruption_js(const cs::Corruption& k) {
  val out = val::object();
  out.set("kind", k.kind);
  out.set("tokens", copy_out(k.tokens.data(), k.tokens.size(), "Int32Array"));
  out.set("pos", k.pos);
  out.set("correct", k.correct);
  out.set("wrong", k.wrong);
  out.set("changed", int_array(k.changed));
  out.set("description", k.description);
  return out;
}

// patch()'s and corrupt()'s {kind, seed}.
void corruption_options(const val& opts, const std::string& where, cs::PatchRequest& rq) {
  rq.kind = opt_string(opts, "kind", "auto", where + ": kind");
  const val seed = opt(opts, "seed");
  if (!seed.isUndefined() && !seed.isNull()) rq.seed = to_seed(seed, where + ": seed");
}

}  // namespace

// The standard corruption of a clean input (cs::ModelSession::corrupt).
val Model::corrupt(const val& ids_js, const val& opts) const {
  return guarded([&] {
    cs::PatchRequest rq;
    corruption_options(opts, "corrupt", rq);
    return corruption_js(session_->corrupt(copy_in<int>(ids_js, "corrupt: token ids"), rq.kind, rq.seed));
  });
}

// Activation patching of every head, and every head at every position (cs::ModelSession::patch).
val Model::patch(const val& ids_js, const val& opts) const {
  return guarded([&] {
    cs::PatchRequest rq;
    rq.clean = copy_in<int>(ids_js, "patch: token ids");
    corruption_options(opts, "patch", rq);
    const val corrupted = opt(opts, "corrupted");
    if (!corrupted.isUndefined() && !corrupted.isNull()) rq.corrupted = copy_in<int>(corrupted, "patch: corrupted");
    rq.pos = opt_int(opts, "pos", -1, "patch: pos");
    rq.correct = opt_int(opts, "correct", -1, "patch: correct");
    rq.wrong = opt_int(opts, "wrong", -1, "patch: wrong");
    rq.direction = cs::patch_direction_from_name(opt_string(opts, "direction", "denoise", "patch: direction"));
    const val positions = opt(opts, "positions");
    if (positions.isString()) {
      if (positions.as<std::string>() != "auto")
        throw std::invalid_argument("patch: positions must be true, false or 'auto', got \"" + cs::printable_text(positions.as<std::string>(), 40) + "\"");
      rq.positions = cs::PatchRequest::Positions::EachIfItFits;
    } else {
      rq.positions = opt_bool(opts, "positions", true) ? cs::PatchRequest::Positions::Each : cs::PatchRequest::Positions::Whole;
    }
    const cs::PatchRun run = session_->patch(rq, to_intervention(opt(opts, "intervention"), "patch"));
    const cs::PatchResult& r = run.result;
    val out = val::object();
    out.set("corruption", corruption_js(run.corruption));
    out.set("direction", cs::patch_direction_name(r.direction));
    out.set("clean_logit_diff", r.clean_diff);
    out.set("corrupted_logit_diff", r.corrupted_diff);
    out.set("normalised", r.normalised);
    out.set("head", tagged(r.head, kLayerHead));
    out.set("head_effect", tagged(r.head_effect, kLayerHead));
    const std::vector<std::string> axes = {"layer", "head", "pos"};
    const bool each = !r.head_pos.data.empty();
    out.set("head_pos", each ? tagged(r.head_pos, axes) : val::null());
    out.set("head_pos_effect", each ? tagged(r.head_pos_effect, axes) : val::null());
    // Each layer's MLP output, for a model with MLPs (null for an attention-only one).
    const bool mlp = !r.mlp.empty();
    out.set("mlp", mlp ? tagged(r.mlp, {"layer"}) : val::null());
    out.set("mlp_effect", mlp ? tagged(r.mlp_effect, {"layer"}) : val::null());
    out.set("mlp_pos", mlp && each ? tagged(r.mlp_pos, {"layer", "pos"}) : val::null());
    out.set("mlp_pos_effect", mlp && each ? tagged(r.mlp_pos_effect, {"layer", "pos"}) : val::null());
    out.set("passes", r.passes);
    out.set("note", run.note);
    return out;
  });
}

// The model file (F32 safetensors bytes), copied into a new Uint8Array.
val Model::save() const {
  return guarded([&] {
    const std::vector<std::uint8_t> bytes = cs::save_model_bytes(session_->file());
    return copy_out(bytes.data(), bytes.size(), "Uint8Array");
  });
}

// Benchmark entry: one forward pass over a [B, T] batch into the session's cache; the mean loss.
double Model::forwardBatch(const val& ids_js, int B, int T) {
  return guarded([&] { return session_->forward_batch(copy_in<int>(ids_js, "forwardBatch: token ids"), B, T); });
}

// ------------------------------------------------------------------------------ Trainer

namespace {
// A recipe's JSON text parsed; "is not valid JSON (line 2, column 9)": the user's position, not
// the library's text.
nlohmann::json recipe_json_in(const std::string& text) {
  nlohmann::json j;
  if (const auto problem = cs::read_json(text, j)) throw std::invalid_argument("recipe: not valid JSON: the recipe " + *problem);
  return j;
}
}  // namespace

Trainer::Trainer(const std::string& recipe_json)
    : trainer_(guarded([&] { return std::make_unique<cs::Trainer>(cs::recipe_from_json(recipe_json_in(recipe_json))); })) {}

val recipeFiles(const std::string& recipe_json) {
  return guarded([&] { return str_array(cs::recipe_files(recipe_json_in(recipe_json))); });
}

std::string recipeWithTexts(const std::string& recipe_json, const val& texts) {
  return guarded([&] {
    if (!is_plain_object(texts)) throw std::invalid_argument("recipeWithTexts: give the files' texts as {path: text}");
    std::map<std::string, std::string> m;
    const val keys = val::global("Object").call<val>("keys", texts);
    for (int i = 0, n = keys["length"].as<int>(); i < n; ++i) {
      const std::string key = keys[i].as<std::string>();
      const val t = texts[key];
      if (!t.isString()) throw std::invalid_argument("recipeWithTexts: the text of " + cs::printable_text(key) + " is not a string");
      m[key] = t.as<std::string>();
    }
    return cs::recipe_with_texts(recipe_json_in(recipe_json), m).dump();
  });
}

std::string recipeWithSteps(const std::string& recipe_json, int steps) {
  return guarded([&] { return cs::recipe_with_steps(recipe_json_in(recipe_json), steps).dump(); });
}

// {step, loss, lr, grad_norm, loss_repeated, loss_fresh}; step counts the steps completed.
val Trainer::step() {
  return guarded([&] { return step_metrics_js(trainer_->step()); });
}

namespace {
val shard_js(const cs::Batch& b) {
  val o = val::object();
  o.set("B", b.B);
  o.set("T", b.T);
  o.set("tokens", copy_out(b.tokens.data(), b.tokens.size(), "Int32Array"));
  o.set("targets", copy_out(b.targets.data(), b.targets.size(), "Int32Array"));
  o.set("mask", copy_out(b.mask.data(), b.mask.size(), "Float32Array"));
  o.set("mask_total", b.mask_total);
  return o;
}

cs::Batch shard_in(const val& o) {
  if (!is_plain_object(o)) throw std::invalid_argument("shard: expected an object from beginStep, got " + describe(o));
  cs::Batch b;
  b.B = to_int(o["B"], "shard.B");
  b.T = to_int(o["T"], "shard.T");
  b.tokens = copy_in<int>(o["tokens"], "shard.tokens");
  b.targets = copy_in<int>(o["targets"], "shard.targets");
  b.mask = copy_in<float>(o["mask"], "shard.mask");
  if (!o["mask_total"].isNumber()) throw std::invalid_argument("shard.mask_total must be a number");
  b.mask_total = o["mask_total"].as<double>();
  const std::size_t n = static_cast<std::size_t>(std::max(b.B, 0)) * std::max(b.T, 0);
  if (b.B < 1 || b.T < 1 || b.tokens.size() != n || b.targets.size() != n || b.mask.size() != n || !(b.mask_total > 0))
    throw std::invalid_argument("shard: B, T, tokens, targets, mask and mask_total do not fit together");
  return b;
}
}  // namespace

val Trainer::beginStep(const val& shards) {
  return guarded([&] {
    const std::vector<cs::Batch> parts = trainer_->begin_step(to_int(shards, "beginStep: shards"));
    val out = val::array();
    for (const cs::Batch& b : parts) out.call<void>("push", shard_js(b));
    return out;
  });
}

val Trainer::shardGradient(const val& shard) {
  return guarded([&] {
    const cs::ShardResult& r = trainer_->shard_result(shard_in(shard));
    const std::vector<float> flat = cs::flatten(r.grads);
    val o = val::object();
    o.set("grads", copy_out(flat.data(), flat.size(), "Float32Array"));
    o.set("loss", r.loss);
    o.set("per_token", copy_out(r.per_token.data(), r.per_token.size(), "Float32Array"));
    return o;
  });
}

val Trainer::finishStep(const val& results) {
  return guarded([&] {
    if (!results.isArray()) throw std::invalid_argument("finishStep: expected an array of shard results");
    const int n = results["length"].as<int>();
    std::vector<cs::ShardResult> rs(static_cast<std::size_t>(std::max(n, 0)));
    std::vector<const cs::ShardResult*> ptrs;
    for (int i = 0; i < n; ++i) {
      const val r = results[i];
      const std::string what = "finishStep: result " + std::to_string(i);
      if (!is_plain_object(r)) throw std::invalid_argument(what + " must be an object {grads, loss, per_token}");
      const std::vector<float> g = copy_in<float>(r["grads"], what + ".grads");
      rs[i].grads = cs::make_params<float>(trainer_->params().cfg);
      cs::unflatten(g.data(), g.size(), rs[i].grads);
      if (!r["loss"].isNumber()) throw std::invalid_argument(what + ".loss must be a number");
      rs[i].loss = r["loss"].as<double>();
      rs[i].per_token = copy_in<float>(r["per_token"], what + ".per_token");
      ptrs.push_back(&rs[i]);
    }
    return step_metrics_js(trainer_->finish_step(ptrs));
  });
}

void Trainer::cancelStep() { trainer_->cancel_step(); }

val Trainer::params() const {
  return guarded([&] {
    const std::vector<float> flat = trainer_->params_flat();
    return copy_out(flat.data(), flat.size(), "Float32Array");
  });
}

void Trainer::setParams(const val& flat) {
  guarded([&] {
    const std::vector<float> v = copy_in<float>(flat, "setParams: weights");
    trainer_->set_params_flat(v.data(), v.size());
    return 0;
  });
}

int Trainer::stepsDone() const { return trainer_->steps_done(); }

// Head scores of the model as it stands (as Model::headScores on the saved model).
val Trainer::headScores(const val& opts) const {
  return guarded([&] {
    return head_scores_js(cs::head_scores_run(trainer_->params(), trainer_->tokenizer(), repeated_tokens_spec(opts)));
  });
}

// The model file as it stands (F32 safetensors bytes), copied into a new Uint8Array.
val Trainer::save() const {
  return guarded([&] {
    const std::vector<std::uint8_t> bytes = cs::save_model_bytes(trainer_->model_file());
    return copy_out(bytes.data(), bytes.size(), "Uint8Array");
  });
}

// {"config", "tokenizer", "recipe", "steps", "batch_size", "seed"} as a JSON string.
std::string Trainer::config() const {
  return guarded([&] {
    const cs::Recipe& r = trainer_->recipe();
    nlohmann::json j;
    j["config"] = cs::config_to_json(r.model);
    j["tokenizer"] = trainer_->tokenizer().describe();
    j["recipe"] = r.source;
    j["steps"] = r.steps;
    j["batch_size"] = r.batch_size;
    j["seed"] = r.seed;
    return j.dump();
  });
}

// ------------------------------------------------------------------------------ functions

std::string version() { return CIRCUITSCOPE_VERSION; }

val memoryStats() {
  const struct mallinfo mi = mallinfo();
  val out = val::object();
  out.set("heapSize", static_cast<double>(emscripten_get_heap_size()));
  out.set("allocated", static_cast<double>(mi.uordblks));
  return out;
}

val phaseChange(const val& records, const val& n_heads) {
  return guarded([&] {
    if (!records.isArray()) throw std::invalid_argument("phaseChange: records must be an array of {step, prefix_matching}");
    const int n = records["length"].as<int>();
    std::vector<std::int64_t> steps;
    std::vector<std::vector<double>> pm;
    for (int i = 0; i < n; ++i) {
      const std::string what = "phaseChange: records[" + std::to_string(i) + "]";
      const val r = records[i];
      if (!is_plain_object(r)) throw std::invalid_argument(what + " must be an object {step, prefix_matching}");
      steps.push_back(to_int53(r["step"], what + ".step"));
      const val p = r["prefix_matching"];
      pm.push_back(p.isUndefined() || p.isNull() ? std::vector<double>{} : copy_in<double>(p, what + ".prefix_matching"));
    }
    const int H = n_heads.isUndefined() || n_heads.isNull() ? 0 : to_int(n_heads, "phaseChange: nHeads");
    return phase_change_js(cs::phase_change(steps, pm, H));
  });
}

val Model::checkpointScores(const val& opts) const {
  return guarded([&] {
    const val text_js = opt(opts, "text");
    if (!text_js.isUndefined() && !text_js.isNull() && !text_js.isString())
      throw std::invalid_argument("checkpointScores: text must be a string");
    const std::string text = text_js.isString() ? text_js.as<std::string>() : std::string();
    const val ids_js = opt(opts, "ids");
    const bool has_ids = !ids_js.isUndefined() && !ids_js.isNull();
    if (has_ids && text_js.isString()) throw std::invalid_argument("checkpointScores: give the held-out text or its ids, not both");
    const val step_js = opt(opts, "step");
    const std::int64_t step = step_js.isUndefined() || step_js.isNull() ? 0 : to_int53(step_js, "checkpointScores: step");
    cs::CheckpointEvalOptions o;
    o.window = opt_int(opts, "window", -1, "checkpointScores: window");
    o.batch = opt_int(opts, "batch", -1, "checkpointScores: batch");
    o.icl_early = opt_int(opts, "iclEarly", -1, "checkpointScores: iclEarly");
    o.icl_late = opt_int(opts, "iclLate", -1, "checkpointScores: iclLate");
    o.icl_pairs = opt_int(opts, "iclPairs", -1, "checkpointScores: iclPairs");
    o.repeat_len = opt_int(opts, "repeatLen", -1, "checkpointScores: repeatLen");
    const val seed = opt(opts, "seed");
    if (!seed.isUndefined() && !seed.isNull()) o.seed = static_cast<long long>(to_seed(seed, "checkpointScores: seed"));
    const cs::ModelFile& f = session_->file();
    if (has_ids) {
      const std::vector<int> ids = copy_in<int>(ids_js, "checkpointScores: ids");
      return json_js(cs::checkpoint_eval_json(cs::evaluate_checkpoint(f.params, f.tokenizer, ids, step, o, cs::trained_window(f.info))));
    }
    return json_js(cs::checkpoint_eval_json(cs::evaluate_checkpoint(f.params, f.tokenizer, text, step, o, cs::trained_window(f.info))));
  });
}

val Model::heldOutIds(const val& text) const {
  return guarded([&] {
    if (!text.isString()) throw std::invalid_argument("heldOutIds: expected a string");
    const std::vector<int> ids = cs::held_out_ids(session_->file().tokenizer, text.as<std::string>());
    return copy_out(ids.data(), ids.size(), "Int32Array");
  });
}

val checkpointMetrics(const std::string& scores_json) {
  return guarded([&] {
    return json_js(cs::checkpoint_metrics_json(cs::parse_json_text(scores_json, "checkpointMetrics:"), "checkpointMetrics:"));
  });
}

val checkpointLabel(const std::string& file_name) {
  return guarded([&] {
    const auto l = cs::checkpoint_label(file_name);
    return l ? val(static_cast<double>(*l)) : val::null();
  });
}

}  // namespace csjs
