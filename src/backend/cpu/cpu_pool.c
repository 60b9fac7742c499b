/* cpu_pool.c: see cpu_pool.h. */
#include "backend/cpu/cpu_pool.h"

#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define SPIN_ITERS 20000

struct cpu_pool {
  int n;
  pthread_t *threads;
  pthread_mutex_t job_lock; /* one forward at a time */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_uint gen; /* bumped for every job: wakes the workers */
  /* The job's task counter (low 32 bits) and its size (high 32 bits) in ONE word: a claim is
   * fetch_add(ticket, 1), and a claim is valid only against the size stored beside it. A worker
   * descheduled between claiming and checking (a straggler of the last job) thus checks its stale
   * claim against the stale size, never against the next job's size: it cannot run a task of the
   * next job twice, which would count that job done while one of its tasks still runs.
   * The counter never carries into the size: a job has n <= INT_MAX < 2^31 tasks, and a claim past
   * n ends a drain; a thread starts another drain only when `gen` has changed since its last one,
   * and `gen` takes at most two values while one job's ticket is up (bumped right after it is
   * stored), so each thread claims in vain at most three times per job and the counter stays below
   * n + 3 * threads < 2^32. Any int task count therefore runs as one job. */
  _Atomic uint64_t ticket;
  atomic_int done; /* finished tasks of the current job */
  atomic_int stop;
  cpu_task_fn fn; /* written before the ticket is published, read only after a valid claim */
  void *ctx;
};

#define TASK_BITS 32
#define TASK_MASK 0xffffffffu

typedef struct worker_arg {
  cpu_pool *p;
  int id;
} worker_arg;

static void drain(cpu_pool *p, int id) {
  for (;;) {
    uint64_t v = atomic_fetch_add(&p->ticket, 1);
    uint32_t t = (uint32_t)(v & TASK_MASK), n = (uint32_t)(v >> TASK_BITS);
    if (t >= n) break;
    p->fn(p->ctx, (int)t, id);
    atomic_fetch_add(&p->done, 1);
  }
}

static void *worker_main(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  cpu_pool *p = wa.p;
  unsigned seen = atomic_load(&p->gen);
  for (;;) {
    int spins = 0;
    while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) {
      if (++spins < SPIN_ITERS) {
        CPU_RELAX();
        if (spins % 1024 == 0) sched_yield();
        continue;
      }
      pthread_mutex_lock(&p->mu);
      while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) return NULL;
    seen = atomic_load(&p->gen);
    drain(p, wa.id);
  }
}

int cpu_default_threads(void) { return threadpool_default_threads(); }

cpu_pool *cpu_pool_create(int n_threads) {
  if (n_threads < 1) n_threads = 1;
  cpu_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = n_threads;
  pthread_mutex_init(&p->job_lock, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->threads = calloc((size_t)n_threads, sizeof(pthread_t));
  if (!p->threads) {
    free(p);
    return NULL;
  }
  for (int i = 1; i < n_threads; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa || pthread_create(&p->threads[i], NULL, worker_main, (wa->p = p, wa->id = i, wa)) != 0) {
      free(wa);
      p->n = i; /* run with the threads we got */
      break;
    }
  }
  return p;
}

void cpu_pool_destroy(cpu_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->job_lock);
  free(p->threads);
  free(p);
}

int cpu_pool_threads(const cpu_pool *p) { return p->n; }
void cpu_pool_lock(cpu_pool *p) { pthread_mutex_lock(&p->job_lock); }
void cpu_pool_unlock(cpu_pool *p) { pthread_mutex_unlock(&p->job_lock); }

void cpu_pool_run(cpu_pool *p, int n, cpu_task_fn fn, void *ctx) {
  if (n <= 0) return;
  if (p->n == 1 || n == 1) {
    for (int t = 0; t < n; t++) fn(ctx, t, 0);
    return;
  }
  /* no valid claim of the last job is outstanding (its done count reached its size), so nobody
   * reads fn / ctx until the new ticket below is published */
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->done, 0);
  atomic_store(&p->ticket, (uint64_t)n << TASK_BITS);
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->gen, 1);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  drain(p, 0);
  /* the last tasks run on other threads: spin a little, then yield (on a busy machine the thread
   * holding a task may be descheduled, and spinning would only take its core) */
  for (int spins = 0; atomic_load(&p->done) < n; spins++) {
    if (spins < 2000) CPU_RELAX();
    else sched_yield();
  }
}
