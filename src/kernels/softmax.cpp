// See softmax.h. The same polynomial runs 4-wide with the compiler's vector extension (SIMD128 in
// WebAssembly, SSE natively) and one lane at a time for the tail, so every element gets exactly
// the same result whatever its position.
#include "kernels/softmax.h"
#include "kernels/softmax_consts.h"
#include "kernels/softmax_x86.h"
#include "kernels/vec4.h"

#include <algorithm>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace cs::kernels {

namespace {

using namespace expc;

float exp_one(float x) {
  if (!(x >= kMin)) return x != x ? x : 0.0f;  // NaN stays NaN
  if (x > kMax) x = kMax;
  const float t = x * kLog2e + kMagic;
  const float fx = t - kMagic;  // round(x / ln 2)
  const float r = (x - fx * kLn2Hi) - fx * kLn2Lo;
  float y = ((((P0 * r + P1) * r + P2) * r + P3) * r + P4) * r + P5;
  y = y * (r * r) + r + 1.0f;
  std::int32_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  bits = static_cast<std::int32_t>((static_cast<std::uint32_t>(bits) + static_cast<std::uint32_t>(kScaleBias)) << 23);
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

}  // namespace

#if CS_KERNELS_VECTOR
namespace {
using namespace vec;

// exp of four lanes, the same operations as exp_one in the same order.
inline v4f exp4(v4f x) {
  const v4i below = x < splat(kMin);  // false for NaN lanes, which stay NaN through the polynomial
  x = x > splat(kMax) ? splat(kMax) : x;
  const v4f t = madd(x, splat(kLog2e), splat(kMagic));
  const v4f fx = t - splat(kMagic);
  const v4f r = nmadd(fx, splat(kLn2Lo), nmadd(fx, splat(kLn2Hi), x));
  v4f y = madd(madd(madd(madd(madd(splat(P0), r, splat(P1)), r, splat(P2)), r, splat(P3)), r, splat(P4)), r, splat(P5));
  y = madd(y, r * r, r) + splat(1.0f);
  v4u bits;
  std::memcpy(&bits, &t, sizeof bits);
  bits = (bits + static_cast<std::uint32_t>(kScaleBias)) << 23;
  v4f scale;
  std::memcpy(&scale, &bits, sizeof scale);
  const v4f out = y * scale;
  return below ? splat(0.0f) : out;
}
}  // namespace

namespace {
// The 4-wide loop from j on, given the four accumulators so far, then the tail one lane at a time.
float exp_shifted_from(const float* x, float shift, float* out, int n, int j, v4f acc) {
  const v4f sh = splat(shift);
  // Four independent exponentials per iteration: one alone is a chain of about 25 dependent
  // operations, which left the vector units idle most of the time. The sums are added in the
  // same order as one at a time, so the result has the same bits.
  for (; j + 16 <= n; j += 16) {
    const v4f v0 = exp4(load4(x + j) - sh), v1 = exp4(load4(x + j + 4) - sh);
    const v4f v2 = exp4(load4(x + j + 8) - sh), v3 = exp4(load4(x + j + 12) - sh);
    store4(out + j, v0), store4(out + j + 4, v1), store4(out + j + 8, v2), store4(out + j + 12, v3);
    acc += v0;
    acc += v1;
    acc += v2;
    acc += v3;
  }
  for (; j + 4 <= n; j += 4) {
    v4f v;
    std::memcpy(&v, x + j, sizeof v);
    v = exp4(v - sh);
    std::memcpy(out + j, &v, sizeof v);
    acc += v;
  }
  float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; j < n; ++j) sum += (out[j] = exp_one(x[j] - shift));
  return sum;
}
}  // namespace

float exp_shifted_sum_portable(const float* x, float shift, float* out, int n) {
  return exp_shifted_from(x, shift, out, n, 0, splat(0.0f));
}

float exp_shifted_sum(const float* x, float shift, float* out, int n) {
#if CS_SOFTMAX_X86
  // The same values and sums at the CPU's width (softmax_x86.cpp).
  static const x86::WideExp wide = x86::pick_wide_exp();
  if (wide && n >= 4) {
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int n4 = n & ~3;
    wide(x, shift, out, n4, a);
    return exp_shifted_from(x, shift, out, n, n4, load4(a));
  }
#endif
  return exp_shifted_from(x, shift, out, n, 0, splat(0.0f));
}

float max_of(const float* x, int n) {
  v4f m0 = splat(-std::numeric_limits<float>::infinity()), m1 = m0;
  int j = 0;
  for (; j + 8 <= n; j += 8) {  // two chains, so a compare does not wait for the one before
    const v4f a = load4(x + j), b = load4(x + j + 4);
    m0 = a > m0 ? a : m0;
    m1 = b > m1 ? b : m1;
  }
  m0 = m1 > m0 ? m1 : m0;
  float mx = std::max(std::max(m0[0], m0[1]), std::max(m0[2], m0[3]));
  for (; j < n; ++j) mx = std::max(mx, x[j]);
  return mx;
}

void softmax_row(const float* s, float* p, int n, int width) {
  const float mx = max_of(s, n);
  const v4f inv = splat(1.0f / exp_shifted_sum(s, mx, p, n));
  int j = 0;
  for (; j + 4 <= n; j += 4) store4(p + j, load4(p + j) * inv);
  for (; j < n; ++j) p[j] *= inv[0];
  std::fill(p + n, p + width, 0.0f);
}

void softmax_grad_row(const float* p, const float* dp, float* ds, int n, int width) {
  v4f dot4 = splat(0.0f);
  int j = 0;
  for (; j + 4 <= n; j += 4) dot4 += load4(p + j) * load4(dp + j);
  float dot = (dot4[0] + dot4[1]) + (dot4[2] + dot4[3]);
  for (; j < n; ++j) dot += p[j] * dp[j];
  const v4f d = splat(dot);
  for (j = 0; j + 4 <= n; j += 4) store4(ds + j, load4(p + j) * (load4(dp + j) - d));
  for (; j < n; ++j) ds[j] = p[j] * (dp[j] - dot);
  std::fill(ds + n, ds + width, 0.0f);
}
#else
float exp_shifted_sum(const float* x, float shift, float* out, int n) {
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += (out[j] = exp_one(x[j] - shift));
  return sum;
}
float exp_shifted_sum_portable(const float* x, float shift, float* out, int n) { return exp_shifted_sum(x, shift, out, n); }

float max_of(const float* x, int n) { return *std::max_element(x, x + n); }

void softmax_row(const float* s, float* p, int n, int width) {
  const float mx = max_of(s, n);
  const float inv = 1.0f / exp_shifted_sum(s, mx, p, n);
  for (int j = 0; j < n; ++j) p[j] *= inv;
  std::fill(p + n, p + width, 0.0f);
}

void softmax_grad_row(const float* p, const float* dp, float* ds, int n, int width) {
  float dot = 0.0f;
  for (int j = 0; j < n; ++j) dot += p[j] * dp[j];
  for (int j = 0; j < n; ++j) ds[j] = p[j] * (dp[j] - dot);
  std::fill(ds + n, ds + width, 0.0f);
}
#endif

}  // namespace cs::kernels
