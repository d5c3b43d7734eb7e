// A tokenizer as a pipeline of stages, the shape Hugging Face's `tokenizers` library gives one:
// added tokens split out of the raw text, a normalizer, added tokens split out of the normalized
// text, a pre-tokenizer that cuts the text into pieces, a model that turns each piece into token ids,
// a post-processor's tokens around the sequence, and a decoder that turns ids back into text. Every
// tokenizer circuitscope reads is one: a tokenizer.json (hf.h reads it) and circuitscope's own
// character, byte-pair, word and token-id vocabularies (own.h builds them; cs::Tokenizer in
// tokenizer.h is what a model holds).
//
// Offsets are byte ranges of the original text through every stage: a character that normalization
// made covers the characters it came from, and a byte-level token that ends inside a character
// covers only its own bytes (utf16_spans in utf8.h turns them into the page's UTF-16 spans).
#pragma once
#include <nlohmann/json.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cs::tok {

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

struct Encoding {
  // Token ids; -1 marks a piece the model has no token for (a word-level or token-id vocabulary:
  // Model::refuse says why in words).
  std::vector<int> ids;
  std::vector<std::pair<std::size_t, std::size_t>> bytes;  // per token, [begin, end) in the text's UTF-8
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

class Model {
 public:
  virtual ~Model() = default;
  // Appends the piece's tokens (ids and byte ranges) to out; id -1 for a piece it has no token for.
  virtual void tokenize(const std::vector<Char>& piece, Encoding& out) const = 0;
  // Throws std::invalid_argument saying why `piece` (the text of an id -1, at UTF-16 position
  // `at`) has no token. Models that always give a token never call for it.
  [[noreturn]] virtual void refuse(const std::string& piece, int at) const;
  // The id of a vocabulary entry written exactly so, or -1.
  virtual int find(const std::string& token) const = 0;
  // In words, for the summary: "BPE (50257 tokens, 50000 merges)".
  virtual std::string describe() const = 0;
};

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false, normalized = true, single_word = false, lstrip = false, rstrip = false;
  std::vector<char32_t> pattern;  // content, normalized when `normalized`
};

// How ids become text again. Spaced: token texts joined by spaces (`tokenizers` without a decoder;
// a word-level vocabulary). ByteLevel: each token's characters mapped back to bytes (GPT-2's table),
// joined and decoded as UTF-8, lossily. Concat: token texts joined (characters and code-point
// byte-pair tokens); the unknown token as `unk_text`. Ids: the ids themselves, space-joined.
enum class Decoder { Spaced, ByteLevel, Concat, Ids };

// GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the other 68 bytes
// for the characters U+0100 onwards, in byte order (so a space is "Ġ", U+0120). -1: not in it.
char32_t byte_to_char(unsigned char b);
int char_to_byte(char32_t c);

// The stages, filled in by a reader (hf.h, own.h), then finish() is called once.
struct Stages {
  std::vector<AddedToken> added;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::vector<int> prefix_ids, suffix_ids;  // the post-processor's tokens for one sequence
  Decoder decoder = Decoder::Spaced;
  int unk = -1;                             // Concat: the unknown token, decoded as unk_text
  std::string unk_text;
  std::vector<std::string> id_to_token;     // every id's text as the vocabulary writes it ("Ġthe")
  std::vector<int> textless;                // ids that stand for no text (<BOS>, <UNK>)
  nlohmann::json summary;                   // what each stage is, in words
};

class Pipeline {
 public:
  // Normalizes the normalized added tokens' patterns and checks their ids. Throws
  // std::invalid_argument with `refusal_prefix` ("tokenizer.json: ") before a sentence.
  Pipeline(Stages stages, const std::string& refusal_prefix);

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

  int size() const { return static_cast<int>(s_.id_to_token.size()); }  // the largest id + 1
  // The token's text as the vocabulary writes it ("Ġthe"), "" for an id no entry uses.
  const std::string& token(int id) const;
  int find(const std::string& token) const;  // its id (an added token's, else the vocabulary's), or -1
  // The token as a page draws it: its bytes as text, with spaces as "␣", line breaks as "↵", tabs as
  // "⇥", and bytes that are not a whole UTF-8 character (a byte-level token ending inside one) or
  // are control characters as "<0xE2>". An added token is its content.
  std::string display(int id) const;
  // The bytes the token stands for: the decoder's bytes for it (a ByteLevel token's characters
  // mapped back to bytes; an added token's UTF-8); "" for a token that stands for no text.
  std::string token_bytes(int id) const;
  bool is_special(int id) const;
  const Model& model() const { return *s_.model; }
  // What the stages are, in words: {"normalizer": "NFC", "pre_tokenizer": "Sequence(Digits,
  // ByteLevel)", "model": "BPE (50257 tokens, 50000 merges)", ...}.
  const nlohmann::json& summary() const { return s_.summary; }

 private:
  Stages s_;
  std::vector<char> special_, textless_;
  void split_added(std::vector<Piece>& pieces, bool normalized) const;
  std::vector<Piece> pieces_of(const std::string& text) const;
};

// The text of characters [b, e) as UTF-8.
std::string text_of(const std::vector<Char>& chars, std::size_t b, std::size_t e);

}  // namespace cs::tok
