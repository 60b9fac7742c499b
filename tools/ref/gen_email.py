#!/usr/bin/env python3
"""Write tests/fixtures/email/cases.jsonl: laya==0.4.15's email cleaning on email_corpus.py.

Every line is one call of the real `laya.clean_email_body` or `laya.email_state`:
  {"id", "fn", "kwargs", "expect"}  where expect is clean_email_body's str, or email_state's dict
                                    as json.dumps(state, ensure_ascii=False) text;
  {"id", "fn", "kwargs", "error": {"kind", "message"}}  for a call Laya refuses.
The file is written with ensure_ascii=True (so lone surrogates survive). tests/core/test_email.c
replays it through laya_clean_email / laya_email_state and compares byte for byte.
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

corpus.pin_hash_seed()

import laya  # noqa: E402
import email_corpus  # noqa: E402

OUT = os.path.join(HERE, "..", "..", "tests", "fixtures", "email", "cases.jsonl")


def call(fn_name, kwargs):
    fn = getattr(laya, fn_name)
    try:
        r = fn(**kwargs)
    except Exception as e:  # noqa: BLE001 - the fixture records what Laya raises
        return {"error": {"kind": type(e).__name__, "message": str(e)}}
    if fn_name == "email_state":
        return {"expect": json.dumps(r, ensure_ascii=False)}
    return {"expect": r}


def main():
    rng = random.Random(7)
    rows = []
    mails = email_corpus.corpus()
    for mid, lang, subject, body, sender in mails:
        rows.append((mid, "clean_email_body", {"body": body}))
        kw = {"subject": subject, "body": body}
        if sender is not None:
            kw["sender"] = sender
        r = rng.random()
        if r < 0.15:
            kw["max_chars"] = rng.choice([0, 40, 200, -5, 5000])
        elif r < 0.22:
            kw["clean"] = False
        if rng.random() < 0.3:
            kw["thread_id"] = rng.choice([None, "T-%d" % rng.randint(1, 999), 42])
        if rng.random() < 0.1:
            kw["lang"] = lang
        rows.append((mid + "-state", "email_state", kw))
    for cid, kwargs in email_corpus.edge_cases():
        rows.append(("edge-" + cid, "clean_email_body", kwargs))
    for cid, kwargs in email_corpus.fragment_cases():
        rows.append((cid, "clean_email_body", kwargs))
    for cid, kwargs in email_corpus.fold_cases():
        rows.append((cid, "clean_email_body", kwargs))
    state_edges = [
        ("state-min", {"subject": "  Hi  ", "body": "Please refund.\n\nThanks,\nAnn"}),
        ("state-none", {"subject": None, "body": None}),
        ("state-falsy-subject", {"subject": 0, "body": "x"}),
        ("state-sender-empty", {"subject": "s", "body": "b", "sender": ""}),
        ("state-sender-obj", {"subject": "s", "body": "b", "sender": {"name": "Ann"}}),
        ("state-sender-zero", {"subject": "s", "body": "b", "sender": 0}),
        ("state-from-extra", {"subject": "s", "body": "b", "sender": "a@x", "from": "b@y"}),
        ("state-from-extra-nosender", {"subject": "s", "body": "b", "priority": 1, "from": "b@y"}),
        ("state-from-extra-none", {"subject": "s", "body": "b", "sender": "a@x", "from": None}),
        ("state-extras", {"subject": "s", "body": "b", "thread_id": None, "tags": ["a", "b"], "n": 1.5}),
        ("state-clean-false", {"subject": "s", "body": "On Mon, Ann wrote:\n> x", "clean": False}),
        ("state-clean-false-number", {"subject": "s", "body": 5, "clean": False}),
        ("state-clean-zero", {"subject": "s", "body": "hi\n> q", "clean": 0}),
        ("state-clean-false-float-budget", {"subject": "s", "body": "b", "clean": False, "max_chars": 1.5}),
        ("state-budget", {"subject": "s", "body": "abcdef", "max_chars": 3}),
        ("state-unicode", {"subject": "\u3000Olá\u00a0", "body": "Zoë ✓", "sender": "Zoë <z@x>"}),
        # refusals
        ("err-state-missing-body", {"subject": "s"}),
        ("err-state-missing-both", {}),
        ("err-state-subject-int", {"subject": 5, "body": "b"}),
        ("err-state-body-int", {"subject": "s", "body": 5}),
        ("err-state-budget-float", {"subject": "s", "body": "b", "max_chars": 10.0}),
        ("err-state-budget-none", {"subject": "s", "body": "b", "max_chars": None}),
        ("err-state-budget-str", {"subject": "s", "body": "b", "max_chars": "100"}),
    ]
    for cid, kwargs in state_edges:
        rows.append((cid, "email_state", kwargs))
    clean_errors = [
        ("err-clean-missing", {}),
        ("err-clean-unexpected", {"body": "x", "subject": "y"}),
        ("err-clean-body-list", {"body": ["x"]}),
        ("err-clean-budget-list", {"body": "x", "max_chars": [1]}),
        ("err-clean-budget-dict", {"body": "x", "max_chars": {}}),
        ("clean-body-empty-list", {"body": []}),
    ]
    for cid, kwargs in clean_errors:
        rows.append((cid, "clean_email_body", kwargs))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="ascii") as f:
        for cid, fn, kwargs in rows:
            rec = {"id": cid, "fn": fn, "kwargs": kwargs}
            rec.update(call(fn, kwargs))
            f.write(json.dumps(rec, ensure_ascii=True) + "\n")
    langs = sorted({m[1] for m in mails})
    print("%d cases (%d corpus emails in %d languages: %s) -> %s"
          % (len(rows), len(mails), len(langs), " ".join(langs), os.path.relpath(OUT)))


if __name__ == "__main__":
    main()
