// The mixed float/double product of dgemm.h: a 4 x 4 tile of C in eight 2-double vectors (the
// compiler's vector_size extension: SSE2 natively, SIMD128 in WebAssembly), A's values broadcast,
// B's values read from a copy of a block of its 64 columns in double, laid out 4 columns by k, so
// that the block stays in cache while every row of A passes.
#include "dgemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cs::kernels {
namespace {

#if defined(__GNUC__) || defined(__clang__)
typedef double v2d __attribute__((vector_size(16)));
inline v2d load2(const double* p) {
  v2d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline v2d load2(const float* p) { return v2d{static_cast<double>(p[0]), static_cast<double>(p[1])}; }
inline void store2(double* p, v2d v) { std::memcpy(p, &v, sizeof v); }
#endif

constexpr int kColBlock = 64;

// C[i, j0..j1) for rows i of A, one dot product at a time.
template <class TA, class TB>
void plain_rows(int i0, int i1, int j0, int j1, int K, const TA* A, std::ptrdiff_t lda, const TB* B, std::ptrdiff_t ldb,
                double* C, std::ptrdiff_t ldc) {
  for (int i = i0; i < i1; ++i)
    for (int j = j0; j < j1; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += static_cast<double>(A[i * lda + k]) * static_cast<double>(B[k * ldb + j]);
      C[i * ldc + j] = s;
    }
}

template <class TA, class TB>
void gemm(int M, int N, int K, const TA* A, std::ptrdiff_t lda, const TB* B, std::ptrdiff_t ldb, double* C,
          std::ptrdiff_t ldc) {
  // Each block of 64 columns of B is copied, in double, into panels of 4 columns stored k by k
  // ([16][K][4]): a tile then reads its 4 columns of B from one contiguous run.
  std::vector<double> panels;
  for (int j0 = 0; j0 < N; j0 += kColBlock) {
    const int j1 = std::min(N, j0 + kColBlock);
    const int quads = (j1 - j0) / 4;
    int i = 0;
#if defined(__GNUC__) || defined(__clang__)
    if (quads > 0) {
      panels.resize(static_cast<std::size_t>(quads) * K * 4);
      for (int q = 0; q < quads; ++q)
        for (int k = 0; k < K; ++k)
          for (int c = 0; c < 4; ++c)
            panels[(static_cast<std::size_t>(q) * K + k) * 4 + c] = static_cast<double>(B[k * ldb + j0 + 4 * q + c]);
      for (; i + 4 <= M; i += 4) {
        const TA *a0 = A + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        for (int q = 0; q < quads; ++q) {
          v2d c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{};
          const double* b = panels.data() + static_cast<std::size_t>(q) * K * 4;
          for (int k = 0; k < K; ++k, b += 4) {
            const v2d lo = load2(b), hi = load2(b + 2);
            const double x0 = static_cast<double>(a0[k]), x1 = static_cast<double>(a1[k]);
            const double x2 = static_cast<double>(a2[k]), x3 = static_cast<double>(a3[k]);
            c00 += v2d{x0, x0} * lo;
            c01 += v2d{x0, x0} * hi;
            c10 += v2d{x1, x1} * lo;
            c11 += v2d{x1, x1} * hi;
            c20 += v2d{x2, x2} * lo;
            c21 += v2d{x2, x2} * hi;
            c30 += v2d{x3, x3} * lo;
            c31 += v2d{x3, x3} * hi;
          }
          double* c = C + i * ldc + j0 + 4 * q;
          store2(c, c00);
          store2(c + 2, c01);
          store2(c + ldc, c10);
          store2(c + ldc + 2, c11);
          store2(c + 2 * ldc, c20);
          store2(c + 2 * ldc + 2, c21);
          store2(c + 3 * ldc, c30);
          store2(c + 3 * ldc + 2, c31);
        }
        plain_rows(i, i + 4, j0 + 4 * quads, j1, K, A, lda, B, ldb, C, ldc);
      }
    }
#endif
    plain_rows(i, M, j0, j1, K, A, lda, B, ldb, C, ldc);
  }
}

}  // namespace

void gemm_f64(int M, int N, int K, const float* A, std::ptrdiff_t lda, const double* B, std::ptrdiff_t ldb, double* C,
              std::ptrdiff_t ldc) {
  gemm(M, N, K, A, lda, B, ldb, C, ldc);
}

void gemm_f64(int M, int N, int K, const double* A, std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, double* C,
              std::ptrdiff_t ldc) {
  gemm(M, N, K, A, lda, B, ldb, C, ldc);
}

void gemm_f64(int M, int N, int K, const double* A, std::ptrdiff_t lda, const double* B, std::ptrdiff_t ldb, double* C,
              std::ptrdiff_t ldc) {
  gemm(M, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace cs::kernels
