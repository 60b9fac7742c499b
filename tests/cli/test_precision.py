"""`--precision` in every answering mode of `laya`, LAYA_PRECISION, and `laya --version`.

    python3 test_precision.py LAYA_BINARY FIXTURES_DIR CKPT_DIR

For each mode (predict, --batch, --long, --schema, eval run, calibrate):
  * `--precision fp16` reaches the library: on the CPU it is refused with the CPU backend's message
    (exit 2), so a mode that dropped the flag would answer instead;
  * `--precision bogus` is refused by the argument parser, naming the choices.
For predict (and --batch): the default answers equal `--precision fp32` byte for byte, bf16 answers
differ from them (bf16 moves the tiny model's probabilities in the 4th decimal), and
LAYA_PRECISION=bf16 gives the `--precision bf16` answers. `laya --version` names the precision
models open with (fp32 by default, LAYA_PRECISION when set) and the CPU kernel table in use.
"""
import json
import os
import subprocess
import sys
import tempfile

BIN, FIX, CKPT = sys.argv[1], sys.argv[2], sys.argv[3]
MODEL = os.path.join(CKPT, "modernbert-tiny")
base_env = {k: v for k, v in os.environ.items()
            if k not in ("LAYA_PRECISION", "LAYA_BACKEND", "LAYA_DEVICE", "LAYA_ESCALATE", "LAYA_CPU_AMP")}
failures, checks = [], 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, env=None, stdin=None):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, env=env or base_env, timeout=600, input=stdin)
    return p.returncode, p.stdout, p.stderr


QS = {"intent": {"type": "choice", "instructions": "What does it want?", "criteria": ["refund", "help", "other"]},
      "urgent": {"type": "noul", "instructions": "Is it urgent?"},
      "anger": {"type": "score", "instructions": "How angry?", "criteria": ["calm", "cross", "furious", "livid"]}}
SCHEMA = {"type": "object", "properties": {"intent": {"enum": ["refund", "help", "other"]}, "urgent": {"type": "boolean"}}}
TEXT = "I was charged twice for my March invoice, please refund one, this is the third time I ask."

with tempfile.TemporaryDirectory() as d:
    qf, sf, bf = os.path.join(d, "qs.json"), os.path.join(d, "schema.json"), os.path.join(d, "batch.txt")
    json.dump(QS, open(qf, "w"))
    json.dump(SCHEMA, open(sf, "w"))
    open(bf, "w").write(TEXT + "\nwhere is my parcel, it is late again\nthe app crashes on login\n")
    ef = os.path.join(d, "mail.eml")
    open(ef, "w").write("From: Ana <ana@example.com>\nSubject: charged twice\n\n" + TEXT + "\n\nThanks,\nAna\n")
    REQ = json.dumps({"state": {"request": TEXT}, "questions": QS})
    stdin_of = {"request": REQ}
    modes = {
        "predict": ["--model", MODEL, "--questions", qf, "--json", TEXT],
        "batch": ["--model", MODEL, "--questions", qf, "--json", "--batch", bf],
        "long": ["--model", MODEL, "--questions", qf, "--json", "--long", TEXT],
        "schema": ["--model", MODEL, "--schema", sf, "--json", TEXT],
        "state-json": ["--model", MODEL, "--questions", qf, "--json", "--state-json", json.dumps({"request": TEXT})],
        "request": ["--model", MODEL, "--json", "--request", "-"],
        "shortlist": ["--model", MODEL, "--questions", qf, "--json", "--shortlist-k", "2", TEXT],
        "email": ["--model", MODEL, "--json", "--email", ef],
        "eval run": ["eval", "run", os.path.join(FIX, "eval_dataset.jsonl"), "--model", MODEL],
        "calibrate": ["calibrate", "--model", MODEL, "--data", os.path.join(FIX, "calibrate_dataset.jsonl"), "--json"],
    }
    for name, args in modes.items():
        rc, so, se = run(args + ["--precision", "fp16"], stdin=stdin_of.get(name))
        check(rc == 2 and "fp16 is not supported on the CPU" in se, "%s --precision fp16: rc %d, %s" % (name, rc, se[-300:]))
        rc, so, se = run(args + ["--precision", "bogus"], stdin=stdin_of.get(name))
        check(rc == 2 and "invalid choice: 'bogus'" in se, "%s --precision bogus: rc %d, %s" % (name, rc, se[-300:]))
    # --calibration and --lang-temperatures reach the checkpoint in every answering mode: the
    # calibration (fitted for another checkpoint: tests/fixtures/surfaces/cli_calibration.json) is
    # loaded with Laya's identity warning, and per-language temperatures for the --lang given
    # change the answers (a mode that dropped either flag would answer as without it)
    cal = os.path.join(d, "cal.json")
    json.dump(json.load(open(os.path.join(FIX, "cli_calibration.json")))["calibration"], open(cal, "w"))
    hot = json.dumps({"de": {"temperature": [4.5, 4.5, 4.5]}})
    for name, args in modes.items():
        if name == "calibrate":
            continue
        rc, so, se = run(args + ["--calibration", cal], stdin=stdin_of.get(name))
        check(rc == 0 and "Loading the temperatures anyway." in se, "%s --calibration: rc %d, %s" % (name, rc, se[-300:]))
        if name == "eval run":
            continue
        rc, plain, se = run(args + ["--lang", "de"], stdin=stdin_of.get(name))
        rc2, warm, se2 = run(args + ["--lang", "de", "--lang-temperatures", hot], stdin=stdin_of.get(name))
        check(rc == 0 and rc2 == 0 and plain and plain != warm,
              "%s --lang-temperatures: rc %d/%d, same answers: %s" % (name, rc, rc2, (se + se2)[-300:]))
    for name in ("predict", "batch"):
        args = modes[name]
        outs = {}
        for label, extra, env in (("default", [], None), ("fp32", ["--precision", "fp32"], None),
                                  ("bf16", ["--precision", "bf16"], None),
                                  ("env bf16", [], dict(base_env, LAYA_PRECISION="bf16")),
                                  ("flag over env", ["--precision", "fp32"], dict(base_env, LAYA_PRECISION="int8"))):
            rc, so, se = run(args + extra, env)
            check(rc == 0 and so.strip(), "%s %s: rc %d, %s" % (name, label, rc, se[-300:]))
            outs[label] = so
        check(outs["default"] == outs["fp32"], "%s: the default is fp32" % name)
        check(outs["bf16"] != outs["fp32"], "%s: bf16 answers differ from fp32 (the flag took effect)" % name)
        check(outs["env bf16"] == outs["bf16"], "%s: LAYA_PRECISION=bf16 equals --precision bf16" % name)
        check(outs["flag over env"] == outs["fp32"], "%s: --precision wins over LAYA_PRECISION" % name)
    rc, so, se = run(modes["predict"], dict(base_env, LAYA_PRECISION="fast"))
    check(rc == 2 and "LAYA_PRECISION must be fp32, bf16, fp16, int8 or fp8, got 'fast'" in se,
          "invalid LAYA_PRECISION is refused naming the variable: rc %d, %s" % (rc, se[-300:]))

rc, so, se = run(["--version"])
check(rc == 0 and "cpu precision: fp32 (default)" in so and "in use: " in so, "--version: %s" % so)
rc, so, se = run(["--version"], dict(base_env, LAYA_PRECISION="int8", LAYA_CPU_ISA="scalar"))
check(rc == 0 and "cpu precision: int8" in so and "in use: scalar" in so, "--version with LAYA_PRECISION: %s" % so)
print("%d checks, %d failed" % (checks, len(failures)))
sys.exit(1 if failures else 0)
