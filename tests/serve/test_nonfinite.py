"""laya-serve never sends a body that is not JSON (issue 18): a checkpoint with NaN weights makes
the engine answer NaN (as Python's json.dumps writes it); the server answers 500 with a JSON body
instead of passing bare NaN on, as Python's laya-serve fails such a response with a 500. And a
checkpoint whose max_len is 10^9 (which stopped laya-serve with an "out of memory" naming neither
file nor field) is refused at load with both named.

    python3 test_nonfinite.py LAYA_SERVE_BINARY CHECKPOINT_DIR   (tests/fixtures/ckpt/modernbert-tiny)
"""
import http.client
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

BIN, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def strict_json(raw):
    """json.loads that refuses NaN / Infinity, as any non-Python client does."""
    def refuse(tok):
        raise ValueError("non-JSON constant %s" % tok)
    return json.loads(raw, parse_constant=refuse)


def nan_checkpoint(dst):
    shutil.copytree(SRC, dst)
    path = os.path.join(dst, "model.safetensors")
    data = bytearray(open(path, "rb").read())
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    info = header["scorer.3.bias"]
    off = 8 + hlen + info["data_offsets"][0]
    nan = {"F32": struct.pack("<I", 0x7fc00000), "BF16": struct.pack("<H", 0x7fc0),
           "F16": struct.pack("<H", 0x7e00)}[info["dtype"]]
    data[off:off + len(nan)] = nan
    open(path, "wb").write(bytes(data))


def serve(ckpt, body):
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1",
               LAYA_EXTRA_MODELS=json.dumps({"english": ckpt}), LAYA_MODELS="english", LAYA_THREADS="1",
               LAYA_BACKEND="cpu-ref")
    proc = subprocess.Popen([BIN], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines, port = [], None
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    threading.Thread(target=lambda: [lines.append(x) for x in proc.stderr], daemon=True).start()
    try:
        if port is None:
            raise RuntimeError("laya-serve did not start: %s" % "".join(lines))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", "/v1/systemone", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        out = r.status, r.read()
        conn.close()
        return out, lines
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def load_log(ckpt, seconds=60):
    """laya-serve's stderr until it exits, logs a preload failure, or `seconds` pass."""
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT="0", LAYA_SERVE_ALLOW_PORT_0="1",
               LAYA_EXTRA_MODELS=json.dumps({"english": ckpt}), LAYA_MODELS="english", LAYA_THREADS="1")
    proc = subprocess.Popen([BIN], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    done = threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if "preload failed" in line or "max_len" in line:
                done.set()
        done.set()
    threading.Thread(target=read, daemon=True).start()
    done.wait(seconds)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return "".join(lines)


def main():
    body = {"state": "I was charged twice, please refund me.",
            "questions": {"team": {"type": "choice", "instructions": "Which team?",
                                   "criteria": {"billing": "Billing", "tech": "Tech"}},
                          "refund": {"type": "noul", "instructions": "Refund?"}}}
    with tempfile.TemporaryDirectory() as tmp:
        # the untouched checkpoint answers 200 with strict JSON (the check below can tell)
        (status, raw), _ = serve(SRC, body)
        check(status == 200, "clean checkpoint answers 200: %d %r" % (status, raw[:200]))
        try:
            strict_json(raw)
        except ValueError as e:
            check(False, "clean answer is strict JSON: %s" % e)
        ck = os.path.join(tmp, "nan")
        nan_checkpoint(ck)
        (status, raw), lines = serve(ck, body)
        log = "".join(lines)
        check(b"NaN" not in raw and b"Infinity" not in raw, "no bare NaN sent: %r" % raw[:300])
        try:
            doc = strict_json(raw)
            check(isinstance(doc, dict) and "detail" in doc, "a JSON error body: %r" % raw[:300])
        except ValueError as e:
            check(False, "the body is JSON: %s: %r" % (e, raw[:300]))
        check(status == 500, "a NaN answer is a 500, as in Python's laya-serve: %d" % status)
        # (the load warning naming the tensor is in the model's info; tests/model/test_ckpt_bombs)
        check("NaN or Infinity" in log, "the log says why the answer failed: %s" % log[-2000:])
        # a max_len bomb: refused at load, the file and the field named
        bomb = os.path.join(tmp, "bomb")
        shutil.copytree(SRC, bomb)
        cfg_path = os.path.join(bomb, "rl_agent_config.json")
        cfg = json.load(open(cfg_path))
        cfg["max_len"] = 10 ** 9
        json.dump(cfg, open(cfg_path, "w"))
        log = load_log(bomb)
        check("rl_agent_config.json" in log and '"max_len" is 1000000000' in log,
              "max_len 10^9 refused naming the file and the field: %s" % log[-2000:])
        check("out of memory" not in log, "no out-of-memory for max_len 10^9: %s" % log[-2000:])
    print("serve/nonfinite: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
