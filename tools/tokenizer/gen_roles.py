#!/usr/bin/env python3
"""Token roles as transformers sees them (Laya reads tok.cls_token_id & co.), for the tokenizers
whose roles come from tokenizer_config.json alone: tests/fixtures/tokenizer/roles.json.

    /opt/layaref/bin/python tools/tokenizer/gen_roles.py

Gemma 3 is left out: transformers' GemmaTokenizer class adds defaults of its own (mask_token
"<mask>") that are not in the files; laya.c takes roles from tokenizer_config.json only.
"""
import json
import os

from transformers import AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRS = {"llama3": os.path.join(ROOT, "..", "shared", "tokenizers", "llama3"),
        "modernbert-mini": os.path.join(ROOT, "tests", "fixtures", "tokenizers", "modernbert-mini"),
        "mmbert-mini": os.path.join(ROOT, "tests", "fixtures", "tokenizers", "mmbert-mini")}


def main():
    out = {}
    for name, d in DIRS.items():
        t = AutoTokenizer.from_pretrained(d)
        none = lambda v: -1 if v is None else v  # noqa: E731
        out[name] = {"cls_id": none(t.cls_token_id), "sep_id": none(t.sep_token_id), "pad_id": none(t.pad_token_id),
                     "mask_id": none(t.mask_token_id), "unk_id": none(t.unk_token_id), "mask_token": t.mask_token}
    with open(os.path.join(ROOT, "tests", "fixtures", "tokenizer", "roles.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
