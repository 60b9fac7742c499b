#!/usr/bin/env python3
"""Record what the real Python laya-serve (laya 0.4.15) answers with LAYA_TOURNAMENT_GROUP set.

    PYTHONPATH=<fastapi+uvicorn> /work/refvenv/bin/python tests/serve/record_tournament.py
    # writes tests/serve/fixtures/python_tournament.json

Runs that venv's `laya-serve` on loopback with LAYA_TOURNAMENT_GROUP=tournament_cases.GROUP and
the tiny fixture checkpoints under Laya's names (as record_python.py does), plainly and with
LAYA_JEV_STRICT=1, and stores status, body and whether the timing headers came for every case
of tournament_cases.py.
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


def main():
    records = run(False) + run(True)
    dest = os.path.join(HERE, "fixtures", "python_tournament.json")
    with open(dest, "w") as f:
        json.dump({"laya": "0.4.15", "group": tournament_cases.GROUP, "paths": {"ckpt": CKPT}, "cases": records},
                  f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("recorded %d cases into %s" % (len(records), dest))


if __name__ == "__main__":
    main()
