#!/usr/bin/env python3
"""Python binding benchmarks (BENCHMARKS.md, "Python binding").

  python bench/python/bench_binding.py CKPT [--laya-python VENV_PYTHON] [--rounds 7] [--states 256]

1. Call overhead, laya_c vs the C API, on a 1x128 request (one state of 128 tokens, one choice
   question): the C API's time per call is laya_predict called n times in C
   (laya_c._native.bench_capi_predict, no Python in the loop); laya_c's is Agent.predict called n
   times from Python (json.dumps of the arguments, the call with the GIL released, json.loads of
   the answer). Rounds alternate the two; medians are reported, and overhead = laya_c - C API.
2. predict_batch throughput, laya_c vs Python laya 0.4.15 (torch, CPU) on the same checkpoint:
   256 states of ~128 tokens, three questions, one predict_batch call each round; with
   --laya-python the same script runs under that interpreter (a venv with laya and torch) for the
   Python laya side. Both use every core; each side's fp32 and default precision are reported.
Run on a quiet machine for numbers to quote; the output says how noisy the rounds were.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

Q1 = {"team": {"type": "choice", "instructions": "Which team should handle this?",
               "criteria": {"billing": "payments, refunds", "tech": "bugs, crashes", "sales": "new orders"}}}
Q3 = dict(Q1, urgent={"type": "noul", "instructions": "Does this need an answer today?"},
          anger={"type": "score", "instructions": "How angry is the customer?",
                 "criteria": ["calm", "annoyed", "angry", "furious"]})
WORDS = ("invoice refund charged twice order parcel broken login reset error server outage please "
         "today friday customer account payment card").split()


def state_of(agent, n_tokens, seed):
    """A text whose state alone is n_tokens tokens with this checkpoint's tokenizer."""
    words, i = [], seed
    while True:
        words.append(WORDS[i % len(WORDS)])
        i = i * 7 + 3
        text = " ".join(words)
        if len(agent.tokenize(text)) >= n_tokens:
            return text


def bench_laya_c(ckpt, rounds, n_states, overhead=True):
    import laya_c
    from laya_c import _native

    out = {"batch": {}}
    if not overhead:
        return bench_batch(laya_c, ckpt, rounds, n_states, out)
    agent = laya_c.Agent(ckpt, quiet=True, threads=1)
    state = state_of(agent, 128, 1)
    req = json.dumps({"state": state, "questions": Q1})
    r = agent.predict(state, Q1)
    out["tokens_1x128"] = r["usage"]["input_tokens"]
    n = 50
    capi, py = [], []
    agent.predict(state, Q1)
    for _ in range(rounds):
        capi.append(_native.bench_capi_predict(agent._h, req, n) / n)
        t = time.perf_counter()
        for _ in range(n):
            agent.predict(state, Q1)
        py.append((time.perf_counter() - t) / n)
    # the binding's own work measured alone (the end-to-end difference above is the difference of
    # two engine timings, so it carries their noise): json.dumps of the arguments, the extension
    # call's argument handling and GIL release (an op that fails at once in the engine: a request
    # that is not a JSON object), json.loads of a real answer
    answer = json.dumps(r)
    bad = "[]"
    reps = 2000
    own = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            json.dumps({"state": state, "questions": Q1}, ensure_ascii=True)
            try:
                agent._h.call(0, bad)
            except _native.Error:
                pass
            json.loads(answer)
        own.append((time.perf_counter() - t) / reps)
    out["own_us"] = statistics.median(own) * 1e6
    out["capi_us"] = statistics.median(capi) * 1e6
    out["laya_c_us"] = statistics.median(py) * 1e6
    out["capi_spread"] = (max(capi) - min(capi)) / statistics.median(capi)
    out["laya_c_spread"] = (max(py) - min(py)) / statistics.median(py)
    agent.close()
    return bench_batch(laya_c, ckpt, rounds, n_states, out)


def bench_batch(laya_c, ckpt, rounds, n_states, out):
    for precision in ("fp32", "bf16"):  # fp32 is the default
        a = laya_c.Agent(ckpt, quiet=True, precision=precision)
        states = [state_of(a, 128, s) for s in range(n_states)]
        a.predict_batch(states[:8], Q3)
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            a.predict_batch(states, Q3)
            times.append(time.perf_counter() - t)
        out["batch"][a.precision + (" (default)" if precision == "fp32" else "")] = len(states) / statistics.median(times)
        a.close()
    return out


def bench_laya_python(ckpt, rounds, n_states):
    import torch
    import laya

    out = {"torch_threads": torch.get_num_threads(), "batch": {}}
    a = laya.Agent(ckpt, device="cpu")
    tok = a.tok

    class T:  # state_of over laya's own tokenizer
        def tokenize(self, text):
            return tok(text, add_special_tokens=False)["input_ids"]

    states = [state_of(T(), 128, s) for s in range(n_states)]
    a.predict_batch(states[:8], Q3)
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        a.predict_batch(states, Q3)
        times.append(time.perf_counter() - t)
    out["batch"]["fp32 (torch CPU)"] = len(states) / statistics.median(times)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("--laya-python", default=None)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--side", default="laya_c", choices=["laya_c", "laya"])
    # full-size checkpoints: fewer states keep a round to seconds on a small machine
    ap.add_argument("--states", type=int, default=256)
    ap.add_argument("--batch-only", action="store_true", help="only the predict_batch throughput")
    args = ap.parse_args()
    if args.side == "laya":
        print(json.dumps(bench_laya_python(args.ckpt, args.rounds, args.states)))
        return 0
    res = bench_laya_c(args.ckpt, args.rounds, args.states, not args.batch_only)
    if not args.batch_only:
        print_overhead(res, args)
    print_batch(res, args)
    return 0


def print_overhead(res, args):
    over = res["laya_c_us"] - res["capi_us"]
    print("1x128 request (%d input tokens), one thread, median of %d rounds x 50 calls:" %
          (res["tokens_1x128"], args.rounds))
    print("  C API laya_predict  %8.1f us/call (rounds spread %.0f%%)" % (res["capi_us"], 100 * res["capi_spread"]))
    print("  laya_c Agent.predict %7.1f us/call (rounds spread %.0f%%)" % (res["laya_c_us"], 100 * res["laya_c_spread"]))
    print("  binding overhead    %8.1f us/call = %.1f%% (end to end: the difference of the two)" %
          (over, 100 * over / res["capi_us"]))
    print("  binding's own work  %8.1f us/call = %.2f%% (json.dumps + extension call + json.loads, "
          "measured alone)" % (res["own_us"], 100 * res["own_us"] / res["capi_us"]))


def print_batch(res, args):
    print("predict_batch, %d states x ~128 tokens x 3 questions, all cores, states/s (median of %d):" %
          (args.states, args.rounds))
    for k, v in res["batch"].items():
        print("  laya_c %-22s %8.1f" % (k, v))
    if args.laya_python:
        p = subprocess.run([args.laya_python, os.path.abspath(__file__), args.ckpt, "--side", "laya", "--rounds",
                            str(args.rounds), "--states", str(args.states)], stdout=subprocess.PIPE, text=True, check=True)
        lp = json.loads(p.stdout.strip().splitlines()[-1])
        for k, v in lp["batch"].items():
            print("  laya   %-22s %8.1f (torch threads %d)" % (k, v, lp["torch_threads"]))
            for k2, v2 in res["batch"].items():
                print("    laya_c %s / laya: %.2fx" % (k2, v2 / v))


if __name__ == "__main__":
    sys.exit(main())
