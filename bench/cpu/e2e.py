#!/usr/bin/env python3
"""End-to-end timing (request JSON in, answer out: tokenize, forward, decode) of laya.c's
laya_predict (bench/cpu/e2e.c) against the other Laya runtimes on the same requests, one engine
per process.

    python3 bench/cpu/e2e.py --build build --model large=CKPT [--model mmbert=CKPT] [--threads 8]
        [--reps 5] [--rounds 1] [--out DIR] [--device cpu|cuda] [--skip ENGINE,...]

--device cpu (default), requests (per model; state lengths set with the checkpoint's own tokenizer):
  1q x 128   one choice question, ~128 tokens in all
  1q x 512   one choice question on a long state (truncated to max_len = 512 by both engines)
  3q x 300   three questions on one ~300-token state (Laya runs one row per question)
Engines: laya.c fp32 / bf16 / int8 (the checkpoint directory, kernel table chosen by CPUID; fp32 on an
AMX CPU is the split-precision AMX GEMM), laya.c fp32 with the AVX-512 FMA GEMM (LAYA_AMX_FP32=avx512),
laya.c fp32 on the AVX2 table (LAYA_CPU_ISA=avx2), torch fp32 (Laya's stock CPU path), torch
bf16 autocast (LAYA_CPU_AMP=bf16), and torch fp32 pinned to AVX2 (ATEN_CPU_CAPABILITY=avx2
ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2), all with --threads threads.
--device cuda, requests: 1q x 200, 1q x 512, 3q x 300 as above (the first at ~200 tokens, issue
16's table), "1q, state cut to max_len" (a state 200 tokens past the checkpoint's max_len: 512 for
ModernBERT-large, 1,024 for mmBERT-base) and 64 x 3q (predict_batch of 64 states of 100-500 tokens, three questions each,
one call). Engines: laya.c bf16 / fp16 / fp8 (LAYA_DEVICE=cuda), laya-cuda (its Engine.predict,
fp16 with CUDA graphs per shape; the batch through its BatchEngine, all 64 submitted at once),
Python Laya on the GPU (torch eager under the checkpoint's bf16 autocast) and with
backend="compile" (torch.compile; its compile happens in the warm-up calls).
Prints a Markdown table (median ms) and writes raw JSON to --out.
--rounds N runs the whole engine list N times in turn: a cloud host's speed drifts over minutes
(the same binary took 482 and 354 ms a minute apart, BENCHMARKS.md "AMX, session 19"), and within a
round every engine runs close in time, so each ratio is taken within a round, then the median over
rounds is printed (times: the median of each engine's round medians), with their spread.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WORDS = ("the customer wrote that the parcel arrived late and the box was damaged so they want to know "
         "whether a refund or a replacement is possible and how long it will take before the money is back "
         "on the card they used for the order last week").split()

QUESTIONS = {
    "intent": {"type": "choice", "instructions": "What does the customer want?",
               "criteria": {"refund": "money back", "replacement": "a new item", "info": None, "other": None}},
    "urgency": {"type": "score", "instructions": "How urgent is the request?",
                "criteria": ["can wait", "soon", "today"]},
    "angry": {"type": "noul", "instructions": "Is the customer angry?"},
}


def state_of(tok, n_tokens):
    """A state text of about n_tokens tokens under tok."""
    words = []
    i = 0
    while True:
        words.append(WORDS[i % len(WORDS)])
        i += 1
        if i % 8 == 0 and len(tok.encode(" ".join(words)).ids) >= n_tokens:
            return " ".join(words)


def make_requests(ckpt, device="cpu"):
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(ckpt, "tokenizer", "tokenizer.json"))
    except ImportError:  # no tokenizers package: about 1.3 tokens a word
        class _Ids:
            def __init__(self, n):
                self.ids = range(n)

        class _Tok:
            def encode(self, text):
                return _Ids(int(len(text.split()) * 1.3))
        tok = _Tok()
    one = {"intent": QUESTIONS["intent"]}
    if device == "cpu":
        return [("1q x 128", {"state": state_of(tok, 100), "questions": one}),
                ("1q x 512", {"state": state_of(tok, 900), "questions": one}),
                ("3q x 300", {"state": state_of(tok, 300), "questions": QUESTIONS})]
    with open(os.path.join(ckpt, "rl_agent_config.json")) as f:
        max_len = int(json.load(f).get("max_len", 512))
    # 64 states of 100..500 tokens (a fixed spread, so every engine gets the same batch)
    states = [state_of(tok, 100 + (i * 397) % 401) for i in range(64)]
    return [("1q x 200", {"state": state_of(tok, 180), "questions": one}),
            ("1q x 512", {"state": state_of(tok, 520), "questions": one}),
            ("3q x 300", {"state": state_of(tok, 300), "questions": QUESTIONS}),
            (f"1q, state cut to {max_len}", {"state": state_of(tok, max_len + 200), "questions": one}),
            ("64 x 3q", {"states": states, "questions": QUESTIONS})]


def timed(call, reps):
    """One warm-up call, then reps timed ones: (best, median) ms (every engine's call returns its
    answers on the host, so each one is complete when it returns)."""
    call()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        t.append((time.perf_counter() - t0) * 1e3)
    return min(t), statistics.median(t)


def run_torch(a):
    """Python Laya's Agent: predict, or predict_batch for a "states" line."""
    import torch
    torch.set_num_threads(a.threads)
    import laya
    kw = {"backend": a.backend} if a.backend else {}
    agent = laya.Agent(a.ckpt, device=a.device, **kw)
    for n, line in enumerate(open(a.requests)):
        r = json.loads(line)
        if "states" in r:
            def call():
                return agent.predict_batch(r["states"], r["questions"])
        else:
            def call():
                return agent.predict(r["state"], r["questions"])
        best, med = timed(call, a.reps)
        print(json.dumps({"engine": a.label, "request": n, "best_ms": best, "median_ms": med}), flush=True)


def run_laya_cuda(a):
    """laya-cuda (PyPI laya-cuda, CuPy + cuBLAS + NVRTC): Engine.predict, or for a "states" line
    every state submitted at once to its BatchEngine, which packs them into shared passes."""
    import laya_cuda
    eng = laya_cuda.Engine(a.ckpt)
    batch = None
    for n, line in enumerate(open(a.requests)):
        r = json.loads(line)
        if "states" in r:
            if batch is None:
                eng.close()
                rows = len(r["states"]) * len(r["questions"])
                batch = laya_cuda.BatchEngine(a.ckpt, max_batch_size=len(r["states"]), max_batch_tokens=rows * 1024,
                                              max_pending=len(r["states"]))

            def call():
                for fut in [batch.submit(st, r["questions"]) for st in r["states"]]:
                    fut.result()
        else:
            def call():
                return eng.predict(r["state"], r["questions"])
        best, med = timed(call, a.reps)
        print(json.dumps({"engine": a.label, "request": n, "best_ms": best, "median_ms": med}), flush=True)
    if batch is not None:
        batch.close()
    else:
        eng.close()


def machine_ticks():
    """(all, busy, stolen) CPU time of the machine from /proc/stat's "cpu" line, in clock ticks."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return sum(v), v[0] + v[1] + v[2] + v[5] + v[6], v[7]


LOAD = {}  # engine label -> (steal %, other processes %) of the machine's CPU time during its run


def sh(cmd, env, label=None):
    m0, c0 = machine_ticks(), os.times()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m1, c1 = machine_ticks(), os.times()
    if label and m0 and m1 and m1[0] > m0[0]:
        # the child's own CPU time out of the busy time: what is left ran beside it (a loaded host
        # moved laya.c's figures 2x between runs; BENCHMARKS.md, "AMX, session 17")
        mine = (c1.children_user + c1.children_system - c0.children_user - c0.children_system) * os.sysconf("SC_CLK_TCK")
        total = m1[0] - m0[0]
        LOAD[label] = (100.0 * (m1[2] - m0[2]) / total, 100.0 * max(0.0, m1[1] - m0[1] - mine) / total)
    if p.returncode != 0:
        sys.stderr.write(f"FAILED: {' '.join(cmd)}\n{p.stderr[-2000:]}\n")
        return []
    return [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("torch", "laya-cuda"):
        ap = argparse.ArgumentParser()
        ap.add_argument("mode")
        ap.add_argument("ckpt")
        ap.add_argument("requests")
        ap.add_argument("--threads", type=int, default=8)
        ap.add_argument("--reps", type=int, default=5)
        ap.add_argument("--label", default="torch fp32")
        ap.add_argument("--device", default="cpu")
        ap.add_argument("--backend", default="")
        w = ap.parse_args()
        (run_torch if w.mode == "torch" else run_laya_cuda)(w)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="/tmp/laya-e2e")
    ap.add_argument("--skip", default="")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    skip = set(a.skip.split(","))
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ, LAYA_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    # MKL (torch's fp32 Linear on x86 wheels) is pinned only by MKL_ENABLE_INSTRUCTIONS: without it
    # "torch fp32 AVX2" ran MKL's AVX-512 GEMMs on AVX-512 machines
    avx2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
    res = {}
    lines = []
    for spec in a.model:
        name, ckpt = spec.split("=", 1)
        reqs = make_requests(ckpt, a.device)
        rf = os.path.join(a.out, f"{name}.requests.jsonl")
        with open(rf, "w") as f:
            for _, r in reqs:
                f.write(json.dumps(r) + "\n")
        e2e = os.path.join(a.build, "bench", "cpu", "e2e")
        base = [e2e, ckpt, "--requests", rf, "--threads", str(a.threads), "--reps", str(a.reps)]
        me = os.path.abspath(__file__)

        def worker(mode, label, *extra):
            return [sys.executable, me, mode, ckpt, rf, "--threads", str(a.threads), "--reps", str(a.reps),
                    "--label", label, "--device", a.device, *extra]
        if a.device == "cuda":
            gpu = {"LAYA_DEVICE": "cuda"}
            jobs = [("laya.c bf16", base + ["--precision", "bf16"], gpu),
                    ("laya.c fp16", base + ["--precision", "fp16"], gpu),
                    ("laya.c fp8", base + ["--precision", "fp8"], gpu),
                    ("laya-cuda", worker("laya-cuda", "laya-cuda"), {}),
                    ("torch eager", worker("torch", "torch eager"), {}),
                    ("torch compile", worker("torch", "torch compile", "--backend", "compile"), {})]
        else:
            jobs = [("laya.c fp32", base + ["--precision", "fp32"], {}),
                    ("laya.c bf16", base + ["--precision", "bf16"], {}),
                    ("laya.c int8", base + ["--precision", "int8"], {}),
                    ("laya.c fp32 AVX-512 GEMM", base + ["--precision", "fp32"], {"LAYA_AMX_FP32": "avx512"}),
                    ("laya.c fp32 AVX2", base + ["--precision", "fp32"], {"LAYA_CPU_ISA": "avx2"}),
                    ("torch fp32", worker("torch", "torch fp32"), {}),
                    ("torch bf16 autocast", worker("torch", "torch bf16 autocast"), {"LAYA_CPU_AMP": "bf16"}),
                    ("torch fp32 AVX2", worker("torch", "torch fp32 AVX2"), avx2)]
        per_round = {}  # (engine, request) -> {round: median ms}
        for rnd in range(a.rounds):
            for label, cmd, extra in jobs:
                if label in skip:
                    continue
                sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {name}: {label} (round {rnd + 1} of {a.rounds})\n")
                for o in sh(cmd, dict(env, **extra), label):
                    per_round.setdefault((label, o["request"]), {})[rnd] = o["median_ms"]
        got = {k: statistics.median(v.values()) for k, v in per_round.items()}

        def ms(v):
            """whole ms on the CPU, as before; the GPU's few-ms figures with 2-3 digits"""
            return f"{v:.0f}" if a.device == "cpu" or v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"

        def ratio(num, den, i):
            """num's time over den's for request i: the median over the rounds both ran of the ratio
            within each round (num: a list of engines, the fastest of them in each round)."""
            rs = []
            for rnd in range(a.rounds):
                t = [per_round[(e, i)][rnd] for e in num if rnd in per_round.get((e, i), {})]
                if t and rnd in per_round.get((den, i), {}):
                    rs.append(min(t) / per_round[(den, i)][rnd])
            return statistics.median(rs) if rs else None

        res[name] = {f"{k[0]}|{reqs[k[1]][0]}": [v[r] for r in sorted(v)] for k, v in per_round.items()}
        engines = [j[0] for j in jobs if any((j[0], i) in got for i in range(len(reqs)))]
        rounds = f", median of {a.rounds} rounds" if a.rounds > 1 else ""
        where = f"{a.threads} threads" if a.device == "cpu" else "GPU"
        lines.append(f"### {name}: end to end, median ms of {a.reps}{rounds} ({where})\n")
        lines.append("| request | " + " | ".join(engines) + " |")
        lines.append("|---|" + "---|" * len(engines))
        for i, (rn, _) in enumerate(reqs):
            lines.append(f"| {rn} | " + " | ".join(ms(got[(e, i)]) if (e, i) in got else "-" for e in engines) + " |")
        lines.append("")
        # competitors: every engine that is not laya.c's, but for the AVX2-pinned one, which is
        # compared with laya.c's AVX2 table alone
        comp = [e for e in engines if not e.startswith("laya.c") and "AVX2" not in e]
        ours = [e for e in engines if e.startswith("laya.c") and "AVX2" not in e]
        avx2_pair = "laya.c fp32 AVX2" in engines and "torch fp32 AVX2" in engines
        fastest = "fastest torch" if a.device == "cpu" else "fastest competitor"
        heads = [f"{e} vs {fastest}" for e in ours] + (["laya.c fp32 AVX2 vs torch fp32 AVX2"] if avx2_pair else [])
        lines.append("| request | " + " | ".join(heads) + " |")
        lines.append("|---|" + "---|" * len(heads))
        for i, (rn, _) in enumerate(reqs):
            row = []
            for e in ours:
                r = ratio(comp, e, i)
                row.append(f"{r:.2f}x" if r else "-")
            if avx2_pair:
                r = ratio(["torch fp32 AVX2"], "laya.c fp32 AVX2", i)
                row.append(f"{r:.2f}x" if r else "-")
            lines.append(f"| {rn} | " + " | ".join(row) + " |")
        lines.append("")
        if a.rounds > 1:
            lines.append("Spread over rounds (fastest - slowest round median, ms):\n")
            lines.append("| request | " + " | ".join(engines) + " |")
            lines.append("|---|" + "---|" * len(engines))
            for i, (rn, _) in enumerate(reqs):
                cells = []
                for e in engines:
                    v = list(per_round.get((e, i), {}).values())
                    cells.append(f"{ms(min(v))}-{ms(max(v))}" if v else "-")
                lines.append(f"| {rn} | " + " | ".join(cells) + " |")
            lines.append("")
        if any(e in LOAD for e in engines):
            lines.append(f"Machine load during each engine's run{' (the last round)' if a.rounds > 1 else ''} (share of all CPUs' time): "
                         + "; ".join(f"{e} steal {LOAD[e][0]:.1f}%, other processes {LOAD[e][1]:.1f}%"
                                     for e in engines if e in LOAD))
            lines.append("")
        with open(os.path.join(a.out, "e2e.json"), "w") as f:
            json.dump(res, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
