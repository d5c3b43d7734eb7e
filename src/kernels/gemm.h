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
#include <string>
#include <vector>

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

// The active kernel: the portable one (the 128-bit vector micro-kernel, or the plain fallback
// under CS_GEMM_PLAIN) until set_gemm_kernel() picks another.
void sgemm(const GemmArgs& a);
// The portable implementations, for tests and benchmarks.
void sgemm_vector(const GemmArgs& a);
void sgemm_plain(const GemmArgs& a);
// The bytes of packed panels each thread keeps once it has run a product (the same for any shape).
std::size_t gemm_scratch_bytes();

// Kernels. Every build has "plain" and its portable vector kernel ("sse" natively, "simd128" in
// WebAssembly): these two round every product and sum as separate operations, so the native
// portable kernel gives the page's numbers bit for bit. Native x86-64 builds add "avx2" (AVX2 and
// FMA, 6x16 tiles) and "avx512" (AVX-512F, 8x32 tiles) where the CPU runs them (checked at run
// time): both use fused multiply-adds and the same order of sums, so they agree with each other
// bit for bit and with the portable kernel to float rounding.
using GemmFunction = void (*)(const GemmArgs&);
// The kernels this build has and this CPU runs, slowest first.
std::vector<std::string> gemm_kernels();
// A kernel by name, or nullptr when this build or CPU lacks it.
GemmFunction gemm_function(const std::string& name);
// Makes sgemm() run `name` from now on, in every thread: a name from gemm_kernels(), "auto" (the
// last of them, the fastest) or "portable". Throws std::invalid_argument with a sentence listing
// the choices for any other name.
void set_gemm_kernel(const std::string& name);
// The name of the kernel sgemm() runs.
const char* gemm_kernel_name();

}  // namespace cs::kernels
