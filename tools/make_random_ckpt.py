#!/usr/bin/env python3
"""Full-size Laya checkpoints with random weights, for benchmarks and accuracy checks.

    /opt/layaref/bin/python tools/make_random_ckpt.py modernbert-large OUT_DIR [--dtype float16] [--seed N]
    /opt/layaref/bin/python tools/make_random_ckpt.py mmbert-base OUT_DIR

Writes Laya 0.4.15's exact layout (rl_agent_config.json, encoder/config.json, model.safetensors,
tokenizer/, SHA256SUMS) with the real architectures of Laya's published checkpoints:

    modernbert-large  ("english"):      d 1024, 28 layers, 16 heads, I 2624, V 50368, thetas 160000/10000
    mmbert-base       ("multilingual"): d 768, 22 layers, 12 heads, I 1152, V 256000, thetas 160000/160000

The model is built by laya's own build_model (so names and shapes are Laya's state_dict) and
initialised like the tiny fixtures (tools/ref/make_checkpoints.py: init_params). The tokenizers
are the fixture tokenizers (tests/fixtures/tokenizers/{modernbert-mini,mmbert-mini}): their ids
fit the full vocabularies and their byte-level BPE / Gemma-style behaviour matches the family;
only the vocabulary is small, which changes token counts per text but not the model's cost per
token. The result loads in laya (checked unless --no-check) and in laya.c.

The files are large (F16: ~840 MB and ~640 MB); write them outside the repository.
"""
import argparse
import copy
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "ref"))
import make_checkpoints as mc  # noqa: E402  (the fixture generator: specs, init, digests)

SIZES = {
    "modernbert-large": {
        "base": "modernbert-tiny",
        "encoder": {"hidden_size": 1024, "intermediate_size": 2624, "num_hidden_layers": 28,
                    "num_attention_heads": 16, "vocab_size": 50368},
    },
    "mmbert-base": {
        "base": "mmbert-tiny",
        "encoder": {"hidden_size": 768, "intermediate_size": 1152, "num_hidden_layers": 22,
                    "num_attention_heads": 12, "vocab_size": 256000},
    },
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=sorted(SIZES))
    ap.add_argument("out", help="the checkpoint directory to write (replaced if it exists)")
    ap.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"],
                    help="tensor dtype in model.safetensors (Laya's save_checkpoint writes float16)")
    ap.add_argument("--seed", type=int, default=mc.SEED)
    ap.add_argument("--no-check", action="store_true", help="skip loading the result with laya")
    a = ap.parse_args()

    size = SIZES[a.model]
    spec = copy.deepcopy(mc.SPECS[size["base"]])
    spec["dtype"] = a.dtype
    if "encoder_config" in spec:
        spec["encoder_config"].update(size["encoder"])
    else:
        spec["encoder_kwargs"].update(size["encoder"])

    # mc.build writes <root>/<name>; build under a scratch name next to OUT, then move it.
    out = os.path.abspath(a.out)
    root = os.path.dirname(out)
    os.makedirs(root, exist_ok=True)
    name = "." + os.path.basename(out) + ".partial"
    mc.SPECS[name] = spec
    mc.INIT[name] = mc.INIT[size["base"]]
    seed_before = mc.SEED
    mc.SEED = a.seed - sum(map(ord, name))  # build() seeds with SEED + sum(ord(name))
    try:
        d = mc.build(name, root)
    finally:
        mc.SEED = seed_before
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.rename(d, out)
    if not a.no_check:
        import laya
        laya.Agent(out, device="cpu")
        print("loads in laya:", out)


if __name__ == "__main__":
    main()
