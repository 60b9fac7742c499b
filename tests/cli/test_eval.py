"""`laya eval` against the real laya 0.4.15 evaluation harness.

    python3 test_eval.py LAYA_BINARY FIXTURES_DIR CKPT_DIR

Runs `laya eval run` on tests/fixtures/surfaces/eval_dataset.jsonl with the tiny modernbert
checkpoint (one example per call, and chunks of 4) and compares every overall and per-slice
metric with laya.evals.evaluate's (eval_expected.json, tools/router/surfaces_eval.py): accuracies
exactly, the rest within 2e-3 (answers agree to 1e-4). Then the gates (exit 1 and a FAIL line on
stderr) and every dataset error path (exit 2, "laya-evals: ..." on stderr).
"""
import json
import os
import subprocess
import sys
import tempfile

BIN, FIX, CKPT = sys.argv[1], sys.argv[2], sys.argv[3]
MODEL = os.path.join(CKPT, "modernbert-tiny")
DATA = os.path.join(FIX, "eval_dataset.jsonl")
env = dict(os.environ, LAYA_BACKEND="cpu-ref")
failures, checks = [], 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, cwd=None):
    p = subprocess.run([BIN, "eval"] + args, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    return p.returncode, p.stdout, p.stderr


def compare(want, got, where):
    for k, v in want.items():
        if k not in got:
            check(False, "%s: metric %s missing" % (where, k))
            continue
        tol = 1e-12 if "accuracy" in k else 2e-3
        check(abs(got[k] - v) <= tol, "%s.%s: want %.6f got %.6f" % (where, k, v, got[k]))
    extra = sorted(k for k in got if k not in want and "_ms" not in k)
    check(not extra, "%s: extra metrics %s" % (where, extra))


expected = json.load(open(os.path.join(FIX, "eval_expected.json")))
with tempfile.TemporaryDirectory() as d:
    for key, bs in (("batch_size=None", []), ("batch_size=4", ["--batch-size", "4"])):
        out = os.path.join(d, "r.json")
        rc, so, se = run(["run", DATA, "--model", MODEL, "--json", out] + bs)
        check(rc == 0, "%s: exit %d (%s)" % (key, rc, se[-300:]))
        if rc != 0:
            continue
        rep = json.load(open(out))
        compare(expected[key]["overall"], rep["overall"], key + ".overall")
        for dim, groups in expected[key]["slices"].items():
            if dim == "model":
                continue  # the checkpoint's name: laya.c reports the directory given to --model
            for g, m in groups.items():
                compare(m, rep["slices"].get(dim, {}).get(g, {}), "%s.slices.%s.%s" % (key, dim, g))
        check(rep["config"]["schema"] == "laya-evals-report/1", "report schema")
        check(len(rep["cases"]) == sum(len(json.loads(l)["expected"]) for l in open(DATA)
                                       if l.strip() and not l.startswith("#")), "one case per expected answer")
        check("choice_accuracy" in so and "latency_p95_ms" in so, "metrics printed")

    # gates: --min-accuracy reads choice_accuracy when present; failures exit 1
    rc, so, se = run(["run", DATA, "--model", MODEL, "--min-accuracy", "0.9", "--max-ece", "0.99"])
    check(rc == 1 and "FAIL: choice_accuracy=0.1562 is below the minimum 0.9000" in se, "min-accuracy gate: %d %r" % (rc, se))
    rc, so, se = run(["run", DATA, "--model", MODEL, "--max-ece", "0.1"])
    check(rc == 1 and "FAIL: ece=" in se and "is above the maximum 0.1000" in se, "max-ece gate: %d %r" % (rc, se))
    rc, so, se = run(["run", DATA, "--model", MODEL, "--min", "score_within_1=0.5"])
    check(rc == 1 and "FAIL: metric 'score_within_1' is not in the report" in se, "missing metric gate: %r" % se)
    rc, so, se = run(["run", DATA, "--model", MODEL, "--min-accuracy", "0.1", "--max-ece", "0.5"])
    check(rc == 0 and not se.strip().count("FAIL"), "passing gates: %d %r" % (rc, se))

    # dataset errors
    def ds(name, text):
        p = os.path.join(d, name)
        open(p, "w").write(text)
        return p
    q = '{"a": {"type": "noul", "instructions": "x"}}'
    cases = [
        (ds("empty.jsonl", "# only a comment\n\n"), "contains no examples"),
        (ds("badjson.jsonl", '{"state": 1,\n'), ":1 is not valid JSON"),
        (ds("notobj.jsonl", "[1]\n"), ":1 must be an object, got list"),
        (ds("missing.jsonl", '{"state": "x", "questions": %s}\n' % q), ":1 is missing 'expected'"),
        (ds("qs.jsonl", '{"state": "x", "questions": [], "expected": {}}\n'), ":1 'questions' must be an object"),
        (ds("exp.jsonl", '{"state": "x", "questions": %s, "expected": []}\n' % q),
         ":1 'expected' must be an object keyed by question id"),
        (ds("unk.jsonl", '{"state": "x", "questions": %s, "expected": {"z": 1, "b": 2}}\n' % q),
         ":1 'expected' names unknown question(s): b, z"),
        (ds("tags.jsonl", '{"state": "x", "questions": %s, "expected": {}, "tags": "t"}\n' % q), ":1 'tags' must be a list"),
        (os.path.join(d, "nope.jsonl"), "cannot be read: [Errno 2] No such file or directory"),
    ]
    for path, msg in cases:
        for sub in (["validate", path], ["run", path, "--model", MODEL]):
            rc, so, se = run(sub)
            check(rc == 2 and se.startswith("laya-evals: ") and msg in se, "%s %s: %d %r" % (sub[0], os.path.basename(path), rc, se))
    rc, so, se = run(["validate", DATA])
    check(rc == 0 and so == "40 examples, 3 question id(s): anger, intent, urgent\n", "validate: %r" % so)
    rc, so, se = run(["frob"])
    check(rc == 2 and "invalid choice: 'frob'" in se, "unknown subcommand")
    rc, so, se = run(["run", DATA, "--on-error", "maybe"])
    check(rc == 2 and "invalid choice" in se, "bad --on-error")
    rc, so, se = run(["run", DATA, "--model", "bogus"])
    check(rc == 2 and "unknown model 'bogus'" in se, "bad --model: %r" % se)
    rc, so, se = run(["run", DATA, "--batch-size", "x"])
    check(rc == 2 and "invalid int value: 'x'" in se, "bad --batch-size")

print("%d passed, %d failed" % (checks - len(failures), len(failures)))
sys.exit(1 if failures else 0)
