// The tokenizer pipeline's models; see models.h.
#include "tokenizer/models.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "tokenizer/utf8.h"

namespace cs::tok {

std::uint64_t merge_key(int left, int right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

// ----------------------------------------------------------------------------------------------
// Bpe
// ----------------------------------------------------------------------------------------------

std::vector<BpeModel::Sym> BpeModel::merge(const std::vector<Char>& word) const {
  const BpeVocab& b = v_;
  const std::size_t n = word.size();
  std::vector<Sym> syms;
  if (b.ignore_merges) {
    const auto it = b.vocab.find(text_of(word, 0, n));
    if (it != b.vocab.end()) return {Sym{it->second, 0, n}};
  }
  // Symbols: a token id over the characters [begin, end) of the word, in a linked list.
  syms.reserve(n);
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s.clear();
    if (i > 0) s += b.prefix;
    append_utf8(s, word[i].cp);
    if (i + 1 == n) s += b.suffix;
    const auto it = b.vocab.find(s);
    if (it != b.vocab.end()) {
      syms.push_back(Sym{it->second, i, i + 1});
      continue;
    }
    if (b.byte_fallback) {
      std::string u;
      append_utf8(u, word[i].cp);
      std::vector<int> ids;
      for (unsigned char ch : u) {
        static const char* hex = "0123456789ABCDEF";
        const auto f = b.vocab.find(std::string("<0x") + hex[ch >> 4] + hex[ch & 15] + ">");
        if (f == b.vocab.end()) {
          ids.clear();
          break;
        }
        ids.push_back(f->second);
      }
      if (!ids.empty()) {
        for (int id : ids) syms.push_back(Sym{id, i, i + 1});
        continue;
      }
    }
    if (b.unk < 0) continue;  // no unknown token: the character is left out, as `tokenizers` does
    if (b.fuse_unk && !syms.empty() && syms.back().id == b.unk && syms.back().end == i) {
      syms.back().end = i + 1;
    } else {
      syms.push_back(Sym{b.unk, i, i + 1});
    }
  }
  if (b.merges.empty()) return syms;
  const int m = static_cast<int>(syms.size());
  std::vector<int> prev(static_cast<std::size_t>(m)), next(static_cast<std::size_t>(m));
  for (int k = 0; k < m; ++k) {
    prev[static_cast<std::size_t>(k)] = k - 1;
    next[static_cast<std::size_t>(k)] = k + 1 < m ? k + 1 : -1;
  }
  // (rank, position, new id), lowest rank first, then leftmost.
  using Merge = std::tuple<int, int, int>;
  std::priority_queue<Merge, std::vector<Merge>, std::greater<Merge>> queue;
  auto push = [&](int k) {
    const int nx = next[static_cast<std::size_t>(k)];
    if (nx < 0) return;
    const auto it = b.merges.find(merge_key(syms[static_cast<std::size_t>(k)].id, syms[static_cast<std::size_t>(nx)].id));
    if (it != b.merges.end()) queue.emplace(it->second.first, k, it->second.second);
  };
  for (int k = 0; k < m; ++k) push(k);
  std::vector<char> gone(static_cast<std::size_t>(m), 0);
  while (!queue.empty()) {
    const auto [rank, k, made] = queue.top();
    queue.pop();
    const auto ku = static_cast<std::size_t>(k);
    if (gone[ku] || next[ku] < 0) continue;
    const auto ru = static_cast<std::size_t>(next[ku]);
    const auto it = b.merges.find(merge_key(syms[ku].id, syms[ru].id));
    if (it == b.merges.end() || it->second.second != made || it->second.first != rank) continue;  // stale
    syms[ku].id = made;
    syms[ku].end = syms[ru].end;
    gone[ru] = 1;
    next[ku] = next[ru];
    if (next[ku] >= 0) prev[static_cast<std::size_t>(next[ku])] = k;
    if (prev[ku] >= 0) push(prev[ku]);
    push(k);
  }
  std::vector<Sym> out;
  for (int k = m > 0 ? 0 : -1; k >= 0; k = next[static_cast<std::size_t>(k)]) out.push_back(syms[static_cast<std::size_t>(k)]);
  return out;
}

void BpeModel::tokenize(const std::vector<Char>& word, Encoding& out) const {
  auto emit = [&](const std::vector<Sym>& syms) {
    for (const Sym& sy : syms) {
      std::uint32_t lo = word[sy.begin].begin, hi = word[sy.begin].end;
      for (std::size_t i = sy.begin + 1; i < sy.end; ++i) {
        lo = std::min(lo, word[i].begin);
        hi = std::max(hi, word[i].end);
      }
      out.ids.push_back(sy.id);
      out.bytes.emplace_back(lo, hi);
    }
  };
  if (v_.merges.empty() || word.size() > kCachedPieceChars) {
    emit(merge(word));
    return;
  }
  const std::string key = text_of(word, 0, word.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) {
      emit(it->second);
      return;
    }
  }
  std::vector<Sym> syms = merge(word);
  emit(syms);
  std::lock_guard<std::mutex> lock(mu_);
  ++merged_;
  if (cache_.size() >= kCachePieces) cache_.clear();
  cache_.emplace(key, std::move(syms));
}

std::size_t BpeModel::pieces_merged() const {
  std::lock_guard<std::mutex> lock(mu_);
  return merged_;
}

int BpeModel::find(const std::string& token) const {
  const auto it = v_.vocab.find(token);
  return it == v_.vocab.end() ? -1 : it->second;
}

std::string BpeModel::describe() const {
  return "BPE (" + std::to_string(v_.vocab.size()) + " tokens, " + std::to_string(v_.n_merges) + " merges)";
}

// ----------------------------------------------------------------------------------------------
// Word
// ----------------------------------------------------------------------------------------------

WordModel::WordModel(const std::vector<std::string>& words) {
  index_.reserve(words.size());
  for (std::size_t i = 0; i < words.size(); ++i) index_.emplace(words[i], static_cast<int>(i));
  const std::size_t shown = std::min<std::size_t>(words.size(), 40);
  for (std::size_t i = 0; i < shown; ++i) known_ += (i ? ", " : "") + visible_text(words[i]);
  if (words.size() > shown) known_ += ", ... (" + std::to_string(words.size()) + " tokens in all)";
}

void WordModel::tokenize(const std::vector<Char>& piece, Encoding& out) const {
  const auto it = index_.find(text_of(piece, 0, piece.size()));
  out.ids.push_back(it == index_.end() ? -1 : it->second);
  out.bytes.emplace_back(piece.front().begin, piece.back().end);
}

void WordModel::refuse(const std::string& piece, int at) const {
  throw std::invalid_argument("unknown word \"" + visible_text(piece) + "\" at character " + std::to_string(at) +
                              "; this model knows: " + known_);
}

int WordModel::find(const std::string& token) const {
  const auto it = index_.find(token);
  return it == index_.end() ? -1 : it->second;
}

std::string WordModel::describe() const { return "word list (" + std::to_string(index_.size()) + " words)"; }

// ----------------------------------------------------------------------------------------------
// Ids
// ----------------------------------------------------------------------------------------------

namespace {

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

}  // namespace

void IdsModel::tokenize(const std::vector<Char>& piece, Encoding& out) const {
  const std::string word = text_of(piece, 0, piece.size());
  out.ids.push_back(parse_id(word[0] == '#' ? word.substr(1) : word, size_));
  out.bytes.emplace_back(piece.front().begin, piece.back().end);
}

void IdsModel::refuse(const std::string& piece, int at) const {
  throw std::invalid_argument("\"" + visible_text(piece.substr(0, 40)) + "\" at character " + std::to_string(at) +
                              " is not a token id: this model has no tokenizer, so type token ids from 0 to " +
                              std::to_string(size_ - 1) + " separated by spaces, e.g. \"" +
                              (size_ > 12 ? "12 7 7 3" : size_ > 1 ? "0 1 0 1" : "0 0 0") + "\"");
}

int IdsModel::find(const std::string& token) const {
  const int id = parse_id(token.size() > 1 && token[0] == '#' ? token.substr(1) : std::string(), size_);
  return id >= 0 && token == "#" + std::to_string(id) ? id : -1;
}

std::string IdsModel::describe() const { return "token ids (" + std::to_string(size_) + ")"; }

}  // namespace cs::tok
