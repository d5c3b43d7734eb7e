// Head scores on the typed text and its longest repeated block (seeds/004 on arbitrary text).
#include "analysis/text_scores.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace cs {

// For every distance d, the runs of equal tokens ids[i] == ids[i + d]; a run of length `run`
// ending at i gives a block of r = min(run, d) tokens (the copies may not overlap).
std::optional<Repeat> find_repeat(const std::vector<int>& ids, int from, int at) {
  const int T = static_cast<int>(ids.size());
  std::optional<Repeat> best, holding;  // the longest, and the longest with a copy holding `at`
  auto holds = [at](int a, int d, int r) { return (at >= a && at < a + r) || (at >= a + d && at < a + d + r); };
  for (int d = 1; d < T; ++d) {
    int run = 0;
    for (int i = std::max(0, from); i + d < T; ++i) {
      if (ids[i] == ids[i + d]) {
        ++run;
        const int r = std::min(run, d);
        if (r >= 4 && (!best || r > best->r)) best = Repeat{i + 1 - r, d, r};
        if (r >= kHeldRepeatMin && at >= 0 && (!holding || r > holding->r) && holds(i + 1 - r, d, r)) holding = Repeat{i + 1 - r, d, r, true};
      } else {
        run = 0;
      }
    }
  }
  std::optional<Repeat> found = holding ? holding : best;
  if (found) found->compared = found->r >= kHeldRepeatMin;
  return found;
}

int text_scores_from(const std::vector<int>& tokens, int bos_id) {
  return bos_id >= 0 && !tokens.empty() && tokens[0] == bos_id ? 1 : 0;
}

TextScores text_scores(const ActivationCache<float>& cache, int from, int at, TextScoreRows* rows, int unchanged) {
  if (cache.n_batch != 1) throw std::invalid_argument("text scores: expected the cache of one sequence");
  const int T = cache.n_pos;
  const std::vector<int>& ids = cache.tokens;
  const int L = static_cast<int>(cache.layers.size());
  const int H = L > 0 ? cache.layers[0].pattern.shape[1] : 0;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  TextScores out;
  out.repeat = T > 0 ? find_repeat(ids, from, at) : std::nullopt;
  out.previous_token.resize({L, H});
  out.prefix_matching.resize({L, H});
  out.stripe.resize({L, H});

  // The queries whose parts are kept: those before `unchanged`, when kept for the same heads and `from`.
  TextScoreRows fresh;
  TextScoreRows& kept = rows ? *rows : fresh;
  const int reuse = kept.from == from && kept.heads == L * H ? std::clamp(std::min(unchanged, kept.T), 0, T) : 0;
  TextScoreRows next;
  next.from = from, next.heads = L * H, next.T = T;
  next.previous.resize(static_cast<std::size_t>(L) * H * T);
  next.prefix.resize(static_cast<std::size_t>(L) * H * T);
  next.has_cells.assign(T, 0);
  for (int hh = 0; hh < L * H; ++hh)
    for (int q = 0; q < reuse; ++q) {
      next.previous[static_cast<std::size_t>(hh) * T + q] = kept.previous[static_cast<std::size_t>(hh) * kept.T + q];
      next.prefix[static_cast<std::size_t>(hh) * T + q] = kept.prefix[static_cast<std::size_t>(hh) * kept.T + q];
    }
  std::copy(kept.has_cells.begin(), kept.has_cells.begin() + reuse, next.has_cells.begin());

  // The key cells of prefix matching, for the queries read here: for each query q > from, every
  // earlier j >= from holding ids[q] with j + 1 < q gives key j + 1; cells[start[q] .. start[q+1]).
  std::vector<int> before(T, -1), start(T + 1, 0), cells;
  std::unordered_map<int, int> last;
  for (int q = 0; q < T; ++q) {
    auto it = last.find(ids[q]);
    before[q] = it == last.end() ? -1 : it->second;
    last[ids[q]] = q;
    start[q] = static_cast<int>(cells.size());
    if (q > from && q >= reuse)
      for (int j = before[q]; j >= from; j = before[j])
        if (j + 1 < q) cells.push_back(j + 1);
    if (q >= reuse) next.has_cells[q] = start[q] < static_cast<int>(cells.size());
  }
  start[T] = static_cast<int>(cells.size());

  for (int l = 0; l < L; ++l) {
    const float* pattern = cache.layers[l].pattern.ptr();  // [B=1, H, T, T]
    for (int h = 0; h < H; ++h) {
      const float* P = pattern + static_cast<std::size_t>(h) * T * T;
      float* prev = next.previous.data() + static_cast<std::size_t>(l * H + h) * T;
      double* pre = next.prefix.data() + static_cast<std::size_t>(l * H + h) * T;
      for (int q = std::max(from + 1, reuse); q < T; ++q) {
        prev[q] = P[static_cast<std::size_t>(q) * T + q - 1];
        double sum = 0;
        for (int k = start[q]; k < start[q + 1]; ++k) sum += P[static_cast<std::size_t>(q) * T + cells[k]];
        pre[q] = sum;
      }
      double pt = 0, pm = 0, st = 0;
      int pt_n = 0, pm_n = 0, st_n = 0;
      for (int q = from + 1; q < T; ++q) {
        pt += prev[q];
        ++pt_n;
        if (next.has_cells[q]) {
          pm += pre[q];
          ++pm_n;
        }
      }
      if (out.repeat) {
        const Repeat& rp = *out.repeat;
        for (int q = rp.a + rp.d; q < rp.a + rp.d + rp.r; ++q)
          if (q - rp.d + 1 < q) st += P[static_cast<std::size_t>(q) * T + q - rp.d + 1], ++st_n;
      }
      const std::size_t i = static_cast<std::size_t>(l) * H + h;
      out.previous_token.data[i] = pt_n ? static_cast<float>(pt / pt_n) : nan;
      out.prefix_matching.data[i] = pm_n ? static_cast<float>(pm / pm_n) : nan;
      out.stripe.data[i] = st_n ? static_cast<float>(st / st_n) : nan;
    }
  }
  if (rows) *rows = std::move(next);
  return out;
}

}  // namespace cs
