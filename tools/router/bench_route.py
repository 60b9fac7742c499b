"""Python Laya 0.4.15's Router.route on the parity corpus, for BENCHMARKS.md.

    /opt/layaref/bin/python tools/router/bench_route.py tests/fixtures/router/corpus.jsonl [REPS]
"""
import json
import sys
import time

from laya.router import Router

states = [json.loads(l)["request"]["state"] for l in open(sys.argv[1], encoding="utf-8")]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
r = Router()
t0 = time.perf_counter()
for _ in range(reps):
    for s in states:
        r.route(s)
us = (time.perf_counter() - t0) * 1e6 / (len(states) * reps)
print("laya 0.4.15 Router.route: %d states x %d reps, %.1f us per state" % (len(states), reps, us))
