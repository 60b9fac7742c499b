/*
 * test_threadpool.c: the persistent thread pool (static chunking, many callers, nesting) and the
 * CPU feature detection (checked against the kernel's own view in /proc/cpuinfo).
 *
 *   test_threadpool                 all checks
 *   test_threadpool --disabled LIST  only: the features in LIST (as LAYA_CPU_DISABLE) are off
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "core/cpu_features.h"
#include "core/threadpool.h"

enum { MAX_N = 5000 };

typedef struct visit_ctx {
  int n, size;
  atomic_int hits[MAX_N];
  atomic_int chunk_thread[64]; /* begin index of the chunk each thread ran, +1 */
  atomic_int calls;
  atomic_int bad;
} visit_ctx;

static void visit(void *arg, int begin, int end, int thread) {
  visit_ctx *c = arg;
  atomic_fetch_add(&c->calls, 1);
  if (thread < 0 || thread >= c->size || begin >= end || begin < 0 || end > c->n) atomic_fetch_add(&c->bad, 1);
  int k = c->n < c->size ? c->n : c->size;
  /* static chunking: thread t runs exactly chunk t */
  if (begin != parallel_chunk_begin(c->n, k, thread) || end != parallel_chunk_begin(c->n, k, thread + 1))
    atomic_fetch_add(&c->bad, 1);
  for (int i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void check_visits(threadpool *p, int n) {
  static visit_ctx c;
  memset(&c, 0, sizeof c);
  c.n = n;
  c.size = threadpool_size(p);
  parallel_for(p, n, visit, &c);
  int once = 1;
  for (int i = 0; i < n; i++) once &= atomic_load(&c.hits[i]) == 1;
  CHECK(once);
  CHECK(atomic_load(&c.bad) == 0);
  int k = n < c.size ? n : c.size;
  CHECK(atomic_load(&c.calls) == (n > 0 ? k : 0));
}

static void test_chunking(void) {
  int sizes[] = {1, 2, 3, 5};
  int ns[] = {0, 1, 2, 3, 4, 7, 64, 1000, 4999};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    laya_error err = {0};
    threadpool *p = threadpool_create(sizes[s], &err);
    CHECK(p != NULL && threadpool_size(p) == sizes[s]);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) check_visits(p, ns[i]);
    threadpool_destroy(p);
  }
  /* a NULL pool runs inline */
  check_visits(NULL, 10);
}

/* Many callers on one pool: each gets its own complete, correct result. */
typedef struct sum_ctx {
  const int *v;
  long long partial[8];
} sum_ctx;

static void sum_chunk(void *arg, int begin, int end, int thread) {
  sum_ctx *c = arg;
  long long s = 0;
  for (int i = begin; i < end; i++) s += c->v[i];
  c->partial[thread] = s;
}

typedef struct caller_arg {
  threadpool *p;
  int seed;
  int failures;
} caller_arg;

static void *caller_main(void *arg) {
  caller_arg *a = arg;
  static int v[4][3000];
  int *mine = v[a->seed];
  long long want = 0;
  for (int i = 0; i < 3000; i++) mine[i] = (i * 31 + a->seed * 7) % 101, want += mine[i];
  for (int it = 0; it < 300; it++) {
    sum_ctx c;
    memset(&c, 0, sizeof c);
    c.v = mine;
    int n = 1 + (it * 37 + a->seed) % 3000;
    long long w = 0;
    for (int i = 0; i < n; i++) w += mine[i];
    parallel_for(a->p, n, sum_chunk, &c);
    long long got = 0;
    for (int t = 0; t < 8; t++) got += c.partial[t];
    if (got != w) a->failures++;
  }
  (void)want;
  return NULL;
}

static void test_concurrent_callers(void) {
  laya_error err = {0};
  threadpool *p = threadpool_create(3, &err);
  pthread_t th[4];
  caller_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (caller_arg){p, i, 0};
    pthread_create(&th[i], NULL, caller_main, &args[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(args[i].failures == 0);
  }
  threadpool_destroy(p);
}

/* A region started inside a region of the same pool runs inline with the caller's index. */
typedef struct nest_ctx {
  threadpool *p;
  atomic_int inner_items;
  atomic_int bad;
} nest_ctx;

typedef struct inner_ctx {
  nest_ctx *outer;
  int thread;
} inner_ctx;

static void inner(void *arg, int begin, int end, int thread) {
  inner_ctx *ic = arg;
  if (thread != ic->thread) atomic_fetch_add(&ic->outer->bad, 1);
  atomic_fetch_add(&ic->outer->inner_items, end - begin);
}

static void outer(void *arg, int begin, int end, int thread) {
  nest_ctx *c = arg;
  for (int i = begin; i < end; i++) {
    inner_ctx ic = {c, thread};
    parallel_for(c->p, 10, inner, &ic);
  }
}

static void test_nesting(void) {
  laya_error err = {0};
  threadpool *p = threadpool_create(2, &err);
  nest_ctx c;
  c.p = p;
  atomic_init(&c.inner_items, 0);
  atomic_init(&c.bad, 0);
  parallel_for(p, 6, outer, &c);
  CHECK(atomic_load(&c.inner_items) == 60);
  CHECK(atomic_load(&c.bad) == 0);
  threadpool_destroy(p);
}

static void noop(void *arg, int begin, int end, int thread) {
  (void)arg, (void)begin, (void)end, (void)thread;
}

static void test_default_threads_and_overhead(void) {
  const cpu_features *f = cpu_features_get();
  setenv("LAYA_THREADS", "3", 1);
  CHECK(threadpool_default_threads() == 3);
  setenv("LAYA_THREADS", "zero", 1);
  CHECK(threadpool_default_threads() == f->physical_cores);
  setenv("LAYA_THREADS", "-2", 1);
  CHECK(threadpool_default_threads() == f->physical_cores);
  unsetenv("LAYA_THREADS");
  CHECK(threadpool_default_threads() == f->physical_cores);
  laya_error err = {0};
  threadpool *p = threadpool_create(0, &err);
  CHECK(threadpool_size(p) == f->physical_cores);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < 2000; i++) parallel_for(p, 64, noop, NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 2000 / 1e3;
  printf("threadpool: %d threads, %.2f us per empty region\n", threadpool_size(p), us);
  threadpool_destroy(p);
}

/* Whether the kernel lists `flag` in /proc/cpuinfo; -1 when that file is unreadable. */
static int cpuinfo_has(const char *flag) {
  FILE *fp = fopen("/proc/cpuinfo", "r");
  if (!fp) return -1;
  char line[8192];
  int found = 0, seen_flags = 0;
  while (fgets(line, sizeof line, fp) && !seen_flags) {
    if (strncmp(line, "flags", 5) != 0) continue;
    seen_flags = 1;
    char *tok = strtok(strchr(line, ':') + 1, " \n");
    for (; tok && !found; tok = strtok(NULL, " \n")) found = strcmp(tok, flag) == 0;
  }
  fclose(fp);
  return seen_flags ? found : -1;
}

static void test_cpu_features(void) {
  const cpu_features *f = cpu_features_get();
  CHECK(f == cpu_features_get());
  CHECK(f->physical_cores >= 1 && f->physical_cores <= f->logical_cpus);
  /* implications every detector must respect */
  CHECK(!f->avx2 || f->avx);
  CHECK(!f->avx512bw || f->avx512f);
  CHECK(!f->avx512_bf16 || f->avx512f);
  CHECK(!f->avx512_vnni || f->avx512f);
  char desc[512];
  cpu_features_describe(f, desc, sizeof desc);
  printf("cpu: %s\n", desc);
#if defined(__x86_64__)
  struct {
    bool ours;
    const char *flag;
  } pairs[] = {{f->avx2, "avx2"},           {f->fma, "fma"},
               {f->f16c, "f16c"},           {f->avx512f, "avx512f"},
               {f->avx512bw, "avx512bw"},   {f->avx512vl, "avx512vl"},
               {f->avx512dq, "avx512dq"},   {f->avx512_bf16, "avx512_bf16"},
               {f->avx512_vnni, "avx512_vnni"}, {f->avx_vnni, "avx_vnni"},
               {f->amx_tile, "amx_tile"},   {f->amx_bf16, "amx_bf16"}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    int k = cpuinfo_has(pairs[i].flag);
    if (k < 0) break; /* no /proc: nothing independent to compare with */
    if (k != (int)pairs[i].ours) fprintf(stderr, "feature %s: ours %d, /proc/cpuinfo %d\n", pairs[i].flag, pairs[i].ours, k);
    CHECK(k == (int)pairs[i].ours);
  }
#endif
}

/* Run with LAYA_CPU_DISABLE=LIST: those features (and what builds on them) read as absent. */
static int check_disabled(const char *list) {
  const cpu_features *f = cpu_features_get();
  if (strstr(list, "avx512")) CHECK(!f->avx512f && !f->avx512bw && !f->avx512_bf16 && !f->avx512_vnni);
  if (strstr(list, "avx2")) CHECK(!f->avx2 && !f->avx512f && !f->avx_vnni);
  if (strstr(list, "amx")) CHECK(!f->amx_tile && !f->amx_bf16 && !f->amx_int8);
  /* avx512 off leaves avx2 on where the machine has it */
  if (!strstr(list, "avx2") && cpuinfo_has("avx2") == 1) CHECK(f->avx2);
  return check_summary("cpu/cpu_features_disabled");
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--disabled")) {
    const char *env = getenv("LAYA_CPU_DISABLE");
    CHECK(env && !strcmp(env, argv[2]));
    return check_disabled(argv[2]);
  }
  test_chunking();
  test_concurrent_callers();
  test_nesting();
  test_default_threads_and_overhead();
  test_cpu_features();
  return check_summary("cpu/threadpool");
}
