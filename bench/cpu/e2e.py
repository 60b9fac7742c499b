#!/usr/bin/env python3
"""End-to-end timing (request JSON in, answer out: tokenize, forward, decode) of laya.c's
laya_predict (bench/cpu/e2e.c) against Python Laya's Agent.predict on the same requests, same
thread count, one engine per process.

    python3 bench/cpu/e2e.py --build build --model large=CKPT [--model mmbert=CKPT] [--threads 8]
        [--reps 5] [--rounds 1] [--out DIR]

Requests (per model; state lengths set with the checkpoint's own tokenizer):
  1q x 128   one choice question, ~128 tokens in all
  1q x 512   one choice question on a long state (truncated to max_len = 512 by both engines)
  3q x 300   three questions on one ~300-token state (Laya runs one row per question)
Engines: laya.c fp32 / bf16 / int8 (the checkpoint directory, kernel table chosen by CPUID; fp32 on an
AMX CPU is the split-precision AMX GEMM), laya.c fp32 with the AVX-512 FMA GEMM (LAYA_AMX_FP32=avx512),
laya.c fp32 on the AVX2 table (LAYA_CPU_ISA=avx2), torch fp32 (Laya's stock CPU path), torch
bf16 autocast (LAYA_CPU_AMP=bf16), and torch fp32 pinned to AVX2 (ATEN_CPU_CAPABILITY=avx2
ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2). Prints a Markdown table (median ms) and writes raw JSON to --out.
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


def make_requests(ckpt):
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
    return [("1q x 128", {"state": state_of(tok, 100), "questions": one}),
            ("1q x 512", {"state": state_of(tok, 900), "questions": one}),
            ("3q x 300", {"state": state_of(tok, 300), "questions": QUESTIONS})]


def run_torch(a):
    import torch
    torch.set_num_threads(a.threads)
    import laya
    agent = laya.Agent(a.ckpt, device="cpu")
    for n, line in enumerate(open(a.requests)):
        r = json.loads(line)
        agent.predict(r["state"], r["questions"])
        t = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            agent.predict(r["state"], r["questions"])
            t.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"engine": a.label, "request": n, "best_ms": min(t), "median_ms": statistics.median(t)}),
              flush=True)


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
    if len(sys.argv) > 1 and sys.argv[1] == "torch":
        ap = argparse.ArgumentParser()
        ap.add_argument("mode")
        ap.add_argument("ckpt")
        ap.add_argument("requests")
        ap.add_argument("--threads", type=int, default=8)
        ap.add_argument("--reps", type=int, default=5)
        ap.add_argument("--label", default="torch fp32")
        run_torch(ap.parse_args())
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="/tmp/laya-e2e")
    ap.add_argument("--skip", default="")
    ap.add_argument("--rounds", type=int, default=1)
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
        reqs = make_requests(ckpt)
        rf = os.path.join(a.out, f"{name}.requests.jsonl")
        with open(rf, "w") as f:
            for _, r in reqs:
                f.write(json.dumps(r) + "\n")
        e2e = os.path.join(a.build, "bench", "cpu", "e2e")
        base = [e2e, ckpt, "--requests", rf, "--threads", str(a.threads), "--reps", str(a.reps)]
        me = os.path.abspath(__file__)
        jobs = [("laya.c fp32", base + ["--precision", "fp32"], {}),
                ("laya.c bf16", base + ["--precision", "bf16"], {}),
                ("laya.c int8", base + ["--precision", "int8"], {}),
                ("laya.c fp32 AVX-512 GEMM", base + ["--precision", "fp32"], {"LAYA_AMX_FP32": "avx512"}),
                ("laya.c fp32 AVX2", base + ["--precision", "fp32"], {"LAYA_CPU_ISA": "avx2"}),
                ("torch fp32", [sys.executable, me, "torch", ckpt, rf, "--threads", str(a.threads), "--reps",
                                str(a.reps), "--label", "torch fp32"], {}),
                ("torch bf16 autocast", [sys.executable, me, "torch", ckpt, rf, "--threads", str(a.threads), "--reps",
                                         str(a.reps), "--label", "torch bf16 autocast"], {"LAYA_CPU_AMP": "bf16"}),
                ("torch fp32 AVX2", [sys.executable, me, "torch", ckpt, rf, "--threads", str(a.threads), "--reps",
                                     str(a.reps), "--label", "torch fp32 AVX2"], avx2)]
        per_round = {}  # (engine, request) -> {round: median ms}
        for rnd in range(a.rounds):
            for label, cmd, extra in jobs:
                if label in skip:
                    continue
                sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {name}: {label} (round {rnd + 1} of {a.rounds})\n")
                for o in sh(cmd, dict(env, **extra), label):
                    per_round.setdefault((label, o["request"]), {})[rnd] = o["median_ms"]
        got = {k: statistics.median(v.values()) for k, v in per_round.items()}

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
        lines.append(f"### {name}: end to end, median ms of {a.reps}{rounds} ({a.threads} threads)\n")
        lines.append("| request | " + " | ".join(engines) + " |")
        lines.append("|---|" + "---|" * len(engines))
        for i, (rn, _) in enumerate(reqs):
            lines.append(f"| {rn} | " + " | ".join(f"{got[(e, i)]:.0f}" if (e, i) in got else "-" for e in engines) + " |")
        lines.append("")
        comp = [e for e in engines if e.startswith("torch") and "AVX2" not in e]
        lines.append("| request | " + " | ".join(f"{e} vs fastest torch" for e in engines if e.startswith("laya.c") and "AVX2" not in e)
                     + " | laya.c fp32 AVX2 vs torch fp32 AVX2 |")
        lines.append("|---|" + "---|" * (1 + sum(1 for e in engines if e.startswith("laya.c") and "AVX2" not in e)))
        for i, (rn, _) in enumerate(reqs):
            row = []
            for e in engines:
                if e.startswith("laya.c") and "AVX2" not in e:
                    r = ratio(comp, e, i)
                    row.append(f"{r:.2f}x" if r else "-")
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
                    cells.append(f"{min(v):.0f}-{max(v):.0f}" if v else "-")
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
