#!/usr/bin/env python3
"""Load test: laya-serve with and without cross-request batching, and Python laya-serve, on the
same machine and checkpoint, in one run. Loopback only; every run is bounded in time.

    bench/serve/run.py --serve build/laya-serve --python-serve /opt/layaref/bin/laya-serve \
        --ckpt tests/fixtures/ckpt/modernbert-tiny [--duration 20] [--clients 1,8,32,128] \
        [--soak 100000] [--out bench/serve/results.md]

Each server answers POST /v1/systemone with Laya-like bodies (make_bodies.py: 3 questions,
50-450 token states) from wrk (laya.lua) at each concurrency. All three get the same checkpoint
(LAYA_EXTRA_MODELS re-points `english`), LAYA_MAX_CONCURRENT=512 (so 128 clients are queued, not
shed) and LAYA_THREADS=<cores>. Reported: req/s, p50/p99 latency, errors (non-200 + socket
errors), server RSS after warm-up and after the runs. --soak N then sends at least N requests to
the batching server (load runs at --soak-clients clients in turn) and reports errors and the RSS
when the server is up, after warm-up, and every --soak-every requests (a table).
"""
import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_mb(pid):
    """Resident memory of pid and its children (uvicorn runs in one process, ours too)."""
    total = 0
    for p in [pid] + children(pid):
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024.0


def children(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def start(cmd, env, port, timeout=600):
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open("/tmp/laya-bench-%d.log" % port, "w"))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("%s exited; see /tmp/laya-bench-%d.log" % (cmd[0], port))
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2).read()
            return proc
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("server did not come up")


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


CLIENT = "wrk"


def wrk(port, clients, duration, bodies):
    if CLIENT == "loadgen":
        cmd = [sys.executable, os.path.join(HERE, "loadgen.py"), "http://127.0.0.1:%d" % port, bodies, str(clients),
               str(duration), str(min(8, clients))]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 180)
        m = re.search(r"RESULT (.*)", p.stdout)
        if not m:
            raise RuntimeError("loadgen: %s %s" % (p.stdout, p.stderr))
        r = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
        r["errors"] = int(r["non2xx"] + r["errors"])
        return r
    env = dict(os.environ, BODIES=bodies)
    cmd = ["wrk", "-t", "1", "-c", str(clients), "-d", "%ds" % duration, "--timeout", "60s",
           "-s", os.path.join(HERE, "laya.lua"), "http://127.0.0.1:%d" % port]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=duration + 180)
    m = re.search(r"RESULT (.*)", p.stdout)
    if not m:
        raise RuntimeError("wrk: %s %s" % (p.stdout, p.stderr))
    r = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    r["errors"] = int(r["status"] + r["connect"] + r["read"] + r["write"] + r["timeout"])
    return r


PHASES = ("wait", "prepare", "pass", "decode", "handoff")


def phases(port):
    """laya.c's inference-thread seconds by phase (/metrics), or None for a server without them."""
    try:
        raw = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
    except OSError:
        return None
    out = {}
    for m in re.finditer(r'^laya_inference_thread_seconds_total\{phase="(\w+)"\} (\S+)$', raw, re.M):
        out[m.group(1)] = float(m.group(2))
    return out or None


def warmup(port, bodies, n=50):
    lines = open(bodies).read().splitlines()
    for i in range(n):
        req = urllib.request.Request("http://127.0.0.1:%d/v1/systemone" % port, data=lines[i % len(lines)].encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=120).read()


def served(port):
    """Decision requests answered so far (/metrics laya_requests_total, /v1/systemone, every status)."""
    raw = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
    return sum(int(float(m.group(1))) for m in
               re.finditer(r'^laya_requests_total\{route="/v1/systemone",status="\d+"\} (\S+)$', raw, re.M))


def soak_run(args, base, bodies):
    """At least args.soak requests to the batching server (load runs of args.soak_chunk seconds at
    each of --soak-clients in turn, so passes of every size come and go), with the RSS sampled
    every --soak-every requests by a thread polling /metrics and /proc while the load runs. The RSS
    is also taken when the server is up (before any request) and after the 50 warm-up requests."""
    soak_bodies = bodies
    if args.soak_light:
        soak_bodies = "/tmp/laya-bench-light.jsonl"
        subprocess.run([sys.executable, os.path.join(HERE, "make_bodies.py"), soak_bodies, "256", "--light"],
                       check=True)
    port = free_port()
    t_start = time.time()
    proc = start([os.path.abspath(args.serve)], dict(base, LAYA_PORT=str(port), LAYA_SERVE_BATCHING="1"), port)
    up_s = time.time() - t_start
    at_start = rss_mb(proc.pid)
    warmup(port, bodies)
    before = rss_mb(proc.pid)
    samples, stop_flag = [], threading.Event()
    t0 = time.time()

    def sampler():
        nxt = args.soak_every
        while not stop_flag.wait(0.2):
            try:
                n = served(port)
            except OSError:
                continue
            if n >= nxt:
                samples.append((n, time.time() - t0, rss_mb(proc.pid)))
                nxt = (n // args.soak_every + 1) * args.soak_every

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    mix = [int(c) for c in args.soak_clients.split(",")]
    rate, done, errors, runs = None, 0, 0, 0
    while done < args.soak and time.time() - t0 < args.soak_seconds:
        left = args.soak_seconds - (time.time() - t0)
        dur = 10 if rate is None else max(5, min(args.soak_chunk, int((args.soak - done) / max(rate, 1) * 1.05) + 1))
        dur = max(1, min(dur, int(left) + 1))
        r = wrk(port, mix[runs % len(mix)], dur, soak_bodies)
        runs += 1
        done += int(r["requests"])
        errors += r["errors"]
        rate = done / (time.time() - t0)
    stop_flag.set()
    th.join()
    total = served(port)
    after = rss_mb(proc.pid)
    samples.append((total, time.time() - t0, after))
    stop(proc)
    kind = "question-less requests" if args.soak_light else "Laya-like requests"
    out = ["soak (laya.c batching, clients %s in turn, %s): %d requests in %.0f s, %d errors; "
           "server up in %.2f s; RSS %.0f MiB up (before any request), %.0f MiB after 50 warm-up requests, "
           "%.0f MiB at the end (%+.0f MiB over the soak)" %
           (args.soak_clients, kind, total, time.time() - t0, errors, up_s, at_start, before, after, after - before),
           "", "| requests | seconds | RSS MiB |", "|---:|---:|---:|"]
    out += ["| %d | %.0f | %.1f |" % s for s in samples]
    print("\n".join(out), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", required=True)
    ap.add_argument("--python-serve", default="")
    ap.add_argument("--soak-only", action="store_true", help="no load points: only the --soak run")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--clients", default="1,8,32,128")
    ap.add_argument("--soak", type=int, default=0)
    ap.add_argument("--soak-seconds", type=int, default=1800, help="stop the soak after this long, however far it got")
    ap.add_argument("--soak-chunk", type=int, default=120, help="seconds per soak load run")
    ap.add_argument("--soak-every", type=int, default=10000, help="sample the RSS every this many requests")
    ap.add_argument("--soak-clients", default="32",
                    help="concurrent clients of the soak's load runs, a comma list taken in turn (mixed pass sizes)")
    ap.add_argument("--soak-light", action="store_true",
                    help="soak with question-less requests (no forward pass): the server's own memory")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default="")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--client", choices=["wrk", "loadgen"], default="wrk")
    ap.add_argument("--serial", action="store_true",
                    help="also measure laya.c batching with LAYA_SERVE_PIPELINE=0 (the inference thread prepares and "
                         "decodes every request itself: the design before pipelining)")
    args = ap.parse_args()
    global CLIENT
    CLIENT = args.client
    bodies = "/tmp/laya-bench-bodies.jsonl"
    subprocess.run([sys.executable, os.path.join(HERE, "make_bodies.py"), bodies, "256"], check=True)
    ckpt = os.path.abspath(args.ckpt)
    # every checkpoint name points at the one checkpoint, so whatever a state routes to is answered
    # by it (only `english` is loaded at start; undecided states default to it too)
    base = dict(os.environ, LAYA_HOST="127.0.0.1",
                LAYA_EXTRA_MODELS=json.dumps({"english": ckpt, "multilingual": ckpt}),
                LAYA_MODELS="english", LAYA_DEFAULT_MODEL="english", LAYA_MAX_CONCURRENT="512", LAYA_THREADS=str(args.threads),
                LAYA_DEVICE=args.device, HF_HUB_OFFLINE="1", LAYA_LOG_LEVEL="warning")
    servers = [("laya.c batching", [os.path.abspath(args.serve)], {"LAYA_SERVE_BATCHING": "1"}),
               ("laya.c one-at-a-time", [os.path.abspath(args.serve)], {"LAYA_SERVE_BATCHING": "0"})]
    if args.serial:
        servers.insert(1, ("laya.c batching, serial", [os.path.abspath(args.serve)],
                           {"LAYA_SERVE_BATCHING": "1", "LAYA_SERVE_PIPELINE": "0"}))
    if args.python_serve:
        servers.append(("Python laya-serve 0.4.15", shlex.split(args.python_serve), {}))
    clients = [] if args.soak_only else [int(c) for c in args.clients.split(",")]
    if args.soak_only:
        servers = []
    rows = []
    lines = ["uptime before: " + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
             "checkpoint: %s, device %s, client %s, %ds per point, LAYA_THREADS=%d" %
             (ckpt, args.device, args.client, args.duration, args.threads)]
    for name, cmd, extra in servers:
        port = free_port()
        env = dict(base, LAYA_PORT=str(port), **extra)
        try:
            proc = start(cmd, env, port)
        except RuntimeError as e:  # report it and measure the others
            print("%s did not start: %s" % (name, e), flush=True)
            lines.append("%s did not start: %s" % (name, open("/tmp/laya-bench-%d.log" % port).read()[-600:]))
            continue
        warmup(port, bodies)
        before = rss_mb(proc.pid)
        for c in clients:
            ph0 = phases(port)
            r = wrk(port, c, args.duration, bodies)
            ph1 = phases(port)
            if ph0 and ph1:
                r["phases"] = {k: ph1.get(k, 0) - ph0.get(k, 0) for k in PHASES}
            r.update(server=name, clients=c)
            rows.append(r)
            print("%-26s c=%-4d %8.1f req/s  p50 %8.2f ms  p99 %8.2f ms  errors %d" %
                  (name, c, r["rps"], r["p50_ms"], r["p99_ms"], r["errors"]), flush=True)
        after = rss_mb(proc.pid)
        for r in rows:
            if r["server"] == name:
                r["rss_before"], r["rss_after"] = before, after
        stop(proc)
    table = ["| server | clients | req/s | p50 ms | p99 ms | errors | requests | RSS MiB before → after |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        table.append("| %s | %d | %.1f | %.1f | %.1f | %d | %d | %.0f → %.0f |" %
                     (r["server"], r["clients"], r["rps"], r["p50_ms"], r["p99_ms"], r["errors"], r["requests"],
                      r["rss_before"], r["rss_after"]))
    prof = [r for r in rows if r.get("phases")]
    if prof:
        table += ["", "Inference thread's time by phase during each point (/metrics laya_inference_thread_seconds_total; "
                  "share of the thread's accounted time):", "",
                  "| server | clients | " + " | ".join(PHASES) + " | accounted s |",
                  "|---|---:|" + "---:|" * (len(PHASES) + 1)]
        for r in prof:
            tot = sum(r["phases"].values()) or 1.0
            table.append("| %s | %d | %s | %.2f |" % (r["server"], r["clients"],
                         " | ".join("%.1f%%" % (100.0 * r["phases"][k] / tot) for k in PHASES), tot))
    soak = []
    if args.soak:
        soak = soak_run(args, base, bodies)
    lines.append("uptime after: " + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    text = "\n".join(lines + [""] + (table if rows else []) + [""] + soak) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
