// The models of the tokenizer pipeline (pipeline.h): what turns one piece of text into token ids.
// Bpe: byte-pair merges over the piece's characters (a tokenizer.json's byte-level BPE, whose
// characters stand for bytes, and circuitscope's own code-point BPE and character vocabularies, a
// BPE without merges). Word: the whole piece is one entry of a word list. Ids: the piece is a token
// id written in decimal.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pipeline.h"

namespace cs::tok {

struct BpeVocab {
  std::unordered_map<std::string, int> vocab;
  std::unordered_map<std::uint64_t, std::pair<int, int>> merges;  // (left id << 32 | right id) -> (rank, new id)
  int unk = -1;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::string prefix, suffix;  // continuing_subword_prefix, end_of_word_suffix
  int n_merges = 0;
};

std::uint64_t merge_key(int left, int right);

// Merges lowest rank first, leftmost first among equal ranks, as `tokenizers` does. A character not
// in the vocabulary becomes its <0xNN> byte tokens (byte_fallback), else the unknown token (fused
// with an unknown token before it under fuse_unk), else is left out, as `tokenizers` leaves it.
//
// Pieces already merged are kept (up to kCachePieces of them, then the cache starts again: a few
// hundred KB, which a page with many models open keeps for each), as
// `tokenizers` keeps them: a text's pieces repeat, and a text typed into the page is encoded again
// at every keystroke with all but the edited piece already known, so only what changed is merged.
class BpeModel final : public Model {
 public:
  static constexpr std::size_t kCachePieces = 1024;
  static constexpr std::size_t kCachedPieceChars = 64;  // longer pieces are merged every time
  explicit BpeModel(BpeVocab v) : v_(std::move(v)) {}
  void tokenize(const std::vector<Char>& piece, Encoding& out) const override;
  int find(const std::string& token) const override;
  std::string describe() const override;
  const BpeVocab& vocab() const { return v_; }
  // Pieces merged (not found in the cache) since the model was made: what a test of incremental
  // re-encoding counts.
  std::size_t pieces_merged() const;

 private:
  struct Sym {
    int id;
    std::size_t begin, end;  // the characters of the piece it covers
  };
  BpeVocab v_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::vector<Sym>> cache_;
  mutable std::size_t merged_ = 0;
  std::vector<Sym> merge(const std::vector<Char>& piece) const;
};

// A word list: the piece is one entry, or id -1 (refuse() names the word and the list).
class WordModel final : public Model {
 public:
  explicit WordModel(const std::vector<std::string>& words);
  void tokenize(const std::vector<Char>& piece, Encoding& out) const override;
  [[noreturn]] void refuse(const std::string& piece, int at) const override;
  int find(const std::string& token) const override;
  std::string describe() const override;

 private:
  std::unordered_map<std::string, int> index_;
  std::string known_;  // "a, b, c, ... (N tokens in all)"
};

// Token ids: the piece is a decimal id below size, optionally written "#12", or id -1.
class IdsModel final : public Model {
 public:
  explicit IdsModel(int size) : size_(size) {}
  void tokenize(const std::vector<Char>& piece, Encoding& out) const override;
  [[noreturn]] void refuse(const std::string& piece, int at) const override;
  int find(const std::string& token) const override;  // "#12" -> 12
  std::string describe() const override;

 private:
  int size_;
};

}  // namespace cs::tok
