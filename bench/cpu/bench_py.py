#!/usr/bin/env python3
"""The competitors of bench/cpu/run.sh: Python Laya's stock CPU path and ONNX Runtime on Laya's
ONNX export, timed on the same shapes as laya.c (forward pass only, same token ids).

    bench_py.py torch  CKPT  --shapes 1x128,1x512,8x256,32xmixed --threads 2 [--reps 3]
    bench_py.py export CKPT  OUT.onnx            (also writes OUT.int8.onnx)
    bench_py.py ort    ONNX  --shapes ... --threads 2 [--reps 3]
    bench_py.py cold   torch|ort CKPT [ONNX]     (load + answer one question, for cold start)

Each timing mode prints JSON lines {"engine", "shape", "rows", "tokens", "real_tokens",
"best_ms", "median_ms"} and, last, {"peak_rss_mb"} of its own process.

The stock path is `laya.Agent(path, device="cpu").model` called as Laya calls it (torch.no_grad,
fp32, rows right-padded to the longest row of the batch with an attention mask, as
collate_items does). The ONNX graph follows the export Laya documents (opset 18, dynamic batch /
sequence / marker axes, constant folding; int8 = onnxruntime quantize_dynamic on MatMul with
per-channel QInt8 weights).
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time


def shapes_of(spec):
    out = []
    for s in spec.split(","):
        rows, length = s.split("x", 1)
        rows = int(rows)
        if length == "mixed":  # lengths spread evenly over 100..512
            lens = [100 + (r * 412 // (rows - 1) if rows > 1 else 0) for r in range(rows)]
        else:
            lens = [int(length)] * rows
        out.append((s, lens))
    return out


def token_ids(lens, vocab):
    """The ids bench_ckpt.c uses: a fixed formula, CLS-like id 1 first, 4 markers per row."""
    rows = []
    for r, n in enumerate(lens):
        rows.append([(r * 1000003 + t * 7919 + 17) % vocab for t in range(n)])
    return rows


def padded(lens, vocab, np):
    L = max(lens)
    ids = np.zeros((len(lens), L), dtype=np.int64)
    mask = np.zeros((len(lens), L), dtype=np.int64)
    for r, row in enumerate(token_ids(lens, vocab)):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    marker_pos = np.array([[2, 5, 8, 11]] * len(lens), dtype=np.int64)
    marker_mask = np.ones((len(lens), 4), dtype=bool)
    qtype = np.zeros((len(lens),), dtype=np.int64)
    return ids, mask, marker_pos, marker_mask, qtype


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


WARM_LENS = [128]  # each engine's process runs one 1 x 128 call before timing anything: the first
                  # call pays one-time costs (weights paged in, kernel setup) that are not a shape's


def timed(fn, reps):
    """(best, median) wall ms of fn; timed.cpu_ms: the least process CPU ms of a sample (all threads)."""
    t, c = time.perf_counter(), time.process_time()
    fn()  # first call of the shape: allocator and caches (kept as a sample when it is slow anyway)
    first = (time.perf_counter() - t) * 1e3
    timed.cpu_ms = (time.process_time() - c) * 1e3
    if first > 3000:  # a slow shape: the first call is the sample (keeps the whole run within an hour)
        return first, first
    times, cpus = [], []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
        cpus.append((time.process_time() - c) * 1e3)
    timed.cpu_ms = min(cpus)
    return min(times), statistics.median(times)


def run_torch(a):
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    import laya
    agent = laya.Agent(a.path, device="cpu")
    model = agent.model
    model.eval()
    vocab = model.encoder.config.vocab_size
    with torch.no_grad():
        model(*[torch.from_numpy(x) for x in padded(WARM_LENS, vocab, np)])
    for name, lens in shapes_of(a.shapes):
        arrs = [torch.from_numpy(x) for x in padded(lens, vocab, np)]

        def fwd():
            with torch.no_grad():
                model(*arrs)
        best, med = timed(fwd, a.reps)
        print(json.dumps({"engine": "pytorch fp32", "shape": name, "rows": len(lens),
                          "tokens": len(lens) * max(lens), "real_tokens": sum(lens),
                          "best_ms": best, "median_ms": med, "cpu_ms": timed.cpu_ms}), flush=True)
    print(json.dumps({"engine": "pytorch fp32", "peak_rss_mb": peak_rss_mb()}), flush=True)


def run_export(a):
    import torch
    import laya
    agent = laya.Agent(a.path, device="cpu")
    model = agent.model.eval()
    B, S, K = 2, 17, 3  # distinct sizes > 1 so no axis is specialised
    inputs = (torch.randint(5, 100, (B, S)), torch.ones(B, S, dtype=torch.long),
              torch.tensor([[1, 5, 9]] * B), torch.ones(B, K, dtype=torch.bool),
              torch.zeros(B, dtype=torch.long))
    names = ["input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype"]
    axes = {"input_ids": {0: "batch_size", 1: "seq_len"}, "attention_mask": {0: "batch_size", 1: "seq_len"},
            "marker_pos": {0: "batch_size", 1: "num_markers"}, "marker_mask": {0: "batch_size", 1: "num_markers"},
            "qtype": {0: "batch_size"}, "logits": {0: "batch_size", 1: "num_markers"},
            "act_logits": {0: "batch_size"}}
    # Traced with autograd on (parameters require grad), so nn.TransformerEncoderLayer takes its
    # traceable path rather than the fused inference kernel, which ONNX has no operator for.
    torch.onnx.export(model, inputs, a.out, input_names=names, output_names=["logits", "act_logits"],
                      dynamic_axes=axes, opset_version=18, do_constant_folding=True, dynamo=False)
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    m = onnx.load(a.out)
    del m.graph.value_info[:]
    tmp = a.out + ".noinfo.onnx"
    onnx.save(m, tmp)
    root, ext = os.path.splitext(a.out)
    quantize_dynamic(tmp, root + ".int8" + ext, op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8,
                     per_channel=True)
    os.remove(tmp)
    print(json.dumps({"exported": a.out, "int8": root + ".int8" + ext}))


def session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_ort(a):
    import numpy as np
    sess = session(a.path, a.threads)
    engine = "onnxruntime int8" if ".int8." in os.path.basename(a.path) else "onnxruntime fp32"
    vocab = a.vocab
    names = ["input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype"]
    sess.run(["logits", "act_logits"], dict(zip(names, padded(WARM_LENS, vocab, np))))
    for name, lens in shapes_of(a.shapes):
        ids, mask, mp, mm, qt = padded(lens, vocab, np)
        feed = {"input_ids": ids, "attention_mask": mask, "marker_pos": mp, "marker_mask": mm, "qtype": qt}
        best, med = timed(lambda: sess.run(["logits", "act_logits"], feed), a.reps)
        print(json.dumps({"engine": engine, "shape": name, "rows": len(lens), "tokens": len(lens) * max(lens),
                          "real_tokens": sum(lens), "best_ms": best, "median_ms": med}), flush=True)
    print(json.dumps({"engine": engine, "peak_rss_mb": peak_rss_mb()}), flush=True)


QUESTION = {"intent": {"type": "choice", "instructions": "What does the customer want?",
                       "criteria": {"refund": "money back", "help": None, "other": None}}}
STATE = {"request": "I was charged twice for the same order, please refund the second payment."}


def run_cold(a):
    if a.engine == "torch":
        import torch
        torch.set_num_threads(a.threads)
        import laya
        agent = laya.Agent(a.path, device="cpu")
    else:
        from laya.onnx_agent import ONNXAgent
        agent = ONNXAgent(a.path, onnx_path=a.onnx)
    agent.predict(STATE, QUESTION)
    print(json.dumps({"engine": a.engine, "cold_done": True, "peak_rss_mb": peak_rss_mb()}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["torch", "export", "ort", "cold"])
    ap.add_argument("rest", nargs="+")
    ap.add_argument("--shapes", default="1x128,1x512,8x256,32xmixed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=50368)
    a = ap.parse_args()
    if a.mode == "export":
        a.path, a.out = a.rest[0], a.rest[1]
        run_export(a)
    elif a.mode == "cold":
        a.engine, a.path = a.rest[0], a.rest[1]
        a.onnx = a.rest[2] if len(a.rest) > 2 else None
        run_cold(a)
    else:
        a.path = a.rest[0]
        (run_torch if a.mode == "torch" else run_ort)(a)


if __name__ == "__main__":
    sys.exit(main())
