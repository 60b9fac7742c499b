"""Checkpoint resolution and download (src/model/hub.c) against the loopback mock hub.

    python3 test_hub.py HUB_FETCH_BINARY

Covers: a fresh download into the Hugging Face cache layout (blobs, refs/main, relative
snapshot symlinks) of only the files Laya loads; reuse of the cache with HF_HUB_OFFLINE=1 and
no request; a cache written in huggingface_hub's layout by someone else; a subfolder; the LFS
redirect; 404; 401 without and success with HF_TOKEN; a transfer cut short and resumed with a
Range request; a server that ignores Range; a SHA-256 pin mismatch; revision pins; offline
misses; a local directory and a missing local path.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_hub  # noqa: E402

BIN = sys.argv[1]
failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, endpoint, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_") and k != "LAYA_REVISION"}
    env["HF_ENDPOINT"] = endpoint
    env.update(env_extra or {})
    p = subprocess.run([BIN] + args, capture_output=True, text=True, env=env, timeout=60)
    out = p.stdout.strip().splitlines()
    res = {"rc": p.returncode}
    for line in out:
        k, _, v = line.partition(" ")
        res[k] = v
    return res


def reset(server):
    mock_hub.MockHub.log.clear()
    mock_hub.MockHub.token = None
    mock_hub.MockHub.truncate_once = set()
    mock_hub.MockHub.ignore_range = False


def main():
    server = mock_hub.start()
    endpoint = "http://127.0.0.1:%d" % server.server_address[1]
    files = mock_hub.checkpoint_files()
    sub_files = mock_hub.checkpoint_files("multilingual/", seed=b"m")
    mock_hub.MockHub.repos = {"org/laya": dict(files, **sub_files), "org/private": files}
    with tempfile.TemporaryDirectory() as cache:
        # fresh download with the first model.safetensors transfer cut short
        reset(server)
        mock_hub.MockHub.truncate_once = {"model.safetensors"}
        r = run(["org/laya", "-", "-", cache], endpoint)
        check(r["rc"] == 0 and r.get("COMMIT") == mock_hub.COMMIT, "fresh download: %r" % r)
        snap = os.path.join(cache, "models--org--laya", "snapshots", mock_hub.COMMIT)
        check(r.get("DIR") == snap, "snapshot dir %r" % r.get("DIR"))
        for p, data in files.items():
            fp = os.path.join(snap, p)
            check(os.path.islink(fp), "%s is a symlink into blobs" % p)
            check(os.path.isfile(fp) and open(fp, "rb").read() == data, "%s content" % p)
            if os.path.islink(fp):
                check(not os.path.isabs(os.readlink(fp)), "%s link is relative" % p)
        check(not os.path.exists(os.path.join(snap, "README.md")), "README.md not downloaded")
        check(not os.path.exists(os.path.join(snap, "multilingual")), "sibling subfolder not downloaded")
        ref = open(os.path.join(cache, "models--org--laya", "refs", "main")).read().strip()
        check(ref == mock_hub.COMMIT, "refs/main records the commit")
        sha = hashlib.sha256(files["model.safetensors"]).hexdigest()
        check(os.path.isfile(os.path.join(cache, "models--org--laya", "blobs", sha)), "LFS blob named by sha256")
        ranges = [rg for (m, path, rg) in mock_hub.MockHub.log if m == "GET" and path.startswith("/cdn/") and rg]
        check(len(ranges) == 1 and ranges[0].startswith("bytes=") and ranges[0] != "bytes=0-",
              "the cut transfer resumed with a Range request: %r" % ranges)
        check(not [f for f in os.listdir(os.path.join(cache, "models--org--laya", "blobs"))
                   if f.endswith(".incomplete")], "no .incomplete left behind")

        # offline reuse: no request at all
        reset(server)
        r = run(["org/laya", "-", "-", cache], endpoint, {"HF_HUB_OFFLINE": "1"})
        check(r["rc"] == 0 and r.get("DIR") == snap, "offline reuse: %r" % r)
        check(mock_hub.MockHub.log == [], "offline reuse made no request")
        # the cache is reused online too, without a request
        r = run(["org/laya", "-", "main", cache], endpoint)
        check(r["rc"] == 0 and mock_hub.MockHub.log == [], "cached main needs no request")
        r = run(["org/laya", "-", mock_hub.COMMIT, cache], endpoint, {"HF_HUB_OFFLINE": "1"})
        check(r["rc"] == 0 and r.get("DIR") == snap, "revision pinned to the commit: %r" % r)

        # offline miss names the problem
        r = run(["org/laya", "-", "v2", cache], endpoint, {"HF_HUB_OFFLINE": "1"})
        check(r["rc"] == 1 and "HF_HUB_OFFLINE" in r.get("ERROR", ""), "offline miss: %r" % r)

        # subfolder: only its files
        reset(server)
        r = run(["org/laya", "multilingual", "-", cache], endpoint)
        check(r["rc"] == 0 and r.get("DIR") == os.path.join(snap, "multilingual"), "subfolder: %r" % r)
        got = sorted(p for (m, p, _) in mock_hub.MockHub.log if m == "GET" and "/resolve/" in p)
        check(all("/multilingual/" in p for p in got) and got, "only subfolder files fetched: %r" % got)
        check(open(os.path.join(snap, "multilingual", "model.safetensors"), "rb").read()
              == sub_files["multilingual/model.safetensors"], "subfolder weights content")

        # 404
        reset(server)
        r = run(["org/missing", "-", "-", cache], endpoint)
        check(r["rc"] == 1 and "404" in r.get("ERROR", ""), "404: %r" % r)

        # 401 without a token, then with HF_TOKEN
        reset(server)
        mock_hub.MockHub.token = "s3cret"
        r = run(["org/private", "-", "-", cache], endpoint)
        check(r["rc"] == 1 and "401" in r.get("ERROR", "") and "HF_TOKEN" in r.get("ERROR", ""), "401: %r" % r)
        r = run(["org/private", "-", "-", cache], endpoint, {"HF_TOKEN": "s3cret"})
        check(r["rc"] == 0, "token accepted: %r" % r)
        cdn_auth = [1 for (m, p, _) in mock_hub.MockHub.log if p.startswith("/cdn/")]
        check(cdn_auth, "LFS file came through the redirect")

    with tempfile.TemporaryDirectory() as cache:
        # a server that ignores Range after a cut transfer still yields the right bytes
        reset(server)
        mock_hub.MockHub.truncate_once = {"model.safetensors"}
        mock_hub.MockHub.ignore_range = True
        r = run(["org/laya", "-", "-", cache], endpoint)
        snap = os.path.join(cache, "models--org--laya", "snapshots", mock_hub.COMMIT)
        check(r["rc"] == 0 and open(os.path.join(snap, "model.safetensors"), "rb").read()
              == files["model.safetensors"], "range ignored: %r" % r)

    with tempfile.TemporaryDirectory() as cache:
        # SHA-256 pin: a wrong digest refuses the file
        reset(server)
        pins = json.dumps({"model.safetensors": "0" * 64})
        r = run(["org/laya", "-", "-", cache, pins], endpoint)
        check(r["rc"] == 1 and "SHA-256 mismatch for model.safetensors" in r.get("ERROR", ""), "pin mismatch: %r" % r)
        good = json.dumps({"model.safetensors": hashlib.sha256(files["model.safetensors"]).hexdigest()})
        r = run(["org/laya", "-", "-", cache, good], endpoint)
        check(r["rc"] == 0, "pin match: %r" % r)

    with tempfile.TemporaryDirectory() as cache:
        # a cache written by huggingface_hub (Python Laya): blobs + refs + relative symlinks
        repo = os.path.join(cache, "models--convaiinnovations--laya")
        commit = "f" * 40
        os.makedirs(os.path.join(repo, "refs"))
        open(os.path.join(repo, "refs", "main"), "w").write(commit)
        os.makedirs(os.path.join(repo, "blobs"))
        for p, data in sub_files.items():
            blob = hashlib.sha256(data).hexdigest()
            open(os.path.join(repo, "blobs", blob), "wb").write(data)
            dst = os.path.join(repo, "snapshots", commit, p)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.symlink(os.path.relpath(os.path.join(repo, "blobs", blob), os.path.dirname(dst)), dst)
        reset(server)
        r = run(["convaiinnovations/laya", "multilingual", "-", cache], "http://127.0.0.1:9")
        check(r["rc"] == 0 and r.get("COMMIT") == commit and r.get("DIR", "").endswith("/multilingual"),
              "python-filled cache reused: %r" % r)
        # HF_HOME/hub is where the cache is looked up when no directory is given
        r = run(["convaiinnovations/laya", "multilingual", "-", cache], "http://127.0.0.1:9")
        check(r["rc"] == 0, "cache reuse repeatable")

        # local directory and a missing local path
        local = os.path.join(repo, "snapshots", commit)
        r = run([local, "multilingual", "-", cache], endpoint)
        check(r["rc"] == 0 and r.get("COMMIT") == "-", "local dir: %r" % r)
        r = run(["./no/such/dir", "-", "-", cache], endpoint)
        check(r["rc"] == 1 and "Local model path not found" in r.get("ERROR", ""), "missing local: %r" % r)
        r = run([local, "nosub", "-", cache], endpoint)
        check(r["rc"] == 1 and "Subfolder 'nosub' not found" in r.get("ERROR", ""), "missing subfolder: %r" % r)
        r = run(["a/b/../c", "-", "-", cache], endpoint)
        check(r["rc"] == 1, "path traversal refused: %r" % r)

    server.shutdown()
    print("%d passed, %d failed" % (checks - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
