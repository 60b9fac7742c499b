#!/usr/bin/env python3
"""A full-size ModernBERT-large-shaped checkpoint from the tiny fixture, with no torch or numpy: for
timing what depends on the sizes only (opening, packing, the pack cache), not for accuracy.

    python3 tools/scale_fixture_ckpt.py tests/fixtures/ckpt/modernbert-tiny OUT_DIR
    python3 tools/scale_fixture_ckpt.py tests/fixtures/ckpt/mmbert-tiny OUT_DIR mmbert-base

The fixture's tensors are scaled to d 1024, 28 layers, 16 heads, I 2624, V 50368 (F16, 803 MiB) and
filled with one tiled block of N(0, 0.03) values; configs and tokenizer are the fixture's (its ids fit
the larger vocabulary). tools/make_random_ckpt.py makes properly initialised ones (it needs torch).
"""
import json, struct, random, shutil, os, sys
src, dst = sys.argv[1], sys.argv[2]
preset = sys.argv[3] if len(sys.argv) > 3 else "modernbert-large"
d, I, L, H, V = {"modernbert-large": (1024, 2624, 28, 16, 50368),
                 "mmbert-base": (768, 1152, 22, 12, 256000)}[preset]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
os.remove(os.path.join(dst, "SHA256SUMS"))
cfg = json.load(open(os.path.join(src, "encoder/config.json")))
d0, L0 = cfg["hidden_size"], cfg["num_hidden_layers"]
cfg.update(hidden_size=d, intermediate_size=I, num_hidden_layers=L, num_attention_heads=H, vocab_size=V)
if "layer_types" in cfg:
    g = cfg.get("global_attn_every_n_layers", 3)
    cfg["layer_types"] = ["full_attention" if j % g == 0 else "sliding_attention" for j in range(L)]
json.dump(cfg, open(os.path.join(dst, "encoder/config.json"), "w"), indent=2)
f = open(os.path.join(src, "model.safetensors"), "rb")
n = struct.unpack("<Q", f.read(8))[0]
h = json.loads(f.read(n))
h.pop("__metadata__", None)
def shape(name, s):
    if "mlp.Wi" in name: return [2 * I, d]
    if "mlp.Wo" in name: return [d, I]
    if "Wqkv" in name or "in_proj_weight" in name: return [3 * d, d]
    if "in_proj_bias" in name: return [3 * d]
    if "linear1.weight" in name: return [4 * d, d]
    if "linear1.bias" in name: return [4 * d]
    if "linear2.weight" in name: return [d, 4 * d]
    if "tok_embeddings" in name: return [V, d]
    if name == "act_head.0.weight": return [s[0], d + 4]
    return [d if x == d0 else x for x in s]
names = []
for k, v in h.items():
    if k.startswith("encoder.layers."):
        i = int(k.split(".")[2])
        if i not in (0, L0 - 1): continue
        rest = k.split(".", 3)[3]
        for j in range(L):
            if (i == 0) != (j == 0): continue
            names.append(("encoder.layers.%d.%s" % (j, rest), shape(k, v["shape"])))
    else:
        names.append((k, shape(k, v["shape"])))
random.seed(1)
block = struct.pack("<%de" % (1 << 20), *[random.gauss(0, 0.03) for _ in range(1 << 20)])  # 2 MiB
hdr, off = {}, 0
for k, s in names:
    nb = 2
    for x in s: nb *= x
    hdr[k] = {"dtype": "F16", "shape": s, "data_offsets": [off, off + nb]}
    off += nb
hj = json.dumps(hdr).encode()
hj += b" " * ((8 - len(hj) % 8) % 8)
with open(os.path.join(dst, "model.safetensors"), "wb") as g:
    g.write(struct.pack("<Q", len(hj)))
    g.write(hj)
    left = off
    while left > 0:
        k = min(left, len(block))
        g.write(block[:k])
        left -= k
print("wrote", off >> 20, "MiB")
