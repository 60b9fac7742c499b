#!/usr/bin/env python3
"""laya_c.detect_language / detect_script / is_english against the real laya 0.4.15.

  test_lang.py FIXTURES

tests/fixtures/lang/cases.jsonl (tools/ref/gen_lang.py) and the Router corpus's recorded
detections, replayed through the Python package, with the Python values JSON cannot carry (bytes,
tuples, a UserDict, keys that are not str) rebuilt from their stand-ins. The rule is
tests/router/test_lang_api.c's: script, script_profile and the two rates exact on every state,
is_english as Laya's on >= 98% (laya.c's own function-word lists), every extra case whole; and on
every state the binding answers exactly what the C call answers for the same JSON request.
"""
import json
import os
import sys

import laya_c
from laya_c import _native

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "ref"))
from fixture_forms import decode  # noqa: E402  (the fixture's stand-ins, as its generator writes them)

EXACT = ("script", "script_profile", "diacritic_rate", "non_latin_fraction")


def main():
    fx = sys.argv[1]
    rd = lambda name: [json.loads(line) for line in open(os.path.join(fx, name), encoding="utf-8") if line.strip()]
    corpus, corpus_x, cases = rd("router/corpus.jsonl"), rd("router/corpus_explain.jsonl"), rd("lang/cases.jsonl")
    bad = []
    n = english = whole = 0
    for i, rec in enumerate(cases):
        if "id" in rec:
            state = corpus[i]["request"].get("state")
            det, det_x = corpus[i].get("decision", {}).get("detection"), corpus_x[i].get("decision", {}).get("detection")
            want, want_x = (det, det_x) if det is not None else (rec["analyse"], rec["explain"])
            name = "corpus id %d" % rec["id"]
        else:
            state, want, want_x, name = decode(rec["state"]), rec["analyse"], rec["explain"], "case " + rec["case"]
        got, got_x = laya_c.detect_language(state), laya_c.detect_language(state, explain=True)
        for g, w, tag in ((got, want, ""), (got_x, want_x, " explain")):
            n += 1
            if any(g.get(k) != w.get(k) for k in EXACT):
                bad.append("%s%s: %s, want %s" % (name, tag, {k: g.get(k) for k in EXACT}, {k: w.get(k) for k in EXACT}))
            english += g["is_english"] == w["is_english"]
            whole += g == w
            if "case" in rec and g != w:
                bad.append("%s%s: got %r\n  want %r" % (name, tag, g, w))
        if laya_c.is_english(state) is not got["is_english"]:
            bad.append("%s: is_english %r, detect_language %r" % (name, laya_c.is_english(state), got["is_english"]))
        if rec.get("script") is not None and laya_c.detect_script(state) != rec["script"]:
            bad.append("%s: detect_script %r, want %r" % (name, laya_c.detect_script(state), rec["script"]))
        if "id" in rec:  # the binding adds nothing: the C call on the same request
            c = json.loads(_native.lang(0, json.dumps({"state": state, "explain": True}).encode()))
            if c != got_x:
                bad.append("%s: laya_c %r, C %r" % (name, got_x, c))
    # inputs Laya takes that JSON does not hold
    text = "Ich warte seit drei Wochen und niemand antwortet auf meine Mails."
    # each answers as the plain input it stands for, which the fixture holds Laya's answers for:
    # an iterable of characters reads as their text, a lone surrogate is no letter (Laya counts
    # none), a value that is no text (an object) contributes nothing
    ru = "\u0416\u0437\u0432 ab"
    checks = [
        (laya_c.detect_script(list(ru)), laya_c.detect_script(ru)),
        (laya_c.detect_script("\ud800" + ru + "\udfff"), laya_c.detect_script(ru)),
        (laya_c.detect_language("ab\ud800 " + text), laya_c.detect_language("ab " + text)),
        (laya_c.detect_language({"a": object(), "b": text}), laya_c.detect_language({"a": None, "b": text})),
    ]
    for got, want in checks:
        if got != want:
            bad.append("extra input: %r, want %r" % (got, want))
    for arg, kind in ((None, TypeError), (5, TypeError), (b"abc", AttributeError)):
        try:
            laya_c.detect_script(arg)
            bad.append("detect_script(%r) raised nothing" % (arg,))
        except kind:
            pass
    for line in bad[:40]:
        print("FAIL " + line)
    print("test_lang.py: %d analyses, is_english as Laya's on %d (%.2f%%), whole analysis identical on %d (%.2f%%), "
          "%d failures" % (n, english, 100.0 * english / n, whole, 100.0 * whole / n, len(bad)))
    sys.exit(1 if bad or n < 5000 or english * 100 < n * 98 else 0)


if __name__ == "__main__":
    main()
