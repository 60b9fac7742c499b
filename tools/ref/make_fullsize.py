#!/usr/bin/env python3
"""Write a full-size Laya checkpoint with random weights, for benchmarks (never committed).

    make_fullsize.py OUTDIR --family modernbert-large|mmbert-base [--dtype f16|bf16|f32] [--check]

The layout is Laya's (rl_agent_config.json, model.safetensors, encoder/config.json, tokenizer/),
with the real encoder shapes and the fixture tokenizers (their ids are all inside the real vocab
sizes, so every request the tokenizer can produce is valid for the big embedding tables):

  modernbert-large  hidden 1024, 28 layers, 16 heads, intermediate 2624, vocab 50368,
                    thetas 160000 / 10000 (transformers 4.x config), max_len 512 / head_max_len 192,
                    tokenizer modernbert-mini; 421,293,827 parameters
  mmbert-base       hidden 768, 22 layers, 12 heads, intermediate 1152, vocab 256000,
                    thetas 160000 / 160000 (transformers 5.x config), max_len 1024 / head_max_len 256,
                    tokenizer mmbert-mini; 321,908,995 parameters

Tensor names and shapes come from laya's own `build_model`, built on the meta device so nothing
of full size is allocated there; each tensor is then drawn from a seeded generator straight into
the target dtype. `--check` loads the result with laya.Agent on CPU and answers one question.
"""
import argparse
import copy
import json
import math
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_checkpoints as mc  # noqa: E402

FAMILIES = {
    "modernbert-large": {
        "base": "modernbert-tiny",
        "params": 421293827,
        "encoder": {"hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                    "intermediate_size": 2624, "vocab_size": 50368},
    },
    "mmbert-base": {
        "base": "mmbert-tiny",
        "params": 321908995,
        "encoder": {"hidden_size": 768, "num_hidden_layers": 22, "num_attention_heads": 12,
                    "intermediate_size": 1152, "vocab_size": 256000},
    },
}
DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--dtype", default=None, choices=sorted(DTYPES),
                    help="default: f16 for modernbert-large (as laya saves), bf16 for mmbert-base")
    ap.add_argument("--seed", type=int, default=mc.SEED)
    ap.add_argument("--check", action="store_true", help="load with laya.Agent on CPU and run one predict")
    args = ap.parse_args()

    import torch
    from safetensors.torch import save_file
    from laya.common import build_model

    fam = FAMILIES[args.family]
    spec = copy.deepcopy(mc.SPECS[fam["base"]])
    dtype_name = DTYPES[args.dtype] if args.dtype else spec["dtype"]
    d = args.outdir
    if os.path.exists(os.path.join(d, "model.safetensors")):
        sys.exit("%s already holds a checkpoint; remove it first" % d)
    os.makedirs(os.path.join(d, "encoder"), exist_ok=True)
    if os.path.isdir(os.path.join(d, "tokenizer")):
        shutil.rmtree(os.path.join(d, "tokenizer"))
    shutil.copytree(os.path.join(mc.TOKENIZERS, spec["tokenizer"]), os.path.join(d, "tokenizer"))

    if "encoder_config" in spec:
        enc = spec["encoder_config"]
        enc.update(fam["encoder"])
        mc.write_json(os.path.join(d, "encoder", "config.json"), enc, sort_keys=True)
    else:
        from transformers import ModernBertConfig
        kw = spec["encoder_kwargs"]
        kw.update(fam["encoder"])
        ModernBertConfig(**kw).save_pretrained(os.path.join(d, "encoder"))
    cfg = spec["rl_agent_config"]
    mc.write_json(os.path.join(d, "rl_agent_config.json"), cfg)

    # Shapes only: the encoder is built on the meta device (the small head is materialised empty).
    with torch.device("meta"):
        model = build_model(cfg, encoder_dir=os.path.join(d, "encoder"), pretrained=False)
    n_params = sum(p.numel() for p in model.parameters())
    print("%s: %d parameters (expected %d)" % (args.family, n_params, fam["params"]))
    if n_params != fam["params"]:
        sys.exit("parameter count mismatch")

    scales = mc.INIT[fam["base"]]
    params = dict(model.named_parameters())
    dtype = getattr(torch, dtype_name)
    g = torch.Generator().manual_seed(args.seed)
    state = {}
    for name, t in model.state_dict().items():
        shape = tuple(t.shape)
        if name not in params:                       # buffers: the temperature vector
            state[name] = torch.ones(shape, dtype=dtype)
            continue
        if name.endswith("tok_embeddings.weight"):
            v = torch.randn(shape, generator=g).mul_(scales["emb"])
        elif name.startswith("type_emb."):
            v = torch.randn(shape, generator=g).mul_(scales["type_emb"])
        elif len(shape) == 1 and name.endswith("weight"):
            v = torch.randn(shape, generator=g).mul_(scales["norm"]).add_(1.0)
        elif len(shape) == 1:
            v = torch.randn(shape, generator=g).mul_(scales["bias"])
        else:
            gain = {"scorer.3.weight": scales["scorer_out"], "act_head.2.weight": scales["act_out"]}.get(name, scales["gain"])
            v = torch.randn(shape, generator=g).mul_(gain / math.sqrt(shape[-1]))
        state[name] = v.to(dtype).contiguous()
        del v
    path = os.path.join(d, "model.safetensors")
    save_file(state, path, metadata={"format": "pt"})
    os.chmod(path, 0o644)
    print("wrote %s (%s, %.1f MB)" % (path, dtype_name, os.path.getsize(path) / 1e6))
    del state, model

    if args.check:
        import laya
        agent = laya.Agent(d, device="cpu")
        r = agent.predict("The parcel arrived broken; I want a refund.",
                          {"intent": {"type": "choice", "instructions": "What does the customer want?",
                                      "criteria": ["refund", "replacement", "information"]}})
        print(json.dumps(r, ensure_ascii=False))


if __name__ == "__main__":
    main()
