// Params: allocation, expected shapes and seeded initialisation.
#include "params.h"

#include <stdexcept>

namespace cs {

template <class T>
Params<T> make_params(const Config& c) {
  c.validate();
  Params<T> p;
  p.cfg = c;
  const int H = c.n_heads, D = c.d_model, Dh = c.d_head, V = c.d_vocab;
  p.W_E.resize({V, D});
  if (c.pos_embed != PosEmbed::None) p.W_pos.resize({c.n_ctx, D});
  p.blocks.resize(c.n_layers);
  for (auto& b : p.blocks) {
    b.W_Q.resize({H, D, Dh});
    b.W_K.resize({H, D, Dh});
    b.W_V.resize({H, D, Dh});
    b.W_O.resize({H, Dh, D});
    if (c.use_bias) {
      b.b_Q.resize({H, Dh});
      b.b_K.resize({H, Dh});
      b.b_V.resize({H, Dh});
      b.b_O.resize({D});
    }
    if (c.smeared_keys) b.smear_alpha.resize({H});
  }
  p.W_U.resize({D, V});
  if (c.use_bias) p.b_U.resize({V});
  return p;
}

Shape expected_shape(const Config& c, const std::string& name) {
  Params<float> p = make_params<float>(c);
  Shape found;
  bool ok = false;
  for_each_param(p, [&](const std::string& n, Tensor<float>& t) {
    if (n == name) {
      found = t.shape;
      ok = true;
    }
  });
  if (!ok) throw std::invalid_argument("no tensor named " + name + " in this architecture");
  return found;
}

std::size_t param_count(const Config& c) {
  Params<float> p = make_params<float>(c);
  std::size_t n = 0;
  for_each_param(p, [&](const std::string&, Tensor<float>& t) { n += t.size(); });
  return n;
}

template <class T>
Params<T> init_params(const Config& c, std::uint64_t seed) {
  Params<T> p = make_params<T>(c);
  Rng rng(seed);
  const double sd = c.effective_init_std();
  for_each_param(p, [&](const std::string& name, Tensor<T>& t) {
    bool is_bias = name.find(".b_") != std::string::npos || name.find("smear_alpha") != std::string::npos;
    if (is_bias) return;  // zeros
    for (auto& x : t.data) x = static_cast<T>(static_cast<float>(sd * rng.normal()));
  });
  return p;
}

template Params<float> make_params<float>(const Config&);
template Params<double> make_params<double>(const Config&);
template Params<float> init_params<float>(const Config&, std::uint64_t);
template Params<double> init_params<double>(const Config&, std::uint64_t);

}  // namespace cs
