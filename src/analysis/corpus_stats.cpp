// Corpus statistics and gradient leading terms (seed 002).
#include "analysis/corpus_stats.h"

#include "kernels/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace cs {

namespace {

// The statistics are dense [V, V] tables, counted in double (8 bytes an entry) and kept in float,
// about 16 V^2 bytes at once with the cosines' tables: refused before any is allocated when that
// passes kMaxCorpusStatsBytes (a 50,000-token vocabulary would need 40 GB, and std::bad_alloc
// was all a user saw).
void check_vocabulary(int V) {
  if (V < 1) throw std::invalid_argument("corpus statistics: the vocabulary must have at least one token");
  const double bytes = 16.0 * V * V;
  if (bytes > kMaxCorpusStatsBytes) {
    const int largest = static_cast<int>(std::sqrt(kMaxCorpusStatsBytes / 16.0));
    throw std::invalid_argument("corpus statistics over a " + std::to_string(V) + "-token vocabulary are " + std::to_string(V) +
                                " x " + std::to_string(V) + " tables, about " + std::to_string(static_cast<long long>(bytes / 1e6)) +
                                " MB; circuitscope counts them for vocabularies of up to " + std::to_string(largest) +
                                " tokens (" + std::to_string(static_cast<long long>(kMaxCorpusStatsBytes / (1 << 20))) + " MB)");
  }
}

void check_stream(const std::vector<int>& stream, int V) {
  check_vocabulary(V);
  if (stream.size() < 2) throw std::invalid_argument("corpus statistics: the token stream needs at least 2 tokens");
  for (std::size_t i = 0; i < stream.size(); ++i)
    if (stream[i] < 0 || stream[i] >= V)
      throw std::invalid_argument("corpus statistics: token id " + std::to_string(stream[i]) + " at position " +
                                  std::to_string(i) + " is outside the vocabulary (0.." + std::to_string(V - 1) + ")");
}

void check_square(const Tensor<float>& m, const char* what) {
  if (m.shape.size() != 2 || m.shape[0] != m.shape[1])
    throw std::invalid_argument(std::string("corpus statistics: ") + what + " must be a square [V, V] matrix, got " +
                                shape_str(m.shape));
}

}  // namespace

// Seed 002: bigram map B[i, j] = P(next = j | current = i), zero rows for tokens never followed.
Tensor<float> bigram_map(const std::vector<int>& stream, int V) {
  check_stream(stream, V);
  MatRM<double> C = MatRM<double>::Zero(V, V);
  for (std::size_t t = 0; t + 1 < stream.size(); ++t) C(stream[t], stream[t + 1]) += 1.0;
  Tensor<float> B({V, V});
  for (int i = 0; i < V; ++i) {
    const double n = C.row(i).sum();
    if (n > 0) B.mat().row(i) = (C.row(i) / n).cast<float>();
  }
  return B;
}

// Seed 002: interchangeability map Sigma_B = B^T B.
Tensor<float> interchangeability_map(const Tensor<float>& bigram) {
  check_square(bigram, "the bigram map");
  // V^3 multiply-adds in Eigen's double product: about 2 s at V = 2,048 (8.6e9); more is refused.
  const double V = bigram.shape[0], work = V * V * V;
  if (work > 1e10) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", work);
    throw std::invalid_argument("the interchangeability map of a " + std::to_string(bigram.shape[0]) + "-token vocabulary takes " +
                                buf + " multiply-adds (V^3); circuitscope computes it up to 1e10 (a 2,154-token vocabulary, about 2 s)");
  }
  const MatRM<double> B = bigram.mat().cast<double>();
  Tensor<float> I(bigram.shape);
  I.mat() = (B.transpose() * B).cast<float>();
  return I;
}

// Seed 002: context map Phi[j, k] = mean fraction of k among the w tokens before an occurrence of j.
Tensor<float> context_map(const std::vector<int>& stream, int V, int window) {
  check_stream(stream, V);
  if (window < 1) throw std::invalid_argument("corpus statistics: the context window must be at least 1 token");
  const int N = static_cast<int>(stream.size());
  MatRM<double> P = MatRM<double>::Zero(V, V);
  std::vector<double> occ(V, 0.0);
  for (int t = 1; t < N; ++t) {
    const int len = std::min(t, window);
    const int j = stream[t];
    occ[j] += 1.0;
    // The window is positions t - len .. t - 1, each weighted 1/len.
    for (int s = t - len; s < t; ++s) P(j, stream[s]) += 1.0 / len;
  }
  Tensor<float> Phi({V, V});
  for (int j = 0; j < V; ++j)
    if (occ[j] > 0) Phi.mat().row(j) = (P.row(j) / occ[j]).cast<float>();
  return Phi;
}

// Seed 002: the bigram and context maps and the token frequencies they are weighted by.
CorpusStats corpus_stats(const std::vector<int>& stream, int V, int window) {
  CorpusStats s;
  s.V = V;
  s.window = window;
  s.bigram = bigram_map(stream, V);
  s.context = context_map(stream, V, window);
  s.current_freq.assign(V, 0.0f);
  s.next_freq.assign(V, 0.0f);
  const double n = static_cast<double>(stream.size() - 1);
  for (std::size_t t = 0; t + 1 < stream.size(); ++t) s.current_freq[stream[t]] += static_cast<float>(1.0 / n);
  for (std::size_t t = 1; t < stream.size(); ++t) s.next_freq[stream[t]] += static_cast<float>(1.0 / n);
  return s;
}

// Seed 002: the statistics of exactly the pairs a batch trains on (see the header).
CorpusStats batch_stats(const Batch& b, int V, int window) {
  check_vocabulary(V);
  if (window < 1) throw std::invalid_argument("corpus statistics: the context window must be at least 1 token");
  const std::size_t n_pos = static_cast<std::size_t>(b.B) * b.T;
  if (b.tokens.size() != n_pos || b.targets.size() != n_pos || b.mask.size() != n_pos)
    throw std::invalid_argument("corpus statistics: the batch's tokens, targets and mask must each hold B*T entries");
  MatRM<double> C = MatRM<double>::Zero(V, V), P = MatRM<double>::Zero(V, V);
  std::vector<double> cur(V, 0.0), nxt(V, 0.0);
  double total = 0;
  auto check = [&](int id, std::size_t i) {
    if (id < 0 || id >= V)
      throw std::invalid_argument("corpus statistics: token id " + std::to_string(id) + " at batch position " + std::to_string(i) +
                                  " is outside the vocabulary (0.." + std::to_string(V - 1) + ")");
  };
  for (int r = 0; r < b.B; ++r)
    for (int t = 0; t < b.T; ++t) {
      const std::size_t i = static_cast<std::size_t>(r) * b.T + t;
      const double w = b.mask[i];
      if (w <= 0) continue;
      const int a = b.tokens[i], j = b.targets[i];
      check(a, i);
      check(j, i);
      C(a, j) += w;
      cur[a] += w;
      nxt[j] += w;
      total += w;
      const int first = std::max(0, t + 1 - window), len = t + 1 - first;
      for (int s = first; s <= t; ++s) {
        const int k = b.tokens[static_cast<std::size_t>(r) * b.T + s];
        check(k, i);
        P(j, k) += w / len;
      }
    }
  if (total <= 0) throw std::invalid_argument("corpus statistics: the batch has no position with a target (mask > 0)");
  CorpusStats s;
  s.V = V;
  s.window = window;
  s.bigram = Tensor<float>({V, V});
  s.context = Tensor<float>({V, V});
  s.current_freq.assign(V, 0.0f);
  s.next_freq.assign(V, 0.0f);
  for (int i = 0; i < V; ++i) {
    if (cur[i] > 0) s.bigram.mat().row(i) = (C.row(i) / cur[i]).cast<float>();
    if (nxt[i] > 0) s.context.mat().row(i) = (P.row(i) / nxt[i]).cast<float>();
    s.current_freq[i] = static_cast<float>(cur[i] / total);
    s.next_freq[i] = static_cast<float>(nxt[i] / total);
  }
  return s;
}

// Seed 002: direct-path leading term row_centred(diag(pi) B).
Tensor<float> direct_path_leading_term(const CorpusStats& s) {
  check_square(s.bigram, "the bigram map");
  Tensor<float> m = s.bigram;
  for (int i = 0; i < s.V; ++i) m.mat().row(i) *= s.current_freq[i];
  return row_centred(m);
}

// Seed 002: OV-circuit leading term row_centred(Phi^T diag(rho)).
Tensor<float> ov_leading_term(const CorpusStats& s) {
  check_square(s.context, "the context map");
  Tensor<float> m({s.V, s.V});
  // A transpose, in 32 x 32 blocks so that neither side strides across the whole matrix.
  constexpr int kBlock = 32;
  for (int k0 = 0; k0 < s.V; k0 += kBlock)
    for (int j0 = 0; j0 < s.V; j0 += kBlock)
      for (int k = k0; k < std::min(s.V, k0 + kBlock); ++k)
        for (int j = j0; j < std::min(s.V, j0 + kBlock); ++j)
          m.data[static_cast<std::size_t>(k) * s.V + j] = s.context.data[static_cast<std::size_t>(j) * s.V + k] * s.next_freq[j];
  return row_centred(m);
}

// Seed 002: B^T B weighted by squared frequencies, G^T G.
Tensor<float> unembed_gram_leading_term(const CorpusStats& s) {
  const MatRM<double> G = direct_path_leading_term(s).mat().cast<double>();
  Tensor<float> out({s.V, s.V});
  out.mat() = (G.transpose() * G).cast<float>();
  return out;
}

// W_U^T W_U, rows of W_U centred over the vocabulary.
Tensor<float> unembed_gram(const Params<float>& p) {
  const MatRM<double> U = row_centred(p.W_U).mat().cast<double>();  // [D, V]
  Tensor<float> out({p.cfg.d_vocab, p.cfg.d_vocab});
  out.mat() = (U.transpose() * U).cast<float>();
  return out;
}

// Seed 002: the context term composed with B^T B.
Tensor<float> ov_composed_leading_term(const CorpusStats& s) {
  const MatRM<double> O = ov_leading_term(s).mat().cast<double>();
  const MatRM<double> I = unembed_gram_leading_term(s).mat().cast<double>();
  Tensor<float> out({s.V, s.V});
  out.mat() = (O * I).cast<float>();
  return out;
}

// Seed 002: Frobenius cosine similarity, no centring.
double cosine_similarity(const Tensor<float>& a, const Tensor<float>& b) {
  if (a.shape != b.shape)
    throw std::invalid_argument("cosine similarity: the matrices have different shapes " + shape_str(a.shape) + " and " +
                                shape_str(b.shape));
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.data[i], y = b.data[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

// Seed 002: remove each row's mean (the part of a logit table softmax ignores).
Tensor<float> row_centred(const Tensor<float>& m) {
  if (m.shape.size() != 2) throw std::invalid_argument("row centring: expected a matrix, got shape " + shape_str(m.shape));
  Tensor<float> out = m;
  auto x = out.mat();
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double mean = x.row(i).cast<double>().mean();
    x.row(i).array() -= static_cast<float>(mean);
  }
  return out;
}

namespace {
// C [M, N] = A [M, K] B [K, N], all row-major and dense, with the model's GEMM kernel: the [V, V]
// tables of a 2,048-token vocabulary are 0.5 to 1 billion multiply-adds each, which the kernel
// does about three times as fast as Eigen's product in WebAssembly.
void product(const float* A, const float* B, float* C, int M, int N, int K) {
  kernels::GemmArgs g;
  g.M = M, g.N = N, g.K = K;
  g.A = A, g.lda = K;
  g.B = B, g.ldb = N;
  g.C = C, g.ldc = N;
  kernels::sgemm(g);
}
}  // namespace

// Seed 002 (and seed 000's direct path): W_E W_U, [V, V].
Tensor<float> direct_path_table(const Params<float>& p) {
  const int V = p.cfg.d_vocab;
  Tensor<float> t({V, V});
  product(p.W_E.data.data(), p.W_U.data.data(), t.data.data(), V, V, p.cfg.d_model);
  return t;
}

// Seed 002 (and seed 000's full OV circuit): W_E W_V W_O W_U, [V, V].
Tensor<float> ov_table(const Params<float>& p, int layer, int head) {
  const Config& c = p.cfg;
  if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads)
    throw std::invalid_argument("OV circuit: there is no head L" + std::to_string(layer) + "H" + std::to_string(head) +
                                " in a model with " + std::to_string(c.n_layers) + " layers of " +
                                std::to_string(c.n_heads) + " heads");
  const int V = c.d_vocab;
  // Multiply through the small dimensions first: ([V, D] [D, Dh]) ([Dh, D] [D, V]).
  const MatRM<float> left = p.W_E.mat() * p.blocks[layer].W_V.slice(head);    // [V, Dh]
  const MatRM<float> right = p.blocks[layer].W_O.slice(head) * p.W_U.mat();  // [Dh, V]
  Tensor<float> t({V, V});
  product(left.data(), right.data(), t.data.data(), V, V, c.d_head);
  return t;
}

namespace {
void check_vocab(const Params<float>& p, const CorpusStats& s) {
  if (p.cfg.normalization == Norm::LN)
    throw std::invalid_argument("leading-term cosines: they read the weights with the LayerNorm folded into them, and this "
                                "model's LayerNorm is not folded (opened without processing, or a shortformer model)");
  if (p.cfg.d_vocab != s.V)
    throw std::invalid_argument("corpus statistics: computed for a vocabulary of " + std::to_string(s.V) +
                                " tokens, but the model has " + std::to_string(p.cfg.d_vocab));
}
}  // namespace

// Seed 002: learned direct path against its bigram leading term.
double direct_path_cosine(const Params<float>& p, const CorpusStats& s) {
  check_vocab(p, s);
  return cosine_similarity(row_centred(direct_path_table(p)), direct_path_leading_term(s));
}

// Seed 002: learned OV circuit against its context-map leading term.
double ov_cosine(const Params<float>& p, const CorpusStats& s, int layer, int head) {
  check_vocab(p, s);
  return cosine_similarity(row_centred(ov_table(p, layer, head)), ov_leading_term(s));
}

// Seed 002: every head's, the leading term built once (it is the same for every head).
std::vector<double> ov_cosines(const Params<float>& p, const CorpusStats& s) {
  check_vocab(p, s);
  const Tensor<float> term = ov_leading_term(s);
  std::vector<double> out;
  for (int l = 0; l < p.cfg.n_layers; ++l)
    for (int h = 0; h < p.cfg.n_heads; ++h) out.push_back(cosine_similarity(row_centred(ov_table(p, l, h)), term));
  return out;
}

}  // namespace cs
