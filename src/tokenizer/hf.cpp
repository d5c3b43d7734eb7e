// The tokenizer.json reader and its stages; see hf.h. Each stage follows what the `tokenizers`
// library (Rust) does for the same configuration, including its corner cases: ByteLevel's prefix
// space goes before every piece, Split's behaviours treat a run of matches as the library does, and
// byte-pair merges are applied lowest rank first, leftmost first among equal ranks.
#include "tokenizer/hf.h"

#include "tokenizer/models.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "checks.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace cs::hf {

using nlohmann::json;
using namespace cs::tok;

namespace {

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument("tokenizer.json: " + what); }

std::vector<char32_t> code_points(const std::string& s) {
  std::vector<CodePoint> cps;
  if (decode_utf8(s, &cps) != std::string::npos) refuse("a token is not valid UTF-8");
  std::vector<char32_t> out;
  out.reserve(cps.size());
  for (const auto& c : cps) out.push_back(c.cp);
  return out;
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
          b.cp = byte_to_char(static_cast<unsigned char>(u[k]));
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


std::unique_ptr<Model> read_model(Stages& t, const json& m, bool byte_level) {
  const std::string& type = type_of(m, "the model");
  if (type != "BPE")
    refuse("the model is \"" + type + "\"; circuitscope reads byte-pair (BPE) tokenizers only, such as GPT-2's and GPT-NeoX's");
  BpeVocab b;
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
  t.id_to_token.assign(static_cast<std::size_t>(max_id + 1), std::string());
  std::vector<char> used(static_cast<std::size_t>(max_id + 1), 0);
  for (const auto& [tok, id] : b.vocab) {
    if (used[static_cast<std::size_t>(id)])
      refuse("the vocabulary gives the id " + std::to_string(id) + " to two tokens, " + json(tok).dump() + " and " +
             json(t.id_to_token[static_cast<std::size_t>(id)]).dump());
    used[static_cast<std::size_t>(id)] = 1;
    t.id_to_token[static_cast<std::size_t>(id)] = tok;
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
    if (!b.merges.emplace(merge_key(l->second, r->second), std::make_pair(rank, made->second)).second)
      refuse("merge " + std::to_string(rank + 1) + " (" + json(left).dump() + " and " + json(right).dump() +
             ") is listed twice; which rank it has would depend on the reader");
    ++rank;
  }
  b.n_merges = rank;
  if (byte_level) {
    // Every byte must be a token, or some texts could not be encoded at all.
    for (int x = 0; x < 256; ++x) {
      const std::string s = encode_utf8(byte_to_char(static_cast<unsigned char>(x)));
      if (!b.vocab.count(s) && b.unk < 0)
        refuse("the pre-tokenizer is ByteLevel but the byte " + std::to_string(x) + " (" + json(s).dump() +
               ") is not in the vocabulary and there is no unk_token");
    }
  }
  return std::make_unique<BpeModel>(std::move(b));
}

void read_added(Stages& t, const json& a) {
  if (a.is_null()) return;
  if (!a.is_array()) refuse("\"added_tokens\" is not a list");
  for (const json& e : a) {
    if (!e.is_object()) refuse("an added token is not an object");
    AddedToken tok;
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
    for (const auto& other : t.added)
      if (other.id == tok.id || other.content == tok.content)
        refuse("two added tokens share the " + std::string(other.id == tok.id ? "id " + std::to_string(tok.id) : "content " + json(tok.content).dump()));
    if (static_cast<std::size_t>(tok.id) >= t.id_to_token.size()) t.id_to_token.resize(static_cast<std::size_t>(tok.id) + 1);
    t.id_to_token[static_cast<std::size_t>(tok.id)] = tok.content;
    code_points(tok.content);  // refuses a content that is not UTF-8
    t.added.push_back(std::move(tok));
  }
}

void read_post(Stages& t, const json& p, int depth) {
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
        if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= static_cast<long long>(t.id_to_token.size()))
          refuse("the TemplateProcessing special token " + json(name).dump() + " has an id that is not a token");
        (seen_sequence ? t.suffix_ids : t.prefix_ids).push_back(id.get<int>());
      }
    }
    if (!seen_sequence) refuse("the TemplateProcessing single template does not hold the sequence ($A)");
    return;
  }
  refuse("the post-processor \"" + type + "\" is not one circuitscope implements (it implements ByteLevel, TemplateProcessing and Sequence)");
}

void read_decoder(Stages& t, const json& d, bool byte_level) {
  if (d.is_null()) {
    t.decoder = Decoder::Spaced;
    return;
  }
  const std::string& type = type_of(d, "the decoder");
  if (type == "ByteLevel") {
    t.decoder = Decoder::ByteLevel;
    return;
  }
  (void)byte_level;
  refuse("the decoder \"" + type + "\" is not one circuitscope implements (it implements ByteLevel)");
}

}  // namespace

std::shared_ptr<const tok::Pipeline> from_text(const std::string& text) {
  if (text.size() > kMaxFileBytes)
    refuse("the file is " + std::to_string(text.size() >> 20) + " MB; circuitscope reads tokenizer files of up to " +
           std::to_string(kMaxFileBytes >> 20) + " MB");
  return from_json(parse_json_text(text, "tokenizer.json:"));
}

std::shared_ptr<const tok::Pipeline> from_json(const json& j) {
  if (!j.is_object()) refuse("the file is not a JSON object");
  const auto model = j.find("model");
  if (model == j.end()) refuse("the file has no \"model\"; is it a tokenizer.json?");
  Stages t;
  PreInfo info;
  const json null;
  const json& norm = j.contains("normalizer") ? j["normalizer"] : null;
  const json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : null;
  const json& post = j.contains("post_processor") ? j["post_processor"] : null;
  const json& dec = j.contains("decoder") ? j["decoder"] : null;
  t.normalizer = read_normalizer(norm, 0);
  t.pre_tokenizer = read_pre(pre, 0, info);
  t.model = read_model(t, *model, info.byte_level);
  read_added(t, j.contains("added_tokens") ? j["added_tokens"] : null);
  read_post(t, post, 0);
  read_decoder(t, dec, info.byte_level);
  t.summary = {{"normalizer", describe_stage(norm, "normalizers")},
               {"pre_tokenizer", describe_stage(pre, "pretokenizers")},
               {"model", t.model->describe()},
               {"added_tokens", t.added.size()},
               {"post_processor", post.is_null() ? "none" : post["type"].get<std::string>()},
               {"decoder", dec.is_null() ? "none" : dec["type"].get<std::string>()}};
  return std::make_shared<const tok::Pipeline>(std::move(t), "tokenizer.json: ");
}

}  // namespace cs::hf
