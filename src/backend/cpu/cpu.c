/*
 * cpu.c: the fast CPU backend ("cpu"): Laya's DecisionModel forward over a packed batch with
 * packed weights (fp32, bf16 or int8), SIMD kernels chosen by CPUID (kernels.h) and a thread pool.
 *
 * The pass reads top to bottom like the reference (ref.c), one parallel step per line:
 *   embeddings -> per encoder layer [norm -> QKV -> RoPE + attention per (row, head) -> Wo +
 *   residual -> (in token chunks) norm -> Wi with GeGLU -> Wo + residual] -> final norm ->
 *   type_emb -> head layers (same shape, biases, ReLU, no RoPE) -> scorer on the markers -> act.
 * Work is split so one row and many rows both use every core: GEMMs over (row chunk, weight
 * panel group), attention over (row, head), row-wise ops over token blocks. Every output element
 * is reduced in one fixed order, so a row's answer does not depend on its batch mates nor on the
 * thread count (tests/cpu/test_cpu_forward.c checks it bit for bit).
 *
 * Letters: T tokens in the batch, R rows, d width, H heads, dh head size, I FFN width (Wi is
 * [2I, d]), F the widest hidden (max(I, 4d)), C tokens per MLP chunk.
 */
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_model.h"
#include "backend/cpu/ref_ops.h"
#include "core/options.h"
#include "model/spec.h"

#define MLP_CHUNK 512   /* tokens per MLP chunk (C) */
#define ROPE_TABLE 8192 /* positions with tabled cos/sin */
#define ROPE_BLOCK 512  /* positions filled at a time */
#define ROW_BLOCK 32    /* tokens per task of row-wise ops */
#define GEMM_MTILE 192  /* most activation rows per GEMM task */
#define GEMM_MR 12      /* rows of the widest GEMM microkernel (kernels_avx512.c MR) */
#define PACK_BLOCK 16   /* tokens whose k attn_task transposes at a time (whole 64-byte lines of kt) */

/* LAYA_CPU_STUDY (accuracy studies, bench/cpu/accuracy.c --variant): emulates one source of the
 * bf16 path's error at a time inside an fp32 model, so each can be measured alone. Comma list:
 *   wround   encoder and head matrices hold bf16-rounded weights (computed in fp32)
 *   w8       the same with int8-rounded weights (pack.c's per-column grid)
 *   a:qkv a:o a:i a:om   encoder GEMM inputs rounded to bf16: attention-norm output (Wqkv),
 *            attention output (Wo), MLP-norm output (Wi), GeGLU hidden (Wo of the MLP)
 *   h:qkv h:o h:1 h:2    the same four for the decision-head layers (in_proj, out_proj, linear1/2)
 *   a8       the activation sites above round to the per-row int8 grid (quantize_row) instead
 *   attn     attention in bf16 (q, k, v and the probabilities; what bf16 models run) in fp32 models
 *   head16   the decision-head matrices and their inputs round to bf16 even with w8 / a8 (what an
 *            int8 model keeps in bf16 by default, INT8_KEEP_BF16)
 *   layer:N  encoder activation rounding only in layer N */
enum {
  STUDY_WROUND = 1u << 0,
  STUDY_A_QKV = 1u << 1, STUDY_A_O = 1u << 2, STUDY_A_I = 1u << 3, STUDY_A_OM = 1u << 4,
  STUDY_H_QKV = 1u << 5, STUDY_H_O = 1u << 6, STUDY_H_1 = 1u << 7, STUDY_H_2 = 1u << 8,
  STUDY_W8 = 1u << 9, STUDY_A8 = 1u << 10, STUDY_ATTN = 1u << 11, STUDY_HEAD16 = 1u << 12,
};

static void study_parse(cpu_model *m) {
  static const struct { const char *name; unsigned bit; } items[] = {
      {"wround", STUDY_WROUND}, {"a:qkv", STUDY_A_QKV}, {"a:o", STUDY_A_O}, {"a:i", STUDY_A_I},
      {"a:om", STUDY_A_OM}, {"h:qkv", STUDY_H_QKV}, {"h:o", STUDY_H_O}, {"h:1", STUDY_H_1}, {"h:2", STUDY_H_2},
      {"w8", STUDY_W8}, {"a8", STUDY_A8}, {"attn", STUDY_ATTN}, {"head16", STUDY_HEAD16}};
  m->study = 0;
  m->study_layer = -1;
  const char *e = m->env->cpu_study;
  if (!e) return;
  char buf[256], *sv = NULL;
  snprintf(buf, sizeof buf, "%s", e);
  for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
    if (!strncmp(t, "layer:", 6)) m->study_layer = atoi(t + 6);
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
      if (!strcmp(t, items[i].name)) m->study |= items[i].bit;
  }
}

/* LAYA_CPU_PROFILE=1 (bench/cpu, BENCHMARKS.md "CPU forward: where the time goes"): every forward
 * prints one JSON line on stderr with, per kind of parallel step, the caller's wall time, the summed
 * thread CPU time of its tasks and the number of pool hand-offs. Timing costs two clock reads per
 * task; off, the forward is unchanged. */
static int profile_enabled(const laya_env_options *env) { return env->cpu_profile > 0; }

/* ---- model: named arrays ---------------------------------------------------------------------- */

static int track_owned(cpu_model *m, void *p) {
  if (m->n_owned == m->cap_owned) {
    int cap = m->cap_owned ? 2 * m->cap_owned : 256;
    void **o = realloc(m->owned, (size_t)cap * sizeof *o);
    if (!o) return -1;
    m->owned = o;
    m->cap_owned = cap;
  }
  m->owned[m->n_owned++] = p;
  return 0;
}

/* (Transparent huge pages for the packed arrays, mmap + MADV_HUGEPAGE, were tried: on the 2-core
 * development VM they made packing 2.5x more CPU, 3.7-4.0 s vs 1.4-1.6 s for ModernBERT-large
 * fp32, all of it in the kernel's zeroing of fresh huge pages; not kept.) */
static void *alloc_owned(cpu_model *m, size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
  if (track_owned(m, p)) {
    free(p);
    return NULL;
  }
  return p;
}

static int register_blob(cpu_model *m, const char *name, const void *data, size_t bytes) {
  if (m->n_blobs == m->cap_blobs) {
    int cap = m->cap_blobs ? 2 * m->cap_blobs : 256;
    backend_array *b = realloc(m->blobs, (size_t)cap * sizeof *b);
    if (!b) return -1;
    m->blobs = b;
    m->cap_blobs = cap;
  }
  backend_array *b = &m->blobs[m->n_blobs++];
  snprintf(b->name, sizeof b->name, "%s", name);
  b->data = data;
  b->bytes = bytes;
  return 0;
}

static void cpu_model_free(cpu_model *m) {
  if (!m) return;
  if (m->release) m->release(m->release_ctx); /* first: it may still read the arrays (pack cache writer) */
  if (m->pool) cpu_pool_destroy(m->pool);
  if (m->rope[0]) pthread_mutex_destroy(&m->rope_mu);
  for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
  free(m->owned);
  free(m->blobs);
  free(m->layers);
  free(m->head);
  free(m);
}

static size_t fmt_elem(cpu_wfmt f) { return f == WF_F32 ? 4 : f == WF_BF16 ? 2 : 1; }

typedef struct tensor_rows {
  const tensor *t;
  int k;
  int round_to;   /* study: 16 / 8: the values a bf16 / int8 pack would hold, kept in fp32 */
} tensor_rows;

/* A matrix to pack (load_linear records them; pack_all packs them on the pool, in parallel). */
typedef struct pack_job {
  cpu_wfmt fmt;
  int n, k, geglu;
  tensor_rows tr;
  void *data;
  float *scale;
  int32_t *colsum;
} pack_job;

typedef struct load_ctx {
  cpu_model *m;
  const struct artifact *art; /* non-NULL: take named arrays from this container */
  laya_error *err;
  pack_job *jobs;
  int n_jobs, cap_jobs, max_k;
  packed_matrix **splits; /* fp32 matrices whose split parts split_all makes */
  int n_splits, cap_splits;
} load_ctx;

/* An array of `bytes` from the container (checked size), or NULL with err set. */
static const void *from_artifact(load_ctx *L, const char *name, size_t bytes) {
  return cpu_packed_array(L->art, name, bytes, L->err);
}

/* A small fp32 vector of n values (norm weights, biases). */
static const float *load_vec(load_ctx *L, const char *name, const tensor *t, int64_t n) {
  cpu_model *m = L->m;
  const float *v;
  if (L->art) {
    v = from_artifact(L, name, (size_t)n * sizeof(float));
    if (!v) return NULL;
  } else {
    if (!t || !t->data) {
      laya_err(L->err, LAYA_ERR_NOT_FOUND, NULL, "cpu backend: tensor %s is missing", name);
      return NULL;
    }
    if (t->numel != n) {
      laya_err(L->err, LAYA_ERR_FORMAT, NULL, "cpu backend: tensor %s has %lld elements, expected %lld",
               t->name ? t->name : name, (long long)t->numel, (long long)n);
      return NULL;
    }
    float *f = alloc_owned(m, (size_t)n * sizeof(float));
    if (!f) {
      laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
      return NULL;
    }
    tensor_to_f32(t, 0, n, f);
    v = f;
  }
  if (register_blob(m, name, v, (size_t)n * sizeof(float))) {
    laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
    return NULL;
  }
  return v;
}

/* LAYA_CPU_STUDY's int8 rounding of n values in place, kept in fp32: the grid of pack.c's weight
 * columns and of quantize_row's tokens (kernels.h int8_grid / int8_level), times its scale. */
static void study_round_int8(float *x, int n) {
  float inv, sc = int8_grid(x, n, &inv);
  for (int i = 0; i < n; i++) x[i] = int8_level(x[i], inv) * sc;
}

static void get_tensor_row(void *ctx, int r, float *out) {
  tensor_rows *tr = ctx;
  tensor_to_f32(tr->t, (int64_t)r * tr->k, tr->k, out);
  if (tr->round_to == 16) {
    for (int i = 0; i < tr->k; i++) out[i] = bf16_to_f32(f32_to_bf16_rne(out[i]));
  } else if (tr->round_to == 8) { /* pack.c's per-column int8 grid */
    study_round_int8(out, tr->k);
  }
}

/* A Linear weight [n, k] (+ bias [outputs]) packed for fmt. */
static int load_linear(load_ctx *L, packed_matrix *pm, const char *name, const tensor *t, int n,
                       int k, cpu_wfmt fmt, int geglu, int has_bias, const tensor *bias) {
  cpu_model *m = L->m;
  char nm[48];
  memset(pm, 0, sizeof *pm);
  pm->n = n;
  pm->k = k;
  pm->n_panels = pack_panels(n, geglu);
  pm->k_pad = pack_kpad(k);
  pm->geglu = geglu;
  pm->fmt = fmt;
  snprintf(nm, sizeof nm, "%s.fmt", name);
  if (L->art) {
    const int32_t *f = from_artifact(L, nm, sizeof(int32_t));
    if (!f) return -1;
    if (*f < WF_F32 || *f > WF_I8) return laya_err(L->err, LAYA_ERR_FORMAT, NULL, "%s: bad format of %s", artifact_path(L->art), name);
    fmt = (cpu_wfmt)*f;
    pm->fmt = fmt;
  } else {
    int32_t *f = alloc_owned(m, sizeof(int32_t));
    if (!f) return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
    *f = (int32_t)fmt;
    if (register_blob(m, nm, f, sizeof *f)) return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
  }
  if (fmt == WF_I8) m->any_i8 = 1;
  if (fmt_elem(fmt) > m->max_elem) m->max_elem = fmt_elem(fmt);
  size_t data_bytes = pack_data_bytes(fmt, n, k, geglu);
  size_t cols = (size_t)pm->n_panels * CPU_NR;
  snprintf(nm, sizeof nm, "%s.data", name);
  if (L->art) {
    if (!(pm->data = from_artifact(L, nm, data_bytes))) return -1;
    if (fmt == WF_I8) {
      snprintf(nm, sizeof nm, "%s.scale", name);
      if (!(pm->scale = from_artifact(L, nm, cols * sizeof(float)))) return -1;
      snprintf(nm, sizeof nm, "%s.colsum", name);
      if (!(pm->colsum = from_artifact(L, nm, cols * sizeof(int32_t)))) return -1;
    }
  } else {
    if (!t || !t->data) return laya_err(L->err, LAYA_ERR_NOT_FOUND, NULL, "cpu backend: tensor %s is missing", name);
    if (t->numel != (int64_t)n * k)
      return laya_err(L->err, LAYA_ERR_FORMAT, NULL, "cpu backend: tensor %s has %lld elements, expected %lld",
                      t->name ? t->name : name, (long long)t->numel, (long long)n * k);
    void *data = alloc_owned(m, data_bytes);
    float *scale = fmt == WF_I8 ? alloc_owned(m, cols * sizeof(float)) : NULL;
    int32_t *colsum = fmt == WF_I8 ? alloc_owned(m, cols * sizeof(int32_t)) : NULL;
    if (L->n_jobs == L->cap_jobs) {
      int cap = L->cap_jobs ? 2 * L->cap_jobs : 128;
      pack_job *j = realloc(L->jobs, (size_t)cap * sizeof *j);
      if (!j) return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory packing %s", name);
      L->jobs = j;
      L->cap_jobs = cap;
    }
    if (!data || (fmt == WF_I8 && (!scale || !colsum)))
      return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory packing %s", name);
    /* study "wround" / "w8": encoder and head matrices packed fp32 with bf16 / int8-rounded values */
    int studied = fmt == WF_F32 && (!strncmp(name, "enc.", 4) || !strncmp(name, "head.", 5));
    int head16 = studied && !strncmp(name, "head.", 5) && (m->study & STUDY_HEAD16);
    tensor_rows tr = {t, k, !studied ? 0 : (m->study & STUDY_WROUND) || head16 ? 16 : (m->study & STUDY_W8) ? 8 : 0};
    L->jobs[L->n_jobs++] = (pack_job){fmt, n, k, geglu, tr, data, scale, colsum};
    if (k > L->max_k) L->max_k = k;
    pm->data = data;
    pm->scale = scale;
    pm->colsum = colsum;
  }
  snprintf(nm, sizeof nm, "%s.data", name);
  if (register_blob(m, nm, pm->data, data_bytes)) return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
  if (fmt == WF_F32 && m->k->split_rows_f32) {
    /* The split-precision GEMM's weight parts (packed_matrix.split), made from the fp32 panels
     * once, by split_all after pack_all, rather than by every GEMM task at run time; only the
     * parts that are not zero everywhere are kept (float16 weights: hi and mid). They are not a
     * named array: a container (`laya convert`, the pack cache) keeps the fp32 panels only, which
     * every table and the CUDA unpacker read and the parts follow from exactly, so its bytes and
     * layout name do not depend on the table. The fp32 panels stay too (1.5x their bytes in parts
     * on top, 1x for float16 weights): they are what a container is written from, and the
     * kernel's out-of-memory fallback reads them; mapped from a container, split_all gives their
     * pages back once split (release_pages). Tables that do not split (LAYA_AMX_FP32=avx512
     * included) get no parts. */
    if (L->n_splits == L->cap_splits) {
      int cap = L->cap_splits ? 2 * L->cap_splits : 128;
      packed_matrix **q = realloc(L->splits, (size_t)cap * sizeof *q);
      if (!q) return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory splitting %s", name);
      L->splits = q;
      L->cap_splits = cap;
    }
    L->splits[L->n_splits++] = pm;
  }
  if (fmt == WF_I8) {
    snprintf(nm, sizeof nm, "%s.scale", name);
    if (register_blob(m, nm, pm->scale, cols * sizeof(float))) return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
    snprintf(nm, sizeof nm, "%s.colsum", name);
    if (register_blob(m, nm, pm->colsum, cols * sizeof(int32_t))) return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
  }
  if (has_bias) {
    snprintf(nm, sizeof nm, "%s.bias", name);
    if (!(pm->bias = load_vec(L, nm, bias, n))) return -1;
  }
  return 0;
}

/* Pack every recorded matrix on the pool, in pieces of about PACK_PIECE_BYTES of packed data (a
 * run of whole panels of one matrix): about a hundred times more tasks than matrices, so every
 * thread stays busy to the end and first-touches the pages it fills. Each piece writes only its own
 * panels (pack_matrix_panels), so the bytes are the same whatever the thread count or order. */
#define PACK_PIECE_BYTES ((size_t)1 << 20)

typedef struct pack_piece {
  int job, p0, p1;
} pack_piece;

typedef struct pack_all_ctx {
  const load_ctx *L;
  const pack_piece *pieces;
  float *rows; /* per thread: max_k floats */
} pack_all_ctx;

static void pack_task(void *ctx, int task, int thread) {
  pack_all_ctx *c = ctx;
  const pack_piece *pc = &c->pieces[task];
  const pack_job *j = &c->L->jobs[pc->job];
  tensor_rows tr = j->tr;
  pack_matrix_panels(j->fmt, j->n, j->k, j->geglu, pc->p0, pc->p1, get_tensor_row, &tr, j->data, j->scale, j->colsum,
                     c->rows + (size_t)thread * c->L->max_k);
}

static int pack_all(load_ctx *L) {
  if (!L->n_jobs) return 0;
  int n = 0;
  for (int i = 0; i < L->n_jobs; i++) {
    const pack_job *j = &L->jobs[i];
    size_t panel = pack_data_bytes(j->fmt, CPU_NR, j->k, 0);
    int per = panel >= PACK_PIECE_BYTES ? 1 : (int)(PACK_PIECE_BYTES / panel);
    int np = pack_panels(j->n, j->geglu);
    n += (np + per - 1) / per;
  }
  int threads = cpu_pool_threads(L->m->pool);
  pack_piece *pieces = malloc((size_t)(n ? n : 1) * sizeof *pieces);
  pack_all_ctx c = {L, pieces, malloc((size_t)threads * L->max_k * sizeof(float))};
  if (!c.rows || !pieces) {
    free(c.rows);
    free(pieces);
    return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory packing weights");
  }
  n = 0;
  for (int i = 0; i < L->n_jobs; i++) {
    const pack_job *j = &L->jobs[i];
    size_t panel = pack_data_bytes(j->fmt, CPU_NR, j->k, 0);
    int per = panel >= PACK_PIECE_BYTES ? 1 : (int)(PACK_PIECE_BYTES / panel);
    int np = pack_panels(j->n, j->geglu);
    for (int p = 0; p < np; p += per) pieces[n++] = (pack_piece){i, p, p + per < np ? p + per : np};
  }
  cpu_pool_run(L->m->pool, n, pack_task, &c);
  free(c.rows);
  free(pieces);
  return 0;
}

/* The split parts of every recorded fp32 matrix from its panels, on the pool in pieces of whole
 * panels like pack_all's: first how many parts each piece's values need (pack_split_need), then,
 * with each matrix's parts allocated for what its pieces need, the parts (pack_split_panels; each
 * piece writes only its own panels'). */
typedef struct split_all_ctx {
  packed_matrix *const *ms;
  const pack_piece *pieces;
  int *need;   /* per piece: pack_split_need */
  int fill;    /* 0: count the parts, 1: write them */
  int release; /* the fp32 panels are pages of a mapped container: give them back once split */
  cpu_split_panel_fn fn; /* the table's SIMD panel split */
} split_all_ctx;

/* The whole pages of [p, p + bytes) out of this process's memory. For a read-only file mapping
 * (the container's panels) that only drops them from the resident set: a later read (the
 * kernel's out-of-memory fallback, a container writer) faults them in again from the file. The
 * split GEMM itself never reads them after the split. */
static void release_pages(const void *p, size_t bytes) {
  const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = ((uintptr_t)p + pg - 1) & ~(pg - 1), b = ((uintptr_t)p + bytes) & ~(pg - 1);
  if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

static void split_task(void *ctx, int task, int thread) {
  (void)thread;
  const split_all_ctx *c = ctx;
  const pack_piece *pc = &c->pieces[task];
  const packed_matrix *w = c->ms[pc->job];
  if (!c->fill) {
    c->need[task] = pack_split_need(w, pc->p0, pc->p1, c->fn);
    return;
  }
  pack_split_panels(w, pc->p0, pc->p1, (uint16_t *)w->split, c->fn);
  if (c->release)
    release_pages((const float *)w->data + (size_t)pc->p0 * w->k_pad * CPU_NR,
                  (size_t)(pc->p1 - pc->p0) * w->k_pad * CPU_NR * sizeof(float));
}

/* Panels per piece of a matrix of split parts (about PACK_PIECE_BYTES). */
static int split_per_piece(const packed_matrix *w) {
  size_t panel = pack_split_bytes(CPU_NR, w->k, 0, 3);
  return panel >= PACK_PIECE_BYTES ? 1 : (int)(PACK_PIECE_BYTES / panel);
}

static int split_all(load_ctx *L) {
  if (!L->n_splits) return 0;
  int n = 0;
  for (int i = 0; i < L->n_splits; i++) {
    int per = split_per_piece(L->splits[i]);
    n += (L->splits[i]->n_panels + per - 1) / per;
  }
  pack_piece *pieces = malloc((size_t)(n ? n : 1) * sizeof *pieces);
  int *need = malloc((size_t)(n ? n : 1) * sizeof *need);
  if (!pieces || !need) {
    free(pieces), free(need);
    return laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory splitting weights");
  }
  n = 0;
  for (int i = 0; i < L->n_splits; i++) {
    int per = split_per_piece(L->splits[i]), np = L->splits[i]->n_panels;
    for (int p = 0; p < np; p += per) pieces[n++] = (pack_piece){i, p, p + per < np ? p + per : np};
  }
  split_all_ctx c = {L->splits, pieces, need, 0, L->art != NULL, L->m->k->split_panel_f32};
  cpu_pool_run(L->m->pool, n, split_task, &c);
  /* a matrix keeps the most parts any of its pieces needs (float16 weights: 2, bfloat16: 1) */
  for (int i = 0; i < L->n_splits; i++) L->splits[i]->split_parts = 1;
  for (int t = 0; t < n; t++) {
    packed_matrix *w = L->splits[pieces[t].job];
    if (need[t] > w->split_parts) w->split_parts = need[t];
  }
  int rc = 0;
  for (int i = 0; i < L->n_splits && !rc; i++) {
    packed_matrix *w = L->splits[i];
    size_t bytes = pack_split_bytes(w->n, w->k, w->geglu, w->split_parts);
    if (!(w->split = alloc_owned(L->m, bytes)))
      rc = laya_err(L->err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory splitting weights (%zu bytes)", bytes);
  }
  if (!rc) {
    c.fill = 1;
    cpu_pool_run(L->m->pool, n, split_task, &c);
  }
  free(pieces), free(need);
  return rc;
}

/* What this backend's kernels cannot run, beyond the model's own rules (model_spec_check): heads
 * wider than CPU_MAX_DH, odd decision-head heads. */
static int check_config(const model_weights *w, laya_error *err) {
  int rc = model_spec_check(w, "cpu backend", err);
  if (rc) return rc;
  const encoder_config *c = &w->enc;
  const char *bad = NULL;
  if (c->head_dim > CPU_MAX_DH) bad = "head_dim must be at most 256";
  else if (c->hidden / w->head_heads > CPU_MAX_DH || (c->hidden / w->head_heads) % 2 != 0)
    bad = "decision-head heads must divide hidden_size into even heads of at most 256";
  if (bad) return laya_err(err, LAYA_ERR_CONFIG, NULL, "cpu backend: %s", bad);
  return 0;
}

/* cos/sin tables, computed exactly as the reference does (cosf/sinf of the fp32 angle). The table
 * covers ROPE_TABLE positions but is filled lazily in blocks of ROPE_BLOCK as rows that long arrive
 * (cold start pays only for the positions it uses); the fill takes rope_mu and publishes each block
 * with a release store, so readers that see rope_ready >= n read finished entries. */
static int build_rope(cpu_model *m) {
  int dh = m->enc.head_dim, half = dh / 2;
  m->rope_len = ROPE_TABLE;
  for (int g = 0; g < 2; g++) {
    double theta = g == 0 ? m->enc.global_theta : m->enc.local_theta;
    for (int j = 0; j < half; j++) m->inv_freq[g][j] = 1.0f / powf((float)theta, (float)(2 * j) / (float)dh);
    float *t = alloc_owned(m, (size_t)ROPE_TABLE * dh * sizeof(float));
    if (!t) return -1;
    m->rope[g] = t;
  }
  pthread_mutex_init(&m->rope_mu, NULL);
  atomic_init(&m->rope_ready, 0);
  return 0;
}

static void ensure_rope(const cpu_model *cm, int len) {
  cpu_model *m = (cpu_model *)cm; /* the table is a cache: filling it does not change any result */
  if (len > ROPE_TABLE) len = ROPE_TABLE;
  if (atomic_load_explicit(&m->rope_ready, memory_order_acquire) >= len) return;
  pthread_mutex_lock(&m->rope_mu);
  int have = atomic_load_explicit(&m->rope_ready, memory_order_relaxed);
  int dh = m->enc.head_dim, half = dh / 2;
  int upto = (len + ROPE_BLOCK - 1) / ROPE_BLOCK * ROPE_BLOCK;
  if (upto > ROPE_TABLE) upto = ROPE_TABLE;
  for (int g = 0; g < 2; g++)
    for (int p = have; p < upto; p++)
      for (int j = 0; j < half; j++) {
        float ang = (float)p * m->inv_freq[g][j];
        m->rope[g][(size_t)p * dh + j] = cosf(ang);
        m->rope[g][(size_t)p * dh + half + j] = sinf(ang);
      }
  if (upto > have) atomic_store_explicit(&m->rope_ready, upto, memory_order_release);
  pthread_mutex_unlock(&m->rope_mu);
}

/* Matrices kept wider than the precision asked for. LAYA_CPU_FP32_LAYERS (accuracy studies) lists
 * layers kept in fp32: "head", "enc:N" (encoder layer N), "last:K" (the last K encoder layers).
 *
 * An int8 model keeps the matrix kinds of INT8_KEEP_BF16 in bf16: the decision head's four matrices
 * (every logit goes through them; the head's inputs are the second-largest int8 error source and
 * keeping them bf16 cost no measurable time). The largest source, the MLP's output projection (its
 * input, the GeGLU hidden gelu(a) * g, is heavy-tailed, so one int8 scale per token leaves most
 * values a few levels), stays int8 by default: keeping it bf16 as well halves the int8 logit error
 * but costs 16-22% of the int8 time (BENCHMARKS.md, CPU backend / Accuracy). LAYA_CPU_INT8_BF16
 * replaces the list (kinds: wqkv, wo, wi, wo_mlp, in_proj, out_proj, linear1, linear2; "none" keeps
 * every matrix int8). */
static const char INT8_KEEP_BF16[] = "in_proj,out_proj,linear1,linear2";

/* 1 when the comma-separated list names item. */
static int listed(const char *list, const char *item) {
  char buf[256], *sv = NULL;
  snprintf(buf, sizeof buf, "%s", list);
  for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
    if (!strcmp(t, item)) return 1;
  return 0;
}

/* 1 when an int8 model keeps matrices of this kind in bf16: LAYA_CPU_INT8_BF16, else INT8_KEEP_BF16. */
static int int8_keeps_bf16(const cpu_model *m, const char *kind) {
  const char *e = m->env->cpu_int8_bf16;
  return listed(e ? e : INT8_KEEP_BF16, kind);
}

static cpu_wfmt matrix_fmt(const cpu_model *m, cpu_wfmt base, int head, int layer, const char *kind) {
  if (base == WF_F32) return base;
  const char *e = m->env->cpu_fp32_layers;
  if (e) {
    char buf[256], *sv = NULL;
    snprintf(buf, sizeof buf, "%s", e);
    for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
      if (head && !strcmp(t, "head")) return WF_F32;
      if (!head && !strncmp(t, "enc:", 4) && atoi(t + 4) == layer) return WF_F32;
      if (!head && !strncmp(t, "last:", 5) && layer >= m->enc.n_layers - atoi(t + 5)) return WF_F32;
    }
  }
  if (base == WF_I8 && int8_keeps_bf16(m, kind)) return WF_BF16;
  return base;
}

static cpu_wfmt fmt_of(backend_precision p) {
  return p == PREC_BF16 ? WF_BF16 : p == PREC_INT8 ? WF_I8 : WF_F32;
}

static cpu_model *cpu_model_create(const model_weights *w, const backend_options *o, const laya_env_options *env,
                                   laya_error *err) {
  if (check_config(w, err)) return NULL;
  backend_precision prec = o ? o->precision : backend_cpu_default_precision();
  if (prec == PREC_FP16 || prec == PREC_FP8) {
    laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "cpu backend: precision %s is not supported on the CPU (use fp32, bf16 or int8)",
             backend_precision_name(prec));
    return NULL;
  }
  const struct artifact *art = w->packed;
  if (art && cpu_packed_check(art, o, &prec, err)) return NULL;
  cpu_model *m = calloc(1, sizeof *m);
  if (!m) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
    return NULL;
  }
  load_ctx L = {m, art, err, NULL, 0, 0, 0, NULL, 0, 0};
  const encoder_config *c = &w->enc;
  int d = c->hidden, I = c->intermediate;
  m->enc = *c;
  m->head_layers = w->head_layers;
  m->head_heads = w->head_heads;
  m->n_act = w->n_act;
  m->fmt = fmt_of(prec);
  m->env = env; /* valid during create only (backend_cpu_create) */
  study_parse(m);
  m->gemm_mtile = GEMM_MTILE;
  m->gemm_per_thread = 4;
  if (m->env->cpu_gemm_tasks) { /* research switch: "ROWS,PER_THREAD" */
    int r = 0, t = 0, n = 0;
    const char *v = m->env->cpu_gemm_tasks;
    if (sscanf(v, "%d,%d%n", &r, &t, &n) != 2 || v[n] || r < 32 || r > 1 << 20 || t < 1 || t > 64) {
      laya_err(err, LAYA_ERR_VALUE, NULL, "LAYA_CPU_GEMM_TASKS must be ROWS,PER_THREAD (ROWS 32..1048576, PER_THREAD 1..64), got '%s'", v);
      cpu_model_free(m);
      return NULL;
    }
    m->gemm_mtile = r, m->gemm_per_thread = t;
  }
  m->profile = profile_enabled(m->env);
  m->k = cpu_kernels_select_for(m->env->cpu_isa);
  {
    /* without bf16 dot products the bf16 kernel only widens to fp32 again: AVX2's runs at its
     * fp32 kernel's speed (bench_kernels T=512: 74 vs 78 GFLOP/s; the mmBERT 1x512 forward's CPU
     * time the same within 2%) and adds the rounding of q, k and v, so such models keep fp32 */
    m->attn_bf16 = m->fmt != WF_F32 && m->k->bf16_dot && !(m->env->cpu_attn_f32 > 0);
    if ((m->study & STUDY_ATTN) && m->k->bf16_dot) m->attn_bf16 = 1;
  }
  m->layers = calloc(c->n_layers ? (size_t)c->n_layers : 1, sizeof *m->layers);
  m->head = calloc(w->head_layers ? (size_t)w->head_layers : 1, sizeof *m->head);
  if (!m->layers || !m->head || build_rope(m)) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
    goto fail;
  }
  if (!w->tok_embeddings || !w->tok_embeddings->data || w->tok_embeddings->numel != (int64_t)c->vocab * d) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "cpu backend: tok_embeddings must be [%d, %d]", c->vocab, d);
    goto fail;
  }
  m->tok_embeddings = w->tok_embeddings;
  m->act_hidden = art ? artifact_act_hidden(art) : model_act_hidden(w);

  int threads = o && o->threads > 0 ? o->threads : env->threads > 0 ? (int)env->threads : cpu_default_threads();
  m->pool = cpu_pool_create(threads);
  if (!m->pool) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu backend: cannot start %d threads", threads);
    goto fail;
  }
  char nm[48];
#define VEC(dst, name, t, n) \
  if (!((dst) = load_vec(&L, (name), (t), (n)))) goto fail
#define LIN(pm, name, t, n, k, fmt, geglu, bias) \
  if (load_linear(&L, (pm), (name), (t), (n), (k), (fmt), (geglu), (bias) != NULL || art, (bias))) goto fail

  VEC(m->emb_norm, "emb_norm", w->emb_norm, d);
  for (int i = 0; i < c->n_layers; i++) {
    const enc_layer_weights *lw = &w->layers[i];
    cpu_enc_layer *l = &m->layers[i];
    if (i > 0) {
      snprintf(nm, sizeof nm, "enc.%d.attn_norm", i);
      VEC(l->attn_norm, nm, lw->attn_norm, d);
    }
    snprintf(nm, sizeof nm, "enc.%d.mlp_norm", i);
    VEC(l->mlp_norm, nm, lw->mlp_norm, d);
    snprintf(nm, sizeof nm, "enc.%d.wqkv", i);
    if (load_linear(&L, &l->wqkv, nm, lw->wqkv, 3 * d, d, matrix_fmt(m, m->fmt, 0, i, "wqkv"), 0, 0, NULL)) goto fail;
    snprintf(nm, sizeof nm, "enc.%d.wo", i);
    if (load_linear(&L, &l->wo, nm, lw->wo, d, d, matrix_fmt(m, m->fmt, 0, i, "wo"), 0, 0, NULL)) goto fail;
    snprintf(nm, sizeof nm, "enc.%d.wi", i);
    if (load_linear(&L, &l->wi, nm, lw->wi, 2 * I, d, matrix_fmt(m, m->fmt, 0, i, "wi"), 1, 0, NULL)) goto fail;
    l->wi.glu_act = w->enc.act; /* hidden_activation of the GeGLU */
    snprintf(nm, sizeof nm, "enc.%d.wo_mlp", i);
    if (load_linear(&L, &l->wo_mlp, nm, lw->wo_mlp, d, I, matrix_fmt(m, m->fmt, 0, i, "wo_mlp"), 0, 0, NULL)) goto fail;
  }
  VEC(m->final_norm, "final_norm", w->final_norm, d);
  VEC(m->type_emb, "type_emb", w->type_emb, 3 * d);
  for (int j = 0; j < w->head_layers; j++) {
    const head_layer_weights *hw = &w->head[j];
    cpu_head_layer *h = &m->head[j];
#define HNAME(s) (snprintf(nm, sizeof nm, "head.%d.%s", j, s), nm)
    VEC(h->norm1_w, HNAME("norm1_w"), hw->norm1_w, d);
    VEC(h->norm1_b, HNAME("norm1_b"), hw->norm1_b, d);
    VEC(h->norm2_w, HNAME("norm2_w"), hw->norm2_w, d);
    VEC(h->norm2_b, HNAME("norm2_b"), hw->norm2_b, d);
    LIN(&h->in_proj, HNAME("in_proj"), hw->in_proj_w, 3 * d, d, matrix_fmt(m, m->fmt, 1, j, "in_proj"), 0, hw->in_proj_b);
    LIN(&h->out_proj, HNAME("out_proj"), hw->out_proj_w, d, d, matrix_fmt(m, m->fmt, 1, j, "out_proj"), 0, hw->out_proj_b);
    LIN(&h->linear1, HNAME("linear1"), hw->linear1_w, 4 * d, d, matrix_fmt(m, m->fmt, 1, j, "linear1"), 0, hw->linear1_b);
    LIN(&h->linear2, HNAME("linear2"), hw->linear2_w, d, 4 * d, matrix_fmt(m, m->fmt, 1, j, "linear2"), 0, hw->linear2_b);
#undef HNAME
  }
  VEC(m->scorer_norm_w, "scorer_norm_w", w->scorer_norm_w, d);
  VEC(m->scorer_norm_b, "scorer_norm_b", w->scorer_norm_b, d);
  LIN(&m->scorer1, "scorer1", w->scorer1_w, d, d, WF_F32, 0, w->scorer1_b);
  VEC(m->scorer2_w, "scorer2_w", w->scorer2_w, d);
  VEC(m->scorer2_b, "scorer2_b", w->scorer2_b, 1);
  LIN(&m->act1, "act1", w->act1_w, m->act_hidden, d + MODEL_ACT_FEATURES, WF_F32, 0, w->act1_b);
  VEC(m->act2_w, "act2_w", w->act2_w, (int64_t)w->n_act * m->act_hidden);
  VEC(m->act2_b, "act2_b", w->act2_b, w->n_act);
#undef VEC
#undef LIN

  if (pack_all(&L) || split_all(&L)) goto fail;
  free(L.jobs);
  free(L.splits);
  return m;
fail:
  free(L.jobs);
  free(L.splits);
  cpu_model_free(m);
  return NULL;
}

/* ---- worker scratch --------------------------------------------------------------------------- */

typedef struct cpu_scratch {
  float *x;           /* [T][d] residual stream */
  float *xs;          /* [S][d] the last decision-head layer's kept rows (S = R + Mk: per row CLS, markers) */
  int max_sel;        /* most kept rows of one row (1 + its markers) */
  float *qkv;         /* [T][3d] */
  void *act;          /* [T][kd] in the weight format: normed input / attention output */
  float *act_scale;   /* [T] int8 row scales */
  float *att32;       /* [T][d] int8: attention output before quantisation */
  void *cact;         /* [C][kd] MLP chunk normed input */
  float *cact_scale;  /* [C] */
  void *chid;         /* [C][kf] MLP chunk hidden */
  float *chid_scale;  /* [C] */
  float *chid32;      /* [C][F] int8: hidden before quantisation */
  float *thread_buf;  /* per thread: [3 * Lmax * dh + attention scratch + d] */
  size_t thread_floats;
  float *mk, *mk2;    /* [Mk][d] */
  float *act_in;      /* [R][kpad(d + 4)] */
  float *act_h;       /* [R][act_hidden] */
  uint16_t *split;    /* split-precision tables: one fp32 GEMM's rows in bf16 parts (gemm) */
  size_t split_bytes;
  int kd, kf, kin;    /* padded widths of act (d), chid (F) and act_in (d + 4) */
} cpu_scratch;

struct backend_worker {
  size_t cap;
  unsigned char *buf;
};


static size_t carve(cpu_scratch *s, unsigned char *base, const cpu_model *m, int T, int R, int Mk,
                    int max_len, int max_sel, int threads) {
  size_t d = (size_t)m->enc.hidden, I = (size_t)m->enc.intermediate;
  size_t F = m->head_layers > 0 && 4 * d > I ? 4 * d : I;
  size_t el = m->max_elem;
  size_t S = (size_t)R + (size_t)Mk, Tn = (size_t)T > S ? (size_t)T : S; /* rows of act / att32 */
  size_t C = Tn < MLP_CHUNK ? Tn : MLP_CHUNK;
  s->max_sel = max_sel;
  int dh_max = m->enc.head_dim > (int)d / m->head_heads ? m->enc.head_dim : (int)d / m->head_heads;
  s->kd = pack_kpad((int)d);
  s->kf = pack_kpad((int)F);
  s->kin = pack_kpad((int)d + 4);
  size_t qrows = (size_t)(max_len > max_sel ? max_len : max_sel);
  s->thread_floats = (((2 * (size_t)max_len + qrows) * dh_max + cpu_attention_scratch(max_len) + d + (4 + PACK_BLOCK + PACK_BLOCK / 2) * CPU_MAX_DH) + 15) & ~(size_t)15;
  size_t off = 0;
#define TAKE(field, type, bytes)                               \
  do {                                                         \
    s->field = base ? (type)(void *)(base + off) : NULL;       \
    off += ((size_t)(bytes) + 63) & ~(size_t)63;               \
  } while (0)
  TAKE(x, float *, (size_t)T * d * 4);
  TAKE(qkv, float *, (size_t)T * 3 * d * 4);
  TAKE(xs, float *, m->head_layers > 0 ? S * d * 4 : 0);
  TAKE(act, void *, Tn * s->kd * el);
  TAKE(act_scale, float *, Tn * 4);
  TAKE(att32, float *, m->any_i8 ? Tn * d * 4 : 0);
  TAKE(cact, void *, C * s->kd * el);
  TAKE(cact_scale, float *, C * 4);
  TAKE(chid, void *, C * s->kf * el);
  TAKE(chid_scale, float *, C * 4);
  TAKE(chid32, float *, m->any_i8 ? C * F * 4 : 0);
  TAKE(thread_buf, float *, s->thread_floats * threads * 4);
  TAKE(mk, float *, (size_t)Mk * d * 4);
  TAKE(mk2, float *, (size_t)Mk * d * 4);
  TAKE(act_in, float *, (size_t)R * s->kin * 4);
  TAKE(act_h, float *, (size_t)R * m->act_hidden * 4);
  /* the parts of the largest fp32 GEMM input (gemm's calls: act / cact with k = d, chid with
   * k = F, mk with d, act_in with d + 4), rows padded to 16 */
  s->split_bytes = 0;
  if (m->k->split_rows_f32) {
    size_t sz[4] = {(Tn + 15) / 16 * 16 * CPU_SPLIT_LD(s->kd), (C + 15) / 16 * 16 * CPU_SPLIT_LD(s->kf),
                    ((size_t)Mk + 15) / 16 * 16 * CPU_SPLIT_LD(s->kd), ((size_t)R + 15) / 16 * 16 * CPU_SPLIT_LD(s->kin)};
    for (int i = 0; i < 4; i++)
      if (3 * sizeof(uint16_t) * sz[i] > s->split_bytes) s->split_bytes = 3 * sizeof(uint16_t) * sz[i];
  }
  TAKE(split, uint16_t *, s->split_bytes);
#undef TAKE
  return off;
}

/* Grow w's scratch to `need` bytes (grow-only; the zeroing touches every page, so the memory is
 * resident from here on). */
static int scratch_grow(backend_worker *w, size_t need, int T, laya_error *err) {
  if (need <= w->cap) return 0;
  unsigned char *nb = NULL;
  if (posix_memalign((void **)&nb, 64, need) != 0)
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory for %d tokens (%zu MB of scratch)", T, need >> 20);
  free(w->buf);
  w->buf = nb;
  w->cap = need;
  /* bf16 GEMMs read the padding columns of their inputs: keep them zero (they are never written) */
  memset(w->buf, 0, need);
  return 0;
}

/* Scratch for the largest batch `max` (every buffer grows with each of its counts, so it serves
 * every batch within it), and the RoPE table for its longest row. A row has its CLS before its
 * markers, so the kept rows of one row (1 + its markers) never exceed its length. */
static int cpu_worker_reserve(backend *b, backend_worker *w, const batch_shape *max, laya_error *err) {
  const cpu_model *m = b->impl;
  cpu_scratch s;
  size_t need = carve(&s, NULL, m, max->n_tokens, max->n_rows, max->n_markers, max->row_len, max->row_len,
                      cpu_pool_threads(m->pool));
  if (scratch_grow(w, need, max->n_tokens, err)) return err ? err->code : LAYA_ERR_NOMEM;
  ensure_rope(m, max->row_len);
  return 0;
}

static size_t cpu_worker_bytes(const backend *b, const backend_worker *w) {
  (void)b;
  return w->cap;
}

static backend_worker *cpu_worker_create(backend *b, laya_error *err) {
  (void)b;
  backend_worker *w = calloc(1, sizeof *w);
  if (!w) laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
  return w;
}

static void cpu_worker_destroy(backend *b, backend_worker *w) {
  (void)b;
  if (!w) return;
  free(w->buf);
  free(w);
}

/* ---- parallel steps --------------------------------------------------------------------------- */

/* Kinds of parallel step (LAYA_CPU_PROFILE). */
enum { PS_GEMM, PS_SPLIT, PS_ATTN_G, PS_ATTN_L, PS_ATTN_HEAD, PS_NORM, PS_OTHER, PS_N };
static const char *const PS_NAMES[PS_N] = {"gemm", "gemm_split", "attn_global", "attn_local", "attn_head", "norm_convert", "other"};

typedef struct fwd_profile {
  double wall_ms[PS_N];           /* caller's wall time inside the pool runs of each kind */
  _Atomic long long task_ns[PS_N]; /* thread CPU time of the tasks */
  _Atomic long long pack_ns;      /* attention: rotating and laying out q, k, v (inside attn_*) */
  int runs[PS_N], tasks[PS_N];
} fwd_profile;

typedef struct fwd {
  const cpu_model *m;
  const packed_batch *bt;
  cpu_scratch s;
  int T, threads;
  int step;           /* kind of the next pool run (PS_*) */
  fwd_profile *prof;  /* NULL unless LAYA_CPU_PROFILE */
} fwd;

static double wall_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static long long thread_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

typedef struct prof_task {
  cpu_task_fn fn;
  void *ctx;
  _Atomic long long *ns;
} prof_task;

static void prof_task_fn(void *ctx, int task, int thread) {
  prof_task *p = ctx;
  long long t0 = thread_ns();
  p->fn(p->ctx, task, thread);
  atomic_fetch_add_explicit(p->ns, thread_ns() - t0, memory_order_relaxed);
}

static void run(fwd *f, int n, cpu_task_fn fn, void *ctx) {
  if (!f->prof) {
    cpu_pool_run(f->m->pool, n, fn, ctx);
    return;
  }
  prof_task p = {fn, ctx, &f->prof->task_ns[f->step]};
  double t0 = wall_now_ms();
  cpu_pool_run(f->m->pool, n, prof_task_fn, &p);
  f->prof->wall_ms[f->step] += wall_now_ms() - t0;
  f->prof->runs[f->step]++;
  f->prof->tasks[f->step] += n;
  f->step = PS_OTHER;
}

static void profile_print(const fwd *f, double wall_ms, double cpu_ms) {
  const fwd_profile *p = f->prof;
  fprintf(stderr, "{\"cpu_profile\":1,\"isa\":\"%s\",\"fmt\":%d,\"rows\":%d,\"tokens\":%d,\"threads\":%d,"
          "\"wall_ms\":%.3f,\"process_cpu_ms\":%.3f,\"attn_pack_cpu_ms\":%.3f",
          f->m->k->name, (int)f->m->fmt, f->bt->n_rows, f->T, f->threads, wall_ms, cpu_ms,
          (double)atomic_load(&p->pack_ns) * 1e-6);
  for (int i = 0; i < PS_N; i++)
    fprintf(stderr, ",\"%s\":{\"wall_ms\":%.3f,\"task_cpu_ms\":%.3f,\"runs\":%d,\"tasks\":%d}", PS_NAMES[i],
            p->wall_ms[i], (double)atomic_load(&p->task_ns[i]) * 1e-6, p->runs[i], p->tasks[i]);
  fprintf(stderr, "}\n");
}

/* GEMM: y = x W^T over M rows, split into (row chunk, panel group) tasks. */
typedef struct gemm_job {
  const cpu_model *m;
  gemm_input in;
  const packed_matrix *w;
  gemm_epilogue e;
  int M, mtile, n_m, pgroup, n_p;
} gemm_job;

static void gemm_task(void *ctx, int task, int thread) {
  (void)thread;
  gemm_job *g = ctx;
  int mi = task % g->n_m, pi = task / g->n_m;
  int m0 = mi * g->mtile, m1 = m0 + g->mtile < g->M ? m0 + g->mtile : g->M;
  int p0 = pi * g->pgroup, p1 = p0 + g->pgroup < g->w->n_panels ? p0 + g->pgroup : g->w->n_panels;
  const cpu_kernels *k = g->m->k;
  if (g->w->fmt == WF_F32) k->gemm_f32(&g->in, g->w, m0, m1, p0, p1, &g->e);
  else if (g->w->fmt == WF_BF16) k->gemm_bf16(&g->in, g->w, m0, m1, p0, p1, &g->e);
  else k->gemm_i8(&g->in, g->w, m0, m1, p0, p1, &g->e);
}

/* Finish time of n_m x n_p GEMM tasks (task i: row chunk i % n_m, panel group i / n_m; cost rows x
 * panels) handed out in order to the first free of `threads` equal threads. */
static long gemm_makespan(int M, int mtile, int n_m, int n_panels, int pgroup, int n_p, int threads) {
  long busy[64] = {0};
  if (threads > 64) threads = 64;
  for (int i = 0; i < n_m * n_p; i++) {
    int mi = i % n_m, pi = i / n_m;
    int rows = M - mi * mtile < mtile ? M - mi * mtile : mtile;
    int panels = n_panels - pi * pgroup < pgroup ? n_panels - pi * pgroup : pgroup;
    int t = 0;
    for (int k = 1; k < threads; k++)
      if (busy[k] < busy[t]) t = k;
    busy[t] += (long)rows * panels;
  }
  long span = 0;
  for (int k = 0; k < threads; k++) span = busy[k] > span ? busy[k] : span;
  return span;
}

/* The split-precision tables' first step of an fp32 GEMM: its rows cut into bf16 parts once, in
 * blocks of ROW_BLOCK rows (tasks), into the forward's split buffer that all the GEMM's tasks read
 * after it (the pool step between them is the barrier). */
typedef struct split_job {
  const cpu_kernels *k;
  const float *a;
  int lda, k_pad, M, rows, ld;
  uint16_t *parts;
  size_t plane;
} split_job;

static void split_rows_task(void *ctx, int task, int thread) {
  (void)thread;
  const split_job *j = ctx;
  int r0 = task * ROW_BLOCK, r1 = r0 + ROW_BLOCK < j->rows ? r0 + ROW_BLOCK : j->rows;
  j->k->split_rows_f32(j->a, j->lda, j->k_pad, r0, r1, j->M, j->parts, j->ld, j->plane);
}

static void gemm(fwd *f, const void *a, int lda, const float *row_scale, const packed_matrix *w, int M,
                 epi_act act, int residual, float *out32, void *out16, int ldo) {
  if (M <= 0) return;
  gemm_job g;
  g.in.split = NULL;
  g.in.split_plane = 0;
  g.in.split_ld = 0;
  if (w->fmt == WF_F32 && w->split && f->m->k->split_rows_f32) {
    int ld = CPU_SPLIT_LD(w->k_pad), rows = (M + 15) & ~15;
    size_t plane = (size_t)rows * ld;
    if (3 * plane * sizeof(uint16_t) <= f->s.split_bytes) { /* else (never, by carve) each task splits */
      split_job sj = {f->m->k, a, lda, w->k_pad, M, rows, ld, f->s.split, plane};
      f->step = PS_SPLIT;
      run(f, (rows + ROW_BLOCK - 1) / ROW_BLOCK, split_rows_task, &sj);
      g.in.split = f->s.split;
      g.in.split_plane = plane;
      g.in.split_ld = ld;
    }
  }
  g.m = f->m;
  g.in.a = a;
  g.in.lda = lda;
  g.in.row_scale = row_scale;
  { /* an id per call: its tasks on one thread may share their copy of the rows (kernels.h) */
    static atomic_ulong gemm_calls;
    g.in.gen = atomic_fetch_add(&gemm_calls, 1) + 1;
  }
  g.w = w;
  g.e.act = act;
  g.e.residual = residual;
  g.e.out_f32 = out32;
  g.e.out_bf16 = out16;
  g.e.ldo = ldo;
  g.M = M;
  /* Row chunks of at most GEMM_MTILE rows (about), equal and whole microkernel tiles (the table's
   * gemm_rows); then the number of
   * panel groups whose tasks, handed out in order to whichever thread is free, finish soonest
   * (an 11-task or 9-task split over 2 threads leaves one idle for a ninth of the GEMM). */
  int mr = f->m->k->gemm_rows[w->fmt] > 0 ? f->m->k->gemm_rows[w->fmt] : GEMM_MR;
  g.n_m = (M + f->m->gemm_mtile - 1) / f->m->gemm_mtile;
  g.mtile = ((M + g.n_m - 1) / g.n_m + mr - 1) / mr * mr;
  g.n_m = (M + g.mtile - 1) / g.mtile;
  int want = f->m->gemm_per_thread * f->threads; /* enough tasks to balance, few enough to keep panels long */
  int n_p0 = (want + g.n_m - 1) / g.n_m;
  if (n_p0 > w->n_panels) n_p0 = w->n_panels;
  if (n_p0 < 1) n_p0 = 1;
  long best = -1;
  for (int n_p = n_p0; n_p <= w->n_panels && n_p < n_p0 + 8; n_p++) {
    int pgroup = (w->n_panels + n_p - 1) / n_p, np = (w->n_panels + pgroup - 1) / pgroup;
    if (best >= 0 && np == g.n_p) continue;
    long span = gemm_makespan(M, g.mtile, g.n_m, w->n_panels, pgroup, np, f->threads);
    if (best < 0 || span < best) {
      best = span;
      g.pgroup = pgroup;
      g.n_p = np;
    }
  }
  f->step = PS_GEMM;
  run(f, g.n_m * g.n_p, gemm_task, &g);
}

/* LAYA_CPU_STUDY: rounds an fp32 GEMM input to bf16 in place (layer -1: a decision-head layer). */
static void study_round(fwd *f, unsigned bit, int layer, cpu_wfmt fmt, void *buf, int rows, int ld, int n) {
  const cpu_model *m = f->m;
  if (!(m->study & bit) || fmt != WF_F32) return;
  if (layer >= 0 && m->study_layer >= 0 && layer != m->study_layer) return;
  for (int r = 0; r < rows; r++) {
    float *x = (float *)buf + (size_t)r * ld;
    if ((m->study & STUDY_A8) && !(layer < 0 && (m->study & STUDY_HEAD16))) {
      study_round_int8(x, n);
    } else {
      for (int c = 0; c < n; c++) x[c] = bf16_to_f32(f32_to_bf16_rne(x[c]));
    }
  }
}

/* Row-wise LayerNorm into the weight format of the next GEMM. */
typedef struct norm_job {
  fwd *f;
  cpu_wfmt fmt; /* of the GEMM that reads the output */
  const float *x;
  int ldx, n, rows;
  const float *w, *b;
  float eps;
  void *out;
  float *out_scale;
  int ldo;
} norm_job;

static void norm_task(void *ctx, int task, int thread) {
  norm_job *j = ctx;
  const cpu_model *m = j->f->m;
  int r0 = task * ROW_BLOCK, r1 = r0 + ROW_BLOCK < j->rows ? r0 + ROW_BLOCK : j->rows;
  float *tmp = j->f->s.thread_buf + (size_t)thread * j->f->s.thread_floats;
  for (int r = r0; r < r1; r++) {
    const float *xr = j->x + (size_t)r * j->ldx;
    if (j->fmt == WF_F32) {
      m->k->layernorm(xr, j->n, j->w, j->b, j->eps, (float *)j->out + (size_t)r * j->ldo, NULL);
    } else if (j->fmt == WF_BF16) {
      m->k->layernorm(xr, j->n, j->w, j->b, j->eps, NULL, (uint16_t *)j->out + (size_t)r * j->ldo);
    } else {
      m->k->layernorm(xr, j->n, j->w, j->b, j->eps, tmp, NULL);
      j->out_scale[r] = m->k->quantize_row(tmp, j->n, j->ldo, (uint8_t *)j->out + (size_t)r * j->ldo);
    }
  }
}

static void norm_rows(fwd *f, cpu_wfmt fmt, const float *x, int ldx, int rows, int n, const float *w,
                      const float *b, float eps, void *out, float *out_scale, int ldo) {
  norm_job j = {f, fmt, x, ldx, n, rows, w, b, eps, out, out_scale, ldo};
  f->step = PS_NORM;
  run(f, (rows + ROW_BLOCK - 1) / ROW_BLOCK, norm_task, &j);
}

/* fp32 rows -> the weight format (layer 0 has no attention norm; int8 hidden states). */
typedef struct conv_job {
  fwd *f;
  cpu_wfmt fmt;
  const float *x;
  int ldx, n, rows;
  void *out;
  float *out_scale;
  int ldo;
} conv_job;

static void conv_task(void *ctx, int task, int thread) {
  (void)thread;
  conv_job *j = ctx;
  const cpu_model *m = j->f->m;
  int r0 = task * ROW_BLOCK, r1 = r0 + ROW_BLOCK < j->rows ? r0 + ROW_BLOCK : j->rows;
  for (int r = r0; r < r1; r++) {
    const float *xr = j->x + (size_t)r * j->ldx;
    if (j->fmt == WF_F32) memcpy((float *)j->out + (size_t)r * j->ldo, xr, (size_t)j->n * sizeof(float));
    else if (j->fmt == WF_BF16) m->k->to_bf16(xr, j->n, (uint16_t *)j->out + (size_t)r * j->ldo);
    else j->out_scale[r] = m->k->quantize_row(xr, j->n, j->ldo, (uint8_t *)j->out + (size_t)r * j->ldo);
  }
}

static void convert_rows(fwd *f, cpu_wfmt fmt, const float *x, int ldx, int rows, int n, void *out,
                         float *out_scale, int ldo) {
  conv_job j = {f, fmt, x, ldx, n, rows, out, out_scale, ldo};
  f->step = PS_NORM;
  run(f, (rows + ROW_BLOCK - 1) / ROW_BLOCK, conv_task, &j);
}

/* Attention per (row, head): rotate and scale q, transpose k, copy v into the thread's buffer,
 * then all queries of the row. */
typedef struct attn_job {
  fwd *f;
  int n_heads, dh, window, d;
  const float *rope; /* NULL: no rotary embedding (decision head) */
  int rope_g;        /* which inv_freq for positions past the table */
  void *out;         /* [T][kd] weight format (fp32 / bf16) or att32 for int8 */
  int out_bf16, ldo;
  int sel;           /* queries only at the batch's kept rows (last decision-head layer, no rope,
                        full attention): row r's k-th kept query is token kept[o0 + k] of the
                        row, written to output row o0 + k (o0 = model_kept_first) */
} attn_job;

/* Rotate x (dh floats, in place) for position i and scale it (no rope: scale only). */
static void rope_one(const attn_job *j, int i, float *x, float *cs_tmp, float scale) {
  const cpu_model *m = j->f->m;
  int dh = j->dh;
  if (j->rope) {
    const float *cs;
    if (i < m->rope_len) {
      cs = j->rope + (size_t)i * dh;
    } else {
      for (int c = 0; c < dh / 2; c++) {
        float ang = (float)i * m->inv_freq[j->rope_g][c];
        cs_tmp[c] = cosf(ang);
        cs_tmp[dh / 2 + c] = sinf(ang);
      }
      cs = cs_tmp;
    }
    m->k->rope(x, dh, cs, scale);
  } else if (scale != 1.0f) {
    for (int c = 0; c < dh; c++) x[c] *= scale;
  }
}

/* attn_task reads one head's k and v of every token from rows 3d floats apart (12 KB for
 * ModernBERT-large), a stride the hardware prefetcher does not follow: it prefetches the token
 * PACK_AHEAD ahead. The packing's share of the bf16 forward's profile (mmBERT 1x512 + 8x256):
 * 3.6-4.3% -> 2.4-2.7%; prefetching the queries' rows as well measured worse (2.9%). */
#define PACK_AHEAD 4

static void attn_task(void *ctx, int task, int thread) {
  attn_job *j = ctx;
  fwd *f = j->f;
  const cpu_model *m = f->m;
  int r = task / j->n_heads, h = task % j->n_heads, dh = j->dh, d = j->d;
  int s0 = f->bt->row_start[r], t = f->bt->row_start[r + 1] - s0;
  float *buf = f->s.thread_buf + (size_t)thread * f->s.thread_floats;
  long long pack_t0 = f->prof ? thread_ns() : 0;
  /* fp32: q [T][dh], kt [dh][T], v [T][dh]; bf16: qb, kb, vb (kernels.h) in the same floats */
  int qrows = j->sel ? f->s.max_sel : t; /* the kept queries of a row may outnumber its tokens */
  if (qrows < t) qrows = t;
  float *q = buf, *kt = q + (size_t)qrows * dh, *v = kt + (size_t)t * dh, *scratch = v + (size_t)t * dh;
  float *cs_tmp = scratch + cpu_attention_scratch(t);
  float *qtmp = cs_tmp + CPU_MAX_DH;                 /* one token's q */
  uint16_t *h16 = (uint16_t *)(qtmp + CPU_MAX_DH);   /* one token's v in bf16 */
  float *kblk = qtmp + 3 * CPU_MAX_DH;               /* PACK_BLOCK tokens' rotated k, [PACK_BLOCK][dh] */
  uint16_t *kblk16 = (uint16_t *)(kblk + (size_t)PACK_BLOCK * CPU_MAX_DH); /* the same in bf16 */
  uint16_t *qb = (uint16_t *)q, *kb = (uint16_t *)kt, *vb = (uint16_t *)v;
  float scale = 1.0f / sqrtf((float)dh);
  /* keys and values of every token; queries of every token, or of the kept ones (sel) */
  int nq = j->sel ? 1 + f->bt->marker_start[r + 1] - f->bt->marker_start[r] : t;
  const int32_t *kept = f->bt->kept + model_kept_first(f->bt, r); /* this row's kept rows (sel) */
  /* k in blocks of PACK_BLOCK tokens: rotated into kblk, then stored transposed a block at a time,
   * so each store run fills whole cache lines (one token at a time wrote dh lines per token) */
  for (int i0 = 0; i0 < t; i0 += PACK_BLOCK) {
    int nb = t - i0 < PACK_BLOCK ? t - i0 : PACK_BLOCK;
    for (int ii = 0; ii < nb; ii++) {
      int i = i0 + ii;
      const float *row = f->s.qkv + (size_t)(s0 + i) * 3 * d;
      if (i + PACK_AHEAD < t) /* this head's k and v of a later token: rows are 3d floats apart */
        for (int c = 0; c < dh; c += 16) {
          __builtin_prefetch(row + (size_t)PACK_AHEAD * 3 * d + d + h * dh + c);
          __builtin_prefetch(row + (size_t)PACK_AHEAD * 3 * d + 2 * d + h * dh + c);
        }
      float *kr = kblk + (size_t)ii * dh;
      memcpy(kr, row + d + h * dh, (size_t)dh * sizeof(float));
      rope_one(j, i, kr, cs_tmp, 1.0f);
      if (m->attn_bf16) {
        m->k->to_bf16(row + 2 * d + h * dh, dh, h16);
        for (int c = 0; c < dh; c++) vb[attn_bf16_vb_index(dh, i, c)] = h16[c];
      } else {
        memcpy(v + (size_t)i * dh, row + 2 * d + h * dh, (size_t)dh * sizeof(float));
      }
    }
    if (m->attn_bf16) {
      for (int ii = 0; ii < nb; ii++) m->k->to_bf16(kblk + (size_t)ii * dh, dh, kblk16 + (size_t)ii * dh);
      for (int p = 0; p < dh / 2; p++) {
        uint16_t *dst = kb + attn_bf16_kb_index(t, p, i0);
        for (int ii = 0; ii < nb; ii++) memcpy(dst + 2 * ii, kblk16 + (size_t)ii * dh + 2 * p, 2 * sizeof(uint16_t));
      }
    } else {
      for (int c = 0; c < dh; c++) {
        float *dst = kt + (size_t)c * t + i0;
        for (int ii = 0; ii < nb; ii++) dst[ii] = kblk[(size_t)ii * dh + c];
      }
    }
  }
  if (m->attn_bf16 && t % 2)
    for (int c = 0; c < dh; c++) vb[attn_bf16_vb_index(dh, t, c)] = 0; /* the pad key of the last pair */
  for (int qi = 0; qi < nq; qi++) {
    int i = j->sel ? kept[qi] : qi;
    float *qd = m->attn_bf16 ? qtmp : q + (size_t)qi * dh; /* fp32: rotated in place */
    memcpy(qd, f->s.qkv + (size_t)(s0 + i) * 3 * d + h * dh, (size_t)dh * sizeof(float));
    rope_one(j, i, qd, cs_tmp, scale);
    if (m->attn_bf16) m->k->to_bf16(qtmp, dh, qb + (size_t)qi * dh);
  }
  if (f->prof) atomic_fetch_add_explicit(&f->prof->pack_ns, thread_ns() - pack_t0, memory_order_relaxed);
  attn_args a;
  memset(&a, 0, sizeof a);
  a.q = q;
  a.kt = kt;
  a.v = v;
  a.qb = qb;
  a.kb = kb;
  a.vb = vb;
  a.t = t;
  a.dh = dh;
  a.i0 = 0;
  a.i1 = nq;
  a.window = j->sel ? -1 : j->window; /* sel: query slots are not positions; full attention only */
  a.scratch = scratch;
  a.ldo = j->ldo;
  size_t o0 = j->sel ? (size_t)model_kept_first(f->bt, r) : (size_t)s0; /* first output row */
  if (j->out_bf16) {
    a.out_bf16 = (uint16_t *)j->out + o0 * j->ldo + h * dh;
    a.out_f32 = NULL;
  } else {
    a.out_f32 = (float *)j->out + o0 * j->ldo + h * dh;
    a.out_bf16 = NULL;
  }
  if (m->attn_bf16) m->k->attention_bf16(&a);
  else m->k->attention(&a);
}

/* Attention of every (row, head) into act (the output rows: T, or the kept S = R + Mk with sel). */
static void attention(fwd *f, cpu_wfmt fmt, int n_heads, int dh, int window, const float *rope, int rope_g,
                      int sel) {
  const cpu_model *m = f->m;
  attn_job j;
  j.f = f;
  j.sel = sel;
  j.n_heads = n_heads;
  j.dh = dh;
  j.window = window;
  j.d = m->enc.hidden;
  j.rope = rope;
  j.rope_g = rope_g;
  if (fmt == WF_I8) {
    j.out = f->s.att32;
    j.out_bf16 = 0;
    j.ldo = j.d;
  } else {
    j.out = f->s.act;
    j.out_bf16 = fmt == WF_BF16;
    j.ldo = f->s.kd;
  }
  f->step = !rope ? PS_ATTN_HEAD : window < 0 ? PS_ATTN_G : PS_ATTN_L;
  run(f, f->bt->n_rows * n_heads, attn_task, &j);
  int rows = sel ? f->bt->n_rows + f->bt->marker_start[f->bt->n_rows] : f->T;
  if (fmt == WF_I8) convert_rows(f, fmt, f->s.att32, j.d, rows, j.d, f->s.act, f->s.act_scale, f->s.kd);
}

/* Embedding rows (any stored dtype) -> LayerNorm, into x. */
static void embed_task(void *ctx, int task, int thread) {
  (void)thread;
  fwd *f = ctx;
  const cpu_model *m = f->m;
  int d = m->enc.hidden;
  int r0 = task * ROW_BLOCK, r1 = r0 + ROW_BLOCK < f->T ? r0 + ROW_BLOCK : f->T;
  for (int t = r0; t < r1; t++) {
    float *xt = f->s.x + (size_t)t * d;
    tensor_to_f32(m->tok_embeddings, (int64_t)f->bt->tokens[t] * d, d, xt);
    m->k->layernorm(xt, d, m->emb_norm, NULL, (float)m->enc.norm_eps, xt, NULL);
  }
}

static void final_task(void *ctx, int task, int thread) {
  (void)thread;
  fwd *f = ctx;
  const cpu_model *m = f->m;
  const packed_batch *bt = f->bt;
  int d = m->enc.hidden;
  int r0 = task * ROW_BLOCK, r1 = r0 + ROW_BLOCK < f->T ? r0 + ROW_BLOCK : f->T;
  int row = 0;
  while (bt->row_start[row + 1] <= r0) row++;
  for (int t = r0; t < r1; t++) {
    while (bt->row_start[row + 1] <= t) row++;
    float *xt = f->s.x + (size_t)t * d;
    m->k->layernorm(xt, d, m->final_norm, NULL, (float)m->enc.norm_eps, xt, NULL);
    const float *te = m->type_emb + (size_t)bt->qtype[row] * d;
    for (int i = 0; i < d; i++) xt[i] += te[i];
  }
}

/* The MLP half of an encoder layer over tokens [c0, c0 + n): Wo + residual was done on all
 * tokens; here x += Wo_mlp(act(in) * gate), [in | gate] = Wi(mlp_norm(x)), act the hidden_activation. */
static void mlp_chunk(fwd *f, const cpu_enc_layer *L, int l, int c0, int n) {
  const cpu_model *m = f->m;
  cpu_scratch *s = &f->s;
  int d = m->enc.hidden, I = m->enc.intermediate;
  float *x = s->x + (size_t)c0 * d;
  norm_rows(f, L->wi.fmt, x, d, n, d, L->mlp_norm, NULL, (float)m->enc.norm_eps, s->cact, s->cact_scale, s->kd);
  study_round(f, STUDY_A_I, l, L->wi.fmt, s->cact, n, s->kd, d);
  cpu_wfmt hf = L->wo_mlp.fmt; /* the hidden is written in the format its consumer reads */
  if (hf == WF_I8) {
    gemm(f, s->cact, s->kd, s->cact_scale, &L->wi, n, EPI_GEGLU, 0, s->chid32, NULL, I);
    convert_rows(f, hf, s->chid32, I, n, I, s->chid, s->chid_scale, s->kf);
  } else if (hf == WF_BF16) {
    gemm(f, s->cact, s->kd, s->cact_scale, &L->wi, n, EPI_GEGLU, 0, NULL, s->chid, s->kf);
  } else {
    gemm(f, s->cact, s->kd, s->cact_scale, &L->wi, n, EPI_GEGLU, 0, s->chid, NULL, s->kf);
    study_round(f, STUDY_A_OM, l, hf, s->chid, n, s->kf, I);
  }
  gemm(f, s->chid, s->kf, s->chid_scale, &L->wo_mlp, n, EPI_NONE, 1, x, NULL, d);
}

/* The FFN half of a decision-head layer over tokens [c0, c0 + n). */
static void ffn_chunk(fwd *f, const cpu_head_layer *H, float *x, int n) {
  const cpu_model *m = f->m;
  cpu_scratch *s = &f->s;
  int d = m->enc.hidden, F4 = 4 * d;
  norm_rows(f, H->linear1.fmt, x, d, n, d, H->norm2_w, H->norm2_b, MODEL_HEAD_LN_EPS, s->cact, s->cact_scale, s->kd);
  study_round(f, STUDY_H_1, -1, H->linear1.fmt, s->cact, n, s->kd, d);
  cpu_wfmt hf = H->linear2.fmt;
  if (hf == WF_I8) {
    gemm(f, s->cact, s->kd, s->cact_scale, &H->linear1, n, EPI_RELU, 0, s->chid32, NULL, F4);
    convert_rows(f, hf, s->chid32, F4, n, F4, s->chid, s->chid_scale, s->kf);
  } else if (hf == WF_BF16) {
    gemm(f, s->cact, s->kd, s->cact_scale, &H->linear1, n, EPI_RELU, 0, NULL, s->chid, s->kf);
  } else {
    gemm(f, s->cact, s->kd, s->cact_scale, &H->linear1, n, EPI_RELU, 0, s->chid, NULL, s->kf);
    study_round(f, STUDY_H_2, -1, hf, s->chid, n, s->kf, F4);
  }
  gemm(f, s->chid, s->kf, s->chid_scale, &H->linear2, n, EPI_NONE, 1, x, NULL, d);
}

static void encoder_layer(fwd *f, int l) {
  const cpu_model *m = f->m;
  const cpu_enc_layer *L = &m->layers[l];
  cpu_scratch *s = &f->s;
  int d = m->enc.hidden, T = f->T;
  int global = enc_layer_global(&m->enc, l);
  if (L->attn_norm)
    norm_rows(f, L->wqkv.fmt, s->x, d, T, d, L->attn_norm, NULL, (float)m->enc.norm_eps, s->act, s->act_scale, s->kd);
  else
    convert_rows(f, L->wqkv.fmt, s->x, d, T, d, s->act, s->act_scale, s->kd);
  study_round(f, STUDY_A_QKV, l, L->wqkv.fmt, s->act, T, s->kd, d);
  gemm(f, s->act, s->kd, s->act_scale, &L->wqkv, T, EPI_NONE, 0, s->qkv, NULL, 3 * d);
  attention(f, L->wo.fmt, m->enc.n_heads, m->enc.head_dim, model_layer_window(&m->enc, l),
            m->rope[global ? 0 : 1], global ? 0 : 1, 0);
  study_round(f, STUDY_A_O, l, L->wo.fmt, s->act, T, s->kd, d);
  gemm(f, s->act, s->kd, s->act_scale, &L->wo, T, EPI_NONE, 1, s->x, NULL, d);
  for (int c0 = 0; c0 < T; c0 += MLP_CHUNK) mlp_chunk(f, L, l, c0, T - c0 < MLP_CHUNK ? T - c0 : MLP_CHUNK);
}

/* A decision-head layer. The last one (sel) computes only what the answer reads: keys and values
 * of every token, but queries, output projection and FFN only at each row's CLS and markers, on
 * their copies in xs (S = R + Mk rows); the other tokens' outputs would be dropped. */
static void head_layer(fwd *f, int j, int sel) {
  const cpu_model *m = f->m;
  const cpu_head_layer *H = &m->head[j];
  const packed_batch *bt = f->bt;
  cpu_scratch *s = &f->s;
  int d = m->enc.hidden, T = f->T, R = bt->n_rows;
  norm_rows(f, H->in_proj.fmt, s->x, d, T, d, H->norm1_w, H->norm1_b, MODEL_HEAD_LN_EPS, s->act, s->act_scale, s->kd);
  study_round(f, STUDY_H_QKV, -1, H->in_proj.fmt, s->act, T, s->kd, d);
  gemm(f, s->act, s->kd, s->act_scale, &H->in_proj, T, EPI_NONE, 0, s->qkv, NULL, 3 * d);
  attention(f, H->out_proj.fmt, m->head_heads, d / m->head_heads, -1, NULL, 0, sel);
  float *x = s->x;
  int n = T;
  if (sel) {
    n = model_kept_count(bt);
    for (int r = 0; r < R; r++)
      for (int k = model_kept_first(bt, r); k <= model_kept_first(bt, r) + bt->marker_start[r + 1] - bt->marker_start[r]; k++)
        memcpy(s->xs + (size_t)k * d, s->x + (size_t)(bt->row_start[r] + bt->kept[k]) * d, (size_t)d * sizeof(float));
    x = s->xs;
  }
  study_round(f, STUDY_H_O, -1, H->out_proj.fmt, s->act, n, s->kd, d);
  gemm(f, s->act, s->kd, s->act_scale, &H->out_proj, n, EPI_NONE, 1, x, NULL, d);
  for (int c0 = 0; c0 < n; c0 += MLP_CHUNK) ffn_chunk(f, H, x + (size_t)c0 * d, n - c0 < MLP_CHUNK ? n - c0 : MLP_CHUNK);
}

/* ---- forward ---------------------------------------------------------------------------------- */

static int check_batch(const cpu_model *m, const packed_batch *bt, int *max_len, laya_error *err) {
  return packed_batch_check(bt, m->enc.vocab, "cpu backend", max_len, err);
}

static int cpu_forward(backend *b, backend_worker *w, const packed_batch *bt, float *logits,
                       float *act_logits, laya_error *err) {
  const cpu_model *m = b->impl;
  int max_len = 1;
  if (bt->n_rows == 0) return 0;
  if (check_batch(m, bt, &max_len, err)) return err ? err->code : LAYA_ERR_VALUE;
  int T = bt->n_tokens, R = bt->n_rows, Mk = bt->marker_start[R], d = m->enc.hidden;
  int threads = cpu_pool_threads(m->pool);

  fwd f;
  memset(&f, 0, sizeof f);
  f.m = m;
  f.bt = bt;
  f.T = T;
  f.threads = threads;
  f.step = PS_OTHER;
  fwd_profile prof;
  double prof_wall0 = 0, prof_cpu0 = 0;
  if (m->profile) {
    memset(&prof, 0, sizeof prof);
    f.prof = &prof;
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    prof_cpu0 = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    prof_wall0 = wall_now_ms();
  }
  int max_sel = 1;
  for (int r = 0; r < R; r++)
    if (1 + bt->marker_start[r + 1] - bt->marker_start[r] > max_sel) max_sel = 1 + bt->marker_start[r + 1] - bt->marker_start[r];
  size_t need = carve(&f.s, NULL, m, T, R, Mk, max_len, max_sel, threads);
  if (scratch_grow(w, need, T, err)) return err ? err->code : LAYA_ERR_NOMEM;
  carve(&f.s, w->buf, m, T, R, Mk, max_len, max_sel, threads);
  if (d % 4 || m->enc.intermediate % 4) memset(w->buf, 0, need); /* padding columns must read zero */

  ensure_rope(m, max_len);
  cpu_pool_lock(m->pool);
  run(&f, (T + ROW_BLOCK - 1) / ROW_BLOCK, embed_task, &f);
  for (int l = 0; l < m->enc.n_layers; l++) encoder_layer(&f, l);
  run(&f, (T + ROW_BLOCK - 1) / ROW_BLOCK, final_task, &f); /* final norm + type_emb */
  for (int j = 0; j < m->head_layers; j++) head_layer(&f, j, j == m->head_layers - 1);

  /* scorer on the option markers: Linear(GELU(Linear(LayerNorm(h)))) */
  cpu_scratch *s = &f.s;
  /* the states of the kept rows (a row's CLS, then its markers): their copies in xs after a
   * decision head (head_layer), else rows of x */
  const int in_xs = m->head_layers > 0;
  for (int r = 0; r < R; r++)
    for (int i = bt->marker_start[r]; i < bt->marker_start[r + 1]; i++)
      m->k->layernorm(in_xs ? s->xs + (size_t)(r + i + 1) * d : s->x + (size_t)(bt->row_start[r] + bt->kept[r + i + 1]) * d, d,
                      m->scorer_norm_w, m->scorer_norm_b, MODEL_HEAD_LN_EPS, s->mk + (size_t)i * d, NULL);
  gemm(&f, s->mk, d, NULL, &m->scorer1, Mk, EPI_GELU, 0, s->mk2, NULL, d);
  for (int i = 0; i < Mk; i++) {
    const float *h = s->mk2 + (size_t)i * d;
    float acc = 0.0f;
    for (int c = 0; c < d; c++) acc += h[c] * m->scorer2_w[c];
    logits[i] = acc + m->scorer2_b[0];
  }

  /* act head on [CLS state after the head ; confidence features] */
  for (int r = 0; r < R; r++) {
    float *in = s->act_in + (size_t)r * s->kin;
    const int c = model_kept_first(bt, r); /* the row's CLS */
    memcpy(in, in_xs ? s->xs + (size_t)c * d : s->x + (size_t)(bt->row_start[r] + bt->kept[c]) * d,
           (size_t)d * sizeof(float));
    ref_confidence_features(logits + bt->marker_start[r], bt->marker_start[r + 1] - bt->marker_start[r], in + d);
  }
  gemm(&f, s->act_in, s->kin, NULL, &m->act1, R, EPI_GELU, 0, s->act_h, NULL, m->act_hidden);
  cpu_pool_unlock(m->pool);
  for (int r = 0; r < R; r++) {
    const float *h = s->act_h + (size_t)r * m->act_hidden;
    for (int a = 0; a < m->n_act; a++) {
      const float *wa = m->act2_w + (size_t)a * m->act_hidden;
      float acc = 0.0f;
      for (int c = 0; c < m->act_hidden; c++) acc += h[c] * wa[c];
      act_logits[(size_t)r * m->n_act + a] = acc + m->act2_b[a];
    }
  }
  if (f.prof) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    profile_print(&f, wall_now_ms() - prof_wall0, ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6 - prof_cpu0);
  }
  return 0;
}

/* The encoder's final norm alone (final_task without the question-type embedding). */
static void final_norm_task(void *ctx, int task, int thread) {
  (void)thread;
  fwd *f = ctx;
  const cpu_model *m = f->m;
  int d = m->enc.hidden;
  int r0 = task * ROW_BLOCK, r1 = r0 + ROW_BLOCK < f->T ? r0 + ROW_BLOCK : f->T;
  for (int t = r0; t < r1; t++) {
    float *xt = f->s.x + (size_t)t * d;
    m->k->layernorm(xt, d, m->final_norm, NULL, (float)m->enc.norm_eps, xt, NULL);
  }
}

/* The encoder alone, mean-pooled per row (backend.embed): cpu_forward's encoder half. */
static int cpu_embed(backend *b, backend_worker *w, const packed_batch *bt, float *pooled, laya_error *err) {
  const cpu_model *m = b->impl;
  int max_len = 1;
  if (bt->n_rows == 0) return 0;
  if (check_batch(m, bt, &max_len, err)) return err ? err->code : LAYA_ERR_VALUE;
  int T = bt->n_tokens, R = bt->n_rows, threads = cpu_pool_threads(m->pool);
  fwd f;
  memset(&f, 0, sizeof f);
  f.m = m;
  f.bt = bt;
  f.T = T;
  f.threads = threads;
  size_t need = carve(&f.s, NULL, m, T, R, 0, max_len, 1, threads);
  if (scratch_grow(w, need, T, err)) return err ? err->code : LAYA_ERR_NOMEM;
  carve(&f.s, w->buf, m, T, R, 0, max_len, 1, threads);
  if (m->enc.hidden % 4 || m->enc.intermediate % 4) memset(w->buf, 0, need); /* padding columns read zero */
  ensure_rope(m, max_len);
  cpu_pool_lock(m->pool);
  run(&f, (T + ROW_BLOCK - 1) / ROW_BLOCK, embed_task, &f);
  for (int l = 0; l < m->enc.n_layers; l++) encoder_layer(&f, l);
  run(&f, (T + ROW_BLOCK - 1) / ROW_BLOCK, final_norm_task, &f);
  cpu_pool_unlock(m->pool);
  backend_mean_rows(bt, f.s.x, m->enc.hidden, pooled);
  return 0;
}

static void cpu_destroy(backend *b) {
  if (!b) return;
  cpu_model_free(b->impl);
  free(b);
}

const cpu_model *backend_cpu_model(const backend *b) {
  return b && b->kind == BACKEND_CPU ? b->impl : NULL;
}

int backend_cpu_adopt(backend *b, void (*release)(void *ctx), void *ctx) {
  cpu_model *m = b && b->kind == BACKEND_CPU ? b->impl : NULL;
  if (!m || m->release) return -1;
  m->release = release;
  m->release_ctx = ctx;
  return 0;
}

/* fp32 on every CPU: the fast backend's fp32 answers are Laya's CPU answers (the parity suites'
 * 1e-4 rule, tests/parity `-cpu-default`); bf16 and int8 are opt-in (laya_options.precision,
 * LAYA_PRECISION, --precision) because they move answers by up to their measured bounds. */
backend_precision backend_cpu_default_precision(void) { return PREC_FP32; }

const char *backend_precision_name(backend_precision p) {
  switch (p) {
    case PREC_FP32: return "fp32";
    case PREC_BF16: return "bf16";
    case PREC_FP16: return "fp16";
    case PREC_INT8: return "int8";
    case PREC_FP8: return "fp8";
  }
  return "?";
}

const char *backend_cpu_isa(const backend *b) {
  const cpu_model *m = backend_cpu_model(b);
  return m ? m->k->name : NULL;
}

backend *backend_cpu_create(const model_weights *w, const backend_options *o, laya_error *err) {
  /* the environment as laya_open read it, else (tests, bench/, no options) as it is now */
  static const char *const mine[] = {"LAYA_THREADS",         "LAYA_CPU_ISA",       "LAYA_CPU_PROFILE",  "LAYA_CPU_STUDY",
                                      "LAYA_CPU_FP32_LAYERS", "LAYA_CPU_INT8_BF16", "LAYA_CPU_ATTN_F32", "LAYA_CPU_GEMM_TASKS"};
  laya_env_options own;
  const laya_env_options *env =
      laya_env_options_given_or_read(o ? o->env : NULL, &own, mine, sizeof mine / sizeof mine[0], err);
  if (!env) return NULL;
  cpu_model *m = cpu_model_create(w, o, env, err);
  if (m) m->env = NULL; /* read at create only */
  laya_env_options_free(&own);
  if (!m) return NULL;
  backend *b = calloc(1, sizeof *b);
  if (!b) {
    cpu_model_free(m);
    laya_err(err, LAYA_ERR_NOMEM, NULL, "cpu backend: out of memory");
    return NULL;
  }
  b->name = "cpu";
  b->kind = BACKEND_CPU;
  b->impl = m;
  b->worker_create = cpu_worker_create;
  b->worker_destroy = cpu_worker_destroy;
  b->worker_reserve = cpu_worker_reserve;
  b->worker_bytes = cpu_worker_bytes;
  b->forward = cpu_forward;
  b->destroy = cpu_destroy;
  b->embed = cpu_embed;
  return b;
}
