// circuitscope's own tokenizers as pipelines (pipeline.h), with the ids the shipped models were
// trained with:
// - characters: "<BOS>" (0), "<UNK>" (1), then single characters; no pre-tokenizer, a BPE model
//   without merges (each character its token, an unknown one <UNK>), decoded by joining;
// - byte pairs: the same vocabulary followed by merged tokens; circuitscope's pieces as the
//   pre-tokenizer (a word or a run of punctuation with at most one space before it, or a run of other
//   white space that leaves its last space to what follows; at most 32 characters), merges over code
//   points; an unknown character decodes as U+FFFD;
// - words: a word list; specials written <NAME> are added tokens (matched anywhere in the text), the
//   rest of the text is cut into words (letters, digits and apostrophes of ASCII, any non-ASCII
//   character) and single punctuation characters, white space dropped; a word not in the list is
//   refused by name;
// - token ids: the text is ids separated by white space or commas ("12 7 7 3", "#12").
// A "<BOS>" typed in character or byte-pair text is five characters; in word-level text it is the
// <BOS> token.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/pipeline.h"

namespace cs::tok::own {

// The longest piece byte-pair merging sees: a longer run is cut, which bounds the merging work of a
// pasted run of thousands of dashes.
constexpr std::size_t kMaxPiece = 32;

std::shared_ptr<const Pipeline> characters(const std::vector<std::string>& vocab);
// merges[k] = (left id, right id) made the token `made[k]`, in rank order.
std::shared_ptr<const Pipeline> byte_pairs(const std::vector<std::string>& vocab, const std::vector<std::pair<int, int>>& merges,
                                           const std::vector<int>& made);
std::shared_ptr<const Pipeline> words(const std::vector<std::string>& vocab);
std::shared_ptr<const Pipeline> ids(int size);

// The byte-pair pre-tokenizer's pieces of a decoded text, as [first, last) character ranges: what
// learning merges (Tokenizer::build_bpe) counts, so that learning and encoding cut text alike.
std::vector<std::pair<std::size_t, std::size_t>> byte_pair_pieces(const std::vector<char32_t>& text);

}  // namespace cs::tok::own
