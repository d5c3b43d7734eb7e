// The single-precision forward and backward run the GEMM kernel layer (causal tiles, column-split
// outputs, fused per-head products); the double-precision ones, which the gradient check
// verifies against finite differences, run the same products through Eigen. Here the two are
// compared on every architecture option and on shapes large enough for partial tiles and
// several packed blocks. A training step is also checked not to touch the heap once its
// batch shape has been seen.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "model.h"
#include "test_util.h"
#include "train.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// Counts every allocation in this test program (the count is only read by the test below).
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace cs {
namespace {

// Largest |a - b| over a tensor, relative to the largest |b| (or to `floor`, when larger: the
// gradient of b_K is zero in exact arithmetic, since adding a constant to every key shifts a
// query's scores by a constant).
double rel_diff(const Tensor<float>& a, const Tensor<double>& b, double floor = 1e-30) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
    den = std::max(den, std::abs(b.data[i]));
  }
  return num / std::max(den, floor);
}

void compare(const Config& c, int B, int T, std::uint64_t seed, double tol) {
  Params<double> pd = testing::random_params<double>(c, seed);
  Params<float> pf = cast_params<double, float>(pd);
  pd = cast_params<float, double>(pf);  // the same weights exactly, in both precisions
  Batch batch = testing::random_batch(c, B, T, seed + 1, true);
  ActivationCache<double> cd;
  ActivationCache<float> cf;
  Params<double> gd;
  Params<float> gf;
  const double ld = loss_and_grad(pd, batch, cd, gd);
  const double lf = loss_and_grad(pf, batch, cf, gf);
  const std::string name = testing::config_name(c) + " B=" + std::to_string(B) + " T=" + std::to_string(T) +
                           " D=" + std::to_string(c.d_model) + " Dh=" + std::to_string(c.d_head);
  EXPECT_NEAR(lf, ld, tol * std::abs(ld)) << name;
  EXPECT_LT(rel_diff(cf.logits, cd.logits), tol) << name << " logits";
  for (int l = 0; l < c.n_layers; ++l) {
    EXPECT_LT(rel_diff(cf.layers[l].pattern, cd.layers[l].pattern), tol) << name << " pattern L" << l;
    EXPECT_LT(rel_diff(cf.layers[l].z, cd.layers[l].z), tol) << name << " z L" << l;
  }
  auto F = named_params(gf);
  auto D = named_params(gd);
  double largest = 0;
  for (const auto& d : D)
    for (double x : d.second->data) largest = std::max(largest, std::abs(x));
  for (std::size_t k = 0; k < F.size(); ++k)
    EXPECT_LT(rel_diff(*F[k].second, *D[k].second, 1e-3 * largest), tol) << name << " d" << F[k].first;
}

TEST(KernelPaths, FloatMatchesDoubleOnEveryOption) {
  for (const Config& c : testing::all_option_configs()) compare(c, 2, c.n_ctx - 1, 11, 2e-4);
}

TEST(KernelPaths, FloatMatchesDoubleOnLargerShapes) {
  // Odd sizes leave partial 4x8 tiles everywhere; T = 300 spans two packed blocks of k.
  for (PosEmbed pos : {PosEmbed::Standard, PosEmbed::Shortformer})
    for (bool smear : {false, true}) {
      Config c = testing::tiny_config(2, pos, smear, true);
      c.d_model = 20, c.d_head = 5, c.n_heads = 3, c.n_ctx = 300, c.d_vocab = 11, c.init_std = 0.3f;
      compare(c, 2, 37, 21, 2e-4);
      compare(c, 1, 300, 22, 5e-4);
    }
  Config c = testing::tiny_config(2, PosEmbed::Standard, false, false);
  c.d_model = 64, c.d_head = 16, c.n_heads = 4, c.n_ctx = 64, c.d_vocab = 30, c.init_std = 0.2f;
  compare(c, 3, 64, 31, 2e-4);
}

TEST(KernelPaths, AReusedCacheGivesWhatAFreshOneGives) {
  // Buffers are reused between calls (the pattern's upper triangle is zeroed only when its shape
  // changes): lengths that shrink and grow again must still give exactly a fresh cache's values.
  // The reused cache also skips hook_result, as training does.
  Config c = testing::tiny_config(2, PosEmbed::Shortformer, true, true);
  c.n_ctx = 40;
  Params<float> p = testing::random_params<float>(c, 41);
  Params<float> g_reused, g_fresh;
  ActivationCache<float> reused;
  reused.keep_result = false;  // and without hook_result, attn_out summed in place: the same values
  for (int T : {37, 12, 37, 5, 40}) {
    Batch b = testing::random_batch(c, 2, T, 50 + T, true);
    ActivationCache<float> fresh;
    loss_and_grad(p, b, reused, g_reused);
    loss_and_grad(p, b, fresh, g_fresh);
    for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(reused.layers[l].pattern.data, fresh.layers[l].pattern.data) << "T=" << T;
    EXPECT_EQ(reused.logits.data, fresh.logits.data) << "T=" << T;
    EXPECT_TRUE(reused.layers[0].result.empty());
    for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(reused.layers[l].attn_out.data, fresh.layers[l].attn_out.data) << "T=" << T;
    auto A = named_params(g_reused);
    auto F = named_params(g_fresh);
    for (std::size_t k = 0; k < A.size(); ++k) EXPECT_EQ(A[k].second->data, F[k].second->data) << "T=" << T << " " << A[k].first;
  }
}

// A warm training step of config c: how many times it allocated.
long warm_step_allocations(const Config& c) {
  Params<float> p = init_params<float>(c, 5);
  Params<float> g = make_params<float>(c);
  AdamW opt(p, OptimConfig{});
  Batch batch = testing::random_batch(c, 4, 64, 6, true);
  ActivationCache<float> cache;
  LossResult loss;
  auto step = [&] {
    forward(p, batch.tokens, batch.B, batch.T, cache);
    loss_from_logits(cache, batch, loss);
    backward(p, cache, batch, g);
    clip_grad_norm(g, 1.0);
    opt.step(p, g, 1e-3, 0.9);
  };
  step();
  step();
  const long before = g_allocations.load();
  step();
  return g_allocations.load() - before;
}

// LayerNorm (LN, LNPre) and MLP blocks keep the promise too.
TEST(KernelPaths, NormAndMlpTrainingStepsDoNotAllocateOnceWarm) {
  for (const Norm norm : {Norm::LN, Norm::LNPre}) {
    Config c;
    c.n_layers = 2, c.n_heads = 2, c.d_model = 16, c.d_head = 8, c.n_ctx = 64, c.d_vocab = 20;
    c.normalization = norm;
    c.d_mlp = 32;
    c.act_fn = Act::GELU;
    EXPECT_EQ(warm_step_allocations(c), 0) << "normalization " << static_cast<int>(norm);
  }
}

TEST(KernelPaths, TrainingStepDoesNotAllocateOnceWarm) {
  // The reference model's shape, smaller: forward, loss, backward, clipping and AdamW.
  Config c;
  c.n_layers = 2, c.n_heads = 4, c.d_model = 32, c.d_head = 8, c.n_ctx = 64, c.d_vocab = 20;
  c.pos_embed = PosEmbed::Shortformer;
  c.smeared_keys = true;
  const long during = warm_step_allocations(c);
  EXPECT_EQ(during, 0) << "a warm training step allocated " << during << " times";
  Params<float> p = init_params<float>(c, 5);
  Batch batch = testing::random_batch(c, 4, 64, 6, true);
  // The counter itself works: a fresh cache allocates.
  ActivationCache<float> fresh;
  const long b2 = g_allocations.load();
  forward(p, batch.tokens, batch.B, batch.T, fresh);
  EXPECT_GT(g_allocations.load() - b2, 0);
}

}  // namespace
}  // namespace cs
