#!/usr/bin/env python3
"""Record what the real Python laya-serve (laya 0.4.15) answers with LAYA_TOURNAMENT_GROUP set.

    PYTHONPATH=<fastapi+uvicorn> /work/refvenv/bin/python tests/serve/record_tournament.py
    # writes tests/serve/fixtures/python_tournament.json
    PYTHONPATH=<fastapi+uvicorn> /work/refvenv/bin/python tests/serve/record_tournament.py workflow
    # writes tests/serve/fixtures/python_tournament_workflow.json

Runs that venv's `laya-serve` on loopback with LAYA_TOURNAMENT_GROUP=tournament_cases.GROUP and
the tiny fixture checkpoints under Laya's names (as record_python.py does), plainly and with
LAYA_JEV_STRICT=1, and stores status, body and whether the timing headers came for every case
of tournament_cases.py. `workflow` records tournament_cases.workflow_cases() instead, with
LAYA_AUTO_TASK=1, LAYA_TOURNAMENT_GROUP=tournament_cases.WORKFLOW_GROUP and typed-decisions
registered too (every pass of a tournament routed on its own questions).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tournament_cases  # noqa: E402
from record_python import CKPT, post, python_server  # noqa: E402


def run(strict):
    with python_server(strict, LAYA_TOURNAMENT_GROUP=str(tournament_cases.GROUP)) as port:
        out = []
        for name, path, body, in_strict in tournament_cases.cases():
            if strict and not in_strict:
                continue
            status, raw, hdrs = post(port, path, body, {})
            low = {k.lower(): v for k, v in hdrs.items()}
            out.append({"name": name, "strict": strict, "status": status, "body": json.loads(raw),
                        "timed": "server-timing" in low and "x-inference-time-ms" in low})
        return out


def run_workflow():
    models = tournament_cases.workflow_models(CKPT)
    with python_server(False, LAYA_TOURNAMENT_GROUP=str(tournament_cases.WORKFLOW_GROUP), LAYA_AUTO_TASK="1",
                       LAYA_MODELS=",".join(models), LAYA_EXTRA_MODELS=json.dumps(models)) as port:
        out = []
        for name, path, body in tournament_cases.workflow_cases():
            status, raw, hdrs = post(port, path, body, {})
            out.append({"name": name, "status": status, "body": json.loads(raw)})
        return out


def main_workflow():
    records = run_workflow()
    dest = os.path.join(HERE, "fixtures", "python_tournament_workflow.json")
    with open(dest, "w") as f:
        json.dump({"laya": "0.4.15", "group": tournament_cases.WORKFLOW_GROUP, "paths": {"ckpt": CKPT},
                   "cases": records}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("recorded %d cases into %s" % (len(records), dest))


def main():
    records = run(False) + run(True)
    dest = os.path.join(HERE, "fixtures", "python_tournament.json")
    with open(dest, "w") as f:
        json.dump({"laya": "0.4.15", "group": tournament_cases.GROUP, "paths": {"ckpt": CKPT}, "cases": records},
                  f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("recorded %d cases into %s" % (len(records), dest))


if __name__ == "__main__":
    main_workflow() if sys.argv[1:] == ["workflow"] else main()
