// C = A B in double for row-major A [M, K] and B [K, N] where one side is float (weights as they
// are stored) and the other double: the factors of the circuit tables (src/analysis/circuits.cpp),
// e.g. W_E [V, D] times W_Q [D, Dh] at a 48k vocabulary; or both double (the Gram matrices of the
// composition scores and their random baseline). Eigen has no WebAssembly SIMD, so its
// double product runs a scalar 1 x 4 kernel there; this one keeps a 4 x 4 tile of C in 2-double
// vectors. Every entry is summed over k in order, in double (products of floats by doubles are
// exact in neither case, so results agree with Eigen's to double rounding, not bit for bit).
#pragma once
#include <cstddef>

namespace cs::kernels {

void gemm_f64(int M, int N, int K, const float* A, std::ptrdiff_t lda, const double* B, std::ptrdiff_t ldb, double* C,
              std::ptrdiff_t ldc);
void gemm_f64(int M, int N, int K, const double* A, std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, double* C,
              std::ptrdiff_t ldc);
void gemm_f64(int M, int N, int K, const double* A, std::ptrdiff_t lda, const double* B, std::ptrdiff_t ldb, double* C,
              std::ptrdiff_t ldc);

}  // namespace cs::kernels
