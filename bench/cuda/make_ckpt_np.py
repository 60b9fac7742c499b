#!/usr/bin/env python3
"""A full-size ModernBERT-large Laya checkpoint with random weights, from numpy alone.

    python3 bench/cuda/make_ckpt_np.py OUT_DIR [--seed N]

For the GPU machine, which has numpy but not the laya package that tools/make_random_ckpt.py
builds its model with. The layout is Laya's (rl_agent_config.json, encoder/config.json,
model.safetensors, tokenizer/), taken from the tiny fixture tests/fixtures/ckpt/modernbert-tiny:
its configs with the encoder sizes of Laya's `english` checkpoint (d 1024, 28 layers, 16 heads,
I 2624, V 50368), its tokenizer (ids fit the full vocabulary), and every tensor of its
model.safetensors at the full size, F16, matrices N(0, 0.02), norm weights 1, biases 0. Enough for
timings (bench_first); accuracy figures use the torch-built checkpoints.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "..", "tests", "fixtures", "ckpt", "modernbert-tiny")
D, LAYERS, HEADS, INTER, VOCAB = 1024, 28, 16, 2624, 50368


def shape_of(name, tiny_shape):
    """The full-size shape of a tensor of the tiny checkpoint, by its name."""
    if name.endswith("tok_embeddings.weight"):
        return [VOCAB, D]
    if ".attn.Wqkv." in name or name.endswith("in_proj_weight"):
        return [3 * D, D]
    if name.endswith("in_proj_bias"):
        return [3 * D]
    if ".mlp.Wi." in name:
        return [2 * INTER, D]
    if ".mlp.Wo." in name:
        return [D, INTER]
    if name.endswith("linear1.weight"):
        return [4 * D, D]
    if name.endswith("linear1.bias"):
        return [4 * D]
    if name.endswith("linear2.weight"):
        return [D, 4 * D]
    if name.startswith("act_head.0.weight"):
        return [tiny_shape[0], D + 4]
    if name.startswith("act_head") or name == "temperature" or name == "scorer.3.bias":
        return tiny_shape
    if name == "type_emb.weight":
        return [3, D]
    if name == "scorer.3.weight":
        return [1, D]
    if len(tiny_shape) == 2:
        return [D, D]
    return [D]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    with open(os.path.join(TINY, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        tiny_data = f.read()
    os.makedirs(os.path.join(a.out, "encoder"), exist_ok=True)
    shutil.copytree(os.path.join(TINY, "tokenizer"), os.path.join(a.out, "tokenizer"), dirs_exist_ok=True)
    shutil.copy(os.path.join(TINY, "rl_agent_config.json"), a.out)
    with open(os.path.join(TINY, "encoder", "config.json")) as f:
        enc = json.load(f)
    enc.update(hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=INTER,
               vocab_size=VOCAB)
    with open(os.path.join(a.out, "encoder", "config.json"), "w") as f:
        json.dump(enc, f, indent=2)
    names = sorted(k for k in header if k != "__metadata__")
    layer_names = [k for k in names if k.startswith("encoder.layers.0.") or k.startswith("encoder.layers.1.")]
    full = [k for k in names if not k.startswith("encoder.layers.")]
    for i in range(LAYERS):
        src = "encoder.layers.0." if i == 0 else "encoder.layers.1."
        full += [f"encoder.layers.{i}." + k[len(src):] for k in layer_names if k.startswith(src)]
    tensors, offset, meta = [], 0, {"__metadata__": {"format": "pt"}}
    for k in sorted(full):
        tiny_key = k if not k.startswith("encoder.layers.") else (
            "encoder.layers.0." if k.startswith("encoder.layers.0.") else "encoder.layers.1.") + k.split(".", 3)[3]
        shp = shape_of(k, header[tiny_key]["shape"])
        if k == "temperature":
            s, e = header[k]["data_offsets"]
            arr = np.frombuffer(tiny_data[s:e], dtype=np.float16).copy()
        elif len(shp) == 1 and ("norm" in k or k.startswith("scorer.0.")) and k.endswith("weight"):
            arr = np.ones(shp, dtype=np.float16)
        elif len(shp) == 1:
            arr = np.zeros(shp, dtype=np.float16)
        else:
            arr = (rng.standard_normal(shp, dtype=np.float32) * 0.02).astype(np.float16)
        b = arr.tobytes()
        meta[k] = {"dtype": "F16", "shape": shp, "data_offsets": [offset, offset + len(b)]}
        tensors.append(b)
        offset += len(b)
    hdr = json.dumps(meta).encode()
    hdr += b" " * ((8 - len(hdr) % 8) % 8)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for b in tensors:
            f.write(b)
    print(f"wrote {a.out}: {len(full)} tensors, {offset / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
