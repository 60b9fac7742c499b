"""laya-mcp per-line cost, two binaries alternately: CPU time (utime + stime of the laya-mcp
process) per tools/call line over N lines beyond a first one (which loads the checkpoints), and
json_parse calls per line (a gdb breakpoint: hits with N + 1 lines minus hits with 1, over N).

usage: mcp_cpu.py CKPT N RUNS BIN_A BIN_B ...     (modernbert-tiny / mmbert-tiny under CKPT)
"""
import json, os, re, resource, subprocess, sys, tempfile
CKPT, N, RUNS, BINS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
QS = {"intent": {"type": "choice", "instructions": "What does the customer want?",
                 "criteria": {"refund": "money back", "help": "support", "other": "anything else"}},
      "urgent": {"type": "noul", "instructions": "Is it urgent?"},
      "anger": {"type": "score", "instructions": "How angry?", "criteria": ["calm", "cross", "furious"]}}
ST = {"message": "I was charged twice for my order last week, please refund me now"}
CALLS = {
    "laya_predict": {"state": ST, "questions": QS},
    "laya_predict_batch (4 requests)": {"requests": [{"state": ST, "questions": QS}] * 4},
    "laya_decide": {"state": ST, "schema": {"type": "object", "properties": {
        "team": {"enum": ["billing", "tech"]}, "ok": {"type": "boolean"}}}},
    "laya_predict_long": {"state": ST, "questions": QS, "window": 16},
    "laya_route": {"state": ST, "questions": QS},
    "laya_shortlist (k 2)": {"state": ST, "questions": QS, "k": 2},
}
ENV = dict(os.environ, LAYA_EXTRA_MODELS=json.dumps({"english": CKPT + "/modernbert-tiny",
                                                      "multilingual": CKPT + "/mmbert-tiny"}),
           LAYA_MODELS="english,multilingual", HF_HOME=tempfile.mkdtemp(), HF_HUB_OFFLINE="1", LAYA_THREADS="1")


def lines(tool, args, n):
    name = tool.split(" ")[0]
    return "".join(json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                               "params": {"name": name, "arguments": args}}) + "\n" for i in range(n))


def cpu(binary, text):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([binary], env=ENV, input=text, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def parses(binary, text):
    out = subprocess.run(["gdb", "-q", "-batch", "-ex", "set pagination off", "-ex", "break json_parse",
                          "-ex", "ignore 1 100000000", "-ex", "run", "-ex", "info breakpoints", "--args", binary],
                         env=ENV, input=text, capture_output=True, text=True).stdout
    m = re.search(r"already hit (\d+) time", out)
    return int(m.group(1)) if m else 0


for tool, args in CALLS.items():
    one, many = lines(tool, args, 1), lines(tool, args, N + 1)
    per = {b: [] for b in BINS}
    for _ in range(RUNS):
        for b in BINS:
            per[b].append((cpu(b, many) - cpu(b, one)) / N * 1e6)
    pc = {b: (parses(b, lines(tool, args, 11)) - parses(b, one)) / 10 for b in BINS}
    for b in BINS:
        v = sorted(per[b])
        print("%-32s %-28s us/line min %7.1f median %7.1f   json_parse/line %.1f" %
              (tool, b[-28:], v[0], v[len(v) // 2], pc[b]))
