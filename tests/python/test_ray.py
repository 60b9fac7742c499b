#!/usr/bin/env python3
"""python/ray: examples/ray_score.py on a real local Ray cluster (GCS, raylet and separate worker
processes, started by ray.init) scores 1,000 requests with one laya_c.Agent per actor, and every
result equals the single-process Agent.predict_batch result for the same state, byte for byte.

  test_ray.py FIXTURES EXAMPLES_DIR

The states are the string and dict states of Laya's recorded requests
(tests/fixtures/parity/modernbert-tiny), each made distinct with a ticket number. Checked: every id
answered exactly once, by at least two worker processes other than the driver, and the answers
equal the driver's own predict_batch over all 1,000 states in one call (on the CPU backends a
row's answer does not depend on the pass it is packed in, so the batch split cannot move a bit).
"""
import json
import os
import sys
import tempfile
import time

import laya_c

N = 1000
WORKERS = 2


def main():
    fixtures, examples = sys.argv[1:3]
    sys.path.insert(0, os.path.abspath(examples))
    import ray
    import ray_score

    ckpt = os.path.join(fixtures, "ckpt", "modernbert-tiny")
    with open(os.path.join(examples, "ticket_questions.json")) as f:
        questions = json.load(f)
    base = []
    with open(os.path.join(fixtures, "parity", "modernbert-tiny", "cases.jsonl")) as f:
        for line in f:
            c = json.loads(line)
            if c["api"] == "predict" and "result" in c:
                s = json.loads(c["request"])["state"]
                if isinstance(s, (str, dict)) and s and len(json.dumps(s)) < 400:  # short: CI has 2 cores
                    base.append(s)
    states = []
    for i in range(N):
        s = base[i % len(base)]
        states.append("%s (ticket %d)" % (s, i) if isinstance(s, str) else dict(s, ticket=i))

    work = tempfile.mkdtemp(prefix="laya-c-ray-")
    src = os.path.join(work, "tickets.jsonl")
    with open(src, "w") as f:
        for i, s in enumerate(states):
            f.write(json.dumps({"id": i, "state": s}) + "\n")

    t0 = time.perf_counter()
    # the workers import ray_score (the actor class) from examples/, like the driver
    # logical CPUs: one per actor and one for the read tasks (else the actors take all and reads wait)
    ray.init(num_cpus=WORKERS + 1, include_dashboard=False, log_to_driver=False,
             object_store_memory=200 * 1024 * 1024,
             runtime_env={"env_vars": {"PYTHONPATH": os.path.abspath(examples)}})
    t_init = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        rows = ray_score.score(src, ckpt, questions, workers=WORKERS, batch_size=50, device="cpu").take_all()
        t_score = time.perf_counter() - t0
        nodes = len(ray.nodes())
    finally:
        ray.shutdown()

    t0 = time.perf_counter()
    single = laya_c.Agent(ckpt, device="cpu", threads=1, quiet=True).predict_batch(states, questions)
    t_single = time.perf_counter() - t0

    ids = sorted(int(r["id"]) for r in rows)
    pids = {int(r["worker_pid"]) for r in rows}
    by_id = {int(r["id"]): r["result"] for r in rows}
    differ = [i for i in range(N) if by_id.get(i) != json.dumps(single[i])]
    for i in differ[:5]:
        print("DIFFER id %d\n  ray:    %.300s\n  single: %.300s" % (i, by_id.get(i), json.dumps(single[i])))
    ok = ids == list(range(N)) and not differ and len(pids) >= 2 and os.getpid() not in pids
    print("ray: %d requests on a local cluster (%d node, %d worker processes %s): %d answered, %d differ "
          "from single-process predict_batch; ray.init %.1f s, scoring %.1f s, single process %.1f s: %s"
          % (N, nodes, len(pids), sorted(pids), len(rows), len(differ), t_init, t_score, t_single,
             "ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
