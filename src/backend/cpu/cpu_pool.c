/* cpu_pool.c: see cpu_pool.h. */
#include "backend/cpu/cpu_pool.h"

#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
  atomic_uint gen;       /* bumped for every job */
  atomic_int next, done; /* task counter, finished tasks */
  atomic_int stop;
  atomic_int n_tasks; /* read after each task fetch: a straggler from the last job sees this one */
  cpu_task_fn fn;
  void *ctx;
};

typedef struct worker_arg {
  cpu_pool *p;
  int id;
} worker_arg;

static void drain(cpu_pool *p, int id) {
  for (;;) {
    int t = atomic_fetch_add(&p->next, 1);
    if (t >= atomic_load(&p->n_tasks)) break;
    p->fn(p->ctx, t, id);
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
  atomic_store(&p->next, 1 << 30); /* park stragglers of the last job before anything changes */
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->n_tasks, n);
  atomic_store(&p->done, 0);
  atomic_store(&p->next, 0);
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
