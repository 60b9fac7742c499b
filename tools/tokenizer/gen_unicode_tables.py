#!/usr/bin/env python3
"""Probe the Unicode character classes that Hugging Face `tokenizers` actually uses, and write
them as C range tables (src/tokenizer/unicode_tables.c).

Why probe instead of using utf8proc: `tokenizers` takes its classes from three places with
different Unicode versions -- Oniguruma's tables (\\p{L}, \\p{N}, \\s in the GPT-2 and Llama-3
split regexes), the Rust `regex` crate (\\w, \\s in Whitespace and in added-token lstrip/rstrip/
single_word) and Rust's std / unicode_categories (char::is_whitespace, is_numeric,
is_punctuation, to_lowercase). Asking the library itself is the only way to agree with it on every
code point. Run with the reference venv:  /opt/layaref/bin/python tools/tokenizer/gen_unicode_tables.py
"""
import os
import subprocess
import sys
import tempfile

import tokenizers
from tokenizers import Regex
from tokenizers import normalizers as N
from tokenizers import pre_tokenizers as P

CPS = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]


def covered(pieces, n):
    """Boolean per char position: inside some output piece."""
    cov = bytearray(n)
    for _, (a, b) in pieces:
        for i in range(a, b):
            cov[i] = 1
    return cov


def class_by_removal(pretok):
    """Code points that a 'removed' splitter drops (the class members)."""
    s = "".join(map(chr, CPS))
    cov = covered(pretok.pre_tokenize_str(s), len(s))
    return {CPS[i] for i in range(len(CPS)) if not cov[i]}


def rust_word_and_space():
    """Whitespace pre-tokenizer = \\w+|[^\\w\\s]+ (Rust regex); probe with '!' separators."""
    s = "!" + "!".join(map(chr, CPS)) + "!"
    pieces = P.Whitespace().pre_tokenize_str(s)
    cov = covered(pieces, len(s))
    word = set()
    for text, (a, b) in pieces:
        if "!" not in text:
            for i in range(a, b):
                word.add(ord(s[i]))
    space = {ord(s[i]) for i in range(len(s)) if not cov[i]}
    return word, space


def numeric():
    s = "a" + "a".join(map(chr, CPS)) + "a"
    out = set()
    for text, _ in P.Digits(individual_digits=True).pre_tokenize_str(s):
        if len(text) == 1 and text != "a" and "a" not in text:
            out.add(ord(text))
    return out


def lowercase():
    cps = [c for c in CPS if c != 0]
    s = "\x00".join(map(chr, cps))
    low = N.Lowercase().normalize_str(s).split("\x00")
    assert len(low) == len(cps)
    return {c: l for c, l in zip(cps, low) if l != chr(c)}


def norm_opaque():
    """Code points that utf8proc normalizes but the reference's normalizer (older Unicode
    tables) leaves alone: for the reference they are plain starters (ccc 0, no decomposition,
    no composition), so the C side cuts the text at them and normalizes the pieces between."""
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(tempfile.mkdtemp(), "norm_candidates")
    subprocess.check_call(["cc", "-O2", os.path.join(here, "norm_candidates.c"), "-o", exe, "-lutf8proc"])
    lines = subprocess.check_output([exe]).decode().splitlines()
    nfd, nfkd = N.NFD(), N.NFKD()
    opaque = set()
    for line in lines:
        head, canon, compat = line.split("|")
        cp, ccc = (int(x, 16) if i == 0 else int(x) for i, x in enumerate(head.split()))
        canon = [int(x, 16) for x in canon.split()]
        compat = [int(x, 16) for x in compat.split()]
        c = chr(cp)
        if ccc > 0:
            # a known mark moves behind U+0334 (ccc 1), or in front of U+0301 (ccc 230) when ccc is 1
            probe = (c + "\u0334") if ccc > 1 else ("\u0301" + c)
            if nfd.normalize_str(probe) == probe:
                opaque.add(cp)
        if compat != [cp] and nfkd.normalize_str(c) == c:
            opaque.add(cp)
            if canon != [cp]:
                opaque.update(canon)  # new composites are built only from new characters
    return opaque


def ranges(members):
    out = []
    for c in sorted(members):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def emit_ranges(f, name, members):
    rs = ranges(members)
    f.write("const uint32_t %s[][2] = {\n" % name)
    for i in range(0, len(rs), 4):
        f.write("  " + " ".join("{0x%04X, 0x%04X}," % (a, b) for a, b in rs[i:i + 4]) + "\n")
    f.write("};\nconst size_t %s_count = %d;\n\n" % (name, len(rs)))


def main(out_path):
    classes = {}
    classes["uc_onig_letter"] = class_by_removal(P.Split(Regex(r"\p{L}"), "removed"))
    classes["uc_onig_number"] = class_by_removal(P.Split(Regex(r"\p{N}"), "removed"))
    classes["uc_onig_space"] = class_by_removal(P.Split(Regex(r"\s"), "removed"))
    word, space = rust_word_and_space()
    classes["uc_rust_word"] = word
    classes["uc_rust_regex_space"] = space
    classes["uc_rust_whitespace"] = class_by_removal(P.WhitespaceSplit())
    classes["uc_punctuation"] = class_by_removal(P.Punctuation("removed"))
    classes["uc_numeric"] = numeric()
    classes["uc_norm_opaque"] = norm_opaque()
    low = lowercase()
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("/* Generated by tools/tokenizer/gen_unicode_tables.py from tokenizers %s. Do not edit.\n"
                " * Character classes as the reference library sees them (see the script for why). */\n"
                % tokenizers.__version__)
        f.write('#include "tokenizer/unicode_tables.h"\n\n')
        for name, members in classes.items():
            emit_ranges(f, name, members)
        f.write("/* Code points whose char::to_lowercase differs from themselves: cp, then up to 3 cps. */\n")
        f.write("const uint32_t uc_lowercase[][4] = {\n")
        for c in sorted(low):
            l = [ord(x) for x in low[c]]
            assert 1 <= len(l) <= 3
            l += [0] * (3 - len(l))
            f.write("  {0x%04X, 0x%04X, 0x%04X, 0x%04X},\n" % (c, l[0], l[1], l[2]))
        f.write("};\nconst size_t uc_lowercase_count = %d;\n" % len(low))
    for name, members in classes.items():
        print(name, len(members), file=sys.stderr)
    print("lowercase", len(low), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "src/tokenizer/unicode_tables.c")
