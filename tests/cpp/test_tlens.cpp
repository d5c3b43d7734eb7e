// Tests for reading TransformerLens state dicts: a shipped model written in TransformerLens's layout
// (its key names, the attn.mask and attn.IGNORE buffers, {"format": "pt"} metadata, F32/F16/BF16)
// loads with the same logits, and each kind of unsupported or damaged file gets its sentence.
#include <gtest/gtest.h>

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "io.h"
#include "model.h"
#include "test_util.h"

namespace cs {
namespace {

using nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

enum class Enc { F32, F16, BF16 };

// float32 -> bfloat16 bits, rounding to nearest even (as torch's .to(torch.bfloat16) does).
std::uint16_t bf16_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<std::uint16_t>(b >> 16);
}

float round_to(Enc e, float x) {
  if (e == Enc::F16) return static_cast<float>(Eigen::half(x));
  if (e == Enc::BF16) {
    const std::uint32_t b = static_cast<std::uint32_t>(bf16_bits(x)) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  return x;
}

void put_value(Bytes& out, Enc e, float x) {
  if (e == Enc::F32) {
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(b >> (8 * i)));
    return;
  }
  const std::uint16_t b = e == Enc::F16 ? Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(x)) : bf16_bits(x);
  out.push_back(static_cast<std::uint8_t>(b & 0xFF));
  out.push_back(static_cast<std::uint8_t>(b >> 8));
}

const char* enc_name(Enc e) { return e == Enc::F32 ? "F32" : e == Enc::F16 ? "F16" : "BF16"; }

// A safetensors file as parts: the header (without the length) and the data section.
struct Parts {
  json header = json::object();
  Bytes data;
  // Appends a tensor's bytes and its header entry.
  void add(const std::string& name, const std::string& dtype, const Shape& shape, const Bytes& bytes) {
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data.insert(data.end(), bytes.begin(), bytes.end());
  }
  void add_floats(const std::string& name, Enc e, const Shape& shape, const std::vector<float>& v) {
    Bytes b;
    for (float x : v) put_value(b, e, x);
    add(name, enc_name(e), shape, b);
  }
  Bytes bytes() const {
    std::string h = header.dump();
    while (h.size() % 8) h += ' ';
    Bytes out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(h.size()) >> (8 * i)));
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }
};

struct TlOptions {
  Enc enc = Enc::F32;
  bool biases = true;   // TransformerLens always has b_Q, b_K, b_V, b_O and b_U: zeros when ours has none
  bool buffers = true;  // attn.mask (BOOL, causal) and attn.IGNORE (F32 scalar, -inf)
  // what safetensors.torch.save_model writes, and the hint that the model has no normalization;
  // null for none
  json metadata = json{{"format", "pt"}, {"normalization_type", "None"}};
};

// What safetensors.torch.save_file(model.state_dict(), path) writes for a TransformerLens
// HookedTransformer (attn_only=True, normalization_type=None) with m's weights.
Parts tl_parts(const ModelFile& m, const TlOptions& o = TlOptions()) {
  Parts p;
  if (!o.metadata.is_null()) p.header["__metadata__"] = o.metadata;
  for (const auto& [name, t] : named_params(m.params)) p.add_floats(name, o.enc, t->shape, t->data);
  const Config& c = m.cfg;
  if (o.biases && !c.use_bias) {
    for (int l = 0; l < c.n_layers; ++l) {
      const std::string a = "blocks." + std::to_string(l) + ".attn.";
      for (const char* b : {"b_Q", "b_K", "b_V"})
        p.add_floats(a + b, o.enc, {c.n_heads, c.d_head}, std::vector<float>(static_cast<std::size_t>(c.n_heads * c.d_head)));
      p.add_floats(a + "b_O", o.enc, {c.d_model}, std::vector<float>(static_cast<std::size_t>(c.d_model)));
    }
    p.add_floats("unembed.b_U", o.enc, {c.d_vocab}, std::vector<float>(static_cast<std::size_t>(c.d_vocab)));
  }
  if (o.buffers) {
    for (int l = 0; l < c.n_layers; ++l) {
      Bytes mask;
      for (int q = 0; q < c.n_ctx; ++q)
        for (int k = 0; k < c.n_ctx; ++k) mask.push_back(k <= q ? 1 : 0);
      p.add("blocks." + std::to_string(l) + ".attn.mask", "BOOL", {c.n_ctx, c.n_ctx}, mask);
      p.add_floats("blocks." + std::to_string(l) + ".attn.IGNORE", Enc::F32, {}, {-std::numeric_limits<float>::infinity()});
    }
  }
  return p;
}

// Read as from_pretrained_no_processing would: the weights exactly as written.
ModelFile load(const Bytes& b) {
  LoadOptions o;
  o.processing = Processing::none();
  return load_model_bytes(b.data(), b.size(), o);
}
// Read with TransformerLens's default processing (fold_ln, centring, value biases folded).
ModelFile load_processed(const Bytes& b) { return load_model_bytes(b.data(), b.size()); }

std::vector<float> logits(const ModelFile& m, const std::vector<int>& ids) {
  ActivationCache<float> cache;
  forward(m.params, ids, 1, static_cast<int>(ids.size()), cache);
  return cache.logits.data;
}

// Token ids 0, 3, 6, ... wrapped to the vocabulary, as many as the context holds (at most 40).
std::vector<int> some_ids(const Config& c) {
  std::vector<int> ids;
  for (int i = 0; i < std::min(c.n_ctx, 40); ++i) ids.push_back((3 * i + 1) % c.d_vocab);
  return ids;
}

void expect_same_logits(const ModelFile& a, const ModelFile& b, float tol = 0.0f) {
  const std::vector<int> ids = some_ids(a.cfg);
  const std::vector<float> la = logits(a, ids), lb = logits(b, ids);
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) ASSERT_NEAR(la[i], lb[i], tol) << "logit " << i;
}

TEST(TransformerLensFile, ShippedModelsInTransformerLensLayoutGiveTheSameLogits) {
  for (const char* path : {"models/ioi-2l1h.safetensors", "models/ioi-templates-2l.safetensors"}) {
    SCOPED_TRACE(path);
    const ModelFile ours = load_model_file(path);
    const ModelFile tl = load(tl_parts(ours).bytes());
    Config want = ours.cfg;
    want.use_bias = true;  // TransformerLens's zero biases are loaded
    EXPECT_EQ(tl.cfg, want);
    EXPECT_EQ(tl.tokenizer.kind(), Tokenizer::Kind::Ids);
    EXPECT_EQ(tl.tokenizer.size(), ours.cfg.d_vocab);
    EXPECT_EQ(tl.tokenizer.bos_id(), -1);
    EXPECT_EQ(tl.info["source"], "transformerlens");
    EXPECT_NE(tl.info["note"].get<std::string>().find("text is token ids separated by spaces (e.g. \""), std::string::npos);
    expect_same_logits(ours, tl, 1e-6f);
  }
}

TEST(TransformerLensFile, NoBiasesNoBuffers) {
  const ModelFile ours = load_model_file("models/ioi-1l2h.safetensors");
  TlOptions o;
  o.metadata = json{{"normalization_type", "None"}};
  o.biases = false;
  o.buffers = false;
  const ModelFile tl = load(tl_parts(ours, o).bytes());
  EXPECT_EQ(tl.cfg, ours.cfg);  // use_bias false: no bias in the file
  EXPECT_NE(tl.info["note"].get<std::string>().find("it has no biases"), std::string::npos);
  expect_same_logits(ours, tl);
}

TEST(TransformerLensFile, BiasesAreLoadedAndMissingOnesAreZero) {
  const ModelFile ours = load_model_file("models/ioi-2l1h.safetensors");
  // Our model with biases of some value (b_U zero): the TransformerLens file without b_U must
  // give the same logits.
  ModelFile with = ours;
  with.cfg.use_bias = true;
  with.params = make_params<float>(with.cfg);
  const auto src = named_params(ours.params);
  for (auto& [name, t] : named_params(with.params)) {
    bool copied = false;
    for (const auto& [n2, t2] : src)
      if (n2 == name) t->data = t2->data, copied = true;
    if (!copied && name != "unembed.b_U")
      for (std::size_t k = 0; k < t->data.size(); ++k) t->data[k] = 0.01f * static_cast<float>(k % 7) - 0.03f;
  }
  Parts p;
  p.header["__metadata__"] = {{"format", "pt"}, {"normalization_type", "None"}};
  for (const auto& [name, t] : named_params(with.params))
    if (name != "unembed.b_U") p.add_floats(name, Enc::F32, t->shape, t->data);
  const ModelFile tl = load(p.bytes());
  EXPECT_TRUE(tl.cfg.use_bias);
  EXPECT_EQ(tl.params.b_U.data, std::vector<float>(static_cast<std::size_t>(tl.cfg.d_vocab), 0.0f));
  EXPECT_EQ(tl.params.blocks[1].b_O.data, with.params.blocks[1].b_O.data);
  expect_same_logits(with, tl, 1e-6f);
}

TEST(TransformerLensFile, NonFiniteBfloat16IsRefused) {
  TlOptions o;
  o.enc = Enc::BF16;
  Parts p = tl_parts(load_model_file("models/ioi-2l1h.safetensors"), o);
  const std::size_t b = p.header["embed.W_E"]["data_offsets"][0];
  p.data[b + 2] = 0xC0;  // 0x7FC0: a quiet NaN
  p.data[b + 3] = 0x7F;
  try {
    load(p.bytes());
    ADD_FAILURE() << "loaded without an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor embed.W_E has a non-finite value (NaN) at index 1"), std::string::npos)
        << e.what();
  }
}

TEST(TransformerLensFile, HalfAndBfloat16AreReadAsFloat32) {
  const ModelFile ours = load_model_file("models/ioi-templates-1l2h.safetensors");
  for (Enc e : {Enc::F16, Enc::BF16}) {
    SCOPED_TRACE(enc_name(e));
    TlOptions o;
    o.enc = e;
    const ModelFile tl = load(tl_parts(ours, o).bytes());
    // Our model with every weight rounded the same way gives exactly the same logits.
    ModelFile rounded = ours;
    for (auto& [name, t] : named_params(rounded.params))
      for (float& x : t->data) x = round_to(e, x);
    expect_same_logits(rounded, tl, 1e-6f);
  }
}

TEST(TransformerLensFile, ShortformerAndTokenizerFromMetadata) {
  const ModelFile ours = load_model_file("models/char-2l.safetensors");
  ASSERT_EQ(ours.cfg.pos_embed, PosEmbed::Shortformer);
  TlOptions o;
  o.metadata = json{{"format", "pt"}, {"positional_embedding_type", "shortformer"},
                    {"normalization_type", "None"}, {"tokenizer", ours.tokenizer.to_json().dump()}};
  const ModelFile tl = load(tl_parts(ours, o).bytes());
  EXPECT_EQ(tl.cfg.pos_embed, PosEmbed::Shortformer);
  EXPECT_EQ(tl.tokenizer.kind(), Tokenizer::Kind::Char);
  EXPECT_EQ(tl.tokenizer.vocab(), ours.tokenizer.vocab());
  EXPECT_NE(tl.info["note"].get<std::string>().find("the one in the file's __metadata__"), std::string::npos);
  expect_same_logits(ours, tl, 1e-6f);
  // Without the hint a state dict reads as standard positions, and the note says why.
  const ModelFile plain = load(tl_parts(ours).bytes());
  EXPECT_EQ(plain.cfg.pos_embed, PosEmbed::Standard);
  EXPECT_NE(plain.info["note"].get<std::string>().find("needs positional_embedding_type"), std::string::npos);
}

TEST(TransformerLensFile, SmearedKeysAndZeroLayers) {
  const ModelFile smeared = load_model_file("models/char-1l-smeared.safetensors");
  TlOptions o;
  o.metadata = json{{"positional_embedding_type", "shortformer"}, {"normalization_type", "None"}};
  const ModelFile tl = load(tl_parts(smeared, o).bytes());
  EXPECT_TRUE(tl.cfg.smeared_keys);
  expect_same_logits(smeared, tl, 1e-6f);

  ModelFile none = load_model_file("models/char-0l.safetensors");
  // char-0l has no positions; TransformerLens always has W_pos: add zeros.
  Parts p = tl_parts(none);
  p.add_floats("pos_embed.W_pos", Enc::F32, {none.cfg.n_ctx, none.cfg.d_model},
               std::vector<float>(static_cast<std::size_t>(none.cfg.n_ctx * none.cfg.d_model)));
  const ModelFile zero = load(p.bytes());
  EXPECT_EQ(zero.cfg.n_layers, 0);
  expect_same_logits(none, zero, 1e-6f);
}

TEST(TransformerLensFile, TokenIdTokenizer) {
  const Tokenizer t = Tokenizer::build_ids(20);
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Ids);
  EXPECT_EQ(t.token_text(12), "#12");
  EXPECT_EQ(t.find("#12"), 12);
  EXPECT_EQ(t.find("12"), -1);
  EXPECT_EQ(t.find("#20"), -1);
  const std::vector<Token> toks = t.encode("12 7,#7  3", false);
  ASSERT_EQ(toks.size(), 4u);
  EXPECT_EQ(toks[0].id, 12);
  EXPECT_EQ(toks[2].id, 7);
  EXPECT_EQ(toks[2].begin, 5);
  EXPECT_EQ(toks[2].end, 7);
  EXPECT_EQ(t.decode({12, 7, 7, 3}), "12 7 7 3");
  EXPECT_EQ(t.encode_ids(t.decode({12, 7, 7, 3}), false), (std::vector<int>{12, 7, 7, 3}));
  const Tokenizer back = Tokenizer::from_json(t.to_json());
  EXPECT_EQ(back.kind(), Tokenizer::Kind::Ids);
  EXPECT_EQ(back.vocab(), t.vocab());
  auto message = [&](const std::string& text) -> std::string {
    try {
      t.encode(text, false);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(nothing thrown)";
  };
  EXPECT_NE(message("1 20").find("\"20\" at character 2 is not a token id: this model has no tokenizer, so type token "
                                 "ids from 0 to 19 separated by spaces"),
            std::string::npos);
  EXPECT_NE(message("1 x").find("\"x\" at character 2 is not a token id"), std::string::npos);
  EXPECT_NE(message("007").find("\"007\""), std::string::npos);
  EXPECT_THROW(t.encode("1", true), std::invalid_argument);  // no <BOS>
  EXPECT_THROW(Tokenizer::from_json(json{{"kind", "ids"}, {"vocab", {"#0", "#2"}}}), std::invalid_argument);
  EXPECT_THROW(Tokenizer::build_ids(0), std::invalid_argument);
}

// One damaged or unsupported TransformerLens file and the words its error message must contain.
struct TlCase {
  std::string name;
  std::function<void(Parts&)> edit;
  std::string expect;
};

Bytes floats(std::size_t n) { return Bytes(4 * n, 0); }

std::vector<TlCase> tl_cases() {
  return {
      {"wrong shapes between blocks", [](Parts& p) { p.header["blocks.1.attn.W_Q"]["shape"] = {2, 32, 8}; },
       "tensor blocks.1.attn.W_Q has shape [2,32,8], but embed.W_E, pos_embed.W_pos and blocks.0.attn.W_Q make it [1,32,16]"},
      {"missing W_O", [](Parts& p) { p.header.erase("blocks.1.attn.W_O"); }, "tensor blocks.1.attn.W_O is missing"},
      {"LayerNorm against its metadata", [](Parts& p) { p.add("ln_final.w", "F32", {32}, floats(32)); },
       "__metadata__ says normalization_type is \"None\", but the file holds LayerNorm weights"},
      {"part of a LayerNorm",
       [](Parts& p) {
         p.header["__metadata__"].erase("normalization_type");
         p.add("blocks.0.ln1.b", "F32", {32}, floats(32));
       },
       "tensor blocks.0.ln1.w is missing"},
      {"part of an MLP",
       [](Parts& p) {
         p.header["__metadata__"]["act_fn"] = "gelu";
         p.add("blocks.0.mlp.W_in", "F32", {32, 64}, floats(32 * 64));
       },
       "tensor blocks.0.mlp.W_out is missing"},
      {"a gated MLP", [](Parts& p) { p.add("blocks.1.mlp.W_gate", "F32", {32}, floats(32)); },
       "tensor blocks.1.mlp.W_gate means the model has a gated MLP (gated_mlp=True)"},
      {"rotary", [](Parts& p) { p.add("blocks.0.attn.rotary_sin", "F32", {5, 16}, floats(80)); },
       "means the model has rotary positions"},
      {"grouped-query attention", [](Parts& p) { p.add("blocks.0.attn._W_K", "F32", {1, 32, 16}, floats(512)); },
       "means the model has grouped-query attention"},
      {"mask of the wrong shape",
       [](Parts& p) { p.header["blocks.0.attn.mask"]["shape"] = {4, 4}; },
       "tensor blocks.0.attn.mask has shape [4,4], but pos_embed.W_pos gives n_ctx 5, so it must be [5,5]"},
      {"mask not causal",
       [](Parts& p) { p.data[p.header["blocks.1.attn.mask"]["data_offsets"][0].get<std::size_t>() + 5 * 4] = 0; },
       "tensor blocks.1.attn.mask is not the causal mask (True where key <= query): it is False at query 4, key 0"},
      {"mask not BOOL", [](Parts& p) { p.header["blocks.0.attn.mask"]["dtype"] = "U8"; },
       "tensor blocks.0.attn.mask has dtype U8; circuitscope reads it as BOOL"},
      {"IGNORE not a scalar", [](Parts& p) { p.header["blocks.0.attn.IGNORE"]["shape"] = {1}; },
       "tensor blocks.0.attn.IGNORE has shape [1], but TransformerLens's IGNORE is a scalar, shape []"},
      {"an unknown tensor", [](Parts& p) { p.add("blocks.0.attn.W_Z", "F32", {1}, floats(1)); },
       "tensor blocks.0.attn.W_Z is not part of a TransformerLens model of this architecture"},
      {"not a model at all", [](Parts& p) { p.header.erase("embed.W_E"); },
       "the header has neither circuitscope's __metadata__ (config and tokenizer) nor TransformerLens's tensor embed.W_E"},
      {"no W_pos", [](Parts& p) { p.header.erase("pos_embed.W_pos"); }, "there is no tensor pos_embed.W_pos;"},
      {"W_E of rank 3", [](Parts& p) { p.header["embed.W_E"]["shape"] = {8, 32, 1}; },
       "tensor embed.W_E has shape [8,32,1]; TransformerLens's embed.W_E is [d_vocab, d_model]"},
      {"d_vocab_out differs", [](Parts& p) { p.header["unembed.W_U"]["shape"] = {32, 9}; },
       "tensor unembed.W_U has shape [32,9], but embed.W_E"},
      {"too many heads", [](Parts& p) { p.header["blocks.0.attn.W_Q"]["shape"] = {65, 32, 16}; },
       "the architecture read from the tensor shapes is not one circuitscope runs: config: n_heads"},
      {"RMSNorm in metadata", [](Parts& p) { p.header["__metadata__"]["normalization_type"] = "RMS"; },
       "__metadata__ says normalization_type is \"RMS\""},
      {"no normalization hint", [](Parts& p) { p.header["__metadata__"].erase("normalization_type"); },
       "the file holds no LayerNorm weights, which is how a model without normalization looks, and also one whose "
       "LayerNorm TransformerLens folded"},
      {"LayerNorm promised but absent", [](Parts& p) { p.header["__metadata__"]["normalization_type"] = "LN"; },
       "__metadata__ says normalization_type is \"LN\", but the file holds no LayerNorm weights"},
      {"SoLU", [](Parts& p) { p.add("blocks.0.mlp.ln.w", "F32", {1}, floats(1)); },
       "tensor blocks.0.mlp.ln.w means the model has SoLU's LayerNorm inside the MLP"},
      {"rotary in metadata", [](Parts& p) { p.header["__metadata__"]["positional_embedding_type"] = "rotary"; },
       "__metadata__ says positional_embedding_type is \"rotary\""},
      {"tokenizer of the wrong size",
       [](Parts& p) { p.header["__metadata__"]["tokenizer"] = Tokenizer::build_ids(9).to_json().dump(); },
       "the tokenizer in __metadata__ has 9 tokens but embed.W_E has 8 rows"},
      {"smear_alpha in one layer only", [](Parts& p) { p.add("blocks.0.attn.smear_alpha", "F32", {1}, floats(1)); },
       "tensor blocks.1.attn.smear_alpha is missing"},
      {"F64 weights", [](Parts& p) { p.header["unembed.W_U"]["dtype"] = "F64"; },
       "tensor unembed.W_U has dtype F64; circuitscope reads F32, F16 and BF16"},
  };
}

TEST(TransformerLensFile, UnsupportedAndDamagedFilesGetTheirSentence) {
  const ModelFile ours = load_model_file("models/ioi-2l1h.safetensors");  // 1 head, d_model 32, d_head 16, n_ctx 5
  const Parts valid = tl_parts(ours);
  ASSERT_NO_THROW(load(valid.bytes()));
  std::set<std::string> names;
  for (const TlCase& c : tl_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(names.insert(c.name).second);
    Parts p = valid;
    c.edit(p);
    const Bytes b = p.bytes();
    try {
      load(b);
      ADD_FAILURE() << "loaded without an error";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("model file: ", 0), 0u) << msg;
      EXPECT_NE(msg.find(c.expect), std::string::npos) << "wanted \"" << c.expect << "\" in: " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

// --- The TransformerLens family: LayerNorm, MLPs and the processing from_pretrained applies ---

// A random model of the family (biases on, LayerNorm weights around 1) as a ModelFile.
ModelFile family_model(Norm norm, int d_mlp, PosEmbed pos, std::uint64_t seed) {
  ModelFile m;
  m.cfg = testing::tiny_norm_mlp_config(2, pos, norm, d_mlp, Act::GELU);
  m.cfg.d_model = 16, m.cfg.d_head = 4, m.cfg.n_heads = 3, m.cfg.n_ctx = 12, m.cfg.d_vocab = 11, m.cfg.init_std = 0.4f;
  m.params = testing::random_params<float>(m.cfg, seed);
  m.tokenizer = Tokenizer::build_ids(m.cfg.d_vocab);
  return m;
}

// log softmax of every position's logits.
std::vector<double> log_probs(const ModelFile& m, const std::vector<int>& ids) {
  const std::vector<float> lg = logits(m, ids);
  const int V = m.cfg.d_vocab;
  std::vector<double> out(lg.size());
  for (std::size_t r = 0; r * V < lg.size(); ++r) {
    double mx = -1e300, sum = 0;
    for (int v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(lg[r * V + v]));
    for (int v = 0; v < V; ++v) sum += std::exp(lg[r * V + v] - mx);
    for (int v = 0; v < V; ++v) out[r * V + v] = lg[r * V + v] - mx - std::log(sum);
  }
  return out;
}

void expect_same_log_probs(const ModelFile& a, const ModelFile& b, double tol) {
  const std::vector<int> ids = some_ids(a.cfg);
  const std::vector<double> la = log_probs(a, ids), lb = log_probs(b, ids);
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) ASSERT_NEAR(la[i], lb[i], tol) << "log-probability " << i;
}

TEST(TransformerLensFamily, LayerNormAndMlpFilesLoadAsWritten) {
  const ModelFile ours = family_model(Norm::LN, 24, PosEmbed::Standard, 1);
  TlOptions o;
  o.metadata = json{{"act_fn", "gelu"}};  // the LayerNorm shows itself; the activation cannot
  const ModelFile tl = load(tl_parts(ours, o).bytes());
  EXPECT_EQ(tl.cfg, ours.cfg);
  EXPECT_EQ(tl.cfg.normalization, Norm::LN);
  EXPECT_EQ(tl.cfg.d_mlp, 24);
  EXPECT_EQ(tl.cfg.act_fn, Act::GELU);
  EXPECT_NE(tl.info["note"].get<std::string>().find("LayerNorm; MLPs of 24 (gelu)"), std::string::npos) << tl.info["note"];
  EXPECT_NE(tl.info["note"].get<std::string>().find("No TransformerLens processing was applied"), std::string::npos);
  expect_same_logits(ours, tl, 0.0f);
}

TEST(TransformerLensFamily, DefaultProcessingFoldsAndCentresWithoutChangingPredictions) {
  const ModelFile ours = family_model(Norm::LN, 24, PosEmbed::Standard, 2);
  TlOptions o;
  o.metadata = json{{"act_fn", "gelu"}};
  const ModelFile tl = load_processed(tl_parts(ours, o).bytes());
  EXPECT_EQ(tl.cfg.normalization, Norm::LNPre);
  EXPECT_EQ(tl.info["processing"]["applied"],
            json::array({"fold_ln", "center_writing_weights", "center_unembed", "fold_value_biases"}));
  EXPECT_NE(tl.info["note"].get<std::string>().find("TransformerLens's processing was applied: fold_ln, "
                                                    "center_writing_weights, center_unembed, fold_value_biases"),
            std::string::npos);
  for (const auto& [name, t] : named_params(tl.params)) EXPECT_EQ(name.find(".ln"), std::string::npos) << name;
  EXPECT_TRUE(tl.params.blocks[1].b_V.vec().isZero());
  EXPECT_NEAR(tl.params.W_E.mat().row(3).mean(), 0.0f, 1e-6f);
  EXPECT_NEAR(tl.params.W_U.mat().row(5).mean(), 0.0f, 1e-6f);
  EXPECT_NEAR(tl.params.blocks[0].W_in.mat().col(7).mean(), 0.0f, 1e-6f);  // reading weights centred by fold_ln
  expect_same_log_probs(ours, tl, 2e-5);
  // The processed model written back as a TransformerLens file (LNPre: no LayerNorm tensors, so
  // the file says which) reads as the same model.
  TlOptions back;
  back.metadata = json{{"act_fn", "gelu"}, {"normalization_type", "LNPre"}};
  const ModelFile again = load(tl_parts(tl, back).bytes());
  EXPECT_EQ(again.cfg, tl.cfg);
  expect_same_logits(tl, again, 0.0f);
  // Processing it a second time changes nothing that matters.
  expect_same_log_probs(ours, load_processed(tl_parts(tl, back).bytes()), 2e-5);
}

TEST(TransformerLensFamily, ShortformerModelsAreNotFoldedOrCentred) {
  const ModelFile ours = family_model(Norm::LN, 0, PosEmbed::Shortformer, 3);
  TlOptions o;
  o.metadata = json{{"positional_embedding_type", "shortformer"}};
  const ModelFile tl = load_processed(tl_parts(ours, o).bytes());
  EXPECT_EQ(tl.cfg.normalization, Norm::LN);
  EXPECT_EQ(tl.info["processing"]["applied"], json::array({"fold_value_biases"}));
  EXPECT_EQ(tl.info["processing"]["skipped"][0], "fold_ln: TransformerLens does not apply it to shortformer models");
  expect_same_log_probs(ours, tl, 2e-5);
}

// TransformerLens 3.5 and later saves attn.mask as an empty [0, 0] buffer (it builds the mask on
// the fly): such files load as the older ones do.
TEST(TransformerLensFile, EmptyMaskBuffersOfNewerTransformerLens) {
  const ModelFile ours = load_model_file("models/ioi-2l1h.safetensors");
  TlOptions o;
  o.buffers = false;
  Parts p = tl_parts(ours, o);
  for (int l = 0; l < ours.cfg.n_layers; ++l) p.add("blocks." + std::to_string(l) + ".attn.mask", "BOOL", {0, 0}, {});
  expect_same_logits(ours, load(p.bytes()), 1e-6f);
}

// A file given in pieces (as the page reads a File's stream): `cuts` piece sizes, used in turn.
ModelFile read_in_pieces(const Bytes& b, const std::vector<std::size_t>& cuts, const LoadOptions& o) {
  ModelReader r(b.size(), o);
  std::size_t at = 0;
  for (std::size_t i = 0; at < b.size(); ++i) {
    const std::size_t n = std::min(cuts[i % cuts.size()], b.size() - at);
    r.write(b.data() + at, n);
    at += n;
  }
  return r.finish();
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no refusal)";
}

TEST(ModelReader, PiecesOfAnySizeGiveTheSameModelAndTheSameRefusals) {
  const ModelFile ours = load_model_file("models/ioi-2l1h.safetensors");
  LoadOptions raw;
  raw.processing = Processing::none();
  Rng rng(7);
  std::vector<std::size_t> random_cuts;
  for (int i = 0; i < 64; ++i) random_cuts.push_back(1 + static_cast<std::size_t>(rng.below(3000)));
  const std::vector<std::vector<std::size_t>> cut_sets = {{1}, {3}, {5, 2, 7}, random_cuts, {1u << 20}};
  std::vector<std::pair<std::string, Bytes>> files = {{"circuitscope F32", save_model_bytes(ours, Dtype::F32)},
                                                      {"circuitscope F16", save_model_bytes(ours, Dtype::F16)}};
  for (Enc e : {Enc::F32, Enc::F16, Enc::BF16}) {
    TlOptions o;
    o.enc = e;
    files.emplace_back(std::string("TransformerLens ") + enc_name(e), tl_parts(ours, o).bytes());
  }
  for (const auto& [what, bytes] : files) {
    const ModelFile whole = load_model_bytes(bytes.data(), bytes.size(), raw);
    for (const auto& cuts : cut_sets) {
      SCOPED_TRACE(what + ", first piece " + std::to_string(cuts[0]) + " bytes");
      const ModelFile pieces = read_in_pieces(bytes, cuts, raw);
      EXPECT_EQ(pieces.cfg, whole.cfg);
      EXPECT_EQ(pieces.info, whole.info);
      const auto a = named_params(whole.params), b = named_params(pieces.params);
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t t = 0; t < a.size(); ++t) {
        ASSERT_EQ(a[t].first, b[t].first);
        ASSERT_EQ(0, std::memcmp(a[t].second->data.data(), b[t].second->data.data(), a[t].second->data.size() * 4)) << a[t].first;
      }
    }
  }

  // Damage inside the data section is refused with the same sentence however the bytes come.
  const Bytes tl = tl_parts(ours).bytes();
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | tl[i];
  const json header = json::parse(tl.begin() + 8, tl.begin() + 8 + static_cast<long>(header_len));
  const auto section_at = [&](const std::string& name, std::size_t byte) {
    return 8 + static_cast<std::size_t>(header_len) + header[name]["data_offsets"][0].get<std::size_t>() + byte;
  };
  Bytes nan = tl;
  const float q = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&nan[section_at("blocks.1.attn.W_V", 4 * 5)], &q, 4);
  Bytes mask = tl;
  mask[section_at("blocks.0.attn.mask", 3)] = 1;  // key 3 visible from query 0
  for (const Bytes* bad : {&nan, &mask}) {
    const std::string want = refusal([&] { load_model_bytes(bad->data(), bad->size(), raw); });
    EXPECT_NE(want, "(no refusal)");
    for (const auto& cuts : cut_sets) EXPECT_EQ(refusal([&] { read_in_pieces(*bad, cuts, raw); }), want);
  }
  EXPECT_NE(refusal([&] { load_model_bytes(nan.data(), nan.size(), raw); }).find("blocks.1.attn.W_V has a non-finite value (NaN) at index 5"), std::string::npos);

  // A file cut short, or longer than it said, is refused; a refused reader takes nothing more.
  {
    ModelReader r(tl.size(), raw);
    r.write(tl.data(), tl.size() - 5);
    EXPECT_EQ(refusal([&] { r.finish(); }),
              "model file: only " + std::to_string(tl.size() - 5) + " of the file's " + std::to_string(tl.size()) +
                  " bytes were read (was the file cut short while it was read?)");
  }
  {
    ModelReader r(tl.size() - 1, raw);
    EXPECT_NE(refusal([&] { r.write(tl.data(), tl.size()); }).find("more than the file's"), std::string::npos);
    EXPECT_NE(refusal([&] { r.write(tl.data(), 1); }).find("an earlier part of the file was refused"), std::string::npos);
  }
  // A tokenizer.json that cannot be this model's is refused as soon as the header is in, before
  // any weight is read.
  {
    LoadOptions with_tok = raw;
    with_tok.tokenizer_json = "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\": 0}}}";
    ModelReader r(tl.size(), with_tok);
    const std::size_t head = 8 + static_cast<std::size_t>(header_len);
    r.write(tl.data(), head - 1);
    EXPECT_EQ(refusal([&] { r.write(tl.data() + head - 1, 1); }).rfind("tokenizer.json", 0), 0u);
  }
}

TEST(TransformerLensFamily, WhatTheTensorsCannotShowMustBeSaid) {
  const ModelFile mlp = family_model(Norm::LN, 24, PosEmbed::Standard, 4);
  const auto refusal = [](const Bytes& b) {
    try {
      load(b);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  TlOptions none;
  none.metadata = nullptr;
  std::string msg = refusal(tl_parts(mlp, none).bytes());
  EXPECT_NE(msg.find("does not say their activation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("metadata={\"normalization_type\": str(model.cfg.normalization_type)"), std::string::npos) << msg;
  TlOptions lying;
  lying.metadata = json{{"act_fn", "gelu"}, {"normalization_type", "LNPre"}};
  msg = refusal(tl_parts(mlp, lying).bytes());
  EXPECT_NE(msg.find("but the file holds LayerNorm weights (ln1.w, ln_final.w), which only \"LN\" has"), std::string::npos)
      << msg;
  TlOptions solu;
  solu.metadata = json{{"act_fn", "solu_ln"}};
  msg = refusal(tl_parts(mlp, solu).bytes());
  EXPECT_NE(msg.find("act_fn is \"solu_ln\""), std::string::npos) << msg;
  // An attention-only file without any hint: LNPre and no normalization look the same.
  TlOptions bare;
  bare.metadata = nullptr;
  msg = refusal(tl_parts(load_model_file("models/ioi-2l1h.safetensors"), bare).bytes());
  EXPECT_NE(msg.find("circuitscope will not guess which: save it with: safetensors.torch.save_file("), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace cs
