"""Checkpoint resolution and download (src/model/hub.c) against the loopback mock hub.

    python3 test_hub.py HUB_FETCH_BINARY

Covers: a fresh download into the Hugging Face cache layout (blobs, refs/main, relative
snapshot symlinks) of only the files Laya loads; reuse of the cache with HF_HUB_OFFLINE=1 and
no request; a cache written in huggingface_hub's layout by someone else; a subfolder; the LFS
redirect; 404; 401 without and success with HF_TOKEN; a transfer cut short and resumed with a
Range request; a server that ignores Range; a SHA-256 pin mismatch; revision pins; offline
misses; a local directory and a missing local path.

And an endpoint that is not the Hub (a custom HF_ENDPOINT, a mirror, intercepted plain http):
listed names that climb out of the snapshot (issue 18: a listed
`tokenizer/../../../x/victim.txt` replaced a file outside the cache by a symlink), absolute,
backslash and control-byte names, unsafe revisions, an ETag that is a path, an endless body,
a file list too large to hold, a body that differs from the size or git blob id the HEAD gave,
and a .json file that is not JSON: each refused with the file named, nothing written outside
the cache, no `.incomplete` left, and no snapshot that a later offline load would take as whole.
"""
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

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
    mock_hub.MockHub.extra_names = []
    mock_hub.MockHub.etag_for = {}
    mock_hub.MockHub.endless = set()
    mock_hub.MockHub.body_for = {}
    mock_hub.MockHub.huge_list = 0
    mock_hub.MockHub.huge_list_chunked = False


def leftovers(cache, repo):
    blobs = os.path.join(cache, "models--" + repo.replace("/", "--"), "blobs")
    return [f for f in os.listdir(blobs) if f.endswith(".incomplete")] if os.path.isdir(blobs) else []


def hostile(server, endpoint, files):
    """A hostile endpoint: every attack is refused, with nothing written where it should not be."""
    # path traversal: the names Python's huggingface_hub refuses as "Invalid pointer path", and more
    with tempfile.TemporaryDirectory() as root:
        cache = os.path.join(root, "cache")
        os.makedirs(cache)
        # where "tokenizer/../../../x/victim.txt" lands from snapshots/<commit>/, and outside the cache
        inside = os.path.join(cache, "models--org--laya", "x", "victim.txt")
        outside = os.path.join(root, "victim.txt")
        os.makedirs(os.path.dirname(inside))
        for v in (inside, outside):
            open(v, "w").write("precious")
        bad_names = ["tokenizer/../../../x/victim.txt", "tokenizer/../../../../../victim.txt",
                     "encoder/../../../../../victim.txt", "tokenizer/..", "/etc/passwd",
                     outside, "tokenizer\\..\\..\\victim.txt", "tokenizer/a\x01b.json",
                     "tokenizer/a\x00b.json", "tokenizer/a\nb.json", "tokenizer//x.json",
                     "tokenizer/./x.json", "encoder/x\x7f.json"]
        for name in bad_names:
            reset(server)
            mock_hub.MockHub.extra_names = [name]
            r = run(["org/laya", "-", "-", cache], endpoint)
            err = r.get("ERROR", "")
            check(r["rc"] == 1 and "unsafe path" in err, "unsafe name %r refused: %r" % (name, r))
            shown = repr(name)
            check(shown in err, "the error names %s: %r" % (shown, err))
            files_asked = [p for (m, p, _) in mock_hub.MockHub.log if "/resolve/" in p or p.startswith("/cdn/")]
            check(files_asked == [], "no file requested before the listing was checked: %r" % files_asked)
            for v in (inside, outside):
                check(not os.path.islink(v) and open(v).read() == "precious", "%s untouched" % v)
        snaps = os.path.join(cache, "models--org--laya", "snapshots")
        check(not os.path.exists(snaps) or not os.listdir(snaps), "no snapshot made from a hostile list")

    with tempfile.TemporaryDirectory() as cache:
        # unsafe revisions and subfolders never reach a path
        for rev in ("../../x", "main/../../x", "a\\b", "/abs", "ma\x01in"):
            reset(server)
            r = run(["org/laya", "-", rev, cache], endpoint)
            check(r["rc"] == 1 and "unsafe revision" in r.get("ERROR", ""), "revision %r refused: %r" % (rev, r))
            check(mock_hub.MockHub.log == [], "no request for revision %r" % rev)
        for sub in ("../x", "a/../../x", "a\\b"):
            r = run(["org/laya", sub, "-", cache], endpoint)
            check(r["rc"] == 1 and "unsafe subfolder" in r.get("ERROR", ""), "subfolder %r refused: %r" % (sub, r))

        # an ETag that would name a file outside blobs/
        for etag in ("../../../../x", "a/b", ".hidden", "x" * 200, "a b"):
            reset(server)
            mock_hub.MockHub.etag_for = {"encoder/config.json": etag}
            r = run(["org/laya", "-", "-", cache], endpoint)
            err = r.get("ERROR", "")
            check(r["rc"] == 1 and "no usable ETag" in err and "encoder/config.json" in err,
                  "ETag %r refused: %r" % (etag[:20], r))
        check(not os.path.exists(os.path.join(cache, "x")), "nothing written beside the cache")

    with tempfile.TemporaryDirectory() as cache:
        # an endless body stops at the listed size and leaves no .incomplete
        reset(server)
        mock_hub.MockHub.endless = {"tokenizer/tokenizer.json"}
        t0 = time.time()
        r = run(["org/laya", "-", "-", cache], endpoint)
        err = r.get("ERROR", "")
        check(r["rc"] == 1 and "more than the %d bytes" % len(files["tokenizer/tokenizer.json"]) in err
              and "tokenizer/tokenizer.json" in err, "endless body refused: %r" % r)
        check(time.time() - t0 < 30, "endless body stopped early")
        check(leftovers(cache, "org/laya") == [], "no .incomplete left by the endless body")
        r = run(["org/laya", "-", "-", cache], endpoint, {"HF_HUB_OFFLINE": "1"})
        check(r["rc"] == 1, "the failed download is no snapshot offline: %r" % r)

        # a file list too large to hold: refused, with and without a Content-Length, before it
        # takes memory (a 300 MiB list took 3.96 GB): the largest child stays far below 64 MiB
        for chunked in (False, True):
            reset(server)
            mock_hub.MockHub.huge_list = 64 << 20
            mock_hub.MockHub.huge_list_chunked = chunked
            r = run(["org/laya", "-", "-", cache], endpoint)
            check(r["rc"] == 1 and "file list for org/laya is larger than" in r.get("ERROR", ""),
                  "huge list (chunked=%s) refused: %r" % (chunked, r))
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        check(peak_mib < 48, "no hub_fetch run held the 64 MiB list: peak RSS %.0f MiB" % peak_mib)

        # bytes that differ from what the HEAD described: longer, shorter, same size but other
        tok = files["tokenizer/tokenizer.json"]
        for body, what in ((tok + b" " * 100, "more than"), (tok[:-3], "incomplete"),
                           (b"X" * len(tok), "corrupt: git blob SHA-1")):
            reset(server)
            mock_hub.MockHub.body_for = {"tokenizer/tokenizer.json": body}
            r = run(["org/laya", "-", "-", cache], endpoint)
            err = r.get("ERROR", "")
            check(r["rc"] == 1 and what in err and "tokenizer/tokenizer.json" in err,
                  "substituted body (%s) refused: %r" % (what, r))
            check(not os.path.exists(os.path.join(cache, "models--org--laya", "blobs",
                                                  mock_hub.git_blob_id(tok))), "no blob kept for it")
            r = run(["org/laya", "-", "-", cache], endpoint, {"HF_HUB_OFFLINE": "1"})
            check(r["rc"] == 1, "no complete snapshot after a substituted body: %r" % r)
        # an LFS file whose bytes do not hash to its X-Linked-Etag
        reset(server)
        mock_hub.MockHub.etag_for = {"model.safetensors": "a" * 64}
        r = run(["org/laya", "-", "-", cache], endpoint)
        check(r["rc"] == 1 and "corrupt: SHA-256" in r.get("ERROR", ""), "LFS digest mismatch: %r" % r)

        # a garbage tokenizer.json whose ETag and size match it: refused as not JSON, not cached
        reset(server)
        garbage = dict(files, **{"tokenizer/tokenizer.json": b"\x00\x01 not json at all"})
        mock_hub.MockHub.repos["org/garbage"] = garbage
        r = run(["org/garbage", "-", "-", cache], endpoint)
        err = r.get("ERROR", "")
        check(r["rc"] == 1 and "not JSON" in err and "tokenizer/tokenizer.json" in err, "garbage JSON: %r" % r)
        r = run(["org/garbage", "-", "-", cache], endpoint, {"HF_HUB_OFFLINE": "1"})
        check(r["rc"] == 1, "garbage tokenizer.json is no complete snapshot: %r" % r)

        # the same cache still downloads the honest repo afterwards
        reset(server)
        r = run(["org/laya", "-", "-", cache], endpoint)
        check(r["rc"] == 0, "honest download after the attacks: %r" % r)


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

    hostile(server, endpoint, files)

    server.shutdown()
    print("%d passed, %d failed" % (checks - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
