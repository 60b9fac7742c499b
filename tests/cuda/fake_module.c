/*
 * fake_module.c: stand-ins for tests/cuda's lazy-load tests (cuda/lazy_*): built as
 *   - libcublasLt_absent.so.13, a library the fake module needs and the tests never let the
 *     dynamic loader find (it stands for a CUDA library the machine lacks); loaded itself through
 *     LAYA_CUDA_MODULE, it is a library without the module's entry point;
 *   - liblaya_cuda.so (tests/cuda/fake/), linked with it and without a RUNPATH: its load fails
 *     naming the missing library;
 *   - with FAKE_ENTRY, a module whose entry point refuses the engine (another build);
 *   - with FAKE_DRIVER, libcuda.so.1 (tests/cuda/fakedrv/) whose cuDeviceGetCount says 1: the
 *     loader's probe then loads the real module, whose CUDA runtime finds no usable driver.
 */
#include <stddef.h>
#include <stdio.h>

#ifdef FAKE_NEEDS
int fake_cublaslt_symbol(void);
int fake_module_symbol(void) { return fake_cublaslt_symbol(); }
#elif defined(FAKE_ENTRY)
const void *laya_cuda_module_entry(const void *host, char *why, size_t n);
const void *laya_cuda_module_entry(const void *host, char *why, size_t n) {
  (void)host;
  snprintf(why, n, "module ABI 999, the engine's 1 (a fake)");
  return NULL;
}
#elif defined(FAKE_DRIVER)
/* libcuda.so.1 that reports one GPU to the loader's probe (and nothing the CUDA runtime can use) */
int cuInit(unsigned flags);
int cuDeviceGetCount(int *n);
int cuGetErrorString(int rc, const char **s);
int cuInit(unsigned flags) { return (int)(flags & 0); }
int cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
int cuGetErrorString(int rc, const char **s) {
  *s = rc ? "fake driver error" : "no error";
  return 0;
}
#else
int fake_cublaslt_symbol(void);
int fake_cublaslt_symbol(void) { return 13; }
#endif
