// The .pth reader (src/pth.cpp): state dicts built here as zips and pickles become safetensors, real torch.save
// files give torch's own bytes, and hostile or broken files are refused with a sentence, never a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io.h"
#include "pth.h"

namespace {

using namespace std::string_literals;

#include "fixtures/pth/pth_fixtures.inc"

using Bytes = std::vector<std::uint8_t>;

// ------------------------------------------------------------------ writing zips and pickles

std::uint32_t crc32_bitwise(const std::string& s) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (const char ch : s) {
    c ^= static_cast<std::uint8_t>(ch);
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

void put16(std::string& b, std::uint32_t v) {
  b += static_cast<char>(v & 0xFF);
  b += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string& b, std::uint32_t v) {
  put16(b, v & 0xFFFF);
  put16(b, v >> 16);
}
void put64(std::string& b, std::uint64_t v) {
  put32(b, static_cast<std::uint32_t>(v));
  put32(b, static_cast<std::uint32_t>(v >> 32));
}
void set32(std::string& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

struct ZipItem {
  ZipItem(std::string n, std::string d) : name(std::move(n)), data(std::move(d)) {}
  std::string name, data;
  std::uint16_t method = 0;
  std::uint16_t flags = 0x0808;               // as torch writes: sizes in a data descriptor, UTF-8 names
  std::optional<std::uint32_t> central_size;  // what the central directory claims, if not the truth
  std::optional<std::string> local_name;
  std::string central_extra;
};

struct Zip {
  std::string bytes;
  std::vector<std::size_t> local_at, central_at;
  std::size_t eocd_at = 0;
};

// A STORED zip with local headers (data aligned to 64 bytes by an "FB" extra field, as torch.save
// does), data descriptors, a central directory and an end record.
Zip make_zip(const std::vector<ZipItem>& items) {
  Zip z;
  std::string& b = z.bytes;
  std::string cd;
  for (const ZipItem& it : items) {
    const std::uint32_t crc = crc32_bitwise(it.data), size = static_cast<std::uint32_t>(it.data.size());
    const bool deferred = (it.flags & 8) != 0;
    const std::string lname = it.local_name.value_or(it.name);
    z.local_at.push_back(b.size());
    std::size_t pad = (64 - (b.size() + 30 + lname.size() + 4) % 64) % 64;
    put32(b, 0x04034b50);
    put16(b, 20);
    put16(b, it.flags);
    put16(b, it.method);
    put32(b, 0);  // time, date
    put32(b, deferred ? 0 : crc);
    put32(b, deferred ? 0 : size);
    put32(b, deferred ? 0 : size);
    put16(b, static_cast<std::uint32_t>(lname.size()));
    put16(b, static_cast<std::uint32_t>(pad + 4));
    b += lname;
    put16(b, 0x4246);
    put16(b, static_cast<std::uint32_t>(pad));
    b.append(pad, 'Z');
    b += it.data;
    if (deferred) {
      put32(b, 0x08074b50);
      put32(b, crc);
      put32(b, size);
      put32(b, size);
    }
    z.central_at.push_back(cd.size());
    const std::uint32_t claimed = it.central_size.value_or(size);
    put32(cd, 0x02014b50);
    put16(cd, 20);
    put16(cd, 20);
    put16(cd, it.flags);
    put16(cd, it.method);
    put32(cd, 0);
    put32(cd, crc);
    put32(cd, claimed);
    put32(cd, claimed);
    put16(cd, static_cast<std::uint32_t>(it.name.size()));
    put16(cd, static_cast<std::uint32_t>(it.central_extra.size()));
    put16(cd, 0);  // comment
    put16(cd, 0);  // disk
    put16(cd, 0);  // internal attributes
    put32(cd, 0);  // external attributes
    put32(cd, static_cast<std::uint32_t>(z.local_at.back()));
    cd += it.name;
    cd += it.central_extra;
  }
  const std::size_t cd_offset = b.size();
  for (std::size_t& c : z.central_at) c += cd_offset;
  b += cd;
  z.eocd_at = b.size();
  put32(b, 0x06054b50);
  put32(b, 0);
  put16(b, static_cast<std::uint32_t>(items.size()));
  put16(b, static_cast<std::uint32_t>(items.size()));
  put32(b, static_cast<std::uint32_t>(cd.size()));
  put32(b, static_cast<std::uint32_t>(cd_offset));
  put16(b, 0);
  return z;
}

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Pickle opcodes, written the way Python's pickler writes them for a state dict.
class Pickle {
 public:
  std::string b;
  Pickle& op(std::uint8_t o) {
    b += static_cast<char>(o);
    return *this;
  }
  Pickle& proto(int v = 2) { return op(0x80).op(static_cast<std::uint8_t>(v)); }
  Pickle& global(const std::string& module, const std::string& name) {
    op('c');
    b += module + "\n" + name + "\n";
    return *this;
  }
  Pickle& str(const std::string& s) {
    op('X');
    put32(b, static_cast<std::uint32_t>(s.size()));
    b += s;
    return *this;
  }
  Pickle& integer(std::int64_t v) {
    if (v >= 0 && v < 256) return op('K').op(static_cast<std::uint8_t>(v));
    if (v >= 0 && v < 65536) {
      op('M');
      put16(b, static_cast<std::uint32_t>(v));
      return *this;
    }
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      put32(b, static_cast<std::uint32_t>(static_cast<std::int32_t>(v)));
      return *this;
    }
    op(0x8a).op(8);
    put64(b, static_cast<std::uint64_t>(v));
    return *this;
  }
  Pickle& mark() { return op('('); }
  Pickle& tuple() { return op('t'); }
  Pickle& empty_dict() { return op('}'); }
  Pickle& empty_list() { return op(']'); }
  Pickle& empty_tuple() { return op(')'); }
  Pickle& setitem() { return op('s'); }
  Pickle& setitems() { return op('u'); }
  Pickle& reduce() { return op('R'); }
  Pickle& build() { return op('b'); }
  Pickle& stop() { return op('.'); }
  Pickle& binput(int i) { return op('q').op(static_cast<std::uint8_t>(i)); }
  Pickle& binget(int i) { return op('h').op(static_cast<std::uint8_t>(i)); }
  Pickle& ints(const std::vector<std::int64_t>& v) {
    mark();
    for (std::int64_t x : v) integer(x);
    return tuple();
  }
  Pickle& ordered_dict() { return global("collections", "OrderedDict").empty_tuple().reduce(); }
  Pickle& storage(const std::string& type, const std::string& key, std::int64_t numel) {
    mark().str("storage").global("torch", type).str(key).str("cpu").integer(numel).tuple();
    return op('Q');
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
  Pickle& tensor(const std::string& type, const std::string& key, std::int64_t numel, std::int64_t offset,
                 const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    storage(type, key, numel).integer(offset).ints(size).ints(stride).op(0x89).ordered_dict();
    return tuple().reduce();
  }
};

struct Spec {
  std::string name, type, key;
  std::int64_t numel, offset;
  std::vector<std::int64_t> size, stride;
};

// OrderedDict() with its items in one SETITEMS, as torch.save(model.state_dict()) writes.
std::string state_dict_pickle(const std::vector<Spec>& specs) {
  Pickle p;
  p.proto().ordered_dict().mark();
  for (const Spec& s : specs) p.str(s.name).tensor(s.type, s.key, s.numel, s.offset, s.size, s.stride);
  return p.setitems().stop().b;
}

std::vector<ZipItem> pth_items(const std::string& pickle,
                               const std::vector<std::pair<std::string, std::string>>& storages,
                               const std::string& prefix = "archive") {
  std::vector<ZipItem> items;
  items.push_back({prefix + "/data.pkl", pickle});
  for (const auto& s : storages) items.push_back({prefix + "/data/" + s.first, s.second});
  items.push_back({prefix + "/version", "3\n"});
  return items;
}

Bytes make_pth(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages,
               const std::string& prefix = "archive") {
  return to_bytes(make_zip(pth_items(pickle, storages, prefix)).bytes);
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
std::string f32s(const std::vector<float>& v) { return raw(v); }
std::string iota_f32(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return raw(v);
}

// ------------------------------------------------------------------ reading the safetensors output

struct Safetensors {
  nlohmann::ordered_json header;
  std::uint64_t header_len = 0;
  std::string data;
  std::string bytes(const std::string& name) const {
    const auto& off = header.at(name).at("data_offsets");
    const std::uint64_t b = off[0].get<std::uint64_t>(), e = off[1].get<std::uint64_t>();
    return data.substr(static_cast<std::size_t>(b), static_cast<std::size_t>(e - b));
  }
};

Safetensors parse(const Bytes& out) {
  Safetensors s;
  EXPECT_GE(out.size(), 8u);
  for (int i = 0; i < 8; ++i) s.header_len |= static_cast<std::uint64_t>(out[i]) << (8 * i);
  const std::string text(out.begin() + 8, out.begin() + 8 + static_cast<std::ptrdiff_t>(s.header_len));
  s.header = nlohmann::ordered_json::parse(text);
  s.data.assign(out.begin() + 8 + static_cast<std::ptrdiff_t>(s.header_len), out.end());
  return s;
}

Safetensors convert(const Bytes& pth, const std::map<std::string, std::string>& meta = {}) {
  return parse(cs::pth_to_safetensors(pth.data(), pth.size(), meta));
}

std::string refusal(const Bytes& b) {
  try {
    cs::pth_to_safetensors(b.data(), b.size());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_refused(const Bytes& b, const std::string& fragment) {
  const std::string m = refusal(b);
  EXPECT_EQ(m.rfind("model file: ", 0), 0u) << m;
  EXPECT_NE(m.find(fragment), std::string::npos) << "expected \"" << fragment << "\" in: " << m;
}

// A state dict pickle around one object built by `body` (which leaves the value on the stack).
Bytes pickle_only(const std::string& body) { return make_pth("\x80\x02" + body + ".", {}); }

std::vector<std::uint8_t> from_hex(const char* hex) {
  std::vector<std::uint8_t> out;
  for (const char* p = hex; p[0] && p[1]; p += 2)
    out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(p, 2), nullptr, 16)));
  return out;
}

const Spec kA{"a", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}};
const Spec kB{"b.weight", "FloatStorage", "1", 4, 0, {4}, {1}};

Bytes two_tensors() {
  return make_pth(state_dict_pickle({kA, kB}), {{"0", iota_f32(6)}, {"1", f32s({-1.5f, 2.25f, 1e-3f, 7.0f})}});
}

// ------------------------------------------------------------------ reading

TEST(PthRead, LooksLikePth) {
  const Bytes b = two_tensors();
  EXPECT_TRUE(cs::looks_like_pth(b.data(), b.size()));
  const std::uint8_t st[] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  EXPECT_FALSE(cs::looks_like_pth(st, sizeof st));
  EXPECT_FALSE(cs::looks_like_pth(b.data(), 3));
  EXPECT_FALSE(cs::looks_like_pth(nullptr, 0));
}

TEST(PthRead, TwoFloatTensorsRoundTrip) {
  const Bytes pth = two_tensors();
  const Bytes out = cs::pth_to_safetensors(pth.data(), pth.size());
  const Safetensors s = parse(out);
  EXPECT_EQ((8 + s.header_len) % 8, 0u);
  EXPECT_EQ(s.header.size(), 2u);
  EXPECT_FALSE(s.header.contains("__metadata__"));
  auto it = s.header.begin();
  EXPECT_EQ(it.key(), "a");
  EXPECT_EQ((++it).key(), "b.weight");
  EXPECT_EQ(s.header["a"]["dtype"], "F32");
  EXPECT_EQ(s.header["a"]["shape"], nlohmann::ordered_json::parse("[2,3]"));
  EXPECT_EQ(s.header["a"]["data_offsets"], nlohmann::ordered_json::parse("[0,24]"));
  EXPECT_EQ(s.header["b.weight"]["shape"], nlohmann::ordered_json::parse("[4]"));
  EXPECT_EQ(s.header["b.weight"]["data_offsets"], nlohmann::ordered_json::parse("[24,40]"));
  EXPECT_EQ(s.data.size(), 40u);
  EXPECT_EQ(s.bytes("a"), iota_f32(6));
  EXPECT_EQ(s.bytes("b.weight"), f32s({-1.5f, 2.25f, 1e-3f, 7.0f}));
}

TEST(PthRead, MetadataWhenGiven) {
  const Bytes pth = two_tensors();
  const Safetensors s = convert(pth, {{"positional_embedding_type", "standard"}, {"note", "x"}});
  ASSERT_TRUE(s.header.contains("__metadata__"));
  EXPECT_EQ(s.header["__metadata__"]["positional_embedding_type"], "standard");
  EXPECT_EQ(s.header["__metadata__"]["note"], "x");
  EXPECT_EQ(s.bytes("a"), iota_f32(6));
  const std::string bad_utf8 = "\xff\xfe";
  EXPECT_THROW(cs::pth_to_safetensors(pth.data(), pth.size(), {{"k", bad_utf8}}), std::runtime_error);
}

TEST(PthRead, HalfAndBFloat16) {
  const std::vector<std::uint16_t> h = {0x3c00, 0xc000, 0x3555}, bf = {0x3f80, 0x4049, 0xbf00, 0x0001};
  const Bytes pth = make_pth(state_dict_pickle({{"h", "HalfStorage", "0", 3, 0, {3}, {1}},
                                                {"bf", "BFloat16Storage", "1", 4, 0, {2, 2}, {2, 1}}}),
                             {{"0", raw(h)}, {"1", raw(bf)}});
  const Safetensors s = convert(pth);
  EXPECT_EQ(s.header["h"]["dtype"], "F16");
  EXPECT_EQ(s.header["bf"]["dtype"], "BF16");
  EXPECT_EQ(s.bytes("h"), raw(h));
  EXPECT_EQ(s.bytes("bf"), raw(bf));
}

TEST(PthRead, TransposedTensorIsGathered) {
  // A [2, 3] storage 0..5 saved as its transpose: size [3, 2], stride [1, 3].
  const Bytes pth =
      make_pth(state_dict_pickle({{"t", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}}}), {{"0", iota_f32(6)}});
  const Safetensors s = convert(pth);
  EXPECT_EQ(s.header["t"]["shape"], nlohmann::ordered_json::parse("[3,2]"));
  EXPECT_EQ(s.bytes("t"), f32s({0, 3, 1, 4, 2, 5}));
}

TEST(PthRead, SharedStorageAtOffsets) {
  const Bytes pth = make_pth(state_dict_pickle({{"a", "FloatStorage", "0", 10, 2, {3}, {1}},
                                                {"b", "FloatStorage", "0", 10, 5, {5}, {1}},
                                                {"every_other", "FloatStorage", "0", 10, 1, {2, 2}, {4, 2}}}),
                             {{"0", iota_f32(10)}});
  const Safetensors s = convert(pth);
  EXPECT_EQ(s.bytes("a"), f32s({2, 3, 4}));
  EXPECT_EQ(s.bytes("b"), f32s({5, 6, 7, 8, 9}));
  EXPECT_EQ(s.bytes("every_other"), f32s({1, 3, 5, 7}));
  EXPECT_EQ(s.data.size(), 4u * 12);
}

TEST(PthRead, StrideZeroRepeatsAndEmptyAndScalar) {
  const Bytes pth = make_pth(state_dict_pickle({{"expand", "FloatStorage", "0", 3, 0, {2, 3}, {0, 1}},
                                                {"column", "FloatStorage", "0", 3, 1, {3, 2}, {0, 0}},
                                                {"empty", "FloatStorage", "1", 0, 0, {0, 4}, {4, 1}},
                                                {"scalar", "FloatStorage", "0", 3, 2, {}, {}}}),
                             {{"0", iota_f32(3)}, {"1", ""}});
  const Safetensors s = convert(pth);
  EXPECT_EQ(s.bytes("expand"), f32s({0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(s.bytes("column"), f32s({1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(s.bytes("empty"), "");
  EXPECT_EQ(s.header["empty"]["shape"], nlohmann::ordered_json::parse("[0,4]"));
  EXPECT_EQ(s.bytes("scalar"), f32s({2}));
  EXPECT_EQ(s.header["scalar"]["shape"], nlohmann::ordered_json::array());
}

TEST(PthRead, BoolMaskBuffer) {
  const std::string mask = std::string("\x01\x00\x00\x01\x01\x00\x01\x01\x01", 9);
  const Bytes pth = make_pth(state_dict_pickle({{"blocks.0.attn.mask", "BoolStorage", "0", 9, 0, {3, 3}, {3, 1}},
                                                {"blocks.0.attn.IGNORE", "FloatStorage", "1", 1, 0, {}, {}}}),
                             {{"0", mask}, {"1", f32s({-1e5f})}});
  const Safetensors s = convert(pth);
  EXPECT_EQ(s.header["blocks.0.attn.mask"]["dtype"], "BOOL");
  EXPECT_EQ(s.bytes("blocks.0.attn.mask"), mask);
  EXPECT_EQ(s.bytes("blocks.0.attn.IGNORE"), f32s({-1e5f}));
}

// What torch 1.13 writes for module.state_dict(): memoized globals, BUILD with {'_metadata': ...};
// and a plain dict holding an nn.Parameter (_rebuild_parameter).
TEST(PthRead, StateDictMetadataAndParameters) {
  Pickle p;
  p.proto().global("collections", "OrderedDict").binput(0).empty_tuple().reduce().binput(1).mark();
  p.str("w").tensor("FloatStorage", "0", 2, 0, {2}, {1});
  p.str("p").global("torch._utils", "_rebuild_parameter");
  p.tensor("FloatStorage", "0", 2, 1, {1}, {1}).op(0x88).binget(0).empty_tuple().reduce().op(0x87).reduce();
  p.setitems();
  p.empty_dict().str("_metadata").binget(0).empty_tuple().reduce().mark();
  p.str("").empty_dict().str("version").integer(1).setitem();
  p.str("attn").empty_dict().str("version").integer(1).setitem().setitems().setitem().build().stop();
  const Safetensors s = convert(make_pth(p.b, {{"0", f32s({3, 4})}}));
  EXPECT_EQ(s.header.size(), 2u);
  EXPECT_EQ(s.bytes("w"), f32s({3, 4}));
  EXPECT_EQ(s.bytes("p"), f32s({4}));

  Pickle d;  // {"p": Parameter} as a plain dict with SETITEM
  d.proto().empty_dict().binput(0).str("p").global("torch._utils", "_rebuild_parameter");
  d.tensor("HalfStorage", "k", 1, 0, {1}, {1}).op(0x89).ordered_dict().op(0x87).reduce().setitem().stop();
  EXPECT_EQ(convert(make_pth(d.b, {{"k", raw(std::vector<std::uint16_t>{0x3c00})}})).header["p"]["dtype"], "F16");
}

TEST(PthRead, Protocol4Opcodes) {
  // FRAME, SHORT_BINUNICODE, MEMOIZE and STACK_GLOBAL, as pickle_protocol=4 writes them.
  std::string b = "\x80\x04\x95";
  b += std::string(8, '\0');
  const auto sbu = [&b](const std::string& s) {
    b += '\x8c';
    b += static_cast<char>(s.size());
    b += s;
    b += '\x94';
  };
  b += "}\x94(";
  sbu("x");
  sbu("torch._utils");
  sbu("_rebuild_tensor_v2");
  b += "\x93\x94((";
  sbu("storage");
  sbu("torch");
  sbu("FloatStorage");
  b += "\x93\x94";
  sbu("0");
  sbu("cpu");
  b += "K\x02tQK\x00K\x02\x85K\x01\x85\x89"s;
  sbu("collections");
  sbu("OrderedDict");
  b += "\x93)Rt\x94R\x94u.";
  const Safetensors s = convert(make_pth(b, {{"0", f32s({1, 2})}}));
  EXPECT_EQ(s.bytes("x"), f32s({1, 2}));
}

TEST(PthRead, OtherArchiveNamesAndOldRebuild) {
  Pickle p;
  p.proto().empty_dict().str("old").global("torch._utils", "_rebuild_tensor").mark();
  p.storage("FloatStorage", "0", 3).integer(1).ints({2}).ints({1}).tuple().reduce().setitem().stop();
  const Safetensors s = convert(make_pth(p.b, {{"0", iota_f32(3)}}, "my_model"));
  EXPECT_EQ(s.bytes("old"), f32s({1, 2}));
}

// ------------------------------------------------------------------ real torch.save files

TEST(PthRealFiles, MatchTorchsOwnBytes) {
  ASSERT_EQ(pth_fixtures().size(), 3u);
  for (const PthFixture& f : pth_fixtures()) {
    SCOPED_TRACE(f.name);
    const Bytes pth = from_hex(f.hex);
    ASSERT_TRUE(cs::looks_like_pth(pth.data(), pth.size()));
    const Safetensors s = convert(pth);
    ASSERT_EQ(s.header.size(), f.tensors.size());
    auto it = s.header.begin();
    std::uint64_t offset = 0;
    for (const PthFixtureTensor& t : f.tensors) {
      SCOPED_TRACE(t.name);
      EXPECT_EQ(it.key(), t.name);
      ++it;
      EXPECT_EQ(s.header[t.name]["dtype"], t.dtype);
      EXPECT_EQ(s.header[t.name]["shape"].get<std::vector<std::int64_t>>(), t.shape);
      const std::vector<std::uint8_t> want = from_hex(t.hex);
      EXPECT_EQ(s.bytes(t.name), std::string(want.begin(), want.end()));
      EXPECT_EQ(s.header[t.name]["data_offsets"][0].get<std::uint64_t>(), offset);
      offset += want.size();
    }
    EXPECT_EQ(s.data.size(), offset);
  }
}

TEST(PthRealFiles, TransformerLensStateDictLoads) {
  const PthFixture& f = pth_fixtures()[0];
  ASSERT_STREQ(f.name, "tl_attn_only");
  const Bytes pth = from_hex(f.hex);
  // A .pth carries no metadata: without a config.json, LNPre and no normalization look the same.
  try {
    cs::load_model_bytes(pth.data(), pth.size());
    ADD_FAILURE() << "a .pth without a config.json loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("circuitscope will not guess which"), std::string::npos) << e.what();
  }
  // The .pth itself, with the TransformerLens config.json the hub ships beside it.
  cs::LoadOptions o;
  o.processing = cs::Processing::none();
  o.tl_config = R"({"n_layers": 1, "d_model": 4, "n_heads": 2, "d_head": 2, "n_ctx": 3, "d_vocab": 5,
                    "normalization_type": null, "attn_only": true, "act_fn": null, "eps": 1e-05,
                    "positional_embedding_type": "standard", "model_name": "tiny"})";
  const cs::ModelFile m = cs::load_model_bytes(pth.data(), pth.size(), o);
  EXPECT_NE(m.info["note"].get<std::string>().find("as its metadata or config.json says"), std::string::npos);
  EXPECT_EQ(m.cfg.n_layers, 1);
  EXPECT_EQ(m.cfg.n_heads, 2);
  EXPECT_EQ(m.cfg.d_model, 4);
  EXPECT_EQ(m.cfg.d_head, 2);
  EXPECT_EQ(m.cfg.n_ctx, 3);
  EXPECT_EQ(m.cfg.d_vocab, 5);
  EXPECT_TRUE(m.cfg.use_bias);
  for (const PthFixtureTensor& t : f.tensors)
    if (std::string(t.name) == "unembed.W_U") {  // saved as a transposed view
      const std::vector<std::uint8_t> want = from_hex(t.hex);
      ASSERT_EQ(want.size(), m.params.W_U.data.size() * 4);
      EXPECT_EQ(std::memcmp(want.data(), m.params.W_U.data.data(), want.size()), 0);
    }
}

// A config.json must describe the model the weights are, and nothing circuitscope does not run.
TEST(PthRealFiles, ConfigJsonIsCheckedAgainstTheTensors) {
  const Bytes pth = from_hex(pth_fixtures()[0].hex);
  const auto refusal = [&](const std::string& config) {
    cs::LoadOptions o;
    o.tl_config = config;
    try {
      cs::load_model_bytes(pth.data(), pth.size(), o);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_NE(refusal(R"({"normalization_type": null, "d_model": 8})")
                .find("config.json says d_model is 8 but the tensors give 4: the config belongs to another model"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"normalization_type": null, "parallel_attn_mlp": true})").find("sets parallel_attn_mlp"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"normalization_type": null, "eps": 1e-06})").find("sets eps"), std::string::npos);
  EXPECT_NE(refusal(R"({"normalization_type": "LN"})").find("config.json says normalization_type is \"LN\", but the file "
                                                           "holds no LayerNorm weights"),
            std::string::npos);
  EXPECT_NE(refusal("[1, 2]").find("the TransformerLens config.json is an array"), std::string::npos);
  EXPECT_NE(refusal("{\"a\": ").find("the TransformerLens config.json is not valid JSON"), std::string::npos);
  EXPECT_EQ(refusal(R"({"normalization_type": null, "positional_embedding_type": "shortformer"})"), "loaded");
  // The toy models' own spelling (NeelNanda/*/config.json): "normalization" and "shortformer_pos".
  EXPECT_EQ(refusal(R"({"normalization": null, "shortformer_pos": true, "attn_only": true, "act_fn": "solu_ln",
                        "d_mlp": 2048, "n_layers": 1})"), "loaded");
  cs::LoadOptions o;
  o.tl_config = R"({"normalization": "LNPre", "normalization_type": null, "positional_embedding_type": "shortformer",
                    "shortformer_pos": false})";
  const cs::ModelFile m = cs::load_model_bytes(pth.data(), pth.size(), o);
  EXPECT_EQ(m.cfg.normalization, cs::Norm::LNPre);         // "normalization" first, as TransformerLens reads it
  EXPECT_EQ(m.cfg.pos_embed, cs::PosEmbed::Shortformer);  // positional_embedding_type before shortformer_pos
}

// ------------------------------------------------------------------ hostile pickles

TEST(PthRefusePickle, GlobalsThatRunCode) {
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"os", "system"},        {"builtins", "eval"}, {"posix", "system"},      {"subprocess", "Popen"},
      {"builtins", "getattr"}, {"torch", "load"},    {"collections", "deque"}, {"torch._utils", "something"}};
  for (const auto& c : calls) {
    SCOPED_TRACE(c.first + "." + c.second);
    Pickle p;
    p.global(c.first, c.second).str("echo pwned").op(0x85).reduce();
    expect_refused(pickle_only(p.b), "calls " + c.first + "." + c.second + ", which a state dict never does");
    expect_refused(pickle_only(p.b), "circuitscope executes nothing and refuses the file");
  }
  Pickle s;  // the same through STACK_GLOBAL
  s.str("os").str("system").op(0x93);
  expect_refused(pickle_only(s.b), "calls os.system");
  expect_refused(pickle_only(Pickle().global("torch._utils", "_rebuild_sparse_tensor").b), "_rebuild_sparse_tensor");
  expect_refused(pickle_only(Pickle().global("torch", "DoubleStorage").b), "float64 tensors (torch.DoubleStorage)");
  expect_refused(pickle_only(Pickle().global("torch", "LongStorage").b), "int64");
}

TEST(PthRefusePickle, ReduceOfWhatIsNotAFunction) {
  expect_refused(pickle_only(Pickle().global("torch", "FloatStorage").empty_tuple().reduce().b),
                 "applies REDUCE to the storage type torch.FloatStorage");
  expect_refused(pickle_only(Pickle().str("os.system").str("ls").op(0x85).reduce().b),
                 "applies REDUCE to a string (\"os.system\")");
  expect_refused(pickle_only(Pickle().ordered_dict().empty_tuple().reduce().b), "applies REDUCE to an OrderedDict");
  expect_refused(pickle_only(Pickle().global("collections", "OrderedDict").str("x").op(0x85).reduce().b),
                 "calls collections.OrderedDict with 1 arguments");
  expect_refused(pickle_only(Pickle().global("collections", "OrderedDict").str("x").reduce().b),
                 "instead of a tuple of arguments");
  expect_refused(pickle_only(Pickle().global("torch._utils", "_rebuild_tensor_v2").empty_tuple().reduce().b),
                 "with 0 arguments, not 6 or 7");
}

TEST(PthRefusePickle, OpcodesNotInAStateDict) {
  expect_refused(
      pickle_only(Pickle().global("torch._utils", "_rebuild_parameter").empty_tuple().op(0x81).b),
      "uses the opcode NEWOBJ (0x81), which torch.save never writes for a state dict; circuitscope refuses it "
      "rather than run it");
  expect_refused(pickle_only("i" + std::string("os\nsystem\n")), "INST (0x69)");
  expect_refused(pickle_only(Pickle().empty_dict().op('0').b), "POP (0x30)");
  expect_refused(pickle_only("\x82\x01"), "EXT1 (0x82)");
  expect_refused(pickle_only("S'x'\n"), "STRING (0x53)");
  expect_refused(pickle_only("\xff"), "the byte 0xff where an opcode should be");
  expect_refused(pickle_only("\x99"), "the byte 0x99 where an opcode should be");
  expect_refused(make_pth("\x80\x07}.", {}), "pickle protocol 7");
}

TEST(PthRefusePickle, DeepNestingIsRefusedNotRecursed) {
  expect_refused(pickle_only(std::string(100000, '(')), "MARKs deep");
  expect_refused(pickle_only(std::string(100000, ']')), "objects on its stack");
  expect_refused(pickle_only(std::string(100000, ')')), "objects on its stack");
  // Nesting through TUPLE1 and through the memo keeps the stack short; nothing walks it recursively.
  expect_refused(pickle_only("N" + std::string(200000, '\x85')), "holds a tuple of 1 item, not a state dict");
  std::string chain =
      "]]q\x00"
      "a"s;  // a sink list, and the first link
  for (int i = 0; i < 100000; ++i)
    chain +=
        "]h\x00"
        "aq\x00"
        "a"s;  // [previous], memoized, into the sink
  expect_refused(pickle_only(chain), "holds a list, not a state dict");
  expect_refused(pickle_only("]q\x00h\x00"
                             "a"s),
                 "holds a list");  // a list inside itself
  expect_refused(pickle_only("}q\x00h\x00h\x00s"s), "holds a dict with the key a dict");
}

TEST(PthRefusePickle, BrokenStackUse) {
  expect_refused(pickle_only("s"), "too few objects on its stack");
  expect_refused(pickle_only("}(Xs"), "ends in the middle of its opcode BINUNICODE");
  expect_refused(pickle_only("}(K"), "ends before its STOP opcode");
  expect_refused(make_pth("\x80\x02}(K", {}), "ends in the middle of its opcode BININT1");
  expect_refused(pickle_only("}(K\x01s"), "too few objects");  // SETITEM may not reach below its MARK
  expect_refused(pickle_only("K\x01K\x02u"), "without a MARK");
  expect_refused(pickle_only("}(K\x01u"), "a key but no value");
  expect_refused(pickle_only("K\x01K\x02"
                             "a"),
                 "to append to an int (1)");
  expect_refused(pickle_only("K\x01K\x02K\x03s"), "set an item of an int (1)");
  expect_refused(pickle_only("h\x05"), "fetches memo entry 5, which it never stored");
  expect_refused(pickle_only("q\x00"s), "too few objects");
  expect_refused(make_pth("\x80\x02}"s, {}), "ends before its STOP opcode");
  expect_refused(pickle_only("X\xff\xff\xff\x7f"), "has a string of 2147483647 bytes");
  expect_refused(pickle_only("\x8a\x09" + std::string(9, '\x01')), "an integer of 9 bytes");
  expect_refused(pickle_only("c" + std::string(300, 'a')), "a GLOBAL name longer than 256 bytes");
  expect_refused(pickle_only("cos\nsys"), "ends in the middle of its opcode GLOBAL");
}

TEST(PthRefusePickle, BuildOnlyOnAnOrderedDict) {
  expect_refused(pickle_only("}}b"), "applies BUILD to a dict");
  expect_refused(pickle_only(Pickle().ordered_dict().str("x").build().b),
                 "sets the attributes of an OrderedDict from a string");
}

TEST(PthRefusePickle, TopLevelNotAFlatStateDict) {
  expect_refused(pickle_only("]"), "the .pth file holds a list, not a state dict");
  expect_refused(pickle_only("N"), "holds None, not a state dict");
  expect_refused(pickle_only(Pickle().empty_dict().str("x").integer(5).setitem().b),
                 "a dict whose value for key \"x\" is an int (5), not a tensor");
  Pickle nested;
  nested.proto().empty_dict().str("state_dict").ordered_dict().mark().str("a");
  nested.tensor("FloatStorage", "0", 6, 0, {6}, {1}).setitems().setitem().stop();
  expect_refused(make_pth(nested.b, {{"0", iota_f32(6)}}), "save model.state_dict() itself");
  expect_refused(pickle_only(Pickle().empty_dict().integer(1).ordered_dict().setitem().b),
                 "the key an int (1), not a tensor name");
}

Bytes one_tensor_named(const std::string& name) {
  return make_pth(state_dict_pickle({{name, "FloatStorage", "0", 1, 0, {}, {}}}), {{"0", f32s({1})}});
}

TEST(PthRefusePickle, TensorNames) {
  expect_refused(one_tensor_named("bad\nname"), "not printable ASCII");
  expect_refused(one_tensor_named("caf\xc3\xa9"), "not printable ASCII");
  expect_refused(one_tensor_named(std::string(301, 'w')), "a tensor name of 301 bytes");
  EXPECT_NO_THROW(convert(one_tensor_named(std::string(300, 'w'))));
  expect_refused(one_tensor_named(""), "a tensor name of 0 bytes");
  expect_refused(one_tensor_named("__metadata__"), "safetensors reserves");
  expect_refused(
      make_pth(state_dict_pickle({{"a", "FloatStorage", "0", 1, 0, {}, {}}, {"a", "FloatStorage", "0", 1, 0, {}, {}}}),
               {{"0", f32s({1})}}),
      "names the tensor \"a\" twice");
}

Bytes one_tensor(std::int64_t numel, std::int64_t offset, const std::vector<std::int64_t>& size,
                 const std::vector<std::int64_t>& stride, const std::string& data) {
  return make_pth(state_dict_pickle({{"t", "FloatStorage", "0", numel, offset, size, stride}}), {{"0", data}});
}

TEST(PthRefuseTensor, StoragesAndStrides) {
  expect_refused(one_tensor(6, 0, {6}, {1}, iota_f32(5)),
                 "holds 6 elements of torch.FloatStorage (4 bytes each), but its entry");
  expect_refused(one_tensor(6, 0, {6}, {1}, iota_f32(6) + "x"), "has 25 bytes");
  expect_refused(one_tensor(6, 0, {2, 4}, {4, 1}, iota_f32(6)),
                 "reads element 7 of storage \"0\", which holds only 6 elements");
  expect_refused(one_tensor(6, 5, {2}, {1}, iota_f32(6)), "reads element 6");
  expect_refused(one_tensor(6, 0, {2, 3}, {-3, 1}, iota_f32(6)), "the negative stride -3 in dimension 0");
  expect_refused(one_tensor(6, 0, {-2, 3}, {3, 1}, iota_f32(6)), "the negative size -2");
  expect_refused(one_tensor(6, -1, {2}, {1}, iota_f32(6)), "negative storage offset");
  expect_refused(one_tensor(6, 0, {2, 2}, {std::int64_t(1) << 62, 1}, iota_f32(6)), "element 4611686018427387905");
  expect_refused(one_tensor(6, 0, {5, 5}, {std::int64_t(1) << 62, 1}, iota_f32(6)), "past any storage");
  expect_refused(one_tensor(6, 0, {1 << 20, 1 << 20, 1 << 20}, {0, 0, 0}, iota_f32(6)),
                 "more elements than circuitscope reads");
  expect_refused(one_tensor(6, 0, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1}, iota_f32(6)),
                 "a tensor of 9 dimensions");
  expect_refused(one_tensor(6, 0, {2, 3}, {1}, iota_f32(6)), "another number of dimensions");
  // 4 bytes of storage repeated into 4 MB: refused for its size against the file's.
  expect_refused(one_tensor(1, 0, {1024, 1024}, {0, 0}, f32s({1})), "more than 8 times the .pth file's");
  // A storage named but absent; one declared twice with different sizes.
  expect_refused(make_pth(state_dict_pickle({{"t", "FloatStorage", "7", 1, 0, {}, {}}}), {}),
                 "the archive has no entry \"archive/data/7\"");
  expect_refused(
      make_pth(state_dict_pickle({{"a", "FloatStorage", "0", 2, 0, {}, {}}, {"b", "FloatStorage", "0", 1, 0, {}, {}}}),
               {{"0", f32s({1, 2})}}),
      "declares storage \"0\" twice");
  expect_refused(
      make_pth(state_dict_pickle({{"a", "FloatStorage", "0", 2, 0, {}, {}}, {"b", "HalfStorage", "0", 2, 0, {}, {}}}),
               {{"0", f32s({1, 2})}}),
      "declares storage \"0\" twice");
}

TEST(PthRefuseTensor, HooksMetadataAndPersistentIds) {
  Pickle hooks;  // backward_hooks that are not empty
  hooks.proto().empty_dict().str("t").global("torch._utils", "_rebuild_tensor_v2").mark();
  hooks.storage("FloatStorage", "0", 1).integer(0).empty_tuple().empty_tuple().op(0x89);
  hooks.ordered_dict().integer(1).str("hook").setitem().tuple().reduce().setitem().stop();
  expect_refused(make_pth(hooks.b, {{"0", f32s({1})}}), "carries backward hooks");

  Pickle meta;  // a 7th argument with entries
  meta.proto().empty_dict().str("t").global("torch._utils", "_rebuild_tensor_v2").mark();
  meta.storage("FloatStorage", "0", 1).integer(0).empty_tuple().empty_tuple().op(0x89).ordered_dict();
  meta.empty_dict().str("neg").op(0x88).setitem().tuple().reduce().setitem().stop();
  expect_refused(make_pth(meta.b, {{"0", f32s({1})}}), "tensor metadata");

  expect_refused(pickle_only("X\x01\x00\x00\x00"
                             "0Q"s),
                 "loads a persistent object named by a string");
  Pickle module;
  module.mark().str("module").global("torch", "FloatStorage").str("0").str("cpu").integer(1).tuple().op('Q');
  expect_refused(pickle_only(module.b), "loads a persistent object of kind a string (\"module\")");
  Pickle type;
  type.mark().str("storage").str("FloatStorage").str("0").str("cpu").integer(1).tuple().op('Q');
  expect_refused(pickle_only(type.b), "whose type is a string");
}

// ------------------------------------------------------------------ hostile zips

std::vector<ZipItem> valid_items() {
  return pth_items(state_dict_pickle({kA, kB}), {{"0", iota_f32(6)}, {"1", f32s({-1.5f, 2.25f, 1e-3f, 7.0f})}});
}

TEST(PthRefuseZip, EntriesTorchNeverWrites) {
  auto items = valid_items();
  items[1].method = 8;
  expect_refused(to_bytes(make_zip(items).bytes), "is compressed (method 8, deflate)");
  items = valid_items();
  items[0].flags |= 1;
  expect_refused(to_bytes(make_zip(items).bytes), "is encrypted");
  for (const char* name : {"archive/../../etc/passwd", "/archive/data/9", "archive\\data\\9", "archive/data/\x01"}) {
    items = valid_items();
    items.push_back({name, "x"});
    expect_refused(to_bytes(make_zip(items).bytes), "the zip entry");
  }
  items = valid_items();
  items.push_back({"archive/../x", "x"});
  expect_refused(to_bytes(make_zip(items).bytes), "contains \"..\"");
  items = valid_items();
  items.push_back(items[1]);
  expect_refused(to_bytes(make_zip(items).bytes), "two entries named \"archive/data/0\"");
  items = valid_items();
  items.push_back({"other/data.pkl", "}."});
  expect_refused(to_bytes(make_zip(items).bytes), "2 data.pkl entries");
  expect_refused(to_bytes(make_zip({{"model/weights.bin", "x"}}).bytes), "no <name>/data.pkl entry");
  items = valid_items();
  items.push_back({"archive/byteorder", "big"});
  expect_refused(to_bytes(make_zip(items).bytes), "saved on a big-endian machine");
  items.back().data = "little";
  EXPECT_NO_THROW(convert(to_bytes(make_zip(items).bytes)));
}

TEST(PthRefuseZip, HeadersThatDisagree) {
  auto items = valid_items();
  items[1].local_name = "archive/data/x";
  expect_refused(to_bytes(make_zip(items).bytes), "local header disagrees with the central directory");
  items = valid_items();
  items[1].flags = 0;  // sizes in the local header, and then they must match
  Zip z = make_zip(items);
  set32(z.bytes, z.local_at[1] + 22, 3);
  expect_refused(to_bytes(z.bytes), "local header disagrees");
  items = valid_items();
  items[0].central_size = 20;  // data.pkl shorter than the truth: its CRC fails
  expect_refused(to_bytes(make_zip(items).bytes), "fails its CRC-32 check");
  z = make_zip(valid_items());
  set32(z.bytes, z.central_at[1] + 42, static_cast<std::uint32_t>(z.local_at[1] + 1));
  expect_refused(to_bytes(z.bytes), "has no local header at offset");
  z = make_zip(valid_items());
  z.bytes[z.bytes.find(f32s({-1.5f, 2.25f, 1e-3f, 7.0f})) + 5] ^= 0x40;  // inside storage "1"
  expect_refused(to_bytes(z.bytes), "the zip entry \"archive/data/1\" fails its CRC-32 check");
}

TEST(PthRefuseZip, OverlapsAndZipBombSizes) {
  // Entry data/0 claims to run on over the next entry's header.
  Zip z = make_zip(valid_items());
  const std::size_t begin1 = z.local_at[1] + 30 + std::string("archive/data/0").size();
  const std::uint32_t claimed = static_cast<std::uint32_t>(z.local_at[2] + 40 - begin1);
  auto items = valid_items();
  items[1].central_size = claimed;
  z = make_zip(items);
  expect_refused(to_bytes(z.bytes), "\"archive/data/0\" and \"archive/data/1\" overlap");
  // 4 GB claimed by a 1 KB file.
  items = valid_items();
  items[0].central_size = 0xFFFFFFF0u;
  z = make_zip(items);
  ASSERT_LT(z.bytes.size(), 2000u);
  expect_refused(to_bytes(z.bytes), "runs past the start of the central directory");
  // 10 GB claimed through a ZIP64 extra field.
  items = valid_items();
  items[0].central_size = 0xFFFFFFFFu;
  std::string extra;
  put16(extra, 1);
  put16(extra, 16);
  put64(extra, 10000000000ull);
  put64(extra, 10000000000ull);
  items[0].central_extra = extra;
  expect_refused(to_bytes(make_zip(items).bytes), "10000000000 bytes");
  items[0].central_extra.clear();
  expect_refused(to_bytes(make_zip(items).bytes), "has no such field");
}

TEST(PthRefuseZip, EndRecords) {
  Zip z = make_zip(valid_items());
  std::string b = z.bytes;
  b[z.eocd_at + 8] = b[z.eocd_at + 10] = static_cast<char>(0xe8);  // 65000-odd entries in a tiny directory
  b[z.eocd_at + 9] = b[z.eocd_at + 11] = static_cast<char>(0xfd);
  expect_refused(to_bytes(b), "is too short for the 65000 entries it claims");
  b = z.bytes;
  set32(b, z.eocd_at + 16, 0x7FFFFFF0u);
  expect_refused(to_bytes(b), "lies past the end of the file");
  b = z.bytes;
  b[z.eocd_at + 4] = 1;
  expect_refused(to_bytes(b), "spans several disks");
  b = z.bytes + "trailing";
  expect_refused(to_bytes(b), "does not end with a zip end-of-central-directory record");
  expect_refused(to_bytes(std::string("PK\x03\x04", 4)), "too short for a zip archive");
  expect_refused(to_bytes(std::string("\x08\0\0\0\0\0\0\0{}      ", 16)), "does not start like a zip archive");
  expect_refused({}, "does not start like a zip archive");
}

// ------------------------------------------------------------------ truncation and corruption

TEST(PthCorrupt, EveryTruncationThrows) {
  const Bytes full = two_tensors();
  for (std::size_t cut = 0; cut < full.size(); ++cut) {
    const Bytes part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW(cs::pth_to_safetensors(part.data(), part.size()), std::runtime_error) << "cut at " << cut;
  }
  // A valid zip around every truncation of the pickle.
  const std::string pickle = state_dict_pickle({kA, kB});
  for (std::size_t cut = 0; cut < pickle.size(); ++cut) {
    const Bytes b = make_pth(pickle.substr(0, cut), {{"0", iota_f32(6)}, {"1", f32s({1, 2, 3, 4})}});
    EXPECT_THROW(cs::pth_to_safetensors(b.data(), b.size()), std::runtime_error) << "pickle cut at " << cut;
  }
}

// Each damaged file either converts or throws std::runtime_error; anything else fails the test.
void expect_loads_or_refuses(const Bytes& b, const std::string& what) {
  try {
    cs::pth_to_safetensors(b.data(), b.size());
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("model file: ", 0), 0u) << what << ": " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": threw something other than std::runtime_error";
  }
}

TEST(PthCorrupt, RandomByteFlips) {
  std::mt19937 rng(20240601);
  const std::vector<Bytes> files = {two_tensors(), from_hex(pth_fixtures()[0].hex), from_hex(pth_fixtures()[2].hex)};
  for (const Bytes& file : files)
    for (int trial = 0; trial < 300; ++trial) {
      Bytes b = file;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < flips; ++k) b[rng() % b.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
      expect_loads_or_refuses(b, "trial " + std::to_string(trial));
    }
}

TEST(PthCorrupt, RandomPickleDamageBehindValidCrcs) {
  // The zip is rebuilt around each damaged pickle, so the interpreter itself meets the damage.
  std::mt19937 rng(7);
  const std::string pickle = state_dict_pickle({kA, kB, {"m", "BoolStorage", "2", 4, 0, {2, 2}, {1, 2}}});
  const std::vector<std::pair<std::string, std::string>> storages = {
      {"0", iota_f32(6)}, {"1", f32s({1, 2, 3, 4})}, {"2", std::string("\x01\x00\x01\x01", 4)}};
  int loaded = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::string p = pickle;
    const int flips = 1 + static_cast<int>(rng() % 2);
    for (int k = 0; k < flips; ++k) p[rng() % p.size()] ^= static_cast<char>(1 + rng() % 255);
    const Bytes b = make_pth(p, storages);
    try {
      cs::pth_to_safetensors(b.data(), b.size());
      ++loaded;
    } catch (const std::runtime_error&) {
    } catch (...) {
      ADD_FAILURE() << "trial " << trial << " threw something other than std::runtime_error";
    }
  }
  EXPECT_LT(loaded, 600);
}

}  // namespace
