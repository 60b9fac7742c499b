/*
 * threadpool.h: a persistent pool of worker threads running parallel loops with static chunking.
 *
 * Design (the simple one, on purpose):
 * - A pool of N threads is the caller plus N - 1 workers. parallel_for(n) splits [0, n) into
 *   min(n, N) contiguous chunks of near-equal size; chunk c goes to thread c (the caller runs
 *   chunk 0). The split depends only on n and N, so a kernel that partitions its output by
 *   chunk gives the same bits on every run.
 * - Parallel regions on one pool are serialised by a mutex: a pool is meant to be shared by
 *   every thread using one loaded model, each region already uses every core, and serialising
 *   keeps the machine from being oversubscribed when many callers arrive at once. Callers from
 *   many threads are safe; they take turns region by region (not call by call), so concurrent
 *   forwards interleave fairly.
 * - A region started from inside a region of the same pool (nesting) runs inline on the calling
 *   thread as one chunk with that thread's index, instead of deadlocking.
 * - Workers spin briefly after a region (the next one usually follows within microseconds in a
 *   forward pass), then sleep on a condition variable, so an idle pool costs no CPU.
 */
#ifndef LAYA_CORE_THREADPOOL_H
#define LAYA_CORE_THREADPOOL_H

#include "core/error.h"

typedef struct threadpool threadpool;

/* Called once per chunk with [begin, end) and the index (0 .. size-1) of the thread running it;
 * use the index for per-thread scratch. */
typedef void (*parallel_fn)(void *ctx, int begin, int end, int thread);

/* LAYA_THREADS when set to a positive integer, else the physical core count. */
int threadpool_default_threads(void);

/* n_threads <= 0: threadpool_default_threads(). NULL and err set on failure. */
threadpool *threadpool_create(int n_threads, laya_error *err);
void threadpool_destroy(threadpool *p);
int threadpool_size(const threadpool *p);

/* Run fn over [0, n) and return when every chunk is done. p == NULL or a pool of one thread
 * runs fn(ctx, 0, n, 0) inline. n <= 0 does nothing. */
void parallel_for(threadpool *p, int n, parallel_fn fn, void *ctx);

/* The bounds of chunk c of [0, n) split into k chunks (the split parallel_for uses). */
static inline int parallel_chunk_begin(int n, int k, int c) { return (int)((long long)n * c / k); }

#endif
