#!/usr/bin/env python3
"""Record Laya 0.4.15's MCP server answers to mcp_cases.py, through the official `mcp` client.

    /opt/layaref/bin/python tests/serve/record_mcp_python.py   # -> fixtures/python_mcp.json

Laya's MCP server builds its Router without LAYA_EXTRA_MODELS, so the wrapper below hands it a
Router with the tiny fixture checkpoints re-pointed under Laya's names (what LAYA_EXTRA_MODELS
does for laya-serve) before starting `laya.mcp.server.main()`; the tool layer is Laya's own.
With a path argument instead, it runs the same calls against that server command (any MCP
server, e.g. our laya-mcp) and prints how many match the recording.
"""
import asyncio
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import mcp_cases  # noqa: E402

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

CKPT = os.path.join(ROOT, "tests", "fixtures", "ckpt")
EXTRA = {"english": os.path.join(CKPT, "modernbert-tiny"), "multilingual": os.path.join(CKPT, "mmbert-tiny")}
WRAPPER = """
import json, os, laya.mcp.server as s
from laya import Router
r = Router(device="cpu", models=json.loads(os.environ["EXTRA"]))
r.preload(["english", "multilingual"])
s._ROUTER = r
s.main()
"""


async def run(command, args, env):
    params = StdioServerParameters(command=command, args=args, env=env)
    out = {"tools": None, "calls": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            for name, tool, arguments in mcp_cases.cases():
                res = await session.call_tool(tool, arguments)
                text = res.content[0].text if res.content else ""
                try:
                    payload = json.loads(text)
                except ValueError:
                    payload = {"_text": text}
                out["calls"].append({"name": name, "tool": tool, "is_error": bool(getattr(res, "is_error", None) if hasattr(res, "is_error") else res.isError), "payload": payload})
    return out


def main():
    env = dict(os.environ, LAYA_PRELOAD="0", HF_HUB_OFFLINE="1", LAYA_THREADS="1", EXTRA=json.dumps(EXTRA),
               LAYA_EXTRA_MODELS=json.dumps(EXTRA), LAYA_MODELS="english,multilingual")
    if len(sys.argv) > 1:
        got = asyncio.run(run(sys.argv[1], sys.argv[2:], dict(env, LAYA_PRELOAD="1")))
        with open(os.path.join(HERE, "fixtures", "python_mcp.json")) as f:
            want = json.load(f)
        print("tools:", got["tools"])
        ok = 0
        for g, w in zip(got["calls"], want["calls"]):
            same = g["is_error"] == w["is_error"] and (w["is_error"] and g["payload"] == w["payload"] or not w["is_error"])
            ok += same
            if not same:
                print("DIFF", g["name"], json.dumps(g["payload"])[:200], "| Laya:", json.dumps(w["payload"])[:200])
        print("%d of %d calls agree on isError and error payloads (via the official mcp client)" % (ok, len(want["calls"])))
        sys.exit(0 if ok == len(want["calls"]) == len(got["calls"]) else 1)
    rec = asyncio.run(run(sys.executable, ["-c", WRAPPER], env))
    rec["paths"] = {"ckpt": CKPT}
    with open(os.path.join(HERE, "fixtures", "python_mcp.json"), "w") as f:
        json.dump(rec, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("recorded %d MCP calls" % len(rec["calls"]))


if __name__ == "__main__":
    main()
