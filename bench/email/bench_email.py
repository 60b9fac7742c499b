#!/usr/bin/env python3
"""Python laya's clean_email_body on the corpus emails of cases.jsonl (see bench_email.c).
usage: bench_email.py CASES.jsonl [REPEATS]"""
import json
import sys
import time

import laya

reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
bodies = []
for line in open(sys.argv[1], encoding="ascii"):
    c = json.loads(line)
    if c["fn"] == "clean_email_body" and len(c["id"]) == 6 and c["id"][2] == "-":
        bodies.append(c["kwargs"]["body"])
t = time.perf_counter()
for _ in range(reps):
    for b in bodies:
        laya.clean_email_body(b)
dt = time.perf_counter() - t
print("Python laya %s clean_email_body: %d emails x %d: %.1f us per email"
      % (getattr(laya, "__version__", "?"), len(bodies), reps, dt * 1e6 / (len(bodies) * reps)))
