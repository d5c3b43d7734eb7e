// Config: the architecture of an attention-only transformer (TransformerLens names).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace cs {

// Limits no model file or recipe may exceed, checked by Config::validate() (kMaxWeights by
// check_size(), params.h) before anything is allocated. The explorer runs in a browser tab whose
// WebAssembly memory stops at 2 GB (and a phone has less): these keep loading a model, one
// forward pass over its whole context and every analysis of any accepted model well inside that,
// and the CLI inside a laptop's memory.
constexpr int kMaxLayers = 64;        // deeper than any model this explorer is meant for (GPT-2 XL has 48)
constexpr int kMaxHeads = 64;         // heads per layer
constexpr int kMaxTotalHeads = 256;   // n_layers * n_heads: attribution, composition scores ([3, L, H, L, H])
                                      // and every per-head table grow with it; GPT-2 small has 144
constexpr int kMaxDModel = 4096;      // residual width
constexpr int kMaxDHead = 1024;       // head width
constexpr int kMaxCtx = 8192;         // context length (the attention pattern is n_ctx^2 per head)
constexpr int kMaxVocab = 1000000;    // tokens
// Weights a model may hold: 96 M floats is 384 MB, so that a tab holds the weights, the file they
// were read from (as large again in float32) and a forward pass well inside its 2 GB. ARENA's
// attn_only_2L_half (768 wide, n_ctx 2,048, 50,278 tokens) has 83.5 M.
constexpr std::uint64_t kMaxWeights = 96ull << 20;
// Weights a model may have to be trained here: training keeps four copies (weights, gradients,
// two AdamW moments), so 64 M weights take 1 GB, still inside a tab.
constexpr std::uint64_t kMaxTrainWeights = 64ull << 20;
// The largest model file read: the largest model's weights in float32 and a 64 MB header.
constexpr std::uint64_t kMaxModelFileBytes = kMaxWeights * 4 + (64ull << 20);
// The activation cache of one forward pass over one sequence (every hook, attention scores
// included, at 4 bytes a value): 256 MB, an eighth of the tab's 2 GB, leaves room for the
// analyses that read it and for the page itself. forward() checks it against each pass's own
// length (a model whose whole context would not fit, such as TransformerLens's 48k-token
// 1,024-context toy models, still opens and runs shorter sequences).
constexpr double kMaxForwardBytes = 256.0 * (1 << 20);
constexpr int kMaxMlp = 16384;        // MLP width (d_mlp); GPT-2 small's is 3,072
// A training step's forward pass over a whole batch (backward needs about as much again): 1 GB.
constexpr double kMaxTrainBytes = 1024.0 * (1 << 20);
// The largest weight magnitude a model file may hold. Trained transformers' weights are of order
// 1 (the shipped models' largest is 7.9). With every |w| <= 1e4 the first layer cannot overflow
// float32 for any accepted shape (attention scores are at most d_head (d_model * 2e4 * 1e4)^2 =
// 7e26 against float's 3.4e38), while corrupt values such as 1e19 or 3e38 overflow at once.
// Deeper layers can still overflow; check_finite() (checks.h) reports that after a forward pass.
constexpr float kMaxAbsWeight = 1e4f;

enum class PosEmbed {
  None,         // no positional information at all
  Standard,     // learned absolute, added to the residual stream
  Shortformer,  // learned absolute, added only to the inputs of Q and K of every layer
};

std::string pos_embed_name(PosEmbed p);
PosEmbed pos_embed_from_name(const std::string& s);  // throws on an unknown name

// TransformerLens's normalization_type: what each block applies to its inputs (ln1 before
// attention, ln2 before the MLP) and ln_final before the unembed.
enum class Norm {
  None,   // no normalization
  LN,     // LayerNorm: centre, divide by sqrt(mean square + eps), then * w + b (ln*.w, ln*.b)
  LNPre,  // LayerNorm without weights (what TransformerLens's fold_ln leaves behind)
};
std::string norm_name(Norm n);                  // "none" | "LN" | "LNPre"
Norm norm_from_name(const std::string& s);      // also TransformerLens's spellings ("None"); throws
constexpr double kLnEps = 1e-5;                 // TransformerLens's default eps

// The MLP's activation (TransformerLens's act_fn).
enum class Act {
  GELU,     // "gelu": exact, 0.5 x (1 + erf(x / sqrt 2)), as PyTorch's F.gelu
  GELUNew,  // "gelu_new": the tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  ReLU,     // "relu"
};
std::string act_name(Act a);
Act act_from_name(const std::string& s);  // throws with a sentence (solu_ln is named as refused)

struct Config {
  int n_layers = 2;
  int n_heads = 4;
  int d_model = 64;
  int d_head = 16;
  int n_ctx = 256;
  int d_vocab = 96;
  PosEmbed pos_embed = PosEmbed::Shortformer;
  bool smeared_keys = false;  // induction-heads paper, argument 2: k_j <- s k_j + (1-s) k_{j-1}
  bool use_bias = false;      // b_Q b_K b_V b_O b_U
  Norm normalization = Norm::None;  // ln1 (and ln2) in every block, ln_final before the unembed
  int d_mlp = 0;              // 0: attention only; otherwise each block has an MLP of this width
  Act act_fn = Act::GELU;     // the MLP's activation (read only when d_mlp > 0)
  float init_std = 0.0f;      // <= 0 means 0.8 / sqrt(d_model), TransformerLens's default

  // Throws std::invalid_argument with a sentence naming the bad field or the limit (above) that
  // the architecture exceeds. The whole model's weight count (kMaxWeights) needs the list of its
  // tensors: check_size() (params.h) checks both.
  void validate() const;
  bool has_mlp() const { return d_mlp > 0; }
  // The model is not attention-only with a linear unembed: some analyses need the frozen final
  // LayerNorm scale or the MLPs' outputs as parts, and say so when they cannot take them.
  bool has_norm_or_mlp() const { return normalization != Norm::None || d_mlp > 0; }
  float effective_init_std() const;
  bool operator==(const Config& o) const;
  bool operator!=(const Config& o) const { return !(*this == o); }
};

nlohmann::json config_to_json(const Config& c);
// Reads every field it knows; missing fields keep their defaults; unknown fields are an error
// (a typo in a recipe should not be silently ignored). Validates the result.
Config config_from_json(const nlohmann::json& j);

// The bytes the activation cache of a forward pass over `batch` sequences of `len` tokens holds
// (logits at `logit_rows` positions a sequence; < 0: all `len`), every hook by default; a pass
// that keeps no attention scores (`scores` false: one head's [len, len] scratch instead) or no
// head results (`results` false) holds that much less. Computed in floating point, so it cannot
// overflow.
double forward_bytes(const Config& c, double batch, double len, double logit_rows = -1, bool scores = true,
                     bool results = true);

}  // namespace cs
