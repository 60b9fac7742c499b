/*
 * test_cuda_nodevice.c: what every build answers about CUDA, GPU or not (runs in CI).
 *
 * backend_error_is_device_oom recognises exactly the CUDA out-of-memory errors (by their code). Without a usable
 * device (or without CUDA compiled in), backend_cuda_available says 0 and backend_cuda_create
 * returns NULL with an error that says why (no device; the CUDA backend module or a library it
 * needs could not be loaded; built without CUDA), as does backend_cuda_unavailable_reason; with a
 * device, the count is positive.
 */
#include <string.h>

#include "../check.h"
#include "../cpu/random_model.h"
#include "backend/backend.h"

int main(void) {
  laya_error e;
  memset(&e, 0, sizeof e);
  e.code = LAYA_ERR_DEVICE_OOM; /* the code the CUDA backend gives an allocation failure */
  strcpy(e.message, "CUDA out of memory on device 0 (allocating activation scratch): out of memory");
  CHECK(backend_error_is_device_oom(&e));
  e.code = LAYA_ERR_DEVICE; /* any other device error, whatever its message says */
  CHECK(!backend_error_is_device_oom(&e));
  strcpy(e.message, "CUDA error on device 0 (launching the forward kernels): an illegal memory access");
  CHECK(!backend_error_is_device_oom(&e));
  e.code = LAYA_ERR_NOMEM; /* host memory: not a device error, no CPU retry */
  strcpy(e.message, "out of memory");
  CHECK(!backend_error_is_device_oom(&e));
  CHECK(!backend_error_is_device_oom(NULL));

  int n = -1;
  int avail = backend_cuda_available(&n);
  CHECK(avail == (n > 0));
  if (!avail) {
    encoder_config c = random_small_config();
    random_model rm;
    CHECK(random_model_init(&rm, &c, 1, 2, DT_F32, 3) == 0);
    backend_options o = {PREC_BF16, 0, 0, NULL};
    memset(&e, 0, sizeof e);
    CHECK(backend_cuda_create(&rm.w, &o, &e) == NULL);
    CHECK((e.code == LAYA_ERR_UNSUPPORTED && strstr(e.message, "built without CUDA")) ||
          (e.code == LAYA_ERR_UNSUPPORTED && strstr(e.message, "CUDA backend module")) || /* no libcudart */
          (e.code == LAYA_ERR_DEVICE && strstr(e.message, "no CUDA device")));
    /* and why backend_cuda_available says 0, in words */
    const char *why = backend_cuda_unavailable_reason();
    CHECK(why != NULL && *why);
    printf("backend_cuda_unavailable_reason: \"%s\"\n", why ? why : "(null)");
    printf("no CUDA device: backend_cuda_create says \"%s\"\n", e.message);
    random_model_free(&rm);
  } else {
    printf("%d CUDA device(s)\n", n);
  }
  return check_summary("cuda/nodevice");
}
