// Corpus statistics of the gradient-leading-terms seed (seeds/002): the bigram map B, the
// interchangeability map B^T B and the context map Phi of a token stream, the leading terms they
// predict for a model's direct path and a head's OV circuit, and the cosine similarity between
// those predictions and the learned weights.
//
// Matrices follow the row-vector convention of params.h: row = the token read (current token, or
// source token of a head), column = the token whose logit is written (next token).
#pragma once
#include <vector>

#include "model.h"
#include "params.h"
#include "tensor.h"

namespace cs {

// The most memory the statistics of one call may take (their [V, V] tables): vocabularies of up
// to 2,896 tokens. Larger ones are refused with a sentence before anything is allocated.
constexpr double kMaxCorpusStatsBytes = 128.0 * (1 << 20);
// The context window the gradient leading terms are measured with (the report's, and the page's
// corpusStats() when no window is given): tokens up to 8 back count as context.
constexpr int kLeadingTermsWindow = 8;

struct CorpusStats {
  int V = 0;       // vocabulary size
  int window = 0;  // w of the context map
  // Bigram map: B[i, j] = P(next = j | current = i) = count(i j) / count(i followed by anything).
  // A row whose token is never followed by anything (absent, or only last in the stream) is all
  // zero, not uniform: such tokens carry no gradient, so they get no leading term either.
  Tensor<float> bigram;        // [V, V]
  // Context map: Phi[j, k] = mean over the occurrences of j at positions t >= 1 of the fraction of the
  // tokens at positions max(0, t-w) .. t-1 (the up to w tokens before it) that are k. Each row sums
  // to 1 (row-normalised); a row of a token that never occurs after position 0 is zero.
  Tensor<float> context;       // [V, V]
  std::vector<float> current_freq;  // pi [V]: frequency of each token at positions 0..N-2 (it has a next token)
  std::vector<float> next_freq;     // rho [V]: frequency of each token at positions 1..N-1 (it has a context)
};

// Seed 002: bigram map alone ([V, V], see CorpusStats::bigram). Throws on ids outside [0, V).
Tensor<float> bigram_map(const std::vector<int>& stream, int V);
// Seed 002: the interchangeability map Sigma_B = B^T B of a [V, V] bigram map: I[j, k] = sum_i
// B[i, j] B[i, k], large when j and k follow the same tokens (similar previous-token profiles: the
// columns of B). Not part of CorpusStats: it costs V^3 multiply-adds (8.6 GFLOP at V = 2,048) and
// no cosine uses it, so it is computed only for a caller that shows it.
Tensor<float> interchangeability_map(const Tensor<float>& bigram);
// Seed 002: context map with window w >= 1 ([V, V], see CorpusStats::context).
Tensor<float> context_map(const std::vector<int>& stream, int V, int window);
// Seed 002: the bigram and context maps and the frequencies, from one stream of at least 2 tokens.
CorpusStats corpus_stats(const std::vector<int>& stream, int V, int window);

// Seed 002: the same statistics counted on exactly what a training batch trains on: every position
// (b, t) with mask > 0 is a pair current = tokens[b, t], next = targets[b, t] weighted by its mask,
// and the context of that next token is tokens[b, max(0, t+1-w) .. t] (with w >= T: the whole
// causal prefix a uniformly attending head reads at position t). So direct_path_leading_term and
// ov_leading_term of the result are the exact negative gradients of the batch's mean loss with
// respect to the direct-path and OV tables while every softmax is uniform. Any tokenizer: ids only.
CorpusStats batch_stats(const Batch& b, int V, int window);

// Leading terms: the first gradient step from small weights, where every softmax is still uniform
// (1/V), so the negative gradient of the mean cross-entropy with respect to a logit table is
// sum over positions of (onehot(next) - 1/V) times what the table is read with.
//
// Seed 002, direct path (0-layer model, logits = W_E[current] W_U): the negative gradient on the
// table W_E W_U is diag(pi) (B - 1/V) = row_centred(diag(pi) B): row i is pi_i (B[i, :] - 1/V).
Tensor<float> direct_path_leading_term(const CorpusStats& s);  // [V, V]
// Seed 002, OV circuit of a head attending uniformly over the tokens before the next one (the
// context window): the negative gradient on the table W_E W_V W_O W_U (row = source token k,
// column = written token j) is sum_j rho_j Phi[j, k] (onehot(j) - 1/V), i.e.
// row_centred(Phi^T diag(rho)).
Tensor<float> ov_leading_term(const CorpusStats& s);  // [V, V]

// Seed 002, the interchangeability map B^T B as the leading term of the unembedding's Gram matrix
// (columns of W_U centred, so a constant added to every logit of a row does not count): G^T G with
// G = direct_path_leading_term(s), i.e. sum_i pi_i^2 (B[i, :] - 1/V)^T (B[i, :] - 1/V), the
// interchangeability map with each previous token weighted by its squared frequency.
Tensor<float> unembed_gram_leading_term(const CorpusStats& s);  // [V, V]
// The learned counterpart: W_U^T W_U with each row of W_U ([D, V]) centred over the vocabulary.
Tensor<float> unembed_gram(const Params<float>& p);  // [V, V]
// Seed 002, "compositions of the basis functions": with the value path learned through an output
// map that already follows the bigram term, the OV table's leading term is the context term times
// B^T B: ov_leading_term(s) * unembed_gram_leading_term(s).
Tensor<float> ov_composed_leading_term(const CorpusStats& s);  // [V, V]

// Cosine similarity of two same-shaped matrices as vectors: <A, B>_F / (|A|_F |B|_F), with no
// centring (0 if either is zero). Throws if the shapes differ.
double cosine_similarity(const Tensor<float>& a, const Tensor<float>& b);
// Each row minus its mean (softmax is unchanged by adding a constant to a row of a logit table,
// so only the row-centred part of a learned table is meaningful).
Tensor<float> row_centred(const Tensor<float>& m);

// The learned tables: direct path W_E W_U and a head's full OV circuit W_E W_V W_O W_U, [V, V]
// (row = token read, column = logit written; the transposes of the papers' W_U W_OV W_E).
Tensor<float> direct_path_table(const Params<float>& p);
Tensor<float> ov_table(const Params<float>& p, int layer, int head);

// Seed 002 ("cosine similarity between the predicted leading term and the learned weights"):
// cosine_similarity(row_centred(W_E W_U), direct_path_leading_term(s)).
double direct_path_cosine(const Params<float>& p, const CorpusStats& s);
// Seed 002: cosine_similarity(row_centred(W_E W_V W_O W_U), ov_leading_term(s)) for head (layer, head).
double ov_cosine(const Params<float>& p, const CorpusStats& s, int layer, int head);
// ov_cosine of every head, [n_layers * n_heads] layer-major, with the leading term built once.
std::vector<double> ov_cosines(const Params<float>& p, const CorpusStats& s);

}  // namespace cs
