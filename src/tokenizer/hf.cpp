// The tokenizer.json reader and its stages; see hf.h. Each stage follows what the `tokenizers`
// library (Rust) does for the same configuration, including its corner cases: ByteLevel's prefix
// space goes before every piece, Split's behaviours treat a run of matches as the library does, and
// byte-pair merges are applied lowest rank first, leftmost first among equal ranks.
#include "tokenizer/hf.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "checks.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace cs::hf {

using nlohmann::json;

namespace {

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument("tokenizer.json: " + what); }

// GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the other 68 bytes
// for the characters U+0100 onwards, in byte order (so a space is "Ġ", U+0120).
struct ByteTable {
  char32_t byte_to_char[256];
  std::unordered_map<char32_t, unsigned char> char_to_byte;
  ByteTable() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      byte_to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      char_to_byte[byte_to_char[b]] = static_cast<unsigned char>(b);
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable t;
  return t;
}

std::vector<char32_t> code_points(const std::string& s) {
  std::vector<CodePoint> cps;
  if (decode_utf8(s, &cps) != std::string::npos) refuse("a token is not valid UTF-8");
  std::vector<char32_t> out;
  out.reserve(cps.size());
  for (const auto& c : cps) out.push_back(c.cp);
  return out;
}

std::string text_of(const std::vector<Char>& chars, std::size_t b, std::size_t e) {
  std::string s;
  for (std::size_t i = b; i < e; ++i) append_utf8(s, chars[i].cp);
  return s;
}

const std::string& type_of(const json& j, const std::string& stage) {
  if (!j.is_object()) refuse(stage + " is not an object");
  const auto it = j.find("type");
  if (it == j.end() || !it->is_string()) refuse(stage + " has no \"type\"");
  return it->get_ref<const std::string&>();
}

// A normalizer or pre_tokenizer that was read, for the summary: its type, or
// "Sequence(A, B, ...)" with the stages under list_key ("normalizers" or "pretokenizers").
std::string describe_stage(const json& j, const char* list_key) {
  if (j.is_null()) return "none";
  const std::string& type = j["type"].get_ref<const std::string&>();
  if (type != "Sequence") return type;
  std::string s = "Sequence(";
  bool first = true;
  for (const json& n : j[list_key]) {
    s += (first ? "" : ", ") + describe_stage(n, list_key);
    first = false;
  }
  return s + ")";
}

bool flag(const json& j, const char* key, bool def, const std::string& stage) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_boolean()) refuse(stage + "'s \"" + key + "\" is not true or false");
  return it->get<bool>();
}

std::string str(const json& j, const char* key, const std::string& def, const std::string& stage) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_string()) refuse(stage + "'s \"" + key + "\" is not a string");
  return it->get<std::string>();
}

// ----------------------------------------------------------------------------------------------
// Normalizers
// ----------------------------------------------------------------------------------------------

class FormNormalizer final : public Normalizer {
 public:
  explicit FormNormalizer(unicode::Form f) : form_(f) {}
  void normalize(std::vector<Char>& chars) const override {
    std::vector<char32_t> in;
    in.reserve(chars.size());
    for (const Char& c : chars) in.push_back(c.cp);
    std::vector<std::pair<int, int>> src;
    const std::vector<char32_t> out = unicode::normalize(form_, in, &src);
    std::vector<Char> next;
    next.reserve(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto [b, e] = src[i];
      Char c;
      c.cp = out[i];
      c.begin = chars[b].begin;
      c.end = chars[e - 1].end;
      c.exact = e - b == 1 && chars[b].cp == out[i] && chars[b].exact;
      next.push_back(c);
    }
    chars.swap(next);
  }

 private:
  unicode::Form form_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  std::vector<std::unique_ptr<Normalizer>> stages;
  void normalize(std::vector<Char>& chars) const override {
    for (const auto& s : stages) s->normalize(chars);
  }
};

std::unique_ptr<Normalizer> read_normalizer(const json& j, int depth) {
  if (j.is_null()) return nullptr;
  const std::string& type = type_of(j, "the normalizer");
  if (type == "NFC") return std::make_unique<FormNormalizer>(unicode::Form::NFC);
  if (type == "NFD") return std::make_unique<FormNormalizer>(unicode::Form::NFD);
  if (type == "NFKC") return std::make_unique<FormNormalizer>(unicode::Form::NFKC);
  if (type == "NFKD") return std::make_unique<FormNormalizer>(unicode::Form::NFKD);
  if (type == "Sequence") {
    if (depth >= kMaxNesting) refuse("the normalizer nests Sequence more than " + std::to_string(kMaxNesting) + " deep");
    const auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) refuse("the normalizer Sequence has no \"normalizers\" list");
    auto seq = std::make_unique<SequenceNormalizer>();
    for (const json& s : *it)
      if (auto n = read_normalizer(s, depth + 1)) seq->stages.push_back(std::move(n));
    return seq;
  }
  refuse("the normalizer \"" + type + "\" is not one circuitscope implements (it implements NFC, NFD, NFKC, NFKD and Sequence)");
}

// ----------------------------------------------------------------------------------------------
// Splitting a piece: matches found by a pattern, then a behaviour, as NormalizedString::split does.
// ----------------------------------------------------------------------------------------------

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// (begin, end, is_match) covering [0, n) in order, from sorted non-overlapping matches.
using Runs = std::vector<std::tuple<std::size_t, std::size_t, bool>>;

Runs runs_of(const std::vector<std::pair<std::size_t, std::size_t>>& matches, std::size_t n, bool invert) {
  Runs runs;
  std::size_t at = 0;
  for (const auto& [b, e] : matches) {
    if (b == e) continue;
    if (at < b) runs.emplace_back(at, b, invert);
    runs.emplace_back(b, e, !invert);
    at = e;
  }
  if (at < n) runs.emplace_back(at, n, invert);
  return runs;
}

void split_piece(const std::vector<Char>& chars, const Runs& runs, Behavior behavior, std::vector<Piece>& out) {
  // (begin, end, removed)
  std::vector<std::tuple<std::size_t, std::size_t, bool>> parts;
  switch (behavior) {
    case Behavior::Isolated:
      for (const auto& [b, e, m] : runs) parts.emplace_back(b, e, false);
      break;
    case Behavior::Removed:
      for (const auto& [b, e, m] : runs) parts.emplace_back(b, e, m);
      break;
    case Behavior::Contiguous: {
      bool previous = false;
      for (const auto& [b, e, m] : runs) {
        if (m == previous && !parts.empty()) {
          std::get<1>(parts.back()) = e;
        } else {
          parts.emplace_back(b, e, false);
        }
        previous = m;
      }
      break;
    }
    case Behavior::MergedWithPrevious: {
      bool previous = false;
      for (const auto& [b, e, m] : runs) {
        if (m && !previous && !parts.empty()) {
          std::get<1>(parts.back()) = e;
        } else {
          parts.emplace_back(b, e, false);
        }
        previous = m;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool previous = false;
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        const auto& [b, e, m] = *it;
        if (m && !previous && !parts.empty()) {
          std::get<0>(parts.back()) = b;
        } else {
          parts.emplace_back(b, e, false);
        }
        previous = m;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    }
  }
  for (const auto& [b, e, removed] : parts) {
    if (removed || b == e) continue;
    Piece p;
    p.chars.assign(chars.begin() + static_cast<std::ptrdiff_t>(b), chars.begin() + static_cast<std::ptrdiff_t>(e));
    out.push_back(std::move(p));
  }
}

// Applies f(chars) -> matches to every piece that is not an added token.
template <typename F>
void split_all(std::vector<Piece>& pieces, Behavior behavior, bool invert, F&& find) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& p : pieces) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    split_piece(p.chars, runs_of(find(p.chars), p.chars.size(), invert), behavior, out);
  }
  pieces.swap(out);
}

// GPT-2's pattern, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, as
// Oniguruma matches it (leftmost, the first alternative that matches, greedy with backtracking);
// \s is Unicode White_Space.
const char* const kGpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

std::vector<std::pair<std::size_t, std::size_t>> gpt2_matches(const std::vector<Char>& c) {
  const std::size_t n = c.size();
  auto L = [&](std::size_t i) { return i < n && unicode::is_letter(c[i].cp); };
  auto N = [&](std::size_t i) { return i < n && unicode::is_number(c[i].cp); };
  auto S = [&](std::size_t i) { return i < n && unicode::is_white_space(c[i].cp); };
  auto O = [&](std::size_t i) { return i < n && !S(i) && !L(i) && !N(i); };
  std::vector<std::pair<std::size_t, std::size_t>> m;
  std::size_t i = 0;
  while (i < n) {
    const char32_t x = c[i].cp;
    std::size_t e = i;
    if (x == '\'' && i + 1 < n) {
      const char32_t a = c[i + 1].cp, b = i + 2 < n ? c[i + 2].cp : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        e = i + 2;
      } else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        e = i + 3;
      }
    }
    if (e == i) {
      const std::size_t s = (x == ' ') ? i + 1 : i;  // the optional leading space
      if (L(s)) {
        e = s;
        while (L(e)) ++e;
      } else if (N(s)) {
        e = s;
        while (N(e)) ++e;
      } else if (O(s)) {
        e = s;
        while (O(e)) ++e;
      } else if (S(i)) {
        std::size_t j = i;
        while (S(j)) ++j;
        // \s+(?!\S): the whole run at the end of the text, else all but its last character
        // (which then starts the next match); a single white-space character before a non-space
        // falls to \s+.
        e = (j == n || j - i == 1) ? j : j - 1;
      } else {
        e = i + 1;  // unreachable: every character is a letter, number, space or other
      }
    }
    m.emplace_back(i, e);
    i = e;
  }
  return m;
}

class ByteLevelPre final : public PreTokenizer {
 public:
  ByteLevelPre(bool prefix, bool regex) : prefix_(prefix), regex_(regex) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    if (prefix_) {
      for (Piece& p : pieces) {
        if (p.id >= 0 || p.chars.empty() || p.chars.front().cp == ' ') continue;
        Char sp;
        sp.cp = ' ';
        sp.begin = sp.end = p.chars.front().begin;
        sp.exact = false;
        p.chars.insert(p.chars.begin(), sp);
      }
    }
    if (regex_) split_all(pieces, Behavior::Isolated, false, gpt2_matches);
    // Every character becomes its UTF-8 bytes, each written as the byte table's character.
    const ByteTable& t = byte_table();
    for (Piece& p : pieces) {
      if (p.id >= 0) continue;
      std::vector<Char> bytes;
      bytes.reserve(p.chars.size() * 2);
      std::string u;
      for (const Char& c : p.chars) {
        u.clear();
        append_utf8(u, c.cp);
        for (std::size_t k = 0; k < u.size(); ++k) {
          Char b;
          b.cp = t.byte_to_char[static_cast<unsigned char>(u[k])];
          if (c.exact) {
            b.begin = c.begin + static_cast<std::uint32_t>(k);
            b.end = b.begin + 1;
          } else {
            b.begin = c.begin;
            b.end = c.end;
          }
          b.exact = false;
          bytes.push_back(b);
        }
      }
      p.chars.swap(bytes);
    }
  }

 private:
  bool prefix_, regex_;
};

class DigitsPre final : public PreTokenizer {
 public:
  explicit DigitsPre(bool individual) : individual_(individual) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_all(pieces, individual_ ? Behavior::Isolated : Behavior::Contiguous, false, [](const std::vector<Char>& c) {
      std::vector<std::pair<std::size_t, std::size_t>> m;
      for (std::size_t i = 0; i < c.size(); ++i)
        if (unicode::is_number(c[i].cp)) m.emplace_back(i, i + 1);
      return m;
    });
  }

 private:
  bool individual_;
};

class SplitPre final : public PreTokenizer {
 public:
  SplitPre(std::vector<char32_t> literal, bool gpt2, Behavior behavior, bool invert)
      : literal_(std::move(literal)), gpt2_(gpt2), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_all(pieces, behavior_, invert_, [this](const std::vector<Char>& c) {
      if (gpt2_) return gpt2_matches(c);
      std::vector<std::pair<std::size_t, std::size_t>> m;
      const std::size_t k = literal_.size();
      if (k == 0) return m;
      for (std::size_t i = 0; i + k <= c.size();) {
        bool hit = true;
        for (std::size_t j = 0; j < k && hit; ++j) hit = c[i + j].cp == literal_[j];
        if (hit) {
          m.emplace_back(i, i + k);
          i += k;
        } else {
          ++i;
        }
      }
      return m;
    });
  }

 private:
  std::vector<char32_t> literal_;
  bool gpt2_;
  Behavior behavior_;
  bool invert_;
};

class SequencePre final : public PreTokenizer {
 public:
  std::vector<std::unique_ptr<PreTokenizer>> stages;
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& s : stages) s->pre_tokenize(pieces);
  }
};

Behavior read_behavior(const json& j) {
  const std::string b = str(j, "behavior", "Isolated", "the Split pre-tokenizer");
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  refuse("the Split pre-tokenizer's behavior \"" + b + "\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

struct PreInfo {
  bool byte_level = false;  // a ByteLevel stage runs: the model sees byte characters
};

std::unique_ptr<PreTokenizer> read_pre(const json& j, int depth, PreInfo& info) {
  if (j.is_null()) return nullptr;
  const std::string& type = type_of(j, "the pre_tokenizer");
  const std::string stage = "the " + type + " pre-tokenizer";
  if (type == "ByteLevel") {
    info.byte_level = true;
    return std::make_unique<ByteLevelPre>(flag(j, "add_prefix_space", true, stage), flag(j, "use_regex", true, stage));
  }
  if (type == "Digits") return std::make_unique<DigitsPre>(flag(j, "individual_digits", false, stage));
  if (type == "Split") {
    const auto it = j.find("pattern");
    if (it == j.end() || !it->is_object() || it->size() != 1) refuse(stage + " has no pattern {\"String\": ...} or {\"Regex\": ...}");
    const std::string kind = it->begin().key();
    const json& value = it->begin().value();
    if (!value.is_string()) refuse(stage + "'s pattern is not a string");
    const std::string& p = value.get_ref<const std::string&>();
    const bool invert = flag(j, "invert", false, stage);
    if (kind == "String") return std::make_unique<SplitPre>(code_points(p), false, read_behavior(j), invert);
    if (kind == "Regex") {
      if (p != kGpt2Pattern)
        refuse(stage + "'s regular expression " + json(p).dump() +
               " is not one circuitscope implements (it implements GPT-2's, which GPT-NeoX's tokenizers also use)");
      return std::make_unique<SplitPre>(std::vector<char32_t>{}, true, read_behavior(j), invert);
    }
    refuse(stage + "'s pattern is {\"" + kind + "\": ...}; it must be String or Regex");
  }
  if (type == "Sequence") {
    if (depth >= kMaxNesting) refuse("the pre_tokenizer nests Sequence more than " + std::to_string(kMaxNesting) + " deep");
    const auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) refuse("the pre_tokenizer Sequence has no \"pretokenizers\" list");
    auto seq = std::make_unique<SequencePre>();
    for (const json& s : *it)
      if (auto p = read_pre(s, depth + 1, info)) seq->stages.push_back(std::move(p));
    return seq;
  }
  refuse("the pre-tokenizer \"" + type + "\" is not one circuitscope implements (it implements ByteLevel, Digits, Split and Sequence)");
}

// ----------------------------------------------------------------------------------------------
// Added tokens: found leftmost, longest first, before and after normalization.
// ----------------------------------------------------------------------------------------------

bool word_char(char32_t c) { return c == '_' || unicode::is_letter(c) || unicode::is_number(c); }

}  // namespace

struct Reader {
  static void read_model(Tokenizer& t, const json& m, bool byte_level);
  static void read_added(Tokenizer& t, const json& a);
  static void read_post(Tokenizer& t, const json& p, int depth);
  static void read_decoder(Tokenizer& t, const json& d, bool byte_level);
};

void Reader::read_model(Tokenizer& t, const json& m, bool byte_level) {
  const std::string& type = type_of(m, "the model");
  if (type != "BPE")
    refuse("the model is \"" + type + "\"; circuitscope reads byte-pair (BPE) tokenizers only, such as GPT-2's and GPT-NeoX's");
  Tokenizer::Bpe& b = t.bpe_;
  if (const auto d = m.find("dropout"); d != m.end() && !d->is_null() && !(d->is_number() && d->get<double>() == 0.0))
    refuse("the model has a dropout; a tokenizer that drops merges at random cannot be reproduced");
  const auto v = m.find("vocab");
  if (v == m.end() || !v->is_object()) refuse("the model has no \"vocab\" object");
  if (v->size() > static_cast<std::size_t>(kMaxVocab)) refuse("the vocabulary has more than " + std::to_string(kMaxVocab) + " tokens");
  b.vocab.reserve(v->size());
  int max_id = -1;
  for (const auto& [tok, idj] : v->items()) {
    if (!idj.is_number_integer() || idj.get<long long>() < 0 || idj.get<long long>() >= kMaxVocab)
      refuse("the vocabulary gives " + json(tok).dump() + " the id " + idj.dump() + "; ids are whole numbers from 0 to " +
             std::to_string(kMaxVocab - 1));
    b.vocab.emplace(tok, idj.get<int>());
    max_id = std::max(max_id, idj.get<int>());
  }
  t.id_to_token_.assign(static_cast<std::size_t>(max_id + 1), std::string());
  std::vector<char> used(static_cast<std::size_t>(max_id + 1), 0);
  for (const auto& [tok, id] : b.vocab) {
    if (used[static_cast<std::size_t>(id)])
      refuse("the vocabulary gives the id " + std::to_string(id) + " to two tokens, " + json(tok).dump() + " and " +
             json(t.id_to_token_[static_cast<std::size_t>(id)]).dump());
    used[static_cast<std::size_t>(id)] = 1;
    t.id_to_token_[static_cast<std::size_t>(id)] = tok;
  }
  b.fuse_unk = flag(m, "fuse_unk", false, "the model");
  b.byte_fallback = flag(m, "byte_fallback", false, "the model");
  b.ignore_merges = flag(m, "ignore_merges", false, "the model");
  b.prefix = str(m, "continuing_subword_prefix", "", "the model");
  b.suffix = str(m, "end_of_word_suffix", "", "the model");
  const std::string unk = str(m, "unk_token", "", "the model");
  if (!unk.empty()) {
    const auto it = b.vocab.find(unk);
    if (it == b.vocab.end()) refuse("the model's unk_token " + json(unk).dump() + " is not in the vocabulary");
    b.unk = it->second;
  }
  const auto ms = m.find("merges");
  if (ms == m.end() || !ms->is_array()) refuse("the model has no \"merges\" list");
  if (ms->size() > static_cast<std::size_t>(kMaxVocab))
    refuse("the model has " + std::to_string(ms->size()) + " merges; a vocabulary of at most " + std::to_string(kMaxVocab) +
           " tokens needs fewer");
  b.merges.reserve(ms->size());
  int rank = 0;
  for (const json& mj : *ms) {
    std::string left, right;
    if (mj.is_string()) {
      const std::string& s = mj.get_ref<const std::string&>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        refuse("merge " + std::to_string(rank + 1) + " " + json(s).dump() + " is not two tokens separated by one space");
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (mj.is_array() && mj.size() == 2 && mj[0].is_string() && mj[1].is_string()) {
      left = mj[0].get<std::string>();
      right = mj[1].get<std::string>();
    } else {
      refuse("merge " + std::to_string(rank + 1) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const auto l = b.vocab.find(left), r = b.vocab.find(right), made = b.vocab.find(left + right);
    if (l == b.vocab.end() || r == b.vocab.end())
      refuse("merge " + std::to_string(rank + 1) + " joins " + json(left).dump() + " and " + json(right).dump() +
             ", but " + json(l == b.vocab.end() ? left : right).dump() + " is not in the vocabulary");
    if (made == b.vocab.end())
      refuse("merge " + std::to_string(rank + 1) + " makes " + json(left + right).dump() + ", which is not in the vocabulary");
    const std::uint64_t key = (static_cast<std::uint64_t>(l->second) << 32) | static_cast<std::uint32_t>(r->second);
    if (!b.merges.emplace(key, std::make_pair(rank, made->second)).second)
      refuse("merge " + std::to_string(rank + 1) + " (" + json(left).dump() + " and " + json(right).dump() +
             ") is listed twice; which rank it has would depend on the reader");
    ++rank;
  }
  b.n_merges = rank;
  if (byte_level) {
    // Every byte must be a token, or some texts could not be encoded at all.
    const ByteTable& bt = byte_table();
    for (int x = 0; x < 256; ++x) {
      const std::string s = encode_utf8(bt.byte_to_char[x]);
      if (!b.vocab.count(s) && b.unk < 0)
        refuse("the pre-tokenizer is ByteLevel but the byte " + std::to_string(x) + " (" + json(s).dump() +
               ") is not in the vocabulary and there is no unk_token");
    }
  }
}

void Reader::read_added(Tokenizer& t, const json& a) {
  if (a.is_null()) return;
  if (!a.is_array()) refuse("\"added_tokens\" is not a list");
  for (const json& e : a) {
    if (!e.is_object()) refuse("an added token is not an object");
    Tokenizer::AddedToken tok;
    const auto id = e.find("id");
    tok.content = str(e, "content", "", "an added token");
    if (id == e.end() || !id->is_number_integer() || id->get<long long>() < 0 || id->get<long long>() >= kMaxVocab)
      refuse("the added token " + json(tok.content).dump() + " has no id from 0 to " + std::to_string(kMaxVocab - 1));
    if (tok.content.empty()) refuse("the added token " + id->dump() + " has no content");
    tok.id = id->get<int>();
    const std::string where = "the added token " + json(tok.content).dump();
    tok.special = flag(e, "special", false, where);
    tok.normalized = flag(e, "normalized", !tok.special, where);
    tok.single_word = flag(e, "single_word", false, where);
    tok.lstrip = flag(e, "lstrip", false, where);
    tok.rstrip = flag(e, "rstrip", false, where);
    for (const auto& other : t.added_)
      if (other.id == tok.id || other.content == tok.content)
        refuse("two added tokens share the " + std::string(other.id == tok.id ? "id " + std::to_string(tok.id) : "content " + json(tok.content).dump()));
    if (static_cast<std::size_t>(tok.id) >= t.id_to_token_.size()) t.id_to_token_.resize(static_cast<std::size_t>(tok.id) + 1);
    t.id_to_token_[static_cast<std::size_t>(tok.id)] = tok.content;
    tok.pattern = code_points(tok.content);
    t.added_.push_back(std::move(tok));
  }
  t.special_.assign(t.id_to_token_.size(), 0);
  for (const auto& tok : t.added_) t.special_[static_cast<std::size_t>(tok.id)] = tok.special ? 1 : 0;
}

void Reader::read_post(Tokenizer& t, const json& p, int depth) {
  if (p.is_null()) return;
  const std::string& type = type_of(p, "the post_processor");
  if (type == "ByteLevel") return;  // it only trims offsets, which circuitscope keeps whole
  if (type == "Sequence") {
    if (depth >= kMaxNesting) refuse("the post_processor nests Sequence more than " + std::to_string(kMaxNesting) + " deep");
    const auto it = p.find("processors");
    if (it == p.end() || !it->is_array()) refuse("the post_processor Sequence has no \"processors\" list");
    for (const json& s : *it) read_post(t, s, depth + 1);
    return;
  }
  if (type == "TemplateProcessing") {
    const auto single = p.find("single");
    const auto specials = p.find("special_tokens");
    if (single == p.end() || !single->is_array()) refuse("the TemplateProcessing post-processor has no \"single\" template");
    bool seen_sequence = false;
    for (const json& item : *single) {
      if (item.is_object() && item.contains("Sequence")) {
        if (seen_sequence) refuse("the TemplateProcessing single template holds the sequence twice");
        seen_sequence = true;
        continue;
      }
      if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object())
        refuse("the TemplateProcessing single template has an item that is neither Sequence nor SpecialToken");
      const std::string name = str(item["SpecialToken"], "id", "", "a TemplateProcessing special token");
      if (specials == p.end() || !specials->is_object() || !specials->contains(name) || !(*specials)[name].contains("ids") ||
          !(*specials)[name]["ids"].is_array())
        refuse("the TemplateProcessing template names " + json(name).dump() + ", which its special_tokens do not list");
      for (const json& id : (*specials)[name]["ids"]) {
        if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= static_cast<long long>(t.id_to_token_.size()))
          refuse("the TemplateProcessing special token " + json(name).dump() + " has an id that is not a token");
        (seen_sequence ? t.suffix_ids_ : t.prefix_ids_).push_back(id.get<int>());
      }
    }
    if (!seen_sequence) refuse("the TemplateProcessing single template does not hold the sequence ($A)");
    return;
  }
  refuse("the post-processor \"" + type + "\" is not one circuitscope implements (it implements ByteLevel, TemplateProcessing and Sequence)");
}

void Reader::read_decoder(Tokenizer& t, const json& d, bool byte_level) {
  if (d.is_null()) {
    t.decoder_ = Tokenizer::Decoder::None;
    return;
  }
  const std::string& type = type_of(d, "the decoder");
  if (type == "ByteLevel") {
    t.decoder_ = Tokenizer::Decoder::ByteLevel;
    return;
  }
  (void)byte_level;
  refuse("the decoder \"" + type + "\" is not one circuitscope implements (it implements ByteLevel)");
}

std::shared_ptr<const Tokenizer> Tokenizer::from_text(const std::string& text) {
  if (text.size() > kMaxFileBytes)
    refuse("the file is " + std::to_string(text.size() >> 20) + " MB; circuitscope reads tokenizer files of up to " +
           std::to_string(kMaxFileBytes >> 20) + " MB");
  return from_json(parse_json_text(text, "tokenizer.json:"));
}

std::shared_ptr<const Tokenizer> Tokenizer::from_json(const json& j) {
  if (!j.is_object()) refuse("the file is not a JSON object");
  const auto model = j.find("model");
  if (model == j.end()) refuse("the file has no \"model\"; is it a tokenizer.json?");
  auto t = std::make_shared<Tokenizer>();
  PreInfo info;
  const json null;
  const json& norm = j.contains("normalizer") ? j["normalizer"] : null;
  const json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : null;
  const json& post = j.contains("post_processor") ? j["post_processor"] : null;
  const json& dec = j.contains("decoder") ? j["decoder"] : null;
  t->normalizer_ = read_normalizer(norm, 0);
  t->pre_tokenizer_ = read_pre(pre, 0, info);
  Reader::read_model(*t, *model, info.byte_level);
  Reader::read_added(*t, j.contains("added_tokens") ? j["added_tokens"] : null);
  Reader::read_post(*t, post, 0);
  Reader::read_decoder(*t, dec, info.byte_level);
  if (t->special_.size() != t->id_to_token_.size()) t->special_.resize(t->id_to_token_.size(), 0);
  // A normalized added token is matched in normalized text, so its pattern is normalized too.
  for (AddedToken& a : t->added_) {
    if (!a.normalized || !t->normalizer_) continue;
    std::vector<Char> cs;
    for (char32_t c : a.pattern) cs.push_back(Char{c, 0, 0, true});
    t->normalizer_->normalize(cs);
    a.pattern.clear();
    for (const Char& c : cs) a.pattern.push_back(c.cp);
    if (a.pattern.empty()) refuse("the added token " + json(a.content).dump() + " normalizes to nothing");
  }
  t->summary_ = {{"normalizer", describe_stage(norm, "normalizers")},
                 {"pre_tokenizer", describe_stage(pre, "pretokenizers")},
                 {"model", "BPE (" + std::to_string(t->bpe_.vocab.size()) + " tokens, " + std::to_string(t->bpe_.n_merges) + " merges)"},
                 {"added_tokens", t->added_.size()},
                 {"post_processor", post.is_null() ? "none" : post["type"].get<std::string>()},
                 {"decoder", dec.is_null() ? "none" : dec["type"].get<std::string>()}};
  return t;
}

const std::string& Tokenizer::token(int id) const {
  if (id < 0 || id >= size()) throw std::out_of_range("token id " + std::to_string(id) + " is not below the vocabulary size " + std::to_string(size()));
  return id_to_token_[static_cast<std::size_t>(id)];
}

int Tokenizer::find(const std::string& tok) const {
  for (const auto& a : added_)
    if (a.content == tok) return a.id;
  const auto it = bpe_.vocab.find(tok);
  return it == bpe_.vocab.end() ? -1 : it->second;
}

bool Tokenizer::is_special(int id) const { return id >= 0 && id < size() && special_[static_cast<std::size_t>(id)]; }

void Tokenizer::split_added(std::vector<Piece>& pieces, bool normalized) const {
  // Patterns of this pass, by first character, longest first (leftmost-longest matching).
  std::vector<const AddedToken*> pats;
  for (const auto& a : added_)
    if (a.normalized == normalized) pats.push_back(&a);
  if (pats.empty()) return;
  std::stable_sort(pats.begin(), pats.end(), [](const AddedToken* a, const AddedToken* b) { return a->pattern.size() > b->pattern.size(); });
  std::vector<Piece> out;
  for (Piece& p : pieces) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    const std::vector<Char>& c = p.chars;
    const std::size_t n = c.size();
    std::size_t at = 0;  // the end of the last piece put out
    std::size_t i = 0;
    while (i < n) {
      const AddedToken* hit = nullptr;
      for (const AddedToken* a : pats) {
        const std::size_t k = a->pattern.size();
        if (i + k > n || c[i].cp != a->pattern[0]) continue;
        bool same = true;
        for (std::size_t j = 1; j < k && same; ++j) same = c[i + j].cp == a->pattern[j];
        if (same) {
          hit = a;
          break;
        }
      }
      if (!hit) {
        ++i;
        continue;
      }
      std::size_t b = i, e = i + hit->pattern.size();
      if (hit->single_word && ((b > 0 && word_char(c[b - 1].cp)) || (e < n && word_char(c[e].cp)))) {
        i = e;  // this occurrence is inside a word: not the token, and not searched again
        continue;
      }
      if (hit->lstrip)
        while (b > at && unicode::is_white_space(c[b - 1].cp)) --b;
      if (hit->rstrip)
        while (e < n && unicode::is_white_space(c[e].cp)) ++e;
      if (at < b) {
        Piece before;
        before.chars.assign(c.begin() + static_cast<std::ptrdiff_t>(at), c.begin() + static_cast<std::ptrdiff_t>(b));
        out.push_back(std::move(before));
      }
      Piece tok;
      tok.chars.assign(c.begin() + static_cast<std::ptrdiff_t>(b), c.begin() + static_cast<std::ptrdiff_t>(e));
      tok.id = hit->id;
      out.push_back(std::move(tok));
      at = i = e;
    }
    if (at < n) {
      Piece rest;
      rest.chars.assign(c.begin() + static_cast<std::ptrdiff_t>(at), c.end());
      out.push_back(std::move(rest));
    }
  }
  pieces.swap(out);
}

void Tokenizer::bpe_word(const std::vector<Char>& word, Encoding& out) const {
  const Bpe& b = bpe_;
  const std::size_t n = word.size();
  if (n == 0) return;
  if (b.ignore_merges) {
    const auto it = b.vocab.find(text_of(word, 0, n));
    if (it != b.vocab.end()) {
      out.ids.push_back(it->second);
      out.bytes.emplace_back(word.front().begin, word.back().end);
      return;
    }
  }
  // Symbols: a token id over the characters [begin, end) of the word, in a linked list.
  struct Sym {
    int id;
    std::size_t begin, end;
    int prev, next;
  };
  std::vector<Sym> syms;
  syms.reserve(n);
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s.clear();
    if (i > 0) s += b.prefix;
    append_utf8(s, word[i].cp);
    if (i + 1 == n) s += b.suffix;
    const auto it = b.vocab.find(s);
    if (it != b.vocab.end()) {
      syms.push_back(Sym{it->second, i, i + 1, 0, 0});
      continue;
    }
    if (b.byte_fallback) {
      std::string u;
      append_utf8(u, word[i].cp);
      std::vector<int> ids;
      for (unsigned char ch : u) {
        static const char* hex = "0123456789ABCDEF";
        const std::string name = std::string("<0x") + hex[ch >> 4] + hex[ch & 15] + ">";
        const auto f = b.vocab.find(name);
        if (f == b.vocab.end()) {
          ids.clear();
          break;
        }
        ids.push_back(f->second);
      }
      if (!ids.empty()) {
        for (int id : ids) syms.push_back(Sym{id, i, i + 1, 0, 0});
        continue;
      }
    }
    if (b.unk < 0) continue;  // no unknown token: the character is left out, as `tokenizers` does
    if (b.fuse_unk && !syms.empty() && syms.back().id == b.unk && syms.back().end == i) {
      syms.back().end = i + 1;
    } else {
      syms.push_back(Sym{b.unk, i, i + 1, 0, 0});
    }
  }
  const int m = static_cast<int>(syms.size());
  for (int k = 0; k < m; ++k) {
    syms[static_cast<std::size_t>(k)].prev = k - 1;
    syms[static_cast<std::size_t>(k)].next = k + 1 < m ? k + 1 : -1;
  }
  // (rank, position, new id), lowest rank first, then leftmost.
  using Merge = std::tuple<int, int, int>;
  std::priority_queue<Merge, std::vector<Merge>, std::greater<Merge>> queue;
  auto push = [&](int k) {
    const int nx = syms[static_cast<std::size_t>(k)].next;
    if (nx < 0) return;
    const std::uint64_t key = (static_cast<std::uint64_t>(syms[static_cast<std::size_t>(k)].id) << 32) |
                              static_cast<std::uint32_t>(syms[static_cast<std::size_t>(nx)].id);
    const auto it = b.merges.find(key);
    if (it != b.merges.end()) queue.emplace(it->second.first, k, it->second.second);
  };
  for (int k = 0; k < m; ++k) push(k);
  std::vector<char> gone(static_cast<std::size_t>(m), 0);
  while (!queue.empty()) {
    const auto [rank, k, made] = queue.top();
    queue.pop();
    Sym& left = syms[static_cast<std::size_t>(k)];
    if (gone[static_cast<std::size_t>(k)] || left.next < 0) continue;
    Sym& right = syms[static_cast<std::size_t>(left.next)];
    const std::uint64_t key = (static_cast<std::uint64_t>(left.id) << 32) | static_cast<std::uint32_t>(right.id);
    const auto it = b.merges.find(key);
    if (it == b.merges.end() || it->second.second != made || it->second.first != rank) continue;  // stale
    left.id = made;
    left.end = right.end;
    gone[static_cast<std::size_t>(left.next)] = 1;
    left.next = right.next;
    if (left.next >= 0) syms[static_cast<std::size_t>(left.next)].prev = k;
    if (left.prev >= 0) push(left.prev);
    push(k);
  }
  for (int k = m > 0 ? 0 : -1; k >= 0; k = syms[static_cast<std::size_t>(k)].next) {
    const Sym& sy = syms[static_cast<std::size_t>(k)];
    std::uint32_t lo = word[sy.begin].begin, hi = word[sy.begin].end;
    for (std::size_t i = sy.begin + 1; i < sy.end; ++i) {
      lo = std::min(lo, word[i].begin);
      hi = std::max(hi, word[i].end);
    }
    out.ids.push_back(sy.id);
    out.bytes.emplace_back(lo, hi);
  }
}

std::vector<Piece> Tokenizer::pieces_of(const std::string& text) const {
  std::vector<CodePoint> cps;
  const std::size_t bad = decode_utf8(text, &cps);
  if (bad != std::string::npos) throw std::invalid_argument("text is not valid UTF-8 at byte " + std::to_string(bad));
  if (text.size() > 0xFFFFFFF0u) throw std::invalid_argument("text is too long to tokenize (over 4 GB)");
  std::vector<Piece> pieces(1);
  pieces[0].chars.reserve(cps.size());
  for (const CodePoint& c : cps)
    pieces[0].chars.push_back(Char{c.cp, static_cast<std::uint32_t>(c.byte_begin), static_cast<std::uint32_t>(c.byte_begin + c.byte_len), true});
  split_added(pieces, false);
  if (normalizer_)
    for (Piece& p : pieces)
      if (p.id < 0) normalizer_->normalize(p.chars);
  split_added(pieces, true);
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  return pieces;
}

std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> Tokenizer::pre_tokenize_str(const std::string& text) const {
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> out;
  for (const Piece& p : pieces_of(text)) {
    std::uint32_t lo = p.chars.empty() ? 0 : p.chars.front().begin, hi = lo;
    for (const Char& c : p.chars) {
      lo = std::min(lo, c.begin);
      hi = std::max(hi, c.end);
    }
    out.emplace_back(text_of(p.chars, 0, p.chars.size()), std::make_pair(std::size_t{lo}, std::size_t{hi}));
  }
  return out;
}

Encoding Tokenizer::encode(const std::string& text, bool add_special_tokens) const {
  const std::vector<Piece> pieces = pieces_of(text);
  Encoding out;
  out.ids.reserve(text.size() / 3 + 4);
  if (add_special_tokens)
    for (int id : prefix_ids_) {
      out.ids.push_back(id);
      out.bytes.emplace_back(0, 0);
    }
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      out.ids.push_back(p.id);
      out.bytes.emplace_back(p.chars.empty() ? 0 : p.chars.front().begin, p.chars.empty() ? 0 : p.chars.back().end);
      continue;
    }
    bpe_word(p.chars, out);
  }
  if (add_special_tokens)
    for (int id : suffix_ids_) {
      out.ids.push_back(id);
      out.bytes.emplace_back(text.size(), text.size());
    }
  return out;
}

std::string Tokenizer::token_bytes(int id) const {
  const std::string& t = token(id);
  if (decoder_ != Decoder::ByteLevel) return t;
  // ByteLevel: each character back to its byte; a token holding a character outside the byte table
  // (an added token such as "  ") stands for its own UTF-8, as `tokenizers` decodes it.
  const ByteTable& bt = byte_table();
  std::vector<CodePoint> cps;
  decode_utf8(t, &cps);
  std::string mine;
  for (const CodePoint& c : cps) {
    const auto it = bt.char_to_byte.find(static_cast<char32_t>(c.cp));
    if (it == bt.char_to_byte.end()) return t;
    mine += static_cast<char>(it->second);
  }
  return mine;
}

std::string Tokenizer::display(int id) const {
  const std::string b = token_bytes(id);
  std::vector<CodePoint> cps;
  std::string out;
  static const char* hex = "0123456789ABCDEF";
  auto byte = [&](unsigned char ch) { out += std::string("<0x") + hex[ch >> 4] + hex[ch & 15] + ">"; };
  std::size_t i = 0;
  while (i < b.size()) {
    // The longest valid character at i, else one byte shown as <0xNN>.
    const auto b0 = static_cast<unsigned char>(b[i]);
    const std::size_t len = b0 < 0x80 ? 1 : b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
    cps.clear();
    if (len == 0 || i + len > b.size() || decode_utf8(b.substr(i, len), &cps) != std::string::npos) {
      byte(b0);
      ++i;
      continue;
    }
    const std::uint32_t cp = cps[0].cp;
    if (cp == ' ') {
      out += "\u2423";
    } else if (cp == '\n') {
      out += "\u21B5";
    } else if (cp == '\t') {
      out += "\u21E5";
    } else if (cp < 0x20 || cp == 0x7F) {
      byte(static_cast<unsigned char>(cp));
    } else {
      out.append(b, i, len);
    }
    i += len;
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int>& ids, bool skip_special) const {
  // `tokenizers` without a decoder joins the tokens with spaces; ByteLevel joins their bytes and
  // decodes them as UTF-8, lossily.
  const bool spaced = decoder_ == Decoder::None;
  std::string out;
  bool first = true;
  for (int id : ids) {
    const std::string& t = token(id);  // throws for an id outside the vocabulary, skipped or not
    if (skip_special && is_special(id)) continue;
    if (spaced) {
      if (!first) out += ' ';
      out += t;
    } else {
      out += token_bytes(id);
    }
    first = false;
  }
  return spaced ? out : decode_utf8_lossy(out);
}

}  // namespace cs::hf
