/* test_options.c: the options table read into laya_env_options (core/options.h): each type parsed,
 * every refusal naming the variable, the value and the values it takes, lenient rows ignoring a
 * bad value, the skip mask, copies, and laya_open refusing a bad variable at its boundary. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "core/options.h"
#include "laya.h"

static void clear_all(void) {
  for (int i = 0; i < laya_env_count; i++) unsetenv(laya_env_table[i].env);
}

/* a build without LAYA_RESEARCH_SWITCHES reads the research rows as unset (options.h) */
static int research_build(void) {
  setenv("LAYA_CPU_STUDY", "x", 1);
  const int on = laya_env("LAYA_CPU_STUDY") != NULL;
  unsetenv("LAYA_CPU_STUDY");
  return on;
}

static const char *refusal(const char *name, const char *value) {
  static char msg[4096];
  clear_all();
  setenv(name, value, 1);
  laya_env_options o;
  laya_error err = {0};
  int rc = laya_env_options_read(&o, 0, &err);
  laya_env_options_free(&o);
  unsetenv(name);
  snprintf(msg, sizeof msg, "%s", rc ? err.message : "(accepted)");
  if (rc) CHECK(err.code == LAYA_ERR_VALUE);
  return msg;
}

int main(void) {
  /* every row that fills a field is well formed: a type the reader knows, enum values listed */
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *r = &laya_env_table[i];
    CHECK(laya_option_find(r->env) == r);
    if (!strcmp(r->type, "enum")) {
      char v[64];
      CHECK(laya_option_value(r, 0, v, sizeof v) != NULL && laya_option_value(r, 1, v, sizeof v) != NULL);
    }
    CHECK(r->field >= 0); /* every row is read into the struct, the CUDA backend's too */
  }

  /* unset: the struct's "unset" values */
  clear_all();
  laya_env_options o;
  laya_error err = {0};
  CHECK(laya_env_options_read(&o, 0, &err) == 0);
  CHECK(o.precision == NULL && o.threads == 0 && o.escalate == -1 && o.escalate_tau == -1 && o.cuda_warmup == -1);
  CHECK(o.quiet_warnings == -1 && o.hf_hub_offline == -1 && o.cpu_study == NULL);
  CHECK(o.cuda_graphs == -1 && o.cuda_head_fp16 == -1 && o.cuda_head_all == -1 && o.cuda_gemm_tune == -1);
  CHECK(o.cuda_profile == -1 && o.cuda_geglu == NULL && o.cuda_attn_l == NULL && o.cuda_attn_g == NULL);
  CHECK(o.cuda_max_scratch == -1 && o.sha256_digests == NULL); /* -1: LAYA_CUDA_MAX_SCRATCH=0 is a value */
  laya_env_options_free(&o);

  /* the CUDA backend's rows: the values its code took before the table, with the same meaning */
  setenv("LAYA_CUDA_GRAPHS", "0", 1);
  setenv("LAYA_CUDA_HEAD_FP16", " 0", 1);
  setenv("LAYA_CUDA_HEAD_ALL", "1", 1);
  setenv("LAYA_CUDA_GEMM_TUNE", "1", 1);
  setenv("LAYA_CUDA_PROFILE", "1", 1);
  setenv("LAYA_CUDA_MAX_SCRATCH", "0", 1);
  setenv("LAYA_CUDA_ATTN_L", "w4m1n64", 1);
  setenv("LAYA_CUDA_ATTN_G", "w4m2n64", 1);
  setenv("LAYA_SHA256_DIGESTS", "{\"m\": {\"model.safetensors\": \"00\"}}", 1); /* a string: checked where used */
  const int research = research_build();
  const char *geglu[] = {"0", "1", "auto", "n256s4", "n128s6", "n64s8"};
  for (int i = 0; i < 6; i++) {
    setenv("LAYA_CUDA_GEGLU", geglu[i], 1);
    CHECK(laya_env_options_read(&o, 0, &err) == 0);
    if (research) {
      CHECK_STREQ(o.cuda_geglu, geglu[i]);
      CHECK(o.cuda_head_fp16 == 0 && o.cuda_head_all == 1 && o.cuda_gemm_tune == 1 && o.cuda_profile == 1);
      CHECK_STREQ(o.cuda_attn_l, "w4m1n64");
      CHECK_STREQ(o.cuda_attn_g, "w4m2n64");
    } else {
      CHECK(o.cuda_geglu == NULL && o.cuda_head_fp16 == -1 && o.cuda_attn_l == NULL);
    }
    CHECK(o.cuda_graphs == 0 && o.cuda_max_scratch == 0);
    CHECK_STREQ(o.sha256_digests, "{\"m\": {\"model.safetensors\": \"00\"}}");
    laya_env_options_free(&o);
  }
  setenv("LAYA_CUDA_MAX_SCRATCH", "4096", 1);
  setenv("LAYA_CUDA_GRAPHS", "1", 1);
  CHECK(laya_env_options_read(&o, 0, &err) == 0 && o.cuda_max_scratch == 4096 && o.cuda_graphs == 1);
  laya_env_options_free(&o);
  /* empty: unset, as before (the code's "unset or empty" defaults) */
  setenv("LAYA_CUDA_GRAPHS", "", 1);
  setenv("LAYA_CUDA_MAX_SCRATCH", "", 1);
  setenv("LAYA_CUDA_GEGLU", "", 1);
  CHECK(laya_env_options_read(&o, 0, &err) == 0 && o.cuda_graphs == -1 && o.cuda_max_scratch == -1 && o.cuda_geglu == NULL);
  laya_env_options_free(&o);
  clear_all();

  /* each type parsed */
  setenv("LAYA_PRECISION", "bf16", 1);
  setenv("LAYA_THREADS", " 3 ", 1);
  setenv("LAYA_ESCALATE", "yes", 1);
  setenv("LAYA_ESCALATE_TAU", "0.25", 1);
  setenv("LAYA_QUIET_WARNINGS", "", 1); /* set | unset: set, even empty */
  setenv("LAYA_CPU_AMP", "BFloat16", 1); /* any case, stored as the table spells it */
  setenv("HF_HUB_OFFLINE", "On", 1);
  setenv("LAYA_CUDA_WARMUP", "0", 1);
  setenv("LAYA_CACHE_DIR", "/tmp/x", 1);
  CHECK(laya_env_options_read(&o, 0, &err) == 0);
  CHECK_STREQ(o.precision, "bf16");
  CHECK(o.threads == 3 && o.escalate == 1 && o.escalate_tau == 0.25 && o.quiet_warnings == 1);
  CHECK_STREQ(o.cpu_amp, "bfloat16");
  CHECK(o.hf_hub_offline == 1 && o.cuda_warmup == 0);
  CHECK_STREQ(o.cache_dir, "/tmp/x");
  laya_env_options c;
  CHECK(laya_env_options_copy(&c, &o) == 0);
  CHECK(c.precision != o.precision && !strcmp(c.precision, "bf16") && !strcmp(c.cache_dir, "/tmp/x"));
  laya_env_options_free(&o);
  CHECK_STREQ(c.precision, "bf16"); /* the copy owns its strings */
  laya_env_options_free(&c);
  /* the caller's options replace a variable: it is not read */
  setenv("LAYA_PRECISION", "fast", 1);
  CHECK(laya_env_options_read(&o, LAYA_ENV_SKIP_PRECISION, &err) == 0 && o.precision == NULL);
  laya_env_options_free(&o);
  /* empty: unset, for the typed rows */
  setenv("LAYA_PRECISION", "", 1);
  setenv("LAYA_THREADS", "", 1);
  CHECK(laya_env_options_read(&o, 0, &err) == 0 && o.precision == NULL && o.threads == 0);
  laya_env_options_free(&o);

  /* refusals: variable, value, the values it takes */
  CHECK_STREQ(refusal("LAYA_PRECISION", "fast"), "LAYA_PRECISION must be fp32, bf16, fp16, int8 or fp8, got 'fast'");
  CHECK_STREQ(refusal("LAYA_BACKEND", "gpu"), "LAYA_BACKEND must be cpu or cpu-ref, got 'gpu'");
  CHECK_STREQ(refusal("LAYA_CPU_ISA", "sse"), "LAYA_CPU_ISA must be amx, avx512, avx512-dot, avx512-fma, avx2, scalar or amx-emu, got 'sse'");
  CHECK_STREQ(refusal("LAYA_PACK_CACHE", "off"), "LAYA_PACK_CACHE must be 0 or sync, got 'off'");
  CHECK_STREQ(refusal("LAYA_THREADS", "zero"), "LAYA_THREADS must be an integer from 1 to 4096, got 'zero'");
  CHECK_STREQ(refusal("LAYA_THREADS", "0"), "LAYA_THREADS must be an integer from 1 to 4096, got '0'");
  CHECK_STREQ(refusal("LAYA_THREADS", "5000"), "LAYA_THREADS must be an integer from 1 to 4096, got '5000'");
  CHECK_STREQ(refusal("LAYA_ESCALATE_TAU", "-1"), "LAYA_ESCALATE_TAU must be a number >= 0, got '-1'");
  CHECK_STREQ(refusal("LAYA_ESCALATE_REL", "nan"), "LAYA_ESCALATE_REL must be a number >= 0, got 'nan'");
  /* the CUDA rows: what the code silently read as its default before is refused by name */
  CHECK_STREQ(refusal("LAYA_CUDA_WARMUP", "no"), "LAYA_CUDA_WARMUP must be 0 or 1, got 'no'");
  CHECK_STREQ(refusal("LAYA_CUDA_GRAPHS", "off"), "LAYA_CUDA_GRAPHS must be 0 or 1, got 'off'");
  CHECK_STREQ(refusal("LAYA_CUDA_MAX_SCRATCH", "4k"), "LAYA_CUDA_MAX_SCRATCH must be an integer >= 0, got '4k'");
  CHECK_STREQ(refusal("LAYA_CUDA_MAX_SCRATCH", "-1"), "LAYA_CUDA_MAX_SCRATCH must be an integer >= 0, got '-1'");
  if (research_build()) {
    CHECK_STREQ(refusal("LAYA_CUDA_GEGLU", "n64s9"), "LAYA_CUDA_GEGLU must be 0, 1, auto, n256s4, n128s6, n64s8, p128x128s6 or c2n256s4, got 'n64s9'");
    CHECK_STREQ(refusal("LAYA_CUDA_ATTN_L", "w4m2n64"), "LAYA_CUDA_ATTN_L must be w4m1n32b4, w4m1n64, wg1n64 or wg1n64m, got 'w4m2n64'");
    CHECK_STREQ(refusal("LAYA_CUDA_ATTN_G", "fast"), "LAYA_CUDA_ATTN_G must be w4m2n32b3, w4m2n64, wg2n64p or wg2n64m, got 'fast'");
    CHECK_STREQ(refusal("LAYA_CUDA_HEAD_FP16", "yes"), "LAYA_CUDA_HEAD_FP16 must be 0 or 1, got 'yes'");
    CHECK_STREQ(refusal("LAYA_CUDA_HEAD_ALL", "2"), "LAYA_CUDA_HEAD_ALL must be 0 or 1, got '2'");
    CHECK_STREQ(refusal("LAYA_CUDA_GEMM_TUNE", "on"), "LAYA_CUDA_GEMM_TUNE must be 0 or 1, got 'on'");
    CHECK_STREQ(refusal("LAYA_CUDA_PROFILE", "10"), "LAYA_CUDA_PROFILE must be 0 or 1, got '10'");
  }
  /* lenient rows: a value outside the values reads as unset, as documented */
  CHECK_STREQ(refusal("LAYA_CPU_AMP", "fp16"), "(accepted)");
  CHECK_STREQ(refusal("LAYA_REMOTE_TIMEOUT", "soon"), "(accepted)");

  /* one variable read on its own */
  laya_env_options_init(&o);
  setenv("LAYA_THREADS", "7", 1);
  CHECK(laya_env_options_read_one(&o, "LAYA_THREADS", &err) == 0 && o.threads == 7);
  setenv("LAYA_THREADS", "x", 1);
  CHECK(laya_env_options_read_one(&o, "LAYA_THREADS", &err) != 0 && o.threads == 7);
  laya_env_options_free(&o);
  unsetenv("LAYA_THREADS");

  /* laya_open refuses a bad variable at its boundary, before the path is looked at */
  setenv("LAYA_BACKEND", "gpu", 1);
  laya_model *m = laya_open("/nonexistent/checkpoint", NULL, &err);
  CHECK(m == NULL && err.code == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "LAYA_BACKEND must be cpu or cpu-ref, got 'gpu'");
  unsetenv("LAYA_BACKEND");
  setenv("LAYA_CUDA_GRAPHS", "no", 1); /* the CUDA rows too, on any build */
  m = laya_open("/nonexistent/checkpoint", NULL, &err);
  CHECK(m == NULL && err.code == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "LAYA_CUDA_GRAPHS must be 0 or 1, got 'no'");
  unsetenv("LAYA_CUDA_GRAPHS");
  setenv("LAYA_PRECISION", "fast", 1);
  laya_options opt;
  laya_options_init(&opt);
  opt.precision = "fp32"; /* replaces LAYA_PRECISION: the path is what fails */
  m = laya_open("/nonexistent/checkpoint", &opt, &err);
  CHECK(m == NULL && strstr(err.message, "LAYA_PRECISION") == NULL);
  clear_all();
  /* LAYA_TOURNAMENT_GROUP: a server row (0 is off, else 2 to 100), refused only when the servers
   * read it (LAYA_ENV_READ_SERVER), never by laya_open's read */
  {
    const char *good[] = {"0", "2", " 8 ", "100"};
    const long long want[] = {0, 2, 8, 100};
    for (int i = 0; i < 4; i++) {
      clear_all();
      setenv("LAYA_TOURNAMENT_GROUP", good[i], 1);
      laya_env_options t;
      laya_error terr = {0};
      CHECK(laya_env_options_read(&t, LAYA_ENV_READ_SERVER, &terr) == 0 && t.tournament_group == want[i]);
      laya_env_options_free(&t);
    }
    const char *bad[] = {"1", "101", "-2", "eight", "8.0"};
    for (int i = 0; i < 5; i++) {
      clear_all();
      setenv("LAYA_TOURNAMENT_GROUP", bad[i], 1);
      laya_env_options t;
      laya_error terr = {0};
      CHECK(laya_env_options_read(&t, 0, &terr) == 0 && t.tournament_group == 0); /* laya_open's read */
      laya_env_options_free(&t);
      CHECK(laya_env_options_read(&t, LAYA_ENV_READ_SERVER, &terr) == LAYA_ERR_VALUE);
      laya_env_options_free(&t);
      char want_msg[128];
      snprintf(want_msg, sizeof want_msg, "LAYA_TOURNAMENT_GROUP must be 0 (off) or an integer from 2 to 100, got '%s'", bad[i]);
      CHECK_STREQ(terr.message, want_msg);
    }
    unsetenv("LAYA_TOURNAMENT_GROUP");
  }
  return check_summary("core/test_options");
}
