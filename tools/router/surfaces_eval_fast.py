"""Small `laya eval` cases, recorded from the real laya 0.4.15 CLI, for the sanitizer-build test.

    /work/refvenv/bin/python tools/router/surfaces_eval_fast.py tests/fixtures/surfaces/eval_compare

Run after surfaces_eval_compare.py (it reads that directory's data.jsonl). Writes fast/*.jsonl
(a 3-row dataset and datasets broken in one way each: a malformed JSON line, a row that is not an
object, missing keys, wrong types, unknown question ids, invalid UTF-8, no examples) and
fast_cases.json, in cases.json's schema, for `validate` and `run` over them. Every case runs
`laya.evals_cli.main(argv)` through surfaces_eval_compare.run_case (the tiny checkpoint stands in
for "english"), so tests/cli/test_eval_compare.py replays these the same way.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import surfaces_eval_compare as sec  # noqa: E402  (patches laya.Router to the tiny checkpoints)


def datasets(fix):
    rows = [l for l in open(os.path.join(fix, "data.jsonl"), encoding="utf-8").read().splitlines(True)
            if l.strip() and not l.startswith("#")]
    r0 = json.loads(rows[0])
    q = json.dumps(r0["questions"], ensure_ascii=False)
    state = json.dumps(r0["state"], ensure_ascii=False)
    small = "# three rows\n" + rows[0] + "\n" + rows[1] + rows[2]
    one = lambda **kw: json.dumps(kw, ensure_ascii=False) + "\n"  # noqa: E731
    out = {
        "small.jsonl": small,
        "badjson_line3.jsonl": rows[0] + rows[1] + '{"state": {"message": "x"}, "questions": \n' + rows[2],
        "trailing.jsonl": rows[0] + rows[1].rstrip("\n") + " 7\n",
        "notobject.jsonl": rows[0] + "[1, 2]\n",
        "no_state.jsonl": rows[0] + one(questions=r0["questions"], expected={"urgent": True}),
        "no_questions.jsonl": '{"state": %s, "expected": {"urgent": true}}\n' % state,
        "no_expected.jsonl": '{"state": %s, "questions": %s}\n' % (state, q),
        "questions_list.jsonl": '{"state": %s, "questions": [], "expected": {}}\n' % state,
        "expected_list.jsonl": '{"state": %s, "questions": %s, "expected": []}\n' % (state, q),
        "unknown_qid.jsonl": '{"state": %s, "questions": %s, "expected": {"zz": 1, "bb": 2}}\n' % (state, q),
        "tags_str.jsonl": '{"state": %s, "questions": %s, "expected": {"urgent": true}, "tags": "t"}\n' % (state, q),
        "empty.jsonl": "# nothing but a comment\n\n   \n",
    }
    d = os.path.join(fix, "fast")
    os.makedirs(d, exist_ok=True)
    for name, text in out.items():
        with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(os.path.join(d, "badutf8.jsonl"), "wb") as fh:
        fh.write(rows[0].encode("utf-8") + b'{"state": {"message": "caf\xe9"}, "questions": ' + q.encode() +
                 b', "expected": {"urgent": true}}\n')
    return sorted(out) + ["badutf8.jsonl"]


def main(fix):
    fix = os.path.abspath(fix)
    sec.FIXDIR = fix
    names = datasets(fix)
    os.chdir(fix)
    os.makedirs("out", exist_ok=True)
    m = ["--model", "@MODEL"]
    cases = []
    for n in names + ["missing.jsonl"]:
        p = "fast/" + n
        cases.append(("validate_" + n[:-6], ["validate", p]))
        if n != "small.jsonl":
            cases.append(("run_" + n[:-6], ["run", p] + m))
    cases += [
        ("run_small", ["run", "fast/small.jsonl"] + m + ["--score-within", "0.5", "--slice", "qid",
                                                         "--json", "out/fast_small.json"]),
        ("run_small_batch", ["run", "fast/small.jsonl"] + m + ["--batch-size", "2", "--min-accuracy", "0.9",
                                                               "--markdown", "out/fast_small.md"]),
        ("run_small_tol_bad", ["run", "fast/small.jsonl"] + m + ["--baseline", "modernbert-tiny_run.json",
                                                                 "--tolerance", "ece=abc"]),
        ("run_small_tol_noeq", ["run", "fast/small.jsonl"] + m + ["--baseline", "modernbert-tiny_run.json",
                                                                  "--tolerance", "ece"]),
        ("run_small_baseline", ["run", "fast/small.jsonl"] + m + ["--baseline", "modernbert-tiny_run.json",
                                                                  "--tolerance", "ece=0.5"]),
        ("run_small_min_bad", ["run", "fast/small.jsonl"] + m + ["--min", "ece=x"]),
    ]
    results = [sec.run_case(name, "modernbert-tiny" if "@MODEL" in argv else None, argv) for name, argv in cases]
    sec.save_cases(results, "fast_", "fast_cases.json")


if __name__ == "__main__":
    main(sys.argv[1])
