/* Question validation (Laya 0.4.15's messages, Python %r quoting), normalisation and option
 * rendering, Python repr / str helpers, and the head budget of the sequence builder. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "core/pystr.h"
#include "model/decode.h"
#include "model/questions.h"

static arena A;

static int prep(const char *json, question **qs, int *n, laya_error *err) {
  json_value *v = json_parse(json, strlen(json), &A, NULL, err);
  if (!v) return -1;
  return questions_prepare(v, &A, qs, n, err);
}

static void bad(const char *json, const char *want) {
  question *qs;
  int n;
  laya_error err;
  int rc = prep(json, &qs, &n, &err);
  CHECK(rc == LAYA_ERR_VALUE);
  CHECK_STREQ(err.kind, "ValueError");
  CHECK_STREQ(err.message, want);
}

static void repr_is(const char *json, const char *want) {
  laya_error err;
  json_value *v = json_parse(json, strlen(json), &A, NULL, &err);
  strbuf sb;
  sb_init(&sb);
  py_repr_json(&sb, v);
  CHECK_STREQ(sb_cstr(&sb), want);
  sb_free(&sb);
}

int main(void) {
  arena_init(&A, 1 << 16);
  /* Python repr */
  repr_is("\"it's\"", "\"it's\"");
  repr_is("\"say \\\"hi\\\" it's\"", "'say \"hi\" it\\'s'");
  repr_is("\"a\\tb\\n\\u0001\\u007f\"", "'a\\tb\\n\\x01\\x7f'");
  repr_is("\"caf\\u00e9 \\u00a0 \\u200b \\ud83d\\ude00\"", "'café \\xa0 \\u200b 😀'");
  repr_is("[1, 2.50, true, null, 1e16, {\"k\": \"v\"}]", "[1, 2.5, True, None, 1e+16, {'k': 'v'}]");
  repr_is("-0.0", "-0.0");
  strbuf sb;
  sb_init(&sb);
  const char *up = "TRUE \xc4\xb0 \xce\x9f\xce\xa3 \xce\xa3";
  py_lower(&sb, up, strlen(up));
  CHECK_STREQ(sb_cstr(&sb), "true i\xcc\x87 \xce\xbf\xcf\x82 \xcf\x83");
  sb_free(&sb);
  double d;
  CHECK(py_float_from_str(" 1_000.5 ", 9, &d) && d == 1000.5);
  CHECK(!py_float_from_str("1__0", 4, &d) && !py_float_from_str("0x10", 4, &d) && !py_float_from_str("", 0, &d));
  CHECK(py_float_from_str("-Infinity", 9, &d) && d < 0 && d * 0 != 0);

  /* validation, in Laya's order and words */
  bad("{\"  \": {}}", "question id must be a non-empty string, got '  '");
  bad("{\"q\": [1]}", "question 'q': definition must be a dict, got list");
  bad("{\"q\": {\"type\": \"Choice\"}}", "question 'q': unknown type 'Choice'; use one of ['choice', 'noul', 'score']");
  bad("{\"q\": {}}", "question 'q': unknown type None; use one of ['choice', 'noul', 'score']");
  bad("{\"it's\": {\"type\": \"noul\"}}", "question \"it's\": no 'instructions'; add the text the model should answer");
  bad("{\"q\": {\"type\": \"noul\", \"instructions\": null}}",
      "question 'q': 'instructions' must not be None; add the text the model should answer");
  bad("{\"q\": {\"type\": \"noul\", \"instructions\": \" \\n\"}}",
      "question 'q': 'instructions' must not be empty; add the text the model should answer");
  bad("{\"q\": {\"type\": \"noul\", \"instructions\": {}}}",
      "question 'q': 'instructions' must not be empty; add the text the model should answer");
  bad("{\"q\": {\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": \"a\"}}",
      "question 'q': a choice question takes 'criteria' as a dict of label -> description, or a list of labels");
  bad("{\"q\": {\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": []}}",
      "question 'q': a choice question needs at least one criterion");
  bad("{\"q\": {\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": [\"a\", [1, \"b\"]]}}",
      "question 'q': choice label 1 is a list; a label is rendered as option text and used as the answer "
      "key, so it must be a scalar (a string, number or bool), got [1, 'b']");
  bad("{\"q\": {\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": [\"a\", null]}}",
      "question 'q': choice label 1 is null; a label is rendered as option text and used as the answer key, "
      "so it must be a string, number or bool -- a null label renders as the text \"None\" while its answer "
      "key is \"null\"");
  bad("{\"q\": {\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": [1, \"1\", 2, 1.0]}}",
      "question 'q': choice label 3 (1.0) repeats label 0; the labels are the answer keys, so every option "
      "needs its own (1, 1.0 and True are one key)");
  bad("{\"q\": {\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": [false, 0]}}",
      "question 'q': choice label 1 (0) repeats label 0; the labels are the answer keys, so every option "
      "needs its own (1, 1.0 and True are one key)");
  bad("{\"q\": {\"type\": \"score\", \"instructions\": \"x\", \"criteria\": {\"a\": 1}}}",
      "question 'q': a score question takes 'criteria' as a list of level descriptions, index 0 first");
  bad("{\"q\": {\"type\": \"score\", \"instructions\": \"x\", \"criteria\": [\"a\", null, null]}}",
      "question 'q': score level 1 is null; give every level a description, index 0 first");
  bad("{\"q\": {\"type\": \"noul\", \"instructions\": \"x\", \"criteria\": [\"a\"]}}",
      "question 'q': a noul question takes 'criteria' as a dict with optional 'true'/'false' descriptions, "
      "or omits it");
  bad("{\"q\": {\"type\": \"noul\", \"instructions\": \"x\", \"criteria\": {\"Yes\": 1, \"TRUE\": 2}}}",
      "question 'q': a noul question takes 'criteria' keyed only 'true'/'false' (either or both, and omitted "
      "is fine), got ['true', 'yes']. Those keys are the option texts the model reads; any other key was "
      "silently dropped and replaced with the defaults. If you want the answer worded differently, keep "
      "'criteria' keyed 'true'/'false' and set 'labels' instead.");
  bad("{\"q\": {\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": [\"a\", \"b\"], \"option_order\": [0, true]}}",
      "question 'q': 'option_order' must be a permutation of range(2) -- one slot per option, each option "
      "once -- got [0, True]");
  bad("{\"q\": {\"type\": \"noul\", \"instructions\": \"x\", \"option_order\": [1, 1]}}",
      "question 'q': 'option_order' must be a permutation of range(2) -- one slot per option, each option "
      "once -- got [1, 1]");
  bad("{\"q\": {\"type\": \"score\", \"instructions\": \"x\", \"criteria\": [\"a\"], \"labels\": null}}",
      "question 'q': 'labels' is only supported for noul questions");
  bad("{\"q\": {\"type\": \"noul\", \"instructions\": \"x\", \"labels\": {\"false\": \" A \", \"true\": \"A\"}}}",
      "question 'q': noul labels must map exactly 'false' and 'true' to distinct non-empty strings");
  bad("{\"ok\": {\"type\": \"noul\", \"instructions\": \"x\"}, \"q\": {\"type\": \"noul\", \"instructions\": \"x\", \"labels\": {\"false\": \"A\"}}}",
      "question 'q': noul labels must map exactly 'false' and 'true' to distinct non-empty strings");

  /* normalisation and option texts */
  question *qs;
  int n;
  laya_error err;
  int rc = prep("{\"c\": {\"type\": \"choice\", \"instructions\": {\"ask\": \"wer?\", \"n\": 1.50},"
                " \"criteria\": {\"billing\": \"money\", \"tech\": \"\", \"x\": null, \"y\": 0, \"z\": {\"k\": [1, false]}}},"
                " \"l\": {\"type\": \"choice\", \"instructions\": 5, \"criteria\": [true, 1e16, 2.0, \"s\", -0.0]},"
                " \"s\": {\"type\": \"score\", \"instructions\": \"x\", \"criteria\": [\"low\", 3, [\"a\"]]},"
                " \"n\": {\"type\": \"noul\", \"instructions\": \"x\", \"criteria\": {\"TRUE\": \"yes it is\", \"false\": \"\"},"
                " \"labels\": {\"false\": \" nein \", \"true\": \"ja\"}, \"option_order\": [1, 0]}}",
                &qs, &n, &err);
  CHECK(rc == 0 && n == 4);
  if (rc == 0) {
    CHECK_STREQ(qs[0].ins, "{\"ask\": \"wer?\", \"n\": 1.5}");
    CHECK(qs[0].n_opts == 5);
    CHECK_STREQ(qs[0].opt[0], "billing: money");
    CHECK_STREQ(qs[0].opt[1], "tech");
    CHECK_STREQ(qs[0].opt[2], "x");
    CHECK_STREQ(qs[0].opt[3], "y: 0");
    CHECK_STREQ(qs[0].opt[4], "z: {\"k\": [1, false]}");
    CHECK_STREQ(qs[1].ins, "5");
    CHECK_STREQ(qs[1].opt[0], "True");
    CHECK_STREQ(qs[1].opt[1], "1e+16");
    CHECK_STREQ(qs[1].opt[2], "2.0");
    CHECK_STREQ(qs[1].opt[4], "-0.0");
    strbuf k;
    sb_init(&k);
    label_json_key(&k, qs[1].label[0]);
    CHECK_STREQ(sb_cstr(&k), "true");
    sb_reset(&k);
    label_json_key(&k, qs[1].label[1]);
    CHECK_STREQ(sb_cstr(&k), "1e+16");
    sb_free(&k);
    CHECK_STREQ(qs[2].opt[0], "level 0: low");
    CHECK_STREQ(qs[2].opt[1], "level 1: 3");
    CHECK_STREQ(qs[2].opt[2], "level 2: [\"a\"]");
    CHECK_STREQ(qs[2].legend[1], "3");
    CHECK_STREQ(qs[3].opt[0], "nein: no, the statement does not hold");
    CHECK_STREQ(qs[3].opt[1], "ja: yes it is");
    CHECK(qs[3].order && qs[3].order[0] == 1 && qs[3].order[1] == 0);
  }

  /* min_confidence validation */
  conf_gate g;
  const char *bad_mc[][2] = {
      {"true", "min_confidence must be a float in [0.0, 1.0], got True"},
      {"1.5", "min_confidence must be a float in [0.0, 1.0], got 1.5"},
      {"\"0.5\"", "min_confidence must be a float in [0.0, 1.0], got '0.5'"},
      {"NaN", "min_confidence must be a float in [0.0, 1.0], got nan"},
      {"{}", "a min_confidence map must be a non-empty dict of bucket -> float, got {}"},
      {"{\"choice:7\": 0.5}", "min_confidence map keys must be a bucket like 'choice:3-5' or 'default', got 'choice:7'"},
      {"{\"default\": -1}", "min_confidence must be a float in [0.0, 1.0], got -1"},
  };
  for (size_t i = 0; i < sizeof bad_mc / sizeof *bad_mc; i++) {
    json_value *v = json_parse(bad_mc[i][0], strlen(bad_mc[i][0]), &A, NULL, &err);
    CHECK(conf_gate_parse(&g, v, &A, &err) == LAYA_ERR_VALUE);
    CHECK_STREQ(err.message, bad_mc[i][1]);
  }
  const char *mc = "{\"noul:2\": 0.7, \"default\": 1}";
  json_value *v = json_parse(mc, strlen(mc), &A, NULL, &err);
  CHECK(conf_gate_parse(&g, v, &A, &err) == 0 && g.mode == 2 && g.n == 2);

  /* NumPy pairwise summation order (sequential < 8, eight lanes up to 128, halves above) */
  float xs[300];
  for (int i = 0; i < 300; i++) xs[i] = 1.0f / (float)(i + 1);
  float seq = 0.0f;
  for (int i = 0; i < 7; i++) seq += xs[i];
  CHECK(np_pairwise_sum_f32(xs, 7) == seq);
  float lanes[8];
  for (int j = 0; j < 8; j++) lanes[j] = xs[j] + xs[8 + j];
  float want = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  want += xs[16];
  CHECK(np_pairwise_sum_f32(xs, 17) == want);
  CHECK(np_pairwise_sum_f32(xs, 300) == np_pairwise_sum_f32(xs, 144) + np_pairwise_sum_f32(xs + 144, 156));
  arena_free(&A);
  return check_summary("model/questions");
}
