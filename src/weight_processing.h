// TransformerLens's weight processing on load (HookedTransformer.from_pretrained and its
// process_weights_): fold_ln, center_writing_weights, center_unembed and fold_value_biases, with
// TransformerLens's defaults (all on), applied where it applies them and skipped, with its reason,
// where it skips them. None of them changes what the model predicts (the log-probabilities); they
// change what the weights and the residual stream look like, which is what the analyses read.
#pragma once
#include <string>
#include <vector>

#include "params.h"

namespace cs {

struct Processing {
  bool fold_ln = true;                 // LayerNorm's w and b into the weights that read it: LN -> LNPre
  bool center_writing_weights = true;  // W_E, W_pos, W_O, b_O, W_out, b_out centred over d_model
  bool center_unembed = true;          // W_U and b_U centred over the vocabulary
  bool fold_value_biases = true;       // b_V into b_O (each head's pattern sums to 1)
  // from_pretrained_no_processing: every step off.
  static Processing none() { return Processing{false, false, false, false}; }
};

// What process_weights did: the steps applied, in TransformerLens's order and names, and the
// steps asked for but skipped, each as "name: why" (TransformerLens's own reasons).
struct ProcessingReport {
  std::vector<std::string> applied;
  std::vector<std::string> skipped;
};

// Applies `want` to p in place, as TransformerLens does: shortformer models are never folded or
// centred (from_pretrained turns fold_ln, center_writing_weights and center_unembed off for them);
// fold_ln needs LN weights (an LNPre model has none left to fold) and leaves LNPre;
// center_writing_weights needs LN or LNPre; fold_value_biases needs biases. Folding a model
// without biases gives it biases (LayerNorm's b lands in b_Q, b_K, b_V, b_in and b_U).
ProcessingReport process_weights(Params<float>& p, const Processing& want);

// The same parameters under another config: every tensor both configs have is copied, tensors
// only the new one has start at zero. Throws if a shared tensor changed shape.
Params<float> with_config(const Params<float>& p, const Config& c);

}  // namespace cs
