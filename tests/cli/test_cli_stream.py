"""`laya` input modes, streaming batches, --on-error, progress, calibration flags and the small
defects of issue 15 item 7.

usage: test_cli_stream.py LAYA FIXTURES_SURFACES CKPT_DIR

Parity: the calibration / lang-temperature answers, the state-vs-text answers and the budget
messages come from tests/fixtures/surfaces/cli_calibration.json, written by the real
laya==0.4.15 (tools/ref/make_cli_calibration.py); the float head_max_len answers and TypeErrors
from tests/fixtures/surfaces/cli_budgets.json (tools/ref/make_cli_budgets.py).
"""
import json
import os
import pty
import select
import subprocess
import sys
import tempfile
import threading
import time

LAYA, SURF, CKPTS = sys.argv[1], sys.argv[2], sys.argv[3]
CK = os.path.join(CKPTS, "modernbert-tiny")
FIX = json.load(open(os.path.join(SURF, "cli_calibration.json")))
failures = []
work = tempfile.mkdtemp(prefix="laya-cli-stream-")


T0 = time.time()


def section(name):
    print("[%6.1fs] %s" % (time.time() - T0, name), flush=True)


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(args, stdin=None, env=None):
    p = subprocess.run([LAYA] + args, input=stdin, capture_output=True, env=env, cwd=work)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def write(name, text, mode="w"):
    path = os.path.join(work, name)
    with open(path, mode) as f:
        f.write(text)
    return path


qs = write("qs.json", json.dumps(FIX["questions"]))
states = write("states.jsonl", "".join(json.dumps(s) + "\n" for s in FIX["states"]))
cal = write("cal.json", json.dumps(FIX["calibration"]))


def close(a, b):
    """Same answers as Laya's: keys and labels exact, numbers within one step of round(x, 4)
    (float32 sums in another order can land a value on the other side of a rounding edge)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1.5e-4
    return a == b


def jsonl(out):
    return [json.loads(l) for l in out.splitlines() if l.strip()]


section("state mode")
# ---- state mode: predict(state) for any JSON state, plain and calibrated (parity with Laya)
for label, extra, want in [("plain", [], FIX["plain"]), ("calibrated", ["--calibration", cal], FIX["calibrated"]),
                           ("lang de", ["--lang-temperatures", json.dumps(FIX["lang_temperatures"]), "--lang", "de"],
                            FIX["lang_de"])]:
    rc, out, err = run(["--model", CK, "--questions", qs, "--batch", states, "--batch-format", "state", "--json"] + extra)
    got = jsonl(out)
    check(rc == 0 and len(got) == len(want), "%s: rc %d, %d lines: %s" % (label, rc, len(got), err[-300:]))
    for i, (g, w) in enumerate(zip(got, want)):
        check(close(g["answers"], w["answers"]), "%s state %d: %s != Laya %s" % (label, i, g["answers"], w["answers"]))
rc, out, err = run(["--model", CK, "--questions", qs, "--batch", states, "--batch-format", "state", "--json",
                    "--calibration", cal])
check("calibration was fitted for model_id_or_path='someone/another-checkpoint' subfolder=None but this agent is "
      "model_id_or_path=" in err and "Loading the temperatures anyway." in err, "identity warning: %r" % err[-400:])
# a file of per-language temperatures is the same as its JSON text
lt = write("lt.json", json.dumps(FIX["lang_temperatures"]))
rc, out, err = run(["--model", CK, "--questions", qs, "--state-json", json.dumps(FIX["states"][0]), "--json",
                    "--lang-temperatures", lt, "--lang", "de"])
check(rc == 0 and close(json.loads(out)["answers"], FIX["lang_de"][0]["answers"]), "--lang-temperatures FILE: %s" % err[-300:])

# ---- --state-json TEXT / @FILE, --request FILE / -, and the text argument = {"request": text}
s0 = FIX["states"][0]
rc, out, err = run(["--model", CK, "--questions", qs, "--state-json", json.dumps(s0), "--json"])
check(rc == 0 and close(json.loads(out)["answers"], FIX["plain"][0]["answers"]), "--state-json: %s" % err[-300:])
f0 = write("s0.json", json.dumps(s0))
rc, out, err = run(["--model", CK, "--questions", qs, "--state-json", "@" + f0, "--json"])
check(rc == 0 and close(json.loads(out)["answers"], FIX["plain"][0]["answers"]), "--state-json @FILE: %s" % err[-300:])
rc, out, err = run(["--model", CK, "--questions", qs, "--json", s0["request"]])
check(rc == 0 and close(json.loads(out)["answers"], FIX["plain"][0]["answers"]), "text = {'request': text}: %s" % err[-300:])
req = {"state": FIX["states"][1], "questions": FIX["questions"], "hooks": [], "hooks_raise": False,
       "max_len": 10 ** 20}
rq = write("req.json", json.dumps(req))
rc, out, err = run(["--model", CK, "--request", rq, "--json"])
check(rc == 0 and close(json.loads(out)["answers"], FIX["plain"][1]["answers"]), "--request (hooks no-ops, big max_len): %s" % err[-300:])
rc, out, err = run(["--model", CK, "--request", "-", "--json"], stdin=json.dumps(req).encode())
check(rc == 0 and close(json.loads(out)["answers"], FIX["plain"][1]["answers"]), "--request -: %s" % err[-300:])
# a JSONL of whole requests, each with its own questions
reqs = write("reqs.jsonl", "".join(json.dumps({"state": s, "questions": FIX["questions"]}) + "\n" for s in FIX["states"]))
rc, out, err = run(["--model", CK, "--batch", reqs, "--batch-format", "request", "--json"])
got = jsonl(out)
check(rc == 0 and close([g["answers"] for g in got], [w["answers"] for w in FIX["plain"]]), "request JSONL: %s" % err[-300:])
for kw, msg in FIX["errors"].items():
    r = dict(req, **json.loads(kw))
    rc, out, err = run(["--model", CK, "--request", "-", "--json"], stdin=json.dumps(r).encode())
    check(rc == 2 and ("laya: %s\n" % msg) in err, "%s: want Laya's %r, got %r" % (kw, msg, err[-300:]))

# ---- invalid UTF-8 is named as such, with its byte offset
rc, out, err = run(["--model", CK, "--questions", qs, "--state-json", "@" + write("bad.json", b'{"request": "caf\xe9"}', "wb")])
check(rc == 2 and "not valid UTF-8" in err and "byte offset 16" in err and "check the checkpoint" not in err.lower(),
      "invalid UTF-8 --state-json: %r" % err)

section("bad lines")
# ---- bad lines: every good line answered, each bad line named
lines = [json.dumps(FIX["states"][0]), "{not json", json.dumps(FIX["states"][1]), None, "null",
         json.dumps(FIX["states"][2])]
raw = b"".join((l.encode() if l is not None else b'{"request": "\xff"}') + b"\n" for l in lines)
mixed = write("mixed.jsonl", raw, "wb")
rc, out, err = run(["--model", CK, "--questions", qs, "--batch", mixed, "--batch-format", "state", "--json",
                    "--on-error", "record"])
got = jsonl(out)
check(rc == 0 and len(got) == 6, "record: rc %d, %d lines: %s" % (rc, len(got), err[-400:]))
if len(got) == 6:
    check([g.get("line") for g in got] == [None, 2, None, 4, 5, None], "record: error records at lines 2, 4, 5: %s" % got)
    check(close(got[0]["answers"], FIX["plain"][0]["answers"]) and close(got[2]["answers"], FIX["plain"][1]["answers"])
          and close(got[5]["answers"], FIX["plain"][2]["answers"]), "record: good lines answered as Laya")
for n in (2, 4, 5):
    check(("line %d:" % n) in err, "record: stderr names line %d: %r" % (n, err[-600:]))
rc, out, err = run(["--model", CK, "--questions", qs, "--batch", mixed, "--batch-format", "state", "--json",
                    "--on-error", "skip"])
check(rc == 0 and len(jsonl(out)) == 3 and all(("line %d:" % n) in err for n in (2, 4, 5)), "skip: %s" % err[-400:])
rc, out, err = run(["--model", CK, "--questions", qs, "--batch", mixed, "--batch-format", "state", "--json"])
check(rc == 2 and len(jsonl(out)) == 1 and "line 2:" in err and "line 4" not in err, "fail: %d %r" % (rc, err[-300:]))

# ---- streaming: results come out while the input is still being written, memory stays flat.
# These count lines and bytes, not numbers: they run on the default (fast) backend, one question.
FAST = {k: v for k, v in os.environ.items() if k != "LAYA_BACKEND"}
q1 = write("q1.json", json.dumps({"urgent": FIX["questions"]["urgent"]}))


def stream_first_before_end(args, total, head):
    p = subprocess.Popen([LAYA] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         cwd=work, env=FAST)
    first = []

    def reader():
        first.append(p.stdout.readline())
        first.append(len(p.stdout.read().splitlines()) + 1)
    t = threading.Thread(target=reader)
    t.start()
    for i in range(head):
        p.stdin.write(("ticket %d: my card was charged twice\n" % i).encode())
    p.stdin.flush()
    deadline = time.time() + 120
    while not first and time.time() < deadline:
        time.sleep(0.05)
    early = bool(first and first[0])  # a result line while stdin is still open
    for i in range(head, total):
        p.stdin.write(("ticket %d: my card was charged twice\n" % i).encode())
    p.stdin.close()
    t.join()
    p.wait()
    return early, first[1] if len(first) > 1 else 0, p.returncode


# a request the engine refuses is recorded with its exception class (err.kind), not an empty one
refused = write("refused.jsonl", json.dumps({"state": "x", "questions": FIX["questions"], "hooks": [1]}) + "\n" +
                json.dumps({"state": "x", "questions": FIX["questions"], "max_len": "100"}) + "\n")
rc, out, err = run(["--model", CK, "--batch", refused, "--batch-format", "request", "--json", "--on-error", "record"])
got = jsonl(out)
check(rc == 0 and [g.get("error", {}).get("type") for g in got] == ["NotImplementedError", "TypeError"],
      "refusals carry their kind: %s %s" % (got, err[-300:]))

section("streaming")
early, n, rc = stream_first_before_end(["--batch", "-", "--json"], 100000, 1000)
check(early and n == 100000 and rc == 0, "100,000-line routing batch streams: early=%s lines=%d rc=%d" % (early, n, rc))
early, n, rc = stream_first_before_end(["--model", CK, "--questions", q1, "--batch", "-", "--json", "--batch-size", "16"],
                                       400, 200)
check(early and n == 400 and rc == 0, "answering batch streams: early=%s lines=%d rc=%d" % (early, n, rc))


section("answering stream at scale")
# --model DIR (a decision pass per chunk) at scale. 100,000 lines, as the routing batch above, would
# take about 5 minutes here (the tiny checkpoint answers ~350 lines/s with one question on 2 shared
# cores) and more in CI, so this streams 2,000 paced lines: the input is written in blocks of 200
# and each block's results must come back while stdin is still open, before the next-but-one block
# is written (a reader that waited for the end of input, or for more than two blocks, stalls here
# and fails). One line in 97 is bad (not JSON, not UTF-8, a null state): each is recorded with its
# line number, in its place, and every other line is answered.
BAD = [b"{not json", b'{"request": "caf\xe9 \xff"}', b"null"]


def ticket_line(i):
    if i % 97 == 96:
        return BAD[(i // 97) % 3]
    return json.dumps({"request": "ticket %d: my card was charged twice, please refund" % i}).encode()


def paced_stream(args, total, block, timeout=120):
    p = subprocess.Popen([LAYA] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=work, env=FAST)
    got, err = [], []
    threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True).start()

    def reader():
        for line in p.stdout:
            got.append(line)
    t = threading.Thread(target=reader)
    t.start()
    stalls = []
    for b in range(total // block):
        p.stdin.write(b"".join(ticket_line(i) + b"\n" for i in range(b * block, (b + 1) * block)))
        p.stdin.flush()
        deadline = time.time() + timeout
        while len(got) < b * block and time.time() < deadline and p.poll() is None:
            time.sleep(0.01)
        if len(got) < b * block:
            stalls.append((b, len(got)))
            break
    p.stdin.close()
    t.join()
    _, status, ru = os.wait4(p.pid, 0)
    time.sleep(0.1)
    return got, stalls, status, ru.ru_maxrss, (err[0] if err else b"").decode("utf-8", "replace")


def check_records(got, total, err, what):
    recs = [json.loads(l) for l in got]
    bad = [i + 1 for i in range(total) if i % 97 == 96]
    check(len(recs) == total, "%s: %d result lines for %d input lines" % (what, len(recs), total))
    check([i + 1 for i, r in enumerate(recs) if "error" in r] == bad and
          all(recs[n - 1].get("line") == n for n in bad), "%s: error records at lines %s..." % (what, bad[:4]))
    check(all("error" in r or 0 <= r["answers"]["urgent"]["noul"] <= 1 for r in recs), "%s: good lines answered" % what)
    check(all(("line %d:" % n) in err for n in bad), "%s: stderr names every bad line" % what)
    return recs


ANS = ["--model", CK, "--questions", q1, "--batch-format", "state", "--json", "--on-error", "record"]
got, stalls, status, _, err = paced_stream(ANS + ["--batch", "-", "--batch-size", "16"], 2000, 200)
check(not stalls and status == 0, "answering stream: results kept pace with the input (stalls %s, status %d)" % (stalls, status))
recs = check_records(got, 2000, err, "answering stream")
# the streamed answers are the answers of one call each (the first, one mid-chunk, the last)
for i in (0, 1234, 1999):
    rc, out, e = run(["--model", CK, "--questions", q1, "--state-json", ticket_line(i).decode(), "--json"], env=FAST)
    check(rc == 0 and len(recs) > i and close(recs[i]["answers"], json.loads(out)["answers"]),
          "streamed line %d = its own call: %s" % (i + 1, e[-200:]))


def peak_kb(args, path):
    with open(path, "rb") as f:
        p = subprocess.Popen([LAYA] + args + ["--batch", path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=work, env=FAST)
        _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_maxrss, status


def lines_file(name, n):
    return write(name, "".join("ticket %d: my card was charged twice, please refund\n" % i for i in range(n)))


small, big = lines_file("10k.txt", 10000), lines_file("100k.txt", 100000)
(r1, s1), (r2, s2) = peak_kb(["--json"], small), peak_kb(["--json"], big)
check(s1 == 0 and s2 == 0 and r2 < r1 * 1.25 + 2048, "routing peak RSS 10k %d KiB vs 100k %d KiB" % (r1, r2))
# answering, from a file (read as fast as the engine takes it): 4 chunks of --batch-size 8 (64
# lines each) against 32 chunks, bad lines recorded on the way; 8x the lines, the same peak
a1 = write("256.jsonl", b"".join(ticket_line(i) + b"\n" for i in range(256)), "wb")
a2 = write("2048.jsonl", b"".join(ticket_line(i) + b"\n" for i in range(2048)), "wb")
(r1, s1), (r2, s2) = peak_kb(ANS + ["--batch-size", "8"], a1), peak_kb(ANS + ["--batch-size", "8"], a2)
check(s1 == 0 and s2 == 0 and r2 < r1 * 1.25 + 2048, "answering peak RSS 256 lines %d KiB vs 2048 lines %d KiB" % (r1, r2))

section("progress")
# ---- progress: on a terminal only, off with --quiet
def on_pty(args):
    master, slave = pty.openpty()
    p = subprocess.Popen([LAYA] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, cwd=work,
                         env=FAST)
    os.close(slave)
    data = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    p.wait()
    os.close(master)
    return data.decode("utf-8", "replace")


txt = on_pty(["--batch", small, "--json"])
check("10000/10000 lines (100%)" in txt and "/s" in txt and "ETA " in txt, "progress (done/total, rate, ETA) on a TTY: %r" % txt[-300:])
check(on_pty(["--batch", small, "--json", "--quiet"]).strip() == "", "--quiet: no progress")
rc, out, err = run(["--batch", small, "--json"])
check("lines (" not in err, "no progress when stderr is not a TTY: %r" % err[-200:])
txt = on_pty(["eval", "run", os.path.join(SURF, "eval_dataset.jsonl"), "--model", CK])
check("examples (100%)" in txt, "eval run progress: %r" % txt[-300:])
txt = on_pty(["eval", "run", os.path.join(SURF, "eval_dataset.jsonl"), "--model", CK, "--quiet"])
check("examples (" not in txt and "error" not in txt, "eval run --quiet: no progress: %r" % txt[-300:])
# --long on one text: a line over its windows (passes of --batch-size windows); none for a text
# that fits one window, none with --quiet
long_text = " ".join("word%d refund invoice crash" % i for i in range(600))
long_args = [long_text, "--model", CK, "--questions", q1, "--long", "--window", "64", "--stride", "32",
             "--batch-size", "4", "--json"]
txt = on_pty(long_args)
check("windows (100%)" in txt and "/s" in txt, "--long progress on a TTY: %r" % txt[-300:])
# (stderr also carries the fixture checkpoint's own temperature warning)
check("windows (" not in on_pty(long_args + ["--quiet"]), "--long --quiet: no progress")
check("windows (" not in on_pty(["short text", "--model", CK, "--questions", q1, "--long", "--json"]),
      "--long on a one-window text: no progress line")
rc, out, err = run(long_args)
check(rc == 0 and "windows (" not in err and json.loads(out)["answers"], "--long without a TTY: no progress, an answer: %r" % err[-200:])

# ---- calibrate --write-config: a backup, and the checkpoint's bucket temperatures kept
import shutil
ck2 = os.path.join(work, "ck")
shutil.copytree(CK, ck2)
before = open(os.path.join(ck2, "rl_agent_config.json")).read()
rc, out, err = run(["calibrate", "--model", ck2, "--data", os.path.join(SURF, "calibrate_dataset.jsonl"), "--write-config"])
check(rc == 0 and open(os.path.join(ck2, "rl_agent_config.json.bak")).read() == before, "backup: %s" % err[-300:])
old_b = json.loads(before).get("temperature_by_options", {})
new_b = json.load(open(os.path.join(ck2, "rl_agent_config.json"))).get("temperature_by_options", {})
check(set(old_b) <= set(new_b), "bucket temperatures kept: %s -> %s" % (old_b, new_b))
# calibrate's progress line over the data's rows: on a terminal, off with --quiet
cal_args = ["calibrate", "--model", CK, "--data", os.path.join(SURF, "calibrate_dataset.jsonl"),
            "--out", os.path.join(work, "cal-progress.json")]
txt = on_pty(cal_args)
check("rows (100%)" in txt and "/s" in txt, "calibrate progress on a TTY: %r" % txt[-300:])
check("rows (" not in on_pty(cal_args + ["--quiet"]), "calibrate --quiet: no progress")
rc, out, err = run(cal_args)
check(rc == 0 and "rows (" not in err, "calibrate without a TTY: no progress: %r" % err[-200:])

section("defects")
# ---- the smaller defects
rc, out, err = run(["train", "--help"])
check(rc == 2 and "laya train" in err and out == "", "laya train: %d %r" % (rc, err))
for flag in ("--max-len", "--head-max-len"):
    rc, out, err = run(["x", "--model", CK, "--questions", qs, flag, "-3"])
    check(rc == 2 and ("argument %s: must be a non-negative integer" % flag) in err, "%s -3: %r" % (flag, err))
rc, out, err = run(["x", "--questions", qs, "--model", os.path.join(work, "no-such-dir")])
check(rc == 2 and "local model path not found" in err and "unknown model" not in err, "missing --model dir: %r" % err)
bad_sha = json.dumps({"model.safetensors": "0" * 64})
rc, out, err = run(["x", "--questions", qs, "--model", CK], env=dict(os.environ, LAYA_SHA256_DIGESTS=bad_sha))
check(rc == 2 and "SHA-256" in err and "laya: laya:" not in err and "(laya:" not in err, "SHA-256 message: %r" % err)
# a float head_max_len: answered where laya 0.4.15 answers it (its max() hands the slices an int),
# Laya's TypeError elsewhere (tests/fixtures/surfaces/cli_budgets.json, tools/ref/make_cli_budgets.py),
# one --request line per case, refusals recorded in place with their class and message
budgets = json.load(open(os.path.join(SURF, "cli_budgets.json")))
reqs = write("budgets.jsonl", "".join(json.dumps({"state": {"request": "my card was charged twice"},
                                                  "questions": c["questions"], "head_max_len": c["head_max_len"]}) + "\n"
                                      for c in budgets))
rc, out, err = run(["--model", CK, "--batch", reqs, "--batch-format", "request", "--json", "--on-error", "record"])
got = jsonl(out)
check(rc == 0 and len(got) == len(budgets) == 24, "float head_max_len: rc %d, %d lines: %s" % (rc, len(got), err[-300:]))
for c, g in zip(budgets, got):
    what = "head_max_len=%r on %s" % (c["head_max_len"], list(c["questions"]))
    if "error" in c:
        e = g.get("error", {})
        check("%s: %s" % (e.get("type"), e.get("message")) == c["error"], "%s: want Laya's %r, got %r" % (what, c["error"], g))
    else:
        check("answers" in g and close(g["answers"], c["answers"]), "%s: %r != Laya %r" % (what, g, c["answers"]))
check(sum("error" in c for c in budgets) == 11, "cli_budgets.json: 11 refusals, 13 answers")

shutil.rmtree(work, ignore_errors=True)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
