#!/usr/bin/env python3
"""laya-mcp's laya_shortlist against laya.shortlist.predict_shortlist's recorded results.

    test_mcp_shortlist.py LAYA_MCP_BINARY FIXTURES_DIR

Each fixture case (tests/fixtures/shortlist/<ckpt>/cases.jsonl) with an object state, no error and
only state / questions / k, on the checkpoint pinned by name (one with list criteria is refused,
as Laya's MCP tools take criteria as an object): the tool's answers and per-question
shortlist (kept labels in rank order, cosine scores, k, n, passthrough) are Laya's (strings exact,
numbers within 1e-4), routing is the pinned checkpoint's. Then: a narrowed question with an
option_order reports it under option_order_dropped ({"n", "kept"}) and a passthrough one does not;
k = 0 / "3" / true are refused as invalid_k; 1,000 labels are answered where laya_predict caps a
choice at 100; 10,001 labels are refused.
"""
import json
import os
import subprocess
import sys
import tempfile

from test_http_util import skip_without_isa  # noqa: E402

BIN, FIX = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures, checks = [], [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL", what)


def same(a, b, path="$"):
    if isinstance(b, dict):
        if not isinstance(a, dict) or list(a) != list(b):
            return "%s: keys %s != %s" % (path, list(a) if isinstance(a, dict) else a, list(b))
        for k in b:
            d = same(a[k], b[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(b, list):
        if not isinstance(a, list) or len(a) != len(b):
            return "%s: list lengths" % path
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if isinstance(b, (bool, str)) or b is None:
        return None if a == b and type(a) is type(b) else "%s: %r != %r" % (path, a, b)
    return None if isinstance(a, (int, float)) and abs(a - b) <= 1e-4 + 1e-12 else "%s: %r != %r" % (path, a, b)


def main():
    skip_without_isa()  # serve/mcp_shortlist_avx2: exit 77 on a CPU without AVX2
    ck = os.path.join(FIX, "ckpt")
    extra = {"english": os.path.join(ck, "modernbert-tiny"), "multilingual": os.path.join(ck, "mmbert-tiny")}
    env = dict(os.environ, LAYA_EXTRA_MODELS=json.dumps(extra), LAYA_MODELS="english,multilingual",
               HF_HOME=tempfile.mkdtemp(prefix="laya-mcp-hf-"), HF_HUB_OFFLINE="1")
    for k in ("LAYA_PRECISION", "LAYA_BACKEND", "LAYA_DEVICE", "LAYA_CPU_AMP"):
        env.pop(k, None)
    p = subprocess.Popen([BIN], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, encoding="utf-8")
    nid = [0]

    def rpc(method, params=None):
        nid[0] += 1
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": nid[0], "method": method, "params": params or {}}) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    def tool(args):
        r = rpc("tools/call", {"name": "laya_shortlist", "arguments": args})["result"]
        return r["isError"], r["content"][0]["text"]

    rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
    tools = {t["name"]: t for t in rpc("tools/list")["result"]["tools"]}
    check("laya_shortlist" in tools, "laya_shortlist is listed")
    props = tools.get("laya_shortlist", {}).get("inputSchema", {}).get("properties", {})
    check(set(props) == {"state", "questions", "model", "k", "task", "lang", "lang_guess", "max_len", "head_max_len",
                         "min_confidence"} and props["k"].get("default") == 20, "Laya's argument names, k defaults to 20")
    replayed = 0
    for ckpt, name in (("modernbert-tiny", "english"), ("mmbert-tiny", "multilingual")):
        for line in open(os.path.join(FIX, "shortlist", ckpt, "cases.jsonl"), encoding="utf-8"):
            c = json.loads(line)
            req = json.loads(c["request"])
            if "error" in c or not isinstance(req["state"], dict) or not req["state"] or set(req) != {"state", "questions", "k"}:
                continue
            err, text = tool(dict(req, model=name))
            if any(isinstance(q.get("criteria"), list) for q in req["questions"].values() if q.get("type") == "choice"):
                # Laya's MCP tools take a choice's criteria as an object only
                check(err and "criteria must be a non-empty object of label -> description" in text,
                      "%s/%s: list criteria refused as Laya's tool refuses them: %s" % (ckpt, c["id"], text[:200]))
                continue
            check(not err, "%s/%s: %s" % (ckpt, c["id"], text[:300]))
            if err:
                continue
            got = json.loads(text)
            check(list(got)[:4] == ["answers", "routing", "shortlist", "latency_ms"], "%s: keys %s" % (c["id"], list(got)))
            check(got["routing"]["model"] == name, "%s: routing" % c["id"])
            for part in ("answers", "shortlist"):
                d = same(got[part], c["result"][part])
                check(d is None, "%s/%s %s: %s" % (ckpt, c["id"], part, d))
            replayed += 1
    check(replayed >= 10, "replayed %d fixture cases" % replayed)

    labels = ["label number %d" % i for i in range(1000)]
    crit = {l: "about " + l for l in labels}
    q = {"type": "choice", "instructions": "Which label?", "criteria": crit}
    err, text = tool({"state": {"request": "label number 7 please"}, "questions": {"q": q}, "model": "english", "k": 5})
    check(not err, "1,000 labels: %s" % text[:200])
    if not err:
        got = json.loads(text)
        check(got["shortlist"]["q"]["n"] == 1000 and len(got["shortlist"]["q"]["labels"]) == 5
              and list(got["answers"]["q"]["probabilities"]) == got["shortlist"]["q"]["labels"], "1,000 labels narrowed to 5")
    r = rpc("tools/call", {"name": "laya_predict", "arguments": {"state": {"request": "x"}, "questions": {"q": q}, "model": "english"}})
    check(r["result"]["isError"], "laya_predict still caps a choice at 100 options")
    big = {"type": "choice", "instructions": "x", "criteria": {"l%d" % i: None for i in range(10001)}}
    err, text = tool({"state": {"request": "x"}, "questions": {"q": big}, "model": "english"})
    check(err and "too many choice options for questions[q] (10001 > 10000)" in text, "10,001 labels refused: %s" % text[:200])
    ordered = {"type": "choice", "instructions": "Which?", "criteria": {l: None for l in labels[:40]},
               "option_order": list(reversed(range(40)))}
    small = {"type": "choice", "instructions": "Which?", "criteria": {"a": None, "b": None}, "option_order": [1, 0]}
    err, text = tool({"state": {"request": "x"}, "questions": {"big": ordered, "small": small}, "model": "english", "k": 6})
    check(not err, "option_order: %s" % text[:200])
    if not err:
        got = json.loads(text)
        check(got.get("option_order_dropped") == {"big": {"n": 40, "kept": 6}}, "option_order_dropped %r" % got.get("option_order_dropped"))
    for bad, shown in ((0, "0"), ("3", "'3'"), (True, "True"), (-2, "-2")):
        err, text = tool({"state": {"request": "x"}, "questions": {"q": small}, "model": "english", "k": bad})
        check(err and '"invalid_k"' in text and "k must be a positive integer, got %s" % shown in text, "k=%r: %s" % (bad, text[:200]))
    p.stdin.close()
    p.wait(timeout=60)
    print("test_mcp_shortlist: %d checks, %d failed" % (checks[0], len(failures)))
    return 1 if failures else 0


sys.exit(main())
