// Native benchmarks: one forward pass and one training step (forward + backward + AdamW) of the
// reference model: 2 layers, d_vocab 96, d_model 128, 4 heads of d_head 32, n_ctx 256, batch 16.
#include <benchmark/benchmark.h>

#include "model.h"
#include "train.h"

namespace {

cs::Config reference_config() {
  cs::Config c;
  c.n_layers = 2;
  c.n_heads = 4;
  c.d_model = 128;
  c.d_head = 32;
  c.n_ctx = 256;
  c.d_vocab = 96;
  c.pos_embed = cs::PosEmbed::Standard;
  return c;
}

cs::Batch reference_batch(const cs::Config& c, int B) {
  cs::Rng rng(7);
  cs::Batch b;
  b.B = B;
  b.T = c.n_ctx;
  for (int i = 0; i < B * c.n_ctx; ++i) {
    b.tokens.push_back(rng.below(c.d_vocab));
    b.targets.push_back(rng.below(c.d_vocab));
    b.mask.push_back(1.0f);
  }
  return b;
}

void BM_Forward(benchmark::State& state) {
  cs::Config c = reference_config();
  cs::Params<float> p = cs::init_params<float>(c, 1);
  cs::Batch b = reference_batch(c, 16);
  cs::ActivationCache<float> cache;
  for (auto _ : state) {
    cs::forward(p, b.tokens, b.B, b.T, cache);
    benchmark::DoNotOptimize(cache.logits.data.data());
  }
}

void BM_TrainStep(benchmark::State& state) {
  cs::Config c = reference_config();
  cs::Params<float> p = cs::init_params<float>(c, 1), g;
  cs::Batch b = reference_batch(c, 16);
  cs::ActivationCache<float> cache;
  cs::OptimConfig oc;
  cs::AdamW opt(p, oc);
  for (auto _ : state) {
    double loss = cs::loss_and_grad(p, b, cache, g);
    cs::clip_grad_norm(g, 1.0);
    opt.step(p, g, 1e-3, 0.9);
    benchmark::DoNotOptimize(loss);
  }
}

BENCHMARK(BM_Forward)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_TrainStep)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
