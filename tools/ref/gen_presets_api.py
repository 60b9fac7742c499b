#!/usr/bin/env python3
"""tests/fixtures/surfaces/presets_api.jsonl: the real laya 0.4.15's preset builders' shape and
laya.presets.state_field on generated inputs.

Lines: {"preset": NAME, "shape": [[id, type, labels or level count], ...], "state_field": KEY}
(email also with custom categories), then {"state_field_of": QUESTIONS, "result" | "error"}.
Only the shape is recorded, not Laya's wording (laya.c's presets are its own words).
"""
import json
import os
import sys

import laya
from laya import presets

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from fixture_forms import preset_shape  # noqa: E402


def main():
    lines = []
    cats = {"orders": "order status", "returns": "sending something back", "other": "anything else"}
    for name, q in (("triage", laya.triage_questions()), ("email", laya.email_questions()),
                    ("email+categories", laya.email_questions(cats)), ("email+empty", laya.email_questions({})),
                    ("guard", laya.guard_questions()), ("moderation", laya.moderation_questions()),
                    ("router", laya.router_questions())):
        lines.append({"preset": name, "shape": preset_shape(q), "state_field": presets.state_field(q)})
    for q in ({}, {"a": {"instructions": "What does `message` say?"}},
              {"a": {"instructions": "Compare `a` with `b`."}},
              {"a": {"instructions": "`x` twice: `x`"}, "b": {"instructions": "and `x`"}},
              {"a": {"instructions": None}}, {"a": {}}, {"a": {"instructions": ""}},
              {"a": {"instructions": "`not-a-word` here"}}, {"a": {"instructions": "`naïve_field`"}},
              {"a": {"instructions": "`m`"}, "b": {"instructions": "`n`"}},
              {"a": {"instructions": "no backticks at all"}, "b": {"instructions": "`body`"}},
              {"a": "not a dict"}, {"a": {"instructions": 5}}):
        rec = {"state_field_of": q}
        try:
            rec["result"] = presets.state_field(q)
        except Exception as e:  # noqa: BLE001
            rec["error"] = {"kind": type(e).__name__, "message": str(e)}
        lines.append(rec)
    path = os.path.join(REPO, "tests/fixtures/surfaces/presets_api.jsonl")
    with open(path, "w") as f:
        for rec in lines:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print("wrote %s: %d lines" % (path, len(lines)))


if __name__ == "__main__":
    main()
