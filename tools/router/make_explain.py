"""Record laya 0.4.15's Router.route(..., explain=True) on the router corpus.

    /opt/layaref/bin/python tools/router/make_explain.py tests/fixtures/router/corpus.jsonl \
        tests/fixtures/router/corpus_explain.jsonl

Same states and routing arguments as corpus.jsonl; the detection now carries Laya's
`diagnostic` (stage, reason, source leaf / path / line), which `laya --explain` prints.
"""
import json
import sys

from laya.router import Router

plain, auto = Router(), Router(auto_task_detection=True)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in open(sys.argv[1], encoding="utf-8"):
        row = json.loads(line)
        req = row["request"]
        router = auto if row["auto_task_detection"] else plain
        try:
            d = router.route(req["state"], req.get("questions"), model=req.get("model"), task=req.get("task"),
                             lang=req.get("lang"), lang_guess=req.get("lang_guess"), explain=True)
            rec = {"decision": dict(d)}
        except (ValueError, TypeError) as e:
            rec = {"error": {"kind": type(e).__name__, "message": str(e)}}
        new = {k: row[k] for k in ("id", "category", "auto_task_detection", "request")}
        new.update(rec)
        out.write(json.dumps(new, ensure_ascii=False) + "\n")
