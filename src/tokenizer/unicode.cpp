// Unicode properties and normalization (unicode.h). The tables come from the build directory's
// generated/unicode_tables.inc, which scripts/gen_unicode.py writes from the Unicode Character
// Database; this file only looks them up. Hangul syllables are decomposed and composed
// arithmetically (Unicode, chapter 3.12), so they are not in the tables.
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstddef>

namespace cs::unicode {
namespace {

#include "unicode_tables.inc"

constexpr char32_t k_max_cp = 0x10FFFF;

// Hangul syllable arithmetic.
constexpr char32_t k_s_base = 0xAC00, k_l_base = 0x1100, k_v_base = 0x1161, k_t_base = 0x11A7;
constexpr char32_t k_l_count = 19, k_v_count = 21, k_t_count = 28;
constexpr char32_t k_n_count = k_v_count * k_t_count, k_s_count = k_l_count * k_n_count;

// A three-level table lookup: top[cp >> (mid + leaf)] picks a middle block, whose entry picks a
// leaf block, whose entry is the value. cp must be at most U+10FFFF.
template <class Top, class Mid, class Leaf>
inline Leaf lookup(const Top* top, const Mid* mid, const Leaf* leaf, int mid_shift, int leaf_shift, char32_t cp) {
  const std::size_t m = (static_cast<std::size_t>(top[cp >> (mid_shift + leaf_shift)]) << mid_shift) |
                        ((cp >> leaf_shift) & ((1u << mid_shift) - 1));
  const std::size_t l = (static_cast<std::size_t>(mid[m]) << leaf_shift) | (cp & ((1u << leaf_shift) - 1));
  return leaf[l];
}

inline std::uint8_t ccc_of(char32_t cp) {
  if (cp > k_max_cp) return 0;
  return lookup(ccc_top, ccc_mid, ccc_leaf, k_ccc_mid_shift, k_ccc_leaf_shift, cp);
}

inline bool is_hangul_syllable(char32_t cp) { return cp >= k_s_base && cp < k_s_base + k_s_count; }

// The full decomposition of cp under a form (canonical, or with compatibility mappings too), as a
// pointer into decomp_pool and a length; length 0 when cp decomposes to itself. Hangul syllables
// are not handled here.
inline int decomposition(char32_t cp, bool compat, const char32_t** seq) {
  if (cp < 0xA0 || cp > k_max_cp) return 0;  // nothing below U+00A0 decomposes
  const std::uint16_t e = lookup(decomp_top, decomp_mid, decomp_leaf, k_decomp_mid_shift, k_decomp_leaf_shift, cp);
  if (e == 0) return 0;
  const DecompEntry& d = decomp_entries[e];
  if (compat && d.compat_len) {
    *seq = decomp_pool + d.compat_off;
    return d.compat_len;
  }
  *seq = decomp_pool + d.canon_off;
  return d.canon_len;
}

// The first code point of cp's full decomposition (cp itself when it does not decompose).
inline char32_t first_decomposed(char32_t cp, bool compat) {
  if (is_hangul_syllable(cp)) return k_l_base + (cp - k_s_base) / k_n_count;
  const char32_t* seq = nullptr;
  return decomposition(cp, compat, &seq) ? seq[0] : cp;
}

// Whether cp can compose with a code point before it (the second of a composition pair).
inline bool combines_backward(char32_t cp) {
  if (cp < k_min_comp_second) return false;
  return std::binary_search(comp_seconds, comp_seconds + sizeof(comp_seconds) / sizeof(comp_seconds[0]), cp);
}

// The primary composite of a starter and a following code point, or 0 when there is none.
char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= k_l_base && a < k_l_base + k_l_count && b >= k_v_base && b < k_v_base + k_v_count)
    return k_s_base + ((a - k_l_base) * k_v_count + (b - k_v_base)) * k_t_count;
  if (is_hangul_syllable(a) && (a - k_s_base) % k_t_count == 0 && b > k_t_base && b < k_t_base + k_t_count)
    return a + (b - k_t_base);
  const CompPair* end = comp_pairs + sizeof(comp_pairs) / sizeof(comp_pairs[0]);
  const CompPair* it = std::lower_bound(comp_pairs, end, CompPair{a, b, 0}, [](const CompPair& x, const CompPair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

// Whether normalization may split the text just before input code point cp: the form's
// decomposition of cp starts with a starter, which no reordering crosses and which blocks every
// later code point from composing with anything before it, and (for the composing forms) that
// starter cannot itself compose with what precedes it. Normalizing the pieces between such points
// separately gives the same result as normalizing the whole text.
inline bool boundary_before(char32_t cp, bool compat, bool compose) {
  if (cp < 0x300) return true;  // Latin-1 and its neighbours: starters that decompose to starters
  const char32_t first = first_decomposed(cp, compat);
  if (ccc_of(first) != 0) return false;
  return !compose || !combines_backward(first);
}

struct Mark {
  char32_t cp;
  std::uint8_t ccc;
};

// Normalizes one segment (a piece between two boundaries) into out, using buf as scratch space.
void normalize_segment(const char32_t* in, std::size_t n, bool compat, bool compose, std::vector<Mark>& buf,
                       std::vector<char32_t>& out) {
  // 1. Full decomposition.
  buf.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const char32_t cp = in[i];
    if (is_hangul_syllable(cp)) {
      const char32_t s = cp - k_s_base;
      buf.push_back({k_l_base + s / k_n_count, 0});
      buf.push_back({k_v_base + (s % k_n_count) / k_t_count, 0});
      if (s % k_t_count) buf.push_back({k_t_base + s % k_t_count, 0});
      continue;
    }
    const char32_t* seq = nullptr;
    const int len = decomposition(cp, compat, &seq);
    if (len == 0) {
      buf.push_back({cp, ccc_of(cp)});
    } else {
      for (int k = 0; k < len; ++k) buf.push_back({seq[k], ccc_of(seq[k])});
    }
  }
  // 2. Canonical ordering: each run of non-starters sorted by combining class, stably.
  for (std::size_t i = 0; i < buf.size();) {
    if (buf[i].ccc == 0) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < buf.size() && buf[j].ccc != 0) ++j;
    if (j - i > 1)
      std::stable_sort(buf.begin() + i, buf.begin() + j, [](const Mark& a, const Mark& b) { return a.ccc < b.ccc; });
    i = j;
  }
  // 3. Canonical composition (UAX #15): each code point composes with the last starter unless a
  // code point between them blocks it (one of combining class 0, or at least its own).
  if (compose && !buf.empty()) {
    std::size_t starter = 0, kept = 1;
    int last_class = buf[0].ccc == 0 ? 0 : 256;  // a leading non-starter composes with nothing
    for (std::size_t i = 1; i < buf.size(); ++i) {
      const Mark m = buf[i];
      const char32_t composite = (last_class < m.ccc || last_class == 0) ? compose_pair(buf[starter].cp, m.cp) : 0;
      if (composite != 0) {
        buf[starter].cp = composite;
        continue;
      }
      if (m.ccc == 0) starter = kept;
      last_class = m.ccc;
      buf[kept++] = m;
    }
    buf.resize(kept);
  }
  for (const Mark& m : buf) out.push_back(m.cp);
}

}  // namespace

const char* version() { return k_unicode_version; }

Category category(char32_t cp) {
  if (cp > k_max_cp) return Category::Cn;
  return static_cast<Category>(
      lookup(category_top, category_mid, category_leaf, k_category_mid_shift, k_category_leaf_shift, cp));
}

const char* category_name(Category c) {
  static const char* const names[] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl",
                                      "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc",
                                      "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
  const auto i = static_cast<std::size_t>(c);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "Cn";
}

bool is_white_space(char32_t cp) {
  for (int r = 0; r < k_white_space_range_count; ++r) {
    if (cp < white_space_ranges[2 * r]) return false;
    if (cp <= white_space_ranges[2 * r + 1]) return true;
  }
  return false;
}

std::uint8_t combining_class(char32_t cp) { return ccc_of(cp); }

std::vector<char32_t> normalize(Form form, const std::vector<char32_t>& in, std::vector<std::pair<int, int>>* source) {
  const bool compat = form == Form::NFKC || form == Form::NFKD;
  const bool compose = form == Form::NFC || form == Form::NFKC;
  std::vector<char32_t> out;
  out.reserve(in.size());
  if (source) {
    source->clear();
    source->reserve(in.size());
  }
  std::vector<Mark> buf;
  const std::size_t n = in.size();
  for (std::size_t begin = 0; begin < n;) {
    std::size_t end = begin + 1;
    while (end < n && !boundary_before(in[end], compat, compose)) ++end;
    const char32_t* seg = in.data() + begin;
    const std::size_t len = end - begin;
    const char32_t* seq = nullptr;
    if (len == 1 && !is_hangul_syllable(seg[0]) && decomposition(seg[0], compat, &seq) == 0) {
      // The common case: a code point alone in its segment that does not decompose.
      out.push_back(seg[0]);
      if (source) source->emplace_back(static_cast<int>(begin), static_cast<int>(end));
    } else {
      const std::size_t at = out.size();
      normalize_segment(seg, len, compat, compose, buf, out);
      if (source) {
        // Unchanged segments map one to one; changed ones map each output code point to the
        // whole segment.
        const bool same = out.size() - at == len && std::equal(seg, seg + len, out.begin() + at);
        for (std::size_t k = at; k < out.size(); ++k) {
          if (same)
            source->emplace_back(static_cast<int>(begin + (k - at)), static_cast<int>(begin + (k - at) + 1));
          else
            source->emplace_back(static_cast<int>(begin), static_cast<int>(end));
        }
      }
    }
    begin = end;
  }
  return out;
}

}  // namespace cs::unicode
