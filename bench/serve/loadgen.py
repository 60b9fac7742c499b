#!/usr/bin/env python3
"""A closed-loop HTTP/1.1 load generator in the standard library (asyncio), for machines without
wrk: C connections, each sending its next POST /v1/systemone as soon as the last answer arrived.

    loadgen.py URL BODIES.jsonl CLIENTS SECONDS [PROCESSES]

Prints one line like laya.lua's: RESULT requests=.. duration_s=.. rps=.. p50_ms=.. p90_ms=..
p99_ms=.. max_ms=.. non2xx=.. errors=.. . With PROCESSES > 1 the clients are split over that
many processes (so the client is not the bottleneck) and the results merged.
"""
import asyncio
import json
import multiprocessing as mp
import sys
import time
from urllib.parse import urlparse


async def one_client(host, port, bodies, offset, stop_at, lat, counts):
    idx = offset
    reader = writer = None
    while time.time() < stop_at:
        body = bodies[idx % len(bodies)]
        idx += 1
        req = (b"POST /v1/systemone HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % (host.encode(), len(body))) + body
        t0 = time.perf_counter()
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            writer.write(req)
            await writer.drain()
            status_line = await reader.readline()
            status = int(status_line.split()[1])
            length, close = 0, False
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                k, _, v = line.decode("latin-1").partition(":")
                if k.lower() == "content-length":
                    length = int(v)
                elif k.lower() == "connection" and v.strip().lower() == "close":
                    close = True
            await reader.readexactly(length)
            lat.append(time.perf_counter() - t0)
            counts["ok" if status == 200 else "non2xx"] += 1
            if close:
                writer.close()
                writer = None
        except Exception:  # noqa: BLE001 -- a socket error is an error, counted, and we reconnect
            counts["errors"] += 1
            if writer is not None:
                writer.close()
            writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()


def worker(url, bodies_path, clients, seconds, first, queue):
    u = urlparse(url)
    bodies = [line.encode() for line in open(bodies_path).read().splitlines() if line.strip()]
    lat, counts = [], {"ok": 0, "non2xx": 0, "errors": 0}

    async def run():
        stop_at = time.time() + seconds
        await asyncio.gather(*[one_client(u.hostname, u.port, bodies, (first + i) * 97, stop_at, lat, counts)
                               for i in range(clients)])

    t0 = time.time()
    asyncio.run(run())
    queue.put((lat, counts, time.time() - t0))


def main():
    url, bodies, clients, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    procs = max(1, min(int(sys.argv[5]) if len(sys.argv) > 5 else 1, clients))
    q = mp.Queue()
    per = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    ps, first = [], 0
    for n in per:
        p = mp.Process(target=worker, args=(url, bodies, n, seconds, first, q))
        p.start()
        ps.append(p)
        first += n
    lat, counts, dur = [], {"ok": 0, "non2xx": 0, "errors": 0}, 0.0
    for _ in ps:
        l, c, d = q.get()
        lat += l
        for k in counts:
            counts[k] += c[k]
        dur = max(dur, d)
    for p in ps:
        p.join()
    lat.sort()
    pct = lambda q_: lat[min(len(lat) - 1, int(q_ * len(lat)))] * 1000 if lat else 0.0
    n = counts["ok"] + counts["non2xx"]
    print("RESULT requests=%d duration_s=%.2f rps=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f "
          "non2xx=%d errors=%d" % (n, dur, n / dur, pct(0.5), pct(0.9), pct(0.99), (lat[-1] * 1000 if lat else 0),
                                   counts["non2xx"], counts["errors"]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
