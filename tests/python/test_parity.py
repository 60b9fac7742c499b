#!/usr/bin/env python3
"""python/parity/<ckpt>: Laya's recorded cases (tests/fixtures/parity/<ckpt>/cases.jsonl, written
by the real laya 0.4.15, tools/ref/) replayed through laya_c.Agent, as a Laya user calls it:
`agent.predict(**request)` / `agent.predict_batch(**request)` with `Agent(ckpt,
lang_temperatures=...)`.

  test_parity.py FIXTURES CKPT CAPI_DUMP WORK_DIR      (run by the wheel's venv python)

Each result must equal Laya's under tests/parity's rule (same keys in the same order, strings,
bools and nulls identical, numbers equal or within 1e-4, a choice label and token counts
identical), and must equal the C API's own output for the fixture's request text exactly
(capi_dump, so the binding's json.dumps of the keyword arguments changes nothing). Each error
case must raise the recorded class with the recorded message. The load warnings Laya recorded
(meta.json) must come as Python warnings with the same text.
"""
import json
import os
import subprocess
import sys
import warnings

import laya_c

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import compare  # noqa: E402


def main():
    fixtures, ckpt, capi_dump, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    ckpt_dir = os.path.join(fixtures, "ckpt", ckpt)
    with open(os.path.join(fixtures, "parity", ckpt, "cases.jsonl")) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(fixtures, "parity", "meta.json")) as f:
        meta = json.load(f)["checkpoints"][ckpt]
    recorded_warnings = {json.dumps(w["lang_temperatures"], sort_keys=True): w["warnings"]
                         for w in meta.get("load_warnings", [])}

    calls = os.path.join(work, "calls-%s.jsonl" % ckpt)
    capi_out = os.path.join(work, "capi-%s.jsonl" % ckpt)
    with open(calls, "w") as f:
        for c in cases:
            f.write(json.dumps({"api": c["api"], "lang_temperatures": c["agent"]["lang_temperatures"],
                                "request": c["request"]}) + "\n")
    subprocess.run([capi_dump, ckpt_dir, calls, capi_out], check=True)
    with open(capi_out) as f:
        capi = [json.loads(line) for line in f]
    assert len(capi) == len(cases), "capi_dump answered %d of %d calls" % (len(capi), len(cases))

    agents = {}
    failed = exact = within = errors_ok = warn_checked = 0
    for case, c_out in zip(cases, capi):
        cid = case["id"]
        lt = case["agent"]["lang_temperatures"]
        key = json.dumps(lt, sort_keys=True)
        problems = []
        got = err = None
        try:
            if key not in agents:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    agents[key] = laya_c.Agent(ckpt_dir, device="cpu", lang_temperatures=lt)
                messages = [str(w.message) for w in caught]
                if key in recorded_warnings:
                    warn_checked += 1
                    # the same warnings; laya.c emits the checkpoint's before a language override's
                    # (Laya the other way round), so the order is reported, not failed
                    if sorted(messages) != sorted(recorded_warnings[key]):
                        problems.append("load warnings %r, Laya recorded %r" % (messages, recorded_warnings[key]))
                    elif messages != recorded_warnings[key]:
                        print("NOTE %s: load warnings in another order than Laya's" % cid)
            agent = agents[key]
            request = json.loads(case["request"])
            method = agent.predict if case["api"] == "predict" else agent.predict_batch
            got = method(**request)
        except Exception as e:  # noqa: BLE001 - every error is compared with the recorded one
            err = e
        want_err = case.get("error")
        if want_err:
            if err is None:
                problems.append("expected %s: %s, got a result" % (want_err["kind"], want_err["message"]))
            elif type(err).__name__ != want_err["kind"] or str(err) != want_err["message"]:
                problems.append("expected %s: %s\n      got %s: %s" % (want_err["kind"], want_err["message"],
                                                                     type(err).__name__, err))
            if c_out.get("error") != want_err and "error" in c_out:
                problems.append("the C API raised %r" % c_out["error"])
            if not problems:
                errors_ok += 1
        elif err is not None:
            problems.append("raised %s: %s" % (type(err).__name__, err))
        else:
            diffs, n_within = compare(got, case["result"])
            problems += diffs
            if "result" not in c_out:
                problems.append("the C API raised %r" % c_out.get("error"))
            elif json.dumps(got) != json.dumps(c_out["result"]):
                problems.append("differs from the C API's output for the same request")
            if not problems:
                if n_within:
                    within += 1
                else:
                    exact += 1
        if problems:
            failed += 1
            print("FAIL %s\n    %s" % (cid, "\n    ".join(problems[:6])))
    print("laya_c parity %s: cases %d, exact %d (errors %d), within-1e-4 %d, failed %d; load warnings "
          "checked for %d agent configurations; every result == the C API's" %
          (ckpt, len(cases), exact + errors_ok, errors_ok, within, failed, warn_checked))
    for a in agents.values():
        a.close()
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
