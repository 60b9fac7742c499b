#!/usr/bin/env python3
"""laya-mcp over stdio (standard library only): JSON-RPC framing, the handshake, tools/list, and
every call of mcp_cases.py compared with Laya 0.4.15's MCP server (fixtures/python_mcp.json,
recorded through the official `mcp` client by record_mcp_python.py): the same isError, the same
error text byte for byte, and for answers the same payload (numbers within 2e-4; latencies and
the device string aside).

    test_mcp.py LAYA_MCP_BINARY CKPT_DIR [errors]

With `errors`, only the calls Laya refuses are replayed (no forward pass: quick under sanitizers).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mcp_cases  # noqa: E402
from test_http_util import same  # noqa: E402

BIN, CKPT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
ERRORS_ONLY = sys.argv[3:] == ["errors"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def main():
    extra = {"english": os.path.join(CKPT, "modernbert-tiny"), "multilingual": os.path.join(CKPT, "mmbert-tiny")}
    import tempfile
    env = dict(os.environ, LAYA_EXTRA_MODELS=json.dumps(extra), LAYA_MODELS="english,multilingual",
               HF_HOME=tempfile.mkdtemp(prefix="laya-mcp-hf-"), HF_HUB_OFFLINE="1",
               LAYA_BACKEND="cpu-ref", LAYA_THREADS="1")
    env.pop("LAYA_PRECISION", None)
    # LAYA_PRECISION reaches the models laya-mcp opens, and its status reports it
    benv = dict(env, LAYA_PRECISION="bf16")
    benv.pop("LAYA_BACKEND")
    call = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
             "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "laya_status", "arguments": {}}}]
    q = subprocess.run([BIN], env=benv, input="".join(json.dumps(c) + "\n" for c in call), capture_output=True,
                       text=True, timeout=120)
    last = [json.loads(x) for x in q.stdout.splitlines() if x.strip()][-1]
    bst = json.loads(last["result"]["content"][0]["text"])
    check(bst.get("precision") == "bf16" and bst.get("checkpoint_precisions") == {"english": "bf16", "multilingual": "bf16"},
          "LAYA_PRECISION=bf16 status %r" % bst)
    p = subprocess.Popen([BIN], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, encoding="utf-8")
    next_id = [0]

    def rpc(method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            next_id[0] += 1
            msg["id"] = next_id[0]
        p.stdin.write(json.dumps(msg) + "\n")
        p.stdin.flush()
        if notify:
            return None
        line = p.stdout.readline()
        resp = json.loads(line)
        check(resp.get("id") == msg["id"] and resp.get("jsonrpc") == "2.0", "%s: envelope %r" % (method, line[:200]))
        return resp

    r = rpc("server/discover", {})
    check(r.get("error", {}).get("code") == -32601, "discover must be 'method not found' (legacy fallback)")
    r = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
    res = r["result"]
    check(res["protocolVersion"] == "2025-06-18" and "tools" in res["capabilities"], "initialize %r" % res)
    own = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.split()
    check(res["serverInfo"]["name"] == "laya-mcp" and own[0] == "laya-mcp" and res["serverInfo"]["version"] == own[1],
          "server name and version: %r (laya-mcp --version %r)" % (res["serverInfo"], own))
    r = rpc("initialize", {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
    check(r["result"]["protocolVersion"] == "2025-11-25", "unknown version negotiates the latest")
    rpc("notifications/initialized", notify=True)
    check(rpc("ping")["result"] == {}, "ping")
    check(rpc("no/such/method")["error"]["code"] == -32601, "unknown method")
    p.stdin.write("{not json\n")
    p.stdin.flush()
    check(json.loads(p.stdout.readline())["error"]["code"] == -32700, "parse error")

    with open(os.path.join(HERE, "fixtures", "python_mcp.json")) as f:
        rec = json.load(f)
    old = rec["paths"]["ckpt"]
    rec = json.loads(json.dumps(rec).replace(json.dumps(old)[1:-1], json.dumps(CKPT)[1:-1]))
    tools = rpc("tools/list")["result"]["tools"]
    names = sorted(t["name"] for t in tools)
    want = ["laya_decide", "laya_predict", "laya_predict_batch", "laya_predict_long", "laya_preset", "laya_route",
            "laya_route_batch", "laya_shortlist", "laya_status", "laya_tournament"]
    check(names == want, "tools %r" % names)
    for t in tools:
        check(t["inputSchema"]["type"] == "object" and t["description"], "schema of " + t["name"])
        check(set(t["inputSchema"].get("required", [])) <= set(t["inputSchema"]["properties"]), "required of " + t["name"])
    check(set(want) - {"laya_status"} <= set(rec["tools"]), "Laya has these tools")

    calls = {c["name"]: c for c in rec["calls"]}
    replayed = 0
    for name, tool, args in mcp_cases.cases():
        if ERRORS_ONLY and not calls[name]["is_error"]:
            continue
        replayed += 1
        r = rpc("tools/call", {"name": tool, "arguments": args})["result"]
        text = r["content"][0]["text"]
        w = calls[name]
        if r["isError"] != w["is_error"]:
            check(False, "%s: isError %s, Laya %s: %s" % (name, r["isError"], w["is_error"], text[:300]))
            continue
        if w["is_error"]:
            check(text == w["payload"]["_text"], "%s: error text\n  got:  %s\n  Laya: %s" % (name, text, w["payload"]["_text"]))
            continue
        got = json.loads(text)
        exp = dict(w["payload"])
        for k in mcp_cases.VOLATILE:
            check((k in got) == (k in exp), "%s: %s presence" % (name, k))
            got.pop(k, None)
            exp.pop(k, None)
        check(text.startswith("{\n  \""), "%s: indent=2 text" % name)
        d = same(got, exp)
        check(d is None, "%s: %s" % (name, d))

    r = rpc("tools/call", {"name": "laya_status", "arguments": {}})["result"]
    st = json.loads(r["content"][0]["text"])
    check(not r["isError"] and st["loaded"] == ["english", "multilingual"] and st["device"] == "cpu", "status %r" % st)
    # the precision the checkpoints run at (this run: the fp32 reference backend)
    check(st.get("precision") == "fp32" and st.get("checkpoint_precisions") == {"english": "fp32", "multilingual": "fp32"},
          "status precision %r" % st)
    r = rpc("tools/call", {"name": "nope", "arguments": {}})["result"]
    check(r["isError"] and "Unknown tool" in r["content"][0]["text"], "unknown tool")
    # the HTTP server's limits, before any work (Laya's MCP server has none: 10,000 questions took
    # gigabytes and minutes); Laya's error codes
    import time
    noul = {"type": "noul", "instructions": "Refund?"}
    st = {"request": "refund please"}
    limits = [
        ("laya_predict", {"state": st, "questions": {"q%d" % i: noul for i in range(10000)}},
         "invalid_questions", "too many questions (10000 > 64)"),
        ("laya_predict", {"state": st, "questions": {"q": {"type": "choice", "instructions": "Pick",
                                                           "criteria": {"o%d" % i: "x" for i in range(100000)}}}},
         "invalid_questions", "too many choice options for questions[q] (100000 > 100)"),
        ("laya_predict", {"state": st, "questions": {"q": {"type": "score", "instructions": "How much?",
                                                           "criteria": ["l%d" % i for i in range(33)]}}},
         "invalid_questions", "too many score levels for questions[q] (33 > 32)"),
        ("laya_route", {"state": st, "questions": {"q%d" % i: {"type": "choice", "instructions": "Pick",
                                                                "criteria": {"o%d" % k: "x" for k in range(90)}}
                                                   for i in range(6)}},
         "invalid_questions", "too many answer options across questions (540 > 512)"),
        ("laya_predict", {"state": {"request": "x" * 50001}, "questions": {"q": noul}},
         "invalid_state", "state too large (%d > 50000 chars); laya_predict_long reads long states"
         % len(json.dumps({"request": "x" * 50001}, ensure_ascii=False))),
        ("laya_predict_batch", {"requests": [{"state": st, "questions": {"q": noul}}] * 65},
         "invalid_request", "too many requests in batch (65 > 64)"),
    ]
    for tool, args, code, msg in limits:
        t0 = time.time()
        r = rpc("tools/call", {"name": tool, "arguments": args})["result"]
        took = time.time() - t0
        text = r["content"][0]["text"]
        payload = json.loads(text.split(": ", 1)[1]) if r["isError"] else {}
        check(r["isError"] and payload == {"error": code, "message": msg}, "%s limit: %s" % (tool, text[:300]))
        check(took < 10, "%s limit answered after %.1fs" % (tool, took))
    # a message over 2 MiB is read to its end, not kept, and refused; the next one is answered
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 999, "method": "ping", "params": {"pad": "x" * (3 << 20)}}) + "\n")
    p.stdin.flush()
    big = json.loads(p.stdout.readline())
    check(big.get("error", {}).get("code") == -32600 and "2097152" in big["error"]["message"], "big message: %r" % big)
    check(rpc("ping")["result"] == {}, "ping after a big message")
    if not ERRORS_ONLY:
        r = rpc("tools/call", {"name": "laya_preset", "arguments": {"preset": "router", "state": {"x": "Write a haiku about rain"}}})["result"]
        body = json.loads(r["content"][0]["text"])
        check(not r["isError"] and body["answers"] and body["routing"]["model"] == "english", "preset router alias: %r" % body)
    p.stdin.close()
    check(p.wait(timeout=30) == 0, "exit code at EOF")
    check(replayed >= 30, "replayed only %d calls" % replayed)
    total = replayed + 35
    print("%d passed, %d failed" % (total - len(failures), len(failures)))
    sys.exit(1 if failures else 0)


main()
