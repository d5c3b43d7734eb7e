// The incremental forward pass (forward_incremental, model.h) against a fresh forward() over the
// same tokens: every activation of the cache, bit for bit, over random edit sequences (append,
// delete, replace in the middle, cut, the same tokens again) in every configuration the core has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "analysis/forward_outputs.h"
#include "analysis/model_session.h"
#include "kernels/softmax.h"
#include "model.h"
#include "rng.h"
#include "test_util.h"

namespace cs {
namespace {

using testing::random_params;
using testing::tiny_norm_mlp_config;

// Every tensor of two caches equal bit for bit (as bytes), naming the first that differs.
void expect_same_cache(const ActivationCache<float>& a, const ActivationCache<float>& b, const std::string& where) {
  const auto same = [&](const Tensor<float>& x, const Tensor<float>& y, const std::string& name) {
    ASSERT_EQ(x.shape, y.shape) << where << ": " << name;
    ASSERT_EQ(0, std::memcmp(x.data.data(), y.data.data(), x.data.size() * sizeof(float))) << where << ": " << name;
  };
  ASSERT_EQ(a.tokens, b.tokens) << where;
  same(a.embed, b.embed, "hook_embed");
  same(a.pos_embed, b.pos_embed, "hook_pos_embed");
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const LayerCache<float>&x = a.layers[l], &y = b.layers[l];
    const std::string p = "blocks." + std::to_string(l) + ".";
    same(x.resid_pre, y.resid_pre, p + "hook_resid_pre");
    same(x.ln1_scale, y.ln1_scale, p + "ln1.hook_scale");
    same(x.ln1_out, y.ln1_out, p + "ln1.hook_normalized");
    same(x.q, y.q, p + "attn.hook_q");
    same(x.k, y.k, p + "attn.hook_k");
    same(x.k_unsmeared, y.k_unsmeared, p + "attn.hook_k_unsmeared");
    same(x.v, y.v, p + "attn.hook_v");
    same(x.pattern, y.pattern, p + "attn.hook_pattern");
    same(x.z, y.z, p + "attn.hook_z");
    same(x.result, y.result, p + "attn.hook_result");
    same(x.attn_out, y.attn_out, p + "hook_attn_out");
    same(x.resid_mid, y.resid_mid, p + "hook_resid_mid");
    same(x.ln2_scale, y.ln2_scale, p + "ln2.hook_scale");
    same(x.ln2_out, y.ln2_out, p + "ln2.hook_normalized");
    same(x.mlp_pre, y.mlp_pre, p + "mlp.hook_pre");
    same(x.mlp_post, y.mlp_post, p + "mlp.hook_post");
    same(x.mlp_out, y.mlp_out, p + "hook_mlp_out");
    same(x.resid_post, y.resid_post, p + "hook_resid_post");
  }
  same(a.resid_final, b.resid_final, "resid_final");
  same(a.ln_final_scale, b.ln_final_scale, "ln_final.hook_scale");
  same(a.ln_final_out, b.ln_final_out, "ln_final.hook_normalized");
  same(a.logits, b.logits, "logits");
}

// A random edit of `ids` within 1..n_ctx tokens; `first` is set to the first position it changes.
std::vector<int> random_edit(std::vector<int> ids, int n_ctx, int V, Rng& r, int& first) {
  const int T = static_cast<int>(ids.size());
  const int kind = static_cast<int>(r.uniform() * 5);
  const auto tok = [&] { return static_cast<int>(r.uniform() * V) % V; };
  const auto at = [&](int n) { return static_cast<int>(r.uniform() * n) % n; };
  if (kind == 0 && T < n_ctx) {  // type one token at the end
    ids.push_back(tok());
    first = T;
  } else if (kind == 1 && T > 1) {  // delete one token
    first = at(T);
    ids.erase(ids.begin() + first);
  } else if (kind == 2) {  // replace one token (maybe by itself)
    first = at(T);
    ids[first] = tok();
  } else if (kind == 3 && T < n_ctx) {  // insert one in the middle
    first = at(T + 1);
    ids.insert(ids.begin() + first, tok());
  } else if (kind == 4 && T > 2) {  // cut the end
    ids.resize(1 + at(T - 1));
    first = static_cast<int>(ids.size());
  } else {
    first = T;  // the same tokens again
  }
  return ids;
}

std::vector<Config> configs() {
  std::vector<Config> out;
  for (PosEmbed pos : {PosEmbed::Standard, PosEmbed::Shortformer, PosEmbed::None})
    for (Norm norm : {Norm::None, Norm::LN, Norm::LNPre})
      for (int mlp : {0, 8}) {
        Config c = tiny_norm_mlp_config(2, pos, norm, mlp, Act::GELU, pos == PosEmbed::Shortformer && mlp == 0);
        c.use_bias = norm != Norm::None || mlp > 0;  // with and without biases
        c.n_ctx = 24;
        out.push_back(c);
      }
  return out;
}

TEST(IncrementalForward, EqualsTheFullPassBitForBitOverRandomEdits) {
  for (const Config& c : configs()) {
    const Params<float> p = random_params<float>(c, 5);
    Rng r(11);
    std::vector<int> ids = {1, 2, 3};
    ActivationCache<float> inc, full;
    forward<float>(p, ids, 1, static_cast<int>(ids.size()), inc);
    int reused = 0;
    for (int step = 0; step < 200; ++step) {
      int first = 0;
      ids = random_edit(ids, c.n_ctx, c.d_vocab, r, first);
      const int T = static_cast<int>(ids.size());
      const int from = forward_incremental<float>(p, ids, inc);
      // Every position before the first changed token is kept (at least the last is computed).
      ASSERT_GE(from, std::min(first, T - 1)) << testing::config_name(c) << " step " << step;
      ASSERT_LE(from, T - 1);
      reused += from > 0;
      forward<float>(p, ids, 1, T, full);
      expect_same_cache(inc, full, testing::config_name(c) + " step " + std::to_string(step) + " T " + std::to_string(T));
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(reused, 100) << testing::config_name(c) << ": the cache was reused in too few steps";
  }
}

TEST(IncrementalForward, StartsAgainAfterAnotherKindOfPass) {
  const Config c = tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LN, 8, Act::GELU);
  const Params<float> p = random_params<float>(c, 3);
  const std::vector<int> ids = {1, 2, 3, 4};
  ActivationCache<float> cache, full;
  // After an intervention, a batch, or a pass that kept only the last logits: a full pass.
  Intervention iv;
  iv.ablations.push_back({0, 1});
  forward<float>(p, ids, 1, 4, cache, iv);
  EXPECT_EQ(0, forward_incremental<float>(p, {1, 2, 3, 4, 5}, cache));
  forward<float>(p, {1, 2, 3, 4, 1, 2, 3, 4}, 2, 4, cache);
  EXPECT_EQ(0, forward_incremental<float>(p, {1, 2, 3, 4, 5}, cache));
  EXPECT_EQ(5, forward_incremental<float>(p, {1, 2, 3, 4, 5, 6}, cache));
  forward<float>(p, {1, 2, 3, 4, 5, 6}, 1, 6, full);
  expect_same_cache(cache, full, "after the reuse");
  // Bad tokens are refused with the forward pass's sentence, and the cache stays usable.
  EXPECT_THROW(forward_incremental<float>(p, {1, 2, 3, 4, 5, 99}, cache), std::invalid_argument);
  EXPECT_EQ(3, forward_incremental<float>(p, {1, 2, 3, 5}, cache));
  forward<float>(p, {1, 2, 3, 5}, 1, 4, full);
  expect_same_cache(cache, full, "after a refused pass");
}

// The results run() gives, compared with another session's fresh run over the same tokens.
void expect_same_run(const RunExtras& a, const RunExtras& b, const std::string& where) {
  ASSERT_EQ(a.loss.size(), b.loss.size()) << where;
  ASSERT_EQ(0, std::memcmp(a.loss.data(), b.loss.data(), a.loss.size() * sizeof(float))) << where << ": loss";
  ASSERT_TRUE(a.top && b.top) << where;
  EXPECT_EQ(a.top->ids.data, b.top->ids.data) << where << ": top ids";
  // Compared as bytes: a last row left out holds NaN.
  const auto same_floats = [&](const std::vector<float>& x, const std::vector<float>& y, const char* name) {
    ASSERT_EQ(x.size(), y.size()) << where << ": " << name;
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float))) << where << ": " << name;
  };
  same_floats(a.top->probs.data, b.top->probs.data, "top probs");
  ASSERT_TRUE(a.text_scores && b.text_scores) << where;
  const auto same_bytes = [&](const Tensor<float>& x, const Tensor<float>& y, const char* name) {  // NaN compared as bytes
    ASSERT_EQ(x.size(), y.size()) << where << ": " << name;
    EXPECT_EQ(0, std::memcmp(x.ptr(), y.ptr(), x.size() * sizeof(float))) << where << ": " << name;
  };
  same_bytes(a.text_scores->prefix_matching, b.text_scores->prefix_matching, "prefix matching");
  same_bytes(a.text_scores->previous_token, b.text_scores->previous_token, "previous token");
  same_bytes(a.text_scores->stripe, b.text_scores->stripe, "stripe");
  same_floats(a.probs_of, b.probs_of, "probs_of");
  EXPECT_EQ(a.top_keys, b.top_keys) << where << ": top keys";
  EXPECT_EQ(std::isnan(a.mean_loss) ? 0.0 : a.mean_loss, std::isnan(b.mean_loss) ? 0.0 : b.mean_loss) << where;
}

// A fresh pass's results as a pass that left rows `from`.. out gives them (RunExtras::pending_from):
// their losses NaN, top k -1 with probability NaN, probs_of NaN, the mean over the rest.
RunExtras left_out_from(RunExtras y, int from, int first) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int T = static_cast<int>(y.loss.size());
  std::fill(y.loss.begin() + from, y.loss.end(), nan);
  if (y.top) {
    std::fill(y.top->ids.data.begin() + static_cast<std::size_t>(from) * y.top->k, y.top->ids.data.end(), -1);
    std::fill(y.top->probs.data.begin() + static_cast<std::size_t>(from) * y.top->k, y.top->probs.data.end(), nan);
  }
  if (!y.probs_of.empty()) std::fill(y.probs_of.begin() + y.probs_of.size() / T * from, y.probs_of.end(), nan);
  y.mean_loss = mean_token_loss(y.loss, first, T);
  y.pending_from = from;
  return y;
}

// `steps` random edits typed into one kept pass under `iv` (run_sequence with a KeptRun, logits
// computed where read), each pass's results against a fresh pass under `iv` that keeps every logit,
// and the two caches' patterns and residual streams compared; `edit` may change the ids and the
// options after each edit. A pass without RunOptions::last_row is compared with the fresh pass's
// rows before its pending_from, which must be the last row or, when the pass changed nothing
// before the first row the last one left out, that row (`deferred` counts these). Returns how
// many passes reused positions (-1 after a failure).
int typed_passes_equal_fresh(const Params<float>& p, const Intervention& iv, RunOptions o, int steps, const std::string& what,
                             const std::function<void(std::vector<int>&, RunOptions&, int)>& edit, int* deferred = nullptr) {
  Rng r(5);
  std::vector<int> ids = {1, 2, 3, 1, 2, 3};
  ActivationCache<float> cache;
  KeptRun kept;
  o.logits = false;
  int reused = 0;
  int pending = 0, prev_T = 0;  // the kept pass's pending_from and length (none kept: 0)
  for (int step = 0; step < steps; ++step) {
    int first = 0;
    ids = random_edit(ids, p.cfg.n_ctx, p.cfg.d_vocab, r, first);
    edit(ids, o, step);
    RunOptions full = o;
    full.logits = true;
    const int missing = pending;  // the first row the kept pass left out
    const RunExtras x = run_sequence(p, ids, iv, o, -1, cache, "run", &kept);
    ActivationCache<float> own;
    RunExtras y = run_sequence(p, ids, iv, full, -1, own);
    const std::string where = what + ", step " + std::to_string(step);
    const int T = static_cast<int>(ids.size());
    reused += x.changed_from > 0;
    if (o.last_row) {
      EXPECT_EQ(x.pending_from, T) << where;
    } else if (missing < prev_T && missing <= x.changed_from && o.shown_row < missing) {
      EXPECT_EQ(x.pending_from, missing) << where << ": rows left out before the change stay out";
      if (deferred && missing < T - 1) ++*deferred;
    } else {
      EXPECT_EQ(x.pending_from, o.shown_row == T - 1 ? T : T - 1) << where;
    }
    if (x.pending_from < T) y = left_out_from(std::move(y), x.pending_from, 0);
    pending = x.pending_from;
    prev_T = T;
    expect_same_run(x, y, where);
    for (int l = 0; l < p.cfg.n_layers; ++l) {
      EXPECT_EQ(cache.layers[l].pattern.data, own.layers[l].pattern.data) << where << ": layer " << l << " pattern";
      EXPECT_EQ(cache.layers[l].resid_post.data, own.layers[l].resid_post.data) << where << ": layer " << l << " resid_post";
    }
    if (::testing::Test::HasFailure()) return -1;
  }
  return reused;
}

// A vocabulary of several logit blocks (kLogitBlock): a session's passes, incremental and computing
// the logits a block at a time, give the bits of a fresh pass that keeps every logit, over random
// edits (the text scores read from the kept parts of the queries before the first change).
// Random weights of a 2-layer model whose vocabulary is several logit blocks, 40 positions.
Params<float> many_logit_blocks(std::uint64_t seed) {
  Config c = tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LNPre, 0, Act::GELU);
  c.d_vocab = 2 * kLogitBlock + 904;
  c.n_ctx = 40;
  return random_params<float>(c, seed);
}

TEST(IncrementalForward, ManyLogitBlocksGiveTheBitsOfTheKeptLogits) {
  const Params<float> p = many_logit_blocks(7);
  const Config& c = p.cfg;
  RunOptions o;
  o.topk = 5, o.text_scores = true, o.probs_k = 2, o.top_keys = 3;
  const int reused = typed_passes_equal_fresh(p, Intervention(), o, 60, "clean", [&](std::vector<int>& ids, RunOptions& opts, int step) {
    if (step % 3 == 0) {  // the text so far again: a repeated block
      const std::vector<int> head(ids.begin(), ids.begin() + std::min<std::size_t>(ids.size(), c.n_ctx - ids.size()));
      ids.insert(ids.end(), head.begin(), head.end());
    }
    opts.probs_of.clear();
    for (std::size_t t = 0; t < ids.size(); ++t) opts.probs_of.insert(opts.probs_of.end(), {ids[t], static_cast<int>((t * 977) % c.d_vocab)});
  });
  EXPECT_GT(reused, 30);
}

// A pass may leave the last row of logits out (RunOptions::last_row, what the induction view asks
// while typing); tokens typed at or after it (the last token replaced, tokens appended) leave it
// out with their own rows (pending_from), unless a row among them is shown (shown_row); a pass
// that asks for the rows, or changes a token before them, computes them: every pass, whichever
// it asked, gives the bits of a fresh pass asked the same on the rows before its pending_from
// (typed_passes_equal_fresh), with a probsOf that holds -1 on the last row (an ablated pass's
// top k).
TEST(IncrementalForward, ALastRowLeftOutIsComputedWhenALaterPassNeedsIt) {
  const Params<float> p = many_logit_blocks(17);
  RunOptions o;
  o.topk = 4, o.text_scores = true, o.probs_k = 2, o.top_keys = 2;
  int deferred = 0;
  std::vector<int> before;
  const int reused = typed_passes_equal_fresh(p, Intervention(), o, 60, "last row", [&](std::vector<int>& ids, RunOptions& opts, int step) {
    // Typing at the end of the last text, three passes in five: a token appended, the last one
    // replaced (a sub-word that grows), or both (one that splits).
    if (step % 5 != 0 && step % 5 != 4 && !before.empty()) {
      ids = before;
      if (static_cast<int>(ids.size()) > p.cfg.n_ctx - 2) ids.resize(p.cfg.n_ctx / 2);
      if (step % 4 != 0) ids.back() = (step * 17 + 1) % p.cfg.d_vocab;
      if (step % 4 != 1) ids.push_back((step * 31) % p.cfg.d_vocab);
    }
    before = ids;
    opts.last_row = step % 3 == 2;
    opts.shown_row = step % 7 == 3 ? static_cast<int>(ids.size()) - 2 : -1;  // a picked token among the last
    opts.probs_of.clear();
    for (std::size_t t = 0; t < ids.size(); ++t) opts.probs_of.insert(opts.probs_of.end(), {ids[t], t + 1 == ids.size() ? -1 : 3});
    if (opts.last_row) opts.probs_of.back() = 5;
  }, &deferred);
  EXPECT_GT(reused, 30);
  EXPECT_GT(deferred, 5) << "passes that left out more than the last row";

  // Left out: -1 and NaN on the last row, and every other row what a pass with it gives.
  const std::vector<int> ids = {3, 1, 4, 1, 5, 9, 2, 6};
  RunOptions with = o, without = o;
  with.probs_of.assign(2 * ids.size(), 7);
  without.probs_of = with.probs_of;
  without.last_row = false;
  ActivationCache<float> a, b;
  const RunExtras x = run_sequence(p, ids, Intervention(), with, -1, a);
  const RunExtras y = run_sequence(p, ids, Intervention(), without, -1, b);
  const std::size_t T = ids.size(), last = (T - 1) * 4;
  EXPECT_EQ(0, std::memcmp(x.loss.data(), y.loss.data(), T * sizeof(float)));
  EXPECT_TRUE(std::equal(x.top->ids.data.begin(), x.top->ids.data.begin() + last, y.top->ids.data.begin()));
  EXPECT_TRUE(std::equal(x.top->probs.data.begin(), x.top->probs.data.begin() + last, y.top->probs.data.begin()));
  for (std::size_t j = last; j < T * 4; ++j) {
    EXPECT_EQ(y.top->ids.data[j], -1);
    EXPECT_TRUE(std::isnan(y.top->probs.data[j]));
  }
  EXPECT_TRUE(std::equal(x.probs_of.begin(), x.probs_of.end() - 2, y.probs_of.begin()));
  EXPECT_TRUE(std::isnan(y.probs_of[2 * T - 1]) && std::isnan(y.probs_of[2 * T - 2]));
  EXPECT_TRUE(std::isfinite(x.probs_of[2 * T - 1]));
  // A -1 is refused on a row that is computed.
  with.probs_of.back() = -1;
  EXPECT_THROW(run_sequence(p, ids, Intervention(), with, -1, a), std::invalid_argument);
}

// Under an intervention that replaces what it replaces position by position (zero, mean and
// mean-over-positions ablations of heads and MLPs, at every position or at some; positions
// removed), a pass is incremental and gives the bits of a fresh pass under it, its patterns and
// residual streams included; under a path cut or a resample ablation every pass is whole.
TEST(IncrementalForward, AnAblatedPassIsIncrementalWithTheSameBits) {
  Config c = tiny_norm_mlp_config(2, PosEmbed::Standard, Norm::LNPre, 5, Act::GELU);
  c.n_ctx = 40;
  const Params<float> p = random_params<float>(c, 11);
  std::vector<int> ref_tokens;
  Rng rr(9);
  for (int i = 0; i < 6 * c.n_ctx; ++i) ref_tokens.push_back(static_cast<int>(rr.uniform() * c.d_vocab) % c.d_vocab);
  const auto reference = ablation_reference(p, ref_tokens, 6, c.n_ctx);
  std::vector<float> per_pos(static_cast<std::size_t>(c.n_ctx) * c.d_model), one(c.d_model);
  for (float& v : per_pos) v = static_cast<float>(rr.uniform() - 0.5);
  for (float& v : one) v = static_cast<float>(rr.uniform() - 0.5);
  struct Case {
    const char* name;
    Intervention iv;
    bool incremental;
  };
  std::vector<Case> cases;
  const auto add = [&](const char* name, Intervention iv, bool incremental) { cases.push_back({name, std::move(iv), incremental}); };
  Intervention zero;
  zero.ablations.push_back({0, 1});
  zero.mlp_ablations.push_back({1});
  add("zero: a head and an MLP", zero, true);
  Intervention given;
  given.ablations.push_back({1, 0, true, per_pos, {0, 2}});
  given.mlp_ablations.push_back({0, true, one, {}});
  add("given values at some positions", given, true);
  for (Ablation kind : {Ablation::Mean, Ablation::MeanAll, Ablation::Resample}) {
    Intervention iv;
    iv.ablations.push_back({1, 1});
    iv.ablation = kind;
    iv.reference = reference;
    add(ablation_name(kind), iv, kind != Ablation::Resample);
  }
  Intervention nopos;
  nopos.remove_pos = true;
  add("positions removed", nopos, true);
  Intervention cut;
  cut.cuts.push_back({0, 0, 1, 1, Input::K});
  add("a path cut", cut, false);

  for (const Case& k : cases) {
    RunOptions o;
    o.topk = 3, o.text_scores = true, o.probs_k = 1, o.top_keys = 2;
    const int reused = typed_passes_equal_fresh(p, k.iv, o, 30, k.name, [](std::vector<int>& ids, RunOptions& opts, int) {
      while (ids.size() < 3) ids.push_back(1);  // the positions some cases name
      opts.probs_of.assign(ids.begin(), ids.end());
    });
    if (reused < 0) return;
    if (k.incremental) EXPECT_GT(reused, 15) << k.name;
    else EXPECT_EQ(reused, 0) << k.name;
  }
}

// The log-sum-exp folded a block at a time is that of the whole row (to float rounding), and a row
// of one block is its maximum plus the log of the summed exponentials, as before blocks.
TEST(LogSumExpRow, BlocksFoldToTheWholeRow) {
  Rng r(3);
  std::vector<float> row(3 * kLogitBlock + 17), scratch;
  for (float& v : row) v = static_cast<float>(r.uniform() * 30 - 15);
  row[kLogitBlock + 5] = 40;  // the largest in a later block: the running sum is rescaled
  double mx = *std::max_element(row.begin(), row.end()), sum = 0;
  for (float v : row) sum += std::exp(v - mx);
  EXPECT_NEAR(log_sum_exp_row(row.data(), static_cast<int>(row.size()), scratch), mx + std::log(sum), 1e-5);
  const float one = log_sum_exp_row(row.data(), 100, scratch);
  const float m = *std::max_element(row.begin(), row.begin() + 100);
  std::vector<float> e(100);
  EXPECT_EQ(one, m + std::log(kernels::exp_shifted_sum(row.data(), m, e.data(), 100)));
}

// Typing into a model session: each clean run() after the session's own is incremental, its
// losses, top-k rows and scores equal a fresh pass's (with the logits kept or computed where
// read); a run with an ablation or a batch pass in between is kept apart, so the next one still
// reuses its positions, and another model's run drops the session's kept passes.
TEST(IncrementalForward, TypingIntoASessionGivesTheFreshResults) {
  ModelSession m(load_model_file("models/bpe-2l.safetensors"));
  ModelSession other(load_model_file("models/char-2l.safetensors"));
  for (bool logits : {false, true}) {  // (logits wanted after a pass that skipped them: a full pass)
  RunOptions o;
  o.topk = 5;
  o.text_scores = true;
  o.top_keys = 3;     // the keys each query attends to most: rows before the change kept
  o.result = true;    // each head's output, computed from hook_z (run() does not keep them)
  o.logits = logits;  // without: the logit rows computed where read, 64 at a time
  RunOptions full = o;
  full.logits = true;
  const std::string text = "Alice was beginning to get very tired of sitting by her sister on the bank. Alice was beginning";
  std::vector<int> changed;
  for (std::size_t n = 10; n <= text.size(); n += 7) {
    std::vector<int> ids;
    for (const Token& t : m.tokenize(text.substr(0, n))) ids.push_back(t.id);
    if (n == 45) m.run(ids, Intervention{{{0, 1}}}, o);       // an ablated pass in between
    if (n == 59) other.run({1, 2, 3}, Intervention(), o);      // another model's pass
    if (n == 73) m.forward_batch(ids, 1, static_cast<int>(ids.size()));
    const RunExtras x = m.run(ids, Intervention(), o);
    changed.push_back(x.changed_from);
    ActivationCache<float> own;  // a fresh pass of its own (another session would take the kept cache)
    const RunExtras y = run_sequence(m.file().params, ids, Intervention(), full, m.file().tokenizer.bos_id(), own);
    expect_same_run(x, y, "typed " + std::to_string(n) + " characters" + (logits ? "" : ", logits skipped"));
    ActivationCache<float> kept;  // a pass keeping hook_result, as forward() does by default
    forward<float>(m.file().params, ids, 1, static_cast<int>(ids.size()), kept);
    ASSERT_TRUE(m.cache().layers[0].result.data.empty()) << "run() computes head outputs where read";
    std::vector<float> want;
    for (const auto& lc : kept.layers) want.insert(want.end(), lc.result.data.begin(), lc.result.data.end());
    ASSERT_EQ(x.result.size(), want.size());
    EXPECT_EQ(0, std::memcmp(x.result.data(), want.data(), want.size() * sizeof(float))) << n << ": hook_result";
    EXPECT_EQ(m.cache().logits.size(), logits ? ids.size() * m.config().d_vocab : 0u);
    if (::testing::Test::HasFatalFailure()) return;
    if (n == 45 || n == 73) EXPECT_GT(x.changed_from, 0) << n;
    if (n == 59) EXPECT_EQ(x.changed_from, 0) << "after another model's run";
  }
  EXPECT_EQ(changed[0], 0);
  int reused = 0;
  for (int f : changed) reused += f > 0;
  EXPECT_GE(reused, static_cast<int>(changed.size()) - 5);
  }
}

// The top k of a row read a block at a time: the same ids as the whole row, a tie across blocks
// going to the smaller id.
TEST(TopK, BlocksGiveTheWholeRowsIds) {
  std::vector<float> row(2 * kLogitBlock + 9, 0.0f);
  row[3] = 2, row[kLogitBlock + 1] = 5, row[2 * kLogitBlock + 2] = 5, row[kLogitBlock - 1] = 2, row[7] = 4;
  int ids[4], whole[4], n = 0;
  float values[4], probs[4];
  for (int v0 = 0; v0 < static_cast<int>(row.size()); v0 += kLogitBlock)
    top_k_add(row.data() + v0, std::min(kLogitBlock, static_cast<int>(row.size()) - v0), v0, 4, ids, values, n);
  top_k_row(row.data(), static_cast<int>(row.size()), 4, 0.0f, whole, probs);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(std::vector<int>(ids, ids + 4), (std::vector<int>{kLogitBlock + 1, 2 * kLogitBlock + 2, 7, 3}));
  EXPECT_EQ(std::vector<int>(ids, ids + 4), std::vector<int>(whole, whole + 4));
}

}  // namespace
}  // namespace cs
