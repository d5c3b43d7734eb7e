// The softmaxes' exponential at the machine's width (AVX-512F: 16 lanes, AVX2: 8), with exactly
// the operations of exp4 in softmax.cpp in the same order, none fused (this file is compiled with
// -ffp-contract=off), and the sum accumulated four lanes at a time in the order the 4-wide loop
// adds them: every output and every sum has the bits of the portable version, so picking these at
// run time changes speed, not results (tests/cpp/test_softmax.cpp checks it).
#include "kernels/softmax_x86.h"

#if CS_SOFTMAX_X86
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/cpu_x86.h"
#include "kernels/softmax_consts.h"

namespace cs::kernels::x86 {

namespace {

__attribute__((target("avx512f"))) inline __m512 exp16(__m512 x) {
  using namespace expc;
  const __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kMin), _CMP_LT_OQ);
  x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(kMax), _CMP_GT_OQ), x, _mm512_set1_ps(kMax));
  const __m512 t = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _mm512_set1_ps(kMagic));
  const __m512 fx = _mm512_sub_ps(t, _mm512_set1_ps(kMagic));
  const __m512 r = _mm512_sub_ps(_mm512_sub_ps(x, _mm512_mul_ps(fx, _mm512_set1_ps(kLn2Hi))), _mm512_mul_ps(fx, _mm512_set1_ps(kLn2Lo)));
  __m512 y = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(P0), r), _mm512_set1_ps(P1));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(P2));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(P3));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(P4));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(P5));
  y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(y, _mm512_mul_ps(r, r)), r), _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(kScaleBias)), 23);
  const __m512 out = _mm512_mul_ps(y, _mm512_castsi512_ps(bits));
  return _mm512_mask_blend_ps(below, out, _mm512_setzero_ps());
}

__attribute__((target("avx2"))) inline __m256 exp8(__m256 x) {
  using namespace expc;
  const __m256 below = _mm256_cmp_ps(x, _mm256_set1_ps(kMin), _CMP_LT_OQ);
  x = _mm256_blendv_ps(x, _mm256_set1_ps(kMax), _mm256_cmp_ps(x, _mm256_set1_ps(kMax), _CMP_GT_OQ));
  const __m256 t = _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _mm256_set1_ps(kMagic));
  const __m256 fx = _mm256_sub_ps(t, _mm256_set1_ps(kMagic));
  const __m256 r = _mm256_sub_ps(_mm256_sub_ps(x, _mm256_mul_ps(fx, _mm256_set1_ps(kLn2Hi))), _mm256_mul_ps(fx, _mm256_set1_ps(kLn2Lo)));
  __m256 y = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(P0), r), _mm256_set1_ps(P1));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(P2));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(P3));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(P4));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(P5));
  y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(y, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(kScaleBias)), 23);
  const __m256 out = _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
  return _mm256_blendv_ps(out, _mm256_setzero_ps(), below);
}

}  // namespace

// out[j] = exp(x[j] - shift) for j < n4 (a multiple of 4, the part the 4-wide loop covers);
// acc (4 floats) gets the sums of the portable loop's four accumulators.
__attribute__((target("avx512f"))) void exp_shifted_avx512(const float* x, float shift, float* out, int n4, float* acc4) {
  __m128 acc = _mm_loadu_ps(acc4);
  const __m512 sh = _mm512_set1_ps(shift);
  int j = 0;
  for (; j + 16 <= n4; j += 16) {
    const __m512 v = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), sh));
    _mm512_storeu_ps(out + j, v);
    acc = _mm_add_ps(acc, _mm512_extractf32x4_ps(v, 0));
    acc = _mm_add_ps(acc, _mm512_extractf32x4_ps(v, 1));
    acc = _mm_add_ps(acc, _mm512_extractf32x4_ps(v, 2));
    acc = _mm_add_ps(acc, _mm512_extractf32x4_ps(v, 3));
  }
  if (j < n4) {  // 4, 8 or 12 values left: one masked pass
    const __mmask16 m = static_cast<__mmask16>((1u << (n4 - j)) - 1);
    const __m512 v = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), sh));
    _mm512_mask_storeu_ps(out + j, m, v);
    for (int q = 0; q < (n4 - j) / 4; ++q) {
      float lanes[16];
      _mm512_storeu_ps(lanes, v);
      acc = _mm_add_ps(acc, _mm_loadu_ps(lanes + 4 * q));
    }
  }
  _mm_storeu_ps(acc4, acc);
}

__attribute__((target("avx2"))) void exp_shifted_avx2(const float* x, float shift, float* out, int n4, float* acc4) {
  __m128 acc = _mm_loadu_ps(acc4);
  const __m256 sh = _mm256_set1_ps(shift);
  int j = 0;
  for (; j + 8 <= n4; j += 8) {
    const __m256 v = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), sh));
    _mm256_storeu_ps(out + j, v);
    acc = _mm_add_ps(acc, _mm256_castps256_ps128(v));
    acc = _mm_add_ps(acc, _mm256_extractf128_ps(v, 1));
  }
  if (j < n4) {  // 4 values left
    const __m256 v = exp8(_mm256_castps128_ps256(_mm_sub_ps(_mm_loadu_ps(x + j), _mm_set1_ps(shift))));
    const __m128 lo = _mm256_castps256_ps128(v);
    _mm_storeu_ps(out + j, lo);
    acc = _mm_add_ps(acc, lo);
  }
  _mm_storeu_ps(acc4, acc);
}

WideExp pick_wide_exp() {
  const char* env = std::getenv("CS_WIDE_EXP");
  if (env && std::string(env) == "0") return nullptr;
  if (cpu_has_avx512()) return &exp_shifted_avx512;
  if (cpu_has_avx2()) return &exp_shifted_avx2;
  return nullptr;
}

}  // namespace cs::kernels::x86

#endif
