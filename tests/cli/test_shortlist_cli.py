"""`laya --shortlist-k K` against laya.shortlist.predict_shortlist's recorded results.

    python3 test_shortlist_cli.py LAYA_BINARY FIXTURES_DIR

For every "cli-*" case of tests/fixtures/shortlist/modernbert-tiny/cases.jsonl (a state
{"request": text}, which is what `laya TEXT` builds, and an explicit k): `laya TEXT --model CKPT --questions FILE --shortlist-k K --json` prints
Laya's dict (answers, usage, shortlist: kept labels in rank order, scores, k, n, passthrough), with
strings and labels exact and numbers within 1e-4 (the parity rule). A --batch of three of those
texts answers each line as the single call does. --shortlist-k 0 / -3 are refused by the argument
parser, and --shortlist-k with --long is refused.
"""
import json
import os
import subprocess
import sys
import tempfile

BIN, FIX = sys.argv[1], sys.argv[2]
CKPT = os.path.join(FIX, "ckpt", "modernbert-tiny")
CASES = os.path.join(FIX, "shortlist", "modernbert-tiny", "cases.jsonl")
env = {k: v for k, v in os.environ.items() if k not in ("LAYA_PRECISION", "LAYA_BACKEND", "LAYA_DEVICE", "LAYA_CPU_AMP")}
failures, checks = [], 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def same(got, want, path=""):
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return got == want or print("differs at %s: %r vs %r" % (path, got, want))
    if isinstance(want, (int, float)):
        ok = isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - want) <= 1e-4 + 1e-12
        return ok or print("differs at %s: %r vs %r" % (path, got, want))
    if isinstance(want, list):
        return (isinstance(got, list) and len(got) == len(want)
                and all(same(g, w, "%s/%d" % (path, i)) for i, (g, w) in enumerate(zip(got, want)))) \
            or print("differs at %s (list)" % path)
    return (isinstance(got, dict) and list(got) == list(want)
            and all(same(got[k], want[k], path + "/" + k) for k in want)) or print("differs at %s (keys)" % path)


def run(args):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


picked = []
for line in open(CASES, encoding="utf-8"):
    c = json.loads(line)
    req = json.loads(c["request"])
    st = req["state"]
    if "error" in c or not c["id"].startswith("cli-") or set(st) != {"request"} or set(req) != {"state", "questions", "k"}:
        continue
    req["state"] = st["request"]
    picked.append((c, req))
check(len(picked) >= 6, "the fixture's CLI cases (%d)" % len(picked))
with tempfile.TemporaryDirectory() as tmp:
    for c, req in picked:
        qf = os.path.join(tmp, "q.json")
        with open(qf, "w", encoding="utf-8") as f:
            json.dump(req["questions"], f, ensure_ascii=False)
        rc, out, err = run([req["state"], "--model", CKPT, "--questions", qf, "--shortlist-k", str(req["k"]), "--json"])
        check(rc == 0, "%s: exit %d: %s" % (c["id"], rc, err[-300:]))
        if rc == 0:
            check(same(json.loads(out), c["result"]), "%s: the result is Laya's" % c["id"])
    # --batch: each line answered as the single call (same questions, same k)
    c, req = picked[0]
    qf = os.path.join(tmp, "q.json")
    with open(qf, "w", encoding="utf-8") as f:
        json.dump(req["questions"], f, ensure_ascii=False)
    texts = [req["state"], "another message about a refund", req["state"]]
    bf = os.path.join(tmp, "batch.txt")
    with open(bf, "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    rc, out, err = run(["--batch", bf, "--model", CKPT, "--questions", qf, "--shortlist-k", str(req["k"]), "--json"])
    check(rc == 0, "batch: exit %d: %s" % (rc, err[-300:]))
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    check(len(lines) == 3, "batch: three result lines")
    if len(lines) == 3:
        check(same(lines[0], c["result"]) and lines[0] == lines[2], "batch: line 1 is Laya's, line 3 equals it")
        rc1, out1, _ = run([texts[1], "--model", CKPT, "--questions", qf, "--shortlist-k", str(req["k"]), "--json"])
        check(rc1 == 0 and json.loads(out1) == lines[1], "batch: line 2 equals its single call")
    for bad in ("0", "-3"):
        rc, out, err = run(["x", "--model", CKPT, "--questions", qf, "--shortlist-k", bad])
        check(rc == 2 and "k must be a positive integer, got %s" % bad in err, "--shortlist-k %s refused: %s" % (bad, err[-200:]))
    rc, out, err = run(["x", "--model", CKPT, "--questions", qf, "--shortlist-k", "3", "--long"])
    check(rc == 2 and "--shortlist-k" in err, "--shortlist-k with --long refused")

print("test_shortlist_cli: %d checks, %d failed" % (checks, len(failures)))
sys.exit(1 if failures else 0)
