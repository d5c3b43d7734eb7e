// UTF-8 decoding and encoding, lossy decoding, and byte offsets as UTF-16 spans.
#include "tokenizer/utf8.h"

#include <stdexcept>

namespace cs {

std::size_t decode_utf8(const std::string& s, std::vector<CodePoint>* out) {
  const std::size_t n = s.size();
  std::size_t i = 0;
  long long u16 = 0;
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::uint32_t cp = 0;
    std::size_t len = 0;
    std::uint32_t min_cp = 0;
    if (b0 < 0x80) {
      cp = b0;
      len = 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      cp = b0 & 0x1Fu;
      len = 2;
      min_cp = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      cp = b0 & 0x0Fu;
      len = 3;
      min_cp = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      cp = b0 & 0x07u;
      len = 4;
      min_cp = 0x10000;
    } else {
      return i;  // continuation byte out of place, 0xC0/0xC1 (overlong) or 0xF5..0xFF
    }
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= n) return i + k;  // truncated sequence: the byte that is missing
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0u) != 0x80u) return i + k;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (len > 1 && cp < min_cp) return i;               // overlong encoding
    if (cp >= 0xD800 && cp <= 0xDFFF) return i;         // UTF-16 surrogate
    if (cp > 0x10FFFF) return i;                        // beyond Unicode
    const int units = cp >= 0x10000 ? 2 : 1;
    if (u16 + units > 0x7FFFFFFF) return i;             // spans are ints; text this long is unusable
    if (out) {
      CodePoint c;
      c.cp = cp;
      c.byte_begin = i;
      c.byte_len = len;
      c.u16_begin = static_cast<int>(u16);
      c.u16_end = static_cast<int>(u16 + units);
      out->push_back(c);
    }
    u16 += units;
    i += len;
  }
  return std::string::npos;
}

std::vector<CodePoint> decode_or_throw(const std::string& text) {
  std::vector<CodePoint> cps;
  cps.reserve(text.size());
  const std::size_t bad = decode_utf8(text, &cps);
  if (bad != std::string::npos)
    throw std::invalid_argument("text is not valid UTF-8 at byte " + std::to_string(bad));
  return cps;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(std::uint32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

std::string decode_utf8_lossy(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out += static_cast<char>(b0);
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    // The longest prefix of a valid sequence; a broken one is replaced as one U+FFFD.
    std::size_t k = 1;
    while (k < len && i + k < n) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b & 0xC0u) != 0x80u) break;
      ++k;
    }
    if (k == len) {
      out.append(s, i, len);
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += k;
  }
  return out;
}

std::vector<std::pair<int, int>> utf16_spans(const std::string& text,
                                             const std::vector<std::pair<std::size_t, std::size_t>>& bytes) {
  // UTF-16 position of every byte boundary: u16_at[b] for the character holding byte b starts at
  // char_start[b]'s units; precomputed once for the text.
  const std::size_t n = text.size();
  std::vector<int> start_units(n + 1, 0), end_units(n + 1, 0);
  int u = 0;
  std::size_t i = 0;
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    const std::size_t len = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
    const int units = len == 4 ? 2 : 1;
    for (std::size_t k = 0; k < len && i + k < n; ++k) {
      start_units[i + k] = u;           // a begin inside the character: its start
      end_units[i + k + 1] = u + units; // an end inside (or at the end of) it: its end
    }
    start_units[i] = u;
    u += units;
    i += len;
  }
  start_units[n] = u;
  end_units[0] = 0;
  std::vector<std::pair<int, int>> out;
  out.reserve(bytes.size());
  for (const auto& [b, e] : bytes) {
    const std::size_t bb = b > n ? n : b, ee = e > n ? n : e;
    out.emplace_back(start_units[bb], ee == bb ? start_units[bb] : end_units[ee]);
  }
  return out;
}

std::string visible_text(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace cs
