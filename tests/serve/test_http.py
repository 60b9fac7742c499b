#!/usr/bin/env python3
"""laya-serve over real HTTP on loopback (standard library only).

    test_http.py LAYA_SERVE_BINARY CKPT_DIR [test-name ...]

Starts the real server on 127.0.0.1 with an ephemeral port and the tiny fixture checkpoints
(re-pointed under Laya's names with LAYA_EXTRA_MODELS, as for Python's server), then:

  parity      every case in cases.py, compared with what Python laya-serve 0.4.15 answered
              (fixtures/python_cases.json, recorded by record_python.py): status, body
              (numbers within 2e-4), content type, timing headers; plain and LAYA_JEV_STRICT
  auth        bearer check, /health liveness-only without the key, /metrics behind the key
  admission   slow uploads hold no slot; slots taken by admitted work: 503 + Retry-After: 1 on
              the same keep-alive connection
  bodies      Content-Length over 2 MiB refused before the body, chunked over 2 MiB, malformed
  slow        a client that stops sending, and one that trickles: Laya's 408 at
              LAYA_BODY_READ_TIMEOUT, the connection closed and the slot released
  disconnect  clients that vanish mid-body and while their request is queued or running
  batching    64 concurrent clients with distinct states each get exactly their own answer,
              and /metrics shows requests sharing forward passes
  mixed       concurrent requests with different question sets, budgets and languages share
              forward passes, and each answer is exactly (no tolerance) the one it gets alone
  unbatched   the same with LAYA_SERVE_BATCHING=0: every pass answers one request
  drain       SIGTERM with requests in flight: every one is answered, then exit 0
  routes      404, 405, /ready, /metrics text, HEAD /health, keep-alive reuse
  config      LAYA_PORT / LAYA_DEFAULT_MODEL / LAYA_EXTRA_MODELS refusals at startup
  framing     two Content-Lengths, Content-Length with chunked (400), other Transfer-Encodings (501)
  pipeline    GETs and early refusals keep the connection; pipelined requests all answered
  aborted     uploads abandoned mid-body hold neither slots nor connections
  underlimit  16 clients against LAYA_MAX_CONCURRENT=16: no 503
  overload    64 keep-alive clients against 4 slots: 503s keep the connection
  junk        invalid bodies flooded beside a normal client hold no slot; 503s counted by reason
  slowloris   300 slow request heads: cut, while normal requests are answered
  nesting     the state nesting limit, named, at the edge
  unavailable a request routed to a checkpoint the server cannot load: 503 naming it
  dupkeys     labels rendering to one key stay two members, as json.dumps writes them
  cancel      queued requests whose clients left are not computed
  hubcache    Laya's checkpoint names from a Hugging Face cache laid out as Python Laya leaves it
  mcp_hubcache  laya-mcp, the same
  lifecycle   LAYA_MAX_LOADED eviction (never under a request in flight), LAYA_IDLE_UNLOAD_SECONDS
  logs        JSON-lines and text logs, access lines, X-Request-Id, LAYA_LOG_LEVEL, one logger
  openapi     /openapi.json valid, complete and true to the live server; /docs self-contained
  metrics     /metrics under a strict text-format parser: per checkpoint, process, build info
  rootpath    LAYA_ROOT_PATH replayed from what Python laya-serve answered
  mcp_remote  laya-mcp LAYA_BASE_URL against a real laya-serve, replayed from Laya's MCP server
  tournament_workflow  LAYA_TOURNAMENT_GROUP with LAYA_AUTO_TASK: every pass routed on its own
              questions, replayed from what Python laya-serve answered
  api_fuzz    (by name only, LAYA_SERVE_CLIENT_PYTHON) schemathesis over /openapi.json,
              prometheus_client's parser over /metrics

Prints "N passed, M failed" and exits 1 on any failure.
"""
import http.client
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402
from test_http_util import same, skip_without_isa  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
CKPT = os.path.abspath(sys.argv[2])
ONLY = set(sys.argv[3:])
PASSED, FAILED = [], []
CPU_ISA = skip_without_isa()  # the *_avx2 variants (CMakeLists.txt): exit 77 on a CPU without AVX2


# No test reaches the network: the Hugging Face cache is an empty folder of this run and
# downloads are off (tests that want a cache build one and point HF_HOME at it).
import tempfile  # noqa: E402
EMPTY_HF_HOME = tempfile.mkdtemp(prefix="laya-serve-hf-")
HF_ENV = {"HF_HOME": EMPTY_HF_HOME, "HF_HUB_OFFLINE": "1"}
for _k in ("HF_HUB_CACHE", "HF_ENDPOINT", "HF_TOKEN", "LAYA_REVISION", "LAYA_SHA256_DIGESTS"):
    os.environ.pop(_k, None)
os.environ.update(HF_ENV)


def extra_models():
    return json.dumps({"english": os.path.join(CKPT, "modernbert-tiny"),
                       "multilingual": os.path.join(CKPT, "mmbert-tiny")})


class Server:
    def __init__(self, **env):
        self.env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1",
                        LAYA_EXTRA_MODELS=extra_models(), LAYA_MODELS="english,multilingual",
                        LAYA_THREADS="1")
        for k, v in env.items():
            if v is None:
                self.env.pop(k, None)
            else:
                self.env[k] = str(v)

    def __enter__(self):
        self.proc = subprocess.Popen([BIN], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        self.lines = []
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError("laya-serve exited: %s" % "".join(self.lines))
            self.lines.append(line)
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.drainer = threading.Thread(target=self._drain_stderr, daemon=True)
                self.drainer.start()
                return self
        raise RuntimeError("laya-serve did not start")

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "drainer", None):
            self.drainer.join(timeout=5)  # the last lines it wrote before exiting
        # under the sanitizer build, a report in the server's log fails the test
        bad = [l for l in self.lines if "AddressSanitizer" in l or "runtime error:" in l or "LeakSanitizer" in l]
        if bad and not exc[0]:
            raise AssertionError("sanitizer report from laya-serve: %s" % "".join(bad[:5]))

    def request(self, method, path, body=None, headers=None, timeout=300):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = {"Content-Type": "application/json"}
            hdrs.update(headers or {})
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}
        finally:
            conn.close()

    def post(self, path, body, headers=None, timeout=300):
        return self.request("POST", path, cases.encode(body), headers, timeout)

    def metrics(self, headers=None):
        status, raw, _ = self.request("GET", "/metrics", headers=headers)
        assert status == 200, status
        out = {}
        for line in raw.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def test(fn):
    name = fn.__name__[5:]
    if ONLY and name not in ONLY:
        return fn
    t0 = time.time()
    try:
        fn()
        PASSED.append(name)
        print("ok   %-12s %.1fs" % (name, time.time() - t0), flush=True)
    except Exception as e:  # noqa: BLE001 -- report every failure and go on
        FAILED.append(name)
        print("FAIL %-12s %s: %s" % (name, type(e).__name__, e), flush=True)
    return fn


def load_fixture(name):
    """tests/serve/fixtures/NAME (recorded from Python laya-serve), the checkpoints' folder where it
    was recorded re-pointed to this run's."""
    with open(os.path.join(HERE, "fixtures", name)) as f:
        rec = json.load(f)
    old = json.dumps(rec["paths"]["ckpt"])[1:-1]
    rec["cases"] = json.loads(json.dumps(rec["cases"]).replace(old, json.dumps(CKPT)[1:-1]))
    return rec


def load_recorded():
    return load_fixture("python_cases.json")["cases"]


def replay_recorded(srv, recorded, request_of, problems, label=lambda r: r["name"]):
    """Send each recorded case's request (request_of(case) -> (path, body, headers)) to srv and
    compare the answer with Python laya-serve's: the status; the body (same(): key order, numbers
    within 2e-4) where one was recorded; the content type where recorded; whether the timing
    headers came where recorded, and their format when they did. Appends "label: why" to problems
    for each case that differs; returns the raw bodies."""
    raws = []
    for r in recorded:
        path, body, headers = request_of(r)
        t0 = time.time()
        status, raw, hdrs = srv.post(path, body, headers)
        if time.time() - t0 > 10:
            print("  (slow case %s: %.1fs)" % (label(r), time.time() - t0))
        raws.append(raw)
        try:
            got = json.loads(raw)
        except ValueError:
            got = None
        why = None
        if status != r["status"]:
            why = "status %d, Python %d: %s" % (status, r["status"], raw[:300])
        elif r["body"] is not None:
            why = same(got, r["body"])
        if not why and "content_type" in r and hdrs.get("content-type") != r["content_type"]:
            why = "content-type %r != %r" % (hdrs.get("content-type"), r["content_type"])
        timed = "server-timing" in hdrs and "x-inference-time-ms" in hdrs
        if not why and "timed" in r and timed != r["timed"]:
            why = "timing headers present=%s, Python %s" % (timed, r["timed"])
        if not why and timed:
            ms = hdrs["x-inference-time-ms"]
            if not re.fullmatch(r"\d+\.\d\d", ms) or hdrs["server-timing"] != "inference;dur=" + ms:
                why = "timing headers %r / %r" % (hdrs["server-timing"], ms)
        if why:
            problems.append("%s: %s" % (label(r), why))
    return raws


def replay(strict):
    recorded = [r for r in load_recorded() if r["strict"] == strict]
    by_name = {name: (path, body, headers) for name, path, body, headers in cases.cases()}
    problems = []
    # The fp32 reference backend: this compares the server's behaviour, so the numbers must be
    # the engine's parity path (the fast backends' bounds are tests/cpu's business).
    with Server(LAYA_JEV_STRICT="1" if strict else "0", LAYA_BACKEND="cpu-ref") as srv:
        replay_recorded(srv, recorded, lambda r: by_name[r["name"]], problems)
    check(len(recorded) > 20, "too few recorded cases")
    check(not problems, "%d of %d differ from Python laya-serve:\n  %s" % (len(problems), len(recorded),
                                                                          "\n  ".join(problems)))


if CPU_ISA == "avx2":
    # an *_avx2 variant: every checkpoint this run loads must really run the AVX2 table
    # (/metrics' laya_checkpoint_info), or its answers prove nothing about AVX2-only CPUs
    with Server() as _srv:
        _st, _raw, _ = _srv.request("GET", "/metrics")
        _isas = re.findall(r'laya_checkpoint_info\{model="([^"]*)",.*cpu_isa="([^"]*)"\}', _raw.decode())
    if not _isas or any(i != "avx2" for _, i in _isas):
        print("FAIL LAYA_CPU_ISA=avx2 on an AVX2 CPU, but the checkpoints run %r" % _isas)
        sys.exit(1)
    print("checkpoints on the AVX2 table: %s" % ", ".join(m for m, _ in _isas))


@test
def test_parity():
    replay(strict=False)


@test
def test_strict():
    replay(strict=True)


SIMPLE = {"state": "refund please", "questions": {"refund": cases.NOUL}}


@test
def test_auth():
    key = "s3cret-\u00e9"
    with Server(LAYA_API_KEY=key) as srv:
        good = {"Authorization": "Bearer " + key}
        for hdrs in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "bearer " + key},
                     {"Authorization": key}, {"Authorization": "Bearer " + key + " "},
                     {"Authorization": "Bearer s3cret-"}):
            for path in ("/v1/systemone", "/v1/systemone/batch"):
                status, raw, _ = srv.request("POST", path, json.dumps(SIMPLE).encode(),
                                             {k: v.encode("utf-8").decode("latin-1") for k, v in hdrs.items()})
                check(status == 401 and json.loads(raw) == {"detail": "invalid or missing bearer token"},
                      "%s %s -> %d %r" % (path, hdrs, status, raw))
        # non-ASCII bytes in the header are a 401, never a 500
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n"
                  b"Content-Length: 2\r\n\r\n{}")
        check(s.recv(100).startswith(b"HTTP/1.1 401"), "raw non-ASCII bearer")
        s.close()
        wire = {"Authorization": ("Bearer " + key).encode("utf-8").decode("latin-1")}
        status, raw, _ = srv.request("POST", "/v1/systemone", json.dumps(SIMPLE).encode(), wire)
        check(status == 200 and "answers" in json.loads(raw), "right key: %d %r" % (status, raw[:100]))
        status, raw, _ = srv.request("GET", "/health")
        check(status == 200 and json.loads(raw) == {"status": "ok"}, "liveness without key: %r" % raw)
        status, raw, _ = srv.request("GET", "/health", headers=wire)
        check(status == 200 and json.loads(raw)["loaded"] == ["english", "multilingual"], "health with key")
        status, raw, _ = srv.request("GET", "/metrics")
        check(status == 401, "metrics without key")
        check(srv.metrics(wire)["laya_admission_limit"] == 16, "metrics with key")
        del good


def slow_upload(port, total=1000, sent=10):
    """A request whose body stops after `sent` bytes; returns the open socket."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % total + b"{" * sent)
    return s


@test
def test_bodies():
    with Server() as srv:
        # announced too large: refused before a byte of body is sent
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 2097153\r\n\r\n")
        s.settimeout(10)
        head = s.recv(4096)
        check(head.startswith(b"HTTP/1.1 413") and b'{"detail":"request body too large"}' in head,
              "content-length 413: %r" % head[:200])
        s.close()
        # exactly at the cap passes the size gate (then it is just bad JSON)
        status, raw, _ = srv.request("POST", "/v1/systemone", b" " * (2 * 1024 * 1024))
        check(status == 400 and json.loads(raw)["detail"] == "request body must be valid JSON", "2 MiB: %d" % status)
        s = socket.create_connection(("127.0.0.1", srv.port))
        try:
            s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (2 * 1024 * 1024 + 1)
                      + b" " * (2 * 1024 * 1024 + 1))
        except OSError:
            pass  # answered and closed before the body was in
        s.settimeout(10)
        head = s.recv(4096)
        check(head.startswith(b"HTTP/1.1 413"), "2 MiB + 1: %r" % head[:60])
        s.close()
        # chunked, no Content-Length: the cap still holds
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /v1/systemone/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b" " * 65536
        for _ in range(40):
            s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        s.sendall(b"0\r\n\r\n")
        s.settimeout(10)
        head = s.recv(4096)
        check(head.startswith(b"HTTP/1.1 413"), "chunked 413: %r" % head[:100])
        s.close()
        # a chunked body under the cap is read and answered
        s = socket.create_connection(("127.0.0.1", srv.port))
        body = json.dumps(SIMPLE).encode()
        s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  b"%x\r\n" % 5 + body[:5] + b"\r\n" + b"%x\r\n" % (len(body) - 5) + body[5:] + b"\r\n0\r\n\r\n")
        s.settimeout(30)
        head = s.recv(65536)
        check(head.startswith(b"HTTP/1.1 200"), "small chunked: %r" % head[:100])
        s.close()
        # garbage request line: the connection is refused cleanly, the server lives on
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"\x00\x01\x02 nonsense\r\n\r\n")
        s.settimeout(2)
        try:
            s.recv(100)
        except OSError:
            pass
        s.close()
        status, _, _ = srv.request("GET", "/health")
        check(status == 200, "alive after garbage")


def read_response(s, timeout):
    """Everything the server sends on s until it closes the connection (or timeout)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data


def check_408(data, what):
    head, _, body = data.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 408 "), "%s got %r" % (what, data[:120]))
    check(json.loads(body) == {"detail": "request body was not received in time"}, "%s body %r" % (what, body))
    check(b"application/json" in head.lower() and b"connection: close" in head.lower(), "%s head %r" % (what, head))


@test
def test_slow():
    """Laya answers 408 when a body is not complete within LAYA_BODY_READ_TIMEOUT (asyncio.wait_for
    around the body read), and uvicorn then closes the connection; the slot is released."""
    with Server(LAYA_MAX_CONCURRENT="1", LAYA_BODY_READ_TIMEOUT="1") as srv:
        # a client that stops sending
        s = slow_upload(srv.port)
        t0 = time.time()
        data = read_response(s, 10)
        waited = time.time() - t0
        s.close()
        check(0.8 < waited < 3, "silent client answered after %.1fs" % waited)
        check_408(data, "silent client")
        check(srv.metrics()["laya_admitted_requests"] == 0, "the slot is free at the 408")
        # a trickling client that keeps sending past the deadline
        s = slow_upload(srv.port, total=100, sent=1)
        t0 = time.time()
        got = b""
        while time.time() - t0 < 5 and not got:
            time.sleep(0.1)
            try:
                s.sendall(b" ")
            except OSError:
                break
            s.settimeout(0.01)
            try:
                got = s.recv(4096)
            except socket.timeout:
                pass
            except OSError:
                break
        got += read_response(s, 2)
        s.close()
        check_408(got, "trickling client")
        m = srv.metrics()
        check(m.get('laya_requests_total{route="/v1/systemone",status="408"}') == 2, "408s counted: %r" %
              {k: v for k, v in m.items() if k.startswith("laya_requests_total")})
        status, raw, _ = srv.post("/v1/systemone", SIMPLE)
        check(status == 200, "the only slot is free again: %d %r" % (status, raw[:80]))


@test
def test_disconnect():
    with Server(LAYA_MAX_CONCURRENT="4") as srv:
        # gone mid-body
        for _ in range(8):
            slow_upload(srv.port).close()
        # gone after sending a whole request, before the answer
        body = json.dumps({"state": "where is my parcel? " * 500, "questions": cases.QS}).encode()
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            s.close()
        # requests sent whole still run their pass (their answers are dropped): under the sanitizer
        # build beside another test a pass of two of them has taken 14 s, so wait for a few passes;
        # a leaked slot never comes back
        deadline = time.time() + 120
        while time.time() < deadline and srv.metrics()["laya_admitted_requests"] != 0:
            time.sleep(0.05)
        m = srv.metrics()
        check(m["laya_admitted_requests"] == 0 and m["laya_inflight_requests"] == 0, "slots leaked: %r" % m)
        for _ in range(4):
            status, _, _ = srv.post("/v1/systemone", SIMPLE)
            check(status == 200, "served after disconnects: %d" % status)


def concurrent_answers(srv, n_clients, per_client):
    """Each client asks about its own states; returns {state: body} and any errors."""
    results, errors = {}, []
    lock = threading.Lock()

    def client(i):
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
        for k in range(per_client):
            state = {"ticket": i * 1000 + k, "text": "order %d was charged %d times" % (i, k + 1)}
            body = json.dumps({"state": state, "questions": cases.QS})
            try:
                conn.request("POST", "/v1/systemone", body=body, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                raw = r.read()
                with lock:
                    if r.status != 200:
                        errors.append((r.status, raw[:200]))
                    else:
                        results[json.dumps(state)] = json.loads(raw)
            except Exception as e:  # noqa: BLE001
                with lock:
                    errors.append(repr(e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def check_own_answers(srv, results):
    """Every concurrent answer equals the answer the same state gets alone (batch invariance within
    the engine's bound), so no request got another request's rows."""
    wrong = []
    for state_text, got in list(results.items())[::7]:
        status, raw, _ = srv.post("/v1/systemone", {"state": json.loads(state_text), "questions": cases.QS})
        alone = json.loads(raw)
        d = same(got["answers"], alone["answers"], tol=2e-3) or same(got["usage"], alone["usage"])
        if d:
            wrong.append("%s: %s" % (state_text, d))
    check(not wrong, "answers differ from the same request alone:\n  " + "\n  ".join(wrong[:5]))


@test
def test_batching():
    with Server(LAYA_MAX_CONCURRENT="256") as srv:
        results, errors = concurrent_answers(srv, 48, 2)
        check(not errors, "errors: %r" % errors[:3])
        check(len(results) == 96, "%d answers" % len(results))
        m = srv.metrics()
        passes, reqs = m["laya_batch_requests_count"], m["laya_batch_requests_sum"]
        check(reqs == 96, "passes answered %d requests" % reqs)
        check(passes < reqs, "no request shared a pass (%d passes for %d requests)" % (passes, reqs))
        check_own_answers(srv, results)
        key = 'laya_requests_total{route="/v1/systemone",status="200"}'
        check(srv.metrics()[key] >= 96, "request counter %r" % srv.metrics().get(key))


MIXED = [
    {"questions": cases.QS},
    {"questions": {"refund": cases.NOUL}, "max_len": 128},
    {"questions": {"upset": cases.SCORE, "team": cases.CHOICE}, "lang": "de", "min_confidence": 0.6},
    {"questions": {"spam": {"type": "noul", "instructions": "Is this spam?"}, "refund": cases.NOUL},
     "head_max_len": 32},
]


def post_concurrently(srv, posts, n_clients):
    """posts: [(path, body)]; client k sends posts k, k + n_clients, ... in turn. Returns
    ({index: answer} of the 200s, [(status, raw)] of the others)."""
    got, errors = {}, []
    lock = threading.Lock()

    def client(k):
        for i in range(k, len(posts), n_clients):
            status, raw, _ = srv.post(*posts[i])
            with lock:
                if status == 200:
                    got[i] = json.loads(raw)
                else:
                    errors.append((status, raw[:200]))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got, errors


def mixed_round(pipeline):
    with Server(LAYA_MAX_CONCURRENT="256", LAYA_SERVE_PIPELINE=pipeline) as srv:
        bodies = [dict(MIXED[i % len(MIXED)], state="order %d was charged %d times" % (i, i % 3 + 1))
                  for i in range(32)]
        got, errors = post_concurrently(srv, [("/v1/systemone", b) for b in bodies], 16)
        check(not errors and len(got) == len(bodies), "errors: %r" % errors[:3])
        m = srv.metrics()
        passes, reqs = m["laya_batch_requests_count"], m["laya_batch_requests_sum"]
        check(passes < reqs, "no request shared a pass (%d passes for %d requests)" % (passes, reqs))
        # 16 clients over 4 question sets: a pass of more than 4 requests mixed question sets
        check(m['laya_batch_requests_bucket{le="4"}'] < passes,
              "no pass took more than 4 requests: question sets were not mixed")
        for i, body in enumerate(bodies):
            check(sorted(got[i]["answers"]) == sorted(body["questions"]), "request %d got %r" % (i, sorted(got[i]["answers"])))
        # where the inference thread's time went: pipelined, it never prepares (it would time
        # that if a job reached it unprepared); serial, it prepares and decodes. Decode time is
        # timed only where the inference thread decodes, i.e. serially, so there is no pipelined
        # decode check here: test_sched checks which thread decoded each job.
        phase = {p: m['laya_inference_thread_seconds_total{phase="%s"}' % p] for p in ("prepare", "pass", "decode")}
        check(phase["pass"] > 0, "no pass time: %r" % phase)
        if pipeline == "1":
            check(phase["prepare"] == 0, "pipelined, yet the inference thread prepared: %r" % phase)
        else:
            check(phase["prepare"] > 0 and phase["decode"] > 0, "serial, yet no prepare/decode time: %r" % phase)
        # alone, one at a time: the same answers to the last digit
        wrong = []
        for i, body in enumerate(bodies):
            status, raw, _ = srv.post("/v1/systemone", body)
            alone = json.loads(raw)
            if status != 200 or alone["answers"] != got[i]["answers"] or alone["usage"] != got[i]["usage"]:
                wrong.append("%d: shared %s | alone %s" % (i, json.dumps(got[i]["answers"])[:150], raw[:150]))
        check(not wrong, "answers differ from the same request alone:\n  " + "\n  ".join(wrong[:5]))


@test
def test_mixed():
    # pipelined (requests prepared and decoded on the HTTP threads) and serial (both on the
    # inference thread): the same sharing, the same answers
    for pipeline in ("1", "0"):
        mixed_round(pipeline)



def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


# What the server may still add after warm-up: glibc malloc arenas of the HTTP threads sized by
# the largest request each has read (bodies of up to 32 states here), libmicrohttpd's connection
# buffers. The largest pass here (~12,000 tokens, 100x the warm-up's) grew the engine scratch by
# ~30 MiB before it was reserved at startup (laya_reserve).
RSS_GROWTH_MIB = 16


@test
def test_memory():
    """RSS after warm-up vs after ~120 mixed-size requests (single states of 5-150 words, batches
    of 8-32 states) from 8 clients: within RSS_GROWTH_MIB, although the largest pass is ~100x the
    warm-up's. Without a reservation the engine's scratch follows the largest pass."""
    words = "order invoice charged twice refund login crash parcel late upgrade pricing cancel please".split()

    def state(i, n):
        return {"ticket": i, "body": " ".join(words[(i * 7 + k) % len(words)] for k in range(n))}

    # ASan keeps freed memory in quarantine (256 MiB by default), which would read as growth here
    asan = os.environ.get("ASAN_OPTIONS", "")
    with Server(LAYA_MAX_CONCURRENT="256", ASAN_OPTIONS=(asan + ":" if asan else "") + "quarantine_size_mb=0") as srv:
        for i in range(5):  # warm-up: small passes only
            status, raw, _ = srv.post("/v1/systemone", {"state": state(i, 5), "questions": cases.QS})
            check(status == 200, "warm-up: %d %r" % (status, raw[:200]))
        before = rss_mib(srv.proc.pid)
        bodies = [("/v1/systemone", {"state": state(i, 5 + (i * 53) % 150), "questions": cases.QS}) for i in range(117)]
        for k, n in enumerate((8, 16, 32)):
            bodies.insert(40 * k + 20, ("/v1/systemone/batch",
                                        {"states": [state(1000 * n + j, 80 + j % 40) for j in range(n)],
                                         "questions": cases.QS}))
        _, errors = post_concurrently(srv, bodies, 8)
        after = rss_mib(srv.proc.pid)
        check(not errors, "errors: %r" % errors[:3])
        print("     memory: RSS %.1f MiB after warm-up, %.1f MiB after %d requests" % (before, after, len(bodies)))
        check(after - before <= RSS_GROWTH_MIB, "RSS grew %.1f MiB (%.1f -> %.1f) over %d requests" %
              (after - before, before, after, len(bodies)))


@test
def test_unbatched():
    with Server(LAYA_MAX_CONCURRENT="256", LAYA_SERVE_BATCHING="0") as srv:
        results, errors = concurrent_answers(srv, 16, 2)
        check(not errors and len(results) == 32, "errors: %r" % errors[:3])
        m = srv.metrics()
        check(m["laya_batch_requests_count"] == 32 and m["laya_batch_requests_sum"] == 32,
              "one request per pass: %r" % m["laya_batch_requests_count"])
        check_own_answers(srv, results)


@test
def test_drain():
    srv = Server(LAYA_MAX_CONCURRENT="64")
    srv.__enter__()
    try:
        out = []

        def client():
            body = {"state": "please refund the double charge on my order " * 20, "questions": cases.QS}
            try:
                out.append(srv.post("/v1/systemone", body)[0])
            except Exception as e:  # noqa: BLE001
                out.append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(12)]
        for t in threads:
            t.start()
        deadline = time.time() + 10
        while time.time() < deadline and srv.metrics()["laya_admitted_requests"] < 12:
            time.sleep(0.01)
        srv.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join()
        rc = srv.proc.wait(timeout=240)
        check(rc == 0, "exit code %r" % rc)
        check(out == [200] * 12, "in-flight answers: %r" % out)
        check(any("draining" in l for l in srv.lines), "no drain message")
        try:
            socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
            check(False, "still accepting after exit")
        except OSError:
            pass
    finally:
        srv.__exit__()


@test
def test_routes():
    with Server() as srv:
        status, raw, _ = srv.request("GET", "/nope")
        check(status == 404 and json.loads(raw) == {"detail": "Not Found"}, "404 %r" % raw)
        status, raw, hdrs = srv.request("GET", "/v1/systemone")
        check(status == 405 and json.loads(raw) == {"detail": "Method Not Allowed"} and hdrs.get("allow") == "POST",
              "405 %r %r" % (raw, hdrs))
        status, raw, hdrs = srv.request("POST", "/v1/systemone/", json.dumps(SIMPLE).encode(), {"Host": "example:81"})
        check(status == 307 and hdrs.get("location") == "http://example:81/v1/systemone", "trailing slash %r" % hdrs)
        status, raw, _ = srv.request("POST", "/health", b"{}")
        check(status == 405, "POST /health %d" % status)
        status, raw, _ = srv.request("HEAD", "/health")
        check(status == 200 and raw == b"", "HEAD /health")
        status, raw, _ = srv.request("GET", "/ready")
        check(status == 200 and json.loads(raw) == {"status": "ready", "loaded": ["english", "multilingual"]},
              "ready %r" % raw)
        status, raw, hdrs = srv.request("GET", "/metrics")
        check(status == 200 and hdrs["content-type"].startswith("text/plain"), "metrics type")
        text = raw.decode()
        for name in ("laya_requests_total", "laya_request_duration_seconds_bucket", "laya_batch_requests_bucket",
                     "laya_queue_depth", "laya_input_tokens_total", "laya_inflight_requests"):
            check(name in text, "metrics lack " + name)
        # keep-alive: several requests on one connection
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        for _ in range(3):
            conn.request("POST", "/v1/systemone", body=json.dumps(SIMPLE))
            r = conn.getresponse()
            check(r.status == 200, "keep-alive request")
            r.read()
        conn.close()
        before = srv.metrics()["laya_input_tokens_total"]
        status, raw, _ = srv.post("/v1/systemone", SIMPLE)
        used = json.loads(raw)["usage"]["input_tokens"]
        check(srv.metrics()["laya_input_tokens_total"] == before + used, "token counter")


@test
def test_config():
    def start_fails(env, expect):
        e = dict(os.environ, LAYA_EXTRA_MODELS=extra_models(), LAYA_PRELOAD="0")
        e.update(env)
        p = subprocess.run([BIN], env=e, capture_output=True, text=True, timeout=30)
        check(p.returncode != 0 and expect in p.stderr, "%r -> rc %d %r" % (env, p.returncode, p.stderr))

    start_fails({"LAYA_PORT": "99999"}, "invalid LAYA_PORT '99999': must be an integer 1-65535")
    start_fails({"LAYA_PORT": "http"}, "invalid LAYA_PORT 'http': must be an integer 1-65535")
    start_fails({"LAYA_DEFAULT_MODEL": "klingon"}, "invalid LAYA_DEFAULT_MODEL 'klingon': unknown model 'klingon'")
    start_fails({"LAYA_EXTRA_MODELS": "[1]"}, "invalid LAYA_EXTRA_MODELS: a JSON object {name: source}, got list")
    start_fails({"LAYA_EXTRA_MODELS": "{"}, "invalid LAYA_EXTRA_MODELS: not a JSON object")
    start_fails({"LAYA_LOG_LEVEL": "loud"}, "invalid LAYA_LOG_LEVEL 'loud'")
    start_fails({"LAYA_PRELOAD": "1", "LAYA_MODELS": "typed-decisions"}, "preload failed")
    p = subprocess.run([BIN, "--bogus"], capture_output=True, text=True)
    check(p.returncode == 2, "unknown argument exit code")
    # bad numbers fall back to the defaults and the server still starts
    with Server(LAYA_MAX_CONCURRENT="lots", LAYA_MAX_TOKEN_BUDGET="-5", LAYA_MAX_BATCH_TOKENS="x",
                LAYA_PRELOAD="0", LAYA_DEFAULT_MODEL="EN") as srv:
        check(srv.metrics()["laya_admission_limit"] == 16, "LAYA_MAX_CONCURRENT fallback")
        status, raw, _ = srv.post("/v1/systemone", dict(SIMPLE, max_len=8192))
        check(status == 200, "budget fallback 8192: %d %r" % (status, raw[:120]))
        status, raw, _ = srv.post("/v1/systemone", {"state": "12345", "questions": {"refund": cases.NOUL}})
        check(json.loads(raw)["routing"]["model"] == "english", "LAYA_DEFAULT_MODEL=EN: %r" % raw[-200:])


# ---- hardening (issue 18): framing, keep-alive, admission, slow clients, limits ----

def read_responses(s, n, timeout):
    """Parse up to n HTTP/1.1 responses (Content-Length framed) from s; stops early when the
    server closes. Returns [(status, headers, body)] and whether the server closed."""
    s.settimeout(timeout)
    buf, out, closed = b"", [], False
    deadline = time.time() + timeout
    while len(out) < n and time.time() < deadline:
        while b"\r\n\r\n" in buf and len(out) < n:
            head, rest = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
            length = int(hdrs.get("content-length", "0"))
            if len(rest) < length:
                break
            out.append((int(lines[0].split()[1]), hdrs, rest[:length]))
            buf = rest[length:]
        if len(out) >= n:
            break
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            closed = True
            break
        buf += chunk
    return out, closed


def raw_request(method, path, body=b"", headers=()):
    h = "%s %s HTTP/1.1\r\nHost: x\r\n" % (method, path)
    for k, v in headers:
        h += "%s: %s\r\n" % (k, v)
    if body or method == "POST":
        h += "Content-Length: %d\r\n" % len(body)
    return h.encode() + b"\r\n" + body


@test
def test_framing():
    """Framing a proxy could read differently (request smuggling) is refused and the connection
    closed; a Transfer-Encoding other than chunked gets 501 at once, not a 408 later."""
    body = json.dumps(SIMPLE).encode()
    with Server(LAYA_BODY_READ_TIMEOUT="10") as srv:
        tries = [
            ("two Content-Lengths", b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
             b"Content-Length: 5\r\n\r\n" % len(body) + body, 400, "Content-Length headers that disagree"),
            ("Content-Length and chunked", b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "both Content-Length and Transfer-Encoding"),
            ("gzip", b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc", 501,
             "Transfer-Encoding 'gzip' is not supported"),
            ("chunked, gzip", b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
             b"0\r\n\r\n", 501, "is not supported"),
        ]
        for what, data, status, text in tries:
            s = socket.create_connection(("127.0.0.1", srv.port))
            t0 = time.time()
            s.sendall(data + raw_request("GET", "/health"))  # a request smuggled behind it
            got, closed = read_responses(s, 2, 5)
            s.close()
            took = time.time() - t0
            check(len(got) == 1 and got[0][0] == status and text in json.loads(got[0][2])["detail"],
                  "%s: %r" % (what, got))
            check(got[0][1].get("connection") == "close" and closed, "%s: the connection stays open" % what)
            check(took < 2, "%s answered after %.1fs" % (what, took))
        # the same Content-Length twice is one length (RFC 9110), and is answered
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nContent-Length: %d\r\n\r\n"
                  % (len(body), len(body)) + body)
        got, _ = read_responses(s, 1, 30)
        s.close()
        check(got and got[0][0] == 200, "repeated equal Content-Length: %r" % got[:1])


@test
def test_pipeline():
    """GETs and early refusals keep the keep-alive connection: pipelined requests behind them are
    all answered, in order."""
    body = json.dumps(SIMPLE).encode()
    with Server(LAYA_API_KEY="k") as srv:
        auth = (("Authorization", "Bearer k"),)
        groups = [
            ("GET /health", [raw_request("GET", "/health")] * 3, [200] * 3),
            ("GET /ready, /metrics, /nope", [raw_request("GET", "/ready"), raw_request("GET", "/metrics", headers=auth),
                                             raw_request("GET", "/nope")], [200, 200, 404]),
            ("404 with a body", [raw_request("POST", "/nope", b"{}")] * 3, [404] * 3),
            ("405", [raw_request("GET", "/v1/systemone"), raw_request("POST", "/health", b"{}"),
                     raw_request("GET", "/health")], [405, 405, 200]),
            ("401 with a body", [raw_request("POST", "/v1/systemone", body)] * 2 +
             [raw_request("POST", "/v1/systemone", body, auth)], [401, 401, 200]),
            ("400 then 200", [raw_request("POST", "/v1/systemone", b"{", auth),
                              raw_request("POST", "/v1/systemone/batch", json.dumps({"states": ["a"], "questions": {}}).encode(), auth),
                              raw_request("POST", "/v1/systemone", body, auth)], [400, 200, 200]),
            ("413 while streaming, then GET", [b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
                                               b"Transfer-Encoding: chunked\r\n\r\n" +
                                               (b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n") * 40 + b"0\r\n\r\n",
                                               raw_request("GET", "/health")], [413, 200]),
        ]
        for what, reqs, want in groups:
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"".join(reqs))
            got, closed = read_responses(s, len(want), 30)
            s.close()
            check([g[0] for g in got] == want, "%s: statuses %r, want %r (closed=%s)" % (what, [g[0] for g in got], want, closed))
            check(all(g[1].get("connection") != "close" for g in got), "%s: Connection: close" % what)


def heavy_batch():
    """A batch request that keeps the one inference thread busy for a while (tiny checkpoint, one
    thread): 64 long states, answered in several passes."""
    return {"states": [("order %d was charged twice, please refund it. " % i) * 300 for i in range(16)],
            "questions": cases.QS, "max_len": 1024}


def start_heavy(srv, out):
    def run():
        try:
            out.append(srv.post("/v1/systemone/batch", heavy_batch(), timeout=600)[0])
        except Exception as e:  # noqa: BLE001
            out.append(repr(e))
    t = threading.Thread(target=run)
    t.start()
    return t


def wait_metric(srv, name, cond, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = srv.metrics().get(name, 0)
        if cond(v):
            return v
        time.sleep(0.02)
    return srv.metrics().get(name, 0)


def refusals(srv):
    """laya_refused_requests_total by reason (/metrics lists every reason, 0 included)."""
    return {k.split('reason="', 1)[1].split('"', 1)[0]: v for k, v in srv.metrics().items()
            if k.startswith("laya_refused_requests_total{")}


@test
def test_admission():
    """Slow uploads hold no admission slot (a request is admitted once its body is in); when every
    slot is taken by admitted work, 503 + Retry-After: 1, on the same keep-alive connection."""
    with Server(LAYA_MAX_CONCURRENT="1", LAYA_BODY_READ_TIMEOUT="30") as srv:
        held = [slow_upload(srv.port) for _ in range(4)]
        time.sleep(0.3)
        status, raw, _ = srv.post("/v1/systemone", SIMPLE)
        check(status == 200, "four slow uploads against one slot: %d %r" % (status, raw[:100]))
        check(srv.metrics()["laya_admitted_requests"] == 0, "slow uploads hold slots")
        heavy = []
        t = start_heavy(srv, heavy)
        check(wait_metric(srv, "laya_admitted_requests", lambda v: v == 1, 60) == 1, "the heavy request was not admitted")
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        conn.connect()
        sock = conn.sock
        busy = 0
        for path in ("/v1/systemone", "/v1/systemone/batch", "/v1/systemone"):
            body = SIMPLE if path == "/v1/systemone" else {"states": ["a"], "questions": {}}
            conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            raw = r.read()
            if not heavy:  # the heavy request still holds the slot
                check(r.status == 503 and json.loads(raw) == {"detail": "server busy, try again later"}
                      and r.getheader("Retry-After") == "1", "busy: %d %r" % (r.status, raw))
                busy += 1
            check(conn.sock is sock and r.getheader("Connection") != "close", "a 503 closed the connection")
        conn.close()
        check(busy > 0, "the heavy request finished before any probe")
        ref = refusals(srv)
        check(ref.get("concurrency") == busy and ref.get("buffered_memory") == 0, "refusals %r, %d busy" % (ref, busy))
        status, _, _ = srv.request("GET", "/health")
        check(status == 200, "health stays open while busy")
        t.join()
        check(heavy == [200], "heavy request: %r" % heavy)
        for s in held:
            s.close()
        status, raw, _ = srv.post("/v1/systemone", SIMPLE)
        check(status == 200, "slot free again: %d %r" % (status, raw[:100]))


@test
def test_aborted():
    """Clients that send a head and part of a body, then close, hold nothing: N such clients
    against LAYA_MAX_CONCURRENT=N, and then N real clients at once are all answered."""
    n = 16
    with Server(LAYA_MAX_CONCURRENT=str(n), LAYA_BODY_READ_TIMEOUT="30") as srv:
        base = srv.metrics()["laya_open_connections"]
        for _ in range(n):
            slow_upload(srv.port).close()
        got, errors = post_concurrently(srv, [("/v1/systemone", dict(SIMPLE, state="refund %d" % i)) for i in range(n)], n)
        check(not errors and len(got) == n, "after %d aborted uploads: %r" % (n, errors[:3]))
        # their connections are gone well before the body deadline
        left = wait_metric(srv, "laya_open_connections", lambda v: v <= base + 1, 5)
        check(left <= base + 1, "aborted connections still open: %d" % left)


@test
def test_underlimit():
    """N clients against LAYA_MAX_CONCURRENT=N are never refused, asking again as soon as they read
    each answer, on keep-alive and on fresh connections."""
    n, per = 16, 8
    with Server(LAYA_MAX_CONCURRENT=str(n)) as srv:
        refused, other, ok = [], [], [0]
        lock = threading.Lock()

        def client(i):
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
            for k in range(per):
                if k % 3 == 2:  # every third on a new connection
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
                conn.request("POST", "/v1/systemone", body=json.dumps(dict(SIMPLE, state="refund %d %d" % (i, k))),
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                raw = r.read()
                with lock:
                    if r.status == 503:
                        refused.append(raw)
                    elif r.status != 200:
                        other.append((r.status, raw[:100]))
                    else:
                        ok[0] += 1
            conn.close()

        for _ in range(2):
            threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        check(not refused and not other, "%d refused, others %r (of %d)" % (len(refused), other[:3], 2 * n * per))
        check(ok[0] == 2 * n * per, "%d answers" % ok[0])


@test
def test_overload():
    """64 keep-alive clients against 4 slots: refusals (503) keep their connection, nothing else
    fails, and some requests are answered."""
    with Server(LAYA_MAX_CONCURRENT="4") as srv:
        stats = {"ok": 0, "busy": 0, "reconnects": 0, "other": []}
        lock = threading.Lock()

        def client(i):
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
            conn.connect()
            sock = conn.sock
            for k in range(6):
                conn.request("POST", "/v1/systemone", body=json.dumps(dict(SIMPLE, state="refund %d %d" % (i, k))),
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                with lock:
                    if r.status == 200:
                        stats["ok"] += 1
                    elif r.status == 503:
                        stats["busy"] += 1
                    else:
                        stats["other"].append(r.status)
                    if conn.sock is not sock:
                        stats["reconnects"] += 1
                        sock = conn.sock
            conn.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(not stats["other"] and stats["reconnects"] == 0, "overload: %r" % stats)
        check(stats["ok"] > 0 and stats["ok"] + stats["busy"] == 64 * 6, "overload counts: %r" % stats)
        print("     overload: %d answered, %d refused (503), %d reconnects" % (stats["ok"], stats["busy"], stats["reconnects"]))


@test
def test_junk():
    """Junk clients flooding complete but invalid bodies (a ~1.8 MB JSON prefix that fails at its
    end, short invalid JSON, a bad question type, a bad shape) take no admission slot: one
    well-behaved client against LAYA_MAX_CONCURRENT=1 is never refused, and /metrics counts what
    happened by reason (junk that came while the normal request held the slot: concurrency; the
    rest 400/422). Then bodies over LAYA_SERVE_MAX_BUFFERED_MB get their own 503,
    counted as buffered_memory. (Issue 18: 5 normal requests of ~23,900 got 503 under the hostile
    bench; the old server admitted a request before validating it.)"""
    big = b"[" + b"1," * 900000 + b"x]"  # parsed to its end, then 400
    junk = [big, b"{", json.dumps({"state": "x", "questions": {"q": {"type": "bogus"}}}).encode(), big,
            json.dumps({"states": "x", "questions": {}}).encode()]
    with Server(LAYA_MAX_CONCURRENT="1", LAYA_SERVE_HTTP_THREADS="4") as srv:
        stop = threading.Event()
        sent, busy, junk_other = [0], [0], []
        lock = threading.Lock()

        def flood(k):
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
            i = k
            while not stop.is_set():
                path = "/v1/systemone/batch" if i % len(junk) == 4 else "/v1/systemone"
                conn.request("POST", path, body=junk[i % len(junk)], headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                raw = r.read()
                with lock:
                    sent[0] += 1
                    if r.status == 503 and json.loads(raw) == {"detail": "server busy, try again later"}:
                        busy[0] += 1  # the normal request held the one slot: refused unread
                    elif r.status not in (400, 422):
                        junk_other.append((r.status, i % len(junk), raw[:60]))
                i += 1
            conn.close()

        floods = [threading.Thread(target=flood, args=(k,)) for k in range(4)]
        for t in floods:
            t.start()
        time.sleep(0.3)
        statuses = []
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        t_end = time.time() + 3
        while time.time() < t_end or len(statuses) < 3:
            conn.request("POST", "/v1/systemone", body=json.dumps(dict(SIMPLE, state="refund %d" % len(statuses))),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            raw = r.read()
            statuses.append((r.status, raw[:80]) if r.status != 200 else 200)
        conn.close()
        stop.set()
        for t in floods:
            t.join()
        bad = [s for s in statuses if s != 200]
        print("     junk: %d normal requests, %d refused; %d junk requests, %d of them refused while the slot was taken"
              % (len(statuses), len(bad), sent[0], busy[0]))
        check(not bad, "%d of %d normal requests refused under a junk flood: %r" % (len(bad), len(statuses), bad[:3]))
        check(not junk_other, "junk answered other than 400/422/503: %r" % junk_other[:5])
        # laya_requests_total counts a request when libmicrohttpd reports its response sent
        # (on_completed), which can come just after the client has read it: wait for the last few
        deadline = time.time() + 5
        while True:
            m = srv.metrics()
            n4 = sum(v for k, v in m.items()
                     if k.startswith("laya_requests_total{") and ('status="400"' in k or 'status="422"' in k))
            if n4 >= sent[0] - busy[0] or time.time() > deadline:
                break
            time.sleep(0.05)
        check(n4 == sent[0] - busy[0], "400/422 counted %d, answered %d" % (n4, sent[0] - busy[0]))
        ref = refusals(srv)
        check(ref == {"concurrency": busy[0], "buffered_memory": 0, "draining": 0, "checkpoint_unavailable": 0},
              "refusals by reason %r (junk refused: %d)" % (ref, busy[0]))
        check(m["laya_admitted_requests"] == 0 and m["laya_buffered_body_bytes"] == 0, "slots or bytes left held")
    with Server(LAYA_SERVE_MAX_BUFFERED_MB="1") as srv:
        body = json.dumps(dict(SIMPLE, state="refund " + "x" * (1536 * 1024))).encode()
        for _ in range(2):
            status, raw, hdrs = srv.request("POST", "/v1/systemone", body)
            check(status == 503 and hdrs.get("retry-after") == "1" and json.loads(raw) ==
                  {"detail": "server busy: request bodies in memory reached LAYA_SERVE_MAX_BUFFERED_MB, try again later"},
                  "over the buffered budget: %d %r %r" % (status, raw[:120], hdrs.get("retry-after")))
        status, raw, _ = srv.post("/v1/systemone", SIMPLE)
        check(status == 200, "a small body after them: %d %r" % (status, raw[:100]))
        ref = refusals(srv)
        check(ref.get("buffered_memory") == 2 and ref.get("concurrency") == 0, "refusals by reason %r" % ref)
        check(srv.metrics()["laya_buffered_body_bytes"] == 0, "buffered bytes left held")


@test
def test_slowloris():
    """300 connections sending their request heads a byte at a time (re-opened when cut) do not
    starve other clients: every normal request is answered, the slow ones are cut, and the
    server's descriptors stay bounded."""
    limit = 128
    with Server(LAYA_SERVE_MAX_CONNECTIONS=str(limit), LAYA_SERVE_HEADER_TIMEOUT="3") as srv:
        stop = threading.Event()
        opened = [0]

        def attacker():
            head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
            socks = []
            while not stop.is_set():
                while len(socks) < 300 and not stop.is_set():
                    try:
                        s = socket.create_connection(("127.0.0.1", srv.port), timeout=2)
                        s.setblocking(False)
                        socks.append([s, 0])
                        opened[0] += 1
                    except OSError:
                        break
                for item in list(socks):
                    s, i = item
                    try:
                        s.send(head[i % len(head):i % len(head) + 1])
                        item[1] += 1
                        if s.recv(1) == b"":
                            raise OSError("closed")
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close()
                        socks.remove(item)
                time.sleep(0.3)
            for s, _ in socks:
                s.close()

        a = threading.Thread(target=attacker)
        a.start()
        failures, answered, max_fds = [], 0, 0
        t_end = time.time() + 10
        time.sleep(1)
        while time.time() < t_end:
            try:
                status, raw, _ = srv.request("GET", "/health", timeout=10)
                status2, raw2, _ = srv.post("/v1/systemone", SIMPLE, timeout=10)
                if status != 200 or status2 != 200:
                    failures.append((status, status2, raw2[:80]))
                else:
                    answered += 2
            except Exception as e:  # noqa: BLE001
                failures.append(repr(e))
            max_fds = max(max_fds, len(os.listdir("/proc/%d/fd" % srv.proc.pid)))
            time.sleep(0.2)
        stop.set()
        a.join()
        m = srv.metrics()
        print("     slowloris: %d slow connections opened, %d cut, %d normal requests answered, max %d fds"
              % (opened[0], m["laya_connections_cut_total"], answered, max_fds))
        check(not failures, "normal requests failed under slowloris: %r" % failures[:5])
        check(answered >= 4, "only %d normal requests answered" % answered)
        check(m["laya_connections_cut_total"] >= 100, "slow connections cut: %r" % m["laya_connections_cut_total"])
        check(max_fds <= limit + 128, "server descriptors %d over the connection limit %d" % (max_fds, limit))


@test
def test_nesting():
    """One state nesting limit, at the edge, named (the engine never meets a deeper state)."""
    with Server() as srv:
        deepest = 998
        for depth, want in ((deepest, 200), (deepest + 1, 400)):
            body = ('{"state": ' + "[" * depth + "]" * depth + ', "questions": {"r": {"type": "noul", "instructions": "Refund?"}}}').encode()
            status, raw, _ = srv.request("POST", "/v1/systemone", body)
            check(status == want, "state %d deep: %d %r" % (depth, status, raw[:200]))
            if want == 400:
                check(json.loads(raw) == {"detail": "state nests too deep (more than %d levels)" % deepest}, "detail %r" % raw)
            body = ('{"states": [' + "[" * depth + "]" * depth + '], "questions": {}}').encode()
            status, raw, _ = srv.request("POST", "/v1/systemone/batch", body)
            check(status == want, "batch state %d deep: %d %r" % (depth, status, raw[:200]))


@test
def test_unavailable():
    """A request routed to a checkpoint this server cannot load is a 503 naming it and how to
    provide it, not a bare 500."""
    import tempfile
    with tempfile.TemporaryDirectory() as home:
        with Server(LAYA_EXTRA_MODELS=json.dumps({"english": os.path.join(CKPT, "modernbert-tiny")}),
                    LAYA_MODELS="english", HF_HOME=home, HF_HUB_CACHE=None, HF_HUB_OFFLINE="1") as srv:
            status, raw, _ = srv.post("/v1/systemone", {"state": "12345", "questions": {"r": cases.NOUL}})
            detail = json.loads(raw).get("detail", "")
            check(status == 503 and "'multilingual'" in detail and "LAYA_EXTRA_MODELS" in detail,
                  "routed to multilingual: %d %r" % (status, raw[:300]))
            status, raw, _ = srv.post("/v1/systemone", {"state": "refund please", "questions": {"r": cases.NOUL},
                                                        "model": "english"})
            check(status == 200, "english still answers: %d %r" % (status, raw[:200]))
            ref = refusals(srv)
            check(ref.get("checkpoint_unavailable") == 1 and ref.get("concurrency") == 0,
                  "refusals by reason %r" % ref)


@test
def test_dupkeys():
    """Labels that render to one JSON key (True and "true") stay two members, as Python's
    json.dumps writes the dict Laya builds from them."""
    labels = [True, False, "True", "False", "true"]
    expect = [k for k, _ in json.loads(json.dumps({lab: 0 for lab in labels}), object_pairs_hook=lambda p: p)]
    q = {"q": {"type": "choice", "instructions": "Which?", "criteria": labels}}
    with Server() as srv:
        for path, body in (("/v1/systemone", {"state": "refund please", "questions": q}),
                           ("/v1/systemone/batch", {"states": ["refund please"], "questions": q})):
            status, raw, _ = srv.request("POST", path, json.dumps(body).encode())
            check(status == 200, "%s: %d %r" % (path, status, raw[:200]))
            doc = json.loads(raw, object_pairs_hook=lambda p: p)
            res = dict(doc)["results"][0] if path.endswith("batch") else doc
            ans = dict(dict(dict(res)["answers"])["q"])
            probs = ans["probabilities"]
            check([k for k, _ in probs] == expect, "%s: keys %r, want %r" % (path, [k for k, _ in probs], expect))
            check(abs(sum(v for _, v in probs) - 1) < 2e-3, "%s: probabilities %r" % (path, probs))


@test
def test_cancel():
    """Requests whose clients left while queued are not computed; SIGTERM then still answers the
    running request, computes none of them, and exits 0."""
    srv = Server(LAYA_MAX_CONCURRENT="64")
    srv.__enter__()
    try:
        heavy = []
        t = start_heavy(srv, heavy)
        check(wait_metric(srv, "laya_admitted_requests", lambda v: v == 1, 60) == 1, "heavy not admitted")
        before = srv.metrics()["laya_batch_requests_sum"]
        body = json.dumps({"state": "where is my parcel?", "questions": cases.QS}).encode()
        # each client leaves right after sending: its end of stream is in the socket before the
        # server has read the request, so the scheduler's look before a pass always sees it (the
        # heavy request is answered in several passes, and queued requests can be taken between
        # them, sooner than the watchdog's next tick)
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(raw_request("POST", "/v1/systemone", body))
            s.close()
        cancelled = wait_metric(srv, "laya_cancelled_jobs_total", lambda v: v >= 8, 30)
        m = srv.metrics()
        still = not heavy
        check(cancelled == 8, "%d of 8 gone clients noticed" % cancelled)
        srv.proc.send_signal(signal.SIGTERM)
        t.join()
        check(heavy == [200], "the running request during the drain: %r" % heavy)
        check(srv.proc.wait(timeout=120) == 0, "exit code")
        if still:  # noticed while the heavy request still ran: none of them was computed
            check(m["laya_batch_requests_sum"] == before, "computed for gone clients before SIGTERM")
        time.sleep(0.2)
        check(any("drained; 8 queued requests skipped" in l for l in srv.lines), "drain log: %r" % srv.lines[-3:])
    finally:
        srv.__exit__()


def hf_cache(home, parts, commits=None):
    """A Hugging Face cache as huggingface_hub leaves it after Python Laya's download:
    <home>/hub/models--convaiinnovations--laya/{blobs/<sha256>, refs/<ref>, snapshots/<commit>/...},
    snapshot files being relative symlinks into blobs/. parts: {subfolder or "": fixture dir};
    commits: {ref: commit} (default: main only)."""
    import hashlib
    import shutil
    repo = os.path.join(home, "hub", "models--convaiinnovations--laya")
    blobs = os.path.join(repo, "blobs")
    os.makedirs(blobs, exist_ok=True)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    commits = commits or {"main": "0123456789abcdef0123456789abcdef01234567"}
    for ref, commit in commits.items():
        with open(os.path.join(repo, "refs", ref), "w") as f:
            f.write(commit)  # huggingface_hub writes the bare hash
        snap = os.path.join(repo, "snapshots", commit)
        for sub, src in parts.items():
            for root, _, files in os.walk(src):
                for name in files:
                    if name == "SHA256SUMS":
                        continue
                    path = os.path.join(root, name)
                    data = open(path, "rb").read()
                    blob = os.path.join(blobs, hashlib.sha256(data).hexdigest())
                    if not os.path.exists(blob):
                        shutil.copyfile(path, blob)
                    dest = os.path.join(snap, sub, os.path.relpath(path, src))
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    if not os.path.lexists(dest):
                        os.symlink(os.path.relpath(blob, os.path.dirname(dest)), dest)
    return repo


def start_fails_env(env, expect):
    e = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1", LAYA_THREADS="1")
    e.pop("LAYA_EXTRA_MODELS", None)
    e.pop("LAYA_MODELS", None)
    e.update({k: v for k, v in env.items() if v is not None})
    p = subprocess.run([BIN], env=e, capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and expect in p.stderr, "%r -> rc %d %r" % (env, p.returncode, p.stderr[-600:]))
    return p.stderr


@test
def test_hubcache():
    """Checkpoints by Laya's names from a Hugging Face cache laid out as Python Laya leaves it
    (HF_HUB_OFFLINE=1): names, aliases and Hub ids in LAYA_MODELS, LAYA_MODELS unset (what the
    cache has), LAYA_REVISION, LAYA_SHA256_DIGESTS, the same answers as from the directories, and
    clear startup errors for what the cache lacks."""
    import hashlib
    with tempfile.TemporaryDirectory() as home:
        main, v1 = "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"
        hf_cache(home, {"": os.path.join(CKPT, "modernbert-tiny"), "multilingual": os.path.join(CKPT, "mmbert-tiny")},
                 {"main": main, "v1": v1})
        base = dict(LAYA_EXTRA_MODELS=None, HF_HOME=home, HF_HUB_OFFLINE="1")
        probe = {"state": "I was charged twice for my March invoice, please refund one.", "questions": cases.QS}
        with Server() as dirs:
            want = {m: json.loads(dirs.post("/v1/systemone", dict(probe, model=m))[1])["answers"]
                    for m in ("english", "multilingual")}
        for models in ("english,multilingual", "EN, ml", "convaiinnovations/laya,convaiinnovations/laya-multilingual", None):
            with Server(LAYA_MODELS=models, **base) as srv:
                status, raw, _ = srv.request("GET", "/ready")
                check(status == 200 and json.loads(raw)["loaded"] == ["english", "multilingual"],
                      "LAYA_MODELS=%r: /ready %d %r" % (models, status, raw))
                for m in ("english", "multilingual"):
                    status, raw, _ = srv.post("/v1/systemone", dict(probe, model=m))
                    body = json.loads(raw)
                    check(status == 200 and body["routing"]["model"] == m, "%s: %d %r" % (m, status, raw[:200]))
                    check(body["answers"] == want[m], "%s from the cache answers differently from its directory" % m)
                status, raw, _ = srv.request("GET", "/health")
                check(json.loads(raw)["revisions"] == {"english": main, "multilingual": main}, "revisions %r" % raw)
        with Server(LAYA_MODELS="english", LAYA_REVISION="v1", **base) as srv:
            status, raw, _ = srv.request("GET", "/health")
            check(json.loads(raw)["revisions"] == {"english": v1}, "LAYA_REVISION=v1: %r" % raw)
        # pinned by digest, per checkpoint
        sf = open(os.path.join(CKPT, "modernbert-tiny", "model.safetensors"), "rb").read()
        good = {"english": {"model.safetensors": hashlib.sha256(sf).hexdigest()}}
        with Server(LAYA_MODELS="english", LAYA_SHA256_DIGESTS=json.dumps(good), **base) as srv:
            check(srv.request("GET", "/ready")[0] == 200, "good digest")
        bad = {"english": {"model.safetensors": "0" * 64}}
        start_fails_env(dict(base, LAYA_MODELS="english", LAYA_SHA256_DIGESTS=json.dumps(bad)), "model.safetensors")
        # a revision the cache lacks, a checkpoint it lacks: exit 1, naming it and the way out
        err = start_fails_env(dict(base, LAYA_MODELS="english,typed-decisions"), "checkpoint 'typed-decisions'")
        check("HF_HUB_OFFLINE" in err and "LAYA_EXTRA_MODELS" in err, "the error says how: %r" % err[-400:])
        start_fails_env(dict(base, LAYA_MODELS="english", LAYA_REVISION="v9"), "revision v9")
    with tempfile.TemporaryDirectory() as home:
        start_fails_env({"HF_HOME": home, "HF_HUB_OFFLINE": "1"}, "no checkpoint to serve")
        # loading on first use: /ready says why once a load failed
        with Server(LAYA_EXTRA_MODELS=None, LAYA_MODELS=None, LAYA_PRELOAD="0", HF_HOME=home, HF_HUB_OFFLINE="1") as srv:
            status, raw, _ = srv.post("/v1/systemone", dict(SIMPLE, model="english"))
            check(status == 503 and "'english'" in json.loads(raw)["detail"], "lazy english: %d %r" % (status, raw[:200]))
            status, raw, _ = srv.request("GET", "/ready")
            body = json.loads(raw)
            check(status == 503 and body["status"] == "unavailable" and "english" in body["errors"], "/ready %r" % body)


@test
def test_mcp_hubcache():
    """laya-mcp serves Laya's checkpoints by name from the same cache."""
    mcp = os.path.join(os.path.dirname(BIN), "laya-mcp")
    with tempfile.TemporaryDirectory() as home:
        hf_cache(home, {"": os.path.join(CKPT, "modernbert-tiny"), "multilingual": os.path.join(CKPT, "mmbert-tiny")})
        for models in ("english,multilingual", None):  # unset: Laya's MCP default, the same two
          env = dict(os.environ, HF_HOME=home, HF_HUB_OFFLINE="1", LAYA_MODELS=models or "", LAYA_THREADS="1")
          env.pop("LAYA_EXTRA_MODELS", None)
          msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                  {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "laya_status", "arguments": {}}},
                  {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "laya_predict", "arguments": {"state": {"request": "refund please"},
                                                                     "questions": {"r": cases.NOUL}, "model": "ml"}}}]
          p = subprocess.run([mcp], input="".join(json.dumps(m) + "\n" for m in msgs), env=env, capture_output=True,
                             text=True, timeout=120)
          out = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
          check(len(out) == 3, "laya-mcp answered %d of 3: %r" % (len(out), p.stderr[-400:]))
          status = json.loads(out[1]["result"]["content"][0]["text"])
          check(status["loaded"] == ["english", "multilingual"], "laya_status %r" % status)
          pred = out[2]["result"]
          check(not pred["isError"] and "r" in json.loads(pred["content"][0]["text"])["answers"], "predict %r" % pred)


def loaded(srv):
    return json.loads(srv.request("GET", "/health")[1])["loaded"]


@test
def test_lifecycle():
    """LAYA_MAX_LOADED: least recently used checkpoint unloaded, never one a request is using;
    LAYA_IDLE_UNLOAD_SECONDS: idle checkpoints unloaded, loaded again on the next request."""
    probe = {"state": "I was charged twice, please refund one.", "questions": {"r": cases.NOUL}}
    with Server(LAYA_MODELS="english", LAYA_MAX_LOADED="1") as srv:
        check(loaded(srv) == ["english"], "preloaded %r" % loaded(srv))
        for m in ("multilingual", "english", "multilingual"):
            status, raw, _ = srv.post("/v1/systemone", dict(probe, model=m))
            check(status == 200 and json.loads(raw)["routing"]["model"] == m, "%s: %d %r" % (m, status, raw[:200]))
            check(loaded(srv) == [m], "after a request for %s, loaded %r" % (m, loaded(srv)))
        # english busy with a long request while requests for multilingual keep loading it beside
        # it: english must never be unloaded under the running request (its answers stay exactly
        # those it gets alone), and the cap holds again once it is done
        heavy = []
        body = dict(heavy_batch(), model="english")
        t = threading.Thread(target=lambda: heavy.append(srv.post("/v1/systemone/batch", body, timeout=600)))
        t.start()
        others = []
        while not heavy or not others:
            status, raw, _ = srv.post("/v1/systemone", dict(probe, model="multilingual"))
            others.append(status)
        t.join()
        check(set(others) == {200}, "multilingual beside a running english request: %r" % others)
        status, raw, _ = heavy[0]
        check(status == 200, "the english request: %d %r" % (status, raw[:200]))
        status2, raw2, _ = srv.post("/v1/systemone/batch", body, timeout=600)
        check(status2 == 200 and json.loads(raw)["results"] == json.loads(raw2)["results"],
              "the english request's answers differ from the same request alone")
        check(len(loaded(srv)) == 1, "the cap of 1 after: %r" % loaded(srv))
        print("     lifecycle: %d multilingual requests while english ran" % len(others))
    with Server(LAYA_IDLE_UNLOAD_SECONDS="1") as srv:
        check(loaded(srv) == ["english", "multilingual"], "preloaded %r" % loaded(srv))
        deadline = time.time() + 15
        while time.time() < deadline and loaded(srv):
            time.sleep(0.1)
        check(loaded(srv) == [], "idle checkpoints still loaded: %r" % loaded(srv))
        check(srv.request("GET", "/ready")[0] == 200, "ready while idle-unloaded")
        status, raw, _ = srv.post("/v1/systemone", dict(probe, model="english"))
        check(status == 200 and loaded(srv) == ["english"], "reloaded on use: %d %r" % (status, loaded(srv)))
@test
def test_precision():
    """/health reports the precision the checkpoints run at: fp32 by default (LAYA_PRECISION unset),
    LAYA_PRECISION when set (the answers then differ from fp32's); an invalid LAYA_PRECISION stops a
    preloading server with a message naming the variable."""
    answers = {}
    for prec in (None, "bf16"):
        with Server(LAYA_PRECISION=prec, LAYA_BACKEND=None, LAYA_DEVICE=None) as srv:
            status, raw, _ = srv.request("GET", "/health")
            h = json.loads(raw)
            want = prec or "fp32"
            check(status == 200 and h.get("precision") == want
                  and h.get("checkpoint_precisions") == {"english": want, "multilingual": want},
                  "health precision %s: %r" % (want, h))
            status, raw, _ = srv.post("/v1/systemone", SIMPLE)
            check(status == 200, "answer at %s: %d" % (want, status))
            answers[want] = json.loads(raw).get("answers")
    check(answers["fp32"] != answers["bf16"], "bf16 answers differ from fp32 (LAYA_PRECISION took effect)")
    e = dict(os.environ, LAYA_EXTRA_MODELS=extra_models(), LAYA_PRELOAD="1", LAYA_MODELS="english",
             LAYA_PRECISION="fast", LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1")
    p = subprocess.run([BIN], env=e, capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and "LAYA_PRECISION must be fp32, bf16, fp16, int8 or fp8, got 'fast'" in p.stderr,
          "invalid LAYA_PRECISION: rc %d %r" % (p.returncode, p.stderr[-300:]))


# ---- operations (issue 18): logs, OpenAPI, metrics, root path ----

ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
GENERATED_ID = re.compile(r"[0-9a-f]{32}$")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def raw_get(port, path_bytes, extra=b""):
    """A GET with a request target http.client would refuse to send; returns the response head."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        try:
            s.sendall(b"GET " + path_bytes + b" HTTP/1.1\r\nHost: x\r\n" + extra + b"Connection: close\r\n\r\n")
        except OSError:
            pass  # refused before the whole head was sent: its answer is still there to read
        return read_response(s, 10)
    finally:
        s.close()


@test
def test_logs():
    """One logger: JSON lines (LAYA_LOG_FORMAT=json) or prefixed text; an access line per request
    with its id, method, path, status, duration, bytes and checkpoint; X-Request-Id honoured when
    sane and returned on every answer; LAYA_LOG_LEVEL filters (warning: no access or info lines);
    config warnings, checkpoint load warnings and libmicrohttpd's messages go through it."""
    sent = {}
    with Server(LAYA_LOG_FORMAT="json", LAYA_MAX_TOKEN_BUDGET="lots") as srv:
        status, raw, h = srv.request("GET", "/health", headers={"X-Request-Id": "client-id.1:a_b"})
        check(status == 200 and h.get("x-request-id") == "client-id.1:a_b", "sane id not echoed: %r" % h)
        sent["client-id.1:a_b"] = ("GET", "/health", 200, len(raw), None)
        ids = set()
        for bad in ("a" * 129, "has space", "semi;colon", "<script>", "\u00e9t\u00e9", ""):
            status, raw, h = srv.request("GET", "/ready", headers={"X-Request-Id": bad})
            rid = h.get("x-request-id", "")
            check(status == 200 and GENERATED_ID.match(rid), "id %r not replaced: %r" % (bad, rid))
            ids.add(rid)
            sent[rid] = ("GET", "/ready", 200, len(raw), None)
        status, raw, h = srv.post("/v1/systemone", SIMPLE)
        check(status == 200 and GENERATED_ID.match(h.get("x-request-id", "")), "decision id %r" % h)
        ids.add(h["x-request-id"])
        sent[h["x-request-id"]] = ("POST", "/v1/systemone", 200, len(raw), json.loads(raw)["routing"]["model"])
        status, raw, h = srv.request("POST", "/v1/systemone", b"{not json", {"X-Request-Id": "bad-body"})
        check(status == 400 and h.get("x-request-id") == "bad-body", "400 id %r" % h)
        sent["bad-body"] = ("POST", "/v1/systemone", 400, len(raw), None)
        status, raw, h = srv.request("DELETE", "/metrics", headers={"X-Request-Id": "r405"})
        check(status == 405 and h.get("x-request-id") == "r405", "405 id %r" % h)
        sent["r405"] = ("DELETE", "/metrics", 405, len(raw), None)
        check(len(ids) == 7, "generated ids repeat: %r" % ids)
        # a path that would forge a log line once decoded; a head libmicrohttpd refuses itself
        head = raw_get(srv.port, b"/nowhere%0A%7B%22forged%22%3A1%7D", b"X-Request-Id: forge\r\n")
        check(head.startswith(b"HTTP/1.1 404") and b"X-Request-Id: forge" in head, "404 head %r" % head[:200])
        sent["forge"] = ("GET", '/nowhere\n{"forged":1}', 404, len(b'{"detail":"Not Found"}'), None)
        head = raw_get(srv.port, b"/health", b"X-Big: " + b"a" * 140000 + b"\r\n")
        check(head.startswith(b"HTTP/1.1 431"), "oversized head %r" % head[:100])
    records = []
    for line in srv.lines:
        try:
            rec = json.loads(line)
        except ValueError:
            raise AssertionError("not a JSON line: %r" % line)
        check(isinstance(rec, dict) and ISO_TIME.match(rec.get("time", "")) and
              rec.get("level") in ("trace", "debug", "info", "warning", "error", "critical") and
              rec.get("logger") in ("laya-serve", "laya-serve.access") and isinstance(rec.get("message"), str),
              "malformed record %r" % rec)
        records.append(rec)
    access = {r["request_id"]: r for r in records if r["logger"] == "laya-serve.access"}
    check(len(access) == len([r for r in records if r["logger"] == "laya-serve.access"]), "duplicate access ids")
    for rid, (method, path, status, nbytes, model) in sent.items():
        a = access.get(rid)
        check(a is not None, "no access line for %s: %r" % (rid, list(access)))
        got = (a["method"], a["path"], a["status"], a["bytes"], a["model"])
        check(got == (method, path, status, nbytes, model), "access %s: %r, sent %r" % (rid, got, (method, path, status, nbytes, model)))
        check(isinstance(a["duration_ms"], float) and 0 <= a["duration_ms"] < 60000 and a["client"] == "127.0.0.1",
              "access %s: %r" % (rid, a))
        check(a["level"] == "info", "access level %r" % a)
    def has(level, text):
        return any(r["level"] == level and text in r["message"] for r in records)
    check(has("warning", "invalid LAYA_MAX_TOKEN_BUDGET 'lots'; falling back to 8192"), "config warning")
    check(has("warning", "checkpoint 'english': this checkpoint ships invalid temperatures"), "load warning")
    check(has("warning", "libmicrohttpd: "), "libmicrohttpd's message")
    for text in ("loaded [\"english\", \"multilingual\"]", "listening on http://127.0.0.1:", "SIGTERM received",
                 "drained;", "stopped"):
        check(has("info", text), "no info line %r" % text)

    # text: every line prefixed, the access line as key=value pairs
    with Server() as srv:
        status, raw, h = srv.request("GET", "/health", headers={"X-Request-Id": "text-1"})
    check(all(l.startswith("laya-serve: ") for l in srv.lines), "unprefixed: %r" % [l for l in srv.lines if not l.startswith("laya-serve: ")])
    pat = re.compile(r'laya-serve: access time=\S+Z request_id=text-1 method=GET path="/health" status=200 '
                     r'duration_ms=[0-9.]+ bytes=%d model=- client=127\.0\.0\.1\n$' % len(raw))
    check(any(pat.match(l) for l in srv.lines), "text access line: %r" % [l for l in srv.lines if "access" in l])

    # LAYA_LOG_LEVEL=warning (case and padding as Laya reads them): warnings only
    port = free_port()
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT=str(port), LAYA_EXTRA_MODELS=extra_models(),
               LAYA_MODELS="english", LAYA_THREADS="1", LAYA_LOG_LEVEL=" WARNING ", LAYA_MAX_BATCH_TOKENS="x")
    p = subprocess.Popen([BIN], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline, up = time.time() + 60, False
        while time.time() < deadline and not up and p.poll() is None:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/ready")
                up = c.getresponse().status == 200
                c.close()
            except OSError:
                time.sleep(0.1)
        check(up, "server with LAYA_LOG_LEVEL=warning did not come up")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("POST", "/v1/systemone", body=json.dumps(SIMPLE))
        check(c.getresponse().status == 200, "decision at level warning")
        c.close()
    finally:
        p.send_signal(signal.SIGTERM)
        err = p.communicate(timeout=30)[1]
    lines = err.splitlines()
    check(p.returncode == 0, "exit %r" % p.returncode)
    check(any(l.startswith("laya-serve: warning: invalid LAYA_MAX_BATCH_TOKENS 'x'") for l in lines), "warning: %r" % lines)
    check(not any("access" in l or "listening" in l or "stopped" in l for l in lines), "info at warning: %r" % lines)
    check(all(l.startswith("laya-serve: ") for l in lines), "unprefixed at warning: %r" % lines)

    def refused(env, expect):
        e = dict(os.environ, LAYA_EXTRA_MODELS=extra_models(), LAYA_PRELOAD="0")
        e.update(env)
        q = subprocess.run([BIN], env=e, capture_output=True, text=True, timeout=30)
        check(q.returncode == 1 and q.stderr.startswith("laya-serve: ") and expect in q.stderr,
              "%r -> rc %d %r" % (env, q.returncode, q.stderr))
    refused({"LAYA_LOG_LEVEL": "verbose"},
            "invalid LAYA_LOG_LEVEL 'verbose': must be one of critical, debug, error, info, trace, warning")
    refused({"LAYA_LOG_FORMAT": "xml"}, "invalid LAYA_LOG_FORMAT 'xml': must be one of json, text")
    # a refusal after the format is known is a JSON line too
    e = dict(os.environ, LAYA_EXTRA_MODELS=extra_models(), LAYA_PRELOAD="0", LAYA_LOG_FORMAT="json", LAYA_PORT="99999")
    q = subprocess.run([BIN], env=e, capture_output=True, text=True, timeout=30)
    rec = json.loads(q.stderr.strip().splitlines()[-1])
    check(q.returncode == 1 and rec["level"] == "critical" and rec["message"].startswith("invalid LAYA_PORT '99999'"),
          "JSON refusal %r" % q.stderr)


def documented_endpoints():
    """(METHOD, path) of docs/serve.md's Endpoints table."""
    with open(os.path.join(HERE, "..", "..", "docs", "serve.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("## Endpoints", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(GET|POST) (/[^ `]*)` \|", table, re.M))


def check_answer(srv, doc, method, path, body=None, headers=None, want=None):
    """One request; its status must be documented for the operation, its content type and body
    must match that response's schema, and it must carry X-Request-Id. Returns (status, value)."""
    import schema_check
    op = doc["paths"][path][method.lower()]
    status, raw, hdrs = srv.request(method, path, body, headers)
    what = "%s %s -> %d %r" % (method, path, status, raw[:160])
    check(want is None or status == want, what + " (wanted %s)" % want)
    resp = op["responses"].get(str(status))
    check(resp is not None, what + ": status not documented")
    check(GENERATED_ID.match(hdrs.get("x-request-id", "")) or (headers or {}).get("X-Request-Id") == hdrs.get("x-request-id"),
          what + ": no X-Request-Id")
    for name in resp.get("headers", {}):
        if name in ("Server-Timing", "X-Inference-Time-Ms", "X-Request-Id"):
            check(name.lower() in hdrs, what + ": documented header %s missing" % name)
    ctype = hdrs.get("content-type", "").split(";")[0]
    check(ctype in resp.get("content", {}), what + ": content type %r, documented %r" % (ctype, list(resp.get("content", {}))))
    schema = resp["content"][ctype]["schema"]
    value = raw.decode("utf-8")
    if ctype == "application/json":
        value = json.loads(raw)
    errs = schema_check.validate(value, schema, doc)
    check(not errs, what + ": body does not match its schema: %s" % errs[:3])
    return status, value


@test
def test_openapi():
    """/openapi.json is valid OpenAPI 3.1 (structure, refs, examples match their schemas), names this
    build's version, describes exactly the routes the server answers (and docs/serve.md lists), with
    Laya's operation ids; each operation answers as documented (status, content type, schema,
    headers), for its examples and for every recorded parity case; /docs is a self-contained page;
    neither is served with LAYA_API_KEY set, as Laya."""
    import schema_check
    version = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.split()[1]
    with Server() as srv:
        status, raw, hdrs = srv.request("GET", "/openapi.json")
        check(status == 200 and hdrs["content-type"] == "application/json", "openapi %d %r" % (status, hdrs))
        doc = json.loads(raw)
        problems = schema_check.check_document(doc)
        check(not problems, "document problems: %s" % problems[:5])
        check(doc["info"]["title"] == "laya-serve" and doc["info"]["version"] == version and "servers" not in doc,
              "info %r" % doc["info"])
        ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
        check(ops == documented_endpoints(), "openapi %r vs docs/serve.md %r" % (sorted(ops), sorted(documented_endpoints())))
        # Laya's operation ids for its three routes (a client generated from Laya's schema keeps its names)
        for path, method, oid in (("/health", "get", "health_health_get"),
                                  ("/v1/systemone", "post", "systemone_v1_systemone_post"),
                                  ("/v1/systemone/batch", "post", "systemone_batch_v1_systemone_batch_post")):
            check(doc["paths"][path][method]["operationId"] == oid, "operationId of %s %s" % (method, path))
        # every documented operation answers as documented; other methods get 405, HEAD as GET
        for method, path in sorted(ops):
            op = doc["paths"][path][method.lower()]
            if method == "GET":
                check_answer(srv, doc, "GET", path, want=200)
                status, raw, _ = srv.request("HEAD", path)
                check(status == 200 and raw == b"", "HEAD %s %d" % (path, status))
            else:
                for name, ex in op["requestBody"]["content"]["application/json"]["examples"].items():
                    check_answer(srv, doc, method, path, json.dumps(ex["value"]).encode(), {"X-Request-Id": "ex-" + name}, want=200)
            for other in ("GET", "POST", "PUT", "DELETE", "PATCH"):
                if (other, path) not in ops:
                    status, _, h = srv.request(other, path, b"{}" if other != "GET" else None)
                    check(status == 405, "%s %s answered %d, not 405" % (other, path, status))
        for path in ("/", "/redoc", "/v1", "/openapi", "/docs.html", "/v1/systemone/batch/x"):
            status, _, _ = srv.request("GET", path)
            check(status == 404, "undocumented %s answered %d" % (path, status))
        # every recorded parity case: its status is documented and its answer matches the schema
        seen, wrong = set(), []
        for name, path, body, headers in cases.cases():
            try:
                status, value = check_answer(srv, doc, "POST", path, cases.encode(body), headers)
            except AssertionError as e:
                wrong.append("case %s: %s" % (name, e))
                continue
            seen.add(status)
            if status == 200 and isinstance(body, dict):
                req_schema = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
                errs = schema_check.validate(body, req_schema, doc)
                if errs:
                    wrong.append("case %s was answered 200 but does not match the request schema: %s" % (name, errs[:3]))
        check(not wrong, "%d cases disagree with the document:\n  %s" % (len(wrong), "\n  ".join(wrong)))
        check({200, 400, 413, 422} <= seen, "cases reached only %r" % sorted(seen))
        status, raw, hdrs = srv.request("GET", "/docs")
        page = raw.decode()
        check(status == 200 and hdrs["content-type"].startswith("text/html"), "docs %d %r" % (status, hdrs))
        check('fetch("openapi.json")' in page and "<script src" not in page and "<link" not in page
              and not re.search(r"""(src|href)=["']?(https?:)?//""", page), "docs page is not self-contained")
        status, _, hdrs = srv.request("GET", "/docs/")
        check(status == 307 and hdrs["location"].endswith("/docs"), "/docs/ %d %r" % (status, hdrs))
    with Server(LAYA_JEV_STRICT="1") as srv:
        for path in ("/v1/systemone", "/v1/systemone/batch"):
            for ex in doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["examples"].values():
                check_answer(srv, doc, "POST", path, json.dumps(ex["value"]).encode(), want=200)
    with Server(LAYA_API_KEY="k") as srv:
        for path in ("/openapi.json", "/docs"):
            status, _, _ = srv.request("GET", path, headers={"Authorization": "Bearer k"})
            check(status == 404, "%s with a key: %d" % (path, status))
        check_answer(srv, doc, "POST", "/v1/systemone", json.dumps(SIMPLE).encode(), want=401)
        check_answer(srv, doc, "GET", "/metrics", want=401)


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


@test
def test_metrics():
    """/metrics parses under a strict reading of the Prometheus text format (tests/serve/prom_text.py,
    itself checked to refuse malformed text); per-checkpoint requests, passes, states and input
    tokens equal what the answers say; process metrics (Prometheus client names) agree with /proc;
    laya_build_info and laya_checkpoint_info name this build and the loaded checkpoints."""
    import prom_text
    for bad in ('a 1\na 2\n', 'a{x="1"} 1', '# TYPE a counter\na 1\n# TYPE a counter\n', 'a 1\nb 1\na 2\n',
                'a{x="\\q"} 1\n', 'a{x="1",x="2"} 1\n', 'a x\n', '# TYPE h histogram\nh_bucket{le="1"} 2\n'
                'h_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n',
                '# TYPE c counter\nc -1\n', '1a 1\n'):
        try:
            prom_text.parse(bad)
        except ValueError:
            continue
        raise AssertionError("the parser accepted %r" % bad)
    version, compat = re.match(r"laya-serve (\S+) \(Laya (\S+) compatible\)",
                               subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout).groups()
    t_start = time.time()
    with Server(LAYA_PRECISION=None, LAYA_DEVICE=None) as srv:
        tokens = {"english": 0, "multilingual": 0}
        for i in range(3):
            status, raw, _ = srv.post("/v1/systemone", {"state": "refund please %d" % i, "questions": cases.QS, "model": "english"})
            check(status == 200, "english %d" % status)
            tokens["english"] += json.loads(raw)["usage"]["input_tokens"]
        status, raw, _ = srv.post("/v1/systemone/batch", {"states": ["eins", "zwei"], "questions": {"refund": cases.NOUL},
                                                          "model": "multilingual"})
        check(status == 200, "batch %d" % status)
        tokens["multilingual"] = json.loads(raw)["total_usage"]["input_tokens"]
        status, raw, _ = srv.post("/v1/systemone", {"state": "x", "questions": {"q": {"type": "bogus"}}, "model": "english"})
        check(status >= 400, "a refused request %d" % status)
        health = json.loads(srv.request("GET", "/health")[1])
        status, raw, hdrs = srv.request("GET", "/metrics")
        check(hdrs["content-type"] == "text/plain; version=0.0.4; charset=utf-8", "content type %r" % hdrs["content-type"])
        pid = srv.proc.pid
        st = proc_status(pid)
        fds = len(os.listdir("/proc/%d/fd" % pid))
        with open("/proc/%d/limits" % pid) as f:
            max_files = int(next(l for l in f if l.startswith("Max open files")).split()[3])
        t_now = time.time()
    fams = prom_text.parse(raw.decode())

    def one(name, **labels):
        fam = fams.get(name)
        check(fam is not None, "no metric family %s" % name)
        got = [v for n, l, v in fam["samples"] if n == name and all(l.get(k) == v2 for k, v2 in labels.items())]
        check(len(got) == 1, "%s%r: %d samples" % (name, labels, len(got)))
        return got[0]

    for name, kind in (("laya_checkpoint_requests_total", "counter"), ("laya_checkpoint_passes_total", "counter"),
                       ("laya_checkpoint_states_total", "counter"), ("laya_checkpoint_input_tokens_total", "counter"),
                       ("laya_checkpoint_forward_seconds_total", "counter"), ("process_cpu_seconds_total", "counter"),
                       ("process_resident_memory_bytes", "gauge"), ("process_open_fds", "gauge"),
                       ("process_max_fds", "gauge"), ("process_threads", "gauge"),
                       ("process_start_time_seconds", "gauge"), ("laya_build_info", "gauge"),
                       ("laya_checkpoint_info", "gauge"), ("laya_request_duration_seconds", "histogram")):
        check(fams.get(name, {}).get("type") == kind and fams[name]["help"], "%s: %r" % (name, fams.get(name)))
    check(one("laya_checkpoint_requests_total", model="english", status="200") == 3, "english requests")
    check(one("laya_checkpoint_requests_total", model="multilingual", status="200") == 1, "multilingual requests")
    check(one("laya_checkpoint_states_total", model="english") == 3, "english states")
    check(one("laya_checkpoint_states_total", model="multilingual") == 2, "multilingual states")
    for m in ("english", "multilingual"):
        check(one("laya_checkpoint_input_tokens_total", model=m) == tokens[m], "%s tokens" % m)
        check(one("laya_checkpoint_forward_seconds_total", model=m) > 0, "%s forward time" % m)
    check(1 <= one("laya_checkpoint_passes_total", model="english") <= 3, "english passes")
    check(one("laya_checkpoint_pass_requests_total", model="english") == 3, "english pass requests")
    check(one("laya_checkpoint_passes_total", model="multilingual") == 1, "multilingual passes")
    check(one("laya_requests_total", route="/v1/systemone", status="200") == 3, "route counter")
    rss = one("process_resident_memory_bytes")
    vmrss = int(st["VmRSS"].split()[0]) * 1024
    check(0.8 * vmrss <= rss <= 1.25 * vmrss, "RSS %d vs /proc %d" % (rss, vmrss))
    check(abs(one("process_open_fds") - fds) <= 3, "fds %d vs /proc %d" % (one("process_open_fds"), fds))
    check(abs(one("process_threads") - int(st["Threads"])) <= 2, "threads %d vs %s" % (one("process_threads"), st["Threads"]))
    check(one("process_max_fds") == max_files, "max fds %d vs %d" % (one("process_max_fds"), max_files))
    check(t_start - 2 <= one("process_start_time_seconds") <= t_now, "start time %f not in [%f, %f]" % (one("process_start_time_seconds"), t_start, t_now))
    check(0 < one("laya_uptime_seconds") <= t_now - t_start + 1, "uptime")
    check(0 < one("process_cpu_seconds_total") <= (t_now - t_start + 1) * os.cpu_count(), "cpu seconds")
    check(one("process_virtual_memory_bytes") >= rss, "virtual memory")
    build = [l for n, l, v in fams["laya_build_info"]["samples"] if v == 1]
    check(len(build) == 1 and build[0]["version"] == version and build[0]["compat_version"] == compat and
          build[0]["precision"] == "default" and build[0]["backend"] == "cpu" and build[0]["cpu_simd"],
          "build info %r" % build)
    infos = {l["model"]: l for n, l, v in fams["laya_checkpoint_info"]["samples"]}
    check(set(infos) == set(health["loaded"]) and one("laya_checkpoints_loaded") == len(health["loaded"]), "checkpoint info %r" % infos)
    for m, l in infos.items():
        check(l["precision"] == health["checkpoint_precisions"][m] and l["device"] == health["checkpoint_devices"][m]
              and l["backend"], "checkpoint info %s %r vs %r" % (m, l, health))


@test
def test_rootpath():
    """LAYA_ROOT_PATH as Python laya-serve (FastAPI's root_path) treats it, replayed from
    fixtures/python_root_path.json (record_root_path.py): paths under the prefix and without it
    answer, the prefix alone and look-alikes do not, redirects keep the prefix, /openapi.json names
    it in servers; /ready and /metrics (ours only) answer under it too."""
    with open(os.path.join(HERE, "fixtures", "python_root_path.json")) as f:
        rec = json.load(f)
    with Server(LAYA_ROOT_PATH=rec["root_path"]) as srv:
        check(any(re.search(r"listening on http://127\.0\.0\.1:\d+/laya ", l) for l in srv.lines), "listening line")
        for r in rec["requests"]:
            path, body = r["path"], None
            if r["method"] == "POST":  # the bodies record_root_path.py sent
                body = json.dumps({"states": ["a", "b"], "questions": {"refund": cases.NOUL}} if "batch" in path
                                  else {"state": "refund please", "questions": {"refund": cases.NOUL}})
            status, raw, hdrs = srv.request(r["method"], path, body.encode() if body else None, {"Host": "example:81"})
            want = r["status"]
            if path in ("/ready", "/laya/ready"):
                want = 200  # ours only (Laya has no /ready)
            check(status == want and hdrs.get("location") == r["location"],
                  "%s %s: %d %r, Laya %d %r" % (r["method"], path, status, hdrs.get("location"), r["status"], r["location"]))
            if "servers" in r:
                check(json.loads(raw).get("servers") == r["servers"], "servers %r" % raw[:200])
        for path in ("/laya/ready", "/laya/metrics", "/metrics"):
            check(srv.request("GET", path)[0] == 200, path)
    with Server() as srv:
        status, raw, _ = srv.request("GET", "/openapi.json")
        check("servers" not in json.loads(raw), "servers without a root path")
        check(srv.request("GET", "/laya/health")[0] == 404, "no prefix without LAYA_ROOT_PATH")
    # other spellings, as Laya passes them to FastAPI verbatim (fixtures/python_root_path_forms.json,
    # record_root_path.py forms): "/laya/" and "laya" serve nothing under /laya, "/" lets "//x"
    # reach /x, blanks count, servers drops trailing slashes (none when nothing is left)
    with open(os.path.join(HERE, "fixtures", "python_root_path_forms.json")) as f:
        forms = json.load(f)["forms"]
    check(len(forms) >= 10, "forms %d" % len(forms))
    for form in forms:
        with Server(LAYA_ROOT_PATH=form["root_path"]) as srv:
            for r in form["requests"]:
                path, body = r["path"], None
                if r["method"] == "POST":
                    body = json.dumps({"state": "refund please", "questions": {"refund": cases.NOUL}}).encode()
                status, raw, hdrs = srv.request(r["method"], path, body, {"Host": "example:81"})
                what = "LAYA_ROOT_PATH=%r %s %s: %d %r, Laya %d %r" % (form["root_path"], r["method"], path, status,
                                                                       hdrs.get("location"), r["status"], r["location"])
                check(status == r["status"] and hdrs.get("location") == r["location"], what)
                if "servers" in r:
                    check(json.loads(raw).get("servers") == r["servers"], "%s: servers %r" % (what, raw[:200]))


def replay_mcp(calls, res, rec, subst, width=600):
    """The MCP side of replay_recorded: compare laya-mcp's replies (res, mcp_remote_cases.call_all's)
    to calls with what Laya's MCP server answered (rec: call name -> {"isError", "text"}), each text
    first rewritten by subst ((this run's text, the fixture's placeholder) pairs): the same isError,
    and for an error the same code and value. Returns (name, tool, text, ours, Laya's, what) of each
    successful reply, parsed, for the caller's own comparison of its tool."""
    import mcp_remote_cases as mrc
    ok = []
    for (name, _, tool, _), (is_error, text) in zip(calls, res):
        for here, there in subst:
            text = text.replace(here, there)
        want = rec[name]
        got_v, want_v = mrc.parse_text(text), mrc.parse_text(want["text"])
        what = "%s: %s\n  Laya: %s" % (name, text[:width], want["text"][:width])
        check(is_error == want["isError"], what)
        if is_error:
            check(text.split(":")[0] == want["text"].split(":")[0] and got_v == want_v, what)
        else:
            ok.append((name, tool, text, got_v, want_v, what))
    return ok


@test
def test_mcp_remote():
    """laya-mcp with LAYA_BASE_URL answers from a real laya-serve, loading nothing itself, exactly as
    Laya 0.4.15's MCP server does in remote mode against the same server (fixtures/
    python_mcp_remote.json, record_mcp_remote.py): the server's answers and routing, status from its
    /health, HTTP errors as Laya's codes (invalid_request, unauthorized, unreachable), local
    validation first, Laya's construction error for a URL it refuses; serverInfo is laya-mcp's own."""
    import mcp_remote_cases as mrc
    mcp = os.path.join(os.path.dirname(BIN), "laya-mcp")
    with open(os.path.join(HERE, "fixtures", "python_mcp_remote.json")) as f:
        rec = {c["name"]: c for c in json.load(f)["calls"]}
    own = subprocess.run([mcp, "--version"], capture_output=True, text=True).stdout.split()
    closed = mrc.free_port()
    with Server(LAYA_API_KEY=mrc.KEY, LAYA_BACKEND="cpu-ref") as srv:
        for run in ("ok", "wrong_key", "unreachable", "bad_url"):
            calls = [c for c in mrc.CALLS if c[1] == run]
            env = dict(os.environ, LAYA_THREADS="1", **mrc.run_env(run, srv.port, closed))
            env.pop("LAYA_EXTRA_MODELS", None)  # nothing to load here: a local load would fail
            info, res, err = mrc.call_all([mcp], env, calls)
            check(info["serverInfo"]["name"] == "laya-mcp" and info["serverInfo"]["version"] == own[1],
                  "serverInfo %r" % info["serverInfo"])
            check("remote mode: answering from laya-serve at " in err and all(
                l.startswith("laya-mcp: ") for l in err.splitlines()), "stderr %r" % err[-500:])
            subst = (("127.0.0.1:%d" % srv.port, "{BASE}"), ("127.0.0.1:%d" % closed, "{CLOSED}"), (CKPT, "{CKPT}"))
            for name, tool, text, got_v, want_v, what in replay_mcp(calls, res, rec, subst):
                if tool == "laya_status":
                    for k in ("mode", "base_url", "router_preload", "router_ready", "server", "server_error", "loaded",
                              "device", "device_is_preference", "checkpoint_devices"):
                        check(got_v.get(k) == want_v.get(k), "%s: %s differs\n%s" % (name, k, what))
                    check(got_v["package_versions"]["laya_compat"] == want_v["package_versions"]["laya"], what)
                elif tool == "laya_predict_batch":
                    check(set(got_v) == set(want_v) and got_v["model_counts"] == want_v["model_counts"], what)
                    for g, w in zip(got_v["requests"], want_v["requests"]):
                        check(g == w, "%s: a request differs\n  ours %r\n  Laya %r" % (name, g, w))
                    check(len(got_v["requests"]) == len(want_v["requests"]), what)
                else:
                    got_v.pop("latency_ms", None)
                    want_v.pop("latency_ms", None)
                    check(got_v == want_v, what)
        # the decisions reached the server (laya-mcp answered them from there)
        m = srv.metrics({"Authorization": "Bearer " + mrc.KEY})
        check(m.get('laya_requests_total{route="/v1/systemone",status="200"}', 0) >= 3 and
              m.get('laya_requests_total{route="/v1/systemone/batch",status="200"}', 0) >= 1 and
              m.get('laya_requests_total{route="/v1/systemone",status="422"}', 0) == 1 and
              m.get('laya_requests_total{route="/v1/systemone",status="401"}', 0) == 1, "server saw %r" %
              {k: v for k, v in m.items() if k.startswith("laya_requests_total")})
    # LAYA_REMOTE_TIMEOUT: a server that accepts and never answers (Laya's message, "%.0fs")
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    env = dict(os.environ, LAYA_BASE_URL="http://127.0.0.1:%d" % lst.getsockname()[1], LAYA_REMOTE_TIMEOUT="1")
    env.pop("LAYA_EXTRA_MODELS", None)
    t0 = time.time()
    _, res, _ = mrc.call_all([mcp], env, [("t", "ok", "laya_predict", {"state": mrc.ST, "questions": {"r": cases.NOUL}})])
    lst.close()
    check(res[0][0] and mrc.parse_text(res[0][1]) == {"error": "timeout", "message": "laya-serve did not answer within 1s"}
          and time.time() - t0 < 15, "timeout %r after %.1fs" % (res, time.time() - t0))
    # laya_decide: the schema planned here, the questions asked of the server, its answers projected
    # (fixtures/python_mcp_remote_decide.json, record_mcp_remote.py decide); errors before any request
    # (bad schema, empty state) and the HTTP ones as Laya's codes
    with open(os.path.join(HERE, "fixtures", "python_mcp_remote_decide.json")) as f:
        drec = {c["name"]: c for c in json.load(f)["calls"]}
    check(set(drec) == {c[0] for c in mrc.DECIDE_CALLS}, "decide fixture %r" % sorted(drec))
    with Server(LAYA_API_KEY=mrc.KEY, LAYA_BACKEND="cpu-ref") as srv:
        for run in ("ok", "wrong_key", "unreachable", "bad_url"):
            calls = [c for c in mrc.DECIDE_CALLS if c[1] == run]
            env = dict(os.environ, LAYA_THREADS="1", **mrc.run_env(run, srv.port, closed))
            env.pop("LAYA_EXTRA_MODELS", None)
            _, res, _ = mrc.call_all([mcp], env, calls)
            subst = (("127.0.0.1:%d" % srv.port, "{BASE}"), ("127.0.0.1:%d" % closed, "{CLOSED}"), (CKPT, "{CKPT}"))
            for _, _, _, got_v, want_v, what in replay_mcp(calls, res, drec, subst, width=900):
                check(isinstance(got_v.pop("latency_ms", None), float) and want_v.pop("latency_ms", None) is not None
                      and got_v == want_v and list(got_v) == list(want_v), what)
        m = srv.metrics({"Authorization": "Bearer " + mrc.KEY})
        n_ok = sum(1 for c in mrc.DECIDE_CALLS if c[1] == "ok" and not drec[c[0]]["isError"])
        check(m.get('laya_requests_total{route="/v1/systemone",status="200"}', 0) == n_ok and
              m.get('laya_requests_total{route="/v1/systemone",status="401"}', 0) == 1, "decide: server saw %r" %
              {k: v for k, v in m.items() if k.startswith("laya_requests_total")})


@test
def test_mcp_remote_tournament():
    """laya-mcp with LAYA_BASE_URL forwards choices of any size as Laya's MCP server does, so the
    server's caps decide: a laya-serve with LAYA_TOURNAMENT_GROUP answers 120 and 255 options by
    elimination (laya_predict and laya_predict_batch), and refuses 256, 600 options in all, 65
    questions or a 60,000-character state with its own words (invalid_request); one without refuses
    120 the same way and answers 100. Local checks still come first, and laya_shortlist is refused
    before any (unsupported_remote). Every call as Laya 0.4.15's MCP server answered it against the
    same servers (fixtures/python_mcp_remote_tournament.json, record_mcp_remote.py tournament)."""
    import mcp_remote_cases as mrc
    mcp = os.path.join(os.path.dirname(BIN), "laya-mcp")
    with open(os.path.join(HERE, "fixtures", "python_mcp_remote_tournament.json")) as f:
        fx = json.load(f)
    check(fx["group"] == mrc.TOURNAMENT_GROUP, "the fixture was recorded with another group")
    rec = {c["name"]: c for c in fx["calls"]}
    check(set(rec) == {c[0] for c in mrc.TOURNAMENT_CALLS}, "fixture calls %r" % sorted(rec))
    narrowed = 0
    with Server(LAYA_API_KEY=mrc.KEY, LAYA_BACKEND="cpu-ref", LAYA_TOURNAMENT_GROUP=mrc.TOURNAMENT_GROUP) as ok, \
            Server(LAYA_API_KEY=mrc.KEY, LAYA_BACKEND="cpu-ref") as plain:
        for run, srv in (("ok", ok), ("plain", plain)):
            calls = [c for c in mrc.TOURNAMENT_CALLS if c[1] == run]
            env = dict(os.environ, LAYA_THREADS="1", LAYA_BASE_URL="127.0.0.1:%d" % srv.port, LAYA_API_KEY=mrc.KEY)
            env.pop("LAYA_EXTRA_MODELS", None)
            _, res, _ = mrc.call_all([mcp], env, calls)
            for name, tool, text, got_v, want_v, what in replay_mcp(calls, res, rec, (("127.0.0.1:%d" % srv.port, "{BASE}"),
                                                                                     (CKPT, "{CKPT}"))):
                narrowed += text.count('"x_tournament"')
                if tool == "laya_predict_batch":
                    check(got_v["model_counts"] == want_v["model_counts"] and
                          len(got_v["requests"]) == len(want_v["requests"]), what)
                    for g, w in zip(got_v["requests"], want_v["requests"]):
                        why = same(g, w)
                        check(why is None, "%s: a request differs: %s" % (name, why))
                else:
                    got_v.pop("latency_ms", None)
                    want_v.pop("latency_ms", None)
                    why = same(got_v, want_v)
                    check(why is None, "%s: %s" % (name, why))
        check(narrowed >= 4, "only %d answers narrowed by the server" % narrowed)
        m = plain.metrics({"Authorization": "Bearer " + mrc.KEY})
        check(m.get('laya_requests_total{route="/v1/systemone",status="413"}', 0) == 1, "plain server saw %r" %
              {k: v for k, v in m.items() if k.startswith("laya_requests_total")})


def run_client_script(env_var, script):
    """A third-party client's check script, run by the Python named in env_var (one that has that
    client installed), against a server that requires a key."""
    py = os.environ[env_var]
    with Server(LAYA_API_KEY="client-key", LAYA_MAX_CONCURRENT="64", LAYA_BACKEND="cpu-ref") as srv:
        p = subprocess.run([py, os.path.join(HERE, script), "http://127.0.0.1:%d" % srv.port, "client-key"],
                           capture_output=True, text=True, timeout=240)
        print(p.stdout)
        check(p.returncode == 0, "%s failed:\n" % script + p.stdout[-2000:] + p.stderr[-2000:])


def test_clients():
    """Only when asked by name: needs a Python with typesafe-sdk and jevcompat (LAYA_SERVE_CLIENT_PYTHON)."""
    run_client_script("LAYA_SERVE_CLIENT_PYTHON", "clients_check.py")


def test_jevclient():
    """Only when asked by name: needs a Python >= 3.12 with jevclient (LAYA_JEVCLIENT_PYTHON)."""
    run_client_script("LAYA_JEVCLIENT_PYTHON", "jevclient_check.py")


def test_api_fuzz():
    """Only when asked by name: schemathesis over /openapi.json and prometheus_client's parser over
    /metrics (api_fuzz_check.py), by the Python in LAYA_SERVE_CLIENT_PYTHON (the pinned client venv).
    No key: as Laya's, a server with one serves no /openapi.json."""
    py = os.environ["LAYA_SERVE_CLIENT_PYTHON"]
    with Server(LAYA_MAX_CONCURRENT="64") as srv:
        p = subprocess.run([py, os.path.join(HERE, "api_fuzz_check.py"), "http://127.0.0.1:%d" % srv.port],
                           capture_output=True, text=True, timeout=1500)
        print(p.stdout[-4000:])
        check(p.returncode == 0, "api_fuzz_check.py failed:\n" + p.stdout[-3000:] + p.stderr[-2000:])
        check(srv.proc.poll() is None, "the server exited during the fuzzing")


def no_jev(body):
    """A /v1/systemone answer without the x_jev_* fields the server adds (Agent.predict has none)."""
    if isinstance(body, dict):
        return {k: no_jev(v) for k, v in body.items() if not k.startswith("x_jev_")}
    return body


@test
def test_calibration():
    """LAYA_CALIBRATION: every checkpoint the server opens applies that calibration file (laya
    calibrate --out, Laya's save_calibration). Answers equal Python Laya's Agent.predict after
    load_calibration of the same file (tests/fixtures/surfaces/cli_calibration.json, recorded by
    tools/ref from laya 0.4.15 on the tiny checkpoint), and without it the plain answers; a file
    that cannot be read, or is not a calibration, stops a preloading server with a message naming the
    file or what is wrong in it."""
    fx = json.load(open(os.path.join(HERE, "..", "fixtures", "surfaces", "cli_calibration.json")))
    cal = os.path.join(EMPTY_HF_HOME, "calibration.json")
    with open(cal, "w") as f:
        json.dump(fx["calibration"], f)
    for env, want in ((dict(LAYA_CALIBRATION=cal), fx["calibrated"]), (dict(LAYA_CALIBRATION=None), fx["plain"])):
        with Server(LAYA_BACKEND="cpu-ref", **env) as srv:
            for state, expect in zip(fx["states"], want):
                status, raw, _ = srv.post("/v1/systemone", {"state": state, "questions": fx["questions"],
                                                            "model": "english"})
                check(status == 200, "calibration %s: status %d %r" % (env, status, raw[:200]))
                got = no_jev(json.loads(raw))
                routing = got.pop("routing", None)  # the server's addition: which checkpoint answered
                check(isinstance(routing, dict) and routing.get("model") == "english", "routing %r" % routing)
                why = same(got, expect)
                check(why is None, "LAYA_CALIBRATION=%s, state %r: %s" % (env["LAYA_CALIBRATION"], state, why))
    check(fx["calibrated"] != fx["plain"], "the fixture's calibration changes the answers")
    broken = os.path.join(EMPTY_HF_HOME, "broken.json")
    with open(broken, "w") as f:
        json.dump({"version": 2, "temperature": "x"}, f)
    for bad, what in ((os.path.join(EMPTY_HF_HOME, "missing.json"), "missing.json: cannot open"),
                      (broken, "calibration JSON must contain temperature")):
        e = dict(os.environ, LAYA_EXTRA_MODELS=extra_models(), LAYA_PRELOAD="1", LAYA_MODELS="english",
                 LAYA_CALIBRATION=bad, LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1")
        p = subprocess.run([BIN], env=e, capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and what in p.stderr, "bad LAYA_CALIBRATION %s: rc %d %r" % (bad, p.returncode, p.stderr[-300:]))


@test
def test_tournament():
    """LAYA_TOURNAMENT_GROUP: a choice over the group is answered by elimination in groups on both
    decision routes, in Laya's serve shape (probabilities over every option, 0.0 for the eliminated,
    x_tournament, input_tokens summed over every pass), a choice may have 255 options, and one at or
    under the group (or kept in one pass by Laya's plan) is answered as without it. Every response
    equals what Python laya-serve answered to the same request (fixtures/python_tournament.json,
    record_tournament.py); only the timing headers' values differ. A bad value stops the server,
    naming the variable."""
    import tournament_cases
    rec = load_fixture("python_tournament.json")
    check(rec["group"] == tournament_cases.GROUP, "the fixture was recorded with another group")
    by_name = {name: (path, body, {}) for name, path, body, _ in tournament_cases.cases()}
    # the sanitizer build (CMake sets this there) answers only the choices of at most this many
    # options: the 120- and 255-option ones take minutes on its fp32 reference backend
    most = int(os.environ.get("LAYA_TEST_TOURNAMENT_MAX_OPTIONS", "0"))

    def widest(body):
        return max([len(q.get("criteria") or ()) for q in body["questions"].values()] or [0])
    problems = []
    narrowed = 0
    for strict in (False, True):
        recorded = [r for r in rec["cases"] if r["strict"] == strict and
                    not (most and r["status"] == 200 and widest(by_name[r["name"]][1]) > most)]
        with Server(LAYA_TOURNAMENT_GROUP=tournament_cases.GROUP, LAYA_BACKEND="cpu-ref",
                    LAYA_JEV_STRICT="1" if strict else "0") as srv:
            raws = replay_recorded(srv, recorded, lambda r: by_name[r["name"]], problems,
                                   lambda r: r["name"] + (" (strict)" if r["strict"] else ""))
            narrowed += sum(raw.count(b'"x_tournament"') for raw in raws)
    check(len(rec["cases"]) >= 15, "too few recorded cases")
    check(narrowed >= (6 if most else 8), "only %d narrowed answers: the fixture does not exercise the tournament" % narrowed)
    check(not problems, "%d differ from Python laya-serve:\n  %s" % (len(problems), "\n  ".join(problems)))
    # without the variable, the same large choice is refused by the one-pass cap (100); the
    # /openapi.json each server serves states its own cap
    def criteria_caps(srv):
        status, raw, _ = srv.request("GET", "/openapi.json")
        check(status == 200, "/openapi.json: %d" % status)
        found = []

        def walk(v):
            if isinstance(v, dict):
                if "criteria" in v and isinstance(v["criteria"], dict) and "anyOf" in v["criteria"]:
                    found.extend([a.get("maxProperties", a.get("maxItems")) for a in v["criteria"]["anyOf"]])
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        walk(json.loads(raw))
        return found
    with Server(LAYA_TOURNAMENT_GROUP=tournament_cases.GROUP) as srv:
        check(criteria_caps(srv) == [255, 255], "openapi caps with the group: %r" % criteria_caps(srv))
    with Server(LAYA_BACKEND="cpu-ref") as srv:
        status, raw, _ = srv.post(*by_name["order_dropped_120"])
        check(status == 413 and b"(120 > 100)" in raw, "no LAYA_TOURNAMENT_GROUP: %d %r" % (status, raw[:200]))
        check(criteria_caps(srv) == [100, 100], "openapi caps without the group: %r" % criteria_caps(srv))
    for bad in ("1", "101", "eight", "-3"):
        start_fails_env({"LAYA_TOURNAMENT_GROUP": bad, "LAYA_EXTRA_MODELS": extra_models(), "LAYA_MODELS": "english"},
                        "LAYA_TOURNAMENT_GROUP must be 0 (off) or an integer from 2 to 100, got '%s'" % bad)


@test
def test_tournament_workflow():
    """LAYA_AUTO_TASK with LAYA_TOURNAMENT_GROUP: every pass of a tournament is routed on its own
    questions, as Laya's server routes each predict of it. With a typed-decisions workflow's ids, an
    English state's rounds (ids "0", "1", ...: no workflow) run on english and its final pass on
    typed-decisions (here the multilingual tiny checkpoint), so the finalists are english's, the
    answers typed-decisions', and routing the final pass's. Every response equals Python
    laya-serve's (fixtures/python_tournament_workflow.json, record_tournament.py workflow)."""
    import tournament_cases
    rec = load_fixture("python_tournament_workflow.json")
    check(rec["group"] == tournament_cases.WORKFLOW_GROUP, "the fixture was recorded with another group")
    by_name = {name: (path, body, {}) for name, path, body in tournament_cases.workflow_cases()}
    check(sorted(by_name) == sorted(r["name"] for r in rec["cases"]), "the fixture's cases are not workflow_cases()")
    # the fixture tells the two routings apart: an English state's finalists on english (pinned)
    # differ from those on the checkpoint its final pass routes to
    answers = {r["name"]: (r["body"].get("answers") or {}).get("action", {}) for r in rec["cases"]}
    check(answers["workflow_en"]["x_tournament"]["finalists"] == answers["workflow_pinned"]["x_tournament"]["finalists"]
          and answers["workflow_en"]["x_tournament"]["finalists"] != answers["workflow_task"]["x_tournament"]["finalists"],
          "the fixture does not tell per-pass routing from routing once")
    # the sanitizer build (CMake sets this there) leaves out the 40-option case (two rounds), as
    # http_tournament leaves out its widest: minutes on its fp32 reference backend
    most = int(os.environ.get("LAYA_TEST_TOURNAMENT_MAX_OPTIONS", "0"))
    recorded = [r for r in rec["cases"]
                if not most or max(len(q.get("criteria") or ()) for q in by_name[r["name"]][1]["questions"].values()) <= most]
    check(len(recorded) >= 6, "only %d cases replayed" % len(recorded))
    models = tournament_cases.workflow_models(CKPT)
    problems = []
    with Server(LAYA_TOURNAMENT_GROUP=tournament_cases.WORKFLOW_GROUP, LAYA_AUTO_TASK="1", LAYA_BACKEND="cpu-ref",
                LAYA_MODELS=",".join(models), LAYA_EXTRA_MODELS=json.dumps(models)) as srv:
        replay_recorded(srv, recorded, lambda r: by_name[r["name"]], problems)
    check(not problems, "%d differ from Python laya-serve:\n  %s" % (len(problems), "\n  ".join(problems)))


@test
def test_tournament_cancel():
    """A client that leaves while its tournament plays stops it at the next pass: the rounds still
    to play are not computed (the server logs after how many passes it stopped, counts the job in
    laya_cancelled_jobs_total, and answers the next request at once). 255 options in groups of 2 take
    7 rounds and a final pass; the client closes during the first, the largest."""
    body = {"state": "where is my parcel? it was due last week and nobody answers " * 8,
            "questions": {"q": {"type": "choice", "instructions": "Which label fits?",
                                "criteria": ["label %d" % i for i in range(255)]}}}
    raw = json.dumps(body).encode()
    with Server(LAYA_TOURNAMENT_GROUP="2") as srv:
        t0 = time.time()
        status, out, _ = srv.post("/v1/systemone", body, timeout=600)
        full = time.time() - t0
        answer = json.loads(out)["answers"]["q"] if status == 200 else {}
        check(status == 200 and answer.get("x_tournament", {}).get("rounds") == 7,
              "the whole tournament: %d %r" % (status, out[:300]))
        stopped = None
        for frac in (0.1, 0.2, 0.35):
            seen = len(srv.lines)
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(raw_request("POST", "/v1/systemone", raw))
            time.sleep(full * frac)  # inside the first round (about half of the work)
            s.close()
            deadline = time.time() + full + 60
            while time.time() < deadline and stopped is None:
                for line in srv.lines[seen:]:
                    m = re.search(r"tournament stopped after (\d+) pass(es)?: client gone", line)
                    if m:
                        stopped = int(m.group(1))
                if wait_metric(srv, "laya_inflight_requests", lambda v: v == 0, 0.05) == 0 and stopped is None:
                    time.sleep(0.1)
                    if not any("tournament stopped" in l for l in srv.lines[seen:]):
                        break  # skipped while queued, or answered: try closing later
            if stopped is not None:
                break
        check(stopped is not None and 1 <= stopped < 8,
              "no tournament stopped between its passes (%r): %r" % (stopped, srv.lines[-5:]))
        check(srv.metrics().get("laya_cancelled_jobs_total", 0) >= 1, "not counted as cancelled")
        t0 = time.time()
        status, _, _ = srv.post("/v1/systemone", {"state": "refund please", "questions": {"r": cases.NOUL}})
        check(status == 200, "the next request: %d" % status)
        print("  full tournament %.2fs; stopped after %d of 8 passes" % (full, stopped or -1))


if "clients" in ONLY:
    test(test_clients)
if "api_fuzz" in ONLY:
    test(test_api_fuzz)
if "jevclient" in ONLY:
    test(test_jevclient)

print("%d passed, %d failed" % (len(PASSED), len(FAILED)))
sys.exit(1 if FAILED else 0)
