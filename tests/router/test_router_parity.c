/* Router parity: every state of tests/fixtures/router/corpus.jsonl (decisions recorded from the
 * real laya 0.4.15 by tools/router/make_corpus.py) is routed by laya.c. The routed checkpoint
 * must agree on at least 99% of states; every disagreement is listed. Agreement of the whole
 * decision (reason and detection, byte for byte) is reported as well. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/json.h"
#include "router/router.h"

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "tests/fixtures/router/corpus.jsonl";
  /* --explain: the fixture holds route(..., explain=True) decisions, diagnostics included */
  bool explain = argc > 2 && !strcmp(argv[2], "--explain");
  size_t n;
  char *text = fs_read_file(path, &n, NULL);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  router_config plain, autot;
  router_config_init(&plain, false);
  router_config_init(&autot, false);
  autot.auto_task_detection = true;
  int total = 0, model_ok = 0, exact_ok = 0, errors_expected = 0, errors_ok = 0;
  char *line = text;
  while (line && *line) {
    char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len == 0) {
      line = nl ? nl + 1 : NULL;
      continue;
    }
    arena a;
    arena_init(&a, 1 << 16);
    laya_error err = {0};
    json_value *row = json_parse(line, len, &a, NULL, &err);
    if (!row) {
      fprintf(stderr, "bad fixture line: %s\n", err.message);
      return 1;
    }
    const json_value *req = json_get(row, "request");
    const json_value *autov = json_get(row, "auto_task_detection");
    const router_config *cfg = (autov && autov->b) ? &autot : &plain;
    strbuf out;
    sb_init(&out);
    char chosen[64] = {0};
    laya_error rerr = {0};
    int rc = router_route_ex(cfg, json_get(req, "state"), json_get(req, "questions"),
                             json_get(req, "model"), json_get(req, "task"), json_get(req, "lang"),
                             json_get(req, "lang_guess"), explain, &out, chosen, &rerr);
    total++;
    const json_value *want = json_get(row, "decision");
    const json_value *id = json_get(row, "id");
    const json_value *cat = json_get(row, "category");
    if (!want) {
      const json_value *e = json_get(row, "error");
      const json_value *msg = json_get(e, "message"), *kind = json_get(e, "kind");
      errors_expected++;
      if (rc && !strcmp(rerr.kind, kind->s) && !strcmp(rerr.message, msg->s)) {
        errors_ok++;
        model_ok++;
        exact_ok++;
      } else {
        printf("DISAGREE id=%lld (%s): want %s: %s\n  got rc=%d %s: %s\n", (long long)id->i, cat->s,
               kind->s, msg->s, rc, rerr.kind, rerr.message);
      }
    } else {
      const json_value *wm = json_get(want, "model");
      strbuf w;
      sb_init(&w);
      json_dump(&w, want, NULL);
      if (rc == 0 && !strcmp(chosen, wm->s)) {
        model_ok++;
        if (!strcmp(w.data, out.data)) exact_ok++;
        else if (getenv("ROUTER_SHOW_REASON_DIFFS"))
          printf("REASON id=%lld\n  want %s\n  got  %s\n", (long long)id->i, w.data, out.data);
      } else {
        strbuf st;
        sb_init(&st);
        json_dump(&st, json_get(req, "state"), NULL);
        printf("DISAGREE id=%lld (%s): laya=%s laya.c=%s\n  state: %.300s\n  want: %s\n  got:  %s\n",
               (long long)id->i, cat->s, wm->s, rc ? "(error)" : chosen, st.data, w.data,
               rc ? rerr.message : out.data);
        sb_free(&st);
      }
      sb_free(&w);
    }
    sb_free(&out);
    arena_free(&a);
    line = nl ? nl + 1 : NULL;
  }
  double pct = total ? 100.0 * model_ok / total : 0;
  printf("router parity%s: %d states, checkpoint agrees on %d (%.2f%%), whole decision identical on "
         "%d (%.2f%%), errors %d/%d identical\n",
         explain ? " (explain)" : "", total, model_ok, pct, exact_ok, total ? 100.0 * exact_ok / total : 0, errors_ok,
         errors_expected);
  router_config_free(&plain);
  router_config_free(&autot);
  free(text);
  return (total >= 2000 && pct >= 99.0) ? 0 : 1;
}
