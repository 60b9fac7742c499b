/*
 * cuda_loader.c: backend.h's and cuda/cuda_backend.h's CUDA functions in a CUDA-enabled build,
 * over the CUDA backend module (liblaya_cuda.so, backend/cuda_module.h) loaded on first use.
 *
 * The engine does not link the CUDA backend, libcudart or libcublasLt: a process that only runs
 * the CPU never maps them (libcublasLt's relocations alone touch ~150 MB at start), and the
 * programs start on machines without the CUDA libraries. The first backend_cuda_* call that needs
 * the backend loads the module once (pthread_once), from the first of:
 *   1. LAYA_CUDA_MODULE (core/options.c), the module's path, when set (nothing else is tried);
 *   2. liblaya_cuda.so beside the file that holds the engine's code (liblaya.so, the Python
 *      extension, or a program linked with liblaya.a: the installed library directory, the
 *      wheel's package directory, a build tree's top directory);
 *   3. the library directory relative to that file's directory (installed programs: bin/ -> lib/);
 *   4. the dynamic loader's own search for liblaya_cuda.so (LD_LIBRARY_PATH, the program's
 *      RUNPATH: a build tree's tests, ld.so.cache).
 * A file found at 1-3 is the answer, loadable or not (its error, with the dynamic loader's words
 * naming the library it lacks, is the reason). backend_cuda_available asks the NVIDIA driver
 * first (libcuda.so.1: cuInit, cuDeviceGetCount) and loads the module only when the driver sees a
 * device, so device "auto" on a CPU-only machine maps nothing either.
 *
 * Compiled when the CUDA backend is built (LAYA_CUDA_MODULE, set by src/backend/cuda/); without
 * it backend/cuda_stub.c answers "built without CUDA".
 */
#if defined(LAYA_CUDA_MODULE)

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda_module.h"
#include "core/error.h"
#include "core/options.h"
#include "model/spec.h"

#ifndef LAYA_CUDA_MODULE_NAME
#define LAYA_CUDA_MODULE_NAME "liblaya_cuda.so"
#endif
#ifndef LAYA_CUDA_MODULE_RELDIR /* from the programs' directory to the libraries' (GNUInstallDirs) */
#define LAYA_CUDA_MODULE_RELDIR "../lib"
#endif
#ifndef LAYA_CUDA_LIBS /* what the module links, for the message when it cannot be loaded */
#define LAYA_CUDA_LIBS "the CUDA runtime (libcudart) and cuBLASLt (libcublasLt) on the library search path"
#endif

static const laya_cuda_host g_host = {
    LAYA_CUDA_MODULE_ABI,     LAYA_VERSION,        LAYA_CUDA_LAYOUT_INIT, packed_batch_check,
    model_spec_check,         model_act_hidden,    model_kept_rows,       laya_env_options_given_or_read,
    laya_env_options_free,
};

/* ---- the module, loaded once ------------------------------------------------------------------ */

static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static const laya_cuda_module *g_mod; /* written once under g_load_once; read atomically elsewhere */
static char g_load_error[1536];

/* The directory of the file that holds this code (the main program's: /proc/self/exe). */
static int own_dir(char *dir, size_t n) {
  Dl_info info;
  struct link_map *lm = NULL;
  char path[PATH_MAX];
  if (!dladdr1((const void *)&own_dir, &info, (void **)&lm, RTLD_DL_LINKMAP)) return -1;
  if (!lm || !lm->l_name || !lm->l_name[0]) {
    ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
    if (k <= 0) return -1;
    path[k] = 0;
  } else if (!realpath(lm->l_name, path)) {
    return -1;
  }
  char *slash = strrchr(path, '/');
  if (!slash) return -1;
  *slash = 0;
  return snprintf(dir, n, "%s", path[0] ? path : "/") < (int)n ? 0 : -1;
}

/* dlopen + the entry point; 0, or -1 with g_load_error set. */
static int open_module(const char *path) {
  dlerror();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    if (access(path, F_OK) == 0) /* there, but it or a library it needs cannot be loaded */
      snprintf(g_load_error, sizeof g_load_error, "the CUDA backend module %s could not be loaded: %s; it needs %s",
               path, e ? e : "dlopen failed", LAYA_CUDA_LIBS);
    else
      snprintf(g_load_error, sizeof g_load_error, "the CUDA backend module could not be loaded: %s", e ? e : path);
    return -1;
  }
  void *sym = dlsym(h, LAYA_CUDA_MODULE_ENTRY);
  if (!sym) {
    const char *e = dlerror();
    snprintf(g_load_error, sizeof g_load_error, "%s is not laya.c's CUDA backend module (%s)", path,
             e ? e : "no " LAYA_CUDA_MODULE_ENTRY);
    dlclose(h);
    return -1;
  }
  laya_cuda_module_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry);
  char why[512] = "";
  const laya_cuda_module *m = entry(&g_host, why, sizeof why);
  if (!m) {
    /* left loaded: its constructors have registered its kernels with the CUDA runtime */
    snprintf(g_load_error, sizeof g_load_error, "the CUDA backend module %s does not belong to this laya.c %s: %s",
             path, LAYA_VERSION, why);
    return -1;
  }
  __atomic_store_n(&g_mod, m, __ATOMIC_RELEASE);
  return 0;
}

static void load_module(void) {
  const char *forced = laya_env_process()->cuda_module;
  if (forced && *forced) {
    open_module(forced);
    return;
  }
  char dir[PATH_MAX], cand[2][PATH_MAX + 64];
  int nc = 0;
  if (own_dir(dir, sizeof dir) == 0) {
    snprintf(cand[nc++], sizeof cand[0], "%s/%s", dir, LAYA_CUDA_MODULE_NAME);
    snprintf(cand[nc++], sizeof cand[0], "%s/%s/%s", dir, LAYA_CUDA_MODULE_RELDIR, LAYA_CUDA_MODULE_NAME);
  }
  for (int i = 0; i < nc; i++)
    if (access(cand[i], F_OK) == 0) {
      open_module(cand[i]);
      return;
    }
  if (open_module(LAYA_CUDA_MODULE_NAME) == 0) return;
  /* nowhere: name the places looked in */
  static char msg[sizeof g_load_error];
  snprintf(msg, sizeof msg, "%.600s; it is not in %.400s nor in %.400s (LAYA_CUDA_MODULE names the module's path)",
           g_load_error, nc ? cand[0] : "the library's directory", nc ? cand[1] : LAYA_CUDA_MODULE_RELDIR);
  memcpy(g_load_error, msg, sizeof msg);
}

/* The module, loading it the first time; NULL with g_load_error when it cannot be loaded. */
static const laya_cuda_module *module(void) {
  pthread_once(&g_load_once, load_module);
  return __atomic_load_n(&g_mod, __ATOMIC_ACQUIRE);
}

/* The module when it is already loaded (a CUDA backend or worker exists only then), else NULL. */
static const laya_cuda_module *module_if_loaded(void) { return __atomic_load_n(&g_mod, __ATOMIC_ACQUIRE); }

static backend *load_failed(laya_error *err) {
  laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "%s", g_load_error);
  return NULL;
}

/* ---- is there a GPU: the driver first, then the module ---------------------------------------- */

static pthread_once_t g_probe_once = PTHREAD_ONCE_INIT;
static int g_probe_count;
static char g_probe_why[sizeof g_load_error];

static const char *driver_error(void *drv, int rc) {
  const char *s = NULL;
  void *sym = dlsym(drv, "cuGetErrorString");
  int (*str)(int, const char **) = NULL;
  if (sym) memcpy(&str, &sym, sizeof str);
  if (!str || str(rc, &s) != 0 || !s) s = "unknown driver error";
  return s;
}

static void probe(void) {
  /* the NVIDIA driver: absent on a CPU-only machine, and then nothing else is loaded */
  dlerror();
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!drv) {
    const char *e = dlerror();
    snprintf(g_probe_why, sizeof g_probe_why, "no NVIDIA driver (%s)", e ? e : "libcuda.so.1 not found");
    return;
  }
  void *s_init = dlsym(drv, "cuInit"), *s_count = dlsym(drv, "cuDeviceGetCount");
  int (*init)(unsigned) = NULL, (*count)(int *) = NULL;
  if (s_init) memcpy(&init, &s_init, sizeof init);
  if (s_count) memcpy(&count, &s_count, sizeof count);
  if (!init || !count) {
    snprintf(g_probe_why, sizeof g_probe_why, "libcuda.so.1 is not an NVIDIA driver (no cuInit / cuDeviceGetCount)");
    dlclose(drv);
    return;
  }
  /* the driver stays loaded from here on: cuInit has run (the CUDA runtime would load it too) */
  int n = 0, rc = init(0);
  if (rc == 0) rc = count(&n);
  if (rc != 0 || n <= 0) {
    snprintf(g_probe_why, sizeof g_probe_why, "no CUDA device is visible (%s)",
             rc ? driver_error(drv, rc) : "the driver counts 0 devices");
    return;
  }
  const laya_cuda_module *m = module();
  if (!m) {
    snprintf(g_probe_why, sizeof g_probe_why, "%s", g_load_error);
    return;
  }
  char why[512] = "";
  if (!m->available(&g_probe_count, why, sizeof why)) {
    g_probe_count = 0;
    snprintf(g_probe_why, sizeof g_probe_why, "%s", why[0] ? why : "the CUDA runtime sees no device");
  }
}

int backend_cuda_available(int *device_count) {
  pthread_once(&g_probe_once, probe);
  if (device_count) *device_count = g_probe_count;
  return g_probe_count > 0;
}

const char *backend_cuda_unavailable_reason(void) {
  pthread_once(&g_probe_once, probe);
  return g_probe_count > 0 ? NULL : g_probe_why;
}

/* ---- the backend's entry points --------------------------------------------------------------- */

backend *backend_cuda_create(const model_weights *w, const backend_options *o, laya_error *err) {
  const laya_cuda_module *m = module();
  return m ? m->create(w, o, err) : load_failed(err);
}

backend *backend_cuda_create_shared(const backend *base, const model_weights *w, const backend_options *o,
                                    laya_error *err) {
  const laya_cuda_module *m = module();
  return m ? m->create_shared(base, w, o, err) : load_failed(err);
}

int backend_cuda_memory(const backend *b, backend_worker *w, size_t *weights, size_t *scratch) {
  const laya_cuda_module *m = b && b->kind == BACKEND_CUDA ? module_if_loaded() : NULL;
  return m ? m->memory(b, w, weights, scratch) : -1;
}

int backend_cuda_weights_shared(const backend *b, const backend *base, size_t *borrowed) {
  const laya_cuda_module *m = b && b->kind == BACKEND_CUDA ? module_if_loaded() : NULL;
  return m ? m->weights_shared(b, base, borrowed) : -1;
}

int backend_cuda_set_max_scratch(backend *b, long long bytes) {
  const laya_cuda_module *m = b && b->kind == BACKEND_CUDA ? module_if_loaded() : NULL;
  return m ? m->set_max_scratch(b, bytes) : -1;
}

int backend_cuda_profile(backend_worker *w, char *buf, size_t n) {
  const laya_cuda_module *m = w ? module_if_loaded() : NULL;
  return m ? m->profile(w, buf, n) : -1;
}

int backend_cuda_geglu_selftest(int half16, int M, int I, int K, int act, double *max_rel, int *same_bits) {
  const laya_cuda_module *m = module();
  return m ? m->geglu_selftest(half16, M, I, K, act, max_rel, same_bits) : -1;
}

int backend_cuda_qkv_rope_selftest(int half16, int M, int H, int K, double *max_rel, int *same_bits) {
  const laya_cuda_module *m = module();
  return m ? m->qkv_rope_selftest(half16, M, H, K, max_rel, same_bits) : -1;
}

int backend_cuda_fp8_selftest(int M, int N, int K, int accumulate, double *rel_q, double *rel_16) {
  const laya_cuda_module *m = module();
  return m ? m->fp8_selftest(M, N, K, accumulate, rel_q, rel_16) : -1;
}

#else
typedef int cuda_loader_unused; /* a build without the CUDA backend: backend/cuda_stub.c */
#endif
