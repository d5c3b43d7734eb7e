// IOI analysis of the symbolic task (seed 001): decomposition along the sum and difference
// directions, logit lens, task accuracy, composition cuts.
#include "analysis/ioi.h"
#include "analysis/circuits.h"
#include "checks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

#include "data.h"

namespace cs {

namespace {

using VecD = Eigen::VectorXd;

// Softmax probabilities of entries a and b of a row of logits (computed in double).
template <class Row>
void two_probs(const Row& logits, int a, int b, double& pa, double& pb) {
  const double mx = logits.maxCoeff();
  double z = 0;
  for (Eigen::Index j = 0; j < logits.size(); ++j) z += std::exp(static_cast<double>(logits(j)) - mx);
  pa = std::exp(static_cast<double>(logits(a)) - mx) / z;
  pb = std::exp(static_cast<double>(logits(b)) - mx) / z;
}

double cosine(const VecD& c, const VecD& u) {
  const double n = c.norm() * u.norm();
  return n > 0 ? c.dot(u) / n : 0.0;
}

// The analysis of row `row` of a cache at position `pos`.
IoiAnalysis analyse_row(const Params<float>& p, const ActivationCache<float>& cache, int row, int pos,
                        const std::vector<int>& names) {
  const Config& c = p.cfg;
  const int T = cache.n_pos, D = c.d_model, NL = c.n_layers, H = c.n_heads;
  std::vector<int> toks(cache.tokens.begin() + static_cast<std::size_t>(row) * T,
                        cache.tokens.begin() + static_cast<std::size_t>(row + 1) * T);
  IoiNames nm = ioi_names(toks, pos, names);
  IoiAnalysis a;
  a.pos = pos;
  a.io = nm.io;
  a.s = nm.s;
  const int n = row * T + pos;  // row of the flattened [B*T, .] activations

  auto lg = cache.logits.mat().row(n);
  Eigen::Index arg = 0;
  lg.maxCoeff(&arg);
  a.predicted = static_cast<int>(arg);
  a.logit_io = lg(a.io);
  a.logit_s = lg(a.s);
  a.logit_diff = a.logit_io - a.logit_s;
  two_probs(lg, a.io, a.s, a.prob_io, a.prob_s);

  // With a final LayerNorm its scale at pos is frozen at the forward pass's value, as attribution
  // freezes it (TransformerLens's apply_ln_to_stack): each term is centred, divided by it and read
  // through diag(ln_final.w) W_U, and ln_final.b W_U joins the bias; the terms still sum to the
  // logit difference.
  const bool norm = c.normalization != Norm::None;
  const double scale = norm ? static_cast<double>(cache.ln_final_scale.data[n]) : 1.0;
  MatRM<double> WU = p.W_U.mat().cast<double>();  // [D, V]
  double ln_bias_io = 0, ln_bias_s = 0;
  if (c.normalization == Norm::LN) {
    const VecD b = p.ln_final_b.vec().transpose().cast<double>();
    ln_bias_io = b.dot(WU.col(a.io));
    ln_bias_s = b.dot(WU.col(a.s));
    for (int d = 0; d < D; ++d) WU.row(d) *= static_cast<double>(p.ln_final_w.data[d]);
  }
  const auto through_ln = [&](VecD x) { return through_frozen_ln(std::move(x), norm, scale); };
  const VecD u_io = WU.col(a.io), u_s = WU.col(a.s);
  const VecD u_diff = u_io - u_s, u_sum = u_io + u_s;

  a.head_diff.resize({NL, H});
  a.head_sum.resize({NL, H});
  a.head_cos_diff.resize({NL, H});
  a.head_cos_sum.resize({NL, H});
  for (int l = 0; l < NL; ++l)
    for (int h = 0; h < H; ++h) {
      // hook_result [H, B, T, D]: head h's output at (row, pos).
      const VecD r = through_ln(cache.layers[l].result.slice(h).row(n).transpose().cast<double>());
      a.head_diff.data[l * H + h] = static_cast<float>(r.dot(u_diff));
      a.head_sum.data[l * H + h] = static_cast<float>(r.dot(u_sum));
      a.head_cos_diff.data[l * H + h] = static_cast<float>(cosine(r, u_diff));
      a.head_cos_sum.data[l * H + h] = static_cast<float>(cosine(r, u_sum));
    }
  // Direct path: embedding (+ positions added to the residual stream).
  VecD direct = cache.embed.mat().row(n).transpose().cast<double>();
  if (c.pos_embed == PosEmbed::Standard) direct += cache.pos_embed.mat().row(pos).transpose().cast<double>();
  direct = through_ln(direct);
  a.direct_diff = direct.dot(u_diff);
  a.direct_sum = direct.dot(u_sum);
  if (c.use_bias) {
    VecD bo = VecD::Zero(D);
    for (int l = 0; l < NL; ++l) bo += p.blocks[l].b_O.vec().transpose().cast<double>();
    bo = through_ln(bo);
    a.bias_diff = bo.dot(u_diff) + p.b_U.data[a.io] - p.b_U.data[a.s];
    a.bias_sum = bo.dot(u_sum) + p.b_U.data[a.io] + p.b_U.data[a.s];
  }
  a.bias_diff += ln_bias_io - ln_bias_s;
  a.bias_sum += ln_bias_io + ln_bias_s;
  // Each layer's MLP output (hook_mlp_out, with its b_out) is a term of its own.
  a.mlp_diff.resize({c.d_mlp > 0 ? NL : 0});
  a.mlp_sum.resize({c.d_mlp > 0 ? NL : 0});
  for (int l = 0; l < NL && c.d_mlp > 0; ++l) {
    const VecD m = through_ln(cache.layers[l].mlp_out.mat().row(n).transpose().cast<double>());
    a.mlp_diff.data[l] = static_cast<float>(m.dot(u_diff));
    a.mlp_sum.data[l] = static_cast<float>(m.dot(u_sum));
  }

  // Logit lens over resid_pre of layer 0 and resid_post of every layer.
  std::vector<const Tensor<float>*> stages;
  if (NL == 0) stages.push_back(&cache.resid_final);
  else stages.push_back(&cache.layers[0].resid_pre);
  for (int l = 0; l < NL; ++l) stages.push_back(&cache.layers[l].resid_post);
  RowVecT<double> lens_bias = RowVecT<double>::Zero(c.d_vocab);  // ln_final.b W_U + b_U, every stage's
  if (c.normalization == Norm::LN) lens_bias += p.ln_final_b.vec().cast<double>() * p.W_U.mat().cast<double>();
  if (c.use_bias) lens_bias += p.b_U.vec().cast<double>();
  for (const Tensor<float>* st : stages) {
    // With a final LayerNorm, each stage through it with the scale frozen at the last stage's
    // (apply_ln_to_stack), so the last stage gives the model's logits.
    const RowVecT<double> x = RowVecT<double>(through_ln(st->mat().row(n).transpose().cast<double>()).transpose() * WU) + lens_bias;  // [V]
    double pio, ps;
    two_probs(x, a.io, a.s, pio, ps);
    a.lens_logit_io.push_back(static_cast<float>(x(a.io)));
    a.lens_logit_s.push_back(static_cast<float>(x(a.s)));
    a.lens_prob_io.push_back(static_cast<float>(pio));
    a.lens_prob_s.push_back(static_cast<float>(ps));
  }

  // The softmax at pos and its top tokens.
  const int V = static_cast<int>(lg.size());
  const double mx = lg.maxCoeff();
  double z = 0;
  for (int j = 0; j < V; ++j) z += std::exp(static_cast<double>(lg(j)) - mx);
  a.probs.resize(V);
  for (int j = 0; j < V; ++j) a.probs[j] = static_cast<float>(std::exp(static_cast<double>(lg(j)) - mx) / z);
  const int K = std::min(kIoiTopK, V);
  std::vector<int> idx(V);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + K, idx.end(),
                    [&](int x, int y) { return lg(x) > lg(y) || (lg(x) == lg(y) && x < y); });
  for (int i = 0; i < K; ++i) a.top_ids.push_back(idx[i]), a.top_probs.push_back(a.probs[idx[i]]);

  IoiHeadRoles roles = ioi_head_roles(a.head_diff, a.head_sum, a.logit_diff, a.logit_io + a.logit_s);
  a.head_share_diff = std::move(roles.share_diff);
  a.head_share_sum = std::move(roles.share_sum);
  a.most_contrastive = roles.most_contrastive;
  a.most_additive = roles.most_additive;
  a.correct = a.predicted == a.io;
  return a;
}

}  // namespace

void ioi_rank_names(IoiAnalysis& a, const std::vector<int>& name_ids) {
  const int n = static_cast<int>(name_ids.size());
  a.name_order.resize(n);
  std::iota(a.name_order.begin(), a.name_order.end(), 0);
  auto p = [&](int k) {
    const int id = name_ids[k];
    return id >= 0 && id < static_cast<int>(a.probs.size()) ? a.probs[id] : 0.0f;
  };
  std::stable_sort(a.name_order.begin(), a.name_order.end(), [&](int x, int y) { return p(x) > p(y); });
  a.name_prob_total = 0;
  for (int k = 0; k < n; ++k) a.name_prob_total += p(k);
}

// Seed 001: IO is the name that occurs once before <MID>, S the one that occurs twice.
IoiNames ioi_names(const std::vector<int>& tokens, int pos, const std::vector<int>& names) {
  if (pos < 1 || pos >= static_cast<int>(tokens.size()))
    throw std::invalid_argument("IOI: the prediction position " + std::to_string(pos) + " is outside a sequence of " +
                                std::to_string(tokens.size()) + " tokens");
  std::map<int, int> count;
  for (int t = 1; t < pos; ++t) {
    if (!names.empty()) {
      if (std::find(names.begin(), names.end(), tokens[t]) != names.end()) ++count[tokens[t]];
    } else if (tokens[t] != tokens[0] && tokens[t] != tokens[pos]) {
      ++count[tokens[t]];
    }
  }
  IoiNames nm;
  int ones = 0, twos = 0;
  for (const auto& kv : count) {
    if (kv.second == 1) nm.io = kv.first, ++ones;
    else if (kv.second == 2) nm.s = kv.first, ++twos;
  }
  if (ones != 1 || twos != 1 || count.size() != 2)
    throw std::invalid_argument(
        names.empty() ? "IOI: a sequence must name one person once (IO) and another twice (S) before the prediction position, "
                        "like <BOS> A B B <MID>"
                      : "IOI: the sentence must name one person once (the indirect object) and another twice (the subject) "
                        "before the last word, like \"When Mary and John went to the store, John gave a drink to\"");
  return nm;
}

// Seed 001: residual-stream decomposition at the last position, and the logit lens.
IoiAnalysis ioi_analyse(const Params<float>& p, const std::vector<int>& tokens, const Intervention& iv,
                        const std::vector<int>& names) {
  const int T = static_cast<int>(tokens.size());
  ActivationCache<float> cache;
  forward(p, tokens, 1, T, cache, iv);
  check_output_finite(cache);
  return analyse_row(p, cache, 0, T - 1, names);
}

Intervention ioi_with_reference(const Params<float>& p, const Intervention& iv, const Batch& reference) {
  if (iv.ablation == Ablation::Zero || iv.reference) return iv;
  if (reference.B < 1 || reference.tokens.size() != static_cast<std::size_t>(reference.B) * reference.T)
    throw std::invalid_argument("IOI: the reference sequences do not form a [B, T] batch");
  Intervention out = iv;
  out.reference = ablation_reference(p, reference.tokens, reference.B, reference.T);
  return out;
}

// Seed 001: accuracy, logit difference and name probabilities over a set of IOI sequences.
IoiEvaluation ioi_evaluate(const Params<float>& p, const Batch& seq, const Intervention& iv_in, const std::vector<int>& names) {
  const int B = seq.B, T = seq.T;
  if (B < 1 || seq.tokens.size() != static_cast<std::size_t>(B) * T)
    throw std::invalid_argument("IOI: the sequences do not form a [B, T] batch");
  const Intervention iv = ioi_with_reference(p, iv_in, seq);
  const int NL = p.cfg.n_layers, H = p.cfg.n_heads;
  IoiEvaluation e;
  e.n = B;
  e.mean_head_diff.resize({NL, H});
  e.mean_head_sum.resize({NL, H});
  e.mean_head_cos_diff.resize({NL, H});
  e.mean_head_cos_sum.resize({NL, H});
  // The sentences go through the model kIoiEvalChunk at a time (rows are independent, so the
  // numbers are those of one pass over all of them), keeping the cache small for any task size.
  ActivationCache<float> cache;
  std::vector<int> chunk;
  for (int b = 0; b < B; ++b) {
    const int row = b % kIoiEvalChunk;
    if (row == 0) {
      const int nb = std::min(kIoiEvalChunk, B - b);
      const auto first = seq.tokens.begin() + static_cast<std::ptrdiff_t>(b) * T;
      chunk.assign(first, first + static_cast<std::ptrdiff_t>(nb) * T);
      forward(p, chunk, nb, T, cache, iv);
      check_output_finite(cache);
    }
    int pos = T - 1;
    if (seq.mask.size() == seq.tokens.size())
      for (int t = 0; t < T; ++t)
        if (seq.mask[static_cast<std::size_t>(b) * T + t] != 0) pos = t;
    IoiAnalysis a = analyse_row(p, cache, row, pos, names);
    e.predicted.push_back(a.predicted);
    e.logit_diff.push_back(static_cast<float>(a.logit_diff));
    e.prob_io.push_back(static_cast<float>(a.prob_io));
    e.prob_s.push_back(static_cast<float>(a.prob_s));
    e.correct += a.predicted == a.io;
    e.mean_logit_diff += a.logit_diff;
    e.mean_prob_io += a.prob_io;
    e.mean_prob_s += a.prob_s;
    e.mean_loss += -std::log(std::max(a.prob_io, 1e-300));
    for (std::size_t i = 0; i < a.head_diff.size(); ++i) {
      e.mean_head_diff.data[i] += a.head_diff.data[i] / B;
      e.mean_head_sum.data[i] += a.head_sum.data[i] / B;
      e.mean_head_cos_diff.data[i] += a.head_cos_diff.data[i] / B;
      e.mean_head_cos_sum.data[i] += a.head_cos_sum.data[i] / B;
    }
  }
  e.accuracy = static_cast<double>(e.correct) / B;
  e.mean_logit_diff /= B;
  e.mean_prob_io /= B;
  e.mean_prob_s /= B;
  e.mean_loss /= B;
  return e;
}

// Seed 001: the 60 sequences of the symbolic task (the ioi_symbolic data source's full set).
Batch ioi_symbolic_sequences() {
  return make_data_source({{"kind", "ioi_symbolic"}}, ioi_symbolic_tokenizer())->all().batch;
}

// Seed 001: evaluation over the whole symbolic task.
void check_symbolic_vocabulary(const Config& cfg) {
  const int V = ioi_symbolic_tokenizer().size();
  if (cfg.d_vocab != V)
    throw std::invalid_argument("IOI: the symbolic task's vocabulary has " + std::to_string(V) +
                                " tokens (<BOS> <MID> A..F) but this model's has " + std::to_string(cfg.d_vocab));
}

bool is_symbolic_ioi_vocabulary(const Tokenizer& tok) {
  const Tokenizer sym = ioi_symbolic_tokenizer();
  if (tok.kind() != sym.kind() || tok.size() != sym.size()) return false;
  for (int i = 0; i < sym.size(); ++i)
    if (tok.token_bytes(i) != sym.token_bytes(i)) return false;
  return true;
}

IoiEvaluation ioi_evaluate(const Params<float>& p, const Intervention& iv) {
  check_symbolic_vocabulary(p.cfg);
  return ioi_evaluate(p, ioi_symbolic_sequences(), iv);
}

// Seed 001 (the additive and the contrastive head): each head's share of the two totals, and the
// heads that carry them.
IoiHeadRoles ioi_head_roles(const Tensor<float>& head_diff, const Tensor<float>& head_sum, double logit_diff, double logit_sum) {
  if (head_diff.shape != head_sum.shape) throw std::invalid_argument("IOI: head_diff and head_sum differ in shape");
  IoiHeadRoles r;
  r.share_diff.resize(head_diff.shape);
  r.share_sum.resize(head_sum.shape);
  const std::size_t n = head_diff.data.size();
  for (std::size_t i = 0; i < n; ++i) {
    r.share_diff.data[i] = logit_diff == 0 ? 0.0f : static_cast<float>(head_diff.data[i] / logit_diff);
    r.share_sum.data[i] = logit_sum == 0 ? 0.0f : static_cast<float>(head_sum.data[i] / logit_sum);
  }
  if (n == 0) return r;
  const int H = head_diff.shape.size() == 2 ? head_diff.shape[1] : static_cast<int>(n);
  std::size_t con = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (head_diff.data[i] > head_diff.data[con]) con = i;
  std::size_t add = n == 1 ? 0 : (con == 0 ? 1 : 0);
  for (std::size_t i = 0; i < n; ++i)
    if (i != con && head_sum.data[i] > head_sum.data[add]) add = i;
  r.contrastive = static_cast<int>(con);
  r.additive = static_cast<int>(add);
  auto name = [&](std::size_t i) { return "L" + std::to_string(i / H) + "H" + std::to_string(i % H); };
  r.most_contrastive = name(con);
  r.most_additive = name(add);
  return r;
}

std::vector<int> ioi_symbolic_name_ids(const Tokenizer& tok) {
  const int bos = tok.find("<BOS>"), mid = tok.find("<MID>");
  std::vector<int> names;
  for (int i = 0; i < tok.size(); ++i)
    if (i != bos && i != mid) names.push_back(i);
  return names;
}

IoiSymbolicSentence ioi_symbolic_sentence(const Tokenizer& tok, int io, int s, int order) {
  const int bos = tok.find("<BOS>"), mid = tok.find("<MID>");
  if (bos < 0 || mid < 0) throw std::invalid_argument("ioiSentence: this model's vocabulary has no <BOS> and <MID>: it is not a symbolic IOI model");
  const std::vector<int> names = ioi_symbolic_name_ids(tok);
  const int n = static_cast<int>(names.size());
  for (auto [i, what] : {std::pair<int, const char*>{io, "io"}, {s, "s"}})
    if (i < 0 || i >= n)
      throw std::invalid_argument(std::string("ioiSentence: name ") + what + " " + std::to_string(i) + " is not one of the " +
                                  std::to_string(n) + " names (0.." + std::to_string(n - 1) + ")");
  if (io == s) throw std::invalid_argument("ioiSentence: io and s must be two different names");
  if (order != 0 && order != 1)
    throw std::invalid_argument("ioiSentence: order must be 0 (IO S S) or 1 (S IO S), got " + std::to_string(order));
  IoiSymbolicSentence out;
  const int I = names[io], S = names[s];
  out.tokens = order == 0 ? std::vector<int>{bos, I, S, S, mid} : std::vector<int>{bos, S, I, S, mid};
  for (int id : out.tokens) out.words.push_back(tok.token_text(id));
  for (std::size_t i = 1; i < out.words.size(); ++i) out.text += (i > 1 ? " " : "") + out.words[i];
  return out;
}

// Seed 001 (Q/K/V composition ablation): cut `input` of every later head from every earlier head.
Intervention cut_composition(const Config& cfg, Input input) {
  Intervention iv;
  for (int dl = 1; dl < cfg.n_layers; ++dl)
    for (int dh = 0; dh < cfg.n_heads; ++dh)
      for (int sl = 0; sl < dl; ++sl)
        for (int sh = 0; sh < cfg.n_heads; ++sh) {
          PathCut k;
          k.src_layer = sl;
          k.src_head = sh;
          k.dst_layer = dl;
          k.dst_head = dh;
          k.input = input;
          iv.cuts.push_back(k);
        }
  return iv;
}

// Seed 001: every composition cut under every ablation kind, one reference run shared by all.
std::vector<std::vector<double>> ioi_cut_accuracies(const Params<float>& p) {
  check_symbolic_vocabulary(p.cfg);
  std::vector<std::vector<double>> out;
  if (p.cfg.n_layers < 2) return out;
  const Batch seq = ioi_symbolic_sequences();
  const auto ref = ablation_reference(p, seq.tokens, seq.B, seq.T);
  for (Ablation kind : kAblations) {
    std::vector<double> row;
    for (int k = 0; k < 3; ++k) {
      Intervention iv = cut_composition(p.cfg, static_cast<Input>(k));
      iv.ablation = kind;
      iv.reference = ref;
      row.push_back(ioi_evaluate(p, seq, iv).accuracy);
    }
    out.push_back(row);
  }
  return out;
}

}  // namespace cs
