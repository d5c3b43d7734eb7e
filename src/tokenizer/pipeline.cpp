// The tokenizer pipeline's stages run in order; see pipeline.h. Added tokens are matched leftmost,
// longest first, as `tokenizers` matches them.
#include "tokenizer/pipeline.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <unordered_map>

#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace cs::tok {

namespace {

struct ByteTable {
  std::array<char32_t, 256> to_char{};
  std::unordered_map<char32_t, unsigned char> to_byte;
  ByteTable() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_char[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      to_byte[to_char[static_cast<std::size_t>(b)]] = static_cast<unsigned char>(b);
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable t;
  return t;
}

bool word_char(char32_t c) { return c == '_' || unicode::is_letter(c) || unicode::is_number(c); }

std::vector<char32_t> code_points_of(const std::string& s, const std::string& refusal_prefix) {
  std::vector<CodePoint> cps;
  if (decode_utf8(s, &cps) != std::string::npos) throw std::invalid_argument(refusal_prefix + "a token is not valid UTF-8");
  std::vector<char32_t> out;
  out.reserve(cps.size());
  for (const auto& c : cps) out.push_back(c.cp);
  return out;
}

}  // namespace

char32_t byte_to_char(unsigned char b) { return byte_table().to_char[b]; }

int char_to_byte(char32_t c) {
  const auto& m = byte_table().to_byte;
  const auto it = m.find(c);
  return it == m.end() ? -1 : it->second;
}

std::string text_of(const std::vector<Char>& chars, std::size_t b, std::size_t e) {
  std::string s;
  for (std::size_t i = b; i < e; ++i) append_utf8(s, chars[i].cp);
  return s;
}

void Model::refuse(const std::string& piece, int at) const {
  throw std::invalid_argument("tokenizer: \"" + piece + "\" at character " + std::to_string(at) + " has no token");
}

Pipeline::Pipeline(Stages stages, const std::string& refusal_prefix) : s_(std::move(stages)) {
  if (!s_.model) throw std::invalid_argument(refusal_prefix + "the tokenizer has no model");
  const std::size_t n = s_.id_to_token.size();
  special_.assign(n, 0);
  textless_.assign(n, 0);
  for (AddedToken& a : s_.added) {
    if (a.id < 0 || static_cast<std::size_t>(a.id) >= n) throw std::invalid_argument(refusal_prefix + "an added token's id is not a token");
    special_[static_cast<std::size_t>(a.id)] = a.special ? 1 : 0;
    a.pattern = code_points_of(a.content, refusal_prefix);
    // A normalized added token is matched in normalized text, so its pattern is normalized too.
    if (!a.normalized || !s_.normalizer) continue;
    std::vector<Char> cs;
    for (char32_t c : a.pattern) cs.push_back(Char{c, 0, 0, true});
    s_.normalizer->normalize(cs);
    a.pattern.clear();
    for (const Char& c : cs) a.pattern.push_back(c.cp);
    if (a.pattern.empty())
      throw std::invalid_argument(refusal_prefix + "the added token " + nlohmann::json(a.content).dump() + " normalizes to nothing");
  }
  for (int id : s_.textless)
    if (id >= 0 && static_cast<std::size_t>(id) < n) textless_[static_cast<std::size_t>(id)] = 1;
}

const std::string& Pipeline::token(int id) const {
  if (id < 0 || id >= size()) throw std::out_of_range("token id " + std::to_string(id) + " is not below the vocabulary size " + std::to_string(size()));
  return s_.id_to_token[static_cast<std::size_t>(id)];
}

int Pipeline::find(const std::string& tok) const {
  for (const auto& a : s_.added)
    if (a.content == tok) return a.id;
  return s_.model->find(tok);
}

bool Pipeline::is_special(int id) const { return id >= 0 && id < size() && special_[static_cast<std::size_t>(id)]; }

void Pipeline::split_added(std::vector<Piece>& pieces, bool normalized) const {
  // Patterns of this pass, longest first (leftmost-longest matching).
  std::vector<const AddedToken*> pats;
  for (const auto& a : s_.added)
    if (a.normalized == normalized) pats.push_back(&a);
  if (pats.empty()) return;
  std::stable_sort(pats.begin(), pats.end(), [](const AddedToken* a, const AddedToken* b) { return a->pattern.size() > b->pattern.size(); });
  std::vector<Piece> out;
  auto cut = [&](const std::vector<Char>& c, std::size_t b, std::size_t e, int id) {
    Piece p;
    p.chars.assign(c.begin() + static_cast<std::ptrdiff_t>(b), c.begin() + static_cast<std::ptrdiff_t>(e));
    p.id = id;
    out.push_back(std::move(p));
  };
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
      if (at < b) cut(c, at, b, -1);
      cut(c, b, e, hit->id);
      at = i = e;
    }
    if (at < n) cut(c, at, n, -1);
  }
  pieces.swap(out);
}

std::vector<Piece> Pipeline::pieces_of(const std::string& text) const {
  std::vector<CodePoint> cps;
  const std::size_t bad = decode_utf8(text, &cps);
  if (bad != std::string::npos) throw std::invalid_argument("text is not valid UTF-8 at byte " + std::to_string(bad));
  if (text.size() > 0xFFFFFFF0u) throw std::invalid_argument("text is too long to tokenize (over 4 GB)");
  std::vector<Piece> pieces(1);
  pieces[0].chars.reserve(cps.size());
  for (const CodePoint& c : cps)
    pieces[0].chars.push_back(Char{c.cp, static_cast<std::uint32_t>(c.byte_begin), static_cast<std::uint32_t>(c.byte_begin + c.byte_len), true});
  split_added(pieces, false);
  if (s_.normalizer)
    for (Piece& p : pieces)
      if (p.id < 0) s_.normalizer->normalize(p.chars);
  split_added(pieces, true);
  if (s_.pre_tokenizer) s_.pre_tokenizer->pre_tokenize(pieces);
  return pieces;
}

std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> Pipeline::pre_tokenize_str(const std::string& text) const {
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

Encoding Pipeline::encode(const std::string& text, bool add_special_tokens) const {
  const std::vector<Piece> pieces = pieces_of(text);
  Encoding out;
  out.ids.reserve(text.size() / 3 + 4);
  if (add_special_tokens)
    for (int id : s_.prefix_ids) {
      out.ids.push_back(id);
      out.bytes.emplace_back(0, 0);
    }
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      out.ids.push_back(p.id);
      out.bytes.emplace_back(p.chars.empty() ? 0 : p.chars.front().begin, p.chars.empty() ? 0 : p.chars.back().end);
      continue;
    }
    if (!p.chars.empty()) s_.model->tokenize(p.chars, out);
  }
  if (add_special_tokens)
    for (int id : s_.suffix_ids) {
      out.ids.push_back(id);
      out.bytes.emplace_back(text.size(), text.size());
    }
  return out;
}

std::string Pipeline::token_bytes(int id) const {
  const std::string& t = token(id);
  if (textless_[static_cast<std::size_t>(id)] || s_.decoder == Decoder::Ids) return std::string();
  if (s_.decoder != Decoder::ByteLevel) return t;
  // ByteLevel: each character back to its byte; a token holding a character outside the byte table
  // (an added token such as "  ") stands for its own UTF-8, as `tokenizers` decodes it.
  std::vector<CodePoint> cps;
  decode_utf8(t, &cps);
  std::string mine;
  for (const CodePoint& c : cps) {
    const int b = char_to_byte(static_cast<char32_t>(c.cp));
    if (b < 0) return t;
    mine += static_cast<char>(b);
  }
  return mine;
}

std::string Pipeline::display(int id) const {
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

std::string Pipeline::decode(const std::vector<int>& ids, bool skip_special) const {
  std::string out;
  bool first = true;
  for (int id : ids) {
    const std::string& t = token(id);  // throws for an id outside the vocabulary, skipped or not
    if (skip_special && is_special(id)) continue;
    switch (s_.decoder) {
      case Decoder::Spaced:
        out += (first ? "" : " ") + t;
        break;
      case Decoder::Ids:
        out += (first ? "" : " ") + std::to_string(id);
        break;
      case Decoder::Concat:
        out += id == s_.unk ? s_.unk_text : t;
        break;
      case Decoder::ByteLevel:
        out += token_bytes(id);
        break;
    }
    first = false;
  }
  // ByteLevel joins the tokens' bytes and reads them as UTF-8, lossily.
  return s_.decoder == Decoder::ByteLevel ? decode_utf8_lossy(out) : out;
}

}  // namespace cs::tok
