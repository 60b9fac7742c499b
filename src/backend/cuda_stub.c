/*
 * cuda_stub.c: the CUDA entry points of backend.h when laya.c is built without CUDA, and the
 * device-error test that exists in every build.
 *
 * The CUDA backend (src/backend/cuda/) defines LAYA_HAVE_CUDA for the laya target; without it,
 * the stubs keep every caller linkable and answer with a clear error instead.
 */
#include "backend/backend.h"

int backend_error_is_device_oom(const laya_error *err) { return err && err->code == LAYA_ERR_DEVICE_OOM; }

#ifndef LAYA_HAVE_CUDA

backend *backend_cuda_create(const model_weights *w, const backend_options *o, laya_error *err) {
  (void)w;
  (void)o;
  laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
           "laya.c was built without CUDA (nvcc was not found at configure time, or LAYA_CUDA=OFF)");
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

#endif
