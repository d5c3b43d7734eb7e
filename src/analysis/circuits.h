// Circuits: path expansion (direct logit attribution with virtual heads), full QK/OV circuits
// kept in factored low-rank form, OV/QK eigenvalues (copying), Q/K/V composition scores with a
// random baseline, and skip-trigrams with the "bug" their factorisation forces.
//
// Dimension legend (tensor.h's, plus the names used here):
//   B = batch, T = pos, V = d_vocab, D = d_model, H = n_heads, Dh = d_head, L = n_layers,
//   C = n_ctx, P = attribution parts (3 + L*H), Q = virtual-head paths, k = requested count.
//
// Row vectors multiply from the left (params.h): a head's QK circuit is W_Q W_K^T and its OV
// circuit is W_V W_O, the transposes of the papers' column-vector W_QK and W_OV. So the paper's
// full OV table W_U W_OV W_E ([V_out, V_src]) is here W_E W_V W_O W_U ([V_src, V_out]), and its
// full QK table W_E^T W_QK W_E is here W_E W_Q W_K^T W_E^T ([V_query, V_key]).
//
// Everything is computed in double from the float parameters; bulk results are Tensor<float>.
// Bad layer/head/position arguments throw std::invalid_argument with a sentence naming them.
#pragma once
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "model.h"
#include "params.h"
#include "tensor.h"

namespace cs {

// Every analysis here is sized before it runs and refused (std::invalid_argument, a sentence
// saying what it would cost) when it would take more than about a second or more memory than a
// browser tab can spare. Work is counted in multiply-adds: the loops here run at roughly 1 G
// multiply-adds a second in the WASM module (0.8 G measured for the copying score), so 1e9 is
// about a second: a call answers or refuses within it, and the page never stalls on one.
constexpr double kMaxCircuitWork = 1e9;
// Work done in dense matrix products (Eigen's blocked GEMM in double) runs about four times
// faster: 3.2e9 multiply-adds made attn-only-2l's [48,262, 64] QK factors in 0.74 s in the WASM
// module (tests/bench/bench_circuits.mjs). Eigenvalues and composition scores, which are such
// products but for a small eigenproblem, are sized against this.
constexpr double kMaxProductWork = 4 * kMaxCircuitWork;
// Bytes an analysis result may hold (a materialized table, attribution's parts and paths): 64 MB,
// a 2,048-token table in double with room to spare. A larger table would not be read by anyone
// and cost seconds in growing the module's memory alone (4,000 x 4,000 positions: 2 s).
constexpr double kMaxCircuitBytes = 64.0 * (1 << 20);

// ---------------------------------------------------------------------------------------------
// 1. Direct logit attribution and path expansion
// ---------------------------------------------------------------------------------------------

// The logits at one position split into additive parts (attention patterns held at the values
// the forward pass computed, so every part is linear in the residual stream).
//
// parts (rows sum to `logits` exactly, up to float rounding):
//   "embed"      W_E[token] W_U                               (token direct path: the bigram table)
//   "pos_embed"  W_pos[pos] W_U for Standard; zero for None and Shortformer (and when the
//                forward pass removed positions)
//   "bias"       sum_l b_O^l W_U + b_U                         (zero without use_bias)
//   "L{l}H{h}"   hook_result[l][h][batch_row, pos] W_U         (the head's whole contribution)
//   "MLP{l}"     hook_mlp_out[l][batch_row, pos] W_U           (d_mlp > 0; after every head row)
// With a final LayerNorm (LN, LNPre) its scale s at this position is frozen at the forward pass's
// value (TransformerLens's ActivationCache.apply_ln_to_stack): each part x becomes
// (x - mean(x)) / s diag(ln_final.w) W_U, and ln_final.b W_U joins "bias"; the rows still sum
// to the logits.
//
// paths (virtual heads, one group per head in layer >= 1, pattern a = hook_pattern[l2][h2] row
// `pos` of batch_row; X = the rows 0..pos of batch_row):
//   "L{l2}H{h2}<-embed"      (a . embed_X) W_V W_O W_U          token embeddings read through h2
//   "L{l2}H{h2}<-pos_embed"  (a . W_pos[0..pos]) W_V W_O W_U    Standard only; zero otherwise
//   "L{l2}H{h2}<-bias"       (b_V + sum_{l<l2} b_O^l W_V) W_O W_U  (rows of a sum to 1; zero
//                                                              without use_bias)
//   "L{l2}H{h2}<-L{l1}H{h1}" (a . result_{l1,h1}) W_V W_O W_U   for every l1 < l2: the part of
//                            h2's output that flows through h1's output by V-composition;
//                            zero if the intervention cut h1 -> V of h2
// (W_V, W_O, b_V of head h2.) Since h2's value input is exactly embed (+ pos) + sum_{l<l2}
// (sum_h result_{l,h} + b_O^l), each head's group sums to its row of `parts`. Every earlier
// head's result is its *total* output (for 3+ layers, paths are one composition step deep;
// expand an earlier head by reading its own group). A head the intervention ablates outputs a
// constant, so it gets no group.
// With MLPs, "L{l2}H{h2}<-MLP{l1}" (a . mlp_out_{l1}) for every l1 < l2 joins the group. With ln1
// (LN, LNPre) its scale s_j at each source position j is frozen at the forward pass's value
// (TransformerLens's apply_ln_to_stack(layer=l2)): every source row x_j is read as
// (x_j - mean(x_j)) / s_j diag(ln1.w), ln1.b W_V joins "bias", and with a final LayerNorm each
// path is read through it as the parts are; a head with a value cut into it gets no group then
// (the core recomputes its ln1 without the cut output, so frozen-scale paths would not sum to it).
struct Attribution {
  int batch_row = 0, pos = 0, token = 0;
  Tensor<float> logits;                 // [V]     the forward pass's logits at (batch_row, pos)
  std::vector<std::string> names;       // [P]     "embed", "pos_embed", "bias", "L{l}H{h}" l-major, "MLP{l}"
  Tensor<float> parts;                  // [P, V]
  std::vector<std::string> path_names;  // [Q]     "L{l2}H{h2}<-..." as above
  std::vector<int> path_part;           // [Q]     row of `parts` (the head h2) each path belongs to
  Tensor<float> paths;                  // [Q, V]
  int predicted = 0;                    // argmax of logits: the model's prediction
  int target = 0;                       // the token the expansion explains: `predicted` unless asked
  std::vector<int> path_order;          // [Q]     paths by |their logit for `target`|, largest first
};

// Framework paper, "Path Expansion of Logits" / seed 000 (T = W_U W_E + sum_h A^h (x) W_U W_OV^h W_E).
// `iv` must be the intervention the cache was produced with (it tells which heads are ablated
// and which value paths are cut); throws if the cache was intervened and `iv` is empty, or if
// batch_row/pos are outside the cache. target: the token whose logit the page explains (its
// paths ordered by their share of it), -1 for the prediction; throws outside the vocabulary.
// parts and paths hold every token's logit either way, so parts[:, target] sums to logits[target].
Attribution attribution(const Params<float>& p, const ActivationCache<float>& cache, int batch_row, int pos,
                        const Intervention& iv = Intervention(), int target = -1);


// ---------------------------------------------------------------------------------------------
// 2. Full circuits in factored form (TransformerLens FactoredMatrix)
// ---------------------------------------------------------------------------------------------

// The matrix A B, kept as its two factors (inner dimension k small, usually d_head).
struct Factored {
  MatRM<double> A;  // [rows, k]
  MatRM<double> B;  // [k, cols]
  int rows() const { return static_cast<int>(A.rows()); }
  int cols() const { return static_cast<int>(B.cols()); }
  int inner() const { return static_cast<int>(A.cols()); }
};

struct Entry {
  double value = 0;
  int row = 0, col = 0;
};

// Framework paper, one-layer section / seed 000: full QK table W_E W_Q W_K^T W_E^T
// [V_query(destination), V_key(source)], unscaled (attention scores divide by sqrt(d_head)).
// For layer > 0 this is the direct-path term (token embeddings straight into Q and K).
Factored full_qk(const Params<float>& p, int layer, int head);
// Seed 000/003 positional analogue: W_pos W_Q W_K^T W_pos^T [C_query, C_key], unscaled.
// Throws for pos_embed none. (Standard models also have token-position cross terms, not here.)
Factored pos_qk(const Params<float>& p, int layer, int head);
// Framework paper, one-layer section / seed 000: full OV table W_E W_V W_O W_U [V_src, V_out]
// (direct-path term for layer > 0).
Factored full_ov(const Params<float>& p, int layer, int head);

// Framework paper, "Two-Layer Attention-Only Transformers": the QK circuit of a later head h2 =
// (layer, head) expands into the direct term (full_qk), a K-composition term per earlier head h1,
// a Q-composition term per h1, and Q-and-K terms. In the paper's column-vector form the
// K-composition term is Id (x) A^{h1} (x) W_E^T W_QK^{h2} W_OV^{h1} W_E and the Q-composition
// term A^{h1} (x) Id (x) W_E^T W_OV^{h1 T} W_QK^{h2} W_E. Here (row vectors, unscaled):
//   input K  W_E W_Q^{h2} (W_E W_V^{h1} W_O^{h1} W_K^{h2})^T   [V_query, V_src_read]
//            rows: the query (destination) token; columns: the token h1 attends to from the key
//            position (for a previous-token h1, the token before the key), its OV output read by
//            h2's key
//   input Q  (W_E W_V^{h1} W_O^{h1} W_Q^{h2}) (W_E W_K^{h2})^T [V_dest_read, V_key]
//            rows: the token h1 attends to from the query position; columns: the key token
// The attention pattern A^{h1} is left out: the table is the token-to-token factor of the term
// (tokens only: positional embeddings are not in these terms). Factored as A [V, d_head] B
// [d_head, V]. Throws unless src_layer < layer, for input V, and for heads the model lacks.
Factored composed_qk(const Params<float>& p, int layer, int head, int src_layer, int src_head, Input input);

// TransformerLens FactoredMatrix.AB: the explicit [rows, cols] product (only when asked; refused
// past kMaxCircuitBytes, e.g. a 50,000-token vocabulary's 2.5 billion entries).
MatRM<double> materialize(const Factored& f);
// One entry / one row of A B without forming it.
double entry(const Factored& f, int row, int col);
RowVecT<double> row_of(const Factored& f, int row);  // [cols]

// What a final LayerNorm passes on of one part of the residual stream with its scale frozen at the
// forward pass's value (TransformerLens's ActivationCache.apply_ln_to_stack): the part centred and
// divided by `scale`, before diag(ln_final.w) W_U; unchanged without normalization. Attribution,
// virtual-head paths and the IOI terms read every part through it, so the parts sum to the logits.
template <typename X>
X through_frozen_ln(X x, bool norm, double scale) {
  if (norm) x = (x.array() - x.mean()) / scale;
  return x;
}
// The k largest (largest=false: smallest) entries of one row, best first; k is capped at cols.
std::vector<Entry> row_topk(const Factored& f, int row, int k, bool largest = true);

// The k largest (or smallest) entries of the whole product, best first (ties: lower row, then
// lower column), found without forming it: rows are read in order of decreasing norm |A_i|, and
// a row (or the columns of a row, in order of decreasing norm |B_j|) is left out once
// |A_i| |B_j|, which bounds |(A B)_ij| (Cauchy-Schwarz), is below the k-th entry found. Where the
// norms rule out every row early (a trained circuit's few strong tokens) the search is exhaustive
// and exact. Otherwise it stops when `budget` multiply-adds are spent (a 48,262-token vocabulary
// has 2.3e9 entries of 64 terms each: 1.5e11) and says so: the entries are then the best among
// the rows searched, and `bound` bounds every entry of the rows not searched.
struct TopEntries {
  std::vector<Entry> entries;  // [<= k] best first
  bool exact = true;           // every row was searched or ruled out by its norm
  int rows_searched = 0;       // rows whose entries were compared (the largest norms)
  int rows = 0;                // rows of the table
  double bound = 0;            // !exact: |entry| <= bound in every row not searched
};
TopEntries top_entries(const Factored& f, int k, bool largest = true, double budget = kMaxCircuitWork);
// The largest and the smallest entries in one pass over the rows (what the page shows of a
// circuit): each side as top_entries gives it, the search state shared.
struct ExtremeEntries {
  std::vector<Entry> largest, smallest;  // [<= k] each, best first
  bool exact = true;
  int rows_searched = 0, rows = 0;
  double bound = 0;
  TopEntries side(bool large) const { return {large ? largest : smallest, exact, rows_searched, rows, bound}; }
};
// The page's circuit panels search with half the budget: making the factors of a large vocabulary
// (2 x V x d_model x d_head multiply-adds) takes as long again.
constexpr double kCircuitSearchWork = kMaxCircuitWork / 2;
ExtremeEntries extreme_entries(const Factored& f, int k, bool largest = true, bool smallest = true,
                               double budget = kCircuitSearchWork);
// "" for an exact search; otherwise the sentence a reader is shown beside the entries: how many
// rows were searched (of how many) and the bound on the rest.
std::string search_note(const TopEntries& t, bool largest);

// Row and column statistics of A B from its factors, never forming it (TransformerLens
// FactoredMatrix computes norms the same way): with 1 the vector of ones,
//   row means  A (B 1) / cols                 column means  (1^T A / rows) B
//   row spread (sum of squared deviations from the row mean) = A_i (B_c B_c^T) A_i^T, where B_c is
//   B with each row centred (so A B_c is A B with each row's mean taken away); column spread
//   likewise through A with each column centred. O((rows + cols) inner^2), in double.
struct TableStats {
  std::vector<double> row_mean, row_spread;  // [rows]
  std::vector<double> col_mean, col_spread;  // [cols]
};
TableStats table_stats(const Factored& f);

// How a table's rows and columns are ordered for display (the page's sortable heatmaps).
enum class TableSort { None, Rows, Cols, Both };
// "none" | "row" | "col" | "both" -> the sort it names; throws std::invalid_argument otherwise.
TableSort table_sort_from_name(const std::string& name);

struct TableOrder {
  std::vector<int> rows;  // row indices of the table, in display order
  std::vector<int> cols;  // column indices, in display order
};

// The rows and columns of the [R, C] table A B to show, in the order to show them. With
// 0 < top < R, only the `top` rows whose entries vary most across the row (largest spread, as in
// table_stats) are kept, in index order; likewise the columns with 0 < top < C (top <= 0: all).
// Then Rows / Both order the kept rows by decreasing row mean, Cols / Both the kept columns by
// decreasing column mean. Means and spreads are over the whole table, from its factors, so a
// 48,262-token table is ordered in O(V inner^2). Every order is stable: ties keep the lower index
// first.
TableOrder table_order(const Factored& f, TableSort sort, int top);
// The entries of A B at rows x cols, in the order given ([rows.size(), cols.size()]): what a
// heatmap of the order above shows. Refused past kMaxCircuitBytes; throws on an index outside.
MatRM<double> gather(const Factored& f, const std::vector<int>& rows, const std::vector<int>& cols);

// ---------------------------------------------------------------------------------------------
// 3. Eigenvalues
// ---------------------------------------------------------------------------------------------

struct Spectrum {
  std::vector<std::complex<double>> eigenvalues;  // [k] eigenvalues of B A, by decreasing |lambda|
  double copying_score = 0;      // Re(sum lambda) / sum |lambda|, in [-1, 1] (0 if all are zero)
  double positive_fraction = 0;  // share of the non-zero eigenvalues (|lambda| > 1e-9 max|lambda|)
                                 // with Re lambda > 0
};

// Framework paper, "Summarizing OV/QK Matrices" / seed 000: the non-zero eigenvalues of the
// square product A B are those of the small k x k product B A. Throws if A B is not square, or
// if the k x k eigenproblem (about 25 k^3 operations) exceeds kMaxCircuitWork. The per-head
// spectra below and the composition scores are products, sized against kMaxProductWork.
Spectrum spectrum(const Factored& f);
// Seed 000 (copying heads): eigenvalues of W_O W_U W_E W_V [Dh, Dh] = the non-zero eigenvalues
// of the full OV table W_E W_V W_O W_U. When d_model < d_head the same non-zero eigenvalues come
// from the smaller W_V W_O W_U W_E [D, D], and the rest (at least Dh - D of them) are zero: the
// spectrum is computed there and padded with zeros to Dh values. The QK spectrum likewise.
Spectrum ov_spectrum(const Params<float>& p, int layer, int head);
// Seed 001 (spectral analysis of QK): eigenvalues of W_K^T W_E^T W_E W_Q [Dh, Dh] = the non-zero
// eigenvalues of the full QK table W_E W_Q W_K^T W_E^T.
Spectrum qk_spectrum(const Params<float>& p, int layer, int head);
// Every head's spectrum, index l * H + h.
std::vector<Spectrum> ov_spectra(const Params<float>& p);  // [L*H]
std::vector<Spectrum> qk_spectra(const Params<float>& p);  // [L*H]

// ---------------------------------------------------------------------------------------------
// 4. Composition scores
// ---------------------------------------------------------------------------------------------

enum class Composition { Q = 0, K = 1, V = 2 };

// With OV^h = W_V^h W_O^h [D, D] and QK^h = W_Q^h W_K^h^T [D, D] (row-vector forms, as
// TransformerLens stores them), for an earlier head h1 and a later head h2:
//   Q-composition  score(OV^{h1}, QK^{h2})     h1 writes x OV^{h1} into the stream the query reads:
//                                              (x OV^{h1}) W_Q W_K^T y^T
//   K-composition  score(OV^{h1}, QK^{h2}^T)   the key reads it: y W_Q W_K^T (x OV^{h1})^T
//                                              = y (OV^{h1} QK^{h2}^T)^T x^T
//   V-composition  score(OV^{h1}, OV^{h2})     the value reads it: (x OV^{h1}) W_V W_O
// where score(L, R) = ||L R||_F / (||L||_F ||R||_F) (ARENA 1.2; the same calls ARENA makes on
// TransformerLens's W_OV, W_QK). Norms are computed exactly through the factors (d_head x d_head
// Gram matrices), never forming D x D products.
struct CompositionScores {
  Tensor<float> scores;  // [3, L, H, L, H] (kind Q/K/V, src_layer, src_head, dst_layer, dst_head);
                         // zero unless src_layer < dst_layer
  double baseline = 0;      // mean score of random low-rank pairs (random_composition_baseline)
  double baseline_std = 0;  // standard deviation of those scores
  int baseline_samples = 0;
  Tensor<float> above_baseline;  // [3, L, H, L, H] 1 where a score exceeds baseline + kCompositionSigmas * baseline_std
  double max_score = 0;          // the largest score (or the baseline when there is no pair)
};
// A composition score stands out from random matrices when it exceeds their mean by this many
// standard deviations.
constexpr double kCompositionSigmas = 2.0;

// ||L R||_F / (||L||_F ||R||_F) for explicit matrices (0 if either norm is 0).
double composition_score(const MatRM<double>& L, const MatRM<double>& R);
// ARENA 1.2 random baseline: mean of score(A_l A_r^T, B_l B_r^T) with A_l, A_r, B_l, B_r [D, Dh]
// i.i.d. standard Gaussian (the score is scale-free), from the portable cs::Rng(seed).
double random_composition_baseline(int d_model, int d_head, int samples, std::uint64_t seed, double* std_out = nullptr);
// Framework paper, "Virtual Attention Heads / composition" / seed 003; ARENA's definitions above.
CompositionScores composition_scores(const Params<float>& p, int baseline_samples = 200, std::uint64_t seed = 0);

// ---------------------------------------------------------------------------------------------
// 5. Skip-trigrams and the factorisation "bug"
// ---------------------------------------------------------------------------------------------

// A skip-trigram "source ... dest -> out" read from one head's tables:
//   qk    = full QK[dest, source]   (W_E W_Q W_K^T W_E^T, unscaled)
//   ov    = full OV[source, out]    (W_E W_V W_O W_U)
//   score = (qk - mean_{s'} QK[dest, s']) / sqrt(d_head)  +  (ov - mean_{o'} OV[source, o'])
// i.e. how much more than an average key the destination's attention logit favours the source,
// plus how much more than an average output the source's OV row raises `out` (both in nats).
struct SkipTrigram {
  int source = 0, dest = 0, out = 0;
  double qk = 0, ov = 0, score = 0;
};

// Seed 000's "bug": two strong triples sharing the source, (s, d1, o1) and (s, d2, o2) with
// d1 != d2 and o1 != o2, force the crossed triples (s, d1, o2) and (s, d2, o1), because the
// head's effect is QK[d, s] times OV[s, o] and no entry ties o to d. One record per crossed
// triple (source, dest, out):
struct SkipTrigramBug {
  int source = 0, dest = 0, out = 0;  // the crossed triple
  int own_out = 0;       // the strong triple (source, dest, own_out) it comes from
  int partner_dest = 0;  // the strong triple (source, partner_dest, out) that lends `out`
  double score = 0;      // the crossed triple's table score (as SkipTrigram::score)
  bool crossed_in_top = false;  // the crossed triple is itself among the returned top triples
  // The whole model run on the minimal sequence [bos] source dest (bos only if given), softmax
  // of the logits at the last position (dest):
  double p_own = 0;      // probability of own_out
  double p_crossed = 0;  // probability of out (the leak)
  // The same run with the source replaced by dest ([bos] dest dest): p(out) with no source.
  double p_crossed_without_source = 0;
};

struct SkipTrigrams {
  int layer = 0, head = 0;
  std::vector<SkipTrigram> top;      // [<= k] by decreasing score (ties: lower source, dest, out first)
  std::vector<SkipTrigramBug> bugs;  // [<= max_bugs] pairs of top triples by decreasing min score;
                                     // empty when no two top triples share a source with different
                                     // destinations and outputs (e.g. an untrained head whose top
                                     // triples are one (source, out) with many destinations): ask
                                     // for a larger k
};

// Framework paper, one-layer section "Skip-Trigram" and "bugs" / seed 000. Meant for 1-layer
// models (for deeper ones the tables are the head's direct-path terms). The top triples are
// exact (per source: top-k destinations x top-k outputs, then a global top-k); no V x V table is
// formed. bos: a token id to put first in the probe sequences, or -1 for none.
SkipTrigrams skip_trigrams(const Params<float>& p, int layer, int head, int k, int bos = -1, int max_bugs = 32);

}  // namespace cs
