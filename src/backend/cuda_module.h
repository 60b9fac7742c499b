/*
 * cuda_module.h: the boundary between the engine and the CUDA backend module (liblaya_cuda.so).
 *
 * The CUDA backend (src/backend/cuda/) is built as a shared module of its own, which the engine
 * loads with dlopen() the first time a CUDA device is asked for (backend/cuda_loader.c), so that a
 * CUDA-enabled build maps neither the module nor libcudart / libcublasLt while it runs on the CPU,
 * and starts on machines that have no CUDA libraries at all. The module exports one C symbol,
 * LAYA_CUDA_MODULE_ENTRY; the loader calls it once with the engine's services the backend uses
 * (laya_cuda_host) and gets the backend's entry points back (laya_cuda_module): backend.h's
 * backend_cuda_* and cuda/cuda_backend.h's test and benchmark extras. Everything else crosses as
 * the structs of backend.h (a backend's vtable, model_weights, packed_batch, laya_error, ...), so
 * the module and the engine must come from one build: the entry point refuses any other (the ABI
 * number, the version and the sizes of those structs must match).
 */
#ifndef LAYA_BACKEND_CUDA_MODULE_H
#define LAYA_BACKEND_CUDA_MODULE_H

#include <stddef.h>

#include "backend/backend.h"
#include "core/options.h"
#include "laya.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when a table below, or what a pointer in it means, changes. */
#define LAYA_CUDA_MODULE_ABI 1
#define LAYA_CUDA_MODULE_ENTRY "laya_cuda_module_entry"

/* The sizes of the structs that cross the boundary, as each side was compiled. */
typedef struct laya_cuda_layout {
  size_t backend, backend_options, model_weights, encoder_config, packed_batch, laya_error, laya_env_options;
} laya_cuda_layout;

#define LAYA_CUDA_LAYOUT_INIT                                                                                   \
  {                                                                                                             \
    sizeof(backend), sizeof(backend_options), sizeof(model_weights), sizeof(encoder_config),                    \
        sizeof(packed_batch), sizeof(laya_error), sizeof(laya_env_options)                                      \
  }

/* What the engine lends the module: the functions of backend/, model/spec.h and core/options.h that
 * the backend calls (src/backend/cuda/module.c forwards its calls of them here, so the module holds
 * no second copy of the engine). */
typedef struct laya_cuda_host {
  int abi;             /* LAYA_CUDA_MODULE_ABI */
  const char *version; /* LAYA_VERSION */
  laya_cuda_layout layout;
  int (*packed_batch_check)(const packed_batch *bt, int vocab, const char *who, int *max_len, laya_error *err);
  int (*model_spec_check)(const model_weights *w, const char *who, laya_error *err);
  int (*model_act_hidden)(const model_weights *w);
  void (*model_kept_rows)(const packed_batch *b, int32_t *kept);
  const laya_env_options *(*env_options_given_or_read)(const laya_env_options *given, laya_env_options *own,
                                                       const char *const *names, size_t n, laya_error *err);
  void (*env_options_free)(laya_env_options *o);
} laya_cuda_host;

/* What the module gives back: backend.h's and cuda/cuda_backend.h's CUDA functions. */
typedef struct laya_cuda_module {
  int abi; /* LAYA_CUDA_MODULE_ABI */
  backend *(*create)(const model_weights *w, const backend_options *o, laya_error *err);
  backend *(*create_shared)(const backend *base, const model_weights *w, const backend_options *o, laya_error *err);
  /* backend_cuda_available, with the CUDA runtime's words in why[n] when it sees no device */
  int (*available)(int *device_count, char *why, size_t n);
  int (*memory)(const backend *b, backend_worker *w, size_t *weights, size_t *scratch);
  int (*weights_shared)(const backend *b, const backend *base, size_t *borrowed);
  int (*set_max_scratch)(backend *b, long long bytes);
  int (*profile)(backend_worker *w, char *buf, size_t n);
  int (*geglu_selftest)(int half16, int M, int I, int K, int act, double *max_rel, int *same_bits);
  int (*qkv_rope_selftest)(int half16, int M, int H, int K, double *max_rel, int *same_bits);
  int (*fp8_selftest)(int M, int N, int K, int accumulate, double *rel_q, double *rel_16);
} laya_cuda_module;

/* The module's one exported symbol: the table, or NULL with the reason in why[n] (a host of
 * another build). Called once per process, by the loader's pthread_once. */
typedef const laya_cuda_module *(*laya_cuda_module_entry_fn)(const laya_cuda_host *host, char *why, size_t n);

#ifdef __cplusplus
}
#endif

#endif
