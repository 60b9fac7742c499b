/* pack_cache.c: packed weights kept between processes (see pack_cache.h). */
#include "model/pack_cache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/fsutil.h"
#include "core/hash64.h"
#include "core/options.h"
#include "core/sha256.h"
#include "model/artifact.h"

char *pack_cache_dir(const laya_env_options *env) {
  laya_env_options own;
  laya_env_options_init(&own);
  if (!env) { /* a caller without laya_open's read (tools, tests) */
    laya_error ignored;
    laya_env_options_read_one(&own, "LAYA_CACHE_DIR", &ignored);
    laya_env_options_read_one(&own, "XDG_CACHE_HOME", &ignored);
    laya_env_options_read_one(&own, "HOME", &ignored);
    env = &own;
  }
  const char *e = env->cache_dir, *x = env->xdg_cache_home, *h = env->home;
  char buf[PATH_MAX];
  if (e && *e) snprintf(buf, sizeof buf, "%s", e);
  else if (x && *x) snprintf(buf, sizeof buf, "%s/laya-c", x);
  else if (h && *h) snprintf(buf, sizeof buf, "%s/.cache/laya-c", h);
  else return NULL;
  return strdup(buf);
}

/* mkdir -p, mode 0755 for new directories. */
static int mkdirs(const char *path) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) return -1;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
    *s = '/';
  }
  return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int is_hex64(const char *s) {
  if (strlen(s) != 64) return 0;
  for (int i = 0; i < 64; i++)
    if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return 0;
  return 1;
}

/* Write text to path through a temp file in the same directory and a rename. */
static int write_atomic(const char *path, const char *text) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp) return -1;
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* A file's identity: device, inode, size, modification and change times (any write or rename
 * over it changes the change time, which user space cannot set). */
static int same_identity(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* SHA-256 hex of a checkpoint file: the Hub blob name, a memo matching the file's identity, or
 * computed (and memoised). 0, -1 (unreadable), or with memo_only 1 when it would have to be
 * computed (nothing is read then). *id gets the file's identity when non-NULL. */
static int file_sha256_ex(const char *cache, const char *path, char hex[65], int memo_only, struct stat *ident) {
  char real[PATH_MAX];
  struct stat st;
  if (!realpath(path, real) || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  if (ident) *ident = st;
  /* huggingface_hub stores an LFS file as blobs/<its SHA-256> (checked when it downloads it) */
  const char *base = strrchr(real, '/');
  if (base && base - real >= 6 && !strncmp(base - 6, "/blobs", 6) && is_hex64(base + 1)) {
    memcpy(hex, base + 1, 65);
    return 0;
  }
  char id[65], memo[PATH_MAX], line[256], want[200];
  sha256_hex(real, strlen(real), id);
  snprintf(memo, sizeof memo, "%s/digests/%s", cache, id);
  snprintf(want, sizeof want, "laya-digest-1 %llu %llu %lld %lld.%09ld %lld.%09ld", (unsigned long long)st.st_dev,
           (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
           (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  FILE *f = fopen(memo, "r");
  if (f) {
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    size_t wl = strlen(want);
    if (got && !strncmp(line, want, wl) && line[wl] == ' ') {
      line[wl + 65] = 0;
      if (is_hex64(line + wl + 1)) {
        memcpy(hex, line + wl + 1, 65);
        return 0;
      }
    }
  }
  if (memo_only) return 1;
  if (sha256_file_hex(real, hex) != 0) return -1;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/digests", cache);
  snprintf(line, sizeof line, "%s %s\n", want, hex);
  if (mkdirs(dir) == 0) (void)write_atomic(memo, line); /* a memo that cannot be written costs a hash next time */
  return 0;
}

static int file_sha256(const char *cache, const char *path, char hex[65]) {
  return file_sha256_ex(cache, path, hex, 0, NULL);
}

/* ---- the NaN/Inf scan's result, memoised by the weights' SHA-256 ---------------------------------
 * nonfinite/<weights sha256>: "laya-nonfinite-1 VALUES TENSORS CHECK\nNAMES" (CHECK: hash64 hex of
 * the first line's numbers and NAMES; a memo that does not parse or match is ignored and the scan
 * runs again). The scan is a pass over every byte of model.safetensors; a hit reads no weight
 * byte otherwise, so the memo saves the scan's whole cost there. */
static uint64_t nonfinite_check(long long values, int tensors, const char *names, size_t len) {
  char head[64];
  int n = snprintf(head, sizeof head, "%lld %d", values, tensors);
  return hash64(names, len, hash64(head, (size_t)n, 0));
}

static int nonfinite_memo_read(const char *cache, const char *weights_hex, const checkpoint *ck, strbuf *warnings) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/nonfinite/%s", cache, weights_hex);
  size_t len = 0;
  char *text = fs_read_file_max(path, 1 << 16, &len, NULL);
  if (!text) return -1;
  long long values = -1;
  int tensors = -1, used = 0;
  char check[17] = "";
  const char *nl = memchr(text, '\n', len);
  int ok = nl && sscanf(text, "laya-nonfinite-1 %lld %d %16[0-9a-f]%n", &values, &tensors, check, &used) == 3 &&
           text + used == nl && values >= 0 && tensors >= 0 && (values > 0) == (tensors > 0);
  if (ok) {
    const char *names = nl + 1;
    size_t nlen = len - (size_t)(names - text);
    char want[17];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)nonfinite_check(values, tensors, names, nlen));
    ok = !strcmp(check, want) && memchr(names, 0, nlen) == NULL;
    if (ok) checkpoint_nonfinite_warning(ck->st.path, values, tensors, names, warnings);
  }
  free(text);
  return ok ? 0 : -1;
}

/* The memo of a scan's result. */
static void nonfinite_store(const char *cache, const char *weights_hex, long long values, int tensors, const char *names,
                            size_t names_len) {
  strbuf text;
  sb_init(&text);
  char dir[PATH_MAX], path[PATH_MAX + 80];
  snprintf(dir, sizeof dir, "%s/nonfinite", cache);
  snprintf(path, sizeof path, "%s/%s", dir, weights_hex);
  sb_printf(&text, "laya-nonfinite-1 %lld %d %016llx\n%s", values, tensors,
            (unsigned long long)nonfinite_check(values, tensors, names, names_len), names);
  if (mkdirs(dir) == 0) (void)write_atomic(path, sb_cstr(&text)); /* unwritable: the next open scans again */
  sb_free(&text);
}

/* Scan (the weights are read here first: the packing that follows finds them in the page cache)
 * and warn; the result into *values, *tensors and names for the memo. */
static void nonfinite_scan(const checkpoint *ck, strbuf *warnings, long long *values, int *tensors, strbuf *names) {
  int64_t v;
  checkpoint_nonfinite_scan(&ck->st, &v, tensors, names);
  *values = (long long)v;
  checkpoint_nonfinite_warning(ck->st.path, v, *tensors, sb_cstr(names), warnings);
}

/* ---- verified stamps ----------------------------------------------------------------------------
 * ENTRY.verified: "laya-verified-1 DEV INO SIZE MTIME CTIME\n", written after every checksum of
 * ENTRY matched (artifact_open's full check). An open whose entry has the same identity (device,
 * inode, size, modification and change times) skips the per-array checksums (one pass over every
 * packed byte) and keeps the header, index and layout checks. Any write to the entry, and any
 * rename over it, changes its change time, which user space cannot set back, so a modified entry
 * is checked in full (and rebuilt if it fails). A stamp is written only when the entry's change
 * time is at least STAMP_SETTLE_NS in the past: a write landing in the same timestamp tick as the
 * recorded one could otherwise leave the change time as recorded. Not covered: bytes that change
 * without a write through the file system (media errors below the page cache). */
#define STAMP_SETTLE_NS 200000000LL

static void stamp_text(const struct stat *st, char *out, size_t cap) {
  snprintf(out, cap, "laya-verified-1 %llu %llu %lld %lld.%09ld %lld.%09ld\n", (unsigned long long)st->st_dev,
           (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
           (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

/* 1 when entry's stamp matches st (the entry's identity now). */
static int stamp_matches(const char *entry, const struct stat *st) {
  char path[PATH_MAX + 160], want[200], got[200];
  snprintf(path, sizeof path, "%s.verified", entry);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(got, 1, sizeof got - 1, f);
  fclose(f);
  got[n] = 0;
  stamp_text(st, want, sizeof want);
  return !strcmp(got, want);
}

static void stamp_write(const char *entry, const struct stat *st) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long long age = (long long)(now.tv_sec - st->st_ctim.tv_sec) * 1000000000LL + (now.tv_nsec - st->st_ctim.tv_nsec);
  if (age < STAMP_SETTLE_NS) return; /* too fresh: the next full check stamps it */
  char path[PATH_MAX + 160], text[200];
  snprintf(path, sizeof path, "%s.verified", entry);
  stamp_text(st, text, sizeof text);
  (void)write_atomic(path, text);
}

static void release_artifact(void *a) { artifact_close(a); }

/* Temp files a writer left when its process died mid-write (a write takes seconds; one an hour old
 * has no writer any more): removed before a new entry is written, so they do not pile up. */
static void sweep_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strstr(e->d_name, ".laya.tmp-")) continue;
    char p[PATH_MAX + 300];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > 3600) unlink(p);
  }
  closedir(d);
}

/* dst = s (cut to cap - 1 bytes). */
static void put_str(char *dst, size_t cap, const char *s) {
  size_t n = strlen(s);
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = 0;
}

/* The entry's artifact made into a backend, or NULL with why (the entry is then not used). */
static backend *from_entry(const char *path, const checkpoint *ck, const backend_options *bo, char *why, size_t cap) {
  laya_error e;
  struct stat st;
  if (stat(path, &st) != 0) {
    put_str(why, cap, strerror(errno));
    return NULL;
  }
  int trusted = stamp_matches(path, &st);
  artifact *a = artifact_open_ex(path, trusted ? ARTIFACT_SKIP_ARRAY_CHECKSUMS : 0, &e);
  /* a rename landing between the stat and the open means the file opened is not the one stat'd:
   * it is not trusted on the old file's stamp, nor stamped with the old file's identity */
  struct stat now;
  int same = a && stat(path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
             now.st_size == st.st_size && now.st_ctim.tv_sec == st.st_ctim.tv_sec &&
             now.st_ctim.tv_nsec == st.st_ctim.tv_nsec;
  if (a && trusted && !same) {
    artifact_close(a);
    trusted = 0;
    a = artifact_open(path, &e);
  }
  if (a && !trusted && same) stamp_write(path, &st); /* every checksum matched */
  if (!a) {
    put_str(why, cap, e.message);
    return NULL;
  }
  model_weights aw;
  if (artifact_weights(a, &aw, &e)) {
    put_str(why, cap, e.message);
    artifact_close(a);
    return NULL;
  }
  const encoder_config *x = &aw.enc, *y = &ck->w.enc;
  backend *b = NULL;
  const tensor *ct = ck->w.tok_embeddings;
  if (artifact_tok_external(a)) { /* the checkpoint's own: the key holds its weights' SHA-256 */
    if (!ct || !ct->data || ct->dtype != aw.tok_embeddings->dtype || ct->numel != aw.tok_embeddings->numel) {
      put_str(why, cap, "the entry's token embeddings do not match the checkpoint's");
      artifact_weights_free(&aw);
      artifact_close(a);
      return NULL;
    }
    aw.tok_embeddings = ct;
  }
  if (artifact_precision(a) != bo->precision || x->hidden != y->hidden || x->n_layers != y->n_layers ||
      x->n_heads != y->n_heads || x->intermediate != y->intermediate || x->vocab != y->vocab || x->act != y->act ||
      aw.head_layers != ck->w.head_layers || aw.head_heads != ck->w.head_heads || aw.n_act != ck->w.n_act) {
    put_str(why, cap, "the entry does not match the checkpoint");
  } else {
    aw.enc = ck->w.enc; /* every field as the checkpoint's loader parsed it */
    backend_options o = *bo;
    b = backend_cpu_create(&aw, &o, &e);
    if (!b) put_str(why, cap, e.message);
  }
  artifact_weights_free(&aw);
  if (!b || backend_cpu_adopt(b, release_artifact, a)) {
    if (b) b->destroy(b);
    artifact_close(a);
    return NULL;
  }
  return b;
}

/* The entry's path for the key of what the packed bytes depend on: the packing format (container
 * version, the backend's layout), the precision, the head's depth and act count, and the SHA-256 of
 * model.safetensors and encoder/config.json. (rl_agent_config.json matters only through the head's
 * depth and the act head's size, which go in as numbers: a calibration rewriting its temperatures
 * keeps the entry.) */
static void entry_path(const char *cache, const char *prec, int head_layers, int n_act, const char *weights_hex,
                       const char *config_hex, char *dir, size_t dcap, char *entry, size_t ecap) {
  char key_text[1024], key[65];
  snprintf(key_text, sizeof key_text,
           "laya.c packed weights\nformat %d %s tok-external\nprecision %s\nhead_layers %d n_act %d\n"
           "model.safetensors %s\nencoder/config.json %s\n",
           ARTIFACT_VERSION, backend_cpu_layout(), prec, head_layers, n_act, weights_hex, config_hex);
  sha256_hex(key_text, strlen(key_text), key);
  snprintf(dir, dcap, "%s/packed", cache);
  snprintf(entry, ecap, "%s/%s-%s.laya", dir, key, prec);
}

/* The weights' SHA-256 computed beside the packing, when no memo had it (a file never hashed
 * before): SHA-256 is one serial pass (0.5-1 s for a large model's weights), the packing runs on
 * every core. Small weights: the open waits for both (then looks the key up); large ones
 * (HASH_WAIT_MIN): the open returns once packed and the writer joins the hasher. */
typedef struct hasher {
  pthread_t th;
  char cache[PATH_MAX - 128], path[PATH_MAX + 32], hex[65];
  struct stat id;
  int rc;
} hasher;

static void *hash_run(void *arg) {
  hasher *h = arg;
  h->rc = file_sha256_ex(h->cache, h->path, h->hex, 0, &h->id);
  return NULL;
}

/* The entry written after a miss. By default on a background thread, so the open returns once the
 * weights are packed; the backend joins the writer when it is destroyed (laya_close), before its
 * arrays go. A process that exits without closing the model leaves only a temp file (never a
 * partial entry). */
typedef struct bg_writer {
  pthread_t th;
  char entry[PATH_MAX + 128], dir[PATH_MAX], ckdir[PATH_MAX], weights_hex[65];
  const model_weights *w;
  const backend *b;
  int rc;
  char why[PATH_MAX + 700];
  /* a digest still being computed (large weights never hashed before): joined here, then the
   * NaN/Inf memo is stored and the entry named; no entry is written when one is there already */
  hasher *h;
  struct stat weights_id;
  char cache[PATH_MAX - 128], config_hex[65], prec[8];
  int head_layers, n_act, nf_scanned, nf_tensors;
  long long nf_values;
  strbuf nf_names;
} bg_writer;

static void bg_run(bg_writer *g) {
  laya_error e;
  g->rc = 0;
  g->why[0] = 0;
  if (g->h) {
    pthread_join(g->h->th, NULL);
    int ok = g->h->rc == 0 && same_identity(&g->h->id, &g->weights_id);
    memcpy(g->weights_hex, g->h->hex, 65);
    snprintf(g->why, sizeof g->why, "%s changed or could not be read during the open", g->h->path);
    free(g->h);
    g->h = NULL;
    if (!ok) { /* the file changed under the open: key nothing on it */
      g->rc = -1;
      return;
    }
    g->why[0] = 0;
    if (g->nf_scanned)
      nonfinite_store(g->cache, g->weights_hex, g->nf_values, g->nf_tensors, sb_cstr(&g->nf_names), g->nf_names.len);
    entry_path(g->cache, g->prec, g->head_layers, g->n_act, g->weights_hex, g->config_hex, g->dir, sizeof g->dir,
               g->entry, sizeof g->entry);
    struct stat st;
    if (stat(g->entry, &st) == 0) return; /* stored before (a copy of these weights) */
  }
  if (mkdirs(g->dir) != 0) {
    g->rc = -1;
    snprintf(g->why, sizeof g->why, "cannot create %s: %s", g->dir, strerror(errno));
    return;
  }
  sweep_stale(g->dir);
  if (artifact_write_ex(g->entry, g->ckdir, g->w, g->b, g->weights_hex, ARTIFACT_WRITE_EXTERNAL_TOK, &e) != 0) {
    g->rc = -1; /* the next open packs again */
    put_str(g->why, sizeof g->why, e.message);
  }
}

static void *bg_write(void *arg) {
  bg_run(arg);
  return NULL;
}

static void bg_free(bg_writer *g) {
  if (g->h) { /* never started writing: the hasher still has to be joined */
    pthread_join(g->h->th, NULL);
    free(g->h);
  }
  sb_free(&g->nf_names);
  free(g);
}

static void bg_join(void *arg) {
  bg_writer *g = arg;
  pthread_join(g->th, NULL);
  bg_free(g);
}

/* Weights of at least this many bytes never hashed before: the open returns once they are packed,
 * and the writer finishes the digest (SHA-256 runs at about 1 GB/s on one core: longer than the
 * packing on many). Smaller ones are waited for, so a copy of packed weights reports "hit". */
#define HASH_WAIT_MIN ((int64_t)64 << 20)

/* Write g's entry in the background (sync, LAYA_PACK_CACHE=sync: now) and say so in status. */
static backend *start_writer(bg_writer *g, backend *b, const char *sync, char *status, size_t cap, const char *why) {
  int background = !(sync && !strcmp(sync, "sync"));
  if (background && pthread_create(&g->th, NULL, bg_write, g) == 0) {
    if (backend_cpu_adopt(b, bg_join, g) != 0) bg_join(g); /* cannot happen: b is a fresh "cpu" backend */
  } else {
    bg_run(g);
    int rc = g->rc;
    if (rc) snprintf(status, cap, "miss (not stored: %s)", g->why);
    bg_free(g);
    if (rc) return b;
  }
  if (why[0]) snprintf(status, cap, "rebuilt (%s)", why);
  else snprintf(status, cap, "miss");
  return b;
}

static backend *cached_backend(checkpoint *ck, const backend_options *bo, const laya_env_options *env, strbuf *warnings,
                               char *status, size_t cap, laya_error *err) {
  const char *off = env->pack_cache;
  int bypass = env->cpu_study || env->cpu_fp32_layers || env->cpu_int8_bf16;
  char *cache = off && !strcmp(off, "0") ? NULL : pack_cache_dir(env);
  if (!cache || bypass || ck->w.packed || bo->precision == PREC_FP16) {
    snprintf(status, cap, "%s", ck->w.packed ? "none (an artifact)" : "off");
    free(cache);
    return backend_cpu_create(&ck->w, bo, err);
  }
  const char *prec = backend_precision_name(bo->precision);
  /* the digests: encoder/config.json is small; the weights' comes from its memo or Hub name, and
   * is otherwise computed beside the packing (hasher) */
  char path[PATH_MAX + 32], config_hex[65], weights_hex[65] = "";
  struct stat wid;
  snprintf(path, sizeof path, "%s/encoder/config.json", ck->dir);
  int wrc = file_sha256(cache, path, config_hex);
  if (wrc == 0) {
    snprintf(path, sizeof path, "%s/model.safetensors", ck->dir);
    wrc = file_sha256_ex(cache, path, weights_hex, 1, &wid);
  }
  hasher *h = wrc == 1 ? calloc(1, sizeof *h) : NULL;
  if (h) {
    put_str(h->cache, sizeof h->cache, cache);
    put_str(h->path, sizeof h->path, path);
    if (pthread_create(&h->th, NULL, hash_run, h) != 0) {
      free(h);
      h = NULL;
    }
  }
  if (wrc == 1 && !h) wrc = file_sha256(cache, path, weights_hex); /* no thread: hash first */
  if (wrc < 0) {
    snprintf(status, cap, "off (cannot read %s)", path);
    free(cache);
    return backend_cpu_create(&ck->w, bo, err);
  }
  long long nf_values = 0;
  int nf_tensors = 0, nf_scanned = 0;
  strbuf nf_names;
  sb_init(&nf_names);
  if (ck->nonfinite_pending) {
    if (h || nonfinite_memo_read(cache, weights_hex, ck, warnings) != 0) {
      nonfinite_scan(ck, warnings, &nf_values, &nf_tensors, &nf_names);
      nf_scanned = 1;
    }
    ck->nonfinite_pending = 0;
  }
  char dir[PATH_MAX], entry[PATH_MAX + 128], why[600] = "";
  backend *b = NULL;
  if (h) /* pack now */
    b = backend_cpu_create(&ck->w, bo, err);
  if (h && b && (int64_t)wid.st_size >= HASH_WAIT_MIN) { /* the writer takes the digest over */
    bg_writer *g = calloc(1, sizeof *g);
    if (g) {
      sb_init(&g->nf_names);
      g->h = h;
      g->weights_id = wid;
      put_str(g->cache, sizeof g->cache, cache);
      memcpy(g->config_hex, config_hex, 65);
      put_str(g->prec, sizeof g->prec, prec);
      g->head_layers = ck->w.head_layers;
      g->n_act = ck->w.n_act;
      g->nf_scanned = nf_scanned;
      g->nf_values = nf_values;
      g->nf_tensors = nf_tensors;
      sb_append(&g->nf_names, nf_names.data ? nf_names.data : "", nf_names.len);
      sb_free(&nf_names);
      free(cache);
      put_str(g->ckdir, sizeof g->ckdir, ck->dir);
      g->w = &ck->w;
      g->b = b;
      return start_writer(g, b, env->pack_cache, status, cap, "");
    }
  }
  if (h) { /* look for an entry once the digest is known */
    pthread_join(h->th, NULL);
    int ok = h->rc == 0;
    struct stat hid = h->id;
    memcpy(weights_hex, h->hex, 65);
    free(h);
    if (!b) {
      free(cache);
      sb_free(&nf_names);
      return NULL;
    }
    if (!ok || !same_identity(&hid, &wid)) { /* the file changed under the open: key nothing on it */
      snprintf(status, cap, "miss (not stored: %s changed or could not be read during the open)", path);
      free(cache);
      sb_free(&nf_names);
      return b;
    }
  }
  if (nf_scanned) nonfinite_store(cache, weights_hex, nf_values, nf_tensors, sb_cstr(&nf_names), nf_names.len);
  sb_free(&nf_names);
  entry_path(cache, prec, ck->w.head_layers, ck->w.n_act, weights_hex, config_hex, dir, sizeof dir, entry, sizeof entry);
  free(cache);
  struct stat st;
  if (stat(entry, &st) == 0) { /* (after packing too: a copy of weights packed before maps them) */
    backend *e = from_entry(entry, ck, bo, why, sizeof why);
    if (e) {
      if (b) b->destroy(b);
      snprintf(status, cap, "hit");
      return e;
    }
  }
  if (!b && !(b = backend_cpu_create(&ck->w, bo, err))) return NULL;
  bg_writer *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(status, cap, "miss (not stored: out of memory)");
    return b;
  }
  sb_init(&g->nf_names);
  put_str(g->entry, sizeof g->entry, entry);
  put_str(g->dir, sizeof g->dir, dir);
  put_str(g->ckdir, sizeof g->ckdir, ck->dir);
  memcpy(g->weights_hex, weights_hex, 65);
  g->w = &ck->w;
  g->b = b;
  return start_writer(g, b, env->pack_cache, status, cap, why);
}

backend *pack_cache_cpu_backend(checkpoint *ck, const backend_options *bo, strbuf *warnings, char *status, size_t cap,
                                laya_error *err) {
  if (bo->env) return cached_backend(ck, bo, bo->env, warnings, status, cap, err);
  /* a caller without laya_open's read (tests): the cache's variables now (the backend reads its own) */
  static const char *const mine[] = {"LAYA_PACK_CACHE", "LAYA_CACHE_DIR",       "XDG_CACHE_HOME",    "HOME",
                                      "LAYA_CPU_STUDY",  "LAYA_CPU_FP32_LAYERS", "LAYA_CPU_INT8_BF16"};
  laya_env_options own;
  laya_env_options_init(&own);
  backend *b = NULL;
  size_t i = 0;
  while (i < sizeof mine / sizeof mine[0] && !laya_env_options_read_one(&own, mine[i], err)) i++;
  if (i == sizeof mine / sizeof mine[0]) b = cached_backend(ck, bo, &own, warnings, status, cap, err);
  laya_env_options_free(&own);
  return b;
}
