// Params: the weights of an attention-only transformer. The same type holds parameters,
// gradients and AdamW's moments; named_params() is the one place that defines which tensors
// exist, their names (TransformerLens file keys) and their order.
#pragma once
#include <string>
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
};

template <class T>
struct Params {
  Config cfg;
  Tensor<T> W_E;    // [V, D]
  Tensor<T> W_pos;  // [n_ctx, D]  (pos_embed != none)
  std::vector<LayerParams<T>> blocks;
  Tensor<T> W_U;    // [D, V]
  Tensor<T> b_U;    // [V]       (use_bias)
};

// Every tensor the config calls for, allocated and zeroed.
template <class T>
Params<T> make_params(const Config& cfg);

// Visits (name, tensor) for every tensor present, in file order.
template <class P, class F>
void for_each_param(P& p, F&& fn) {
  const Config& c = p.cfg;
  fn(std::string("embed.W_E"), p.W_E);
  if (c.pos_embed != PosEmbed::None) fn(std::string("pos_embed.W_pos"), p.W_pos);
  for (int l = 0; l < c.n_layers; ++l) {
    auto& b = p.blocks[l];
    const std::string pre = "blocks." + std::to_string(l) + ".attn.";
    fn(pre + "W_Q", b.W_Q);
    fn(pre + "W_K", b.W_K);
    fn(pre + "W_V", b.W_V);
    fn(pre + "W_O", b.W_O);
    if (c.use_bias) {
      fn(pre + "b_Q", b.b_Q);
      fn(pre + "b_K", b.b_K);
      fn(pre + "b_V", b.b_V);
      fn(pre + "b_O", b.b_O);
    }
    if (c.smeared_keys) fn(pre + "smear_alpha", b.smear_alpha);
  }
  fn(std::string("unembed.W_U"), p.W_U);
  if (c.use_bias) fn(std::string("unembed.b_U"), p.b_U);
}

// Visits every tensor present, in file order, without building names (so without allocating):
// for the training step's per-step loops.
template <class P, class F>
void for_each_tensor(P& p, F&& fn) {
  const Config& c = p.cfg;
  fn(p.W_E);
  if (c.pos_embed != PosEmbed::None) fn(p.W_pos);
  for (int l = 0; l < c.n_layers; ++l) {
    auto& b = p.blocks[l];
    fn(b.W_Q);
    fn(b.W_K);
    fn(b.W_V);
    fn(b.W_O);
    if (c.use_bias) {
      fn(b.b_Q);
      fn(b.b_K);
      fn(b.b_V);
      fn(b.b_O);
    }
    if (c.smeared_keys) fn(b.smear_alpha);
  }
  fn(p.W_U);
  if (c.use_bias) fn(p.b_U);
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

// Random initialisation: weights ~ N(0, init_std^2) from the portable Rng, biases zero,
// smear_alpha zero (s = 0.5). Deterministic in (cfg, seed) on every build.
template <class T>
Params<T> init_params(const Config& cfg, std::uint64_t seed);

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
