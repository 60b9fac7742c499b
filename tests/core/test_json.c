/* JSON reader/writer against Python json semantics. Expected strings were printed by CPython 3.11
 * (json.dumps(json.loads(x), ensure_ascii=False)) and repr/round. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "core/json.h"

static char *roundtrip(const char *in, laya_error *err) {
  arena a;
  arena_init(&a, 0);
  json_value *v = json_parse(in, strlen(in), &a, NULL, err);
  char *out = NULL;
  if (v) {
    strbuf sb;
    sb_init(&sb);
    json_dump(&sb, v, NULL);
    out = sb_steal(&sb);
  }
  arena_free(&a);
  return out;
}

static void check_rt(const char *in, const char *want) {
  laya_error err = {0};
  char *got = roundtrip(in, &err);
  CHECK_STREQ(got ? got : err.message, want);
  free(got);
}

/* The bytes json_parse keeps for a JSON string (lone surrogates as WTF-8, as Python's
 * surrogatepass encoding gives them), or the error message. */
static void check_str_bytes(const char *in, const char *want, size_t want_n) {
  arena a;
  arena_init(&a, 0);
  laya_error err = {0};
  json_value *v = json_parse(in, strlen(in), &a, NULL, &err);
  if (!v) {
    CHECK_STREQ(err.message, want);
  } else {
    CHECK(v->type == JSON_STRING && v->n == want_n && !memcmp(v->s, want, want_n));
  }
  arena_free(&a);
}

static void check_repr(double x, const char *want) {
  char buf[32];
  py_float_repr(x, buf);
  CHECK_STREQ(buf, want);
}


/* The plain definitions py_float_repr and py_round4 must agree with: the shortest p in 1..17 whose
 * correctly rounded %.{p-1}e reads back, laid out as Python's repr; and %.4f read back. */
static void ref_repr(double x, char out[64]) {
  char buf[40];
  int prec;
  for (prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
    if (strtod(buf, NULL) == x) break;
  }
  const char *p = buf;
  char *o = out;
  if (*p == '-') *o++ = *p++;
  char digits[20];
  int nd = 0;
  for (; *p != 'e'; p++)
    if (*p >= '0' && *p <= '9') digits[nd++] = *p;
  int decpt = atoi(p + 1) + 1;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      *o++ = '0';
      *o++ = '.';
      for (int k = 0; k < -decpt; k++) *o++ = '0';
      for (int k = 0; k < nd; k++) *o++ = digits[k];
    } else {
      for (int k = 0; k < decpt; k++) *o++ = k < nd ? digits[k] : '0';
      *o++ = '.';
      if (nd > decpt)
        for (int k = decpt; k < nd; k++) *o++ = digits[k];
      else
        *o++ = '0';
    }
    *o = 0;
  } else {
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      for (int k = 1; k < nd; k++) *o++ = digits[k];
    }
    sprintf(o, "e%c%02d", decpt - 1 < 0 ? '-' : '+', decpt - 1 < 0 ? 1 - decpt : decpt - 1);
  }
}

static double ref_round4(double x) {
  char buf[512];
  snprintf(buf, sizeof buf, "%.4f", x);
  return strtod(buf, NULL);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* Random doubles of every kind the writer sees: any bit pattern, float32 values (logits),
 * round4 values (probabilities), near-ties of round4, small integers and their quarters. */
static double sample(int i) {
  uint64_t u = next_u64();
  double d;
  switch (i % 6) {
    case 0: memcpy(&d, &u, 8); return d;
    case 1: {
      uint32_t b = (uint32_t)u;
      float f;
      memcpy(&f, &b, 4);
      return f;
    }
    case 2: return ((float)(u % 2000000) / 250.0f - 4000.0f);
    case 3: return ref_round4((double)(u % 100000000) / 1e7 - 5.0);
    case 4: return ((double)(int64_t)(u % 2000001) - 1000000.0 + 0.5) / 1e4; /* exact-ish ties */
    default: return (double)(int64_t)(u % 4001 - 2000) / 4.0 * (u >> 63 ? 1e-6 : 1.0);
  }
}

static void check_float_paths(void) {
  int bad_repr = 0, bad_round = 0;
  for (int i = 0; i < 300000; i++) {
    double x = sample(i);
    if (!isfinite(x) || x == 0) continue;
    char got[32], want[64];
    py_float_repr(x, got);
    ref_repr(x, want);
    if (strcmp(got, want) && bad_repr++ < 5) fprintf(stderr, "repr %a: %s != %s\n", x, got, want);
    double a = py_round4(x), b = ref_round4(x);
    if (memcmp(&a, &b, 8) && bad_round++ < 5) fprintf(stderr, "round4 %a: %a != %a\n", x, a, b);
  }
  CHECK(bad_repr == 0);
  CHECK(bad_round == 0);
  double nz = py_round4(-0.00001);
  CHECK(nz == 0 && signbit(nz));
  check_repr(nz, "-0.0");
}

/* json_has_nonfinite over a parsed document: want 1 / 0 */
static void check_nonfinite(const char *in, bool want) {
  arena a;
  arena_init(&a, 0);
  laya_error err;
  json_value *v = json_parse(in, strlen(in), &a, NULL, &err);
  CHECK(v != NULL);
  if (v) CHECK(json_has_nonfinite(v) == want);
  arena_free(&a);
}

int main(void) {
  check_nonfinite("{\"a\": [1, 2.5, {\"b\": \"NaN\"}], \"c\": 1e308}", false);
  check_nonfinite("{\"a\": [1, {\"b\": [0.5, NaN]}]}", true);
  check_nonfinite("[[[-Infinity]]]", true);
  check_nonfinite("{\"x\": 1e400}", true);
  check_rt("{\"a\":1.50}", "{\"a\": 1.5}");
  check_rt("[1e16, 1e-5, 0.0001, 1e15, 123456789.123456789, -0.0, 5e-324]",
           "[1e+16, 1e-05, 0.0001, 1000000000000000.0, 123456789.12345679, -0.0, 5e-324]");
  check_rt("[NaN, Infinity, -Infinity, 1e400]", "[NaN, Infinity, -Infinity, Infinity]");
  check_rt("12345678901234567890123", "12345678901234567890123");
  check_rt("-0", "0");
  check_rt("{\"k\": 1, \"j\": 2, \"k\": 3}", "{\"k\": 3, \"j\": 2}");
  check_rt("\"tab\\tnl\\nq\\\"bs\\\\ctl\\u0001 del\x7f /\"",
           "\"tab\\tnl\\nq\\\"bs\\\\ctl\\u0001 del\x7f /\"");
  check_rt("\"\\u00e9\\ud83d\\ude00\"", "\"\xc3\xa9\xf0\x9f\x98\x80\"");
  check_str_bytes("\"\\ud83d\\u00e9\"", "\xed\xa0\xbd\xc3\xa9", 5); /* high surrogate, then not a low one */
  check_str_bytes("\"\\ud83dx\"", "\xed\xa0\xbdx", 4);
  check_str_bytes("\"\\ude00\"", "\xed\xb8\x80", 3);
  check_str_bytes("\"\\u12G4\"", "invalid JSON at byte 1 (line 1, column 2): invalid \\u escape (expected 4 hex digits)", 0);
  check_str_bytes("\"\\u00e\"", "invalid JSON at byte 1 (line 1, column 2): truncated \\u escape", 0);
  check_rt("[]", "[]");
  check_rt("{}", "{}");
  check_rt("[true, false, null, \"\"]", "[true, false, null, \"\"]");

  laya_error err = {0};
  char *bad = roundtrip("{\"a\": [1, 2", &err);
  CHECK(bad == NULL);
  CHECK(strstr(err.message, "byte 11") != NULL);
  bad = roundtrip("[01]", &err);
  CHECK(bad == NULL);
  bad = roundtrip("\"\xff\"", &err);
  CHECK(bad == NULL && strstr(err.message, "UTF-8") != NULL);
  bad = roundtrip("[1] x", &err);
  CHECK(bad == NULL && strstr(err.message, "extra data") != NULL);

  check_repr(0.1, "0.1");
  check_repr(1.0, "1.0");
  check_repr(1e22, "1e+22");
  check_repr(1.5e-7, "1.5e-07");
  check_repr(100.0, "100.0");
  check_repr(0.3 - 0.1, "0.19999999999999998");
  check_repr(-2.5e-5, "-2.5e-05");

  CHECK(py_round4(0.03125) == 0.0312);
  CHECK(py_round4(0.00015) == 0.0001);
  CHECK(py_round4(2.675e-4) == 0.0003);
  CHECK(py_round4(0.99995) == 1.0);
  check_float_paths();
  return check_summary("test_json");
}
