/* test_router_tournament: laya_router_predict_tournament against what the real laya==0.4.15
 * answered for predict_tournament over a laya.Router of the two tiny checkpoints
 * (tests/fixtures/shortlist/router_tournament.jsonl, tools/ref/gen_tournament.py): results with the
 * parity suite's rule (tests/parity/compare.h: strings, labels, keys and their order, counts exact;
 * other numbers within 1e-4), errors by kind and message. The fixture's cases route by detection,
 * model, lang, lang_guess and task, and one (a typed-decisions workflow's question ids) routes its
 * rounds and its final call to different checkpoints, as Laya's Router does call by call.
 *
 *   test_router_tournament FIXTURES */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "laya.h"
#include "parity/compare.h"

static const json_value *parse(const char *s, arena *a) {
  laya_error e;
  json_value *v = json_parse(s, strlen(s), a, NULL, &e);
  if (!v) fprintf(stderr, "parse: %s\n", e.message);
  return v;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FIXTURES\n", argv[0]);
    return 2;
  }
  setenv("LAYA_QUIET_WARNINGS", "1", 1);
  char path[1200];
  snprintf(path, sizeof path, "%s/shortlist/router_tournament.jsonl", argv[1]);
  size_t len;
  laya_error e;
  char *text = fs_read_file(path, &len, &e);
  CHECK(text != NULL);
  if (!text) {
    fprintf(stderr, "%s\n", e.message);
    return check_summary("test_router_tournament");
  }
  /* the recorded routing's repo is {CKPT}/<checkpoint>: this run's checkpoints folder, as the
   * Router below is given it */
  strbuf fx;
  sb_init(&fx);
  for (const char *p = text, *hit; *p; p = hit + 6) {
    if (!(hit = strstr(p, "{CKPT}"))) {
      sb_puts(&fx, p);
      break;
    }
    sb_append(&fx, p, (size_t)(hit - p));
    sb_printf(&fx, "%s/ckpt", argv[1]);
  }
  free(text);
  text = sb_steal(&fx);
  arena a;
  arena_init(&a, 1 << 20);
  const json_value *ls[64];
  int n = 0;
  for (char *p = text; *p && n < 64;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    if (*p) ls[n++] = parse(p, &a);
    if (!nl) break;
    p = nl + 1;
  }
  CHECK(n >= 10 && json_get(ls[0], "router"));
  /* the fixture's Router, its checkpoints under this run's fixtures folder */
  const json_value *rc_cfg = json_get(ls[0], "router"), *models = json_get(rc_cfg, "models");
  strbuf cfg;
  sb_init(&cfg);
  sb_puts(&cfg, "{\"models\": {");
  for (uint32_t i = 0; i < models->n; i++)
    sb_printf(&cfg, "%s\"%s\": \"%s/ckpt/%s\"", i ? ", " : "", models->members[i].key, argv[1],
              models->members[i].value.s);
  sb_printf(&cfg, "}, \"auto_task_detection\": %s, \"default\": \"%s\"}",
            json_get(rc_cfg, "auto_task_detection")->b ? "true" : "false", json_get(rc_cfg, "default")->s);
  laya_router *r = laya_router_open(sb_cstr(&cfg), &e);
  CHECK(r != NULL);
  if (!r) {
    fprintf(stderr, "%s\n", e.message);
    return check_summary("test_router_tournament");
  }
  int ok = 0, cases = 0, rounds = 0, elsewhere = 0;
  for (int i = 1; i < n; i++, cases++) {
    const char *id = json_get(ls[i], "id")->s;
    strbuf req;
    sb_init(&req);
    json_dump_opts o = {NULL, NULL, false, -1};
    json_dump(&req, json_get(ls[i], "request"), &o);
    const json_value *want = json_get(ls[i], "result"), *error = json_get(ls[i], "error");
    char *res = NULL;
    int rc = laya_router_predict_tournament(r, sb_cstr(&req), &res, &e);
    bool same;
    if (error) {
      same = rc != 0 && !strcmp(e.kind, json_get(error, "kind")->s) && !strcmp(e.message, json_get(error, "message")->s);
      if (!same) fprintf(stderr, "%s: rc %d, %s: %s\n", id, rc, rc ? e.kind : "", rc ? e.message : res);
    } else {
      if (rc) fprintf(stderr, "%s: %s\n", id, e.message);
      cmp_ctx c = {id, 0, 0, {0}};
      sb_init(&c.notes);
      strbuf p;
      sb_init(&p);
      if (!rc) cmp_value(&c, parse(res, &a), want, &p, false);
      same = !rc && c.failed == 0;
      if (!rc && c.failed) fprintf(stderr, "%s:\n%s", id, sb_cstr(&c.notes));
      sb_free(&c.notes);
      sb_free(&p);
      const json_value *t = json_get(want, "tournament");
      for (uint32_t j = 0; j < t->n; j++) rounds += (int)json_get(&t->members[j].value, "rounds")->i;
      elsewhere += !strcmp(json_get(json_get(want, "routing"), "model")->s, "typed-decisions");
    }
    CHECK(same);
    ok += same;
    laya_free(res);
    sb_free(&req);
  }
  printf("%d/%d router tournament cases match laya 0.4.15 (%d rounds played)\n", ok, cases, rounds);
  CHECK(ok == cases && rounds >= 8 && elsewhere == 1);
  /* not JSON, and a request that is not an object: errors, no result */
  char *res = (char *)1;
  CHECK(laya_router_predict_tournament(r, "{", &res, &e) != 0 && res == NULL);
  CHECK(laya_router_predict_tournament(r, "[1]", &res, &e) != 0 && !strcmp(e.kind, "TypeError"));
  laya_router_close(r);
  sb_free(&cfg);
  arena_free(&a);
  free(text);
  return check_summary("test_router_tournament");
}
