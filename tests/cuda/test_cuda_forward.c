/*
 * test_cuda_forward.c: the CUDA backend against the fp32 CPU reference (cpu-ref) on random models
 * built in memory (tests/cpu/random_model.h), in bf16 and fp16.
 *
 * Checked: per-question probabilities within the bounds (bf16 0.02, fp16 0.005) and the
 * same argmax, act probabilities likewise; the eager run, the graph capture and the graph replay
 * of a bucket give bit-identical results; packed rows of mixed length (1..300 tokens, windows
 * that cross tile boundaries, head dims on the tensor-core path and on the scalar fallback);
 * a row alone equals the row inside a batch (within rounding); two threads with their own
 * workers; the errors for bad batches, bad devices and a simulated out-of-memory; with two or
 * more GPUs, a backend per device bit-identical to device 0 (one thread may alternate devices).
 *
 * Without a CUDA device the test prints "no CUDA device: skipped" and exits 77 (CTest skip).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../cpu/batch_buf.h"
#include "../cpu/random_model.h"
#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"

/* n rows; lengths from lens[] (or random 1..maxlen when lens is NULL); 1..6 markers per row. */
static void make_batch(batch_buf *bb, int n, const int *lens, int maxlen, int vocab, uint64_t seed) {
  uint64_t s = seed;
  int *L = malloc(sizeof(int) * (size_t)n), *K = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) {
    L[i] = lens ? lens[i] : 1 + (int)(rm_next(&s) % (uint64_t)maxlen);
    K[i] = 1 + (int)(rm_next(&s) % 6);
  }
  batch_buf_alloc(bb, n, L, K);
  for (int i = 0; i < n; i++) {
    int32_t *tok = bb->tokens + bb->row_start[i], *mk = bb->markers + bb->marker_start[i];
    bb->qtype[i] = (int)(rm_next(&s) % 3);
    for (int j = 0; j < L[i]; j++) tok[j] = (int32_t)(rm_next(&s) % (uint64_t)vocab);
    for (int j = 0; j < K[i]; j++) mk[j] = (int32_t)(rm_next(&s) % (uint64_t)L[i]);
  }
  batch_buf_done(bb);
  free(L);
  free(K);
}

typedef struct result {
  int rc;
  laya_error err;
  float *logits, *act;
} result;

static result run(backend *be, backend_worker *w, const packed_batch *b, int n_act) {
  result r;
  memset(&r, 0, sizeof r);
  int nm = b->marker_start[b->n_rows];
  r.logits = calloc((size_t)nm + 1, sizeof(float));
  r.act = calloc((size_t)b->n_rows * (size_t)n_act + 1, sizeof(float));
  r.rc = be->forward(be, w, b, r.logits, r.act, &r.err);
  if (r.rc) fprintf(stderr, "forward failed: %s\n", r.err.message);
  return r;
}

static void free_result(result *r) {
  free(r->logits);
  free(r->act);
}

/* max |dp| over every question's option probabilities and act probabilities; argmax agreement. */
typedef struct cmp_stats {
  double max_dp, max_dact, max_dlogit;
  int questions, argmax_same;
} cmp_stats;

static void softmax(const float *x, int n, double *p) {
  double mx = -INFINITY, s = 0;
  for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (int i = 0; i < n; i++) s += (p[i] = exp(x[i] - mx));
  for (int i = 0; i < n; i++) p[i] /= s;
}

static void compare(const packed_batch *b, int n_act, const result *ref, const result *got, cmp_stats *st) {
  double p[64], q[64];
  for (int r = 0; r < b->n_rows; r++) {
    int m0 = b->marker_start[r], k = b->marker_start[r + 1] - m0;
    softmax(ref->logits + m0, k, p);
    softmax(got->logits + m0, k, q);
    int a = 0, c = 0;
    for (int i = 0; i < k; i++) {
      double dp = fabs(p[i] - q[i]), dl = fabs((double)ref->logits[m0 + i] - got->logits[m0 + i]);
      if (dp > st->max_dp || isnan(dp)) st->max_dp = isnan(dp) ? INFINITY : dp;
      if (dl > st->max_dlogit || isnan(dl)) st->max_dlogit = isnan(dl) ? INFINITY : dl;
      if (p[i] > p[a]) a = i;
      if (q[i] > q[c]) c = i;
    }
    st->questions++;
    st->argmax_same += a == c;
    softmax(ref->act + r * n_act, n_act, p);
    softmax(got->act + r * n_act, n_act, q);
    for (int i = 0; i < n_act; i++) {
      double d = fabs(p[i] - q[i]);
      if (d > st->max_dact || isnan(d)) st->max_dact = isnan(d) ? INFINITY : d;
    }
  }
}

static int same_bits(const result *a, const result *b, const packed_batch *pb, int n_act) {
  int nm = pb->marker_start[pb->n_rows];
  return memcmp(a->logits, b->logits, sizeof(float) * (size_t)nm) == 0 &&
         memcmp(a->act, b->act, sizeof(float) * (size_t)pb->n_rows * (size_t)n_act) == 0;
}

typedef struct thread_arg {
  backend *be;
  const packed_batch *b;
  int n_act, reps;
  result out;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *a = p;
  laya_error err;
  backend_worker *w = a->be->worker_create(a->be, &err);
  if (!w) {
    a->out.rc = -1;
    return NULL;
  }
  for (int i = 0; i < a->reps; i++) {
    if (i) free_result(&a->out);
    a->out = run(a->be, w, a->b, a->n_act);
  }
  a->be->worker_destroy(a->be, w);
  return NULL;
}

typedef struct model_case {
  const char *name;
  int d, H, I, layers, window, vocab, head_layers, maxlen;
} model_case;

/* name, d, H, I, layers, local_window, vocab, head_layers, maxlen */
static const model_case cases[] = {
    {"hd32-w16", 128, 4, 192, 4, 16, 512, 2, 300},   /* encoder hd 32, head hd 64: tensor-core path */
    {"hd64-w128", 128, 2, 256, 4, 128, 512, 2, 300}, /* Laya's real window (|i-j| <= 64) */
    {"hd16-fb", 48, 3, 64, 3, 16, 300, 1, 150},       /* hd 16 and head hd 48: scalar fallback */
    {"nohead", 64, 1, 96, 2, 32, 300, 0, 120},        /* hd 64, no head layers */
};

static encoder_config case_config(const model_case *mc) {
  encoder_config c = random_small_config();
  c.hidden = mc->d;
  c.n_heads = mc->H;
  c.head_dim = mc->d / mc->H;
  c.intermediate = mc->I;
  c.n_layers = mc->layers;
  c.local_window = mc->window;
  c.vocab = mc->vocab;
  return c;
}

static cmp_stats totals[3]; /* by precision */

static void test_model(const model_case *mc, uint64_t seed) {
  encoder_config c = case_config(mc);
  const int n_act = 2;
  random_model rm;
  CHECK(random_model_init(&rm, &c, mc->head_layers, n_act, DT_F16, seed) == 0);
  laya_error err;
  backend_options o = {PREC_FP32, 1, 0, NULL};
  backend *ref = backend_cpu_ref_create(&rm.w, &o, &err);
  CHECK(ref != NULL);
  if (!ref) {
    fprintf(stderr, "cpu-ref: %s\n", err.message);
    random_model_free(&rm);
    return;
  }
  backend_worker *rw = ref->worker_create(ref, &err);

  /* a mixed batch, plus edge lengths around the 64-query tiles */
  batch_buf mixed, edges, single;
  make_batch(&mixed, 48, NULL, mc->maxlen, c.vocab, seed * 7 + 1);
  int elens[] = {1, 63, 64, 65, 128, 129, 2, 200};
  make_batch(&edges, 8, elens, 0, c.vocab, seed * 7 + 2);
  result rmix = run(ref, rw, &mixed.b, n_act), redg = run(ref, rw, &edges.b, n_act);
  CHECK(rmix.rc == 0 && redg.rc == 0);

  for (int prec = PREC_BF16; prec <= PREC_FP16; prec++) {
    const char *pn = prec == PREC_BF16 ? "bf16" : "fp16";
    const double bound = prec == PREC_BF16 ? 0.02 : 0.005;
    backend_options co = {(backend_precision)prec, 0, 0, NULL};
    backend *be = backend_cuda_create(&rm.w, &co, &err);
    CHECK(be != NULL);
    if (!be) {
      fprintf(stderr, "cuda create: %s\n", err.message);
      continue;
    }
    CHECK(strcmp(be->name, "cuda") == 0);
    backend_worker *w = be->worker_create(be, &err);
    CHECK(w != NULL);
    if (!w) {
      be->destroy(be);
      continue;
    }
    /* eager, capture, replay of the same bucket */
    result g0 = run(be, w, &mixed.b, n_act), g1 = run(be, w, &mixed.b, n_act), g2 = run(be, w, &mixed.b, n_act);
    CHECK(g0.rc == 0 && g1.rc == 0 && g2.rc == 0);
    CHECK(same_bits(&g0, &g1, &mixed.b, n_act));
    CHECK(same_bits(&g0, &g2, &mixed.b, n_act));
    cmp_stats st;
    memset(&st, 0, sizeof st);
    compare(&mixed.b, n_act, &rmix, &g2, &st);
    result e0 = run(be, w, &edges.b, n_act);
    CHECK(e0.rc == 0);
    compare(&edges.b, n_act, &redg, &e0, &st);
    printf("%-10s %s: questions %d, argmax same %d, max |dp| %.5f, max |d act p| %.5f, max |d logit| %.4f\n",
           mc->name, pn, st.questions, st.argmax_same, st.max_dp, st.max_dact, st.max_dlogit);
    CHECK(st.max_dp <= bound);
    CHECK(st.max_dact <= bound);
    cmp_stats *tt = &totals[prec - PREC_BF16];
    tt->questions += st.questions;
    tt->argmax_same += st.argmax_same;
    if (st.max_dp > tt->max_dp) tt->max_dp = st.max_dp;
    if (st.max_dact > tt->max_dact) tt->max_dact = st.max_dact;

    /* a row alone equals the row in the batch, within rounding */
    int32_t rs1[2], ms1[2];
    single.b = pb_view_rows(&mixed.b, 3, 4, rs1, ms1);
    result one = run(be, w, &single.b, n_act);
    CHECK(one.rc == 0);
    double worst = 0;
    for (int i = 0; i < ms1[1]; i++) {
      double dl = fabs((double)one.logits[i] - g2.logits[mixed.b.marker_start[3] + i]);
      worst = dl > worst ? dl : worst;
    }
    CHECK(worst <= (prec == PREC_BF16 ? 0.1 : 0.02));

    /* two threads, each with its own worker, agree bit for bit with this worker */
    thread_arg ta[2] = {{be, &mixed.b, n_act, 3, {0}}, {be, &mixed.b, n_act, 3, {0}}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_main, &ta[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
      CHECK(ta[i].out.rc == 0);
      if (ta[i].out.rc == 0) CHECK(same_bits(&ta[i].out, &g0, &mixed.b, n_act));
      if (ta[i].out.logits) free_result(&ta[i].out);
    }

    /* programmatic dependent launch (on by default on Hopper, src/backend/cuda/pdl.cuh) only
     * changes when kernels are scheduled: with it off (LAYA_CUDA_PDL=0, read at create, process
     * wide) every pass, eager and from a graph, gives the same bits */
    setenv("LAYA_CUDA_PDL", "0", 1);
    backend *be0 = backend_cuda_create(&rm.w, &co, &err);
    unsetenv("LAYA_CUDA_PDL");
    CHECK(be0 != NULL);
    backend_worker *w0 = be0 ? be0->worker_create(be0, &err) : NULL;
    CHECK(w0 != NULL);
    if (w0) {
      for (int i = 0; i < 3; i++) {
        result p = run(be0, w0, &mixed.b, n_act);
        CHECK(p.rc == 0);
        if (p.rc == 0) CHECK(same_bits(&p, &g0, &mixed.b, n_act));
        free_result(&p);
      }
      result pe = run(be0, w0, &edges.b, n_act);
      CHECK(pe.rc == 0);
      if (pe.rc == 0) CHECK(same_bits(&pe, &e0, &edges.b, n_act));
      free_result(&pe);
      be0->worker_destroy(be0, w0);
    }
    if (be0) be0->destroy(be0);

    free_result(&g0);
    free_result(&g1);
    free_result(&g2);
    free_result(&e0);
    free_result(&one);
    be->worker_destroy(be, w);
    be->destroy(be);
  }
  free_result(&rmix);
  free_result(&redg);
  batch_buf_free(&mixed);
  batch_buf_free(&edges);
  ref->worker_destroy(ref, rw);
  ref->destroy(ref);
  random_model_free(&rm);
}

static void test_errors(void) {
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 1, 2, DT_F32, 99) == 0);
  laya_error err;
  memset(&err, 0, sizeof err);
  backend_options o = {PREC_BF16, 0, 999, NULL};
  CHECK(backend_cuda_create(&rm.w, &o, &err) == NULL);
  CHECK(err.code == LAYA_ERR_VALUE && strstr(err.message, "device 999") != NULL);
  CHECK(!backend_error_is_device_oom(&err));
  o.device_id = 0;
  o.precision = PREC_INT8;
  CHECK(backend_cuda_create(&rm.w, &o, &err) == NULL);
  CHECK(err.code == LAYA_ERR_UNSUPPORTED);
  /* a missing tensor is named */
  const tensor *keep = rm.w.layers[1].wo;
  rm.w.layers[1].wo = NULL;
  o.precision = PREC_BF16;
  CHECK(backend_cuda_create(&rm.w, &o, &err) == NULL);
  CHECK(err.code == LAYA_ERR_CONFIG && strstr(err.message, "encoder.layers.1.attn.Wo.weight") != NULL);
  rm.w.layers[1].wo = keep;

  backend *be = backend_cuda_create(&rm.w, &o, &err);
  CHECK(be != NULL);
  if (!be) {
    random_model_free(&rm);
    return;
  }
  backend_worker *w = be->worker_create(be, &err);
  batch_buf bb;
  make_batch(&bb, 3, NULL, 50, c.vocab, 5);
  float logits[64], act[16];
  bb.tokens[2] = c.vocab + 3;
  CHECK(be->forward(be, w, &bb.b, logits, act, &err) == LAYA_ERR_VALUE);
  CHECK(strstr(err.message, "vocabulary") != NULL);
  bb.tokens[2] = 0;
  int32_t keepm = bb.markers[0];
  bb.markers[0] = 10000;
  CHECK(be->forward(be, w, &bb.b, logits, act, &err) == LAYA_ERR_VALUE);
  CHECK(strstr(err.message, "outside the row") != NULL);
  bb.markers[0] = keepm;
  /* simulated out-of-memory: the engine detects LAYA_ERR_DEVICE_OOM (its own code). The cap is
   * read once, when a backend is created (LAYA_CUDA_MAX_SCRATCH, core/options.h): a second backend
   * created with it set fails its first forward; the hook lifts the cap and its worker recovers. */
  {
    setenv("LAYA_CUDA_MAX_SCRATCH", "4096", 1);
    backend *capped = backend_cuda_create(&rm.w, &o, &err);
    unsetenv("LAYA_CUDA_MAX_SCRATCH");
    CHECK(capped != NULL);
    backend_worker *cwk = capped ? capped->worker_create(capped, &err) : NULL;
    CHECK(cwk != NULL);
    if (cwk) {
      CHECK(capped->forward(capped, cwk, &bb.b, logits, act, &err) == LAYA_ERR_DEVICE_OOM);
      CHECK(strstr(err.message, "out of memory") != NULL);
      CHECK(backend_error_is_device_oom(&err));
      CHECK(backend_cuda_set_max_scratch(capped, -1) == 0);
      CHECK(capped->forward(capped, cwk, &bb.b, logits, act, &err) == 0); /* and the worker recovers */
      capped->worker_destroy(capped, cwk);
    }
    if (capped) capped->destroy(capped);
    /* a value the table does not take is refused at create, naming the variable */
    setenv("LAYA_CUDA_MAX_SCRATCH", "lots", 1);
    CHECK(backend_cuda_create(&rm.w, &o, &err) == NULL && err.code == LAYA_ERR_VALUE);
    CHECK(strstr(err.message, "LAYA_CUDA_MAX_SCRATCH") != NULL);
    unsetenv("LAYA_CUDA_MAX_SCRATCH");
  }
  CHECK(be->forward(be, w, &bb.b, logits, act, &err) == 0);
  batch_buf_free(&bb);
  be->worker_destroy(be, w);
  be->destroy(be);
  random_model_free(&rm);
}

/* One engine per device, no global device state: with two or more GPUs, a backend on each device
 * (threads of their own, and one thread alternating between devices call by call) answers bit for
 * bit like device 0 (same GPU model: same kernels and cuBLASLt choices). */
typedef struct device_arg {
  backend *be[2];
  const packed_batch *b;
  int n_act;
  result out[2];
} device_arg;

static void *alternate_main(void *p) {
  device_arg *a = p;
  laya_error err;
  backend_worker *w[2] = {a->be[0]->worker_create(a->be[0], &err), a->be[1]->worker_create(a->be[1], &err)};
  for (int rep = 0; rep < 3 && w[0] && w[1]; rep++)
    for (int d = 1; d >= 0; d--) { /* device 1 first: the thread's current device changes every call */
      if (rep) free_result(&a->out[d]);
      a->out[d] = run(a->be[d], w[d], a->b, a->n_act);
    }
  for (int d = 0; d < 2; d++) {
    if (!w[d]) a->out[d].rc = -1;
    else a->be[d]->worker_destroy(a->be[d], w[d]);
  }
  return NULL;
}

static void test_devices(int n_dev) {
  if (n_dev < 2) {
    printf("devices: 1 CUDA device, the multi-device check needs 2 (not run)\n");
    return;
  }
  const int n = n_dev < 4 ? n_dev : 4;
  const model_case *mc = &cases[1]; /* hd64-w128 */
  encoder_config c = case_config(mc);
  const int n_act = 2;
  random_model rm;
  CHECK(random_model_init(&rm, &c, mc->head_layers, n_act, DT_F16, 77) == 0);
  batch_buf bb;
  make_batch(&bb, 24, NULL, mc->maxlen, c.vocab, 78);
  laya_error err;
  backend *be[4] = {0};
  for (int d = 0; d < n; d++) {
    backend_options o = {PREC_BF16, 0, d, NULL};
    be[d] = backend_cuda_create(&rm.w, &o, &err);
    CHECK(be[d] != NULL);
    if (!be[d]) fprintf(stderr, "cuda:%d create: %s\n", d, err.message);
  }
  if (be[0] && be[1]) {
    thread_arg ta[4];
    pthread_t th[4];
    for (int d = 0; d < n; d++) {
      ta[d] = (thread_arg){be[d], &bb.b, n_act, 3, {0}};
      if (be[d]) pthread_create(&th[d], NULL, thread_main, &ta[d]);
    }
    device_arg da = {{be[0], be[1]}, &bb.b, n_act, {{0}, {0}}};
    pthread_t alt;
    pthread_create(&alt, NULL, alternate_main, &da);
    pthread_join(alt, NULL);
    for (int d = 0; d < n; d++)
      if (be[d]) pthread_join(th[d], NULL);
    CHECK(ta[0].out.rc == 0);
    for (int d = 1; d < n && ta[0].out.rc == 0; d++) {
      CHECK(ta[d].out.rc == 0);
      if (ta[d].out.rc == 0) CHECK(same_bits(&ta[d].out, &ta[0].out, &bb.b, n_act));
    }
    for (int d = 0; d < 2 && ta[0].out.rc == 0; d++) {
      CHECK(da.out[d].rc == 0);
      if (da.out[d].rc == 0) CHECK(same_bits(&da.out[d], &ta[0].out, &bb.b, n_act));
    }
    printf("devices: %d CUDA devices, a backend on each (own threads, and one thread alternating cuda:1 / "
           "cuda:0) bit-identical to cuda:0\n", n);
    for (int d = 0; d < n; d++) free_result(&ta[d].out);
    for (int d = 0; d < 2; d++) free_result(&da.out[d]);
  }
  for (int d = 0; d < n; d++)
    if (be[d]) be[d]->destroy(be[d]);
  batch_buf_free(&bb);
  random_model_free(&rm);
}

int main(void) {
  int n = 0;
  if (!backend_cuda_available(&n)) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_model(&cases[i], 1000 + i);
  test_errors();
  test_devices(n);
  for (int p = 0; p < 2; p++)
    printf("total %s: questions %d, argmax same %d (%.2f%%), max |dp| %.5f, max |d act p| %.5f\n",
           p ? "fp16" : "bf16", totals[p].questions, totals[p].argmax_same,
           100.0 * totals[p].argmax_same / (totals[p].questions ? totals[p].questions : 1), totals[p].max_dp,
           totals[p].max_dact);
  for (int p = 0; p < 2; p++) CHECK(totals[p].argmax_same * 100 >= totals[p].questions * 99);
  return check_summary("cuda/forward");
}
