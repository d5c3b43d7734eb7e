// Params: allocation, expected shapes and seeded initialisation.
#include "params.h"

#include <stdexcept>

namespace cs {

template <class T>
Params<T> make_params(const Config& c, bool zeroed) {
  check_size(c);
  Params<T> p;
  p.cfg = c;
  p.blocks.resize(c.n_layers);
  for_each_param_slot(c, &p, [zeroed](const ParamKey&, Tensor<T>* t, const ParamDims& d) {
    if (zeroed) {
      t->resize(d.shape());
    } else {
      t->shape = d.shape();
      t->data.reserve(shape_numel(t->shape));
    }
  });
  return p;
}

Shape expected_shape(const Config& c, const std::string& name) {
  check_size(c);
  Shape found;
  bool ok = false;
  for_each_param_slot(c, static_cast<const Params<float>*>(nullptr), [&](const ParamKey& key, const Tensor<float>*, const ParamDims& d) {
    if (!ok && key.name() == name) {
      found = d.shape();
      ok = true;
    }
  });
  if (!ok) throw std::invalid_argument("no tensor named " + name + " in this architecture");
  return found;
}

std::uint64_t count_weights(const Config& c) {
  std::uint64_t n = 0;
  for_each_param_slot(c, static_cast<const Params<float>*>(nullptr),
                      [&](const ParamKey&, const Tensor<float>*, const ParamDims& d) { n += d.count(); });
  return n;
}

void check_size(const Config& c, const SizeLimit& limit) {
  c.validate();
  // Every dimension is within its limit here (below 2^20), so the count cannot overflow.
  const std::uint64_t weights = count_weights(c);
  if (weights > limit.weights)
    throw std::invalid_argument(std::string(limit.who) + ": this architecture has " + std::to_string(weights) + " weights; circuitscope " +
                                limit.verb + " at most " + std::to_string(limit.weights) + " (" +
                                std::to_string(limit.weights * limit.bytes_per_weight >> 20) + " MB: " + limit.what + ")");
}

std::size_t param_count(const Config& c) {
  check_size(c);
  return static_cast<std::size_t>(count_weights(c));
}

template <class T>
Params<T> init_params(const Config& c, std::uint64_t seed) {
  Params<T> p = make_params<T>(c);
  Rng rng(seed);
  const double sd = c.effective_init_std();
  for_each_param_slot(c, &p, [&](const ParamKey& key, Tensor<T>* t, const ParamDims&) {
    if (key.init == Init::One) t->fill(T(1));
    if (key.init != Init::Normal) return;  // zeros (or ones, above)
    for (auto& x : t->data) x = static_cast<T>(static_cast<float>(sd * rng.normal()));
  });
  return p;
}

template Params<float> make_params<float>(const Config&, bool);
template Params<double> make_params<double>(const Config&, bool);
template Params<float> init_params<float>(const Config&, std::uint64_t);
template Params<double> init_params<double>(const Config&, std::uint64_t);

}  // namespace cs
