// Params: the weights of a transformer (attention, and optionally LayerNorm and MLPs). The same type holds parameters,
// gradients and AdamW's moments; for_each_param_slot() is the one place that defines which
// tensors exist, their names (TransformerLens file keys), their shapes and their order.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config.h"
#include "rng.h"
#include "tensor.h"

namespace cs {

// Row vectors multiply from the left (q = x W_Q), so a head's QK circuit is W_Q W_K^T and its
// OV circuit is W_V W_O: the transposes of the papers' column-vector W_QK and W_OV.
template <class T>
struct LayerParams {
  Tensor<T> W_Q;          // [H, D, Dh]
  Tensor<T> W_K;          // [H, D, Dh]
  Tensor<T> W_V;          // [H, D, Dh]
  Tensor<T> W_O;          // [H, Dh, D]
  Tensor<T> b_Q;          // [H, Dh]   (use_bias)
  Tensor<T> b_K;          // [H, Dh]   (use_bias)
  Tensor<T> b_V;          // [H, Dh]   (use_bias)
  Tensor<T> b_O;          // [D]       (use_bias)
  Tensor<T> smear_alpha;  // [H]       (smeared_keys) s = sigmoid(alpha)
  Tensor<T> ln1_w;        // [D]       blocks.l.ln1.w (normalization LN)
  Tensor<T> ln1_b;        // [D]       blocks.l.ln1.b (normalization LN)
  Tensor<T> ln2_w;        // [D]       blocks.l.ln2.w (LN with an MLP)
  Tensor<T> ln2_b;        // [D]       blocks.l.ln2.b (LN with an MLP)
  Tensor<T> W_in;         // [D, M]    blocks.l.mlp.W_in  (d_mlp > 0; M = d_mlp)
  Tensor<T> b_in;         // [M]       blocks.l.mlp.b_in
  Tensor<T> W_out;        // [M, D]    blocks.l.mlp.W_out
  Tensor<T> b_out;        // [D]       blocks.l.mlp.b_out
};

template <class T>
struct Params {
  Config cfg;
  Tensor<T> W_E;    // [V, D]
  Tensor<T> W_pos;  // [n_ctx, D]  (pos_embed != none)
  std::vector<LayerParams<T>> blocks;
  Tensor<T> ln_final_w;  // [D]  ln_final.w (normalization LN)
  Tensor<T> ln_final_b;  // [D]  ln_final.b (normalization LN)
  Tensor<T> W_U;    // [D, V]
  Tensor<T> b_U;    // [V]       (use_bias)
};

// How init_params() starts a tensor.
enum class Init {
  Normal,  // N(0, init_std^2): every weight matrix
  Zero,    // biases and smear_alpha (s = 0.5)
  One,     // LayerNorm weights
};

// A parameter's name without building the string: a top-level tensor ("embed.W_E") or a
// tensor of module `module` of layer `layer` ("blocks.{layer}.{module}." + leaf, module one of
// attn, ln1, ln2, mlp), with how it starts.
struct ParamKey {
  int layer = -1;  // -1: top level
  const char* leaf = "";
  const char* module = "attn";
  Init init = Init::Normal;
  std::string name() const {
    return layer < 0 ? std::string(leaf) : "blocks." + std::to_string(layer) + "." + module + "." + leaf;
  }
};

// A parameter's shape without allocating (up to three axes).
struct ParamDims {
  int rank = 0;
  int d[3] = {0, 0, 0};
  Shape shape() const { return Shape(d, d + rank); }
  std::uint64_t count() const {
    std::uint64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= static_cast<std::uint64_t>(d[i]);
    return n;
  }
};

namespace detail {
// &(o->*m), or nullptr when there is no object (a walk over the config alone).
template <class O, class C, class M>
auto member(O* o, M C::*m) -> decltype(&(o->*m)) {
  return o ? &(o->*m) : nullptr;
}
}  // namespace detail

// THE list: every tensor the config calls for, in file order, as fn(key, tensor, dims), where
// tensor points into *p (P is Params<T> or const Params<T>) or is nullptr when p is nullptr (a
// walk over the config alone, for counts and shapes). p->blocks must already hold n_layers
// layers. Everything below (for_each_param, for_each_tensor, make_params, weight counts and
// expected shapes) is derived from it.
template <class P, class F>
void for_each_param_slot(const Config& c, P* p, F&& fn) {
  using detail::member;
  using Top = std::remove_const_t<P>;
  const int H = c.n_heads, D = c.d_model, Dh = c.d_head, V = c.d_vocab, M = c.d_mlp;
  const bool ln = c.normalization == Norm::LN;
  const Init N = Init::Normal, Z = Init::Zero, O = Init::One;
  fn(ParamKey{-1, "embed.W_E", "", N}, member(p, &Top::W_E), ParamDims{2, {V, D, 0}});
  if (c.pos_embed != PosEmbed::None)
    fn(ParamKey{-1, "pos_embed.W_pos", "", N}, member(p, &Top::W_pos), ParamDims{2, {c.n_ctx, D, 0}});
  for (int l = 0; l < c.n_layers; ++l) {
    auto* b = p ? &p->blocks[l] : nullptr;
    using L = std::remove_const_t<std::remove_pointer_t<decltype(b)>>;
    if (ln) {
      fn(ParamKey{l, "w", "ln1", O}, member(b, &L::ln1_w), ParamDims{1, {D, 0, 0}});
      fn(ParamKey{l, "b", "ln1", Z}, member(b, &L::ln1_b), ParamDims{1, {D, 0, 0}});
    }
    fn(ParamKey{l, "W_Q", "attn", N}, member(b, &L::W_Q), ParamDims{3, {H, D, Dh}});
    fn(ParamKey{l, "W_K", "attn", N}, member(b, &L::W_K), ParamDims{3, {H, D, Dh}});
    fn(ParamKey{l, "W_V", "attn", N}, member(b, &L::W_V), ParamDims{3, {H, D, Dh}});
    fn(ParamKey{l, "W_O", "attn", N}, member(b, &L::W_O), ParamDims{3, {H, Dh, D}});
    if (c.use_bias) {
      fn(ParamKey{l, "b_Q", "attn", Z}, member(b, &L::b_Q), ParamDims{2, {H, Dh, 0}});
      fn(ParamKey{l, "b_K", "attn", Z}, member(b, &L::b_K), ParamDims{2, {H, Dh, 0}});
      fn(ParamKey{l, "b_V", "attn", Z}, member(b, &L::b_V), ParamDims{2, {H, Dh, 0}});
      fn(ParamKey{l, "b_O", "attn", Z}, member(b, &L::b_O), ParamDims{1, {D, 0, 0}});
    }
    if (c.smeared_keys) fn(ParamKey{l, "smear_alpha", "attn", Z}, member(b, &L::smear_alpha), ParamDims{1, {H, 0, 0}});
    if (M > 0) {
      if (ln) {
        fn(ParamKey{l, "w", "ln2", O}, member(b, &L::ln2_w), ParamDims{1, {D, 0, 0}});
        fn(ParamKey{l, "b", "ln2", Z}, member(b, &L::ln2_b), ParamDims{1, {D, 0, 0}});
      }
      // TransformerLens's MLP always has its biases.
      fn(ParamKey{l, "W_in", "mlp", N}, member(b, &L::W_in), ParamDims{2, {D, M, 0}});
      fn(ParamKey{l, "b_in", "mlp", Z}, member(b, &L::b_in), ParamDims{1, {M, 0, 0}});
      fn(ParamKey{l, "W_out", "mlp", N}, member(b, &L::W_out), ParamDims{2, {M, D, 0}});
      fn(ParamKey{l, "b_out", "mlp", Z}, member(b, &L::b_out), ParamDims{1, {D, 0, 0}});
    }
  }
  if (ln) {
    fn(ParamKey{-1, "ln_final.w", "", O}, member(p, &Top::ln_final_w), ParamDims{1, {D, 0, 0}});
    fn(ParamKey{-1, "ln_final.b", "", Z}, member(p, &Top::ln_final_b), ParamDims{1, {D, 0, 0}});
  }
  fn(ParamKey{-1, "unembed.W_U", "", N}, member(p, &Top::W_U), ParamDims{2, {D, V, 0}});
  if (c.use_bias) fn(ParamKey{-1, "unembed.b_U", "", Z}, member(p, &Top::b_U), ParamDims{1, {V, 0, 0}});
}

// Every tensor the config calls for, allocated and zeroed; or, with zeroed false, each with its
// shape and room for its values but none yet (data empty, its capacity reserved, no memory
// written): for a loader that appends every value once (ModelReader, io.h).
template <class T>
Params<T> make_params(const Config& cfg, bool zeroed = true);

// Visits (name, tensor) for every tensor present, in file order.
template <class P, class F>
void for_each_param(P& p, F&& fn) {
  for_each_param_slot(p.cfg, &p, [&](const ParamKey& key, auto* t, const ParamDims&) { fn(key.name(), *t); });
}

// Visits every tensor present, in file order, without building names (so without allocating):
// for the training step's per-step loops.
template <class P, class F>
void for_each_tensor(P& p, F&& fn) {
  for_each_param_slot(p.cfg, &p, [&](const ParamKey&, auto* t, const ParamDims&) { fn(*t); });
}

// The list form of for_each_param, for zipping params with grads and moments.
template <class T>
std::vector<std::pair<std::string, Tensor<T>*>> named_params(Params<T>& p) {
  std::vector<std::pair<std::string, Tensor<T>*>> out;
  for_each_param(p, [&](const std::string& n, Tensor<T>& t) { out.emplace_back(n, &t); });
  return out;
}
template <class T>
std::vector<std::pair<std::string, const Tensor<T>*>> named_params(const Params<T>& p) {
  std::vector<std::pair<std::string, const Tensor<T>*>> out;
  for_each_param(p, [&](const std::string& n, const Tensor<T>& t) { out.emplace_back(n, &t); });
  return out;
}

// The shape the config gives a named tensor; throws std::invalid_argument for an unknown name.
Shape expected_shape(const Config& cfg, const std::string& name);

// The number of weights make_params allocates for cfg, computed from the list without
// allocating (64-bit, so a guard against absurd configs cannot overflow; Config::validate()
// bounds every factor).
std::uint64_t count_weights(const Config& cfg);

// A bound on a model's weights and the words that explain it: "<who>: this architecture has N
// weights; circuitscope <verb> at most <weights> (<weights * bytes_per_weight> MB: <what>)".
struct SizeLimit {
  std::uint64_t weights;
  std::uint64_t bytes_per_weight;
  const char* who;
  const char* verb;
  const char* what;
};
// What a browser tab holds: the weights as float32 beside the file and a forward pass.
inline constexpr SizeLimit kOpenLimit{kMaxWeights, 4, "config", "handles",
                                      "the weights as float32, which a browser tab holds with its file and a forward pass"};
// What the trainer holds: the weights, their gradients and two AdamW moments.
inline constexpr SizeLimit kTrainLimit{kMaxTrainWeights, 16, "recipe", "trains",
                                       "the weights, their gradients and two AdamW moments, as float32"};

// Config::validate() and the whole model's size: throws std::invalid_argument with a sentence
// when cfg has more weights than the limit. What allocates a model checks this first (the trainer
// with kTrainLimit).
void check_size(const Config& cfg, const SizeLimit& limit = kOpenLimit);

// Random initialisation: weights ~ N(0, init_std^2) from the portable Rng, biases zero,
// smear_alpha zero (s = 0.5), LayerNorm weights one (each slot's Init). Deterministic in
// (cfg, seed) on every build.
template <class T>
Params<T> init_params(const Config& cfg, std::uint64_t seed);

// Every random weight multiplied by `scale` (a recipe's init_scale: biases and smear_alpha start
// at zero and stay zero, LayerNorm weights at one).
template <class T>
void scale_params(Params<T>& p, double scale) {
  for_each_param_slot(p.cfg, &p, [&](const ParamKey& key, Tensor<T>* t, const ParamDims&) {
    if (key.init == Init::Normal)
      for (auto& x : t->data) x = static_cast<T>(x * scale);
  });
}

template <class T, class U>
Params<U> cast_params(const Params<T>& p) {
  Params<U> out = make_params<U>(p.cfg);
  auto src = named_params(p);
  auto dst = named_params(out);
  for (std::size_t i = 0; i < src.size(); ++i) *dst[i].second = src[i].second->template cast<U>();
  return out;
}

std::size_t param_count(const Config& cfg);

}  // namespace cs
