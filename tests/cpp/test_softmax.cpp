// The softmax row kernels (src/kernels/softmax.h) against double precision: the vector
// exponential's relative error over the whole range the softmaxes use, its edge cases, and the
// softmax row and its gradient on rows of every length (vector body and scalar tail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/softmax.h"
#include "rng.h"

namespace cs {
namespace {

TEST(Softmax, ExponentialIsAccurateOverItsRange) {
  // Every argument the softmaxes can pass: x - max <= 0, down to where exp underflows.
  const int n = 200003;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = -100.0f * static_cast<float>(i) / (n - 1);
  const float sum = kernels::exp_shifted_sum(x.data(), 0.0f, y.data(), n);
  double worst = 0, total = 0;
  for (int i = 0; i < n; ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    total += y[i];
    if (want < 1.2e-38) {  // below the smallest normal float: 0 (or that normal) is right
      EXPECT_LE(y[i], 1.2e-38f) << "exp(" << x[i] << ")";
      continue;
    }
    worst = std::max(worst, std::abs(y[i] - want) / want);
  }
  EXPECT_LT(worst, 3e-7) << "largest relative error of exp";
  EXPECT_NEAR(sum, total, 1e-4 * total);
  // Shifting is subtracting: exp(x - s).
  float a[5] = {3.0f, 2.0f, 1.0f, 0.0f, -1.0f}, b[5];
  kernels::exp_shifted_sum(a, 3.0f, b, 5);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(b[i], std::exp(a[i] - 3.0), 3e-7 * std::exp(a[i] - 3.0));
}

// Natively on an AVX2 or AVX-512 CPU, exp_shifted_sum runs 8 or 16 lanes at a time; it must give
// the 4-wide loop's bits in every value and in the sum (so the native page-equal arithmetic
// holds on any x86 CPU), for every length (full wide blocks, the 4-, 8-, 12-value rests and the
// scalar tail) and for the edge values.
TEST(Softmax, WideExponentialHasThePortableBits) {
  Rng rng(11);
  std::vector<float> x(1100), wide(1100), portable(1100);
  for (float& v : x) v = static_cast<float>(-30.0 * std::abs(rng.normal()));
  x[3] = -std::numeric_limits<float>::infinity(), x[17] = -90.0f, x[18] = -87.0f, x[40] = 0.0f;
  x[41] = std::numeric_limits<float>::quiet_NaN(), x[64] = 95.0f, x[65] = -1e-30f;
  int differ = 0;
  for (int n = 0; n <= 1100; n += (n < 70 ? 1 : 37)) {
    const float s1 = kernels::exp_shifted_sum(x.data(), 0.5f, wide.data(), n);
    const float s2 = kernels::exp_shifted_sum_portable(x.data(), 0.5f, portable.data(), n);
    if (std::memcmp(&s1, &s2, sizeof s1) != 0 && !(std::isnan(s1) && std::isnan(s2))) ++differ;
    for (int j = 0; j < n; ++j)
      if (std::memcmp(&wide[j], &portable[j], sizeof(float)) != 0 && !(std::isnan(wide[j]) && std::isnan(portable[j])))
        ADD_FAILURE() << "n=" << n << " exp(" << x[j] << " - 0.5): " << wide[j] << " vs " << portable[j];
  }
  EXPECT_EQ(differ, 0) << "sums that differ";
}

TEST(Softmax, ExponentialEdgeCases) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Eight values so that both the 4-wide body and the scalar tail see each case.
  float x[9] = {-inf, nan, 0.0f, -87.0f, -inf, nan, 0.0f, -1000.0f, nan}, y[9];
  kernels::exp_shifted_sum(x, 0.0f, y, 9);
  for (int i : {0, 4, 7}) EXPECT_EQ(y[i], 0.0f) << i;
  for (int i : {1, 5, 8}) EXPECT_TRUE(std::isnan(y[i])) << i;
  for (int i : {2, 6}) EXPECT_EQ(y[i], 1.0f) << i;
  EXPECT_NEAR(y[3], std::exp(-87.0), 1e-6 * std::exp(-87.0));
}

TEST(Softmax, RowsAndTheirGradientsMatchDoublePrecision) {
  Rng rng(3);
  const int width = 37;
  for (int n = 1; n <= width; ++n) {
    std::vector<float> s(width), p(width, -5.0f), dp(width), ds(width, -5.0f);
    for (int j = 0; j < width; ++j) s[j] = static_cast<float>(3 * rng.normal()), dp[j] = static_cast<float>(rng.normal());
    kernels::softmax_row(s.data(), p.data(), n, width);
    kernels::softmax_grad_row(p.data(), dp.data(), ds.data(), n, width);
    double mx = -1e300, z = 0;
    for (int j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(s[j]));
    for (int j = 0; j < n; ++j) z += std::exp(s[j] - mx);
    double dot = 0;
    for (int j = 0; j < n; ++j) dot += std::exp(s[j] - mx) / z * dp[j];
    for (int j = 0; j < width; ++j) {
      const double pj = j < n ? std::exp(s[j] - mx) / z : 0.0;
      const double dsj = j < n ? pj * (dp[j] - dot) : 0.0;
      EXPECT_NEAR(p[j], pj, 1e-6) << "n=" << n << " j=" << j;
      EXPECT_NEAR(ds[j], dsj, 1e-6) << "n=" << n << " j=" << j;
    }
  }
}

}  // namespace
}  // namespace cs
