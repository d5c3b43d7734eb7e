// Unicode character properties and normalization forms for the tokenizer pipeline, from the
// Unicode Character Database that Debian's unicode-data package installs (UnicodeData.txt,
// PropList.txt, CompositionExclusions.txt, DerivedNormalizationProps.txt). The tables are generated
// at build time by scripts/gen_unicode.py; nothing here is typed in by hand.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace cs::unicode {

// General categories, in UnicodeData.txt's two-letter names. Cn: unassigned (and noncharacters).
enum class Category : std::uint8_t {
  Lu, Ll, Lt, Lm, Lo,
  Mn, Mc, Me,
  Nd, Nl, No,
  Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So,
  Zs, Zl, Zp,
  Cc, Cf, Cs, Co, Cn,
};

// The Unicode version of the tables, e.g. "15.0.0".
const char* version();

// The general category of a code point; Cn above U+10FFFF.
Category category(char32_t cp);
const char* category_name(Category c);  // "Lu", "Ll", ...

inline bool is_letter(char32_t cp) { return category(cp) <= Category::Lo; }                        // \p{L}
inline bool is_mark(char32_t cp) { const auto c = category(cp); return c >= Category::Mn && c <= Category::Me; }  // \p{M}
inline bool is_number(char32_t cp) { const auto c = category(cp); return c >= Category::Nd && c <= Category::No; }  // \p{N}
inline bool is_punctuation(char32_t cp) { const auto c = category(cp); return c >= Category::Pc && c <= Category::Po; }  // \p{P}
// The White_Space property of PropList.txt (what \s matches in Oniguruma's Unicode mode, the regex
// engine Hugging Face tokenizers use).
bool is_white_space(char32_t cp);

// Canonical combining class (0 for starters).
std::uint8_t combining_class(char32_t cp);

enum class Form { NFC, NFD, NFKC, NFKD };

// Normalizes a sequence of code points (each at most U+10FFFF and not a surrogate). When `source`
// is given, it receives one [begin, end) range of input indices per output code point: the input
// code points that output code point came from. Text that a form leaves unchanged maps one to one;
// where the form changes a run (a starter and the marks that follow it, decomposed, reordered and
// recomposed together), every output code point of that run maps to the whole run's input range.
std::vector<char32_t> normalize(Form form, const std::vector<char32_t>& in,
                                std::vector<std::pair<int, int>>* source = nullptr);

}  // namespace cs::unicode
