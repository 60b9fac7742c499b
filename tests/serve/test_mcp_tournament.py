#!/usr/bin/env python3
"""laya-mcp's laya_tournament against Laya 0.4.15's MCP server (fixtures/python_mcp_tournament.json,
recorded by record_mcp_tournament.py through the official `mcp` client): every call of
mcp_tournament_cases.py gives the same isError, the same error text byte for byte, and for answers
the same payload (key order; numbers within 2e-4; latency aside): the final pass's answers, the
routing, the device, the tournament metadata (finalists, n, rounds) and option_order_dropped.
Then, in remote mode (LAYA_BASE_URL), the tool is refused as unsupported_remote with Laya's text.

    test_mcp_tournament.py LAYA_MCP_BINARY CKPT_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mcp_tournament_cases  # noqa: E402
from test_http_util import same  # noqa: E402

BIN, CKPT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)
    return cond


def session(env, calls):
    """Each (tool, arguments) through one laya-mcp process: the tools/call results in order."""
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs += [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
             for i, (tool, args) in enumerate(calls)]
    p = subprocess.run([BIN], env=env, input="".join(json.dumps(m) + "\n" for m in msgs), capture_output=True,
                       text=True, encoding="utf-8", timeout=600)
    out = {}
    for line in p.stdout.splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("id"):
                out[r["id"]] = r.get("result")
    return [out.get(i + 1) for i in range(len(calls))]


def main():
    extra = {"english": os.path.join(CKPT, "modernbert-tiny"), "multilingual": os.path.join(CKPT, "mmbert-tiny")}
    env = dict(os.environ, LAYA_EXTRA_MODELS=json.dumps(extra), LAYA_MODELS="english,multilingual",
               HF_HOME=tempfile.mkdtemp(prefix="laya-mcp-hf-"), HF_HUB_OFFLINE="1", LAYA_BACKEND="cpu-ref",
               LAYA_THREADS="1")
    env.pop("LAYA_PRECISION", None)
    env.pop("LAYA_BASE_URL", None)
    with open(os.path.join(HERE, "fixtures", "python_mcp_tournament.json")) as f:
        rec = json.load(f)
    old = rec["paths"]["ckpt"]
    rec = json.loads(json.dumps(rec).replace(json.dumps(old)[1:-1], json.dumps(CKPT)[1:-1]))
    calls = {c["name"]: c for c in rec["calls"]}
    cases = mcp_tournament_cases.cases()
    results = session(env, [(tool, args) for _name, tool, args in cases])
    rounds = 0
    for (name, _tool, _args), r in zip(cases, results):
        w = calls[name]
        if not check(r is not None, "%s: no result" % name):
            continue
        text = r["content"][0]["text"]
        if r["isError"] != w["is_error"]:
            check(False, "%s: isError %s, Laya %s: %s" % (name, r["isError"], w["is_error"], text[:300]))
            continue
        if w["is_error"]:
            want = w["payload"]["_text"]
            check(text == want, "%s: error text\n  got:  %s\n  Laya: %s" % (name, text, want))
            continue
        got, exp = json.loads(text), dict(w["payload"])
        check(isinstance(got.pop("latency_ms", None), float) and exp.pop("latency_ms", None) is not None,
              "%s: latency_ms" % name)
        d = same(got, exp)
        check(d is None, "%s: %s" % (name, d))
        rounds += sum(t["rounds"] for t in exp["tournament"].values())
    check(rounds >= 10, "only %d rounds replayed" % rounds)
    # remote mode: in-process only, refused before anything is validated
    renv = dict(env, LAYA_BASE_URL="http://127.0.0.1:9")
    r = session(renv, [("laya_tournament", {"state": {"t": "x"}, "questions": {}})])[0]
    want = {"error": "unsupported_remote", "message": (
        "laya_tournament runs core tournament rounds in-process; it is not available when LAYA_BASE_URL points "
        "at laya-serve. Use laya_predict with LAYA_TOURNAMENT_GROUP enabled on that server, or run the MCP "
        "server without LAYA_BASE_URL.")}
    prefix = "Error executing tool laya_tournament: "
    text = r["content"][0]["text"] if r else ""
    check(r is not None and r["isError"] and text.startswith(prefix) and json.loads(text[len(prefix):]) == want,
          "remote refusal %r" % (r,))
    print("%d laya_tournament calls replayed (%d rounds); %d failures" % (len(cases), rounds, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
