// Head scores, per-token loss, top-k predictions, ICL score and ablation (seed 004).
#include "analysis/scores.h"
#include "analysis/circuits.h"
#include "checks.h"
#include "kernels/gemm.h"
#include "kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>
#include <stdexcept>
#include <string>

#include "rng.h"

namespace cs {

namespace {

void check_cache_matches(const Params<float>& p, const ActivationCache<float>& cache, const RepeatedTokens& rt) {
  if (cache.n_batch != rt.B || cache.n_pos != rt.T() || cache.tokens != rt.tokens)
    throw std::invalid_argument("head scores: the activation cache was not computed on these repeated tokens (cache [" +
                                std::to_string(cache.n_batch) + ", " + std::to_string(cache.n_pos) + "], tokens [" +
                                std::to_string(rt.B) + ", " + std::to_string(rt.T()) + "])");
  if (static_cast<int>(cache.layers.size()) != p.cfg.n_layers)
    throw std::invalid_argument("head scores: the activation cache has " + std::to_string(cache.layers.size()) +
                                " layers but the model has " + std::to_string(p.cfg.n_layers));
}

}  // namespace

// Seed 004's random tokens are drawn from the ordinary tokens: skip the leading "<...>" ones.
TokenPool random_token_pool(const Tokenizer& tok) {
  TokenPool pool;
  const int V = tok.size();
  while (pool.first < V) {
    const std::string& t = tok.token_text(pool.first);
    if (!(t.size() > 1 && t.front() == '<' && t.back() == '>')) break;
    ++pool.first;
  }
  pool.n = V - pool.first;
  return pool;
}

RepeatedTokensSpec resolve_repeated_tokens(const RepeatedTokensSpec& spec, const Tokenizer& tok, int n_ctx) {
  const TokenPool pool = random_token_pool(tok);
  RepeatedTokensSpec r = spec;
  if (r.first < 0) r.first = pool.first;
  if (r.n < 0) r.n = tok.size() - r.first;
  if (r.L < 0) r.L = std::min(r.n, (n_ctx - 1) / 2);
  if (r.bos < 0) r.bos = std::max(0, tok.bos_id());
  if (r.batch < 0) r.batch = 16;
  if (r.seed < 0) r.seed = 0;
  if (2 * r.L + 1 > n_ctx)
    throw std::invalid_argument("headScores: 2L + 1: " + std::to_string(2 * r.L + 1) +
                                " tokens is longer than the model's context of " + std::to_string(n_ctx) + " tokens");
  return r;
}

double head_scores_work(const Config& c, const RepeatedTokensSpec& r) {
  const double T = 2.0 * r.L + 1, D = c.d_model;
  // The forward pass's unembed, then the copying score's v W_O W_U over the pool at 2L positions.
  return r.batch * (T * D * c.d_vocab + 2.0 * r.L * D * r.n);
}

RepeatedTokensSpec resolve_repeated_tokens(const RepeatedTokensSpec& spec, const Tokenizer& tok, const Config& c) {
  RepeatedTokensSpec r = resolve_repeated_tokens(spec, tok, c.n_ctx);
  if (spec.batch >= 0 || spec.L >= 0) return r;  // the caller's own choice is checked by forward()
  const auto fits = [&] { return head_scores_work(c, r) <= kMaxCircuitWork && forward_bytes(c, r.batch, 2.0 * r.L + 1) <= kMaxForwardBytes; };
  while (!fits() && r.batch > 1) r.batch = std::max(1, r.batch / 2);
  while (!fits() && r.L > 8) r.L = std::max(8, r.L / 2);
  return r;
}

RepeatedTokens make_repeated_tokens(const RepeatedTokensSpec& r) {
  return make_repeated_tokens(r.batch, r.L, r.first, r.n, r.bos, static_cast<std::uint64_t>(r.seed));
}

// Seed 004: [BOS] + R + R with R random tokens from [first, first + n).
RepeatedTokens make_repeated_tokens(int B, int L, int first, int n, int bos, std::uint64_t seed, bool distinct) {
  if (B < 1) throw std::invalid_argument("repeated tokens: the batch needs at least one sequence");
  if (L < 2) throw std::invalid_argument("repeated tokens: the random segment needs at least 2 tokens, got " + std::to_string(L));
  if (n < 2 || first < 0) throw std::invalid_argument("repeated tokens: draw from at least 2 token ids starting at id >= 0");
  RepeatedTokens rt;
  rt.B = B;
  rt.L = L;
  rt.first = first;
  rt.n = n;
  rt.bos = bos;
  const int T = rt.T();
  rt.tokens.assign(static_cast<std::size_t>(B) * T, bos);
  Rng rng(seed);
  std::vector<int> pool(n);
  for (int r = 0; r < B; ++r) {
    int* row = &rt.tokens[static_cast<std::size_t>(r) * T];
    if (distinct && L <= n) {
      // Partial Fisher-Yates: the first L entries of a random permutation of [first, first + n).
      std::iota(pool.begin(), pool.end(), first);
      for (int i = 0; i < L; ++i) std::swap(pool[i], pool[i + rng.below(n - i)]);
      for (int i = 0; i < L; ++i) row[1 + i] = pool[i];
    } else {
      for (int i = 0; i < L; ++i) row[1 + i] = first + rng.below(n);
    }
    for (int i = 0; i < L; ++i) row[1 + L + i] = row[1 + i];
  }
  return rt;
}

SampleText repeated_sample_text(const Tokenizer& tok, int n_ctx, std::uint64_t seed, int length) {
  SampleText out;
  const TokenPool pool = random_token_pool(tok);
  const int L = std::min(length < 0 ? 12 : length, (n_ctx - 1) / 2);
  if (L < 2 || pool.n < 2) return out;
  // A token can be typed when its text shows and reads back as that one token.
  const auto typable = [&tok](int id) {
    try {
      const std::string text = tok.decode({id});
      if (std::all_of(text.begin(), text.end(), [](char ch) { return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'; })) return false;
      const std::vector<int> back = tok.encode_ids(text, false);
      return back.size() == 1 && back[0] == id;
    } catch (const std::invalid_argument&) {  // its text holds a word the vocabulary lacks
      return false;
    }
  };
  // Distinct tokens by rejection: a few draws per token are enough unless most of the pool is
  // untypable, and then the pool is scanned once in a seeded order.
  Rng rng(seed);
  std::vector<int> r;
  std::unordered_set<int> seen;
  for (int tries = 0; static_cast<int>(r.size()) < L && tries < 20 * L; ++tries) {
    const int id = pool.first + rng.below(pool.n);
    if (seen.insert(id).second && typable(id)) r.push_back(id);
  }
  if (static_cast<int>(r.size()) < L) {
    const int start = rng.below(pool.n);
    for (int i = 0; i < pool.n && static_cast<int>(r.size()) < L; ++i) {
      const int id = pool.first + (start + i) % pool.n;
      if (seen.insert(id).second && typable(id)) r.push_back(id);
    }
  }
  if (r.size() < 2) return out;
  std::vector<int> rr = r;
  rr.insert(rr.end(), r.begin(), r.end());
  out.text = tok.decode(rr);
  out.segment = tok.decode(r);
  out.tokens = tok.encode_ids(out.text, tok.bos_id() >= 0);
  return out;
}

// Seed 004 (induction-heads paper, definitions of prefix matching and copying on repeated random tokens).
HeadScores head_scores(const Params<float>& p, const ActivationCache<float>& cache, const RepeatedTokens& rt) {
  check_cache_matches(p, cache, rt);
  const Config& c = p.cfg;
  const int NL = c.n_layers, H = c.n_heads, B = rt.B, T = rt.T(), L = rt.L;
  if (rt.first + rt.n > c.d_vocab)
    throw std::invalid_argument("head scores: the token ids [" + std::to_string(rt.first) + ", " +
                                std::to_string(rt.first + rt.n) + ") are outside the model's vocabulary of " +
                                std::to_string(c.d_vocab));
  HeadScores s;
  s.previous_token.resize({NL, H});
  s.duplicate_token.resize({NL, H});
  s.prefix_matching.resize({NL, H});
  s.copying.resize({NL, H});
  // The unembedding columns of the tokens R is drawn from: [D, n]. For a large pool (a 50k-token
  // vocabulary) the per-head table W_O W_U[:, R] would cost Dh D n multiply-adds a head; the
  // batch's (v W_O) W_U[:, R] costs B T D n, fewer when B T < Dh: the cheaper order is taken, the
  // second with the SIMD kernel reading W_U's columns in place (small models keep the first).
  const int D = c.d_model, Dh = c.d_head;
  const double BT = static_cast<double>(B) * T;
  const bool batch_first = BT * Dh * D + BT * D * rt.n < static_cast<double>(Dh) * D * rt.n + BT * Dh * rt.n;
  const MatRM<float> WU_R = batch_first ? MatRM<float>() : MatRM<float>(p.W_U.mat().middleCols(rt.first, rt.n));
  MatRM<float> U(B * T, rt.n);
  for (int l = 0; l < NL; ++l) {
    const LayerCache<float>& lc = cache.layers[l];
    for (int h = 0; h < H; ++h) {
      // Attention scores: pattern [B, H, T, T].
      double prev = 0, dup = 0, pm = 0;
      for (int b = 0; b < B; ++b) {
        CMapM<float> P(lc.pattern.ptr() + (static_cast<std::size_t>(b) * H + h) * T * T, T, T);
        for (int i = 1; i < T; ++i) prev += P(i, i - 1);
        for (int i = L + 1; i < T; ++i) {
          dup += P(i, i - L);
          pm += P(i, i - L + 1);
        }
      }
      s.previous_token.data[l * H + h] = static_cast<float>(prev / (static_cast<double>(B) * (T - 1)));
      s.duplicate_token.data[l * H + h] = static_cast<float>(dup / (static_cast<double>(B) * L));
      s.prefix_matching.data[l * H + h] = static_cast<float>(pm / (static_cast<double>(B) * L));

      // Copying: u = v_j W_O W_U[:, R ids] for every source position j >= 1.  U [B*T, n]
      if (batch_first) {
        const MatRM<float> vO = lc.v.slice(h) * p.blocks[l].W_O.slice(h);  // [B*T, D]
        kernels::sgemm({kernels::Op::N, kernels::Op::N, B * T, rt.n, D, 1.0f, vO.data(), D, p.W_U.ptr() + rt.first, c.d_vocab, 0.0f,
                        U.data(), rt.n});
      } else {
        const MatRM<float> OVU = p.blocks[l].W_O.slice(h) * WU_R;  // [Dh, n]
        U = lc.v.slice(h) * OVU;
      }
      double cs_sum = 0;
      for (int b = 0; b < B; ++b)
        for (int j = 1; j < T; ++j) {
          const int row = b * T + j;
          const int tok = rt.tokens[row] - rt.first;
          const double mean = U.row(row).cast<double>().mean();
          const double mx = U.row(row).maxCoeff(), mn = U.row(row).minCoeff();
          const double x = U(row, tok) - mean;
          double cj = 0;
          if (x >= 0 && mx - mean > 0) cj = x / (mx - mean);
          else if (x < 0 && mean - mn > 0) cj = x / (mean - mn);
          cs_sum += std::max(-1.0, std::min(1.0, cj));
        }
      s.copying.data[l * H + h] = static_cast<float>(cs_sum / (static_cast<double>(B) * (T - 1)));
    }
  }
  return s;
}

// Seed 004: forward pass on the repeated tokens, then the scores.
HeadScores head_scores(const Params<float>& p, const RepeatedTokens& rt) {
  ActivationCache<float> cache;
  forward(p, rt.tokens, rt.B, rt.T(), cache);
  check_output_finite(cache);  // an overflowed pass would give NaN scores
  return head_scores(p, cache, rt);
}

// Seed 004: per-token loss vector (cross-entropy of the next token at every position).
Tensor<float> per_token_loss(const ActivationCache<float>& cache) {
  const int B = cache.n_batch, T = cache.n_pos;
  if (T < 2) throw std::invalid_argument("per-token loss: sequences need at least 2 tokens to have a next token");
  if (cache.last_logits_only) throw std::logic_error("per-token loss: the forward pass computed only each row's last logits");
  auto lg = cache.logits.mat();  // [B*T, V]
  Tensor<float> out({B, T - 1});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t + 1 < T; ++t) {
      const int n = b * T + t;
      out.data[static_cast<std::size_t>(b) * (T - 1) + t] = next_token_loss(lg.row(n), cache.tokens[n + 1]);
    }
  return out;
}

void top_k_add(const float* logits, int n, int v0, int k, int* ids, float* values, int& count) {
  // A larger value first, the smaller id on a tie: ids come in increasing order, so an equal value
  // never displaces one already kept. Once k are kept, a group of values none of which is larger
  // than the k-th is passed over on its maximum (most of a 48,262-token row).
  constexpr int kGroup = 64;
  for (int g0 = 0; g0 < n; g0 += kGroup) {
    const int g1 = std::min(n, g0 + kGroup);
    if (count == k && !(kernels::max_of(logits + g0, g1 - g0) > values[k - 1])) continue;
    for (int v = g0; v < g1; ++v) {
      const float x = logits[v];
      if (count == k && !(x > values[k - 1])) continue;
      int i = count < k ? count++ : k - 1;
      for (; i > 0 && x > values[i - 1]; --i) ids[i] = ids[i - 1], values[i] = values[i - 1];
      ids[i] = v0 + v, values[i] = x;
    }
  }
}

void top_k_row(const float* logits, int V, int k, float lse, int* ids, float* probs) {
  std::vector<float> values(k);
  int n = 0;
  top_k_add(logits, V, 0, k, ids, values.data(), n);
  for (int i = 0; i < k; ++i) probs[i] = static_cast<float>(std::exp(static_cast<double>(values[i]) - lse));
}

void check_top_k(int k, int V) {
  if (k < 1 || k > V)
    throw std::invalid_argument("top-k: k must be between 1 and the vocabulary size " + std::to_string(V) + ", got " +
                                std::to_string(k));
}

// Seed 004: the model's most probable next tokens at each position.
TopK top_k_predictions(const ActivationCache<float>& cache, int k) {
  const int V = cache.logits.shape.back(), N = static_cast<int>(cache.logits.size() / V);
  check_top_k(k, V);
  TopK r;
  r.k = k;
  r.ids.resize({cache.n_batch, cache.n_pos, k});
  r.probs.resize({cache.n_batch, cache.n_pos, k});
  std::vector<float> scratch;
  for (int n = 0; n < N; ++n) {
    const float* row = cache.logits.ptr() + static_cast<std::size_t>(n) * V;
    top_k_row(row, V, k, log_sum_exp_row(row, V, scratch), r.ids.ptr() + static_cast<std::size_t>(n) * k,
              r.probs.ptr() + static_cast<std::size_t>(n) * k);
  }
  return r;
}

// Seed 004: ICL score = loss at token index `late` minus loss at token index `early`, batch mean.
double icl_score(const Tensor<float>& per_token, int early, int late) {
  if (per_token.shape.size() != 2) throw std::invalid_argument("ICL score: expected per-token losses of shape [B, T-1]");
  const int B = per_token.shape[0], P = per_token.shape[1];
  if (early < 0 || late < 0 || early >= P || late >= P)
    throw std::invalid_argument("ICL score: token indices " + std::to_string(early) + " and " + std::to_string(late) +
                                " must both be below " + std::to_string(P) +
                                " (the number of positions with a next token); use a longer context or smaller indices");
  double s = 0;
  for (int b = 0; b < B; ++b)
    s += static_cast<double>(per_token.data[static_cast<std::size_t>(b) * P + late]) -
         per_token.data[static_cast<std::size_t>(b) * P + early];
  return s / B;
}

void icl_differences(const Tensor<float>& per_token, int early, int late, std::vector<double>* out) {
  icl_score(per_token, early, late);  // the same checks and messages
  const int B = per_token.shape[0], P = per_token.shape[1];
  for (int b = 0; b < B; ++b)
    out->push_back(static_cast<double>(per_token.data[static_cast<std::size_t>(b) * P + late]) -
                   per_token.data[static_cast<std::size_t>(b) * P + early]);
}

IclEstimate icl_from_differences(const std::vector<double>& d) {
  IclEstimate e;
  e.n = static_cast<int>(d.size());
  if (d.empty()) return e;
  double s = 0;
  for (double x : d) s += x;
  e.mean = s / e.n;
  if (e.n > 1) {
    double ss = 0;
    for (double x : d) ss += (x - e.mean) * (x - e.mean);
    e.se = std::sqrt(ss / (e.n - 1) / e.n);
  }
  return e;
}

IclEstimate icl_estimate(const Tensor<float>& per_token, int early, int late) {
  std::vector<double> d;
  icl_differences(per_token, early, late, &d);
  IclEstimate e = icl_from_differences(d);
  e.mean = icl_score(per_token, early, late);  // the same summation as the score itself
  return e;
}

// Seed 004, argument 3: run with and without an intervention and report the change.
AblationResult ablate(const Params<float>& p, const std::vector<int>& tokens, int B, int T, const Intervention& iv,
                      int icl_early, int icl_late) {
  ActivationCache<float> clean, hit;
  forward(p, tokens, B, T, clean);
  check_output_finite(clean);
  forward(p, tokens, B, T, hit, iv);
  check_output_finite(hit);
  AblationResult r;
  Tensor<float> clean_pt = per_token_loss(clean);
  r.per_token = per_token_loss(hit);
  r.logits = hit.logits;
  r.logits_delta = hit.logits;
  for (std::size_t i = 0; i < r.logits_delta.size(); ++i) r.logits_delta.data[i] -= clean.logits.data[i];
  r.per_token_delta = r.per_token;
  for (std::size_t i = 0; i < r.per_token_delta.size(); ++i) r.per_token_delta.data[i] -= clean_pt.data[i];
  auto mean = [](const Tensor<float>& t) {
    double s = 0;
    for (float x : t.data) s += x;
    return t.data.empty() ? 0.0 : s / t.data.size();
  };
  r.loss = mean(r.per_token);
  r.clean_loss = mean(clean_pt);
  r.icl = icl_score(r.per_token, icl_early, icl_late);
  r.clean_icl = icl_score(clean_pt, icl_early, icl_late);
  r.loss_delta = r.loss - r.clean_loss;
  r.icl_delta = r.icl - r.clean_icl;
  return r;
}

// Seed 004, argument 3: zero-ablate one head.
Intervention zero_ablation(int layer, int head) {
  Intervention iv;
  HeadAblation a;
  a.layer = layer;
  a.head = head;
  iv.ablations.push_back(a);
  return iv;
}

}  // namespace cs
