#!/usr/bin/env python3
"""Write the tournament fixtures by running the real laya==0.4.15 package on CPU in fp32.

  tests/fixtures/shortlist/<ckpt>/tournament.jsonl   requests and what laya.shortlist.predict_tournament
                                                     returned (or raised), and the RuntimeWarnings it gave
  tests/fixtures/shortlist/router_tournament.jsonl   the same over a laya.Router of both tiny checkpoints
                                                     (ROUTER_CONFIG, ckpt paths relative to --ckpt-root):
                                                     the route keys (model, task, lang, lang_guess) go to
                                                     every call, and each call routes on its own questions

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


# The Router of the router cases: both tiny checkpoints under Laya's names, and typed-decisions on
# the multilingual one so that a workflow's question ids (auto_task_detection) route the final call
# elsewhere than the rounds, whose ids ("0", "1", ...) match no workflow.
ROUTER_CONFIG = {"models": {"english": "modernbert-tiny", "multilingual": "mmbert-tiny",
                            "typed-decisions": "mmbert-tiny"},
                 "auto_task_detection": True, "default": "multilingual"}
EN = "Hello, I was charged twice for my subscription this month and I would like a refund please."
DE = "Hallo, ich wurde diesen Monat zweimal für mein Abonnement belastet und möchte bitte eine Erstattung."


def build_router_cases(names, descs):
    rnd = random.Random("router-tournament")
    cases = []

    def choice(n, style, instr="Which label fits the message best?"):
        labels = rnd.sample(names, n)
        q = {"type": "choice", "instructions": instr}
        q["criteria"] = {lab: rnd.choice(descs) for lab in labels} if style == "dict" else labels
        return q

    def add(cid, req):
        cases.append({"id": cid, "request": req})

    add("auto-english", {"state": EN, "questions": {"q": choice(40, "dict")}})
    add("auto-multilingual", {"state": DE, "questions": {
        "team": choice(30, "list", "Which team owns it?"),
        "urgent": {"type": "noul", "instructions": "Is it urgent?"},
        "small": choice(4, "dict", "Which of these few?")}, "group_size": 8})
    add("explicit-model", {"state": DE, "questions": {"q": choice(20, "list")}, "model": "english", "group_size": 4})
    add("explicit-lang", {"state": EN, "questions": {"q": choice(25, "dict")}, "lang": "fr", "head_max_len": 256,
                          "group_size": 6})
    add("lang-guess", {"state": EN, "questions": {"q": choice(12, "list")}, "lang_guess": "de", "group_size": 3,
                       "min_confidence": 0.3})
    add("task", {"state": EN, "questions": {"q": choice(18, "list")}, "task": "multilingual", "group_size": 5})
    # the caller's ids are a typed-decisions workflow's: the rounds route by language (english), the
    # final call to typed-decisions
    add("workflow-final-elsewhere", {"state": EN, "questions": {
        "action": choice(24, "list", "What should happen next?"),
        "category": choice(3, "list", "Which category?"),
        "churn_risk": {"type": "noul", "instructions": "Will the customer leave?"},
        "needs_human": {"type": "noul", "instructions": "Does a person need to look?"},
        "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "medium", "high"]}},
        "group_size": 6})
    add("no-round", {"state": DE, "questions": {"q": choice(7, "dict")}})
    add("error-unknown-model", {"state": EN, "questions": {"q": choice(20, "list")}, "model": "nosuch", "group_size": 4})
    add("error-state-none", {"state": None, "questions": {"q": choice(20, "list")}, "group_size": 4})
    add("error-group-1", {"state": EN, "questions": {"q": choice(5, "list")}, "group_size": 1, "model": "nosuch"})
    return cases


def record(line, call, counts):
    """Run call() (a predict_tournament) into line: its result or error, and its RuntimeWarnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            line["result"] = call()
            for entry in line["result"]["tournament"].values():
                counts["rounds_max"] = max(counts["rounds_max"], entry["rounds"])
        except Exception as e:  # every laya failure is part of the fixture
            line["error"] = {"kind": type(e).__name__, "message": str(e)}
            counts["errors"] += 1
    line["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    counts["cases"] += 1


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
                record(line, lambda: shortlist.predict_tournament(agent, st, qs, **kw), counts)
                f.write(gen_shortlist.dumps(line) + "\n")
        print("%s: %s" % (ckpt, counts))

    cfg = json.loads(json.dumps(ROUTER_CONFIG))
    cfg["models"] = {k: os.path.join(args.ckpt_root, v) for k, v in cfg["models"].items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        router = laya.Router(device="cpu", **cfg)
    counts = {"cases": 0, "errors": 0, "rounds_max": 0}
    with open(os.path.join(args.out, "router_tournament.jsonl"), "w", encoding="utf-8") as f:
        f.write(gen_shortlist.dumps({"router": ROUTER_CONFIG}) + "\n")
        for case in build_router_cases(names, descs):
            req = json.loads(json.dumps(case["request"]))
            st, qs = req.pop("state"), req.pop("questions")
            line = dict(case)
            record(line, lambda: shortlist.predict_tournament(router, st, qs, **req), counts)
            # routing's repo is the checkpoint's folder: written as {CKPT}/<name> (the replay's own)
            f.write(gen_shortlist.dumps(line).replace(json.dumps(args.ckpt_root)[1:-1], "{CKPT}") + "\n")
    print("router: %s" % counts)


if __name__ == "__main__":
    main()
