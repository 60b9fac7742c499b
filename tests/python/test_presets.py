#!/usr/bin/env python3
"""laya_c's preset builders (triage_questions, email_questions, ...) and presets.state_field
against the real laya 0.4.15 (tests/fixtures/surfaces/presets_api.jsonl, tools/ref/gen_presets_api.py):
the same question ids in the same order, the same types, the same option labels / level counts,
and the same state field, in laya.c's own wording (which must differ from Laya's: the fixture's
laya_presets/<name>.json holds Laya's exported questions). state_field on the recorded inputs,
errors included.

  test_presets.py FIXTURES
"""
import json
import os
import sys

import laya_c
from laya_c import presets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "ref"))
from fixture_forms import preset_shape  # noqa: E402  (the fixture's shape, as its generator writes it)


def main():
    fx = sys.argv[1]
    rows = [json.loads(line) for line in open(os.path.join(fx, "surfaces", "presets_api.jsonl"), encoding="utf-8")]
    cats = {"orders": "order status", "returns": "sending something back", "other": "anything else"}
    build = {"triage": laya_c.triage_questions, "email": laya_c.email_questions,
             "email+categories": lambda: laya_c.email_questions(cats), "email+empty": lambda: laya_c.email_questions({}),
             "guard": laya_c.guard_questions, "moderation": laya_c.moderation_questions,
             "router": laya_c.router_questions}
    bad = n = 0
    for r in rows:
        n += 1
        if "preset" in r:
            q = build[r["preset"]]()
            ok = preset_shape(q) == r["shape"] and presets.state_field(q) == r["state_field"]
            base = r["preset"].split("+")[0]
            laya_q = json.load(open(os.path.join(fx, "surfaces", "laya_presets", base + ".json")))["questions"]
            own = [q[k].get("instructions") for k in q] != [laya_q[k].get("instructions") for k in laya_q]
            if not ok or not own:
                bad += 1
                print("FAIL preset %s: shape %s, state_field %r (want %r), own wording %s" % (
                    r["preset"], preset_shape(q) == r["shape"], presets.state_field(q), r["state_field"], own))
            if laya_c.triage_questions() is laya_c.triage_questions():
                bad += 1
                print("FAIL presets must return a fresh dict per call")
            continue
        try:
            got, err = presets.state_field(r["state_field_of"]), None
        except Exception as e:  # noqa: BLE001
            got, err = None, e
        if "error" in r:
            ok = err is not None and type(err).__name__ == r["error"]["kind"] and str(err) == r["error"]["message"]
        else:
            ok = err is None and got == r["result"]
        if not ok:
            bad += 1
            print("FAIL state_field(%r): got %r, want %r" % (r["state_field_of"], err or got, r.get("error", r.get("result"))))
    print("test_presets.py: %d cases, %d differ from laya" % (n, bad))
    sys.exit(1 if bad or n < 20 else 0)


if __name__ == "__main__":
    main()
