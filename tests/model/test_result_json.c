/* The result writer (src/model/result_json.c) in its three styles, on the engine's typed results
 * for the parity fixtures' predict requests (forward: a stand-in with fixed pseudo-random logits):
 *  - laya_predict's text is the RJ_PY writing of engine_run_request's typed result;
 *  - RJ_COMPACT and RJ_INDENT2 equal json_dump of the parsed RJ_PY text with json.dumps's
 *    compact separators / indent=2 (an independent writer: the parser and json_dump), for every
 *    result whose labels render to distinct keys;
 *  - two labels rendering to one key (true and "true") are both written;
 *  - the typed answer holds the numbers the text shows (choice, probabilities, noul).
 * Usage: test_result_json <ckpt dir> <cases.jsonl> */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "laya.h"
#include "model/engine.h"
#include "model/result_json.h"
#include "model/typed.h"

static int stub_forward(struct backend *b, backend_worker *w, const packed_batch *pb, float *logits, float *act,
                        laya_error *err) {
  (void)b;
  (void)w;
  (void)err;
  uint32_t x = 88172645u;
  for (int i = 0; i < pb->marker_start[pb->n_rows]; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    logits[i] = (float)(x % 1600) / 200.0f - 4.0f;
  }
  for (int i = 0; i < pb->n_rows * 2; i++) act[i] = (float)(i % 5) * 0.5f - 1.0f;
  return 0;
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  laya_error err;
  laya_model *m = laya_open(argv[1], &o, &err);
  CHECK(m != NULL);
  FILE *f = fopen(argv[2], "rb");
  CHECK(f != NULL);
  if (!m || !f) return check_summary("model/result_json");
  CHECK(m->ck.w.n_act == 2);
  m->be->forward = stub_forward;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  int n_checked = 0, n_dup = 0;
  while ((got = getline(&line, &cap, f)) > 0) {
    arena a;
    arena_init(&a, 1 << 16);
    json_value *c = json_parse(line, (size_t)got, &a, NULL, &err);
    const json_value *api = c ? json_get(c, "api") : NULL, *rq = c ? json_get(c, "request") : NULL;
    if (!api || !rq || strcmp(api->s, "predict") || !json_get(c, "result")) {
      arena_free(&a);
      continue;
    }
    char *text = NULL;
    int rc = laya_predict(m, rq->s, &text, &err);
    json_value *req = json_parse(rq->s, rq->n, &a, NULL, &err);
    state_result *r = NULL;
    long n = 0;
    int rc2 = req ? engine_run_request(m, req, false, &a, &r, &n, &err) : -1;
    CHECK(rc == rc2);
    if (rc || rc2) {
      free(text);
      arena_free(&a);
      continue;
    }
    CHECK(n == 1);
    strbuf py, compact, indent, want;
    sb_init(&py);
    sb_init(&compact);
    sb_init(&indent);
    sb_init(&want);
    rj_write_state(&py, &RJ_PY, &r[0], NULL);
    CHECK_STREQ(sb_cstr(&py), text);
    /* distinct keys: the parsed text re-dumped must match the other styles byte for byte */
    json_value *back = json_parse(py.data, py.len, &a, NULL, &err);
    CHECK(back != NULL);
    strbuf redump;
    sb_init(&redump);
    if (back) json_dump(&redump, back, NULL);
    bool distinct = back && redump.len == py.len;
    if (!distinct) n_dup++;
    if (distinct) {
      rj_write_state(&compact, &RJ_COMPACT, &r[0], NULL);
      json_dump_opts co = {",", ":", false, -1};
      json_dump(&want, back, &co);
      CHECK_STREQ(sb_cstr(&compact), sb_cstr(&want));
      rj_write_state(&indent, &RJ_INDENT2, &r[0], NULL);
      sb_reset(&want);
      json_dump_opts io = {",", ": ", false, 2};
      json_dump(&want, back, &io);
      CHECK_STREQ(sb_cstr(&indent), sb_cstr(&want));
      /* the typed answers hold what the text shows */
      const json_value *answers = json_get(back, "answers");
      CHECK(answers && (int)answers->n == r[0].n);
      for (int j = 0; answers && j < r[0].n && j < (int)answers->n; j++) {
        const answer *an = &r[0].answers[j];
        const json_value *ja = &answers->members[j].value;
        CHECK(!strcmp(answers->members[j].key, an->q->qid));
        if (an->q->type == QT_NOUL) {
          const json_value *v = json_get(ja, "noul");
          CHECK(v && (v->d == an->noul || (v->d != v->d && an->noul != an->noul)));
        } else {
          const json_value *pr = json_get(ja, "probabilities");
          CHECK(pr && (int)pr->n == an->k);
          for (int k = 0; pr && k < an->k && k < (int)pr->n; k++) CHECK(pr->members[k].value.d == an->prob[k]);
        }
      }
      n_checked++;
    } else {
      /* labels that share a rendered key: every label still has its entry */
      CHECK(count(py.data, "\"probabilities\"") >= 1 && py.len > redump.len);
    }
    sb_free(&redump);
    sb_free(&py);
    sb_free(&compact);
    sb_free(&indent);
    sb_free(&want);
    free(text);
    arena_free(&a);
  }
  free(line);
  fclose(f);
  printf("result_json: %d results in three styles, %d with labels sharing a key\n", n_checked, n_dup);
  CHECK(n_checked > 100);
  /* true and "true" are two labels and two entries, as json.dumps writes them */
  char *out = NULL;
  CHECK(laya_predict(m,
                     "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"choice\", \"instructions\": \"pick\", "
                     "\"criteria\": [true, \"true\", \"other\"]}}}",
                     &out, &err) == 0);
  CHECK(out && count(out, "\"true\": ") == 2 && count(out, "\"other\": ") == 1);
  free(out);
  laya_close(m);
  return check_summary("model/result_json");
}
