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

std::vector<float> position_losses(const ActivationCache<float>& cache, const std::vector<int>& ids) {
  const int T = static_cast<int>(ids.size());
  std::vector<float> loss(T, std::numeric_limits<float>::quiet_NaN());
  if (T > 1) {
    const LossResult lr = loss_from_logits<float>(cache, next_token_batch(ids, 1, T));
    for (int t = 0; t + 1 < T && t < static_cast<int>(lr.per_token.size()); ++t) loss[t] = lr.per_token[t];
  }
  return loss;
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

std::vector<float> head_results(const ActivationCache<float>& cache) {
  std::size_t n = 0;
  for (const auto& lc : cache.layers) n += lc.result.size();
  std::vector<float> out;
  out.reserve(n);
  for (const auto& lc : cache.layers) out.insert(out.end(), lc.result.data.begin(), lc.result.data.end());
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
                       int bos_id, ActivationCache<float>& cache, const std::string& what) {
  const int T = static_cast<int>(ids.size());
  check_context_length(p.cfg, T, what);
  cache.keep_result = true;  // (a benchmark pass may have cleared it)
  forward<float>(p, ids, 1, T, cache, iv);
  check_output_finite(cache);
  RunExtras x;
  x.loss = position_losses(cache, ids);
  if (o.resid) x.resid = residual_stages(cache);
  if (o.result) x.result = head_results(cache);
  if (o.topk > 0) x.top = top_k_predictions(cache, o.topk);
  const int from = text_scores_from(ids, bos_id);
  x.mean_loss = mean_token_loss(x.loss, from, T);
  x.first_copy_loss = x.second_copy_loss = std::numeric_limits<double>::quiet_NaN();
  if (o.text_scores) {
    x.text_scores = text_scores(cache, from, o.repeat_at);
    if (const auto& r = x.text_scores->repeat) {
      x.first_copy_loss = mean_token_loss(x.loss, r->a, r->a + r->r);
      x.second_copy_loss = mean_token_loss(x.loss, r->a + r->d, r->a + r->d + r->r);
    }
  }
  return x;
}

}  // namespace cs
