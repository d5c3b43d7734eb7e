// Tests for model files: save/load round trips and a table of corrupt files the loader must explain.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "checks.h"
#include "model.h"
#include "io.h"
#include "rng.h"

namespace cs {
namespace {

using nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

// A small model that has every tensor kind: pos embed, biases and smeared keys.
ModelFile small_model(std::uint64_t seed = 7) {
  ModelFile m;
  m.tokenizer = Tokenizer::build_char("abcdef");  // <BOS> <UNK> a..f: 8 tokens
  m.cfg.n_layers = 2;
  m.cfg.n_heads = 2;
  m.cfg.d_model = 8;
  m.cfg.d_head = 4;
  m.cfg.n_ctx = 8;
  m.cfg.d_vocab = m.tokenizer.size();
  m.cfg.pos_embed = PosEmbed::Standard;
  m.cfg.use_bias = true;
  m.cfg.smeared_keys = true;
  m.params = init_params<float>(m.cfg, seed);
  // Biases and smear_alpha start at zero; give them values so the round trip checks them too.
  Rng rng(seed + 1);
  for (auto& [name, t] : named_params(m.params))
    if (name.find(".b_") != std::string::npos || name.find("smear_alpha") != std::string::npos)
      for (float& x : t->data) x = static_cast<float>(rng.normal());
  m.info = json{{"recipe", "unit-test"}, {"step", 123}, {"losses", {4.5, 3.25}}};
  return m;
}

// A valid file split into its parsed header and its data section, and put back together.
struct Parts {
  json header;
  Bytes data;
};

Parts split_file(const Bytes& b) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
  Parts p;
  p.header = json::parse(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  p.data.assign(b.begin() + 8 + static_cast<std::ptrdiff_t>(n), b.end());
  return p;
}

Bytes raw_file(const std::string& header_text, const Bytes& data) {
  std::string h = header_text;
  while (h.size() % 8) h += ' ';
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(h.size()) >> (8 * i)));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes join_file(const Parts& p) { return raw_file(p.header.dump(), p.data); }

// Edits one JSON string stored in __metadata__ (config or tokenizer).
void edit_meta(Parts& p, const char* key, const std::function<void(json&)>& fn) {
  json j = json::parse(p.header["__metadata__"][key].get<std::string>());
  fn(j);
  p.header["__metadata__"][key] = j.dump();
}

std::uint64_t begin_of(const Parts& p, const std::string& name) { return p.header[name]["data_offsets"][0]; }
std::uint64_t end_of(const Parts& p, const std::string& name) { return p.header[name]["data_offsets"][1]; }

void expect_same_model(const ModelFile& a, const ModelFile& b) {
  EXPECT_EQ(a.cfg, b.cfg);
  EXPECT_EQ(a.cfg.effective_init_std(), b.cfg.effective_init_std());
  EXPECT_EQ(a.tokenizer.kind(), b.tokenizer.kind());
  EXPECT_EQ(a.tokenizer.vocab(), b.tokenizer.vocab());
  EXPECT_EQ(a.info, b.info);
  const auto pa = named_params(a.params);
  const auto pb = named_params(b.params);
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_EQ(pa[i].second->shape, pb[i].second->shape) << pa[i].first;
    ASSERT_EQ(pa[i].second->data.size(), pb[i].second->data.size()) << pa[i].first;
    EXPECT_EQ(std::memcmp(pa[i].second->data.data(), pb[i].second->data.data(), pa[i].second->data.size() * 4), 0)
        << pa[i].first << " differs bit for bit";
  }
}

TEST(ModelFile, F32RoundTripIsBitIdentical) {
  const ModelFile m = small_model();
  const Bytes bytes = save_model_bytes(m, Dtype::F32);
  const ModelFile back = load_model_bytes(bytes.data(), bytes.size());
  expect_same_model(m, back);
  // Saving again gives the same bytes.
  EXPECT_EQ(save_model_bytes(back, Dtype::F32), bytes);
}

TEST(ModelFile, LayoutFollowsTheSafetensorsConventions) {
  const ModelFile m = small_model();
  const Bytes bytes = save_model_bytes(m);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  const Parts p = split_file(bytes);
  const json& meta = p.header["__metadata__"];
  EXPECT_EQ(meta["format"], "circuitscope");
  EXPECT_EQ(meta["format_version"], "1");
  for (const char* k : {"config", "tokenizer", "info"}) EXPECT_TRUE(meta[k].is_string()) << k;
  EXPECT_EQ(config_from_json(json::parse(meta["config"].get<std::string>())), m.cfg);
  // Tensors are laid out back to back in for_each_param order.
  std::uint64_t offset = 0;
  for (const auto& [name, t] : named_params(m.params)) {
    const json& e = p.header[name];
    EXPECT_EQ(e["dtype"], "F32") << name;
    EXPECT_EQ(e["shape"].get<Shape>(), t->shape) << name;
    EXPECT_EQ(e["data_offsets"][0].get<std::uint64_t>(), offset) << name;
    offset += t->size() * 4;
    EXPECT_EQ(e["data_offsets"][1].get<std::uint64_t>(), offset) << name;
  }
  EXPECT_EQ(offset, p.data.size());
  EXPECT_EQ(p.header.size(), named_params(m.params).size() + 1);
}

TEST(ModelFile, F16RoundTripWithinHalfPrecision) {
  const ModelFile m = small_model();
  const Bytes b16 = save_model_bytes(m, Dtype::F16);
  const Bytes b32 = save_model_bytes(m, Dtype::F32);
  EXPECT_EQ(split_file(b16).data.size() * 2, split_file(b32).data.size());
  EXPECT_EQ(split_file(b16).header["embed.W_E"]["dtype"], "F16");
  const ModelFile back = load_model_bytes(b16.data(), b16.size());
  EXPECT_EQ(back.cfg, m.cfg);
  EXPECT_EQ(back.tokenizer.vocab(), m.tokenizer.vocab());
  EXPECT_EQ(back.info, m.info);
  const auto pa = named_params(m.params);
  const auto pb = named_params(back.params);
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].second->data.size(), pb[i].second->data.size());
    for (std::size_t k = 0; k < pa[i].second->data.size(); ++k) {
      const float x = pa[i].second->data[k], y = pb[i].second->data[k];
      // Round to nearest: half a unit in the last place (2^-11 relative), 2^-25 for subnormals.
      EXPECT_LE(std::fabs(x - y), std::max(std::fabs(x) * 0x1p-11f, 0x1p-25f)) << pa[i].first << "[" << k << "]";
    }
  }
  // F16 values survive a second F16 round trip exactly.
  const Bytes again = save_model_bytes(back, Dtype::F16);
  EXPECT_EQ(again, b16);
}

TEST(ModelFile, FileRoundTripAndPathInErrors) {
  const ModelFile m = small_model();
  const std::string path = ::testing::TempDir() + "circuitscope_test_io_model.safetensors";
  save_model_file(path, m);
  expect_same_model(m, load_model_file(path));
  save_model_file(path, m, Dtype::F16);  // overwrites the old file
  EXPECT_EQ(load_model_file(path).cfg, m.cfg);
  // Corrupt it on disk: the message carries the path instead of "model file: ".
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "abc";
  }
  try {
    load_model_file(path);
    FAIL() << "a 3-byte file loaded";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("model file " + path + ": the file is only 3 bytes long", 0), 0u) << msg;
  }
  std::remove(path.c_str());
  try {
    load_model_file(path + ".does-not-exist");
    FAIL() << "a missing file loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model file " + path + ".does-not-exist: cannot open it"), std::string::npos)
        << e.what();
  }
}

TEST(ModelFile, LoaderAcceptsForeignButValidHeaders) {
  // Other safetensors writers order keys differently and may add their own metadata; that is fine.
  Parts p = split_file(save_model_bytes(small_model()));
  p.header["__metadata__"]["written_by"] = "someone else";
  p.header["__metadata__"].erase("info");  // info is optional
  const Bytes b = join_file(p);            // json sorts keys: a different order than we write
  const ModelFile back = load_model_bytes(b.data(), b.size());
  EXPECT_EQ(back.info, json::object());
  EXPECT_EQ(back.cfg, small_model().cfg);
}

TEST(ModelFile, SaveRefusesWhatTheLoaderWouldReject) {
  auto save_error = [](const ModelFile& m, Dtype d) -> std::string {
    try {
      save_model_bytes(m, d);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(nothing thrown)";
  };
  ModelFile nan = small_model();
  nan.params.blocks[1].W_V.data[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(save_error(nan, Dtype::F32).find("cannot save: tensor blocks.1.attn.W_V has a non-finite value (NaN) at index 3"),
            std::string::npos);
  ModelFile big = small_model();
  big.params.W_U.data[0] = 1e6f;  // past kMaxAbsWeight, which also keeps F16 files inside F16's range
  EXPECT_NE(save_error(big, Dtype::F16).find("cannot save: tensor unembed.W_U has the value 1000000 at index 0, beyond the +-10000"),
            std::string::npos);
  EXPECT_NE(save_error(big, Dtype::F32).find("beyond the +-10000 a model file may hold"), std::string::npos);
  big.params.W_U.data[0] = 1e4f;
  EXPECT_NO_THROW(save_model_bytes(big, Dtype::F32));
  ModelFile vocab = small_model();
  vocab.tokenizer = Tokenizer::build_char("abc");
  EXPECT_NE(save_error(vocab, Dtype::F32).find("the tokenizer has 5 tokens but config d_vocab is 8"), std::string::npos);
  ModelFile shape = small_model();
  shape.params.blocks[0].W_O.resize({2, 8, 4});
  EXPECT_NE(save_error(shape, Dtype::F32).find("tensor blocks.0.attn.W_O has shape [2,8,4], config says [2,4,8]"),
            std::string::npos);
}

// One corrupt file and the words its error message must contain.
struct CorruptCase {
  std::string name;
  std::function<Bytes(const Bytes& valid)> make;
  std::vector<std::string> expect;  // expect[0] is unique to this case
};

std::vector<CorruptCase> corrupt_cases() {
  auto edit = [](std::function<void(Parts&)> fn) {
    return [fn](const Bytes& valid) {
      Parts p = split_file(valid);
      fn(p);
      return join_file(p);
    };
  };
  return {
      {"truncated to 5 bytes", [](const Bytes& v) { return Bytes(v.begin(), v.begin() + 5); },
       {"the file is only 5 bytes long"}},
      {"truncated inside the header",
       [](const Bytes& v) { return Bytes(v.begin(), v.begin() + 100); },
       {"is larger than the file (100 bytes): the file is truncated or not a safetensors file"}},
      {"truncated inside the data",
       [](const Bytes& v) { return Bytes(v.begin(), v.end() - 10); },
       {"tensor unembed.b_U ends at byte", "(truncated file?)"}},
      {"header length too large",
       [](const Bytes& v) {
         Bytes b = v;
         for (int i = 0; i < 8; ++i) b[i] = 0xFF;
         return b;
       },
       {"header length 18446744073709551615 is larger than the file"}},
      {"garbage JSON header", [](const Bytes&) { return raw_file("{\"__metadata__\": {nope", Bytes{}); },
       {"the header is not valid JSON (line 1, column"}},
      {"header is not an object", [](const Bytes&) { return raw_file("[1, 2, 3]", Bytes{}); },
       {"the header is an array in JSON, not an object"}},
      {"deeply nested header", [](const Bytes&) { return raw_file(std::string(5000, '[') + std::string(5000, ']'), {}); },
       {"nests JSON more than 64 levels deep"}},
      // Without our metadata a file is read as a TransformerLens state dict (tests/cpp/test_tlens.cpp).
      {"no __metadata__ and not TransformerLens's names",
       edit([](Parts& p) { p.header.erase("__metadata__"); p.header["embed.W_X"] = p.header["embed.W_E"]; p.header.erase("embed.W_E"); }),
       {"the header has neither circuitscope's __metadata__ (config and tokenizer) nor TransformerLens's tensor embed.W_E"}},
      {"foreign format", edit([](Parts& p) { p.header["__metadata__"]["format"] = "pt"; }),
       {"format is \"pt\", not \"circuitscope\""}},
      {"newer format version", edit([](Parts& p) { p.header["__metadata__"]["format_version"] = "2"; }),
       {"format_version \"2\" is not supported"}},
      {"metadata value not a string", edit([](Parts& p) { p.header["__metadata__"]["config"] = json::object(); }),
       {"__metadata__ \"config\" is an object; metadata values must be strings"}},
      {"config not JSON", edit([](Parts& p) { p.header["__metadata__"]["config"] = "{n_layers: 2"; }),
       {"the config in __metadata__ is not valid JSON"}},
      {"invalid config", edit([](Parts& p) { edit_meta(p, "config", [](json& c) { c["n_heads"] = 0; }); }),
       {"the stored config is invalid: config: n_heads must be a whole number between 1 and 64, got 0"}},
      {"invalid tokenizer", edit([](Parts& p) { edit_meta(p, "tokenizer", [](json& t) { t["kind"] = "bytes"; }); }),
       {"the stored tokenizer is invalid: tokenizer: kind must be"}},
      {"tokenizer size mismatch",
       edit([](Parts& p) { edit_meta(p, "tokenizer", [](json& t) { t["vocab"].push_back("z"); }); }),
       {"the tokenizer has 9 tokens but the config says d_vocab is 8"}},
      {"config asks for far more than the file holds",
       edit([](Parts& p) { edit_meta(p, "config", [](json& c) { c["d_model"] = 4096; c["n_layers"] = 64; }); }),
       {"the config calls for", "the file is truncated or its config does not match its tensors"}},
      {"wrong dtype", edit([](Parts& p) { p.header["blocks.0.attn.W_K"]["dtype"] = "I64"; }),
       {"tensor blocks.0.attn.W_K has dtype I64; circuitscope reads F32, F16 and BF16"}},
      {"negative shape", edit([](Parts& p) { p.header["embed.W_E"]["shape"] = {8, -8}; }),
       {"tensor embed.W_E has shape [8,-8], which is not a list of non-negative integers"}},
      {"shape mismatch", edit([](Parts& p) { p.header["blocks.1.attn.W_Q"]["shape"] = {4, 8, 4}; }),
       {"tensor blocks.1.attn.W_Q has shape [4,8,4], config says [2,8,4]"}},
      {"malformed data_offsets", edit([](Parts& p) { p.header["unembed.W_U"]["data_offsets"] = {5}; }),
       {"tensor unembed.W_U has data_offsets [5]; they must be [begin, end]"}},
      {"data_offsets backwards",
       edit([](Parts& p) { p.header["pos_embed.W_pos"]["data_offsets"] = {end_of(p, "pos_embed.W_pos"), 0}; }),
       {"tensor pos_embed.W_pos has data_offsets ["}},
      {"offsets out of range",
       edit([](Parts& p) {
         const std::uint64_t len = end_of(p, "unembed.W_U") - begin_of(p, "unembed.W_U");
         p.header["unembed.W_U"]["data_offsets"] = {1000000, 1000000 + len};
       }),
       {"tensor unembed.W_U ends at byte 1000256 but the data section has only"}},
      {"byte length does not match shape",
       edit([](Parts& p) { p.header["embed.W_E"]["data_offsets"][1] = end_of(p, "embed.W_E") - 4; }),
       {"tensor embed.W_E has 252 bytes of data but shape [8,8] in F32 needs 256"}},
      {"overlapping tensors",
       edit([](Parts& p) { p.header["blocks.0.attn.W_K"]["data_offsets"] = p.header["blocks.0.attn.W_Q"]["data_offsets"]; }),
       {"overlap in the data section", "blocks.0.attn.W_Q", "blocks.0.attn.W_K"}},
      {"missing tensor", edit([](Parts& p) { p.header.erase("unembed.W_U"); }), {"tensor unembed.W_U is missing"}},
      {"unknown tensor",
       edit([](Parts& p) { p.header["foo"] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}; }),
       {"tensor foo is not part of this architecture"}},
      {"tensor entry not an object", edit([](Parts& p) { p.header["unembed.b_U"] = "F32"; }),
       {"the entry for tensor unembed.b_U is a string"}},
      {"hole in the data",
       edit([](Parts& p) {
         // Insert 4 stray bytes after embed.W_E and move every later tensor along.
         const std::uint64_t at = end_of(p, "embed.W_E");
         p.data.insert(p.data.begin() + static_cast<std::ptrdiff_t>(at), 4, 0);
         for (auto& [name, e] : p.header.items())
           if (name != "__metadata__" && e["data_offsets"][0].get<std::uint64_t>() >= at)
             e["data_offsets"] = {e["data_offsets"][0].get<std::uint64_t>() + 4,
                                  e["data_offsets"][1].get<std::uint64_t>() + 4};
       }),
       {"bytes 256 to 260 of the data section belong to no tensor (a hole)"}},
      {"trailing bytes", edit([](Parts& p) { p.data.resize(p.data.size() + 12, 0); }),
       {"the data section has 12 trailing bytes after the last tensor"}},
      {"NaN weight",
       edit([](Parts& p) {
         const std::uint32_t nan_bits = 0x7FC00000u;
         const std::uint64_t at = begin_of(p, "blocks.1.attn.W_O") + 4 * 5;
         for (int i = 0; i < 4; ++i) p.data[at + i] = static_cast<std::uint8_t>(nan_bits >> (8 * i));
       }),
       {"tensor blocks.1.attn.W_O has a non-finite value (NaN) at index 5"}},
      {"Inf weight",
       edit([](Parts& p) {
         const std::uint32_t inf_bits = 0xFF800000u;  // -Inf
         const std::uint64_t at = begin_of(p, "pos_embed.W_pos");
         for (int i = 0; i < 4; ++i) p.data[at + i] = static_cast<std::uint8_t>(inf_bits >> (8 * i));
       }),
       {"tensor pos_embed.W_pos has a non-finite value (Inf) at index 0"}},
      {"huge finite weight",
       edit([](Parts& p) {
         const float big = 3e38f;
         std::uint32_t bits;
         std::memcpy(&bits, &big, 4);
         const std::uint64_t at = begin_of(p, "embed.W_E") + 4 * 2;
         for (int i = 0; i < 4; ++i) p.data[at + i] = static_cast<std::uint8_t>(bits >> (8 * i));
       }),
       {"tensor embed.W_E has the value 3e+38 at index 2; circuitscope refuses weights beyond +-10000"}},
      {"config integer past 2^32",
       edit([](Parts& p) { edit_meta(p, "config", [](json& c) { c["n_layers"] = 4294967298ull; }); }),
       {"config: n_layers must be a whole number between 0 and 64, got 4294967298"}},
      {"config integer with a fraction",
       edit([](Parts& p) { edit_meta(p, "config", [](json& c) { c["n_heads"] = 2.5; }); }),
       {"config: n_heads must be a whole number between 1 and 64, got 2.5"}},
      {"config integer as a string",
       edit([](Parts& p) { edit_meta(p, "config", [](json& c) { c["d_model"] = "8"; }); }),
       {"config: d_model must be a whole number between 1 and 4096, got a string (\"8\")"}},
      {"config number too large for a double",
       edit([](Parts& p) {
         std::string t = p.header["__metadata__"]["config"].get<std::string>();
         t.replace(t.find("\"n_ctx\":") + 8, 1, "1e400");
         p.header["__metadata__"]["config"] = t;
       }),
       {"the config in __metadata__ has a number too large to represent (1e400)"}},
      {"legal but enormous config",
       edit([](Parts& p) { edit_meta(p, "config", [](json& c) { c["n_layers"] = 64; c["n_heads"] = 64; }); }),
       {"64 layers of 64 heads make 4096 heads; circuitscope handles at most 256"}},
      {"header length 2^63",
       [](const Bytes& v) {
         Bytes b = v;
         for (int i = 0; i < 8; ++i) b[i] = i == 7 ? 0x80 : 0;
         return b;
       },
       {"header length 9223372036854775808 is larger than the file"}},
  };
}

TEST(ModelFile, CorruptFilesGiveSpecificMessages) {
  const Bytes valid = save_model_bytes(small_model());
  ASSERT_NO_THROW(load_model_bytes(valid.data(), valid.size()));
  const std::vector<CorruptCase> cases = corrupt_cases();
  std::set<std::string> firsts;
  for (const CorruptCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.expect.empty());
    EXPECT_TRUE(firsts.insert(c.expect[0]).second) << "two cases expect the same words: " << c.expect[0];
    const Bytes bad = c.make(valid);
    try {
      load_model_bytes(bad.data(), bad.size());
      ADD_FAILURE() << "the corrupt file loaded without an error";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("model file: ", 0), 0u) << msg;
      for (const std::string& want : c.expect)
        EXPECT_NE(msg.find(want), std::string::npos) << "wanted \"" << want << "\" in: " << msg;
      // Only the case's own words: no other case's first expectation matches by accident.
      for (const CorruptCase& other : cases) {
        if (&other != &c && other.expect[0] != c.expect[0]) {
          EXPECT_EQ(msg.find(other.expect[0]), std::string::npos) << "also matches case \"" << other.name << "\"";
        }
      }
      if (std::getenv("CS_SHOW_MESSAGES")) std::printf("  %-45s %s\n", c.name.c_str(), msg.c_str());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw a non-runtime_error: " << e.what();
    }
  }
}

TEST(ModelFile, F16InfIsRejected) {
  Parts p = split_file(save_model_bytes(small_model(), Dtype::F16));
  const std::uint64_t at = begin_of(p, "embed.W_E") + 2 * 3;
  p.data[at] = 0x00;
  p.data[at + 1] = 0x7C;  // +Inf in F16
  const Bytes b = join_file(p);
  try {
    load_model_bytes(b.data(), b.size());
    FAIL() << "loaded an Inf";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor embed.W_E has a non-finite value (Inf) at index 3"),
              std::string::npos)
        << e.what();
  }
}

// The load error of b ("" when it loads).
std::string load_error(const Bytes& b) {
  try {
    load_model_bytes(b.data(), b.size());
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

// A header's text with `extra` put just after its first '{' (or after the first '{' that
// follows `after`).
std::string insert_after(std::string text, const std::string& after, const std::string& extra) {
  const std::size_t at = text.find('{', after.empty() ? 0 : text.find(after));
  text.insert(at + 1, extra);
  return text;
}

TEST(ModelFile, DuplicateKeysAreRefusedNotResolved) {
  const Bytes valid = save_model_bytes(small_model());
  const Parts p = split_file(valid);
  const std::string h = p.header.dump();
  ASSERT_EQ(load_error(raw_file(h, p.data)), "");
  // A second, empty __metadata__ last: a parser keeping the last key reads a TransformerLens file.
  {
    std::string t = h;
    t.insert(t.size() - 1, ",\"__metadata__\":{}");
    const std::string e = load_error(raw_file(t, p.data));
    EXPECT_NE(e.find("the header has the key \"__metadata__\" twice in one object; a key given twice has no one "
                     "meaning; the file is corrupt"),
              std::string::npos)
        << e;
  }
  // A tensor's dtype given twice.
  {
    const std::string e = load_error(raw_file(insert_after(h, "\"embed.W_E\"", "\"dtype\":\"F16\","), p.data));
    EXPECT_NE(e.find("the header has the key \"dtype\" twice in one object (in \"embed.W_E\")"), std::string::npos) << e;
  }
  // Inside a JSON string of the metadata: a config field given twice.
  {
    Parts q = p;
    std::string c = q.header["__metadata__"]["config"].get<std::string>();
    c.insert(1, "\"n_heads\":3,");
    q.header["__metadata__"]["config"] = c;
    const std::string e = load_error(join_file(q));
    EXPECT_NE(e.find("the config in __metadata__ has the key \"n_heads\" twice in one object"), std::string::npos) << e;
  }
  // The same key in two different objects is not a duplicate.
  EXPECT_EQ(load_error(raw_file(h, p.data)), "");
  nlohmann::json j;
  EXPECT_FALSE(read_json(std::string(R"({"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]})"), j).has_value());
  const auto nested = read_json(std::string(R"({"a":[{"b":{"x":1,"x":1}}]})"), j);
  ASSERT_TRUE(nested.has_value());
  EXPECT_NE(nested->find("\"x\" twice in one object (in \"a\" > \"b\")"), std::string::npos) << *nested;
}

TEST(ModelFile, Bf16InACircuitscopeFileIsRefused) {
  // F16 and BF16 take the same bytes: relabelled, the tensor would load with other values.
  Parts p = split_file(save_model_bytes(small_model(), Dtype::F16));
  ASSERT_EQ(p.header["blocks.0.attn.W_Q"]["dtype"], "F16");
  p.header["blocks.0.attn.W_Q"]["dtype"] = "BF16";
  const std::string e = load_error(join_file(p));
  EXPECT_NE(e.find("tensor blocks.0.attn.W_Q is stored as BF16, which circuitscope never writes"), std::string::npos) << e;
}

TEST(ModelFile, OutputPathsThatAreNotRegularFilesAreRefused) {
  const ModelFile m = small_model();
  for (const char* path : {"/dev/null", "/tmp"}) {
    try {
      save_model_file(path, m);
      ADD_FAILURE() << "wrote over " << path;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(path) + " exists and is a"), std::string::npos) << e.what();
    }
  }
  // A regular file is replaced, and a leftover temporary does not get in the way.
  const std::string out = ::testing::TempDir() + "cs_test_io_out.safetensors";
  std::ofstream(out + ".tmp") << "stale";
  std::ofstream(out) << "old";
  EXPECT_NO_THROW(save_model_file(out, m));
  EXPECT_EQ(load_model_file(out).cfg, m.cfg);
  std::remove(out.c_str());
}

// Inputs kept from the hardening corpus and the fuzzer (tests/hardening/cases/): each loads and
// computes a finite forward pass, or is refused with a "model file: " sentence.
TEST(ModelFile, KeptHardeningCasesLoadOrAreRefused) {
  const std::filesystem::path dir = "tests/hardening/cases";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << "run the tests from the repository root";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    ++n;
    SCOPED_TRACE(e.path().string());
    std::ifstream f(e.path(), std::ios::binary);
    const Bytes b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    try {
      const ModelFile m = load_model_bytes(b.data(), b.size());
      const int T = std::min(m.cfg.n_ctx, 4);
      std::vector<int> ids(static_cast<std::size_t>(T), 0);
      ActivationCache<float> cache;
      forward(m.params, ids, 1, T, cache);
      try {
        check_finite(cache);
      } catch (const std::runtime_error& e2) {
        EXPECT_EQ(std::string(e2.what()).rfind("the forward pass overflowed float32: ", 0), 0u) << e2.what();
      }
    } catch (const std::runtime_error& e2) {
      EXPECT_EQ(std::string(e2.what()).rfind("model file: ", 0), 0u) << e2.what();
      EXPECT_EQ(std::string(e2.what()).find("json.exception"), std::string::npos) << e2.what();
    }
  }
  EXPECT_GE(n, 1);
}

// A model whose weights are each allowed but whose deeper layers overflow float32: the forward
// pass check names the hook where it happened.
TEST(ModelFile, ForwardOverflowIsNamed) {
  const ModelFile m = load_model_file("tests/hardening/cases/overflow-8-layers-of-9999.safetensors");
  ActivationCache<float> cache;
  forward(m.params, std::vector<int>{0, 2, 3, 4}, 1, 4, cache);
  try {
    check_finite(cache);
    FAIL() << "no overflow found";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the forward pass overflowed float32: blocks.1.attn.hook_pattern holds NaN"),
              std::string::npos)
        << e.what();
  }
  ActivationCache<float> fine;
  const ModelFile ok = load_model_file("tests/hardening/cases/valid-tiny.safetensors");
  forward(ok.params, std::vector<int>{0, 2, 3, 4}, 1, 4, fine);
  EXPECT_NO_THROW(check_finite(fine));
}

// The one JSON number reader: exact integers in range, or a sentence naming the field.
TEST(ModelFile, JsonNumbersAreReadExactly) {
  auto refusal = [](const json& v, std::int64_t lo, std::int64_t hi) -> std::string {
    try {
      json_to_int(v, "f", lo, hi);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(json_to_int(json(3.0), "f", 0, 10), 3);
  EXPECT_EQ(json_to_int(json(1e4), "f", 0, 100000), 10000);
  EXPECT_EQ(json_to_int(json(9223372036854775807ll), "f", 0, 9223372036854775807ll), 9223372036854775807ll);
  EXPECT_EQ(refusal(json(9223372036854775808ull), 0, 9223372036854775807ll),
            "f must be a whole number between 0 and 9223372036854775807, got 9223372036854775808");
  EXPECT_EQ(refusal(json(9.3e18), 0, 100), "f must be a whole number between 0 and 100, got 9.3e+18");
  EXPECT_EQ(refusal(json(-0.5), -10, 10), "f must be a whole number between -10 and 10, got -0.5");
  EXPECT_EQ(refusal(json(std::numeric_limits<double>::quiet_NaN()), 0, 1), "f must be a whole number between 0 and 1, got NaN");
  EXPECT_EQ(refusal(json::array(), 0, 1), "f must be a whole number between 0 and 1, got an array");
  EXPECT_EQ(json_to_u64(json(18446744073709551615ull), "s"), 18446744073709551615ull);
  EXPECT_THROW(json_to_u64(json(1.8446744073709552e19), "s"), std::invalid_argument);
  EXPECT_THROW(json_to_number(json(1e308), "x", 0, 1e30), std::invalid_argument);
  EXPECT_THROW(parse_json_text("[1e400]", "t:"), std::invalid_argument);
  try {
    parse_json_text("{\n  \"a\": nope}", "recipe:");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "recipe: is not valid JSON (line 2, column 9)");
  }
}

TEST(ModelFile, EmptyAndNullInputs) {
  EXPECT_THROW(load_model_bytes(nullptr, 0), std::runtime_error);
  const std::uint8_t zeros[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_THROW(load_model_bytes(zeros, 8), std::runtime_error);  // empty header: not JSON
}

// Random damage must end in a clean load or a std::exception, never a crash (run under ASan/UBSan).
TEST(ModelFile, RandomCorruptionNeverCrashes) {
  const Bytes f32 = save_model_bytes(small_model(), Dtype::F32);
  const Bytes f16 = save_model_bytes(small_model(), Dtype::F16);
  Rng rng(20240611);
  int loaded = 0, rejected = 0;
  for (int iter = 0; iter < 500; ++iter) {
    Bytes b = (iter % 2) ? f16 : f32;
    const int mode = rng.below(4);
    if (mode == 0 || mode == 3) {  // flip a few bytes anywhere
      const int flips = 1 + rng.below(8);
      for (int k = 0; k < flips; ++k) b[static_cast<std::size_t>(rng.below(static_cast<int>(b.size())))] ^=
          static_cast<std::uint8_t>(1 + rng.below(255));
    }
    if (mode == 1) {  // flip bytes in the header, where the structure is
      std::uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
      const int flips = 1 + rng.below(4);
      for (int k = 0; k < flips; ++k) b[8 + static_cast<std::size_t>(rng.below(static_cast<int>(n)))] =
          static_cast<std::uint8_t>(rng.below(256));
    }
    if (mode == 2 || mode == 3) b.resize(static_cast<std::size_t>(rng.below(static_cast<int>(b.size()) + 1)));
    try {
      ModelFile m = load_model_bytes(b.data(), b.size());
      for (const auto& [name, t] : named_params(m.params))
        for (float x : t->data) ASSERT_TRUE(std::isfinite(x)) << name;
      ++loaded;
    } catch (const std::exception&) {
      ++rejected;
    }
  }
  if (std::getenv("CS_SHOW_MESSAGES")) std::printf("  fuzz: %d loaded, %d rejected\n", loaded, rejected);
  EXPECT_EQ(loaded + rejected, 500);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace cs
