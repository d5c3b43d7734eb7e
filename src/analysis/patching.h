// Activation patching (the IOI paper, Wang et al. 2022, section 3 and appendix; the ROME and
// TransformerLens "activation patching" convention): a clean and a corrupted input of the same
// length, and the logit difference at one position when one head's output (its hook_result, the
// head's whole contribution to the residual stream) is taken from the other run — at every
// position, or at one. Each patch is a real forward pass (an Intervention replacing the head's
// output, see HeadAblation), so later layers recompute on the patched residual stream. Also the
// standard corruptions the page proposes: swap the names (IOI), break the repeat (induction).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model.h"
#include "params.h"
#include "tensor.h"

namespace cs {

// Work one patching run may take, in multiply-adds of the forward passes it makes. The forward
// pass of the WASM module (its SIMD kernels) ran about 12 G multiply-adds a second under node on
// a shared 2-core machine (char-2l, 122 tokens: 978 passes, 6e9 multiply-adds in 0.5 s), so 2e10
// is about two seconds there and a few on a slower machine. Past it, activation_patching refuses
// with a sentence saying what it would cost (whole heads only stay cheap: 2 + L H passes).
constexpr double kMaxPatchWork = 2e10;

// Normalised effects are (patched - corrupted) / (clean - corrupted) only when the clean and the
// corrupted logit differences are at least this far apart (in nats); otherwise they are 0 and
// PatchResult::normalised is false (never NaN or a huge ratio of rounding errors).
constexpr double kMinPatchGap = 1e-4;

// Denoising: the clean run's head outputs patched into the corrupted run (what restores the
// answer; the IOI paper's and TransformerLens's activation patching). Noising: the corrupted
// run's outputs patched into the clean run (what breaks it).
enum class PatchDirection { Denoise, Noise };
std::string patch_direction_name(PatchDirection d);         // "denoise" | "noise"
PatchDirection patch_direction_from_name(const std::string& s);  // throws naming both

struct PatchSpec {
  std::vector<int> clean, corrupted;  // [T] each, the same length
  int pos = -1;                       // the answer position, 0..T-1
  int correct = -1, wrong = -1;       // logit difference = logit[correct] - logit[wrong] at pos
  PatchDirection direction = PatchDirection::Denoise;
  bool per_position = true;           // also patch each head at each position alone
};

struct PatchResult {
  int T = 0, pos = 0, correct = -1, wrong = -1;
  PatchDirection direction = PatchDirection::Denoise;
  double clean_diff = 0, corrupted_diff = 0;  // logit differences of the two runs (under the base intervention)
  bool normalised = false;                    // |clean - corrupted| >= kMinPatchGap (see above)
  // The logit difference with head (l, h)'s output taken from the other run at every position.
  Tensor<float> head;            // [n_layers, n_heads]
  Tensor<float> head_effect;     // [n_layers, n_heads] (head - corrupted) / (clean - corrupted), or 0
  // The same with only position t taken from the other run (empty unless per_position). Positions
  // after pos cannot reach the logits at pos (attention is causal): their entries are the
  // unpatched run's logit difference, and no pass is made for them.
  Tensor<float> head_pos;         // [n_layers, n_heads, T]
  Tensor<float> head_pos_effect;  // [n_layers, n_heads, T]
  // The same for each layer's MLP output (hook_mlp_out), for a model with MLPs (else empty).
  Tensor<float> mlp, mlp_effect;          // [n_layers]
  Tensor<float> mlp_pos, mlp_pos_effect;  // [n_layers, T] (per_position)
  int passes = 0;                 // forward passes made
  double work = 0;                // their multiply-adds (patching_work)
};

// Multiply-adds of one of activation_patching's forward passes over T tokens (the products of q,
// k, v, the pattern, z, each head's output, the MLP, and the two logits compared, not the rest of
// the unembedding): a whole pass (from_layer -1), or one from layer from_layer's outputs on
// (forward_from_layer: its attention is the unpatched run's).
double forward_work(const Config& c, int T, int from_layer = -1);
// Multiply-adds of activation_patching over a T-token answer prefix: 2 whole passes and P (+ P T)
// from the patched part's layer, P the patched parts (L H heads, and L MLPs when the model has
// them). At attn-only-2l's shape, 1,024 tokens, whole heads: 2.4e10, over kMaxPatchWork.
double patching_work(const Config& c, int T, bool per_position);
// Why activation patching over a T-token answer prefix leaves out each position alone (its work
// with them would exceed kMaxPatchWork), in words for the page; "" when each position fits.
std::string per_position_note(const Config& c, int T);

// The intervention of one patch: `base` plus head (layer, head)'s output replaced by `source`'s
// hook_result of that head (cache of a one-sequence pass, kept results) at `positions` (empty:
// every position). A patch of a head `base` ablates too replaces the ablation at its positions.
Intervention patch_intervention(const Config& c, const Intervention& base, const ActivationCache<float>& source, int layer,
                                int head, const std::vector<int>& positions);

// The intervention of one MLP patch: `base` plus layer `layer`'s MLP output replaced by `source`'s
// hook_mlp_out at `positions` (empty: every position).
Intervention patch_mlp_intervention(const Config& c, const Intervention& base, const ActivationCache<float>& source, int layer,
                                    const std::vector<int>& positions);

// Activation patching of every head and MLP (and each at every position) between spec.clean and
// spec.corrupted, both run under `base`. Throws std::invalid_argument with a sentence for
// sequences of different lengths, a position or token out of range, or work past kMaxPatchWork.
PatchResult activation_patching(const Params<float>& p, const PatchSpec& spec, const Intervention& base = Intervention());

// A clean input's standard corruption, and what the logit difference compares.
struct Corruption {
  std::string kind;            // "swap_names" | "break_repeat"
  std::vector<int> tokens;     // the corrupted sequence [T]
  int pos = -1;                // the answer position
  int correct = -1, wrong = -1;
  std::vector<int> changed;    // positions where tokens differ from the clean input
  std::string description;     // one sentence saying what was changed
};

// IOI (the IOI paper's corruption for activation patching, as in TransformerLens's IOI demo):
// the second mention of S becomes IO, so the corrupted sentence names the other person as the
// giver and its answer is S ("<BOS> A B B <MID>" -> "<BOS> A B A <MID>"; "When Mary and John went
// to the store, John gave a drink to" -> "..., Mary gave a drink to"). The first clause is
// unchanged. pos = T - 1, correct = IO, wrong = S. `names` as for ioi_names.
Corruption ioi_swap_names(const std::vector<int>& clean, const std::vector<int>& names = {});

// Induction (the induction-heads paper, seeds/004): the longest repeated block (find_repeat over
// clean[from ..]) loses its first copy: each of its tokens becomes a token drawn (seeded, the
// portable Rng) from the vocabulary minus `avoid` and minus every token of the clean sequence, so
// nothing before the second copy matches it. pos = the second copy's last token but one, correct
// = the token after it (the clean first copy's last token), wrong = the token that replaced that
// last token of the first copy. Throws when there is no block of 4 or more tokens, or no token
// left to draw.
Corruption break_repeat(const std::vector<int>& clean, int from, int d_vocab, const std::vector<int>& avoid,
                        std::uint64_t seed);

}  // namespace cs
