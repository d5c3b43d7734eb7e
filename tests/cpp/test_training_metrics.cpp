// Training metrics: the evaluator's records and the per-token-loss PCA trajectory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

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

// The ICL score's standard error: the windows' sample standard deviation over sqrt(n).
TEST(TrainingMetrics, IclStandardErrorOverWindows) {
  const IclEstimate e = icl_from_differences({1.0, 2.0, 3.0, 6.0});
  EXPECT_DOUBLE_EQ(e.mean, 3.0);
  EXPECT_NEAR(e.se, std::sqrt((4.0 + 1.0 + 0.0 + 9.0) / 3.0 / 4.0), 1e-12);
  EXPECT_EQ(e.n, 4);
  EXPECT_EQ(icl_from_differences({0.5}).se, 0.0);
  // Per-token losses [B=3, P=4]: rows' differences (late 3 - early 1) are 1, -1, 3.
  Tensor<float> pt({3, 4});
  const float v[] = {0, 1, 0, 2, 0, 3, 0, 2, 0, 0, 0, 3};
  for (int i = 0; i < 12; ++i) pt.data[static_cast<std::size_t>(i)] = v[i];
  const IclEstimate f = icl_estimate(pt, 1, 3);
  EXPECT_NEAR(f.mean, 1.0, 1e-12);
  EXPECT_NEAR(f.se, 2.0 / std::sqrt(3.0), 1e-12);
}

// Windows are evenly spaced over the text, [BOS] first, batched; more windows than fit overlap.
TEST(TrainingMetrics, IclWindowsAreEvenlySpacedAndBatched) {
  std::vector<int> ids(100);
  for (int i = 0; i < 100; ++i) ids[static_cast<std::size_t>(i)] = 2 + i;
  const std::vector<Batch> bs = icl_window_batches(ids, 0, 11, 7, 3);  // windows of [BOS] + 10 tokens
  ASSERT_EQ(bs.size(), 3u);
  EXPECT_EQ(bs[0].B, 3);
  EXPECT_EQ(bs[2].B, 1);
  int row = 0;
  for (const Batch& b : bs)
    for (int r = 0; r < b.B; ++r, ++row) {
      const int start = row * 90 / 7;
      EXPECT_EQ(b.tokens[static_cast<std::size_t>(r) * b.T], 0);
      EXPECT_EQ(b.tokens[static_cast<std::size_t>(r) * b.T + 1], 2 + start) << row;
    }
  EXPECT_EQ(row, 7);
  EXPECT_THROW(icl_window_batches(std::vector<int>(5, 2), 0, 11, 7, 3), std::invalid_argument);
}

// With eval.icl_windows the evaluator scores those windows, and its figure is icl_over_batches's.
TEST(TrainingMetrics, EvaluatorUsesTheIclWindows) {
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the cat sat on the mat and the dog sat on the log. ";
  const std::string path = testing::TempDir() + "icl_windows_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".txt";
  {
    std::ofstream f(path);
    f << text;
  }
  nlohmann::json j = {{"name", "icl-windows"},
                      {"model", {{"n_layers", 1}, {"n_heads", 2}, {"d_model", 16}, {"d_head", 8}, {"n_ctx", 32}}},
                      {"tokenizer", {{"kind", "bpe"}, {"text", text}, {"vocab_size", 40}}},
                      {"data", {{"kind", "text"}, {"text", text}, {"seq_len", 32}}},
                      {"steps", 5},
                      {"batch_size", 4},
                      {"eval", {{"every", 5}, {"valid_path", path}, {"batch", 4}, {"icl_early", 3}, {"icl_late", 20}, {"icl_windows", 10}}}};
  Recipe r = recipe_from_json(j);
  Trainer tr(r);
  Evaluator ev(eval_spec_from_json(r.eval), tr.recipe(), tr.tokenizer(), tr.data());
  const EvalRecord rec = ev.evaluate(tr.params(), 0, 0.0);
  const std::vector<Batch> bs = icl_window_batches(tr.tokenizer().encode_ids(text, false), tr.tokenizer().bos_id(), 22, 10, 4);
  const IclEstimate e = icl_over_batches(tr.params(), bs, 3, 20);
  EXPECT_EQ(e.n, 10);
  EXPECT_DOUBLE_EQ(rec.icl, e.mean);
  EXPECT_DOUBLE_EQ(rec.icl_se, e.se);
  EXPECT_GT(rec.icl_se, 0.0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cs
