"""json_parse calls per /v1/systemone request of a laya-serve binary: gdb breakpoint hit counts
with N requests minus with none, over N. usage: serve_parses.py BIN CKPT N"""
import json, os, re, subprocess, sys, threading, time, http.client, signal
BIN, CKPT, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
QS = {"intent": {"type": "choice", "instructions": "What does the customer want?",
                 "criteria": {"refund": "money back", "help": "support", "other": None}},
      "urgent": {"type": "noul", "instructions": "Is it urgent?"},
      "anger": {"type": "score", "instructions": "How angry?", "criteria": ["calm", "cross", "furious"]}}
def hits(n, path, body):
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1",
               LAYA_EXTRA_MODELS=json.dumps({"english": CKPT + "/modernbert-tiny", "multilingual": CKPT + "/mmbert-tiny"}),
               LAYA_MODELS="english,multilingual", LAYA_THREADS="1")
    p = subprocess.Popen(["gdb", "-q", "-batch", "-ex", "set pagination off", "-ex", "break json_parse",
                          "-ex", "ignore 1 100000000", "-ex", "run", "-ex", "info breakpoints", "--args", BIN],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = None
    lines = []
    while port is None:
        l = p.stderr.readline()
        if not l: raise SystemExit("no start: " + "".join(lines) + p.stdout.read())
        lines.append(l)
        m = re.search(r"listening on http://[^:]+:(\d+)", l)
        if m: port = int(m.group(1))
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    for _ in range(n):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        r = c.getresponse(); r.read(); assert r.status == 200, r.status
        c.close()
    pid = int(subprocess.check_output(["pgrep", "-P", str(p.pid)]).split()[0])
    os.kill(pid, signal.SIGTERM)
    out = p.communicate(timeout=120)[0]
    m = re.search(r"already hit (\d+) time", out)
    return int(m.group(1)) if m else 0
EN = ["I was charged twice, please refund me now", "The app crashes when I open the settings page",
      "Where is my parcel? It was due last week", "Thank you, the problem is solved now"]
for name, path, body in [("systemone", "/v1/systemone", {"state": EN[0], "questions": QS}),
                         ("systemone/batch (4 English states)", "/v1/systemone/batch", {"states": EN, "questions": QS}),
                         ("systemone/batch (states routed apart: runs alone)", "/v1/systemone/batch",
                          {"states": [EN[0], "Mein Konto wurde zweimal belastet, bitte erstatten"], "questions": QS})]:
    a, b = hits(2, path, body), hits(2 + N, path, body)
    print(f"{name}: {(b - a) / N:.2f} json_parse calls per request")
