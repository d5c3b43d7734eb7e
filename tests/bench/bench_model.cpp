// Native benchmarks of the reference model (tests/bench/reference_recipe.json: 2 layers, d_vocab
// 96, d_model 128, 4 heads of d_head 32, n_ctx 256, standard positions, no biases, batch 16):
//   BM_Forward    one forward pass over a [16, 256] batch plus its mean next-token loss: the work
//                 of the WASM module's Model.forwardBatch (wasm/bindings.cpp), mirrored below.
//   BM_TrainStep  one cs::Trainer::step() (periodic batch, forward, loss, backward, grad clip,
//                 AdamW): the same code the WASM module's Trainer.step() runs.
//   BM_ForwardFast, BM_TrainStepFast   the same with the fastest GEMM kernel this CPU runs
//                 (AVX2 or AVX-512 with fused multiply-adds; the others use the portable SSE4.2 one)
//   BM_TrainStepFast2  that training step with each batch split across two threads
//   BM_Char2l     one forward pass (plus loss) of the shipped models/char-2l.safetensors over one
//                 256-token sequence: <BOS> and the first 255 characters of the held-out corpus
//                 (models/corpus/valid.txt), what the page computes on each keystroke.
// tests/bench/bench_wasm.mjs times the same two calls in WASM under node; scripts/bench.sh runs
// both and prints the comparison.
//
// Every iteration is one call (Iterations(1)) and every repetition one sample, so the spread is
// per call, as in the JS timing. The model, cache and trainer are built and warmed up once.
//   circuitscope_bench [--forward_reps=N] [--train_reps=N] [Google Benchmark flags]
// (defaults 30 and 15; these set the repetitions, so --benchmark_repetitions has no effect.)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io.h"
#include "kernels/gemm.h"
#include "model.h"
#include "train.h"

namespace {

constexpr int kWarmupForwards = 3;
constexpr int kWarmupSteps = 2;

// This file's folder; __FILE__ is the absolute path CMake compiled.
std::string here() {
  std::string file = __FILE__;
  const auto slash = file.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

cs::Recipe reference_recipe() {
  const std::string path = here() + "/reference_recipe.json";
  std::ifstream f(path);
  if (!f) throw std::runtime_error("bench: cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return cs::recipe_from_json(nlohmann::json::parse(ss.str()));
}

// The benchmark batch, as bench_wasm.mjs builds it: <BOS> (id 0) at the start of every sequence,
// then 1 + (i * 37 + 11) mod 95 at flat index i.
std::vector<int> reference_tokens(int B, int T) {
  std::vector<int> ids(static_cast<std::size_t>(B) * T);
  for (std::size_t i = 0; i < ids.size(); ++i)
    ids[i] = (i % T == 0) ? 0 : 1 + static_cast<int>((i * 37 + 11) % 95);
  return ids;
}

// Model.forwardBatch of wasm/bindings.cpp: forward into a reused cache, then the mean loss of
// predicting token t+1 at every position t < T-1.
double forward_batch(const cs::Params<float>& p, const std::vector<int>& ids, int B, int T,
                     cs::ActivationCache<float>& cache) {
  cs::forward<float>(p, ids, B, T, cache);
  return cs::loss_from_logits<float>(cache, cs::next_token_batch(ids, B, T)).loss;
}

struct ForwardContext {
  int B, T;
  cs::Params<float> params;
  std::vector<int> ids;
  cs::ActivationCache<float> cache;
  ForwardContext() {
    const cs::Recipe r = reference_recipe();
    cs::Trainer tr(r);  // the initial weights, exactly as the WASM side gets them (save -> load)
    params = tr.params();
    B = r.batch_size;
    T = r.model.n_ctx;
    ids = reference_tokens(B, T);
    cache.keep_result = false;  // as Model.forwardBatch
    for (int i = 0; i < kWarmupForwards; ++i) forward_batch(params, ids, B, T, cache);
  }
};

struct TrainContext {
  std::unique_ptr<cs::Trainer> trainer;
  TrainContext() : trainer(std::make_unique<cs::Trainer>(reference_recipe())) {
    for (int i = 0; i < kWarmupSteps; ++i) trainer->step();
  }
};

// The shipped char-2l and the tokens of one full context of held-out prose.
struct Char2lContext {
  cs::ModelFile model;
  std::vector<int> ids;
  cs::ActivationCache<float> cache;
  Char2lContext() : model(cs::load_model_file(here() + "/../../models/char-2l.safetensors")) {
    std::ifstream f(here() + "/../../models/corpus/valid.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    ids = model.tokenizer.encode_ids(ss.str().substr(0, 4096), true);
    const int T = model.cfg.n_ctx;
    if (static_cast<int>(ids.size()) < T) throw std::runtime_error("bench: models/corpus/valid.txt is too short");
    ids.resize(T);
    cache.keep_result = false;  // as Model.forwardBatch
    for (int i = 0; i < kWarmupForwards; ++i) forward_batch(model.params, ids, 1, T, cache);
  }
};

void BM_Char2l(benchmark::State& state) {
  static Char2lContext ctx;
  for (auto _ : state) {
    double loss = forward_batch(ctx.model.params, ctx.ids, 1, static_cast<int>(ctx.ids.size()), ctx.cache);
    benchmark::DoNotOptimize(loss);
  }
}

void BM_Forward(benchmark::State& state) {
  static ForwardContext ctx;
  for (auto _ : state) {
    double loss = forward_batch(ctx.params, ctx.ids, ctx.B, ctx.T, ctx.cache);
    benchmark::DoNotOptimize(loss);
  }
}

void BM_TrainStep(benchmark::State& state) {
  static TrainContext ctx;
  for (auto _ : state) {
    cs::StepMetrics m = ctx.trainer->step();
    benchmark::DoNotOptimize(m.loss);
  }
}

int take_int_flag(int& argc, char** argv, const std::string& name, int def) {
  const std::string prefix = "--" + name + "=";
  int value = def;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind(prefix, 0) == 0) {
      value = std::atoi(a.c_str() + prefix.size());
      if (value < 1) {
        std::fprintf(stderr, "bench: %s needs a positive integer\n", prefix.c_str());
        std::exit(2);
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return value;
}

// The same two calls with the fastest GEMM kernel this CPU runs (AVX2 or AVX-512 with fused
// multiply-adds natively; gemm_kernel_name() says which), then back to the portable one.
struct KernelScope {
  explicit KernelScope(const char* name) { cs::kernels::set_gemm_kernel(name); }
  ~KernelScope() { cs::kernels::set_gemm_kernel("portable"); }
};
void BM_ForwardFast(benchmark::State& state) {
  KernelScope k("auto");
  static ForwardContext ctx;
  state.SetLabel(cs::kernels::gemm_kernel_name());
  for (auto _ : state) {
    double loss = forward_batch(ctx.params, ctx.ids, ctx.B, ctx.T, ctx.cache);
    benchmark::DoNotOptimize(loss);
  }
}
void BM_TrainStepFast(benchmark::State& state) {
  KernelScope k("auto");
  static TrainContext ctx;
  state.SetLabel(cs::kernels::gemm_kernel_name());
  for (auto _ : state) {
    cs::StepMetrics m = ctx.trainer->step();
    benchmark::DoNotOptimize(m.loss);
  }
}

// The fast kernel's training step with the batch split across two threads (step_parallel).
void BM_TrainStepFast2(benchmark::State& state) {
  KernelScope k("auto");
  static TrainContext ctx;
  state.SetLabel(cs::kernels::gemm_kernel_name());
  ctx.trainer->step_parallel(2);  // the threads start once
  for (auto _ : state) {
    cs::StepMetrics m = ctx.trainer->step_parallel(2);
    benchmark::DoNotOptimize(m.loss);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int forward_reps = take_int_flag(argc, argv, "forward_reps", 30);
  const int train_reps = take_int_flag(argc, argv, "train_reps", 15);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RegisterBenchmark("BM_Forward", BM_Forward)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(forward_reps);
  benchmark::RegisterBenchmark("BM_TrainStep", BM_TrainStep)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(train_reps);
  benchmark::RegisterBenchmark("BM_ForwardFast", BM_ForwardFast)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(forward_reps);
  benchmark::RegisterBenchmark("BM_TrainStepFast", BM_TrainStepFast)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(train_reps);
  benchmark::RegisterBenchmark("BM_TrainStepFast2", BM_TrainStepFast2)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(train_reps);
  benchmark::RegisterBenchmark("BM_Char2l", BM_Char2l)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(forward_reps);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
