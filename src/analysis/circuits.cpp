// Circuits: path expansion, factored full QK/OV circuits, eigenvalues, composition scores and
// skip-trigrams (see circuits.h for the definitions each function implements).
#include "analysis/circuits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "checks.h"
#include "kernels/dgemm.h"
#include "rng.h"

namespace cs {

namespace {

std::string head_name(int l, int h) { return "L" + std::to_string(l) + "H" + std::to_string(h); }

void check_head(const Config& c, int layer, int head, const char* what) {
  if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads)
    throw std::invalid_argument(std::string(what) + ": there is no head L" + std::to_string(layer) + "H" +
                                std::to_string(head) + " in a model with " + std::to_string(c.n_layers) +
                                " layer(s) of " + std::to_string(c.n_heads) + " head(s)");
}

// Circuits read the weights as TransformerLens's folded weights (FactoredMatrix over W_E, W_Q, ...):
// with LayerNorm weights still unfolded they would leave out ln1's and ln_final's w and b.
void require_folded(const Config& c, const std::string& what) {
  if (c.normalization != Norm::LN) return;
  throw std::invalid_argument(what + ": circuits read the weights with the LayerNorm folded into them, as TransformerLens "
                                     "does after fold_ln, and this model's LayerNorm is not folded (it was opened without "
                                     "processing, or it is a shortformer model, which TransformerLens does not fold)");
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", x);
  return buf;
}

// Refuses an analysis whose cost (multiply-adds) or result size (bytes) is past the limits; `limit`
// is kMaxProductWork for work done in dense matrix products.
void check_cost(const std::string& what, double work, double bytes = 0, double limit = kMaxCircuitWork) {
  if (work > limit)
    throw std::invalid_argument(what + " would take about " + sci(work) + " multiply-adds, more than the " +
                                sci(limit) + " (about a second) circuitscope allows for one analysis");
  if (bytes > kMaxCircuitBytes)
    throw std::invalid_argument(what + " would need about " + std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                                " MB, more than the " + std::to_string(static_cast<long long>(kMaxCircuitBytes / (1 << 20))) +
                                " MB circuitscope allows for one analysis");
}

template <class M>
MatRM<double> dbl(const M& m) {
  return m.template cast<double>();
}

// Row r of a matrix view, as a double row vector.
template <class M>
RowVecT<double> drow(const M& m, Eigen::Index r) {
  return m.row(r).template cast<double>();
}

void put_rows(Tensor<float>& t, const std::vector<RowVecT<double>>& rows, int cols) {
  t.resize({static_cast<int>(rows.size()), cols});
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (int j = 0; j < cols; ++j) t.data[i * cols + j] = static_cast<float>(rows[i](j));
}

// X Y in double through kernels/dgemm (Eigen's double product is scalar in WebAssembly), for
// row-major X and Y of float (weights read as stored, e.g. W_E [V, D] or W_U [D, V]) or double.
template <class X, class Y>
MatRM<double> dmul(const X& x, const Y& y) {
  MatRM<double> out(x.rows(), y.cols());
  kernels::gemm_f64(static_cast<int>(x.rows()), static_cast<int>(y.cols()), static_cast<int>(x.cols()), x.data(), x.cols(),
                    y.data(), y.cols(), out.data(), out.cols());
  return out;
}

// ||A1 B1 A2 B2||_F / (||A1 B1||_F ||A2 B2||_F) through k x k Gram matrices:
// ||A B||_F^2 = sum((A^T A) o (B B^T)) and ||A1 B1 A2 B2||_F^2 = sum((G M) o (M G')) with
// G = A1^T A1, M = B1 A2, G' = B2 B2^T (o = elementwise product; G, G' symmetric).
struct LowRank {
  MatRM<double> A, B;         // the matrix A B
  MatRM<double> GA, GB;       // A^T A, B B^T
  double norm = 0;            // ||A B||_F
  LowRank() = default;
  LowRank(MatRM<double> a, MatRM<double> b) : A(std::move(a)), B(std::move(b)) {
    GA = dmul(MatRM<double>(A.transpose()), A);
    GB = dmul(B, MatRM<double>(B.transpose()));
    norm = std::sqrt(std::max(0.0, GA.cwiseProduct(GB).sum()));
  }
};

double lowrank_score(const LowRank& L, const LowRank& R) {
  if (L.norm == 0 || R.norm == 0) return 0.0;
  const MatRM<double> M = dmul(L.B, R.A);
  double prod2 = dmul(L.GA, M).cwiseProduct(dmul(M, R.GB)).sum();
  return std::sqrt(std::max(0.0, prod2)) / (L.norm * R.norm);
}

// Orders entries best first: larger key, then lower row, then lower column.
struct EntryKey {
  double key;
  int row, col;
  bool operator<(const EntryKey& o) const {
    if (key != o.key) return key > o.key;
    if (row != o.row) return row < o.row;
    return col < o.col;
  }
};

// Indices of the kk best entries of v (larger first; ties: lower index first).
std::vector<int> best_indices(const RowVecT<double>& v, int kk) {
  std::vector<int> idx(v.size());
  for (int i = 0; i < static_cast<int>(v.size()); ++i) idx[i] = i;
  kk = std::min<int>(kk, static_cast<int>(idx.size()));
  std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(), [&](int a, int b) {
    if (v(a) != v(b)) return v(a) > v(b);
    return a < b;
  });
  idx.resize(kk);
  return idx;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. Path expansion
// ---------------------------------------------------------------------------------------------

namespace {
// The prediction, the token the expansion explains (target, -1: the prediction), and the paths by
// the size of their share of that token's logit, largest first (stable).
void order_paths(Attribution& out, int target) {
  const int V = out.logits.shape[0];
  for (int v = 1; v < V; ++v)
    if (out.logits.data[v] > out.logits.data[out.predicted]) out.predicted = v;
  out.target = target < 0 ? out.predicted : target;
  const std::size_t Q = out.path_names.size();
  out.path_order.resize(Q);
  for (std::size_t q = 0; q < Q; ++q) out.path_order[q] = static_cast<int>(q);
  auto size_of = [&](int q) { return std::abs(out.paths.data[static_cast<std::size_t>(q) * V + out.target]); };
  std::stable_sort(out.path_order.begin(), out.path_order.end(), [&](int a, int b) { return size_of(a) > size_of(b); });
}
// Attribution's virtual-head paths (see Attribution in circuits.h), appended to out's path names
// and parts; WU is the unembed the parts read (diag(ln_final.w) W_U with LN), scale the final
// LayerNorm's frozen scale at pos (1 without one). Returns the path rows [Q][V].
std::vector<RowVecT<double>> virtual_paths(const Params<float>& p, const ActivationCache<float>& cache, int batch_row,
                                           int pos, const Intervention& iv, const MatRM<double>& WU, double scale,
                                           Attribution& out) {
  const Config& c = p.cfg;
  const int L = c.n_layers, H = c.n_heads, D = c.d_model, V = c.d_vocab, T = cache.n_pos;
  const bool norm = c.normalization != Norm::None;
  const bool standard = c.pos_embed == PosEmbed::Standard;
  const RowVecT<double> zero = RowVecT<double>::Zero(V);
  const auto through_ln = [&](RowVecT<double> x) { return through_frozen_ln(std::move(x), norm, scale); };
  // Virtual heads: split every head of layer >= 1 by what its value input is made of. With ln1
  // (LN or LNPre) its scale at each source position j is frozen at the forward pass's value, as
  // the final one is: a source's row c_j enters as (c_j - mean(c_j)) / s_j diag(ln1.w), and ln1.b
  // joins the bias path (rows of the pattern sum to 1).
  std::vector<RowVecT<double>> paths;
  const bool norm1 = c.normalization != Norm::None;
  for (int l2 = 1; l2 < L; ++l2) {
    const LayerParams<float>& w = p.blocks[l2];
    const float* s1 = norm1 ? cache.layers[l2].ln1_scale.ptr() + static_cast<std::size_t>(batch_row) * T : nullptr;
    for (int h2 = 0; h2 < H; ++h2) {
      bool ablated = false;
      for (const auto& a : iv.ablations) ablated |= (a.layer == l2 && a.head == h2);
      if (ablated) continue;
      // A cut value path into h2 changes its value input's LayerNorm scale (the core recomputes
      // it without the cut output), so frozen-scale paths would not sum to its output: no group.
      int cuts_into = 0;
      for (const auto& k : iv.cuts) cuts_into += (k.input == Input::V && k.dst_layer == l2 && k.dst_head == h2);
      if (norm1 && cuts_into) continue;
      const int part_row = 3 + l2 * H + h2;
      const std::string nm = head_name(l2, h2) + "<-";
      // a = hook_pattern[batch_row, h2, pos, :]
      const float* a = cache.layers[l2].pattern.ptr() + ((static_cast<std::size_t>(batch_row) * H + h2) * T + pos) * T;
      auto mix = [&](const CMapM<float>& X, int row0) {  // sum_j a_j ln1(X[row0 + j]) (without ln1.b)
        RowVecT<double> m = RowVecT<double>::Zero(D);
        for (int j = 0; j <= pos; ++j) {
          RowVecT<double> x = drow(X, row0 + j);
          if (norm1) x = (x.array() - x.mean()) / static_cast<double>(s1[j]);
          m += static_cast<double>(a[j]) * x;
        }
        return m;
      };
      auto mix_const = [&](const RowVecT<double>& x0) {  // the same for a row every position shares
        RowVecT<double> m = RowVecT<double>::Zero(D);
        if (!norm1) return RowVecT<double>(x0);
        const RowVecT<double> centred = x0.array() - x0.mean();
        double k = 0;
        for (int j = 0; j <= pos; ++j) k += static_cast<double>(a[j]) / static_cast<double>(s1[j]);
        return RowVecT<double>(k * centred);
      };
      MatRM<double> WV = dbl(w.W_V.slice(h2));  // [D, Dh]
      RowVecT<double> bV = c.use_bias ? RowVecT<double>(w.b_V.row(h2).cast<double>()) : RowVecT<double>::Zero(c.d_head);
      if (c.normalization == Norm::LN) {
        bV += p.blocks[l2].ln1_b.vec().cast<double>() * WV;
        for (int d = 0; d < D; ++d) WV.row(d) *= static_cast<double>(p.blocks[l2].ln1_w.data[d]);
      }
      const MatRM<double> WO = dbl(w.W_O.slice(h2));  // [Dh, D]
      const MatRM<double> OV = WV * WO;  // [D, D]
      MatRM<double> OVU;                 // [D, V]: without a final LayerNorm, straight to the logits
      if (!norm) OVU = WV * (WO * WU);
      // A source's mixed value input, as h2 passes it on to the logits.
      auto read = [&](const RowVecT<double>& m) {
        return norm ? RowVecT<double>(through_ln(m * OV) * WU) : RowVecT<double>(m * OVU);
      };
      auto add = [&](const std::string& what, RowVecT<double> row) {
        out.path_names.push_back(nm + what);
        out.path_part.push_back(part_row);
        paths.push_back(std::move(row));
      };
      add("embed", read(mix(cache.embed.mat(), batch_row * T)));
      add("pos_embed", standard ? read(mix(cache.pos_embed.mat(), 0)) : zero);
      RowVecT<double> bo = RowVecT<double>::Zero(D);
      if (c.use_bias)
        for (int l = 0; l < l2; ++l) bo += p.blocks[l].b_O.vec().cast<double>();
      RowVecT<double> vb = read(mix_const(bo));
      const RowVecT<double> bias_out = bV * WO;  // [D]: b_V (and ln1.b through W_V), weights summing to 1
      vb += norm ? RowVecT<double>(through_ln(bias_out) * WU) : RowVecT<double>(bias_out * WU);
      add("bias", (c.use_bias || c.normalization == Norm::LN) ? vb : zero);
      for (int l1 = 0; l1 < l2; ++l1) {
        for (int h1 = 0; h1 < H; ++h1) {
          // A cut subtracts h1's output from h2's value input (once per listed cut).
          int ncut = 0;
          for (const auto& k : iv.cuts)
            ncut += (k.input == Input::V && k.src_layer == l1 && k.src_head == h1 && k.dst_layer == l2 && k.dst_head == h2);
          RowVecT<double> r = zero;
          if (ncut != 1) r = (1.0 - ncut) * read(mix(cache.layers[l1].result.slice(h1), batch_row * T));
          add(head_name(l1, h1), r);
        }
        if (c.d_mlp > 0) add("MLP" + std::to_string(l1), read(mix(cache.layers[l1].mlp_out.mat(), batch_row * T)));
      }
    }
  }
  return paths;
}

}  // namespace

Attribution attribution(const Params<float>& p, const ActivationCache<float>& cache, int batch_row, int pos,
                        const Intervention& iv, int target) {
  const Config& c = p.cfg;
  const int L = c.n_layers, H = c.n_heads, D = c.d_model, V = c.d_vocab;
  const int B = cache.n_batch, T = cache.n_pos;
  if (static_cast<int>(cache.layers.size()) != L || cache.logits.shape != Shape{B, T, V} ||
      cache.embed.shape != Shape{B, T, D})
    throw std::invalid_argument("attribution: the activation cache does not come from this model (shapes differ)");
  if (batch_row < 0 || batch_row >= B)
    throw std::invalid_argument("attribution: batch row " + std::to_string(batch_row) + " is outside the batch (0.." +
                                std::to_string(B - 1) + ")");
  if (pos < 0 || pos >= T)
    throw std::invalid_argument("attribution: position " + std::to_string(pos) + " is outside the sequence (0.." +
                                std::to_string(T - 1) + ")");
  if (target < -1 || target >= V)
    throw std::invalid_argument("attribution: target token " + std::to_string(target) + " is outside the vocabulary (0.." +
                                std::to_string(V - 1) + "), or -1 for the prediction");
  if (cache.intervened && iv.empty())
    throw std::invalid_argument(
        "attribution: this cache came from a forward pass with an intervention; pass that same intervention so "
        "ablated heads and cut paths are accounted for");
  for (const auto& a : iv.ablations) check_head(c, a.layer, a.head, "attribution: intervention");
  for (const auto& k : iv.cuts) {
    check_head(c, k.src_layer, k.src_head, "attribution: intervention");
    check_head(c, k.dst_layer, k.dst_head, "attribution: intervention");
  }

  {
    // parts [3 + L H, V]; paths: sum over layers l2 >= 1 of H (3 + l2 H) rows of V, each a
    // mix over pos + 1 rows of D and a [D, V] product; as doubles and again as floats.
    const double P = 3.0 + L * H + (c.d_mlp > 0 ? L : 0);
    const double M = c.d_mlp > 0 ? 1.0 : 0.0;  // each earlier layer's MLP is a source too
    const double Q = H * (3.0 * (L > 0 ? L - 1 : 0) + (H + M) * (L * (L - 1.0) / 2));
    const double Dh = c.d_head;
    // With LayerNorm each path is read through W_V W_O [D, D] before W_U (the final scale is per
    // path row), without it through W_V W_O W_U [D, V].
    const bool normed = c.normalization != Norm::None;
    const double per_path = normed ? D * D + D * V : D * V;
    check_cost("attribution at position " + std::to_string(pos),
               (P + Q) * (pos + 1.0) * D + P * D * V + Q * per_path + (Q > 0 && !normed ? L * H * (D * Dh * V + Dh * V * D) : 0.0),
               (P + Q) * V * 12.0);
  }
  const int n = batch_row * T + pos;
  // With a final LayerNorm, its scale at this position is frozen at the value the forward pass
  // computed (TransformerLens's ActivationCache.apply_ln_to_stack): every part is centred, divided
  // by it and read through diag(ln_final.w) W_U, and ln_final.b W_U joins the bias.
  const bool norm = c.normalization != Norm::None;
  const double scale = norm ? static_cast<double>(cache.ln_final_scale.data[n]) : 1.0;
  MatRM<double> WU = dbl(p.W_U.mat());  // [D, V]
  RowVecT<double> ln_bias = RowVecT<double>::Zero(V);
  if (c.normalization == Norm::LN) {
    ln_bias = p.ln_final_b.vec().cast<double>() * WU;
    for (int d = 0; d < D; ++d) WU.row(d) *= static_cast<double>(p.ln_final_w.data[d]);
  }
  const auto through_ln = [&](RowVecT<double> x) { return through_frozen_ln(std::move(x), norm, scale); };
  const bool standard = c.pos_embed == PosEmbed::Standard;

  Attribution out;
  out.batch_row = batch_row;
  out.pos = pos;
  out.token = cache.tokens[n];
  out.logits.resize({V});
  for (int v = 0; v < V; ++v) out.logits.data[v] = cache.logits.data[static_cast<std::size_t>(n) * V + v];

  std::vector<RowVecT<double>> parts;
  RowVecT<double> zero = RowVecT<double>::Zero(V);
  out.names = {"embed", "pos_embed", "bias"};
  parts.push_back(through_ln(drow(cache.embed.mat(), n)) * WU);
  parts.push_back(standard ? RowVecT<double>(through_ln(drow(cache.pos_embed.mat(), pos)) * WU) : zero);
  RowVecT<double> bias = ln_bias;
  if (c.use_bias) {
    RowVecT<double> bo = RowVecT<double>::Zero(D);
    for (int l = 0; l < L; ++l) bo += p.blocks[l].b_O.vec().cast<double>();
    bias += through_ln(bo) * WU + p.b_U.vec().cast<double>();
  }
  parts.push_back(bias);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      out.names.push_back(head_name(l, h));
      parts.push_back(through_ln(drow(cache.layers[l].result.slice(h), n)) * WU);
    }
  if (c.d_mlp > 0)
    for (int l = 0; l < L; ++l) {
      out.names.push_back("MLP" + std::to_string(l));
      parts.push_back(through_ln(drow(cache.layers[l].mlp_out.mat(), n)) * WU);
    }
  put_rows(out.parts, parts, V);

  std::vector<RowVecT<double>> paths = virtual_paths(p, cache, batch_row, pos, iv, WU, scale, out);
  put_rows(out.paths, paths, V);
  order_paths(out, target);
  return out;
}

// ---------------------------------------------------------------------------------------------
// 2. Factored full circuits
// ---------------------------------------------------------------------------------------------

namespace {
// Rows of a factor read at once in double by the table statistics: 4,096 rows of 512 is 16 MB.
constexpr Eigen::Index kRowBlock = 4096;

// (X L) (X R)^T, both factors from one pass over X: X [L | R].
Factored factored_through(const CMapM<float>& X, const MatRM<double>& left, const MatRM<double>& right) {
  MatRM<double> W(left.rows(), left.cols() + right.cols());
  W << left, right;
  const MatRM<double> P = dmul(X, W);
  Factored f;
  f.A = P.leftCols(left.cols());
  f.B = P.rightCols(right.cols()).transpose();
  return f;
}

// X W_Q W_K^T X^T of one head, factored as (X W_Q) (X W_K)^T.
Factored qk_through(const CMapM<float>& X, const LayerParams<float>& w, int head) {
  return factored_through(X, dbl(w.W_Q.slice(head)), dbl(w.W_K.slice(head)));
}
}  // namespace

// Framework paper, one-layer section / seed 000: W_E W_Q W_K^T W_E^T.
Factored full_qk(const Params<float>& p, int layer, int head) {
  check_head(p.cfg, layer, head, "full QK circuit");
  require_folded(p.cfg, "full QK circuit");
  return qk_through(p.W_E.mat(), p.blocks[layer], head);
}

// Seed 000/003, positional analogue: W_pos W_Q W_K^T W_pos^T.
Factored pos_qk(const Params<float>& p, int layer, int head) {
  check_head(p.cfg, layer, head, "positional QK circuit");
  require_folded(p.cfg, "positional QK circuit");
  if (p.cfg.pos_embed == PosEmbed::None)
    throw std::invalid_argument("positional QK circuit: this model has no positional embedding (pos_embed none)");
  return qk_through(p.W_pos.mat(), p.blocks[layer], head);
}

// Framework paper, one-layer section / seed 000: W_E W_V W_O W_U.
Factored full_ov(const Params<float>& p, int layer, int head) {
  check_head(p.cfg, layer, head, "full OV circuit");
  require_folded(p.cfg, "full OV circuit");
  Factored f;
  f.A = dmul(p.W_E.mat(), dbl(p.blocks[layer].W_V.slice(head)));
  f.B = dmul(dbl(p.blocks[layer].W_O.slice(head)), p.W_U.mat());
  return f;
}

// Framework paper, "Two-Layer Attention-Only Transformers": the K- or Q-composition term of
// h2's QK circuit through h1 (see circuits.h).
Factored composed_qk(const Params<float>& p, int layer, int head, int src_layer, int src_head, Input input) {
  check_head(p.cfg, layer, head, "composed QK circuit");
  require_folded(p.cfg, "composed QK circuit");
  check_head(p.cfg, src_layer, src_head, "composed QK circuit: the earlier head");
  if (src_layer >= layer)
    throw std::invalid_argument("composed QK circuit: " + head_name(src_layer, src_head) + " is not in an earlier layer than " +
                                head_name(layer, head) + ", so its output cannot reach that head's query or key");
  if (input == Input::V)
    throw std::invalid_argument("composed QK circuit: the input must be 'q' or 'k' (V-composition is an OV term, not a QK one)");
  const auto WE = p.W_E.mat();                                                           // [V, D] float
  const auto& w1 = p.blocks[src_layer];
  const auto& w2 = p.blocks[layer];
  const MatRM<double> OV1 = dbl(w1.W_V.slice(src_head)) * dbl(w1.W_O.slice(src_head));  // [D, D]: OV^{h1}
  // W_E OV^{h1} W (W = W_K or W_Q of h2) is W_E (OV^{h1} W): [V, Dh] without a [V, D] product;
  // both factors come from one pass over W_E: W_E [Q side | K side].
  const MatRM<double> WQ = dbl(w2.W_Q.slice(head)), WK = dbl(w2.W_K.slice(head));
  return input == Input::K ? factored_through(WE, WQ, OV1 * WK) : factored_through(WE, OV1 * WQ, WK);
}

// TransformerLens FactoredMatrix.AB.
MatRM<double> materialize(const Factored& f) {
  const double n = static_cast<double>(f.rows()) * f.cols();
  check_cost("the full " + std::to_string(f.rows()) + " x " + std::to_string(f.cols()) + " table (" + sci(n) +
                 " entries; ask for its top entries instead)",
             n * f.inner(), n * 12.0);
  return f.A * f.B;
}

double entry(const Factored& f, int row, int col) {
  if (row < 0 || row >= f.rows() || col < 0 || col >= f.cols())
    throw std::invalid_argument("factored matrix: entry (" + std::to_string(row) + ", " + std::to_string(col) +
                                ") is outside its " + std::to_string(f.rows()) + " x " + std::to_string(f.cols()) +
                                " shape");
  return f.A.row(row).dot(f.B.col(col));
}

RowVecT<double> row_of(const Factored& f, int row) {
  if (row < 0 || row >= f.rows())
    throw std::invalid_argument("factored matrix: row " + std::to_string(row) + " is outside 0.." +
                                std::to_string(f.rows() - 1));
  return f.A.row(row) * f.B;
}

// TransformerLens FactoredMatrix, read row by row.
std::vector<Entry> row_topk(const Factored& f, int row, int k, bool largest) {
  if (k < 0) throw std::invalid_argument("top-k: k must be 0 or more, got " + std::to_string(k));
  RowVecT<double> r = row_of(f, row);
  RowVecT<double> key = largest ? r : RowVecT<double>(-r);
  std::vector<Entry> out;
  for (int j : best_indices(key, k)) out.push_back({r(j), row, j});
  return out;
}

namespace {
// Keeps the k best EntryKeys seen (a heap whose top is the worst kept).
struct BestK {
  std::size_t k;
  std::vector<EntryKey> heap;
  bool full() const { return heap.size() >= k; }
  double worst() const { return heap.front().key; }
  void offer(const EntryKey& e) {
    if (k == 0) return;
    if (!full()) {
      heap.push_back(e);
      std::push_heap(heap.begin(), heap.end());
    } else if (e < heap.front()) {
      std::pop_heap(heap.begin(), heap.end());
      heap.back() = e;
      std::push_heap(heap.begin(), heap.end());
    }
  }
};

// Indices 0..n-1 by decreasing norm (ties: lower index first).
std::vector<int> by_norm(const Eigen::VectorXd& norm) {
  std::vector<int> idx(static_cast<std::size_t>(norm.size()));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int x, int y) { return norm(x) > norm(y); });
  return idx;
}
}  // namespace

// TransformerLens FactoredMatrix, read in blocks of rows by decreasing norm (never forms A B): the
// largest entries (side 0) and the smallest (side 1) in one pass when both are wanted.
ExtremeEntries extreme_entries(const Factored& f, int k, bool largest, bool smallest, double budget) {
  if (k < 0) throw std::invalid_argument("top-k: k must be 0 or more, got " + std::to_string(k));
  const int R = f.rows(), C = f.cols(), K = f.inner();
  constexpr int kBlock = 32;
  check_cost("top-k over the " + std::to_string(R) + " x " + std::to_string(C) + " table", 0,
             (static_cast<double>(K) + kBlock) * C * sizeof(double) + 2.0 * std::min<double>(k, static_cast<double>(R) * C) * sizeof(EntryKey));
  const Eigen::VectorXd an = f.A.rowwise().norm(), bn = f.B.colwise().norm().transpose();
  const std::vector<int> rows = by_norm(an), cols = by_norm(bn);
  MatRM<double> Bs(K, C);  // B's columns by decreasing norm
  for (int j = 0; j < C; ++j) Bs.col(j) = f.B.col(cols[j]);
  // A computed entry may exceed |A_i| |B_j| by rounding: the bound gets a margin so nothing is
  // left out that could tie or beat the k-th entry.
  const auto bound = [&](double a, double b) { return a * b * (1 + 1e-12) + 1e-300; };
  const std::size_t kk = static_cast<std::size_t>(std::min<double>(k, static_cast<double>(R) * C));
  BestK best[2] = {{largest ? kk : 0, {}}, {smallest ? kk : 0, {}}};
  // Entries below this (in either side's key) cannot enter a side that still wants them.
  const auto threshold = [&] {
    double t = HUGE_VAL;
    for (const BestK& b : best)
      if (b.k > 0) t = std::min(t, b.full() ? b.worst() : -HUGE_VAL);
    return t;
  };
  ExtremeEntries out;
  out.rows = R;
  double work = 0;
  MatRM<double> Ab(kBlock, K);
  for (int r0 = 0; r0 < R && kk > 0 && (largest || smallest); r0 += kBlock) {
    const double a0 = an(rows[r0]), tau = threshold();
    if (C > 0 && bound(a0, bn(cols[0])) < tau) break;  // no later row can enter
    int c = C;  // columns whose norm could still reach tau for this block's largest row
    while (c > 0 && bound(a0, bn(cols[c - 1])) < tau) --c;
    const int nb = std::min(kBlock, R - r0);
    if (work + static_cast<double>(nb) * c * K > budget && out.rows_searched > 0) {
      out.exact = false;
      out.bound = a0 * (C > 0 ? bn(cols[0]) : 0.0);
      break;
    }
    work += static_cast<double>(nb) * c * K;
    for (int i = 0; i < nb; ++i) Ab.row(i) = f.A.row(rows[r0 + i]);
    MatRM<double> vals(nb, c);  // Ab's rows times Bs's first c columns (kernels/dgemm)
    kernels::gemm_f64(nb, c, K, Ab.data(), K, Bs.data(), C, vals.data(), c);
    for (int i = 0; i < nb; ++i)
      for (int j = 0; j < c; ++j) {
        const double v = vals(i, j);
        if (largest) best[0].offer({v, rows[r0 + i], cols[j]});
        if (smallest) best[1].offer({-v, rows[r0 + i], cols[j]});
      }
    out.rows_searched += nb;
  }
  for (int side = 0; side < 2; ++side) {
    std::sort(best[side].heap.begin(), best[side].heap.end());
    for (const EntryKey& e : best[side].heap) (side ? out.smallest : out.largest).push_back({side ? -e.key : e.key, e.row, e.col});
  }
  return out;
}

TopEntries top_entries(const Factored& f, int k, bool largest, double budget) {
  ExtremeEntries e = extreme_entries(f, k, largest, !largest, budget);
  return TopEntries{largest ? std::move(e.largest) : std::move(e.smallest), e.exact, e.rows_searched, e.rows, e.bound};
}

std::string search_note(const TopEntries& t, bool largest) {
  if (t.exact) return "";
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.3g", t.bound);
  return std::string(largest ? "Largest" : "Smallest") + " entries among the " + std::to_string(t.rows_searched) +
         " rows of largest norm (of " + std::to_string(t.rows) + ", searched within the time one analysis may take); " +
         "no entry of the other rows is " + (largest ? "above " : "below -") + bound + ".";
}

namespace {
// A factor read as rows a block at a time: block(i, n) is rows i..i+n-1, [n, K] (B's columns are
// read transposed, so one code serves the rows of A B and its columns).
template <class Block>
MatRM<double> centred_gram(Eigen::Index rows, const Block& block, const Eigen::RowVectorXd& mean) {
  MatRM<double> G = MatRM<double>::Zero(mean.size(), mean.size());
  for (Eigen::Index r = 0; r < rows; r += kRowBlock) {
    const MatRM<double> c = block(r, std::min<Eigen::Index>(kRowBlock, rows - r)).rowwise() - mean;
    G += dmul(MatRM<double>(c.transpose()), c);
  }
  return G;
}

// The mean and spread of each line X_i Y of the product (X [rows, K] by blocks): with y_sum = Y 1
// over its n columns and G the Gram matrix of Y with each row centred, mean X_i y_sum / n and
// spread X_i G X_i^T.
template <class Block>
void line_stats(Eigen::Index rows, const Block& block, const Eigen::VectorXd& y_sum, int n, const MatRM<double>& G,
                std::vector<double>& mean, std::vector<double>& spread) {
  mean.resize(static_cast<std::size_t>(rows)), spread.resize(static_cast<std::size_t>(rows));
  for (Eigen::Index r = 0; r < rows; r += kRowBlock) {
    const MatRM<double> X = block(r, std::min<Eigen::Index>(kRowBlock, rows - r));
    const Eigen::VectorXd m = (X * y_sum) / std::max(n, 1), sp = dmul(X, G).cwiseProduct(X).rowwise().sum();
    std::copy(m.data(), m.data() + m.size(), mean.begin() + r);
    std::copy(sp.data(), sp.data() + sp.size(), spread.begin() + r);
  }
}
}  // namespace

TableStats table_stats(const Factored& f) {
  const int R = f.rows(), C = f.cols(), K = f.inner();
  check_cost("the row and column statistics of the " + std::to_string(R) + " x " + std::to_string(C) + " table",
             2.0 * (R + C) * K * K, 2.0 * kRowBlock * K * sizeof(double));
  const auto rows_of_A = [&](Eigen::Index i, Eigen::Index n) { return MatRM<double>(f.A.middleRows(i, n)); };
  const auto cols_of_B = [&](Eigen::Index i, Eigen::Index n) { return MatRM<double>(f.B.middleCols(i, n).transpose()); };
  // Sums first, divided after: a table of small integers gets exactly equal means where they tie.
  const Eigen::VectorXd b_sum = f.B.rowwise().sum();               // [K]: A b_sum = the row sums
  const Eigen::VectorXd a_sum = f.A.colwise().sum().transpose();   // [K]: a_sum^T B = the column sums
  // GB = B_c B_c^T with B_c = B with each row centred (A B_c = A B minus its row means); GA likewise.
  const MatRM<double> GB = centred_gram(C, cols_of_B, (b_sum / std::max(C, 1)).transpose());
  const MatRM<double> GA = centred_gram(R, rows_of_A, (a_sum / std::max(R, 1)).transpose());
  TableStats s;
  line_stats(R, rows_of_A, b_sum, C, GB, s.row_mean, s.row_spread);
  line_stats(C, cols_of_B, a_sum, R, GA, s.col_mean, s.col_spread);
  return s;
}

MatRM<double> gather(const Factored& f, const std::vector<int>& rows, const std::vector<int>& cols) {
  const double n = static_cast<double>(rows.size()) * cols.size();
  check_cost("showing " + std::to_string(rows.size()) + " x " + std::to_string(cols.size()) + " entries of the " +
                 std::to_string(f.rows()) + " x " + std::to_string(f.cols()) + " table (choose fewer rows and columns)",
             n * f.inner(), n * 12.0);
  const auto check = [&](const std::vector<int>& idx, int n_max, const char* what) {
    for (int i : idx)
      if (i < 0 || i >= n_max)
        throw std::invalid_argument(std::string("factored matrix: ") + what + " " + std::to_string(i) + " is outside 0.." +
                                    std::to_string(n_max - 1));
  };
  check(rows, f.rows(), "row");
  check(cols, f.cols(), "column");
  MatRM<double> A(static_cast<Eigen::Index>(rows.size()), f.inner()), B(f.inner(), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) A.row(static_cast<Eigen::Index>(i)) = f.A.row(rows[i]);
  for (std::size_t j = 0; j < cols.size(); ++j) B.col(static_cast<Eigen::Index>(j)) = f.B.col(cols[j]);
  return A * B;
}

TableSort table_sort_from_name(const std::string& name) {
  if (name == "none") return TableSort::None;
  if (name == "row") return TableSort::Rows;
  if (name == "col") return TableSort::Cols;
  if (name == "both") return TableSort::Both;
  throw std::invalid_argument("table sort must be 'none', 'row', 'col' or 'both', got '" + name + "'");
}

namespace {

// Indices 0..n-1; with 0 < top < n the `top` of largest spread (stable), back in index order.
std::vector<int> most_varied(const std::vector<double>& spread, int top) {
  std::vector<int> idx(spread.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  if (top <= 0 || top >= static_cast<int>(idx.size())) return idx;
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return spread[a] > spread[b]; });
  idx.resize(static_cast<std::size_t>(top));
  std::sort(idx.begin(), idx.end());
  return idx;
}

void by_decreasing(std::vector<int>& idx, const std::vector<double>& mean) {
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return mean[a] > mean[b]; });
}

}  // namespace

TableOrder table_order(const Factored& f, TableSort sort, int top) {
  const TableStats s = table_stats(f);
  TableOrder out{most_varied(s.row_spread, top), most_varied(s.col_spread, top)};
  if (sort == TableSort::Rows || sort == TableSort::Both) by_decreasing(out.rows, s.row_mean);
  if (sort == TableSort::Cols || sort == TableSort::Both) by_decreasing(out.cols, s.col_mean);
  return out;
}

// ---------------------------------------------------------------------------------------------
// 3. Eigenvalues
// ---------------------------------------------------------------------------------------------

namespace {

// Eigenvalues of the square matrix M, padded with zeros to pad_to values, summarised.
Spectrum spectrum_of(const Eigen::MatrixXd& M, int pad_to) {
  Spectrum s;
  const int k = static_cast<int>(M.rows());
  if (k > 0) {
    Eigen::EigenSolver<Eigen::MatrixXd> es(M, false);
    if (es.info() != Eigen::Success) throw std::runtime_error("eigenvalues: the eigen-solver did not converge");
    for (int i = 0; i < k; ++i) s.eigenvalues.push_back(es.eigenvalues()(i));
  }
  while (static_cast<int>(s.eigenvalues.size()) < pad_to) s.eigenvalues.push_back(0.0);
  std::sort(s.eigenvalues.begin(), s.eigenvalues.end(), [](const std::complex<double>& a, const std::complex<double>& b) {
    if (std::abs(a) != std::abs(b)) return std::abs(a) > std::abs(b);
    if (a.real() != b.real()) return a.real() > b.real();
    return a.imag() > b.imag();
  });
  double sum_re = 0, sum_abs = 0, mx = 0;
  for (const auto& l : s.eigenvalues) {
    sum_re += l.real();
    sum_abs += std::abs(l);
    mx = std::max(mx, std::abs(l));
  }
  s.copying_score = sum_abs > 0 ? sum_re / sum_abs : 0.0;
  int nz = 0, pos = 0;
  for (const auto& l : s.eigenvalues) {
    if (std::abs(l) <= 1e-9 * mx || mx == 0) continue;
    ++nz;
    pos += l.real() > 0;
  }
  s.positive_fraction = nz ? static_cast<double>(pos) / nz : 0.0;
  return s;
}

// The cost of one head's OV or QK spectrum (see circuit_spectrum).
double spectrum_work(const Config& c) {
  const double V = c.d_vocab, D = c.d_model, Dh = c.d_head;
  if (Dh <= D) return 2 * V * D * Dh + Dh * Dh * V + 25 * Dh * Dh * Dh;
  return D * Dh * D + D * V * D + D * D * D + 25 * D * D * D;
}

// When d_model < d_head: the eigenvalues of (W1 W2)(X2 X) [D, D], padded with zeros to Dh values,
// which are the non-zero eigenvalues of X W1 W2 X2 and so of (W2 X2)(X W1) [Dh, Dh] (the full OV
// table with X = W_E, W1 = W_V, W2 = W_O, X2 = W_U; the full QK table with W1 = W_Q, W2 = W_K^T,
// X2 = W_E^T).
Spectrum narrow_spectrum(const Config& c, const MatRM<double>& X, const MatRM<double>& W1, const MatRM<double>& W2,
                         const MatRM<double>& X2) {
  const Eigen::MatrixXd M = (W1 * W2) * (X2 * X);
  return spectrum_of(M, c.d_head);
}

}  // namespace

// Framework paper, "Summarizing OV/QK Matrices" / seed 000: eig(A B) \ {0} = eig(B A) \ {0}.
Spectrum spectrum(const Factored& f) {
  if (f.rows() != f.cols())
    throw std::invalid_argument("eigenvalues: the circuit is " + std::to_string(f.rows()) + " x " +
                                std::to_string(f.cols()) + ", not square");
  const double k = f.inner(), n = f.rows();
  check_cost("eigenvalues of a " + std::to_string(f.inner()) + " x " + std::to_string(f.inner()) + " matrix",
             k * k * n + 25 * k * k * k);
  const Eigen::MatrixXd M = f.B * f.A;  // [k, k]
  return spectrum_of(M, f.inner());
}

// Seed 000 (copying heads): eigenvalues of W_O W_U W_E W_V.
Spectrum ov_spectrum(const Params<float>& p, int layer, int head) {
  check_head(p.cfg, layer, head, "OV eigenvalues");
  require_folded(p.cfg, "OV eigenvalues");
  check_cost("the OV eigenvalues of " + head_name(layer, head), spectrum_work(p.cfg), 0, kMaxProductWork);
  if (p.cfg.d_head <= p.cfg.d_model) return spectrum(full_ov(p, layer, head));
  const auto& w = p.blocks[layer];
  return narrow_spectrum(p.cfg, dbl(p.W_E.mat()), dbl(w.W_V.slice(head)), dbl(w.W_O.slice(head)), dbl(p.W_U.mat()));
}

// Seed 001 (spectral analysis): eigenvalues of W_K^T W_E^T W_E W_Q.
Spectrum qk_spectrum(const Params<float>& p, int layer, int head) {
  check_head(p.cfg, layer, head, "QK eigenvalues");
  require_folded(p.cfg, "QK eigenvalues");
  check_cost("the QK eigenvalues of " + head_name(layer, head), spectrum_work(p.cfg), 0, kMaxProductWork);
  if (p.cfg.d_head <= p.cfg.d_model) return spectrum(full_qk(p, layer, head));
  const auto& w = p.blocks[layer];
  const MatRM<double> WE = dbl(p.W_E.mat());
  return narrow_spectrum(p.cfg, WE, dbl(w.W_Q.slice(head)), MatRM<double>(dbl(w.W_K.slice(head)).transpose()),
                         MatRM<double>(WE.transpose()));
}

std::vector<Spectrum> ov_spectra(const Params<float>& p) {
  check_cost("every head's OV eigenvalues", static_cast<double>(p.cfg.n_layers) * p.cfg.n_heads * spectrum_work(p.cfg), 0, kMaxProductWork);
  std::vector<Spectrum> out;
  for (int l = 0; l < p.cfg.n_layers; ++l)
    for (int h = 0; h < p.cfg.n_heads; ++h) out.push_back(ov_spectrum(p, l, h));
  return out;
}

std::vector<Spectrum> qk_spectra(const Params<float>& p) {
  check_cost("every head's QK eigenvalues", static_cast<double>(p.cfg.n_layers) * p.cfg.n_heads * spectrum_work(p.cfg), 0, kMaxProductWork);
  std::vector<Spectrum> out;
  for (int l = 0; l < p.cfg.n_layers; ++l)
    for (int h = 0; h < p.cfg.n_heads; ++h) out.push_back(qk_spectrum(p, l, h));
  return out;
}

// ---------------------------------------------------------------------------------------------
// 4. Composition scores
// ---------------------------------------------------------------------------------------------

// ARENA 1.2 get_comp_score.
double composition_score(const MatRM<double>& L, const MatRM<double>& R) {
  if (L.cols() != R.rows())
    throw std::invalid_argument("composition score: the matrices do not chain (" + std::to_string(L.rows()) + " x " +
                                std::to_string(L.cols()) + " times " + std::to_string(R.rows()) + " x " +
                                std::to_string(R.cols()) + ")");
  const double nl = L.norm(), nr = R.norm();
  if (nl == 0 || nr == 0) return 0.0;
  return (L * R).norm() / (nl * nr);
}

// ARENA 1.2 generate_single_random_comp_score, Gaussian factors from the portable Rng (row-major,
// drawn in pairs by Rng::normals).
double random_composition_baseline(int d_model, int d_head, int samples, std::uint64_t seed, double* std_out) {
  if (samples < 1) throw std::invalid_argument("composition baseline: need at least 1 sample, got " + std::to_string(samples));
  if (d_model < 1 || d_head < 1) throw std::invalid_argument("composition baseline: d_model and d_head must be positive");
  Rng rng(seed);
  auto gauss = [&](int r, int c) {
    MatRM<double> m(r, c);
    rng.normals(m.data(), static_cast<std::size_t>(m.size()));
    return m;
  };
  double sum = 0, sum2 = 0;
  for (int s = 0; s < samples; ++s) {
    MatRM<double> al = gauss(d_model, d_head), ar = gauss(d_model, d_head);
    MatRM<double> bl = gauss(d_model, d_head), br = gauss(d_model, d_head);
    double x = lowrank_score(LowRank(al, ar.transpose()), LowRank(bl, br.transpose()));
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / samples;
  if (std_out) *std_out = std::sqrt(std::max(0.0, sum2 / samples - mean * mean));
  return mean;
}

// Framework paper, composition / seed 003; ARENA 1.2's Q/K/V composition-score definitions.
CompositionScores composition_scores(const Params<float>& p, int baseline_samples, std::uint64_t seed) {
  require_folded(p.cfg, "composition scores");
  const Config& c = p.cfg;
  const int L = c.n_layers, H = c.n_heads;
  if (baseline_samples < 1 || baseline_samples > 100000)
    throw std::invalid_argument("composition scores: baseline samples must be between 1 and 100000, got " +
                                std::to_string(baseline_samples));
  {
    const double D = c.d_model, Dh = c.d_head, heads = static_cast<double>(L) * H;
    const double pair = D * Dh * Dh + 2 * Dh * Dh * Dh;  // one lowrank_score
    check_cost("the composition scores", heads * 3 * 2 * D * Dh * Dh + heads * heads / 2 * 3 * pair +
                                             baseline_samples * (4 * D * Dh + 4 * D * Dh * Dh + pair), 0, kMaxProductWork);
  }
  // Per head: OV = W_V W_O, QK = W_Q W_K^T, QK^T = W_K W_Q^T, each as factors [D, Dh] x [Dh, D].
  std::vector<LowRank> ov(L * H), qk(L * H), qkT(L * H);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      const auto& w = p.blocks[l];
      MatRM<double> WQ = dbl(w.W_Q.slice(h)), WK = dbl(w.W_K.slice(h));
      ov[l * H + h] = LowRank(dbl(w.W_V.slice(h)), dbl(w.W_O.slice(h)));
      qk[l * H + h] = LowRank(WQ, WK.transpose());
      qkT[l * H + h] = LowRank(WK, WQ.transpose());
    }
  CompositionScores out;
  out.scores.resize({3, L, H, L, H});
  auto at = [&](int kind, int l1, int h1, int l2, int h2) -> float& {
    return out.scores.data[(((static_cast<std::size_t>(kind) * L + l1) * H + h1) * L + l2) * H + h2];
  };
  for (int l1 = 0; l1 < L; ++l1)
    for (int h1 = 0; h1 < H; ++h1)
      for (int l2 = l1 + 1; l2 < L; ++l2)
        for (int h2 = 0; h2 < H; ++h2) {
          const LowRank& left = ov[l1 * H + h1];
          at(0, l1, h1, l2, h2) = static_cast<float>(lowrank_score(left, qk[l2 * H + h2]));
          at(1, l1, h1, l2, h2) = static_cast<float>(lowrank_score(left, qkT[l2 * H + h2]));
          at(2, l1, h1, l2, h2) = static_cast<float>(lowrank_score(left, ov[l2 * H + h2]));
        }
  out.baseline_samples = baseline_samples;
  out.baseline = random_composition_baseline(c.d_model, c.d_head, baseline_samples, seed, &out.baseline_std);
  // Which scores stand out from the random baseline, and the largest (pairs from an earlier layer
  // into a later one only).
  out.above_baseline.resize({3, L, H, L, H});
  out.max_score = out.baseline;
  const double bar = out.baseline + kCompositionSigmas * out.baseline_std;
  for (int kind = 0; kind < 3; ++kind)
    for (int l1 = 0; l1 < L; ++l1)
      for (int h1 = 0; h1 < H; ++h1)
        for (int l2 = l1 + 1; l2 < L; ++l2)
          for (int h2 = 0; h2 < H; ++h2) {
            const float v = at(kind, l1, h1, l2, h2);
            out.max_score = std::max(out.max_score, static_cast<double>(v));
            out.above_baseline.data[(((static_cast<std::size_t>(kind) * L + l1) * H + h1) * L + l2) * H + h2] = v > bar ? 1.0f : 0.0f;
          }
  return out;
}

// ---------------------------------------------------------------------------------------------
// 5. Skip-trigrams
// ---------------------------------------------------------------------------------------------

// Framework paper, one-layer section, "Skip-Trigram" tables and their "bugs" / seed 000.
SkipTrigrams skip_trigrams(const Params<float>& p, int layer, int head, int k, int bos, int max_bugs) {
  const Config& c = p.cfg;
  check_head(c, layer, head, "skip-trigrams");
  require_folded(c, "skip-trigrams");
  const int V = c.d_vocab;
  if (k < 1) throw std::invalid_argument("skip-trigrams: ask for at least 1 triple, got " + std::to_string(k));
  if (max_bugs < 0) throw std::invalid_argument("skip-trigrams: max_bugs must be 0 or more");
  if (bos < -1 || bos >= V)
    throw std::invalid_argument("skip-trigrams: the BOS token " + std::to_string(bos) + " is outside the vocabulary (0.." +
                                std::to_string(V - 1) + "), use -1 for none");
  const int len = bos >= 0 ? 3 : 2;
  if (max_bugs > 0 && c.n_ctx < len)
    throw std::invalid_argument("skip-trigrams: the probe sequence needs " + std::to_string(len) +
                                " positions but the context holds " + std::to_string(c.n_ctx));

  {
    const double Vd = V, kk = std::min(k, V);
    check_cost("skip-trigrams of L" + std::to_string(layer) + "H" + std::to_string(head),
               4 * Vd * c.d_model * c.d_head + 2 * Vd * Vd * c.d_head + kk * kk * std::min(kk, 1000.0),
               Vd * kk * kk * 48.0 + kk * kk * 16.0);
  }
  const Factored QK = full_qk(p, layer, head);  // [V_dest, V_src]
  const Factored OV = full_ov(p, layer, head);  // [V_src, V_out]
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d_head));
  // mean_s QK[d, s] = A[d] . mean of B's columns ; mean_o OV[s, o] = A[s] . mean of B's columns
  const VecT<double> qk_rowmean = QK.A * QK.B.rowwise().mean();  // [V_dest]
  const VecT<double> ov_rowmean = OV.A * OV.B.rowwise().mean();  // [V_src]
  auto score_of = [&](int s, int d, int o) {
    return (entry(QK, d, s) - qk_rowmean(d)) * scale + (entry(OV, s, o) - ov_rowmean(s));
  };

  SkipTrigrams out;
  out.layer = layer;
  out.head = head;
  struct Cand {
    double score;
    int s, d, o;
    double qk, ov;
  };
  auto better = [](const Cand& a, const Cand& b) {
    if (a.score != b.score) return a.score > b.score;
    return std::tie(a.s, a.d, a.o) < std::tie(b.s, b.d, b.o);
  };
  std::vector<Cand> cand;
  for (int s = 0; s < V; ++s) {
    RowVecT<double> col = (QK.A * QK.B.col(s)).transpose();  // QK[:, s] over destinations
    RowVecT<double> qc = (col - qk_rowmean.transpose()) * scale;
    RowVecT<double> ovr = OV.A.row(s) * OV.B;  // OV[s, :]
    RowVecT<double> oc = ovr.array() - ov_rowmean(s);
    std::vector<int> ds = best_indices(qc, k), os = best_indices(oc, k);
    for (int d : ds)
      for (int o : os) cand.push_back({qc(d) + oc(o), s, d, o, col(d), ovr(o)});
  }
  const std::size_t kk = std::min<std::size_t>(k, cand.size());
  std::partial_sort(cand.begin(), cand.begin() + kk, cand.end(), better);
  std::set<std::tuple<int, int, int>> in_top;
  for (std::size_t i = 0; i < kk; ++i) {
    const Cand& x = cand[i];
    out.top.push_back({x.s, x.d, x.o, x.qk, x.ov, x.score});
    in_top.insert({x.s, x.d, x.o});
  }
  if (max_bugs == 0) return out;

  // Pairs of top triples sharing a source, with different destinations and outputs, strongest
  // (by the weaker of the two scores) first.
  struct Pair {
    double strength;
    int i, j;
  };
  std::vector<Pair> pairs;
  for (int i = 0; i < static_cast<int>(out.top.size()); ++i)
    for (int j = i + 1; j < static_cast<int>(out.top.size()); ++j) {
      const SkipTrigram &a = out.top[i], &b = out.top[j];
      if (a.source == b.source && a.dest != b.dest && a.out != b.out)
        pairs.push_back({std::min(a.score, b.score), i, j});
    }
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.strength > b.strength; });
  std::set<std::tuple<int, int, int>> seen;
  for (const Pair& pr : pairs) {
    const SkipTrigram &a = out.top[pr.i], &b = out.top[pr.j];
    for (int side = 0; side < 2 && static_cast<int>(out.bugs.size()) < max_bugs; ++side) {
      const SkipTrigram& own = side == 0 ? a : b;
      const SkipTrigram& lender = side == 0 ? b : a;
      auto key = std::make_tuple(own.source, own.dest, lender.out);
      if (!seen.insert(key).second) continue;
      SkipTrigramBug g;
      g.source = own.source;
      g.dest = own.dest;
      g.out = lender.out;
      g.own_out = own.out;
      g.partner_dest = lender.dest;
      g.score = score_of(g.source, g.dest, g.out);
      g.crossed_in_top = in_top.count(key) > 0;
      out.bugs.push_back(g);
    }
    if (static_cast<int>(out.bugs.size()) >= max_bugs) break;
  }
  if (out.bugs.empty()) return out;

  // One batched forward pass over the distinct probe sequences [bos] x d.
  std::map<std::pair<int, int>, int> seq_row;
  std::vector<int> tokens;
  auto want = [&](int x, int d) {
    auto key = std::make_pair(x, d);
    if (seq_row.count(key)) return;
    seq_row[key] = static_cast<int>(seq_row.size());
    if (bos >= 0) tokens.push_back(bos);
    tokens.push_back(x);
    tokens.push_back(d);
  };
  for (const auto& g : out.bugs) {
    want(g.source, g.dest);
    want(g.dest, g.dest);
  }
  ActivationCache<float> cache;
  const int nseq = static_cast<int>(seq_row.size());
  forward(p, tokens, nseq, len, cache);
  check_output_finite(cache);   // as every forward pass an analysis makes
  auto prob = [&](int x, int d, int o) {
    const int n = seq_row.at({x, d}) * len + len - 1;
    RowVecT<double> lg = drow(cache.logits.mat(), n);
    const double mx = lg.maxCoeff();
    return std::exp(lg(o) - mx) / (lg.array() - mx).exp().sum();
  };
  for (auto& g : out.bugs) {
    g.p_own = prob(g.source, g.dest, g.own_out);
    g.p_crossed = prob(g.source, g.dest, g.out);
    g.p_crossed_without_source = prob(g.dest, g.dest, g.out);
  }
  return out;
}

}  // namespace cs
