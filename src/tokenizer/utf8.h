// UTF-8 for the tokenizers: strict decoding (the text a user types or a file holds), encoding, the
// lossy decoding a tokenizer's decode() needs for byte tokens that end inside a character, and the
// one conversion of byte offsets to the UTF-16 spans the page indexes strings with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cs {

// One decoded code point: its value, where its bytes are, and where it sits in UTF-16 units.
struct CodePoint {
  std::uint32_t cp = 0;
  std::size_t byte_begin = 0;
  std::size_t byte_len = 0;
  int u16_begin = 0;
  int u16_end = 0;
};

// Strict UTF-8: rejects stray continuation bytes, truncated sequences, overlong forms,
// surrogates (U+D800..U+DFFF) and values above U+10FFFF. Returns the byte index of the first
// bad byte, or npos when the whole string is valid.
std::size_t decode_utf8(const std::string& s, std::vector<CodePoint>* out);
// The same, throwing std::invalid_argument("text is not valid UTF-8 at byte N").
std::vector<CodePoint> decode_or_throw(const std::string& text);
std::string encode_utf8(std::uint32_t cp);
void append_utf8(std::string& out, std::uint32_t cp);
// Bytes that may not be valid UTF-8, as text: each maximal invalid subpart becomes U+FFFD, the
// policy of the WHATWG encoding standard (TextDecoder) and of Rust's String::from_utf8_lossy.
std::string decode_utf8_lossy(const std::string& bytes);

// Text for an error message: control characters written as \n, \t, \r or \x1b, the rest as is.
std::string visible_text(const std::string& s);

// Byte ranges [begin, end) of `text` (valid UTF-8) as UTF-16 ranges: a begin inside a character
// moves back to the character's start and an end inside one moves on to its end, so a token that
// holds part of a character's bytes covers the whole character.
std::vector<std::pair<int, int>> utf16_spans(const std::string& text,
                                             const std::vector<std::pair<std::size_t, std::size_t>>& bytes);

}  // namespace cs
