// Shared helpers for the core's GoogleTest suites: tiny configs, random weights and batches.
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.h"
#include "model.h"
#include "params.h"
#include "rng.h"

namespace cs::testing {

inline Config tiny_config(int n_layers, PosEmbed pos, bool smear, bool bias) {
  Config c;
  c.n_layers = n_layers;
  c.n_heads = 2;
  c.d_model = 6;
  c.d_head = 3;
  c.n_ctx = 6;
  c.d_vocab = 7;
  c.pos_embed = pos;
  c.smeared_keys = smear;
  c.use_bias = bias;
  c.init_std = 0.6f;
  return c;
}

inline std::string config_name(const Config& c) {
  return std::to_string(c.n_layers) + "L_" + pos_embed_name(c.pos_embed) + (c.smeared_keys ? "_smear" : "") +
         (c.use_bias ? "_bias" : "") + (c.normalization != Norm::None ? "_" + norm_name(c.normalization) : "") +
         (c.d_mlp ? "_mlp" + std::to_string(c.d_mlp) + "_" + act_name(c.act_fn) : "");
}

// Every tensor random (biases and smear alphas too, so their gradients are exercised; LayerNorm
// weights around 1).
template <class T>
Params<T> random_params(const Config& c, std::uint64_t seed) {
  Params<T> p = init_params<T>(c, seed);
  Rng rng(seed * 7919 + 13);
  for_each_param_slot(c, &p, [&](const ParamKey& key, Tensor<T>* t, const ParamDims&) {
    if (key.init == Init::Zero)
      for (auto& x : t->data) x = static_cast<T>(static_cast<float>(0.5 * rng.normal()));
    if (key.init == Init::One)
      for (auto& x : t->data) x = static_cast<T>(static_cast<float>(1 + 0.3 * rng.normal()));
  });
  return p;
}

// The TransformerLens-family options: LN or LNPre, with or without an MLP of each activation,
// each kind of positions, biases on; tiny, like tiny_config.
inline Config tiny_norm_mlp_config(int n_layers, PosEmbed pos, Norm norm, int d_mlp, Act act, bool smear = false) {
  Config c = tiny_config(n_layers, pos, smear, true);
  c.normalization = norm;
  c.d_mlp = d_mlp;
  c.act_fn = act;
  return c;
}

inline std::vector<Config> norm_mlp_configs() {
  std::vector<Config> out;
  for (int layers : {0, 1, 2})
    for (Norm norm : {Norm::None, Norm::LN, Norm::LNPre})
      for (int mlp : {0, 5}) {
        if (norm == Norm::None && mlp == 0) continue;  // all_option_configs() has these
        if (layers == 0 && mlp) continue;              // no blocks, no MLP
        for (PosEmbed pos : {PosEmbed::Standard, PosEmbed::Shortformer})
          out.push_back(tiny_norm_mlp_config(layers, pos, norm, mlp, Act::GELU));
      }
  for (Act act : {Act::GELUNew, Act::ReLU}) out.push_back(tiny_norm_mlp_config(1, PosEmbed::Standard, Norm::LN, 5, act));
  out.push_back(tiny_norm_mlp_config(2, PosEmbed::Shortformer, Norm::LN, 5, Act::GELU, true));
  return out;
}

inline Batch random_batch(const Config& c, int B, int T, std::uint64_t seed, bool random_mask) {
  Rng rng(seed);
  Batch b;
  b.B = B;
  b.T = T;
  for (int i = 0; i < B * T; ++i) {
    b.tokens.push_back(rng.below(c.d_vocab));
    b.targets.push_back(rng.below(c.d_vocab));
    b.mask.push_back(random_mask ? static_cast<float>(rng.below(2)) : 1.0f);
  }
  if (random_mask) b.mask[0] = 1.0f;
  return b;
}

inline std::vector<Config> all_option_configs() {
  std::vector<Config> out;
  for (int layers : {0, 1, 2})
    for (PosEmbed pos : {PosEmbed::None, PosEmbed::Standard, PosEmbed::Shortformer})
      for (bool smear : {false, true})
        for (bool bias : {false, true}) {
          if (layers == 0 && smear) continue;  // no attention, nothing to smear
          out.push_back(tiny_config(layers, pos, smear, bias));
        }
  return out;
}

// Runs fn, expects a std::invalid_argument, and returns its message.
template <class F>
std::string invalid_argument_message(F&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected std::invalid_argument, got another exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument, nothing was thrown";
  return "";
}

inline bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

}  // namespace cs::testing
