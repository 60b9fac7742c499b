"""A small stand-in for the Hugging Face Hub on loopback, for testing src/model/hub.c.

Serves /api/models/<repo>/revision/<rev> (commit and file list) and
/<repo>/resolve/<commit>/<path>. LFS-style files (model.safetensors) answer the HEAD with a 302
to /cdn/<sha256> and X-Linked-Etag, as the Hub does; small files answer with their git etag.
Small files carry their git blob id (SHA-1 of "blob <size>\0" + bytes) as the ETag and every HEAD
a size (Content-Length, or X-Linked-Size beside the LFS redirect), as the Hub sends them.
Switches (class attributes) make it require a token, truncate the first download of a file, or
ignore Range requests; and, as a hostile endpoint: list extra file names, send a chosen ETag,
stream an endless body, send other bytes than the HEAD described, or send a huge file list.
Every request is logged in `MockHub.log` as (method, path, range).
"""
import hashlib
import http.server
import json
import threading

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


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
    extra_names = []       # names added to every file list (hostile: "../" and the like)
    etag_for = {}          # path -> the ETag sent for it instead of the real one
    endless = set()        # paths whose GET body never ends (no Content-Length)
    body_for = {}          # path -> bytes a GET sends instead of the file (the HEAD is truthful)
    huge_list = 0          # > 0: the file list is padded to this many bytes
    huge_list_chunked = False  # ... and sent without a Content-Length
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
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client refused the body (a size limit): what the test checks

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
            info = {"id": repo, "sha": COMMIT,
                    "siblings": [{"rfilename": p} for p in sorted(self.repos[repo])]
                    + [{"rfilename": "README.md"}, {"rfilename": "other/model.safetensors"}]
                    + [{"rfilename": p} for p in self.extra_names]}
            body = json.dumps(info).encode()
            if self.huge_list:  # streamed, so this process never holds the padding itself
                return self._send_padded(body, self.huge_list, self.huge_list_chunked)
            return self._send(200, body, {"Content-Type": "application/json"}, head)
        if "/resolve/" in path:
            repo, _, rest = path[1:].partition("/resolve/")
            commit, _, fpath = rest.partition("/")
            files = self.repos.get(repo)
            if files is not None and fpath in self.extra_names:  # served, as a hostile hub would
                files = dict(files, **{fpath: b"{}"})
            if files is None or fpath not in files or commit != COMMIT:
                return self._send(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"}, head)
            data = files[fpath]
            sha = hashlib.sha256(data).hexdigest()
            if fpath.endswith(".safetensors"):
                return self._send(302, b"", {"Location": "/cdn/" + sha,
                                             "X-Linked-Etag": '"%s"' % self.etag_for.get(fpath, sha),
                                             "X-Linked-Size": str(len(data)),
                                             "X-Repo-Commit": COMMIT, "ETag": '"gitblob"'}, head)
            etag = self.etag_for.get(fpath, git_blob_id(data))
            if not head and fpath in self.endless:
                return self._stream(None)
            if not head and fpath in self.body_for:
                data = self.body_for[fpath]
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

    def _send_padded(self, body, pad, chunked):
        """`body` (a JSON object) with a "padding" member of `pad` bytes, written piecewise."""
        head, tail = body[:-1] + b', "padding": "', b'"}'
        self.send_response(200)
        if not chunked:
            self.send_header("Content-Length", str(len(head) + pad + len(tail)))
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(head)
            piece = b"x" * 65536
            for off in range(0, pad, len(piece)):
                self.wfile.write(piece[: min(len(piece), pad - off)])
            self.wfile.write(tail)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _stream(self, body):
        """A body with no Content-Length, ended by closing: `body`, or zeros for ever."""
        self.send_response(200)
        self.end_headers()
        self.close_connection = True
        try:
            if body is not None:
                self.wfile.write(body)
                return
            chunk = b"0" * 65536
            for _ in range(1 << 16):  # 4 GiB at most, should the client never stop
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        self._handle(False)

    def do_HEAD(self):
        self._handle(True)


def start():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MockHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
