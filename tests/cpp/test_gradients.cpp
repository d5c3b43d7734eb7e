// Gradient check: the hand-written backward pass against central differences in double
// precision, over every element of every parameter, for every architecture option.
#include <gtest/gtest.h>

#include <cmath>

#include "model.h"
#include "test_util.h"

namespace cs {
namespace {

double loss_of(const Params<double>& p, const Batch& b) {
  ActivationCache<double> cache;
  forward(p, b.tokens, b.B, b.T, cache);
  return loss_from_logits(cache, b).loss;
}

void check_gradients(const Config& c, std::uint64_t seed, bool masked) {
  Params<double> p = testing::random_params<double>(c, seed);
  Batch batch = testing::random_batch(c, 2, c.n_ctx - 1, seed + 1, masked);
  Params<double> g;
  ActivationCache<double> cache;
  loss_and_grad(p, batch, cache, g);
  auto params = named_params(p);
  auto grads = named_params(g);
  ASSERT_EQ(params.size(), grads.size());
  const double eps = 1e-6, atol = 1e-8, rtol = 1e-5;
  int checked = 0;
  for (std::size_t k = 0; k < params.size(); ++k) {
    Tensor<double>& t = *params[k].second;
    const Tensor<double>& gt = *grads[k].second;
    ASSERT_EQ(t.shape, gt.shape) << params[k].first;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double orig = t.data[i];
      t.data[i] = orig + eps;
      const double lp = loss_of(p, batch);
      t.data[i] = orig - eps;
      const double lm = loss_of(p, batch);
      t.data[i] = orig;
      const double fd = (lp - lm) / (2 * eps);
      const double bp = gt.data[i];
      ASSERT_LE(std::abs(fd - bp), atol + rtol * std::abs(fd))
          << testing::config_name(c) << " " << params[k].first << "[" << i << "]: finite difference " << fd
          << ", backward " << bp;
      ++checked;
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(checked), param_count(c));
}

TEST(Gradients, EveryOptionEveryElement) {
  int n = 0;
  for (const Config& c : testing::all_option_configs()) {
    SCOPED_TRACE(testing::config_name(c));
    check_gradients(c, 100 + n, false);
    check_gradients(c, 200 + n, true);
    ++n;
  }
  EXPECT_EQ(n, 30);
}

// LayerNorm (LN, LNPre) and MLPs (every activation), each kind of positions.
TEST(Gradients, NormalizationAndMlpEveryElement) {
  int n = 0;
  for (const Config& c : testing::norm_mlp_configs()) {
    SCOPED_TRACE(testing::config_name(c));
    check_gradients(c, 300 + n, n % 2 == 1);
    ++n;
  }
  EXPECT_EQ(n, 27);
}

TEST(Gradients, ThreeLayersSmearedShortformer) {
  Config c = testing::tiny_config(3, PosEmbed::Shortformer, true, true);
  check_gradients(c, 7, true);
}

// A test that cannot fail is a defect: a wrong gradient must be caught.
TEST(Gradients, CheckDetectsAWrongGradient) {
  Config c = testing::tiny_config(1, PosEmbed::Standard, false, false);
  Params<double> p = testing::random_params<double>(c, 3);
  Batch batch = testing::random_batch(c, 1, 4, 4, false);
  Params<double> g;
  ActivationCache<double> cache;
  loss_and_grad(p, batch, cache, g);
  // Perturb one element of W_Q's gradient slightly and verify the finite difference disagrees.
  const double eps = 1e-6;
  double orig = p.blocks[0].W_Q.data[5];
  p.blocks[0].W_Q.data[5] = orig + eps;
  double lp = loss_of(p, batch);
  p.blocks[0].W_Q.data[5] = orig - eps;
  double lm = loss_of(p, batch);
  p.blocks[0].W_Q.data[5] = orig;
  double fd = (lp - lm) / (2 * eps);
  double wrong = g.blocks[0].W_Q.data[5] * 1.001 + 1e-6;
  EXPECT_GT(std::abs(fd - wrong), 1e-8 + 1e-5 * std::abs(fd));
}

}  // namespace
}  // namespace cs
