// Indirect-object identification on the symbolic task of the IOI seed (seeds/001):
// <BOS> IO S1 S2 <MID> -> IO. Logit difference, each head's direct contribution along the sum
// direction (IO + S) and the difference direction (IO - S), the logit lens, accuracy over all 60
// sequences (optionally under an Intervention), and the interventions that cut Q/K/V composition.
#pragma once
#include <string>
#include <vector>

#include "model.h"
#include "params.h"
#include "tensor.h"
#include "tokenizer.h"

namespace cs {

// The two names of an IOI sequence: S is the name that occurs twice before the prediction
// position, IO the name that occurs once.
struct IoiNames {
  int io = -1;
  int s = -1;
};

// Seed 001 (task definition): reads IO and S from tokens[1 .. pos-1], ignoring tokens equal to
// tokens[0] (<BOS>) or tokens[pos] (<MID>). Throws std::invalid_argument unless exactly one name
// occurs once and one occurs twice.
// With `names` (the vocabulary's name tokens, for sentence templates), only those tokens count and
// every other word is ignored.
IoiNames ioi_names(const std::vector<int>& tokens, int pos, const std::vector<int>& names = {});

// One sequence, analysed at its prediction position `pos` (the <MID> token, the last position).
//
// Directions (columns of W_U, [D] each): u_sum = W_U[:, IO] + W_U[:, S], u_diff = W_U[:, IO] - W_U[:, S].
// A component c (a [D] vector written into the residual stream at `pos`) is reported two ways:
//   *_diff = c . u_diff, its direct effect on logit(IO) - logit(S) in logits (nats), and
//   *_sum  = c . u_sum,  its direct effect on logit(IO) + logit(S);
//   *_cos_diff / *_cos_sum = the same dot products divided by |c| |u| (cosine, in [-1, 1]; 0 when
//   c = 0): how well the component is aligned with each direction, whatever its size.
// The seed's additive head is aligned with u_sum, its contrastive head with u_diff.
// The dot products add up exactly: sum over heads of head_diff + direct_diff + bias_diff = logit_diff
// (and likewise for *_sum = logit(IO) + logit(S)), because the final residual stream is the
// embedding (+ positions when they are added to it) plus every head's output plus the b_O biases.
struct IoiAnalysis {
  int pos = 0;              // prediction position (T - 1)
  int io = -1, s = -1;
  int predicted = -1;       // argmax of the logits at pos over the whole vocabulary
  double logit_io = 0, logit_s = 0, logit_diff = 0;  // at pos; logit_diff = logit_io - logit_s
  double prob_io = 0, prob_s = 0;                    // softmax over the whole vocabulary

  Tensor<float> head_diff;      // [n_layers, n_heads] result_{l,h}[pos] . u_diff
  Tensor<float> head_sum;       // [n_layers, n_heads] result_{l,h}[pos] . u_sum
  Tensor<float> head_cos_diff;  // [n_layers, n_heads]
  Tensor<float> head_cos_sum;   // [n_layers, n_heads]
  // The direct path: hook_embed[pos] (+ hook_pos_embed[pos] for standard positions).
  double direct_diff = 0, direct_sum = 0;
  // Every b_O, plus b_U[IO] -+ b_U[S] (0 for a model without biases), plus ln_final.b's (LN).
  double bias_diff = 0, bias_sum = 0;
  // Each layer's MLP output at pos (hook_mlp_out) . u_diff and . u_sum: [n_layers] with MLPs,
  // [0] without. With a final LayerNorm every term above and here is read with its scale at pos
  // frozen (apply_ln_to_stack): centred, divided by it, through diag(ln_final.w) W_U. Then
  // logit_diff = sum(head_diff) + sum(mlp_diff) + direct_diff + bias_diff.
  Tensor<float> mlp_diff, mlp_sum;

  // Logit lens: the residual stream at pos after each stage, unembedded (x W_U + b_U; with a final
  // LayerNorm, through it with its scale at pos frozen, as TransformerLens's accumulated_resid
  // with apply_ln reads it).
  // Stage 0 is blocks.0.hook_resid_pre (the embedding, + positions if standard); stage l+1 is
  // blocks.l.hook_resid_post, so the last stage gives the model's logits.
  std::vector<float> lens_logit_io;  // [n_layers + 1]
  std::vector<float> lens_logit_s;   // [n_layers + 1]
  std::vector<float> lens_prob_io;   // [n_layers + 1]
  std::vector<float> lens_prob_s;    // [n_layers + 1]

  // The softmax over the whole vocabulary at pos (the probability of every name is probs[id]),
  // and its kIoiTopK most probable tokens, most probable first.
  std::vector<float> probs;      // [d_vocab]
  std::vector<int> top_ids;      // [min(kIoiTopK, d_vocab)]
  std::vector<float> top_probs;  // [min(kIoiTopK, d_vocab)]

  // Each head's share of the two totals (see ioi_head_roles), and the heads they name.
  Tensor<float> head_share_diff;  // [n_layers, n_heads] head_diff / logit_diff
  Tensor<float> head_share_sum;   // [n_layers, n_heads] head_sum / (logit_io + logit_s)
  std::string most_contrastive, most_additive;  // "L{l}H{h}", or "" when the total is 0

  bool correct = false;  // predicted == io: the model's most probable token is the answer
  // The model's names ranked by probability (set by ioi_rank_names): indices into its name list,
  // most probable first (ties: list order), and the probability all names get together.
  std::vector<int> name_order;
  double name_prob_total = 0;
};
constexpr int kIoiTopK = 5;

// Ranks `name_ids` (the model's names as token ids) by a.probs: fills a.name_order and
// a.name_prob_total.
void ioi_rank_names(IoiAnalysis& a, const std::vector<int>& name_ids);

// Which heads carry the logit difference and the logit sum (seed 001: one contrastive head along
// IO-S, one additive head along IO+S). A head's share of the difference is its direct contribution
// along u_diff divided by the total logit difference (head_diff / logit_diff); its share of the
// sum likewise (head_sum / (logit_io + logit_s)); 0 when the total is 0. The most contrastive head
// writes the most along the difference (the largest head_diff: the largest share when the model
// is right); the most additive head is the other head that writes the most along the sum (the same
// head when there is only one). A near-silent head writes near 0 along both and is never named for
// the ratio of its two tiny contributions. The report and the page use this one rule.
struct IoiHeadRoles {
  Tensor<float> share_diff, share_sum;  // [n_layers, n_heads]
  int contrastive = -1, additive = -1;  // flat head indices (layer-major), -1 without heads
  std::string most_contrastive, most_additive;  // "L{l}H{h}", or "" without heads
};
IoiHeadRoles ioi_head_roles(const Tensor<float>& head_diff, const Tensor<float>& head_sum, double logit_diff, double logit_sum);

// Seed 001 (residual-stream decomposition and logit lens) for one sequence of tokens [T]
// (T <= n_ctx), predicted at its last position.
IoiAnalysis ioi_analyse(const Params<float>& p, const std::vector<int>& tokens, const Intervention& iv = Intervention(),
                        const std::vector<int>& names = {});

// Over a set of IOI sequences.
struct IoiEvaluation {
  int n = 0;                    // sequences
  int correct = 0;              // argmax at the prediction position == IO
  double accuracy = 0;          // correct / n
  double mean_logit_diff = 0;   // mean of logit(IO) - logit(S)
  double mean_prob_io = 0, mean_prob_s = 0;
  double mean_loss = 0;         // mean -log p(IO)
  std::vector<int> predicted;       // [n]
  std::vector<float> logit_diff;    // [n]
  std::vector<float> prob_io;       // [n]
  std::vector<float> prob_s;        // [n]
  Tensor<float> mean_head_diff;     // [n_layers, n_heads] mean over sequences of head_diff
  Tensor<float> mean_head_sum;      // [n_layers, n_heads] mean over sequences of head_sum
  Tensor<float> mean_head_cos_diff; // [n_layers, n_heads]
  Tensor<float> mean_head_cos_sum;  // [n_layers, n_heads]
};

// Sentences per forward pass in ioi_evaluate: the template tasks hold thousands of sentences, and
// one pass over all of them took a third of a gigabyte of activations in the page; 128 rows keep
// it to a few megabytes at no cost in speed.
constexpr int kIoiEvalChunk = 128;

// Seed 001 (ablating composition paths): iv with the reference run its ablation kind reads
// (ablation_reference over `reference`'s rows); iv unchanged when its kind is Zero or it carries
// a reference already.
Intervention ioi_with_reference(const Params<float>& p, const Intervention& iv, const Batch& reference);

// Seed 001 (accuracy, logit difference and name probabilities over the task, optionally under an
// intervention). Each row of `sequences` is predicted at the position whose mask is 1 (the last
// position if the mask is empty or all zero); IO and S come from ioi_names. A mean or resample
// ablation without a reference reads the sequences themselves (ioi_with_reference).
IoiEvaluation ioi_evaluate(const Params<float>& p, const Batch& sequences, const Intervention& iv = Intervention(),
                           const std::vector<int>& names = {});
// Seed 001: over the 60 sequences of the symbolic task with the default vocabulary
// (ioi_symbolic_tokenizer(): <BOS> <MID> A..F, d_vocab 8). Throws if the model's vocabulary differs.
IoiEvaluation ioi_evaluate(const Params<float>& p, const Intervention& iv = Intervention());
// Throws the sentence ioi_evaluate gives unless the model's vocabulary is the symbolic task's.
void check_symbolic_vocabulary(const Config& cfg);
// Whether `tok` is the symbolic task's vocabulary, ioi_symbolic_tokenizer(): <BOS>, <MID> and the
// names A..F, in its order.
bool is_symbolic_ioi_vocabulary(const Tokenizer& tok);
// The 60 sequences <BOS> IO S S <MID> and <BOS> S IO S <MID> of the default vocabulary, [60, 5].
Batch ioi_symbolic_sequences();

// The name tokens of a symbolic vocabulary: every id but <BOS> and <MID> (the ioi_symbolic data
// source's names, A..F for the shipped models).
std::vector<int> ioi_symbolic_name_ids(const Tokenizer& tok);

// One symbolic sequence <BOS> IO S S <MID> (order 0) or <BOS> S IO S <MID> (order 1), io and s
// indices into ioi_symbolic_name_ids: its text as tokenize() reads it ("A B B <MID>"), its tokens
// and their texts. Throws with a sentence naming a bad index.
struct IoiSymbolicSentence {
  std::string text;
  std::vector<int> tokens;
  std::vector<std::string> words;
};
IoiSymbolicSentence ioi_symbolic_sentence(const Tokenizer& tok, int io, int s, int order);

// Seed 001 (Q/K/V composition ablation): an Intervention cutting input `input` (Q, K or V) of every
// head from the output of every head of every earlier layer. For a 2-layer model: all
// n_heads * n_heads paths from layer 0 into layer 1. Empty for fewer than 2 layers.
Intervention cut_composition(const Config& cfg, Input input);

// The ablation kinds in the order the sweep and the report list them.
inline constexpr Ablation kAblations[] = {Ablation::Zero, Ablation::Mean, Ablation::MeanAll, Ablation::Resample};
// Seed 001 (Q/K/V composition ablation): the accuracy over the 60 sequences of the symbolic task
// with each composition cut (Q, K, V) under each ablation kind of kAblations, [4][3]; the means
// and resamples read the 60 sequences, resamples drawn with seed 0. Empty for fewer than 2 layers.
std::vector<std::vector<double>> ioi_cut_accuracies(const Params<float>& p);

}  // namespace cs
