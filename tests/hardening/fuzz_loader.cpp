// libFuzzer target for the model loader: any bytes either load (and then a short forward pass
// runs and is checked for non-finite values) or throw a std::exception with a sentence; anything
// else (a crash, a sanitizer report, an escaped non-std exception, a leak) is a finding.
// Built by -DCS_FUZZ=ON with clang; run by tests/hardening/fuzz-loader.sh.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "checks.h"
#include "io.h"
#include "model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    cs::ModelFile m = cs::load_model_bytes(data, size);
    const int T = m.cfg.n_ctx < 4 ? m.cfg.n_ctx : 4;
    std::vector<int> ids(static_cast<std::size_t>(T));
    for (int t = 0; t < T; ++t) ids[static_cast<std::size_t>(t)] = t % m.cfg.d_vocab;
    cs::ActivationCache<float> cache;
    cs::forward(m.params, ids, 1, T, cache);
    cs::check_finite(cache);
  } catch (const std::exception&) {
  }
  return 0;
}
