/* artifact.c: writer and memory-mapped reader of `laya convert` artifacts (format in artifact.h): a
 * neutral container of a backend's named arrays; what the arrays hold is the backend's business. */
#include "model/artifact.h"
#include "model/config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/fsutil.h"
#include "core/hash64.h"
#include "core/threadpool.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/strbuf.h"

#define HEADER_BYTES 64
#define ALIGN 64

typedef struct art_entry {
  const char *name;
  const char *what; /* "array" / "file" */
  uint64_t off, bytes, hash;
} art_entry;

struct artifact {
  char *path;
  const unsigned char *map;
  size_t size;
  arena ar;
  const json_value *index;
  backend_precision precision;
  const char *layout, *precision_name; /* index strings (in the arena) */
  art_entry *arrays, *files;
  int n_arrays, n_files;
  const json_value *sources;
  encoder_config enc;
  int head_layers, head_heads, n_act, act_hidden;
  tensor tok;
  int tok_external;
};

static uint64_t rd64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void wr64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void wr32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

int artifact_is_artifact(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char magic[8] = {0};
  size_t n = fread(magic, 1, 8, f);
  fclose(f);
  return n == 8 && memcmp(magic, ARTIFACT_MAGIC, 8) == 0;
}

static backend_precision parse_precision(const char *s, int *ok) {
  *ok = 1;
  if (!strcmp(s, "fp32")) return PREC_FP32;
  if (!strcmp(s, "bf16")) return PREC_BF16;
  if (!strcmp(s, "int8")) return PREC_INT8;
  *ok = 0;
  return PREC_FP32;
}

/* {name: [offset, bytes, "hash64 hex"]} -> entries, each checked against the data region. */
static int read_entries(artifact *a, const json_value *obj, const char *what, uint64_t lo, uint64_t hi,
                        art_entry **out, int *n, laya_error *err) {
  if (!obj || obj->type != JSON_OBJECT)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact index has no \"%s\" object", a->path, what);
  *out = arena_alloc(&a->ar, (obj->n ? obj->n : 1) * sizeof(art_entry));
  if (!*out) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  *n = (int)obj->n;
  for (uint32_t i = 0; i < obj->n; i++) {
    const json_member *mb = &obj->members[i];
    const json_value *v = &mb->value;
    char *end = NULL;
    unsigned long long h = 0;
    if (v->type == JSON_ARRAY && v->n == 3 && v->items[2].type == JSON_STRING && strlen(v->items[2].s) == 16)
      h = strtoull(v->items[2].s, &end, 16);
    if (v->type != JSON_ARRAY || v->n != 3 || v->items[0].type != JSON_INT || v->items[1].type != JSON_INT ||
        v->items[0].big || v->items[1].big || v->items[0].i < 0 || v->items[1].i < 0 || !end || *end)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact %s entry %s is not [offset, bytes, checksum]", a->path,
                      what, mb->key);
    uint64_t off = (uint64_t)v->items[0].i, bytes = (uint64_t)v->items[1].i;
    if (off < lo || off > hi || bytes > hi - off)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact %s entry %s [%llu, +%llu) lies outside the data (file truncated?)",
                      a->path, what, mb->key, (unsigned long long)off, (unsigned long long)bytes);
    if (off % ALIGN)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact %s entry %s at offset %llu is not %d-byte aligned", a->path,
                      what, mb->key, (unsigned long long)off, ALIGN);
    (*out)[i].name = mb->key;
    (*out)[i].what = what;
    (*out)[i].off = off;
    (*out)[i].bytes = bytes;
    (*out)[i].hash = (uint64_t)h;
  }
  return 0;
}

/* The entries' checksums, checked on threadpool_default_threads() threads, each taking a run of
 * entries of about equal bytes. Returns the first (lowest offset) failing entry's index, or -1. */
typedef struct verify_ctx {
  const artifact *a;
  const art_entry **all;
  int *cut;  /* [k + 1] entry index where chunk c starts */
  int *first_bad; /* per chunk */
} verify_ctx;

static void verify_chunk(void *ctx, int begin, int end, int thread) {
  (void)thread;
  verify_ctx *v = ctx;
  for (int c = begin; c < end; c++) {
    v->first_bad[c] = -1;
    for (int i = v->cut[c]; i < v->cut[c + 1]; i++) {
      const art_entry *e = v->all[i];
      if (hash64(v->a->map + e->off, (size_t)e->bytes, 0) != e->hash) {
        v->first_bad[c] = i;
        break;
      }
    }
  }
}

static int verify_hashes(const artifact *a, const art_entry **all, int n) {
  uint64_t total = 0;
  for (int i = 0; i < n; i++) total += all[i]->bytes;
  int k = threadpool_default_threads();
  if (k > 16) k = 16;
  if (total < (64u << 20) || k < 1) k = 1; /* small files: not worth the threads */
  int *cut = malloc(sizeof(int) * (size_t)(2 * k + 1));
  laya_error terr;
  threadpool *tp = k > 1 ? threadpool_create(k, &terr) : NULL;
  if (!cut || (k > 1 && !tp)) k = 1;
  int one[3];
  if (!cut) cut = one;
  int *first_bad = cut + k + 1;
  uint64_t acc = 0;
  int c = 1;
  cut[0] = 0;
  for (int i = 0; i < n && c < k; i++) {
    acc += all[i]->bytes;
    if (acc >= total / (uint64_t)k * (uint64_t)c) cut[c++] = i + 1;
  }
  while (c <= k) cut[c++] = n;
  verify_ctx v = {a, all, cut, first_bad};
  parallel_for(tp, k, verify_chunk, &v);
  int bad = -1;
  for (int j = 0; j < k && bad < 0; j++) bad = first_bad[j];
  if (tp) threadpool_destroy(tp);
  if (cut != one) free(cut);
  return bad;
}

static int by_offset(const void *x, const void *y) {
  const art_entry *a = *(const art_entry *const *)x, *b = *(const art_entry *const *)y;
  return a->off < b->off ? -1 : a->off > b->off ? 1 : a->bytes < b->bytes ? -1 : a->bytes > b->bytes;
}

/* No two entries (arrays and files together) share a byte, and every entry's bytes hash to the
 * checksum the writer recorded. Reads every byte once (the mapping is then resident). */
static int check_entries(artifact *a, int hashes, laya_error *err) {
  int n = a->n_arrays + a->n_files;
  const art_entry **all = malloc((size_t)(n ? n : 1) * sizeof *all);
  if (!all) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  for (int i = 0; i < a->n_arrays; i++) all[i] = &a->arrays[i];
  for (int i = 0; i < a->n_files; i++) all[a->n_arrays + i] = &a->files[i];
  qsort(all, (size_t)n, sizeof *all, by_offset);
  int rc = 0;
  uint64_t end = 0;
  const art_entry *prev = NULL;
  for (int i = 0; i < n && !rc; i++) { /* the layout first, then the bytes */
    const art_entry *e = all[i];
    if (prev && e->off < end)
      rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact %s %s [%llu, +%llu) overlaps %s %s [%llu, +%llu)", a->path,
                    e->what, e->name, (unsigned long long)e->off, (unsigned long long)e->bytes, prev->what, prev->name,
                    (unsigned long long)prev->off, (unsigned long long)prev->bytes);
    if (e->off + e->bytes > end) end = e->off + e->bytes, prev = e;
  }
  int bad = rc || !hashes ? -1 : verify_hashes(a, all, n);
  if (bad >= 0) {
    const art_entry *e = all[bad];
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL,
                  "%s: artifact %s %s (bytes %llu to %llu) does not match its checksum: the file is corrupt (convert again)",
                  a->path, e->what, e->name, (unsigned long long)e->off, (unsigned long long)(e->off + e->bytes));
  }
  free(all);
  return rc;
}

static int cfg_int(artifact *a, const json_value *cfg, const char *key, int *out, laya_error *err) {
  const json_value *v = json_get(cfg, key);
  if (!v || v->type != JSON_INT || v->big || v->i < -1 || v->i > (1 << 30))
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config.%s is missing or not a small integer", a->path, key);
  *out = (int)v->i;
  return 0;
}
static int cfg_num(artifact *a, const json_value *cfg, const char *key, double *out, laya_error *err) {
  const json_value *v = json_get(cfg, key);
  if (!v || !json_is_number(v))
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config.%s is missing or not a number", a->path, key);
  *out = v->d;
  return 0;
}

artifact *artifact_open(const char *path, laya_error *err) { return artifact_open_ex(path, 0, err); }

artifact *artifact_open_ex(const char *path, int flags, laya_error *err) {
  artifact *a = calloc(1, sizeof *a);
  if (!a) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    return NULL;
  }
  arena_init(&a->ar, 64 * 1024);
  a->path = strdup(path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    laya_err(err, LAYA_ERR_IO, "FileNotFoundError", "%s: cannot open artifact: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    goto fail;
  }
  if (st.st_size < HEADER_BYTES) {
    close(fd);
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact is %lld bytes, shorter than its %d-byte header", path,
             (long long)st.st_size, HEADER_BYTES);
    goto fail;
  }
  a->size = (size_t)st.st_size;
  void *map = mmap(NULL, a->size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    laya_err(err, LAYA_ERR_IO, NULL, "%s: cannot map artifact: %s", path, strerror(errno));
    goto fail;
  }
  a->map = map;
  const unsigned char *h = a->map;
  if (memcmp(h, ARTIFACT_MAGIC, 8) != 0) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: not a laya artifact (bad magic)", path);
    goto fail;
  }
  uint32_t version = rd32(h + 8);
  if (version != ARTIFACT_VERSION) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact format version %u, this build reads version %d (convert again)",
             path, version, ARTIFACT_VERSION);
    goto fail;
  }
  if (hash64(h, HEADER_BYTES - 8, 0) != rd64(h + 56)) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact header (bytes 0 to 56) does not match its checksum: the file is corrupt",
             path);
    goto fail;
  }
  uint64_t idx_off = rd64(h + 16), idx_bytes = rd64(h + 24), file_bytes = rd64(h + 32), data_off = rd64(h + 40);
  if (file_bytes != a->size || idx_off > a->size || idx_bytes > a->size - idx_off || data_off < HEADER_BYTES ||
      data_off > idx_off) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact header does not match the file (%zu bytes, header says %llu; truncated?)",
             path, a->size, (unsigned long long)file_bytes);
    goto fail;
  }
  if (hash64(a->map + idx_off, (size_t)idx_bytes, 0) != rd64(h + 48)) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact index (bytes %llu to %llu) does not match its checksum: the file is corrupt",
             path, (unsigned long long)idx_off, (unsigned long long)(idx_off + idx_bytes));
    goto fail;
  }
  a->index = json_parse((const char *)a->map + idx_off, (size_t)idx_bytes, &a->ar, NULL, err);
  if (!a->index) {
    laya_err_prefix(err, "%s: artifact index", path);
    goto fail;
  }
  const json_value *fmt = json_get(a->index, "format"), *lay = json_get(a->index, "kernel_layout"),
                   *prec = json_get(a->index, "precision");
  if (!fmt || fmt->type != JSON_STRING || strcmp(fmt->s, "laya-artifact") != 0) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact index format is not \"laya-artifact\"", path);
    goto fail;
  }
  /* the layout is the writing backend's: its reader checks it (cpu: backend/cpu/cpu_artifact.c) */
  if (!lay || lay->type != JSON_STRING || !lay->s[0]) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact index has no kernel_layout", path);
    goto fail;
  }
  a->layout = lay->s;
  int ok = 0;
  if (prec && prec->type == JSON_STRING) a->precision = parse_precision(prec->s, &ok);
  if (!ok) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact precision must be fp32, bf16 or int8", path);
    goto fail;
  }
  a->precision_name = prec->s;
  if (read_entries(a, json_get(a->index, "arrays"), "arrays", data_off, idx_off, &a->arrays, &a->n_arrays, err) ||
      read_entries(a, json_get(a->index, "files"), "files", data_off, idx_off, &a->files, &a->n_files, err))
    goto fail;
  for (int i = 0; i < a->n_arrays; i++) a->arrays[i].what = "array";
  for (int i = 0; i < a->n_files; i++) a->files[i].what = "file";
  if (check_entries(a, !(flags & ARTIFACT_SKIP_ARRAY_CHECKSUMS), err)) goto fail;
  a->sources = json_get(a->index, "sources");
  const json_value *cfg = json_get(a->index, "config");
  encoder_config *c = &a->enc;
  if (!cfg || cfg->type != JSON_OBJECT) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact index has no config", path);
    goto fail;
  }
  if (cfg_int(a, cfg, "hidden", &c->hidden, err) || cfg_int(a, cfg, "n_layers", &c->n_layers, err) ||
      cfg_int(a, cfg, "n_heads", &c->n_heads, err) || cfg_int(a, cfg, "head_dim", &c->head_dim, err) ||
      cfg_int(a, cfg, "intermediate", &c->intermediate, err) || cfg_int(a, cfg, "vocab", &c->vocab, err) ||
      cfg_int(a, cfg, "global_every", &c->global_every, err) || cfg_int(a, cfg, "local_window", &c->local_window, err) ||
      cfg_num(a, cfg, "global_theta", &c->global_theta, err) || cfg_num(a, cfg, "local_theta", &c->local_theta, err) ||
      cfg_num(a, cfg, "norm_eps", &c->norm_eps, err) || cfg_int(a, cfg, "head_layers", &a->head_layers, err) ||
      cfg_int(a, cfg, "head_heads", &a->head_heads, err) || cfg_int(a, cfg, "n_act", &a->n_act, err) ||
      cfg_int(a, cfg, "act_hidden", &a->act_hidden, err))
    goto fail;
  if (c->n_layers < 0 || c->n_layers > ENC_MAX_LAYERS) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config.n_layers %d is out of range", path, c->n_layers);
    goto fail;
  }
  /* the per-layer attention pattern (artifacts written before it had only the interval) */
  c->layer_pattern = false;
  const json_value *gl = json_get(cfg, "global_layers");
  if (gl) {
    if (gl->type != JSON_ARRAY) {
      laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config.global_layers is not a list", path);
      goto fail;
    }
    memset(c->global_layers, 0, sizeof c->global_layers);
    for (unsigned i = 0; i < gl->n; i++) {
      const json_value *x = &gl->items[i];
      if (x->type != JSON_INT || x->big || x->i < 0 || x->i >= c->n_layers) {
        laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config.global_layers[%u] is not a layer index", path, i);
        goto fail;
      }
      c->global_layers[x->i >> 6] |= (uint64_t)1 << (x->i & 63);
    }
    c->layer_pattern = true;
  } else if (c->global_every <= 0) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config has neither global_layers nor a positive global_every", path);
    goto fail;
  }
  /* the GeGLU activation (artifacts written before it was stored ran only "gelu") */
  c->act = ENC_ACT_GELU;
  const json_value *ha = json_get(cfg, "hidden_activation");
  if (ha && (ha->type != JSON_STRING || enc_act_parse(ha->s, &c->act))) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact config.hidden_activation %s is not an activation this build runs",
             path, ha->type == JSON_STRING ? ha->s : json_py_type(ha));
    goto fail;
  }
  const json_value *te = json_get(a->index, "tok_embeddings");
  const json_value *tdt = te ? json_get(te, "dtype") : NULL;
  size_t tbytes = 0;
  const void *tdata = artifact_blob(a, "tok_embeddings", &tbytes);
  const json_value *text = te ? json_get(te, "external") : NULL;
  a->tok_external = text && text->type == JSON_BOOL && text->b && !tdata;
  if (!tdt || tdt->type != JSON_STRING || (!tdata && !a->tok_external)) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact has no tok_embeddings", path);
    goto fail;
  }
  if (strcmp(tdt->s, "F32") && strcmp(tdt->s, "BF16") && strcmp(tdt->s, "F16")) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact tok_embeddings.dtype is '%s', not F32, BF16 or F16", path, tdt->s);
    goto fail;
  }
  a->tok.name = "encoder.embeddings.tok_embeddings.weight";
  a->tok.dtype = !strcmp(tdt->s, "F32") ? DT_F32 : !strcmp(tdt->s, "BF16") ? DT_BF16 : DT_F16;
  a->tok.ndim = 2;
  a->tok.shape[0] = c->vocab;
  a->tok.shape[1] = c->hidden;
  a->tok.numel = (int64_t)c->vocab * c->hidden;
  a->tok.data = tdata;
  if (!a->tok_external && (uint64_t)tbytes != (uint64_t)a->tok.numel * (a->tok.dtype == DT_F32 ? 4 : 2)) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: artifact tok_embeddings has %zu bytes for [%d, %d] %s", path, tbytes,
             c->vocab, c->hidden, tdt->s);
    goto fail;
  }
  return a;
fail:
  artifact_close(a);
  return NULL;
}

void artifact_close(artifact *a) {
  if (!a) return;
  if (a->map) munmap((void *)a->map, a->size);
  arena_free(&a->ar);
  free(a->path);
  free(a);
}

int artifact_tok_external(const artifact *a) { return a->tok_external; }

const char *artifact_path(const artifact *a) { return a->path; }
backend_precision artifact_precision(const artifact *a) { return a->precision; }
const char *artifact_precision_name(const artifact *a) { return a->precision_name; }
const char *artifact_layout(const artifact *a) { return a->layout; }
int artifact_act_hidden(const artifact *a) { return a->act_hidden; }

static const art_entry *find(const art_entry *e, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(e[i].name, name)) return &e[i];
  return NULL;
}

const void *artifact_blob(const artifact *a, const char *name, size_t *bytes) {
  const art_entry *e = find(a->arrays, a->n_arrays, name);
  if (!e) return NULL;
  if (bytes) *bytes = (size_t)e->bytes;
  return a->map + e->off;
}

const char *artifact_file(const artifact *a, const char *relpath, size_t *bytes) {
  const art_entry *e = find(a->files, a->n_files, relpath);
  if (!e) return NULL;
  if (bytes) *bytes = (size_t)e->bytes;
  return (const char *)a->map + e->off;
}

int artifact_n_files(const artifact *a) { return a->n_files; }
const char *artifact_file_name(const artifact *a, int i) { return i >= 0 && i < a->n_files ? a->files[i].name : NULL; }

const char *artifact_source_sha256(const artifact *a, const char *relpath) {
  const json_value *v = a->sources ? json_get(a->sources, relpath) : NULL;
  return v && v->type == JSON_STRING ? v->s : NULL;
}

int artifact_weights(const artifact *a, model_weights *w, laya_error *err) {
  memset(w, 0, sizeof *w);
  w->enc = a->enc;
  w->head_layers = a->head_layers;
  w->head_heads = a->head_heads;
  w->n_act = a->n_act;
  w->layers = calloc(a->enc.n_layers > 0 ? (size_t)a->enc.n_layers : 1, sizeof *w->layers);
  w->head = calloc(a->head_layers > 0 ? (size_t)a->head_layers : 1, sizeof *w->head);
  if (!w->layers || !w->head) {
    artifact_weights_free(w);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  w->tok_embeddings = &a->tok;
  w->packed = a;
  return 0;
}

void artifact_weights_free(model_weights *w) {
  free(w->layers);
  free(w->head);
  w->layers = NULL;
  w->head = NULL;
}

/* ---- writer ----------------------------------------------------------------------------------- */

typedef struct writer {
  FILE *f;
  uint64_t pos;
  strbuf arrays, files;
  int n_arrays, n_files;
} writer;

static int put(writer *wr, const void *data, size_t n) {
  if (n && fwrite(data, 1, n, wr->f) != n) return -1;
  wr->pos += n;
  return 0;
}

static int pad(writer *wr) {
  static const unsigned char zeros[ALIGN];
  size_t p = (size_t)((ALIGN - wr->pos % ALIGN) % ALIGN);
  return put(wr, zeros, p);
}

static int put_entry(writer *wr, strbuf *list, int *count, const char *name, const void *data, size_t n) {
  if (pad(wr)) return -1;
  uint64_t off = wr->pos;
  if (put(wr, data, n)) return -1;
  sb_puts(list, *count ? ", " : "");
  json_dump_string(list, name, strlen(name), false);
  sb_printf(list, ": [%llu, %llu, \"%016llx\"]", (unsigned long long)off, (unsigned long long)n,
            (unsigned long long)hash64(data, n, 0));
  (*count)++;
  return 0;
}

/* Small files of the checkpoint (recursively), except the weights, as relative paths. */
static int list_files(const char *root, const char *rel, strbuf *names, int *n, int depth) {
  if (depth > 4) return 0;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char r[2048], full[4096];
    snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    snprintf(full, sizeof full, "%s/%s", root, r);
    struct stat st;
    if (stat(full, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      list_files(root, r, names, n, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      size_t L = strlen(r);
      int weights = (L > 12 && !strcmp(r + L - 12, ".safetensors")) || (L > 4 && !strcmp(r + L - 4, ".bin")) ||
                    (L > 5 && !strcmp(r + L - 5, ".onnx")) || (L > 3 && !strcmp(r + L - 3, ".pt"));
      if (!weights && st.st_size < (64 << 20)) {
        sb_append(names, r, L + 1); /* NUL-separated */
        (*n)++;
      }
    }
  }
  closedir(d);
  return 0;
}

int artifact_write(const char *out_path, const char *ckpt_dir, const model_weights *w, const backend *b,
                   const char *weights_sha256, laya_error *err) {
  return artifact_write_ex(out_path, ckpt_dir, w, b, weights_sha256, 0, err);
}

int artifact_write_ex(const char *out_path, const char *ckpt_dir, const model_weights *w, const backend *b,
                      const char *weights_sha256, int flags, laya_error *err) {
  const int external = (flags & ARTIFACT_WRITE_EXTERNAL_TOK) != 0;
  backend_arrays m;
  if (backend_cpu_arrays(b, &m) != 0) return laya_err(err, LAYA_ERR_INTERNAL, NULL, "artifact_write needs the cpu backend");
  const tensor *tok = w->tok_embeddings;
  if (!tok || !tok->data) return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: no token embeddings to store", ckpt_dir);
  backend_precision prec = m.precision;

  /* a private temp file beside the output, renamed over it when complete: concurrent writers of
   * one path never share a temp file, and readers see the old file or the whole new one */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", out_path);
  writer wr;
  memset(&wr, 0, sizeof wr);
  sb_init(&wr.arrays);
  sb_init(&wr.files);
  strbuf names, sources, idx, layers;
  sb_init(&names);
  sb_init(&sources);
  sb_init(&idx);
  sb_init(&layers);
  int n_names = 0, rc = 0;
  int fd = mkstemp(tmp);
  if (fd >= 0) {
    (void)fchmod(fd, 0644);
    wr.f = fdopen(fd, "wb");
    if (!wr.f) close(fd);
  }
  if (!wr.f) {
    if (fd < 0) tmp[0] = 0; /* nothing to remove */
    rc = laya_err(err, LAYA_ERR_IO, NULL, "%s: cannot create a temporary file beside it: %s", out_path, strerror(errno));
    goto done;
  }
  unsigned char header[HEADER_BYTES] = {0};
  if (put(&wr, header, HEADER_BYTES)) goto io_fail;
  uint64_t data_off = HEADER_BYTES;

  for (int i = 0; i < m.n; i++)
    if (put_entry(&wr, &wr.arrays, &wr.n_arrays, m.a[i].name, m.a[i].data, m.a[i].bytes)) goto io_fail;
  if (!external && put_entry(&wr, &wr.arrays, &wr.n_arrays, "tok_embeddings", tok->data,
                             (size_t)tok->numel * (tok->dtype == DT_F32 ? 4 : 2)))
    goto io_fail;

  if (list_files(ckpt_dir, "", &names, &n_names, 0)) {
    rc = laya_err(err, LAYA_ERR_IO, NULL, "%s: cannot list the checkpoint directory", ckpt_dir);
    goto done;
  }
  /* source digests: the small files and the weights they were converted from */
  int n_src = 0;
  const char *p = names.data;
  for (int i = 0; i < n_names; i++, p += strlen(p) + 1) {
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", ckpt_dir, p);
    size_t len = 0;
    char *data = fs_read_file(full, &len, err);
    if (!data) {
      rc = err ? err->code : LAYA_ERR_IO;
      goto done;
    }
    char hex[65];
    sha256_hex(data, len, hex);
    int bad = put_entry(&wr, &wr.files, &wr.n_files, p, data, len);
    free(data);
    if (bad) goto io_fail;
    sb_puts(&sources, n_src++ ? ", " : "");
    json_dump_string(&sources, p, strlen(p), false);
    sb_printf(&sources, ": \"%s\"", hex);
  }
  {
    char full[4096], hex[65];
    snprintf(full, sizeof full, "%s/model.safetensors", ckpt_dir);
    if (weights_sha256 && strlen(weights_sha256) == 64) snprintf(hex, sizeof hex, "%s", weights_sha256);
    if ((weights_sha256 && strlen(weights_sha256) == 64) || sha256_file_hex(full, hex) == 0) {
      sb_puts(&sources, n_src++ ? ", " : "");
      sb_printf(&sources, "\"model.safetensors\": \"%s\"", hex);
    }
  }
  if (pad(&wr)) goto io_fail;
  uint64_t idx_off = wr.pos;
  const encoder_config *c = &w->enc;
  for (int i = 0; i < c->n_layers; i++)
    if (enc_layer_global(c, i)) sb_printf(&layers, "%s%d", layers.len ? ", " : "", i);
  char g[32], l[32], e[32];
  py_float_repr(c->global_theta, g);
  py_float_repr(c->local_theta, l);
  py_float_repr(c->norm_eps, e);
  sb_printf(&idx,
            "{\"format\": \"laya-artifact\", \"version\": %d, \"precision\": \"%s\", \"kernel_layout\": \"%s\", "
            "\"producer\": \"laya.c %s\", \"config\": {\"hidden\": %d, \"n_layers\": %d, \"n_heads\": %d, "
            "\"head_dim\": %d, \"intermediate\": %d, \"vocab\": %d, \"global_every\": %d, \"global_layers\": [%s], \"local_window\": %d, "
            "\"hidden_activation\": \"%s\", "
            "\"global_theta\": %s, \"local_theta\": %s, \"norm_eps\": %s, \"head_layers\": %d, \"head_heads\": %d, "
            "\"n_act\": %d, \"act_hidden\": %d}, \"sources\": {%s}, \"tok_embeddings\": {\"dtype\": \"%s\", "
            "\"shape\": [%d, %d]%s}, \"files\": {%s}, \"arrays\": {%s}}",
            ARTIFACT_VERSION, backend_precision_name(prec), m.layout, LAYA_VERSION, c->hidden, c->n_layers,
            c->n_heads, c->head_dim, c->intermediate, c->vocab, c->global_every, sb_cstr(&layers), c->local_window,
            enc_act_name(c->act), g, l, e,
            w->head_layers, w->head_heads, w->n_act, m.act_hidden, sb_cstr(&sources),
            tok->dtype == DT_F32 ? "F32" : tok->dtype == DT_BF16 ? "BF16" : "F16", c->vocab, c->hidden,
            external ? ", \"external\": true" : "",
            sb_cstr(&wr.files), sb_cstr(&wr.arrays));
  if (put(&wr, idx.data, idx.len)) goto io_fail;
  memcpy(header, ARTIFACT_MAGIC, 8);
  wr32(header + 8, ARTIFACT_VERSION);
  wr64(header + 16, idx_off);
  wr64(header + 24, idx.len);
  wr64(header + 32, wr.pos);
  wr64(header + 40, data_off);
  wr64(header + 48, hash64(idx.data, idx.len, 0));
  wr64(header + 56, hash64(header, HEADER_BYTES - 8, 0));
  if (fseek(wr.f, 0, SEEK_SET) != 0 || fwrite(header, 1, HEADER_BYTES, wr.f) != HEADER_BYTES) goto io_fail;
  if (fclose(wr.f) != 0) {
    wr.f = NULL;
    goto io_fail;
  }
  wr.f = NULL;
  if (rename(tmp, out_path) != 0) {
    rc = laya_err(err, LAYA_ERR_IO, NULL, "%s: cannot rename to %s: %s", tmp, out_path, strerror(errno));
    goto done;
  }
  goto done;
io_fail:
  rc = laya_err(err, LAYA_ERR_IO, NULL, "%s: write failed: %s", tmp, strerror(errno));
done:
  if (wr.f) fclose(wr.f);
  if (rc && tmp[0]) remove(tmp);
  sb_free(&wr.arrays);
  sb_free(&wr.files);
  sb_free(&names);
  sb_free(&sources);
  sb_free(&idx);
  sb_free(&layers);
  return rc;
}
