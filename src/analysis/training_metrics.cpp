// Training metrics: validation loss, ICL score, head scores and the per-token-loss PCA trajectory.
#include "analysis/training_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "analysis/corpus_stats.h"
#include "analysis/scores.h"
#include "checks.h"
#include "model.h"

namespace cs {

EvalSpec eval_spec_from_json(const nlohmann::json& j, const std::string& base_dir) {
  EvalSpec s;
  if (!j.is_object()) throw std::invalid_argument("recipe: \"eval\" must be an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const char* known[] = {"every", "valid_path", "batch", "icl_early", "icl_late", "icl_windows", "icl_pairs", "repeat_len", "seed"};
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; }) == std::end(known))
      throw std::invalid_argument("recipe: unknown field \"" + it.key() + "\" in eval");
  }
  auto get = [&](const char* k, int def) {
    if (!j.contains(k)) return def;
    if (!j[k].is_number_integer()) throw std::invalid_argument(std::string("recipe: eval.") + k + " must be an integer");
    return j[k].get<int>();
  };
  s.every = get("every", 0);
  s.batch = get("batch", 8);
  s.icl_early = get("icl_early", 20);
  s.icl_late = get("icl_late", 200);
  s.icl_windows = get("icl_windows", 0);
  s.icl_pairs = get("icl_pairs", 0);
  s.repeat_len = get("repeat_len", 0);
  s.seed = static_cast<std::uint64_t>(get("seed", 1));
  if (j.contains("valid_path")) {
    std::string p = j["valid_path"].get<std::string>();
    s.valid_path = (base_dir.empty() || p.empty() || p[0] == '/') ? p : base_dir + "/" + p;
  }
  if (s.every < 0 || s.batch < 1 || s.batch > 1024) throw std::invalid_argument("recipe: eval.every must be >= 0 and eval.batch 1..1024");
  if (s.icl_early < 0 || s.icl_late <= s.icl_early) throw std::invalid_argument("recipe: eval needs 0 <= icl_early < icl_late");
  if (s.icl_windows < 0 || s.icl_windows > 1000000) throw std::invalid_argument("recipe: eval.icl_windows must be 0..1000000");
  if (s.icl_windows > 0 && s.valid_path.empty()) throw std::invalid_argument("recipe: eval.icl_windows needs eval.valid_path");
  if (s.icl_pairs < 0 || s.icl_pairs > 1000000) throw std::invalid_argument("recipe: eval.icl_pairs must be 0..1000000");
  if (s.icl_pairs > 0 && s.valid_path.empty()) throw std::invalid_argument("recipe: eval.icl_pairs needs eval.valid_path");
  if (s.icl_pairs > 0 && s.icl_windows > 0)
    throw std::invalid_argument("recipe: eval has both icl_pairs (paired windows) and icl_windows (the earlier unpaired ones); keep one");
  return s;
}

std::vector<Batch> icl_window_batches(const std::vector<int>& ids, int bos, int L, int windows, int batch) {
  if (L < 2) throw std::invalid_argument("ICL windows: a window needs at least 2 tokens");
  if (static_cast<int>(ids.size()) < L - 1)
    throw std::invalid_argument("ICL windows: the text has " + std::to_string(ids.size()) + " tokens, fewer than one window of " +
                                std::to_string(L - 1));
  if (windows < 1 || batch < 1) throw std::invalid_argument("ICL windows: need at least one window and a batch of at least 1");
  std::vector<Batch> out;
  const long long span = static_cast<long long>(ids.size()) - (L - 1);
  for (int first = 0; first < windows; first += batch) {
    const int nb = std::min(batch, windows - first);
    std::vector<int> w;
    w.reserve(static_cast<std::size_t>(nb) * L);
    for (int r = first; r < first + nb; ++r) {
      const long long start = windows > 1 ? static_cast<long long>(r) * span / windows : 0;
      w.push_back(bos >= 0 ? bos : ids[static_cast<std::size_t>(start)]);
      w.insert(w.end(), ids.begin() + start, ids.begin() + start + L - 1);
    }
    out.push_back(next_token_batch(w, nb, L));
  }
  return out;
}

nlohmann::json eval_record_json(const EvalRecord& r) {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  return {{"step", r.step}, {"train_loss", num(r.train_loss)}, {"valid_loss", num(r.valid_loss)}, {"icl", num(r.icl)},
          {"icl_se", num(r.icl_se)}, {"repeated_loss", num(r.repeated_loss)}, {"prefix_matching", r.prefix_matching},
          {"copying", r.copying}, {"previous_token", r.previous_token}, {"per_token", r.per_token}};
}

EvalRecord eval_record_from_json(const nlohmann::json& j) {
  auto num = [&](const char* k) {
    if (!j.contains(k)) throw std::invalid_argument(std::string("a metrics record has no \"") + k + "\"");
    if (j[k].is_null()) return std::nan("");
    if (!j[k].is_number()) throw std::invalid_argument(std::string("a metrics record's \"") + k + "\" is not a number");
    return j[k].get<double>();
  };
  auto floats = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_array()) throw std::invalid_argument(std::string("a metrics record's \"") + k + "\" is not a list");
    std::vector<float> out;
    for (const auto& x : j[k]) {
      if (!x.is_number()) throw std::invalid_argument(std::string("a metrics record's \"") + k + "\" holds a value that is not a number");
      out.push_back(x.get<float>());
    }
    return out;
  };
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) throw std::invalid_argument("a metrics record has no step");
  EvalRecord r;
  r.step = j["step"].get<std::int64_t>();
  r.train_loss = num("train_loss");
  r.valid_loss = num("valid_loss");
  r.icl = num("icl");
  r.icl_se = num("icl_se");
  r.repeated_loss = num("repeated_loss");
  r.prefix_matching = floats("prefix_matching");
  r.copying = floats("copying");
  r.previous_token = floats("previous_token");
  r.per_token = floats("per_token");
  return r;
}

IclPairedWindows icl_paired_windows(const std::vector<int>& ids, int bos, int early, int late, int windows, int batch) {
  if (early < 0 || late <= early) throw std::invalid_argument("ICL windows: need 0 <= early < late");
  if (windows < 1 || batch < 1) throw std::invalid_argument("ICL windows: need at least one window and a batch of at least 1");
  const long long n = static_cast<long long>(ids.size());
  if (n < late + 1)
    throw std::invalid_argument("ICL windows: the text has " + std::to_string(n) + " tokens, fewer than one window of " +
                                std::to_string(late + 1));
  IclPairedWindows w;
  w.early_index = early;
  w.late_index = late;
  w.pairs = windows;
  // Targets x_r = late + r * (n - 1 - late) / (windows - 1): the first and last tokens that can be scored, evenly between.
  const long long room = n - 1 - late;
  auto target = [&](int r) { return late + (windows > 1 ? static_cast<long long>(r) * room / (windows - 1) : 0); };
  const double spacing = windows > 1 ? static_cast<double>(room) / (windows - 1) : 1.0;
  w.block = std::max(1, static_cast<int>(std::ceil(2.0 * (late + 1) / std::max(spacing, 1e-9))));
  auto window = [&](std::vector<int>& out, long long x, int before) {
    out.push_back(bos >= 0 ? bos : ids[static_cast<std::size_t>(x - before)]);
    out.insert(out.end(), ids.begin() + (x - before), ids.begin() + x + 1);
  };
  for (int first = 0; first < windows; first += batch) {
    const int nb = std::min(batch, windows - first);
    std::vector<int> lw, ew;
    lw.reserve(static_cast<std::size_t>(nb) * (late + 2));
    ew.reserve(static_cast<std::size_t>(nb) * (early + 2));
    for (int r = first; r < first + nb; ++r) {
      window(lw, target(r), late);
      window(ew, target(r), early);
    }
    w.late.push_back(next_token_batch(lw, nb, late + 2));
    w.early.push_back(next_token_batch(ew, nb, early + 2));
  }
  return w;
}

IclEstimate icl_from_blocks(const std::vector<double>& d, int block) {
  IclEstimate e = icl_from_differences(d);
  if (block < 1) throw std::invalid_argument("ICL: a block holds at least one pair");
  const int nblocks = e.n / block;
  if (nblocks < 2) return e;
  std::vector<double> means(static_cast<std::size_t>(nblocks), 0.0);
  for (int b = 0; b < nblocks; ++b) {
    for (int i = 0; i < block; ++i) means[b] += d[static_cast<std::size_t>(b) * block + i];
    means[b] /= block;
  }
  const IclEstimate m = icl_from_differences(means);
  e.se = m.se;
  e.blocks = nblocks;
  e.block = block;
  return e;
}

IclEstimate icl_paired(const Params<float>& p, const IclPairedWindows& w) {
  if (w.late_index + 2 > p.cfg.n_ctx)
    throw std::invalid_argument("ICL: the score needs windows of " + std::to_string(w.late_index + 2) +
                                " tokens but this model's context holds " + std::to_string(p.cfg.n_ctx));
  std::vector<double> late, early;
  late.reserve(static_cast<std::size_t>(w.pairs));
  early.reserve(static_cast<std::size_t>(w.pairs));
  // Each window's one scored prediction, at per-token index `index` = its last input position:
  // the pass runs over the window without its target and computes the logits there alone (at a
  // 50k vocabulary the unembed of every position would cost T times more).
  ActivationCache<float> c;
  c.last_logits_only = true;
  std::vector<int> inputs;
  auto last_losses = [&](const Batch& b, int index, std::vector<double>& out) {
    const int T = b.T - 1;
    if (T != index + 1) throw std::logic_error("ICL: a window's scored position is not its last input");
    inputs.resize(static_cast<std::size_t>(b.B) * T);
    for (int r = 0; r < b.B; ++r)
      std::copy_n(b.tokens.begin() + static_cast<std::ptrdiff_t>(r) * b.T, T, inputs.begin() + static_cast<std::ptrdiff_t>(r) * T);
    forward(p, inputs, b.B, T, c);
    check_output_finite(c);
    auto lg = c.logits.mat();  // [B, V]
    for (int r = 0; r < b.B; ++r) out.push_back(next_token_loss(lg.row(r), b.tokens[static_cast<std::size_t>(r) * b.T + T]));
  };
  for (std::size_t i = 0; i < w.late.size(); ++i) {
    last_losses(w.late[i], w.late_index, late);
    last_losses(w.early[i], w.early_index, early);
  }
  std::vector<double> d(late.size());
  double sl = 0, se = 0;
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = late[i] - early[i], sl += late[i], se += early[i];
  IclEstimate e = icl_from_blocks(d, w.block);
  e.late_loss = sl / d.size();
  e.early_loss = se / d.size();
  return e;
}

int icl_last_index(int n_ctx, int trained_len) {
  const int len = trained_len > 0 ? std::min(n_ctx, trained_len) : n_ctx;
  return len - 12;
}

void check_icl_index(int late, int n_ctx, int trained_len) {
  const int last = icl_last_index(n_ctx, trained_len);
  if (late <= last) return;
  throw std::invalid_argument("the ICL score's late token " + std::to_string(late) + " is past the last position it may use in this model (" +
                              std::to_string(last) + ": 12 below " +
                              (trained_len > 0 && trained_len < n_ctx ? "the " + std::to_string(trained_len) + "-token windows it was trained on"
                                                                      : "its context of " + std::to_string(n_ctx)) +
                              ", where positions are learned); use a smaller late token");
}

int trained_window(const nlohmann::json& info) {
  if (!info.is_object() || !info.contains("recipe") || !info["recipe"].is_object()) return 0;
  const auto& r = info["recipe"];
  if (!r.contains("data") || !r["data"].is_object() || !r["data"].contains("seq_len") || !r["data"]["seq_len"].is_number_integer())
    return 0;
  return r["data"]["seq_len"].get<int>();
}

std::vector<double> position_norms(const Params<float>& p) {
  std::vector<double> out;
  if (p.W_pos.data.empty()) return out;
  const int N = p.W_pos.shape[0], D = p.W_pos.shape[1];
  for (int t = 0; t < N; ++t) {
    double s = 0;
    for (int d = 0; d < D; ++d) {
      const double v = p.W_pos.data[static_cast<std::size_t>(t) * D + d];
      s += v * v;
    }
    out.push_back(std::sqrt(s));
  }
  return out;
}

std::vector<int> collapsed_positions(const std::vector<double>& norms) {
  std::vector<int> out;
  const int n = static_cast<int>(norms.size());
  for (int t = 0; t < n; ++t) {
    std::vector<double> around;
    for (int u = std::max(0, t - 8); u <= std::min(n - 1, t + 8); ++u)
      if (u != t) around.push_back(norms[static_cast<std::size_t>(u)]);
    if (around.empty()) continue;
    std::nth_element(around.begin(), around.begin() + around.size() / 2, around.end());
    if (norms[static_cast<std::size_t>(t)] < kCollapsedPositionRatio * around[around.size() / 2]) out.push_back(t);
  }
  return out;
}

IclEstimate icl_over_batches(const Params<float>& p, const std::vector<Batch>& batches, int early, int late) {
  std::vector<double> d;
  for (const Batch& b : batches) {
    ActivationCache<float> c;
    forward(p, b.tokens, b.B, b.T, c);
    check_output_finite(c);
    icl_differences(per_token_loss(c), early, late, &d);
  }
  return icl_from_differences(d);
}

Evaluator::Evaluator(const EvalSpec& spec, const Recipe& recipe, const Tokenizer& tok, DataSource& train_data)
    : spec_(spec) {
  const Config& c = recipe.model;
  T_ = train_data.seq_len();
  // Validation set: windows of held-out text, or a fixed batch of the training source.
  if (!spec.valid_path.empty()) {
    std::ifstream f(spec.valid_path, std::ios::binary);
    if (!f) throw std::invalid_argument("recipe: cannot read eval.valid_path " + spec.valid_path);
    std::stringstream ss;
    ss << f.rdbuf();
    init_held_out(tok.encode_ids(ss.str(), false), c, tok, T_, "recipe: ");
  } else {
    DataBatch all = train_data.all();
    if (all.batch.B > 0) {
      valid_ = all.batch;
    } else {
      Rng rng(spec.seed);
      valid_ = train_data.next(rng, spec.batch).batch;
    }
  }
  has_icl_ = spec.icl_late < valid_.T - 1;
  head_batch_ = spec.batch;
  init_repeats(tok);
  L_ = spec.repeat_len > 0 ? spec.repeat_len : std::min(n_, (c.n_ctx - 1) / 2);
  if (L_ < 2 || 2 * L_ + 1 > c.n_ctx) throw std::invalid_argument("recipe: eval.repeat_len must be at least 2 and fit 2L+1 <= n_ctx");
  L_ = std::min(L_, n_);
}

Evaluator::Evaluator(const EvalSpec& spec, const Config& c, const Tokenizer& tok, const std::vector<int>& held_out, int window,
                     int trained_len)
    : spec_(spec) {
  if (window < 2 || window > c.n_ctx)
    throw std::invalid_argument("checkpoint scores: the window must hold 2 to " + std::to_string(c.n_ctx) + " tokens, got " +
                                std::to_string(window));
  if (spec.batch < 1 || spec.batch > 1024) throw std::invalid_argument("checkpoint scores: the batch must be 1 to 1024 windows");
  if (spec.icl_windows > 0) throw std::invalid_argument("checkpoint scores: the ICL score of a series is the paired one (icl_pairs)");
  T_ = window;
  has_valid_ = !held_out.empty();
  if (has_valid_) {
    init_held_out(held_out, c, tok, trained_len, "checkpoint scores: ");
  } else if (spec.icl_pairs > 0) {
    throw std::invalid_argument("checkpoint scores: the ICL score needs held-out text");
  }
  has_icl_ = false;  // the ICL score is the paired one or none
  init_repeats(tok);
  RepeatedTokensSpec rs;
  if (spec.repeat_len > 0) rs.L = spec.repeat_len;
  const RepeatedTokensSpec r = resolve_repeated_tokens(rs, tok, c);
  L_ = std::min(r.L, n_);
  head_batch_ = std::min(spec.batch, r.batch);
  if (L_ < 2 || 2 * L_ + 1 > c.n_ctx) throw std::invalid_argument("checkpoint scores: the repeated segment must be at least 2 tokens and fit 2L+1 <= n_ctx");
}

void Evaluator::init_held_out(const std::vector<int>& ids, const Config& c, const Tokenizer& tok, int trained_len, const char* what) {
  const EvalSpec& spec = spec_;
  if (static_cast<int>(ids.size()) < T_)
    throw std::invalid_argument(std::string(what) + "the validation text (" + std::to_string(ids.size()) +
                                " tokens) is shorter than one window of " + std::to_string(T_));
  // Evenly spaced windows, each [BOS] + T-1 tokens of text.
  std::vector<int> rows;
  const int span = static_cast<int>(ids.size()) - (T_ - 1);
  for (int r = 0; r < spec.batch; ++r) {
    int start = static_cast<int>(static_cast<long long>(r) * span / spec.batch);
    rows.push_back(tok.bos_id() >= 0 ? tok.bos_id() : ids[start]);
    rows.insert(rows.end(), ids.begin() + start, ids.begin() + start + T_ - 1);
  }
  valid_ = next_token_batch(rows, spec.batch, T_);
  if (spec.icl_windows > 0 && spec.icl_late < T_ - 1)
    icl_batches_ = icl_window_batches(ids, tok.bos_id(), std::min(T_, spec.icl_late + 2), spec.icl_windows, spec.batch);
  if (spec.icl_pairs > 0) {
    try {
      check_icl_index(spec.icl_late, c.n_ctx, trained_len);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(what) + "eval.icl_late: " + e.what());
    }
    icl_pairs_ = icl_paired_windows(ids, tok.bos_id(), spec.icl_early, spec.icl_late, spec.icl_pairs, spec.batch);
  }
}

// Repeated random tokens for the head scores: ids other than the special tokens.
void Evaluator::init_repeats(const Tokenizer& tok) {
  bos_ = std::max(0, tok.bos_id());
  const TokenPool pool = random_token_pool(tok);
  first_ = pool.first;
  n_ = pool.n;
}

EvalRecord Evaluator::evaluate(const Params<float>& p, std::int64_t step, double train_loss) const {
  EvalRecord r;
  r.step = step;
  r.train_loss = train_loss;
  if (has_valid_) {
    ActivationCache<float> cache;
    forward(p, valid_.tokens, valid_.B, valid_.T, cache);
    LossResult lr = loss_from_logits(cache, valid_);
    r.valid_loss = lr.loss;
    Tensor<float> pt = per_token_loss(cache);
    if (icl_pairs_) {
      const IclEstimate e = icl_paired(p, *icl_pairs_);
      r.icl = e.mean;
      r.icl_se = e.se;
    } else if (!icl_batches_.empty()) {
      const IclEstimate e = icl_over_batches(p, icl_batches_, spec_.icl_early, spec_.icl_late);
      r.icl = e.mean;
      r.icl_se = e.se;
    } else if (has_icl_) {
      const IclEstimate e = icl_estimate(pt, spec_.icl_early, spec_.icl_late);
      r.icl = e.mean;
      r.icl_se = e.se;
    }
    // The per-token vector over the positions that carry a loss.
    for (std::size_t i = 0; i < lr.per_token.size(); ++i)
      if (valid_.mask[i] != 0) r.per_token.push_back(lr.per_token[i]);
  } else {
    r.valid_loss = r.icl = r.icl_se = std::nan("");
  }
  const int LH = p.cfg.n_layers * p.cfg.n_heads;
  if (LH > 0 && n_ >= 2) {
    RepeatedTokens rt = make_repeated_tokens(head_batch_, L_, first_, n_, bos_, spec_.seed + 17);
    ActivationCache<float> rc;
    forward(p, rt.tokens, rt.B, rt.T(), rc);
    HeadScores hs = head_scores(p, rc, rt);
    r.prefix_matching = hs.prefix_matching.data;
    r.copying = hs.copying.data;
    r.previous_token = hs.previous_token.data;
    Tensor<float> rl = per_token_loss(rc);  // [B, 2L]; index t predicts token t+1
    double s = 0;
    int n = 0;
    for (int b = 0; b < rt.B; ++b)
      for (int t = L_ + 1; t < 2 * L_; ++t) s += rl.data[static_cast<std::size_t>(b) * (2 * L_) + t], ++n;
    r.repeated_loss = n ? s / n : 0;
  }
  return r;
}

int checkpoint_window(const Config& c) { return std::min(c.n_ctx, 256); }

EvalSpec checkpoint_eval_spec(const Config& c, int held_out_tokens, int trained_len) {
  EvalSpec s;
  s.batch = 8;
  s.seed = 1;
  const int T = checkpoint_window(c);
  const double unembed = static_cast<double>(T) * c.d_model * c.d_vocab;  // one window's
  while (s.batch > 2 && s.batch * unembed > 2e10) s.batch /= 2;
  const int last = icl_last_index(c.n_ctx, trained_len);
  if (last >= 500) s.icl_late = 500, s.icl_early = 50;
  else if (last >= 200) s.icl_late = 200, s.icl_early = 20;
  else s.icl_late = last * 4 / 5, s.icl_early = std::max(0, last / 10);
  // One pair: forward passes over late + 1 and early + 1 tokens (per token: Q, K, V, O and the MLP),
  // and two rows of the unembed.
  const double per_token = c.n_layers * (4.0 * c.d_model * c.n_heads * c.d_head + 2.0 * c.d_model * c.d_mlp);
  const double pair = (s.icl_late + s.icl_early + 2.0) * per_token + 2.0 * c.d_model * c.d_vocab;
  s.icl_pairs = 64;
  while (s.icl_pairs > 16 && s.icl_pairs * pair > 4e10) s.icl_pairs /= 2;
  if (held_out_tokens < s.icl_late + 1 || s.icl_late <= s.icl_early || s.icl_early < 1) s.icl_pairs = 0;
  if (held_out_tokens < T) s.icl_pairs = 0;
  return s;
}

std::vector<int> held_out_ids(const Tokenizer& tok, const std::string& text) {
  if (text.size() > kMaxHeldOutBytes)
    throw std::invalid_argument("checkpoint scores: the held-out text is " + std::to_string(text.size() >> 20) +
                                " MB; circuitscope scores checkpoints on at most " + std::to_string(kMaxHeldOutBytes >> 20) + " MB of text");
  return text.empty() ? std::vector<int>() : tok.encode_ids(text, false);
}

CheckpointEval evaluate_checkpoint(const Params<float>& p, const Tokenizer& tok, const std::string& text, std::int64_t step,
                                   const CheckpointEvalOptions& o, int trained_len) {
  return evaluate_checkpoint(p, tok, held_out_ids(tok, text), step, o, trained_len);
}

CheckpointEval evaluate_checkpoint(const Params<float>& p, const Tokenizer& tok, const std::vector<int>& ids, std::int64_t step,
                                   const CheckpointEvalOptions& o, int trained_len) {
  const Config& c = p.cfg;
  if (ids.size() > kMaxHeldOutBytes)
    throw std::invalid_argument("checkpoint scores: " + std::to_string(ids.size()) + " held-out tokens; circuitscope scores checkpoints on at most " +
                                std::to_string(kMaxHeldOutBytes) + " of them");
  for (int id : ids)
    if (id < 0 || id >= c.d_vocab)
      throw std::invalid_argument("checkpoint scores: held-out token id " + std::to_string(id) + " is outside the model's vocabulary of " +
                                  std::to_string(c.d_vocab));
  CheckpointEval out;
  out.held_out_tokens = static_cast<int>(ids.size());
  out.window = o.window >= 0 ? o.window : checkpoint_window(c);
  EvalSpec s = checkpoint_eval_spec(c, out.held_out_tokens, trained_len);
  if (static_cast<int>(ids.size()) < out.window && o.window < 0 && !ids.empty())
    throw std::invalid_argument("checkpoint scores: the held-out text has " + std::to_string(ids.size()) + " tokens, fewer than one window of " +
                                std::to_string(out.window) + "; give a longer text");
  auto set = [](int v, int& field) { if (v >= 0) field = v; };
  set(o.batch, s.batch);
  set(o.icl_early, s.icl_early);
  set(o.icl_late, s.icl_late);
  set(o.icl_pairs, s.icl_pairs);
  set(o.repeat_len, s.repeat_len);
  if (o.seed >= 0) s.seed = static_cast<std::uint64_t>(o.seed);
  if (ids.empty()) s.icl_pairs = 0;
  if (s.icl_pairs > 0 && (s.icl_early < 0 || s.icl_late <= s.icl_early))
    throw std::invalid_argument("checkpoint scores: the ICL score needs 0 <= early < late");
  const Evaluator ev(s, c, tok, ids, out.window, trained_len);
  out.record = ev.evaluate(p, step, std::nan(""));
  out.spec = s;
  return out;
}

nlohmann::json checkpoint_eval_json(const CheckpointEval& e) {
  const EvalSpec& s = e.spec;
  return {{"record", eval_record_json(e.record)},
          {"spec", {{"window", e.window}, {"batch", s.batch}, {"icl_early", s.icl_early}, {"icl_late", s.icl_late}, {"icl_pairs", s.icl_pairs},
                    {"repeat_len", s.repeat_len}, {"seed", s.seed}}},
          {"held_out_tokens", e.held_out_tokens}};
}

nlohmann::json checkpoint_metrics_json(const nlohmann::json& entries, const std::string& what) {
  if (!entries.is_array() || entries.empty()) throw std::invalid_argument(what + " give the checkpoints' scores as a non-empty list");
  std::vector<EvalRecord> records;
  for (const auto& e : entries) {
    if (!e.is_object() || !e.contains("record")) throw std::invalid_argument(what + " each entry must be a checkpointScores() result");
    if (e.value("spec", nlohmann::json()) != entries[0].value("spec", nlohmann::json()))
      throw std::invalid_argument(what + " the checkpoints were scored with different settings");
    records.push_back(eval_record_from_json(e["record"]));
  }
  const EvalSpec spec = checkpoint_spec_from_json(entries[0].value("spec", nlohmann::json()));
  std::stable_sort(records.begin(), records.end(), [](const EvalRecord& a, const EvalRecord& b) { return a.step < b.step; });
  nlohmann::json m = metrics_json(spec, records);
  if (spec.icl_pairs == 0) m.erase("icl_indices");
  return m;
}

EvalSpec checkpoint_spec_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("a checkpoint series' spec must be an object");
  auto get = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_number_integer()) throw std::invalid_argument(std::string("a checkpoint series' spec has no integer \"") + k + "\"");
    return j[k].get<long long>();
  };
  EvalSpec s;
  s.batch = static_cast<int>(get("batch"));
  s.icl_early = static_cast<int>(get("icl_early"));
  s.icl_late = static_cast<int>(get("icl_late"));
  s.icl_pairs = static_cast<int>(get("icl_pairs"));
  s.repeat_len = static_cast<int>(get("repeat_len"));
  s.seed = static_cast<std::uint64_t>(get("seed"));
  return s;
}

std::optional<std::int64_t> checkpoint_label(const std::string& file_name) {
  std::string leaf = file_name.substr(file_name.find_last_of("/\\") == std::string::npos ? 0 : file_name.find_last_of("/\\") + 1);
  const std::size_t dot = leaf.find_last_of('.');
  if (dot == std::string::npos) return std::nullopt;
  std::string ext = leaf.substr(dot + 1);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ext != "pth" && ext != "safetensors") return std::nullopt;
  std::size_t end = dot, begin = dot;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(leaf[begin - 1]))) --begin;
  if (begin == end || end - begin > 15) return std::nullopt;
  const std::string before = leaf.substr(0, begin);
  auto ends_with = [&](const std::string& x) {
    if (before.size() < x.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(before[before.size() - x.size() + i])) != x[i]) return false;
    return true;
  };
  if (!(before.empty() ? false : (ends_with("_") || ends_with("-") || ends_with(".") || ends_with("step")))) return std::nullopt;
  return static_cast<std::int64_t>(std::stoll(leaf.substr(begin, end - begin)));
}

nlohmann::json metrics_json(const EvalSpec& spec, const std::vector<EvalRecord>& records, int n_components) {
  nlohmann::json out;
  if (spec.icl_pairs > 0)
    out["icl_indices"] = {{"early", spec.icl_early}, {"late", spec.icl_late}, {"windows", spec.icl_pairs}, {"paired", true},
                          {"note", "ICL score on paired windows (icl_paired): each of `windows` held-out tokens predicted after the `late` "
                                   "tokens before it minus after the `early` tokens before it (the paper uses 500 and 50), averaged; "
                                   "icl_se is its standard error over blocks of consecutive pairs"}};
  else
    out["icl_indices"] = {{"early", spec.icl_early}, {"late", spec.icl_late},
                          {"windows", spec.icl_windows > 0 ? spec.icl_windows : spec.batch},
                          {"note", "ICL score = loss at token index late minus loss at token index early (the paper uses 500 and 50), "
                                   "averaged over the windows; icl_se is its standard error over them"}};
  out["every"] = spec.every;
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : records) {
    // A checkpoint's record without the per-token vector, which the trajectory below summarises.
    recs.push_back(eval_record_json(r));
    recs.back().erase("per_token");
  }
  out["records"] = recs;
  // PCA of the per-token-loss vectors across records (seed 004's trajectory view), via the
  // records' Gram matrix: with X centred (records x positions), X X^T = U S^2 U^T and the
  // projection of record i on component k is U[i,k] S[k].
  const int R = static_cast<int>(records.size());
  if (R >= 2 && !records[0].per_token.empty()) {
    const int P = static_cast<int>(records[0].per_token.size());
    Eigen::MatrixXd X(R, P);
    for (int i = 0; i < R; ++i) {
      if (static_cast<int>(records[i].per_token.size()) != P) throw std::logic_error("metrics: per-token vectors differ in length");
      for (int j = 0; j < P; ++j) X(i, j) = records[i].per_token[j];
    }
    X.rowwise() -= X.colwise().mean();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(X * X.transpose());
    const int K = std::min(n_components, R);
    double total = es.eigenvalues().sum();
    nlohmann::json proj = nlohmann::json::array(), var = nlohmann::json::array();
    for (int k = 0; k < K; ++k) {
      int idx = R - 1 - k;  // eigenvalues ascend
      double ev = std::max(0.0, es.eigenvalues()(idx));
      Eigen::VectorXd u = es.eigenvectors().col(idx);
      // Fix the sign so the first record projects to a non-positive value (stable across runs).
      if (u(0) > 0) u = -u;
      std::vector<double> col(R);
      for (int i = 0; i < R; ++i) col[i] = u(i) * std::sqrt(ev);
      proj.push_back(col);
      var.push_back(total > 0 ? ev / total : 0.0);
    }
    out["pca"] = {{"components", proj}, {"explained_variance", var}, {"n_positions", P}};
  }
  return out;
}

// Seed 004 (the phase change): the first record whose best head passes half the final best score.
std::optional<PhaseChange> phase_change(const std::vector<std::int64_t>& steps, const std::vector<std::vector<double>>& pm, int n_heads) {
  if (steps.size() != pm.size()) throw std::invalid_argument("phase change: one step per record is needed");
  if (pm.empty()) return std::nullopt;
  auto best = [](const std::vector<double>& r, int* at) {
    double b = 0;
    for (std::size_t i = 0; i < r.size(); ++i)
      if (r[i] > b) b = r[i], *at = static_cast<int>(i);
    return b;
  };
  int ignored = 0;
  const double final_best = best(pm.back(), &ignored);
  if (final_best < kMinInductionScore) return std::nullopt;
  const double threshold = kPhaseChangeFraction * final_best;
  for (std::size_t i = 0; i < pm.size(); ++i) {
    int at = 0;
    if (best(pm[i], &at) >= threshold) {
      PhaseChange pc;
      pc.step = steps[i];
      pc.record = static_cast<int>(i);
      pc.layer = n_heads > 0 ? at / n_heads : 0;
      pc.head = n_heads > 0 ? at % n_heads : at;
      pc.final_score = final_best;
      pc.threshold = threshold;
      if (i >= 2) pc.before_step = steps[i - 2];
      return pc;
    }
  }
  return std::nullopt;
}

std::optional<PhaseChange> phase_change(const nlohmann::json& records, int n_heads) {
  if (!records.is_array()) throw std::invalid_argument("phase change: the records must be an array");
  std::vector<std::int64_t> steps;
  std::vector<std::vector<double>> pm;
  for (const auto& r : records) {
    if (!r.is_object() || !r.contains("step") || !r["step"].is_number())
      throw std::invalid_argument("phase change: every record needs a numeric \"step\"");
    steps.push_back(r["step"].get<std::int64_t>());
    std::vector<double> scores;
    if (r.contains("prefix_matching") && r["prefix_matching"].is_array())
      for (const auto& x : r["prefix_matching"]) scores.push_back(x.is_number() ? x.get<double>() : 0.0);
    pm.push_back(std::move(scores));
  }
  return phase_change(steps, pm, n_heads);
}

// Seed 002: cosines of the learned tables with their leading terms over the first steps.
LeadingCurve leading_term_curve(const Recipe& recipe, const LeadingCurveSpec& spec) {
  if (spec.steps < 0 || spec.steps > 100000) throw std::invalid_argument("leading terms: steps must be 0..100000");
  if (!(spec.init_scale > 0)) throw std::invalid_argument("leading terms: the initial scale must be positive");
  if (spec.optimizer != "gd" && spec.optimizer != "adamw")
    throw std::invalid_argument("leading terms: the optimizer must be gd (full-batch gradient descent) or adamw (the recipe's), got " +
                                spec.optimizer);
  if (spec.lr < 0) throw std::invalid_argument("leading terms: the learning rate must not be negative");
  if (spec.rows < 0) throw std::invalid_argument("leading terms: rows must not be negative");
  Recipe r = recipe;
  r.init_scale = spec.init_scale;
  LeadingCurve c;
  c.recipe = r.name;
  c.spec = spec;
  c.lr = spec.lr > 0 ? spec.lr : r.optim.lr;
  c.rows = spec.rows > 0 ? spec.rows : r.batch_size;
  // The Trainer sets up tokenizer, data source and the (scaled) initial weights exactly as training does.
  Trainer trainer(r);
  Params<float> p = trainer.params();
  const Config& cfg = p.cfg;
  c.d_vocab = cfg.d_vocab;
  c.n_layers = cfg.n_layers;
  c.n_heads = cfg.n_heads;
  c.d_model = cfg.d_model;
  Rng rng(r.seed * 0x9E3779B97F4A7C15ULL + 1);
  const Batch batch = trainer.data_source().next(rng, c.rows).batch;
  c.seq_len = batch.T;
  const CorpusStats st = batch_stats(batch, cfg.d_vocab, batch.T);
  const Tensor<float> direct_term = direct_path_leading_term(st), ov_term = ov_leading_term(st),
                      ov_comp_term = ov_composed_leading_term(st), gram_term = unembed_gram_leading_term(st);
  AdamW opt(p, r.optim);
  ActivationCache<float> cache;
  cache.keep_result = false;
  ShardResult res;
  const Tensor<float> table0 = direct_path_table(p);
  for (int step = 0; step <= spec.steps; ++step) {
    shard_gradient(p, batch, cache, res);  // the loss at these weights and its gradient
    LeadingCurvePoint pt;
    pt.step = step;
    pt.loss = res.loss;
    Tensor<float> table = direct_path_table(p);
    pt.direct = cosine_similarity(row_centred(table), direct_term);
    for (std::size_t k = 0; k < table.size(); ++k) table.data[k] -= table0.data[k];
    pt.direct_change = cosine_similarity(row_centred(table), direct_term);
    pt.unembed_gram = cosine_similarity(unembed_gram(p), gram_term);
    for (int l = 0; l < cfg.n_layers; ++l)
      for (int h = 0; h < cfg.n_heads; ++h) {
        const Tensor<float> t = row_centred(ov_table(p, l, h));
        pt.ov.push_back(cosine_similarity(t, ov_term));
        pt.ov_composed.push_back(cosine_similarity(t, ov_comp_term));
      }
    c.points.push_back(pt);
    if (!std::isfinite(res.loss))
      throw std::runtime_error("leading terms: the loss became " + std::string(std::isnan(res.loss) ? "NaN" : "Inf") + " at step " +
                               std::to_string(step) + "; use a smaller learning rate");
    if (step == spec.steps) break;
    if (spec.optimizer == "gd") {
      auto pp = named_params(p);
      auto gg = named_params(static_cast<const Params<float>&>(res.grads));
      for (std::size_t i = 0; i < pp.size(); ++i)
        for (std::size_t k = 0; k < pp[i].second->data.size(); ++k)
          pp[i].second->data[k] -= static_cast<float>(c.lr * gg[i].second->data[k]);
    } else {
      clip_grad_norm(res.grads, r.optim.grad_clip);
      opt.step(p, res.grads, schedule_lr(r.schedule, r.optim.lr, step, r.steps), schedule_beta1(r.schedule, r.optim.beta1, step, r.steps));
    }
  }
  return c;
}

nlohmann::json leading_curve_json(const LeadingCurve& c) {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : c.points)
    pts.push_back({{"step", p.step}, {"loss", p.loss}, {"direct", p.direct}, {"direct_change", p.direct_change}, {"unembed_gram", p.unembed_gram}, {"ov", p.ov},
                   {"ov_composed", p.ov_composed}});
  return {{"recipe", c.recipe},
          {"steps", c.spec.steps},
          {"init_scale", c.spec.init_scale},
          {"optimizer", c.spec.optimizer},
          {"lr", c.lr},
          {"rows", c.rows},
          {"seq_len", c.seq_len},
          {"d_vocab", c.d_vocab},
          {"d_model", c.d_model},
          {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},
          {"points", pts}};
}

LeadingCurve leading_curve_from_json(const nlohmann::json& j) {
  LeadingCurve c;
  try {
    c.recipe = j.at("recipe").get<std::string>();
    c.spec.steps = j.at("steps").get<int>();
    c.spec.init_scale = j.at("init_scale").get<double>();
    c.spec.optimizer = j.at("optimizer").get<std::string>();
    c.lr = j.at("lr").get<double>();
    c.spec.lr = c.lr;
    c.rows = c.spec.rows = j.at("rows").get<int>();
    c.seq_len = j.at("seq_len").get<int>();
    c.d_vocab = j.at("d_vocab").get<int>();
    c.d_model = j.at("d_model").get<int>();
    c.n_layers = j.at("n_layers").get<int>();
    c.n_heads = j.at("n_heads").get<int>();
    for (const auto& q : j.at("points")) {
      LeadingCurvePoint p;
      p.step = q.at("step").get<int>();
      p.loss = q.at("loss").get<double>();
      p.direct = q.at("direct").get<double>();
      p.direct_change = q.at("direct_change").get<double>();
      p.unembed_gram = q.at("unembed_gram").get<double>();
      p.ov = q.at("ov").get<std::vector<double>>();
      p.ov_composed = q.at("ov_composed").get<std::vector<double>>();
      c.points.push_back(p);
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("leading-terms curve file: missing or mistyped field (") + e.what() + ")");
  }
  return c;
}

}  // namespace cs
