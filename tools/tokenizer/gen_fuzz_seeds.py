#!/usr/bin/env python3
"""Tiny tokenizer.json seeds (one per pipeline of gen_synthetic.py, plus the four real shapes
with a few-dozen-token vocabulary) for tests/fuzz/fuzz_tokenizer_load.

    /opt/layaref/bin/python tools/tokenizer/gen_fuzz_seeds.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_synthetic as S  # noqa: E402

OUT = os.path.join(S.G.ROOT, "tests", "fuzz", "seeds", "tokenizer_load")
TEXTS = ["Hello world, it's 2024!", "ça marche très bien", "日本語のテキスト", "  spaced\tout\n\n",
         "[MASK] <mask> hello world", "Ünïcode 12345 x,y,z", "abc abd abe", "😀 emoji"] * 3


def main():
    os.makedirs(OUT, exist_ok=True)
    real = {"gemma3": os.path.join(S.G.ROOT, "..", "shared", "tokenizers", "gemma3", "tokenizer.json"),
            "llama3": os.path.join(S.G.ROOT, "..", "shared", "tokenizers", "llama3", "tokenizer.json"),
            "modernbert": os.path.join(S.G.ROOT, "tests", "fixtures", "tokenizers", "modernbert-mini", "tokenizer.json"),
            "mmbert": os.path.join(S.G.ROOT, "tests", "fixtures", "tokenizers", "mmbert-mini", "tokenizer.json")}
    for name, path in real.items():
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        m = d["model"]
        merges = m["merges"][:24]
        keep = set()
        for mg in merges:
            a, b = mg if isinstance(mg, list) else mg.split(" ")
            keep.update([a, b, a + b])
        vocab = {k: v for k, v in m["vocab"].items() if k in keep or v < 40 or k.startswith("<0x")}
        m["vocab"], m["merges"] = vocab, merges
        d["added_tokens"] = d["added_tokens"][:12]
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(d, f, ensure_ascii=False)
    for name, tok in S.configs(TEXTS).items():
        tok.save(os.path.join(OUT, name + ".json"))
    print(sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
