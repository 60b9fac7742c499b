/*
 * hub.c: checkpoint resolution through the Hugging Face cache and Hub (see hub.h).
 *
 * The cache layout is huggingface_hub's, so Python and C share one cache:
 *   <cache>/models--<org>--<name>/blobs/<etag>          file contents (LFS etag = sha256)
 *   <cache>/models--<org>--<name>/refs/<revision>        the commit a branch or tag points at
 *   <cache>/models--<org>--<name>/snapshots/<commit>/p   relative symlink to ../../blobs/<etag>
 * A download goes to blobs/<etag>.incomplete and is resumed from its length with a Range
 * request; only a complete (and, for LFS files, digest-checked) blob is renamed and linked.
 */
#include "model/hub.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "core/options.h"
#include "core/pystr.h"
#include "core/sha1.h"
#include "core/sha256.h"
#include "core/strbuf.h"

#ifdef LAYA_HAVE_CURL
#include <curl/curl.h>
#endif

void hub_options_init(hub_options *o) {
  memset(o, 0, sizeof *o);
  o->offline = -1;
}

bool hub_path_is_safe(const char *p, size_t n) {
  if (!p || n == 0 || n > HUB_MAX_PATH_BYTES || p[0] == '/') return false;
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    unsigned char c = i < n ? (unsigned char)p[i] : '/';
    if (i < n && (c < 0x20 || c == 0x7f || c == '\\')) return false; /* NUL, controls, backslash */
    if (c != '/') continue;
    size_t len = i - start;
    if (len == 0) return false; /* empty component: "a//b", a trailing '/' */
    if ((len == 1 && p[start] == '.') || (len == 2 && p[start] == '.' && p[start + 1] == '.')) return false;
    start = i + 1;
  }
  return true;
}

bool hub_etag_is_safe(const char *e) {
  size_t n = e ? strlen(e) : 0;
  if (n == 0 || n > HUB_MAX_ETAG_BYTES || e[0] == '.') return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)e[i]) && e[i] != '-' && e[i] != '_' && e[i] != '.') return false;
  return true;
}

/* A name as Python would print it, for errors about names that may hold control bytes. */
static char *quoted(const char *s, size_t n) {
  strbuf sb;
  sb_init(&sb);
  py_repr_str(&sb, s, n);
  return sb_steal(&sb);
}

/* The variables the hub reads: o->env (laya_open's read), else read now into own (free it). */
static const laya_env_options *hub_env(const hub_options *o, laya_env_options *own) {
  laya_env_options_init(own);
  if (o && o->env) return o->env;
  static const char *const names[] = {"HF_HUB_CACHE", "HF_HOME",        "XDG_CACHE_HOME", "HOME",
                                      "HF_TOKEN",     "HF_ENDPOINT",    "HF_HUB_OFFLINE", "LAYA_REVISION"};
  laya_error ignored; /* strings and a bool: never refused */
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) laya_env_options_read_one(own, names[i], &ignored);
  return own;
}


static char *fmt(const char *f, const char *a, const char *b, const char *c) {
  strbuf sb;
  sb_init(&sb);
  sb_printf(&sb, f, a, b ? b : "", c ? c : "");
  return sb_steal(&sb);
}

char *hub_cache_dir(const hub_options *o) {
  if (o && o->cache_dir) return strdup(o->cache_dir);
  laya_env_options own;
  const laya_env_options *env = hub_env(o, &own);
  char *dir;
  if (env->hf_hub_cache && *env->hf_hub_cache) dir = strdup(env->hf_hub_cache);
  else if (env->hf_home && *env->hf_home) dir = fmt("%s/hub%s%s", env->hf_home, NULL, NULL);
  else if (env->xdg_cache_home && *env->xdg_cache_home) dir = fmt("%s/huggingface/hub%s%s", env->xdg_cache_home, NULL, NULL);
  else dir = fmt("%s/.cache/huggingface/hub%s%s", env->home ? env->home : ".", NULL, NULL);
  laya_env_options_free(&own);
  return dir;
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_commit(const char *r) {
  if (strlen(r) != 40) return false;
  for (const char *p = r; *p; p++)
    if (!isxdigit((unsigned char)*p)) return false;
  return true;
}

/* mkdir -p */
static int make_dirs(const char *path) {
  char *p = strdup(path);
  if (!p) return -1;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0755) && errno != EEXIST) {
      free(p);
      return -1;
    }
    *s = '/';
  }
  int rc = (mkdir(p, 0755) && errno != EEXIST) ? -1 : 0;
  free(p);
  return rc;
}

/* The files of a checkpoint Laya needs, relative to the checkpoint (subfolder) root. */
static bool needed(const char *rel) {
  return !strcmp(rel, "rl_agent_config.json") || !strcmp(rel, "model.safetensors") ||
         !strncmp(rel, "tokenizer/", 10) || !strncmp(rel, "encoder/", 8);
}

/* A snapshot directory holds a usable checkpoint when the files the loader opens are there. */
static bool snapshot_complete(const char *dir) {
  static const char *const files[] = {"rl_agent_config.json", "model.safetensors",
                                      "encoder/config.json", "tokenizer/tokenizer.json"};
  for (int i = 0; i < 4; i++) {
    char *p = fmt("%s/%s%s", dir, files[i], NULL);
    bool ok = p && is_file(p);
    free(p);
    if (!ok) return false;
  }
  char *t = fmt("%s/tokenizer%s%s", dir, NULL, NULL);
  bool ok = t && is_dir(t);
  free(t);
  return ok;
}

static char *read_small(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char buf[256];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  while (n && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
  return strdup(buf);
}

/* models--org--name */
static char *repo_folder(const char *cache, const char *repo) {
  strbuf sb;
  sb_init(&sb);
  sb_printf(&sb, "%s/models--", cache);
  for (const char *p = repo; *p; p++) {
    if (*p == '/') sb_puts(&sb, "--");
    else sb_putc(&sb, *p);
  }
  return sb_steal(&sb);
}

/* Resolve from the cache: the commit for `revision`, and its snapshot directory. */
static char *cached_snapshot(const char *repo_dir, const char *revision, const char *subfolder,
                             char **commit) {
  char *sha = NULL;
  if (is_commit(revision)) {
    sha = strdup(revision);
  } else {
    char *ref = fmt("%s/refs/%s%s", repo_dir, revision, NULL);
    sha = ref ? read_small(ref) : NULL;
    free(ref);
  }
  if (!sha || !is_commit(sha)) { /* a ref holds a commit id, nothing to build a path from */
    free(sha);
    return NULL;
  }
  char *dir = subfolder && *subfolder ? fmt("%s/snapshots/%s/%s", repo_dir, sha, subfolder)
                                      : fmt("%s/snapshots/%s%s", repo_dir, sha, NULL);
  if (!dir || !snapshot_complete(dir)) {
    free(dir);
    free(sha);
    return NULL;
  }
  *commit = sha;
  return dir;
}

#ifdef LAYA_HAVE_CURL

typedef struct http_resp {
  long status;
  strbuf body;
  char etag[160], linked_etag[160], commit[64], location[1024];
  long long content_length, linked_size; /* -1: the header was absent */
  FILE *sink;         /* download target; body is not kept when set */
  long long received; /* bytes written to sink */
  long long limit;    /* most body bytes accepted (0 = no limit); more sets `over` and stops */
  bool over;
} http_resp;

static void resp_init(http_resp *r, FILE *sink, long long limit) {
  memset(r, 0, sizeof *r);
  sb_init(&r->body);
  r->content_length = r->linked_size = -1;
  r->sink = sink;
  r->limit = limit;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  http_resp *r = ud;
  size_t k = sz * n;
  long long have = r->sink ? r->received : (long long)r->body.len;
  if (r->limit > 0 && have + (long long)k > r->limit) {
    r->over = true;
    return 0; /* libcurl stops the transfer */
  }
  if (r->sink) {
    if (fwrite(p, 1, k, r->sink) != k) return 0;
    r->received += (long long)k;
  } else {
    sb_append(&r->body, p, k);
  }
  return k;
}

static void header_value(const char *line, size_t n, const char *name, char *out, size_t cap) {
  size_t ln = strlen(name);
  if (n <= ln || strncasecmp(line, name, ln) != 0 || line[ln] != ':') return;
  const char *v = line + ln + 1;
  const char *end = line + n;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
  if (end - v >= 2 && v[0] == 'W' && v[1] == '/') v += 2; /* weak etag */
  if (end > v && *v == '"' && end[-1] == '"' && end - v >= 2) {
    v++;
    end--;
  }
  size_t m = (size_t)(end - v);
  if (m >= cap) m = cap - 1; /* too long to be usable: hub_etag_is_safe refuses what is cut */
  memcpy(out, v, m);
  out[m] = 0;
}

/* A size header: digits only, else -1. */
static void header_size(const char *line, size_t n, const char *name, long long *out) {
  char v[32] = "";
  header_value(line, n, name, v, sizeof v);
  if (!v[0]) return;
  long long x = 0;
  for (const char *p = v; *p; p++) {
    if (!isdigit((unsigned char)*p) || x > (LLONG_MAX - 9) / 10) return;
    x = x * 10 + (*p - '0');
  }
  *out = x;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  http_resp *r = ud;
  size_t k = sz * n;
  if (k >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a redirect): reset */
    r->etag[0] = r->linked_etag[0] = 0;
    r->content_length = r->linked_size = -1;
  }
  header_value(p, k, "ETag", r->etag, sizeof r->etag);
  header_value(p, k, "X-Linked-Etag", r->linked_etag, sizeof r->linked_etag);
  header_value(p, k, "X-Repo-Commit", r->commit, sizeof r->commit);
  header_value(p, k, "Location", r->location, sizeof r->location);
  header_size(p, k, "Content-Length", &r->content_length);
  header_size(p, k, "X-Linked-Size", &r->linked_size);
  return k;
}

typedef struct hub_http {
  const char *token;
  const char *endpoint;
} hub_http;

/* One request. head: no body; follow: follow redirects; range_from >= 0 asks for a suffix. */
static int http_do(const hub_http *h, const char *url, bool head, bool follow, long long range_from,
                   http_resp *r, laya_error *err) {
  CURL *c = curl_easy_init();
  if (!c) return laya_err(err, LAYA_ERR_INTERNAL, "RuntimeError", "libcurl could not start");
  struct curl_slist *hdrs = NULL;
  char auth[1200];
  if (h->token && *h->token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", h->token);
    hdrs = curl_slist_append(hdrs, auth);
  }
  hdrs = curl_slist_append(hdrs, "User-Agent: laya.c/" LAYA_VERSION);
  /* the sizes checked are of the bytes as stored, as huggingface_hub asks for them */
  hdrs = curl_slist_append(hdrs, "Accept-Encoding: identity");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  /* the token goes only to the Hub itself, not to a CDN a redirect names */
  curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
  if (r->limit > 0 && !head) curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->limit);
  char range[64];
  if (range_from > 0) {
    snprintf(range, sizeof range, "%lld-", range_from);
    curl_easy_setopt(c, CURLOPT_RANGE, range);
  }
  CURLcode cc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  if (cc == CURLE_FILESIZE_EXCEEDED) r->over = true; /* announced a Content-Length past the limit */
  if (r->over)
    return laya_err(err, LAYA_ERR_IO, "OSError",
                    "download of %s refused: the server sent more than the %lld bytes expected", url,
                    r->limit);
  if (cc != CURLE_OK) {
    return laya_err(err, LAYA_ERR_IO, "OSError", "download of %s failed: %s", url,
                    curl_easy_strerror(cc));
  }
  return 0;
}

static int status_error(const char *what, const char *repo, long status, laya_error *err) {
  if (status == 401 || status == 403)
    return laya_err(err, LAYA_ERR_IO, "OSError",
                    "%s: access to %s was refused (HTTP %ld); set HF_TOKEN to a token that can "
                    "read it",
                    what, repo, status);
  if (status == 404)
    return laya_err(err, LAYA_ERR_NOT_FOUND, "OSError",
                    "%s: %s was not found on the Hub (HTTP 404); check the repo id and revision",
                    what, repo);
  return laya_err(err, LAYA_ERR_IO, "OSError", "%s: HTTP %ld from the Hub for %s", what, status,
                  repo);
}

/* Is `path` (an existing directory) inside `root` (an existing directory), symlinks resolved? */
static bool dir_inside(const char *path, const char *root) {
  char *rp = realpath(path, NULL), *rr = realpath(root, NULL);
  size_t n = rr ? strlen(rr) : 0;
  bool ok = rp && rr && strncmp(rp, rr, n) == 0 && (rp[n] == 0 || rp[n] == '/');
  free(rp);
  free(rr);
  return ok;
}

/* Relative symlink snapshots/<commit>/<path> -> ../../(..)blobs/<etag>. `path` and `etag` were
 * checked (hub_path_is_safe, hub_etag_is_safe); the link's folder is checked again once it exists,
 * so a folder that is a symlink out of the snapshot is never written through. */
static int link_blob(const char *repo_dir, const char *commit, const char *path, const char *etag,
                     laya_error *err) {
  char *snap = fmt("%s/snapshots/%s%s", repo_dir, commit, NULL);
  char *dst = fmt("%s/snapshots/%s/%s", repo_dir, commit, path);
  char *slash = strrchr(dst, '/');
  *slash = 0;
  int rc = make_dirs(dst);
  bool inside = !rc && dir_inside(dst, snap);
  *slash = '/';
  strbuf target;
  sb_init(&target);
  sb_puts(&target, "../../");
  for (const char *p = path; *p; p++)
    if (*p == '/') sb_puts(&target, "../");
  sb_printf(&target, "blobs/%s", etag);
  struct stat st;
  if (rc) {
    rc = laya_err(err, LAYA_ERR_IO, "OSError", "cannot create the folder of %s in the cache: %s", dst,
                  strerror(errno));
  } else if (!inside) {
    rc = laya_err(err, LAYA_ERR_IO, "OSError",
                  "refusing to link %s: its folder resolves outside the snapshot %s", dst, snap);
  } else if (lstat(dst, &st) == 0 && !S_ISLNK(st.st_mode)) {
    rc = laya_err(err, LAYA_ERR_IO, "OSError",
                  "refusing to replace %s in the cache: it is not a link to a blob", dst);
  } else {
    unlink(dst);
    if (symlink(target.data, dst) != 0)
      rc = laya_err(err, LAYA_ERR_IO, "OSError", "cannot link %s into the cache: %s", dst,
                    strerror(errno));
  }
  sb_free(&target);
  free(dst);
  free(snap);
  return rc;
}

/* The digest a pin map gives for `rel`, or NULL. */
static const char *pinned_digest(const json_value *pins, const char *rel) {
  const json_value *v = pins ? json_get(pins, rel) : NULL;
  return v && v->type == JSON_STRING ? v->s : NULL;
}

static bool hex_of_len(const char *s, size_t n) {
  if (strlen(s) != n) return false;
  for (const char *p = s; *p; p++)
    if (!isxdigit((unsigned char)*p)) return false;
  return true;
}

static long long file_size(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A downloaded .json file must parse; NULL when it does, else why not (malloc'd). */
static char *json_problem(const char *path) {
  laya_error e = {0};
  size_t len;
  char *text = fs_read_file_max(path, HUB_MAX_FILE_BYTES, &len, &e);
  if (!text) return strdup(e.message);
  arena a;
  arena_init(&a, 1 << 16);
  json_value *v = json_parse(text, len, &a, NULL, &e);
  free(text);
  arena_free(&a);
  return v ? NULL : strdup(e.message);
}

/* Download one file into the blob store (resuming a partial blob), check it and link it.
 * Like huggingface_hub, a file is taken only with an ETag and a size from the Hub (X-Linked-Size,
 * else Content-Length); the body may not run past that size, and a finished file must have it
 * exactly. Its content is then checked against the ETag: the SHA-256 of an LFS file, the git blob
 * id (SHA-1) of a small one, when the ETag has that form; a .json file must parse. */
static int fetch_file(const hub_http *h, const char *repo, const char *repo_dir, const char *commit,
                      const char *path, const char *rel, const json_value *pins, bool quiet,
                      laya_error *err) {
  char *url = fmt("%s/%s/resolve/%s", h->endpoint, repo, commit);
  char *furl = fmt("%s/%s%s", url, path, NULL);
  free(url);
  char *blob = NULL, *part = NULL;
  /* HEAD without following redirects: the Hub answers with the LFS etag before the CDN */
  http_resp hr;
  resp_init(&hr, NULL, 0);
  int rc = http_do(h, furl, true, false, -1, &hr, err);
  sb_free(&hr.body);
  if (rc) goto out;
  if (hr.status >= 400) {
    rc = status_error("cannot download", furl, hr.status, err);
    goto out;
  }
  char etag[sizeof hr.etag];
  snprintf(etag, sizeof etag, "%s", hr.linked_etag[0] ? hr.linked_etag : hr.etag);
  if (!hub_etag_is_safe(etag)) {
    char *q = quoted(etag, strlen(etag));
    rc = laya_err(err, LAYA_ERR_FORMAT, "OSError",
                  "the Hub sent no usable ETag for %s (got %s); refusing it as a cache file name",
                  furl, q);
    free(q);
    goto out;
  }
  long long size = hr.linked_size >= 0 ? hr.linked_size : hr.status < 300 ? hr.content_length : -1;
  if (size < 0 && hr.status >= 300) { /* a redirect without X-Linked-Size: ask where it leads */
    http_resp fr;
    resp_init(&fr, NULL, 0);
    laya_error ferr = {0};
    if (http_do(h, furl, true, true, -1, &fr, &ferr) == 0 && fr.status < 300) size = fr.content_length;
    sb_free(&fr.body);
  }
  if (size < 0) {
    rc = laya_err(err, LAYA_ERR_FORMAT, "OSError",
                  "the Hub sent no size for %s (no X-Linked-Size or Content-Length); refusing a "
                  "download that cannot be checked",
                  furl);
    goto out;
  }
  const long long cap = !strcmp(rel, "model.safetensors") ? HUB_MAX_WEIGHTS_BYTES : HUB_MAX_FILE_BYTES;
  if (size > cap) {
    rc = laya_err(err, LAYA_ERR_FORMAT, "OSError",
                  "%s is listed at %lld bytes, more than the %lld laya.c accepts for %s", furl, size,
                  cap, rel);
    goto out;
  }
  blob = fmt("%s/blobs/%s%s", repo_dir, etag, NULL);
  part = fmt("%s/blobs/%s.incomplete", repo_dir, etag, NULL);
  if (is_file(blob) && file_size(blob) != size) unlink(blob); /* stale or damaged: fetch again */
  if (!is_file(blob)) {
    for (int attempt = 0; attempt < 3 && !is_file(blob); attempt++) {
      long long have = file_size(part);
      if (have < 0) have = 0;
      if (have > size) { /* cannot be a prefix of this file */
        unlink(part);
        have = 0;
      }
      FILE *f = fopen(part, have ? "ab" : "wb");
      if (!f) {
        rc = laya_err(err, LAYA_ERR_IO, "OSError", "cannot write %s: %s", part, strerror(errno));
        break;
      }
      http_resp gr;
      resp_init(&gr, f, size > 0 ? size : 1); /* no body may hold more than the whole file */
      laya_error derr = {0};
      int drc = have == size ? 0 : http_do(h, furl, false, true, have, &gr, &derr);
      if (have == size) gr.status = 416;
      fclose(f);
      if (gr.over) { /* an endless or oversized body: drop what came */
        unlink(part);
        rc = laya_err(err, LAYA_ERR_IO, "OSError",
                      "download of %s refused: the server sent more than the %lld bytes the Hub "
                      "lists for it",
                      furl, size);
        break;
      }
      if (gr.status == 416) { /* asked past the end: the partial file is already whole */
        drc = 0;
      } else if (!drc && gr.status >= 400) {
        rc = status_error("cannot download", furl, gr.status, err);
        break;
      } else if (!drc && have > 0 && gr.status == 200) {
        /* the server ignored the range and sent everything: keep only the new copy */
        FILE *g = fopen(part, "rb+");
        if (g) {
          /* rewrite: the fresh body starts at offset `have`; move it to the front */
          fseek(g, have, SEEK_SET);
          char *buf = malloc(1 << 16);
          long long wpos = 0, rpos = have;
          size_t k;
          while (buf && (k = fread(buf, 1, 1 << 16, g)) > 0) {
            fseek(g, wpos, SEEK_SET);
            fwrite(buf, 1, k, g);
            wpos += (long long)k;
            rpos += (long long)k;
            fseek(g, rpos, SEEK_SET);
          }
          free(buf);
          fclose(g);
          if (truncate(part, wpos) != 0) drc = -1;
        }
      }
      if (drc) {
        if (attempt == 2) {
          *err = derr;
          rc = derr.code ? derr.code : LAYA_ERR_IO;
        }
        continue; /* truncated transfer: resume from what arrived */
      }
      /* a complete body: check it before it becomes a blob */
      long long got_size = file_size(part);
      if (got_size > size) {
        unlink(part);
        rc = laya_err(err, LAYA_ERR_IO, "OSError",
                      "download of %s refused: %lld bytes arrived, the Hub lists %lld", furl,
                      got_size, size);
        break;
      }
      if (got_size < size) {
        if (attempt == 2)
          rc = laya_err(err, LAYA_ERR_IO, "OSError",
                        "download of %s is incomplete: %lld of the %lld bytes the Hub lists", furl,
                        got_size, size);
        continue; /* resume from what arrived */
      }
      char got[65];
      const char *algo = NULL;
      int hrc = 0;
      if (hex_of_len(etag, 64)) {
        algo = "SHA-256";
        hrc = sha256_file_hex(part, got);
      } else if (hex_of_len(etag, 40)) {
        algo = "git blob SHA-1";
        hrc = sha1_git_blob_file_hex(part, got);
      }
      if (hrc != 0) {
        rc = laya_err(err, LAYA_ERR_IO, "OSError", "cannot read %s: %s", part, strerror(errno));
        break;
      }
      if (algo && strcasecmp(got, etag) != 0) {
        /* bytes that do not hash to their etag are corrupt or substituted: fetch them again */
        unlink(part);
        if (attempt == 2)
          rc = laya_err(err, LAYA_ERR_IO, "OSError", "download of %s is corrupt: %s %s, the Hub says %s",
                        furl, algo, got, etag);
        continue;
      }
      if (ends_with(rel, ".json")) {
        char *why = json_problem(part);
        if (why) {
          unlink(part);
          rc = laya_err(err, LAYA_ERR_FORMAT, "OSError", "download of %s refused: it is not JSON (%s)",
                        furl, why);
          free(why);
          break;
        }
      }
      if (rename(part, blob) != 0) {
        rc = laya_err(err, LAYA_ERR_IO, "OSError", "cannot move %s into the cache: %s", part,
                      strerror(errno));
        break;
      }
    }
    if (!rc && !is_file(blob))
      rc = laya_err(err, LAYA_ERR_IO, "OSError", "download of %s did not complete", furl);
  }
  if (!rc) {
    const char *want = pinned_digest(pins, rel);
    if (want) {
      char got[65] = "(unreadable)";
      if (sha256_file_hex(blob, got) != 0 || strcasecmp(got, want) != 0) {
        rc = laya_value_error(err,
                              "laya: SHA-256 mismatch for %s: expected %s, got %s. The artifact "
                              "does not match the reviewed digest; refusing to load it.",
                              rel, want, got);
      }
    }
  }
  if (!rc) rc = link_blob(repo_dir, commit, path, etag, err);
  if (!rc && !quiet) laya_message("fetched %s/%s", repo, path);
out:
  free(blob);
  free(part);
  free(furl);
  return rc;
}

static int download(const char *repo, const char *subfolder, const char *revision,
                    const hub_options *o, const char *repo_dir, char **commit_out,
                    laya_error *err) {
  static int curl_ready;
  if (!curl_ready) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    curl_ready = 1;
  }
  hub_http h;
  h.token = o->token ? o->token : o->env->hf_token; /* o->env: set by hub_resolve */
  h.endpoint = o->endpoint ? o->endpoint : o->env->hf_endpoint;
  if (!h.endpoint || !*h.endpoint) h.endpoint = "https://huggingface.co";
  char *url = fmt("%s/api/models/%s/revision/%s", h.endpoint, repo, revision);
  http_resp r;
  resp_init(&r, NULL, HUB_MAX_LIST_BYTES); /* a listing past this is refused before it is parsed */
  int rc = http_do(&h, url, false, true, -1, &r, err);
  if (rc && r.over)
    rc = laya_err(err, LAYA_ERR_FORMAT, "OSError",
                  "the Hub's file list for %s is larger than %d bytes; refused", repo,
                  HUB_MAX_LIST_BYTES);
  free(url);
  arena a;
  arena_init(&a, 1 << 14);
  json_value *pins = NULL;
  if (!rc && r.status >= 400) rc = status_error("cannot list files", repo, r.status, err);
  json_value *info = NULL;
  if (!rc) {
    info = json_parse(r.body.data ? r.body.data : "", r.body.len, &a, NULL, err);
    if (!info) rc = laya_err(err, LAYA_ERR_FORMAT, "OSError", "the Hub's file list for %s is not JSON", repo);
  }
  const json_value *sha = info ? json_get(info, "sha") : NULL;
  const json_value *sib = info ? json_get(info, "siblings") : NULL;
  if (!rc && (!sha || sha->type != JSON_STRING || !is_commit(sha->s) || !sib || sib->type != JSON_ARRAY))
    rc = laya_err(err, LAYA_ERR_FORMAT, "OSError", "the Hub's file list for %s has no commit or files", repo);
  if (!rc && sib->n > HUB_MAX_LIST_FILES)
    rc = laya_err(err, LAYA_ERR_FORMAT, "OSError",
                  "the Hub's file list for %s names %u files, more than the %d laya.c accepts", repo,
                  sib->n, HUB_MAX_LIST_FILES);
  /* Every name is checked before anything is fetched or linked: one that could climb out of the
   * snapshot (absolute, "..", a backslash, a control byte) means the listing is not to be trusted. */
  for (uint32_t i = 0; !rc && i < sib->n; i++) {
    const json_value *fn = json_get(&sib->items[i], "rfilename");
    if (!fn || fn->type != JSON_STRING) continue;
    if (!hub_path_is_safe(fn->s, fn->n)) {
      char *q = quoted(fn->s, fn->n);
      rc = laya_err(err, LAYA_ERR_FORMAT, "OSError",
                    "the Hub's file list for %s names the unsafe path %s (absolute, \"..\", a "
                    "backslash or a control character); refusing the whole download",
                    repo, q);
      free(q);
    }
  }
  if (!rc && o->sha256_json) {
    pins = json_parse(o->sha256_json, strlen(o->sha256_json), &a, NULL, err);
    if (!pins || pins->type != JSON_OBJECT)
      rc = laya_value_error(err, "expected_sha256 must be a mapping of artifact paths to digests");
  }
  size_t prefix = subfolder && *subfolder ? strlen(subfolder) + 1 : 0;
  int fetched = 0;
  uint32_t done_to = 0;
  for (uint32_t i = 0; !rc && i < sib->n; i++, done_to = i) {
    const json_value *fn = json_get(&sib->items[i], "rfilename");
    if (!fn || fn->type != JSON_STRING) continue;
    const char *p = fn->s;
    if (prefix && (strncmp(p, subfolder, prefix - 1) != 0 || p[prefix - 1] != '/')) continue;
    const char *rel = p + prefix;
    if (!needed(rel)) continue;
    rc = fetch_file(&h, repo, repo_dir, sha->s, p, rel, pins, o->quiet, err);
    fetched++;
  }
  if (rc && sib && sib->type == JSON_ARRAY && sha && sha->type == JSON_STRING && is_commit(sha->s)) {
    /* a failed download leaves no half snapshot that a later offline load would take as whole:
     * the links made so far go (their blobs stay, so a retry does not fetch them again) */
    for (uint32_t i = 0; i <= done_to && i < sib->n; i++) {
      const json_value *fn = json_get(&sib->items[i], "rfilename");
      if (!fn || fn->type != JSON_STRING || !hub_path_is_safe(fn->s, fn->n)) continue;
      const char *rel = fn->s + prefix;
      if (prefix && (strncmp(fn->s, subfolder, prefix - 1) != 0 || fn->s[prefix - 1] != '/')) continue;
      if (!needed(rel)) continue;
      char *dst = fmt("%s/snapshots/%s/%s", repo_dir, sha->s, fn->s);
      struct stat st;
      if (dst && lstat(dst, &st) == 0 && S_ISLNK(st.st_mode)) unlink(dst);
      free(dst);
    }
  }
  if (!rc && !fetched)
    rc = laya_err(err, LAYA_ERR_NOT_FOUND, "OSError", "%s%s%s holds no Laya checkpoint files", repo,
                  prefix ? "/" : "", prefix ? subfolder : "");
  if (!rc && !is_commit(revision)) {
    char *refs = fmt("%s/refs%s%s", repo_dir, NULL, NULL);
    char *ref = fmt("%s/refs/%s%s", repo_dir, revision, NULL);
    char *slash = strrchr(ref, '/');
    *slash = 0;
    make_dirs(ref);
    *slash = '/';
    FILE *f = fopen(ref, "wb");
    if (f) {
      fputs(sha->s, f);
      fclose(f);
    }
    free(refs);
    free(ref);
  }
  if (!rc) *commit_out = strdup(sha->s);
  sb_free(&r.body);
  arena_free(&a);
  return rc;
}
#endif /* LAYA_HAVE_CURL */

static int resolve(const char *repo_or_path, const char *subfolder, const hub_options *o, char **dir, char **commit,
                   laya_error *err);

int hub_resolve(const char *repo_or_path, const char *subfolder, const hub_options *o_in, char **dir,
                char **commit, laya_error *err) {
  hub_options o;
  hub_options_init(&o);
  if (o_in) o = *o_in;
  laya_env_options own;
  o.env = hub_env(&o, &own);
  int rc = resolve(repo_or_path, subfolder, &o, dir, commit, err);
  laya_env_options_free(&own);
  return rc;
}

static int resolve(const char *repo_or_path, const char *subfolder, const hub_options *o, char **dir, char **commit,
                   laya_error *err) {
  *dir = NULL;
  if (commit) *commit = NULL;
  struct stat st;
  if (stat(repo_or_path, &st) == 0) {
    char *d = subfolder && *subfolder ? fmt("%s/%s%s", repo_or_path, subfolder, NULL)
                                      : strdup(repo_or_path);
    if (subfolder && *subfolder && !is_dir(d)) {
      free(d);
      return laya_err(err, LAYA_ERR_NOT_FOUND, "FileNotFoundError",
                      "Subfolder '%s' not found in '%s'.", subfolder, repo_or_path);
    }
    *dir = d;
    return 0;
  }
  if (repo_or_path[0] == '/' || !strncmp(repo_or_path, "./", 2) || !strncmp(repo_or_path, "../", 3))
    return laya_err(err, LAYA_ERR_NOT_FOUND, "FileNotFoundError",
                    "Local model path not found: '%s'. Check that the directory exists and that "
                    "training saved the model successfully.",
                    repo_or_path);
  /* a Hub id: org/name, nothing that could climb out of the cache */
  const char *slash = strchr(repo_or_path, '/');
  if (!slash || strchr(slash + 1, '/') || strstr(repo_or_path, "..") || !slash[1] ||
      slash == repo_or_path || !hub_path_is_safe(repo_or_path, strlen(repo_or_path)))
    return laya_value_error(err, "'%s' is neither a local checkpoint nor a Hub repo id (org/name)",
                            repo_or_path);
  if (subfolder && *subfolder && !hub_path_is_safe(subfolder, strlen(subfolder)))
    return laya_value_error(err, "unsafe subfolder '%s'", subfolder);
  const char *revision = o->revision;
  if (!revision || !*revision) revision = o->env->revision;
  if (!revision || !*revision) revision = "main";
  if (!hub_path_is_safe(revision, strlen(revision)))
    return laya_value_error(err, "unsafe revision '%s'", revision);
  char *cache = hub_cache_dir(o);
  char *repo_dir = repo_folder(cache, repo_or_path);
  char *sha = NULL;
  char *snap = cached_snapshot(repo_dir, revision, subfolder, &sha);
  int rc = 0;
  bool offline = o->offline < 0 ? o->env->hf_hub_offline > 0 : o->offline != 0;
  if (!snap && offline) {
    rc = laya_err(err, LAYA_ERR_NOT_FOUND, "OSError",
                  "%s%s%s (revision %s) is not in the Hugging Face cache at %s and "
                  "HF_HUB_OFFLINE is set, so it cannot be downloaded",
                  repo_or_path, subfolder && *subfolder ? "/" : "", subfolder ? subfolder : "",
                  revision, cache);
  } else if (!snap) {
#ifdef LAYA_HAVE_CURL
    if (make_dirs(repo_dir) != 0) {
      rc = laya_err(err, LAYA_ERR_IO, "OSError", "cannot create %s: %s", repo_dir, strerror(errno));
    } else {
      char *blobs = fmt("%s/blobs%s%s", repo_dir, NULL, NULL);
      make_dirs(blobs);
      free(blobs);
      rc = download(repo_or_path, subfolder, revision, o, repo_dir, &sha, err);
      if (!rc) {
        snap = subfolder && *subfolder ? fmt("%s/snapshots/%s/%s", repo_dir, sha, subfolder)
                                       : fmt("%s/snapshots/%s%s", repo_dir, sha, NULL);
        if (!snapshot_complete(snap))
          rc = laya_err(err, LAYA_ERR_NOT_FOUND, "OSError",
                        "%s at %s lacks rl_agent_config.json, model.safetensors, encoder/ or "
                        "tokenizer/; it is not a Laya checkpoint",
                        repo_or_path, sha);
      }
    }
#else
    rc = laya_err(err, LAYA_ERR_UNSUPPORTED, "OSError",
                  "%s is not in the Hugging Face cache at %s, and this build cannot download "
                  "(built without libcurl)",
                  repo_or_path, cache);
#endif
  }
  if (!rc) {
    *dir = snap;
    snap = NULL;
    if (commit) {
      *commit = sha;
      sha = NULL;
    }
  }
  free(snap);
  free(sha);
  free(cache);
  free(repo_dir);
  return rc;
}
