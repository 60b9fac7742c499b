"""A small stand-in for the Hugging Face Hub on loopback, for testing src/model/hub.c.

Serves /api/models/<repo>/revision/<rev> (commit and file list) and
/<repo>/resolve/<commit>/<path>. LFS-style files (model.safetensors) answer the HEAD with a 302
to /cdn/<sha256> and X-Linked-Etag, as the Hub does; small files answer with their git etag.
Switches (class attributes) make it require a token, truncate the first download of a file, or
ignore Range requests. Every request is logged in `MockHub.log` as (method, path, range).
"""
import hashlib
import http.server
import json
import threading

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def checkpoint_files(prefix="", seed=b"x"):
    weights = (seed * 5000)[:40000] + bytes(range(256)) * 40
    return {
        prefix + "rl_agent_config.json": json.dumps({"max_len": 64, "head_max_len": 32}).encode(),
        prefix + "model.safetensors": weights,
        prefix + "encoder/config.json": b'{"hidden_size": 8}',
        prefix + "tokenizer/tokenizer.json": b'{"model": {}}',
        prefix + "tokenizer/tokenizer_config.json": b"{}",
    }


class MockHub(http.server.BaseHTTPRequestHandler):
    repos = {}             # repo -> {path: bytes}
    token = None           # required bearer token, or None
    truncate_once = set()  # paths whose first GET is cut short
    ignore_range = False
    log = []
    lock = threading.Lock()

    def log_message(self, *a):
        pass

    def _auth_ok(self):
        if self.token is None:
            return True
        return self.headers.get("Authorization") == "Bearer " + self.token

    def _send(self, code, body=b"", headers=None, head=False):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _handle(self, head):
        path = self.path
        with self.lock:
            self.log.append((self.command, path, self.headers.get("Range")))
        if path.startswith("/cdn/"):
            return self._serve_blob(path[5:], head)
        if not self._auth_ok():
            return self._send(401, b'{"error": "unauthorized"}', head=head)
        if path.startswith("/api/models/"):
            rest = path[len("/api/models/"):]
            repo, _, rev = rest.partition("/revision/")
            if repo not in self.repos:
                return self._send(404, b'{"error": "Repository not found"}', head=head)
            body = json.dumps({"id": repo, "sha": COMMIT,
                               "siblings": [{"rfilename": p} for p in sorted(self.repos[repo])]
                               + [{"rfilename": "README.md"}, {"rfilename": "other/model.safetensors"}]})
            return self._send(200, body.encode(), {"Content-Type": "application/json"}, head)
        if "/resolve/" in path:
            repo, _, rest = path[1:].partition("/resolve/")
            commit, _, fpath = rest.partition("/")
            files = self.repos.get(repo)
            if files is None or fpath not in files or commit != COMMIT:
                return self._send(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"}, head)
            data = files[fpath]
            sha = hashlib.sha256(data).hexdigest()
            if fpath.endswith(".safetensors"):
                return self._send(302, b"", {"Location": "/cdn/" + sha, "X-Linked-Etag": '"%s"' % sha,
                                             "X-Repo-Commit": COMMIT, "ETag": '"gitblob"'}, head)
            etag = hashlib.sha1(data).hexdigest()
            return self._serve_bytes(data, {"ETag": '"%s"' % etag, "X-Repo-Commit": COMMIT}, head, fpath)
        return self._send(404, b"no route", head=head)

    def _serve_blob(self, sha, head):
        for files in self.repos.values():
            for p, data in files.items():
                if hashlib.sha256(data).hexdigest() == sha:
                    return self._serve_bytes(data, {"ETag": '"%s"' % sha}, head, p)
        return self._send(404, b"no blob", head=head)

    def _serve_bytes(self, data, headers, head, key):
        rng = self.headers.get("Range")
        start = 0
        if rng and not self.ignore_range and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            if start >= len(data):
                return self._send(416, b"", head=head)
        body = data[start:]
        code = 206 if start else 200
        if start:
            headers = dict(headers, **{"Content-Range": "bytes %d-%d/%d" % (start, len(data) - 1, len(data))})
        if not head and key in self.truncate_once:
            with self.lock:
                self.truncate_once.discard(key)
            self.send_response(code)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 3])
            self.wfile.flush()
            self.close_connection = True
            return
        return self._send(code, body, headers, head)

    def do_GET(self):
        self._handle(False)

    def do_HEAD(self):
        self._handle(True)


def start():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MockHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
