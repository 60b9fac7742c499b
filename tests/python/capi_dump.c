/* capi_dump: the C API's own answers to a list of calls, for tests/python/test_parity.py, which
 * checks that laya_c (through json.dumps of its keyword arguments) gets exactly these.
 *
 *   capi_dump CHECKPOINT_DIR CALLS.jsonl OUT.jsonl
 *
 * A call: {"api": "predict" | "predict_batch" | "route" | "route_auto" | "route_explain" |
 * "route_explain_auto", "lang_temperatures": {...} | null, "request": "<JSON text>"}.
 * Out, one line per call: {"result": <the C API's JSON, verbatim>} or
 * {"error": {"kind": ..., "message": ...}}. Models are opened once per lang_temperatures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"

typedef struct {
  char *key;
  laya_model *m;
  laya_error err;
} slot;

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CHECKPOINT_DIR CALLS.jsonl OUT.jsonl\n", argv[0]);
    return 2;
  }
  size_t len;
  char *text = fs_read_file(argv[2], &len, NULL);
  FILE *out = fopen(argv[3], "w");
  if (!text || !out) {
    fprintf(stderr, "cannot read %s or write %s\n", argv[2], argv[3]);
    return 2;
  }
  slot slots[32];
  int n_slots = 0;
  laya_error rerr;
  laya_router *routers[2] = {laya_router_open("{}", &rerr),
                             laya_router_open("{\"auto_task_detection\": true}", &rerr)};
  if (!routers[0] || !routers[1]) {
    fprintf(stderr, "laya_router_open: %s\n", rerr.message);
    return 2;
  }
  int lineno = 0;
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    size_t l = nl ? (size_t)(nl - line) : strlen(line);
    lineno++;
    if (!l) {
      line += nl ? 1 : 0;
      continue;
    }
    arena a;
    arena_init(&a, 1 << 16);
    laya_error err;
    memset(&err, 0, sizeof err);
    json_value *call = json_parse(line, l, &a, NULL, &err);
    const json_value *api = call ? json_get(call, "api") : NULL;
    const json_value *req = call ? json_get(call, "request") : NULL;
    if (!api || api->type != JSON_STRING || !req || req->type != JSON_STRING) {
      fprintf(stderr, "%s: line %d: not a call\n", argv[2], lineno);
      return 2;
    }
    char *res = NULL;
    int rc;
    if (strncmp(api->s, "route", 5) == 0) {
      laya_router *r = routers[strstr(api->s, "auto") ? 1 : 0];
      rc = laya_route(r, req->s, &res, &err);
    } else {
      strbuf key;
      sb_init(&key);
      const json_value *lt = json_get(call, "lang_temperatures");
      if (lt && lt->type != JSON_NULL) json_dump(&key, lt, NULL);
      const char *k = sb_cstr(&key);
      slot *s = NULL;
      for (int i = 0; i < n_slots && !s; i++)
        if (strcmp(slots[i].key, k) == 0) s = &slots[i];
      if (!s && n_slots < 32) {
        s = &slots[n_slots++];
        laya_options o;
        laya_options_init(&o);
        o.quiet = 1;
        o.lang_temperatures_json = *k ? k : NULL;
        s->key = strdup(k);
        s->m = laya_open(argv[1], &o, &s->err);
      }
      sb_free(&key);
      if (!s) {
        fprintf(stderr, "too many agent configurations\n");
        return 2;
      }
      if (!s->m) {
        err = s->err;
        rc = err.code ? err.code : 1;
      } else if (strcmp(api->s, "predict") == 0) {
        rc = laya_predict(s->m, req->s, &res, &err);
      } else if (strcmp(api->s, "predict_batch") == 0) {
        rc = laya_predict_batch(s->m, req->s, &res, &err);
      } else {
        fprintf(stderr, "%s: line %d: unknown api %s\n", argv[2], lineno, api->s);
        return 2;
      }
    }
    strbuf o;
    sb_init(&o);
    if (rc == 0) {
      sb_puts(&o, "{\"result\": ");
      sb_puts(&o, res);
      sb_putc(&o, '}');
    } else {
      sb_puts(&o, "{\"error\": {\"kind\": ");
      json_dump_string(&o, err.kind, strlen(err.kind), false);
      sb_puts(&o, ", \"message\": ");
      json_dump_string(&o, err.message, strlen(err.message), false);
      sb_puts(&o, "}}");
    }
    fprintf(out, "%s\n", sb_cstr(&o));
    sb_free(&o);
    laya_free(res);
    arena_free(&a);
    line += l + (nl ? 1 : 0);
  }
  fclose(out);
  for (int i = 0; i < n_slots; i++) {
    laya_close(slots[i].m);
    free(slots[i].key);
  }
  laya_router_close(routers[0]);
  laya_router_close(routers[1]);
  free(text);
  return 0;
}
