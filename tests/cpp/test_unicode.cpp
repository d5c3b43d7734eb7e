// The tokenizer's Unicode layer (src/tokenizer/unicode.h): general categories, White_Space,
// combining classes, and the four normalization forms checked against every line of the Unicode
// Character Database's NormalizationTest.txt, with the source ranges normalize() reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/unicode.h"

namespace cs::unicode {
namespace {

using Text = std::vector<char32_t>;

// The build writes a plain copy of NormalizationTest.txt into its generated/ folder (CMakeLists.txt
// passes its path); a distribution that ships the file uncompressed is the fallback.
#ifndef CS_NORMALIZATION_TEST_FILE
#define CS_NORMALIZATION_TEST_FILE "/usr/share/unicode/NormalizationTest.txt"
#endif

struct NormLine {
  Text c[5];  // source, NFC, NFD, NFKC, NFKD
  int line = 0;
};

struct NormFile {
  bool ok = false;
  std::string version;           // from the first line, "# NormalizationTest-15.0.0.txt"
  std::vector<NormLine> lines;   // every test line, all parts
  std::vector<bool> part1;       // code points listed (as a single code point) in Part 1
};

Text parse_cps(const std::string& field) {
  Text out;
  std::istringstream ss(field);
  std::string hex;
  while (ss >> hex) out.push_back(static_cast<char32_t>(std::stoul(hex, nullptr, 16)));
  return out;
}

const NormFile& norm_file() {
  static const NormFile file = [] {
    NormFile f;
    f.part1.assign(0x110000, false);
    const char* paths[] = {CS_NORMALIZATION_TEST_FILE, "/usr/share/unicode/NormalizationTest.txt"};
    std::ifstream in;
    for (const char* p : paths) {
      in.open(p);
      if (in) break;
      in.clear();
    }
    if (!in) return f;
    std::string s;
    std::string part;
    int n = 0;
    while (std::getline(in, s)) {
      ++n;
      if (n == 1) {
        const std::string key = "NormalizationTest-";
        const auto at = s.find(key);
        if (at != std::string::npos) f.version = s.substr(at + key.size(), s.find(".txt") - at - key.size());
      }
      if (s.empty() || s[0] == '#') continue;
      if (s[0] == '@') {
        part = s.substr(0, s.find_first_of(" \t"));
        continue;
      }
      NormLine l;
      l.line = n;
      std::size_t pos = 0;
      for (int k = 0; k < 5; ++k) {
        const std::size_t semi = s.find(';', pos);
        l.c[k] = parse_cps(s.substr(pos, semi - pos));
        pos = semi + 1;
      }
      if (part == "@Part1" && l.c[0].size() == 1) f.part1[l.c[0][0]] = true;
      f.lines.push_back(std::move(l));
    }
    f.ok = !f.lines.empty();
    return f;
  }();
  return file;
}

#define REQUIRE_NORMALIZATION_TEST()                                                                 \
  if (!norm_file().ok)                                                                               \
  GTEST_SKIP() << "cannot read " CS_NORMALIZATION_TEST_FILE                                          \
                  " (written by the build from /usr/share/unicode; apt-get install unicode-data)"

std::string show(const Text& t) {
  std::string s;
  char buf[16];
  for (char32_t c : t) {
    std::snprintf(buf, sizeof buf, "%s%04X", s.empty() ? "" : " ", static_cast<unsigned>(c));
    s += buf;
  }
  return s;
}

Text nfc(const Text& t) { return normalize(Form::NFC, t); }
Text nfd(const Text& t) { return normalize(Form::NFD, t); }
Text nfkc(const Text& t) { return normalize(Form::NFKC, t); }
Text nfkd(const Text& t) { return normalize(Form::NFKD, t); }

TEST(UnicodeProperties, Version) {
  const std::string v = version();
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2) << v;
  if (norm_file().ok) EXPECT_EQ(v, norm_file().version);
}

TEST(UnicodeProperties, Categories) {
  EXPECT_EQ(category('A'), Category::Lu);
  EXPECT_EQ(category('Z'), Category::Lu);
  EXPECT_EQ(category('a'), Category::Ll);
  EXPECT_EQ(category('z'), Category::Ll);
  EXPECT_EQ(category('0'), Category::Nd);
  EXPECT_EQ(category('9'), Category::Nd);
  EXPECT_EQ(category('!'), Category::Po);
  EXPECT_EQ(category('('), Category::Ps);
  EXPECT_EQ(category(')'), Category::Pe);
  EXPECT_EQ(category('-'), Category::Pd);
  EXPECT_EQ(category('_'), Category::Pc);
  EXPECT_EQ(category('+'), Category::Sm);
  EXPECT_EQ(category('$'), Category::Sc);
  EXPECT_EQ(category('^'), Category::Sk);
  EXPECT_EQ(category(' '), Category::Zs);
  EXPECT_EQ(category('\n'), Category::Cc);
  EXPECT_EQ(category(0x7F), Category::Cc);
  EXPECT_EQ(category(0xE9), Category::Ll);     // é
  EXPECT_EQ(category(0xC9), Category::Lu);     // É
  EXPECT_EQ(category(0x01C5), Category::Lt);   // ǅ
  EXPECT_EQ(category(0x02B0), Category::Lm);   // ʰ
  EXPECT_EQ(category(0x0301), Category::Mn);   // combining acute
  EXPECT_EQ(category(0x0903), Category::Mc);   // Devanagari visarga
  EXPECT_EQ(category(0x20DD), Category::Me);   // combining enclosing circle
  EXPECT_EQ(category(0x2160), Category::Nl);   // Roman numeral one
  EXPECT_EQ(category(0x00B2), Category::No);   // superscript two
  EXPECT_EQ(category(0x00AB), Category::Pi);   // «
  EXPECT_EQ(category(0x00BB), Category::Pf);   // »
  EXPECT_EQ(category(0x00A0), Category::Zs);
  EXPECT_EQ(category(0x2028), Category::Zl);
  EXPECT_EQ(category(0x2029), Category::Zp);
  EXPECT_EQ(category(0x00AD), Category::Cf);   // soft hyphen
  EXPECT_EQ(category(0x200B), Category::Cf);   // zero width space
  EXPECT_EQ(category(0xFEFF), Category::Cf);
  EXPECT_EQ(category(0x4E00), Category::Lo);   // CJK ideographs: a First/Last range
  EXPECT_EQ(category(0x9FFF), Category::Lo);
  EXPECT_EQ(category(0x20000), Category::Lo);  // CJK extension B
  EXPECT_EQ(category(0xAC00), Category::Lo);   // Hangul syllables: a range too
  EXPECT_EQ(category(0xD7A3), Category::Lo);
  EXPECT_EQ(category(0xD7A4), Category::Cn);
  EXPECT_EQ(category(0x3042), Category::Lo);   // あ
  EXPECT_EQ(category(0x1F600), Category::So);  // 😀
  EXPECT_EQ(category(0x2764), Category::So);   // ❤
  EXPECT_EQ(category(0x0378), Category::Cn);   // unassigned
  EXPECT_EQ(category(0xD800), Category::Cs);
  EXPECT_EQ(category(0xDFFF), Category::Cs);
  EXPECT_EQ(category(0xE000), Category::Co);
  EXPECT_EQ(category(0xF8FF), Category::Co);
  EXPECT_EQ(category(0xF0000), Category::Co);
  EXPECT_EQ(category(0x10FFFD), Category::Co);
  EXPECT_EQ(category(0xFFFE), Category::Cn);   // noncharacters
  EXPECT_EQ(category(0x10FFFF), Category::Cn);
  EXPECT_EQ(category(0x110000), Category::Cn);
  EXPECT_EQ(category(0xFFFFFFFF), Category::Cn);
  EXPECT_STREQ(category_name(Category::Lu), "Lu");
  EXPECT_STREQ(category_name(Category::So), "So");
  EXPECT_STREQ(category_name(Category::Cn), "Cn");
  EXPECT_STREQ(category_name(category(0x2029)), "Zp");
}

TEST(UnicodeProperties, ClassHelpers) {
  EXPECT_TRUE(is_letter('q'));
  EXPECT_TRUE(is_letter(0x4E2D));
  EXPECT_FALSE(is_letter('1'));
  EXPECT_TRUE(is_mark(0x0301));
  EXPECT_FALSE(is_mark('a'));
  EXPECT_TRUE(is_number('7'));
  EXPECT_TRUE(is_number(0x2160));
  EXPECT_TRUE(is_number(0x00BD));  // ½
  EXPECT_FALSE(is_number('x'));
  EXPECT_TRUE(is_punctuation(','));
  EXPECT_TRUE(is_punctuation(0x3002));  // 。
  EXPECT_FALSE(is_punctuation('+'));
}

TEST(UnicodeProperties, WhiteSpace) {
  for (char32_t c : std::initializer_list<char32_t>{0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F,
                     0x205F, 0x3000})
    EXPECT_TRUE(is_white_space(c)) << std::hex << static_cast<unsigned>(c);
  for (char32_t c : std::initializer_list<char32_t>{0x00, 0x08, 0x0E, 0x1F, 0x21, 0x61, 0x84, 0x180E, 0x200B, 0x200C, 0x2060, 0xFEFF, 0x10FFFF,
                     0x110000})
    EXPECT_FALSE(is_white_space(c)) << std::hex << static_cast<unsigned>(c);
}

TEST(UnicodeProperties, CombiningClasses) {
  EXPECT_EQ(combining_class('a'), 0);
  EXPECT_EQ(combining_class(0xE9), 0);
  EXPECT_EQ(combining_class(0x0300), 230);
  EXPECT_EQ(combining_class(0x0301), 230);
  EXPECT_EQ(combining_class(0x0323), 220);
  EXPECT_EQ(combining_class(0x031B), 216);
  EXPECT_EQ(combining_class(0x0334), 1);
  EXPECT_EQ(combining_class(0x05B0), 10);
  EXPECT_EQ(combining_class(0x093C), 7);
  EXPECT_EQ(combining_class(0x094D), 9);
  EXPECT_EQ(combining_class(0x0F71), 129);
  EXPECT_EQ(combining_class(0x3099), 8);
  EXPECT_EQ(combining_class(0x1D165), 216);
  EXPECT_EQ(combining_class(0x0345), 240);
  EXPECT_EQ(combining_class(0x4E00), 0);
  EXPECT_EQ(combining_class(0x10FFFF), 0);
  EXPECT_EQ(combining_class(0x110000), 0);
}

// Cases that need no data file, so the WASM run checks normalization even without one.
TEST(UnicodeNormalize, KnownCases) {
  EXPECT_EQ(nfc({'e', 0x0301}), Text({0xE9}));
  EXPECT_EQ(nfd({0xE9}), Text({'e', 0x0301}));
  EXPECT_EQ(nfc({0x212B}), Text({0xC5}));                  // Angstrom sign: a singleton
  EXPECT_EQ(nfd({0x212B}), Text({'A', 0x030A}));
  EXPECT_EQ(nfc({0xFB01}), Text({0xFB01}));                // the ﬁ ligature: compatibility only
  EXPECT_EQ(nfkc({0xFB01}), Text({'f', 'i'}));
  EXPECT_EQ(nfkd({0x00BD}), Text({'1', 0x2044, '2'}));      // ½
  EXPECT_EQ(nfc({'q', 0x0307, 0x0323}), Text({'q', 0x0323, 0x0307}));  // reordered, nothing composes
  EXPECT_EQ(nfc({'D', 0x0307, 0x0323}), Text({0x1E0C, 0x0307}));
  EXPECT_EQ(nfc({0x0958}), Text({0x0915, 0x093C}));        // excluded from composition
  EXPECT_EQ(nfkc({0x1E9B, 0x0323}), Text({0x1E69}));
  EXPECT_EQ(nfc({0x1E9B, 0x0323}), Text({0x1E9B, 0x0323}));
  // Hangul, decomposed and composed arithmetically.
  EXPECT_EQ(nfd({0xD55C}), Text({0x1112, 0x1161, 0x11AB}));  // 한
  EXPECT_EQ(nfc({0x1112, 0x1161, 0x11AB}), Text({0xD55C}));
  EXPECT_EQ(nfc({0x1112, 0x1161}), Text({0xD558}));
  EXPECT_EQ(nfc({0xD558, 0x11AB}), Text({0xD55C}));
  EXPECT_EQ(nfd({0xAC00}), Text({0x1100, 0x1161}));
  EXPECT_EQ(nfc({0x0B47, 0x0B3E}), Text({0x0B4B}));        // two starters that compose
  EXPECT_EQ(nfkd({0xFF9E}), Text({0x3099}));               // a starter that decomposes to a mark
  EXPECT_EQ(nfkc({0x30AB, 0xFF9E}), Text({0x30AC}));
  EXPECT_TRUE(nfc({}).empty());
  const Text ascii = {'H', 'e', 'l', 'l', 'o', ',', ' ', 'w', 'o', 'r', 'l', 'd', '!'};
  for (Form f : {Form::NFC, Form::NFD, Form::NFKC, Form::NFKD}) EXPECT_EQ(normalize(f, ascii), ascii);
}

TEST(UnicodeNormalize, SourceRanges) {
  using Ranges = std::vector<std::pair<int, int>>;
  Ranges src;
  // Unchanged text maps one to one.
  EXPECT_EQ(normalize(Form::NFC, {'a', 0xE9, 'b'}, &src), Text({'a', 0xE9, 'b'}));
  EXPECT_EQ(src, Ranges({{0, 1}, {1, 2}, {2, 3}}));
  // A composed pair maps to both inputs; its neighbours stay one to one.
  EXPECT_EQ(normalize(Form::NFC, {'x', 'e', 0x0301, 'y'}, &src), Text({'x', 0xE9, 'y'}));
  EXPECT_EQ(src, Ranges({{0, 1}, {1, 3}, {3, 4}}));
  // A decomposed code point: every piece maps to it.
  EXPECT_EQ(normalize(Form::NFD, {'x', 0xE9, 'y'}, &src), Text({'x', 'e', 0x0301, 'y'}));
  EXPECT_EQ(src, Ranges({{0, 1}, {1, 2}, {1, 2}, {2, 3}}));
  EXPECT_EQ(normalize(Form::NFKC, {0xFB01, 'x'}, &src), Text({'f', 'i', 'x'}));
  EXPECT_EQ(src, Ranges({{0, 1}, {0, 1}, {1, 2}}));
  // Reordered marks: the whole run.
  EXPECT_EQ(normalize(Form::NFD, {'q', 0x0307, 0x0323, 'z'}, &src), Text({'q', 0x0323, 0x0307, 'z'}));
  EXPECT_EQ(src, Ranges({{0, 3}, {0, 3}, {0, 3}, {3, 4}}));
  // Hangul jamo composed into one syllable.
  EXPECT_EQ(normalize(Form::NFC, {0x1112, 0x1161, 0x11AB, '!'}, &src), Text({0xD55C, '!'}));
  EXPECT_EQ(src, Ranges({{0, 3}, {3, 4}}));
  EXPECT_TRUE(normalize(Form::NFC, {}, &src).empty());
  EXPECT_TRUE(src.empty());
}

TEST(UnicodeNormalize, ConformancePart0To3) {
  REQUIRE_NORMALIZATION_TEST();
  const NormFile& f = norm_file();
  EXPECT_GT(f.lines.size(), 18000u);
  int failures = 0;
  for (const NormLine& l : f.lines) {
    const Text *c1 = &l.c[0], *c2 = &l.c[1], *c3 = &l.c[2], *c4 = &l.c[3], *c5 = &l.c[4];
    const bool ok = *c2 == nfc(*c1) && *c2 == nfc(*c2) && *c2 == nfc(*c3) && *c4 == nfc(*c4) && *c4 == nfc(*c5) &&
                    *c3 == nfd(*c1) && *c3 == nfd(*c2) && *c3 == nfd(*c3) && *c5 == nfd(*c4) && *c5 == nfd(*c5) &&
                    *c4 == nfkc(*c1) && *c4 == nfkc(*c2) && *c4 == nfkc(*c3) && *c4 == nfkc(*c4) &&
                    *c4 == nfkc(*c5) && *c5 == nfkd(*c1) && *c5 == nfkd(*c2) && *c5 == nfkd(*c3) &&
                    *c5 == nfkd(*c4) && *c5 == nfkd(*c5);
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << "NormalizationTest.txt line " << l.line << ": " << show(*c1) << "; NFC " << show(nfc(*c1))
                    << " (want " << show(*c2) << "), NFD " << show(nfd(*c1)) << " (want " << show(*c3) << "), NFKC "
                    << show(nfkc(*c1)) << " (want " << show(*c4) << "), NFKD " << show(nfkd(*c1)) << " (want "
                    << show(*c5) << ")";
    }
  }
  EXPECT_EQ(failures, 0);
}

// Part 1's rule: every code point the file does not list is left alone by every form.
TEST(UnicodeNormalize, ConformanceUnlistedCodePointsUnchanged) {
  REQUIRE_NORMALIZATION_TEST();
  const NormFile& f = norm_file();
  int failures = 0;
  Text one(1);
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || f.part1[cp]) continue;
    one[0] = cp;
    for (Form form : {Form::NFC, Form::NFD, Form::NFKC, Form::NFKD}) {
      if (normalize(form, one) != one && ++failures <= 10)
        ADD_FAILURE() << "U+" << std::hex << static_cast<unsigned>(cp) << " changed by form " << static_cast<int>(form);
    }
  }
  EXPECT_EQ(failures, 0);
}

// The ranges normalize() reports: one per output code point, non-empty, inside the input, begins
// non-decreasing, every input code point covered, and one to one where the text is unchanged.
void check_ranges(Form form, const Text& in, int line) {
  std::vector<std::pair<int, int>> src;
  const Text out = normalize(form, in, &src);
  ASSERT_EQ(src.size(), out.size()) << "line " << line;
  std::vector<bool> covered(in.size(), false);
  int prev_begin = 0;
  for (const auto& [b, e] : src) {
    ASSERT_TRUE(b >= 0 && b < e && e <= static_cast<int>(in.size())) << "line " << line << ": [" << b << ", " << e << ")";
    ASSERT_GE(b, prev_begin) << "line " << line;
    prev_begin = b;
    for (int i = b; i < e; ++i) covered[i] = true;
  }
  for (std::size_t i = 0; i < in.size(); ++i) ASSERT_TRUE(covered[i]) << "line " << line << ": input " << i;
  if (out == in) {
    for (std::size_t i = 0; i < src.size(); ++i)
      ASSERT_EQ(src[i], std::make_pair(static_cast<int>(i), static_cast<int>(i) + 1)) << "line " << line;
  }
}

TEST(UnicodeNormalize, SourceRangesOnConformanceLines) {
  REQUIRE_NORMALIZATION_TEST();
  const NormFile& f = norm_file();
  for (const NormLine& l : f.lines) {
    for (Form form : {Form::NFC, Form::NFD, Form::NFKC, Form::NFKD}) {
      for (const Text& c : l.c) check_ranges(form, c, l.line);
      // Text around the line, to see that the unchanged parts stay one to one (the space may join
      // the line's run when the line starts with a mark; the letters may not).
      Text wrapped = {'a', ' '};
      wrapped.insert(wrapped.end(), l.c[0].begin(), l.c[0].end());
      wrapped.push_back('z');
      check_ranges(form, wrapped, l.line);
      std::vector<std::pair<int, int>> src;
      const Text out = normalize(form, wrapped, &src);
      ASSERT_GE(out.size(), 3u);
      EXPECT_EQ(src[0], std::make_pair(0, 1)) << "line " << l.line;
      EXPECT_EQ(src.back(), std::make_pair(static_cast<int>(wrapped.size()) - 1, static_cast<int>(wrapped.size())))
          << "line " << l.line;
    }
    if (HasFatalFailure()) return;
  }
}

// Normalizing the lines joined into one text gives the lines' results joined, wherever the join
// cannot interact (each line begins with a code point normalization never joins to what precedes
// it): a check that splitting text into segments does not change the result.
TEST(UnicodeNormalize, ConcatenatedConformanceLines) {
  REQUIRE_NORMALIZATION_TEST();
  const NormFile& f = norm_file();
  const Form forms[] = {Form::NFC, Form::NFD, Form::NFKC, Form::NFKD};
  const int col[] = {1, 2, 3, 4};
  for (int k = 0; k < 4; ++k) {
    Text joined, want;
    for (const NormLine& l : f.lines) {
      joined.push_back('|');
      want.push_back('|');
      joined.insert(joined.end(), l.c[0].begin(), l.c[0].end());
      want.insert(want.end(), l.c[col[k]].begin(), l.c[col[k]].end());
    }
    std::vector<std::pair<int, int>> src;
    EXPECT_EQ(normalize(forms[k], joined, &src), want) << "form " << k;
    EXPECT_EQ(src.size(), want.size());
  }
}

}  // namespace
}  // namespace cs::unicode
