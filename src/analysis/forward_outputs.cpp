// One sequence's forward pass and what the page reads from it (run()).
#include "analysis/forward_outputs.h"
#include "checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace cs {

void check_context_length(const Config& c, int T, const std::string& what) {
  if (T == 0) throw std::invalid_argument(what + ": no tokens to run");
  if (T > c.n_ctx)
    throw std::invalid_argument(what + ": " + std::to_string(T) + " tokens is longer than the model's context of " +
                                std::to_string(c.n_ctx) + " tokens");
}

std::vector<float> residual_stages(const ActivationCache<float>& cache) {
  const int L = static_cast<int>(cache.layers.size());
  const Tensor<float>& first = L > 0 ? cache.layers[0].resid_pre : cache.resid_final;
  std::vector<float> out;
  out.reserve(first.size() * (L + 1));
  out.insert(out.end(), first.data.begin(), first.data.end());
  for (const auto& lc : cache.layers) out.insert(out.end(), lc.resid_post.data.begin(), lc.resid_post.data.end());
  return out;
}

std::vector<float> head_results(const Params<float>& p, const ActivationCache<float>& cache) {
  const std::size_t per_layer = static_cast<std::size_t>(p.cfg.n_heads) * cache.n_batch * cache.n_pos * p.cfg.d_model;
  std::vector<float> out(per_layer * cache.layers.size());
  for (std::size_t l = 0; l < cache.layers.size(); ++l) cs::head_results(p, cache, static_cast<int>(l), out.data() + l * per_layer);
  return out;
}

void check_rows_finite(const std::vector<float>& rows, const ActivationCache<float>& cache) {
  for (float v : rows)
    if (!std::isfinite(v)) {
      check_finite(cache);
      throw std::runtime_error("the forward pass overflowed float32: logits holds NaN or Inf; the model's weights are too large to compute with");
    }
}

namespace {

// The per-position outputs read from the logits: loss, top-k rows and the asked probabilities,
// from the cache's logits or, when the pass skipped them, from rows computed a chunk at a time. Loss
// and top-k rows before `from` (an incremental pass) come from `before`, and so do the rows'
// log-sum-exp (lse [T], NaN where no row was computed).
void position_outputs(const Params<float>& p, const ActivationCache<float>& cache, const std::vector<int>& ids,
                      const RunOptions& o, int from, const KeptRun& before, RunExtras& x, std::vector<float>& lse) {
  const int T = static_cast<int>(ids.size()), V = p.cfg.d_vocab, k = o.topk, pk = o.probs_k;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x.loss.assign(T, nan);
  lse.assign(T, nan);
  std::copy(before.lse.begin(), before.lse.begin() + std::clamp(std::min(from, static_cast<int>(before.lse.size())), 0, T), lse.begin());
  // The kept rows that were computed (a row left out has no log-sum-exp): top k and probs_of are
  // taken from the last pass up to here.
  const int have = static_cast<int>(std::find_if(lse.begin(), lse.begin() + std::clamp(from, 0, T), [](float z) { return !std::isfinite(z); }) - lse.begin());
  // Rows end.. are left out. Without o.last_row, the last (its loss is NaN in any case); and when
  // the last pass left out the first row missing here (tokens typed at the end: the first
  // changed token is at or after it), that row and every later one stay out (pending: the losses
  // they give are NaN), unless o.shown_row is among them: a row computed only for the log-sum-exp
  // that a token typed after it reads reads all of W_U.
  int end = o.last_row || o.shown_row == T - 1 ? T : T - 1;
  const bool left_out_before = have < static_cast<int>(before.lse.size()) && !std::isfinite(before.lse[have]);
  if (end < T && left_out_before && o.shown_row < have) end = have;
  x.pending_from = end;
  // Loss t reads the logits at t and token t + 1: unchanged for t + 1 < from, and left out (NaN)
  // in the last pass from its first missing row.
  int loss_from = std::clamp(std::min({from - 1, static_cast<int>(before.loss.size()), have}), 0, T);
  std::copy(before.loss.begin(), before.loss.begin() + loss_from, x.loss.begin());
  // The position before the first changed token predicts a new token: with its row's log-sum-exp
  // kept, its loss needs one logit, not the row (at a 48k vocabulary the row reads all of W_U).
  if (cache.skip_logits && loss_from == from - 1 && loss_from >= 0 && loss_from + 1 < T && std::isfinite(lse[loss_from])) {
    const float logit = unembed_entry(p, cache, loss_from, ids[loss_from + 1]);
    if (!std::isfinite(logit)) check_rows_finite({logit}, cache);
    x.loss[loss_from] = static_cast<float>(static_cast<double>(lse[loss_from] - logit));
    ++loss_from;
  }
  int top_from = T;
  if (k > 0) {
    check_top_k(k, V);
    TopK& top = x.top.emplace();
    top.k = k;
    top.ids.resize({1, T, k});
    top.probs.resize({1, T, k});
    std::fill(top.ids.data.begin() + static_cast<std::size_t>(end) * k, top.ids.data.end(), -1);
    std::fill(top.probs.data.begin() + static_cast<std::size_t>(end) * k, top.probs.data.end(), nan);
    const std::size_t kept = static_cast<std::size_t>(have) * k;
    top_from = before.top && before.top->k == k && have > 0 && before.top->ids.size() >= kept ? have : 0;
    if (top_from > 0) {
      std::copy(before.top->ids.data.begin(), before.top->ids.data.begin() + kept, top.ids.data.begin());
      std::copy(before.top->probs.data.begin(), before.top->probs.data.begin() + kept, top.probs.data.begin());
    }
  }
  if (!o.probs_of.empty()) {
    if (pk < 1 || o.probs_of.size() != static_cast<std::size_t>(T) * pk)
      throw std::invalid_argument("run: probsOf holds " + std::to_string(o.probs_of.size()) + " ids, not " + std::to_string(T) +
                                  " rows of " + std::to_string(pk));
    // A row left out is not read (its ids may be the -1 of a top k left out).
    for (auto id = o.probs_of.begin(); id != o.probs_of.begin() + static_cast<std::size_t>(end) * pk; ++id)
      if (*id < 0 || *id >= V)
        throw std::invalid_argument("run: probsOf holds the token id " + std::to_string(*id) + ", outside the vocabulary (0.." +
                                    std::to_string(V - 1) + ")");
    x.probs_of.assign(o.probs_of.size(), nan);
  }
  // A row before `from` asked for the same ids as the last pass has their probabilities.
  int probs_from = o.probs_of.empty() ? T : 0;
  if (probs_from == 0 && before.probs_k == pk && static_cast<int>(before.probs_ids.size()) >= have * pk) {
    const std::size_t w = static_cast<std::size_t>(pk);
    while (probs_from < have && std::equal(o.probs_of.begin() + probs_from * w, o.probs_of.begin() + (probs_from + 1) * w,
                                           before.probs_ids.begin() + probs_from * w))
      ++probs_from;
    std::copy(before.probs.begin(), before.probs.begin() + probs_from * w, x.probs_of.begin());
  }
  const int start = std::min({loss_from, top_from, probs_from});
  if (start >= end) return;
  // Each row is read a block of kLogitBlock logits at a time, in vocabulary order: its log-sum-exp
  // folded block by block (LogSumExp, the same bits as log_sum_exp_row over the whole row), its
  // top k merged as the blocks pass, the logits its loss and probs_of read taken where they pass.
  // Without the cache's logits, one block is computed for every row at once (at most 32 MB), so
  // each block of W_U's columns is packed once for the whole text and its logits are read while
  // they are in the cache; computed in chunks of whole rows, each chunk packed all of W_U again
  // and sent its 32 MB of logits out to memory and back (a full pass at attn-only-2l's shape took
  // a fifth longer). A few rows (a keystroke's one or two) are computed whole, in one pass that
  // reads W_U's rows end to end (the GEMM streams up to 4 rows; block by block it jumped every 8 KB).
  const int R = end - start, W = std::min(V, kLogitBlock);
  const bool whole_rows = cache.skip_logits && R <= 4;
  const int rows_at_once = whole_rows ? R : std::max(1, static_cast<int>((32 << 20) / (4.0 * W)));
  std::vector<LogSumExp<float>> fold(R);
  std::vector<float> target(R, 0.0f), top_values(static_cast<std::size_t>(R) * k), wanted(o.probs_of.size());
  std::vector<int> top_count(R, 0);
  std::vector<float> block, scratch(W);
  for (int r0 = start; r0 < end; r0 += rows_at_once) {
    const int r1 = std::min(end, r0 + rows_at_once);
    if (whole_rows) {
      unembed_rows(p, cache, r0, r1, block);
      check_rows_finite(block, cache);
    }
    for (int v0 = 0; v0 < V; v0 += kLogitBlock) {
      const int n = std::min(kLogitBlock, V - v0);
      const float* base = (whole_rows ? block.data() : cache.logits.ptr() + static_cast<std::size_t>(r0) * V) + v0;
      std::size_t ld = V;
      if (cache.skip_logits && !whole_rows) {
        unembed_block(p, cache, r0, r1, v0, v0 + n, block);
        check_rows_finite(block, cache);
        base = block.data(), ld = n;
      }
      for (int t = r0; t < r1; ++t) {
        const float* seg = base + static_cast<std::size_t>(t - r0) * ld;
        const int i = t - start;
        fold[i].add(seg, n, scratch.data());
        if (t + 1 < T && ids[t + 1] >= v0 && ids[t + 1] < v0 + n) target[i] = seg[ids[t + 1] - v0];
        if (t >= top_from)
          top_k_add(seg, n, v0, k, x.top->ids.ptr() + static_cast<std::size_t>(t) * k, top_values.data() + static_cast<std::size_t>(i) * k, top_count[i]);
        for (int j = 0; j < (o.probs_of.empty() ? 0 : pk); ++j) {
          const int id = o.probs_of[static_cast<std::size_t>(t) * pk + j];
          if (id >= v0 && id < v0 + n) wanted[static_cast<std::size_t>(t) * pk + j] = seg[id - v0];
        }
      }
    }
    for (int t = r0; t < r1; ++t) {
      const int i = t - start;
      const float z = fold[i].value();
      lse[t] = z;
      if (t >= loss_from && t + 1 < T) x.loss[t] = static_cast<float>(static_cast<double>(z - target[i]));
      if (t >= top_from)
        for (int j = 0; j < k; ++j)
          x.top->probs.data[static_cast<std::size_t>(t) * k + j] =
              static_cast<float>(std::exp(static_cast<double>(top_values[static_cast<std::size_t>(i) * k + j]) - z));
      for (int j = 0; j < (o.probs_of.empty() ? 0 : pk); ++j) {
        const std::size_t w = static_cast<std::size_t>(t) * pk + j;
        x.probs_of[w] = static_cast<float>(std::exp(static_cast<double>(wanted[w]) - z));
      }
    }
  }
}

}  // namespace

std::vector<int> top_attended_keys(const ActivationCache<float>& cache, int k, int from, const std::vector<int>& before, int before_T) {
  if (k < 1) throw std::invalid_argument("topKeys: k must be 1 or more, got " + std::to_string(k));
  const int T = cache.n_pos, L = static_cast<int>(cache.layers.size());
  const int H = L ? cache.layers[0].pattern.shape[1] : 0;
  const std::size_t K = static_cast<std::size_t>(k);
  std::vector<int> out(static_cast<std::size_t>(L) * H * T * K, -1);
  const bool reuse = !before.empty() && from <= before_T && before.size() == static_cast<std::size_t>(L) * H * before_T * K;
  if (!reuse) from = 0;
  std::vector<float> best(K);
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) {
      const std::size_t head = static_cast<std::size_t>(l) * H + h;
      int* rows = out.data() + head * T * K;
      if (from > 0) std::copy(before.begin() + head * before_T * K, before.begin() + (head * before_T + from) * K, rows);
      const float* P = cache.layers[l].pattern.ptr() + static_cast<std::size_t>(h) * T * T;
      for (int q = from; q < T; ++q) {
        int* keys = rows + q * K;
        std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
        for (int j = 0; j <= q; ++j) {
          const float v = P[static_cast<std::size_t>(q) * T + j];
          if (!(v > best[K - 1])) continue;  // an equal weight keeps the earlier key
          std::size_t i = K - 1;
          for (; i > 0 && v > best[i - 1]; --i) best[i] = best[i - 1], keys[i] = keys[i - 1];
          best[i] = v;
          keys[i] = j;
        }
      }
    }
  }
  return out;
}

double mean_token_loss(const std::vector<float>& loss, int from, int to) {
  double sum = 0;
  int n = 0;
  for (int i = std::max(from, 1); i < to && i - 1 < static_cast<int>(loss.size()); ++i)
    if (std::isfinite(loss[i - 1])) sum += loss[i - 1], ++n;
  return n ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

RunExtras run_sequence(const Params<float>& p, const std::vector<int>& ids, const Intervention& iv, const RunOptions& o,
                       int bos_id, ActivationCache<float>& cache, const std::string& what, KeptRun* kept) {
  const int T = static_cast<int>(ids.size());
  check_context_length(p.cfg, T, what);
  RunExtras x;
  KeptRun before;
  if (kept) {  // invalid until this pass has succeeded
    before = std::move(*kept);
    *kept = KeptRun();
  }
  // Each head's output is computed from z where it is read (head_results): at 1,024 tokens of
  // attn-only-2l's shape they are 34 MB, and an incremental pass moved them at every keystroke.
  cache.keep_result = false;
  cache.skip_logits = !o.logits;
  if (kept && before.valid) x.changed_from = forward_incremental<float>(p, ids, cache, iv);
  else forward<float>(p, ids, 1, T, cache, iv);
  if (o.logits) check_output_finite(cache, x.changed_from);
  std::vector<float> lse;
  position_outputs(p, cache, ids, o, x.changed_from, before, x, lse);
  if (o.top_keys > 0) {
    const std::vector<int> none;
    x.top_keys = top_attended_keys(cache, o.top_keys, x.changed_from, before.top_keys_k == o.top_keys ? before.top_keys : none,
                                   before.top_keys_T);
  }
  if (o.resid) x.resid = residual_stages(cache);
  if (o.result) x.result = head_results(p, cache);
  if (kept) {
    kept->loss = x.loss;
    kept->top = x.top;
    kept->probs_ids = o.probs_of;
    kept->probs = x.probs_of;
    kept->probs_k = o.probs_k;
    kept->lse = std::move(lse);
    kept->top_keys = x.top_keys;
    kept->top_keys_k = o.top_keys;
    kept->top_keys_T = T;
    kept->valid = true;
  }
  const int first = text_scores_from(ids, bos_id);
  x.mean_loss = mean_token_loss(x.loss, first, T);
  x.first_copy_loss = x.second_copy_loss = std::numeric_limits<double>::quiet_NaN();
  if (o.text_scores) {
    // The queries before the first changed position are read from the last pass's parts.
    x.text_scores = text_scores(cache, first, o.repeat_at, kept ? &before.text_rows : nullptr, x.changed_from);
    if (kept) kept->text_rows = std::move(before.text_rows);
    if (const auto& r = x.text_scores->repeat) {
      x.first_copy_loss = mean_token_loss(x.loss, r->a, r->a + r->r);
      x.second_copy_loss = mean_token_loss(x.loss, r->a + r->d, r->a + r->d + r->r);
    }
  }
  return x;
}

}  // namespace cs
