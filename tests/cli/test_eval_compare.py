"""`laya eval run --baseline/--markdown/--score-within/--gate-policy`, `compare` and `evidence`
against the real laya 0.4.15 CLI.

    python3 test_eval_compare.py LAYA_BINARY FIXTURES_DIR [--fast]

With --fast (the sanitizer-build test, cli/eval_fast): the cases that need no model or read at
most three rows (compare, evidence, validate, every refusal of a bad flag or a bad dataset, runs
over a 3-row dataset), on the english checkpoint only and without the routed replay.

FIXTURES_DIR/surfaces/eval_compare/cases.json was written by tools/router/surfaces_eval_compare.py,
which ran `laya.evals_cli.main(argv)` for every case (the tiny checkpoints stood in for Laya's
built-in "english" / "multilingual"; laya.c gets --model DIR on the same directory). Each case is
replayed in a scratch copy of the fixture directory and must give Laya's exit status, and Laya's
stdout, stderr and Markdown text line by line: the words exactly, every number within 1e-4 (the
parity rule; a number printed with 4 decimals may differ by one unit in the last place), latency
lines dropped (timings, not results). The --json reports laya.c writes are compared with the ones
Laya wrote, key by key. A case comparing two reports Laya wrote (`compare ...`) involves no model
at all, so its output must be Laya's byte for byte. Where Laya's text quotes Python's JSON decoder
(an invalid file), only the text before that quote is compared.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN, FIX = sys.argv[1], sys.argv[2]
FAST = sys.argv[3:] == ["--fast"]
SRC = os.path.join(FIX, "surfaces", "eval_compare")
CKPT = os.path.join(FIX, "ckpt")
NAMES = {"modernbert-tiny": "english", "mmbert-tiny": "multilingual"}
env = dict(os.environ)
failures, checks = [], 0
NUM = re.compile(r"[-+]?(?:\d+\.\d+|\d+|nan|inf)")
TOL = 1.0001e-4
PYJSON = re.compile(r": (?:Expecting |Extra data|Invalid control character|Unterminated string|Invalid \\escape)")


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def lines_of(text):
    out = []
    for line in text.splitlines():
        if "_ms " in line or line.startswith("laya: this checkpoint ships"):
            continue  # timings; the load warning about the tiny checkpoint's temperatures
        out.append(line)
    return out


def same_line(want, got, exact):
    if exact:
        return want == got
    if NUM.sub("#", want) != NUM.sub("#", got):
        return False
    for a, b in zip(NUM.findall(want), NUM.findall(got)):
        x, y = float(a), float(b)
        if math.isnan(x) and math.isnan(y):
            continue
        if not (x == y or abs(x - y) <= TOL):
            return False
    return True


def same_text(want, got, exact, where):
    w, g = lines_of(want), lines_of(got)
    if PYJSON.search(want):  # Python's json decoder wording: compare up to it
        w = [PYJSON.split(l)[0] for l in w]
        g = [l[:len(x)] if l.startswith(x) else l for l, x in zip(g, w)] + g[len(w):]
    ok = len(w) == len(g) and all(same_line(a, b, exact) for a, b in zip(w, g))
    check(ok, "%s:\n  want %r\n  got  %r" % (where, "\n".join(w)[-1500:], "\n".join(g)[-1500:]))


def rename_model(doc, name, path):
    """Laya's report with its checkpoint name replaced by the directory laya.c was given."""
    cfg = doc.get("config", {})
    if cfg.get("model") == name:
        cfg["model"] = path
    if name in cfg.get("revisions", {}):
        cfg["revisions"] = {path if k == name else k: v for k, v in cfg["revisions"].items()}
    for c in doc.get("cases", []):
        if c.get("model") == name:
            c["model"] = path
    groups = doc.get("slices", {}).get("model", {})
    if name in groups:
        groups[path] = groups.pop(name)
    return doc


def same_json(want, got, path, name):
    if isinstance(want, dict):
        if not isinstance(got, dict):
            check(False, "%s: %s is %s" % (name, path, type(got).__name__))
            return
        for k in sorted(set(want) | set(got)):
            if k not in want:
                check(False, "%s: %s.%s only in laya.c's report" % (name, path, k))
            elif k not in got:
                check(False, "%s: %s.%s missing from laya.c's report" % (name, path, k))
            elif not k.endswith("_ms"):
                same_json(want[k], got[k], path + "." + k, name)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(want) != len(got):
            check(False, "%s: %s length" % (name, path))
            return
        for i, (a, b) in enumerate(zip(want, got)):
            same_json(a, b, "%s[%d]" % (path, i), name)
    elif isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        check(abs(want - got) <= TOL or (math.isnan(want) and math.isnan(got)),
              "%s: %s want %r got %r" % (name, path, want, got))
    else:
        check(want == got and type(want) == type(got), "%s: %s want %r got %r" % (name, path, want, got))


def build_cache(home):
    """The Hugging Face cache run_cli_predict.py builds: english = modernbert-tiny at the bundle
    root, multilingual = mmbert-tiny in its subfolder (the names Laya's Router was given)."""
    spec = json.load(open(os.path.join(FIX, "surfaces", "cli_predict_files.json"), encoding="utf-8"))
    repo = os.path.join(home, "hub", "models--convaiinnovations--laya")
    os.makedirs(os.path.join(repo, "refs"))
    open(os.path.join(repo, "refs", "main"), "w").write(spec["commit"])
    snap = os.path.join(repo, "snapshots", spec["commit"])
    for sub, ck in spec["layout"].items():
        dst = os.path.join(snap, sub) if sub else snap
        os.makedirs(dst, exist_ok=True)
        for name in ("rl_agent_config.json", "model.safetensors", "encoder", "tokenizer"):
            src = os.path.join(CKPT, ck, name)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(dst, name))
            else:
                os.symlink(os.path.abspath(src), os.path.join(dst, name))
    assert spec["layout"][""] == "modernbert-tiny" and spec["layout"]["multilingual"] == "mmbert-tiny"


def small(case):
    """A case the sanitizer build can afford: no model, or a model over at most three rows (every
    refusal exits 2 before or right after the load; data_bad.jsonl and fast/small.jsonl are 3 rows)."""
    argv = case["argv"]
    if "@MODEL" not in argv:
        return True
    return case["ckpt"] == "modernbert-tiny" and (case["rc"] == 2 or argv[1] in ("data_bad.jsonl", "fast/small.jsonl"))


# cases.json: surfaces_eval_compare.py; fast_cases.json (validate, bad datasets, 3-row runs):
# surfaces_eval_fast.py; agreement_cases.json (`agreement`, no model): surfaces_eval_agreement.py
cases = json.load(open(os.path.join(SRC, "cases.json"), encoding="utf-8")) + \
    json.load(open(os.path.join(SRC, "fast_cases.json"), encoding="utf-8")) + \
    json.load(open(os.path.join(SRC, "agreement_cases.json"), encoding="utf-8"))
if FAST:
    cases = [c for c in cases if small(c)]
with tempfile.TemporaryDirectory() as tmp:
    build_cache(os.path.join(tmp, "hf"))
    # the layout the cases ran in: <root>/surfaces/eval_compare beside <root>/ckpt
    work = os.path.join(tmp, "surfaces", "eval_compare")
    shutil.copytree(SRC, work)
    os.symlink(os.path.abspath(CKPT), os.path.join(tmp, "ckpt"))
    os.makedirs(os.path.join(work, "ours", "out"))
    n_model = 0
    # every case with --model DIR (answers read from the engine), then the model-backed ones again
    # through the Router with Laya's names (english / multilingual from the offline cache)
    routed_env = dict(env, HF_HOME=os.path.join(tmp, "hf"), HF_HUB_OFFLINE="1")
    for routed, case in [(False, c) for c in cases] + [(True, c) for c in cases if "@MODEL" in c["argv"] and not FAST]:
        ck = case["ckpt"]
        argv, outputs = [], {}
        model_arg = ((NAMES[ck] if routed else os.path.abspath(os.path.join(CKPT, ck))) if ck else None, ck)
        prev = None
        for a in case["argv"]:
            if a == "@MODEL":
                a = model_arg[0]
            elif a == "@CKPTDIR":
                a = os.path.join("..", "..", "ckpt", ck)
            elif prev in ("--json", "--markdown"):
                outputs[a] = os.path.join("ours", a)
                a = outputs[a]
            argv.append(a)
            prev = a
        p = subprocess.run([BIN, "eval"] + argv, capture_output=True, text=True, env=routed_env if routed else env,
                           cwd=work, timeout=600)
        name = case["name"] + (" (routed)" if routed else "")
        exact = "@MODEL" not in case["argv"] and "run" != case["argv"][0]
        n_model += not exact
        check(p.returncode == case["rc"], "%s: exit %d, Laya %d (%s)" % (name, p.returncode, case["rc"], p.stderr[-400:]))
        same_text(case["stdout"], p.stdout, exact, name + " stdout")
        same_text(case["stderr"], p.stderr, exact, name + " stderr")
        for laya_path, ours in outputs.items():
            got_path = os.path.join(work, ours)
            check(os.path.exists(got_path), "%s: %s not written" % (name, ours))
            if not os.path.exists(got_path):
                continue
            text = open(got_path, encoding="utf-8").read()
            if laya_path.endswith(".md"):
                want = case["files"][laya_path].replace("| %s |" % NAMES[ck], "| %s |" % model_arg[0])
                same_text(want, text, False, name + " " + laya_path)
            elif laya_path in case["files"] or os.path.exists(os.path.join(SRC, laya_path)):
                want = json.loads(case["files"][laya_path]) if laya_path in case["files"] else \
                    json.load(open(os.path.join(SRC, laya_path), encoding="utf-8"))
                if ck:
                    want = rename_model(want, NAMES[ck], model_arg[0])
                got = json.loads(text)
                got.get("config", {}).pop("runtime", None)  # laya.c's own provenance key
                same_json(want, got, "", name)
            else:
                json.loads(text)  # a report Laya's fixture does not keep: it must still be JSON
    check(n_model >= (10 if FAST else 20), "model-backed cases replayed: %d" % n_model)
    check(len(cases) >= (100 if FAST else 130), "cases replayed: %d" % len(cases))

    # help: every subcommand answers --help with exit 0 on stdout
    for sub in (["--help"], ["run", "--help"], ["validate", "--help"], ["compare", "--help"], ["agreement", "--help"],
                ["evidence", "--help"], ["run", "-h"]):
        p = subprocess.run([BIN, "eval"] + sub, capture_output=True, text=True, env=env)
        check(p.returncode == 0 and p.stdout.startswith("usage: laya eval") and not p.stderr,
              "%s: %d %r" % (sub, p.returncode, p.stderr))
    p = subprocess.run([BIN, "eval", "compare", "x.json"], capture_output=True, text=True, env=env)
    check(p.returncode == 2 and "the following arguments are required: --baseline" in p.stderr, "compare needs --baseline")
    p = subprocess.run([BIN, "eval", "evidence"], capture_output=True, text=True, env=env)
    check(p.returncode == 2 and "the following arguments are required: --checkpoint" in p.stderr, "evidence needs --checkpoint")

print("%d passed, %d failed" % (checks - len(failures), len(failures)))
sys.exit(1 if failures else 0)
