// Tokenizer: character-level (built from a corpus, with <BOS> and an unknown-character token),
// word-level (a fixed list of words, punctuation and special tokens such as <BOS> <MID>) and
// token-id (for models whose file carries no tokenizer: the text is the ids, "12 7 7 3") and
// byte-pair (BPE: sub-word tokens learned from a corpus by merging the most frequent adjacent pair),
// and a Hugging Face tokenizer.json. Every kind runs on the one tokenizer pipeline
// (tokenizer/pipeline.h). Every token keeps the span of text it came from so the page can colour
// what the user typed.
#pragma once
#include <nlohmann/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

namespace cs {

namespace tok {
class Pipeline;
}

struct Token {
  int id = 0;
  // Span in the input text, in UTF-16 code units (what JavaScript's String indexes), [begin, end).
  // A <BOS> added by encode() has begin == end == 0.
  int begin = 0;
  int end = 0;
};

// The largest byte-pair vocabulary build_bpe makes or a model file may carry.
constexpr int kMaxBpeVocab = 65536;

class Tokenizer {
 public:
  // Ids: token i is written "#i" in the vocabulary; text is decimal ids separated by white space
  // or commas (a leading "#" is allowed); there is no <BOS> and no <UNK>.
  // Bpe: characters as in Char, then merged tokens (see build_bpe).
  // Hf: a Hugging Face tokenizer.json (tokenizer/hf.h), e.g. GPT-2's or GPT-NeoX's, for a model
  // from TransformerLens.
  enum class Kind { Char, Word, Ids, Bpe, Hf };

  // Character-level vocabulary: "<BOS>" (id 0), "<UNK>" (id 1), then every distinct Unicode
  // code point of `corpus` (UTF-8) in code-point order, capped at max_chars by frequency
  // (rarer characters map to <UNK>). Throws on invalid UTF-8.
  static Tokenizer build_char(const std::string& corpus, int max_chars = 1000);
  // Byte-pair vocabulary of vocab_size tokens: "<BOS>" (id 0), "<UNK>" (id 1), the corpus's
  // characters as build_char(corpus, max_chars) keeps them, then one token per merge. The text is
  // first cut into pieces (a word with at most one space before it; a run of punctuation with at
  // most one space before it; a run of other white space, leaving a last space to the piece after
  // it), and merges never cross a piece. Each merge joins the adjacent pair of tokens that occurs
  // most often in the corpus (ties: the smaller left id, then the smaller right id), and every
  // occurrence of it is merged, left to right. Deterministic: the same corpus gives the same
  // tokenizer on every platform. Stops early when no pair occurs twice. Throws
  // std::invalid_argument when vocab_size cannot hold the characters plus one merge.
  static Tokenizer build_bpe(const std::string& corpus, int vocab_size, int max_chars = 1000);
  // Word-level vocabulary: the given tokens in order; each must be non-empty and unique.
  // Special tokens are those written as <...>. Throws std::invalid_argument otherwise.
  static Tokenizer build_word(const std::vector<std::string>& vocab);
  // Token-id vocabulary of `size` tokens ("#0" .. "#size-1"). Throws std::invalid_argument if
  // size is below 1.
  static Tokenizer build_ids(int size);

  // A tokenizer.json's text for a model whose embedding has d_vocab rows: ids the file does not use
  // (d_vocab may be larger, as GPT-NeoX pads it) are "<unused N>". The <BOS> TransformerLens puts
  // first is the tokenizer's "<|endoftext|>" (GPT-2's and GPT-NeoX's bos_token) when it has one;
  // bos_token names another. Throws std::invalid_argument with hf::Tokenizer's sentences, or when
  // the file has more tokens than d_vocab.
  static Tokenizer build_hf(const std::string& tokenizer_json, int d_vocab, const std::string& bos_token = "");

  // The form the model file stores it in (to_json); what it does comes from its pipeline.
  Kind kind() const { return kind_; }
  const char* kind_name() const;
  // Whether any typed text becomes tokens (char, bpe, hf). A word-level tokenizer reads only its
  // own words and a token-id one only ids, so the page gives those a sample from the core instead.
  bool reads_text() const { return reads_text_; }
  // The vocabulary in words, as the page and CLI name it: "character-level vocabulary of 82
  // tokens", "sub-word (byte-pair) vocabulary of 2048 tokens", "Hugging Face tokenizer.json
  // vocabulary of 50257 tokens (BPE ...)", ...
  const std::string& description() const { return description_; }
  // What to type, for the label above the page's text box: "Text (character-level: every character
  // is a token)", ...
  const std::string& typing_hint() const { return typing_hint_; }
  // The stages it runs (tokenizer/pipeline.h): for the summary, the incremental-encoding count.
  const tok::Pipeline& pipeline() const { return *p_; }
  int size() const { return static_cast<int>(vocab_.size()); }
  // Each token's text; for hf, as a page draws it (hf::Tokenizer::display: "␣the", "<0xE2>").
  const std::vector<std::string>& vocab() const { return vocab_; }
  const std::string& token_text(int id) const;  // throws std::out_of_range with a sentence
  // The bytes token `id` stands for in text: for hf, the decoder's bytes (a byte-level token's
  // characters mapped back to bytes, so a token ending inside a character gives part of its UTF-8;
  // an added token its content; "" for an "<unused N>" row); for char, bpe and word, the token's
  // UTF-8; "" for <BOS> and <UNK> and for a token-id vocabulary, whose tokens stand for no text.
  // Throws std::out_of_range as token_text does.
  std::string token_bytes(int id) const;
  // token_bytes of each id, one after another; `offsets` gets ids.size() + 1 entries, id i's bytes
  // being [offsets[i], offsets[i + 1]).
  std::string token_bytes(const std::vector<int>& ids, std::vector<int>& offsets) const;
  int bos_id() const;                           // -1 if the vocabulary has no <BOS>
  int unk_id() const { return unk_; }           // -1 for word-level
  // Bpe: the merges in order, each a pair of ids.
  const std::vector<std::pair<int, int>>& merges() const { return merges_; }
  // Id of an exact vocabulary entry, or -1.
  int find(const std::string& text) const;

  // Char: every code point is a token (unknown ones become <UNK>); a literal "<BOS>" in the
  // text is just five characters. Word: the text is split on white space and punctuation
  // (each punctuation character is its own token); "<NAME>" written literally is one token if
  // it is in the vocabulary; a word not in the vocabulary throws std::invalid_argument
  // naming the word and its position. Ids: each id must be below size(), else std::invalid_argument
  // naming it and its position. Bpe: the text is cut into pieces as build_bpe does, each piece
  // into characters (unknown ones become <UNK>), and the merges applied in their order, every
  // occurrence left to right. With add_bos, a <BOS> token is put first (for word-level
  // text that already starts with a literal "<BOS>", that one token is kept, with its span).
  std::vector<Token> encode(const std::string& text, bool add_bos) const;
  std::vector<int> encode_ids(const std::string& text, bool add_bos) const;
  // Concatenated token texts (char, bpe), space-joined (word) or the ids space-joined ("12 7 7 3",
  // which encodes back to the same ids); <BOS> is left out.
  std::string decode(const std::vector<int>& ids) const;

  nlohmann::json to_json() const;
  // What the API and the page are told: to_json() without a tokenizer.json's text, with
  // reads_text, description, typing_hint, units ("characters" or "tokens", what a truncation
  // note counts), bos_id and the pipeline's stages in words (summary).
  nlohmann::json describe() const;
  // Validates: kind, vocab array of unique non-empty strings, <BOS>/<UNK> positions for char
  // and bpe, "#0", "#1", ... in order for ids; for bpe, "merges" (pairs of earlier ids whose texts
  // join to the token they make).
  static Tokenizer from_json(const nlohmann::json& j);

 private:
  Kind kind_ = Kind::Char;
  std::vector<std::string> vocab_;
  int unk_ = -1;
  int bos_ = -1;
  std::vector<std::pair<int, int>> merges_;     // Bpe, as stored
  std::shared_ptr<const tok::Pipeline> p_;      // what encodes and decodes
  bool reads_text_ = true;
  bool typed_bos_first_ = false;                // Word: a <BOS> typed first is the one add_bos puts there
  std::string description_, typing_hint_, no_bos_;
  std::shared_ptr<const std::string> hf_text_;  // Hf: the tokenizer.json, saved with the model
  std::string hf_bos_;                          // Hf: the bos_token asked for, or ""
  void set_pipeline(std::shared_ptr<const tok::Pipeline> p);
  // <BOS>, <UNK>, characters (and merged tokens): checked by the caller.
  static Tokenizer with_characters(std::vector<std::string> vocab);
  static Tokenizer with_byte_pairs(std::vector<std::string> vocab, std::vector<std::pair<int, int>> merges, const std::vector<int>& made);
};

}  // namespace cs
