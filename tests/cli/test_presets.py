#!/usr/bin/env python3
"""`laya presets`: list, show (the --preset questions as JSON that --questions takes back), the
refusal of an unknown name, and Laya's own presets exported with the one-liner `laya presets
--help` prints (tests/fixtures/surfaces/laya_presets, tools/ref/make_cli_presets.py) answered
through --questions as the real laya 0.4.15 answered them (numbers within 1e-4).

    test_presets.py LAYA_BINARY FIXTURES_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

LAYA, FIX = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CKPT = os.path.join(FIX, "ckpt", "modernbert-tiny")
PRESETS = os.path.join(FIX, "surfaces", "laya_presets")
failed = []


def check(ok, what):
    if not ok:
        failed.append(what)
        print("FAIL", what)


def run(*args):
    return subprocess.run([LAYA, *args], capture_output=True, text=True, timeout=120)


def close(got, want, path="$"):
    """Laya's parity rule: strings, keys and counts exact, numbers within 1e-4."""
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return got == want or (print("  differs at %s: %r vs %r" % (path, got, want)) and False)
    if isinstance(want, (int, float)):
        ok = isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - want) <= 1e-4 + 1e-9
        return ok or (print("  differs at %s: %r vs %r" % (path, got, want)) and False)
    if isinstance(want, dict):
        if not isinstance(got, dict) or list(got) != list(want):
            print("  keys differ at %s: %r vs %r" % (path, list(got) if isinstance(got, dict) else got, list(want)))
            return False
        return all(close(got[k], want[k], path + "." + k) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            close(g, w, "%s[%d]" % (path, i)) for i, (g, w) in enumerate(zip(got, want)))
    return False


env_names = ["email", "guard", "moderation", "router", "triage"]
p = run("presets")
check(p.returncode == 0 and all(("\n%s " % n) in "\n" + p.stdout for n in env_names), "presets list: %r" % p.stdout)
p = run("presets", "--help")
check(p.returncode == 0 and "laya.presets as p" in p.stdout and "--questions" in p.stdout, "presets --help")
p = run("presets", "show", "nope")
check(p.returncode == 2 and "no preset named 'nope'" in p.stderr and "'triage'" in p.stderr, "unknown preset: %r" % p.stderr)
p = run("presets", "frobnicate")
check(p.returncode == 2 and "usage: laya presets" in p.stderr, "unknown subcommand")

with tempfile.TemporaryDirectory() as tmp:
    for name in env_names:
        p = run("presets", "show", name)
        check(p.returncode == 0, "show %s: %r" % (name, p.stderr))
        doc = json.loads(p.stdout)
        qs = doc.get("questions")
        check(isinstance(qs, dict) and qs and all("type" in q for q in qs.values()) and
              isinstance(doc.get("state_key"), str), "show %s is a --questions file" % name)
        f = os.path.join(tmp, name + ".json")
        with open(f, "w") as fh:
            fh.write(p.stdout)
        # what show prints is what --preset asks: the same answers, byte for byte
        a = run("--model", CKPT, "--preset", name, "--json", "the parcel never arrived")
        b = run("--model", CKPT, "--questions", f, "--json", "the parcel never arrived")
        check(a.returncode == 0 and a.stdout == b.stdout, "show %s round-trips through --questions" % name)

with open(os.path.join(PRESETS, "answers.json")) as fh:
    answers = json.load(fh)
for name, cases in answers.items():
    for case in cases:
        # the text argument goes under the file's state_key, as Laya's CLI puts it
        (text,) = case["state"].values()
        p = run("--model", CKPT, "--questions", os.path.join(PRESETS, name + ".json"), "--json", text)
        check(p.returncode == 0, "Laya's %s preset: %r" % (name, p.stderr[-300:]))
        if p.returncode == 0:
            got = json.loads(p.stdout)
            check(close(got.get("answers"), case["result"]["answers"], "answers"),
                  "Laya's %s preset on %r answers as Laya" % (name, case["state"]))

print("%s: %d failed" % ("cli/presets", len(failed)))
sys.exit(1 if failed else 0)
