// The one small kernel layer under the model's hot products: a packed single-precision GEMM
// with a 4x8 register-blocked micro-kernel written once with the compiler's 128-bit vector
// extension (WebAssembly SIMD128 under Emscripten, SSE natively), and a plain scalar fallback
// with the same blocking. Which one `sgemm` runs is fixed at compile time (CS_GEMM_PLAIN forces
// the fallback); both are always compiled so tests can check each against Eigen.
//
// Everything is row-major. C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, where op(X)
// is X or X^T and the leading dimensions are those of the stored matrices. With beta == 0, C is
// not read (it may hold NaN or garbage).
//
// Causal attention only needs part of some products; `Causal` says which part:
//   LowerC   only C[i, j] with j <= i is wanted (the scores q k^T and their gradient dz v^T).
//            Other entries of C may be written with partial sums, and must be ignored.
//   LowerA   op(A) is lower triangular (A[i, k] = 0 for k > i): the sum runs over k <= i only
//            (pattern v, and dS k).
//   UpperA   op(A) is upper triangular (A[i, k] = 0 for k < i): the sum runs over k >= i only
//            (pattern^T dz, and dS^T q).
// The skipped work is whole micro-tiles or k-ranges, so the result equals the full product
// exactly where the mode says it is wanted.
//
// Column-split output: with c_split > 0, column j of C is stored at
//   base(j / c_split) + (j % c_split)   (row i adds i * ldc)
// where base(b) is c_blocks[b] if c_blocks is given, else C + b * c_split_stride. So one product
// can write each head's block of columns into that head's own [rows, c_split] slice (e.g.
// x [W_Q W_K W_V of every head] straight into hook_q, hook_k and hook_v's [H, N, Dh] layouts).
//
// Scratch space (packed panels) is kept per thread, of a fixed size (gemm_scratch_bytes(),
// allocated at the first product): products never allocate, and a very wide one (an unembedding
// of a huge vocabulary) leaves nothing larger behind.
#pragma once
#include <cstddef>

namespace cs::kernels {

enum class Op { N, T };
enum class Causal { None, LowerC, LowerA, UpperA };

struct GemmArgs {
  Op op_a = Op::N, op_b = Op::N;
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f;
  const float* A = nullptr;
  int lda = 0;
  const float* B = nullptr;
  int ldb = 0;
  float beta = 0.0f;
  float* C = nullptr;
  int ldc = 0;
  Causal causal = Causal::None;
  int c_split = 0;                 // 0: C is one [M, N] matrix with leading dimension ldc
  std::size_t c_split_stride = 0;  // distance between consecutive column blocks of C
  float* const* c_blocks = nullptr;  // or the start of each column block
};

// The build's kernel (vector micro-kernel unless CS_GEMM_PLAIN or no vector extension).
void sgemm(const GemmArgs& a);
// The two implementations, for tests and benchmarks.
void sgemm_vector(const GemmArgs& a);
void sgemm_plain(const GemmArgs& a);
// The bytes of packed panels each thread keeps once it has run a product (the same for any shape).
std::size_t gemm_scratch_bytes();
// "simd128", "sse" or "plain": what sgemm() runs in this build.
const char* gemm_kernel_name();

}  // namespace cs::kernels
