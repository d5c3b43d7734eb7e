// Model: forward pass with a full activation cache, cross-entropy loss and the hand-written
// backward pass of a transformer: attention in every block, with TransformerLens's optional
// LayerNorm (LN or LNPre: ln1, ln2, ln_final) and MLP (GELU, tanh GELU or ReLU).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "params.h"
#include "tensor.h"

namespace cs {

// A batch of token sequences, all of length T (<= n_ctx).
struct Batch {
  int B = 0;
  int T = 0;
  std::vector<int> tokens;    // [B, T]
  std::vector<int> targets;   // [B, T]  next token to predict at each position (any value where mask is 0)
  std::vector<float> mask;    // [B, T]  1 where the loss counts, 0 elsewhere
  // What the loss divides by: 0 means this batch's own mask sum (the mean over its positions).
  // A shard of a larger batch (data-parallel training, train.h) sets the whole batch's sum, so its
  // loss and gradient are its share of the whole batch's mean, and the shards' add up to it.
  double mask_total = 0;
};

// A next-token batch: target at position t is token t+1 of the same row; the last position of
// each row has no target (mask 0). Throws std::invalid_argument if ids is not [B, T].
Batch next_token_batch(const std::vector<int>& ids, int B, int T);

// What to change in a forward pass, as plain data (never a callback).
struct HeadAblation {
  int layer = 0;
  int head = 0;
  bool mean = false;        // false: zero-ablate; true: replace the head's output by `mean_value`
  std::vector<float> mean_value;  // [D] (same at every position) or [n_ctx, D] (per position)
  // The positions whose output is replaced (each in 0..T-1 of the pass); empty: every position.
  // Activation patching (analysis/patching.h) is a mean-ablation with the other run's
  // hook_result as the [n_ctx, D] value, at every position or at one.
  std::vector<int> positions;
};

// Replace layer `layer`'s MLP output (blocks.l.hook_mlp_out, its whole contribution to the
// residual stream) by zero, or by `mean_value`, at `positions` (empty: every position). Activation
// patching of an MLP (analysis/patching.h) gives the other run's hook_mlp_out as an [n_ctx, D]
// value. Only zero or a given value: the reference runs of Intervention::ablation hold heads' outputs.
struct MlpAblation {
  int layer = 0;
  bool mean = false;
  std::vector<float> mean_value;  // [D] or [n_ctx, D]
  std::vector<int> positions;
};

enum class Input { Q = 0, K = 1, V = 2 };

// Cut the path from the output of head (src_layer, src_head) into input `input` of head
// (dst_layer, dst_head); src_layer < dst_layer. The residual stream that input reads is
// recomputed without that head's output.
struct PathCut {
  int src_layer = 0, src_head = 0;
  int dst_layer = 1, dst_head = 0;
  Input input = Input::Q;
};

// What replaces a removed head's output: in a path cut, the cut head's contribution to the cut
// input; in a HeadAblation without its own mean, the head's output. (Seed 001 says "ablation" of
// the composition paths without saying which; these are the usual kinds.)
//   Zero      nothing (the contribution is subtracted): the cut as it always was
//   Mean      the head's output averaged over the reference sequences, at each position
//   MeanAll   the head's output averaged over the reference sequences and over their positions
//   Resample  the head's output on another reference sequence: the one resample_row() draws for
//             the sequence from resample_seed (a sequence is never its own partner)
enum class Ablation { Zero = 0, Mean = 1, MeanAll = 2, Resample = 3 };
const char* ablation_name(Ablation a);  // "zero" | "mean" | "mean-all" | "resample"
// The inverse; throws std::invalid_argument with a sentence naming the kinds.
Ablation ablation_from_name(const std::string& name, const std::string& where);

// Every head's output (hook_result) in a clean pass over the reference sequences, which Mean,
// MeanAll and Resample read. Built by ablation_reference().
struct AblationReference {
  int B = 0, T = 0;                         // reference sequences, their length
  std::vector<int> tokens;                  // [B, T]
  std::vector<std::vector<float>> result;   // [n_layers * n_heads][B, T, D]
  std::vector<std::vector<float>> mean;     // [n_layers * n_heads][T, D]  mean over the B rows
  std::vector<std::vector<float>> mean_all; // [n_layers * n_heads][D]     mean over rows and positions
};

struct Intervention {
  std::vector<HeadAblation> ablations;
  std::vector<MlpAblation> mlp_ablations;
  std::vector<PathCut> cuts;
  bool remove_pos = false;  // act as if W_pos were zero
  Ablation ablation = Ablation::Zero;  // what replaces a cut (or plainly ablated) head's output
  std::uint64_t resample_seed = 0;     // Resample: which reference sequence each sequence gets
  // Mean, MeanAll, Resample: the reference run they read (shared, read-only); forward() refuses
  // those kinds without it.
  std::shared_ptr<const AblationReference> reference;
  bool empty() const { return ablations.empty() && mlp_ablations.empty() && cuts.empty() && !remove_pos; }
};

// Runs the clean model over the reference sequences [B, T] (the task's own, for the IOI task)
// and keeps every head's output and its means. Seed 001's ablations of composition paths.
template <class T>
std::shared_ptr<const AblationReference> ablation_reference(const Params<T>& p, const std::vector<int>& tokens, int B, int Tl);

// Resample: the reference row whose head outputs replace those of `tokens` (a sequence of length
// <= reference.T): drawn from seed and the sequence's tokens (splitmix64), so a sequence gets the
// same partner in every batch it is part of; never a row whose first tokens equal its own, unless
// every row does. Throws with a sentence if the reference is empty.
int resample_row(const AblationReference& ref, const int* tokens, int Tl, std::uint64_t seed);

// Every intermediate of one forward pass, named as TransformerLens hooks. Filled by forward(),
// read-only afterwards (backward, analysis and bindings read it). Layouts keep each head's data
// contiguous; the axis order is given next to each member.
template <class T>
struct LayerCache {
  Tensor<T> resid_pre;    // blocks.l.hook_resid_pre    [B, T, D]
  Tensor<T> ln1_scale;    // blocks.l.ln1.hook_scale    [B, T]  (normalization LN or LNPre)
  Tensor<T> ln1_out;      // blocks.l.ln1.hook_normalized [B, T, D]: what attention reads (LN, LNPre)
  Tensor<T> q;            // blocks.l.attn.hook_q       [H, B, T, Dh]
  Tensor<T> k;            // blocks.l.attn.hook_k       [H, B, T, Dh]  (after smearing)
  Tensor<T> k_unsmeared;  // blocks.l.attn.hook_k_unsmeared [H, B, T, Dh] (smeared_keys only)
  Tensor<T> v;            // blocks.l.attn.hook_v       [H, B, T, Dh]
  Tensor<T> attn_scores;  // blocks.l.attn.hook_attn_scores [B, H, T, T] (scaled; masked = -inf;
                          // filled only when the cache's keep_scores is set)
  Tensor<T> pattern;      // blocks.l.attn.hook_pattern [B, H, T, T]
  Tensor<T> z;            // blocks.l.attn.hook_z       [H, B, T, Dh]
  Tensor<T> result;       // blocks.l.attn.hook_result  [H, B, T, D]  (after any ablation; empty
                          // when the cache's keep_result is cleared)
  Tensor<T> attn_out;     // blocks.l.hook_attn_out     [B, T, D]
  Tensor<T> resid_mid;    // blocks.l.hook_resid_mid    [B, T, D]  (d_mlp > 0) resid_pre + attn_out
  Tensor<T> ln2_scale;    // blocks.l.ln2.hook_scale    [B, T]     (d_mlp > 0, LN or LNPre)
  Tensor<T> ln2_out;      // blocks.l.ln2.hook_normalized [B, T, D] (d_mlp > 0, LN or LNPre)
  Tensor<T> mlp_pre;      // blocks.l.mlp.hook_pre      [B, T, M]  (d_mlp > 0)
  Tensor<T> mlp_post;     // blocks.l.mlp.hook_post     [B, T, M]  act(mlp_pre)
  Tensor<T> mlp_out;      // blocks.l.hook_mlp_out      [B, T, D]
  Tensor<T> resid_post;   // blocks.l.hook_resid_post   [B, T, D]
};

// Buffers that forward() and backward() reuse from call to call, so that once a batch shape has
// been seen, a training step does not allocate. Their contents are meaningless between calls.
template <class T>
struct Workspace {
  MatRM<T> resid, qk_in;       // [N, D]
  MatRM<T> wcat;               // [D, 3*H*Dh]  W_Q | W_K | W_V of every head side by side
  MatRM<T> dlogits;            // [N, V]
  MatRM<T> dresid, dresid_pre, dqk_in;  // [N, D]
  MatRM<T> dz;                 // [N, H*Dh]
  MatRM<T> dqkv;               // [N, 3*H*Dh]  dq | dk | dv of every head side by side
  MatRM<T> dP, dS;             // [T, T]
  MatRM<T> dpos;               // [T, D]
  MatRM<T> dkr;                // [N, Dh]  (smeared keys only)
  MatRM<T> dx;                 // [N, D]   the gradient at a LayerNorm's output
  MatRM<T> dmlp;               // [N, M]   the gradient at the MLP's hidden layer
  std::vector<T> row;          // [V]
  MatRM<T> S;                  // [T, T]  one head's scores, when the cache does not keep them
  std::vector<T*> blocks;      // where each head's q, k and v columns go
};

template <class T>
struct ActivationCache {
  int n_batch = 0, n_pos = 0;  // B, T
  std::vector<int> tokens;  // [B, T]
  bool intervened = false;  // forward ran with a non-empty intervention
  bool keep_scores = false; // set before forward() to fill each layer's attn_scores (nothing
                            // else reads them; the pattern is always kept)
  bool keep_result = true;  // clear it to skip each head's hook_result (training and batch loss
                            // do not read it; attn_out is then summed in place). A forward pass
                            // with an intervention always keeps it.
  bool last_logits_only = false;  // set before forward() to compute logits at each row's last
                            // position only: logits is then [B, 1, V] (a score that reads one
                            // prediction per window, e.g. the paired ICL score, at a 50k vocabulary
                            // costs T times less). backward() and loss_from_logits() need it clear.
  bool skip_logits = false; // set before forward() to stop at ln_final: logits stays empty (a
                            // [T, V] table is 100 MB at 512 tokens of a 50k vocabulary), and
                            // unembed_rows() computes rows of it where they are read.
  Tensor<T> embed;          // hook_embed      [B, T, D]
  Tensor<T> pos_embed;      // hook_pos_embed  [T, D] (zeros if none or removed)
  std::vector<LayerCache<T>> layers;
  Tensor<T> resid_final;    // [B, T, D] (= last resid_post, or embed (+pos) for 0 layers)
  Tensor<T> ln_final_scale; // ln_final.hook_scale      [B, T]     (LN or LNPre)
  Tensor<T> ln_final_out;   // ln_final.hook_normalized [B, T, D]  what the unembed reads (LN, LNPre)
  Tensor<T> logits;         // logits [B, T, V]  ([B, 1, V] with last_logits_only)
  mutable Workspace<T> work;  // scratch, not part of the cache's meaning
};

// Throws std::invalid_argument for tokens out of range, T > n_ctx, a malformed intervention, or a
// pass whose activations would exceed kMaxForwardBytes (one sequence) or kMaxTrainBytes (a batch).
template <class T>
void forward(const Params<T>& p, const std::vector<int>& tokens, int B, int Tlen, ActivationCache<T>& cache,
             const Intervention& iv = Intervention());

// Logits rows [from, to) of a one-sequence pass (B = 1) into out [to - from, V]: ln_final's output
// (or the final residual) times W_U plus b_U, bit for bit what forward() writes in cache.logits.
template <class T>
void unembed_rows(const Params<T>& p, const ActivationCache<T>& cache, int from, int to, std::vector<T>& out);
// The columns [v0, v1) of those rows, into out [to - from, v1 - v0] (the same bits).
template <class T>
void unembed_block(const Params<T>& p, const ActivationCache<T>& cache, int from, int to, int v0, int v1, std::vector<T>& out);

// One logit of a one-sequence pass: row `pos`, column `token` of unembed_rows() (bit for bit).
template <class T>
T unembed_entry(const Params<T>& p, const ActivationCache<T>& cache, int pos, int token);

// Every head's output of layer `layer` ([H, B, T, D], hook_result) into out: the cache's when it
// kept them, else z_h W_O[h] computed now, bit for bit what a pass keeping them writes.
template <class T>
void head_results(const Params<T>& p, const ActivationCache<T>& cache, int layer, T* out);

// An incremental forward pass over one sequence, as a language model's KV cache serves typing:
// `cache` holds the clean pass (no intervention) of this model over some tokens, made by forward()
// or this function; the positions before the first token where `tokens` differs from those keep
// their activations (attention is causal: nothing there reads a later position), each head's
// keys and values included, and only the later positions are computed (at least the last one).
// Returns the first position computed: 0 when the cache could not be reused (another batch shape,
// an intervention incremental_intervention() refuses, attention scores or only last logits kept,
// logits wanted that the kept pass skipped; then this is forward()). The cache then equals
// forward()'s over `tokens` under `iv` bit for bit (tests/cpp/test_incremental.cpp). The caller
// guarantees the cache was made with these weights and this intervention (model_session.h keeps
// track of both).
template <class T>
int forward_incremental(const Params<T>& p, const std::vector<int>& tokens, ActivationCache<T>& cache,
                        const Intervention& iv = Intervention());
// A pass under `iv` computed from layer `layer`'s head outputs on, every row: `cache` holds a
// one-sequence pass over the same tokens whose layers up to `layer` (its resid_pre and z) are
// what `iv` gives them, i.e. made under an intervention that differs from `iv` only in what it
// replaces at layer `layer`'s head outputs or MLP and later (activation patching's passes, each
// patching one part of a layer: layer L-1's passes cost one layer's outputs and the unembedding).
// Layers before `layer`, its attention (q, k, v, the pattern, z) and its resid_pre are left as
// they are; the rest then equals forward()'s under `iv` bit for bit (tests/cpp/test_patching.cpp).
// The logits follow cache.skip_logits.
template <class T>
void forward_from_layer(const Params<T>& p, ActivationCache<T>& cache, const Intervention& iv, int layer);
// Whether a pass under `iv` can be computed from its first changed token on: what it replaces at a
// position depends on that position and the ones before only. True for no intervention and for
// zero, mean and mean-over-positions ablations of heads and MLPs (at every position or at some),
// and for removing the positions; false for path cuts and for resample ablation (its reference
// row is drawn from every token of the sequence).
inline bool incremental_intervention(const Intervention& iv) {
  return iv.cuts.empty() && iv.ablation != Ablation::Resample;
}
// Two interventions that replace the same things with the same values (the same reference run,
// compared by identity).
bool same_intervention(const Intervention& a, const Intervention& b);

struct LossResult {
  double loss = 0;                // mean cross-entropy over masked positions (sum / batch.mask_total if set)
  std::vector<float> per_token;   // [B, T] cross-entropy at every position (where the target is valid)
};

// -log softmax(logits)[target] of one row of V logits, as loss_from_logits computes each position's
// (scratch: V values it may overwrite).
template <class T>
double cross_entropy_row(const T* logits, int V, int target, std::vector<T>& scratch);
// log sum exp(logits) of one row, the normaliser cross_entropy_row subtracts from: folded block by
// block of kLogitBlock values (LogSumExp), so that a row read a block at a time, as the page's
// passes compute the logits of a large vocabulary (analysis/forward_outputs.cpp), gives the same
// bits as the whole row. A row of at most kLogitBlock values is one block: its maximum plus the
// log of the sum of exp(x - maximum).
template <class T>
T log_sum_exp_row(const T* logits, int V, std::vector<T>& scratch);
constexpr int kLogitBlock = 2048;
template <class T>
struct LogSumExp {
  T max = 0, sum = 0;
  bool any = false;
  // The next block of n values (scratch: n values it may overwrite): the running sum rescaled to
  // the larger maximum, plus the block's exp(x - maximum).
  void add(const T* x, int n, T* scratch);
  T value() const;
};

// Mean cross-entropy over the positions the mask selects.
template <class T>
LossResult loss_from_logits(const ActivationCache<T>& cache, const Batch& batch);
// The same into an existing result (its per_token buffer is reused: no allocation once sized).
template <class T>
void loss_from_logits(const ActivationCache<T>& cache, const Batch& batch, LossResult& out);

// Gradient of the mean masked cross-entropy with respect to every parameter (overwrites grads).
// Requires a cache produced without intervention.
template <class T>
void backward(const Params<T>& p, const ActivationCache<T>& cache, const Batch& batch, Params<T>& grads);

// forward + loss + backward in one call; returns the loss.
template <class T>
double loss_and_grad(const Params<T>& p, const Batch& batch, ActivationCache<T>& cache, Params<T>& grads);

// Finite forward passes.
// Throws std::runtime_error if any activation of the cache is NaN or Inf, naming the first hook
// (in the order forward computes them) that holds one, e.g. "the forward pass overflowed: blocks.0.
// attn.hook_q holds Inf; the model's weights are too large to compute with in float32". Masked
// attention scores (-inf by design) are not counted.
void check_finite(const ActivationCache<float>& cache);
// The same, cheaply, for every call that returns results: scans only the logits (every overflow
// reaches them) and, when they hold NaN or Inf, names the first stage with check_finite().
// from_pos: an incremental pass's first computed position (one sequence); the logits before it
// were checked by the pass that made them.
void check_output_finite(const ActivationCache<float>& cache, int from_pos = 0);

}  // namespace cs
