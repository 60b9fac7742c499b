/*
 * cpu_pool.h: the fast CPU backend's worker threads. parallel_for hands tasks 0..n-1 out to the
 * pool's threads and the calling thread (dynamic, by an atomic counter) and returns when all are
 * done. Workers spin briefly between jobs (a forward pass issues hundreds of short jobs) and
 * then sleep, and yield while waiting so a busy machine is not made busier. One job at a time:
 * callers serialise on the pool (cpu_pool_lock) for a whole forward, since the cores are shared
 * anyway. Unlike core/threadpool (static chunks), tasks are handed out dynamically: attention
 * tasks differ in cost by row length, and on a shared machine a descheduled thread's tasks are
 * picked up by the others.
 */
#ifndef LAYA_CPU_POOL_H
#define LAYA_CPU_POOL_H

typedef void (*cpu_task_fn)(void *ctx, int task, int thread);
typedef struct cpu_pool cpu_pool;

/* n_threads total including the caller (>= 1). NULL when out of memory / threads. */
cpu_pool *cpu_pool_create(int n_threads);
void cpu_pool_destroy(cpu_pool *p);
int cpu_pool_threads(const cpu_pool *p);
void cpu_pool_lock(cpu_pool *p);
void cpu_pool_unlock(cpu_pool *p);
/* Run fn(ctx, task, thread) for task in [0, n); thread in [0, cpu_pool_threads). */
void cpu_pool_run(cpu_pool *p, int n, cpu_task_fn fn, void *ctx);
/* LAYA_THREADS if set (>= 1), else the physical cores (core/threadpool). */
int cpu_default_threads(void);

#endif
