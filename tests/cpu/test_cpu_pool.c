/* test_cpu_pool: the fast backend's worker pool runs every task of a job exactly once and returns
 * only when all of them have finished, across many back-to-back jobs of different sizes, with
 * more threads than cores so workers are descheduled mid-claim (the case that once let a
 * straggler of one job run a task of the next twice and end that job early); and one job of more
 * than 2^24 tasks, whose count needs the upper bits of the packed claim counter. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend/cpu/cpu_pool.h"

enum { MAX_N = 37 };

typedef struct job {
  atomic_int runs[MAX_N];     /* times each task ran */
  atomic_int finished[MAX_N]; /* set as each task's last act */
  atomic_uint work; /* keeps the busy loop's result alive */
  unsigned seed;
} job;

static void task(void *ctx, int t, int thread) {
  (void)thread;
  job *j = ctx;
  atomic_fetch_add(&j->runs[t], 1);
  /* uneven work, sometimes a yield, so tasks end in any order */
  unsigned x = j->seed * 2654435761u + (unsigned)t * 40503u;
  unsigned sink = 0;
  for (unsigned i = 0; i < (x >> 22); i++) sink += i * x;
  atomic_fetch_add(&j->work, sink);
  if ((x & 15) == 0) sched_yield();
  atomic_store(&j->finished[t], 1);
}

/* a job of n cheap tasks: each counts its own runs */
typedef struct big_job {
  atomic_uchar *runs;
} big_job;

static void big_task(void *ctx, int t, int thread) {
  (void)thread;
  big_job *j = ctx;
  atomic_fetch_add_explicit(&j->runs[t], 1, memory_order_relaxed);
}

/* Above 2^24 tasks (the claim counter's width before it was 32 bits): every task runs exactly
 * once, as one job, and all have run at return. */
static void test_big_job(void) {
  const int n = (1 << 24) + 4099;
  big_job j = {calloc((size_t)n, sizeof(atomic_uchar))};
  cpu_pool *p = cpu_pool_create(2);
  CHECK(p != NULL && j.runs != NULL);
  if (!p || !j.runs) {
    free(j.runs);
    cpu_pool_destroy(p);
    return;
  }
  for (int round = 0; round < 2; round++) { /* twice: the second job follows a big one */
    cpu_pool_run(p, n, big_task, &j);
    long wrong = 0;
    for (int t = 0; t < n; t++) wrong += atomic_load_explicit(&j.runs[t], memory_order_relaxed) != round + 1;
    printf("cpu_pool: job of %d tasks (round %d): %ld tasks not run exactly once\n", n, round, wrong);
    CHECK(wrong == 0);
  }
  cpu_pool_destroy(p);
  free(j.runs);
}

int main(void) {
  const int threads[] = {2, 3, 4};
  long double_runs = 0, missing = 0, early = 0, jobs = 0;
  for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
    cpu_pool *p = cpu_pool_create(threads[ti]);
    CHECK(p != NULL);
    if (!p) continue;
    job *j = malloc(sizeof *j);
    for (int r = 0; r < 20000; r++) {
      int n = 1 + (r * 7919) % MAX_N;
      memset(j, 0, sizeof *j);
      j->seed = (unsigned)r;
      cpu_pool_run(p, n, task, j);
      /* at return every task has run once and finished; then the job's memory is reused at once,
       * as a forward pass reuses its stack and scratch */
      for (int t = 0; t < n; t++) {
        int k = atomic_load(&j->runs[t]);
        double_runs += k > 1, missing += k == 0, early += !atomic_load(&j->finished[t]);
      }
      jobs++;
    }
    free(j);
    cpu_pool_destroy(p);
  }
  printf("cpu_pool: %ld jobs, %ld tasks run twice, %ld never, %ld unfinished at return\n", jobs, double_runs,
         missing, early);
  CHECK(double_runs == 0);
  CHECK(missing == 0);
  CHECK(early == 0);
  test_big_job();
  return check_summary("cpu_pool");
}
