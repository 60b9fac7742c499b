/*
 * test_rows: the sequence builder and the decoder alone, against rows recorded inside the real
 * Laya 0.4.15 (tests/fixtures/parity/<ckpt>/rows.jsonl: the ids, markers and qtype of every model
 * row, and the logits Laya's model produced for it).
 *
 * Every request of cases.jsonl runs through the engine with the backend replaced by a replay:
 * each packed row must carry exactly Laya's ids, markers and qtype (same order of forward passes
 * and rows), and gets Laya's own logits back. The decoded result must then equal Laya's result;
 * only NumPy's SIMD exp/log against libm can move a 4th decimal, and every such number is listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "core/arena.h"
#include "laya.h"
#include "model/engine.h"

typedef struct replay {
  const json_value *rows; /* array */
  uint32_t next;
  int forwards;
  int id_mismatch, marker_mismatch, qtype_mismatch, extra_rows;
  const char *case_id;
} replay;

static int replay_forward(void *ctx, const packed_batch *b, float *logits, float *act, laya_error *err) {
  replay *r = ctx;
  (void)err;
  int expected_forward = -1;
  for (int i = 0; i < b->n_rows; i++) {
    if (r->next >= r->rows->n) {
      r->extra_rows++;
      continue;
    }
    const json_value *row = &r->rows->items[r->next++];
    const json_value *ids = json_get(row, "ids"), *mk = json_get(row, "markers"), *qt = json_get(row, "qtype");
    const json_value *lg = json_get(row, "logits"), *al = json_get(row, "act_logits");
    const json_value *fw = json_get(row, "forward");
    if (expected_forward < 0) expected_forward = (int)fw->i;
    if (fw->i != expected_forward || fw->i != r->forwards) r->extra_rows++; /* batch boundaries differ */
    int len = b->row_start[i + 1] - b->row_start[i];
    bool same = (int)ids->n == len;
    for (int k = 0; same && k < len; k++) same = ids->items[k].i == b->tokens[b->row_start[i] + k];
    if (!same) {
      if (r->id_mismatch++ < 3) {
        printf("IDS %s row %u: got %d tokens, want %u\n  got: ", r->case_id, r->next - 1, len, ids->n);
        for (int k = 0; k < len && k < 40; k++) printf("%d ", b->tokens[b->row_start[i] + k]);
        printf("\n  want:");
        for (uint32_t k = 0; k < ids->n && k < 40; k++) printf(" %lld", (long long)ids->items[k].i);
        printf("\n");
      }
    }
    int nm = b->marker_start[i + 1] - b->marker_start[i];
    same = (int)mk->n == nm;
    for (int k = 0; same && k < nm; k++) same = mk->items[k].i == b->markers[b->marker_start[i] + k];
    if (!same) r->marker_mismatch++;
    if (qt->i != b->qtype[i]) r->qtype_mismatch++;
    for (int k = 0; k < nm && k < (int)lg->n; k++) logits[b->marker_start[i] + k] = (float)lg->items[k].d;
    int n_act = (int)al->n;
    for (int k = 0; k < n_act; k++) act[i * n_act + k] = (float)al->items[k].d;
  }
  r->forwards++;
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 3) {
    fprintf(stderr, "usage: %s <fixtures-dir> <ckpt>\n", argv[0]);
    return 2;
  }
  char path[4096], rpath[4096], dir[4096];
  snprintf(dir, sizeof dir, "%s/ckpt/%s", argv[1], argv[2]);
  snprintf(path, sizeof path, "%s/parity/%s/cases.jsonl", argv[1], argv[2]);
  snprintf(rpath, sizeof rpath, "%s/parity/%s/rows.jsonl", argv[1], argv[2]);
  size_t len, rlen;
  char *text = fs_read_file(path, &len, NULL), *rtext = fs_read_file(rpath, &rlen, NULL);
  if (!text || !rtext) {
    fprintf(stderr, "cannot read %s or %s\n", path, rpath);
    return 1;
  }
  arena a;
  arena_init(&a, 1 << 22);
  /* rows by case id */
  json_value **rows = NULL;
  int n_rows = 0, cap = 0;
  for (char *line = rtext; *line;) {
    char *nl = strchr(line, '\n');
    size_t l = nl ? (size_t)(nl - line) : strlen(line);
    laya_error err;
    json_value *v = l ? json_parse(line, l, &a, NULL, &err) : NULL;
    if (v) {
      if (n_rows == cap) rows = realloc(rows, sizeof *rows * (size_t)(cap = cap ? cap * 2 : 256));
      rows[n_rows++] = v;
    }
    line += l + (nl ? 1 : 0);
  }
  struct {
    char *key;
    laya_model *m;
  } models[16];
  int n_models = 0;
  int cases = 0, rows_total = 0, ids_bad = 0, markers_bad = 0, qtype_bad = 0, shape_bad = 0;
  int exact = 0, within = 0, failed = 0;
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    size_t l = nl ? (size_t)(nl - line) : strlen(line);
    char *next = line + l + (nl ? 1 : 0);
    laya_error err;
    arena ca;
    arena_init(&ca, 1 << 16);
    json_value *cs = l ? json_parse(line, l, &ca, NULL, &err) : NULL;
    line = next;
    const json_value *want = cs ? json_get(cs, "result") : NULL, *id = cs ? json_get(cs, "id") : NULL;
    const json_value *row_line = NULL;
    for (int i = 0; want && id && i < n_rows && !row_line; i++) {
      const json_value *rid = json_get(rows[i], "id");
      if (rid && strcmp(rid->s, id->s) == 0) row_line = rows[i];
    }
    if (!row_line) {
      arena_free(&ca);
      continue;
    }
    /* the model for this agent configuration */
    strbuf key;
    sb_init(&key);
    const json_value *agent = json_get(cs, "agent"), *lt = agent ? json_get(agent, "lang_temperatures") : NULL;
    if (lt && lt->type != JSON_NULL) json_dump(&key, lt, NULL);
    laya_model *m = NULL;
    for (int i = 0; i < n_models && !m; i++)
      if (strcmp(models[i].key, sb_cstr(&key)) == 0) m = models[i].m;
    if (!m) {
      laya_options o;
      laya_options_init(&o);
      o.quiet = 1;
      o.lang_temperatures_json = key.len ? sb_cstr(&key) : NULL;
      m = laya_open(dir, &o, &err);
      if (!m) {
        printf("FAIL %s: open: %s\n", id->s, err.message);
        failed++;
        sb_free(&key);
        arena_free(&ca);
        continue;
      }
      if (n_models < 16) {
        models[n_models].key = sb_steal(&key);
        models[n_models++].m = m;
      }
    }
    sb_free(&key);
    cases++;
    const json_value *api = json_get(cs, "api"), *reqtext = json_get(cs, "request");
    bool batch = strcmp(api->s, "predict_batch") == 0;
    json_value *req = json_parse(reqtext->s, reqtext->n, &ca, NULL, &err);
    engine_call c;
    const json_value *st = NULL, *qs = NULL;
    replay rp = {json_get(row_line, "rows"), 0, 0, 0, 0, 0, 0, id->s};
    rows_total += (int)rp.rows->n;
    strbuf out;
    sb_init(&out);
    int rc = engine_parse_request(req, batch, &c, &st, &qs, &err);
    json_value one = {.type = JSON_ARRAY, .n = 1, .items = (json_value *)st};
    c.forward_override = replay_forward;
    c.override_ctx = &rp;
    if (!rc) rc = engine_predict_batch(m, batch ? st : &one, qs, &c, &out, &err);
    if (rc) {
      printf("FAIL %s: %s\n", id->s, err.message);
      failed++;
    } else {
      ids_bad += rp.id_mismatch > 0;
      markers_bad += rp.marker_mismatch > 0;
      qtype_bad += rp.qtype_mismatch > 0;
      bool shape = rp.extra_rows || rp.next != rp.rows->n;
      shape_bad += shape;
      if (shape) printf("ROWS %s: %u of %u rows replayed, %d out of place\n", id->s, rp.next, rp.rows->n, rp.extra_rows);
      json_value *got = json_parse(out.data, out.len, &ca, NULL, &err);
      if (got && !batch) got = &got->items[0];
      cmp_ctx cc = {id->s, 0, 0, {0}};
      strbuf p;
      sb_init(&p);
      sb_puts(&p, "");
      if (got) cmp_value(&cc, got, want, &p, false);
      if (!got || cc.failed || rp.id_mismatch || rp.marker_mismatch || rp.qtype_mismatch || shape) {
        failed++;
        printf("FAIL %s\n%s", id->s, sb_cstr(&cc.notes));
      } else if (cc.within) {
        within++;
        printf("ALLOWANCE %s\n%s", id->s, sb_cstr(&cc.notes));
      } else {
        exact++;
      }
      sb_free(&cc.notes);
      sb_free(&p);
    }
    sb_free(&out);
    arena_free(&ca);
  }
  printf("rows %s: cases %d, rows %d; cases with different ids %d, markers %d, qtype %d, row order %d; "
         "decode of Laya's logits: exact %d, within-1e-4 %d, failed %d\n",
         argv[2], cases, rows_total, ids_bad, markers_bad, qtype_bad, shape_bad, exact, within, failed);
  for (int i = 0; i < n_models; i++) {
    laya_close(models[i].m);
    free(models[i].key);
  }
  free(rows);
  free(text);
  free(rtext);
  arena_free(&a);
  return failed || cases == 0 ? 1 : 0;
}
