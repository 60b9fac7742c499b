#!/usr/bin/env python3
"""Debug aid for the cpu-ref backend: a small random-weight Laya DecisionModel and its forward
outputs, written by running the real modules (laya.common.DecisionModel over transformers'
ModernBertModel, SDPA, fp32 on CPU).

Writes OUT/{rl_agent_config.json, encoder/config.json, model.safetensors, rows.jsonl}; each row of
rows.jsonl is {"ids", "markers", "qtype", "logits", "act_logits"} like the parity fixtures.
With --ckpt DIR, the model is instead loaded from a Laya checkpoint (laya.load, CPU, fp32) and
only OUT/rows.jsonl is written (random ids below the encoder's vocab size).
Not a fixture generator (tools/ref/ owns those): use it to chase a numeric difference.

  /opt/layaref/bin/python tools/debug/ref_forward_data.py OUT [--local-window 16] [--mmbert]
  /opt/layaref/bin/python tools/debug/ref_forward_data.py OUT --ckpt CKPT_DIR [--max-len 300]
  build/tests/cpu/test_ref_parity CKPT_DIR OUT/rows.jsonl
"""
import argparse
import json
import math
import os

import torch
from safetensors.torch import save_file
from transformers import AutoModel, ModernBertConfig

from laya.common import DecisionModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--intermediate", type=int, default=192)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--local-window", type=int, default=128)
    ap.add_argument("--mmbert", action="store_true", help="local theta 160000 (else 10000)")
    ap.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ckpt", help="load this Laya checkpoint instead of making a model")
    ap.add_argument("--max-len", type=int, default=300, help="longest row")
    ap.add_argument("--double", action="store_true",
                    help="also write rows64.jsonl: the same rows computed in float64 (the exact answer "
                         "both fp32 implementations approximate)")
    a = ap.parse_args()
    if a.ckpt:
        import laya
        agent = laya.load(a.ckpt, device="cpu")
        model = agent.model.eval()
        os.makedirs(a.out, exist_ok=True)
        write_rows(model, a.out, model.encoder.config.vocab_size, a.seed, a.max_len)
        if a.double:
            write_rows(model.double(), a.out, model.encoder.config.vocab_size, a.seed, a.max_len, "rows64.jsonl")
        return

    torch.manual_seed(a.seed)
    local_theta = 160000.0 if a.mmbert else 10000.0
    ecfg = ModernBertConfig(
        vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
        num_attention_heads=a.hidden // 64, intermediate_size=a.intermediate,
        local_attention=a.local_window, global_attn_every_n_layers=3,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": local_theta}})
    enc = AutoModel.from_config(ecfg, attn_implementation="sdpa")
    model = DecisionModel(enc, head_layers=2, n_act=2).eval()
    # Larger-than-default weights so every part of the network visibly moves the outputs.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and "emb" not in name:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
            elif "emb" in name:
                p.normal_(0.0, 1.0)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.1)
            else:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
        dt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[a.dtype]
        for p in model.parameters():  # round through the stored dtype so both sides use the same values
            p.copy_(p.to(dt).float())

    os.makedirs(os.path.join(a.out, "encoder"), exist_ok=True)
    ecfg.save_pretrained(os.path.join(a.out, "encoder"))
    with open(os.path.join(a.out, "rl_agent_config.json"), "w") as f:
        json.dump({"encoder": "debug", "head_layers": 2, "act_costs": {"ask": 0.1}}, f)
    sd = {k: v.detach().to(dt).contiguous() for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(a.out, "model.safetensors"))

    write_rows(model, a.out, a.vocab, a.seed, a.max_len)


def write_rows(model, out, vocab, seed, max_len, name="rows.jsonl"):
    g = torch.Generator().manual_seed(seed + 1)
    specs = [(7, 2, 0), (1, 1, 2), (40, 5, 1), (130, 3, 0), (max_len, 12, 2), (66, 1, 1), (65, 2, 0)]
    rows = []
    for n, k, qt in specs:
        ids = torch.randint(3, vocab, (n,), generator=g).tolist()
        ids[0] = 1
        marks = sorted(torch.randperm(n, generator=g)[:k].tolist()) if n > 1 else [0]
        rows.append((ids, marks, qt))
    L = max(len(r[0]) for r in rows)
    K = max(len(r[1]) for r in rows)
    N = len(rows)
    input_ids = torch.zeros(N, L, dtype=torch.long)
    att = torch.zeros(N, L, dtype=torch.long)
    mpos = torch.zeros(N, K, dtype=torch.long)
    mmask = torch.zeros(N, K, dtype=torch.bool)
    qtype = torch.tensor([r[2] for r in rows])
    for i, (ids, marks, _) in enumerate(rows):
        input_ids[i, :len(ids)] = torch.tensor(ids)
        att[i, :len(ids)] = 1
        mpos[i, :len(marks)] = torch.tensor(marks)
        mmask[i, :len(marks)] = True
    with torch.inference_mode():
        logits, act = model(input_ids, att, mpos, mmask, qtype)
    with open(os.path.join(out, name), "w") as f:
        for i, (ids, marks, qt) in enumerate(rows):
            f.write(json.dumps({"ids": ids, "markers": marks, "qtype": qt,
                                "logits": logits[i, :len(marks)].tolist(),
                                "act_logits": act[i].tolist()}) + "\n")
    print("wrote", os.path.join(out, name), "rows", N)


if __name__ == "__main__":
    main()
