/*
 * module.c: the entry point of the CUDA backend module (liblaya_cuda.so, backend/cuda_module.h).
 *
 * The engine (backend/cuda_loader.c) dlopen()s this module the first time a CUDA device is asked
 * for and calls laya_cuda_module_entry once. The backend's own code (the .cu files) calls a few
 * engine functions (the batch check, the model spec, the environment reader); here they forward
 * to the engine's copies, which the loader lends in laya_cuda_host, so the module holds no second
 * copy of the engine and resolves no symbol from the program that loaded it (the engine may be
 * linked statically, with its names hidden). The module exports laya_cuda_module_entry alone
 * (cuda/module.map): the backend's backend_cuda_* stay the module's own and never bind to the
 * loader's functions of the same names.
 *
 * Built only into the module (src/backend/cuda/CMakeLists.txt); a build that links the backend's
 * objects straight into the engine (bench/cuda/device/CMakeLists.txt) leaves it out.
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda_module.h"
#include "core/options.h"
#include "model/spec.h"

static const laya_cuda_host *g_host;

/* ---- the engine's functions the backend calls, forwarded to the host -------------------------- */

int packed_batch_check(const packed_batch *bt, int vocab, const char *who, int *max_len, laya_error *err) {
  return g_host->packed_batch_check(bt, vocab, who, max_len, err);
}

int model_spec_check(const model_weights *w, const char *who, laya_error *err) {
  return g_host->model_spec_check(w, who, err);
}

int model_act_hidden(const model_weights *w) { return g_host->model_act_hidden(w); }

void model_kept_rows(const packed_batch *b, int32_t *kept) { g_host->model_kept_rows(b, kept); }

const laya_env_options *laya_env_options_given_or_read(const laya_env_options *given, laya_env_options *own,
                                                       const char *const *names, size_t n, laya_error *err) {
  return g_host->env_options_given_or_read(given, own, names, n, err);
}

void laya_env_options_free(laya_env_options *o) { g_host->env_options_free(o); }

/* ---- the module's table ----------------------------------------------------------------------- */

static int available(int *device_count, char *why, size_t n) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count <= 0) {
    if (why && n)
      snprintf(why, n, "the CUDA runtime sees no device (%s)",
               e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    count = 0;
  }
  if (device_count) *device_count = count;
  return count > 0;
}

static const laya_cuda_module g_module = {
    LAYA_CUDA_MODULE_ABI,        backend_cuda_create,         backend_cuda_create_shared,
    available,                   backend_cuda_memory,         backend_cuda_weights_shared,
    backend_cuda_set_max_scratch, backend_cuda_profile,       backend_cuda_geglu_selftest,
    backend_cuda_qkv_rope_selftest, backend_cuda_fp8_selftest,
};

__attribute__((visibility("default"))) const laya_cuda_module *laya_cuda_module_entry(const laya_cuda_host *host,
                                                                                      char *why, size_t n) {
  static const laya_cuda_layout mine = LAYA_CUDA_LAYOUT_INIT;
  if (!host || host->abi != LAYA_CUDA_MODULE_ABI) {
    snprintf(why, n, "module ABI %d, the engine's %d", LAYA_CUDA_MODULE_ABI, host ? host->abi : -1);
    return NULL;
  }
  if (!host->version || strcmp(host->version, LAYA_VERSION) != 0) {
    snprintf(why, n, "the module is laya.c %s's", LAYA_VERSION);
    return NULL;
  }
  if (memcmp(&host->layout, &mine, sizeof mine) != 0) {
    snprintf(why, n, "the module was built from other headers (the shared structs' sizes differ)");
    return NULL;
  }
  g_host = host;
  return &g_module;
}
