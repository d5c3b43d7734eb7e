// GEMM kernel benchmark, built natively and to WebAssembly: GFLOP/s of cs::kernels::sgemm on the
// shapes the reference model's forward and backward passes use, against the machine's arithmetic
// limit for the same code path (a loop of independent 4-wide vector multiplies and adds: SIMD128
// has no fused multiply-add, and the micro-kernel issues exactly these), and the throughput of
// the vector exponential the softmaxes use.
//
// The C functions below do the work; the timing loop calls each one once per sample, so that in
// WebAssembly every sample is its own call from JS (V8 swaps in optimised code only when a
// function is entered again: measured in one long call from main(), the same kernel ran at a
// quarter of its speed). Natively, main() below is that loop; in WebAssembly it is
// tests/bench/gemm/bench_gemm.mjs. Both print the same JSON document.
//   build/native/gemm_bench [--reps N]                       (default 15 samples, 3 warm-up)
//   node tests/bench/gemm/bench_gemm.mjs [--reps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/softmax.h"
#include "kernels/vec4.h"

namespace {

using cs::kernels::Causal;
using cs::kernels::GemmArgs;
using cs::kernels::Op;

#if defined(__GNUC__) || defined(__clang__)
typedef float v4f __attribute__((vector_size(16)));
#endif

struct Shape {
  const char* what;
  Op oa, ob;
  int M, N, K;
  Causal causal;
  int calls;  // calls per layer of the reference model (per head, per sequence)
};

// The reference model (2 layers, d_model 128, 4 heads of 32, n_ctx 256, d_vocab 96, batch 16):
// N = 16*256 = 4096 rows; 64 (sequence, head) pairs per layer.
constexpr int kRows = 4096, kD = 128, kHDh = 128, kDh = 32, kT = 256, kV = 96, kBH = 64;
const Shape kShapes[] = {
    {"x W_QKV (every head)", Op::N, Op::N, kRows, 3 * kHDh, kD, Causal::None, 1},
    {"scores q k^T (causal)", Op::N, Op::T, kT, kT, kDh, Causal::LowerC, kBH},
    {"pattern v (causal)", Op::N, Op::N, kT, kDh, kT, Causal::LowerA, kBH},
    {"z W_O (per head)", Op::N, Op::N, kRows, kD, kDh, Causal::None, 4},
    {"resid W_U", Op::N, Op::N, kRows, kV, kD, Causal::None, 1},
    {"dW_QKV = x^T dqkv (per Q, K, V)", Op::T, Op::N, kD, kHDh, kRows, Causal::None, 3},
    {"dx = dqkv W_QKV^T", Op::N, Op::T, kRows, kD, 3 * kHDh, Causal::None, 1},
    {"dW_O = z^T dao (per head)", Op::T, Op::N, kDh, kD, kRows, Causal::None, 4},
    {"dv = pattern^T dz (causal)", Op::T, Op::N, kT, kDh, kT, Causal::UpperA, kBH},
    // attn-only-2l's unembedding, one chunk of the rows a full pass computes at a time
    // (src/analysis/forward_outputs.cpp: 32 MB of logits, 173 rows of 48,262)
    {"attn-only-2l resid W_U (173 rows)", Op::N, Op::N, 173, 48262, 512, Causal::None, 1},
    // and one block of its columns for every row of a full pass (kLogitBlock, src/model.h)
    {"attn-only-2l resid W_U (1,024 rows, 2,048 columns)", Op::N, Op::N, 1024, 2048, 512, Causal::None, 1},
    // and the one new row of a keystroke: a pass over W_U's 99 MB
    {"attn-only-2l resid W_U (1 row)", Op::N, Op::N, 1, 48262, 512, Causal::None, 1},
};
constexpr int kShapeCount = sizeof(kShapes) / sizeof(kShapes[0]);

// Operand `which` (A, B, C) of at least n values, filled once.
std::vector<float>& buffer(int which, std::size_t n) {
  static std::vector<float> bufs[3];
  std::vector<float>& b = bufs[which];
  if (b.size() < n) {
    b.resize(n);
    for (std::size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<float>((i * (which ? 40503u : 2654435761u)) % 1000) / 1000.0f - 0.5f;
  }
  return b;
}

std::string g_json;

}  // namespace

extern "C" {

const char* cs_bench_kernel() { return cs::kernels::gemm_kernel_name(); }
int cs_bench_shape_count() { return kShapeCount; }

// {"what", "M", "N", "K", "calls", "flops"}: flops of one sample (all its calls), counting
// only the wanted half of a causal product.
const char* cs_bench_shape_json(int i) {
  const Shape& s = kShapes[i];
  double flops = 2.0 * s.M * s.N * s.K * s.calls;
  if (s.causal != Causal::None) flops *= 0.5;
  char buf[256];
  std::snprintf(buf, sizeof buf, "{\"what\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, \"calls\": %d, \"flops\": %.0f}", s.what,
                s.M, s.N, s.K, s.calls, flops);
  g_json = buf;
  return g_json.c_str();
}

// One sample: the shape's calls.
void cs_bench_gemm(int i) {
  const Shape& s = kShapes[i];
  GemmArgs g;
  g.op_a = s.oa, g.op_b = s.ob, g.M = s.M, g.N = s.N, g.K = s.K;
  const std::size_t M = s.M, N = s.N, K = s.K;
  g.A = buffer(0, M * K).data(), g.B = buffer(1, K * N).data(), g.C = buffer(2, M * N).data();
  g.lda = s.oa == Op::N ? s.K : s.M;
  g.ldb = s.ob == Op::N ? s.N : s.K;
  g.ldc = s.N;
  g.causal = s.causal;
  for (int k = 0; k < s.calls; ++k) cs::kernels::sgemm(g);
}

// The arithmetic limit: 12 independent accumulators, each updated by a multiply and an add per
// iteration (a = a * m + c, which converges, so no infinities): 96 flops per iteration.
double cs_bench_peak_flops_per_iter() { return 12 * 2 * 4; }
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline)) float cs_bench_peak(int iters, float seed) {
  v4f x = {seed, seed * 0.5f, seed * 0.25f, seed * 0.125f};
  const v4f m = {0.999f, 0.998f, 0.997f, 0.996f};
  const v4f c = {0.001f, 0.002f, 0.003f, 0.004f};
  v4f a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4, a5 = x + 5;
  v4f a6 = x + 6, a7 = x + 7, a8 = x + 8, a9 = x + 9, a10 = x + 10, a11 = x + 11;
  for (int i = 0; i < iters; ++i) {
    a0 = a0 * m + c, a1 = a1 * m + c, a2 = a2 * m + c, a3 = a3 * m + c, a4 = a4 * m + c, a5 = a5 * m + c;
    a6 = a6 * m + c, a7 = a7 * m + c, a8 = a8 * m + c, a9 = a9 * m + c, a10 = a10 * m + c, a11 = a11 * m + c;
  }
  v4f s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
  return s[0] + s[1] + s[2] + s[3];
}
#else
float cs_bench_peak(int, float) { return 0; }
#endif

// The same limit through the kernels' vec::madd (src/kernels/vec4.h): in the relaxed-SIMD
// WebAssembly build (gemm_bench-relaxed) each update is one f32x4.relaxed_madd, a fused
// multiply-add where the processor has one, still counted as 2 flops per lane; in every other
// build it is the multiply and the add of cs_bench_peak. cs_bench_relaxed() says which.
int cs_bench_relaxed() { return CS_KERNELS_RELAXED; }
#if CS_KERNELS_VECTOR
__attribute__((noinline)) float cs_bench_peak_madd(int iters, float seed) {
  using cs::kernels::vec::madd;
  v4f x = {seed, seed * 0.5f, seed * 0.25f, seed * 0.125f};
  const v4f m = {0.999f, 0.998f, 0.997f, 0.996f};
  const v4f c = {0.001f, 0.002f, 0.003f, 0.004f};
  v4f a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4, a5 = x + 5;
  v4f a6 = x + 6, a7 = x + 7, a8 = x + 8, a9 = x + 9, a10 = x + 10, a11 = x + 11;
  for (int i = 0; i < iters; ++i) {
    a0 = madd(a0, m, c), a1 = madd(a1, m, c), a2 = madd(a2, m, c), a3 = madd(a3, m, c);
    a4 = madd(a4, m, c), a5 = madd(a5, m, c), a6 = madd(a6, m, c), a7 = madd(a7, m, c);
    a8 = madd(a8, m, c), a9 = madd(a9, m, c), a10 = madd(a10, m, c), a11 = madd(a11, m, c);
  }
  v4f s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
  return s[0] + s[1] + s[2] + s[3];
}
#else
float cs_bench_peak_madd(int, float) { return 0; }
#endif

// One sample of the exponential: 16 rows of 65536 values. Returns the count.
int cs_bench_exp() {
  static std::vector<float> x, y;
  const int n = 256 * 256;
  if (x.empty()) {
    x.resize(n), y.resize(n);
    for (int i = 0; i < n; ++i) x[i] = -static_cast<float>(i % 997) / 50.0f;
  }
  float sink = 0;
  for (int k = 0; k < 16; ++k) sink += cs::kernels::exp_shifted_sum(x.data(), 0.0f, y.data(), n);
  return sink > 0 ? 16 * n : 0;
}

}  // extern "C"

#if !defined(__EMSCRIPTEN__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
namespace {
// The native limits with fused multiply-adds at the machine's width: 12 independent 8-wide
// (AVX2) or 16-wide (AVX-512) accumulators, a = fma(a, m, c) each per iteration.
__attribute__((target("avx2,fma"), noinline)) float peak_avx2(int iters, float seed) {
  __m256 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm256_set1_ps(seed + j);
  const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  for (int i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) a[j] = _mm256_fmadd_ps(a[j], m, c);
  __m256 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, a[j]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}
__attribute__((target("avx512f"), noinline)) float peak_avx512(int iters, float seed) {
  __m512 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_ps(seed + j);
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (int i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  __m512 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, a[j]);
  return _mm512_reduce_add_ps(s);
}
}  // namespace
#define CS_BENCH_FMA_LIMITS 1
#endif

#ifndef __EMSCRIPTEN__
namespace {
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
struct Stats {
  double median, min, max;
};
template <class F>
Stats sample(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps + 3; ++r) {
    const double t0 = now_ms();
    f();
    if (r >= 3) t.push_back(now_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return {n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, t.front(), t.back()};
}
}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
  const int iters = 2000000;
  float sink = 0;
  const Stats peak = sample(reps, [&] { sink += cs_bench_peak(iters, 1.0f + sink * 1e-9f); });
  int count = 0;
  const Stats ex = sample(reps, [&] { count = cs_bench_exp(); });
  std::printf("{\n  \"kernel\": \"%s\",\n  \"reps\": %d,\n", cs_bench_kernel(), reps);
  std::printf("  \"limit\": {\"gflops_median\": %.2f, \"gflops_best\": %.2f, \"sink\": %g},\n",
              iters * cs_bench_peak_flops_per_iter() / (peak.median * 1e6),
              iters * cs_bench_peak_flops_per_iter() / (peak.min * 1e6), sink);
  std::printf("  \"exp\": {\"million_per_s_median\": %.1f},\n", count / (ex.median * 1e3));
  std::printf("  \"shapes\": [\n");
  for (int i = 0; i < kShapeCount; ++i) {
    const std::string info = cs_bench_shape_json(i);
    const Stats s = sample(reps, [&] { cs_bench_gemm(i); });
    std::printf("    {\"shape\": %s, \"ms_median\": %.3f, \"ms_min\": %.3f, \"ms_max\": %.3f}%s\n", info.c_str(), s.median,
                s.min, s.max, i + 1 < kShapeCount ? "," : "");
  }
  std::printf("  ],\n");
  // Every other kernel this CPU runs, on the same shapes, with its own arithmetic limit.
  std::printf("  \"kernels\": [\n");
  bool first_kernel = true;
  for (const std::string& name : cs::kernels::gemm_kernels()) {
    if (name == "plain" || name == cs_bench_kernel()) continue;
    double flops_per_iter = 0;
    float (*peak)(int, float) = nullptr;
#ifdef CS_BENCH_FMA_LIMITS
    if (name == "avx2") peak = &peak_avx2, flops_per_iter = 12 * 2 * 8;
    if (name == "avx512") peak = &peak_avx512, flops_per_iter = 12 * 2 * 16;
#endif
    Stats lim{0, 0, 0};
    if (peak) lim = sample(reps, [&] { sink += peak(iters, 1.0f + sink * 1e-9f); });
    cs::kernels::set_gemm_kernel(name);
    std::printf("%s    {\"kernel\": \"%s\", \"limit\": {\"what\": \"%d-wide fused multiply-add\", \"gflops_median\": %.2f, \"gflops_best\": %.2f},\n",
                first_kernel ? "" : ",\n", name.c_str(), static_cast<int>(flops_per_iter / 24),
                peak ? iters * flops_per_iter / (lim.median * 1e6) : 0.0, peak ? iters * flops_per_iter / (lim.min * 1e6) : 0.0);
    first_kernel = false;
    std::printf("     \"shapes\": [\n");
    for (int i = 0; i < kShapeCount; ++i) {
      const std::string info = cs_bench_shape_json(i);
      const Stats s = sample(reps, [&] { cs_bench_gemm(i); });
      std::printf("      {\"shape\": %s, \"ms_median\": %.3f, \"ms_min\": %.3f, \"ms_max\": %.3f}%s\n", info.c_str(), s.median,
                  s.min, s.max, i + 1 < kShapeCount ? "," : "");
    }
    std::printf("    ]}");
    cs::kernels::set_gemm_kernel("portable");
  }
  std::printf("\n  ],\n  \"sink\": %g\n}\n", sink);
  return 0;
}
#endif
