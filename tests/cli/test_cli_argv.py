"""The top-level `laya` command's flags as the real laya 0.4.15 command parsed them (argparse), and
argparse's rules on laya.c's larger option set.

    python3 test_cli_argv.py LAYA_BINARY FIXTURES_DIR

FIXTURES_DIR/surfaces/cli_argv_cases.json was recorded by tools/router/surfaces_cli_argv.py from
the real `laya` command (offline; no case loads a model). Each case must give Laya's exit status,
stdout and stderr, except:
  * --help, whose text is laya.c's own: stdout must then be `laya --help`'s;
  * argparse's refusals (usage block, then `laya: error: ...`): laya.c prints its own usage block
    (the first block of its --help) and the same error line;
  * a long-option prefix that laya.c's own options (OPTS below, in its parser's order) make
    ambiguous: laya.c must refuse it as argparse would on its option set, naming every candidate
    in that order; where Laya called it ambiguous too, Laya's candidates must be among them in
    Laya's order, and where Laya took the prefix (unique among its options), the case must be one
    of DIVERGE (docs/cli.md lists them).
Then a few cases of laya.c's own options (no Laya fixture): -q clusters, --version's prefix, the
negative-budget refusal at any size. About a second in release.
"""
import json
import os
import subprocess
import sys
import tempfile

BIN, FIX = os.path.abspath(sys.argv[1]), sys.argv[2]
failures, checks = [], 0

# laya.c's parser, in order: argparse's -h/--help, then Laya's options in Laya's order with laya.c's
# own among them (src/cli/laya_cli.c parse_args)
OPTS = ["--help", "--version", "--predict", "--model", "--lang", "--lang-guess", "--task", "--preset",
        "--questions", "--schema", "--long", "--window", "--stride", "--max-len", "--head-max-len",
        "--shortlist-k", "--min-confidence", "--device", "--precision", "--json", "--explain", "--batch",
        "--batch-size", "--sort-by-length", "--batch-format", "--on-error", "--state-json", "--request",
        "--email", "--email-state", "--email-max-chars", "--calibration", "--lang-temperatures",
        "--max-loaded", "--quiet"]
# Laya took these prefixes (unique among its options); laya.c refuses them as ambiguous
DIVERGE = {"diverge_e", "diverge_s", "diverge_ma", "diverge_batch_dash", "diverge_q", "diverge_lang_dash"}


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def laya(argv, cwd):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([BIN] + argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def ambiguous(argv):
    """The first argument argparse would find ambiguous among OPTS, with its candidates."""
    for a in argv:
        if a == "--":
            break
        if not a.startswith("--") or a in OPTS or a.split("=", 1)[0] in OPTS:
            continue
        hits = [o for o in OPTS if o.startswith(a.split("=", 1)[0])]
        if len(hits) > 1:
            return a, hits
    return None


def subsequence(small, big):
    it = iter(big)
    return all(x in it for x in small)


data = json.load(open(os.path.join(FIX, "surfaces", "cli_argv_cases.json"), encoding="utf-8"))
with tempfile.TemporaryDirectory() as work:
    for name, content in data["files"].items():
        with open(os.path.join(work, name), "w", encoding="utf-8") as fh:
            fh.write(content)
    p = laya(["--help"], work)
    check(p.returncode == 0 and not p.stderr, "--help")
    helptext = p.stdout
    usage = helptext.split("\n\n")[0] + "\n"
    diverged = set()
    for case in data["cases"]:
        name, argv = case["name"], case["argv"]
        p = laya(argv, work)
        laya_err = case["stderr"].rstrip("\n").split("\n")[-1]
        amb = ambiguous(argv)
        if amb:
            want = usage + "laya: error: ambiguous option: %s could match %s\n" % (amb[0], ", ".join(amb[1]))
            check(p.returncode == 2 and p.stderr == want and not p.stdout,
                  "%s: want rc 2 and %r, got rc %d %r" % (name, want[-300:], p.returncode, p.stderr[-300:]))
            prefix = "laya: error: ambiguous option: %s could match " % amb[0]
            if laya_err.startswith(prefix):
                theirs = laya_err[len(prefix):].split(", ")
                check(subsequence(theirs, amb[1]), "%s: Laya's candidates %s not in laya.c's %s in order" % (name, theirs, amb[1]))
            else:
                diverged.add(name)
            continue
        check(p.returncode == case["rc"], "%s: exit %d, Laya %d (%s)" % (name, p.returncode, case["rc"], p.stderr[-300:]))
        if case["stdout"].startswith("usage: laya"):
            check(p.stdout == helptext, "%s: stdout is not `laya --help`: %r" % (name, p.stdout[:200]))
        else:
            check(p.stdout == case["stdout"], "%s: stdout\n  want %r\n  got  %r" % (name, case["stdout"][:600], p.stdout[:600]))
        if case["stderr"].startswith("usage: laya"):
            want = usage + laya_err + "\n"
            check(p.stderr == want, "%s: stderr\n  want %r\n  got  %r" % (name, want[-400:], p.stderr[-400:]))
        else:
            check(p.stderr == case["stderr"], "%s: stderr\n  want %r\n  got  %r" % (name, case["stderr"][-400:], p.stderr[-400:]))
    check(diverged == DIVERGE, "prefixes Laya took and laya.c refuses: %s, listed %s" % (sorted(diverged), sorted(DIVERGE)))
    check(len(data["cases"]) >= 80, "cases replayed: %d" % len(data["cases"]))

    # laya.c's own options, by argparse's rules
    def refused(argv, line):
        p = laya(argv, work)
        check(p.returncode == 2 and p.stderr == usage + "laya: error: " + line + "\n" and not p.stdout,
              "%s: want %r, got rc %d %r" % (argv, line, p.returncode, p.stderr[-300:]))

    def same(argv, other):
        p, q = laya(argv, work), laya(other, work)
        check((p.returncode, p.stdout, p.stderr) == (q.returncode, q.stdout, q.stderr),
              "%s: not as %s: %r vs %r" % (argv, other, p.stdout[-200:] + p.stderr[-200:], q.stdout[-200:] + q.stderr[-200:]))

    refused(["hi", "-qx"], "argument -q/--quiet: ignored explicit argument 'x'")
    refused(["hi", "--quiet=1"], "argument -q/--quiet: ignored explicit argument '1'")
    refused(["hi", "-qhx"], "argument -h/--help: ignored explicit argument 'x'")
    refused(["hi", "--max-len", "-5"], "argument --max-len: must be a non-negative integer, got -5")
    refused(["hi", "--batch-s=-" + "9" * 23], "argument --batch-size: must be a non-negative integer, got -" + "9" * 23)
    refused(["hi", "--shortlist-k", " -0_0 "], "argument --shortlist-k: k must be a positive integer, got 0")
    refused(["hi", "--window", "x"], "argument --window: invalid int value: 'x'")
    refused(["hi", "--batch-f", "it's"], "argument --batch-format: invalid choice: \"it's\" (choose from 'text', 'state', 'request')")
    refused(["hi", "--=x"], "ambiguous option: --=x could match " + ", ".join(OPTS))
    same(["hi", "-qh"], ["--help"])
    same(["hi", "-hq"], ["--help"])
    same(["hi", "-qq", "--js"], ["hi", "--json"])
    same(["--vers"], ["--version"])
    same(["--sta={\"text\": \"hi there\"}", "--j"], ["--state-json", "{\"text\": \"hi there\"}", "--json"])
    same(["hi", "--lo", "--wi", "\u0661" * 30], ["hi", "--long", "--window", "9223372036854775807"])

    # the usage block names every option of the parser (argparse's usage: an option by its first
    # string, so -q/--quiet as -q) and every subcommand; --help describes every option
    words = usage.replace("[", " ").replace("]", " ").split()
    for o in OPTS:
        shown = "-q" if o == "--quiet" else "-h" if o == "--help" else o
        check(shown in words, "usage block lacks %s" % shown)
    for sub in ("eval", "calibrate", "tokenize", "convert", "presets", "env"):
        check(("laya %s " % sub) in usage, "usage block lacks laya %s" % sub)
    check("{validate,run,agreement,compare,evidence}" in usage, "usage block: laya eval's subcommands")
    described = [w.split()[0] for ln in helptext.split("\n\n", 1)[1].splitlines() if ln.startswith("  -")
                 for w in ln.strip().split("  ")[0].split(", ")]
    for o in OPTS:
        check(o in described, "--help does not describe %s" % o)
    check("-q" in described, "--help: -q, --quiet")
    # laya.c's own --max-loaded: a positive integer; any size beyond the Router's cap is the cap
    refused(["hi", "--max-loaded", "0"], "argument --max-loaded: must be a positive integer, got 0")
    refused(["hi", "--max-lo=-" + "9" * 25], "argument --max-loaded: must be a positive integer, got -" + "9" * 25)
    same(["hi", "--max-loaded", "9" * 40], ["hi"])

    # laya.c's own subcommands, by argparse's rules (no model: each stops at its parser's verdict)
    def sub_refused(argv, line):
        p = laya(argv, work)
        last = p.stderr.rstrip("\n").split("\n")[-1]
        check(p.returncode == 2 and p.stderr.startswith("usage: laya " + argv[0]) and last == line and not p.stdout,
              "%s: want %r, got rc %d %r" % (argv, line, p.returncode, p.stderr[-300:]))

    sub_refused(["calibrate"], "laya calibrate: error: the following arguments are required: --model, --data")
    sub_refused(["calibrate", "--mod", "x", "--d", "y", "--frob"], "laya calibrate: error: unrecognized arguments: --frob")
    sub_refused(["calibrate", "--w=1"], "laya calibrate: error: argument --write-config: ignored explicit argument '1'")
    sub_refused(["calibrate", "--frob", "--prec", "x"],
                "laya calibrate: error: argument --precision: invalid choice: 'x' (choose from 'fp32', 'bf16', 'int8', 'fp16', 'fp8')")
    sub_refused(["convert", "a"], "laya convert: error: the following arguments are required: OUT")
    sub_refused(["convert", "a", "b", "c"], "laya convert: error: unrecognized arguments: c")
    sub_refused(["convert", "--t", "x", "a", "b"], "laya convert: error: argument --threads: invalid int value: 'x'")
    sub_refused(["tokenize", "--to", "x"], "laya tokenize: error: ambiguous option: --to could match --tokenizer, --tokens")
    sub_refused(["tokenize", "--frob"], "laya tokenize: error: unrecognized arguments: --frob")
    sub_refused(["presets", "frob"], "laya presets: error: argument command: invalid choice: 'frob' (choose from 'list', 'show')")
    sub_refused(["presets", "show"], "laya presets: error: the following arguments are required: NAME")
    sub_refused(["presets", "list", "x"], "laya presets: error: unrecognized arguments: x")
    sub_refused(["env", "x"], "laya env: error: unrecognized arguments: x")
    sub_refused(["env", "--values=1"], "laya env: error: argument --values: ignored explicit argument '1'")
    # their integer flags quote the number given, of any size, as the top-level flags do; a
    # tokenize cap beyond int caps nothing (what it means), a negative one is refused
    tok = os.path.join(os.path.abspath(FIX), "ckpt", "modernbert-tiny")
    sub_refused(["tokenize", "--model", tok, "--max-len", "-5", "hi"],
                "laya tokenize: error: argument --max-len: must be a non-negative integer, got -5")
    sub_refused(["tokenize", "--model", tok, "--max-l", " -9_" + "9" * 30, "hi"],
                "laya tokenize: error: argument --max-len: must be a non-negative integer, got -" + "9" * 31)
    sub_refused(["tokenize", "--model", tok, "--max-len", "x", "hi"],
                "laya tokenize: error: argument --max-len: invalid int value: 'x'")
    same(["tokenize", "--model", tok, "--max-len", "9" * 30, "hello world, again and again"],
         ["tokenize", "--model", tok, "hello world, again and again"])
    same(["tokenize", "--model", tok, "--max-len", "\u0661" * 25, "hello world"], ["tokenize", "--model", tok, "hello world"])
    p = laya(["tokenize", "--model", tok, "--max-len", "1", "hello world"], work)
    check(p.returncode == 0 and len(json.loads(p.stdout)) == 1, "tokenize --max-len 1: %r %r" % (p.stdout, p.stderr))
    sub_refused(["convert", "a", "b", "--threads", "9" * 30],
                "laya convert: error: argument --threads: out of range (0 to 4096): " + "9" * 30)
    sub_refused(["convert", "a", "b", "--threads", "-1"], "laya convert: error: argument --threads: out of range (0 to 4096): -1")
    same(["presets", "--he"], ["presets", "--help"])
    same(["env", "--v"], ["env", "--values"])
    same(["calibrate", "-h"], ["calibrate", "--hel"])

print("%d passed, %d failed" % (checks - len(failures), len(failures)))
sys.exit(1 if failures else 0)
