#!/usr/bin/env python3
"""tests/fixtures/lang/cases.jsonl: the real laya 0.4.15's detect_language (lang.analyse),
detect_script and is_english.

Two kinds of line:
- {"id": N, ...} for every state of tests/fixtures/router/corpus.jsonl (the Router corpus, 2,600
  states in many scripts and languages): "script" (detect_script of a str state, else null) and
  "is_english"; "analyse" / "explain" (detect_language with explain False / True) only where the
  corpus decision carries no detection (a state routed by model=, task= or lang=), since a
  decision's "detection" is that same analysis.
- {"case": NAME, "state": ENCODED, ...} for the inputs JSON cannot carry or the corpus lacks:
  bytes (UTF-8 and not), tuples, a UserDict, non-str keys, numbers and booleans as values, nesting
  past the depth analyse reads, and texts longer than the 4,000 code points analyse reads (where
  detect_script, which reads everything, can disagree with the analysis's script). ENCODED is JSON
  with {"$bytes": HEX}, {"$tuple": [...]}, {"$userdict": [[key, value], ...]} and
  {"$dict": [[key, value], ...]} (keys of any JSON type) standing for those Python values.
"""
import json
import os
import sys

import laya

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from fixture_forms import decode  # noqa: E402


def nest(depth, leaf):
    v = leaf
    for i in range(depth):
        v = {"k%d" % i: v} if i % 2 else [v]
    return v


def extra_cases():
    de = "Ich warte seit drei Wochen und niemand antwortet auf meine Mails."
    en = "I would like to know when the headphones will be back in stock."
    ru = "Здравствуйте, я не могу войти в свой аккаунт со вчерашнего дня."
    ja = "昨日からアカウントにログインできません。助けてください。"
    return [
        ("bytes_utf8", {"$bytes": de.encode().hex()}),
        ("bytes_not_utf8", {"$bytes": (b"\xff\xfe" + de.encode()).hex()}),
        ("bytes_leaf", {"note": {"$bytes": ru.encode().hex()}, "title": en}),
        ("bytes_leaf_not_utf8", {"note": {"$bytes": "c328"}, "title": en}),
        ("tuple_state", {"$tuple": [en, de]}),
        ("tuple_leaf", {"items": {"$tuple": [en, {"$tuple": [de]}]}}),
        ("userdict", {"$userdict": [["subject", en], ["body", de]]}),
        ("int_keys", {"$dict": [[1, en], [2, en + "\n" + de]]}),
        ("int_key_big", {"$dict": [[2 ** 70, de], ["title", en]]}),
        ("bool_and_none_keys", {"$dict": [[True, en], [None, de]]}),
        ("long_key", {"$dict": [["k" * 200, de], ["title", en]]}),
        ("numbers_and_bools", {"a": 1, "b": 2.5, "c": True, "d": None, "e": en}),
        ("number_state", 42),
        ("bool_state", False),
        ("none_state", None),
        ("empty_str", ""),
        ("empty_dict", {}),
        ("empty_list", []),
        ("depth_6_de", nest(6, de)),
        ("depth_7_de", nest(7, de)),
        ("depth_9_de", {"title": en, "x": nest(9, de)}),
        ("long_en_then_ru", en * 70 + " " + ru * 40),
        ("long_ru_then_en", ru * 70 + " " + en * 90),
        ("long_ja_tail", "a " * 2100 + ja * 10),
        ("long_field_de_after_cap", {"log": en * 70, "message": de}),
        ("mixed_lines", en + "\n" + de + "\n" + en),
        ("digits_only", "12345 67890 !!!"),
        ("emoji_only", "\U0001F600\U0001F680 \u2764"),
        ("kana_han_tie", "あ漢"),
        ("latin_cyrillic_tie", "ab\u0436\u0437"),
        ("other_script", "\U00010330\U00010331\U00010332 \U00010333"),
    ]


def main():
    out_path = os.path.join(REPO, "tests/fixtures/lang/cases.jsonl")
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    lines = []
    with open(os.path.join(REPO, "tests/fixtures/router/corpus.jsonl")) as f:
        corpus = [json.loads(line) for line in f if line.strip()]
    for row in corpus:
        state = row["request"].get("state")
        rec = {"id": row["id"], "script": laya.detect_script(state) if isinstance(state, str) else None,
               "is_english": laya.is_english(state)}
        if row.get("decision", {}).get("detection") is None:
            rec["analyse"] = laya.detect_language(state)
            rec["explain"] = laya.detect_language(state, explain=True)
        lines.append(rec)
    for name, enc in extra_cases():
        state = decode(enc)
        rec = {"case": name, "state": enc, "analyse": laya.detect_language(state),
               "explain": laya.detect_language(state, explain=True), "is_english": laya.is_english(state)}
        if isinstance(state, str):
            rec["script"] = laya.detect_script(state)
        lines.append(rec)
    with open(out_path, "w") as f:
        for rec in lines:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print("wrote %s: %d lines" % (out_path, len(lines)), file=sys.stderr)


if __name__ == "__main__":
    main()
