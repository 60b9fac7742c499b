/* The public Router (laya_router_*): registry and config errors, route / route_batch, the LRU of
 * loaded checkpoints (max_loaded, least recently used closed first, a model in use outlives its
 * eviction), predict / predict_batch / decide / predict_long through it, and concurrent callers
 * alternating checkpoints under max_loaded = 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "laya.h"

static char cfg_json[8192];
static const char *Q = "{\"u\": {\"type\": \"noul\", \"instructions\": \"Is it urgent?\"}}";

static char *call(int (*fn)(laya_router *, const char *, char **, laya_error *), laya_router *r,
                  const char *req, laya_error *err) {
  char *out = NULL;
  if (fn(r, req, &out, err)) return NULL;
  return out;
}

static laya_router *shared;
static int thread_failures;

static void *worker(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < 6; i++) {
    char req[512];
    snprintf(req, sizeof req, "{\"state\": \"request %ld/%d\", \"questions\": %s, \"model\": \"%s\"}", id, i, Q,
             (id + i) % 2 ? "english" : "multilingual");
    laya_error err = {0};
    char *res = NULL;
    if (laya_router_predict(shared, req, &res, &err) || !strstr(res, "\"routing\"")) {
      __atomic_add_fetch(&thread_failures, 1, __ATOMIC_RELAXED);
      fprintf(stderr, "thread %ld: %s\n", id, err.message);
    }
    free(res);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const char *ck = argc > 1 ? argv[1] : "tests/fixtures/ckpt";
  laya_error err = {0};

  /* config errors */
  CHECK(laya_router_open("{\"default\": \"bogus\"}", &err) == NULL && err.code == LAYA_ERR_VALUE &&
        strstr(err.message, "unknown model 'bogus'"));
  CHECK(laya_router_open("{\"models\": {\"Bad Name\": \"x\"}}", &err) == NULL &&
        strstr(err.message, "invalid checkpoint name 'Bad Name'"));
  CHECK(laya_router_open("{\"models\": {\"auto\": \"x\"}}", &err) == NULL && strstr(err.message, "'auto' means"));
  CHECK(laya_router_open("{\"models\": {\"x\": 5}}", &err) == NULL && !strcmp(err.kind, "TypeError"));
  CHECK(laya_router_open("[1]", &err) == NULL);

  snprintf(cfg_json, sizeof cfg_json,
           "{\"models\": {\"english\": \"%s/modernbert-tiny\", \"multilingual\": \"%s/mmbert-tiny\", "
           "\"mine\": \"%s/modernbert-tiny\"}, \"max_loaded\": 1, \"default\": \"english\"}",
           ck, ck, ck);
  laya_router *r = laya_router_open(cfg_json, &err);
  CHECK(r != NULL);
  if (!r) {
    fprintf(stderr, "%s\n", err.message);
    return check_summary("router/api");
  }
  char *info = laya_router_info(r);
  CHECK_STREQ(info, "{\"loaded\": [], \"max_loaded\": 1, \"default\": \"english\"}");
  free(info);

  /* routing loads nothing; the default applies to undecided text */
  char *d = call(laya_route, r, "{\"state\": \"12345\"}", &err);
  CHECK(d && strstr(d, "\"model\": \"english\"") && strstr(d, "using default (english)"));
  free(d);
  d = call(laya_route, r, "{\"state\": \"x\", \"model\": \"MINE\"}", &err);
  CHECK(d && strstr(d, "\"model\": \"mine\"") && strstr(d, "explicit model='MINE'"));
  free(d);
  d = call(laya_route, r, "{\"state\": {\"a\": \"I was charged twice\\nMi cuenta no funciona desde ayer y necesito ayuda con el pago de la factura\"}, \"explain\": true}", &err);
  CHECK(d && strstr(d, "'es'") &&
        strstr(d, "\"diagnostic\": {\"stage\": \"whole_state\", \"reason\": \"language_evidence\", \"source\": null}}"));
  free(d);
  CHECK(call(laya_route, r, "{\"state\": null}", &err) == NULL && !strcmp(err.kind, "TypeError"));
  CHECK(call(laya_route, r, "{\"questions\": {}}", &err) == NULL &&
        !strcmp(err.message, "is missing required key 'state'"));
  d = call(laya_route_batch, r, "[{\"state\": \"Bonjour, je voudrais annuler ma commande\", \"questions\": {}}, "
                                "{\"state\": \"hi\", \"questions\": {}, \"lang\": \"de\"}]", &err);
  CHECK(d && strstr(d, "'fr'") && strstr(d, "explicit lang='de'"));
  free(d);
  CHECK(call(laya_route_batch, r, "[{\"state\": \"x\"}]", &err) == NULL &&
        !strcmp(err.message, "request 0 is missing required key 'questions'"));
  CHECK(call(laya_route_batch, r, "[{\"state\": \"x\", \"questions\": []}]", &err) == NULL &&
        !strcmp(err.message, "request 0 'questions' must be a dict, got list"));
  CHECK(call(laya_route_batch, r, "[5]", &err) == NULL && !strcmp(err.message, "request 0 must be a dict, got int"));
  CHECK(call(laya_route_batch, r, "{}", &err) == NULL &&
        !strcmp(err.message, "requests must be a sequence of request dictionaries"));
  /* NULL arguments and bad JSON are errors, never a crash; the result pointer is cleared */
  char *out = (char *)"stale";
  CHECK(laya_route(NULL, "{}", &out, &err) == LAYA_ERR_VALUE && out == NULL && strstr(err.message, "laya_route"));
  CHECK(laya_route(r, NULL, &out, &err) == LAYA_ERR_VALUE && out == NULL);
  CHECK(laya_route(r, "{}", NULL, &err) == LAYA_ERR_VALUE);
  CHECK(laya_route_batch(r, NULL, &out, &err) == LAYA_ERR_VALUE && out == NULL);
  CHECK(laya_router_predict(r, NULL, &out, &err) == LAYA_ERR_VALUE && out == NULL);
  CHECK(laya_router_predict_batch(NULL, "{}", &out, &err) == LAYA_ERR_VALUE && out == NULL);
  CHECK(laya_route(r, "{\"state\": ", &out, &err) == LAYA_ERR_FORMAT && out == NULL &&
        strstr(err.message, "byte"));
  info = laya_router_info(r);
  CHECK(strstr(info, "\"loaded\": []") != NULL);
  free(info);

  /* predict loads; max_loaded = 1 evicts the least recently used */
  char req[1024];
  snprintf(req, sizeof req, "{\"state\": \"I was charged twice\", \"questions\": %s, \"model\": \"english\"}", Q);
  char *res = call(laya_router_predict, r, req, &err);
  CHECK(res && strstr(res, "\"routing\": {\"model\": \"english\"") && strstr(res, "\"answers\""));
  free(res);
  info = laya_router_info(r);
  CHECK(strstr(info, "\"loaded\": [\"english\"]") != NULL);
  free(info);
  snprintf(req, sizeof req, "{\"state\": \"Mein Paket ist nicht angekommen, bitte helfen\", \"questions\": %s}", Q);
  res = call(laya_router_predict, r, req, &err);
  CHECK(res && strstr(res, "\"model\": \"multilingual\""));
  free(res);
  info = laya_router_info(r);
  CHECK(strstr(info, "\"loaded\": [\"multilingual\"]") != NULL);
  free(info);

  /* predict_batch: per-request routing, results in input order */
  snprintf(req, sizeof req,
           "{\"requests\": [{\"state\": \"I was charged twice\", \"questions\": %s}, "
           "{\"state\": \"Mein Paket ist nicht angekommen, bitte helfen\", \"questions\": %s}, "
           "{\"state\": \"hello\", \"questions\": %s, \"model\": \"mine\"}], \"batch_size\": 2}", Q, Q, Q);
  res = call(laya_router_predict_batch, r, req, &err);
  CHECK(res && strstr(res, "\"model\": \"english\"") && strstr(res, "\"model\": \"mine\""));
  if (res) {
    char *a = strstr(res, "\"model\": \"english\""), *b = strstr(res, "\"model\": \"multilingual\""),
         *c = strstr(res, "\"model\": \"mine\"");
    CHECK(a && b && c && a < b && b < c);
  }
  free(res);
  snprintf(req, sizeof req, "{\"requests\": [{\"state\": \"a\", \"questions\": %s}, {\"state\": \"b\"}]}", Q);
  CHECK(call(laya_router_predict_batch, r, req, &err) == NULL &&
        !strcmp(err.message, "request 1 is missing required key 'questions'"));

  /* decide and predict_long through the router carry the routing block */
  res = call(laya_router_decide, r,
             "{\"state\": \"I was charged twice\", \"schema\": {\"properties\": {\"u\": {\"type\": \"boolean\"}}}, "
             "\"model\": \"english\", \"return_details\": true}", &err);
  CHECK(res && strstr(res, "\"values\": {\"u\": ") && strstr(res, "\"routing\": {\"model\": \"english\""));
  free(res);
  snprintf(req, sizeof req, "{\"state\": \"short text\", \"questions\": %s, \"model\": \"english\"}", Q);
  res = call(laya_router_predict_long, r, req, &err);
  CHECK(res && strstr(res, "\"windows\": 1") && strstr(res, "\"routing\""));
  free(res);
  snprintf(req, sizeof req, "{\"state\": \"x\", \"questions\": %s, \"model\": \"nope\"}", Q);
  CHECK(call(laya_router_predict, r, req, &err) == NULL && strstr(err.message, "unknown model 'nope'"));
  laya_router_close(r);

  /* LAYA_SHA256_DIGESTS: a model-keyed map pins each checkpoint with its own files */
  setenv("LAYA_SHA256_DIGESTS", "{\"english\": {\"model.safetensors\": \"00\"}, \"x\": \"y\"}", 1);
  CHECK(laya_router_open(cfg_json, &err) == NULL &&
        strstr(err.message, "LAYA_SHA256_DIGESTS must be either {artifact: digest}") &&
        strstr(err.message, "['english', 'x'] mixes the two"));
  setenv("LAYA_SHA256_DIGESTS", "{\"nosuch\": {}}", 1);
  CHECK(laya_router_open(cfg_json, &err) == NULL && strstr(err.message, "unknown model 'nosuch'"));
  setenv("LAYA_SHA256_DIGESTS", "{\"en\": {\"model.safetensors\": \"0000\"}}", 1);
  r = laya_router_open(cfg_json, &err);
  CHECK(r != NULL);
  if (r) {
    snprintf(req, sizeof req, "{\"state\": \"x\", \"questions\": %s, \"model\": \"english\"}", Q);
    CHECK(call(laya_router_predict, r, req, &err) == NULL && strstr(err.message, "SHA-256 mismatch for model.safetensors"));
    snprintf(req, sizeof req, "{\"state\": \"x\", \"questions\": %s, \"model\": \"multilingual\"}", Q);
    res = call(laya_router_predict, r, req, &err); /* not named by the map: loads unverified */
    CHECK(res != NULL);
    free(res);
    laya_router_close(r);
  }
  unsetenv("LAYA_SHA256_DIGESTS");

  /* concurrent callers alternating two checkpoints with room for one */
  shared = laya_router_open(cfg_json, &err);
  pthread_t th[4];
  for (long i = 0; i < 4; i++) pthread_create(&th[i], NULL, worker, (void *)i);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK(thread_failures == 0);
  info = laya_router_info(shared);
  CHECK(strstr(info, "\"max_loaded\": 1") != NULL);
  free(info);
  laya_router_close(shared);
  return check_summary("router/api");
}
