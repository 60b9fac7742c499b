"""Parity fixture for float head_max_len budgets: laya==0.4.15 answers a float head_max_len only
where Python's max() hands its slices an int (see src/model/engine.h, head_float); elsewhere it
raises TypeError. Replayed by tests/cli/test_cli_stream.py through `laya --request`.

    /work/refvenv/bin/python tools/ref/make_cli_budgets.py tests/fixtures/ckpt/modernbert-tiny \
        tests/fixtures/surfaces/cli_budgets.json
"""
import json
import sys
import warnings

import laya

warnings.simplefilter("ignore")
a = laya.Agent(sys.argv[1], device="cpu")
QS = [{"u": {"type": "noul", "instructions": "Is it urgent?"}},
      {"c": {"type": "choice", "instructions": "What is this ticket about, in a few words?", "criteria": {"billing": "money, invoices, refunds", "tech": "bugs, errors, crashes", "other": "anything else at all"}}}]
out = []
for qs in QS:
    for h in [2.0, 2.5, 8.0, 10.0, 12.5, 16.0, 20.0, 24.0, 30.0, 40.5, 64.5, 100.0]:
        try:
            r = a.predict({"request": "my card was charged twice"}, qs, head_max_len=h)
            out.append({"questions": qs, "head_max_len": h, "answers": r["answers"]})
        except Exception as e:
            out.append({"questions": qs, "head_max_len": h, "error": "%s: %s" % (type(e).__name__, e)})
json.dump(out, open(sys.argv[2], "w"), indent=1)
