#!/usr/bin/env python3
"""Build the tokenizer parity corpus and record what Hugging Face `tokenizers` does with it.

    /opt/layaref/bin/python tools/tokenizer/gen_fixtures.py [--shared ../shared]

Writes tests/fixtures/tokenizer/:
  corpus.jsonl          one JSON string per line (deterministic: fixed seeds, Faker locales plus
                        synthetic hostile strings). Lone surrogates are written as \\udXXX escapes,
                        which is how they arrive from JSON.
  <name>.jsonl          for every corpus line, what the reference returns for
                        Tokenizer.encode(text, add_special_tokens=False):
                          "IDS"                 decode(ids, skip_special_tokens=False) == text
                          ["IDS", "decoded"]    decode differs from the text (given)
                          null                  the reference refuses the text (lone surrogates:
                                                a Python str with a surrogate cannot cross into
                                                Rust; we refuse its WTF-8 bytes the same way)
  <name>.decode.jsonl   random id lists (specials, byte tokens, partial UTF-8) and their decode.

IDS packs the id list to keep the fixtures small (under 15 MB for 4 x 22,000 strings): each id
is written most significant 5-bit group first, one character per group from
ALPHABET = A-Z a-z 0-9 - _ ; the character's index is the group, plus 32 when more groups of the
same id follow. [0, 31, 32, 1000] -> "A" "f" "hA" "_I" -> "AfhA_I".

Truncation to 48 (enable_truncation(48)) is checked here to equal the first 48 ids of the full
encoding for every string, so the C test compares its truncated output with that prefix.
"""
import argparse
import json
import os
import random
import sys
import unicodedata

import tokenizers
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
MAX_LEN = 48

LOCALES = [
    "en_US", "en_GB", "fr_FR", "de_DE", "es_ES", "it_IT", "pt_BR", "nl_NL", "sv_SE", "pl_PL",
    "cs_CZ", "hu_HU", "ro_RO", "tr_TR", "ru_RU", "uk_UA", "bg_BG", "el_GR", "he_IL", "ar_AA",
    "fa_IR", "hi_IN", "bn_BD", "ta_IN", "ne_NP", "th_TH", "ja_JP", "zh_CN", "zh_TW", "ko_KR",
    "vi_VN", "id_ID", "hy_AM", "ka_GE", "az_AZ", "fi_FI", "da_DK", "no_NO", "sk_SK", "sl_SI",
    "hr_HR", "lt_LT", "lv_LV", "et_EE", "tl_PH", "sw", "yo_NG", "zu_ZA",
]

# Script samples: (first, last) code point ranges of letters of the major scripts.
SCRIPTS = {
    "latin": [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x1E00, 0x1EFF)],
    "greek": [(0x391, 0x3C9), (0x1F00, 0x1FFE)],
    "cyrillic": [(0x400, 0x4FF)],
    "armenian": [(0x531, 0x587)],
    "hebrew": [(0x5D0, 0x5EA), (0x591, 0x5C7)],
    "arabic": [(0x620, 0x64A), (0x660, 0x669), (0x64B, 0x65F), (0x6F0, 0x6F9), (0xFB50, 0xFDFF)],
    "syriac": [(0x710, 0x74A)],
    "thaana": [(0x780, 0x7B1)],
    "devanagari": [(0x900, 0x97F)],
    "bengali": [(0x980, 0x9FE)],
    "gurmukhi": [(0xA00, 0xA76)],
    "gujarati": [(0xA81, 0xAFF)],
    "tamil": [(0xB82, 0xBFA)],
    "telugu": [(0xC00, 0xC7F)],
    "kannada": [(0xC80, 0xCF2)],
    "malayalam": [(0xD00, 0xD7F)],
    "sinhala": [(0xD81, 0xDF4)],
    "thai": [(0xE01, 0xE5B)],
    "lao": [(0xE81, 0xEDF)],
    "tibetan": [(0xF00, 0xFDA)],
    "myanmar": [(0x1000, 0x109F)],
    "georgian": [(0x10A0, 0x10FF)],
    "hangul": [(0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3131, 0x318E)],
    "ethiopic": [(0x1200, 0x137C)],
    "cherokee": [(0x13A0, 0x13F5)],
    "khmer": [(0x1780, 0x17F9)],
    "mongolian": [(0x1800, 0x18AA)],
    "hiragana": [(0x3041, 0x309F)],
    "katakana": [(0x30A0, 0x30FF), (0xFF66, 0xFF9D)],
    "cjk": [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0xF900, 0xFAFF)],
    "math": [(0x1D400, 0x1D7FF), (0x2200, 0x22FF)],
    "fullwidth": [(0xFF01, 0xFF5E)],
    "digits": [(0x30, 0x39), (0x660, 0x669), (0x966, 0x96F), (0xFF10, 0xFF19), (0x1D7CE, 0x1D7FF),
               (0x2150, 0x218B), (0x2460, 0x249B)],
}

SPACES = [" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000", "\u2002",
          "\u2003", "\u2007", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
          "\u200b", "\u200c", "\u200d", "\ufeff", "\x1c", "\x1d", "\x1e", "\x1f", "\u180e"]
CONTROLS = [chr(c) for c in list(range(0, 32)) + list(range(0x7F, 0xA0))] + [
    "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067",
    "\u2068", "\u2069", "\u061c", "\u00ad", "\ufff9", "\ufffa", "\ufffb", "\ufffc", "\ufffd"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["…", "—", "–", "«", "»", "“", "”", "‘", "’",
                                                     "¿", "¡", "。", "、", "「", "」", "『", "』",
                                                     "・", "؟", "،", "।", "॥", "·", "•", "§", "¶",
                                                     "€", "£", "¥", "₹", "©", "®", "™", "°", "±"]
EMOJI_BASE = ["😀", "😂", "🥲", "🤖", "👍", "👋", "🙏", "🔥", "🎉", "❤", "⭐", "☀", "⚽", "🏳",
              "👨", "👩", "🧑", "👧", "👦", "🐈", "🍕", "🚀", "🌍", "🧪", "🫠", "🪿"]
SKIN = ["\U0001F3FB", "\U0001F3FC", "\U0001F3FD", "\U0001F3FE", "\U0001F3FF"]
ZWJ_SEQS = ["👨\u200d👩\u200d👧\u200d👦", "👩\u200d❤\ufe0f\u200d💋\u200d👨", "🏳\ufe0f\u200d🌈",
            "🏴\u200d☠\ufe0f", "🧑\u200d💻", "👩🏽\u200d🚀", "🐈\u200d⬛", "❤\ufe0f\u200d🔥",
            "🧑🏿\u200d🤝\u200d🧑🏻", "👁\ufe0f\u200d🗨\ufe0f"]
FLAGS = ["🇺🇸", "🇫🇷", "🇯🇵", "🇮🇳", "🇧🇷", "🇿🇦", "🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"]
KEYCAPS = ["1\ufe0f\u20e3", "#\ufe0f\u20e3", "*\u20e3"]
COMBINING = [chr(c) for c in range(0x300, 0x370)] + ["\u0483", "\u05b0", "\u064b", "\u0901",
                                                       "\u093c", "\u0e31", "\u20d0", "\u1ab0",
                                                       "\u1dc0", "\ufe20", "\u3099", "\u309a"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL",
                "'D", "'ſ", "'x", "''", "'", "’s", "n't", "N'T"]

SPECIALS = [
    # Gemma 3
    "<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>",
    "<start_of_image>", "<end_of_image>", "<image_soft_token>", "[multimodal]",
    "<unused0>", "<unused99>", "\n\n", "\n\n\n\n", "\t\t", "\t\t\t\t\t",
    # Llama 3
    "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|eot_id|>", "<|reserved_special_token_0|>", "<|reserved_special_token_250|>",
    # ModernBERT style
    "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "|||IP_ADDRESS|||", "|||EMAIL_ADDRESS|||",
    "|||PHONE_NUMBER|||", "  ", "    ", "        ", " " * 24,
    # near misses
    "<bos", "bos>", "<<bos>>", "[MASK", "<|eot_id|", "<mask >", "< mask>", "<MASK>", "[mask]",
]


def rand_script_text(rng, script, n):
    ranges = SCRIPTS[script]
    out = []
    for _ in range(n):
        a, b = rng.choice(ranges)
        out.append(chr(rng.randint(a, b)))
        if rng.random() < 0.15:
            out.append(" ")
    return "".join(out)


def rand_scalar(rng):
    while True:
        c = rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xFFFF),
                        rng.randint(0x10000, 0x10FFFF)])
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def emoji_text(rng):
    parts = []
    for _ in range(rng.randint(1, 8)):
        k = rng.random()
        if k < 0.3:
            parts.append(rng.choice(EMOJI_BASE) + (rng.choice(SKIN) if rng.random() < 0.3 else ""))
        elif k < 0.55:
            parts.append(rng.choice(ZWJ_SEQS))
        elif k < 0.7:
            parts.append(rng.choice(FLAGS))
        elif k < 0.8:
            parts.append(rng.choice(KEYCAPS))
        elif k < 0.9:
            parts.append(rng.choice(EMOJI_BASE) + "\ufe0f")
        else:
            parts.append(rng.choice(["hi", "ok", "lol", "great", "日本", "привет"]))
        parts.append(rng.choice(["", " ", "  ", "\n"]))
    return "".join(parts)


def combining_text(rng):
    base = rng.choice(["e", "a", "o", "n", "i", "A", "ع", "क", "ก", "あ", " ", "", "1", "."])
    marks = "".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 12)))
    word = base + marks
    pre = rng.choice(["", "caf", "na", "re", "x "])
    s = pre + word + rng.choice(["", "s", " test", "!"])
    if rng.random() < 0.5:
        s = unicodedata.normalize(rng.choice(["NFC", "NFD", "NFKC", "NFKD"]), s)
    return s


def whitespace_text(rng):
    parts = []
    for _ in range(rng.randint(1, 10)):
        k = rng.random()
        if k < 0.5:
            parts.append(rng.choice(SPACES) * rng.randint(1, 40))
        else:
            parts.append(rng.choice(["word", "x", "Hello", "1", "42", ".", "日本", "мир", "'s", "!!"]))
    return "".join(parts)


def control_text(rng):
    return "".join(rng.choice(CONTROLS + ["a", "b", " ", "é", "中"]) for _ in range(rng.randint(1, 30)))


def special_text(rng):
    parts = []
    for _ in range(rng.randint(1, 6)):
        parts.append(rng.choice(SPECIALS))
        parts.append(rng.choice(["", " ", "  ", "\n", "\t", "\xa0", "hello", " world ", "x", "中文",
                                 "\u3000", "  word", "'s"]))
    if rng.random() < 0.5:
        rng.shuffle(parts)
    return "".join(parts)


def long_text(rng, i):
    kind = i % 8
    if kind == 0:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(300, 2500)))
    if kind == 1:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(200, 2000)))
    if kind == 2:
        return rand_script_text(rng, "cjk", rng.randint(500, 2500)).replace(" ", "")
    if kind == 3:
        return rand_script_text(rng, "hiragana", rng.randint(500, 2000)).replace(" ", "")
    if kind == 4:
        return "".join(rng.choice(PUNCT) for _ in range(rng.randint(200, 1500)))
    if kind == 5:
        return rng.choice(["a", "ab", "ha", "-", "=", "\u0301", "😀", " a"]) * rng.randint(200, 2000)
    if kind == 6:
        return rand_script_text(rng, "thai", rng.randint(300, 2000)).replace(" ", "")
    return "".join(rand_scalar(rng) for _ in range(rng.randint(200, 1000)))


def surrogate_text(rng):
    lone = chr(rng.choice([0xD800, 0xDBFF, 0xDC00, 0xDFFF, rng.randint(0xD800, 0xDFFF)]))
    return rng.choice(["", "a", "hello ", "日本", "😀"]) + lone + rng.choice(["", "b", " world", "\n"])


def json_state(rng, fk):
    d = {"name": fk.name(), "city": fk.city(), "note": fk.sentence(),
         "n": rng.randint(-10**6, 10**6), "x": round(rng.uniform(-1000, 1000), rng.randint(0, 6)),
         "ok": rng.random() < 0.5, "tags": [fk.word() for _ in range(rng.randint(0, 4))]}
    return json.dumps(d, ensure_ascii=False)


def build_corpus():
    from faker import Faker
    rng = random.Random(20261129)
    corpus = ["", " ", "  ", "\n", "\t", "a", "A", ".", "▁", "▁▁", " ▁", "Hello world", "hello  world",
              "  leading spaces", "trailing spaces   ", "\n\nnewlines\n\n", "tab\tseparated\tvalues"]
    # 1. Faker, per locale (about 11,000 strings)
    for li, loc in enumerate(LOCALES):
        try:
            fk = Faker(loc)
        except AttributeError:
            continue
        fk.seed_instance(1000 + li)
        for k in range(230):
            r = k % 10
            try:
                if r < 4:
                    s = fk.sentence(nb_words=rng.randint(3, 14))
                elif r < 6:
                    s = fk.text(max_nb_chars=rng.choice([40, 80, 120]))
                elif r == 6:
                    s = fk.name() + ", " + fk.address()
                elif r == 7:
                    s = json_state(rng, fk)
                elif r == 8:
                    s = fk.catch_phrase() if hasattr(fk, "catch_phrase") else fk.word()
                else:
                    s = fk.paragraph(nb_sentences=rng.randint(1, 2))
            except Exception:  # some providers are missing in some locales
                s = fk.word()
            if rng.random() < 0.1:
                s = s.upper()
            if rng.random() < 0.05:
                s = s.lower()
            corpus.append(s)
    # 2. every script (about 3,300)
    for sc in SCRIPTS:
        for _ in range(100):
            corpus.append(rand_script_text(rng, sc, rng.randint(1, 40)))
    # 3. hostile synthetic strings (about 7,000)
    gens = [emoji_text, combining_text, whitespace_text, control_text, special_text]
    for g in gens:
        for _ in range(1000):
            corpus.append(g(rng))
    for _ in range(400):
        corpus.append("".join(rand_scalar(rng) for _ in range(rng.randint(1, 40))))
    for _ in range(300):
        w = rng.choice(["", "x", "The", "it", "WE"]) + rng.choice(CONTRACTIONS) + rng.choice(["", " ", "s", "t", "re", "x"])
        corpus.append(w * rng.randint(1, 4))
    for _ in range(300):
        corpus.append("".join(rng.choice(PUNCT + [" ", "a", "1", "\n"]) for _ in range(rng.randint(1, 40))))
    for _ in range(200):
        corpus.append(surrogate_text(rng))
    for i in range(40):
        corpus.append(long_text(rng, i))
    # mixtures: two random corpus strings glued by random whitespace
    base = list(corpus)
    for _ in range(1500):
        a, b = rng.choice(base), rng.choice(base)
        if len(a) + len(b) < 200:
            corpus.append(a + rng.choice(SPACES + ["", "", ""]) + b)
    return corpus


def dump_line(s):
    # ensure_ascii=False keeps the file small; lone surrogates become \udXXX escapes
    return json.dumps(s, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def pack_ids(ids):
    out = []
    for i in ids:
        groups = []
        while True:
            groups.append(i & 31)
            i >>= 5
            if not i:
                break
        groups.reverse()
        for k, g in enumerate(groups):
            out.append(ALPHABET[g + (32 if k + 1 < len(groups) else 0)])
    return "".join(out)


def unpack_ids(s):
    ids, cur = [], 0
    for ch in s:
        v = ALPHABET.index(ch)
        cur = (cur << 5) | (v & 31)
        if v < 32:
            ids.append(cur)
            cur = 0
    return ids


def has_surrogate(s):
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def record(name, path, corpus, rng):
    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    trunc = Tokenizer.from_file(path)
    trunc.enable_truncation(MAX_LEN)
    lines = []
    stats = {"strings": 0, "errors": 0, "decode_differs": 0, "ids": 0}
    for s in corpus:
        stats["strings"] += 1
        try:
            ids = tok.encode(s, add_special_tokens=False).ids
        except Exception:
            assert has_surrogate(s), "reference refused a string without surrogates: %r" % s
            lines.append("null")
            stats["errors"] += 1
            continue
        t_ids = trunc.encode(s, add_special_tokens=False).ids
        assert t_ids == ids[:MAX_LEN], "truncation is not a prefix for %r" % s
        dec = tok.decode(ids, skip_special_tokens=False)
        stats["ids"] += len(ids)
        packed = pack_ids(ids)
        assert unpack_ids(packed) == ids
        if dec == s:
            lines.append(json.dumps(packed))
        else:
            stats["decode_differs"] += 1
            lines.append(json.dumps([packed, dec], ensure_ascii=False, separators=(",", ":")))
    with open(os.path.join(OUT, name + ".jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    # decode of arbitrary id lists: specials, byte tokens, partial UTF-8, unknown ids
    vocab = tok.get_vocab_size(with_added_tokens=True)
    byte_ids = [tok.token_to_id("<0x%02X>" % b) for b in range(256)]
    byte_ids = [i for i in byte_ids if i is not None]
    added = sorted(tok.get_added_tokens_decoder().keys())
    dl = []
    for k in range(600):
        n = rng.randint(0, 30)
        ids = []
        for _ in range(n):
            r = rng.random()
            if r < 0.2 and byte_ids:
                ids.append(rng.choice(byte_ids))
            elif r < 0.35 and added:
                ids.append(rng.choice(added))
            elif r < 0.37:
                ids.append(vocab + rng.randint(0, 1000))  # no such id: skipped
            else:
                ids.append(rng.randrange(vocab))
        dec = tok.decode(ids, skip_special_tokens=False)
        dl.append(json.dumps([ids, dec], ensure_ascii=False, separators=(",", ":")))
    with open(os.path.join(OUT, name + ".decode.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(dl) + "\n")
    return stats


def main():
    # Some Faker providers draw from sets, whose order follows str hashing: pin it, or a few
    # strings (it_IT cities) change from run to run.
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    corpus = build_corpus()
    with open(os.path.join(OUT, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for s in corpus:
            f.write(dump_line(s) + "\n")
    # the corpus file must read back to the same strings
    with open(os.path.join(OUT, "corpus.jsonl"), encoding="utf-8") as f:
        back = [json.loads(l) for l in f]
    assert back == corpus
    tokenizers_to_run = {
        "gemma3": os.path.join(args.shared, "tokenizers", "gemma3", "tokenizer.json"),
        "llama3": os.path.join(args.shared, "tokenizers", "llama3", "tokenizer.json"),
        "modernbert-mini": os.path.join(ROOT, "tests", "fixtures", "tokenizers", "modernbert-mini", "tokenizer.json"),
        "mmbert-mini": os.path.join(ROOT, "tests", "fixtures", "tokenizers", "mmbert-mini", "tokenizer.json"),
    }
    rng = random.Random(7)
    meta = {"tokenizers_version": tokenizers.__version__, "corpus_strings": len(corpus), "max_len": MAX_LEN}
    for name, path in tokenizers_to_run.items():
        st = record(name, path, corpus, rng)
        meta[name] = st
        print(name, st, file=sys.stderr)
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
