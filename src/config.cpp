// Config: names, validation and JSON form of the architecture.
#include "config.h"

#include "checks.h"

#include <cmath>
#include <set>
#include <stdexcept>

namespace cs {

std::string pos_embed_name(PosEmbed p) {
  switch (p) {
    case PosEmbed::None: return "none";
    case PosEmbed::Standard: return "standard";
    case PosEmbed::Shortformer: return "shortformer";
  }
  return "none";
}

PosEmbed pos_embed_from_name(const std::string& s) {
  if (s == "none") return PosEmbed::None;
  if (s == "standard") return PosEmbed::Standard;
  if (s == "shortformer") return PosEmbed::Shortformer;
  throw std::invalid_argument("config: pos_embed must be \"none\", \"standard\" or \"shortformer\", not \"" + printable_text(s) + "\"");
}

std::string norm_name(Norm n) {
  switch (n) {
    case Norm::None: return "none";
    case Norm::LN: return "LN";
    case Norm::LNPre: return "LNPre";
  }
  return "none";
}

Norm norm_from_name(const std::string& s) {
  if (s == "none" || s == "None") return Norm::None;
  if (s == "LN") return Norm::LN;
  if (s == "LNPre") return Norm::LNPre;
  if (s == "RMS" || s == "RMSPre")
    throw std::invalid_argument("config: normalization_type \"" + s +
                                "\" (RMSNorm) is not one circuitscope runs; it runs \"none\", \"LN\" and \"LNPre\"");
  throw std::invalid_argument("config: normalization_type must be \"none\", \"LN\" or \"LNPre\", not \"" +
                              printable_text(s) + "\"");
}

std::string act_name(Act a) {
  switch (a) {
    case Act::GELU: return "gelu";
    case Act::GELUNew: return "gelu_new";
    case Act::ReLU: return "relu";
  }
  return "gelu";
}

Act act_from_name(const std::string& s) {
  if (s == "gelu") return Act::GELU;
  if (s == "gelu_new") return Act::GELUNew;
  if (s == "relu") return Act::ReLU;
  if (s == "solu_ln")
    throw std::invalid_argument("config: act_fn \"solu_ln\" (SoLU with its own LayerNorm) is not one circuitscope runs; "
                                "it runs \"gelu\" (exact), \"gelu_new\" (tanh form) and \"relu\"");
  throw std::invalid_argument("config: act_fn must be \"gelu\", \"gelu_new\" or \"relu\", not \"" + printable_text(s) + "\"");
}

void Config::validate() const {
  auto check = [](bool ok, const std::string& msg) {
    if (!ok) throw std::invalid_argument("config: " + msg);
  };
  auto range = [&](int v, const char* name, int lo, int hi) {
    check(v >= lo && v <= hi, std::string(name) + " must be between " + std::to_string(lo) + " and " +
                                  std::to_string(hi) + ", got " + std::to_string(v));
  };
  range(n_layers, "n_layers", 0, kMaxLayers);
  range(n_heads, "n_heads", 1, kMaxHeads);
  range(d_model, "d_model", 1, kMaxDModel);
  range(d_head, "d_head", 1, kMaxDHead);
  range(n_ctx, "n_ctx", 1, kMaxCtx);
  range(d_vocab, "d_vocab", 1, kMaxVocab);
  range(d_mlp, "d_mlp", 0, kMaxMlp);
  check(std::isfinite(init_std) && init_std >= 0, "init_std must be a finite number, not negative (0: TransformerLens's default)");
  check(n_layers * n_heads <= kMaxTotalHeads,
        std::to_string(n_layers) + " layers of " + std::to_string(n_heads) + " heads make " +
            std::to_string(n_layers * n_heads) + " heads; circuitscope handles at most " +
            std::to_string(kMaxTotalHeads) + " (every per-head analysis grows with their number)");
  // A forward pass's activations are checked against its own length (forward(), model.h), not
  // here: the context may be longer than any one request.
}

float Config::effective_init_std() const {
  return init_std > 0 ? init_std : 0.8f / std::sqrt(static_cast<float>(d_model));
}

bool Config::operator==(const Config& o) const {
  return n_layers == o.n_layers && n_heads == o.n_heads && d_model == o.d_model && d_head == o.d_head &&
         n_ctx == o.n_ctx && d_vocab == o.d_vocab && pos_embed == o.pos_embed && smeared_keys == o.smeared_keys &&
         use_bias == o.use_bias && normalization == o.normalization && d_mlp == o.d_mlp &&
         (d_mlp == 0 || act_fn == o.act_fn);
}

nlohmann::json config_to_json(const Config& c) {
  nlohmann::json j{{"n_layers", c.n_layers},       {"n_heads", c.n_heads},
                   {"d_model", c.d_model},         {"d_head", c.d_head},
                   {"n_ctx", c.n_ctx},             {"d_vocab", c.d_vocab},
                   {"pos_embed", pos_embed_name(c.pos_embed)},
                   {"smeared_keys", c.smeared_keys}, {"use_bias", c.use_bias},
                   {"init_std", c.effective_init_std()}};
  // Written only when they differ from an attention-only model's, so the files of attention-only
  // models keep the config they always had.
  if (c.normalization != Norm::None) j["normalization_type"] = norm_name(c.normalization);
  if (c.d_mlp > 0) {
    j["d_mlp"] = c.d_mlp;
    j["act_fn"] = act_name(c.act_fn);
  }
  return j;
}

Config config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("config: expected a JSON object");
  static const std::set<std::string> known = {"n_layers", "n_heads", "d_model", "d_head", "n_ctx",
                                              "d_vocab", "pos_embed", "smeared_keys", "use_bias", "init_std",
                                              "normalization_type", "d_mlp", "act_fn"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key()))
      throw std::invalid_argument("config: unknown field \"" + printable_text(it.key()) + "\"");
  Config c;
  c.n_layers = json_int_or(j, "n_layers", c.n_layers, 0, kMaxLayers, "config: ");
  c.n_heads = json_int_or(j, "n_heads", c.n_heads, 1, kMaxHeads, "config: ");
  c.d_model = json_int_or(j, "d_model", c.d_model, 1, kMaxDModel, "config: ");
  c.d_head = json_int_or(j, "d_head", c.d_head, 1, kMaxDHead, "config: ");
  c.n_ctx = json_int_or(j, "n_ctx", c.n_ctx, 1, kMaxCtx, "config: ");
  c.d_vocab = json_int_or(j, "d_vocab", c.d_vocab, 1, kMaxVocab, "config: ");
  c.smeared_keys = json_bool_or(j, "smeared_keys", c.smeared_keys, "config: ");
  c.use_bias = json_bool_or(j, "use_bias", c.use_bias, "config: ");
  c.d_mlp = json_int_or(j, "d_mlp", c.d_mlp, 0, kMaxMlp, "config: ");
  if (j.contains("normalization_type"))
    c.normalization = norm_from_name(json_to_string(j["normalization_type"], "config: normalization_type"));
  if (j.contains("act_fn")) c.act_fn = act_from_name(json_to_string(j["act_fn"], "config: act_fn"));
  if (j.contains("pos_embed")) c.pos_embed = pos_embed_from_name(json_to_string(j["pos_embed"], "config: pos_embed"));
  // Given, it is the weights' standard deviation: positive, within float's range (a larger one
  // would make every weight Inf). Left out, it is TransformerLens's default (init_std 0 inside).
  if (j.contains("init_std")) {
    const double v = json_to_number(j["init_std"], "config: init_std", -1e30, 1e30);
    if (!(v > 0))
      throw std::invalid_argument("config: init_std must be a positive number (the initial weights' standard deviation); "
                                  "leave it out for TransformerLens's default, 0.8 / sqrt(d_model)");
    c.init_std = static_cast<float>(v);
  }
  c.validate();
  return c;
}

double forward_bytes(const Config& c, double batch, double len, double logit_rows, bool scores, bool results) {
  const double L = c.n_layers, H = c.n_heads, D = c.d_model, Dh = c.d_head, V = c.d_vocab;
  const double norm = c.normalization != Norm::None ? 1 : 0, M = c.d_mlp, mlp = M > 0 ? 1 : 0;
  const double per_layer = 3 * len * D                              // resid_pre, attn_out, resid_post
                           + (c.smeared_keys ? 5 : 4) * H * len * Dh  // q, k, v, z (k_unsmeared)
                           + (scores ? 2 * H : H) * len * len       // the pattern (and the scores)
                           + (results ? H * len * D : 0)            // each head's result
                           + norm * len * (D + 1)                   // ln1's output and scale
                           + mlp * len * (2 * D + 2 * M + norm * (D + 1));  // resid_mid, mlp_out, pre, post, ln2
  const double outside = 3 * len * D + (logit_rows < 0 ? len : logit_rows) * V  // embed, pos, final residual; logits
                         + norm * len * (D + 1);                    // ln_final's output and scale
  const double scratch = scores ? 0 : len * len;  // one head's scores at a time
  return 4.0 * batch * (L * per_layer + outside + scratch);
}

}  // namespace cs
