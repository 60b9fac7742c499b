/* fuzz_email: the email cleaner and the email-file reader on any bytes.
 *
 * The first byte picks a budget (max_chars: the default, 0, small, negative, huge); the rest is
 * the input. It goes (1) through laya_clean_email_text as bytes (refused unless UTF-8), (2) made
 * UTF-8 (invalid bytes dropped) through email_clean, whose result must be UTF-8 and no longer than
 * the budget allows, and through laya_clean_email / laya_email_state as JSON, whose results must
 * parse, and (3) through the `laya --email` file reader (headers, MIME, transfer encodings,
 * charsets), whose state must parse as a JSON object. Nothing may crash, leak or read outside. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/email_file.h"
#include "core/arena.h"
#include "core/email.h"
#include "core/json.h"
#include "core/utf8.h"
#include "laya.h"

static const int64_t kBudgets[] = {3000, 0, 1, 7, 40, -1, -13, INT64_MAX, INT64_MIN, 100000};

static void must(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_email: %s\n", what);
    abort();
  }
}

static size_t count_cps(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

static int valid_utf8(const char *s, size_t n) { return utf8_first_invalid(s, n) < 0; }

static void parses(const char *json, json_type want) {
  arena a;
  arena_init(&a, 1 << 12);
  laya_error err;
  json_value *v = json_parse(json, strlen(json), &a, NULL, &err);
  must(v != NULL && v->type == want, "a result is not the JSON it should be");
  arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0 || size > (1 << 16)) return 0;
  int64_t budget = kBudgets[data[0] % (sizeof kBudgets / sizeof kBudgets[0])];
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  laya_error err;
  char *out = NULL;
  size_t out_n = 0;
  /* (1) raw bytes */
  int rc = laya_clean_email_text(in, n, (long long)budget, &out, &out_n, &err);
  must(rc == 0 || !valid_utf8(in, n), "UTF-8 input refused");
  laya_free(out);
  /* (2) UTF-8 */
  strbuf u;
  sb_init(&u);
  for (size_t i = 0; i < n;) {
    int k = utf8_seq_len((const unsigned char *)in + i, n - i);
    if (k && memchr(in + i, 0, (size_t)k) == NULL) sb_append(&u, in + i, (size_t)k);
    i += k ? (size_t)k : 1;
  }
  sb_cstr(&u);
  const char *text = u.data ? u.data : "";
  strbuf c;
  sb_init(&c);
  must(email_clean(text, u.len, budget, &c, &err) == 0, "email_clean failed");
  must(valid_utf8(c.data ? c.data : "", c.len), "cleaned text is not UTF-8");
  size_t cps = count_cps(c.data ? c.data : "", c.len);
  must(budget < 0 ? cps == 0 || cps < count_cps(text, u.len) : (uint64_t)cps <= (uint64_t)budget,
       "cleaned text longer than its budget");
  sb_free(&c);
  strbuf req;
  sb_init(&req);
  sb_puts(&req, "{\"subject\": ");
  size_t sn = u.len > 80 ? 80 : u.len; /* a subject: the first characters, cut at a boundary */
  while (sn > 0 && sn < u.len && ((unsigned char)text[sn] & 0xC0) == 0x80) sn--;
  json_dump_string(&req, text, sn, false);
  sb_puts(&req, ", \"body\": ");
  json_dump_string(&req, text, u.len, false);
  sb_printf(&req, ", \"max_chars\": %lld, \"sender\": \"a@b\", \"x\": null}", (long long)budget);
  if (laya_email_state(sb_cstr(&req), &out, &err) == 0) parses(out, JSON_OBJECT);
  laya_free(out);
  sb_reset(&req);
  sb_puts(&req, "{\"body\": ");
  json_dump_string(&req, text, u.len, false);
  sb_puts(&req, "}");
  must(laya_clean_email(sb_cstr(&req), &out, &err) == 0, "laya_clean_email refused a string body");
  parses(out, JSON_STRING);
  laya_free(out);
  sb_free(&req);
  sb_free(&u);
  /* (3) the email-file reader */
  arena sa;
  arena_init(&sa, 1 << 12);
  json_value state;
  if (cli_email_file_state(in, n, budget, "fuzz", &sa, &state, &err) == 0) {
    must(state.type == JSON_OBJECT && state.n >= 2, "the email-file state is not {subject, body, ...}");
    strbuf st;
    sb_init(&st);
    email_state_write(&st, &state);
    parses(sb_cstr(&st), JSON_OBJECT);
    sb_free(&st);
  }
  arena_free(&sa);
  return 0;
}
