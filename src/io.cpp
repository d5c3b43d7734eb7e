// Model files: a safetensors writer and a strict loader that explains what is wrong with a bad file.
#include "io.h"

#include "checks.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <new>
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
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("the " + what + " in __metadata__ " + json_parse_problem(text, e));
  }
}

std::size_t itemsize(Dtype d) { return d == Dtype::F32 ? 4 : 2; }
const char* dtype_name(Dtype d) { return d == Dtype::F32 ? "F32" : "F16"; }

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

// Where one tensor's bytes are, as its header entry says.
struct Found {
  Dtype dtype = Dtype::F32;
  std::uint64_t begin = 0, end = 0;
  bool seen = false;
};
using Expected = std::vector<std::pair<std::string, Tensor<float>*>>;

// Every byte of the data section belongs to exactly one tensor.
void check_layout(const std::vector<Found>& found, const Expected& expected, std::uint64_t section_size) {
  std::vector<std::size_t> order(expected.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return found[a].begin != found[b].begin ? found[a].begin < found[b].begin : found[a].end < found[b].end;
  });
  std::uint64_t cursor = 0;
  std::size_t last = order.size();  // the tensor that reaches furthest so far
  for (std::size_t i : order) {
    const Found& f = found[i];
    if (f.begin == f.end) continue;
    if (last != order.size() && f.begin < cursor)
      fail("tensors " + expected[last].first + " and " + expected[i].first + " overlap in the data section (bytes " +
           std::to_string(f.begin) + " to " + std::to_string(std::min(cursor, f.end)) + "); the file is corrupt");
    if (f.begin > cursor)
      fail("bytes " + std::to_string(cursor) + " to " + std::to_string(f.begin) +
           " of the data section belong to no tensor (a hole); the file is corrupt");
    cursor = f.end;
    last = i;
  }
  if (cursor < section_size)
    fail("the data section has " + std::to_string(section_size - cursor) +
         " trailing bytes after the last tensor; the file is corrupt");
}

// Reads every tensor's values, refusing NaN, Inf and magnitudes past kMaxAbsWeight (config.h).
void read_values(const std::vector<Found>& found, const Expected& expected, const std::uint8_t* section) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Found& f = found[i];
    std::vector<float>& out = expected[i].second->data;
    const std::uint8_t* p = section + static_cast<std::size_t>(f.begin);
    const std::size_t isz = itemsize(f.dtype);
    for (std::size_t k = 0; k < out.size(); ++k, p += isz) {
      const float x = f.dtype == Dtype::F32 ? read_f32(p) : read_f16(p);
      if (!std::isfinite(x))
        fail("tensor " + expected[i].first + " has a non-finite value (" + (std::isnan(x) ? "NaN" : "Inf") +
             ") at index " + std::to_string(k) + "; the model diverged during training or the file is corrupt");
      if (std::fabs(x) > kMaxAbsWeight)
        fail("tensor " + expected[i].first + " has the value " + float_text(x) + " at index " +
             std::to_string(k) + "; circuitscope refuses weights beyond +-" + float_text(kMaxAbsWeight) +
             " (trained weights are of order 1, and larger ones overflow a forward pass): the file is corrupt");
      out[k] = x;
    }
  }
}

// One tensor's header entry e: its dtype, a shape equal to `want` and offsets whose length fits
// them, inside the data section.
Found read_entry(const std::string& name, const json& e, const Shape& want, std::uint64_t section_size) {
  Found f;
  f.seen = true;
  const auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) fail("tensor " + name + " has no dtype string; circuitscope reads F32 and F16");
  const std::string& dts = dt->get_ref<const std::string&>();
  if (dts == "F32") f.dtype = Dtype::F32;
  else if (dts == "F16") f.dtype = Dtype::F16;
  else fail("tensor " + name + " has dtype " + clean(dts) + "; circuitscope reads F32 and F16");

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
  if (shape != want)
    fail("tensor " + name + " has shape " + shape_str(shape) + ", config says " + shape_str(want));

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
  if (f.end - f.begin != numel * itemsize(f.dtype))
    fail("tensor " + name + " has " + std::to_string(f.end - f.begin) + " bytes of data but shape " +
         shape_str(shape) + " in " + dtype_name(f.dtype) + " needs " + std::to_string(numel * itemsize(f.dtype)));
  return f;
}

std::string with_path(const std::string& path, const std::string& msg) {
  const std::string prefix = "model file: ";
  if (msg.compare(0, prefix.size(), prefix) == 0) return "model file " + path + ": " + msg.substr(prefix.size());
  return "model file " + path + ": " + msg;
}

}  // namespace

std::vector<std::uint8_t> save_model_bytes(const ModelFile& m, Dtype dtype) {
  const Config& cfg = m.cfg;
  try {
    cfg.validate();
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

ModelFile load_model_bytes(const std::uint8_t* data, std::size_t size) {
  if (data == nullptr && size != 0) fail("no data was given to read");
  if (size < 8)
    fail("the file is only " + std::to_string(size) +
         " bytes long, shorter than the 8-byte header length a safetensors file starts with (empty or truncated file?)");
  const std::uint64_t header_len = get_u64le(data);
  if (header_len > static_cast<std::uint64_t>(size) - 8)
    fail("header length " + std::to_string(header_len) + " is larger than the file (" + std::to_string(size) +
         " bytes): the file is truncated or not a safetensors file");
  if (header_len > kMaxHeaderBytes)
    fail("the header is " + std::to_string(header_len) + " bytes long; circuitscope reads headers of at most " +
         std::to_string(kMaxHeaderBytes >> 20) + " MB (a million-token vocabulary takes about 20 MB)");
  const char* hb = reinterpret_cast<const char*>(data) + 8;
  const char* he = hb + static_cast<std::size_t>(header_len);
  const std::uint8_t* section = data + 8 + static_cast<std::size_t>(header_len);
  const std::uint64_t section_size = static_cast<std::uint64_t>(size) - 8 - header_len;

  // --- header JSON ---
  if (!depth_ok(hb, he, kMaxJsonDepth))
    fail("the header nests JSON more than " + std::to_string(kMaxJsonDepth) +
         " levels deep; the file is corrupt or not a safetensors file");
  json header;
  try {
    header = json::parse(hb, he);
  } catch (const json::exception& e) {
    fail("the header " + json_parse_problem(std::string(hb, he), e) + "; the file is corrupt or not a safetensors file");
  }
  if (!header.is_object())
    fail("the header is " + a_type(header) + " in JSON, not an object; this is not a safetensors file");

  // --- metadata: format, config, tokenizer, info ---
  const auto mit = header.find("__metadata__");
  if (mit == header.end())
    fail("the header has no __metadata__, so there is no config or tokenizer; this safetensors file was not "
         "written by circuitscope");
  if (!mit->is_object())
    fail("__metadata__ is " + a_type(*mit) + ", not an object of strings");
  const json& meta = *mit;
  auto meta_string = [&](const char* key, bool required) -> const std::string* {
    const auto it = meta.find(key);
    if (it == meta.end()) {
      if (required)
        fail(std::string("__metadata__ has no \"") + key + "\"; this safetensors file was not written by circuitscope");
      return nullptr;
    }
    if (!it->is_string())
      fail(std::string("__metadata__ \"") + key + "\" is " + a_type(*it) + "; metadata values must be strings");
    return it->get_ptr<const std::string*>();
  };
  const std::string& format = *meta_string("format", true);
  if (format != "circuitscope")
    fail("__metadata__ format is \"" + clean(format) + "\", not \"circuitscope\"; this file was written by another tool");
  const std::string& version = *meta_string("format_version", true);
  if (version != "1")
    fail("format_version \"" + clean(version) +
         "\" is not supported; this build reads version 1 (was the file written by a newer circuitscope?)");

  ModelFile m;
  {
    const json cj = parse_meta_json(*meta_string("config", true), "config");
    try {
      m.cfg = config_from_json(cj);
    } catch (const std::exception& e) {
      fail(std::string("the stored config is invalid: ") + e.what());
    }
  }
  {
    const json tj = parse_meta_json(*meta_string("tokenizer", true), "tokenizer");
    try {
      m.tokenizer = Tokenizer::from_json(tj);
    } catch (const std::exception& e) {
      fail(std::string("the stored tokenizer is invalid: ") + e.what());
    }
  }
  if (m.tokenizer.size() != m.cfg.d_vocab)
    fail("the tokenizer has " + std::to_string(m.tokenizer.size()) + " tokens but the config says d_vocab is " +
         std::to_string(m.cfg.d_vocab) + "; the file is inconsistent");
  if (const std::string* info = meta_string("info", false)) m.info = parse_meta_json(*info, "info");

  // --- tensors ---
  // Refuse configs that need more memory than this file could possibly hold before allocating.
  const std::uint64_t need = count_weights(m.cfg);
  if (need > section_size / 2)
    fail("the config calls for " + std::to_string(need) + " weights (at least " + std::to_string(need * 2) +
         " bytes as F16) but the data section has only " + std::to_string(section_size) +
         " bytes: the file is truncated or its config does not match its tensors");
  try {
    m.params = make_params<float>(m.cfg);
  } catch (const std::bad_alloc&) {
    fail("there is not enough memory for the " + std::to_string(need) + " weights the config calls for");
  }
  const auto expected = named_params(m.params);
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < expected.size(); ++i) index.emplace(expected[i].first, i);

  std::vector<Found> found(expected.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string name = clean(it.key());
    const auto ix = index.find(it.key());
    if (ix == index.end())
      fail("tensor " + name + " is not part of this architecture (" + std::to_string(m.cfg.n_layers) + " layers, " +
           (m.cfg.use_bias ? "with" : "no") + " biases, " + (m.cfg.smeared_keys ? "with" : "no") +
           " smeared keys, pos_embed " + pos_embed_name(m.cfg.pos_embed) + ")");
    const json& e = it.value();
    if (!e.is_object())
      fail("the entry for tensor " + name + " is " + a_type(e) +
           ", not an object with dtype, shape and data_offsets");
    found[ix->second] = read_entry(name, e, expected[ix->second].second->shape, section_size);
  }
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (!found[i].seen) fail("tensor " + expected[i].first + " is missing");

  check_layout(found, expected, section_size);
  read_values(found, expected, section);
  return m;
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

ModelFile load_model_file(const std::string& path) {
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
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(len));
  if (!bytes.empty()) f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("model file " + path + ": reading it failed part way through");
  try {
    return load_model_bytes(bytes.data(), bytes.size());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(with_path(path, e.what()));
  }
}

}  // namespace cs
