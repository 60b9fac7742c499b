/* threadpool.c: persistent workers, static chunking, serialised regions (see threadpool.h). */
#include "core/threadpool.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_features.h"
#include "core/options.h"

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ volatile("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

/* Spin iterations before sleeping: roughly 50-100 microseconds of pause instructions. */
enum { SPIN_ITERS = 2000 };

struct threadpool {
  int n; /* threads including the caller */
  pthread_t *threads;
  pthread_mutex_t region; /* one parallel region at a time */
  pthread_mutex_t mu;     /* guards sleeping and waking */
  pthread_cond_t wake, done;
  atomic_uint generation; /* bumped to publish a job */
  atomic_int pending;     /* workers that have not finished the current job */
  atomic_bool stop;
  /* the current job (written before generation is bumped) */
  parallel_fn fn;
  void *ctx;
  int n_items, n_chunks;
};

typedef struct worker_arg {
  threadpool *p;
  int index;
} worker_arg;

/* The pool whose region this thread is running, and its index there (nesting detection). */
static _Thread_local threadpool *tls_pool;
static _Thread_local int tls_index;

int threadpool_default_threads(void) {
  /* for callers with no count of their own: LAYA_THREADS now, through the table (a value it
   * refuses reads as unset here; laya_open refuses it with the variable's name) */
  laya_env_options o;
  laya_env_options_init(&o);
  laya_error ignored;
  laya_env_options_read_one(&o, "LAYA_THREADS", &ignored);
  return o.threads > 0 ? (int)o.threads : cpu_features_get()->physical_cores;
}

static void run_chunk(threadpool *p, int c) {
  if (c >= p->n_chunks) return;
  int b = parallel_chunk_begin(p->n_items, p->n_chunks, c);
  int e = parallel_chunk_begin(p->n_items, p->n_chunks, c + 1);
  if (e > b) p->fn(p->ctx, b, e, c);
}

static void *worker_main(void *arg) {
  worker_arg *wa = arg;
  threadpool *p = wa->p;
  int index = wa->index;
  free(wa);
  tls_pool = p;
  tls_index = index;
  unsigned seen = 0;
  for (;;) {
    int spins = 0;
    while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop) && spins < SPIN_ITERS) {
      CPU_RELAX();
      spins++;
    }
    if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
      pthread_mutex_lock(&p->mu);
      while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) break;
    seen = atomic_load(&p->generation);
    run_chunk(p, index);
    if (atomic_fetch_sub(&p->pending, 1) == 1) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

threadpool *threadpool_create(int n_threads, laya_error *err) {
  if (n_threads <= 0) n_threads = threadpool_default_threads();
  threadpool *p = calloc(1, sizeof *p);
  if (!p) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "thread pool: out of memory");
    return NULL;
  }
  p->n = n_threads;
  pthread_mutex_init(&p->region, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->generation, 0u);
  atomic_init(&p->pending, 0);
  atomic_init(&p->stop, false);
  p->threads = calloc((size_t)n_threads, sizeof *p->threads);
  if (!p->threads) {
    threadpool_destroy(p);
    laya_err(err, LAYA_ERR_NOMEM, NULL, "thread pool: out of memory");
    return NULL;
  }
  for (int i = 1; i < n_threads; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    int rc = wa ? 0 : -1;
    if (wa) {
      wa->p = p;
      wa->index = i;
      rc = pthread_create(&p->threads[i], NULL, worker_main, wa);
      if (rc) free(wa);
    }
    if (rc) {
      p->n = i; /* destroy joins the workers started so far */
      threadpool_destroy(p);
      laya_err(err, LAYA_ERR_INTERNAL, NULL, "thread pool: could not start thread %d of %d", i, n_threads);
      return NULL;
    }
  }
  return p;
}

void threadpool_destroy(threadpool *p) {
  if (!p) return;
  if (p->threads) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
  }
  pthread_mutex_destroy(&p->region);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p);
}

int threadpool_size(const threadpool *p) { return p ? p->n : 1; }

void parallel_for(threadpool *p, int n, parallel_fn fn, void *ctx) {
  if (n <= 0) return;
  if (!p || p->n == 1 || n == 1) {
    fn(ctx, 0, n, p && tls_pool == p ? tls_index : 0);
    return;
  }
  if (tls_pool == p) { /* nested region: inline, keep this thread's index */
    fn(ctx, 0, n, tls_index);
    return;
  }
  pthread_mutex_lock(&p->region);
  p->fn = fn;
  p->ctx = ctx;
  p->n_items = n;
  p->n_chunks = n < p->n ? n : p->n;
  atomic_store(&p->pending, p->n - 1);
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->generation, 1u);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);

  threadpool *saved_pool = tls_pool;
  int saved_index = tls_index;
  tls_pool = p;
  tls_index = 0;
  run_chunk(p, 0);
  tls_pool = saved_pool;
  tls_index = saved_index;

  int spins = 0;
  while (atomic_load(&p->pending) != 0 && spins < SPIN_ITERS) {
    CPU_RELAX();
    spins++;
  }
  if (atomic_load(&p->pending) != 0) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->pending) != 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&p->region);
}
