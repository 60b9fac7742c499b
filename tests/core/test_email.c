/* test_email: laya_clean_email / laya_email_state against the real laya's answers.
 *
 * tests/fixtures/email/cases.jsonl is written by tools/ref/gen_email.py, which runs laya==0.4.15's
 * clean_email_body and email_state on a corpus of emails in twelve languages and on edge cases.
 * Each answer must match byte for byte (the cleaned text; the state as json.dumps writes it), and
 * each refusal must carry Laya's exception class and message. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)sz + 1);
  if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[sz] = 0, *n = (size_t)sz;
  return buf;
}

static int report(const char *id, const char *what, const char *got, size_t gn, const char *want, size_t wn) {
  fprintf(stderr, "case %s: %s\n  got:  %.*s\n  want: %.*s\n", id, what, (int)(gn > 600 ? 600 : gn), got,
          (int)(wn > 600 ? 600 : wn), want);
  return 1;
}

/* The same calls from several threads at once, on the one set of compiled patterns: every thread
 * must get every answer the single-threaded pass got. */
typedef struct {
  char **req, **want;
  int n, bad;
} thread_job;

static void *clean_all(void *p) {
  thread_job *j = p;
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < j->n; i++) {
      char *out = NULL;
      laya_error err;
      if (laya_clean_email(j->req[i], &out, &err) != 0 || strcmp(out, j->want[i]) != 0) j->bad++;
      laya_free(out);
    }
  return NULL;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "tests/fixtures/email/cases.jsonl";
  size_t n = 0;
  char *text = slurp(path, &n);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  int cases = 0, bad = 0, cleaned = 0, states = 0, refusals = 0;
  enum { KEEP = 200 };
  char *kept_req[KEEP], *kept_out[KEEP];
  int kept = 0;
  for (char *line = text, *end = text + n; line < end;) {
    char *nl = memchr(line, '\n', (size_t)(end - line));
    size_t len = (size_t)((nl ? nl : end) - line);
    if (len == 0) {
      line = nl ? nl + 1 : end;
      continue;
    }
    arena a;
    arena_init(&a, 1 << 14);
    laya_error err;
    json_value *rec = json_parse(line, len, &a, NULL, &err);
    CHECK(rec != NULL);
    if (!rec) {
      fprintf(stderr, "fixture line unreadable: %s\n", err.message);
      arena_free(&a);
      break;
    }
    const char *id = json_get(rec, "id")->s;
    const char *fn = json_get(rec, "fn")->s;
    const json_value *kwargs = json_get(rec, "kwargs");
    const json_value *expect = json_get(rec, "expect");
    const json_value *error = json_get(rec, "error");
    strbuf req;
    sb_init(&req);
    json_dump_opts o = {NULL, NULL, true, -1}; /* ASCII: lone surrogates travel as \udXXX */
    json_dump(&req, kwargs, &o);
    char *out = NULL;
    int rc = strcmp(fn, "email_state") == 0 ? laya_email_state(sb_cstr(&req), &out, &err)
                                            : laya_clean_email(sb_cstr(&req), &out, &err);
    cases++;
    int fail = 0;
    if (error) {
      refusals++;
      const char *kind = json_get(error, "kind")->s, *msg = json_get(error, "message")->s;
      if (rc == 0) fail = report(id, "answered where Laya raises", out, strlen(out), msg, strlen(msg));
      else if (strcmp(err.kind, kind) != 0) fail = report(id, "exception class", err.kind, strlen(err.kind), kind, strlen(kind));
      else if (strcmp(err.message, msg) != 0) fail = report(id, "message", err.message, strlen(err.message), msg, strlen(msg));
    } else if (rc != 0) {
      fail = report(id, "refused", err.message, strlen(err.message), "", 0);
    } else if (strcmp(fn, "email_state") == 0) {
      states++;
      if (strlen(out) != expect->n || memcmp(out, expect->s, expect->n) != 0)
        fail = report(id, "state", out, strlen(out), expect->s, expect->n);
    } else {
      cleaned++;
      json_value *got = json_parse(out, strlen(out), &a, NULL, &err);
      if (!got || got->type != JSON_STRING) fail = report(id, "not a JSON string", out, strlen(out), "", 0);
      else if (got->n != expect->n || memcmp(got->s, expect->s, expect->n) != 0)
        fail = report(id, "cleaned body", got->s, got->n, expect->s, expect->n);
    }
    CHECK(!fail);
    bad += fail;
    if (!fail && !error && strcmp(fn, "clean_email_body") == 0 && kept < KEEP && cases % 5 == 0) {
      kept_req[kept] = strdup(sb_cstr(&req));
      kept_out[kept++] = strdup(out);
    }
    laya_free(out);
    sb_free(&req);
    arena_free(&a);
    line = nl ? nl + 1 : end;
  }
  free(text);
  /* 4 threads over the kept cleaning calls */
  pthread_t th[4];
  thread_job jobs[4];
  for (int t = 0; t < 4; t++) {
    jobs[t] = (thread_job){kept_req, kept_out, kept, 0};
    CHECK(pthread_create(&th[t], NULL, clean_all, &jobs[t]) == 0);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(th[t], NULL);
    CHECK(jobs[t].bad == 0);
  }
  CHECK(kept >= 100);
  for (int i = 0; i < kept; i++) free(kept_req[i]), free(kept_out[i]);
  printf("%d cases (%d cleaned bodies, %d states, %d refusals), %d differ from laya\n", cases, cleaned, states,
         refusals, bad);
  CHECK(cases >= 700);
  /* the C entry on raw bytes gives the same text as the JSON one */
  char *raw = NULL;
  size_t raw_n = 0;
  laya_error err;
  const char body[] = "Hi\r\n\r\nPlease refund order 7.\r\n\r\nThanks,\r\nAnn\r\n\r\nOn Mon, Jan 5, 2026, Bob wrote:\r\n> x";
  CHECK(laya_clean_email_text(body, sizeof body - 1, 3000, &raw, &raw_n, &err) == 0);
  CHECK_STREQ(raw, "Hi\n\nPlease refund order 7.");
  CHECK(raw && raw_n == strlen(raw));
  laya_free(raw);
  CHECK(laya_clean_email("{\"body\": ", &raw, &err) != 0 && raw == NULL);
  CHECK(strstr(err.message, "byte") != NULL);
  return check_summary("test_email");
}
