// TransformerLens's weight processing (HookedTransformer.fold_layer_norm, center_writing_weights,
// center_unembed, fold_value_biases), on float32 weights as TransformerLens computes them.
#include "weight_processing.h"

#include <map>
#include <stdexcept>

namespace cs {

Params<float> with_config(const Params<float>& p, const Config& c) {
  Params<float> out = make_params<float>(c);
  std::map<std::string, const Tensor<float>*> have;
  for (const auto& [name, t] : named_params(p)) have.emplace(name, t);
  for (auto& [name, t] : named_params(out)) {
    const auto it = have.find(name);
    if (it == have.end()) continue;
    if (it->second->shape != t->shape)
      throw std::logic_error("with_config: tensor " + name + " changes shape between the two configs");
    t->data = it->second->data;
  }
  return out;
}

namespace {

// x[:] -= mean(x[:]) over each row of a [rows, n] matrix view.
template <class M>
void center_rows(M&& m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) m.row(r).array() -= m.row(r).mean();
}

// TransformerLens fold_layer_norm (fold_biases and center_weights on): for a weight W [D, n]
// read through LayerNorm (w, b): b_W += b W (summed over D), W <- diag(w) W, then W centred over
// D (the reading weights of a centred input: LNPre's output has mean 0, so this changes nothing).
void fold_into(const Tensor<float>& w, const Tensor<float>& b, MapM<float> W, MapRV<float> bias) {
  const int D = static_cast<int>(W.rows());
  bias += b.vec() * W;
  for (int d = 0; d < D; ++d) W.row(d) *= w.data[d];
  for (Eigen::Index j = 0; j < W.cols(); ++j) W.col(j).array() -= W.col(j).mean();
}

void fold_layer_norm(Params<float>& p) {
  const Config& c = p.cfg;
  for (int l = 0; l < c.n_layers; ++l) {
    LayerParams<float>& b = p.blocks[l];
    Tensor<float>* Ws[3] = {&b.W_Q, &b.W_K, &b.W_V};
    Tensor<float>* bs[3] = {&b.b_Q, &b.b_K, &b.b_V};
    for (int m = 0; m < 3; ++m)
      for (int h = 0; h < c.n_heads; ++h) fold_into(b.ln1_w, b.ln1_b, Ws[m]->slice(h), bs[m]->row(h));
    if (c.d_mlp > 0) fold_into(b.ln2_w, b.ln2_b, b.W_in.mat(), b.b_in.vec());
  }
  fold_into(p.ln_final_w, p.ln_final_b, p.W_U.mat(), p.b_U.vec());
}

void center_writing_weights(Params<float>& p) {
  const Config& c = p.cfg;
  center_rows(p.W_E.mat());
  if (c.pos_embed != PosEmbed::None) center_rows(p.W_pos.mat());
  for (int l = 0; l < c.n_layers; ++l) {
    LayerParams<float>& b = p.blocks[l];
    center_rows(b.W_O.mat());  // [H * Dh, D]
    if (c.use_bias) center_rows(b.b_O.vec());
    if (c.d_mlp > 0) {
      center_rows(b.W_out.mat());
      center_rows(b.b_out.vec());
    }
  }
}

void center_unembed(Params<float>& p) {
  center_rows(p.W_U.mat());
  if (p.cfg.use_bias) center_rows(p.b_U.vec());
}

// b_O += sum_h b_V[h] W_O[h], b_V = 0: a head's value bias reaches the output through a pattern
// row that sums to 1, so it is a constant the output bias can carry.
void fold_value_biases(Params<float>& p) {
  for (LayerParams<float>& b : p.blocks) {
    for (int h = 0; h < p.cfg.n_heads; ++h) b.b_O.vec() += b.b_V.row(h) * b.W_O.slice(h);
    b.b_V.zero();
  }
}

}  // namespace

ProcessingReport process_weights(Params<float>& p, const Processing& want) {
  ProcessingReport r;
  const bool shortformer = p.cfg.pos_embed == PosEmbed::Shortformer;
  const char* const kShort = ": TransformerLens does not apply it to shortformer models";
  if (want.fold_ln) {
    if (shortformer) {
      r.skipped.push_back(std::string("fold_ln") + kShort);
    } else if (p.cfg.normalization != Norm::LN) {
      r.skipped.push_back(p.cfg.normalization == Norm::LNPre ? "fold_ln: the LayerNorm is already folded (LNPre)"
                                                             : "fold_ln: the model has no LayerNorm to fold");
    } else {
      Config c = p.cfg;
      c.use_bias = true;  // LayerNorm's b lands in the biases
      if (c != p.cfg) p = with_config(p, c);
      fold_layer_norm(p);
      // LNPre has no LayerNorm tensors: drop them in place (no copy of the other weights).
      p.cfg.normalization = Norm::LNPre;
      p.ln_final_w = Tensor<float>(), p.ln_final_b = Tensor<float>();
      for (LayerParams<float>& b : p.blocks) b.ln1_w = b.ln1_b = b.ln2_w = b.ln2_b = Tensor<float>();
      r.applied.push_back("fold_ln");
    }
  }
  if (want.center_writing_weights) {
    if (shortformer) r.skipped.push_back(std::string("center_writing_weights") + kShort);
    else if (p.cfg.normalization == Norm::None)
      r.skipped.push_back("center_writing_weights: the model has no LayerNorm, so the residual stream's mean is not removed");
    else {
      center_writing_weights(p);
      r.applied.push_back("center_writing_weights");
    }
  }
  if (want.center_unembed) {
    if (shortformer) r.skipped.push_back(std::string("center_unembed") + kShort);
    else {
      center_unembed(p);
      r.applied.push_back("center_unembed");
    }
  }
  if (want.fold_value_biases) {
    if (!p.cfg.use_bias || p.cfg.n_layers == 0) r.skipped.push_back("fold_value_biases: the model has no value biases");
    else {
      fold_value_biases(p);
      r.applied.push_back("fold_value_biases");
    }
  }
  return r;
}

}  // namespace cs
