#!/usr/bin/env python3
"""Server CPU per request under load, two laya-serve binaries alternated in one run (issue 13's
"overhead at 1 and 32 clients"): each binary on the tiny fixture checkpoint, batching off and on,
1 and 32 closed-loop clients (loadgen.py, Laya-like bodies from make_bodies.py), 8 s after a 2 s
warm-up; the server's utime + stime over the timed part divided by the answers. Two rounds.

    python3 bench/serve/make_bodies.py /tmp/so/bodies.jsonl 256
    python3 bench/serve/cpu_per_request.py BEFORE_LAYA_SERVE AFTER_LAYA_SERVE   (from the repo root)
"""
import json, os, socket, subprocess, sys, time, urllib.request
ck = os.path.abspath("tests/fixtures/ckpt/modernbert-tiny")
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def run(binary, batching, clients, secs):
    port = free_port()
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT=str(port), LAYA_EXTRA_MODELS=json.dumps({"english": ck, "multilingual": ck}),
               LAYA_MODELS="english", LAYA_DEFAULT_MODEL="english", LAYA_MAX_CONCURRENT="512", LAYA_THREADS="2",
               LAYA_SERVE_BATCHING=batching, LAYA_LOG_LEVEL="error")
    p = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1).status == 200: break
        except Exception: time.sleep(0.1)
    # warm-up
    subprocess.run([sys.executable, "bench/serve/loadgen.py", f"http://127.0.0.1:{port}/v1/systemone", "/tmp/so/bodies.jsonl", str(clients), "2"], capture_output=True)
    c0 = cpu(p.pid)
    out = subprocess.run([sys.executable, "bench/serve/loadgen.py", f"http://127.0.0.1:{port}/v1/systemone", "/tmp/so/bodies.jsonl", str(clients), str(secs)], capture_output=True, text=True).stdout
    c1 = cpu(p.pid)
    p.terminate(); p.wait()
    r = dict(kv.split("=") for kv in out.split("RESULT", 1)[1].split())
    n = int(r["requests"])
    return n, float(r["rps"]), float(r["p50_ms"]), (c1 - c0) / max(n, 1) * 1e6, int(r["non2xx"]) + int(r["errors"])
rows = []
for rnd in range(2):
    for clients in (1, 32):
        for batching in ("0", "1"):
            for name, b in (("before", sys.argv[1]), ("after", sys.argv[2])):
                n, rps, p50, us, bad = run(b, batching, clients, 8)
                print(f"round {rnd+1} clients {clients:2d} batching {batching} {name:6s}: {n:5d} req, {rps:7.1f} req/s, p50 {p50:6.1f} ms, server CPU {us:7.0f} us/request, errors {bad}", flush=True)
