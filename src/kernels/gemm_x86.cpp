// The x86-64 micro-kernels at the machine's width: AVX2 with FMA (6x16 tiles: twelve 8-wide
// accumulators, two loads of B and one broadcast of A per row per k) and AVX-512F (8x32 tiles:
// sixteen 16-wide accumulators). Each function carries its own target attribute, so the rest of
// the build stays SSE4.2 and runs anywhere; gemm.cpp calls these only after cpu_has_*() says the
// CPU runs them.
//
// Both accumulate each entry of C over k with one fused multiply-add per term, in the same order
// (gemm_driver.h shares the k-blocking), and write tiles with a separate multiply by alpha and an
// add, never fused (this file is compiled with -ffp-contract=off, see CMakeLists.txt): so the two
// give the same bits, and tests check it.
#include "kernels/gemm_driver.h"

#if CS_GEMM_X86
#include <immintrin.h>

namespace cs::kernels::x86 {

namespace {

using driver::Tile;

// ------------------------------------------------------------------ AVX2 + FMA, 6 x 16
constexpr int MR2 = 6, NR2 = 16, MC2 = 96;

template <bool Packed>
__attribute__((target("avx2,fma"))) void micro_avx2(const GemmArgs& g, const Tile& t) {
  // Named accumulators (an array of them was kept in memory by GCC, at a third of the speed).
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float* a = t.a;
  const float* b = t.b;
  const float *r0 = nullptr, *r1 = nullptr, *r2 = nullptr, *r3 = nullptr, *r4 = nullptr, *r5 = nullptr;
  if constexpr (!Packed) r0 = t.rows[0], r1 = t.rows[1], r2 = t.rows[2], r3 = t.rows[3], r4 = t.rows[4], r5 = t.rows[5];
  const int kn = t.kn;
  for (int k = 0; k < kn; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 ar;
#define CS_ROW(R, C0, C1)                                              \
  ar = _mm256_broadcast_ss(Packed ? a + R : r##R + k);                \
  C0 = _mm256_fmadd_ps(ar, b0, C0);                                    \
  C1 = _mm256_fmadd_ps(ar, b1, C1);
    CS_ROW(0, c00, c01) CS_ROW(1, c10, c11) CS_ROW(2, c20, c21) CS_ROW(3, c30, c31) CS_ROW(4, c40, c41) CS_ROW(5, c50, c51)
#undef CS_ROW
    if constexpr (Packed) a += t.a_step;
    b += t.b_step;
  }
  const __m256 c[MR2][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (t.mr == MR2 && t.nc == NR2 && driver::columns_contiguous(g, t.j0, NR2)) {
    const __m256 al = _mm256_set1_ps(g.alpha), be = _mm256_set1_ps(g.beta);
    for (int r = 0; r < MR2; ++r) {
      float* p = driver::c_at(g, t.i0 + r, t.j0);
      __m256 v0 = _mm256_mul_ps(al, c[r][0]), v1 = _mm256_mul_ps(al, c[r][1]);
      if (!t.first) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(p));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(p + 8));
      } else if (g.beta != 0.0f) {
        v0 = _mm256_add_ps(v0, _mm256_mul_ps(be, _mm256_loadu_ps(p)));
        v1 = _mm256_add_ps(v1, _mm256_mul_ps(be, _mm256_loadu_ps(p + 8)));
      }
      _mm256_storeu_ps(p, v0);
      _mm256_storeu_ps(p + 8, v1);
    }
    return;
  }
  float acc[MR2 * NR2];
  for (int r = 0; r < MR2; ++r) {
    _mm256_storeu_ps(acc + r * NR2, c[r][0]);
    _mm256_storeu_ps(acc + r * NR2 + 8, c[r][1]);
  }
  driver::store_tile_scalar(g, acc, NR2, t.i0, t.mr, t.j0, t.nc, t.first);
}

void tile_avx2(const GemmArgs& g, const Tile& t) {
  if (t.rows) micro_avx2<false>(g, t);
  else micro_avx2<true>(g, t);
}

// ------------------------------------------------------------------ AVX-512F, 8 x 32
constexpr int MR5 = 8, NR5 = 32, MC5 = 96;

template <bool Packed>
__attribute__((target("avx512f"))) void micro_avx512(const GemmArgs& g, const Tile& t) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  __m512 c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  const float* a = t.a;
  const float* b = t.b;
  const float *r0 = nullptr, *r1 = nullptr, *r2 = nullptr, *r3 = nullptr, *r4 = nullptr, *r5 = nullptr, *r6 = nullptr,
              *r7 = nullptr;
  if constexpr (!Packed)
    r0 = t.rows[0], r1 = t.rows[1], r2 = t.rows[2], r3 = t.rows[3], r4 = t.rows[4], r5 = t.rows[5], r6 = t.rows[6],
    r7 = t.rows[7];
  const int kn = t.kn;
  for (int k = 0; k < kn; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    __m512 ar;
#define CS_ROW(R, C0, C1)                                   \
  ar = _mm512_set1_ps(Packed ? a[R] : r##R[k]);             \
  C0 = _mm512_fmadd_ps(ar, b0, C0);                         \
  C1 = _mm512_fmadd_ps(ar, b1, C1);
    CS_ROW(0, c00, c01) CS_ROW(1, c10, c11) CS_ROW(2, c20, c21) CS_ROW(3, c30, c31)
    CS_ROW(4, c40, c41) CS_ROW(5, c50, c51) CS_ROW(6, c60, c61) CS_ROW(7, c70, c71)
#undef CS_ROW
    if constexpr (Packed) a += t.a_step;
    b += t.b_step;
  }
  const __m512 c[MR5][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                            {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  if (t.mr == MR5 && t.nc == NR5 && driver::columns_contiguous(g, t.j0, NR5)) {
    const __m512 al = _mm512_set1_ps(g.alpha), be = _mm512_set1_ps(g.beta);
    for (int r = 0; r < MR5; ++r) {
      float* p = driver::c_at(g, t.i0 + r, t.j0);
      __m512 v0 = _mm512_mul_ps(al, c[r][0]), v1 = _mm512_mul_ps(al, c[r][1]);
      if (!t.first) {
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(p));
        v1 = _mm512_add_ps(v1, _mm512_loadu_ps(p + 16));
      } else if (g.beta != 0.0f) {
        v0 = _mm512_add_ps(v0, _mm512_mul_ps(be, _mm512_loadu_ps(p)));
        v1 = _mm512_add_ps(v1, _mm512_mul_ps(be, _mm512_loadu_ps(p + 16)));
      }
      _mm512_storeu_ps(p, v0);
      _mm512_storeu_ps(p + 16, v1);
    }
    return;
  }
  float acc[MR5 * NR5];
  for (int r = 0; r < MR5; ++r) {
    _mm512_storeu_ps(acc + r * NR5, c[r][0]);
    _mm512_storeu_ps(acc + r * NR5 + 16, c[r][1]);
  }
  driver::store_tile_scalar(g, acc, NR5, t.i0, t.mr, t.j0, t.nc, t.first);
}

void tile_avx512(const GemmArgs& g, const Tile& t) {
  if (t.rows) micro_avx512<false>(g, t);
  else micro_avx512<true>(g, t);
}

}  // namespace

void sgemm_avx2(const GemmArgs& g) {
  driver::run<MR2, NR2, MC2>(g, [](const GemmArgs& a, const Tile& t) { tile_avx2(a, t); }, true);
}
void sgemm_avx512(const GemmArgs& g) {
  driver::run<MR5, NR5, MC5>(g, [](const GemmArgs& a, const Tile& t) { tile_avx512(a, t); }, true);
}

}  // namespace cs::kernels::x86

#endif
