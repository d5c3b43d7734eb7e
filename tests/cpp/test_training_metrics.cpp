// Training metrics: the evaluator's records and the per-token-loss PCA trajectory.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/training_metrics.h"

namespace cs {
namespace {

TEST(TrainingMetrics, RecordsAndPcaTrajectory) {
  nlohmann::json j = {{"name", "metrics-test"},
                      {"model", {{"n_layers", 2}, {"n_heads", 2}, {"d_model", 32}, {"d_head", 16}, {"n_ctx", 48},
                                 {"pos_embed", "shortformer"}}},
                      {"tokenizer", {{"kind", "synthetic"}, {"size", 48}}},
                      {"data", {{"kind", "repeated_segment"}, {"seq_len", 48}, {"min_len", 8}, {"max_len", 23}}},
                      {"optimizer", {{"lr", 0.01}}},
                      {"schedule", {{"kind", "constant"}, {"warmup_steps", 10}}},
                      {"steps", 60},
                      {"batch_size", 16},
                      {"eval", {{"every", 20}, {"icl_early", 5}, {"icl_late", 40}, {"batch", 4}}}};
  Recipe r = recipe_from_json(j);
  Trainer tr(r);
  EvalSpec spec = eval_spec_from_json(r.eval);
  Evaluator ev(spec, tr.recipe(), tr.tokenizer(), tr.data());
  std::vector<EvalRecord> recs{ev.evaluate(tr.params(), 0, std::nan(""))};
  for (int s = 1; s <= 60; ++s) {
    StepMetrics m = tr.step();
    if (s % 20 == 0) recs.push_back(ev.evaluate(tr.params(), s, m.loss));
  }
  ASSERT_EQ(recs.size(), 4u);
  for (const auto& rec : recs) {
    EXPECT_EQ(rec.prefix_matching.size(), 4u);
    EXPECT_EQ(rec.per_token.size(), 4u * 47u);
    EXPECT_TRUE(std::isfinite(rec.valid_loss));
    EXPECT_TRUE(std::isfinite(rec.icl));
  }
  // Initial loss is about ln(49); training lowers it.
  EXPECT_NEAR(recs[0].valid_loss, std::log(49.0), 0.3);
  EXPECT_LT(recs.back().valid_loss, recs[0].valid_loss);
  // The same weights evaluate to the same record (fixed evaluation sets).
  EvalRecord again = ev.evaluate(tr.params(), 60, 0);
  EXPECT_EQ(again.per_token, recs.back().per_token);

  nlohmann::json m = metrics_json(spec, recs, 3);
  ASSERT_TRUE(m.contains("pca"));
  auto& comps = m["pca"]["components"];
  ASSERT_EQ(comps.size(), 3u);
  EXPECT_EQ(comps[0].size(), 4u);
  double var = 0;
  for (auto& v : m["pca"]["explained_variance"]) var += v.get<double>();
  EXPECT_LE(var, 1.0 + 1e-9);
  // Four centred records span at most three directions: the first explains at least a third,
  // and the components come in decreasing order.
  auto& expl = m["pca"]["explained_variance"];
  EXPECT_GE(expl[0].get<double>(), 1.0 / 3.0 - 1e-9);
  EXPECT_GE(expl[0].get<double>(), expl[1].get<double>());
  EXPECT_GE(expl[1].get<double>(), expl[2].get<double>());
  EXPECT_NEAR(var, 1.0, 1e-6);
  // Projections are centred: they sum to zero on each component.
  for (auto& c : comps) {
    double s = 0;
    for (auto& x : c) s += x.get<double>();
    EXPECT_NEAR(s, 0.0, 1e-6);
  }
  EXPECT_EQ(m["icl_indices"]["late"], 40);
}

TEST(TrainingMetrics, BadSpecsGetSentences) {
  EXPECT_THROW(eval_spec_from_json({{"evry", 10}}), std::invalid_argument);
  EXPECT_THROW(eval_spec_from_json({{"icl_early", 50}, {"icl_late", 10}}), std::invalid_argument);
}

}  // namespace
}  // namespace cs
