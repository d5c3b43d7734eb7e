// Reads PyTorch .pth files without running them: a bounded zip reader, a pickle interpreter that knows only
// what a state dict needs (after PyTorch's weights_only unpickler), and a safetensors writer for the tensors.
#include "pth.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace cs {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error("model file: " + msg); }

// Limits. A state dict needs far less of each; the pickle ones keep a hostile data.pkl from making
// the reader hold more than some tens of bytes per byte of pickle.
constexpr std::uint64_t kMaxEntries = 100000;
constexpr std::uint64_t kMaxPickleBytes = 256ull << 20;
constexpr std::size_t kMaxStack = 10000;  // pickle's SETITEMS batches of 1000 pairs put 2000 items on it
constexpr std::size_t kMaxMarks = 1000;
constexpr std::size_t kMaxValues = 3000000;  // a state dict makes about 20 per tensor
constexpr std::size_t kMaxItems = 3000000;   // elements of tuples, lists and dicts, all together
constexpr std::size_t kMaxMemo = 3000000;
constexpr std::uint64_t kMaxStringBytes = 1u << 20;
constexpr std::size_t kMaxTensors = 100000;
constexpr int kMaxRank = 8;
constexpr std::size_t kMaxNameBytes = 300;
constexpr std::uint64_t kMaxOutputBytes = 2ull << 30;
constexpr std::uint64_t kMaxOutputPerInput = 8;  // stride-0 views may repeat a storage's elements, but not without end

const char* const kNotTorch = "; the file is corrupt or was not written by torch.save";

// A string for a message: printable ASCII kept, other bytes as \xNN, cut after `max` bytes.
std::string shown(const std::string& s, std::size_t max = 80) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}
std::string in_quotes(const std::string& s) { return "\"" + shown(s) + "\""; }

std::uint16_t u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }
std::uint32_t u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}
std::uint64_t u64(const std::uint8_t* p) { return u32(p) | std::uint64_t(u32(p + 4)) << 32; }

// CRC-32 (the zip polynomial), eight bytes a step.
struct CrcTables {
  std::uint32_t t[8][256];
  CrcTables() {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (int s = 1; s < 8; ++s)
      for (int i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};

std::uint32_t crc32(const std::uint8_t* p, std::uint64_t n) {
  static const CrcTables tables;
  const auto& T = tables.t;
  std::uint32_t c = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    const std::uint32_t a = c ^ u32(p), b = u32(p + 4);
    c = T[7][a & 0xFF] ^ T[6][(a >> 8) & 0xFF] ^ T[5][(a >> 16) & 0xFF] ^ T[4][a >> 24] ^ T[3][b & 0xFF] ^
        T[2][(b >> 8) & 0xFF] ^ T[1][(b >> 16) & 0xFF] ^ T[0][b >> 24];
  }
  for (; n > 0; --n) c = T[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// ------------------------------------------------------------------------------------------- zip

struct ZipEntry {
  std::string name;
  std::uint64_t header = 0;           // offset of its local header
  std::uint64_t begin = 0, size = 0;  // its (stored, uncompressed) data
  std::uint32_t crc = 0;
  std::uint16_t flags = 0;
};

// Replaces the central directory's 32-bit fields that say 0xFFFFFFFF by those of the ZIP64 extra
// field (id 1), which holds them in this order.
void read_zip64_extra(const std::uint8_t* extra, std::size_t len, std::uint64_t* usize, std::uint64_t* csize,
                      std::uint64_t* offset, const std::string& name) {
  for (std::size_t i = 0; i + 4 <= len;) {
    const std::size_t id = u16(extra + i), n = u16(extra + i + 2);
    if (n > len - i - 4) break;
    if (id == 1) {
      const std::uint8_t* f = extra + i + 4;
      std::size_t left = n;
      for (std::uint64_t* v : {usize, csize, offset}) {
        if (*v != 0xFFFFFFFFu) continue;
        if (left < 8) break;
        *v = u64(f);
        f += 8;
        left -= 8;
      }
      if (*usize != 0xFFFFFFFFu && *csize != 0xFFFFFFFFu && *offset != 0xFFFFFFFFu) return;
      break;
    }
    i += 4 + n;
  }
  fail("the zip entry " + in_quotes(name) + " says its size or offset is in a ZIP64 field, but has no such field" +
       kNotTorch);
}

void check_entry_name(const std::string& name) {
  if (name.empty()) fail(std::string("the zip archive has an entry with an empty name") + kNotTorch);
  if (name[0] == '/' || name.find("..") != std::string::npos || name.find('\\') != std::string::npos)
    fail("the zip entry " + in_quotes(name) +
         " has a name that starts with \"/\" or contains \"..\" or a backslash; torch.save never writes such names, "
         "and circuitscope refuses archives with paths that point outside themselves");
  for (const char ch : name)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      fail("the zip entry " + in_quotes(name) + " has a control character in its name" + kNotTorch);
}

// The entries of a zip archive, read from its end-of-central-directory record and central
// directory, each checked against its local header; entries must lie inside the file, apart.
std::vector<ZipEntry> read_zip(const std::uint8_t* d, std::uint64_t n) {
  if (n < 22)
    fail("the file is only " + std::to_string(n) + " bytes long, too short for a zip archive: it is truncated");
  // The end record (22 bytes and a comment) must end the file.
  std::uint64_t eocd = n;
  const std::uint64_t lowest = n - 22 > 65535 ? n - 22 - 65535 : 0;
  for (std::uint64_t p = n - 22 + 1; p-- > lowest;)
    if (u32(d + p) == 0x06054b50 && p + 22 + u16(d + p + 20) == n) {
      eocd = p;
      break;
    }
  if (eocd == n)
    fail(
        "the file starts like a zip archive but does not end with a zip end-of-central-directory record: it is "
        "truncated (an interrupted download?) or was not written by torch.save");
  const std::uint8_t* e = d + eocd;
  std::uint64_t disk = u16(e + 4), cd_disk = u16(e + 6), on_disk = u16(e + 8), count = u16(e + 10);
  std::uint64_t cd_size = u32(e + 12), cd_offset = u32(e + 16);
  std::uint64_t cd_limit = eocd;  // where the central directory must end by
  // torch.save (through miniz) always adds ZIP64 end records, normally repeating the classic numbers.
  if (eocd >= 20 && u32(e - 20) == 0x07064b50) {
    const std::uint64_t locator = eocd - 20, r = u64(e - 20 + 8);
    if (r > locator || locator - r < 56 || u32(d + r) != 0x06064b50)
      fail(std::string("the zip archive's ZIP64 locator points at no ZIP64 end-of-central-directory record") +
           kNotTorch);
    const std::uint8_t* z = d + r;
    const auto merge = [](std::uint64_t* classic, std::uint64_t wide, std::uint64_t saturated) {
      if (*classic == saturated) *classic = wide;
      return *classic == wide;
    };
    if (!merge(&disk, u32(z + 16), 0xFFFF) || !merge(&cd_disk, u32(z + 20), 0xFFFF) ||
        !merge(&on_disk, u64(z + 24), 0xFFFF) || !merge(&count, u64(z + 32), 0xFFFF) ||
        !merge(&cd_size, u64(z + 40), 0xFFFFFFFF) || !merge(&cd_offset, u64(z + 48), 0xFFFFFFFF))
      fail(std::string("the zip archive's ZIP64 end record disagrees with its classic end record") + kNotTorch);
    cd_limit = r;
  } else if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    fail(std::string("the zip archive's end record says its numbers are in a ZIP64 record, but there is none") +
         kNotTorch);
  }
  if (disk != 0 || cd_disk != 0 || on_disk != count)
    fail(
        "the zip archive says it spans several disks (a split archive), which torch.save never writes; join the parts "
        "into one file, or save the model again");
  if (count > kMaxEntries)
    fail("the zip archive has " + std::to_string(count) + " entries; circuitscope reads .pth files of at most " +
         std::to_string(kMaxEntries) + " (torch.save writes one per tensor storage, and a few more)");
  if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset)
    fail("the zip archive's central directory (offset " + std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
         " bytes) lies past the end of the file: it is truncated or corrupt");
  if (count * 46 > cd_size)
    fail("the zip archive's central directory (" + std::to_string(cd_size) + " bytes) is too short for the " +
         std::to_string(count) + " entries it claims; the file is corrupt");

  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<std::size_t>(count));
  std::set<std::string> names;
  std::vector<std::uint16_t> methods;
  const std::uint64_t cd_end = cd_offset + cd_size;
  std::uint64_t q = cd_offset;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (cd_end - q < 46 || u32(d + q) != 0x02014b50)
      fail("the zip archive's central directory is corrupt at entry " + std::to_string(i + 1) + " of " +
           std::to_string(count) + kNotTorch);
    const std::uint8_t* c = d + q;
    const std::uint64_t nlen = u16(c + 28), elen = u16(c + 30), clen = u16(c + 32);
    if (cd_end - q - 46 < nlen + elen + clen)
      fail("the zip archive's central directory ends in the middle of entry " + std::to_string(i + 1) + kNotTorch);
    ZipEntry en;
    en.name.assign(reinterpret_cast<const char*>(c + 46), static_cast<std::size_t>(nlen));
    en.flags = u16(c + 8);
    const std::uint16_t method = u16(c + 10);
    en.crc = u32(c + 16);
    std::uint64_t csize = u32(c + 20), usize = u32(c + 24);
    en.header = u32(c + 42);
    if (csize == 0xFFFFFFFF || usize == 0xFFFFFFFF || en.header == 0xFFFFFFFF)
      read_zip64_extra(c + 46 + nlen, static_cast<std::size_t>(elen), &usize, &csize, &en.header, en.name);
    check_entry_name(en.name);
    if (en.flags & 0x41)
      fail("the zip entry " + in_quotes(en.name) +
           " is encrypted; torch.save never encrypts, and circuitscope reads only plain archives");
    if (method != 0)
      fail("the zip entry " + in_quotes(en.name) + " is compressed (method " + std::to_string(method) +
           (method == 8 ? ", deflate" : "") +
           "); torch.save stores every entry uncompressed and circuitscope reads only such entries (was the file "
           "re-zipped? save it again with torch.save)");
    if (csize != usize)
      fail("the zip entry " + in_quotes(en.name) + " is stored uncompressed, yet its compressed size (" +
           std::to_string(csize) + ") differs from its size (" + std::to_string(usize) + "); the file is corrupt");
    en.size = csize;
    if (!names.insert(en.name).second) fail("the zip archive has two entries named " + in_quotes(en.name) + kNotTorch);
    entries.push_back(std::move(en));
    q += 46 + nlen + elen + clen;
  }

  for (ZipEntry& en : entries) {
    if (en.header > cd_offset || cd_offset - en.header < 30 || u32(d + en.header) != 0x04034b50)
      fail("the zip entry " + in_quotes(en.name) + " has no local header at offset " + std::to_string(en.header) +
           ", where the central directory says it starts: the file is truncated or corrupt");
    const std::uint8_t* l = d + en.header;
    const std::uint64_t lnlen = u16(l + 26), lelen = u16(l + 28);
    const std::uint64_t begin = en.header + 30 + lnlen + lelen;
    if (begin > cd_offset || en.size > cd_offset - begin)
      fail("the zip entry " + in_quotes(en.name) + " (" + std::to_string(en.size) + " bytes at offset " +
           std::to_string(begin) + ") runs past the start of the central directory, at " + std::to_string(cd_offset) +
           ": the file is truncated or corrupt");
    // Bit 3: the CRC and sizes come in a data descriptor after the data, the local header has zeros.
    const bool deferred = (u16(l + 6) & 8) != 0;
    const auto agrees = [deferred](std::uint64_t local, std::uint64_t central, bool may_be_wide) {
      return local == central || (deferred && local == 0) || (may_be_wide && local == 0xFFFFFFFF);
    };
    const bool same_name = lnlen == en.name.size() && std::memcmp(l + 30, en.name.data(), en.name.size()) == 0;
    if (!same_name || u16(l + 8) != 0 || (u16(l + 6) & 0x41) != 0 || !agrees(u32(l + 14), en.crc, false) ||
        !agrees(u32(l + 18), en.size, true) || !agrees(u32(l + 22), en.size, true))
      fail("the zip entry " + in_quotes(en.name) +
           "'s local header disagrees with the central directory (name, method, flags, CRC or sizes); the file is "
           "corrupt");
    en.begin = begin;
  }

  std::vector<const ZipEntry*> order;
  for (const ZipEntry& en : entries) order.push_back(&en);
  std::sort(order.begin(), order.end(), [](const ZipEntry* a, const ZipEntry* b) { return a->header < b->header; });
  for (std::size_t k = 1; k < order.size(); ++k)
    if (order[k]->header < order[k - 1]->begin + order[k - 1]->size)
      fail("the zip entries " + in_quotes(order[k - 1]->name) + " and " + in_quotes(order[k]->name) +
           " overlap in the file; torch.save never writes that (zip bombs do), so circuitscope refuses the file");
  return entries;
}

void check_crc(const std::uint8_t* data, const ZipEntry& en) {
  if (crc32(data + en.begin, en.size) != en.crc)
    fail("the zip entry " + in_quotes(en.name) +
         " fails its CRC-32 check: the file is corrupt (a damaged or partial download?)");
}

// The records torch.save writes: <archive>/data.pkl, the storages at <archive>/data/<key>, ...
struct Archive {
  const std::uint8_t* data = nullptr;
  std::uint64_t size = 0;
  std::vector<ZipEntry> entries;
  std::map<std::string, const ZipEntry*> by_name;
  const ZipEntry* pickle = nullptr;
  std::string prefix;  // "<archive>/"
};

Archive open_archive(const std::uint8_t* data, std::uint64_t size) {
  Archive a;
  a.data = data;
  a.size = size;
  a.entries = read_zip(data, size);
  std::vector<const ZipEntry*> pickles;
  for (const ZipEntry& en : a.entries) {
    a.by_name.emplace(en.name, &en);
    const std::size_t slash = en.name.find('/');
    if (slash != std::string::npos && slash > 0 && en.name.compare(slash, std::string::npos, "/data.pkl") == 0)
      pickles.push_back(&en);
  }
  if (pickles.empty())
    fail(
        "the zip archive has no <name>/data.pkl entry, so it is not a file torch.save wrote (torch.save writes "
        "archive/data.pkl, archive/data/0, ...); circuitscope reads state dicts saved with torch.save");
  if (pickles.size() > 1)
    fail("the zip archive has " + std::to_string(pickles.size()) + " data.pkl entries (" + in_quotes(pickles[0]->name) +
         ", " + in_quotes(pickles[1]->name) + "); torch.save writes one" + kNotTorch);
  a.pickle = pickles[0];
  a.prefix = a.pickle->name.substr(0, a.pickle->name.size() - 8);
  if (a.pickle->size > kMaxPickleBytes)
    fail("the pickle " + in_quotes(a.pickle->name) + " is " + std::to_string(a.pickle->size) +
         " bytes; circuitscope reads state dict pickles of at most " + std::to_string(kMaxPickleBytes >> 20) +
         " MB (a state dict takes about 300 bytes per tensor)");
  const auto bo = a.by_name.find(a.prefix + "byteorder");
  if (bo != a.by_name.end()) {
    check_crc(data, *bo->second);
    const std::string order(reinterpret_cast<const char*>(data + bo->second->begin),
                            static_cast<std::size_t>(std::min<std::uint64_t>(bo->second->size, 16)));
    if (order == "big")
      fail(
          "the .pth file was saved on a big-endian machine (its byteorder entry says \"big\"); circuitscope reads "
          "little-endian files only: load it with torch on any machine and save it again");
    if (order != "little")
      fail("the .pth file's byteorder entry says " + in_quotes(order) + ", neither \"little\" nor \"big\"" + kNotTorch);
  }
  check_crc(data, *a.pickle);
  return a;
}

// ---------------------------------------------------------------------------------------- pickle

enum class DType : std::uint8_t { F32, F16, BF16, Bool };
struct DTypeInfo {
  const char* storage;  // torch.<storage>
  const char* safetensors;
  std::uint64_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {"FloatStorage", "F32", 4}, {"HalfStorage", "F16", 2}, {"BFloat16Storage", "BF16", 2}, {"BoolStorage", "BOOL", 1}};
const DTypeInfo& dtype_info(DType t) { return kDTypes[static_cast<int>(t)]; }

// Storage types of dtypes circuitscope does not read, refused with what they hold.
// clang-format off
constexpr std::pair<const char*, const char*> kOtherStorages[] = {
    {"DoubleStorage", "float64"}, {"LongStorage", "int64"}, {"IntStorage", "int32"}, {"ShortStorage", "int16"},
    {"CharStorage", "int8"}, {"ByteStorage", "uint8"}, {"ComplexFloatStorage", "complex64"},
    {"ComplexDoubleStorage", "complex128"}, {"QInt8Storage", "qint8"}, {"QUInt8Storage", "quint8"},
    {"QInt32Storage", "qint32"}, {"QUInt4x2Storage", "quint4x2"}, {"QUInt2x4Storage", "quint2x4"},
    {"UntypedStorage", "untyped bytes"}};
// clang-format on

enum class Kind : std::uint8_t {
  None,
  Bool,
  Int,
  Float,
  Str,
  Tuple,
  List,
  Dict,
  OrderedDict,
  Function,
  StorageType,
  Storage,
  Tensor
};
enum class Fn : std::uint8_t { OrderedDict, RebuildTensorV2, RebuildTensor, RebuildParameter };
const char* fn_name(std::int64_t f) {
  switch (static_cast<Fn>(f)) {
    case Fn::OrderedDict: return "collections.OrderedDict";
    case Fn::RebuildTensorV2: return "torch._utils._rebuild_tensor_v2";
    case Fn::RebuildTensor: return "torch._utils._rebuild_tensor";
    case Fn::RebuildParameter: return "torch._utils._rebuild_parameter";
  }
  return "?";
}

// A pickle object. Objects live in one array and refer to each other by index, so that no
// structure a file builds (deep, shared or cyclic) needs recursion to walk or free.
struct Value {
  Kind kind = Kind::None;
  std::uint32_t ref = 0;  // Str: strings_; Tuple: first item in tuple_items_; List, Dict, OrderedDict: containers_;
                          // Storage: storages_; Tensor: tensors_
  std::int64_t num = 0;   // Bool, Int; Tuple: its length; Function: Fn; StorageType: DType
  double real = 0;        // Float
};

struct StorageRec {
  std::string key;
  DType dtype = DType::F32;
  const std::uint8_t* bytes = nullptr;
  std::uint64_t numel = 0;
};

struct TensorRec {
  std::uint32_t storage = 0;
  std::uint64_t offset = 0, numel = 0;
  int rank = 0;
  std::array<std::uint64_t, kMaxRank> size{}, stride{};
};

struct Op {
  std::uint8_t code;
  const char* name;
};
// clang-format off
constexpr Op kOpNames[] = {
    {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"}, {'F', "FLOAT"}, {'I', "INT"},
    {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"}, {'N', "NONE"}, {'P', "PERSID"},
    {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"}, {'X', "BINUNICODE"}, {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"},
    {'}', "EMPTY_DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"}, {'j', "LONG_BINGET"},
    {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"}, {'r', "LONG_BINPUT"},
    {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"}, {'u', "SETITEMS"}, {'G', "BINFLOAT"}, {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"}, {0x80, "PROTO"}, {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"},
    {0x85, "TUPLE1"}, {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"}, {0x8a, "LONG1"},
    {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
    {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}};
// clang-format on

const char* op_name(std::uint8_t code) {
  for (const Op& o : kOpNames)
    if (o.code == code) return o.name;
  return nullptr;
}

std::string hex_byte(std::uint8_t b) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02x", b);
  return s;
}

struct NamedTensor {
  std::string name;
  std::uint32_t tensor;
};

// Interprets data.pkl. Nothing is ever called: GLOBAL yields a tag for one of the few functions a
// state dict uses, and REDUCE with such a tag builds the object it describes.
class Unpickler {
 public:
  explicit Unpickler(const Archive& a)
      : a_(a), p_(a.data + a.pickle->begin), n_(a.pickle->size), where_(a.pickle->name) {}

  // Runs data.pkl to its STOP and returns the tensors of the state dict it holds, in dict order.
  std::vector<NamedTensor> state_dict() { return named_tensors(run()); }
  const TensorRec& tensor(std::uint32_t t) const { return tensors_[t]; }
  const StorageRec& storage(std::uint32_t s) const { return storages_[s]; }

 private:
  const Archive& a_;
  const std::uint8_t* p_;
  std::uint64_t n_, pos_ = 0, op_pos_ = 0;
  std::uint8_t op_ = 0;
  std::string where_;
  std::vector<Value> values_;
  std::vector<std::string> strings_;
  std::vector<std::uint32_t> tuple_items_;
  std::vector<std::vector<std::uint32_t>> containers_;  // list items, or dict keys and values alternating
  std::size_t items_ = 0;
  std::vector<StorageRec> storages_;
  std::map<std::string, std::uint32_t> storage_index_;
  std::vector<TensorRec> tensors_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;  // stack heights at each MARK
  std::unordered_map<std::uint32_t, std::uint32_t> memo_;

  [[noreturn]] void bad(const std::string& msg) const {
    fail(msg + " (at byte " + std::to_string(op_pos_) + " of " + in_quotes(where_) + ")");
  }
  std::string pk() const { return "the .pth file's pickle "; }
  std::string op_str() const {
    const char* name = op_name(op_);
    return std::string(name ? name : "?") + " (" + hex_byte(op_) + ")";
  }

  // --- objects and the stack
  std::uint32_t make(const Value& v) {
    if (values_.size() >= kMaxValues)
      bad(pk() + "builds more than " + std::to_string(kMaxValues) +
          " objects; a state dict needs about 20 per tensor, so circuitscope refuses the file as crafted");
    values_.push_back(v);
    return static_cast<std::uint32_t>(values_.size() - 1);
  }
  std::uint32_t make(Kind k, std::int64_t num = 0) {
    Value v;
    v.kind = k;
    v.num = num;
    return make(v);
  }
  std::uint32_t make_container(Kind k) {
    Value v;
    v.kind = k;
    v.ref = static_cast<std::uint32_t>(containers_.size());
    const std::uint32_t id = make(v);
    containers_.emplace_back();
    return id;
  }
  void count_items(std::size_t n) {
    items_ += n;
    if (items_ > kMaxItems)
      bad(pk() + "puts more than " + std::to_string(kMaxItems) +
          " items into tuples, lists and dicts; a state dict needs far fewer, so circuitscope refuses the file as "
          "crafted");
  }
  void push(std::uint32_t v) {
    if (stack_.size() >= kMaxStack)
      bad(pk() + "holds more than " + std::to_string(kMaxStack) +
          " objects on its stack at once (deep nesting); a state dict needs a few thousand at most, so circuitscope "
          "refuses the file as crafted");
    stack_.push_back(v);
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void need_stack(std::size_t k) const {
    if (stack_.size() - floor() < k)
      bad(pk() + "uses the opcode " + op_str() + " with too few objects on its stack" + kNotTorch);
  }
  std::uint32_t pop() {
    need_stack(1);
    const std::uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::uint32_t& top() {
    need_stack(1);
    return stack_.back();
  }
  // Pops the innermost MARK and returns the stack height it had; the items above it are the caller's.
  std::size_t pop_mark() {
    if (marks_.empty()) bad(pk() + "uses the opcode " + op_str() + " without a MARK before it" + kNotTorch);
    const std::size_t h = marks_.back();
    marks_.pop_back();
    return h;
  }
  // The object just below a MARK that was at stack height h (SETITEMS and APPENDS add to it).
  std::uint32_t below_mark(std::size_t h) const {
    if (h == 0 || h - 1 < floor())
      bad(pk() + "uses the opcode " + op_str() + " with nothing below its MARK to add to" + kNotTorch);
    return stack_[h - 1];
  }
  // The dict or OrderedDict that SETITEM(S) act on.
  std::vector<std::uint32_t>& dict_at(std::uint32_t v) {
    const Value& d = values_[v];
    if (d.kind != Kind::Dict && d.kind != Kind::OrderedDict)
      bad(pk() + "uses the opcode " + op_str() + " to set an item of " + describe(v) + ", which is not a dict" +
          kNotTorch);
    return containers_[d.ref];
  }
  std::vector<std::uint32_t>& list_at(std::uint32_t v) {
    const Value& l = values_[v];
    if (l.kind != Kind::List)
      bad(pk() + "uses the opcode " + op_str() + " to append to " + describe(v) + ", which is not a list" + kNotTorch);
    return containers_[l.ref];
  }
  std::uint32_t make_tuple(const std::uint32_t* items, std::size_t n) {
    count_items(n);
    Value v;
    v.kind = Kind::Tuple;
    v.ref = static_cast<std::uint32_t>(tuple_items_.size());
    v.num = static_cast<std::int64_t>(n);
    tuple_items_.insert(tuple_items_.end(), items, items + n);
    return make(v);
  }
  std::vector<std::uint32_t> tuple_of(std::uint32_t v) const {
    const Value& t = values_[v];
    const auto first = tuple_items_.begin() + t.ref;
    return std::vector<std::uint32_t>(first, first + static_cast<std::ptrdiff_t>(t.num));
  }
  const std::string& str(std::uint32_t v) const { return strings_[values_[v].ref]; }
  bool is(std::uint32_t v, Kind k) const { return values_[v].kind == k; }

  std::string describe(std::uint32_t id) const {
    const Value& v = values_[id];
    switch (v.kind) {
      case Kind::None: return "None";
      case Kind::Bool: return std::string("a bool (") + (v.num ? "True" : "False") + ")";
      case Kind::Int: return "an int (" + std::to_string(v.num) + ")";
      case Kind::Float: return "a float";
      case Kind::Str: return "a string (" + in_quotes(str(id)) + ")";
      case Kind::Tuple: return "a tuple of " + std::to_string(v.num) + (v.num == 1 ? " item" : " items");
      case Kind::List: return "a list";
      case Kind::Dict: return "a dict";
      case Kind::OrderedDict: return "an OrderedDict";
      case Kind::Function: return std::string("the function ") + fn_name(v.num);
      case Kind::StorageType:
        return std::string("the storage type torch.") + dtype_info(static_cast<DType>(v.num)).storage;
      case Kind::Storage: return "a storage (not a tensor)";
      case Kind::Tensor: return "a tensor";
    }
    return "an object";
  }

  // --- reading data.pkl
  const std::uint8_t* take(std::uint64_t k) {
    if (k > n_ - pos_)
      bad(pk() + "ends in the middle of its opcode " + op_str() + ": " + in_quotes(where_) +
          " is truncated or corrupt");
    const std::uint8_t* at = p_ + pos_;
    pos_ += k;
    return at;
  }
  std::uint32_t read_string(std::uint64_t len) {
    if (len > kMaxStringBytes)
      bad(pk() + "has a string of " + std::to_string(len) +
          " bytes; a state dict's strings are names of at most a few "
          "hundred bytes, and circuitscope reads strings of at most " +
          std::to_string(kMaxStringBytes >> 20) + " MB");
    const std::uint8_t* s = take(len);
    Value v;
    v.kind = Kind::Str;
    v.ref = static_cast<std::uint32_t>(strings_.size());
    const std::uint32_t id = make(v);
    strings_.emplace_back(reinterpret_cast<const char*>(s), static_cast<std::size_t>(len));
    return id;
  }
  std::string read_line() {
    const std::uint64_t left = n_ - pos_, look = std::min<std::uint64_t>(left, 257);
    const void* nl = std::memchr(p_ + pos_, '\n', static_cast<std::size_t>(look));
    if (nl == nullptr) {
      if (look == left) take(left + 1);  // reports the truncation
      bad(pk() + "has a GLOBAL name longer than 256 bytes; no function a state dict uses has such a name" + kNotTorch);
    }
    const std::size_t len = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nl) - (p_ + pos_));
    std::string s(reinterpret_cast<const char*>(take(len + 1)), len);
    return s;
  }
  void memo_put(std::uint32_t index) {
    const std::uint32_t v = top();
    const auto it = memo_.find(index);
    if (it != memo_.end()) {
      it->second = v;
      return;
    }
    if (memo_.size() >= kMaxMemo)
      bad(pk() + "memoizes more than " + std::to_string(kMaxMemo) +
          " objects; circuitscope refuses the file as crafted");
    memo_.emplace(index, v);
  }
  void memo_get(std::uint32_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end())
      bad(pk() + "fetches memo entry " + std::to_string(index) + ", which it never stored" + kNotTorch);
    push(it->second);
  }

  // --- the few globals a state dict names; everything else is refused by name
  std::uint32_t global(const std::string& module, const std::string& name) {
    if (module == "collections" && name == "OrderedDict")
      return make(Kind::Function, static_cast<int>(Fn::OrderedDict));
    if (module == "torch._utils") {
      if (name == "_rebuild_tensor_v2") return make(Kind::Function, static_cast<int>(Fn::RebuildTensorV2));
      if (name == "_rebuild_tensor") return make(Kind::Function, static_cast<int>(Fn::RebuildTensor));
      if (name == "_rebuild_parameter") return make(Kind::Function, static_cast<int>(Fn::RebuildParameter));
      if (name.compare(0, 9, "_rebuild_") == 0)
        bad(pk() + "calls torch._utils." + shown(name) +
            ", which rebuilds a kind of tensor circuitscope does not "
            "read (sparse, quantized, meta or a subclass); circuitscope reads plain dense tensors and refuses the "
            "file");
    }
    if (module == "torch") {
      for (int t = 0; t < 4; ++t)
        if (name == kDTypes[t].storage) return make(Kind::StorageType, t);
      for (const auto& o : kOtherStorages)
        if (name == o.first)
          bad("the .pth file holds " + std::string(o.second) + " tensors (torch." + o.first +
              "), which circuitscope does not read; it reads float32, float16, bfloat16 and bool tensors (convert "
              "the model, e.g. with model.float(), before saving it)");
    }
    bad(pk() + "calls " + shown(module + "." + name) +
        ", which a state dict never does; circuitscope executes nothing and refuses the file");
  }

  std::int64_t int_arg(std::uint32_t v, const char* what) const {
    if (!is(v, Kind::Int))
      bad(pk() + "rebuilds a tensor whose " + what + " is " + describe(v) + ", not an int" + kNotTorch);
    return values_[v].num;
  }
  // The sizes or strides of a tensor: a tuple (or list) of non-negative ints.
  int dims(std::uint32_t v, const char* what, std::array<std::uint64_t, kMaxRank>* out) const {
    std::vector<std::uint32_t> items;
    if (is(v, Kind::Tuple)) items = tuple_of(v);
    else if (is(v, Kind::List)) items = containers_[values_[v].ref];
    else bad(pk() + "rebuilds a tensor whose " + what + " is " + describe(v) + ", not a tuple of ints" + kNotTorch);
    if (items.size() > static_cast<std::size_t>(kMaxRank))
      bad(pk() + "rebuilds a tensor of " + std::to_string(items.size()) +
          " dimensions; circuitscope reads tensors of "
          "at most " +
          std::to_string(kMaxRank));
    for (std::size_t d = 0; d < items.size(); ++d) {
      const std::int64_t x = int_arg(items[d], what);
      if (x < 0)
        bad(pk() + "rebuilds a tensor with the negative " + what + " " + std::to_string(x) + " in dimension " +
            std::to_string(d) + "; torch.save never writes one, so the file is corrupt or crafted");
      (*out)[d] = static_cast<std::uint64_t>(x);
    }
    return static_cast<int>(items.size());
  }
  void check_empty_dict(std::uint32_t v, const char* what) const {
    if (!is(v, Kind::OrderedDict) && !is(v, Kind::Dict))
      bad(pk() + "rebuilds a tensor whose " + what + " are " + describe(v) + ", not an OrderedDict" + kNotTorch);
    if (!containers_[values_[v].ref].empty())
      bad(pk() + "rebuilds a tensor that carries " + what +
          ", which a saved state dict never has; circuitscope "
          "does not apply them and refuses the file");
  }

  std::uint32_t rebuild_tensor(std::uint32_t storage, std::uint32_t offset, std::uint32_t size, std::uint32_t stride) {
    if (!is(storage, Kind::Storage))
      bad(pk() + "rebuilds a tensor from " + describe(storage) + " instead of a storage" + kNotTorch);
    TensorRec t;
    t.storage = values_[storage].ref;
    const StorageRec& s = storages_[t.storage];
    const std::int64_t off = int_arg(offset, "storage offset");
    if (off < 0) bad(pk() + "rebuilds a tensor at the negative storage offset " + std::to_string(off) + kNotTorch);
    t.offset = static_cast<std::uint64_t>(off);
    t.rank = dims(size, "size", &t.size);
    if (dims(stride, "stride", &t.stride) != t.rank)
      bad(pk() + "rebuilds a tensor whose stride has another number of dimensions than its size" + kNotTorch);
    std::string shape = "[", strides = "[";
    for (int d = 0; d < t.rank; ++d) {
      shape += (d ? ", " : "") + std::to_string(t.size[d]);
      strides += (d ? ", " : "") + std::to_string(t.stride[d]);
    }
    shape += "]";
    strides += "]";
    t.numel = 1;
    for (int d = 0; d < t.rank; ++d)
      if (t.size[d] != 0 && t.numel > kMaxOutputBytes / t.size[d])
        bad(pk() + "rebuilds a tensor of size " + shape + ", more elements than circuitscope reads (" +
            std::to_string(kMaxOutputBytes >> 30) + " GB of data at most)");
      else t.numel *= t.size[d];
    if (t.numel > 0) {
      // The last element it reads, offset + sum (size - 1) * stride, must be inside the storage.
      std::uint64_t last = t.offset, step = 0;
      bool overflow = false;
      for (int d = 0; d < t.rank && !overflow; ++d)
        overflow =
            __builtin_mul_overflow(t.size[d] - 1, t.stride[d], &step) || __builtin_add_overflow(last, step, &last);
      if (overflow || last >= s.numel)
        bad(pk() + "rebuilds a tensor of size " + shape + " and stride " + strides + " at offset " +
            std::to_string(t.offset) + " that reads " +
            (overflow ? std::string("past any storage") : "element " + std::to_string(last)) + " of storage " +
            in_quotes(s.key) + ", which holds only " + std::to_string(s.numel) +
            " elements; the file is corrupt or crafted");
    }
    if (tensors_.size() >= kMaxTensors)
      bad(pk() + "rebuilds more than " + std::to_string(kMaxTensors) +
          " tensors; circuitscope reads state dicts of at most that many");
    tensors_.push_back(t);
    Value v;
    v.kind = Kind::Tensor;
    v.ref = static_cast<std::uint32_t>(tensors_.size() - 1);
    return make(v);
  }

  // REDUCE: f(*args) for one of the allowed functions, with the arguments it must have.
  std::uint32_t reduce(std::uint32_t f, std::uint32_t args) {
    if (!is(f, Kind::Function))
      bad(pk() + "applies REDUCE to " + describe(f) +
          ", which is not one of the functions a state dict calls "
          "(collections.OrderedDict, torch._utils._rebuild_tensor_v2, _rebuild_tensor, _rebuild_parameter); "
          "circuitscope executes nothing and refuses the file");
    const std::string name = fn_name(values_[f].num);
    if (!is(args, Kind::Tuple))
      bad(pk() + "calls " + name + " with " + describe(args) + " instead of a tuple of arguments" + kNotTorch);
    const std::vector<std::uint32_t> a = tuple_of(args);
    const auto arity = [&](bool ok, const char* expected) {
      if (!ok)
        bad(pk() + "calls " + name + " with " + std::to_string(a.size()) + " arguments, not " + expected + kNotTorch);
    };
    switch (static_cast<Fn>(values_[f].num)) {
      case Fn::OrderedDict:
        arity(a.empty(), "none (torch.save writes OrderedDict() and then its items)");
        return make_container(Kind::OrderedDict);
      case Fn::RebuildParameter:
        arity(a.size() == 3, "3 (data, requires_grad, backward_hooks)");
        if (!is(a[0], Kind::Tensor))
          bad(pk() + "makes a parameter of " + describe(a[0]) + " instead of a tensor" + kNotTorch);
        if (!is(a[1], Kind::Bool))
          bad(pk() + "makes a parameter whose requires_grad is " + describe(a[1]) + ", not a bool" + kNotTorch);
        check_empty_dict(a[2], "backward hooks");
        return a[0];
      case Fn::RebuildTensor:
        arity(a.size() == 4, "4 (storage, storage_offset, size, stride)");
        return rebuild_tensor(a[0], a[1], a[2], a[3]);
      case Fn::RebuildTensorV2:
        arity(a.size() == 6 || a.size() == 7,
              "6 or 7 (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])");
        if (!is(a[4], Kind::Bool))
          bad(pk() + "rebuilds a tensor whose requires_grad is " + describe(a[4]) + ", not a bool" + kNotTorch);
        check_empty_dict(a[5], "backward hooks");
        if (a.size() == 7 && !is(a[6], Kind::None))
          check_empty_dict(a[6], "tensor metadata (such as a conjugate or negative bit)");
        return rebuild_tensor(a[0], a[1], a[2], a[3]);
    }
    bad(pk() + "calls an unknown function" + kNotTorch);
  }

  // BINPERSID: ('storage', storage type, key, location, number of elements) names <archive>/data/<key>.
  std::uint32_t persistent_load(std::uint32_t pid) {
    if (!is(pid, Kind::Tuple) || values_[pid].num != 5)
      bad(pk() + "loads a persistent object named by " + describe(pid) +
          ", not the tuple ('storage', type, key, location, size) of a tensor storage" + kNotTorch);
    const std::vector<std::uint32_t> a = tuple_of(pid);
    if (!is(a[0], Kind::Str) || str(a[0]) != "storage")
      bad(pk() + "loads a persistent object of kind " + describe(a[0]) + "; circuitscope loads only tensor storages");
    if (!is(a[1], Kind::StorageType))
      bad(pk() + "loads a storage whose type is " + describe(a[1]) + ", not a storage type such as torch.FloatStorage" +
          kNotTorch);
    if (!is(a[2], Kind::Str) || !is(a[3], Kind::Str))
      bad(pk() + "loads a storage whose key or location is not a string" + kNotTorch);
    const DType dt = static_cast<DType>(values_[a[1]].num);
    const std::string& key = str(a[2]);
    const std::int64_t numel = is(a[4], Kind::Int) ? values_[a[4]].num : -1;
    if (numel < 0)
      bad(pk() + "loads storage " + in_quotes(key) + " with the size " + describe(a[4]) + ", not a non-negative int" +
          kNotTorch);
    const DTypeInfo& info = dtype_info(dt);
    Value v;
    v.kind = Kind::Storage;
    const auto known = storage_index_.find(key);
    if (known != storage_index_.end()) {
      const StorageRec& s = storages_[known->second];
      if (s.dtype != dt || s.numel != static_cast<std::uint64_t>(numel))
        bad(pk() + "declares storage " + in_quotes(key) + " twice, with different types or sizes" + kNotTorch);
      v.ref = known->second;
      return make(v);
    }
    const std::string entry_name = a_.prefix + "data/" + key;
    const auto e = a_.by_name.find(entry_name);
    if (e == a_.by_name.end())
      bad(pk() + "names storage " + in_quotes(key) + ", but the archive has no entry " + in_quotes(entry_name) +
          ": the file is incomplete or corrupt");
    const ZipEntry& en = *e->second;
    if (en.size % info.size != 0 || en.size / info.size != static_cast<std::uint64_t>(numel))
      bad(pk() + "says storage " + in_quotes(key) + " holds " + std::to_string(numel) + " elements of torch." +
          info.storage + " (" + std::to_string(info.size) + " bytes each), but its entry " + in_quotes(entry_name) +
          " has " + std::to_string(en.size) + " bytes: the file is truncated or corrupt");
    check_crc(a_.data, en);
    StorageRec s;
    s.key = key;
    s.dtype = dt;
    s.bytes = a_.data + en.begin;
    s.numel = static_cast<std::uint64_t>(numel);
    storages_.push_back(std::move(s));
    v.ref = static_cast<std::uint32_t>(storages_.size() - 1);
    storage_index_.emplace(key, v.ref);
    return make(v);
  }

  std::uint32_t run() {
    for (;;) {
      if (pos_ >= n_) {
        op_pos_ = pos_;
        bad(pk() + "ends before its STOP opcode: " + in_quotes(where_) + " is truncated or corrupt");
      }
      op_pos_ = pos_;
      op_ = p_[pos_++];
      switch (op_) {
        case 0x80: {  // PROTO
          const std::uint8_t v = *take(1);
          if (v > 5)
            bad(pk() + "says it is pickle protocol " + std::to_string(v) + ", which does not exist" + kNotTorch);
          break;
        }
        case 0x95: take(8); break;  // FRAME: a length hint for buffered readers, no meaning
        case '}': push(make_container(Kind::Dict)); break;
        case ']': push(make_container(Kind::List)); break;
        case ')': push(make_tuple(nullptr, 0)); break;
        case 'N': push(make(Kind::None)); break;
        case 0x88: push(make(Kind::Bool, 1)); break;
        case 0x89: push(make(Kind::Bool, 0)); break;
        case '(':
          if (marks_.size() >= kMaxMarks)
            bad(pk() + "nests more than " + std::to_string(kMaxMarks) +
                " MARKs deep; a state dict needs a few, so "
                "circuitscope refuses the file as crafted");
          marks_.push_back(stack_.size());
          break;
        case 't': {
          const std::size_t h = pop_mark();
          const std::uint32_t t = make_tuple(stack_.data() + h, stack_.size() - h);
          stack_.resize(h);
          push(t);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
          const std::size_t k = op_ - 0x84u;
          need_stack(k);
          const std::uint32_t t = make_tuple(stack_.data() + stack_.size() - k, k);
          stack_.resize(stack_.size() - k);
          push(t);
          break;
        }
        case 's': {
          const std::uint32_t v = pop(), k = pop();
          count_items(2);
          std::vector<std::uint32_t>& d = dict_at(top());
          d.push_back(k);
          d.push_back(v);
          break;
        }
        case 'u': {
          const std::size_t h = pop_mark();
          if ((stack_.size() - h) % 2 != 0) bad(pk() + "uses SETITEMS with a key but no value" + kNotTorch);
          count_items(stack_.size() - h);
          std::vector<std::uint32_t>& d = dict_at(below_mark(h));
          d.insert(d.end(), stack_.begin() + static_cast<std::ptrdiff_t>(h), stack_.end());
          stack_.resize(h);
          break;
        }
        case 'a': {
          const std::uint32_t v = pop();
          count_items(1);
          list_at(top()).push_back(v);
          break;
        }
        case 'e': {
          const std::size_t h = pop_mark();
          count_items(stack_.size() - h);
          std::vector<std::uint32_t>& l = list_at(below_mark(h));
          l.insert(l.end(), stack_.begin() + static_cast<std::ptrdiff_t>(h), stack_.end());
          stack_.resize(h);
          break;
        }
        case 'X': push(read_string(u32(take(4)))); break;
        case 0x8c: push(read_string(*take(1))); break;
        case 0x8d: push(read_string(u64(take(8)))); break;
        case 'J': push(make(Kind::Int, static_cast<std::int32_t>(u32(take(4))))); break;
        case 'K': push(make(Kind::Int, *take(1))); break;
        case 'M': push(make(Kind::Int, u16(take(2)))); break;
        case 0x8a: {  // LONG1: a little-endian two's complement integer of n bytes
          const std::uint8_t len = *take(1);
          if (len > 8)
            bad(pk() + "has an integer of " + std::to_string(len) +
                " bytes, larger than any size or offset in a state dict" + kNotTorch);
          const std::uint8_t* b = take(len);
          std::uint64_t x = 0;
          for (int i = 0; i < len; ++i) x |= std::uint64_t(b[i]) << (8 * i);
          if (len > 0 && len < 8 && (b[len - 1] & 0x80)) x |= ~std::uint64_t(0) << (8 * len);
          push(make(Kind::Int, static_cast<std::int64_t>(x)));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian double
          const std::uint8_t* b = take(8);
          std::uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = bits << 8 | b[i];
          Value v;
          v.kind = Kind::Float;
          std::memcpy(&v.real, &bits, 8);
          push(make(v));
          break;
        }
        case 'q': memo_put(*take(1)); break;
        case 'r': memo_put(u32(take(4))); break;
        case 0x94: memo_put(static_cast<std::uint32_t>(memo_.size())); break;  // MEMOIZE
        case 'h': memo_get(*take(1)); break;
        case 'j': memo_get(u32(take(4))); break;
        case 'c': {
          const std::string module = read_line();
          const std::string name = read_line();
          push(global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL (protocol 4): module and name from the stack
          const std::uint32_t name = pop(), module = pop();
          if (!is(module, Kind::Str) || !is(name, Kind::Str))
            bad(pk() + "uses STACK_GLOBAL with " + describe(module) + " and " + describe(name) +
                " instead of two strings" + kNotTorch);
          push(global(str(module), str(name)));
          break;
        }
        case 'R': {
          const std::uint32_t args = pop();
          const std::uint32_t f = top();
          top() = reduce(f, args);
          break;
        }
        case 'Q': {
          const std::uint32_t pid = pop();
          push(persistent_load(pid));
          break;
        }
        case 'b': {  // BUILD: torch.save sets a state dict's _metadata this way; it is ignored
          const std::uint32_t state = pop();
          const std::uint32_t inst = top();
          if (!is(inst, Kind::OrderedDict))
            bad(pk() + "applies BUILD to " + describe(inst) +
                "; torch.save uses BUILD only to set the _metadata of a "
                "state dict's OrderedDict, and circuitscope refuses anything else");
          if (!is(state, Kind::Dict) && !is(state, Kind::OrderedDict) && !is(state, Kind::None))
            bad(pk() + "sets the attributes of an OrderedDict from " + describe(state) + ", not a dict" + kNotTorch);
          break;
        }
        case '.': return pop();
        default: {
          const char* name = op_name(op_);
          if (name == nullptr)
            bad(pk() + "has the byte " + hex_byte(op_) +
                " where an opcode should be, and it is none: " + in_quotes(where_) + " is corrupt");
          bad(pk() + "uses the opcode " + name + " (" + hex_byte(op_) +
              "), which torch.save never writes for a state "
              "dict; circuitscope refuses it rather than run it");
        }
      }
    }
  }

  // The top-level object must be a dict of tensor name -> tensor.
  std::vector<NamedTensor> named_tensors(std::uint32_t root) {
    const std::string reads = "circuitscope reads a flat state dict, as torch.save(model.state_dict(), f) writes";
    if (!is(root, Kind::Dict) && !is(root, Kind::OrderedDict))
      fail("the .pth file holds " + describe(root) + ", not a state dict (a dict of tensor names to tensors); " +
           reads);
    const std::vector<std::uint32_t>& items = containers_[values_[root].ref];
    std::vector<NamedTensor> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
      const std::uint32_t k = items[i], v = items[i + 1];
      if (!is(k, Kind::Str))
        fail("the .pth file holds a dict with the key " + describe(k) + ", not a tensor name; " + reads);
      const std::string& name = str(k);
      if (!is(v, Kind::Tensor))
        fail("the .pth file holds a dict whose value for key " + in_quotes(name) + " is " + describe(v) +
             ", not a tensor; " + reads +
             (is(v, Kind::Dict) || is(v, Kind::OrderedDict)
                  ? " (is it a checkpoint that wraps the state dict? save model.state_dict() itself)"
                  : ""));
      if (name.empty() || name.size() > kMaxNameBytes)
        fail("the state dict has a tensor name of " + std::to_string(name.size()) +
             " bytes; circuitscope reads names of 1 to " + std::to_string(kMaxNameBytes) + " bytes");
      for (const char ch : name)
        if (ch < 0x20 || ch > 0x7e)
          fail("the state dict has the tensor name " + in_quotes(name) +
               ", with a byte that is not printable ASCII; circuitscope reads names such as blocks.0.attn.W_Q");
      if (name == "__metadata__")
        fail("the state dict has a tensor named \"__metadata__\", which safetensors reserves; rename it before saving");
      if (!seen.insert(name).second) fail("the state dict names the tensor " + in_quotes(name) + " twice" + kNotTorch);
      out.push_back({name, values_[v].ref});
    }
    return out;
  }
};

// Copies a tensor's elements in row-major order, following its strides (checked to stay inside its storage).
template <std::size_t ES>
void gather_elements(const TensorRec& t, const std::uint8_t* src, std::uint8_t* out) {
  const int r = t.rank;
  const std::uint64_t inner = t.size[r - 1], istride = t.stride[r - 1];
  std::array<std::uint64_t, kMaxRank> idx{};
  std::uint64_t base = t.offset;
  for (std::uint64_t o = 0, outer = t.numel / inner; o < outer; ++o) {
    const std::uint8_t* s = src + base * ES;
    if (istride == 1) {
      std::memcpy(out, s, static_cast<std::size_t>(inner * ES));
      out += inner * ES;
    } else {
      for (std::uint64_t i = 0; i < inner; ++i, out += ES) std::memcpy(out, s + i * istride * ES, ES);
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < t.size[d]) {
        base += t.stride[d];
        break;
      }
      base -= (t.size[d] - 1) * t.stride[d];
      idx[d] = 0;
    }
  }
}

void gather(const TensorRec& t, const StorageRec& s, std::uint8_t* out) {
  if (t.numel == 0) return;
  const std::uint64_t es = dtype_info(s.dtype).size;
  bool contiguous = true;
  std::uint64_t expect = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.size[d] != 1 && t.stride[d] != expect) contiguous = false;
    expect *= t.size[d];
  }
  if (contiguous) {
    std::memcpy(out, s.bytes + t.offset * es, static_cast<std::size_t>(t.numel * es));
    return;
  }
  switch (es) {
    case 1: gather_elements<1>(t, s.bytes, out); break;
    case 2: gather_elements<2>(t, s.bytes, out); break;
    default: gather_elements<4>(t, s.bytes, out); break;
  }
}

}  // namespace

bool looks_like_pth(const std::uint8_t* data, std::size_t size) {
  return data != nullptr && size >= 4 && data[0] == 'P' && data[1] == 'K' && data[2] == 3 && data[3] == 4;
}

std::vector<std::uint8_t> pth_to_safetensors(const std::uint8_t* data, std::size_t size,
                                             const std::map<std::string, std::string>& metadata) {
  if (!looks_like_pth(data, size))
    fail(
        "the file does not start like a zip archive (\"PK\\x03\\x04\"), which is how torch.save has written .pth "
        "files since PyTorch 1.6; an older file (or one saved with _use_new_zipfile_serialization=False) must be "
        "loaded in Python and saved again with torch.save");
  if (static_cast<std::uint64_t>(size) > kMaxPthFileBytes)
    fail("the .pth file is " + std::to_string(size) + " bytes; circuitscope reads .pth files of at most " +
         std::to_string(kMaxPthFileBytes >> 30) + " GB");
  const Archive archive = open_archive(data, size);
  Unpickler u(archive);
  const std::vector<NamedTensor> named = u.state_dict();

  // Sizes first: nothing is allocated for the output before its total is known to be sensible.
  std::uint64_t total = 0;
  for (const NamedTensor& nt : named) {
    const TensorRec& t = u.tensor(nt.tensor);
    total += t.numel * dtype_info(u.storage(t.storage).dtype).size;  // each at most kMaxOutputBytes: no overflow
    if (total > kMaxOutputBytes)
      fail("the state dict's tensors take more than " + std::to_string(kMaxOutputBytes >> 30) +
           " GB; circuitscope reads models of at most that size");
  }
  const std::uint64_t allowed = kMaxOutputPerInput * static_cast<std::uint64_t>(size) + (1u << 20);
  if (total > allowed)
    fail("the state dict's tensors take " + std::to_string(total) + " bytes, more than " +
         std::to_string(kMaxOutputPerInput) + " times the .pth file's " + std::to_string(size) +
         " bytes: its tensors repeat their storages' elements (stride 0) that much, which no model's weights do, so "
         "circuitscope refuses the file");

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& kv : metadata) meta[kv.first] = kv.second;
    header["__metadata__"] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const NamedTensor& nt : named) {
    const TensorRec& t = u.tensor(nt.tensor);
    const DTypeInfo& info = dtype_info(u.storage(t.storage).dtype);
    nlohmann::ordered_json shape = nlohmann::ordered_json::array();
    for (int d = 0; d < t.rank; ++d) shape.push_back(t.size[d]);
    const std::uint64_t bytes = t.numel * info.size;
    header[nt.name] = {
        {"dtype", info.safetensors}, {"shape", std::move(shape)}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    fail("a metadata key or value given for the converted file is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<std::uint8_t> out;
  try {
    out.resize(8 + text.size() + static_cast<std::size_t>(total));
  } catch (const std::bad_alloc&) {
    fail("there is not enough memory for the " + std::to_string(total) + " bytes of tensors the .pth file holds");
  } catch (const std::length_error&) {
    fail("there is not enough memory for the " + std::to_string(total) + " bytes of tensors the .pth file holds");
  }
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::uint8_t* dst = out.data() + 8 + text.size();
  for (const NamedTensor& nt : named) {
    const TensorRec& t = u.tensor(nt.tensor);
    const StorageRec& s = u.storage(t.storage);
    gather(t, s, dst);
    dst += t.numel * dtype_info(s.dtype).size;
  }
  return out;
}

}  // namespace cs
