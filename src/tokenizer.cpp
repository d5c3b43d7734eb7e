// Tokenizer: strict UTF-8 decoding, character- and word-level vocabularies, spans in UTF-16 units.
#include "tokenizer.h"
#include "tokenizer/hf.h"
#include "tokenizer/utf8.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <unordered_set>

namespace cs {

namespace {

bool is_space(std::uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f';
}

// Letters, digits and apostrophes of ASCII, and every non-ASCII code point.
bool is_word_char(std::uint32_t cp) {
  if (cp >= 0x80) return true;
  return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '\'';
}

// Text shown in an error message, with control characters made visible.
std::string printable(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

// "an object", "a string", ...: the JSON type of j with its article.
std::string a_type(const nlohmann::json& j) {
  const std::string t = j.type_name();
  return (t == "object" || t == "array" ? "an " : "a ") + t;
}

// Checks a vocabulary list: non-empty, unique, valid UTF-8 strings.
void check_vocab(const std::vector<std::string>& vocab) {
  if (vocab.empty()) throw std::invalid_argument("tokenizer: the vocabulary is empty; give at least one token");
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    const std::string& v = vocab[i];
    if (v.empty())
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(i) +
                                  " is an empty string; every token needs some text");
    const std::size_t bad = decode_utf8(v, nullptr);
    if (bad != std::string::npos)
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(i) +
                                  " is not valid UTF-8 at byte " + std::to_string(bad));
    if (!seen.insert(v).second)
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(i) + " \"" + printable(v) +
                                  "\" appears more than once; tokens must be unique");
  }
}

// A decimal id below `size` (no sign, no leading zeros except "0" itself), or -1.
int parse_id(const std::string& s, int size) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return -1;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v < size ? v : -1;
}

// Byte-pair pieces: code-point ranges [first, last) that merges never cross. A word (letters,
// digits, apostrophes, any non-ASCII) or a run of punctuation, each with at most one space before
// it; or a run of other white space, which leaves its last space to a word or punctuation after
// it. A piece is at most kMaxPiece code points (a longer run is cut), which bounds the merging
// work of a pasted run of thousands of dashes.
constexpr std::size_t kMaxPiece = 32;

// Code points of valid UTF-8: the bytes that do not continue a sequence.
std::size_t count_code_points(const std::string& s) {
  std::size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0u) != 0x80u;
  return n;
}

bool is_punct(std::uint32_t cp) { return !is_space(cp) && !is_word_char(cp); }

template <typename F>
void for_each_piece(const std::vector<CodePoint>& cps, F&& f) {
  const std::size_t n = cps.size();
  std::size_t i = 0;
  while (i < n) {
    const std::uint32_t cp = cps[i].cp;
    std::size_t j = i;
    if (cp == ' ' && i + 1 < n && !is_space(cps[i + 1].cp)) {
      const bool word = is_word_char(cps[i + 1].cp);
      j = i + 2;
      while (j < n && (word ? is_word_char(cps[j].cp) : is_punct(cps[j].cp))) ++j;
    } else if (is_word_char(cp)) {
      j = i + 1;
      while (j < n && is_word_char(cps[j].cp)) ++j;
    } else if (is_space(cp)) {
      j = i + 1;
      while (j < n && is_space(cps[j].cp)) ++j;
      if (j < n && j - i >= 2 && cps[j - 1].cp == ' ') --j;  // the last space goes with what follows
    } else {
      j = i + 1;
      while (j < n && is_punct(cps[j].cp)) ++j;
    }
    for (std::size_t a = i; a < j; a += kMaxPiece) f(a, std::min(j, a + kMaxPiece));
    i = j;
  }
}

// Every occurrence of the pair (a, b) in ids, left to right, replaced by `made`, into *out (the
// one merge step of learning and of encoding).
void merge_pair(const std::vector<int>& ids, int a, int b, int made, std::vector<int>* out) {
  out->clear();
  out->reserve(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (k + 1 < ids.size() && ids[k] == a && ids[k + 1] == b) {
      out->push_back(made);
      ++k;
    } else {
      out->push_back(ids[k]);
    }
  }
}

std::uint64_t pair_key(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

}  // namespace

void Tokenizer::build_index() {
  index_.clear();
  if (kind_ == Kind::Ids) {  // find() reads "#i" itself: no map of a possibly million-token vocabulary
    bos_ = -1;
    unk_ = -1;
    return;
  }
  index_.reserve(vocab_.size());
  for (std::size_t i = 0; i < vocab_.size(); ++i) index_.emplace(vocab_[i], static_cast<int>(i));
  if (kind_ == Kind::Char || kind_ == Kind::Bpe) {
    bos_ = vocab_.size() > 0 && vocab_[0] == "<BOS>" ? 0 : -1;
    unk_ = vocab_.size() > 1 && vocab_[1] == "<UNK>" ? 1 : -1;
  } else {
    bos_ = find("<BOS>");
    unk_ = -1;
  }
}

Tokenizer Tokenizer::build_char(const std::string& corpus, int max_chars) {
  if (max_chars < 0)
    throw std::invalid_argument("tokenizer: max_chars must be 0 or more, got " + std::to_string(max_chars));
  std::map<std::uint32_t, std::uint64_t> counts;
  {
    const std::vector<CodePoint> cps = decode_or_throw(corpus);
    for (const CodePoint& c : cps) ++counts[c.cp];
  }
  std::vector<std::pair<std::uint32_t, std::uint64_t>> chars(counts.begin(), counts.end());
  if (chars.size() > static_cast<std::size_t>(max_chars)) {
    // Keep the most frequent; ties go to the smaller code point. Then back to code-point order.
    std::sort(chars.begin(), chars.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    chars.resize(static_cast<std::size_t>(max_chars));
    std::sort(chars.begin(), chars.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  Tokenizer t;
  t.kind_ = Kind::Char;
  t.vocab_.reserve(chars.size() + 2);
  t.vocab_.push_back("<BOS>");
  t.vocab_.push_back("<UNK>");
  for (const auto& c : chars) t.vocab_.push_back(encode_utf8(c.first));
  t.build_index();
  return t;
}

Tokenizer Tokenizer::build_bpe(const std::string& corpus, int vocab_size, int max_chars) {
  Tokenizer t = build_char(corpus, max_chars);
  if (vocab_size <= t.size())
    throw std::invalid_argument("tokenizer: a byte-pair vocabulary of " + std::to_string(vocab_size) +
                                " tokens cannot hold the corpus's " + std::to_string(t.size() - 2) +
                                " characters, <BOS>, <UNK> and at least one merge; give a vocab_size above " +
                                std::to_string(t.size()));
  if (vocab_size > kMaxBpeVocab)
    throw std::invalid_argument("tokenizer: a byte-pair vocabulary may have at most " + std::to_string(kMaxBpeVocab) +
                                " tokens, not " + std::to_string(vocab_size));
  t.kind_ = Kind::Bpe;
  t.build_index();
  // Every distinct piece of the corpus with its count, as character ids (<UNK> for a dropped
  // character: it never merges).
  std::vector<std::vector<int>> words;
  std::vector<std::int64_t> freq;
  {
    const std::vector<CodePoint> cps = decode_or_throw(corpus);
    std::unordered_map<std::string, int> seen;
    for_each_piece(cps, [&](std::size_t a, std::size_t b) {
      const std::size_t bb = cps[a].byte_begin, be = cps[b - 1].byte_begin + cps[b - 1].byte_len;
      auto [it, fresh] = seen.emplace(corpus.substr(bb, be - bb), static_cast<int>(words.size()));
      if (fresh) {
        std::vector<int> ids;
        ids.reserve(b - a);
        for (std::size_t k = a; k < b; ++k) {
          const int id = t.find(corpus.substr(cps[k].byte_begin, cps[k].byte_len));
          ids.push_back(id < 0 ? t.unk_ : id);
        }
        words.push_back(std::move(ids));
        freq.push_back(0);
      }
      ++freq[static_cast<std::size_t>(it->second)];
    });
  }
  // Pair counts, where each pair occurs (word indices, possibly stale), and a heap of (count, pair)
  // entries checked against the current count when they come out (lazy deletion).
  std::unordered_map<std::uint64_t, std::int64_t> count;
  std::unordered_map<std::uint64_t, std::vector<int>> where;
  auto mergeable = [&](int a, int b) { return a >= 2 && b >= 2; };
  for (std::size_t w = 0; w < words.size(); ++w)
    for (std::size_t k = 0; k + 1 < words[w].size(); ++k)
      if (mergeable(words[w][k], words[w][k + 1])) {
        const std::uint64_t key = pair_key(words[w][k], words[w][k + 1]);
        count[key] += freq[w];
        auto& list = where[key];
        if (list.empty() || list.back() != static_cast<int>(w)) list.push_back(static_cast<int>(w));
      }
  using Entry = std::pair<std::int64_t, std::uint64_t>;
  // Most frequent first; among equals the smaller key (left id, then right id).
  auto lower = [](const Entry& x, const Entry& y) { return x.first != y.first ? x.first < y.first : x.second > y.second; };
  std::vector<Entry> heap;
  heap.reserve(count.size());
  for (const auto& [k, c] : count) heap.emplace_back(c, k);
  std::make_heap(heap.begin(), heap.end(), lower);
  std::vector<int> stamp(words.size(), -1);
  std::unordered_map<std::uint64_t, bool> touched;
  while (t.size() < vocab_size && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const Entry top = heap.back();
    heap.pop_back();
    auto cit = count.find(top.second);
    if (cit == count.end() || cit->second != top.first) continue;  // stale
    if (top.first < 2) break;
    const int a = static_cast<int>(top.second >> 32), b = static_cast<int>(top.second & 0xffffffffu);
    const std::string text = t.vocab_[static_cast<std::size_t>(a)] + t.vocab_[static_cast<std::size_t>(b)];
    int made = t.find(text);
    if (made < 0) {
      made = t.size();
      t.vocab_.push_back(text);
      t.index_.emplace(text, made);
    }
    const int m = static_cast<int>(t.merges_.size());
    t.merges_.emplace_back(a, b);
    t.merge_made_.push_back(made);
    t.merge_rank_.emplace(top.second, m);
    touched.clear();
    const std::vector<int> list = std::move(where[top.second]);
    where.erase(top.second);
    for (int w : list) {
      if (stamp[static_cast<std::size_t>(w)] == m) continue;
      stamp[static_cast<std::size_t>(w)] = m;
      std::vector<int>& ids = words[static_cast<std::size_t>(w)];
      bool has = false;
      for (std::size_t k = 0; k + 1 < ids.size() && !has; ++k) has = ids[k] == a && ids[k + 1] == b;
      if (!has) continue;
      const std::int64_t f = freq[static_cast<std::size_t>(w)];
      for (std::size_t k = 0; k + 1 < ids.size(); ++k)
        if (mergeable(ids[k], ids[k + 1])) {
          const std::uint64_t key = pair_key(ids[k], ids[k + 1]);
          count[key] -= f;
          touched[key] = true;
        }
      std::vector<int> next;
      merge_pair(ids, a, b, made, &next);
      ids.swap(next);
      for (std::size_t k = 0; k + 1 < ids.size(); ++k)
        if (mergeable(ids[k], ids[k + 1])) {
          const std::uint64_t key = pair_key(ids[k], ids[k + 1]);
          count[key] += f;
          touched[key] = true;
          auto& wl = where[key];
          if (wl.empty() || wl.back() != w) wl.push_back(w);
        }
    }
    count.erase(top.second);
    for (const auto& [key, _] : touched) {
      auto it = count.find(key);
      if (it == count.end()) continue;
      if (it->second <= 0) {
        count.erase(it);
        continue;
      }
      heap.emplace_back(it->second, key);
      std::push_heap(heap.begin(), heap.end(), lower);
    }
  }
  return t;
}

Tokenizer Tokenizer::build_word(const std::vector<std::string>& vocab) {
  check_vocab(vocab);
  Tokenizer t;
  t.kind_ = Kind::Word;
  t.vocab_ = vocab;
  t.build_index();
  return t;
}

Tokenizer Tokenizer::build_ids(int size) {
  if (size < 1)
    throw std::invalid_argument("tokenizer: a token-id vocabulary needs at least one token, got " + std::to_string(size));
  Tokenizer t;
  t.kind_ = Kind::Ids;
  t.vocab_.reserve(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) t.vocab_.push_back("#" + std::to_string(i));
  t.build_index();
  return t;
}

Tokenizer Tokenizer::build_hf(const std::string& tokenizer_json, int d_vocab, const std::string& bos_token) {
  Tokenizer t;
  t.kind_ = Kind::Hf;
  t.hf_ = hf::Tokenizer::from_text(tokenizer_json);
  t.hf_text_ = std::make_shared<const std::string>(tokenizer_json);
  if (t.hf_->size() > d_vocab)
    throw std::invalid_argument("tokenizer.json: it has " + std::to_string(t.hf_->size()) + " tokens but the model's embedding has " +
                                std::to_string(d_vocab) + " rows; it is not this model's tokenizer");
  t.vocab_.reserve(static_cast<std::size_t>(d_vocab));
  for (int i = 0; i < d_vocab; ++i) {
    std::string shown = i < t.hf_->size() ? t.hf_->display(i) : std::string();
    t.vocab_.push_back(shown.empty() ? "<unused " + std::to_string(i) + ">" : shown);
  }
  t.hf_bos_ = bos_token;
  const std::string bos = bos_token.empty() ? "<|endoftext|>" : bos_token;
  t.bos_ = t.hf_->find(bos);
  if (!bos_token.empty() && t.bos_ < 0)
    throw std::invalid_argument("tokenizer.json: the bos_token " + bos_token + " is not one of its tokens");
  t.unk_ = -1;
  return t;
}

std::string Tokenizer::description() const {
  const std::string n = std::to_string(size());
  switch (kind_) {
    case Kind::Char: return "character-level vocabulary of " + n + " tokens";
    case Kind::Bpe: return "sub-word (byte-pair) vocabulary of " + n + " tokens";
    case Kind::Word: return "word-level vocabulary of " + n + " tokens";
    case Kind::Hf: return "Hugging Face tokenizer.json vocabulary of " + n + " tokens (" + hf_->summary()["model"].get<std::string>() + ")";
    case Kind::Ids: break;
  }
  return "token-id vocabulary of " + n + " (the file carries no tokenizer)";
}

const std::string& Tokenizer::token_text(int id) const {
  if (id < 0 || id >= size())
    throw std::out_of_range("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(size()) + " tokens (ids 0 to " + std::to_string(size() - 1) + ")");
  return vocab_[static_cast<std::size_t>(id)];
}

std::string Tokenizer::token_bytes(int id) const {
  const std::string& text = token_text(id);
  if (kind_ == Kind::Hf) return id < hf_->size() ? hf_->token_bytes(id) : std::string();
  if (kind_ == Kind::Ids || id == bos_ || id == unk_) return std::string();
  return text;
}

int Tokenizer::bos_id() const { return bos_; }

int Tokenizer::find(const std::string& text) const {
  if (kind_ == Kind::Hf) return hf_->find(text);
  if (kind_ == Kind::Ids) {
    const int id = parse_id(text.size() > 1 && text[0] == '#' ? text.substr(1) : std::string(), size());
    return id >= 0 && text == vocab_[static_cast<std::size_t>(id)] ? id : -1;
  }
  auto it = index_.find(text);
  return it == index_.end() ? -1 : it->second;
}

std::vector<Token> Tokenizer::encode(const std::string& text, bool add_bos) const {
  if (kind_ == Kind::Ids) return encode_ids_text(text, add_bos);
  if (kind_ == Kind::Hf) {
    if (add_bos && bos_ < 0)
      throw std::invalid_argument("tokenizer: this tokenizer.json has no <|endoftext|> token to put first; name its bos_token");
    const hf::Encoding e = hf_->encode(text);
    const auto spans = utf16_spans(text, e.bytes);
    std::vector<Token> out;
    out.reserve(e.ids.size() + 1);
    if (add_bos) out.push_back(Token{bos_, 0, 0});
    for (std::size_t i = 0; i < e.ids.size(); ++i) out.push_back(Token{e.ids[i], spans[i].first, spans[i].second});
    return out;
  }
  std::vector<Token> out;
  if (add_bos) {
    if (bos_ < 0)
      throw std::invalid_argument("tokenizer: this vocabulary has no <BOS> token, so none can be put first; "
                                  "add \"<BOS>\" to the vocabulary or encode without it");
    out.push_back(Token{bos_, 0, 0});
  }
  const std::vector<CodePoint> cps = decode_or_throw(text);
  if (kind_ == Kind::Bpe) {
    out.reserve(out.size() + cps.size() / 3 + 1);
    // Pieces repeat (a corpus has a few tens of thousands of distinct words): merge each once.
    std::unordered_map<std::string, std::vector<int>> done;
    std::vector<int> ids, lens, nids, nlens;
    for_each_piece(cps, [&](std::size_t a, std::size_t b) {
      const std::size_t bb = cps[a].byte_begin, be = cps[b - 1].byte_begin + cps[b - 1].byte_len;
      std::string piece = text.substr(bb, be - bb);
      auto it = done.find(piece);
      if (it == done.end()) {
        ids.clear();
        for (std::size_t k = a; k < b; ++k) {
          const int id = find(text.substr(cps[k].byte_begin, cps[k].byte_len));
          ids.push_back(id < 2 ? unk_ : id);
        }
        // Lowest-ranked pair first, every occurrence left to right, until no pair is a merge.
        while (ids.size() >= 2) {
          int best = -1;
          for (std::size_t k = 0; k + 1 < ids.size(); ++k) {
            auto r = merge_rank_.find(pair_key(ids[k], ids[k + 1]));
            if (r != merge_rank_.end() && (best < 0 || r->second < best)) best = r->second;
          }
          if (best < 0) break;
          const auto [l, rr] = merges_[static_cast<std::size_t>(best)];
          merge_pair(ids, l, rr, merge_made_[static_cast<std::size_t>(best)], &nids);
          ids.swap(nids);
        }
        it = done.emplace(std::move(piece), ids).first;
      }
      // Spans: each token covers as many code points as its text has.
      std::size_t k = a;
      for (int id : it->second) {
        const std::size_t len = id == unk_ ? 1 : count_code_points(vocab_[static_cast<std::size_t>(id)]);
        out.push_back(Token{id, cps[k].u16_begin, cps[k + len - 1].u16_end});
        k += len;
      }
    });
    return out;
  }
  if (kind_ == Kind::Char) {
    out.reserve(out.size() + cps.size());
    for (const CodePoint& c : cps) {
      int id = find(text.substr(c.byte_begin, c.byte_len));
      if (id < 0) {
        if (unk_ < 0)
          throw std::invalid_argument("tokenizer: character \"" + printable(text.substr(c.byte_begin, c.byte_len)) +
                                      "\" at character " + std::to_string(c.u16_begin) +
                                      " is not in the vocabulary and there is no <UNK> token");
        id = unk_;
      }
      out.push_back(Token{id, c.u16_begin, c.u16_end});
    }
    return out;
  }

  // Word level.
  auto unknown = [&](std::size_t first, std::size_t last) {
    const std::string word = text.substr(cps[first].byte_begin,
                                         cps[last].byte_begin + cps[last].byte_len - cps[first].byte_begin);
    std::string msg = "unknown word \"" + printable(word) + "\" at character " + std::to_string(cps[first].u16_begin) +
                      "; this model knows: ";
    const std::size_t shown = std::min<std::size_t>(vocab_.size(), 40);
    for (std::size_t i = 0; i < shown; ++i) {
      if (i) msg += ", ";
      msg += printable(vocab_[i]);
    }
    if (vocab_.size() > shown) msg += ", ... (" + std::to_string(vocab_.size()) + " tokens in all)";
    throw std::invalid_argument(msg);
  };
  auto emit = [&](std::size_t first, std::size_t last) {  // code points [first, last] inclusive
    const std::size_t b = cps[first].byte_begin;
    const std::size_t e = cps[last].byte_begin + cps[last].byte_len;
    const int id = find(text.substr(b, e - b));
    if (id < 0) unknown(first, last);
    out.push_back(Token{id, cps[first].u16_begin, cps[last].u16_end});
  };
  const std::size_t n = cps.size();
  std::size_t i = 0;
  while (i < n) {
    const std::uint32_t cp = cps[i].cp;
    if (is_space(cp)) {
      ++i;
      continue;
    }
    if (is_word_char(cp)) {
      std::size_t j = i;
      while (j + 1 < n && is_word_char(cps[j + 1].cp)) ++j;
      emit(i, j);
      i = j + 1;
      continue;
    }
    if (cp == '<') {
      // "<NAME>" is one token when the vocabulary has it; otherwise '<' is punctuation.
      std::size_t j = i + 1;
      while (j < n && cps[j].cp != '>' && cps[j].cp != '<' && !is_space(cps[j].cp)) ++j;
      if (j < n && cps[j].cp == '>') {
        const std::size_t b = cps[i].byte_begin;
        const std::size_t e = cps[j].byte_begin + cps[j].byte_len;
        const int id = find(text.substr(b, e - b));
        if (id >= 0) {
          out.push_back(Token{id, cps[i].u16_begin, cps[j].u16_end});
          i = j + 1;
          continue;
        }
      }
    }
    emit(i, i);  // punctuation (or any other ASCII character) stands alone
    ++i;
  }
  // A <BOS> the user typed first stands for the one add_bos put there: keep one, with its span.
  if (add_bos && out.size() >= 2 && out[1].id == bos_) out.erase(out.begin());
  return out;
}

std::vector<int> Tokenizer::encode_ids(const std::string& text, bool add_bos) const {
  std::vector<Token> toks = encode(text, add_bos);
  std::vector<int> ids;
  ids.reserve(toks.size());
  for (const Token& t : toks) ids.push_back(t.id);
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  if (kind_ == Kind::Hf) {
    std::vector<int> kept;
    for (int id : ids) {
      token_text(id);  // throws for an id outside the vocabulary
      if (id != bos_ && id < hf_->size()) kept.push_back(id);
    }
    return hf_->decode(kept);
  }
  std::string out;
  bool first = true;
  for (int id : ids) {
    const std::string& s = token_text(id);
    if (id == bos_) continue;
    if (kind_ == Kind::Bpe && id == unk_) {  // an unknown character's text is not in the vocabulary
      out += "\xEF\xBF\xBD";               // U+FFFD REPLACEMENT CHARACTER
      continue;
    }
    if (kind_ != Kind::Char && kind_ != Kind::Bpe && !first) out += ' ';
    out += kind_ == Kind::Ids ? std::to_string(id) : s;
    first = false;
  }
  return out;
}

// Bpe: the vocabulary is <BOS>, <UNK>, single characters, then longer tokens; each merge joins
// two tokens that exist by then (specials never merge) into a longer token of the vocabulary, and
// every longer token is made by some merge. Builds the merge ranks.
void Tokenizer::check_merges_and_index() {
  std::size_t n_base = 2;
  while (n_base < vocab_.size() && count_code_points(vocab_[n_base]) == 1) ++n_base;
  for (std::size_t i = n_base; i < vocab_.size(); ++i)
    if (count_code_points(vocab_[i]) < 2)
      throw std::invalid_argument("tokenizer: bpe vocabulary entry " + std::to_string(i) + " \"" + printable(vocab_[i]) +
                                  "\" is a single character after the merged tokens began; characters come first");
  std::vector<char> made(vocab_.size(), 0);
  for (std::size_t i = 2; i < n_base; ++i) made[i] = 1;
  merge_rank_.clear();
  merge_made_.clear();
  for (std::size_t m = 0; m < merges_.size(); ++m) {
    const auto [a, b] = merges_[m];
    auto where = "tokenizer: bpe merge " + std::to_string(m) + " ";
    if (a < 2 || b < 2) throw std::invalid_argument(where + "joins <BOS> or <UNK>; special tokens never merge");
    if (!made[static_cast<std::size_t>(a)] || !made[static_cast<std::size_t>(b)])
      throw std::invalid_argument(where + "joins a token that no earlier merge made");
    const int id = find(vocab_[static_cast<std::size_t>(a)] + vocab_[static_cast<std::size_t>(b)]);
    if (id < 0) throw std::invalid_argument(where + "makes \"" + printable(vocab_[static_cast<std::size_t>(a)] + vocab_[static_cast<std::size_t>(b)]) + "\", which is not in the vocabulary");
    if (!merge_rank_.emplace(pair_key(a, b), static_cast<int>(m)).second)
      throw std::invalid_argument(where + "repeats an earlier merge");
    made[static_cast<std::size_t>(id)] = 1;
    merge_made_.push_back(id);
  }
  for (std::size_t i = n_base; i < vocab_.size(); ++i)
    if (!made[i])
      throw std::invalid_argument("tokenizer: bpe vocabulary entry " + std::to_string(i) + " \"" + printable(vocab_[i]) +
                                  "\" is made by no merge");
}

// Ids: numbers separated by white space or commas, each optionally written "#12".
std::vector<Token> Tokenizer::encode_ids_text(const std::string& text, bool add_bos) const {
  if (add_bos)
    throw std::invalid_argument("tokenizer: a token-id vocabulary has no <BOS> token, so none can be put first; "
                                "type the first token's id yourself");
  const std::vector<CodePoint> cps = decode_or_throw(text);
  std::vector<Token> out;
  const std::size_t n = cps.size();
  std::size_t i = 0;
  while (i < n) {
    if (is_space(cps[i].cp) || cps[i].cp == ',') {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < n && !is_space(cps[j + 1].cp) && cps[j + 1].cp != ',') ++j;
    const std::string word = text.substr(cps[i].byte_begin, cps[j].byte_begin + cps[j].byte_len - cps[i].byte_begin);
    const std::string digits = word[0] == '#' ? word.substr(1) : word;
    const int id = parse_id(digits, size());
    if (id < 0)
      throw std::invalid_argument(
          "\"" + printable(word.substr(0, 40)) + "\" at character " + std::to_string(cps[i].u16_begin) +
          " is not a token id: this model has no tokenizer, so type token ids from 0 to " + std::to_string(size() - 1) +
          " separated by spaces, e.g. \"" + (size() > 12 ? "12 7 7 3" : size() > 1 ? "0 1 0 1" : "0 0 0") + "\"");
    out.push_back(Token{id, cps[i].u16_begin, cps[j].u16_end});
    i = j + 1;
  }
  return out;
}

nlohmann::json Tokenizer::to_json() const {
  nlohmann::json j{{"kind", kind_name()}, {"vocab", vocab_}};
  if (kind_ == Kind::Hf) {
    j["tokenizer_json"] = *hf_text_;
    j["bos_token"] = hf_bos_;
    j["summary"] = hf_->summary();
  }
  if (kind_ == Kind::Bpe) {
    nlohmann::json m = nlohmann::json::array();
    for (const auto& [a, b] : merges_) m.push_back({a, b});
    j["merges"] = m;
  }
  return j;
}

Tokenizer Tokenizer::from_json(const nlohmann::json& j) {
  if (!j.is_object())
    throw std::invalid_argument(std::string("tokenizer: expected a JSON object with \"kind\" and \"vocab\", got ") +
                                a_type(j));
  if (!j.contains("kind") || !j["kind"].is_string())
    throw std::invalid_argument("tokenizer: \"kind\" must be the string \"char\", \"bpe\", \"word\" or \"ids\"");
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "hf") {
    // The vocabulary's length is the model's d_vocab; its entries are recomputed from the file.
    if (!j.contains("tokenizer_json") || !j["tokenizer_json"].is_string() || !j.contains("vocab") || !j["vocab"].is_array())
      throw std::invalid_argument("tokenizer: an \"hf\" tokenizer needs \"tokenizer_json\" (the file's text) and \"vocab\"");
    const std::string bos = j.contains("bos_token") && j["bos_token"].is_string() ? j["bos_token"].get<std::string>() : "";
    return build_hf(j["tokenizer_json"].get<std::string>(), static_cast<int>(j["vocab"].size()), bos);
  }
  if (kind != "char" && kind != "word" && kind != "ids" && kind != "bpe")
    throw std::invalid_argument("tokenizer: kind must be \"char\", \"bpe\", \"word\" or \"ids\", not \"" + printable(kind) + "\"");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "kind" && it.key() != "vocab" && !(kind == "bpe" && it.key() == "merges"))
      throw std::invalid_argument("tokenizer: unknown field \"" + printable(it.key()) + "\"; only \"kind\", \"vocab\"" +
                                  (kind == "bpe" ? " and \"merges\"" : "") + " are allowed");
  if (!j.contains("vocab") || !j["vocab"].is_array())
    throw std::invalid_argument("tokenizer: \"vocab\" must be an array of strings");
  std::vector<std::string> vocab;
  vocab.reserve(j["vocab"].size());
  for (const auto& v : j["vocab"]) {
    if (!v.is_string())
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(vocab.size()) + " is " +
                                  a_type(v) + ", not a string");
    vocab.push_back(v.get<std::string>());
  }
  if (kind == "ids") {
    if (vocab.empty()) throw std::invalid_argument("tokenizer: the vocabulary is empty; give at least one token");
    for (std::size_t i = 0; i < vocab.size(); ++i)
      if (vocab[i] != "#" + std::to_string(i))
        throw std::invalid_argument("tokenizer: ids vocabulary entry " + std::to_string(i) + " is \"" +
                                    printable(vocab[i].substr(0, 40)) + "\"; it must be \"#" + std::to_string(i) + "\"");
    return build_ids(static_cast<int>(vocab.size()));
  }
  check_vocab(vocab);
  Tokenizer t;
  if (kind == "bpe") {
    if (vocab.size() > static_cast<std::size_t>(kMaxBpeVocab))
      throw std::invalid_argument("tokenizer: a byte-pair vocabulary may have at most " + std::to_string(kMaxBpeVocab) +
                                  " tokens, not " + std::to_string(vocab.size()));
    if (vocab.size() < 2 || vocab[0] != "<BOS>" || vocab[1] != "<UNK>")
      throw std::invalid_argument("tokenizer: a bpe vocabulary must start with \"<BOS>\" (id 0) and \"<UNK>\" (id 1)");
    if (!j.contains("merges") || !j["merges"].is_array())
      throw std::invalid_argument("tokenizer: a bpe tokenizer needs \"merges\", an array of [left id, right id] pairs");
    const auto& ms = j["merges"];
    if (ms.size() > vocab.size() * 4)
      throw std::invalid_argument("tokenizer: a bpe tokenizer of " + std::to_string(vocab.size()) + " tokens cannot have " +
                                  std::to_string(ms.size()) + " merges");
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const auto& m = ms[i];
      if (!m.is_array() || m.size() != 2 || !m[0].is_number_integer() || !m[1].is_number_integer())
        throw std::invalid_argument("tokenizer: bpe merge " + std::to_string(i) + " must be a pair of token ids, like [17, 42]");
      const long long a = m[0].get<long long>(), b = m[1].get<long long>();
      if (a < 0 || b < 0 || a >= static_cast<long long>(vocab.size()) || b >= static_cast<long long>(vocab.size()))
        throw std::invalid_argument("tokenizer: bpe merge " + std::to_string(i) + " names a token id outside the vocabulary of " +
                                    std::to_string(vocab.size()));
      t.merges_.emplace_back(static_cast<int>(a), static_cast<int>(b));
    }
    t.kind_ = Kind::Bpe;
    t.vocab_ = std::move(vocab);
    t.build_index();
    t.check_merges_and_index();
    return t;
  }
  if (kind == "char") {
    if (vocab.size() < 2 || vocab[0] != "<BOS>" || vocab[1] != "<UNK>")
      throw std::invalid_argument("tokenizer: a char vocabulary must start with \"<BOS>\" (id 0) and \"<UNK>\" (id 1)");
    for (std::size_t i = 2; i < vocab.size(); ++i) {
      std::vector<CodePoint> cps;
      decode_utf8(vocab[i], &cps);
      if (cps.size() != 1)
        throw std::invalid_argument("tokenizer: char vocabulary entry " + std::to_string(i) + " \"" +
                                    printable(vocab[i]) + "\" is not a single character");
    }
    t.kind_ = Kind::Char;
  } else {
    t.kind_ = Kind::Word;
  }
  t.vocab_ = std::move(vocab);
  t.build_index();
  return t;
}

}  // namespace cs
