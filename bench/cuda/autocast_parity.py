"""How far Laya's own 16-bit autocast moves probabilities on the parity fixtures.

  python bench/cuda/autocast_parity.py tests/fixtures/ckpt/modernbert-tiny tests/fixtures/parity/modernbert-tiny/rows.jsonl

Runs the real laya 0.4.15 DecisionModel on every fixture row in fp32 and under torch autocast
(bf16 and fp16; on CPU unless --device cuda) and prints max |dp| and argmax agreement against fp32,
the same statistics tests/cuda/test_cuda_parity.c prints for laya.c's CUDA backend.
"""
import argparse
import json

import torch


def rows_of(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                out.extend(d["rows"] if "rows" in d else [d])
    return out


def run(model, rows, device, dtype):
    logits, acts = [], []
    for r in rows:
        ids = torch.tensor([r["ids"]], device=device)
        mask = torch.ones_like(ids)
        mpos = torch.tensor([r["markers"]], device=device)
        mmask = torch.ones_like(mpos, dtype=torch.bool)
        qt = torch.tensor([r["qtype"]], device=device)
        with torch.inference_mode(), torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            lg, act = model(ids, mask, mpos, mmask, qt)
        logits.append(lg.float()[0].cpu())
        acts.append(act.float()[0].cpu())
    return logits, acts


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ckpt")
    p.add_argument("rows")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    import laya
    agent = laya.load(a.ckpt, device=a.device) if "device" in laya.load.__code__.co_varnames else laya.load(a.ckpt)
    model = agent.model.float().to(a.device).eval()
    rows = rows_of(a.rows)
    ref_l, ref_a = run(model, rows, a.device, None)
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        try:
            l, ac = run(model, rows, a.device, dt)
        except RuntimeError as e:  # fp16 autocast may be missing on some CPU builds
            print(f"{a.ckpt} laya autocast {name}: not available ({e})")
            continue
        max_dp = max((torch.softmax(x, -1) - torch.softmax(y, -1)).abs().max().item() for x, y in zip(ref_l, l))
        max_da = max((torch.softmax(x, -1) - torch.softmax(y, -1)).abs().max().item() for x, y in zip(ref_a, ac))
        same = sum(int(x.argmax() == y.argmax()) for x, y in zip(ref_l, l))
        print(f"{a.ckpt} laya {a.device} autocast {name} vs fp32: questions {len(rows)}, argmax same {same} "
              f"({100.0 * same / len(rows):.2f}%), max |dp| {max_dp:.5f}, max |d act p| {max_da:.5f}")


if __name__ == "__main__":
    main()
