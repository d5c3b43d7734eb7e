// circuitscope's own tokenizers as pipelines; see own.h.
#include "tokenizer/own.h"

#include <algorithm>

#include "tokenizer/models.h"

namespace cs::tok::own {

namespace {

bool is_space(char32_t cp) { return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f'; }

// Letters, digits and apostrophes of ASCII, and every non-ASCII code point.
bool is_word_char(char32_t cp) {
  if (cp >= 0x80) return true;
  return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '\'';
}

bool is_punct(char32_t cp) { return !is_space(cp) && !is_word_char(cp); }

// Calls f(first, last) for each piece of n characters whose code points cp(i) gives.
template <typename Cp, typename F>
void for_each_piece(std::size_t n, Cp&& cp, F&& f) {
  std::size_t i = 0;
  while (i < n) {
    const char32_t c = cp(i);
    std::size_t j = i;
    if (c == ' ' && i + 1 < n && !is_space(cp(i + 1))) {
      const bool word = is_word_char(cp(i + 1));
      j = i + 2;
      while (j < n && (word ? is_word_char(cp(j)) : is_punct(cp(j)))) ++j;
    } else if (is_word_char(c)) {
      j = i + 1;
      while (j < n && is_word_char(cp(j))) ++j;
    } else if (is_space(c)) {
      j = i + 1;
      while (j < n && is_space(cp(j))) ++j;
      if (j < n && j - i >= 2 && cp(j - 1) == ' ') --j;  // the last space goes with what follows
    } else {
      j = i + 1;
      while (j < n && is_punct(cp(j))) ++j;
    }
    for (std::size_t a = i; a < j; a += kMaxPiece) f(a, std::min(j, a + kMaxPiece));
    i = j;
  }
}

// Cuts every piece (not an added token) into the parts a function of its characters gives.
template <typename Cut>
void cut_pieces(std::vector<Piece>& pieces, Cut&& cut) {
  std::vector<Piece> out;
  for (Piece& p : pieces) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    cut(p.chars, [&](std::size_t a, std::size_t b) {
      Piece q;
      q.chars.assign(p.chars.begin() + static_cast<std::ptrdiff_t>(a), p.chars.begin() + static_cast<std::ptrdiff_t>(b));
      out.push_back(std::move(q));
    });
  }
  pieces.swap(out);
}

class BytePairPieces final : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    cut_pieces(pieces, [](const std::vector<Char>& c, auto&& put) {
      for_each_piece(c.size(), [&](std::size_t i) { return c[i].cp; }, put);
    });
  }
};

// Words (runs of word characters) and single punctuation characters; white space is dropped.
class WordPieces final : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    cut_pieces(pieces, [](const std::vector<Char>& c, auto&& put) {
      std::size_t i = 0;
      while (i < c.size()) {
        std::size_t j = i + 1;
        if (is_word_char(c[i].cp))
          while (j < c.size() && is_word_char(c[j].cp)) ++j;
        if (!is_space(c[i].cp)) put(i, j);
        i = j;
      }
    });
  }
};

// Runs of anything but white space and commas.
class IdPieces final : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    cut_pieces(pieces, [](const std::vector<Char>& c, auto&& put) {
      auto sep = [&](std::size_t i) { return is_space(c[i].cp) || c[i].cp == ','; };
      std::size_t i = 0;
      while (i < c.size()) {
        if (sep(i)) {
          ++i;
          continue;
        }
        std::size_t j = i + 1;
        while (j < c.size() && !sep(j)) ++j;
        put(i, j);
        i = j;
      }
    });
  }
};

// "<BOS>", "<UNK>", characters, then merged tokens: a BPE model over them.
Stages code_point_stages(const std::vector<std::string>& vocab, const std::vector<std::pair<int, int>>& merges,
                         const std::vector<int>& made) {
  BpeVocab v;
  v.vocab.reserve(vocab.size());
  for (std::size_t i = 0; i < vocab.size(); ++i) v.vocab.emplace(vocab[i], static_cast<int>(i));
  v.unk = 1;
  for (std::size_t k = 0; k < merges.size(); ++k)
    v.merges.emplace(merge_key(merges[k].first, merges[k].second), std::make_pair(static_cast<int>(k), made[k]));
  v.n_merges = static_cast<int>(merges.size());
  Stages s;
  s.model = std::make_unique<BpeModel>(std::move(v));
  s.decoder = Decoder::Concat;
  s.unk = 1;
  s.id_to_token = vocab;
  s.textless = {0, 1};
  return s;
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> byte_pair_pieces(const std::vector<char32_t>& text) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for_each_piece(text.size(), [&](std::size_t i) { return text[i]; }, [&](std::size_t a, std::size_t b) { out.emplace_back(a, b); });
  return out;
}

std::shared_ptr<const Pipeline> characters(const std::vector<std::string>& vocab) {
  Stages s = code_point_stages(vocab, {}, {});
  s.unk_text = "<UNK>";
  s.summary = {{"pre_tokenizer", "none"}, {"model", "characters (" + std::to_string(vocab.size()) + " tokens)"}};
  return std::make_shared<const Pipeline>(std::move(s), "tokenizer: ");
}

std::shared_ptr<const Pipeline> byte_pairs(const std::vector<std::string>& vocab, const std::vector<std::pair<int, int>>& merges,
                                           const std::vector<int>& made) {
  Stages s = code_point_stages(vocab, merges, made);
  s.unk_text = "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER: an unknown character's text is not in the vocabulary
  s.pre_tokenizer = std::make_unique<BytePairPieces>();
  s.summary = {{"pre_tokenizer", "circuitscope's pieces"}, {"model", s.model->describe()}};
  return std::make_shared<const Pipeline>(std::move(s), "tokenizer: ");
}

std::shared_ptr<const Pipeline> words(const std::vector<std::string>& vocab) {
  Stages s;
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    const std::string& w = vocab[i];
    const bool special = w.size() >= 2 && w.front() == '<' && w.back() == '>' &&
                         std::none_of(w.begin() + 1, w.end() - 1, [](char c) { return c == '<' || c == '>' || is_space(static_cast<unsigned char>(c)); });
    if (!special) continue;
    AddedToken a;
    a.content = w;
    a.id = static_cast<int>(i);
    a.special = true;
    a.normalized = false;
    s.added.push_back(std::move(a));
    if (w == "<BOS>") s.textless.push_back(static_cast<int>(i));
  }
  s.pre_tokenizer = std::make_unique<WordPieces>();
  s.model = std::make_unique<WordModel>(vocab);
  s.decoder = Decoder::Spaced;
  s.id_to_token = vocab;
  s.summary = {{"added_tokens", s.added.size()}, {"pre_tokenizer", "words and punctuation"}, {"model", s.model->describe()}};
  return std::make_shared<const Pipeline>(std::move(s), "tokenizer: ");
}

std::shared_ptr<const Pipeline> ids(int size) {
  Stages s;
  s.pre_tokenizer = std::make_unique<IdPieces>();
  s.model = std::make_unique<IdsModel>(size);
  s.decoder = Decoder::Ids;
  s.id_to_token.reserve(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) s.id_to_token.push_back("#" + std::to_string(i));
  s.summary = {{"pre_tokenizer", "white space and commas"}, {"model", s.model->describe()}};
  return std::make_shared<const Pipeline>(std::move(s), "tokenizer: ");
}

}  // namespace cs::tok::own
