"""`laya calibrate` against laya.calibrate (records_from_labeled + fit_temperature_map) of the
real laya 0.4.15 (tests/fixtures/surfaces/calibrate_expected.json, recorded by
tools/router/surfaces_calibrate.py on the tiny modernbert checkpoint).

    python3 test_calibrate.py LAYA_BINARY FIXTURES_DIR CKPT_DIR

Laya's LBFGS (lr 0.1, 100 iterations) stops about 0.004 short of the likelihood optimum on this
data; laya.c's one-dimensional search reaches it (its NLL is lower), so temperatures are compared
to 0.01. Then --out (Laya's calibration payload), --write-config (the checkpoint still loads
and answers with the new temperatures), and the error paths.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN, FIX, CKPT = sys.argv[1], sys.argv[2], sys.argv[3]
env = dict(os.environ, LAYA_BACKEND="cpu-ref")
failures, checks = [], 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args):
    p = subprocess.run([BIN, "calibrate"] + args, capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


want = json.load(open(os.path.join(FIX, "calibrate_expected.json")))
data = os.path.join(FIX, "calibrate_dataset.jsonl")
with tempfile.TemporaryDirectory() as d:
    ck = os.path.join(d, "ck")
    shutil.copytree(os.path.join(CKPT, "modernbert-tiny"), ck)
    out = os.path.join(d, "cal.json")
    rc, so, se = run(["--model", ck, "--data", data, "--json", "--out", out])
    check(rc == 0, "calibrate: %d %s" % (rc, se[-300:]))
    if rc == 0:
        got = json.loads(so)
        for i, name in enumerate(("choice", "score", "noul")):
            check(abs(got["temperature"][i] - want["temperature"][i]) < 0.01,
                  "temperature %s: want %.4f got %.4f" % (name, want["temperature"][i], got["temperature"][i]))
        check(got["temperature_by_options"] == want["temperature_by_options"], "buckets (none reach 2000 records)")
        check(got["n_by_bucket"] == want["n_by_bucket"], "n_by_bucket %s" % got["n_by_bucket"])
        check(got["report"]["n"] == want["n_records"], "record count")
        check(got["report"]["ece_after"] <= got["report"]["ece_before"], "ECE does not rise on the fitting data")
        payload = json.load(open(out))
        check(payload["version"] == 2 and list(payload)[:6] == ["version", "temperature", "temperature_by_options",
                                                                 "model_id_or_path", "subfolder", "config"]
              and "temperature" not in payload["config"], "payload shape")
    before = json.load(open(os.path.join(ck, "rl_agent_config.json")))
    rc, so, se = run(["--model", ck, "--data", data, "--write-config"])
    after = json.load(open(os.path.join(ck, "rl_agent_config.json")))
    check(rc == 0 and "wrote the temperatures" in so, "--write-config: %d %s" % (rc, se))
    check(list(after) == list(before) and all(after[k] == before[k] for k in before if not k.startswith("temperature")),
          "other config keys kept in order")
    check(all(abs(a - b) < 0.01 for a, b in zip(after["temperature"], want["temperature"])), "config temperatures written")
    q = os.path.join(d, "q.json")
    open(q, "w").write(json.dumps({"u": {"type": "noul", "instructions": "Is it urgent?"}}))
    p = subprocess.run([BIN, "hi", "--questions", q, "--model", ck, "--json"], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and "answers" in json.loads(p.stdout or "{}"), "the calibrated checkpoint loads")

    bad = os.path.join(d, "bad.jsonl")
    open(bad, "w").write('{"state": "x"}\n')
    for args, msg in [([], "required: --model"), (["--model", ck], "required: --data"),
                      (["--model", ck, "--data", os.path.join(d, "none.jsonl")], "cannot read"),
                      (["--model", os.path.join(d, "nock"), "--data", data], "laya calibrate: "),
                      (["--model", ck, "--data", bad], "bad.jsonl:1: a row needs 'state', 'questions'"),
                      (["--model", ck, "--data", data, "--frob"], "unrecognized arguments: --frob")]:
        rc, so, se = run(args)
        check(rc == 2 and msg in se, "%s: %d %r" % (args, rc, se))

print("%d passed, %d failed" % (checks - len(failures), len(failures)))
sys.exit(1 if failures else 0)
