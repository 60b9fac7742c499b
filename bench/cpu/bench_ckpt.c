/*
 * bench_ckpt.c: laya.c's side of bench/cpu/run.py: the forward pass of a checkpoint directory or a
 * `laya convert` artifact on the benchmark shapes, with the same token ids as bench_py.py.
 *
 *   bench_ckpt PATH [--precision fp32|bf16|int8] [--backend cpu|cpu-ref] [--shapes 1x128,32xmixed]
 *              [--reps N] [--threads N] [--escalate]
 *
 * --escalate: bf16 / int8 with precision escalation (model/escalate.h; an fp32 backend re-runs the
 * rows that could move); each shape's line then has "rerun": the fraction of rows re-run.
 *
 * Prints JSON lines {"engine", "shape", "rows", "tokens", "real_tokens", "best_ms", "median_ms"},
 * then {"peak_rss_mb", "load_ms"}. "steal_pct" / "others_pct": shares of all the machine's CPU time,
 * over a shape's calls, that the hypervisor stole / that other processes used (machine_now). "cpu_ms": the least process CPU time of a timed call (all
 * threads), steadier than wall clock on a shared machine. Rows are packed back to back (no padding), so "tokens" is the
 * real token count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "model/artifact.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "model/escalate.h"

/* The machine's CPU time from /proc/stat's "cpu" line, in clock ticks: all of it, the busy part, and
 * what the hypervisor stole (0 each where it cannot be read). Around a shape's timed calls, the busy
 * time beyond this process's own and the stolen time say how loaded the machine was: a shared
 * host moved the same binary by 15-30% between runs (BENCHMARKS.md, "AMX, session 17"). */
typedef struct machine_ticks {
  double total, busy, steal;
} machine_ticks;

static machine_ticks machine_now(void) {
  machine_ticks m = {0, 0, 0};
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return m;
  unsigned long long v[8] = {0};
  if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
             &v[7]) == 8) {
    for (int i = 0; i < 8; i++) m.total += (double)v[i];
    m.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6]);
    m.steal = (double)v[7];
  }
  fclose(f);
  return m;
}

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_ckpt PATH [--precision P] [--backend cpu|cpu-ref] [--shapes S] [--reps N] [--threads N]\n");
    return 2;
  }
  const char *path = argv[1], *prec = NULL, *shapes = "1x128,1x512,8x256,32xmixed", *bk = "cpu";
  int reps = 3, threads = 0, esc = 0;
  for (int i = 2; i < argc; i++) /* the one flag without a value */
    if (!strcmp(argv[i], "--escalate")) esc = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--escalate")) i--;
    else if (!strcmp(argv[i], "--precision")) prec = argv[i + 1];
    else if (!strcmp(argv[i], "--backend")) bk = argv[i + 1];
    else if (!strcmp(argv[i], "--shapes")) shapes = argv[i + 1];
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
  }
  double t0 = now_ms();
  laya_error err;
  checkpoint ck;
  strbuf warn;
  sb_init(&warn);
  if (checkpoint_open(&ck, path, NULL, &warn, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 2;
  }
  backend_options o = {backend_cpu_default_precision(), threads, 0, NULL};
  if (prec) o.precision = !strcmp(prec, "fp32") ? PREC_FP32 : !strcmp(prec, "int8") ? PREC_INT8 : PREC_BF16;
  if (ck.w.packed && !prec) o.precision = artifact_precision(ck.w.packed);
  backend *be = !strcmp(bk, "cpu-ref") ? backend_cpu_ref_create(&ck.w, &o, &err) : backend_cpu_create(&ck.w, &o, &err);
  const char *low_isa = NULL; /* the kernel table of the low-precision backend, when wrapped */
  if (be && esc) {
    low_isa = backend_cpu_isa(be);
    /* t_min as laya_open sets it for this checkpoint opened without language overrides */
    be = backend_escalate_open(be, &ck.w, &o, escalate_model_t_min(&ck.cfg.temps, NULL), &err);
  }
  if (!be) {
    fprintf(stderr, "%s\n", err.message);
    return 2;
  }
  double load_ms = now_ms() - t0;
  char engine[64];
  snprintf(engine, sizeof engine, "laya.c %s%s", !strcmp(bk, "cpu-ref") ? "cpu-ref fp32" : backend_precision_name(o.precision),
           backend_is_escalate(be) ? "+escalate" : "");
  const char *isa = !strcmp(bk, "cpu-ref") ? "ref" : low_isa ? low_isa : backend_cpu_isa(be); /* the kernel table it runs */
  backend_worker *w = be->worker_create(be, &err);
  int vocab = ck.w.enc.vocab;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", shapes);
  char *sv = NULL;
  int warmed = 0;
  for (char *s = strtok_r(buf, ",", &sv); s; s = strtok_r(NULL, ",", &sv)) {
    int rows = atoi(s);
    const char *x = strchr(s, 'x');
    if (rows <= 0 || !x) continue;
    int mixed = !strcmp(x + 1, "mixed"), len = atoi(x + 1);
    int *lens = malloc(sizeof(int) * rows), T = 0;
    for (int r = 0; r < rows; r++) {
      lens[r] = mixed ? 100 + (rows > 1 ? r * 412 / (rows - 1) : 0) : len;
      T += lens[r];
    }
    packed_batch_buf bb = {0}, wbb = {0};
    if (pb_reserve(&bb, rows, T, 4L * rows, &err) || pb_reserve(&wbb, 1, 128, 4, &err)) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    for (int r = 0; r < rows; r++) {
      pb_row row = pb_add_row(&bb, 0, lens[r], 4);
      for (int t = 0; t < lens[r]; t++) row.tokens[t] = (int32_t)(((long long)r * 1000003 + (long long)t * 7919 + 17) % vocab);
      for (int k = 0; k < 4; k++) row.markers[k] = 2 + 3 * k;
    }
    const packed_batch b = *pb_finish(&bb);
    float *logits = malloc(sizeof(float) * 4 * rows), *act = malloc(sizeof(float) * ck.w.n_act * rows);
    double *times = malloc(sizeof(double) * (reps + 1));
    int n = 0;
    long seen0 = 0, rerun0 = 0, seen1 = 0, rerun1 = 0;
    backend_escalate_stats(be, &seen0, &rerun0);
    if (!warmed) { /* one 1 x 128 forward before timing anything (weights paged in), as bench_py.py */
      pb_row row = pb_add_row(&wbb, 0, lens[0] < 128 ? lens[0] : 128, 4); /* row 0, cut to 128 tokens */
      memcpy(row.tokens, b.tokens, sizeof(int32_t) * (size_t)(lens[0] < 128 ? lens[0] : 128));
      memcpy(row.markers, b.markers, sizeof(int32_t) * 4);
      if (be->forward(be, w, pb_finish(&wbb), logits, act, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
      }
      warmed = 1;
    }
    double cpu_best = 1e30, cpu_all = 0;
    machine_ticks m0 = machine_now();
    for (int k = 0; k <= reps && n < reps; k++) {
      double a = now_ms(), ca = cpu_ms();
      if (be->forward(be, w, &b, logits, act, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
      }
      double e = now_ms() - a, ce = cpu_ms() - ca;
      cpu_all += ce;
      if ((k > 0 || e > 3000) && ce < cpu_best) cpu_best = ce;
      if (k > 0 || e > 3000) times[n++] = e; /* the first call warms the scratch unless it is slow anyway */
      if (k == 0 && e > 3000) break;         /* a slow shape: one sample (as bench_py.py) */
    }
    machine_ticks m1 = machine_now();
    qsort(times, (size_t)n, sizeof(double), cmp_d);
    backend_escalate_stats(be, &seen1, &rerun1);
    char rerun[48] = "", load[96] = "";
    if (seen1 > seen0) snprintf(rerun, sizeof rerun, ", \"rerun\": %.3f", (double)(rerun1 - rerun0) / (double)(seen1 - seen0));
    if (m1.total > m0.total) { /* shares of all CPUs' time over the timed calls */
      double all = m1.total - m0.total, ours = cpu_all * 1e-3 * (double)sysconf(_SC_CLK_TCK); /* ms -> ticks */
      double others = (m1.busy - m0.busy - ours) / all;
      snprintf(load, sizeof load, ", \"steal_pct\": %.1f, \"others_pct\": %.1f", 100.0 * (m1.steal - m0.steal) / all,
               100.0 * (others > 0 ? others : 0));
    }
    printf("{\"engine\": \"%s\", \"shape\": \"%s\", \"rows\": %d, \"tokens\": %d, \"real_tokens\": %d, "
           "\"best_ms\": %.2f, \"median_ms\": %.2f, \"cpu_ms\": %.2f, \"kernels\": \"%s\"%s%s}\n",
           engine, s, rows, T, T, times[0], times[n / 2], cpu_best, isa, rerun, load);
    fflush(stdout);
    pb_free(&bb), pb_free(&wbb);
    free(lens), free(logits), free(act), free(times);
  }
  be->worker_destroy(be, w);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("{\"engine\": \"%s\", \"peak_rss_mb\": %.1f, \"load_ms\": %.1f}\n", engine, ru.ru_maxrss / 1024.0, load_ms);
  be->destroy(be);
  checkpoint_close(&ck);
  sb_free(&warn);
  return 0;
}
