#!/usr/bin/env python3
"""laya_c's confidence helpers against the real laya 0.4.15 (tests/fixtures/confidence/cases.jsonl,
tools/ref/gen_confidence.py): answer_confidence, confidence_from_probs, ece_score, jev_confidence,
check_min_confidence(_map), resolve_min_confidence, and the in-place gates flag_low_confidence /
apply_confidence_gate (the results as each call leaves them). The same values (floats within 1e-12,
relative: Laya sums with numpy, we in Python), the same exception classes and messages.

  test_confidence.py FIXTURES
"""
import copy
import importlib
import json
import math
import os
import sys

import laya_c


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool) != isinstance(b, bool):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def main():
    path = os.path.join(sys.argv[1], "confidence", "cases.jsonl")
    cases = [json.loads(line) for line in open(path) if line.strip()]
    bad, by_fn = 0, {}
    for i, c in enumerate(cases):
        fn = getattr(laya_c, c["fn"])
        args = copy.deepcopy(c["args"])
        try:
            got, err = fn(*args, **c["kwargs"]), None
        except Exception as e:  # noqa: BLE001 - compared with what Laya raised
            got, err = None, e
        if "error" in c:
            ok = err is not None and type(err).__name__ == c["error"]["kind"] and str(err) == c["error"]["message"]
        else:
            ok = err is None and same(got, c["result"]) and ("after" not in c or same(args[0], c["after"]))
        if not ok:
            bad += 1
            if bad <= 20:
                print("FAIL #%d %s%r: got %r%s, want %r" % (i, c["fn"], tuple(c["args"])[:2],
                      err if err is not None else got, "" if "after" not in c else " after %r" % (args[0],),
                      c.get("error", c.get("result"))))
        n_ok, n = by_fn.get(c["fn"], (0, 0))
        by_fn[c["fn"]] = (n_ok + ok, n + 1)
    for name, (n_ok, n) in sorted(by_fn.items()):
        print("%-24s %d/%d as Laya's" % (name, n_ok, n))
    # Laya's import paths for the same names (laya.common, laya.confidence, laya.calibrate)
    mod_of = importlib.import_module
    for mod, names in ((mod_of("laya_c.common"), ("answer_confidence", "confidence_from_probs", "ece_score", "QTYPES",
                                        "QTYPE_NAMES", "clamp_temperature", "temp_bucket", "TEMP_MIN", "TEMP_MAX")),
                       (mod_of("laya_c.confidence"), ("check_min_confidence", "apply_confidence_gate", "GATE_STATES",
                                            "jev_confidence", "resolve_min_confidence", "flag_low_confidence")),
                       (mod_of("laya_c.calibrate"), ("fit_temperature_map", "fit_one_temperature", "fit_binning_map",
                                           "apply_binning_map", "fit_abstention_thresholds"))):
        missing = [n for n in names if not hasattr(mod, n)]
        if missing:
            bad += 1
            print("FAIL %s lacks %s" % (mod.__name__, missing))
    # the constants
    want = {"QTYPES": {"choice": 0, "score": 1, "noul": 2}, "QTYPE_NAMES": {0: "choice", 1: "score", 2: "noul"},
            "GATE_STATES": ("passed", "abstained", "unevaluated")}
    for name, value in want.items():
        if getattr(laya_c, name) != value:
            bad += 1
            print("FAIL %s = %r" % (name, getattr(laya_c, name)))
    print("test_confidence.py: %d cases, %d differ from laya" % (len(cases), bad))
    sys.exit(1 if bad or len(cases) < 700 or len(by_fn) < 8 else 0)


if __name__ == "__main__":
    main()
