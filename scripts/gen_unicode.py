#!/usr/bin/env python3
"""Writes the Unicode tables of src/tokenizer/unicode.cpp from the Unicode Character Database.

Usage: gen_unicode.py <UCD directory> <output .inc> [<NormalizationTest.txt copy>]

Reads UnicodeData.txt, PropList.txt, CompositionExclusions.txt and DerivedNormalizationProps.txt
(Debian's unicode-data package puts them in /usr/share/unicode) and writes one C++ include with:
  - the general category of every code point, as a three-level table (O(1) lookup);
  - the canonical combining class, as a three-level table;
  - the White_Space ranges;
  - the full (recursively applied) canonical and compatibility decompositions, as a three-level
    table of entry numbers into a pool of code points;
  - the canonical composition pairs, without the Full_Composition_Exclusion code points, sorted
    for binary search, and the list of code points that can compose with a preceding one.
Hangul syllables are left out: unicode.cpp decomposes and composes them arithmetically.

With a third argument it also writes a plain-text copy of NormalizationTest.txt (Debian ships it
compressed as NormalizationTest.txt.bz2), for the tests to read.

Standard library only, and the output depends only on the data files (no dates, no paths).
"""
import bz2
import os
import re
import sys

MAX_CP = 0x110000
HANGUL_S_BASE, HANGUL_S_COUNT = 0xAC00, 11172
HANGUL_L_BASE, HANGUL_L_COUNT = 0x1100, 19
HANGUL_V_BASE, HANGUL_V_COUNT = 0x1161, 21
HANGUL_T_BASE, HANGUL_T_COUNT = 0x11A7, 28

# The order of cs::unicode::Category in unicode.h.
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
              "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
              "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"]
CAT_INDEX = {name: i for i, name in enumerate(CATEGORIES)}


def fail(msg):
    sys.stderr.write("gen_unicode.py: " + msg + "\n")
    sys.exit(1)


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def file_version(text, stem):
    """The version in a data file's first line, e.g. '# PropList-15.0.0.txt' gives '15.0.0'."""
    m = re.match(r"#\s*" + re.escape(stem) + r"-(\d+\.\d+\.\d+)\.txt", text)
    if not m:
        fail(stem + ".txt does not start with its version line")
    return m.group(1)


def parse_ranges(text, wanted):
    """The code points of property `wanted` in a PropList.txt-style file."""
    out = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f.strip() for f in line.split(";")]
        if fields[1] != wanted:
            continue
        if ".." in fields[0]:
            lo, hi = (int(x, 16) for x in fields[0].split(".."))
        else:
            lo = hi = int(fields[0], 16)
        out.update(range(lo, hi + 1))
    return out


def parse_unicode_data(text):
    """Categories, combining classes and single-step decompositions from UnicodeData.txt."""
    cat = bytearray([CAT_INDEX["Cn"]]) * MAX_CP
    ccc = bytearray(MAX_CP)
    decomp = {}  # code point -> (is_compat, [code points])
    first = None
    for line in text.splitlines():
        if not line.strip():
            continue
        f = line.split(";")
        cp = int(f[0], 16)
        name, gc, cc, dm = f[1], f[2], int(f[3]), f[5]
        if gc not in CAT_INDEX:
            fail("unknown general category %s at U+%04X" % (gc, cp))
        if name.endswith(", First>"):
            first = cp
            continue
        if name.endswith(", Last>"):
            if first is None:
                fail("range end without start at U+%04X" % cp)
            lo, first = first, None
        else:
            lo = cp
        for c in range(lo, cp + 1):
            cat[c] = CAT_INDEX[gc]
            ccc[c] = cc
        if dm:
            parts = dm.split()
            compat = parts[0].startswith("<")
            if compat:
                parts = parts[1:]
            decomp[cp] = (compat, [int(p, 16) for p in parts])
    return cat, ccc, decomp


def full_decomposition(cp, decomp, compat, memo):
    """The recursive decomposition of cp (canonical only, or canonical and compatibility)."""
    key = (cp, compat)
    if key in memo:
        return memo[key]
    d = decomp.get(cp)
    if d is None or (d[0] and not compat):
        out = [cp]
    else:
        out = []
        for c in d[1]:
            out.extend(full_decomposition(c, decomp, compat, memo))
    memo[key] = out
    return out


def split_blocks(values, shift):
    """Cuts an array into blocks of 2**shift entries: (index of each block, the distinct blocks)."""
    size = 1 << shift
    blocks, seen, index = [], {}, []
    for start in range(0, len(values), size):
        block = tuple(values[start:start + size])
        if block not in seen:
            seen[block] = len(blocks)
            blocks.append(block)
        index.append(seen[block])
    return index, blocks


def int_bytes(n):
    """Bytes per element of an index array whose values are below n."""
    return 1 if n <= 256 else 2


def three_level(values, elem_bytes):
    """Splits a per-code-point array into three levels (top -> middle blocks -> leaf blocks),
    picking the block sizes that make the tables smallest. Returns
    (leaf shift, middle shift, top, middle blocks, leaf blocks)."""
    best = None
    for leaf_shift in range(4, 10):
        mid_index, leaves = split_blocks(values, leaf_shift)
        leaf_bytes = len(leaves) * (1 << leaf_shift) * elem_bytes
        for mid_shift in range(2, 9):
            top, mids = split_blocks(mid_index, mid_shift)
            total = (len(top) * int_bytes(len(mids)) + len(mids) * (1 << mid_shift) * int_bytes(len(leaves)) +
                     leaf_bytes)
            if best is None or total < best[0]:
                best = (total, leaf_shift, mid_shift, top, mids, leaves)
    return best[1:]


def c_array(ctype, name, values, per_line=24, fmt="%d"):
    out = ["static const %s %s[%d] = {" % (ctype, name, len(values))]
    for i in range(0, len(values), per_line):
        out.append("  " + ",".join(fmt % v for v in values[i:i + per_line]) + ",")
    out.append("};")
    return "\n".join(out)


def emit_three_level(lines, prefix, values, elem_type, elem_bytes):
    leaf_shift, mid_shift, top, mids, leaves = three_level(values, elem_bytes)
    int_type = {1: "std::uint8_t", 2: "std::uint16_t"}
    lines.append("// %s: %d top entries, %d middle blocks of %d, %d leaf blocks of %d." %
                 (prefix, len(top), len(mids), 1 << mid_shift, len(leaves), 1 << leaf_shift))
    lines.append("constexpr int k_%s_leaf_shift = %d;" % (prefix, leaf_shift))
    lines.append("constexpr int k_%s_mid_shift = %d;" % (prefix, mid_shift))
    lines.append(c_array(int_type[int_bytes(len(mids))], prefix + "_top", top))
    lines.append(c_array(int_type[int_bytes(len(leaves))], prefix + "_mid", [v for b in mids for v in b]))
    lines.append(c_array(elem_type, prefix + "_leaf", [v for b in leaves for v in b]))
    lines.append("")


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: gen_unicode.py <UCD directory> <output .inc> [<NormalizationTest.txt copy>]")
    ucd, out_path = sys.argv[1], sys.argv[2]
    test_out = sys.argv[3] if len(sys.argv) == 4 else None

    unicode_data = read_text(os.path.join(ucd, "UnicodeData.txt"))
    prop_list = read_text(os.path.join(ucd, "PropList.txt"))
    exclusions = read_text(os.path.join(ucd, "CompositionExclusions.txt"))
    norm_props = read_text(os.path.join(ucd, "DerivedNormalizationProps.txt"))

    # UnicodeData.txt has no version line; the other three must agree with each other.
    version = file_version(prop_list, "PropList")
    for text, stem in ((exclusions, "CompositionExclusions"), (norm_props, "DerivedNormalizationProps")):
        if file_version(text, stem) != version:
            fail("%s.txt is not version %s" % (stem, version))

    cat, ccc, decomp = parse_unicode_data(unicode_data)
    white = sorted(parse_ranges(prop_list, "White_Space"))
    full_excl = parse_ranges(norm_props, "Full_Composition_Exclusion")
    # Full_Composition_Exclusion must include the table of CompositionExclusions.txt.
    listed = set()
    for line in exclusions.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            listed.add(int(line.split()[0], 16))
    if not listed <= full_excl:
        fail("CompositionExclusions.txt lists code points that are not Full_Composition_Exclusion")

    for cp in decomp:
        if HANGUL_S_BASE <= cp < HANGUL_S_BASE + HANGUL_S_COUNT:
            fail("UnicodeData.txt gives a decomposition for Hangul syllable U+%04X" % cp)

    # Full decompositions. Entry 0 means "decomposes to itself" under both forms.
    memo = {}
    pool = []
    pool_str = ""  # the pool as a string, to find a sequence already in it quickly

    def pool_add(seq):
        nonlocal pool_str
        key = "".join(chr(c) for c in seq)
        at = pool_str.find(key)
        if at < 0:
            at = len(pool)
            pool.extend(seq)
            pool_str += key
        return at

    entries = [(0, 0, 0, 0)]
    entry_of = [0] * MAX_CP
    max_len = 0
    for cp in sorted(decomp):
        canon = full_decomposition(cp, decomp, False, memo)
        compat = full_decomposition(cp, decomp, True, memo)
        canon_len = 0 if canon == [cp] else len(canon)
        compat_len = 0 if compat == [cp] else len(compat)
        if canon_len == 0 and compat_len == 0:
            continue
        # Canonical reordering of the full decompositions is done at run time, with the rest.
        canon_off = pool_add(canon) if canon_len else 0
        compat_off = pool_add(compat) if compat_len else 0
        max_len = max(max_len, canon_len, compat_len)
        entry_of[cp] = len(entries)
        entries.append((canon_off, canon_len, compat_off, compat_len))
    if len(pool) >= 1 << 16 or len(entries) >= 1 << 16 or max_len > 255:
        fail("decomposition tables outgrew their 16-bit indices")

    # Primary composites: canonical pairs not excluded from composition.
    pairs = []
    for cp in sorted(decomp):
        compat, seq = decomp[cp]
        if compat or len(seq) != 2 or cp in full_excl:
            continue
        pairs.append((seq[0], seq[1], cp))
    pairs.sort()
    for a, b in zip(pairs, pairs[1:]):
        if a[:2] == b[:2]:
            fail("two composites for U+%04X U+%04X" % a[:2])
    # Code points that can compose with the one before them (the Hangul vowels and trailing
    # consonants too): text cannot be split before them without changing NFC.
    seconds = sorted({p[1] for p in pairs} |
                     set(range(HANGUL_V_BASE, HANGUL_V_BASE + HANGUL_V_COUNT)) |
                     set(range(HANGUL_T_BASE + 1, HANGUL_T_BASE + HANGUL_T_COUNT)))

    # unicode.cpp treats every code point below U+0300 as a place where normalization may split
    # text: each must decompose (under both forms) to a starter that composes with nothing before it.
    for cp in range(0x300):
        for compat in (False, True):
            d0 = full_decomposition(cp, decomp, compat, memo)[0]
            if ccc[d0] != 0 or d0 in seconds:
                fail("U+%04X below U+0300 does not start with a plain starter" % cp)

    ranges = []
    for cp in white:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])

    lines = [
        "// Generated by scripts/gen_unicode.py from the Unicode Character Database %s." % version,
        "// Included by src/tokenizer/unicode.cpp only.",
        "",
        'constexpr const char* k_unicode_version = "%s";' % version,
        "",
    ]
    emit_three_level(lines, "category", list(cat), "std::uint8_t", 1)
    emit_three_level(lines, "ccc", list(ccc), "std::uint8_t", 1)
    emit_three_level(lines, "decomp", entry_of, "std::uint16_t", 2)

    lines.append("// White_Space, as inclusive [first, last] ranges.")
    lines.append(c_array("char32_t", "white_space_ranges", [v for r in ranges for v in r], 8, "0x%04X"))
    lines.append("constexpr int k_white_space_range_count = %d;" % len(ranges))
    lines.append("")

    lines.append("// Decomposition entries: canonical (offset, length), compatibility (offset, length)")
    lines.append("// into decomp_pool; length 0: the code point decomposes to itself under that form.")
    lines.append("struct DecompEntry { std::uint16_t canon_off; std::uint8_t canon_len; std::uint8_t compat_len; std::uint16_t compat_off; };")
    lines.append("static const DecompEntry decomp_entries[%d] = {" % len(entries))
    for i in range(0, len(entries), 6):
        lines.append("  " + " ".join("{%d,%d,%d,%d}," % (e[0], e[1], e[3], e[2]) for e in entries[i:i + 6]))
    lines.append("};")
    lines.append(c_array("char32_t", "decomp_pool", pool, 12, "0x%04X"))
    lines.append("constexpr int k_max_decomposition = %d;" % max_len)
    lines.append("")

    lines.append("// Canonical composition pairs (first, second) -> composite, sorted by (first, second).")
    lines.append("struct CompPair { char32_t first, second, composite; };")
    lines.append("static const CompPair comp_pairs[%d] = {" % len(pairs))
    for i in range(0, len(pairs), 4):
        lines.append("  " + " ".join("{0x%04X,0x%04X,0x%04X}," % p for p in pairs[i:i + 4]))
    lines.append("};")
    lines.append("")
    lines.append("// Code points that can compose with a preceding code point, sorted.")
    lines.append(c_array("char32_t", "comp_seconds", seconds, 12, "0x%04X"))
    lines.append("constexpr char32_t k_min_comp_second = 0x%04X;" % seconds[0])
    lines.append("")

    text = "\n".join(lines)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    # Write only when the content changes, so an unchanged table does not recompile unicode.cpp.
    try:
        old = read_text(out_path)
    except OSError:
        old = None
    if old != text:
        with open(out_path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        os.utime(out_path)

    if test_out:
        plain = os.path.join(ucd, "NormalizationTest.txt")
        if os.path.exists(plain):
            data = read_text(plain)
        else:
            with bz2.open(plain + ".bz2", "rt", encoding="utf-8") as f:
                data = f.read()
        if file_version(data, "NormalizationTest") != version:
            fail("NormalizationTest.txt is not version %s" % version)
        os.makedirs(os.path.dirname(os.path.abspath(test_out)), exist_ok=True)
        with open(test_out, "w", encoding="utf-8", newline="\n") as f:
            f.write(data)


if __name__ == "__main__":
    main()
