/*
 * test_cuda_artifact.c: `laya convert` artifacts on the CUDA backend answer byte for byte as the
 * checkpoint directory does at the same precision.
 *
 *   test_cuda_artifact CKPT_DIR CASES_JSONL
 *
 * The checkpoint is converted to fp32, bf16 and int8 artifacts (on the CPU), then every plain
 * "predict" case of the fixture runs through laya_open(..., device "cuda") of the directory and of
 * the artifact, and the result JSON (or the error) must be identical:
 *   - fp32 artifact vs the directory, default precision (bf16) and fp16: the artifact holds the
 *     checkpoint's exact values, converted on the GPU the same way;
 *   - bf16 artifact vs the directory with LAYA_CUDA_HEAD_FP16=0: the artifact's weights are the
 *     checkpoint's rounded to bf16 (nearest even), as the GPU rounds them, and the decision head
 *     then runs bf16 on both (by default the directory's head runs fp16 from its fp16 weights,
 *     which a bf16 artifact no longer holds);
 *   - the int8 artifact, and the bf16 artifact at precision fp16, are refused with a message.
 * Exits 77 ("no CUDA device: skipped") without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "laya.h"
#include "predict_cases.h"

enum { MAX_CASES = 400 };

static laya_model *open_cuda(const char *path, const char *prec, laya_error *err) {
  laya_options o;
  laya_options_init(&o);
  o.device = "cuda";
  o.precision = prec;
  o.quiet = 1;
  return laya_open(path, &o, err);
}

/* Every request through both models: identical results (or identical errors). */
static void same_answers(const char *label, laya_model *a, laya_model *b, char **reqs, int n) {
  int same = 0;
  for (int i = 0; i < n; i++) {
    char *ra = NULL, *rb = NULL;
    laya_error ea, eb;
    int ca = laya_predict(a, reqs[i], &ra, &ea), cb = laya_predict(b, reqs[i], &rb, &eb);
    int ok = ca == cb && (ca ? !strcmp(ea.message, eb.message) : !strcmp(ra, rb));
    if (!ok && same + 3 > i) /* the first few differences */
      fprintf(stderr, "%s: case %d differs:\n  dir:      %s\n  artifact: %s\n", label, i, ca ? ea.message : ra,
              cb ? eb.message : rb);
    same += ok;
    laya_free(ra);
    laya_free(rb);
  }
  printf("%s: %d of %d predict cases identical\n", label, same, n);
  CHECK(same == n);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CKPT_DIR CASES_JSONL\n", argv[0]);
    return 2;
  }
  if (laya_device_uses_cuda("cuda") != 1) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  const char *dir = argv[1];
  char **reqs = calloc(MAX_CASES, sizeof *reqs);
  int n = predict_cases_load(argv[2], reqs, MAX_CASES);
  CHECK(n > 0);
  if (n <= 0) return check_summary("test_cuda_artifact");
  char tmp[] = "/tmp/laya-cuda-art-XXXXXX";
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  char art[3][4200];
  static const char *precs[3] = {"fp32", "bf16", "int8"};
  laya_error err;
  for (int p = 0; p < 3; p++) {
    snprintf(art[p], sizeof art[p], "%s/model-%s.laya", tmp, precs[p]);
    laya_options o;
    laya_options_init(&o);
    o.precision = precs[p];
    o.quiet = 1;
    int rc = laya_convert(dir, art[p], &o, &err);
    if (rc) fprintf(stderr, "convert %s: %s\n", precs[p], err.message);
    CHECK(rc == 0);
  }

  /* fp32 artifact: default precision, then fp16 */
  static const char *gpu_prec[2] = {NULL, "fp16"};
  for (int i = 0; i < 2; i++) {
    laya_model *d = open_cuda(dir, gpu_prec[i], &err), *a = d ? open_cuda(art[0], gpu_prec[i], &err) : NULL;
    if (!d || !a) fprintf(stderr, "open (%s): %s\n", gpu_prec[i] ? gpu_prec[i] : "default", err.message);
    CHECK(d && a);
    if (d && a) {
      CHECK(strstr(laya_model_info(a), "\"device\": \"cuda:0\"") != NULL);
      same_answers(i ? "fp32 artifact vs directory, fp16" : "fp32 artifact vs directory, bf16", d, a, reqs, n);
    }
    laya_close(a);
    laya_close(d);
  }
  /* bf16 artifact: the head in bf16 on both sides */
  setenv("LAYA_CUDA_HEAD_FP16", "0", 1);
  {
    laya_model *d = open_cuda(dir, NULL, &err), *a = d ? open_cuda(art[1], NULL, &err) : NULL;
    if (!d || !a) fprintf(stderr, "open (bf16): %s\n", err.message);
    CHECK(d && a);
    if (d && a) same_answers("bf16 artifact vs directory, bf16 (LAYA_CUDA_HEAD_FP16=0)", d, a, reqs, n);
    laya_close(a);
    laya_close(d);
  }
  unsetenv("LAYA_CUDA_HEAD_FP16");
  /* refused: int8 on the GPU, and fp16 from bf16 weights */
  laya_model *bad = open_cuda(art[2], NULL, &err);
  CHECK(bad == NULL);
  if (!bad) printf("int8 artifact on cuda: %s\n", err.message);
  CHECK(!bad && strstr(err.message, "int8") != NULL);
  laya_close(bad);
  bad = open_cuda(art[1], "fp16", &err);
  CHECK(bad == NULL);
  if (!bad) printf("bf16 artifact at fp16 on cuda: %s\n", err.message);
  CHECK(!bad && strstr(err.message, "bf16") != NULL);
  laya_close(bad);

  for (int p = 0; p < 3; p++) unlink(art[p]);
  rmdir(tmp);
  for (int i = 0; i < n; i++) free(reqs[i]);
  free(reqs);
  return check_summary("test_cuda_artifact");
}
