// Config: the architecture of an attention-only transformer (TransformerLens names).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace cs {

enum class PosEmbed {
  None,         // no positional information at all
  Standard,     // learned absolute, added to the residual stream
  Shortformer,  // learned absolute, added only to the inputs of Q and K of every layer
};

std::string pos_embed_name(PosEmbed p);
PosEmbed pos_embed_from_name(const std::string& s);  // throws on an unknown name

struct Config {
  int n_layers = 2;
  int n_heads = 4;
  int d_model = 64;
  int d_head = 16;
  int n_ctx = 256;
  int d_vocab = 96;
  PosEmbed pos_embed = PosEmbed::Shortformer;
  bool smeared_keys = false;  // induction-heads paper, argument 2: k_j <- s k_j + (1-s) k_{j-1}
  bool use_bias = false;      // b_Q b_K b_V b_O b_U
  float init_std = 0.0f;      // <= 0 means 0.8 / sqrt(d_model), TransformerLens's default

  // Throws std::invalid_argument with a sentence naming the bad field.
  void validate() const;
  float effective_init_std() const;
  bool operator==(const Config& o) const;
  bool operator!=(const Config& o) const { return !(*this == o); }
};

nlohmann::json config_to_json(const Config& c);
// Reads every field it knows; missing fields keep their defaults; unknown fields are an error
// (a typo in a recipe should not be silently ignored). Validates the result.
Config config_from_json(const nlohmann::json& j);

}  // namespace cs
