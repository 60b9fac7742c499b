/*
 * predict_cases.h: the "predict" requests of a parity fixture's cases.jsonl (tools/ref/ captured
 * them from the real laya package), as request JSON strings, for the CUDA tests that open a model
 * with laya_open and compare its answers.
 */
#ifndef LAYA_TEST_PREDICT_CASES_H
#define LAYA_TEST_PREDICT_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/json.h"

/* Up to max requests (malloc'd strings) into *out; returns how many, -1 when the file is unreadable. */
static inline int predict_cases_load(const char *path, char **out, int max) {
  size_t len;
  char *text = fs_read_file(path, &len, NULL);
  if (!text) return -1;
  int n = 0;
  for (char *line = text; *line && n < max;) {
    char *nl = strchr(line, '\n');
    size_t l = nl ? (size_t)(nl - line) : strlen(line);
    if (l) {
      arena a;
      arena_init(&a, 1 << 16);
      laya_error err;
      json_value *v = json_parse(line, l, &a, NULL, &err);
      const json_value *api = v ? json_get(v, "api") : NULL, *req = v ? json_get(v, "request") : NULL;
      const json_value *agent = v ? json_get(v, "agent") : NULL;
      /* plain predict cases only: no per-case agent options */
      int plain = !agent || agent->type != JSON_OBJECT || agent->n == 0 ||
                  (agent->n == 1 && json_get(agent, "lang_temperatures") &&
                   json_get(agent, "lang_temperatures")->type == JSON_NULL);
      if (api && api->type == JSON_STRING && !strcmp(api->s, "predict") && req && req->type == JSON_STRING && plain)
        out[n++] = strdup(req->s);
      arena_free(&a);
    }
    line += l + (nl ? 1 : 0);
  }
  free(text);
  return n;
}

#endif
