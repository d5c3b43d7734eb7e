// A tokenizer read from a Hugging Face tokenizer.json, as the `tokenizers` library runs one: added
// tokens split out first, then a normalizer, a pre-tokenizer, a model (byte-pair encoding), a
// post-processor and a decoder, each configured by the file. It opens GPT-2's tokenizer, GPT-NeoX's
// and the ones TransformerLens's toy models use. What the file configures that circuitscope does not
// implement is refused when the file is read, naming it; nothing is skipped silently.
//
// Offsets are byte ranges of the original text, through every stage: a token that normalization
// changed covers the characters it came from, and a byte-level token that ends inside a character
// covers only its bytes (utf16_spans in utf8.h turns them into the page's UTF-16 spans). Unlike
// `tokenizers` with trim_offsets, a token's range keeps its leading space ("Ġthe" covers " the"), so
// the ranges of a text's tokens cover the whole text.
#pragma once
#include <nlohmann/json.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cs::hf {

// Limits on what a tokenizer.json may hold, so a hostile file costs bounded memory.
constexpr std::size_t kMaxFileBytes = 64u << 20;  // the largest tokenizer.json read (64 MB)
constexpr int kMaxVocab = 1 << 20;                // token ids are below this
constexpr int kMaxNesting = 8;                    // Sequence stages inside Sequence stages

// One character of the text being tokenized, with the bytes of the original text it came from.
// `exact`: the character is the original's own (not made by normalization), so byte k of its UTF-8
// is byte begin + k of the original.
struct Char {
  char32_t cp = 0;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  bool exact = true;
};

// A piece of the text between the stages: its characters, or an added token already decided (id).
struct Piece {
  std::vector<Char> chars;
  int id = -1;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::vector<Char>& chars) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and, for ByteLevel, rewrites) the pieces whose id is -1; added tokens pass through.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

struct Encoding {
  std::vector<int> ids;
  std::vector<std::pair<std::size_t, std::size_t>> bytes;  // per token, [begin, end) in the text's UTF-8
};

class Tokenizer {
 public:
  // Reads a tokenizer.json as Hugging Face writes it. Throws std::invalid_argument with a sentence
  // naming what is wrong or unsupported, e.g. "tokenizer.json: the model is \"Unigram\"; circuitscope
  // reads BPE tokenizers only".
  static std::shared_ptr<const Tokenizer> from_json(const nlohmann::json& j);
  static std::shared_ptr<const Tokenizer> from_text(const std::string& json_text);

  // The text (valid UTF-8, else std::invalid_argument) as token ids with their byte ranges. With
  // add_special_tokens, the post-processor's tokens (a TemplateProcessing's <s>, say) are added,
  // with empty ranges at the start or end of the text.
  Encoding encode(const std::string& text, bool add_special_tokens = false) const;
  // The pieces the added tokens, the normalizer and the pre-tokenizer cut the text into, before the
  // model sees them, each with its byte range: what `tokenizers`'s pre_tokenize_str gives
  // (ByteLevel pieces written in its characters, "Ġworld").
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> pre_tokenize_str(const std::string& text) const;
  // The ids as text, through the decoder; bytes that do not form UTF-8 become U+FFFD. Special
  // added tokens are kept unless skip_special. Throws std::out_of_range for an id not below size().
  std::string decode(const std::vector<int>& ids, bool skip_special = false) const;

  int size() const { return static_cast<int>(id_to_token_.size()); }  // the largest id + 1
  // The token's text as the file writes it ("Ġthe"), "" for an id no entry uses.
  const std::string& token(int id) const;
  int find(const std::string& token) const;  // its id, or -1
  // The token as a page draws it: its bytes as text, with spaces as "␣", line breaks as "↵", tabs as
  // "⇥", and bytes that are not a whole UTF-8 character (a byte-level token ending inside one) or
  // are control characters as "<0xE2>". An added token is its content.
  std::string display(int id) const;
  // The bytes the token stands for: the decoder's bytes for it (a ByteLevel token's characters
  // mapped back to bytes; an added token's UTF-8).
  std::string token_bytes(int id) const;
  bool is_special(int id) const;
  // What the file configures, in words: {"normalizer": "NFC", "pre_tokenizer": "Sequence(Digits,
  // ByteLevel)", "model": "BPE (50257 tokens, 50000 merges)", ...}.
  const nlohmann::json& summary() const { return summary_; }

  struct AddedToken {
    std::string content;
    int id = -1;
    bool special = false, normalized = true, single_word = false, lstrip = false, rstrip = false;
    std::vector<char32_t> pattern;  // content, normalized when `normalized`
  };
  struct Bpe {
    std::unordered_map<std::string, int> vocab;
    std::unordered_map<std::uint64_t, std::pair<int, int>> merges;  // (left id << 32 | right id) -> (rank, new id)
    int unk = -1;
    bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
    std::string prefix, suffix;  // continuing_subword_prefix, end_of_word_suffix
    int n_merges = 0;
  };

 private:
  std::vector<AddedToken> added_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  Bpe bpe_;
  std::vector<std::string> id_to_token_;
  std::vector<char> special_;
  std::vector<int> prefix_ids_, suffix_ids_;  // the post-processor's tokens for one sequence
  enum class Decoder { None, ByteLevel } decoder_ = Decoder::None;
  nlohmann::json summary_;

  void split_added(std::vector<Piece>& pieces, bool normalized) const;
  std::vector<Piece> pieces_of(const std::string& text) const;
  void bpe_word(const std::vector<Char>& word, Encoding& out) const;
  friend struct Reader;
};

}  // namespace cs::hf
