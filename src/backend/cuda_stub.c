/*
 * cuda_stub.c: the CUDA entry points of backend.h when laya.c is built without CUDA, and the
 * device-error test that exists in every build.
 *
 * A build with the CUDA backend defines LAYA_CUDA_MODULE for the laya target: backend/cuda_loader.c
 * then answers, over the backend module it loads on first use. A build that links the backend's
 * objects straight in (bench/cuda/device/CMakeLists.txt, for the GPU machine) defines
 * LAYA_HAVE_CUDA: the backend's own functions answer. Without either, the stubs keep every caller
 * linkable and answer with a clear error instead.
 */
#include "backend/backend.h"

int backend_error_is_device_oom(const laya_error *err) { return err && err->code == LAYA_ERR_DEVICE_OOM; }

#if defined(LAYA_HAVE_CUDA)

const char *backend_cuda_unavailable_reason(void) {
  return backend_cuda_available(NULL) ? NULL : "no CUDA device is visible to the CUDA runtime";
}

#elif !defined(LAYA_CUDA_MODULE)

#define NO_CUDA "laya.c was built without CUDA (nvcc was not found at configure time, or LAYA_CUDA=OFF)"

backend *backend_cuda_create(const model_weights *w, const backend_options *o, laya_error *err) {
  (void)w;
  (void)o;
  laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, NO_CUDA);
  return NULL;
}

backend *backend_cuda_create_shared(const backend *base, const model_weights *w, const backend_options *o,
                                    laya_error *err) {
  (void)base;
  return backend_cuda_create(w, o, err);
}

int backend_cuda_available(int *device_count) {
  if (device_count) *device_count = 0;
  return 0;
}

const char *backend_cuda_unavailable_reason(void) { return NO_CUDA; }

#endif
