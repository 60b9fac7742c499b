#!/usr/bin/env python3
"""tests/fixtures/calibrate/cases.json: the real laya 0.4.15's temperature fitting
(laya.fit_temperature_map / fit_one_temperature) on generated records, errors included.

{"datasets": {name: [[qtype, logits, target(, k)], ...]}, "cases": [{"fn", "dataset" | "pairs" |
"args" (a dataset among them as {"$dataset": name}), "kwargs", "result" | "error"}]}. The datasets sample one-hot targets from softmax(z / T_true) with
a known T_true per bucket (some beyond [0.5, 5], so the clamp and its report are exercised), with
buckets above and below the 2,000-record floor. Deterministic (numpy RandomState(11)).
"""
import json
import os

import numpy as np

import laya

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
R = np.random.RandomState(11)


def bucket(qtype, k, n, t_true, scale=2.0, soft=False, cut=None):
    """n records of k options; with cut, the target's mass sits in the first cut options (the
    record says k = cut, and the logits past it are noise Laya's fit must not read)."""
    out = []
    m = cut or k
    for _ in range(n):
        z = np.round(R.randn(k) * scale, 2)
        zs = z[:m] / t_true
        p = np.exp(zs - zs.max())
        p /= p.sum()
        if soft:
            t = np.round(p, 3)
            t[-1] = round(1.0 - float(t[:-1].sum()), 3)
            if t[-1] < 0:
                t = np.eye(m)[int(np.argmax(p))]
        else:
            t = np.eye(m, dtype=int)[R.choice(m, p=p)]
        t = list(t) + [0] * (k - m)
        rec = [qtype, [float(x) for x in z], [float(x) if soft else int(x) for x in t]]
        if cut is not None:
            rec.append(cut)
        out.append(rec)
    return out


def main():
    # choice:3-5 and noul:2 large enough to split (>= 2,500: 80% keeps the 2,000 floor), score:3-5
    # below the floor (its type scalar only), small choice buckets, soft noul targets
    a = (bucket(0, 3, 2600, 1.7) + bucket(2, 2, 2560, 0.8) + bucket(1, 5, 300, 2.5) + bucket(0, 8, 30, 1.2)
         + bucket(0, 12, 5, 1.0) + bucket(2, 2, 40, 1.0, soft=True))
    R.shuffle(a)
    # optima beyond the clamp: T 0.3 (sharpening) and 9 (flattening)
    b = bucket(0, 2, 2000, 0.3) + bucket(2, 2, 2050, 9.0) + bucket(1, 6, 12, 4.0)
    c = bucket(0, 6, 40, 2.0, cut=4) + bucket(1, 3, 25, 0.7, soft=True)
    small = bucket(0, 3, 9, 1.0) + bucket(2, 2, 9, 1.0)
    datasets = {"a": a, "b": b, "c": c, "small": small}
    cases = []

    def pairs_of(name, qtype, width):
        return [(r[1], r[2]) for r in datasets[name] if r[0] == qtype and len(r[1]) == width]

    def rec(fn, dataset=None, args=None, pairs=None, **kwargs):
        """pairs: (dataset, qtype, width), the (logits, target) pairs of those records, kept by
        reference so the file holds each record once"""
        if dataset:
            call = [datasets[dataset]]
        elif pairs:
            call = [pairs_of(*pairs)]
        else:  # a dataset among the arguments is kept as {"$dataset": name}
            call = [datasets[x["$dataset"]] if isinstance(x, dict) and "$dataset" in x else x for x in args]
        case = {"fn": fn, "kwargs": kwargs}
        case.update({"dataset": dataset} if dataset else {"pairs": list(pairs)} if pairs else {"args": args})
        try:
            case["result"] = getattr(laya, fn)(*call, **kwargs)
        except Exception as e:  # noqa: BLE001
            case["error"] = {"kind": type(e).__name__, "message": str(e)}
        cases.append(case)

    for d in ("a", "b", "c", "small"):
        rec("fit_temperature_map", d)
    for seed in (0, 7, 123456):
        rec("fit_temperature_map", "a", compute_ece=True, seed=seed)
    rec("fit_temperature_map", "b", compute_ece=True, seed=3)
    rec("fit_temperature_map", "c", compute_ece=True, seed=0)
    for kw in ({}, {"min_n": 10}, {"min_n": 5000}, {"min_n": 1}):
        rec("fit_one_temperature", pairs=("a", 0, 3), **kw)
    rec("fit_one_temperature", pairs=("b", 0, 2))
    rec("fit_one_temperature", pairs=("b", 2, 2), min_n=100)
    rec("fit_one_temperature", pairs=("c", 1, 3), min_n=10)
    pairs = pairs_of("a", 0, 3)
    bad_records = [
        [[0, [1.0, 2.0]]], [["0", [1.0, 2.0], [0.0, 1.0]]], [[True, [1.0, 2.0], [0.0, 1.0]]],
        [[3, [1.0, 2.0], [0.0, 1.0]]], [[-1, [1.0, 2.0], [0.0, 1.0]]], [[0, [[1.0, 2.0]], [0.0, 1.0]]],
        [[0, ["a", "b"], [0.0, 1.0]]], [[0, [1.0, float("nan")], [0.0, 1.0]]], [[0, [1.0, 2.0, 3.0], [0.0, 1.0]]],
        [[0, [1.0, 2.0], [0.0, 1.0], 0]], [[0, [1.0, 2.0], [0.0, 1.0], 3]], [[0, [1.0, 2.0], [0.0, 1.0], None]],
        [[0, [1.0, 2.0], [0.0, 1.0], True]], [[0, [1.0, 2.0], [-0.5, 1.5]]], [[0, [1.0, 2.0], [0.3, 0.3]]],
        [[0, [1.0, 2.0, 3.0], [0.0, 1.0, 0.0], 2]], [[0, [1e39, 2.0], [0.0, 1.0]]], [[0, [], []]], ["x"],
        [[0, [1.0, 2.0], [0.0, 1.0], 2, 9]], [[0, [True, False], [0.0, 1.0]]], [[0, 5, [1.0]]],
    ]
    for recs in bad_records:
        rec("fit_temperature_map", args=[recs])
    for seed in (True, -1, 2 ** 32, 1.5, "7"):
        rec("fit_temperature_map", args=[small], seed=seed)
    for min_n in (0, True, 2.5, -3):
        rec("fit_one_temperature", args=[pairs[:20]], min_n=min_n)
    for p in ([(1.0, 2.0, 3.0)], [5], [([1.0, 2.0], [1.0])]):
        rec("fit_one_temperature", args=[p], min_n=1)
    # on top of fitted temperatures (Laya's own fit of "a"): binning maps and abstention thresholds
    fit = laya.fit_temperature_map(a)
    temps = [fit["temperature"], fit["temperature_by_options"]]
    for kw in ({}, {"bins": 7}, {"bins": 1}, {"min_bucket_n": 3000}, {"min_bucket_n": 30, "bins": 20}):
        rec("fit_binning_map", args=[{"$dataset": "a"}] + temps, **kw)
    bmap = laya.fit_binning_map(a, *temps)
    rec("fit_binning_map", args=[{"$dataset": "c"}, [1.3, 0.9, 2.0], {}], min_bucket_n=10)
    for kw in ({}, {"target_error": 0.3}, {"target_error": 0.0}, {"target_error": 1.0}, {"conservative": False},
               {"min_bucket_n": 1000}, {"binning_map": bmap}, {"binning_map": bmap, "target_error": 0.05},
               {"min_bucket_n": 20, "target_error": 0.2}):
        rec("fit_abstention_thresholds", args=[{"$dataset": "a"}] + temps, **kw)
    rec("fit_abstention_thresholds", args=[{"$dataset": "b"}, [0.5, 1.0, 5.0], {}], target_error=0.25, min_bucket_n=5)
    for kw in ({"bins": 0}, {"bins": True}, {"bins": 2.0}, {"min_bucket_n": 0}):
        rec("fit_binning_map", args=[{"$dataset": "small"}] + temps, **kw)
    for kw in ({"target_error": -0.1}, {"target_error": 1.5}, {"target_error": True}, {"min_bucket_n": -1},
               {"min_bucket_n": 1.5}):
        rec("fit_abstention_thresholds", args=[{"$dataset": "small"}] + temps, **kw)
    for conf in (0.0, 0.05, 0.5, 0.6666, 0.99, 1.0, 1.2, -0.3):
        for key in ("choice:3-5", "noul:2", "score:11+"):
            rec("apply_binning_map", args=[conf, key, bmap])
    rec("apply_binning_map", args=[0.5, "choice:3-5", {"choice:3-5": {"bins": 4, "values": [0.1, 0.2, 0.3, 0.4]}}])
    rec("apply_binning_map", args=[0.5, "choice:3-5", {"choice:3-5": {}}])
    path = os.path.join(REPO, "tests/fixtures/calibrate/cases.json")
    with open(path, "w") as f:
        json.dump({"datasets": datasets, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s: %d cases, %d KB" % (path, len(cases), os.path.getsize(path) // 1024))


if __name__ == "__main__":
    main()
