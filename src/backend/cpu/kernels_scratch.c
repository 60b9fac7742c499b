/* kernels_scratch.c: the per-thread buffer the AVX-512 fp32 GEMM copies activation tiles into
 * (cpu_thread_scratch, kernels.h). */
#include <pthread.h>
#include <stdlib.h>

#include "backend/cpu/kernels.h"

typedef struct thread_buf {
  size_t cap; /* floats */
  float *p;
} thread_buf;

static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;
static int buf_key_ok;

static void buf_free(void *v) {
  thread_buf *b = v;
  if (b) free(b->p);
  free(b);
}
static void buf_key_make(void) { buf_key_ok = pthread_key_create(&buf_key, buf_free) == 0; }

static _Thread_local int scratch_fail; /* tests: the kernels' paths for when memory is short */
void cpu_scratch_fail_for_tests(int on) { scratch_fail = on; }

float *cpu_thread_scratch(size_t floats) {
  pthread_once(&buf_once, buf_key_make);
  if (!buf_key_ok || scratch_fail) return NULL;
  thread_buf *b = pthread_getspecific(buf_key);
  if (!b) {
    b = calloc(1, sizeof *b);
    if (!b) return NULL;
    if (pthread_setspecific(buf_key, b) != 0) {
      free(b);
      return NULL;
    }
  }
  if (b->cap < floats) {
    size_t cap = (floats + 15) & ~(size_t)15;
    float *p = aligned_alloc(64, cap * sizeof(float));
    if (!p) return NULL;
    free(b->p);
    b->p = p;
    b->cap = cap;
  }
  return b->p;
}
