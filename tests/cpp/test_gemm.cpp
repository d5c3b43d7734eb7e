// The GEMM kernel layer (src/kernels/gemm.h) against Eigen in double precision: both the vector
// micro-kernel and the plain fallback, on every shape the models' hot products use, on edge
// shapes that leave partial micro-tiles and several k-blocks, with both transposes, alpha and
// beta, the causal modes and the column-split output.
#include <gtest/gtest.h>

#include <malloc.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/dgemm.h"
#include "kernels/gemm.h"
#include "rng.h"
#include "tensor.h"

namespace cs {
namespace {

using kernels::Causal;
using kernels::GemmArgs;
using kernels::Op;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Case {
  Op op_a, op_b;
  int M, N, K;
  float alpha = 1.0f, beta = 0.0f;
  Causal causal = Causal::None;
  int c_split = 0;
  bool table = false;  // column blocks through a pointer table, in reverse order
};

std::string describe(const Case& c) {
  const char* modes[] = {"none", "lowerC", "lowerA", "upperA"};
  return std::string(c.op_a == Op::N ? "N" : "T") + (c.op_b == Op::N ? "N" : "T") + " M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " causal=" + modes[static_cast<int>(c.causal)] +
         " split=" + std::to_string(c.c_split) + (c.table ? " (table)" : "");
}

std::vector<float> random_vec(std::size_t n, Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

// Runs one case through `fn` and compares with Eigen in double precision.
void check_case(const Case& c, void (*fn)(const GemmArgs&), const char* name, std::uint64_t seed) {
  Rng rng(seed);
  // Stored shapes with padding in the leading dimensions, so lda/ldb/ldc are exercised.
  const int a_rows = c.op_a == Op::N ? c.M : c.K, a_cols = c.op_a == Op::N ? c.K : c.M;
  const int b_rows = c.op_b == Op::N ? c.K : c.N, b_cols = c.op_b == Op::N ? c.N : c.K;
  const int lda = a_cols + 3, ldb = b_cols + 5;
  std::vector<float> A = random_vec(static_cast<std::size_t>(a_rows) * lda, rng);
  std::vector<float> Bm = random_vec(static_cast<std::size_t>(b_rows) * ldb, rng);
  MatD opA(c.M, c.K), opB(c.K, c.N);
  for (int i = 0; i < c.M; ++i)
    for (int k = 0; k < c.K; ++k) {
      float& a = c.op_a == Op::N ? A[static_cast<std::size_t>(i) * lda + k] : A[static_cast<std::size_t>(k) * lda + i];
      if ((c.causal == Causal::LowerA && k > i) || (c.causal == Causal::UpperA && k < i)) a = 0.0f;
      opA(i, k) = a;
    }
  for (int k = 0; k < c.K; ++k)
    for (int j = 0; j < c.N; ++j)
      opB(k, j) = c.op_b == Op::N ? Bm[static_cast<std::size_t>(k) * ldb + j] : Bm[static_cast<std::size_t>(j) * ldb + k];

  // C: either [M, ldc] or, column-split, blocks of c_split columns each [M, c_split] apart.
  const int ldc = c.c_split > 0 ? c.c_split : c.N + 2;
  const int blocks = c.c_split > 0 ? (c.N + c.c_split - 1) / c.c_split : 1;
  const std::size_t stride = static_cast<std::size_t>(c.M) * ldc + 7;
  std::vector<float> C = random_vec(stride * blocks, rng);
  const float poison = std::numeric_limits<float>::quiet_NaN();
  auto at = [&](int i, int j) -> float& {
    if (c.c_split > 0) {
      const int blk = c.table ? blocks - 1 - j / c.c_split : j / c.c_split;
      return C[blk * stride + static_cast<std::size_t>(i) * ldc + j % c.c_split];
    }
    return C[static_cast<std::size_t>(i) * ldc + j];
  };
  MatD C0(c.M, c.N);
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      if (c.beta == 0.0f) at(i, j) = poison;  // beta == 0 must not read C
      C0(i, j) = c.beta == 0.0f ? 0.0 : at(i, j);
    }
  const std::vector<float> before = C;

  GemmArgs g;
  g.op_a = c.op_a, g.op_b = c.op_b, g.M = c.M, g.N = c.N, g.K = c.K, g.alpha = c.alpha, g.beta = c.beta;
  g.A = A.data(), g.lda = lda, g.B = Bm.data(), g.ldb = ldb, g.C = C.data(), g.ldc = ldc, g.causal = c.causal;
  g.c_split = c.c_split, g.c_split_stride = stride;
  std::vector<float*> table;
  for (int b = 0; b < blocks; ++b) table.push_back(C.data() + (blocks - 1 - b) * stride);
  if (c.table) g.c_blocks = table.data(), g.c_split_stride = 0;
  fn(g);

  const MatD want = double(c.alpha) * (opA * opB) + double(c.beta) * C0;
  const MatD absprod = double(std::abs(c.alpha)) * (opA.cwiseAbs() * opB.cwiseAbs()) + std::abs(c.beta) * C0.cwiseAbs();
  int bad = 0;
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      if (c.causal == Causal::LowerC && j > i) continue;  // not wanted: may hold partial sums
      const double got = at(i, j);
      const double tol = 1e-6 * (absprod(i, j) + 1.0) * std::sqrt(double(c.K) + 1.0);
      if (!(std::abs(got - want(i, j)) <= tol) && bad++ < 3)
        ADD_FAILURE() << name << " " << describe(c) << ": C[" << i << "," << j << "] = " << got << ", want " << want(i, j);
    }
  // Nothing outside the wanted entries of C is written (padding between rows and blocks).
  std::size_t touched = 0;
  for (std::size_t n = 0; n < C.size(); ++n) {
    const bool inside = [&] {
      const std::size_t blk = c.c_split > 0 ? n / stride : 0, off = c.c_split > 0 ? n % stride : n;
      const std::size_t i = off / ldc, jj = off % ldc;
      const std::size_t col_blk = c.table ? blocks - 1 - blk : blk;
      const std::size_t j = col_blk * (c.c_split > 0 ? c.c_split : 0) + jj;
      return i < static_cast<std::size_t>(c.M) && jj < static_cast<std::size_t>(c.c_split > 0 ? c.c_split : c.N) &&
             j < static_cast<std::size_t>(c.N);
    }();
    if (!inside && !(C[n] == before[n] || (std::isnan(C[n]) && std::isnan(before[n])))) ++touched;
  }
  EXPECT_EQ(touched, 0u) << name << " " << describe(c) << " wrote outside C";
  EXPECT_LT(bad, 1) << name << " " << describe(c) << ": " << bad << " wrong entries";
}

std::vector<Case> cases() {
  std::vector<Case> v;
  // The reference model (N = B*T = 4096, D 128, H*Dh 128, Dh 32, T 256, V 96) and the char
  // models (D 64, Dh 16), forward and backward.
  for (int D : {128, 64}) {
    const int Dh = D / 4, HDh = D, Nr = 4096, T = 256, V = 96;
    v.push_back({Op::N, Op::N, Nr, 3 * HDh, D, 1, 0, Causal::None, Dh, true});  // x W_QKV -> hook_q/k/v
    v.push_back({Op::N, Op::N, Nr, HDh, D, 1, 0, Causal::None, Dh});            // x W_V (every head) -> hook_v
    v.push_back({Op::N, Op::T, T, T, Dh, 0.17f, 0, Causal::LowerC});             // scores = q k^T / sqrt(Dh)
    v.push_back({Op::N, Op::N, T, Dh, T, 1, 0, Causal::LowerA});                 // z = pattern v
    v.push_back({Op::N, Op::N, Nr, D, Dh});                                      // result = z W_O
    v.push_back({Op::N, Op::N, Nr, V, D});                                       // logits = resid W_U
    v.push_back({Op::N, Op::T, Nr, D, V});                                       // dresid = dlogits W_U^T
    v.push_back({Op::T, Op::N, D, V, Nr});                                       // dW_U = resid^T dlogits
    v.push_back({Op::T, Op::N, Dh, D, Nr});                                      // dW_O = z^T dao
    v.push_back({Op::N, Op::T, Nr, HDh, D, 1, 0, Causal::None, Dh});             // dz = dao W_O^T (every head)
    v.push_back({Op::N, Op::T, T, T, Dh, 1, 0, Causal::LowerC});                 // dP = dz v^T
    v.push_back({Op::T, Op::N, T, Dh, T, 1, 0, Causal::UpperA});                 // dv = pattern^T dz
    v.push_back({Op::N, Op::N, T, Dh, T, 0.17f, 0, Causal::LowerA});             // dq = dS k
    v.push_back({Op::T, Op::N, T, Dh, T, 0.17f, 0, Causal::UpperA});             // dk = dS^T q
    v.push_back({Op::T, Op::N, D, HDh, Nr});                                     // dW_Q = x^T dq (every head)
    v.push_back({Op::N, Op::T, Nr, D, HDh, 1, 1});                               // dx += dq W_Q^T
  }
  // Edges: partial tiles, k-blocks, tiny shapes, alpha/beta, all modes and transposes.
  for (Op oa : {Op::N, Op::T})
    for (Op ob : {Op::N, Op::T})
      for (Causal m : {Causal::None, Causal::LowerC, Causal::LowerA, Causal::UpperA}) {
        const bool square = m == Causal::LowerA || m == Causal::UpperA;
        v.push_back({oa, ob, 1, 1, 1, 1, 0, m});
        v.push_back({oa, ob, 7, 13, square ? 7 : 5, -0.5f, 0.25f, m});
        v.push_back({oa, ob, 70, 33, square ? 70 : 300, 1, 1, m});
        v.push_back({oa, ob, 257, 9, square ? 257 : 513, 2, 0, m});
        v.push_back({oa, ob, 5, 21, 0, 1, 0.5f, m});
        // Operands read in place rather than packed (gemm_driver.h): op(A) = A^T with M a multiple
        // of every kernel's tile height (4, 6, 8), op(B) = B with N a multiple of every tile
        // width (8, 16, 32) and M within kInPlaceB; several k-blocks, and ragged ones.
        v.push_back({oa, ob, 48, 64, square ? 48 : 600, 1, 0.5f, m});
        v.push_back({oa, ob, 24, 96, square ? 24 : 257, -1, 0, m});
        v.push_back({oa, ob, 240, 32, square ? 240 : 520, 1, 1, m});
        // op(B) = B in place with a last, narrower panel packed; one row (the incremental pass's
        // unembedding) and a last tile of one row.
        v.push_back({oa, ob, 1, 2085, square ? 1 : 300, 1, 0, m});
        v.push_back({oa, ob, 2, 83, square ? 2 : 300, 1, 0.5f, m});
        v.push_back({oa, ob, 9, 45, square ? 9 : 520, 1, 0.5f, m});
      }
  v.push_back({Op::N, Op::N, 33, 40, 17, 1, 0, Causal::None, 4});   // split not a multiple of 8
  v.push_back({Op::N, Op::T, 33, 36, 17, 1, 1, Causal::None, 12});  // and ragged, accumulating
  v.push_back({Op::T, Op::N, 9, 48, 300, 1, 0, Causal::None, 16});
  v.push_back({Op::N, Op::N, 13, 44, 9, 1, 0.5f, Causal::None, 4, true});
  v.push_back({Op::N, Op::N, 13, 48, 9, 1, 0, Causal::None, 16, true});
  // Wider than one packed block of B (2048 columns): several column blocks, the last ragged.
  v.push_back({Op::N, Op::N, 70, 4500, 300, 1, 0.5f});
  v.push_back({Op::T, Op::T, 5, 2049, 3, -1, 0});
  v.push_back({Op::N, Op::T, 2100, 2100, 9, 1, 0, Causal::LowerC});
  v.push_back({Op::N, Op::T, 100, 4200, 9, 1, 0, Causal::LowerC});
  v.push_back({Op::T, Op::N, 9, 4200, 20, 1, 0, Causal::None, 300, true});
  return v;
}

TEST(Gemm, VectorKernelMatchesEigenOnEveryShape) {
  std::uint64_t seed = 1;
  for (const Case& c : cases()) check_case(c, &kernels::sgemm_vector, "vector", seed++);
}

TEST(Gemm, PlainFallbackMatchesEigenOnEveryShape) {
  std::uint64_t seed = 1000;
  for (const Case& c : cases()) check_case(c, &kernels::sgemm_plain, "plain", seed++);
}

// Every kernel this build has and this CPU runs (the AVX2 and AVX-512 ones natively on such CPUs).
TEST(Gemm, EveryAvailableKernelMatchesEigenOnEveryShape) {
  const std::vector<std::string> names = kernels::gemm_kernels();
  ASSERT_GE(names.size(), 1u);
  for (const std::string& name : names) {
    std::uint64_t seed = 2000;
    for (const Case& c : cases()) check_case(c, kernels::gemm_function(name), name.c_str(), seed++);
  }
}

// The fused multiply-add kernels sum every entry in the same order, so they agree bit for bit:
// training on an AVX2 machine and on an AVX-512 machine gives the same weights.
TEST(Gemm, FusedKernelsAgreeBitForBit) {
  const kernels::GemmFunction avx2 = kernels::gemm_function("avx2"), avx512 = kernels::gemm_function("avx512");
  if (!avx2 || !avx512) GTEST_SKIP() << "this build or CPU lacks AVX2 or AVX-512";
  std::uint64_t seed = 3000;
  for (const Case& c : cases()) {
    if (c.beta != 0.0f) continue;  // C's random contents would need the same draw twice: covered above
    Rng rng(seed++);
    const int lda = c.op_a == Op::N ? c.K : c.M, ldb = c.op_b == Op::N ? c.N : c.K;
    const std::vector<float> A = random_vec(static_cast<std::size_t>(c.op_a == Op::N ? c.M : c.K) * lda, rng);
    const std::vector<float> B = random_vec(static_cast<std::size_t>(c.op_b == Op::N ? c.K : c.N) * ldb, rng);
    std::vector<float> C1(static_cast<std::size_t>(c.M) * c.N, 0.0f), C2 = C1;
    GemmArgs g;
    g.op_a = c.op_a, g.op_b = c.op_b, g.M = c.M, g.N = c.N, g.K = c.K, g.alpha = c.alpha;
    g.A = A.data(), g.lda = lda, g.B = B.data(), g.ldb = ldb, g.ldc = c.N, g.causal = c.causal;
    if (c.causal == Causal::LowerA || c.causal == Causal::UpperA) continue;  // A is not triangular here
    g.C = C1.data();
    avx2(g);
    g.C = C2.data();
    avx512(g);
    std::size_t differ = 0;
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        if (c.causal == Causal::LowerC && j > i) continue;
        const std::size_t n = static_cast<std::size_t>(i) * c.N + j;
        if (std::memcmp(&C1[n], &C2[n], sizeof(float)) != 0) ++differ;
      }
    EXPECT_EQ(differ, 0u) << describe(c);
  }
}

TEST(Gemm, UnknownKernelIsRefusedWithTheChoices) {
  try {
    kernels::set_gemm_kernel("avx9000");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("plain"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::string(kernels::gemm_kernel_name()), kernels::gemm_kernels()[kernels::gemm_kernels().size() > 1 ? 1 : 0]);
  kernels::set_gemm_kernel("auto");
  EXPECT_EQ(std::string(kernels::gemm_kernel_name()), kernels::gemm_kernels().back());
  kernels::set_gemm_kernel("portable");
  EXPECT_EQ(std::string(kernels::gemm_kernel_name()), kernels::gemm_kernels()[kernels::gemm_kernels().size() > 1 ? 1 : 0]);
}

// The packed panels are of a fixed size: a product far wider than any before (an unembedding of
// a 100,000-token vocabulary) leaves the heap as it was. They used to grow to the widest shape
// seen and stay, so the WASM module's malloc'd bytes did not return to where they were after a
// wide model was deleted (the corrupt-model corpus found it).
std::size_t heap_in_use() {
#if defined(__EMSCRIPTEN__)
  return static_cast<std::size_t>(mallinfo().uordblks);
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  return mallinfo2().uordblks;
#else
  return 0;
#endif
}

TEST(Gemm, ScratchDoesNotGrowWithTheShape) {
  const int M = 4, N = 100000, K = 300;
  std::vector<float> A(static_cast<std::size_t>(M) * K, 0.5f), B(static_cast<std::size_t>(K) * N, 0.25f), C(static_cast<std::size_t>(M) * N);
  GemmArgs g;
  g.M = 1, g.N = 8, g.K = 8, g.A = A.data(), g.lda = K, g.B = B.data(), g.ldb = N, g.C = C.data(), g.ldc = N;
  kernels::sgemm(g);  // the first product allocates the panels
  const std::size_t before = heap_in_use();
  g.M = M, g.N = N, g.K = K;
  kernels::sgemm(g);
  kernels::sgemm_plain(g);
  EXPECT_EQ(heap_in_use(), before);
  EXPECT_FLOAT_EQ(C[static_cast<std::size_t>(M) * N - 1], 0.5f * 0.25f * K);
  EXPECT_LE(kernels::gemm_scratch_bytes(), std::size_t(4) << 20);
}

TEST(Gemm, BuildSelectsTheVectorKernel) {
  const std::string name = kernels::gemm_kernel_name();
#if defined(__wasm_simd128__)
  EXPECT_EQ(name, "simd128");
#elif defined(__x86_64__)
  EXPECT_EQ(name, "sse");
#else
  EXPECT_FALSE(name.empty());
#endif
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

// A product of at most 4 rows (sgemm_vector streams B row by row for it: an incremental pass's
// new positions through the unembedding) equals the same rows of a taller, tiled product bit for
// bit, so an incremental pass's logits equal a full pass's: every remainder of k (several KC
// blocks), columns not a multiple of 4, alpha and beta, and strides wider than the rows.
TEST(GemmRows, AFewRowsEqualTheSameRowsOfATiledProductBitForBit) {
  Rng rng(21);
  for (const auto& [N, K] : std::vector<std::pair<int, int>>{{64, 1}, {67, 3}, {200, 4}, {1003, 7}, {130, 256}, {77, 300}, {2085, 513}}) {
    for (const auto& [alpha, beta] : std::vector<std::pair<float, float>>{{1.0f, 0.0f}, {0.17f, 0.0f}, {-0.5f, 0.25f}, {1.0f, 1.0f}}) {
      const int tall = 9, lda = K + 3, ldb = N + 5, ldc = N + 2;
      const std::vector<float> A = random_vec(static_cast<std::size_t>(tall) * lda, rng);
      const std::vector<float> B = random_vec(static_cast<std::size_t>(K) * ldb, rng);
      const std::vector<float> C0 = random_vec(static_cast<std::size_t>(tall) * ldc, rng);
      std::vector<float> want = C0;
      GemmArgs g;
      g.M = tall, g.N = N, g.K = K, g.alpha = alpha, g.beta = beta;
      g.A = A.data(), g.lda = lda, g.B = B.data(), g.ldb = ldb, g.C = want.data(), g.ldc = ldc;
      kernels::sgemm_vector(g);
      for (int M = 1; M <= 4; ++M) {
        SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                     " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta));
        std::vector<float> got = C0;
        g.M = M, g.C = got.data();
        kernels::sgemm_vector(g);
        for (int i = 0; i < tall; ++i)
          for (int j = 0; j < ldc; ++j) {
            const std::size_t at = static_cast<std::size_t>(i) * ldc + j;
            const float w = i < M && j < N ? want[at] : C0[at];  // rows past M and the padding untouched
            ASSERT_EQ(std::memcmp(&got[at], &w, sizeof(float)), 0) << i << ", " << j << ": " << got[at] << " vs " << w;
          }
        g.M = tall;
      }
    }
  }
}

// The double products of the circuit factors (kernels/dgemm.h: float x double, double x float,
// double x double) against a plain double
// loop, on shapes that leave every remainder (rows and columns not multiples of 4, more columns
// than one 64-column block) and with strides wider than the rows.
TEST(MixedGemm, FloatOrDoubleTimesDoubleEqualsThePlainDoubleLoop) {
  Rng rng(11);
  for (const auto& [M, N, K] : std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {4, 4, 8}, {7, 5, 3}, {37, 130, 29}, {64, 67, 128}, {5, 200, 1}, {0, 3, 4}, {3, 0, 4}, {6, 6, 0}}) {
    SCOPED_TRACE(std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K));
    const int lda = K + 3, ldb = N + 2, ldc = N + 1;
    std::vector<float> Af(static_cast<std::size_t>(M) * lda), Bf(static_cast<std::size_t>(K) * ldb);
    std::vector<double> Ad(Af.size()), Bd(Bf.size());
    for (std::size_t i = 0; i < Af.size(); ++i) Ad[i] = Af[i] = static_cast<float>(rng.normal());
    for (std::size_t i = 0; i < Bf.size(); ++i) Bd[i] = Bf[i] = static_cast<float>(rng.normal());
    for (double& x : Bd) x += 1e-9 * rng.normal();  // not a float
    std::vector<double> want(static_cast<std::size_t>(M) * ldc, -7.0);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += static_cast<double>(Af[i * lda + k]) * Bd[static_cast<std::size_t>(k) * ldb + j];
        want[static_cast<std::size_t>(i) * ldc + j] = s;
      }
    std::vector<double> got(want.size(), -7.0);
    kernels::gemm_f64(M, N, K, Af.data(), lda, Bd.data(), ldb, got.data(), ldc);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << i;
    // The other side float: A double, B float.
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += Ad[static_cast<std::size_t>(i) * lda + k] * static_cast<double>(Bf[k * ldb + j]);
        want[static_cast<std::size_t>(i) * ldc + j] = s;
      }
    std::fill(got.begin(), got.end(), -7.0);
    kernels::gemm_f64(M, N, K, Ad.data(), lda, Bf.data(), ldb, got.data(), ldc);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << i;
    // Both sides double (neither a float).
    for (double& x : Ad) x += 1e-9 * rng.normal();
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += Ad[static_cast<std::size_t>(i) * lda + k] * Bd[static_cast<std::size_t>(k) * ldb + j];
        want[static_cast<std::size_t>(i) * ldc + j] = s;
      }
    std::fill(got.begin(), got.end(), -7.0);
    kernels::gemm_f64(M, N, K, Ad.data(), lda, Bd.data(), ldb, got.data(), ldc);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << i;
  }
}

}  // namespace
}  // namespace cs
