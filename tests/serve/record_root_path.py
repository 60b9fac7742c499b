#!/usr/bin/env python3
"""Record how the real Python laya-serve (laya 0.4.15, FastAPI's root_path) answers under
LAYA_ROOT_PATH: which paths it serves, where it redirects, and /openapi.json's "servers".

    PY=/path/to/venv-with-laya-fastapi-uvicorn/bin/python
    $PY tests/serve/record_root_path.py   # writes tests/serve/fixtures/python_root_path.json
    $PY tests/serve/record_root_path.py forms   # -> fixtures/python_root_path_forms.json

forms: the server is started once per spelling of LAYA_ROOT_PATH in FORMS (trailing and doubled
slashes, none, "/", empty, blanks) and asked FORM_REQUESTS; Laya hands the value to FastAPI as it
is, so "/laya/" and "laya" do not serve under /laya (Starlette matches the prefix literally).

Runs laya.serve's main() on loopback with the tiny fixture checkpoints under Laya's names and
LAYA_ROOT_PATH=/laya, then sends each request of REQUESTS (serve/http_rootpath replays them).
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CKPT = os.path.join(ROOT, "tests", "fixtures", "ckpt")
ROOT_PATH = "/laya"
BODY = {"state": "refund please", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
REQUESTS = [("GET", p, None) for p in (
    "/health", "/laya/health", "/ready", "/laya", "/laya/", "/lay/health", "/layahealth", "/laya/laya/health",
    "/health/", "/laya/health/", "/nope", "/laya/nope", "/openapi.json", "/laya/openapi.json", "/docs",
    "/laya/docs", "/laya/v1/systemone")] + [
    ("POST", "/v1/systemone", BODY), ("POST", "/laya/v1/systemone", BODY),
    ("POST", "/laya/v1/systemone/batch", {"states": ["a", "b"], "questions": BODY["questions"]}),
    ("POST", "/laya/v1/systemone/", BODY), ("POST", "/laya/laya/v1/systemone", BODY)]

FORMS = ["/laya/", "laya", "laya/", "/", "//", "", " ", " /laya", "/laya//", "/a/b"]
FORM_REQUESTS = [("GET", p, None) for p in (
    "/health", "/laya/health", "/laya//health", "//health", "/laya", "/laya/", "/health/", "/laya/health/",
    "/openapi.json", "/laya/openapi.json", "/a/b/health", "/a/health", "/a/b", "/a/b/openapi.json")] + [
    ("POST", "/v1/systemone", BODY), ("POST", "/laya/v1/systemone", BODY)]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def record(root_path, requests):
    """Laya's laya-serve under LAYA_ROOT_PATH=root_path: each request's status, Location and, for
    /openapi.json, its servers."""
    port = free_port()
    env = dict(os.environ, LAYA_HOST="127.0.0.1", LAYA_PORT=str(port), LAYA_ROOT_PATH=root_path,
               LAYA_MODELS="english,multilingual", LAYA_DEVICE="cpu", HF_HUB_OFFLINE="1",
               LAYA_EXTRA_MODELS=json.dumps({"english": os.path.join(CKPT, "modernbert-tiny"),
                                             "multilingual": os.path.join(CKPT, "mmbert-tiny")}))
    proc = subprocess.Popen([sys.executable, "-c", "from laya.serve import main; main()"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise SystemExit("laya-serve did not start")
                time.sleep(0.5)
        out = []
        for method, path, body in requests:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            data = json.dumps(body).encode() if body is not None else None
            c.request(method, path, body=data, headers={"Content-Type": "application/json", "Host": "example:81"})
            r = c.getresponse()
            raw = r.read()
            rec = {"method": method, "path": path, "status": r.status, "location": r.getheader("location")}
            if path.endswith("openapi.json") and r.status == 200:
                rec["servers"] = json.loads(raw).get("servers")
            out.append(rec)
            c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def main():
    import laya
    if sys.argv[1:] == ["forms"]:
        import fastapi
        import starlette
        forms = [{"root_path": rp, "requests": record(rp, FORM_REQUESTS)} for rp in FORMS]
        with open(os.path.join(HERE, "fixtures", "python_root_path_forms.json"), "w") as f:
            json.dump({"laya": laya.__version__, "fastapi": fastapi.__version__, "starlette": starlette.__version__,
                       "forms": forms}, f, indent=1)
            f.write("\n")
        return
    out = record(ROOT_PATH, REQUESTS)
    with open(os.path.join(HERE, "fixtures", "python_root_path.json"), "w") as f:
        json.dump({"laya": laya.__version__, "root_path": ROOT_PATH, "requests": out}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
