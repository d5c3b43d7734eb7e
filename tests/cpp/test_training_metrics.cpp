// Training metrics: the evaluator's records and the per-token-loss PCA trajectory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "analysis/training_metrics.h"
#include "model.h"
#include "test_util.h"

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
  Evaluator ev(spec, tr.recipe(), tr.tokenizer(), tr.data_source());
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

using testing::random_params;
using testing::tiny_config;

// tiny_config with room for 42-token windows and the 16 tokens the texts below use.
Config wide(Config c) {
  c.n_ctx = 48;
  c.d_vocab = 16;
  return c;
}

// Paired windows: both windows of a pair end on the same target token, the late one with `late`
// tokens before it and the early one with `early`, both after [BOS]; the targets run evenly from
// the first token that has `late` before it to the text's last token.
TEST(TrainingMetrics, PairedIclWindowsEndOnTheSameToken) {
  std::vector<int> ids(200);
  for (int i = 0; i < 200; ++i) ids[static_cast<std::size_t>(i)] = 2 + i;
  const IclPairedWindows w = icl_paired_windows(ids, 0, 3, 20, 9, 4);
  ASSERT_EQ(w.late.size(), 3u);
  ASSERT_EQ(w.early.size(), 3u);
  EXPECT_EQ(w.pairs, 9);
  int row = 0;
  for (std::size_t i = 0; i < w.late.size(); ++i) {
    const Batch &L = w.late[i], &E = w.early[i];
    ASSERT_EQ(L.B, E.B);
    EXPECT_EQ(L.T, 22);
    EXPECT_EQ(E.T, 5);
    for (int r = 0; r < L.B; ++r, ++row) {
      const int x = 20 + row * (200 - 1 - 20) / 8;  // the target's index in ids
      EXPECT_EQ(L.tokens[static_cast<std::size_t>(r) * L.T], 0);
      EXPECT_EQ(E.tokens[static_cast<std::size_t>(r) * E.T], 0);
      EXPECT_EQ(L.tokens[static_cast<std::size_t>(r) * L.T + 21], 2 + x) << row;
      EXPECT_EQ(E.tokens[static_cast<std::size_t>(r) * E.T + 4], 2 + x) << row;
      EXPECT_EQ(L.tokens[static_cast<std::size_t>(r) * L.T + 1], 2 + x - 20) << row;
      EXPECT_EQ(E.tokens[static_cast<std::size_t>(r) * E.T + 1], 2 + x - 3) << row;
    }
  }
  EXPECT_EQ(row, 9);
  // Targets ~22 tokens apart, late windows of 21: a block spans at least two windows' text.
  EXPECT_EQ(w.block, 2);
  EXPECT_THROW(icl_paired_windows(std::vector<int>(20, 2), 0, 3, 20, 9, 4), std::invalid_argument);
  EXPECT_THROW(icl_paired_windows(ids, 0, 20, 20, 9, 4), std::invalid_argument);
}

// The block standard error is the spread of the block means; a partial last block counts in the mean only.
TEST(TrainingMetrics, IclBlockStandardError) {
  const IclEstimate e = icl_from_blocks({1, 3, 2, 4, 6, 8, 100}, 2);  // blocks 2, 3, 7
  EXPECT_NEAR(e.mean, 124.0 / 7, 1e-12);
  EXPECT_EQ(e.blocks, 3);
  EXPECT_EQ(e.block, 2);
  EXPECT_NEAR(e.se, std::sqrt(7.0 / 3), 1e-12);  // block means 2, 3, 7: variance 7 over 3 blocks
  // Fewer than two whole blocks: the values' own spread.
  EXPECT_NEAR(icl_from_blocks({1, 2, 3}, 2).se, icl_from_differences({1, 2, 3}).se, 1e-15);
  EXPECT_THROW(icl_from_blocks({1, 2}, 0), std::invalid_argument);
}

// A model with no attention layer predicts from the current token alone, so with pairing a token
// predicted with 40 tokens of context and with 2 has the same loss: the paired score is 0 to float
// rounding whatever the text, while unpaired windows score different tokens and do not cancel.
// With attention, each pair's difference is what a direct forward over the two windows gives.
TEST(TrainingMetrics, PairedIclComparesTheSameTokens) {
  std::vector<int> ids(600);
  Rng g(5);
  for (auto& x : ids) x = 1 + g.below(15);
  {
    const Params<float> p = random_params<float>(wide(tiny_config(0, PosEmbed::None, false, false)), 3);
    const IclEstimate e = icl_paired(p, icl_paired_windows(ids, 0, 2, 40, 64, 16));
    EXPECT_NEAR(e.mean, 0.0, 1e-5);
    EXPECT_NEAR(e.late_loss, e.early_loss, 1e-5);
    EXPECT_GT(e.late_loss, 0.5);
    const IclEstimate u = icl_over_batches(p, icl_window_batches(ids, 0, 42, 64, 16), 2, 40);
    EXPECT_GT(std::abs(u.mean), 1e-3);
  }
  const Params<float> p = random_params<float>(wide(tiny_config(2, PosEmbed::Shortformer, false, false)), 4);
  const IclPairedWindows w = icl_paired_windows(ids, 0, 2, 40, 10, 4);
  const IclEstimate e = icl_paired(p, w);
  double sum = 0;
  for (int r = 0; r < 10; ++r) {
    const int x = 40 + r * (600 - 1 - 40) / 9;
    auto last_loss = [&](int before) {
      std::vector<int> t = {0};
      t.insert(t.end(), ids.begin() + (x - before), ids.begin() + x + 1);
      ActivationCache<float> c;
      const Batch b = next_token_batch(t, 1, static_cast<int>(t.size()));
      forward(p, b.tokens, 1, b.T, c);
      return static_cast<double>(per_token_loss(c).data[static_cast<std::size_t>(before)]);
    };
    sum += last_loss(40) - last_loss(2);
  }
  EXPECT_NEAR(e.mean, sum / 10, 1e-5);
  EXPECT_EQ(e.n, 10);
}

// The score never reads positions training did not reach: 12 below the trained window or n_ctx.
TEST(TrainingMetrics, IclRefusesPositionsPastTraining) {
  EXPECT_EQ(icl_last_index(256, 256), 244);
  EXPECT_EQ(icl_last_index(512, 0), 500);
  EXPECT_EQ(icl_last_index(1024, 256), 244);
  EXPECT_NO_THROW(check_icl_index(500, 512, 512));
  EXPECT_THROW(check_icl_index(501, 512, 512), std::invalid_argument);
  EXPECT_THROW(check_icl_index(250, 1024, 256), std::invalid_argument);
  try {
    check_icl_index(250, 1024, 256);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("256-token windows it was trained on"), std::string::npos) << e.what();
  }
  EXPECT_EQ(trained_window({{"recipe", {{"data", {{"seq_len", 128}}}}}}), 128);
  EXPECT_EQ(trained_window(nlohmann::json::object()), 0);
  EXPECT_EQ(trained_window({{"recipe", {{"data", {{"seq_len", "x"}}}}}}), 0);
}

// Rows of W_pos far below their neighbours' norm are collapsed.
TEST(TrainingMetrics, CollapsedPositionRows) {
  std::vector<double> n(40, 1.0);
  n[10] = 0.5;
  n[38] = 0.69;
  n[39] = 0.72;
  EXPECT_EQ(collapsed_positions(n), (std::vector<int>{10, 38}));
  Params<float> p = random_params<float>(wide(tiny_config(1, PosEmbed::Standard, false, false)), 2);
  const std::vector<double> norms = position_norms(p);
  ASSERT_EQ(static_cast<int>(norms.size()), p.cfg.n_ctx);
  double s = 0;
  for (int d = 0; d < p.cfg.d_model; ++d) s += static_cast<double>(p.W_pos.data[static_cast<std::size_t>(3) * p.cfg.d_model + d]) * p.W_pos.data[static_cast<std::size_t>(3) * p.cfg.d_model + d];
  EXPECT_NEAR(norms[3], std::sqrt(s), 1e-9);
  EXPECT_TRUE(position_norms(random_params<float>(tiny_config(1, PosEmbed::None, false, false), 2)).empty());
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
  const std::string path = ::testing::TempDir() + "icl_windows_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".txt";
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
  Evaluator ev(eval_spec_from_json(r.eval), tr.recipe(), tr.tokenizer(), tr.data_source());
  const EvalRecord rec = ev.evaluate(tr.params(), 0, 0.0);
  const std::vector<Batch> bs = icl_window_batches(tr.tokenizer().encode_ids(text, false), tr.tokenizer().bos_id(), 22, 10, 4);
  const IclEstimate e = icl_over_batches(tr.params(), bs, 3, 20);
  EXPECT_EQ(e.n, 10);
  EXPECT_DOUBLE_EQ(rec.icl, e.mean);
  EXPECT_DOUBLE_EQ(rec.icl_se, e.se);
  EXPECT_GT(rec.icl_se, 0.0);
  // eval.icl_pairs: the paired estimator on the same text, the one `circuitscope icl` prints.
  j["eval"].erase("icl_windows");
  j["eval"]["icl_pairs"] = 12;
  Recipe rp = recipe_from_json(j);
  Trainer tp(rp);
  Evaluator evp(eval_spec_from_json(rp.eval), tp.recipe(), tp.tokenizer(), tp.data_source());
  const EvalRecord pr = evp.evaluate(tp.params(), 0, 0.0);
  const IclEstimate pe = icl_paired(tp.params(), icl_paired_windows(tp.tokenizer().encode_ids(text, false), tp.tokenizer().bos_id(), 3, 20, 12, 4));
  EXPECT_EQ(pe.n, 12);
  EXPECT_DOUBLE_EQ(pr.icl, pe.mean);
  EXPECT_DOUBLE_EQ(pr.icl_se, pe.se);
  EXPECT_EQ(metrics_json(eval_spec_from_json(rp.eval), {pr})["icl_indices"]["paired"], true);
  // Past the last trained position, or with both kinds of windows: refused.
  j["eval"]["icl_late"] = 21;
  Recipe late = recipe_from_json(j);
  Trainer tl(late);
  EXPECT_THROW(Evaluator(eval_spec_from_json(late.eval), tl.recipe(), tl.tokenizer(), tl.data_source()), std::invalid_argument);
  j["eval"]["icl_windows"] = 10;
  EXPECT_THROW(eval_spec_from_json(j["eval"]), std::invalid_argument);
  std::remove(path.c_str());
}

// A record survives a checkpoint: JSON and back, NaN as null.
TEST(TrainingMetrics, RecordJsonRoundTrip) {
  EvalRecord r;
  r.step = 7;
  r.train_loss = std::nan("");
  r.valid_loss = 1.0 / 3;
  r.icl = -0.1;
  r.icl_se = 0.02;
  r.repeated_loss = 2.5;
  r.prefix_matching = {0.1f, 0.7f};
  r.copying = {1e-7f, -3.25f};
  r.previous_token = {0.5f, 0.25f};
  r.per_token = {1.1f, 2.2f, 3.3f};
  const EvalRecord b = eval_record_from_json(nlohmann::json::parse(eval_record_json(r).dump()));
  EXPECT_EQ(b.step, 7);
  EXPECT_TRUE(std::isnan(b.train_loss));
  EXPECT_EQ(b.valid_loss, r.valid_loss);
  EXPECT_EQ(b.icl, r.icl);
  EXPECT_EQ(b.prefix_matching, r.prefix_matching);
  EXPECT_EQ(b.copying, r.copying);
  EXPECT_EQ(b.per_token, r.per_token);
  nlohmann::json bad = eval_record_json(r);
  bad["copying"] = {1, "x"};
  EXPECT_THROW(eval_record_from_json(bad), std::invalid_argument);
  EXPECT_THROW(eval_record_from_json(nlohmann::json::object()), std::invalid_argument);
}

// A forward pass asked for each row's last logits only computes exactly those rows, and what
// reads every position's logits refuses such a cache.
TEST(TrainingMetrics, LastLogitsOnlyAreTheLastRows) {
  for (Norm norm : {Norm::None, Norm::LN}) {
    Config c = wide(tiny_config(2, PosEmbed::Shortformer, false, true));
    c.normalization = norm;
    const Params<float> p = random_params<float>(c, 9);
    std::vector<int> ids(3 * 20);
    Rng g(2);
    for (auto& x : ids) x = g.below(16);
    ActivationCache<float> full, last;
    last.last_logits_only = true;
    forward(p, ids, 3, 20, full);
    forward(p, ids, 3, 20, last);
    ASSERT_EQ(last.logits.shape, (std::vector<int>{3, 1, 16}));
    for (int b = 0; b < 3; ++b)
      for (int v = 0; v < 16; ++v)
        EXPECT_NEAR(last.logits.data[static_cast<std::size_t>(b) * 16 + v], full.logits.data[(static_cast<std::size_t>(b) * 20 + 19) * 16 + v], 1e-5);
    EXPECT_THROW(per_token_loss(last), std::logic_error);
    EXPECT_THROW(loss_from_logits(last, next_token_batch(ids, 3, 20)), std::logic_error);
    Params<float> g2 = p;
    EXPECT_THROW(backward(p, last, next_token_batch(ids, 3, 20), g2), std::logic_error);
  }
}

// The names a checkpoint series is read from: the number a file's name ends with.
TEST(TrainingMetrics, CheckpointLabels) {
  EXPECT_EQ(checkpoint_label("checkpoints/Attn_Only_2L512W_C4_Code_checkpoint_2457600.pth"), 2457600);
  EXPECT_EQ(checkpoint_label("models/snapshots/char-2l/step1250.safetensors"), 1250);
  EXPECT_EQ(checkpoint_label("run-300.SAFETENSORS"), 300);
  EXPECT_EQ(checkpoint_label("c:\\runs\\model.42.pth"), 42);
  EXPECT_EQ(checkpoint_label("ckpt_22000000000.pth"), 22000000000LL);  // beyond int: tokens seen
  EXPECT_FALSE(checkpoint_label("model_final.pth"));
  EXPECT_FALSE(checkpoint_label("gelu2l.pth"));          // a digit inside a name is no label
  EXPECT_FALSE(checkpoint_label("model_12.json"));
  EXPECT_FALSE(checkpoint_label("model_12"));
  EXPECT_FALSE(checkpoint_label("_1234567890123456.pth"));  // 16 digits: not a count of anything
}

// What a series is scored with by default, sized to the model.
TEST(TrainingMetrics, CheckpointSpecDefaults) {
  Config tl;  // attn-only-2l's shape
  tl.n_layers = 2, tl.n_heads = 8, tl.d_model = 512, tl.d_head = 64, tl.n_ctx = 1024, tl.d_vocab = 48262;
  const EvalSpec s = checkpoint_eval_spec(tl, 100000);
  EXPECT_EQ(checkpoint_window(tl), 256);
  EXPECT_EQ(s.icl_late, 500);
  EXPECT_EQ(s.icl_early, 50);
  EXPECT_EQ(s.batch, 2);  // 256 x 512 x 48262 multiply-adds a window: 2 windows keep under 2e10
  EXPECT_GE(s.icl_pairs, 16);
  EXPECT_EQ(checkpoint_eval_spec(tl, 400).icl_pairs, 0);  // too little text for one late window
  Config small = wide(tiny_config(2, PosEmbed::Standard, false, false));
  small.n_ctx = 256;
  const EvalSpec t = checkpoint_eval_spec(small, 10000);
  EXPECT_EQ(t.icl_late, 200);
  EXPECT_EQ(t.icl_early, 20);
  EXPECT_EQ(t.batch, 8);
  EXPECT_EQ(t.icl_pairs, 64);
  EXPECT_EQ(checkpoint_eval_spec(wide(tiny_config(2, PosEmbed::Standard, false, false)), 10000).icl_late, 36 * 4 / 5);
  // A model trained on shorter windows than its context: the late token stays 12 below them.
  EXPECT_EQ(checkpoint_eval_spec(tl, 100000, 256).icl_late, 200);
  // The validation window is not the trained one: a 1,024 context scores token 500 with
  // 256-token validation windows (the evaluator checks the late token against n_ctx).
  Config ctx = wide(tiny_config(1, PosEmbed::Standard, false, false));
  ctx.n_ctx = 600;
  std::vector<int> ids(3000);
  Rng g(4);
  for (auto& x : ids) x = 1 + g.below(15);
  const Tokenizer tok = Tokenizer::build_ids(16);
  EvalSpec s500 = checkpoint_eval_spec(ctx, 3000);
  s500.icl_pairs = 4;
  ASSERT_EQ(s500.icl_late, 500);
  const Evaluator ev(s500, ctx, tok, ids, 64);
  EXPECT_TRUE(std::isfinite(ev.evaluate(random_params<float>(ctx, 3), 0, 0).icl));
  EXPECT_THROW(Evaluator(s500, ctx, tok, ids, 64, 256), std::invalid_argument);
}

// A checkpoint scored from held-out ids gets the record the trainer's evaluator gives on the same
// text, windows and spec: one definition of a record for a run trained here and one opened.
TEST(TrainingMetrics, CheckpointScoresAreTheTrainersRecord) {
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the cat sat on the mat and the dog sat on the log. ";
  const std::string path = ::testing::TempDir() + "ckpt_scores_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".txt";
  {
    std::ofstream f(path);
    f << text;
  }
  nlohmann::json j = {{"name", "ckpt-scores"},
                      {"model", {{"n_layers", 2}, {"n_heads", 2}, {"d_model", 16}, {"d_head", 8}, {"n_ctx", 32}}},
                      {"tokenizer", {{"kind", "bpe"}, {"text", text}, {"vocab_size", 40}}},
                      {"data", {{"kind", "text"}, {"text", text}, {"seq_len", 32}}},
                      {"steps", 5},
                      {"batch_size", 4},
                      {"eval", {{"every", 5}, {"valid_path", path}, {"batch", 4}, {"icl_early", 3}, {"icl_late", 20}, {"icl_pairs", 12}}}};
  Recipe r = recipe_from_json(j);
  Trainer tr(r);
  for (int s = 0; s < 5; ++s) tr.step();
  const EvalSpec spec = eval_spec_from_json(r.eval);
  const EvalRecord want = Evaluator(spec, tr.recipe(), tr.tokenizer(), tr.data_source()).evaluate(tr.params(), 5, std::nan(""));
  const Evaluator ev(spec, tr.recipe().model, tr.tokenizer(), tr.tokenizer().encode_ids(text, false), 32);
  const EvalRecord got = ev.evaluate(tr.params(), 5, std::nan(""));
  EXPECT_EQ(got.valid_loss, want.valid_loss);
  EXPECT_EQ(got.icl, want.icl);
  EXPECT_EQ(got.icl_se, want.icl_se);
  EXPECT_EQ(got.per_token, want.per_token);
  EXPECT_EQ(got.prefix_matching, want.prefix_matching);
  EXPECT_EQ(got.copying, want.copying);
  EXPECT_EQ(got.repeated_loss, want.repeated_loss);
  // Through evaluate_checkpoint, with the same choices given as options.
  CheckpointEvalOptions o;
  o.window = 32, o.batch = 4, o.icl_early = 3, o.icl_late = 20, o.icl_pairs = 12, o.seed = 1;
  const CheckpointEval e = evaluate_checkpoint(tr.params(), tr.tokenizer(), text, 22000000000LL, o);
  EXPECT_EQ(e.record.step, 22000000000LL);
  EXPECT_EQ(e.record.icl, want.icl);
  EXPECT_EQ(e.record.per_token, want.per_token);
  EXPECT_EQ(e.held_out_tokens, static_cast<int>(tr.tokenizer().encode_ids(text, false).size()));
  const nlohmann::json ej = checkpoint_eval_json(e);
  EXPECT_EQ(ej["record"]["step"].get<std::int64_t>(), 22000000000LL);
  EXPECT_EQ(checkpoint_spec_from_json(ej["spec"]).icl_pairs, 12);
  // No text: head scores only.
  const CheckpointEval h = evaluate_checkpoint(tr.params(), tr.tokenizer(), "", 3);
  EXPECT_TRUE(std::isnan(h.record.valid_loss));
  EXPECT_TRUE(std::isnan(h.record.icl));
  EXPECT_TRUE(h.record.per_token.empty());
  EXPECT_EQ(h.record.prefix_matching.size(), 4u);
  EXPECT_EQ(h.spec.icl_pairs, 0);
  // Too short a text, or a late token past the context: a sentence.
  EXPECT_THROW(evaluate_checkpoint(tr.params(), tr.tokenizer(), "the cat", 0), std::invalid_argument);
  CheckpointEvalOptions past;
  past.icl_late = 31;
  EXPECT_THROW(evaluate_checkpoint(tr.params(), tr.tokenizer(), text, 0, past), std::invalid_argument);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cs
