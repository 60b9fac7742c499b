/* test_routes.c: the server's route table (http.c's ROUTES, which dispatches every request)
 * against the /openapi.json it serves (src/serve/openapi.json, compiled in as it is): the same
 * paths and methods in the same order, 401 documented exactly where the table checks the bearer,
 * a request body and 422 exactly where a route needs a model. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"

#include "check.h"
#include "serve/http.h"

#ifndef SERVE_OPENAPI
#define SERVE_OPENAPI "openapi.json"
#endif

static bool has_response(const json_value *op, const char *code) {
  const json_value *r = json_get(op, "responses");
  return r && r->type == JSON_OBJECT && json_get(r, code) != NULL;
}

int main(void) {
  size_t n;
  char *text = fs_read_file(SERVE_OPENAPI, &n, NULL);
  CHECK(text != NULL);
  if (!text) return check_summary("serve/routes");
  arena a;
  arena_init(&a, 1 << 16);
  laya_error err;
  json_value *doc = json_parse(text, n, &a, NULL, &err);
  const json_value *paths = doc ? json_get(doc, "paths") : NULL;
  CHECK(paths && paths->type == JSON_OBJECT && paths->n > 0);
  /* the operations of /openapi.json, in order */
  size_t k = 0;
  for (uint32_t i = 0; paths && i < paths->n; i++) {
    const json_value *item = &paths->members[i].value;
    for (uint32_t j = 0; item->type == JSON_OBJECT && j < item->n; j++, k++) {
      const char *path = paths->members[i].key, *m = item->members[j].key;
      const json_value *op = &item->members[j].value;
      const serve_http_route *r = serve_http_route_at(k);
      if (!r) {
        fprintf(stderr, "openapi.json documents %s %s, the route table has no route %zu\n", m, path, k);
        CHECK(r != NULL);
        continue;
      }
      char method[8] = "";
      for (size_t c = 0; m[c] && c + 1 < sizeof method; c++) method[c] = (char)toupper((unsigned char)m[c]);
      if (strcmp(r->path, path) || strcmp(r->method, method)) {
        fprintf(stderr, "route %zu: table %s %s, openapi.json %s %s\n", k, r->method, r->path, method, path);
        CHECK(false);
        continue;
      }
      bool body = json_get(op, "requestBody") != NULL;
      if (r->needs_key != has_response(op, "401"))
        fprintf(stderr, "%s %s: needs_key %d, 401 documented %d\n", method, path, r->needs_key,
                has_response(op, "401"));
      CHECK(r->needs_key == has_response(op, "401"));
      if (r->needs_model != (body && has_response(op, "422")))
        fprintf(stderr, "%s %s: needs_model %d, request body and 422 documented %d\n", method, path,
                r->needs_model, body && has_response(op, "422"));
      CHECK(r->needs_model == (body && has_response(op, "422")));
    }
  }
  for (const serve_http_route *r; (r = serve_http_route_at(k)) != NULL; k++) {
    fprintf(stderr, "the route table's %s %s is not in openapi.json\n", r->method, r->path);
    CHECK(false);
  }
  CHECK(k >= 7); /* /health, /ready, /metrics, the two decision routes, /openapi.json, /docs */
  arena_free(&a);
  free(text);
  return check_summary("serve/routes");
}
