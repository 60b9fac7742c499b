"""`laya eval` on the command line as the real laya 0.4.15 CLI took it: agreement seeds of any size
(numpy's SeedSequence over every 32-bit word of the seed) and argparse's handling of every
subcommand's flags.

    python3 test_eval_argv.py LAYA_BINARY FIXTURES_DIR

FIXTURES_DIR/surfaces/eval_compare/argv_cases.json was written by tools/router/surfaces_eval_argv.py
(laya.evals_cli.main(argv), which `laya eval ...` runs). No case loads a model. Each case must give
Laya's exit status and Laya's stdout byte for byte (agreement reports, compare / evidence output),
except --help, whose text is laya.c's own: then stdout must be `laya eval [CMD] --help`'s. Where Laya
printed argparse's refusal (its usage block, then `laya-evals[ CMD]: error: ...`), laya.c must print
its own usage block of the same parser (the usage lines of that --help) and the same error line with
the program named `laya eval`; every other stderr is compared byte for byte.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN, FIX = os.path.abspath(sys.argv[1]), sys.argv[2]
SRC = os.path.join(FIX, "surfaces", "eval_compare")
failures, checks = [], 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def laya(argv, cwd):
    return subprocess.run([BIN, "eval"] + argv, capture_output=True, text=True, cwd=cwd, timeout=60)


cases = json.load(open(os.path.join(SRC, "argv_cases.json"), encoding="utf-8"))
with tempfile.TemporaryDirectory() as tmp:
    work = os.path.join(tmp, "eval_compare")
    shutil.copytree(SRC, work)
    helps = {}
    for sub in ("", "validate", "run", "agreement", "compare", "evidence"):
        p = laya([sub, "--help"] if sub else ["--help"], work)
        check(p.returncode == 0 and not p.stderr, "--help of %r" % sub)
        helps[sub] = p.stdout
    usage = {k: v.split("\n\n")[0] + "\n" for k, v in helps.items()}
    for case in cases:
        name = case["name"]
        p = laya(case["argv"], work)
        check(p.returncode == case["rc"], "%s: exit %d, Laya %d (%s)" % (name, p.returncode, case["rc"], p.stderr[-300:]))
        out = case["stdout"]
        if out.startswith("usage: laya-evals"):
            sub = out.split("\n")[0].split()[2]
            sub = "" if sub.startswith("[") else sub
            check(p.stdout == helps[sub], "%s: stdout is not `laya eval %s --help`: %r" % (name, sub, p.stdout[:200]))
        else:
            check(p.stdout == out, "%s: stdout\n  want %r\n  got  %r" % (name, out[:600], p.stdout[:600]))
        err = case["stderr"]
        if err.startswith("usage: laya-evals"):
            sub = err.split("\n")[0].split()[2]
            sub = "" if sub.startswith("[") else sub
            last = err.rstrip("\n").split("\n")[-1]
            assert last.startswith("laya-evals"), name
            want = usage[sub] + "laya eval" + last[len("laya-evals"):] + "\n"
            check(p.stderr == want, "%s: stderr\n  want %r\n  got  %r" % (name, want[-400:], p.stderr[-400:]))
        else:
            check(p.stderr == err, "%s: stderr\n  want %r\n  got  %r" % (name, err[-400:], p.stderr[-400:]))
    check(len(cases) >= 150, "cases replayed: %d" % len(cases))
    left = sorted(set(os.listdir(work)) - set(os.listdir(SRC)))
    check(not left, "files written: %s" % left)

print("%d passed, %d failed" % (checks - len(failures), len(failures)))
sys.exit(1 if failures else 0)
