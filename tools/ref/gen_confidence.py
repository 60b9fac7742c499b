#!/usr/bin/env python3
"""tests/fixtures/confidence/cases.jsonl: the real laya 0.4.15's confidence helpers on generated
inputs: laya.answer_confidence / confidence_from_probs (numpy arrays), ece_score,
jev_confidence, check_min_confidence / check_min_confidence_map, resolve_min_confidence, and the
in-place gates flag_low_confidence / apply_confidence_gate (the results after the call).

Each line: {"fn": NAME, "args": [...], "kwargs": {...}, "result": ...} or "error": {"kind",
"message"}; the gates' lines carry "after" (the results list as the call left it). Floats are
written by json (NaN and Infinity as Python's json writes them). Deterministic (random.Random(7)).
"""
import copy
import json
import math
import os
import random

import numpy as np

import laya

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
R = random.Random(7)


def dist(k, skew=1.0):
    w = [R.random() ** skew for _ in range(k)]
    s = sum(w)
    return [x / s for x in w]


def record(out, fn, *args, **kwargs):
    rec = {"fn": fn, "args": copy.deepcopy(list(args)), "kwargs": copy.deepcopy(kwargs)}
    f = getattr(laya, fn)
    call_args = [np.array(a, dtype=np.float64) if fn in ("answer_confidence", "confidence_from_probs", "ece_score")
                 and isinstance(a, list) else a for a in args]
    if fn in ("flag_low_confidence", "apply_confidence_gate"):
        call_args = copy.deepcopy(call_args)
    try:
        r = f(*call_args, **kwargs)
        rec["result"] = r
        if fn in ("flag_low_confidence", "apply_confidence_gate"):
            rec["after"] = call_args[0]
    except Exception as e:  # noqa: BLE001 - recorded as Laya raised it
        rec["error"] = {"kind": type(e).__name__, "message": str(e)}
    out.append(rec)


def answer(kind, k):
    probs = dist(k, R.choice([0.5, 1, 3, 8]))
    if kind == "score":
        p = {str(i): round(v, 4) for i, v in enumerate(probs)}
    elif kind == "noul":
        p = {"false": round(probs[0], 4), "true": round(1 - probs[0], 4)}
    else:
        p = {"opt%d" % i: round(v, 4) for i, v in enumerate(probs)}
    a = {"type": kind, "probabilities": p, "answer_confidence": round(max(p.values()), 4),
         "confidence": round(R.random(), 4)}
    r = R.random()
    if r < 0.1:
        del a["answer_confidence"]
    elif r < 0.15:
        a["answer_confidence"] = R.choice([None, True, "0.9", float("nan"), float("inf")])
    elif r < 0.2:
        del a["answer_confidence"]
        a["confidence"] = R.choice([None, False, float("nan"), 0.3])
    if R.random() < 0.1:
        a["low_confidence"] = True
    return a


def main():
    out = []
    # answer_confidence / confidence_from_probs
    for k in list(range(0, 13)) + [16, 40, 100]:
        for _ in range(4):
            p = dist(max(k, 1), R.choice([0.3, 1, 4]))
            for kk in (k, max(k - 1, 0), k + 2):
                record(out, "answer_confidence", p, kk)
                record(out, "confidence_from_probs", p, kk)
    for p in ([0.0, 1.0], [1.0, 0.0, 0.0], [-0.2, 1.2], [0.5, float("nan")], [float("nan"), 0.5], [1e-15, 1 - 1e-15],
              [0.25] * 4, [1.5, -0.5], [0.0] * 3):
        for kk in (1, 2, 3):
            record(out, "answer_confidence", p, kk)
            record(out, "confidence_from_probs", p, kk)
    # ece_score
    for n in (1, 2, 5, 30, 200):
        for bins in (1, 3, 10, 15, 20):
            conf = [R.random() for _ in range(n)]
            if n >= 5:
                conf[:3] = [0.0, 1.0, 7 / 15]
            correct = [float(R.random() < c) for c in conf]
            record(out, "ece_score", conf, correct, bins)
    record(out, "ece_score", [], [], 15)
    for bins in (0, -1, True, 2.0, "15"):
        record(out, "ece_score", [0.5], [1.0], bins)
    # jev_confidence
    for kind in ("choice", "score", "noul", "other"):
        for k in (1, 2, 3, 5, 11):
            for _ in range(3):
                record(out, "jev_confidence", answer(kind, k))
    for probs, kind in (({"a": True, "b": 0.5}, "choice"), ({"a": "0.4", "b": 0.6}, "choice"), ({"a": "x"}, "choice"),
                        ({"a": -0.1, "b": 1.1}, "choice"), ({"a": float("nan"), "b": 1}, "choice"), ({}, "choice"),
                        ({"0": 0, "1": 0, "2": 0}, "score"), ({"0": 0.2, "x": 0.8}, "score"), ({"2": 0.7, "0": 0.1, "1": 0.2}, "score"),
                        ({"a": 0.0, "b": 0.0}, "choice"), ([0.5, 0.5], "choice"), ({"0": 1}, "score")):
        record(out, "jev_confidence", {"type": kind, "probabilities": probs})
    record(out, "jev_confidence", {"type": "choice"})
    # check_min_confidence / check_min_confidence_map
    for v in (0, 0.0, 0.5, 1, 1.0, -0.01, 1.01, True, False, None, "0.5", float("nan"), float("inf"), [0.5], {},
              {"choice:2": 0.5}, {"default": 0.3, "score:11+": 0.9}, {"choice:12": 0.5}, {"choice:2": 2},
              {"choice:2": True}, {"noul:2": 0.4, "noul:3-5": 1}, {"Choice:2": 0.5}):
        record(out, "check_min_confidence", v)
    for v in ({}, {"choice:6-10": 0.5}, {"default": 0}, [0.5], None, {"x": 0.1}):
        record(out, "check_min_confidence_map", v)
    # resolve_min_confidence
    maps = [{"choice:2": 0.6}, {"default": 0.4}, {"choice:3-5": 0.7, "default": 0.2}, {"noul:2": 0.8}, {}]
    for kind in ("choice", "score", "noul", "other"):
        for k in (2, 4, 7, 12):
            a = answer(kind, k)
            for m in maps:
                record(out, "resolve_min_confidence", a, m)
            record(out, "resolve_min_confidence", a, {}, 0.25)
    record(out, "resolve_min_confidence", {"type": "noul"}, {"noul:2": 0.9})
    record(out, "resolve_min_confidence", {"type": "choice"}, {"choice:2": 0.9, "default": 0.1})
    # the gates
    for _ in range(40):
        results = []
        for _ in range(R.randint(1, 4)):
            answers = {"q%d" % j: answer(R.choice(["choice", "score", "noul"]), R.choice([2, 3, 6, 12]))
                       for j in range(R.randint(1, 4))}
            results.append({"answers": answers, "state": "s"})
        if R.random() < 0.2:
            results.append({"no_answers": 1})
        if R.random() < 0.2:
            results.append({"answers": {"bad": "not a dict"}})
        thr = R.choice([0.0, 0.3, 0.6, 0.9, 1.0, {"choice:2": 0.7, "default": 0.4}, {"score:11+": 0.2},
                        {"noul:2": 0.95, "choice:6-10": 0.1}])
        record(out, "flag_low_confidence", results, thr)
        record(out, "apply_confidence_gate", results, thr)
    record(out, "apply_confidence_gate", [{"answers": {"q": answer("choice", 3)}}], None)
    record(out, "apply_confidence_gate", [{"answers": {"q": answer("choice", 3)}}])
    record(out, "apply_confidence_gate", ["x", None, {"answers": None}], 0.5)
    path = os.path.join(REPO, "tests/fixtures/confidence/cases.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for rec in out:
            f.write(json.dumps(rec) + "\n")
    print("wrote %s: %d cases" % (path, len(out)))


if __name__ == "__main__":
    main()
