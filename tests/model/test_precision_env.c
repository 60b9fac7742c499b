/*
 * test_precision_env.c: which precision laya_open runs a checkpoint at.
 *   - no laya_options.precision, no LAYA_PRECISION: the fast CPU backend at fp32 (on every CPU);
 *   - LAYA_PRECISION=bf16 / int8 applies when the option is unset, and the answers change with it;
 *   - the option wins over the variable;
 *   - an invalid LAYA_PRECISION (or option) is refused with a message naming the variable (or
 *     "precision") and the value; an empty LAYA_PRECISION counts as unset;
 *   - Laya's LAYA_CPU_AMP=bf16 selects bf16 on the CPU when nothing else names a precision;
 *   - LAYA_BACKEND=cpu-ref with LAYA_PRECISION=bf16 is refused naming LAYA_PRECISION.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "laya.h"

static const char *kReq =
    "{\"state\": \"I was charged twice, please refund one\", \"questions\": {\"team\": {\"type\": \"choice\", "
    "\"instructions\": \"Who handles this?\", \"criteria\": [\"billing\", \"tech\", \"sales\", \"legal\"]}, "
    "\"urgent\": {\"type\": \"noul\", \"instructions\": \"Is it urgent?\"}}}";

/* Open dir with option precision opt_prec; NULL-safe answer in *out (malloc'd) and info check. */
static laya_model *open_at(const char *dir, const char *opt_prec, laya_error *err) {
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  o.precision = opt_prec;
  return laya_open(dir, &o, err);
}

static char *answer(laya_model *m) {
  char *out = NULL;
  laya_error err;
  if (laya_predict(m, kReq, &out, &err)) {
    fprintf(stderr, "predict: %s\n", err.message);
    return NULL;
  }
  return out;
}

static int info_has(const laya_model *m, const char *frag) {
  const char *info = m ? laya_model_info(m) : NULL;
  return info && strstr(info, frag) != NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_precision_env CKPT_DIR\n");
    return 2;
  }
  const char *dir = argv[1];
  unsetenv("LAYA_BACKEND");
  unsetenv("LAYA_PRECISION");
  unsetenv("LAYA_DEVICE");
  unsetenv("LAYA_ESCALATE");
  unsetenv("LAYA_CPU_AMP");
  laya_error err;

  laya_model *def = open_at(dir, NULL, &err);
  CHECK(def != NULL);
  CHECK(info_has(def, "\"backend\": \"cpu\"") && info_has(def, "\"precision\": \"fp32\""));
  CHECK(info_has(def, "\"cpu_isa\": \""));
  laya_model *f32 = open_at(dir, "fp32", &err);
  char *a_def = def ? answer(def) : NULL, *a_f32 = f32 ? answer(f32) : NULL;
  CHECK(a_def && a_f32 && !strcmp(a_def, a_f32)); /* the default is fp32 */

  setenv("LAYA_PRECISION", "bf16", 1);
  laya_model *envb = open_at(dir, NULL, &err);
  CHECK(envb && info_has(envb, "\"precision\": \"bf16\""));
  laya_model *optb = open_at(dir, "bf16", &err);
  char *a_envb = envb ? answer(envb) : NULL, *a_optb = optb ? answer(optb) : NULL;
  CHECK(a_envb && a_optb && !strcmp(a_envb, a_optb));
  CHECK(a_envb && a_f32 && strcmp(a_envb, a_f32) != 0); /* bf16 moves the tiny model's numbers */
  laya_model *win = open_at(dir, "fp32", &err); /* the option wins over the variable */
  CHECK(win && info_has(win, "\"precision\": \"fp32\""));

  setenv("LAYA_PRECISION", "int8", 1);
  laya_model *env8 = open_at(dir, NULL, &err);
  CHECK(env8 && info_has(env8, "\"precision\": \"int8\""));

  /* fp8 is a CUDA mode: on the CPU it is refused naming the precision, not silently run as another */
  laya_model *cpu8 = open_at(dir, "fp8", &err);
  CHECK(cpu8 == NULL && err.code == LAYA_ERR_UNSUPPORTED);
  CHECK_STREQ(err.message, "cpu backend: precision fp8 is not supported on the CPU (use fp32, bf16 or int8)");

  setenv("LAYA_PRECISION", "fast", 1);
  laya_model *bad = open_at(dir, NULL, &err);
  CHECK(bad == NULL);
  CHECK(bad == NULL && err.code == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "LAYA_PRECISION must be fp32, bf16, fp16, int8 or fp8, got 'fast'");
  laya_model *badopt = open_at(dir, "fp64", &err);
  CHECK(badopt == NULL);
  CHECK_STREQ(err.message, "precision must be fp32, bf16, fp16, int8 or fp8, got 'fp64'");

  /* Laya's LAYA_CPU_AMP=bf16 (any case) selects bf16 on the CPU when nothing else names a precision;
   * other values are ignored, as Laya ignores them; LAYA_PRECISION wins over it */
  unsetenv("LAYA_PRECISION");
  setenv("LAYA_CPU_AMP", "BFloat16", 1);
  laya_model *amp = open_at(dir, NULL, &err);
  CHECK(amp && info_has(amp, "\"precision\": \"bf16\""));
  laya_close(amp);
  setenv("LAYA_CPU_AMP", "fp16", 1);
  amp = open_at(dir, NULL, &err);
  CHECK(amp && info_has(amp, "\"precision\": \"fp32\""));
  laya_close(amp);
  setenv("LAYA_CPU_AMP", "bf16", 1);
  setenv("LAYA_PRECISION", "int8", 1);
  amp = open_at(dir, NULL, &err);
  CHECK(amp && info_has(amp, "\"precision\": \"int8\""));
  laya_close(amp);
  unsetenv("LAYA_CPU_AMP");

  setenv("LAYA_PRECISION", "", 1); /* empty: unset */
  laya_model *empty = open_at(dir, NULL, &err);
  CHECK(empty && info_has(empty, "\"precision\": \"fp32\""));

  setenv("LAYA_PRECISION", "bf16", 1);
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  laya_model *ref = open_at(dir, NULL, &err);
  CHECK(ref == NULL && strstr(err.message, "LAYA_PRECISION 'bf16' is not available on the CPU reference backend"));
  unsetenv("LAYA_BACKEND");
  unsetenv("LAYA_PRECISION");

  free(a_def), free(a_f32), free(a_envb), free(a_optb);
  laya_close(def), laya_close(f32), laya_close(envb), laya_close(optb), laya_close(win), laya_close(env8);
  laya_close(empty), laya_close(bad), laya_close(badopt), laya_close(ref);
  return check_summary("model/test_precision_env");
}
