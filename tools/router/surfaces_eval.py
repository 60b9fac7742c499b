"""A small labelled dataset and the real laya 0.4.15 evaluation metrics on it.

    /opt/layaref/bin/python tools/router/surfaces_eval.py tests/fixtures/surfaces

Writes eval_dataset.jsonl (choice, noul and score questions, tags, languages) and
eval_expected.json: laya.evals.evaluate's overall and per-slice metrics on the tiny
modernbert checkpoint, one example per call and in chunks of 4 (latency numbers are dropped:
they are timings, not results). tests/cli checks `laya eval run` against it.
"""
import json
import os
import random
import sys
import warnings

import laya
from laya import evals

warnings.simplefilter("ignore")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
rng = random.Random(11)

QS = {
    "intent": {"type": "choice", "instructions": "What does `message` want?",
               "criteria": {"refund": "money back", "help": "technical help", "other": None}},
    "urgent": {"type": "noul", "instructions": "Is `message` urgent?"},
    "anger": {"type": "score", "instructions": "How angry is `message`?",
              "criteria": ["calm", "cross", "furious"]},
}
TEXTS = [
    ("I was charged twice, refund me now!", "refund", True, 2, "en"),
    ("The app crashes when I open settings", "help", False, 1, "en"),
    ("Just saying hi, lovely product", "other", False, 0, "en"),
    ("Bitte erstatten Sie den doppelten Betrag sofort", "refund", True, 2, "de"),
    ("Mon colis est en retard depuis une semaine", "other", True, 1, "fr"),
    ("Login fails with error 500 since this morning", "help", True, 1, "en"),
    ("Can I get my money back for the unused month?", "refund", False, 0, "en"),
    ("No me funciona la aplicación, ayuda por favor", "help", False, 1, "es"),
]


def main(out_dir):
    rows = []
    for i in range(40):
        text, intent, urgent, anger, lang = TEXTS[i % len(TEXTS)]
        suffix = " " + " ".join(rng.choice(["please", "thanks", "today", "asap", "order 123"])
                                for _ in range(rng.randint(0, 4)))
        expected = {"intent": intent, "urgent": urgent, "anger": anger}
        if i % 5 == 4:
            expected = {"urgent": urgent}
        rows.append({"state": {"message": text + suffix}, "questions": QS, "expected": expected,
                     "tags": ["t%d" % (i % 3)] + (["vip"] if i % 7 == 0 else []), "language": lang})
    path = os.path.join(out_dir, "eval_dataset.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# laya.c eval parity dataset (tools/router/surfaces_eval.py)\n")
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        fh.write("\n")
    agent = laya.load(os.path.join(ROOT, "tests", "fixtures", "ckpt", "modernbert-tiny"), device="cpu")
    dataset = evals.Dataset.from_jsonl(path)
    out = {}
    for bs in (None, 4):
        rep = evals.evaluate(agent, dataset, batch_size=bs)
        drop = lambda m: {k: v for k, v in m.items() if "_ms" not in k}  # noqa: E731
        out["batch_size=%s" % bs] = {"overall": drop(rep.overall),
                                     "slices": {d: {k: drop(v) for k, v in s.items()}
                                                for d, s in rep.slices.items()}}
    with open(os.path.join(out_dir, "eval_expected.json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    print(json.dumps(out["batch_size=None"]["overall"], indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
