/* A device out-of-memory on one request: the engine answers that request on the CPU (fp32, as
 * Laya demotes) and counts it. The device is simulated by a backend whose forward fails the way
 * the CUDA backend does when an allocation fails; everything else is the real engine. */
#include <math.h>
#include <stdlib.h>

#include "../check.h"
#include "backend/backend.h"
#include "core/json.h"
#include "model/engine.h"

static int oom_forward(backend *b, backend_worker *w, const packed_batch *batch, float *logits,
                       float *act, laya_error *err) {
  (void)b, (void)w, (void)batch, (void)logits, (void)act;
  return laya_err(err, LAYA_ERR_DEVICE_OOM, NULL, "CUDA error: out of memory (cudaMalloc of 1073741824 bytes)");
}

/* A device error whose text mentions memory but whose code is not the OOM code: the engine reads
 * the code, never the message, so this is not retried. */
static int says_out_of_memory(backend *b, backend_worker *w, const packed_batch *batch, float *logits,
                              float *act, laya_error *err) {
  (void)b, (void)w, (void)batch, (void)logits, (void)act;
  return laya_err(err, LAYA_ERR_DEVICE, NULL, "CUDA error: out of memory reported by a failed launch");
}

static int launch_failure(backend *b, backend_worker *w, const packed_batch *batch, float *logits,
                          float *act, laya_error *err) {
  (void)b, (void)w, (void)batch, (void)logits, (void)act;
  return laya_err(err, LAYA_ERR_DEVICE, NULL, "CUDA error: an illegal memory access was encountered");
}

static const char *REQ =
    "{\"state\": \"I was charged twice for my March invoice, please refund one.\","
    " \"questions\": {\"team\": {\"type\": \"choice\", \"instructions\": \"Who handles this?\","
    " \"criteria\": [\"billing\", \"tech\", \"sales\"]},"
    " \"urgent\": {\"type\": \"noul\", \"instructions\": \"Is this urgent?\"}}}";

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  laya_options opt;
  laya_options_init(&opt);
  opt.quiet = 1;
  laya_error err = {0};
  laya_model *m = laya_open(argv[1], &opt, &err);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s\n", err.message);
    return check_summary("test_oom_fallback");
  }
  char *want = NULL, *got = NULL;
  CHECK(laya_predict(m, REQ, &want, &err) == 0);
  CHECK(laya_cpu_fallback_count(m) == 0);

  /* Swap in the failing device; its workers come from the real backend's constructor. */
  backend fake = *m->be;
  fake.forward = oom_forward;
  backend *real = m->be;
  m->be = &fake;
  CHECK(laya_predict(m, REQ, &got, &err) == 0);
  CHECK(laya_cpu_fallback_count(m) == 1);
  char *again = NULL;
  CHECK(laya_predict(m, REQ, &again, &err) == 0);
  CHECK(laya_cpu_fallback_count(m) == 2);
  CHECK(got && again && strcmp(got, again) == 0);
  laya_free(again);

  /* Any other device error is not retried: the caller gets it, and nothing is counted. */
  fake.forward = launch_failure;
  char *none = NULL;
  laya_err_clear(&err);
  CHECK(laya_predict(m, REQ, &none, &err) != 0 && none == NULL);
  CHECK(err.code == LAYA_ERR_DEVICE && strstr(err.message, "illegal memory access") != NULL);
  CHECK(laya_cpu_fallback_count(m) == 2);
  fake.forward = says_out_of_memory;
  laya_err_clear(&err);
  CHECK(laya_predict(m, REQ, &none, &err) != 0 && none == NULL);
  CHECK(err.code == LAYA_ERR_DEVICE);
  CHECK(laya_cpu_fallback_count(m) == 2);
  /* the error says where it was made (the test's own stub here), outside its message */
  char where[256];
  laya_error_origin(&err, where, sizeof where);
  CHECK(strstr(where, "test_oom_fallback.c:") != NULL && strstr(err.message, ".c:") == NULL);
  m->be = real;

  /* The fallback answer is the fp32 CPU answer: same keys and labels, numbers within 1e-4. */
  arena a;
  arena_init(&a, 0);
  json_value *jw = want ? json_parse(want, strlen(want), &a, NULL, &err) : NULL;
  json_value *jg = got ? json_parse(got, strlen(got), &a, NULL, &err) : NULL;
  CHECK(jw && jg);
  if (jw && jg) {
    const json_value *tw = json_get(json_get(json_get(jw, "answers"), "team"), "choice");
    const json_value *tg = json_get(json_get(json_get(jg, "answers"), "team"), "choice");
    CHECK(tw && tg && strcmp(tw->s, tg->s) == 0);
    const json_value *nw = json_get(json_get(json_get(jw, "answers"), "urgent"), "noul");
    const json_value *ng = json_get(json_get(json_get(jg, "answers"), "urgent"), "noul");
    CHECK(nw && ng && fabs(nw->d - ng->d) <= 1e-4);
  }
  arena_free(&a);
  laya_free(want);
  laya_free(got);
  laya_close(m);
  return check_summary("test_oom_fallback");
}
