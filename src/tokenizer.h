// Tokenizer: character-level (built from a corpus, with <BOS> and an unknown-character token),
// word-level (a fixed list of words, punctuation and special tokens such as <BOS> <MID>) and
// token-id (for models whose file carries no tokenizer: the text is the ids, "12 7 7 3").
// Every token keeps the span of text it came from so the page can colour what the user typed.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace cs {

struct Token {
  int id = 0;
  // Span in the input text, in UTF-16 code units (what JavaScript's String indexes), [begin, end).
  // A <BOS> added by encode() has begin == end == 0.
  int begin = 0;
  int end = 0;
};

class Tokenizer {
 public:
  // Ids: token i is written "#i" in the vocabulary; text is decimal ids separated by white space
  // or commas (a leading "#" is allowed); there is no <BOS> and no <UNK>.
  enum class Kind { Char, Word, Ids };

  // Character-level vocabulary: "<BOS>" (id 0), "<UNK>" (id 1), then every distinct Unicode
  // code point of `corpus` (UTF-8) in code-point order, capped at max_chars by frequency
  // (rarer characters map to <UNK>). Throws on invalid UTF-8.
  static Tokenizer build_char(const std::string& corpus, int max_chars = 1000);
  // Word-level vocabulary: the given tokens in order; each must be non-empty and unique.
  // Special tokens are those written as <...>. Throws std::invalid_argument otherwise.
  static Tokenizer build_word(const std::vector<std::string>& vocab);
  // Token-id vocabulary of `size` tokens ("#0" .. "#size-1"). Throws std::invalid_argument if
  // size is below 1.
  static Tokenizer build_ids(int size);

  Kind kind() const { return kind_; }
  const char* kind_name() const { return kind_ == Kind::Char ? "char" : kind_ == Kind::Word ? "word" : "ids"; }
  int size() const { return static_cast<int>(vocab_.size()); }
  const std::vector<std::string>& vocab() const { return vocab_; }
  const std::string& token_text(int id) const;  // throws std::out_of_range with a sentence
  int bos_id() const;                           // -1 if the vocabulary has no <BOS>
  int unk_id() const { return unk_; }           // -1 for word-level
  // Id of an exact vocabulary entry, or -1.
  int find(const std::string& text) const;

  // Char: every code point is a token (unknown ones become <UNK>); a literal "<BOS>" in the
  // text is just five characters. Word: the text is split on white space and punctuation
  // (each punctuation character is its own token); "<NAME>" written literally is one token if
  // it is in the vocabulary; a word not in the vocabulary throws std::invalid_argument
  // naming the word and its position. Ids: each id must be below size(), else std::invalid_argument
  // naming it and its position. With add_bos, a <BOS> token is put first (for word-level
  // text that already starts with a literal "<BOS>", that one token is kept, with its span).
  std::vector<Token> encode(const std::string& text, bool add_bos) const;
  std::vector<int> encode_ids(const std::string& text, bool add_bos) const;
  // Concatenated token texts (char), space-joined (word) or the ids space-joined ("12 7 7 3",
  // which encodes back to the same ids); <BOS> is left out.
  std::string decode(const std::vector<int>& ids) const;

  nlohmann::json to_json() const;
  // Validates: kind, vocab array of unique non-empty strings, <BOS>/<UNK> positions for char,
  // "#0", "#1", ... in order for ids.
  static Tokenizer from_json(const nlohmann::json& j);

 private:
  Kind kind_ = Kind::Char;
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int> index_;
  int unk_ = -1;
  int bos_ = -1;
  void build_index();
  std::vector<Token> encode_ids_text(const std::string& text, bool add_bos) const;
};

}  // namespace cs
