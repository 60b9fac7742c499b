#!/usr/bin/env python3
"""jevclient (PyPI, an async Jev client nobody here wrote) against a running laya-serve.

    PY=/path/to/python>=3.12-with-jevclient
    $PY jevclient_check.py URL API_KEY      # one line per check, then "N passed, M failed"

jevclient needs Python >= 3.12 (it uses the `type` statement); scripts/setup.sh makes
build/jev-client with it when such a Python is found (tests/serve/jevclient-requirements.txt).
"""
import asyncio
import math
import sys

import jevclient as jc

URL, KEY = sys.argv[1], sys.argv[2]
passed, failed = [], []


def check(name, cond, detail=""):
    (passed if cond else failed).append(name)
    print("%s %s %s" % ("ok  " if cond else "FAIL", name, detail))


QS = {
    "team": jc.Choice("Which team should handle this?",
                      {"billing": "payments and invoices", "tech": "bugs and crashes", "sales": None}),
    "upset": jc.Score("How upset is the customer?", ["calm", "annoyed", "angry"]),
    "refund": jc.Noul("Is the customer asking for money back?"),
    "legal": jc.Noul("Does this threaten legal action?", true="mentions a lawyer or court", false="no such threat"),
}
STATE = "I was charged twice for order 4471, please refund the second payment."


def near(a, b, tol=1e-6):
    return abs(a - b) <= tol


async def main():
    async with jc.JevClient(KEY, base_url=URL) as jev:
        r = await jev.ask(STATE, QS)
        check("ask.keys", set(r.answers) == set(QS), repr(sorted(r.answers)))
        team, upset, refund = r["team"], r["upset"], r["refund"]
        check("ask.choice.type", isinstance(team, jc.ChoiceAnswer))
        check("ask.choice.value", team.choice in ("billing", "tech", "sales"), team.choice)
        check("ask.choice.distribution", set(team.probabilities) == {"billing", "tech", "sales"}
              and near(sum(team.probabilities.values()), 1.0, 1e-3)
              and team.probabilities[team.choice] == max(team.probabilities.values()), repr(team.probabilities))
        check("ask.choice.confidence", 0.0 <= team.confidence <= 1.0, repr(team.confidence))
        check("ask.score.type", isinstance(upset, jc.ScoreAnswer))
        check("ask.score.range", 0.0 <= upset.score <= 2.0 and 0.0 <= upset.normalized <= 1.0, repr(upset.score))
        check("ask.score.distribution", len(upset.probabilities) == 3
              and near(sum(upset.probabilities.values()), 1.0, 1e-3), repr(upset.probabilities))
        # the score is the probability-weighted level (what the client documents it as); the
        # distribution is keyed by level index
        check("ask.score.keys", sorted(upset.probabilities) == ["0", "1", "2"], repr(upset.probabilities))
        expect = sum(int(k) * p for k, p in upset.probabilities.items() if k.isdigit())
        check("ask.score.weighted", near(expect, upset.score, 2e-3), "score %r, weighted %r" % (upset.score, expect))
        check("ask.noul", isinstance(refund, jc.NoulAnswer) and 0.0 <= refund.noul <= 1.0, repr(refund))
        check("ask.noul.criteria", isinstance(r["legal"], jc.NoulAnswer) and 0.0 <= r["legal"].noul <= 1.0)
        check("ask.usage", r.usage.input_tokens > 0 and r.usage.output_tokens == 0, repr(r.usage))
        check("ask.model", isinstance(r.model, str) and r.model != "", repr(r.model))

        # the same request twice answers the same (one model, deterministic)
        r2 = await jev.ask(STATE, QS)
        check("ask.deterministic", r2["refund"].noul == refund.noul and r2["team"].probabilities == team.probabilities)

        # a JSON object as the state, and structured criteria
        r3 = await jev.ask({"ticket": 4471, "text": "app crashes at start"},
                           {"team": jc.Choice({"task": "route"}, {"billing": {"about": "money"}, "tech": ["bugs"]})})
        check("ask.object_state", r3["team"].choice in ("billing", "tech"), repr(r3.answers))

        # 16 concurrent asks on one session (the server batches them across requests)
        states = ["message %d: please refund me" % i for i in range(16)]
        rs = await asyncio.gather(*[jev.ask(s, {"refund": QS["refund"]}) for s in states])
        check("ask.concurrent16", len(rs) == 16 and all(0.0 <= x["refund"].noul <= 1.0 for x in rs))
        solo = await jev.ask(states[5], {"refund": QS["refund"]})
        check("ask.concurrent_matches_alone", math.isclose(solo["refund"].noul, rs[5]["refund"].noul, abs_tol=1e-9),
              "%r vs %r" % (solo["refund"].noul, rs[5]["refund"].noul))

        # a choice over Laya's 100-option cap: the client allows 255; the server answers 413 as
        # Laya's does, which the client raises as a validation error naming the cap
        many = {"opt%d" % i: None for i in range(101)}
        try:
            await jev.ask(STATE, {"big": jc.Choice("Pick one", many)})
            check("validation.choice_cap", False, "no error")
        except jc.JevValidationError as e:
            check("validation.choice_cap", e.status == 413 and "too many choice options" in str(e),
                  "status %r: %s" % (e.status, e))

        # a Box question (images are not a Laya feature): refused as invalid, not a crash
        try:
            await jev.ask(STATE, {"where": jc.Box("the parcel")})
            check("validation.box", False, "no error")
        except jc.JevValidationError as e:
            check("validation.box", e.status in (400, 422), "status %r" % e.status)

    # a wrong key and no key at all are auth errors
    for name, key in (("auth.wrong_key", KEY + "x"), ("auth.no_key", "")):
        async with jc.JevClient(key, base_url=URL) as bad:
            try:
                await bad.ask(STATE, {"refund": QS["refund"]})
                check(name, False, "no error")
            except jc.JevAuthError as e:
                check(name, e.status == 401, "status %r" % e.status)

    # nothing listening: a connection error, not a hang
    async with jc.JevClient(KEY, base_url="http://127.0.0.1:9", timeout=5) as gone:
        try:
            await gone.ask(STATE, {"refund": QS["refund"]})
            check("connection.refused", False, "no error")
        except jc.JevConnectionError:
            check("connection.refused", True)


asyncio.run(main())
print("%d passed, %d failed" % (len(passed), len(failed)))
sys.exit(1 if failed else 0)
