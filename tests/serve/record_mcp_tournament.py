#!/usr/bin/env python3
"""Record Laya 0.4.15's MCP server answers to mcp_tournament_cases.py (its laya_tournament tool),
through the official `mcp` client, as record_mcp_python.py does for mcp_cases.py.

    /opt/layaref/bin/python tests/serve/record_mcp_tournament.py   # -> fixtures/python_mcp_tournament.json
"""
import asyncio
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mcp_tournament_cases  # noqa: E402
import record_mcp_python as rec  # noqa: E402


def main():
    rec.mcp_cases = mcp_tournament_cases  # the recorder's calls: the tournament ones
    env = dict(os.environ, LAYA_PRELOAD="0", HF_HUB_OFFLINE="1", LAYA_THREADS="1", EXTRA=json.dumps(rec.EXTRA),
               LAYA_EXTRA_MODELS=json.dumps(rec.EXTRA), LAYA_MODELS="english,multilingual")
    out = asyncio.run(rec.run(sys.executable, ["-c", rec.WRAPPER], env))
    out["paths"] = {"ckpt": rec.CKPT}
    with open(os.path.join(HERE, "fixtures", "python_mcp_tournament.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("recorded %d MCP calls" % len(out["calls"]))


if __name__ == "__main__":
    main()
