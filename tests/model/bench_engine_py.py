"""Python Laya 0.4.15's request path outside the forward pass, per request (CPU time), on the
parity fixtures' successful predict requests; the model forward is stubbed with zeros so only the
Python side is measured. Counterpart of bench_engine.c. Usage: bench_engine_py.py CKPT CASES [rounds]"""
import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
import numpy as np  # noqa: E402
import laya  # noqa: E402

ckpt, cases = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
agent = laya.Agent(ckpt, device="cpu")


def stub_forward(b):
    n, k = b["marker_pos"].shape
    return np.zeros((n, k), np.float32), np.full((n, 2), 0.5, np.float32)


agent._forward = stub_forward
reqs = []
for line in open(cases, encoding="utf-8"):
    c = json.loads(line)
    if c["api"] == "predict" and "result" in c and not c["agent"].get("lang_temperatures"):
        reqs.append(c["request"])
t0 = time.process_time()
for _ in range(rounds):
    for r in reqs:
        agent.predict(**json.loads(r))
dt = time.process_time() - t0
print("python laya engine path: %d requests x %d rounds, %.1f us CPU per request"
      % (len(reqs), rounds, dt / (len(reqs) * rounds) * 1e6))
