#!/usr/bin/env python3
"""Write the tournament fixtures by running the real laya==0.4.15 package on CPU in fp32.

  tests/fixtures/shortlist/<ckpt>/tournament.jsonl   requests and what laya.shortlist.predict_tournament
                                                     returned (or raised), and the RuntimeWarnings it gave

A line: {"id": str, "request": {"state", "questions", "group_size"?, predict's keyword arguments},
         "result": <predict_tournament's return value> | "error": {"kind", "message"},
         "warnings": [str]}

Labels, descriptions and states come from gen_shortlist.py's Faker pools, so both fixture sets share
their vocabulary. Usage: gen_tournament.py [--out DIR] [--ckpt-root DIR]. Deterministic: one torch
thread, fixed seeds, PYTHONHASHSEED=0; a re-run writes identical bytes.
"""
import argparse
import json
import os
import random
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import gen_shortlist  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


def build_cases(ckpt, names, descs, states):
    rnd = random.Random("tournament-" + ckpt)
    cases = []

    def choice(n, style, instr="Which label fits the message best?"):
        labels = rnd.sample(names, n)
        q = {"type": "choice"}
        if instr is not None:
            q["instructions"] = instr
        q["criteria"] = {lab: rnd.choice(descs) for lab in labels} if style == "dict" else labels
        return q

    def state():
        return rnd.choice(states)

    def add(cid, req):
        cases.append({"id": cid, "request": req})

    add("one-round-dict", {"state": state(), "questions": {"q": choice(40, "dict")}})
    add("two-rounds-list", {"state": state(), "questions": {"q": choice(300, "list")}})
    add("no-round", {"state": state(), "questions": {"q": choice(10, "dict")}})
    add("exact-group", {"state": state(), "questions": {"q": choice(16, "list")}})
    add("group-plus-one", {"state": state(), "questions": {"q": choice(17, "list")}})
    add("group-2", {"state": state(), "questions": {"q": choice(9, "dict")}, "group_size": 2})
    add("group-5-uneven", {"state": state(), "questions": {"q": choice(23, "list")}, "group_size": 5})
    add("mixed-questions", {"state": {"subject": state(), "body": state()}, "questions": {
        "team": choice(50, "dict", "Which team owns it?"),
        "urgent": {"type": "noul", "instructions": "Is it urgent?"},
        "tone": {"type": "score", "instructions": "How polite is it?", "criteria": ["rude", "neutral", "polite"]},
        "small": choice(5, "list", "Which of these few?"),
        "dept": choice(70, "list", "Which department?"),
    }, "group_size": 8})
    q = choice(30, "dict")
    q["option_order"] = list(reversed(range(30)))
    add("option-order-narrowed", {"state": state(), "questions": {"q": q}, "group_size": 8})
    q = choice(6, "dict")
    q["option_order"] = [5, 4, 3, 2, 1, 0]
    add("option-order-no-round", {"state": state(), "questions": {"q": q}, "group_size": 8})
    add("kwargs-head-max-len", {"state": state(), "questions": {"q": choice(60, "dict")}, "head_max_len": 320})
    add("kwargs-min-confidence", {"state": state(), "questions": {"q": choice(40, "list")}, "min_confidence": 0.4})
    ok = choice(20, "dict")
    add("error-group-1", {"state": state(), "questions": {"q": ok}, "group_size": 1})
    add("error-group-bool", {"state": state(), "questions": {"q": ok}, "group_size": True})
    add("error-group-float", {"state": state(), "questions": {"q": ok}, "group_size": 2.5})
    add("error-questions-list", {"state": state(), "questions": [ok], "group_size": 4})
    add("error-no-criteria", {"state": state(), "questions": {"q": {"type": "choice", "instructions": "?"}}})
    add("error-duplicate-label", {"state": state(), "questions": {"q": {"type": "choice", "criteria": ["a", "b", "a"]}}})
    add("error-criteria-string", {"state": state(), "questions": {"q": {"type": "choice", "criteria": "abc"}}})
    add("error-empty-criteria", {"state": state(), "questions": {"q": {"type": "choice", "criteria": []}}})
    return cases


def main():
    corpus.pin_hash_seed()
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "shortlist"))
    ap.add_argument("--ckpt-root", default=os.path.join(REPO, "tests", "fixtures", "ckpt"))
    args = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    import laya
    from laya import shortlist

    names, descs, states = gen_shortlist.pools()
    for ckpt in ("modernbert-tiny", "mmbert-tiny"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = laya.Agent(os.path.join(args.ckpt_root, ckpt), device="cpu")
        counts = {"cases": 0, "errors": 0, "rounds_max": 0}
        with open(os.path.join(args.out, ckpt, "tournament.jsonl"), "w", encoding="utf-8") as f:
            for case in build_cases(ckpt, names, descs, states):
                req = json.loads(json.dumps(case["request"]))  # the call must not see the recorded copy
                kw = dict(req)
                st, qs = kw.pop("state"), kw.pop("questions")
                line = dict(case)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        line["result"] = shortlist.predict_tournament(agent, st, qs, **kw)
                        for entry in line["result"]["tournament"].values():
                            counts["rounds_max"] = max(counts["rounds_max"], entry["rounds"])
                    except Exception as e:  # every laya failure is part of the fixture
                        line["error"] = {"kind": type(e).__name__, "message": str(e)}
                        counts["errors"] += 1
                line["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
                counts["cases"] += 1
                f.write(gen_shortlist.dumps(line) + "\n")
        print("%s: %s" % (ckpt, counts))


if __name__ == "__main__":
    main()
