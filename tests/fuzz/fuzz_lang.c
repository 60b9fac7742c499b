/* fuzz_lang: language and script detection (laya_detect_language, laya_detect_script) on any bytes.
 *
 * The first byte picks the mode; the rest is the input. (1) The bytes go to laya_detect_script,
 * which must refuse them exactly when they are not UTF-8 and otherwise name one of the scripts.
 * (2) Made UTF-8 (invalid bytes dropped), they are the state as a JSON string, and nested in an
 * object and a list (split at newlines into fields); (3) the raw bytes are also tried as a whole
 * request, which may be any JSON or none. Every analysis that is answered must parse as an object
 * with Laya's keys in order, fractions in [0, 1] and a profile summing to 1 (or empty for a state
 * without letters); with explain, a diagnostic with its stage.
 * Nothing may crash, leak or read outside. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "core/utf8.h"
#include "laya.h"

static const char *const kScripts[] = {"greek",   "cyrillic", "armenian", "hebrew",  "arabic",  "devanagari", "bengali",
                                       "gurmukhi", "gujarati", "oriya",   "tamil",   "telugu",  "kannada",    "malayalam",
                                       "sinhala", "thai",     "lao",      "tibetan", "myanmar", "georgian",   "ethiopic",
                                       "khmer",   "hangul",   "kana",     "han",     "other",   "latin",      "unknown"};

static void must(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_lang: %s\n", what);
    abort();
  }
}

static int known_script(const char *s) {
  for (size_t i = 0; i < sizeof kScripts / sizeof kScripts[0]; i++)
    if (!strcmp(s, kScripts[i])) return 1;
  return 0;
}

static int valid_utf8(const char *s, size_t n) { return utf8_first_invalid(s, n) < 0; }

static int fraction(const json_value *v) {
  return v && (v->type == JSON_FLOAT || v->type == JSON_INT) && v->d >= 0.0 && v->d <= 1.0;
}

/* the analysis' invariants */
static void check(const char *out, int explain) {
  arena a;
  arena_init(&a, 1 << 12);
  laya_error err;
  json_value *v = json_parse(out, strlen(out), &a, NULL, &err);
  must(v && v->type == JSON_OBJECT, "the analysis is not a JSON object");
  static const char *const keys[] = {"script", "script_profile", "language", "is_english", "language_undecided",
                                     "diacritic_rate", "non_latin_fraction", "mixed_segment", "diagnostic"};
  must(v->n == (explain ? 9u : 8u), "the analysis has the wrong number of keys");
  for (uint32_t i = 0; i < v->n; i++) must(!strcmp(v->members[i].key, keys[i]), "a key out of Laya's order");
  const json_value *s = json_get(v, "script"), *p = json_get(v, "script_profile");
  must(s->type == JSON_STRING && known_script(s->s), "an unknown script");
  must(p->type == JSON_OBJECT, "script_profile is not an object");
  double sum = 0;
  for (uint32_t i = 0; i < p->n; i++) {
    must(known_script(p->members[i].key) && fraction(&p->members[i].value), "a bad profile entry");
    sum += p->members[i].value.d;
  }
  must(p->n == 0 ? !strcmp(s->s, "unknown") : fabs(sum - 1.0) < 1e-9, "the profile does not sum to 1");
  must(json_get(v, "is_english")->type == JSON_BOOL && json_get(v, "language_undecided")->type == JSON_BOOL,
       "a verdict is not a bool");
  must(fraction(json_get(v, "diacritic_rate")) && fraction(json_get(v, "non_latin_fraction")), "a rate outside [0, 1]");
  if (explain) {
    const json_value *d = json_get(v, "diagnostic");
    must(d->type == JSON_OBJECT && json_get(d, "stage") && json_get(d, "stage")->type == JSON_STRING,
         "the diagnostic has no stage");
  }
  arena_free(&a);
}

static void analyse(const char *req) {
  for (int explain = 0; explain < 2; explain++) {
    strbuf r;
    sb_init(&r);
    sb_printf(&r, "{\"explain\": %s, \"state\": %s}", explain ? "true" : "false", req);
    char *out = NULL;
    laya_error err;
    if (laya_detect_language(sb_cstr(&r), &out, &err) == 0) check(out, explain);
    else must(out == NULL && err.message[0], "a refusal without a message");
    laya_free(out);
    sb_free(&r);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0 || size > (1 << 16)) return 0;
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  /* (1) raw bytes */
  const char *script = NULL;
  laya_error err;
  int rc = laya_detect_script(in, n, &script, &err);
  must((rc == 0) == valid_utf8(in, n), "detect_script refused UTF-8 or took bytes that are not");
  must(rc != 0 || (script && known_script(script)), "detect_script named no known script");
  /* (2) UTF-8 text as states */
  strbuf u, st;
  sb_init(&u), sb_init(&st);
  for (size_t i = 0; i < n;) {
    int k = utf8_seq_len((const unsigned char *)in + i, n - i);
    if (k) sb_append(&u, in + i, (size_t)k);
    i += k ? (size_t)k : 1;
  }
  sb_cstr(&u);
  const char *text = u.data ? u.data : "";
  json_dump_string(&st, text, u.len, false);
  analyse(sb_cstr(&st));
  if (data[0] & 1) { /* fields: one per line, in an object inside a list */
    sb_reset(&st);
    sb_puts(&st, "[{\"a\": 1");
    const char *p = text, *end = text + u.len;
    for (int f = 0; p <= end && f < 64; f++) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
      sb_printf(&st, ", \"f%d\": ", f);
      json_dump_string(&st, p, len, false);
      if (!nl) break;
      p = nl + 1;
    }
    sb_puts(&st, "}, null, 3]");
    analyse(sb_cstr(&st));
  }
  sb_free(&u), sb_free(&st);
  /* (3) the bytes as a whole request: refused or answered, never a crash */
  strbuf raw;
  sb_init(&raw);
  sb_append(&raw, in, n);
  char *out = NULL;
  if (laya_detect_language(sb_cstr(&raw), &out, &err) == 0) {
    must(out != NULL, "an answer without a result");
    arena a;
    arena_init(&a, 1 << 12);
    must(json_parse(out, strlen(out), &a, NULL, &err) != NULL, "a result that is not JSON");
    arena_free(&a);
  }
  laya_free(out);
  sb_free(&raw);
  return 0;
}
