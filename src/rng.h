// Rng: a portable random generator (splitmix64 + Box-Muller), so native and WASM builds draw
// identical numbers; std::normal_distribution differs between libstdc++ and libc++.
#pragma once
#include <cmath>
#include <cstdint>

namespace cs {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : state_(seed) {}
  // The whole state, for a training checkpoint: a generator set to it draws what this one would.
  std::uint64_t state() const { return state_; }
  void set_state(std::uint64_t s) { state_ = s; }
  std::uint64_t next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [0, n), n >= 1 (multiply-shift; bias < 2^-32 for the n used here).
  int below(int n) { return static_cast<int>((next_u64() >> 32) * static_cast<std::uint64_t>(n) >> 32); }
  // Standard normal by Box-Muller (one value per call; the pair's second value is dropped
  // so that the stream position never depends on call history).
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // n standard normals into out, in pairs by Marsaglia's polar method (a point drawn uniformly in
  // the unit disc, x and y scaled by sqrt(-2 ln s / s) with s = x^2 + y^2; an odd n drops the last
  // y): one logarithm and no sine or cosine per pair, for bulk draws such as the composition
  // scores' random matrices (Box-Muller's sin and cos were most of their time in WebAssembly).
  // Not the same numbers as n normal() calls; a split at an even count draws the same as one call.
  void normals(double* out, std::size_t n) {
    for (std::size_t i = 0; i < n; i += 2) {
      double x, y, s;
      do {
        x = 2.0 * uniform() - 1.0;
        y = 2.0 * uniform() - 1.0;
        s = x * x + y * y;
      } while (s >= 1.0 || s == 0.0);
      const double f = std::sqrt(-2.0 * std::log(s) / s);
      out[i] = x * f;
      if (i + 1 < n) out[i + 1] = y * f;
    }
  }

 private:
  std::uint64_t state_;
};

}  // namespace cs
