#!/usr/bin/env python3
"""python/router: Laya's recorded Router.route decisions (tests/fixtures/router/corpus.jsonl and
corpus_explain.jsonl, written by the real laya 0.4.15, tools/router/) replayed through
laya_c.Router: `Router(auto_task_detection=...).route(**request, explain=...)`.

  test_router.py FIXTURES CAPI_DUMP WORK_DIR

The rule is tests/router's: the routed checkpoint agrees with Laya's on >= 99% of the states
(each disagreement listed), a recorded error is raised with its class and message; how many whole
decisions are identical is reported. And every decision equals what laya_route returns for the
same request text exactly (capi_dump), so the binding adds nothing of its own.
"""
import json
import os
import subprocess
import sys

import laya_c


def main():
    fixtures, capi_dump, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    routers = {False: laya_c.Router(), True: laya_c.Router(auto_task_detection=True)}
    code = 0
    for name, explain in (("corpus.jsonl", False), ("corpus_explain.jsonl", True)):
        with open(os.path.join(fixtures, "router", name)) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        calls = os.path.join(work, "route-" + name)
        with open(calls, "w") as f:
            for r in rows:
                req = dict(r["request"], explain=True) if explain else r["request"]
                api = "route" + ("_auto" if r.get("auto_task_detection") else "")
                f.write(json.dumps({"api": api, "lang_temperatures": None, "request": json.dumps(req)}) + "\n")
        out = calls + ".capi"
        subprocess.run([capi_dump, os.path.join(fixtures, "ckpt", "modernbert-tiny"), calls, out], check=True)
        with open(out) as f:
            capi = [json.loads(line) for line in f]
        model_ok = whole_ok = errors = errors_ok = not_capi = 0
        for row, c in zip(rows, capi):
            router = routers[bool(row.get("auto_task_detection"))]
            try:
                got, err = router.route(**row["request"], explain=explain), None
            except Exception as e:  # noqa: BLE001
                got, err = None, e
            if "error" in row:
                errors += 1
                want = row["error"]
                if err is not None and type(err).__name__ == want["kind"] and str(err) == want["message"]:
                    errors_ok += 1
                    model_ok += 1
                    whole_ok += 1
                else:
                    print("DISAGREE id=%s: want %s: %s, got %r" % (row["id"], want["kind"], want["message"],
                                                                 err if err is not None else got))
                if c.get("error") != {"kind": type(err).__name__, "message": str(err)} if err else True:
                    not_capi += 1
                continue
            want = row["decision"]
            if err is None and got["model"] == want["model"]:
                model_ok += 1
                whole_ok += json.dumps(got) == json.dumps(want)
            else:
                print("DISAGREE id=%s (%s): laya=%s laya_c=%s" % (row["id"], row.get("category"), want["model"],
                                                               "%s: %s" % (type(err).__name__, err) if err else got["model"]))
            if err is not None or "result" not in c or json.dumps(dict(got)) != json.dumps(c["result"]):
                not_capi += 1
        pct = 100.0 * model_ok / max(1, len(rows))
        print("laya_c router %s: %d states, checkpoint agrees on %d (%.2f%%), whole decision identical on %d, "
              "errors %d/%d identical; differing from laya_route's output: %d"
              % (name, len(rows), model_ok, pct, whole_ok, errors_ok, errors, not_capi))
        if len(rows) < 2000 or pct < 99.0 or not_capi:
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main())
