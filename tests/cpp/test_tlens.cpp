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
  json metadata = json{{"format", "pt"}};  // what safetensors.torch.save_model writes; null for none
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

ModelFile load(const Bytes& b) { return load_model_bytes(b.data(), b.size()); }

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

TEST(TransformerLensFile, NoMetadataNoBiasesNoBuffers) {
  const ModelFile ours = load_model_file("models/ioi-1l2h.safetensors");
  TlOptions o;
  o.metadata = nullptr;
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
  p.header["__metadata__"] = {{"format", "pt"}};
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
  o.metadata = json{{"positional_embedding_type", "shortformer"}};
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
      {"LayerNorm", [](Parts& p) { p.add("ln_final.w", "F32", {32}, floats(32)); },
       "tensor ln_final.w means the model has LayerNorm (normalization_type \"LN\" or \"RMS\"), which circuitscope "
       "does not run; circuitscope reads attention-only TransformerLens models without normalization"},
      {"block LayerNorm", [](Parts& p) { p.add("blocks.0.ln1.b", "F32", {32}, floats(32)); },
       "tensor blocks.0.ln1.b means the model has LayerNorm"},
      {"MLP", [](Parts& p) { p.add("blocks.1.mlp.b_out", "F32", {32}, floats(32)); },
       "tensor blocks.1.mlp.b_out means the model has MLP layers (attn_only=False)"},
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
       "tensor blocks.0.attn.W_Z is not part of a TransformerLens attention-only model"},
      {"not a model at all", [](Parts& p) { p.header.erase("embed.W_E"); },
       "the header has neither circuitscope's __metadata__ (config and tokenizer) nor TransformerLens's tensor embed.W_E"},
      {"no W_pos", [](Parts& p) { p.header.erase("pos_embed.W_pos"); }, "there is no tensor pos_embed.W_pos;"},
      {"W_E of rank 3", [](Parts& p) { p.header["embed.W_E"]["shape"] = {8, 32, 1}; },
       "tensor embed.W_E has shape [8,32,1]; TransformerLens's embed.W_E is [d_vocab, d_model]"},
      {"d_vocab_out differs", [](Parts& p) { p.header["unembed.W_U"]["shape"] = {32, 9}; },
       "tensor unembed.W_U has shape [32,9], but embed.W_E"},
      {"too many heads", [](Parts& p) { p.header["blocks.0.attn.W_Q"]["shape"] = {65, 32, 16}; },
       "the architecture read from the tensor shapes is not one circuitscope runs: config: n_heads"},
      {"folded LayerNorm", [](Parts& p) { p.header["__metadata__"]["normalization_type"] = "LNPre"; },
       "__metadata__ says normalization_type is \"LNPre\""},
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

}  // namespace
}  // namespace cs
