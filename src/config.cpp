// Config: names, validation and JSON form of the architecture.
#include "config.h"

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
  throw std::invalid_argument("config: pos_embed must be \"none\", \"standard\" or \"shortformer\", not \"" + s + "\"");
}

void Config::validate() const {
  auto check = [](bool ok, const std::string& msg) {
    if (!ok) throw std::invalid_argument("config: " + msg);
  };
  check(n_layers >= 0 && n_layers <= 64, "n_layers must be between 0 and 64, got " + std::to_string(n_layers));
  check(n_heads >= 1 && n_heads <= 64, "n_heads must be between 1 and 64, got " + std::to_string(n_heads));
  check(d_model >= 1 && d_model <= 4096, "d_model must be between 1 and 4096, got " + std::to_string(d_model));
  check(d_head >= 1 && d_head <= 1024, "d_head must be between 1 and 1024, got " + std::to_string(d_head));
  check(n_ctx >= 1 && n_ctx <= 8192, "n_ctx must be between 1 and 8192, got " + std::to_string(n_ctx));
  check(d_vocab >= 1 && d_vocab <= 1000000, "d_vocab must be between 1 and 1000000, got " + std::to_string(d_vocab));
  check(std::isfinite(init_std), "init_std must be a finite number");
}

float Config::effective_init_std() const {
  return init_std > 0 ? init_std : 0.8f / std::sqrt(static_cast<float>(d_model));
}

bool Config::operator==(const Config& o) const {
  return n_layers == o.n_layers && n_heads == o.n_heads && d_model == o.d_model && d_head == o.d_head &&
         n_ctx == o.n_ctx && d_vocab == o.d_vocab && pos_embed == o.pos_embed && smeared_keys == o.smeared_keys &&
         use_bias == o.use_bias;
}

nlohmann::json config_to_json(const Config& c) {
  return nlohmann::json{{"n_layers", c.n_layers},       {"n_heads", c.n_heads},
                        {"d_model", c.d_model},         {"d_head", c.d_head},
                        {"n_ctx", c.n_ctx},             {"d_vocab", c.d_vocab},
                        {"pos_embed", pos_embed_name(c.pos_embed)},
                        {"smeared_keys", c.smeared_keys}, {"use_bias", c.use_bias},
                        {"init_std", c.effective_init_std()}};
}

Config config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("config: expected a JSON object");
  static const std::set<std::string> known = {"n_layers", "n_heads", "d_model", "d_head", "n_ctx",
                                              "d_vocab", "pos_embed", "smeared_keys", "use_bias", "init_std"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) throw std::invalid_argument("config: unknown field \"" + it.key() + "\"");
  Config c;
  auto get_int = [&](const char* k, int& out) {
    if (!j.contains(k)) return;
    if (!j[k].is_number_integer()) throw std::invalid_argument(std::string("config: ") + k + " must be an integer");
    out = j[k].get<int>();
  };
  auto get_bool = [&](const char* k, bool& out) {
    if (!j.contains(k)) return;
    if (!j[k].is_boolean()) throw std::invalid_argument(std::string("config: ") + k + " must be true or false");
    out = j[k].get<bool>();
  };
  get_int("n_layers", c.n_layers);
  get_int("n_heads", c.n_heads);
  get_int("d_model", c.d_model);
  get_int("d_head", c.d_head);
  get_int("n_ctx", c.n_ctx);
  get_int("d_vocab", c.d_vocab);
  get_bool("smeared_keys", c.smeared_keys);
  get_bool("use_bias", c.use_bias);
  if (j.contains("pos_embed")) {
    if (!j["pos_embed"].is_string()) throw std::invalid_argument("config: pos_embed must be a string");
    c.pos_embed = pos_embed_from_name(j["pos_embed"].get<std::string>());
  }
  if (j.contains("init_std")) {
    if (!j["init_std"].is_number()) throw std::invalid_argument("config: init_std must be a number");
    c.init_std = j["init_std"].get<float>();
  }
  c.validate();
  return c;
}

}  // namespace cs
