#!/usr/bin/env python3
"""python/api: the rest of laya_c's Laya API against Laya's recordings, and its own contracts.

  test_api.py FIXTURES

1. tests/fixtures/surfaces/decide.jsonl and predict_long.jsonl (recorded from the real laya
   0.4.15 by tools/ref/) through laya_c.Agent.decide / decide_batch / predict_long, called with the
   recorded keyword arguments: results equal Laya's under tests/parity's rule (a
   `return_details=True` result is a DecisionResult whose fields, in order, are Laya's), errors
   raise the recorded class and message (SchemaError is laya_c.SchemaError, a ValueError).
2. A pydantic model is accepted by decide as Laya accepts it (its JSON schema).
3. laya_c.load on a path and, from an offline HF cache, of a name ("english") and an alias ("ml",
   a subfolder), Router over a local checkpoint (predict carries "routing", preload /
   loaded / unload), hooks refused with NotImplementedError, a closed Agent raises.
"""
import dataclasses
import functools
import json
import os
import sys
from typing import Literal

import laya_c

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import compare  # noqa: E402

failures = []


def check(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failures.append(what)


def replay(fixtures):
    agents = {}
    counts = {}
    for fname in ("decide.jsonl", "predict_long.jsonl"):
        with open(os.path.join(fixtures, "surfaces", fname)) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        for i, row in enumerate(rows):
            ck = row["checkpoint"]
            if ck not in agents:
                agents[ck] = laya_c.Agent(os.path.join(fixtures, "ckpt", ck), device="cpu", quiet=True)
            a = agents[ck]
            # decide rows twice: Agent.decide and the module-level laya_c.decide(runner, ...)
            for module in ((False, True) if row["call"] != "predict_long" else (False,)):
                req = dict(row["request"])
                try:
                    if row["call"] == "decide":
                        fn = functools.partial(laya_c.decide, a) if module else a.decide
                        got = fn(req.pop("state"), **req) if "state" in req else fn(**req)
                    elif row["call"] == "decide_batch":
                        fn = functools.partial(laya_c.decide_batch, a) if module else a.decide_batch
                        got = fn(req.pop("states"), **req)
                    else:
                        got = a.predict_long(**req)
                    err = None
                except Exception as e:  # noqa: BLE001
                    got, err = None, e
                key = "%s%s %s" % ("laya_c." if module else "", row["call"], "error" if "error" in row else "result")
                n_ok, n_all = counts.get(key, (0, 0))
                if "error" in row:
                    w = row["error"]
                    ok = err is not None and type(err).__name__ == w["kind"] and str(err) == w["message"]
                    if not ok:
                        print("FAIL %s #%d: want %s: %s, got %r" % (fname, i, w["kind"], w["message"],
                                                                 err if err is not None else got))
                elif err is not None:
                    ok = False
                    print("FAIL %s #%d: raised %s: %s" % (fname, i, type(err).__name__, err))
                else:
                    if isinstance(got, laya_c.DecisionResult):
                        got = dataclasses.asdict(got)
                    diffs, _ = compare(got, row["result"])
                    ok = not diffs
                    if diffs:
                        print("FAIL %s #%d:\n    %s" % (fname, i, "\n    ".join(diffs[:5])))
                counts[key] = (n_ok + ok, n_all + 1)
    for key, (n_ok, n_all) in sorted(counts.items()):
        check(n_ok == n_all, "Laya's recorded %s: %d/%d" % (key, n_ok, n_all))
    check(any(k.startswith("laya_c.decide ") for k in counts), "the module-level laya_c.decide was replayed")
    for fn in (laya_c.decide, laya_c.decide_batch):
        try:
            fn(object(), "I was charged twice", questions={"u": {"type": "noul", "instructions": "Urgent?"}})
            check(False, "laya_c.%s refuses a runner that is not a laya_c Agent or Router" % fn.__name__)
        except TypeError as e:
            check("laya_c.Agent or laya_c.Router" in str(e),
                  "laya_c.%s refuses a runner that is not a laya_c Agent or Router: %s" % (fn.__name__, e))
    for a in agents.values():
        a.close()


def pydantic_schema(fixtures):
    try:
        import pydantic
    except ImportError:
        check(False, "pydantic is installed in the test venv")
        return
    a = laya_c.Agent(os.path.join(fixtures, "ckpt", "modernbert-tiny"), device="cpu", quiet=True)

    class Ticket(pydantic.BaseModel):
        intent: Literal["refund", "help", "other"]
        urgent: bool
        anger: pydantic.conint(ge=1, le=4)

    state = {"request": "I was charged twice, please refund me by Friday"}
    by_model = a.decide(state, Ticket, return_details=True)
    by_schema = a.decide(state, Ticket.model_json_schema(), return_details=True)
    check(isinstance(by_model, laya_c.DecisionResult) and by_model == by_schema
          and set(by_model.values) == {"intent", "urgent", "anger"}
          and by_model.values["intent"] in ("refund", "help", "other") and 1 <= by_model.values["anger"] <= 4,
          "decide(state, <pydantic model>) == decide(state, model.model_json_schema()): %s" % by_model.values)
    batch = a.decide_batch([state, state], Ticket)
    check(batch == [by_model.values, by_model.values], "decide_batch with a pydantic model")
    a.close()


def contracts(fixtures):
    path = os.path.join(fixtures, "ckpt", "modernbert-tiny")
    q = {"urgent": {"type": "noul", "instructions": "Is this urgent?"}}
    with laya_c.load(path, quiet=True) as a:
        one = a.predict("refund please", q)
        check(list(one) == ["model", "answers", "usage"] and 0 <= one["answers"]["urgent"]["noul"] <= 1,
              "load(path).predict returns Laya's dict")
        check(a.predict_batch(["refund please"], q) == [one], "predict_batch([s]) == [predict(s)]")
        ids = a.tokenize("refund please")
        check(isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids), "tokenize -> ids")
        check(isinstance(a.warmup(), float), "warmup() -> seconds")
        try:
            a.predict("x", q, hooks=[object()])
            check(False, "hooks= raises NotImplementedError")
        except NotImplementedError:
            check(True, "hooks= raises NotImplementedError")
    try:
        a.predict("x", q)
        check(False, "a closed Agent raises")
    except RuntimeError as e:
        check("closed" in str(e), "a closed Agent raises RuntimeError: %s" % e)

    # calibration: Agent(calibration=f) == load_calibration(f) on an uncalibrated Agent, != before
    import tempfile
    cal = os.path.join(tempfile.mkdtemp(prefix="laya-c-cal-"), "calibration.json")
    with open(cal, "w") as f:
        json.dump({"temperature": [2.0, 0.8, 1.5], "temperature_by_options": {}}, f)
    qc = {"team": {"type": "choice", "instructions": "Who?", "criteria": ["billing", "tech", "sales"]}}
    plain = laya_c.Agent(path, device="cpu", quiet=True)
    before = plain.predict("refund please", qc)
    plain.load_calibration(cal)
    after = plain.predict("refund please", qc)
    with laya_c.Agent(path, device="cpu", calibration=cal, quiet=True) as calibrated:
        direct = calibrated.predict("refund please", qc)
    check(after == direct and after["answers"]["team"]["probabilities"] != before["answers"]["team"]["probabilities"],
          "load_calibration(f) == Agent(calibration=f), and it moves the probabilities")
    plain.close()

    r = laya_c.Router(models={"english": path, "mine": path}, default="english", max_loaded=1)
    check(r.loaded == [], "Router loads nothing up front")
    res = r.predict("refund please", q, model="mine")
    check(list(res) == ["model", "answers", "usage", "routing"] and res["routing"]["model"] == "mine"
          and res["answers"] == one["answers"], "Router.predict(model=...) answers with 'routing'")
    check(r.loaded == ["mine"], "loaded after a predict: %s" % r.loaded)
    r.preload(["english", "mine"])
    check(sorted(r.loaded) == ["english", "mine"] and r.max_loaded == 2,
          "preload raises max_loaded to hold both: %s, %d" % (r.loaded, r.max_loaded))
    r.unload("mine")
    check(r.loaded == ["english"], "unload(name) frees that one: %s" % r.loaded)
    b = r.predict_batch([{"state": "refund please", "questions": q, "model": "mine"},
                         {"state": "refund please", "questions": q, "model": "english"}])
    check([x["routing"]["model"] for x in b] == ["mine", "english"] and b[0]["answers"] == one["answers"],
          "Router.predict_batch routes each request")
    d = r.route("Mein Konto wurde zweimal belastet")
    check(isinstance(d, laya_c.RouteDecision) and d.model == "multilingual", "route -> RouteDecision")
    try:
        r.route("x", model="nonexistent-model")
        check(False, "an unknown model raises ValueError")
    except ValueError as e:
        check("unknown model" in str(e) or "nonexistent" in str(e), "an unknown model raises ValueError: %s" % e)
    with r:
        pass
    check(r.loaded == [], "leaving the Router's with-block unloads everything")


def hub_cache(fixtures):
    """load() of Laya's names and aliases, and Agent(repo id[, subfolder]), from a Hugging Face
    cache laid out as huggingface_hub writes it (refs/main -> snapshots/<sha>/, files as
    symlinks), offline: "english" is the repo root, "ml" its multilingual/ subfolder."""
    import tempfile
    cache = tempfile.mkdtemp(prefix="laya-c-hf-")
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = os.path.join(cache, "models--convaiinnovations--laya")
    snap = os.path.join(repo, "snapshots", sha)
    os.makedirs(os.path.join(repo, "refs"))
    os.makedirs(snap)
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(sha)
    root_ck = os.path.abspath(os.path.join(fixtures, "ckpt", "modernbert-tiny"))
    for name in os.listdir(root_ck):
        os.symlink(os.path.join(root_ck, name), os.path.join(snap, name))
    os.symlink(os.path.abspath(os.path.join(fixtures, "ckpt", "mmbert-tiny")), os.path.join(snap, "multilingual"))
    old = {k: os.environ.get(k) for k in ("HF_HUB_CACHE", "HF_HUB_OFFLINE")}
    os.environ.update(HF_HUB_CACHE=cache, HF_HUB_OFFLINE="1")
    q = {"urgent": {"type": "noul", "instructions": "Is this urgent?"}}
    try:
        by_path = {ck: laya_c.Agent(os.path.join(fixtures, "ckpt", ck), device="cpu", quiet=True).predict("refund", q)
                   for ck in ("modernbert-tiny", "mmbert-tiny")}
        en = laya_c.load("english", device="cpu", quiet=True)
        ml = laya_c.load("ml", device="cpu", quiet=True)
        sub = laya_c.Agent("convaiinnovations/laya", device="cpu", subfolder="multilingual", quiet=True)
        check(en.predict("refund", q) == by_path["modernbert-tiny"] and en.info["path"].startswith(cache),
              "load('english') reads the repo root from the HF cache: %s" % en.info["path"])
        check(ml.predict("refund", q) == by_path["mmbert-tiny"] and sub.predict("refund", q) == by_path["mmbert-tiny"],
              "load('ml') and Agent(repo, subfolder='multilingual') read the subfolder from the HF cache")
        try:
            laya_c.Agent("convaiinnovations/not-cached", device="cpu", quiet=True)
            check(False, "an uncached repo offline raises")
        except Exception as e:  # noqa: BLE001
            check(isinstance(e, OSError) or "offline" in str(e).lower() or "cache" in str(e).lower(),
                  "an uncached repo offline raises %s: %.120s" % (type(e).__name__, e))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main():
    fixtures = sys.argv[1]
    replay(fixtures)
    pydantic_schema(fixtures)
    contracts(fixtures)
    hub_cache(fixtures)
    print("python/api: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
