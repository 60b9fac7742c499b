#!/usr/bin/env python3
"""Small tokenizers that exercise every component the C tokenizer supports, built and trained with
Hugging Face `tokenizers`, and the reference's ids and decode on part of the parity corpus.

    /opt/layaref/bin/python tools/tokenizer/gen_synthetic.py     (after gen_fixtures.py)

Writes tests/fixtures/tokenizer/synth/<name>/tokenizer.json, synth/corpus.jsonl (every 8th corpus
string) and synth/<name>.jsonl + <name>.decode.jsonl in the format of gen_fixtures.py.
"""
import json
import os
import random
import sys

from tokenizers import AddedToken, Regex, Tokenizer
from tokenizers import decoders as D
from tokenizers import models as M
from tokenizers import normalizers as N
from tokenizers import pre_tokenizers as P
from tokenizers import trainers as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as G  # noqa: E402

SYN = os.path.join(G.OUT, "synth")


def train(tok, texts, **kw):
    trainer = T.BpeTrainer(vocab_size=kw.pop("vocab_size", 1500), show_progress=False, **kw)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def configs(texts):
    out = {}

    # 1. subword prefix / suffix, NFD + Lowercase + Strip, Whitespace, BPEDecoder, every added-token flag
    t = Tokenizer(M.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>"))
    t.normalizer = N.Sequence([N.NFD(), N.Lowercase(), N.Strip(left=True, right=True)])
    t.pre_tokenizer = P.Whitespace()
    t.decoder = D.BPEDecoder(suffix="</w>")
    train(t, texts, special_tokens=["[UNK]"], continuing_subword_prefix="##", end_of_word_suffix="</w>")
    t.add_special_tokens([AddedToken("[MASK]", lstrip=True, rstrip=True, normalized=False, special=True)])
    t.add_tokens([AddedToken("hello world", single_word=True, normalized=True),
                  AddedToken("Ünïcode", normalized=True), AddedToken("<sep>", rstrip=True, normalized=False),
                  AddedToken("'s", single_word=True, normalized=False)])
    out["prefix-suffix"] = t

    # 2. NFKC + Replace(regex) + Prepend; WhitespaceSplit / Punctuation / Digits; ignore_merges,
    #    fuse_unk; decoder Replace / Strip / Fuse
    t = Tokenizer(M.BPE(unk_token="<unk>", fuse_unk=True, ignore_merges=True))
    t.normalizer = N.Sequence([N.NFKC(), N.Replace(Regex(r"[0-9]{4,}"), "0000"), N.Prepend("@")])
    t.pre_tokenizer = P.Sequence([P.WhitespaceSplit(), P.Punctuation("contiguous"), P.Digits(individual_digits=True)])
    t.decoder = D.Sequence([D.Replace("@", " "), D.Fuse(), D.Strip(" ", 1, 0)])
    train(t, texts[: len(texts) // 2], special_tokens=["<unk>"], limit_alphabet=300)
    t.add_tokens([AddedToken("[x]", rstrip=True, normalized=True), AddedToken("  ", normalized=False)])
    out["nfkc-punct-digits"] = t

    # 3. every Split behaviour, invert, string and regex patterns; Metaspace "first" without split
    t = Tokenizer(M.BPE(unk_token="<unk>", byte_fallback=False))
    t.normalizer = N.NFKD()
    t.pre_tokenizer = P.Sequence([
        P.Split(Regex(r"\s+"), "merged_with_next"),
        P.Split(Regex(r"[aeiou]"), "merged_with_previous"),
        P.Split(",", "isolated"),
        P.Split(Regex(r"\p{N}+"), "contiguous", invert=True),
        P.Split("x", "removed"),
        P.Split(Regex(r"\p{L}{3}"), "isolated", invert=True),
        P.Metaspace(replacement="▁", prepend_scheme="first", split=False),
    ])
    t.decoder = D.Metaspace(replacement="▁", prepend_scheme="first")
    train(t, texts, special_tokens=["<unk>"])
    t.add_special_tokens([AddedToken("<s>", normalized=False, special=True)])
    out["split-behaviours"] = t

    # 4. ByteLevel without its regex after Punctuation(removed) and Digits; Lowercase; NFC
    t = Tokenizer(M.BPE())
    t.normalizer = N.Sequence([N.NFC(), N.Lowercase()])
    t.pre_tokenizer = P.Sequence([P.Punctuation("removed"), P.Digits(individual_digits=False),
                                  P.ByteLevel(add_prefix_space=True, use_regex=False)])
    t.decoder = D.ByteLevel()
    train(t, texts, initial_alphabet=P.ByteLevel.alphabet())
    t.add_tokens([AddedToken("DNA", normalized=True), AddedToken("<|x|>", normalized=False, lstrip=True)])
    out["bytelevel-noregex"] = t

    # 5. Metaspace split with prepend "never", merged-with-next inverted split, byte fallback
    t = Tokenizer(M.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=False))
    t.normalizer = N.Sequence([N.Strip(left=False, right=True), N.Replace(" ", "▁")])
    t.pre_tokenizer = P.Sequence([P.Split(Regex(r"[\p{P}]"), "merged_with_next", invert=True),
                                  P.Metaspace(replacement="▁", prepend_scheme="never", split=True)])
    t.decoder = D.Sequence([D.Replace("▁", " "), D.ByteFallback(), D.Fuse()])
    alphabet = ["<0x%02X>" % b for b in range(256) if b not in (0x41, 0xE6)]
    train(t, texts, special_tokens=["<unk>"] + alphabet, limit_alphabet=200)
    out["metaspace-never-bytes"] = t
    return out


def legacy_merges(path):
    """Rewrite [a, b] merges as "a b" strings (the older tokenizer.json form), if no token has a space."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    merges = d["model"]["merges"]
    if all(" " not in a and " " not in b for a, b in merges):
        d["model"]["merges"] = [a + " " + b for a, b in merges]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(d, f, ensure_ascii=False)
        return True
    return False


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":  # as gen_fixtures.py: deterministic set order
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    with open(os.path.join(G.OUT, "corpus.jsonl"), encoding="utf-8") as f:
        corpus = [json.loads(l) for l in f]
    sub = corpus[::8]
    texts = [s for s in corpus[::3] if not G.has_surrogate(s)][:6000]
    os.makedirs(SYN, exist_ok=True)
    with open(os.path.join(SYN, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for s in sub:
            f.write(G.dump_line(s) + "\n")
    rng = random.Random(11)
    for name, tok in configs(texts).items():
        d = os.path.join(SYN, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "tokenizer.json")
        tok.save(path)
        legacy = legacy_merges(path) if name in ("bytelevel-noregex", "split-behaviours") else False
        st = G.record(os.path.join("synth", name), path, sub, rng)
        print(name, "legacy merges" if legacy else "", st, file=sys.stderr)


if __name__ == "__main__":
    main()
