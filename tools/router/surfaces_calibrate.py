"""Temperatures fitted by the real laya 0.4.15 on labelled data, for `laya calibrate` parity.

    /opt/layaref/bin/python tools/router/surfaces_calibrate.py tests/fixtures/surfaces

Builds calibrate_dataset.jsonl from the eval parity states, labelled with the checkpoint's own
answer three times in four and another option otherwise (so the optimal temperature is finite),
turns each expected answer into Laya's target vector (one-hot over the option order), records
the raw option logits with laya.calibrate.records_from_labeled on the tiny modernbert
checkpoint, fits fit_temperature_map, and writes calibrate_expected.json.
"""
import json
import os
import sys
import warnings

import numpy as np
import laya
from laya import calibrate

warnings.simplefilter("ignore")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def target(q, exp):
    if q["type"] == "noul":
        return [0.0, 1.0] if exp else [1.0, 0.0]
    labels = list(q["criteria"].keys()) if isinstance(q["criteria"], dict) else list(q["criteria"])
    t = [0.0] * len(labels)
    if q["type"] == "score":
        t[int(exp)] = 1.0
    else:
        t[labels.index(exp)] = 1.0
    return t


def main(out_dir):
    agent = laya.load(os.path.join(ROOT, "tests", "fixtures", "ckpt", "modernbert-tiny"), device="cpu")
    import random
    rng = random.Random(5)
    pairs, rows = [], []
    for line in open(os.path.join(out_dir, "eval_dataset.jsonl"), encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        row = json.loads(line)
        qs = row["questions"]
        ans = agent.predict(row["state"], qs)["answers"]
        expected = {}
        for qid, q in qs.items():
            a = ans[qid]
            if q["type"] == "noul":
                e = a["noul"] >= 0.5
                expected[qid] = e if rng.random() < 0.75 else (not e)
            elif q["type"] == "score":
                best = max(range(len(q["criteria"])), key=lambda i: a["probabilities"][str(i)])
                expected[qid] = best if rng.random() < 0.75 else rng.randrange(len(q["criteria"]))
            else:
                expected[qid] = a["choice"] if rng.random() < 0.75 else rng.choice(list(q["criteria"]))
        rows.append({"state": row["state"], "questions": qs, "expected": expected})
        pairs.append((row["state"], qs, {qid: target(qs[qid], e) for qid, e in expected.items()}))
    with open(os.path.join(out_dir, "calibrate_dataset.jsonl"), "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    recs = calibrate.records_from_labeled(agent, pairs)
    fit = calibrate.fit_temperature_map(recs)
    raw = [calibrate._fit_unclamped_temperature([(z, t) for qt, z, t, k in recs if qt == i], min_n=10)
           for i in range(3)]
    out = {"n_records": len(recs), "temperature": fit["temperature"], "temperature_unclamped": raw,
           "temperature_by_options": fit["temperature_by_options"], "n_by_bucket": fit["n_by_bucket"]}
    with open(os.path.join(out_dir, "calibrate_expected.json"), "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1])
