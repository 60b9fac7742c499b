#!/usr/bin/env python3
"""Clients nobody here wrote, against a running server: the official TypeSafe Python SDK
(`typesafe-sdk`, sync and async clients, auth, errors) and the `jevcompat` conformance suite.

    PY=/path/to/python-with-typesafe-sdk-jevcompat
    $PY clients_check.py URL [API_KEY]      # prints one line per check, "N passed, M failed"

Needs: pip install typesafe-sdk jevcompat (jevclient needs Python >= 3.12).
jevcompat's verdict for laya-serve is "not conformant" by Laya's own design (choice questions
are capped at 100 options; Python laya-serve 0.4.15 gets the identical per-requirement result),
so this script checks that every MUST except choice.options passes.
"""
import asyncio
import json
import os
import subprocess
import sys
import tempfile

import typesafe_sdk as ts

URL, KEY = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
passed, failed = [], []


def check(name, cond, detail=""):
    (passed if cond else failed).append(name)
    print("%s %s %s" % ("ok  " if cond else "FAIL", name, detail))


QS = {
    "team": ts.Choice(instructions="Which team should handle this?",
                      criteria={"billing": "payments", "tech": "bugs", "sales": "pricing"}),
    "upset": ts.Score(instructions="How upset is the customer?", criteria=["calm", "annoyed", "angry"]),
    "refund": ts.Noul(instructions="Is the customer asking for money back?"),
}
STATE = "I was charged twice for order 4471, please refund the second payment."

client = ts.TypeSafeClient(api_key=KEY or "unused", base_url=URL, model="jev-latest")
r = client.system_one(STATE, QS)
check("sdk.sync.parse", isinstance(r, ts.SystemOneResponse) and set(r.answers) == {"team", "upset", "refund"})
check("sdk.sync.choice", isinstance(r.answers["team"], ts.ChoiceAnswer) and r.answers["team"].choice in ("billing", "tech", "sales"))
check("sdk.sync.score", isinstance(r.answers["upset"], ts.ScoreAnswer) and 0 <= r.answers["upset"].score <= 2)
check("sdk.sync.noul", isinstance(r.answers["refund"], ts.NoulAnswer) and 0 <= r.answers["refund"].noul <= 1)
check("sdk.sync.usage", r.usage.input_tokens > 0 and r.usage.output_tokens == 0)
r2 = client.system_one({"ticket": 4471, "text": "app crashes at start"}, {"team": QS["team"]})
check("sdk.sync.object_state", r2.answers["team"].choice in ("billing", "tech", "sales"))


async def run_async():
    async with ts.AsyncTypeSafeClient(api_key=KEY or "unused", base_url=URL) as ac:
        rs = await asyncio.gather(*[ac.system_one("message %d: refund me" % i, {"refund": QS["refund"]}) for i in range(16)])
        return rs


rs = asyncio.run(run_async())
check("sdk.async.concurrent16", len(rs) == 16 and all(0 <= x.answers["refund"].noul <= 1 for x in rs))

try:
    client.system_one(STATE, {"bad": ts.Score(instructions="x", criteria=["a"] * 40)})
    check("sdk.error.413", False, "no error raised")
except ts.TypeSafeAPIError as e:
    check("sdk.error.413", " 413 " in str(e) and "too many score levels" in str(e), repr(e)[:160])

if KEY:
    bad = ts.TypeSafeClient(api_key="wrong-key", base_url=URL)
    try:
        bad.system_one(STATE, {"refund": QS["refund"]})
        check("sdk.auth.wrong_key", False, "answered without the key")
    except ts.TypeSafeAuthenticationError:
        check("sdk.auth.wrong_key", True)
    except ts.TypeSafeAPIError as e:
        check("sdk.auth.wrong_key", False, repr(e)[:160])

with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "r.json")
    cmd = [os.path.join(os.path.dirname(sys.executable), "jevcompat"), "test", URL, "--json", out]
    if KEY:
        cmd += ["--key", KEY]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    rep = json.load(open(out))
    musts = {x["id"]: x["status"] for x in rep["results"] if x["level"] == "MUST"}
    failing = sorted(k for k, v in musts.items() if v == "fail")
    check("jevcompat.musts", failing == ["choice.options"], "failing MUSTs: %s; summary %s" % (failing, rep["summary"]))
    check("jevcompat.sdk_dropin", musts.get("dropin.sdk-python") == "pass")

print("%d passed, %d failed" % (len(passed), len(failed)))
sys.exit(1 if failed else 0)
