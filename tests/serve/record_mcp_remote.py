#!/usr/bin/env python3
"""Record Laya 0.4.15's MCP server in remote mode (LAYA_BASE_URL) against a laya.c laya-serve.

    PY=/path/to/venv-with-laya-and-mcp/bin/python
    $PY tests/serve/record_mcp_remote.py build/laya-serve   # -> fixtures/python_mcp_remote.json
    $PY tests/serve/record_mcp_remote.py build/laya-serve decide   # laya_decide's calls (DECIDE_CALLS)
                                                           # -> fixtures/python_mcp_remote_decide.json
    $PY tests/serve/record_mcp_remote.py build/laya-serve tournament   # choices over 100 options
        (TOURNAMENT_CALLS) against a laya-serve with LAYA_TOURNAMENT_GROUP (run "ok") and one
        without (run "plain") -> fixtures/python_mcp_remote_tournament.json

Starts laya-serve on loopback with the tiny fixture checkpoints under Laya's names and
LAYA_API_KEY, then runs `python -m laya.mcp.server` with each run's LAYA_BASE_URL / LAYA_API_KEY
(mcp_remote_cases.py) and stores every call's isError and text, with the base URL written
{BASE} and the unreachable port {CLOSED}, the fixture checkpoints' folder as {CKPT}.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import mcp_remote_cases as mrc  # noqa: E402

CKPT = os.path.join(ROOT, "tests", "fixtures", "ckpt")


def start_serve(serve_bin, port, **extra):
    """laya-serve on loopback with the tiny checkpoints under Laya's names, once /ready answers."""
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT=str(port), LAYA_API_KEY=mrc.KEY, LAYA_THREADS="1",
               LAYA_MODELS="english,multilingual", HF_HUB_OFFLINE="1", LAYA_BACKEND="cpu-ref",
               LAYA_EXTRA_MODELS=json.dumps({"english": os.path.join(CKPT, "modernbert-tiny"),
                                             "multilingual": os.path.join(CKPT, "mmbert-tiny")}), **extra)
    srv = subprocess.Popen([serve_bin], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/ready" % port, timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    return srv


def tournament(serve_bin):
    """TOURNAMENT_CALLS: run "ok" against a laya-serve with LAYA_TOURNAMENT_GROUP, "plain" without."""
    ports = {"ok": mrc.free_port(), "plain": mrc.free_port()}
    servers = [start_serve(serve_bin, ports["ok"], LAYA_TOURNAMENT_GROUP=str(mrc.TOURNAMENT_GROUP)),
               start_serve(serve_bin, ports["plain"])]
    out = []
    try:
        for run in ("ok", "plain"):
            calls = [c for c in mrc.TOURNAMENT_CALLS if c[1] == run]
            menv = dict(os.environ, HF_HUB_OFFLINE="1", LAYA_DEVICE="cpu",
                        LAYA_BASE_URL="127.0.0.1:%d" % ports[run], LAYA_API_KEY=mrc.KEY)
            menv.pop("LAYA_EXTRA_MODELS", None)
            _, res, _ = mrc.call_all([sys.executable, "-m", "laya.mcp.server"], menv, calls)
            for (name, _, _, _), (is_error, text) in zip(calls, res):
                text = text.replace("127.0.0.1:%d" % ports[run], "{BASE}").replace(CKPT, "{CKPT}")
                out.append({"name": name, "isError": is_error, "text": text})
    finally:
        for srv in servers:
            srv.terminate()
            srv.wait(timeout=30)
    import laya
    with open(os.path.join(HERE, "fixtures", "python_mcp_remote_tournament.json"), "w") as f:
        json.dump({"laya": laya.__version__, "group": mrc.TOURNAMENT_GROUP, "calls": out}, f, indent=1,
                  ensure_ascii=False)
        f.write("\n")


def main():
    serve_bin = os.path.abspath(sys.argv[1])
    if sys.argv[2:] == ["tournament"]:
        return tournament(serve_bin)
    decide = sys.argv[2:] == ["decide"]
    all_calls = mrc.DECIDE_CALLS if decide else mrc.CALLS
    port, closed = mrc.free_port(), mrc.free_port()
    srv = start_serve(serve_bin, port)
    try:
        out = []
        for run in ("ok", "wrong_key", "unreachable", "bad_url"):
            calls = [c for c in all_calls if c[1] == run]
            menv = dict(os.environ, HF_HUB_OFFLINE="1", LAYA_DEVICE="cpu", **mrc.run_env(run, port, closed))
            menv.pop("LAYA_EXTRA_MODELS", None)
            info, res, _ = mrc.call_all([sys.executable, "-m", "laya.mcp.server"], menv, calls)
            for (name, _, _, _), (is_error, text) in zip(calls, res):
                text = text.replace("127.0.0.1:%d" % port, "{BASE}").replace("127.0.0.1:%d" % closed, "{CLOSED}").replace(CKPT, "{CKPT}")
                out.append({"name": name, "isError": is_error, "text": text})
    finally:
        srv.terminate()
        srv.wait(timeout=30)
    import laya
    name = "python_mcp_remote_decide.json" if decide else "python_mcp_remote.json"
    with open(os.path.join(HERE, "fixtures", name), "w") as f:
        json.dump({"laya": laya.__version__, "calls": out}, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
