"""The PyTorch side of the CUDA benchmark: Laya's DecisionModel (real laya package) on the same GPU.

  torch_bench.py make   --model large|mmbert --out DIR        # random full-size checkpoint
  torch_bench.py bench  --dir DIR --label L [--shapes ...] [--compile-shapes ...]
  torch_bench.py cold   --dir DIR                              # process start to first answer
  torch_bench.py acc    --dir DIR --out PREFIX                 # fp32 reference batch for bench_cuda --acc
  torch_bench.py floor  --model large|mmbert [--shapes ...]    # the encoder GEMMs alone on the vendor libraries

Eager = Laya's stock CUDA path: fp32 parameters under bf16 autocast, SDPA, padded batches.
Compiled = torch.compile(model, dynamic=True) on the same module.
"""
import argparse
import os
import statistics
import sys
import time

T_START = time.perf_counter()

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import laya_torch as lt  # noqa: E402


def timed(fn, reps):
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - a) * 1e3)
    return statistics.median(ts), min(ts)


def cmd_make(a):
    t = time.perf_counter()
    cfg = lt.encoder_config(a.model)
    with torch.device("cuda"):
        model = lt.decision_model(cfg)
    lt.randomize(model)
    lt.save_checkpoint(model, cfg, a.out)
    n = sum(p.numel() for p in model.parameters())
    print(f"MAKE {a.model}: {n:,} parameters -> {a.out} in {time.perf_counter() - t:.1f} s", flush=True)


def cmd_bench(a):
    model, cfg = lt.load_checkpoint(a.dir)
    vocab = cfg.vocab_size

    def run_shapes(fn, shapes, tag, reps_big=20, reps_small=50):
        for s in shapes:
            lens = lt.lengths_for(s)
            inp = lt.padded_batch(lens, vocab)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
                fn(*inp)
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                fn(*inp)
                torch.cuda.reset_peak_memory_stats()
                reps = reps_big if sum(lens) >= 8192 else reps_small
                med, mn = timed(lambda: fn(*inp), reps)
            peak = torch.cuda.max_memory_allocated() / 2**30
            print(f"TORCH {a.label} {tag:8s} {s:8s} rows {len(lens):3d} tokens {sum(lens):6d} "
                  f"median {med:8.3f} ms  min {mn:8.3f} ms  rows/s {len(lens) / (med / 1e3):9.1f}  "
                  f"peak {peak:.2f} GiB  first call {first:.1f} s", flush=True)

    if a.shapes:
        run_shapes(model, a.shapes.split(","), "eager")
    if a.compile_shapes:
        cm = torch.compile(model, dynamic=True)
        run_shapes(cm, a.compile_shapes.split(","), "compiled", reps_big=10, reps_small=30)


def cmd_cold(a):
    model, cfg = lt.load_checkpoint(a.dir)
    inp = lt.padded_batch([128], cfg.vocab_size)
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
        logits, act = model(*inp)
    v = float(logits[0, 0])
    print(f"COLD torch eager main_to_answer_s {time.perf_counter() - T_START:.2f} "
          f"(python start to here; logit0 {v:.4f})", flush=True)


def cmd_acc(a):
    """fp32 (no autocast, no TF32) outputs of the real model on a mixed batch, for bench_cuda --acc."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, cfg = lt.load_checkpoint(a.dir)
    g = torch.Generator().manual_seed(5)
    n = a.rows
    lens = [int(x) for x in torch.randint(32, 200, (n,), generator=g)]
    ks = [int(x) for x in torch.randint(2, 7, (n,), generator=g)]
    L, K = max(lens), max(ks)
    ids = torch.zeros(n, L, dtype=torch.long)
    mask = torch.zeros(n, L, dtype=torch.long)
    mpos = torch.zeros(n, K, dtype=torch.long)
    mmask = torch.zeros(n, K, dtype=torch.bool)
    qtype = torch.randint(0, 3, (n,), generator=g)
    for i, (l, k) in enumerate(zip(lens, ks)):
        ids[i, :l] = torch.randint(0, cfg.vocab_size, (l,), generator=g)
        mask[i, :l] = 1
        for j in range(k):
            mpos[i, j] = 1 + j * (l - 2) // k
            mmask[i, j] = True
    with torch.inference_mode():
        logits, act = model(*(t.cuda() for t in (ids, mask, mpos, mmask, qtype)))
    logits, act = logits.float().cpu(), act.float().cpu()
    row_start = np.cumsum([0] + lens).astype(np.int32)
    marker_start = np.cumsum([0] + ks).astype(np.int32)
    markers = np.concatenate([mpos[i, :k].numpy() for i, k in enumerate(ks)]).astype(np.int32)
    tokens = np.concatenate([ids[i, :l].numpy() for i, l in enumerate(lens)]).astype(np.int32)
    hdr = np.array([n, int(row_start[-1]), int(marker_start[-1])], dtype=np.int32)
    with open(a.out + ".batch.bin", "wb") as f:
        for arr in (hdr, row_start, qtype.numpy().astype(np.int32), marker_start, markers, tokens):
            f.write(arr.tobytes())
    ref = np.concatenate([np.concatenate([logits[i, :k].numpy() for i, k in enumerate(ks)]),
                          act.numpy().reshape(-1)]).astype(np.float32)
    with open(a.out + ".ref.bin", "wb") as f:
        f.write(ref.tobytes())
    print(f"ACC-REF {a.dir}: {n} rows, {int(row_start[-1])} tokens, {int(marker_start[-1])} markers", flush=True)


def cmd_floor(a):
    """The library floor of each shape: the encoder's four GEMMs of every layer (Wqkv, Wo, Wi,
    mlp.Wo; distinct random weights per layer, as a forward streams them) over the packed token
    count laya.c runs, and nothing else: bf16 on torch.matmul (cuBLASLt), fp8 on torch._scaled_mm
    with one scale per token and per output channel (laya.c's fp8 scheme). Replayed from a CUDA
    graph, so launch gaps are not counted. What laya.c adds beyond it is attention, norms, RoPE,
    the head and its fusions' costs; what it saves below it is its own GEMMs' doing."""
    d, n_layers, _, inter, _, _ = lt.SHAPES[a.model]
    dims = [(3 * d, d), (d, d), (2 * inter, d), (d, inter)]  # (N, K) per GEMM, in forward order
    g = torch.Generator(device="cuda").manual_seed(7)
    ws = [[torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g) * k ** -0.5 for n, k in dims]
          for _ in range(n_layers)]
    fp8 = hasattr(torch, "float8_e4m3fn") and torch.cuda.get_device_capability() >= (8, 9)
    if fp8:
        w8 = [[(w.float() / w.float().abs().amax(1, keepdim=True).clamp_min(1e-12) * 448).to(torch.float8_e4m3fn)
               for w in lw] for lw in ws]
        ws8 = [[torch.rand(1, n, device="cuda") * 1e-3 + 1e-3 for n, _ in dims] for _ in range(n_layers)]
    for s in a.shapes.split(","):
        m = sum(lt.lengths_for(s))
        mp = (m + 15) // 16 * 16  # _scaled_mm wants multiples of 16; laya.c's buckets are coarser
        flop = 2.0 * mp * sum(n * k for n, k in dims) * n_layers
        xs = {k: torch.randn(mp, k, device="cuda", dtype=torch.bfloat16, generator=g) for k in (d, inter)}
        outs = [torch.empty(mp, n, device="cuda", dtype=torch.bfloat16) for n, _ in dims]
        runs = [("bf16 cuBLASLt", lambda: [torch.matmul(xs[k], w.t(), out=outs[i])
                                           for lw in ws for i, (w, (_, k)) in enumerate(zip(lw, dims))])]
        if fp8:
            x8 = {k: v.to(torch.float8_e4m3fn) for k, v in xs.items()}
            sx = torch.rand(mp, 1, device="cuda") * 1e-2 + 1e-2

            def run8():
                for lw, ls in zip(w8, ws8):
                    for i, (w, sw, (_, k)) in enumerate(zip(lw, ls, dims)):
                        outs[i] = torch._scaled_mm(x8[k], w.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)
            runs.append(("fp8 _scaled_mm rowwise", run8))
        for tag, fn in runs:
            try:
                fn()
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    fn()
                med, mn = timed(graph.replay, 20 if mp >= 8192 else 50)
            except RuntimeError as e:  # an fp8 layout or scale mode this torch lacks: say so, go on
                print(f"FLOOR {a.model} {tag} {s}: not measured ({str(e).splitlines()[0][:120]})", flush=True)
                continue
            print(f"FLOOR {a.model} {tag:24s} {s:8s} tokens {m:6d} (as {mp}) median {med:8.3f} ms  min {mn:8.3f} ms  "
                  f"{flop / med * 1e-9:6.1f} TFLOP/s", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["make", "bench", "cold", "acc", "floor"])
    p.add_argument("--model", default="large")
    p.add_argument("--out")
    p.add_argument("--dir")
    p.add_argument("--label", default="")
    p.add_argument("--shapes", default="1x128,1x512,32x512,32x1024,mixed64")
    p.add_argument("--compile-shapes", default="")
    p.add_argument("--rows", type=int, default=48)
    a = p.parse_args()
    {"make": cmd_make, "bench": cmd_bench, "cold": cmd_cold, "acc": cmd_acc, "floor": cmd_floor}[a.cmd](a)


if __name__ == "__main__":
    main()
