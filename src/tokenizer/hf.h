// A Hugging Face tokenizer.json read into the tokenizer pipeline (pipeline.h), as the `tokenizers`
// library runs one: added tokens split out first, then a normalizer, a pre-tokenizer, a model
// (byte-pair encoding), a post-processor and a decoder, each configured by the file. It opens
// GPT-2's tokenizer, GPT-NeoX's and the ones TransformerLens's toy models use. What the file
// configures that circuitscope does not implement is refused when the file is read, naming it;
// nothing is skipped silently.
//
// Offsets are byte ranges of the original text, through every stage: a token that normalization
// changed covers the characters it came from, and a byte-level token that ends inside a character
// covers only its bytes (utf16_spans in utf8.h turns them into the page's UTF-16 spans). Unlike
// `tokenizers` with trim_offsets, a token's range keeps its leading space ("Ġthe" covers " the"), so
// the ranges of a text's tokens cover the whole text.
#pragma once
#include <nlohmann/json.hpp>
#include <cstddef>
#include <memory>
#include <string>

#include "tokenizer/pipeline.h"

namespace cs::hf {

// Limits on what a tokenizer.json may hold, so a hostile file costs bounded memory.
constexpr std::size_t kMaxFileBytes = 64u << 20;  // the largest tokenizer.json read (64 MB)
constexpr int kMaxVocab = 1 << 20;                // token ids are below this
constexpr int kMaxNesting = 8;                    // Sequence stages inside Sequence stages

// Reads a tokenizer.json as Hugging Face writes it. Throws std::invalid_argument with a sentence
// naming what is wrong or unsupported, e.g. "tokenizer.json: the model is \"Unigram\"; circuitscope
// reads BPE tokenizers only".
std::shared_ptr<const tok::Pipeline> from_json(const nlohmann::json& j);
std::shared_ptr<const tok::Pipeline> from_text(const std::string& json_text);

}  // namespace cs::hf
