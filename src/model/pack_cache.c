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
#include "core/options.h"
#include "core/sha256.h"
#include "model/artifact.h"

char *pack_cache_dir(void) {
  const char *e = laya_env("LAYA_CACHE_DIR"), *x = laya_env("XDG_CACHE_HOME"), *h = laya_env("HOME");
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

/* SHA-256 hex of a checkpoint file: the Hub blob name, a memo matching the file's identity, or
 * computed (and memoised). 0 or -1. */
static int file_sha256(const char *cache, const char *path, char hex[65]) {
  char real[PATH_MAX];
  struct stat st;
  if (!realpath(path, real) || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
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
  if (sha256_file_hex(real, hex) != 0) return -1;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/digests", cache);
  snprintf(line, sizeof line, "%s %s\n", want, hex);
  if (mkdirs(dir) == 0) (void)write_atomic(memo, line); /* a memo that cannot be written costs a hash next time */
  return 0;
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
  artifact *a = artifact_open(path, &e);
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
  if (artifact_precision(a) != bo->precision || x->hidden != y->hidden || x->n_layers != y->n_layers ||
      x->n_heads != y->n_heads || x->intermediate != y->intermediate || x->vocab != y->vocab ||
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

/* The entry written in the background after a miss, so the open returns once the weights are
 * packed; the backend joins the writer when it is destroyed (laya_close), before its arrays go.
 * A process that exits without closing the model leaves only a temp file (never a partial entry). */
typedef struct bg_writer {
  pthread_t th;
  char entry[PATH_MAX + 128], ckdir[PATH_MAX], weights_hex[65];
  const model_weights *w;
  const backend *b;
} bg_writer;

static void *bg_write(void *arg) {
  bg_writer *g = arg;
  laya_error e;
  (void)artifact_write(g->entry, g->ckdir, g->w, g->b, g->weights_hex, &e); /* a failure: the next open packs again */
  return NULL;
}

static void bg_join(void *arg) {
  bg_writer *g = arg;
  pthread_join(g->th, NULL);
  free(g);
}

backend *pack_cache_cpu_backend(const checkpoint *ck, const backend_options *bo, char *status, size_t cap,
                                laya_error *err) {
  const char *off = laya_env("LAYA_PACK_CACHE");
  int bypass = laya_env("LAYA_CPU_STUDY") || laya_env("LAYA_CPU_FP32_LAYERS") || laya_env("LAYA_CPU_INT8_BF16");
  char *cache = off && !strcmp(off, "0") ? NULL : pack_cache_dir();
  if (!cache || bypass || ck->w.packed || bo->precision == PREC_FP16) {
    snprintf(status, cap, "%s", ck->w.packed ? "none (an artifact)" : "off");
    free(cache);
    return backend_cpu_create(&ck->w, bo, err);
  }
  /* the key: what the packed bytes depend on */
  /* (rl_agent_config.json matters only through the head's depth and the act head's size, which
   * go in as numbers: a calibration rewriting its temperatures keeps the entry) */
  static const char *const srcs[] = {"model.safetensors", "encoder/config.json"};
  char key_text[1024], weights_hex[65] = "";
  int n = snprintf(key_text, sizeof key_text, "laya.c packed weights\nformat %d %s\nprecision %s\nhead_layers %d n_act %d\n",
                   ARTIFACT_VERSION, ARTIFACT_KERNEL_LAYOUT, backend_precision_name(bo->precision), ck->w.head_layers,
                   ck->w.n_act);
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
    char path[PATH_MAX], hex[65];
    snprintf(path, sizeof path, "%s/%s", ck->dir, srcs[i]);
    if (file_sha256(cache, path, hex)) {
      snprintf(status, cap, "off (cannot read %s)", path);
      free(cache);
      return backend_cpu_create(&ck->w, bo, err);
    }
    if (i == 0) memcpy(weights_hex, hex, 65);
    n += snprintf(key_text + n, sizeof key_text - (size_t)n, "%s %s\n", srcs[i], hex);
  }
  char key[65], dir[PATH_MAX], entry[PATH_MAX + 128], why[600] = "";
  sha256_hex(key_text, strlen(key_text), key);
  snprintf(dir, sizeof dir, "%s/packed", cache);
  snprintf(entry, sizeof entry, "%s/%s-%s.laya", dir, key, backend_precision_name(bo->precision));
  free(cache);
  struct stat st;
  if (stat(entry, &st) == 0) {
    backend *b = from_entry(entry, ck, bo, why, sizeof why);
    if (b) {
      snprintf(status, cap, "hit");
      return b;
    }
  }
  backend *b = backend_cpu_create(&ck->w, bo, err);
  if (!b) return NULL;
  if (mkdirs(dir) != 0) {
    snprintf(status, cap, "miss (not stored: cannot create %s: %s)", dir, strerror(errno));
    return b;
  }
  sweep_stale(dir);
  bg_writer *g = calloc(1, sizeof *g);
  const char *sync = laya_env("LAYA_PACK_CACHE");
  int background = g && !(sync && !strcmp(sync, "sync"));
  if (g) {
    put_str(g->entry, sizeof g->entry, entry);
    put_str(g->ckdir, sizeof g->ckdir, ck->dir);
    memcpy(g->weights_hex, weights_hex, 65);
    g->w = &ck->w;
    g->b = b;
  }
  if (background && pthread_create(&g->th, NULL, bg_write, g) == 0) {
    if (backend_cpu_adopt(b, bg_join, g) != 0) bg_join(g); /* cannot happen: b is a fresh "cpu" backend */
  } else {
    laya_error we;
    free(g);
    if (artifact_write(entry, ck->dir, &ck->w, b, weights_hex, &we) != 0) {
      snprintf(status, cap, "miss (not stored: %s)", we.message);
      return b;
    }
  }
  if (why[0]) snprintf(status, cap, "rebuilt (%s)", why);
  else snprintf(status, cap, "miss");
  return b;
}
