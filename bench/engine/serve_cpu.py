"""Server CPU time per request (utime+stime of the laya-serve process over N requests), at 1 and
32 concurrent clients, alternating two binaries. usage: serve_cpu.py CKPT N BIN_A BIN_B ..."""
import json, os, re, subprocess, sys, threading, time, http.client, signal
CKPT, N, BINS = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
QS = {"intent": {"type": "choice", "instructions": "What does the customer want?",
                 "criteria": {"refund": "money back", "help": "support", "other": None}},
      "urgent": {"type": "noul", "instructions": "Is it urgent?"},
      "anger": {"type": "score", "instructions": "How angry?", "criteria": ["calm", "cross", "furious"]}}
BODY = json.dumps({"state": "I was charged twice for my order last week, please refund me now", "questions": QS}).encode()
TCK = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TCK
def post(port, n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    for _ in range(n):
        c.request("POST", "/v1/systemone", BODY, {"Content-Type": "application/json"})
        r = c.getresponse(); r.read(); assert r.status == 200
    c.close()
def run(bin, clients):
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1",
               LAYA_EXTRA_MODELS=json.dumps({"english": CKPT + "/modernbert-tiny", "multilingual": CKPT + "/mmbert-tiny"}),
               LAYA_MODELS="english", LAYA_THREADS="1", LAYA_MAX_CONCURRENT="256")
    p = subprocess.Popen([bin], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    while port is None:
        m = re.search(r"listening on http://[^:]+:(\d+)", p.stderr.readline())
        if m: port = int(m.group(1))
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    post(port, 20)  # warm
    c0, t0 = cpu(p.pid), time.time()
    ts = [threading.Thread(target=post, args=(port, N // clients)) for _ in range(clients)]
    [t.start() for t in ts]; [t.join() for t in ts]
    c1, t1 = cpu(p.pid), time.time()
    p.send_signal(signal.SIGTERM); p.wait(timeout=60)
    n = (N // clients) * clients
    return (c1 - c0) / n * 1e6, n / (t1 - t0)
res = {}
for rnd in range(3):
    for clients in (1, 32):
        for b in BINS:
            res.setdefault((b, clients), []).append(run(b, clients))
for (b, clients), v in res.items():
    us = sorted(x[0] for x in v); rps = sorted(x[1] for x in v)
    print(f"{b:45s} clients {clients:2d}: server CPU us/request {' '.join(f'{x:.0f}' for x in us)}  req/s {' '.join(f'{x:.0f}' for x in rps)}")
