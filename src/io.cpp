// Model files: a safetensors writer and a strict loader that explains what is wrong with a bad file.
#include "io.h"
#include "pth.h"
#include "weight_processing.h"

#include "checks.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>

namespace cs {

namespace {

using json = nlohmann::json;

constexpr int kMaxJsonDepth = 64;  // far deeper than any file we write; stops stack-eating input
// The JSON header's largest size: a million-token vocabulary (config.h's kMaxVocab) takes about
// 20 MB, and parsing holds several times the text in memory, so 64 MB keeps that inside a tab.
constexpr std::uint64_t kMaxHeaderBytes = 64ull << 20;

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error("model file: " + msg); }

std::string clean(const std::string& s, std::size_t max_len = 120) { return printable_text(s, max_len); }

// "an object", "a string", ...: the JSON type of j with its article.
std::string a_type(const json& j) {
  const std::string t = j.type_name();
  return (t == "object" || t == "array" ? "an " : "a ") + t;
}

std::string dump_short(const json& j) {
  return clean(j.dump(-1, ' ', false, json::error_handler_t::replace), 80);
}

// True when brackets outside strings nest at most max_depth levels (a cheap pre-parse guard).
bool depth_ok(const char* b, const char* e, int max_depth) {
  int depth = 0;
  bool in_str = false, esc = false;
  for (const char* p = b; p != e; ++p) {
    const char c = *p;
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// Parses one JSON string stored in __metadata__; `what` names it in messages.
json parse_meta_json(const std::string& text, const std::string& what) {
  if (!depth_ok(text.data(), text.data() + text.size(), kMaxJsonDepth))
    fail("the " + what + " in __metadata__ nests JSON more than " + std::to_string(kMaxJsonDepth) +
         " levels deep; the file is corrupt");
  json j;
  if (const auto problem = read_json(text, j)) fail("the " + what + " in __metadata__ " + *problem);
  return j;
}

std::size_t itemsize(Dtype d) { return d == Dtype::F32 ? 4 : 2; }
const char* dtype_name(Dtype d) { return d == Dtype::F32 ? "F32" : "F16"; }

// What the loader reads: weights in F32, F16 or BF16 (converted to float32), and BOOL for
// TransformerLens's attention mask buffer.
enum class Stored { F32, F16, BF16, Bool };
std::size_t stored_size(Stored d) { return d == Stored::F32 ? 4 : d == Stored::Bool ? 1 : 2; }
const char* stored_name(Stored d) {
  return d == Stored::F32 ? "F32" : d == Stored::F16 ? "F16" : d == Stored::BF16 ? "BF16" : "BOOL";
}

// Product of the dims, or false if it would not fit in 64 bits.
bool checked_numel(const Shape& s, std::uint64_t* out) {
  std::uint64_t n = 1;
  for (int d : s) {
    if (d < 0) return false;
    const auto u = static_cast<std::uint64_t>(d);
    if (u != 0 && n > std::numeric_limits<std::uint64_t>::max() / u) return false;
    n *= u;
  }
  *out = n;
  return true;
}

void put_u64le(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint64_t get_u64le(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

float read_f32(const std::uint8_t* p) {
  const std::uint32_t bits = static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                             (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float read_f16(const std::uint8_t* p) {
  const std::uint16_t bits = static_cast<std::uint16_t>(p[0] | (p[1] << 8));
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
}

// bfloat16 is the top half of a float32.
float read_bf16(const std::uint8_t* p) {
  const std::uint32_t bits = (static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8)) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Where one tensor's bytes are, as its header entry says.
struct Found {
  Stored dtype = Stored::F32;
  std::uint64_t begin = 0, end = 0;
  bool seen = false;
};
// One tensor of the file: its bytes and, for a weight, where its values go (null for a buffer
// such as TransformerLens's attn.mask, which is checked but not kept).
struct Entry {
  std::string name;
  Tensor<float>* dest = nullptr;
  Found f;
  std::vector<std::uint8_t> bytes;  // a buffer's bytes, as they arrive, for its check
};

// The entries in file order (by offset), checked: every byte of the data section belongs to exactly
// one tensor.
std::vector<Entry> checked_file_order(std::vector<Entry> entries, std::uint64_t section_size) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.f.begin != b.f.begin ? a.f.begin < b.f.begin : a.f.end < b.f.end;
  });
  std::uint64_t cursor = 0;
  const Entry* last = nullptr;  // the tensor that reaches furthest so far
  for (const Entry& e : entries) {
    const Found& f = e.f;
    if (f.begin == f.end) continue;
    if (last && f.begin < cursor)
      fail("tensors " + last->name + " and " + e.name + " overlap in the data section (bytes " +
           std::to_string(f.begin) + " to " + std::to_string(std::min(cursor, f.end)) + "); the file is corrupt");
    if (f.begin > cursor)
      fail("bytes " + std::to_string(cursor) + " to " + std::to_string(f.begin) +
           " of the data section belong to no tensor (a hole); the file is corrupt");
    cursor = f.end;
    last = &e;
  }
  if (cursor < section_size)
    fail("the data section has " + std::to_string(section_size - cursor) +
         " trailing bytes after the last tensor; the file is corrupt");
  return entries;
}

// Refuses value x of tensor `name` at index k when it is NaN, Inf or beyond kMaxAbsWeight (config.h).
[[noreturn]] void bad_value(const std::string& name, std::size_t k, float x) {
  if (!std::isfinite(x))
    fail("tensor " + name + " has a non-finite value (" + (std::isnan(x) ? "NaN" : "Inf") + ") at index " +
         std::to_string(k) + "; the model diverged during training or the file is corrupt");
  fail("tensor " + name + " has the value " + float_text(x) + " at index " + std::to_string(k) +
       "; circuitscope refuses weights beyond +-" + float_text(kMaxAbsWeight) +
       " (trained weights are of order 1, and larger ones overflow a forward pass): the file is corrupt");
}

// Appends `count` stored values at p to `out` (which holds the first ones), refusing a bad one
// (bad_value). They go through a small buffer: `out` has room reserved and is written once.
template <float (*Read)(const std::uint8_t*), std::size_t Size>
void append_values(const std::string& name, const std::uint8_t* p, std::size_t count, std::vector<float>& out) {
  constexpr std::size_t kBlock = 1024;
  float block[kBlock];
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(kBlock, count - done);
    for (std::size_t i = 0; i < n; ++i, p += Size) {
      const float x = Read(p);
      if (!(std::fabs(x) <= kMaxAbsWeight)) bad_value(name, out.size() + i, x);  // NaN fails the comparison
      block[i] = x;
    }
    out.insert(out.end(), block, block + n);
    done += n;
  }
}

void append_values(const Entry& en, const std::uint8_t* p, std::size_t count) {
  std::vector<float>& out = en.dest->data;
  switch (en.f.dtype) {
    case Stored::F32: return append_values<read_f32, 4>(en.name, p, count, out);
    case Stored::F16: return append_values<read_f16, 2>(en.name, p, count, out);
    case Stored::BF16: return append_values<read_bf16, 2>(en.name, p, count, out);
    case Stored::Bool: fail("tensor " + en.name + " is BOOL, which is never a weight");
  }
}

// The shape in tensor `name`'s header entry e: a list of non-negative integers below 2^31.
Shape parse_shape(const std::string& name, const json& e) {
  const auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array())
    fail("tensor " + name + " has no shape array; a shape is a list of non-negative integers");
  Shape shape;
  for (const json& d : *sh) {
    const bool ok = d.is_number_unsigned() ? d.get<std::uint64_t>() <= 0x7FFFFFFFull
                                           : d.is_number_integer() && d.get<std::int64_t>() >= 0 &&
                                                 d.get<std::int64_t>() <= 0x7FFFFFFF;
    if (!ok)
      fail("tensor " + name + " has shape " + dump_short(*sh) + ", which is not a list of non-negative integers");
    shape.push_back(static_cast<int>(d.get<std::int64_t>()));
  }
  return shape;
}

// One tensor's header entry e: its dtype (F32, F16 or BF16; BOOL when `boolean`), a shape equal
// to `want` (otherwise "tensor NAME has shape [..]" + says + "[want]") and offsets whose length
// fits them, inside the data section.
Found read_entry(const std::string& name, const json& e, const Shape& want, std::uint64_t section_size,
                 const std::string& says, bool boolean = false) {
  Found f;
  f.seen = true;
  const char* reads = boolean ? "; circuitscope reads it as BOOL" : "; circuitscope reads F32, F16 and BF16";
  const auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) fail("tensor " + name + " has no dtype string" + reads);
  const std::string& dts = dt->get_ref<const std::string&>();
  if (boolean && dts == "BOOL") f.dtype = Stored::Bool;
  else if (!boolean && dts == "F32") f.dtype = Stored::F32;
  else if (!boolean && dts == "F16") f.dtype = Stored::F16;
  else if (!boolean && dts == "BF16") f.dtype = Stored::BF16;
  else fail("tensor " + name + " has dtype " + clean(dts) + reads);

  const Shape shape = parse_shape(name, e);
  if (shape != want) fail("tensor " + name + " has shape " + shape_str(shape) + says + shape_str(want));

  const auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned() || (*off)[0].get<std::uint64_t>() > (*off)[1].get<std::uint64_t>())
    fail("tensor " + name + " has data_offsets " + (off == e.end() ? std::string("missing") : dump_short(*off)) +
         "; they must be [begin, end] with 0 <= begin <= end");
  f.begin = (*off)[0].get<std::uint64_t>();
  f.end = (*off)[1].get<std::uint64_t>();
  if (f.end > section_size)
    fail("tensor " + name + " ends at byte " + std::to_string(f.end) + " but the data section has only " +
         std::to_string(section_size) + " bytes (truncated file?)");
  std::uint64_t numel = 0;
  checked_numel(shape, &numel);  // equals the allocated shape, so it cannot overflow
  const std::uint64_t isz = stored_size(f.dtype);
  if (f.end - f.begin != numel * isz)
    fail("tensor " + name + " has " + std::to_string(f.end - f.begin) + " bytes of data but shape " +
         shape_str(shape) + " in " + stored_name(f.dtype) + " needs " + std::to_string(numel * isz));
  return f;
}

// The header entry of tensor `key`, which must be a JSON object.
const json& entry_object(const std::string& key, const json& e) {
  if (!e.is_object())
    fail("the entry for tensor " + clean(key) + " is " + a_type(e) + ", not an object with dtype, shape and data_offsets");
  return e;
}

// Decides about a header name that is not one of the model's weights: fails with a sentence, or
// fills *out with a buffer to check (its bytes belong to the data section) and returns.
using OtherTensor = std::function<void(const std::string& key, const json& e, Entry* out)>;

// Reads the header's tensor entries against the weights of `params`: every weight must be there
// unless may_be_missing(name) (it then stays zero); other names go to `other`. Returns the
// entries found, weights and buffers, for checked_file_order and read_values.
std::vector<Entry> collect_entries(const json& header, Params<float>& params, std::uint64_t section_size,
                                   const std::string& says, const OtherTensor& other,
                                   const std::function<bool(const std::string&)>& may_be_missing) {
  const auto expected = named_params(params);
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < expected.size(); ++i) index.emplace(expected[i].first, i);
  std::vector<Entry> weights(expected.size()), out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto ix = index.find(it.key());
    if (ix == index.end()) {
      Entry buffer;
      other(it.key(), it.value(), &buffer);
      out.push_back(std::move(buffer));
      continue;
    }
    const json& e = entry_object(it.key(), it.value());
    weights[ix->second] = Entry{expected[ix->second].first, expected[ix->second].second,
                                read_entry(expected[ix->second].first, e, expected[ix->second].second->shape,
                                           section_size, says)};
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (weights[i].f.seen) out.push_back(std::move(weights[i]));
    else if (!may_be_missing(expected[i].first)) fail("tensor " + expected[i].first + " is missing");
  }
  return out;
}

std::string with_path(const std::string& path, const std::string& msg) {
  const std::string prefix = "model file: ";
  if (msg.compare(0, prefix.size(), prefix) == 0) return "model file " + path + ": " + msg.substr(prefix.size());
  return "model file " + path + ": " + msg;
}

// The parsed JSON header and the size of the data section after it.
struct Header {
  json doc;
  std::uint64_t section_size = 0;
};

// The header's length from a file's first 8 bytes (the file is `size` bytes long), checked.
std::uint64_t header_length(const std::uint8_t* first8, std::uint64_t size) {
  if (size < 8)
    fail("the file is only " + std::to_string(size) +
         " bytes long, shorter than the 8-byte header length a safetensors file starts with (empty or truncated file?)");
  const std::uint64_t header_len = get_u64le(first8);
  if (header_len > size - 8)
    fail("header length " + std::to_string(header_len) + " is larger than the file (" + std::to_string(size) +
         " bytes): the file is truncated or not a safetensors file");
  if (header_len > kMaxHeaderBytes)
    fail("the header is " + std::to_string(header_len) + " bytes long; circuitscope reads headers of at most " +
         std::to_string(kMaxHeaderBytes >> 20) + " MB (a million-token vocabulary takes about 20 MB)");
  return header_len;
}

// The header of a file of `size` bytes from its first 8 + header_length() bytes.
Header parse_header(const std::uint8_t* head, std::uint64_t size) {
  const std::uint64_t header_len = header_length(head, size);
  const char* hb = reinterpret_cast<const char*>(head) + 8;
  const char* he = hb + static_cast<std::size_t>(header_len);
  Header h;
  h.section_size = size - 8 - header_len;
  if (!depth_ok(hb, he, kMaxJsonDepth))
    fail("the header nests JSON more than " + std::to_string(kMaxJsonDepth) +
         " levels deep; the file is corrupt or not a safetensors file");
  if (const auto problem = read_json(hb, he, h.doc))
    fail("the header " + *problem + "; the file is corrupt or not a safetensors file");
  if (!h.doc.is_object())
    fail("the header is " + a_type(h.doc) + " in JSON, not an object; this is not a safetensors file");
  return h;
}

// The string value of `key` in __metadata__, or null when absent (an error when `required`).
const std::string* meta_string(const json& meta, const char* key, bool required) {
  const auto it = meta.find(key);
  if (it == meta.end()) {
    if (required)
      fail(std::string("__metadata__ has no \"") + key + "\"; this safetensors file was not written by circuitscope");
    return nullptr;
  }
  if (!it->is_string())
    fail(std::string("__metadata__ \"") + key + "\" is " + a_type(*it) + "; metadata values must be strings");
  return it->get_ptr<const std::string*>();
}

Tokenizer tokenizer_from_meta(const std::string& text) {
  const json tj = parse_meta_json(text, "tokenizer");
  try {
    return Tokenizer::from_json(tj);
  } catch (const std::exception& e) {
    fail(std::string("the stored tokenizer is invalid: ") + e.what());
  }
}

// Allocates the weights of m.cfg, refusing first a config that needs more bytes than the data
// section holds (a few header bytes must not make us allocate gigabytes). `need` weights, at
// least 2 bytes each.
void allocate(ModelFile& m, std::uint64_t need, std::uint64_t section_size, const std::string& what) {
  if (need > section_size / 2)
    fail(what + " calls for " + std::to_string(need) + " weights (at least " + std::to_string(need * 2) +
         " bytes as F16) but the data section has only " + std::to_string(section_size) +
         " bytes: the file is truncated or its " + (what == "the config" ? "config" : "header") +
         " does not match its tensors");
  try {
    m.params = make_params<float>(m.cfg, false);  // ModelReader appends the values
  } catch (const std::bad_alloc&) {
    fail("there is not enough memory for the " + std::to_string(need) + " weights " + what + " calls for");
  }
}

// --- TransformerLens state dicts (docs/model-files.md, "Files saved from TransformerLens") ---

// The layer of a "blocks.{l}.<rest>" name, with <rest> in *rest; -1 for other names.
int block_layer(const std::string& key, std::string* rest) {
  const std::string pre = "blocks.";
  if (key.compare(0, pre.size(), pre) != 0) return -1;
  const std::size_t i = pre.size();
  std::size_t j = i;
  while (j < key.size() && j - i < 9 && key[j] >= '0' && key[j] <= '9') ++j;
  if (j == i || j >= key.size() || key[j] != '.' || (j - i > 1 && key[i] == '0')) return -1;
  if (rest) *rest = key.substr(j + 1);
  return std::stoi(key.substr(i, j - i));
}

// What a TransformerLens tensor says the model has that circuitscope does not run, or "".
std::string tl_unsupported(const std::string& key) {
  std::string rest;
  const std::string part = block_layer(key, &rest) >= 0 ? rest : key;
  const auto starts = [&part](const char* p) { return part.rfind(p, 0) == 0; };
  if (starts("embed.ln.")) return "a LayerNorm on the embedding (post_embedding_ln)";
  if (starts("mlp.ln.")) return "SoLU's LayerNorm inside the MLP (act_fn \"solu_ln\")";
  if (starts("mlp.W_gate")) return "a gated MLP (gated_mlp=True)";
  if (starts("mlp.") && !(part == "mlp.W_in" || part == "mlp.b_in" || part == "mlp.W_out" || part == "mlp.b_out"))
    return "an MLP other than TransformerLens's W_in, b_in, W_out, b_out (mixture of experts?)";
  if ((starts("ln1.") || starts("ln2.") || starts("ln_final.")) &&
      !(part == "ln1.w" || part == "ln1.b" || part == "ln2.w" || part == "ln2.b" || part == "ln_final.w" ||
        part == "ln_final.b"))
    return "a normalization other than LayerNorm's w and b";
  if (starts("attn.rotary_")) return "rotary positions (positional_embedding_type \"rotary\")";
  if (starts("attn._W_") || starts("attn._b_")) return "grouped-query attention (n_key_value_heads)";
  if (starts("attn.q_ln") || starts("attn.k_ln")) return "query and key normalization (use_qk_norm)";
  return "";
}

// Biases a TransformerLens state dict may leave out (they are then zero).
bool is_tl_bias(const std::string& name) {
  std::string rest;
  if (block_layer(name, &rest) >= 0)
    return rest == "attn.b_Q" || rest == "attn.b_K" || rest == "attn.b_V" || rest == "attn.b_O" || rest == "mlp.b_in" ||
           rest == "mlp.b_out";
  return name == "unembed.b_U";
}

const char* const kTlSays = ", but embed.W_E, pos_embed.W_pos and blocks.0.attn.W_Q make it ";
const char* const kTlReads =
    "circuitscope reads TransformerLens models with attention, LayerNorm (LN or LNPre, or none) and MLPs "
    "(gelu, gelu_new, relu), with learned absolute positions";
// The one line of Python that writes the hints a state dict cannot show (docs/model-files.md, "Open the model
// from your notebook").
const char* const kTlHintLine =
    "save it with: safetensors.torch.save_file(model.state_dict(), \"model.safetensors\", metadata={"
    "\"normalization_type\": str(model.cfg.normalization_type), \"positional_embedding_type\": "
    "model.cfg.positional_embedding_type, \"act_fn\": str(model.cfg.act_fn)}), or open the model's "
    "TransformerLens config.json with it";

// What a state dict cannot show about its architecture, in TransformerLens's names:
// positional_embedding_type ("standard", the default, or "shortformer"), normalization_type
// ("LN", "LNPre" or "None") and act_fn, each with where it was said ("__metadata__ says" or
// "config.json says"); and, from a config.json, the dimensions to check the tensors against.
struct TlHint {
  std::string value;
  std::string says;  // "" when absent
  bool present() const { return !says.empty(); }
};
struct TlHints {
  TlHint pos, norm, act;
  std::map<std::string, int> dims;  // config.json's n_layers, d_model, ... (those it gives)
};

// Sets hint h from `value` said by `says`, refusing a second source that disagrees.
void set_hint(TlHint& h, const char* name, const std::string& value, const std::string& says) {
  if (h.present() && h.value != value)
    fail(h.says + " " + name + " is \"" + clean(h.value) + "\" but " + says + " \"" + clean(value) +
         "\": the two files do not describe the same model");
  h.value = value;
  h.says = says;
}

void meta_hints(const json* meta, TlHints& h) {
  if (meta == nullptr) return;
  const char* keys[3] = {"positional_embedding_type", "normalization_type", "act_fn"};
  TlHint* dst[3] = {&h.pos, &h.norm, &h.act};
  for (int i = 0; i < 3; ++i)
    if (const std::string* v = meta_string(*meta, keys[i], false)) set_hint(*dst[i], keys[i], *v, "__metadata__ says");
}

// A TransformerLens config.json (HookedTransformerConfig's fields, as the hub's repositories ship
// it) beside the weights: the hints, the dimensions, and a refusal for any setting that changes
// the forward pass in a way circuitscope does not compute.
void config_json_hints(const std::string& text, TlHints& h) {
  if (text.empty()) return;
  const auto bad = [](const std::string& why) { fail("the TransformerLens config.json " + why); };
  if (text.size() > (16u << 20)) bad("is larger than 16 MB; a HookedTransformerConfig is a few kilobytes");
  if (!depth_ok(text.data(), text.data() + text.size(), kMaxJsonDepth)) bad("nests JSON too deeply");
  json j;
  if (const auto problem = read_json(text, j)) bad(*problem);
  if (!j.is_object()) bad("is " + a_type(j) + ", not an object of HookedTransformerConfig fields");
  const std::string says = "config.json says";
  const auto str = [&](const char* key, const char* null_as) -> std::string {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return null_as;
    if (!it->is_string()) bad(std::string("has ") + key + " " + a_type(*it) + ", not a string");
    return it->get<std::string>();
  };
  const auto flag = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  const auto number = [&](const char* key, double def) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : def;
  };
  // The toy models' own config.json (NeelNanda/*) spells two of them its own way, as
  // TransformerLens's convert_neel_model_config reads it: "normalization" (taken before
  // "normalization_type") and "shortformer_pos" (a flag).
  if (j.contains("positional_embedding_type")) set_hint(h.pos, "positional_embedding_type", str("positional_embedding_type", "standard"), says);
  else if (j.contains("shortformer_pos")) set_hint(h.pos, "positional_embedding_type", flag("shortformer_pos") ? "shortformer" : "standard", says);
  if (j.contains("normalization")) set_hint(h.norm, "normalization_type", str("normalization", "None"), says);
  else if (j.contains("normalization_type")) set_hint(h.norm, "normalization_type", str("normalization_type", "None"), says);
  if (str("architecture", "") == "neel-solu-old")
    bad("says architecture \"neel-solu-old\", whose weights TransformerLens converts on load; circuitscope does not run it");
  if (flag("attn_only")) {
    h.dims["d_mlp"] = 0;
  } else if (j.contains("act_fn") && !j["act_fn"].is_null()) {
    set_hint(h.act, "act_fn", str("act_fn", ""), says);
  }
  for (const char* key : {"n_layers", "d_model", "n_heads", "d_head", "n_ctx", "d_vocab", "d_mlp"}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || (std::string(key) == "d_mlp" && flag("attn_only"))) continue;
    const long long v = it->get<long long>();
    if (v >= 0 && v <= 0x7FFFFFFF) h.dims[key] = static_cast<int>(v);
  }
  // Settings that change what the model computes, at values circuitscope does not run.
  const std::pair<const char*, const char*> flags[] = {
      {"parallel_attn_mlp", "attention and MLP in parallel"}, {"gated_mlp", "a gated MLP"},
      {"final_rms", "an RMSNorm before the unembed"}, {"use_local_attn", "local attention windows"},
      {"scale_attn_by_inverse_layer_idx", "attention scaled by the layer's index"},
      {"post_embedding_ln", "a LayerNorm on the embedding"}, {"use_qk_norm", "query and key normalization"},
      {"use_normalization_before_and_after", "normalization before and after each block"}};
  for (const auto& [key, what] : flags)
    if (flag(key)) bad(std::string("sets ") + key + " (" + what + "), which circuitscope does not run");
  if (j.contains("use_attn_scale") && j["use_attn_scale"].is_boolean() && !j["use_attn_scale"].get<bool>())
    bad("sets use_attn_scale false (unscaled attention scores), which circuitscope does not run");
  if (j.contains("n_key_value_heads") && !j["n_key_value_heads"].is_null())
    bad("sets n_key_value_heads (grouped-query attention), which circuitscope does not run");
  if (j.contains("num_experts") && !j["num_experts"].is_null())
    bad("sets num_experts (a mixture of experts), which circuitscope does not run");
  const double eps = number("eps", kLnEps);
  if (std::fabs(eps - kLnEps) > 1e-12)
    bad("sets eps " + float_text(static_cast<float>(eps)) + "; circuitscope's LayerNorm uses TransformerLens's default 1e-5");
  for (const char* key : {"output_logits_soft_cap", "attn_scores_soft_cap"})
    if (number(key, -1) > 0) bad(std::string("sets ") + key + ", which circuitscope does not run");
}

// The architecture of a TransformerLens state dict, from its tensor names and shapes and the
// hints; never guessed: a file without LayerNorm tensors must say whether it is LNPre or has no
// normalization, and one with MLPs which activation they use.
Config infer_tl_config(const json& header, const json* meta, const std::string& config_json) {
  int max_layer = -1;
  bool bias = false, smear = false, ln = false;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string what = tl_unsupported(it.key());
    if (!what.empty())
      fail("tensor " + clean(it.key()) + " means the model has " + what + ", which circuitscope does not run; " +
           kTlReads);
    std::string rest;
    max_layer = std::max(max_layer, block_layer(it.key(), &rest));
    bias = bias || (is_tl_bias(it.key()) && rest.rfind("mlp.", 0) != 0);
    smear = smear || rest == "attn.smear_alpha";
    ln = ln || rest.rfind("ln1.", 0) == 0 || rest.rfind("ln2.", 0) == 0 || it.key().rfind("ln_final.", 0) == 0;
  }
  if (!header.contains("embed.W_E"))
    fail("the header has neither circuitscope's __metadata__ (config and tokenizer) nor TransformerLens's tensor "
         "embed.W_E: this safetensors file is not a circuitscope model or a TransformerLens state dict");
  const auto shape_of = [&header](const std::string& key, std::size_t rank, const char* dims) {
    if (!header.contains(key)) fail("tensor " + key + " is missing");
    const Shape s = parse_shape(key, entry_object(key, header[key]));
    if (s.size() != rank)
      fail("tensor " + key + " has shape " + shape_str(s) + "; TransformerLens's " + key + " is " + dims);
    return s;
  };
  Config c;
  const Shape we = shape_of("embed.W_E", 2, "[d_vocab, d_model]");
  c.d_vocab = we[0];
  c.d_model = we[1];
  if (!header.contains("pos_embed.W_pos"))
    fail("there is no tensor pos_embed.W_pos; " + std::string(kTlReads) + ", not rotary or ALiBi ones");
  c.n_ctx = shape_of("pos_embed.W_pos", 2, "[n_ctx, d_model]")[0];
  c.n_layers = max_layer + 1;
  c.n_heads = 1;  // a model without layers has no heads to count
  c.d_head = 1;
  if (c.n_layers > 0) {
    const Shape wq = shape_of("blocks.0.attn.W_Q", 3, "[n_heads, d_model, d_head]");
    c.n_heads = wq[0];
    c.d_head = wq[2];
    if (header.contains("blocks.0.mlp.W_in")) c.d_mlp = shape_of("blocks.0.mlp.W_in", 2, "[d_model, d_mlp]")[1];
  }
  TlHints hints;
  meta_hints(meta, hints);
  config_json_hints(config_json, hints);
  if (!hints.pos.present() || hints.pos.value == "standard") c.pos_embed = PosEmbed::Standard;
  else if (hints.pos.value == "shortformer") c.pos_embed = PosEmbed::Shortformer;
  else
    fail(hints.pos.says + " positional_embedding_type is \"" + clean(hints.pos.value) + "\"; " + kTlReads +
         " (\"standard\" or \"shortformer\")");
  if (ln) {
    if (hints.norm.present() && hints.norm.value != "LN")
      fail(hints.norm.says + " normalization_type is \"" + clean(hints.norm.value) +
           "\", but the file holds LayerNorm weights (ln1.w, ln_final.w), which only \"LN\" has: the file is inconsistent");
    c.normalization = Norm::LN;
  } else if (!hints.norm.present()) {
    fail("the file holds no LayerNorm weights, which is how a model without normalization looks, and also one whose "
         "LayerNorm TransformerLens folded (from_pretrained leaves weightless LNPre behind); circuitscope will not "
         "guess which: " + std::string(kTlHintLine));
  } else {
    try {
      c.normalization = norm_from_name(hints.norm.value);
    } catch (const std::exception& e) {
      fail(hints.norm.says + " normalization_type is \"" + clean(hints.norm.value) + "\"; " + kTlReads);
    }
    if (c.normalization == Norm::LN)
      fail(hints.norm.says + " normalization_type is \"LN\", but the file holds no LayerNorm weights (ln1.w, ln1.b, "
           "ln_final.w, ...): the file is incomplete");
  }
  if (c.d_mlp > 0) {
    if (!hints.act.present())
      fail("the model has MLPs (blocks.0.mlp.W_in is [" + std::to_string(c.d_model) + ", " + std::to_string(c.d_mlp) +
           "]) but the file does not say their activation, which the tensors cannot show; " + kTlHintLine);
    try {
      c.act_fn = act_from_name(hints.act.value);
    } catch (const std::exception& e) {
      fail(hints.act.says + " act_fn is \"" + clean(hints.act.value) + "\"; " + kTlReads);
    }
  }
  const std::pair<const char*, int> found[] = {{"n_layers", c.n_layers}, {"d_model", c.d_model}, {"n_heads", c.n_heads},
                                               {"d_head", c.d_head},     {"n_ctx", c.n_ctx},     {"d_vocab", c.d_vocab},
                                               {"d_mlp", c.d_mlp}};
  for (const auto& [key, value] : found) {
    const auto it = hints.dims.find(key);
    if (it != hints.dims.end() && it->second != value && !(c.n_layers == 0 && std::string(key) != "d_model" &&
                                                           std::string(key) != "d_vocab" && std::string(key) != "n_ctx"))
      fail("config.json says " + std::string(key) + " is " + std::to_string(it->second) + " but the tensors give " +
           std::to_string(value) + ": the config belongs to another model");
  }
  c.use_bias = bias;
  c.smeared_keys = smear;
  try {
    check_size(c);
  } catch (const std::exception& e) {
    fail(std::string("the architecture read from the tensor shapes is not one circuitscope runs: ") + e.what());
  }
  return c;
}

// TransformerLens's attn.mask buffer must be the causal mask over the whole context.
void check_causal_mask(const Entry& en, int n_ctx) {
  const std::uint8_t* p = en.bytes.data();
  for (int q = 0; q < n_ctx; ++q)
    for (int k = 0; k < n_ctx; ++k) {
      const std::uint8_t v = p[static_cast<std::size_t>(q) * static_cast<std::size_t>(n_ctx) + static_cast<std::size_t>(k)];
      const std::string at = " at query " + std::to_string(q) + ", key " + std::to_string(k);
      if (v > 1) fail("tensor " + en.name + " holds the byte " + std::to_string(v) + at + ", not a BOOL; the file is corrupt");
      if ((v == 1) != (k <= q))
        fail("tensor " + en.name + " is not the causal mask (True where key <= query): it is " + (v ? "True" : "False") +
             at + "; circuitscope runs causal attention over the whole context (no local windows, no bidirectional attention)");
    }
}

// What a TransformerLens file's reading does once its values are in (finish_transformerlens).
struct TlFinish {
  bool has_tokenizer = false;  // __metadata__ carries one
  bool told_config = false;    // a config.json was given
  Processing processing;
};

// A model whose tensors wait for the data section's bytes, which ModelReader puts in them in file
// order; then, for a TransformerLens file, finish_transformerlens.
struct Filling {
  std::unique_ptr<ModelFile> m = std::make_unique<ModelFile>();  // entries point into it
  std::vector<Entry> entries;                                     // by offset, every byte of the section
  std::optional<TlFinish> tl;
};

// A safetensors file without circuitscope's metadata, read as model.state_dict() of a
// TransformerLens HookedTransformer: biases absent are zero; attn.mask and attn.IGNORE buffers
// are checked and dropped; any other tensor is refused (it would be left out of the forward pass).
Filling begin_transformerlens(const Header& h, const json* meta, const LoadOptions& opts) {
  Filling fill;
  ModelFile& m = *fill.m;
  m.cfg = infer_tl_config(h.doc, meta, opts.tl_config);
  const std::string* tok = meta ? meta_string(*meta, "tokenizer", false) : nullptr;
  m.tokenizer = tok ? tokenizer_from_meta(*tok) : Tokenizer::build_ids(m.cfg.d_vocab);
  if (m.tokenizer.size() != m.cfg.d_vocab)
    fail("the tokenizer in __metadata__ has " + std::to_string(m.tokenizer.size()) + " tokens but embed.W_E has " +
         std::to_string(m.cfg.d_vocab) + " rows; the file is inconsistent");
  Config without_biases = m.cfg;
  without_biases.use_bias = false;
  allocate(m, count_weights(without_biases), h.section_size, "the tensor shapes");

  const int n_ctx = m.cfg.n_ctx, n_layers = m.cfg.n_layers;
  const std::uint64_t section_size = h.section_size;
  const auto buffer = [&](const std::string& key, const json& e, Entry* out) {
    std::string rest;
    const int l = block_layer(key, &rest);
    if (l < 0 || l >= n_layers || (rest != "attn.mask" && rest != "attn.IGNORE"))
      fail("tensor " + clean(key) + " is not part of a TransformerLens model of this architecture (embed.W_E, "
           "pos_embed.W_pos, blocks.{l}.ln1/ln2.w/b, attn.W_Q/W_K/W_V/W_O, b_Q/b_K/b_V/b_O, mask, IGNORE, "
           "mlp.W_in/b_in/W_out/b_out, ln_final.w/b, unembed.W_U, b_U, and circuitscope's smear_alpha); circuitscope "
           "refuses it rather than leave it out of the forward pass");
    const bool mask = rest == "attn.mask";
    const std::string says = mask ? ", but pos_embed.W_pos gives n_ctx " + std::to_string(n_ctx) + ", so it must be "
                                  : ", but TransformerLens's IGNORE is a scalar, shape ";
    // TransformerLens 3.5 and later builds the causal mask on the fly and saves an empty [0, 0] one.
    const json& obj = entry_object(key, e);
    const bool empty_mask = mask && obj.contains("shape") && obj["shape"] == json::array({0, 0});
    *out = Entry{key, nullptr, read_entry(key, obj, mask ? (empty_mask ? Shape{0, 0} : Shape{n_ctx, n_ctx}) : Shape{},
                                          section_size, says, mask)};
  };
  std::vector<Entry> entries = collect_entries(h.doc, m.params, section_size, kTlSays, buffer, is_tl_bias);
  fill.entries = checked_file_order(std::move(entries), section_size);
  fill.tl = TlFinish{tok != nullptr, !opts.tl_config.empty(), opts.processing};
  return fill;
}

// A TransformerLens file's checks and processing once its values are read: the attention masks,
// the weight processing asked for, and the note saying what was read.
void finish_transformerlens(ModelFile& m, const std::vector<Entry>& entries, const TlFinish& how) {
  const int n_ctx = m.cfg.n_ctx;
  for (const Entry& en : entries)
    if (en.dest == nullptr && en.name.size() > 5 && en.name.compare(en.name.size() - 5, 5, ".mask") == 0 &&
        en.f.end > en.f.begin)
      check_causal_mask(en, n_ctx);

  const std::string pos = m.cfg.pos_embed == PosEmbed::Shortformer
                              ? "shortformer positions, as its __metadata__ says"
                              : "standard positions; a shortformer model's state dict looks the same, so such a file "
                                "needs positional_embedding_type in its __metadata__";
  const std::string told = !how.told_config ? "as its __metadata__ says" : "as its metadata or config.json says";
  const std::string norm = m.cfg.normalization == Norm::LN      ? "LayerNorm"
                           : m.cfg.normalization == Norm::LNPre ? "folded LayerNorm (LNPre), " + told
                                                                : "no normalization, " + told;
  const std::string mlp = m.cfg.d_mlp > 0 ? "MLPs of " + std::to_string(m.cfg.d_mlp) + " (" + act_name(m.cfg.act_fn) + ")"
                                          : "attention only";
  const bool had_bias = m.cfg.use_bias;
  const ProcessingReport rep = process_weights(m.params, how.processing);
  m.cfg = m.params.cfg;
  const auto joined = [](const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (const std::string& x : v) out += (out.empty() ? "" : sep) + x;
    return out;
  };
  const std::string processing =
      rep.applied.empty() ? std::string(" No TransformerLens processing was applied")
                          : " TransformerLens's processing was applied: " + joined(rep.applied, ", ");
  const std::string skipped = rep.skipped.empty() ? "." : " (not applied: " + joined(rep.skipped, "; ") + ").";
  const std::string words = how.has_tokenizer ? "The tokenizer is the one in the file's __metadata__."
                                : std::string("The file carries no tokenizer, so text is token ids separated by "
                                              "spaces (e.g. \"") +
                                      (m.cfg.d_vocab > 12 ? "12 7 7 3" : m.cfg.d_vocab > 1 ? "0 1 0 1" : "0 0 0") +
                                      "\") and token i shows as #i.";
  m.info = json{{"source", "transformerlens"},
                {"note", "A TransformerLens state dict: the architecture was read from the tensor shapes (" + norm + "; " +
                             mlp + "; " + pos + (had_bias ? "" : "; it has no biases") + ")." + processing + skipped +
                             " " + words},
                {"processing", {{"applied", rep.applied}, {"skipped", rep.skipped}}}};
}

// A file written by circuitscope: config, tokenizer and info in __metadata__.
Filling begin_circuitscope(const Header& h, const json& meta) {
  const std::string& format = *meta_string(meta, "format", true);
  if (format != "circuitscope")
    fail("__metadata__ format is \"" + clean(format) + "\", not \"circuitscope\"; this file was written by another tool");
  const std::string& version = *meta_string(meta, "format_version", true);
  if (version != "1")
    fail("format_version \"" + clean(version) +
         "\" is not supported; this build reads version 1 (was the file written by a newer circuitscope?)");

  Filling fill;
  ModelFile& m = *fill.m;
  {
    const json cj = parse_meta_json(*meta_string(meta, "config", true), "config");
    try {
      m.cfg = config_from_json(cj);
      check_size(m.cfg);
    } catch (const std::exception& e) {
      fail(std::string("the stored config is invalid: ") + e.what());
    }
  }
  m.tokenizer = tokenizer_from_meta(*meta_string(meta, "tokenizer", true));
  if (m.tokenizer.size() != m.cfg.d_vocab)
    fail("the tokenizer has " + std::to_string(m.tokenizer.size()) + " tokens but the config says d_vocab is " +
         std::to_string(m.cfg.d_vocab) + "; the file is inconsistent");
  if (const std::string* info = meta_string(meta, "info", false)) m.info = parse_meta_json(*info, "info");

  allocate(m, count_weights(m.cfg), h.section_size, "the config");
  const Config& c = m.cfg;
  const auto unknown = [&c](const std::string& key, const json&, Entry*) {
    fail("tensor " + clean(key) + " is not part of this architecture (" + std::to_string(c.n_layers) + " layers, " +
         (c.use_bias ? "with" : "no") + " biases, " + (c.smeared_keys ? "with" : "no") + " smeared keys, pos_embed " +
         pos_embed_name(c.pos_embed) + ")");
  };
  const std::vector<Entry> entries =
      collect_entries(h.doc, m.params, h.section_size, ", config says ", unknown, [](const std::string&) { return false; });
  // circuitscope writes F32 or F16, never BF16. F16 and BF16 take the same bytes, so a tensor
  // relabelled from one to the other would load, with other values: refuse it instead.
  for (const Entry& e : entries)
    if (e.f.dtype == Stored::BF16)
      fail("tensor " + e.name + " is stored as BF16, which circuitscope never writes (it saves F32 or F16); the file was "
           "changed after it was saved. Save it again with circuitscope, in F32 or F16");
  fill.entries = checked_file_order(std::move(entries), h.section_size);
  return fill;
}

}  // namespace

std::vector<std::uint8_t> save_model_bytes(const ModelFile& m, Dtype dtype) {
  const Config& cfg = m.cfg;
  try {
    check_size(cfg);
  } catch (const std::exception& e) {
    fail(std::string("cannot save: ") + e.what());
  }
  if (m.params.cfg != cfg)
    fail("cannot save: the parameters were made for a different architecture than the config being saved");
  if (m.tokenizer.size() != cfg.d_vocab)
    fail("cannot save: the tokenizer has " + std::to_string(m.tokenizer.size()) + " tokens but config d_vocab is " +
         std::to_string(cfg.d_vocab));

  // The shapes the loader will demand, checked now so that we never write a file we cannot read.
  std::vector<std::pair<std::string, Shape>> layout;
  {
    Params<float> ref = make_params<float>(cfg);
    for_each_param(ref, [&](const std::string& n, const Tensor<float>& t) { layout.emplace_back(n, t.shape); });
  }
  const auto tensors = named_params(m.params);
  if (tensors.size() != layout.size())
    fail("cannot save: the parameters hold " + std::to_string(tensors.size()) + " tensors but the config calls for " +
         std::to_string(layout.size()));

  std::string info_text;
  try {
    info_text = m.info.dump();
  } catch (const json::exception&) {
    fail("cannot save: the info cannot be written as JSON (it holds text that is not valid UTF-8)");
  }
  if (!depth_ok(info_text.data(), info_text.data() + info_text.size(), kMaxJsonDepth))
    fail("cannot save: the info nests JSON more than " + std::to_string(kMaxJsonDepth) + " levels deep");

  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "circuitscope"},
                            {"format_version", "1"},
                            {"config", config_to_json(cfg).dump()},
                            {"tokenizer", m.tokenizer.to_json().dump()},
                            {"info", info_text}};
  const std::size_t isz = itemsize(dtype);
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string& name = tensors[i].first;
    const Tensor<float>& t = *tensors[i].second;
    if (name != layout[i].first || t.shape != layout[i].second)
      fail("cannot save: tensor " + name + " has shape " + shape_str(t.shape) + ", config says " +
           shape_str(layout[i].second));
    if (t.data.size() != shape_numel(t.shape))
      fail("cannot save: tensor " + name + " holds " + std::to_string(t.data.size()) + " values but its shape " +
           shape_str(t.shape) + " needs " + std::to_string(shape_numel(t.shape)));
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.data.size()) * isz;
    header[name] = {{"dtype", dtype_name(dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }

  std::string head = header.dump();
  while (head.size() % 8 != 0) head += ' ';
  if (offset > std::numeric_limits<std::size_t>::max() - 8 - head.size())
    fail("cannot save: the model is too large to hold in memory as one file");

  std::vector<std::uint8_t> out;
  out.reserve(static_cast<std::size_t>(8 + head.size() + offset));
  put_u64le(out, head.size());
  out.insert(out.end(), head.begin(), head.end());
  for (const auto& [name, tp] : tensors) {
    const std::vector<float>& v = tp->data;
    for (std::size_t k = 0; k < v.size(); ++k) {
      const float x = v[k];
      if (!std::isfinite(x))
        fail("cannot save: tensor " + name + " has a non-finite value (" + (std::isnan(x) ? "NaN" : "Inf") +
             ") at index " + std::to_string(k) + "; training probably diverged");
      if (std::fabs(x) > kMaxAbsWeight)
        fail("cannot save: tensor " + name + " has the value " + float_text(x) + " at index " +
             std::to_string(k) + ", beyond the +-" + float_text(kMaxAbsWeight) +
             " a model file may hold; training probably diverged");
      if (dtype == Dtype::F32) {
        std::uint32_t bits;
        std::memcpy(&bits, &x, 4);
        for (int b = 0; b < 4; ++b) out.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
      } else {
        const Eigen::half h(x);
        if (!std::isfinite(static_cast<float>(h)))
          fail("cannot save: tensor " + name + " has the value " + std::to_string(x) + " at index " +
               std::to_string(k) + ", beyond the F16 range (65504); save as F32 instead");
        const std::uint16_t bits = Eigen::numext::bit_cast<std::uint16_t>(h);
        out.push_back(static_cast<std::uint8_t>(bits & 0xFF));
        out.push_back(static_cast<std::uint8_t>(bits >> 8));
      }
    }
  }
  return out;
}

namespace {

// The model a safetensors header describes, its tensors waiting for their values.
Filling begin_model(const Header& h, const LoadOptions& opts) {
  const auto mit = h.doc.find("__metadata__");
  if (mit != h.doc.end() && !mit->is_object())
    fail("__metadata__ is " + a_type(*mit) + ", not an object of strings");
  const json* meta = mit == h.doc.end() ? nullptr : &*mit;
  // Ours say so (or carry our config); anything else is read as a TransformerLens state dict.
  bool ours = false;
  if (meta) {
    const auto format = meta->find("format");
    ours = (format != meta->end() && *format == "circuitscope") || meta->contains("config") ||
           meta->contains("format_version");
  }
  if (ours && !opts.tl_config.empty())
    fail("a TransformerLens config.json was given with a circuitscope model file, which carries its own config");
  Filling fill = ours ? begin_circuitscope(h, *meta) : begin_transformerlens(h, meta, opts);
  // The tokenizer.json is read before the weights arrive, so a wrong one is refused at once.
  ModelFile& m = *fill.m;
  if (!opts.tokenizer_json.empty()) {
    if (m.tokenizer.kind() != Tokenizer::Kind::Ids)
      throw std::invalid_argument(std::string("tokenizer.json: the model file carries its own tokenizer (") + m.tokenizer.kind_name() +
                                  ", " + std::to_string(m.tokenizer.size()) + " tokens); a tokenizer.json is only for files without one");
    m.tokenizer = Tokenizer::build_hf(opts.tokenizer_json, m.cfg.d_vocab, opts.bos_token);
  }
  return fill;
}

}  // namespace

struct ModelReader::State {
  std::uint64_t size = 0, received = 0;
  LoadOptions opts;
  bool broken = false;     // a part was refused: the reader takes nothing more
  bool pth = false;        // a torch.save zip archive, kept whole (its index comes last)
  std::uint64_t head_len = 0;      // 8 + the header's length, once the first 8 bytes are in
  std::vector<std::uint8_t> head;  // the bytes before the data section (a .pth file: all of them)
  std::optional<Filling> fill;     // once the header is read
  std::uint64_t pos = 0;           // bytes of the data section taken
  std::size_t next = 0;            // the entry holding byte `pos`
  std::uint8_t carry[4] = {};      // a value split between two writes

  // Takes the next bytes of the data section into the tensors (or a buffer's bytes).
  void take_section(const std::uint8_t* p, std::size_t n) {
    std::vector<Entry>& es = fill->entries;
    while (n > 0) {
      while (next < es.size() && es[next].f.end <= pos) ++next;  // done, or empty
      Entry& en = es[next];  // checked_file_order: the entries cover the section without a gap
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, en.f.end - pos));
      if (en.dest == nullptr) en.bytes.insert(en.bytes.end(), p, p + take);
      else take_values(en, static_cast<std::size_t>(pos - en.f.begin), p, take);
      pos += take;
      p += take;
      n -= take;
    }
  }

  // Bytes [off, off + n) of tensor en's values, appended as whole values arrive.
  void take_values(const Entry& en, std::size_t off, const std::uint8_t* p, std::size_t n) {
    const std::size_t isz = stored_size(en.f.dtype);
    if (const std::size_t r = off % isz) {  // the end of a value begun in the last write
      const std::size_t c = std::min(isz - r, n);
      std::memcpy(carry + r, p, c);
      p += c;
      n -= c;
      if (r + c < isz) return;
      append_values(en, carry, 1);
    }
    append_values(en, p, n / isz);
    std::memcpy(carry, p + (n / isz) * isz, n % isz);
  }
};

ModelReader::ModelReader(std::uint64_t size, LoadOptions opts) : s_(std::make_unique<State>()) {
  s_->size = size;
  s_->opts = std::move(opts);
}
ModelReader::ModelReader(ModelReader&&) noexcept = default;
ModelReader& ModelReader::operator=(ModelReader&&) noexcept = default;
ModelReader::~ModelReader() = default;


void ModelReader::write(const std::uint8_t* data, std::size_t n) {
  State& s = *s_;
  if (s.broken) fail("an earlier part of the file was refused, so the rest is not read");
  try {
    if (n > s.size - s.received)
      fail("more than the file's " + std::to_string(s.size) + " bytes were given (did the file change while it was read?)");
    if (data == nullptr && n != 0) fail("no data was given to read");
    s.received += n;
    while (n > 0) {
      if (s.pth) {
        s.head.insert(s.head.end(), data, data + n);
        return;
      }
      if (s.fill) {
        s.take_section(data, n);
        return;
      }
      // The first 8 bytes, then the header: gathered until complete.
      const std::uint64_t want = s.head_len ? s.head_len : std::min<std::uint64_t>(8, s.size);
      const std::size_t c = static_cast<std::size_t>(std::min<std::uint64_t>(n, want - s.head.size()));
      s.head.insert(s.head.end(), data, data + c);
      data += c;
      n -= c;
      if (s.head.size() < want) continue;
      if (s.head_len == 0) {
        if (looks_like_pth(s.head.data(), s.head.size())) {
          if (s.size > kMaxPthFileBytes)  // the archive is kept whole: refuse a huge one before holding it
            fail("the .pth file is " + std::to_string(s.size) + " bytes; circuitscope reads .pth files of at most " +
                 std::to_string(kMaxPthFileBytes >> 30) + " GB");
          s.pth = true;
          s.head.reserve(static_cast<std::size_t>(s.size));
          continue;
        }
        if (s.size < 8) break;  // finish() says the file is too short
        s.head_len = 8 + header_length(s.head.data(), s.size);
        if (s.head.size() < s.head_len) continue;
      }
      s.fill = begin_model(parse_header(s.head.data(), s.size), s.opts);
      std::vector<std::uint8_t>().swap(s.head);
    }
  } catch (...) {
    s.broken = true;
    throw;
  }
}

ModelFile ModelReader::finish() {
  State& s = *s_;
  if (s.broken) fail("an earlier part of the file was refused, so the rest is not read");
  s.broken = true;  // finish() is called once
  if (s.received != s.size)
    fail("only " + std::to_string(s.received) + " of the file's " + std::to_string(s.size) +
         " bytes were read (was the file cut short while it was read?)");
  if (s.pth) {
    // torch.save's zip archive (the hub's .pth files): read, without running anything, as the
    // safetensors file of the same state dict.
    std::vector<std::uint8_t> st = pth_to_safetensors(s.head.data(), s.head.size());
    std::vector<std::uint8_t>().swap(s.head);
    return load_model_bytes(st.data(), st.size(), s.opts);
  }
  if (!s.fill) parse_header(s.head.data(), s.size);  // a file too short for its header: says so
  Filling& fill = *s.fill;
  // Tensors the file may leave out (a TransformerLens file's biases) are zero.
  for_each_tensor(fill.m->params, [](Tensor<float>& t) { t.data.resize(shape_numel(t.shape)); });
  if (fill.tl) finish_transformerlens(*fill.m, fill.entries, *fill.tl);
  return std::move(*fill.m);
}

ModelFile load_model_bytes(const std::uint8_t* data, std::size_t size, const LoadOptions& opts) {
  ModelReader reader(size, opts);
  reader.write(data, size);
  return reader.finish();
}

void check_output_path(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return;  // a new file
  if (st.type() == std::filesystem::file_type::regular) return;          // replacing a file
  const char* what = st.type() == std::filesystem::file_type::directory ? "a directory"
                     : st.type() == std::filesystem::file_type::symlink ? "a symbolic link"
                     : st.type() == std::filesystem::file_type::character || st.type() == std::filesystem::file_type::block
                         ? "a device"
                     : st.type() == std::filesystem::file_type::fifo ? "a named pipe"
                                                                      : "not a regular file";
  throw std::runtime_error(path + " exists and is " + what +
                           "; circuitscope writes only new files or replaces regular ones, so give another path");
}

void save_model_file(const std::string& path, const ModelFile& m, Dtype dtype) {
  std::vector<std::uint8_t> bytes;
  try {
    bytes = save_model_bytes(m, dtype);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(with_path(path, e.what()));
  }
  try {
    check_output_path(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("model file " + std::string(e.what()));
  }
  // Write a temporary file and rename it, so a failed write never destroys an older model. The
  // temporary is created exclusively ("x"): a leftover regular file is removed first, and
  // anything else there (a link, a device) is refused rather than written through.
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  if (std::filesystem::symlink_status(tmp, ec).type() == std::filesystem::file_type::regular) std::remove(tmp.c_str());
  std::FILE* f = std::fopen(tmp.c_str(), "wbx");
  if (!f)
    throw std::runtime_error("model file " + path + ": cannot create " + tmp +
                             " for writing (does the directory exist and is it writable, and is " + tmp +
                             " free?)");
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !wrote) {
    std::remove(tmp.c_str());
    throw std::runtime_error("model file " + path + ": writing " + std::to_string(bytes.size()) +
                             " bytes failed (is the disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("model file " + path + ": cannot replace it with the newly written " + tmp);
  }
}

ModelFile load_model_file(const std::string& path, const LoadOptions& opts) {
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (!ec && type != std::filesystem::file_type::regular && type != std::filesystem::file_type::not_found)
    throw std::runtime_error("model file " + path + ": it is not a regular file (a directory, device or pipe?)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("model file " + path + ": cannot open it (check that it exists and is readable)");
  f.seekg(0, std::ios::end);
  const std::streamoff len = f.tellg();
  if (len < 0) throw std::runtime_error("model file " + path + ": cannot tell its size (is it a regular file?)");
  if (static_cast<std::uint64_t>(len) > std::numeric_limits<std::size_t>::max())
    throw std::runtime_error("model file " + path + ": it is too large to load into memory");
  f.seekg(0, std::ios::beg);
  // Read in pieces: a safetensors file's values go straight into the tensors.
  try {
    ModelReader reader(static_cast<std::uint64_t>(len), opts);
    std::vector<std::uint8_t> piece(std::min<std::uint64_t>(static_cast<std::uint64_t>(len), 16u << 20));
    for (std::uint64_t left = static_cast<std::uint64_t>(len); left > 0;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, piece.size()));
      f.read(reinterpret_cast<char*>(piece.data()), static_cast<std::streamsize>(n));
      if (!f) throw std::ios_base::failure("short read");
      reader.write(piece.data(), n);
      left -= n;
    }
    return reader.finish();
  } catch (const std::ios_base::failure&) {
    throw std::runtime_error("model file " + path + ": reading it failed part way through");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(with_path(path, e.what()));
  }
}

}  // namespace cs
