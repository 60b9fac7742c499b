/*
 * accuracy.c: how far the fast CPU backend's bf16 and int8 answers move from fp32.
 *
 *   accuracy [--rows N] [--ref-rows K] [--seed S] [--only bf16|int8] CKPT_DIR [CKPT_DIR ...]
 *
 * For each checkpoint, N question rows (random token ids of 40..300 tokens with 2..8 option
 * markers, every question type; or the real rows of tests/fixtures/parity/<name>/rows.jsonl when
 * that file exists) run through:
 *   - "cpu-ref", the plain fp32 reference, on the first K rows (it is slow at full size),
 *   - the fast backend in fp32, bf16 and int8 on all rows.
 * Per precision it prints the largest change of any option probability (softmax over a row's
 * options, as Laya decodes them) and of the act probability, and how many rows keep their argmax,
 * against the fp32 reference: cpu-ref where it ran, the fast fp32 path (itself checked against
 * cpu-ref on those K rows, first line) elsewhere. Markdown table rows on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "ckpt_weights.h"
#include "core/json.h"
#include "core/fsutil.h"

typedef struct rows {
  int n, cap;
  int32_t *tokens, *row_start, *qtype, *marker_start, *markers;
  int n_tokens, n_markers;
} rows;

static uint64_t rng_state;
static uint64_t next_u64(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void rows_add(rows *r, const int32_t *ids, int len, const int32_t *mk, int k, int qtype) {
  r->tokens = realloc(r->tokens, sizeof(int32_t) * (r->n_tokens + len));
  r->markers = realloc(r->markers, sizeof(int32_t) * (r->n_markers + k));
  r->row_start = realloc(r->row_start, sizeof(int32_t) * (r->n + 2));
  r->marker_start = realloc(r->marker_start, sizeof(int32_t) * (r->n + 2));
  r->qtype = realloc(r->qtype, sizeof(int32_t) * (r->n + 1));
  if (r->n == 0) r->row_start[0] = r->marker_start[0] = 0;
  memcpy(r->tokens + r->n_tokens, ids, sizeof(int32_t) * len);
  memcpy(r->markers + r->n_markers, mk, sizeof(int32_t) * k);
  r->n_tokens += len;
  r->n_markers += k;
  r->qtype[r->n] = qtype;
  r->n++;
  r->row_start[r->n] = r->n_tokens;
  r->marker_start[r->n] = r->n_markers;
}

/* Laya-shaped rows: [CLS] question [SEP] ([MASK] option)* [SEP] state [SEP], ids drawn at random. */
static void random_rows(rows *r, int n, int vocab) {
  int32_t ids[512], mk[16];
  for (int i = 0; i < n; i++) {
    int len = 40 + (int)(next_u64() % 261), k = 2 + (int)(next_u64() % 7), qt = (int)(next_u64() % 3);
    for (int t = 0; t < len; t++) ids[t] = (int32_t)(next_u64() % (uint64_t)vocab);
    for (int j = 0; j < k; j++) mk[j] = 6 + 3 * j;
    rows_add(r, ids, len, mk, k, qt);
  }
}

/* tests/fixtures/parity/<name>/rows.jsonl: {"ids", "markers", "qtype", ...} per line. */
static int file_rows(rows *r, const char *path, int max_rows) {
  laya_error err;
  size_t len;
  char *text = fs_read_file(path, &len, &err);
  if (!text) return -1;
  arena a;
  arena_init(&a, 1 << 16);
  char *line = text;
  while (*line && r->n < max_rows) {
    char *nl = strchr(line, '\n');
    size_t l = nl ? (size_t)(nl - line) : strlen(line);
    json_value *v = l ? json_parse(line, l, &a, NULL, &err) : NULL;
    /* a line is one row, or a case {"id", "rows": [rows]} (tools/ref/gen_parity.py) */
    const json_value *list = v ? json_get(v, "rows") : NULL;
    int n_in = list && list->type == JSON_ARRAY ? (int)list->n : (v ? 1 : 0);
    for (int e = 0; e < n_in && r->n < max_rows; e++) {
      const json_value *o = list && list->type == JSON_ARRAY ? &list->items[e] : v;
      const json_value *ids = json_get(o, "ids"), *mk = json_get(o, "markers"), *qt = json_get(o, "qtype");
      if (ids && mk && qt && ids->type == JSON_ARRAY && mk->type == JSON_ARRAY && ids->n <= 8192 && mk->n <= 256 &&
          mk->n > 0) {
        int32_t *a_ids = malloc(sizeof(int32_t) * (ids->n + 1)), a_mk[256];
        for (uint32_t i = 0; i < ids->n; i++) a_ids[i] = (int32_t)ids->items[i].i;
        for (uint32_t i = 0; i < mk->n; i++) a_mk[i] = (int32_t)mk->items[i].i;
        rows_add(r, a_ids, (int)ids->n, a_mk, (int)mk->n, (int)qt->i);
        free(a_ids);
      }
    }
    if (!nl) break;
    line = nl + 1;
  }
  arena_free(&a);
  free(text);
  return 0;
}

/* Run rows [r0, r1) in batches of about 2048 tokens. */
static int run_rows(backend *be, const rows *r, int r0, int r1, float *logits, float *act, int n_act) {
  laya_error err;
  backend_worker *w = be->worker_create(be, &err);
  int32_t *rs = malloc(sizeof(int32_t) * (r->n + 1)), *ms = malloc(sizeof(int32_t) * (r->n + 1));
  for (int i = r0; i < r1;) {
    int j = i, toks = 0;
    while (j < r1 && (j == i || toks + (r->row_start[j + 1] - r->row_start[j]) <= 2048)) {
      toks += r->row_start[j + 1] - r->row_start[j];
      j++;
    }
    for (int k = i; k <= j; k++) {
      rs[k - i] = r->row_start[k] - r->row_start[i];
      ms[k - i] = r->marker_start[k] - r->marker_start[i];
    }
    packed_batch b = {j - i, toks, r->tokens + r->row_start[i], rs, r->qtype + i, ms, r->markers + r->marker_start[i]};
    if (be->forward(be, w, &b, logits + r->marker_start[i], act + (size_t)i * n_act, &err)) {
      fprintf(stderr, "forward: %s\n", err.message);
      return -1;
    }
    i = j;
  }
  free(rs);
  free(ms);
  be->worker_destroy(be, w);
  return 0;
}

typedef struct cmp {
  double dp, act_dp;
  int same, n;
} cmp;

static void softmax(const float *x, int k, double *p) {
  double m = -1e300, s = 0;
  for (int i = 0; i < k; i++) m = fmax(m, x[i]);
  for (int i = 0; i < k; i++) s += (p[i] = exp(x[i] - m));
  for (int i = 0; i < k; i++) p[i] /= s;
}

static void compare(cmp *c, const rows *r, int r0, int r1, const float *l, const float *lr, const float *a,
                    const float *ar, int n_act) {
  double p[256], q[256];
  for (int i = r0; i < r1; i++) {
    int m0 = r->marker_start[i], k = r->marker_start[i + 1] - m0;
    softmax(l + m0, k, p);
    softmax(lr + m0, k, q);
    int ia = 0, ib = 0;
    for (int j = 0; j < k; j++) {
      c->dp = fmax(c->dp, fabs(p[j] - q[j]));
      if (p[j] > p[ia]) ia = j;
      if (q[j] > q[ib]) ib = j;
    }
    c->same += ia == ib;
    c->n++;
    softmax(a + (size_t)i * n_act, n_act, p);
    softmax(ar + (size_t)i * n_act, n_act, q);
    c->act_dp = fmax(c->act_dp, fabs(p[0] - q[0]));
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int n_rows = 100, ref_rows = 8;
  const char *only = NULL; /* --only bf16|int8: skip the other low precision */
  rng_state = 12345;
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (!strcmp(argv[first], "--rows") && first + 1 < argc) n_rows = atoi(argv[++first]);
    else if (!strcmp(argv[first], "--ref-rows") && first + 1 < argc) ref_rows = atoi(argv[++first]);
    else if (!strcmp(argv[first], "--seed") && first + 1 < argc) rng_state = strtoull(argv[++first], NULL, 10);
    else if (!strcmp(argv[first], "--only") && first + 1 < argc) only = argv[++first];
  }
  if (first >= argc) {
    fprintf(stderr, "usage: accuracy [--rows N] [--ref-rows K] [--seed S] [--only bf16|int8] CKPT_DIR ...\n");
    return 2;
  }
  printf("| checkpoint | rows (source) | precision | vs | max abs dp (options) | max abs dp (act) | same argmax |\n");
  printf("|---|---|---|---|---|---|---|\n");
  int fail = 0;
  for (int ci = first; ci < argc; ci++) {
    const char *dir = argv[ci];
    laya_error err;
    ckpt_weights cw;
    if (ckpt_weights_open(&cw, dir, &err)) {
      fprintf(stderr, "%s: %s\n", dir, err.message);
      return 2;
    }
    const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    rows r;
    memset(&r, 0, sizeof r);
    char rows_path[4096];
    snprintf(rows_path, sizeof rows_path, "%s/../../parity/%s/rows.jsonl", dir, name);
    const char *source = "random ids";
    if (fs_is_file(rows_path) && file_rows(&r, rows_path, n_rows) == 0 && r.n > 0) source = "parity rows";
    else random_rows(&r, n_rows, cw.w.enc.vocab);
    int n_act = cw.w.n_act;
    int K = ref_rows < r.n ? ref_rows : r.n;
    float *l[4], *a[4];
    for (int i = 0; i < 4; i++) {
      l[i] = calloc((size_t)r.n_markers, sizeof(float));
      a[i] = calloc((size_t)r.n * n_act, sizeof(float));
    }
    backend_options o = {PREC_FP32, 0, 0};
    double t0 = now();
    backend *ref = backend_cpu_ref_create(&cw.w, &o, &err);
    if (!ref || run_rows(ref, &r, 0, K, l[3], a[3], n_act)) return 2;
    ref->destroy(ref);
    fprintf(stderr, "%s: cpu-ref on %d rows %.1fs\n", name, K, now() - t0);
    static const backend_precision precs[] = {PREC_FP32, PREC_BF16, PREC_INT8};
    static const char *pn[] = {"fp32", "bf16", "int8"};
    static const double bound[] = {0.001, 0.02, 0.04}, agree[] = {1.0, 0.99, 0.98};
    for (int pi = 0; pi < 3; pi++) {
      if (only && pi > 0 && strcmp(only, pn[pi])) continue;
      o.precision = precs[pi];
      t0 = now();
      backend *be = backend_cpu_create(&cw.w, &o, &err);
      if (!be || run_rows(be, &r, 0, r.n, l[pi], a[pi], n_act)) return 2;
      be->destroy(be);
      fprintf(stderr, "%s: %s on %d rows %.1fs\n", name, pn[pi], r.n, now() - t0);
    }
    for (int pi = 0; pi < 3; pi++) {
      if (only && pi > 0 && strcmp(only, pn[pi])) continue;
      cmp c = {0, 0, 0, 0};
      compare(&c, &r, 0, K, l[pi], l[3], a[pi], a[3], n_act); /* against cpu-ref */
      if (pi > 0) compare(&c, &r, K, r.n, l[pi], l[0], a[pi], a[0], n_act); /* against fast fp32 */
      int ok = c.dp <= bound[pi] && c.act_dp <= bound[pi] && c.same >= agree[pi] * c.n;
      fail |= !ok;
      printf("| %s | %d (%s) | %s | %s | %.4g | %.4g | %d/%d (%.1f%%)%s |\n", name, c.n, source, pn[pi],
             pi == 0 ? "cpu-ref" : "cpu-ref (first rows) / fast fp32", c.dp, c.act_dp, c.same, c.n,
             100.0 * c.same / c.n, ok ? "" : " **over bound**");
      fflush(stdout);
    }
    for (int i = 0; i < 4; i++) free(l[i]), free(a[i]);
    free(r.tokens), free(r.row_start), free(r.qtype), free(r.marker_start), free(r.markers);
    ckpt_weights_close(&cw);
  }
  return fail;
}
