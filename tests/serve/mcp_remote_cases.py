"""laya-mcp remote mode (LAYA_BASE_URL): the calls, the servers they run against, and how to drive
an MCP server over stdio (standard library only). record_mcp_remote.py records Laya 0.4.15's MCP
server's answers; test_http.py's mcp_remote replays them against laya-mcp, both times with a
laya.c laya-serve on loopback as the remote (the mapping from tools to HTTP calls and from HTTP
errors to tool errors is the MCP server's own)."""
import json
import os
import socket
import subprocess

from mcp_cases import NOUL, QS, ST

GERMAN = {"message": "Ich wurde doppelt belastet, bitte erstatten Sie mir den Betrag."}
KEY = "remote-key"

# (name, run, tool, arguments): run "ok" has the right key, "wrong_key" a wrong one,
# "unreachable" a base URL nothing listens on, "bad_url" one Laya refuses.
CALLS = [
    ("status", "ok", "laya_status", {}),
    ("predict_pinned", "ok", "laya_predict", {"state": ST, "questions": QS, "model": "english"}),
    ("predict_auto", "ok", "laya_predict", {"state": GERMAN, "questions": {"refund": NOUL}}),
    ("predict_controls", "ok", "laya_predict", {"state": ST, "questions": QS, "model": "en", "max_len": 64,
                                                "min_confidence": 0.6}),
    ("predict_batch", "ok", "laya_predict_batch", {"requests": [
        {"state": ST, "questions": QS, "model": "english"},
        {"state": {"message": "The app crashes on start."}, "questions": QS, "model": "english"},
        {"state": ST, "questions": {"refund": NOUL}, "model": "multilingual"}]}),
    ("route", "ok", "laya_route", {"state": GERMAN, "questions": QS}),
    ("over_server_budget", "ok", "laya_predict", {"state": ST, "questions": QS, "model": "english", "max_len": 9000}),
    ("invalid_locally", "ok", "laya_predict", {"state": ST, "questions": {"q": {"type": "rank", "instructions": "i"}}}),
    ("predict_long", "ok", "laya_predict_long", {"state": ST, "questions": QS, "model": "english"}),
    ("wrong_key", "wrong_key", "laya_predict", {"state": ST, "questions": QS, "model": "english"}),
    ("wrong_key_status", "wrong_key", "laya_status", {}),
    ("unreachable", "unreachable", "laya_predict", {"state": ST, "questions": QS, "model": "english"}),
    ("unreachable_status", "unreachable", "laya_status", {}),
    ("bad_url", "bad_url", "laya_predict", {"state": ST, "questions": QS}),
]

# laya_decide in remote mode (record_mcp_remote.py decide -> fixtures/python_mcp_remote_decide.json):
# Laya plans the schema into questions, asks the server (POST /v1/systemone) and projects the
# answers; the server routes when no model is given.
SCHEMA = {"type": "object", "properties": {
    "team": {"enum": ["billing", "tech", "other"], "description": "Which team should handle this?"},
    "refund": {"type": "boolean", "description": "Does the message ask for money back?"},
    "urgency": {"type": "integer", "minimum": 1, "maximum": 4, "description": "How urgent is it?"},
    "tier": {"enum": [1, 2.5, True, None], "description": "Which tier?"}}}
DECIDE_CALLS = [
    ("decide_auto", "ok", "laya_decide", {"state": ST, "schema": SCHEMA}),
    ("decide_auto_german", "ok", "laya_decide", {"state": GERMAN, "schema": SCHEMA}),
    ("decide_pinned", "ok", "laya_decide", {"state": ST, "schema": SCHEMA, "model": "multilingual"}),
    ("decide_alias", "ok", "laya_decide", {"state": ST, "schema": SCHEMA, "model": "EN"}),
    ("decide_min_conf", "ok", "laya_decide", {"state": ST, "schema": SCHEMA, "min_confidence": 0.5}),
    ("decide_bad_schema", "ok", "laya_decide", {"state": ST, "schema": {"type": "object", "properties": {
        "tags": {"type": "array"}}}}),
    ("decide_empty_state", "ok", "laya_decide", {"state": {}, "schema": SCHEMA}),
    ("decide_wrong_key", "wrong_key", "laya_decide", {"state": ST, "schema": SCHEMA}),
    ("decide_unreachable", "unreachable", "laya_decide", {"state": ST, "schema": SCHEMA}),
    ("decide_bad_url", "bad_url", "laya_decide", {"state": ST, "schema": SCHEMA}),
]


# Choices over the one-pass cap in remote mode (record_mcp_remote.py tournament ->
# fixtures/python_mcp_remote_tournament.json): Laya's MCP server forwards every choice, so the
# server's caps decide. Run "ok" is a laya-serve with LAYA_TOURNAMENT_GROUP=TOURNAMENT_GROUP (it
# answers up to 255 options by elimination), "plain" one without (it refuses over 100).
TOURNAMENT_GROUP = 8


def labels(n, prefix="option"):
    return {"%s %d" % (prefix, i): "the %s numbered %d" % (prefix, i) for i in range(n)}


def big_choice(n):
    return {"type": "choice", "instructions": "Which option fits the message?", "criteria": labels(n)}


TOURNAMENT_CALLS = [
    ("t_predict_120", "ok", "laya_predict", {"state": ST, "questions": {"q": big_choice(120)}, "model": "english"}),
    ("t_predict_255_auto", "ok", "laya_predict", {"state": ST, "questions": {"q": big_choice(255), "refund": NOUL}}),
    ("t_predict_256", "ok", "laya_predict", {"state": ST, "questions": {"q": big_choice(256)}, "model": "english"}),
    ("t_batch_120", "ok", "laya_predict_batch", {"requests": [
        {"state": ST, "questions": {"q": big_choice(120)}, "model": "english"},
        {"state": {"message": "The app crashes on start."}, "questions": {"q": big_choice(120)}, "model": "english"}]}),
    ("t_total_600", "ok", "laya_predict", {"state": ST, "questions": {"c%d" % i: big_choice(100) for i in range(6)},
                                           "model": "english"}),
    ("t_questions_65", "ok", "laya_predict", {"state": ST, "questions": {"q%d" % i: NOUL for i in range(65)},
                                              "model": "english"}),
    ("t_state_60000", "ok", "laya_predict", {"state": {"message": "x" * 60000}, "questions": {"refund": NOUL},
                                             "model": "english"}),
    ("t_invalid_locally_first", "ok", "laya_predict", {"state": ST, "questions": dict(
        {"q%d" % i: NOUL for i in range(65)}, bad={"type": "rank", "instructions": "i"})}),
    ("p_predict_120", "plain", "laya_predict", {"state": ST, "questions": {"q": big_choice(120)}, "model": "english"}),
    ("p_predict_100", "plain", "laya_predict", {"state": ST, "questions": {"q": big_choice(100)}, "model": "english"}),
    ("p_batch_120", "plain", "laya_predict_batch", {"requests": [
        {"state": ST, "questions": {"q": big_choice(120)}, "model": "english"}]}),
    ("p_shortlist", "plain", "laya_shortlist", {"state": ST, "questions": {"q": big_choice(120)}, "k": 5}),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_env(run, serve_port, closed_port):
    """LAYA_BASE_URL and LAYA_API_KEY of a run (scheme-less host:port for "ok", as Laya allows)."""
    return {"ok": {"LAYA_BASE_URL": "127.0.0.1:%d" % serve_port, "LAYA_API_KEY": KEY},
            "wrong_key": {"LAYA_BASE_URL": "http://127.0.0.1:%d/" % serve_port, "LAYA_API_KEY": "wrong"},
            "unreachable": {"LAYA_BASE_URL": "http://127.0.0.1:%d" % closed_port, "LAYA_API_KEY": KEY},
            "bad_url": {"LAYA_BASE_URL": "ftp://127.0.0.1:%d" % serve_port, "LAYA_API_KEY": KEY}}[run]


def call_all(command, env, calls):
    """Run an MCP server over stdio (newline-delimited JSON-RPC) and make the calls; returns
    [(isError, text)] in order, and the server's stderr."""
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for i, (_, _, tool, args) in enumerate(calls, 1):
        msgs.append({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}})
    p = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, encoding="utf-8")
    out = {}
    for m in msgs:  # one at a time: the Python SDK answers concurrently, ours in order
        p.stdin.write(json.dumps(m) + "\n")
        p.stdin.flush()
        if "id" not in m:
            continue
        while True:
            line = p.stdout.readline()
            if not line:
                raise RuntimeError("MCP server exited: %s" % p.stderr.read()[-2000:])
            r = json.loads(line)
            if r.get("id") == m["id"]:
                out[m["id"]] = r
                break
    p.stdin.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    res = []
    for i in range(1, len(calls) + 1):
        r = out[i]["result"]
        res.append((bool(r.get("isError")), r["content"][0]["text"]))
    return out[0]["result"], res, err


def parse_text(text):
    """A tool result's JSON (after the SDK's 'Error executing tool X: ' prefix on errors)."""
    i = text.find("{")
    return json.loads(text[i:]) if i >= 0 else text
