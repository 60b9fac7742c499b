#!/usr/bin/env python3
"""laya_c.clean_email_body / laya_c.email_state against the real laya's answers.

Replays tests/fixtures/email/cases.jsonl (tools/ref/gen_email.py ran laya==0.4.15 on it) through
the Python binding: the same values, the same exception classes and messages.
usage: test_email.py FIXTURES_DIR
"""
import json
import os
import sys

import laya_c

fixtures = sys.argv[1]
bad = n = 0
for line in open(os.path.join(fixtures, "email", "cases.jsonl"), encoding="ascii"):
    c = json.loads(line)
    fn = getattr(laya_c, c["fn"])
    n += 1
    try:
        got = fn(**c["kwargs"])
    except Exception as e:  # noqa: BLE001 - compared with what Laya raised
        if "error" not in c or type(e).__name__ != c["error"]["kind"] or str(e) != c["error"]["message"]:
            bad += 1
            print("FAIL %s: raised %s: %s; want %r" % (c["id"], type(e).__name__, e, c.get("error") or c.get("expect")))
        continue
    want = c.get("expect")
    if c["fn"] == "email_state" and want is not None:
        ok = json.dumps(got, ensure_ascii=False) == want
    else:
        ok = "error" not in c and got == want
    if not ok:
        bad += 1
        print("FAIL %s: got %r, want %r" % (c["id"], got, c.get("error") or want))
print("test_email.py: %d cases, %d differ from laya" % (n, bad))
sys.exit(1 if bad or n < 700 else 0)
