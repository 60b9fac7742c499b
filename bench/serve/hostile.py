#!/usr/bin/env python3
"""Hostile load: laya-serve and Python laya-serve under 64 connections of which a quarter are
normal clients and the rest attack, on the same checkpoint, one after the other in one run.

    bench/serve/hostile.py --serve build/laya-serve --python PY_WITH_LAYA_FASTAPI_UVICORN \
        --ckpt tests/fixtures/ckpt/modernbert-tiny [--duration 30] [--out FILE]

Connections (64 in all, standard library asyncio on loopback):
  normal    16  keep-alive POST /v1/systemone with a valid 3-question body, one after another
  slowloris 16  request headers one byte every 0.5 s, reconnecting when cut off
  slowbody  16  a complete head announcing 4096 bytes, then 8 bytes a second
  junk      16  by turns: a 3 MiB body (413), invalid JSON, a body cut off mid-way, GET /nope
Reported per server: normal answers (200) and failures (anything else, timeouts at 10 s), their
p50/p99 latency, the server's CPU seconds (utime+stime of the process, /proc) and normal answers
per server CPU second, RSS and open fds before, in the middle of the attack, after it and 2 s later, whether it
survived. With --window S (a long run, e.g. --duration 180 --window 30), also per window of S
seconds: normal answers and failures that ended in it, their p50/p99, and the server's RSS, fds and
CPU seconds sampled at the window's end, to see whether it degrades or leaks over time. Times on a
shared machine are noisy: compare the two servers of one run, and the CPU-normalised rate.
"""
import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

BODY = json.dumps({"state": {"message": "I was charged twice for my order, please refund me."},
                   "questions": {"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
                                 "team": {"type": "choice", "instructions": "Which team?",
                                          "criteria": {"billing": "payments", "tech": "bugs", "other": "else"}},
                                 "upset": {"type": "score", "instructions": "How upset?",
                                           "criteria": ["calm", "annoyed", "angry"]}}}).encode()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def proc_stats(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = (int(parts[11]) + int(parts[12])) / tick
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024.0
    fds = len(os.listdir("/proc/%d/fd" % pid))
    return cpu, rss, fds


def head(path, n, method="POST"):
    return ("%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (method, path, n)).encode()


async def read_response(r):
    line = await r.readline()
    if not line:
        raise ConnectionError("closed")
    status = int(line.split()[1])
    n, close = 0, False
    while True:
        h = await r.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        if k.lower() == "content-length":
            n = int(v)
        if k.lower() == "connection" and "close" in v.lower():
            close = True
    if n:
        await r.readexactly(n)
    return status, close


async def normal(port, stop, res):
    r = w = None
    while time.time() < stop:
        t0 = time.time()
        try:
            if w is None:
                r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
            w.write(head("/v1/systemone", len(BODY)) + BODY)
            status, close = await asyncio.wait_for(read_response(r), 10)
            res["lat" if status == 200 else "fail"].append(time.time() - t0)
            res["ev"].append((time.time(), time.time() - t0, status == 200))
            if status != 200:
                res["codes"][status] = res["codes"].get(status, 0) + 1
            if close:
                w.close()
                w = None
        except (OSError, asyncio.TimeoutError, ConnectionError, ValueError, IndexError, asyncio.IncompleteReadError):
            res["fail"].append(time.time() - t0)
            res["ev"].append((time.time(), time.time() - t0, False))
            res["codes"]["error"] = res["codes"].get("error", 0) + 1
            if w is not None:
                w.close()
            w = None
            await asyncio.sleep(0.05)


async def slowloris(port, stop):
    msg = head("/v1/systemone", len(BODY))
    while time.time() < stop:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            for b in msg:
                if time.time() >= stop:
                    break
                w.write(bytes([b]))
                await w.drain()
                await asyncio.sleep(0.5)
            w.close()
        except OSError:
            await asyncio.sleep(0.2)


async def slowbody(port, stop):
    while time.time() < stop:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(head("/v1/systemone", 4096))
            sent = 0
            while sent < 4096 and time.time() < stop:
                w.write(b" " * 8)
                await w.drain()
                sent += 8
                await asyncio.sleep(1.0)
            w.close()
        except OSError:
            await asyncio.sleep(0.2)


async def junk(port, stop, i):
    big = b"[" + b"1," * (3 << 19) + b"1]"
    k = i
    while time.time() < stop:
        k += 1
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
            kind = k % 4
            if kind == 0:
                w.write(head("/v1/systemone", len(big)) + big)
            elif kind == 1:
                w.write(head("/v1/systemone", 9) + b"{not json")
            elif kind == 2:
                w.write(head("/v1/systemone", len(BODY)) + BODY[: len(BODY) // 2])
                await w.drain()
                w.close()
                continue
            else:
                w.write(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
            await w.drain()
            await asyncio.wait_for(read_response(r), 10)
            w.close()
        except (OSError, asyncio.TimeoutError, ConnectionError, ValueError, IndexError, asyncio.IncompleteReadError):
            await asyncio.sleep(0.05)


async def attack(port, duration):
    stop = time.time() + duration
    res = {"lat": [], "fail": [], "codes": {}, "ev": []}
    tasks = [normal(port, stop, res) for _ in range(16)] + [slowloris(port, stop) for _ in range(16)] + \
            [slowbody(port, stop) for _ in range(16)] + [junk(port, stop, i) for i in range(16)]
    await asyncio.gather(*tasks)
    return res


def wait_ready(port, proc, timeout=180):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit("server exited at startup")
        try:
            c = urllib.request.urlopen(urllib.request.Request(
                "http://127.0.0.1:%d/v1/systemone" % port, data=BODY, headers={"Content-Type": "application/json"}),
                timeout=30)
            if c.status == 200:
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("server not ready")


def pct(lat, q):
    lat = sorted(lat)
    return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")


def windows(ev, samples, t0, duration, width):
    """Per window of width seconds from t0: (start s, 200s, failures, p50 ms, p99 ms, sample)."""
    out = []
    k = 0
    while k * width < duration - 1e-6:
        lo, hi = t0 + k * width, t0 + min(duration, (k + 1) * width)
        end = hi if (k + 1) * width < duration - 1e-6 else float("inf")  # the last takes the stragglers
        ok = [lat for t, lat, good in ev if lo <= t < end and good]
        bad = sum(1 for t, _, good in ev if lo <= t < end and not good)
        # the server sampled at the window's end (the last sample taken before hi + 1 s)
        at = [smp for smp in samples if smp[0] <= hi + 1.0]
        out.append((k * width, len(ok), bad, pct(ok, 0.5), pct(ok, 0.99), at[-1] if at else None))
        k += 1
    return out


def run_one(name, cmd, env, duration, width=0):
    port = free_port()
    env = dict(env, LAYA_HOST="127.0.0.1", LAYA_PORT=str(port))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        for _ in range(20):  # warm-up
            urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/v1/systemone" % port, data=BODY,
                                                          headers={"Content-Type": "application/json"}), timeout=30)
        cpu0, rss0, fd0 = proc_stats(proc.pid)
        mid = []
        timer = threading.Timer(duration / 2, lambda: mid.append(proc_stats(proc.pid)))
        timer.start()
        t0 = time.time()
        samples, done = [], threading.Event()

        def sample():
            k = 1
            while width and not done.wait(max(0.0, t0 + k * width - time.time())):
                try:
                    samples.append((time.time(),) + proc_stats(proc.pid))
                except OSError:
                    return
                k += 1
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        res = asyncio.run(attack(port, duration))
        done.set()
        sampler.join()
        timer.join()
        wall = time.time() - t0
        alive = proc.poll() is None
        cpu1, rss1, fd1 = proc_stats(proc.pid) if alive else (cpu0, 0, 0)
        time.sleep(2)
        fd2 = proc_stats(proc.pid)[2] if proc.poll() is None else 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    lat = res["lat"]
    cpu = cpu1 - cpu0
    return {"name": name, "ok": len(lat), "fail": len(res["fail"]), "p50": pct(lat, 0.5), "p99": pct(lat, 0.99),
            "windows": windows(res["ev"], samples, t0, duration, width) if width else [], "cpu0": cpu0,
            "cpu": cpu, "per_cpu": len(lat) / cpu if cpu > 0 else float("nan"), "wall": wall,
            "rss0": rss0, "rss1": rss1, "fd0": fd0, "fd1": fd1, "fd_mid": mid[0][2] if mid else -1, "fd_after": fd2, "alive": alive,
            "codes": ", ".join("%s: %d" % (k, v) for k, v in sorted(res["codes"].items(), key=str)) or "-"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", required=True)
    ap.add_argument("--python", help="a Python with laya 0.4.15, fastapi and uvicorn (the competitor)")
    ap.add_argument("--baseline-serve", help="another laya-serve binary (e.g. an earlier commit's) to run "
                    "second instead of Python laya-serve")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--window", type=float, default=0, help="seconds per time window (0: none)")
    ap.add_argument("--out")
    a = ap.parse_args()
    if bool(a.python) == bool(a.baseline_serve):
        ap.error("give one of --python and --baseline-serve")
    ck = os.path.abspath(a.ckpt)
    base = dict(os.environ, LAYA_MODELS="english", LAYA_EXTRA_MODELS=json.dumps({"english": ck}), HF_HUB_OFFLINE="1",
                LAYA_DEVICE="cpu", LAYA_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if a.baseline_serve:
        second = run_one("laya.c laya-serve, baseline", [os.path.abspath(a.baseline_serve)], base, a.duration, a.window)
    else:
        second = run_one("Python laya-serve 0.4.15", [a.python, "-c", "from laya.serve import main; main()"], base,
                         a.duration, a.window)
    rows = [run_one("laya.c laya-serve", [os.path.abspath(a.serve)], base, a.duration, a.window), second]
    lines = ["| server | normal 200 | normal failed | p50 ms | p99 ms | server CPU s | 200 per CPU s | "
             "RSS MB before/after | fds before/mid-attack/after/+2 s | alive | failures by status |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %d | %d | %.1f | %.1f | %.2f | %.1f | %.1f / %.1f | %d / %d / %d / %d | %s | %s |" % (
            r["name"], r["ok"], r["fail"], r["p50"], r["p99"], r["cpu"], r["per_cpu"], r["rss0"], r["rss1"],
            r["fd0"], r["fd_mid"], r["fd1"], r["fd_after"], "yes" if r["alive"] else "NO", r["codes"]))
    c, p = rows
    if p["ok"] and p["per_cpu"] > 0:
        lines.append("")
        lines.append(("laya.c / baseline" if a.baseline_serve else "laya.c / Python") + ": normal answers x%.2f, answers per server CPU second x%.2f, p50 x%.2f" % (
            c["ok"] / p["ok"], c["per_cpu"] / p["per_cpu"], p["p50"] / c["p50"] if c["p50"] else float("nan")))
    for r in rows:
        if not r["windows"]:
            continue
        lines += ["", "%s, per %g s window:" % (r["name"], a.window), "",
                  "| window s | normal 200 | normal failed | p50 ms | p99 ms | RSS MB | fds | server CPU s in window |",
                  "|---|---|---|---|---|---|---|---|"]
        prev = r["cpu0"]
        for start, ok, bad, p50, p99, smp in r["windows"]:
            rss = "%.1f" % smp[2] if smp else "-"
            fds = "%d" % smp[3] if smp else "-"
            used = "%.2f" % (smp[1] - prev) if smp else "-"
            prev = smp[1] if smp else prev
            lines.append("| %g-%g | %d | %d | %.1f | %.1f | %s | %s | %s |" % (
                start, min(a.duration, start + a.window), ok, bad, p50, p99, rss, fds, used))
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
