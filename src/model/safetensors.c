#include "model/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"

size_t tensor_dtype_size(tensor_dtype dt) { return dt == DT_F32 ? 4 : 2; }
const char *tensor_dtype_name(tensor_dtype dt) {
  return dt == DT_F32 ? "F32" : dt == DT_F16 ? "F16" : "BF16";
}

/* dtypes the safetensors format defines; we convert only the float ones the loader needs. */
static const char *const known_dtypes[] = {"BOOL", "U8",  "I8",  "I16",  "U16", "F16",
                                           "BF16", "I32", "U32", "F32",  "F64", "I64",
                                           "U64",  "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
                                           "F6_E3M2", "C64"};

static int fail(laya_error *err, int code, const char *path, const char *fmt, const char *a,
                const char *b) {
  char msg[1024];
  snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
  return laya_err(err, code, NULL, "%s: %s", path, msg);
}

typedef struct {
  int64_t begin, end;
  int idx;
} span;

static int cmp_span(const void *x, const void *y) {
  const span *a = x, *b = y;
  return a->begin < b->begin ? -1 : a->begin > b->begin ? 1 : (a->end < b->end ? -1 : a->end > b->end);
}

static bool get_i64(const json_value *v, int64_t *out) {
  if (!v || v->type != JSON_INT || v->big || v->i < 0) return false;
  *out = v->i;
  return true;
}

int st_open(st_file *f, const char *path, laya_error *err) {
  memset(f, 0, sizeof *f);
  arena_init(&f->mem, 1 << 16);
  f->path = arena_strndup(&f->mem, path, strlen(path));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    st_close(f);
    return laya_err(err, e == ENOENT ? LAYA_ERR_IO : LAYA_ERR_IO, "FileNotFoundError",
                    "%s: cannot open: %s", path, strerror(e));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    st_close(f);
    return laya_err(err, LAYA_ERR_IO, NULL, "%s: not a regular file", path);
  }
  f->size = (size_t)sb.st_size;
  if (f->size < 8) {
    close(fd);
    int rc = laya_err(err, LAYA_ERR_FORMAT, NULL,
                      "%s: truncated: the file is %zu bytes, too short for the 8-byte header length",
                      path, f->size);
    st_close(f);
    return rc;
  }
  f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (f->map == MAP_FAILED) {
    f->map = NULL;
    int e = errno;
    st_close(f);
    return laya_err(err, LAYA_ERR_IO, NULL, "%s: cannot map: %s", path, strerror(e));
  }
  const unsigned char *base = f->map;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | base[i];
  if (hlen > f->size - 8) {
    int rc = laya_err(err, LAYA_ERR_FORMAT, NULL,
                      "%s: truncated or corrupt header: the header length is %llu bytes but only "
                      "%zu bytes follow it",
                      path, (unsigned long long)hlen, f->size - 8);
    st_close(f);
    return rc;
  }
  laya_error jerr;
  json_value *h = json_parse((const char *)base + 8, (size_t)hlen, &f->mem, NULL, &jerr);
  if (!h) {
    int rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: malformed header: %s", path, jerr.message);
    st_close(f);
    return rc;
  }
  if (h->type != JSON_OBJECT) {
    int rc = fail(err, LAYA_ERR_FORMAT, path, "malformed header: expected a JSON object, got %s%s",
                  json_py_type(h), NULL);
    st_close(f);
    return rc;
  }
  const int64_t data_len = (int64_t)(f->size - 8 - hlen);
  const unsigned char *data = base + 8 + hlen;
  f->tensors = arena_alloc(&f->mem, sizeof(tensor) * (h->n ? h->n : 1));
  span *spans = arena_alloc(&f->mem, sizeof(span) * (h->n ? h->n : 1));
  if (!f->tensors || !spans) {
    st_close(f);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory reading the header", path);
  }
  int rc = 0;
  char why[512];
  for (uint32_t i = 0; i < h->n && !rc; i++) {
    const json_member *m = &h->members[i];
    if (strcmp(m->key, "__metadata__") == 0) continue;
    const json_value *e = &m->value;
    tensor *t = &f->tensors[f->n_tensors];
    t->name = m->key;
    if (e->type != JSON_OBJECT) {
      rc = fail(err, LAYA_ERR_FORMAT, path, "malformed header: entry '%s' is not an object", m->key, NULL);
      break;
    }
    const json_value *dt = json_get(e, "dtype"), *shape = json_get(e, "shape"),
                     *offs = json_get(e, "data_offsets");
    if (!dt || dt->type != JSON_STRING) {
      rc = fail(err, LAYA_ERR_FORMAT, path, "malformed header: tensor '%s' has no \"dtype\" string", m->key, NULL);
      break;
    }
    if (strcmp(dt->s, "F32") == 0)
      t->dtype = DT_F32;
    else if (strcmp(dt->s, "F16") == 0)
      t->dtype = DT_F16;
    else if (strcmp(dt->s, "BF16") == 0)
      t->dtype = DT_BF16;
    else {
      bool known = false;
      for (size_t k = 0; k < sizeof known_dtypes / sizeof *known_dtypes; k++)
        if (strcmp(dt->s, known_dtypes[k]) == 0) known = true;
      snprintf(why, sizeof why, "tensor '%s' has %s dtype '%s'; model weights must be F32, F16 or BF16",
               m->key, known ? "unsupported" : "unknown", dt->s);
      rc = laya_err(err, known ? LAYA_ERR_UNSUPPORTED : LAYA_ERR_FORMAT, NULL, "%s: %s", path, why);
      break;
    }
    if (!shape || shape->type != JSON_ARRAY || shape->n > 4) {
      rc = fail(err, LAYA_ERR_FORMAT, path,
                "malformed header: tensor '%s' needs \"shape\" as a list of at most 4 sizes%s", m->key, NULL);
      break;
    }
    t->ndim = (int)shape->n;
    t->numel = 1;
    bool ok = true, too_big = false;
    /* The element count is checked before each product, so no shape (e.g. [2^32, 2^32]) can
     * overflow it into a small number that a short data span would then match. */
    const int64_t max_numel = (int64_t)1 << 40;
    for (uint32_t d = 0; d < shape->n && ok; d++) {
      if (!get_i64(&shape->items[d], &t->shape[d])) {
        ok = false;
      } else if (t->shape[d] > max_numel || (t->shape[d] && t->numel > max_numel / t->shape[d])) {
        ok = false;
        too_big = true;
      } else {
        t->numel *= t->shape[d];
      }
    }
    if (too_big) {
      /* a zero anywhere makes the tensor empty, but the other sizes must still be sane */
      snprintf(why, sizeof why,
               "malformed header: tensor '%s' has a shape whose element count is over 2^40 "
               "(the product overflows or is absurd)",
               m->key);
      rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: %s", path, why);
      break;
    }
    if (!ok) {
      rc = fail(err, LAYA_ERR_FORMAT, path, "malformed header: tensor '%s' has an invalid shape%s", m->key, NULL);
      break;
    }
    int64_t b, en;
    if (!offs || offs->type != JSON_ARRAY || offs->n != 2 || !get_i64(&offs->items[0], &b) ||
        !get_i64(&offs->items[1], &en) || b > en) {
      rc = fail(err, LAYA_ERR_FORMAT, path,
                "malformed header: tensor '%s' needs \"data_offsets\" as [begin, end] with 0 <= begin <= end%s",
                m->key, NULL);
      break;
    }
    if (en > data_len) {
      snprintf(why, sizeof why,
               "tensor '%s' has data_offsets [%lld, %lld] outside the data area of %lld bytes "
               "(truncated file?)",
               m->key, (long long)b, (long long)en, (long long)data_len);
      rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: %s", path, why);
      break;
    }
    int64_t want = t->numel * (int64_t)tensor_dtype_size(t->dtype);
    if (en - b != want) {
      snprintf(why, sizeof why,
               "tensor '%s' spans %lld bytes but its %s shape needs %lld", m->key,
               (long long)(en - b), dt->s, (long long)want);
      rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: %s", path, why);
      break;
    }
    t->data = data + b;
    spans[f->n_tensors] = (span){b, en, f->n_tensors};
    f->n_tensors++;
  }
  /* No two tensors may share a byte. Empty tensors hold no bytes and are left out, so one cannot
   * sit between two that overlap; the rest, sorted by offset, are compared with the furthest end
   * seen so far (not only the previous tensor), which finds every overlap. */
  if (!rc && f->n_tensors > 1) {
    int n = 0;
    for (int i = 0; i < f->n_tensors; i++)
      if (spans[i].end > spans[i].begin) spans[n++] = spans[i];
    qsort(spans, (size_t)n, sizeof *spans, cmp_span);
    int far = 0; /* the span reaching furthest so far */
    for (int i = 1; i < n; i++) {
      if (spans[i].begin < spans[far].end) {
        snprintf(why, sizeof why, "tensors '%s' [%lld, %lld) and '%s' [%lld, %lld) overlap",
                 f->tensors[spans[far].idx].name, (long long)spans[far].begin,
                 (long long)spans[far].end, f->tensors[spans[i].idx].name,
                 (long long)spans[i].begin, (long long)spans[i].end);
        rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: malformed header: %s", path, why);
        break;
      }
      if (spans[i].end > spans[far].end) far = i;
    }
  }
  if (rc) st_close(f);
  return rc;
}

/* Exponent bits all ones: NaN or an infinity. The first pass looks at 8 bytes at a time (2 F32 or
 * 4 F16/BF16 lanes): x = (w & E) ^ E has a zero lane exactly where a value's exponent is all ones,
 * and (x - 1s) & ~x & top-bits is nonzero iff some lane is zero (the exponent masks leave each
 * lane's top bit clear, so only a zero lane can borrow into it). That runs at memory speed; the
 * exact count is taken only for a tensor that has a hit. */
static int64_t count_nonfinite(const unsigned char *p, int64_t n, int es, uint64_t emask) {
  const uint64_t E = es == 4 ? (emask | emask << 32) : (emask | emask << 16 | emask << 32 | emask << 48);
  const uint64_t L = es == 4 ? 0x0000000100000001ull : 0x0001000100010001ull;
  const uint64_t H = es == 4 ? 0x8000000080000000ull : 0x8000800080008000ull;
  const int64_t bytes = n * es, words = bytes / 8;
  uint64_t hit = 0;
  for (int64_t i = 0; i < words; i++) {
    uint64_t w;
    memcpy(&w, p + 8 * i, 8);
    uint64_t x = (w & E) ^ E;
    hit |= (x - L) & ~x & H;
  }
  for (int64_t o = words * 8; o < bytes; o += es) { /* the tail lanes */
    uint64_t v = 0;
    memcpy(&v, p + o, (size_t)es);
    hit |= (v & emask) == emask;
  }
  if (!hit) return 0;
  int64_t c = 0;
  for (int64_t o = 0; o < bytes; o += es) {
    uint64_t v = 0;
    memcpy(&v, p + o, (size_t)es); /* little-endian, as the file is */
    c += (v & emask) == emask;
  }
  return c;
}

int64_t st_count_nonfinite(const tensor *t) {
  if (!t || !t->data || t->numel <= 0) return 0;
  if (t->dtype == DT_F32) return count_nonfinite(t->data, t->numel, 4, 0x7f800000u);
  if (t->dtype == DT_F16) return count_nonfinite(t->data, t->numel, 2, 0x7c00u);
  return count_nonfinite(t->data, t->numel, 2, 0x7f80u);
}

const tensor *st_find(const st_file *f, const char *name) {
  for (int i = 0; i < f->n_tensors; i++)
    if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
  return NULL;
}

void st_close(st_file *f) {
  if (f->map) munmap(f->map, f->size);
  arena_free(&f->mem);
  memset(f, 0, sizeof *f);
}
