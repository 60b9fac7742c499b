/*
 * cuda_backend.h: CUDA-only extras beyond backend.h (for tests and benchmarks built with CUDA).
 */
#ifndef LAYA_CUDA_BACKEND_H
#define LAYA_CUDA_BACKEND_H

#include <stddef.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device bytes held by the backend's weights and by one worker's scratch (activations, cuBLASLt
 * workspace). Returns -1 when b is not a CUDA backend. */
int backend_cuda_memory(const backend *b, backend_worker *w, size_t *weights, size_t *scratch);

#ifdef __cplusplus
}
#endif

#endif
