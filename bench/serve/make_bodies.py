#!/usr/bin/env python3
"""Laya-like request bodies for the load test: 3 questions (choice, score, noul) over support
tickets of about 50 to 450 tokens, one JSON body per line. Deterministic (seeded).

    make_bodies.py OUT.jsonl [N=256] [--light]

--light writes requests with no questions (Laya answers them without a forward pass): the
whole HTTP, validation, routing, scheduler and JSON path at thousands of requests a second, for
the memory soak.
"""
import json
import random
import sys

WORDS = ("order invoice charged twice refund payment card account login password reset app crash error "
         "shipping parcel late delivery address upgrade plan pricing discount cancel subscription support "
         "agent please help thanks urgent today yesterday week month customer number email phone update "
         "settings screen button page loading slow broken fixed working again still not received").split()

QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which team should handle this ticket?",
             "criteria": {"billing": "payments, invoices, refunds", "technical": "bugs, crashes, login problems",
                          "shipping": "deliveries, parcels, addresses", "sales": "plans, pricing, upgrades"}},
    "urgency": {"type": "score", "instructions": "How urgent is this ticket?",
                "criteria": ["can wait", "soon", "today", "right now"]},
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
}


def main():
    light = "--light" in sys.argv
    argv = [a for a in sys.argv if a != "--light"]
    out, n = argv[1], int(argv[2]) if len(argv) > 2 else 256
    rng = random.Random(20261129)
    with open(out, "w") as f:
        for i in range(n):
            words = rng.randint(40, 380)  # about 1.2 tokens a word: ~50-450 state tokens
            text = " ".join(rng.choice(WORDS) for _ in range(words))
            state = {"ticket": 10000 + i, "subject": "ticket %d" % i, "body": text}
            f.write(json.dumps({"state": state, "questions": {} if light else QUESTIONS}) + "\n")


if __name__ == "__main__":
    main()
