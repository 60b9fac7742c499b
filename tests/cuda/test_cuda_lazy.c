/*
 * test_cuda_lazy.c: the CUDA backend is a module loaded on first use (backend/cuda_loader.c), so a
 * CUDA-enabled build running on the CPU is a CPU build (runs in CI, GPU or not).
 *
 *   test_cuda_lazy cpu CKPT
 *     A full predict on device "cpu" (and the default device) maps neither the CUDA backend module
 *     nor libcudart / libcublasLt (/proc/self/maps, before and after). Device "auto" maps none of
 *     them either when the NVIDIA driver sees no GPU (the loader asks the driver first); with a
 *     GPU it runs on cuda:0 through the module, which is then mapped.
 *   test_cuda_lazy missing CKPT WANT...
 *     LAYA_CUDA_MODULE (set by CTest) names a module that cannot be loaded: backend_cuda_create,
 *     called from 8 threads at once (the load is one pthread_once), fails in each with the same
 *     LAYA_ERR_UNSUPPORTED message, which holds every WANT (the path, the dynamic loader's words);
 *     no crash. Device "cuda" then opens the model on the CPU with Laya's warning and laya.c's
 *     reason (no driver, no device, or that same message where a GPU is visible).
 *   test_cuda_lazy fakegpu CKPT
 *     A stand-in libcuda.so.1 (LD_LIBRARY_PATH) counts one GPU: device cuda makes the loader load
 *     the module (mapped afterwards), whose CUDA runtime finds no usable driver; the model falls
 *     back to the CPU with the runtime's words.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../cpu/random_model.h"
#include "backend/backend.h"
#include "laya.h"

static const char *const cuda_libs[] = {"liblaya_cuda", "libcudart", "libcublas"};

/* The first CUDA library mapped into this process, or NULL. */
static const char *cuda_mapped(char *line, size_t n) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return "(cannot read /proc/self/maps)";
  const char *hit = NULL;
  while (!hit && fgets(line, (int)n, f))
    for (size_t i = 0; i < sizeof cuda_libs / sizeof *cuda_libs; i++)
      if (strstr(line, cuda_libs[i])) hit = line;
  fclose(f);
  return hit;
}

/* The line of /proc/self/maps that maps a file whose name holds `name`, or NULL. */
static const char *mapped(const char *name, char *line, size_t n) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return NULL;
  const char *hit = NULL;
  while (!hit && fgets(line, (int)n, f))
    if (strstr(line, name)) hit = line;
  fclose(f);
  return hit;
}

static void check_unmapped(const char *when) {
  char line[4096];
  const char *hit = cuda_mapped(line, sizeof line);
  if (hit) fprintf(stderr, "%s: mapped: %s", when, hit);
  CHECK(hit == NULL);
}

static const char *REQ =
    "{\"state\": \"I was charged twice for my March invoice\", \"questions\": {\"urgent\": {\"type\": \"noul\", "
    "\"instructions\": \"Is this urgent?\"}, \"team\": {\"type\": \"choice\", \"instructions\": \"Who handles this?\", "
    "\"criteria\": [\"billing\", \"tech\", \"sales\"]}}}";

/* Open on device dev (NULL: the default), answer REQ; the model's info in info[n]. */
static int open_predict(const char *ckpt, const char *dev, char *info, size_t n) {
  laya_options o;
  laya_options_init(&o);
  o.device = dev;
  o.quiet = 1;
  laya_error err;
  laya_model *m = laya_open(ckpt, &o, &err);
  if (!m) {
    fprintf(stderr, "laya_open(%s): %s\n", dev ? dev : "default", err.message);
    return -1;
  }
  char *out = NULL;
  int rc = laya_predict(m, REQ, &out, &err);
  if (rc) fprintf(stderr, "laya_predict(%s): %s\n", dev ? dev : "default", err.message);
  else CHECK(strstr(out, "\"urgent\"") && strstr(out, "\"billing\""));
  laya_free(out);
  snprintf(info, n, "%s", laya_model_info(m));
  laya_close(m);
  return rc;
}

static int mode_cpu(const char *ckpt) {
  char info[16384];
  check_unmapped("at start");
  unsetenv("LAYA_DEVICE");
  CHECK(open_predict(ckpt, "cpu", info, sizeof info) == 0);
  CHECK(strstr(info, "\"device\": \"cpu\"") != NULL);
  check_unmapped("after a predict on device cpu");
  CHECK(open_predict(ckpt, NULL, info, sizeof info) == 0);
  check_unmapped("after a predict on the default device");
  /* asking whether there is a GPU loads the module only when the driver sees one */
  int n = 0;
  const int gpu = backend_cuda_available(&n);
  printf("backend_cuda_available: %d (%d devices)%s%s\n", gpu, n, gpu ? "" : ": ",
         gpu ? "" : backend_cuda_unavailable_reason());
  CHECK(open_predict(ckpt, "auto", info, sizeof info) == 0);
  char line[4096];
  if (!gpu) {
    CHECK(strstr(info, "\"device\": \"cpu\"") != NULL);
    check_unmapped("after a predict on device auto without a GPU");
    printf("cpu, default and auto: no CUDA library mapped\n");
  } else {
    CHECK(strstr(info, "\"device\": \"cuda:0\"") != NULL);
    const char *hit = mapped("/liblaya_cuda.so", line, sizeof line);
    CHECK(hit != NULL);
    printf("cpu and default: no CUDA library mapped; auto ran on cuda:0 through %s", hit ? hit : "?\n");
  }
  return check_summary("cuda/lazy_cpu");
}

typedef struct {
  backend *b;
  laya_error err;
  const model_weights *w;
} create_arg;

static void *create_thread(void *p) {
  create_arg *a = p;
  backend_options o = {PREC_BF16, 0, 0, NULL};
  memset(&a->err, 0, sizeof a->err);
  a->b = backend_cuda_create(a->w, &o, &a->err);
  return NULL;
}

static int mode_missing(const char *ckpt, int nwant, char **want) {
  const char *mod = getenv("LAYA_CUDA_MODULE");
  CHECK(mod && *mod);
  printf("LAYA_CUDA_MODULE=%s\n", mod ? mod : "");
  encoder_config c = random_small_config();
  random_model rm;
  CHECK(random_model_init(&rm, &c, 1, 2, DT_F32, 3) == 0);
  enum { T = 8 };
  create_arg a[T];
  pthread_t th[T];
  for (int i = 0; i < T; i++) {
    a[i].w = &rm.w;
    CHECK(pthread_create(&th[i], NULL, create_thread, &a[i]) == 0);
  }
  for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < T; i++) {
    CHECK(a[i].b == NULL);
    CHECK(a[i].err.code == LAYA_ERR_UNSUPPORTED);
    CHECK_STREQ(a[i].err.message, a[0].err.message);
  }
  printf("backend_cuda_create: \"%s\"\n", a[0].err.message);
  for (int j = 0; j < nwant; j++) {
    if (!strstr(a[0].err.message, want[j])) fprintf(stderr, "the message lacks \"%s\"\n", want[j]);
    CHECK(strstr(a[0].err.message, want[j]) != NULL);
  }
  random_model_free(&rm);

  /* device cuda: Laya's fallback to the CPU, with the reason */
  char info[16384];
  CHECK(open_predict(ckpt, "cuda", info, sizeof info) == 0);
  CHECK(strstr(info, "\"device\": \"cpu\"") != NULL);
  CHECK(strstr(info, "Warning: CUDA requested but not available. Falling back to CPU.") != NULL);
  const char *why = backend_cuda_unavailable_reason();
  CHECK(why != NULL);
  if (why) {
    char line[2048];
    snprintf(line, sizeof line, "Warning: the CUDA backend cannot run here: %s.", why);
    /* the info is JSON: compare up to the first character JSON would escape */
    size_t k = strcspn(line, "\"\\");
    CHECK(k > 40 && strncmp(strstr(info, "Warning: the CUDA backend") ? strstr(info, "Warning: the CUDA backend") : "",
                            line, k) == 0);
    printf("device cuda: %s\n", line);
    if (!strstr(why, "no NVIDIA driver") && !strstr(why, "no CUDA device"))
      for (int j = 0; j < nwant; j++) CHECK(strstr(why, want[j]) != NULL); /* a GPU: the module's error */
  }
  return check_summary("cuda/lazy_missing");
}

/* LD_LIBRARY_PATH holds a stand-in libcuda.so.1 that counts one GPU (fake_module.c): the probe
 * loads the module, whose runtime finds no usable driver; device cuda falls back saying so. */
static int mode_fakegpu(const char *ckpt) {
  check_unmapped("at start");
  char info[16384], line[4096];
  CHECK(open_predict(ckpt, "cuda", info, sizeof info) == 0);
  const char *hit = mapped("/liblaya_cuda.so", line, sizeof line);
  CHECK(hit != NULL); /* the probe passed: the module was found and loaded */
  printf("module: %s", hit ? hit : "not mapped\n");
  if (strstr(info, "\"device\": \"cuda:0\"")) { /* the runtime found a real driver: a GPU machine */
    printf("the CUDA runtime found a real driver: the model runs on cuda:0\n");
    return check_summary("cuda/lazy_fake_gpu");
  }
  CHECK(strstr(info, "\"device\": \"cpu\"") != NULL);
  CHECK(strstr(info, "Warning: CUDA requested but not available. Falling back to CPU.") != NULL);
  const char *why = backend_cuda_unavailable_reason();
  CHECK(why && strstr(why, "the CUDA runtime sees no device ("));
  CHECK(strstr(info, "Warning: the CUDA backend cannot run here: the CUDA runtime sees no device (") != NULL);
  printf("device cuda: %s\n", why ? why : "(null)");
  return check_summary("cuda/lazy_fake_gpu");
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "fakegpu")) return mode_fakegpu(argv[2]);
  if (argc >= 3 && !strcmp(argv[1], "cpu")) return mode_cpu(argv[2]);
  if (argc >= 3 && !strcmp(argv[1], "missing")) return mode_missing(argv[2], argc - 3, argv + 3);
  fprintf(stderr, "usage: test_cuda_lazy cpu CKPT | missing CKPT WANT...\n");
  return 2;
}
