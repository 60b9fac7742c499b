#!/usr/bin/env python3
"""python/threads: one laya_c.Agent shared by 8 Python threads gives the single-threaded answers,
and the GIL is released while the engine runs.

  test_threads.py FIXTURES CKPT

1. Laya's recorded requests (every third of tests/fixtures/parity/CKPT's, without lang_temperatures) are
   answered once on one thread; then 8 threads share that Agent and each answers every request
   twice, in its own rotated order: every result (and every error's class and message) must equal
   the single-threaded one, byte for byte (json.dumps).
2. The GIL: while one thread runs a predict_batch of >= 0.3 s, the main thread keeps counting in
   pure Python; the longest pause between two of its iterations must stay below half the call's
   duration (with the GIL held through the call it would be the whole call).
"""
import json
import os
import sys
import threading
import time

import laya_c

N_THREADS = 8


def answer(agent, case):
    req = json.loads(case["request"])
    try:
        out = agent.predict(**req) if case["api"] == "predict" else agent.predict_batch(**req)
        return "ok " + json.dumps(out)
    except Exception as e:  # noqa: BLE001
        return "err %s: %s" % (type(e).__name__, e)


def main():
    fixtures, ckpt = sys.argv[1:3]
    ckpt_dir = os.path.join(fixtures, "ckpt", ckpt)
    with open(os.path.join(fixtures, "parity", ckpt, "cases.jsonl")) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    # every third request keeps the run short on 2 cores; still ~100 requests, a third of them errors
    cases = [c for c in cases if c["agent"]["lang_temperatures"] is None][::3]
    agent = laya_c.Agent(ckpt_dir, device="cpu", quiet=True)
    t0 = time.perf_counter()
    expected = [answer(agent, c) for c in cases]
    single_s = time.perf_counter() - t0
    n_err = sum(e.startswith("err") for e in expected)

    mismatches = []
    lock = threading.Lock()

    def worker(tid):
        order = list(range(len(cases)))
        for rnd in range(2):
            shift = (tid * 37 + rnd * 11) % len(order)
            for i in order[shift:] + order[:shift]:
                got = answer(agent, cases[i])
                if got != expected[i]:
                    with lock:
                        mismatches.append((tid, cases[i]["id"], got[:200], expected[i][:200]))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    threaded_s = time.perf_counter() - t0
    for m in mismatches[:10]:
        print("MISMATCH thread %d case %s\n  got  %s\n  want %s" % m)
    print("threads: %d cases (%d errors) x %d threads x 2 rounds on one Agent: %d results differed "
          "(single thread %.1f s for one round, %d threads %.1f s for 16 rounds)"
          % (len(cases), n_err, N_THREADS, len(mismatches), single_s, N_THREADS, threaded_s))

    # -- the GIL is released during the call --
    one = laya_c.Agent(ckpt_dir, device="cpu", threads=1, quiet=True)
    q = {"intent": {"type": "choice", "instructions": "What does the customer want?",
                    "criteria": ["refund", "replacement", "information"]},
         "urgent": {"type": "noul", "instructions": "Is this urgent?"}}
    states = ["I was charged twice for order %d and want my money back today." % i for i in range(64)]
    done = threading.Event()
    span = {}

    def long_call():
        reps = 1
        while True:
            t = time.perf_counter()
            one.predict_batch(states * reps, q)
            d = time.perf_counter() - t
            if d >= 0.3 or reps >= 64:
                break
            reps *= 2
        span["reps"] = reps
        span["start"] = time.perf_counter()
        one.predict_batch(states * reps, q)
        span["end"] = time.perf_counter()
        done.set()

    th = threading.Thread(target=long_call)
    th.start()
    ticks = []
    while not done.is_set():
        ticks.append(time.perf_counter())
    th.join()
    inside = [t for t in ticks if span["start"] <= t <= span["end"]]
    call_s = span["end"] - span["start"]
    gaps = [b - a for a, b in zip(inside, inside[1:])]
    longest = max(gaps) if gaps else call_s
    gil_ok = call_s >= 0.1 and len(inside) > 100 and longest < call_s / 2
    print("GIL: a %.2f s predict_batch (%d states) on another thread; the main thread ran %d iterations "
          "during it, longest pause %.4f s: %s" % (call_s, len(states) * span["reps"], len(inside), longest,
                                                   "released" if gil_ok else "NOT RELEASED"))
    agent.close()
    one.close()
    return 0 if not mismatches and gil_ok and len(expected) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
