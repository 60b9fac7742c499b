/* test_spec: the model's facts (model/spec.h) and the packed-batch builder (model/batch.h).
 *   - the kept rows: each row's CLS, then its markers, relative to the row;
 *   - the builder: rows, prefix sums, kept rows; pb_select / pb_copy / pb_view_rows give the rows
 *     they name with their kept rows; a reserve within the capacity keeps the buffers;
 *   - the one config check: refused configs name the rule, each backend's message starts with its
 *     own name, and the fast CPU backend adds only its kernels' limits;
 *   - packed_batch_check refuses a batch without kept rows or with a kept row outside its row. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend/backend.h"
#include "model/batch.h"
#include "model/spec.h"

/* rows: lengths 5, 3, 7; markers {1, 3}, {2}, {1, 2, 6}; qtypes 0, 2, 1 */
static const int LEN[3] = {5, 3, 7}, QT[3] = {0, 2, 1}, K[3] = {2, 1, 3};
static const int32_t MK[3][3] = {{1, 3, 0}, {2, 0, 0}, {1, 2, 6}};

static void build(packed_batch_buf *bb) {
  CHECK(pb_reserve(bb, 3, 15, 6, NULL) == 0);
  for (int r = 0; r < 3; r++) {
    pb_row row = pb_add_row(bb, QT[r], LEN[r], K[r]);
    for (int t = 0; t < LEN[r]; t++) row.tokens[t] = 100 * r + t;
    for (int k = 0; k < K[r]; k++) row.markers[k] = MK[r][k];
  }
  pb_finish(bb);
}

static void test_builder(void) {
  packed_batch_buf bb = {0};
  build(&bb);
  const packed_batch *b = &bb.b;
  CHECK(b->n_rows == 3 && b->n_tokens == 15);
  const int32_t rs[4] = {0, 5, 8, 15}, ms[4] = {0, 2, 3, 6};
  CHECK(memcmp(b->row_start, rs, sizeof rs) == 0);
  CHECK(memcmp(b->marker_start, ms, sizeof ms) == 0);
  CHECK(b->qtype[0] == 0 && b->qtype[1] == 2 && b->qtype[2] == 1);
  CHECK(b->tokens[5] == 100 && b->tokens[14] == 206);
  /* kept: row 0 at 0 (CLS, 1, 3), row 1 at 3 (CLS, 2), row 2 at 5 (CLS, 1, 2, 6) */
  CHECK(model_kept_count(b) == 9);
  const int32_t kept[9] = {0, 1, 3, 0, 2, 0, 1, 2, 6};
  CHECK(memcmp(b->kept, kept, sizeof kept) == 0);
  CHECK(model_kept_first(b, 0) == 0 && model_kept_first(b, 1) == 3 && model_kept_first(b, 2) == 5);
  int max_len = 0;
  laya_error err;
  CHECK(packed_batch_check(b, 1000, "test", &max_len, &err) == 0 && max_len == 7);

  /* rows 2 and 0, in that order */
  packed_batch_buf sel = {0};
  const int32_t pick[2] = {2, 0};
  CHECK(pb_select(&sel, b, pick, 2, &err) == 0);
  CHECK(sel.b.n_rows == 2 && sel.b.n_tokens == 12 && sel.b.qtype[0] == 1 && sel.b.qtype[1] == 0);
  CHECK(sel.b.tokens[0] == 200 && sel.b.tokens[7] == 0);
  const int32_t skept[7] = {0, 1, 2, 6, 0, 1, 3};
  CHECK(memcmp(sel.b.kept, skept, sizeof skept) == 0);
  /* a smaller batch in the same builder keeps its buffers */
  int32_t *tok = sel.tokens, *kp = sel.kept;
  const int32_t one[1] = {1};
  CHECK(pb_select(&sel, b, one, 1, &err) == 0);
  CHECK(sel.tokens == tok && sel.kept == kp && sel.b.n_rows == 1 && sel.b.kept[0] == 0 && sel.b.kept[1] == 2);

  /* pb_copy of rows given as arrays (no kept rows) */
  packed_batch_buf cp = {0};
  CHECK(pb_copy(&cp, &(packed_batch){b->n_rows, b->n_tokens, b->tokens, b->row_start, b->qtype, b->marker_start,
                                      b->markers, NULL},
                &err) == 0);
  CHECK(memcmp(cp.b.kept, kept, sizeof kept) == 0 && memcmp(cp.b.tokens, b->tokens, 15 * sizeof(int32_t)) == 0);

  /* a view of rows [1, 3): rebased offsets, shared kept rows */
  int32_t vrs[3], vms[3];
  packed_batch v = pb_view_rows(b, 1, 3, vrs, vms);
  CHECK(v.n_rows == 2 && v.n_tokens == 10 && vrs[1] == 3 && vms[1] == 1 && vms[2] == 4);
  CHECK(v.tokens[0] == 100 && v.kept == b->kept + 3 && v.kept[model_kept_first(&v, 1)] == 0);
  CHECK(packed_batch_check(&v, 1000, "test", &max_len, &err) == 0);

  /* the boundary check refuses a missing or wrong kept list */
  packed_batch bad = *b;
  bad.kept = NULL;
  CHECK(packed_batch_check(&bad, 1000, "test", &max_len, &err) == LAYA_ERR_VALUE);
  CHECK(strstr(err.message, "test: the batch has no kept rows") != NULL);
  int32_t wrong[9];
  memcpy(wrong, kept, sizeof wrong);
  wrong[4] = 3; /* row 1 has 3 tokens */
  bad.kept = wrong;
  CHECK(packed_batch_check(&bad, 1000, "test", &max_len, &err) == LAYA_ERR_VALUE);
  CHECK(strstr(err.message, "row 1 kept row 1 at position 3 is outside the row (length 3)") != NULL);

  CHECK(pb_reserve(&cp, -1, 0, 0, &err) == LAYA_ERR_VALUE);
  pb_free(&bb);
  pb_free(&sel);
  pb_free(&cp);
  CHECK(pb_bytes(&bb) == 0);
}

static model_weights good_config(void) {
  model_weights w;
  memset(&w, 0, sizeof w);
  w.enc.hidden = 64;
  w.enc.n_layers = 2;
  w.enc.n_heads = 4;
  w.enc.head_dim = 16;
  w.enc.intermediate = 96;
  w.enc.vocab = 100;
  w.enc.global_every = 3;
  w.enc.local_window = 8;
  w.enc.global_theta = 160000;
  w.enc.local_theta = 10000;
  w.enc.norm_eps = 1e-5;
  w.head_layers = 1;
  w.head_heads = 1;
  w.n_act = 2;
  return w;
}

static void expect_refused(const model_weights *w, const char *who, const char *msg, int code) {
  laya_error err;
  memset(&err, 0, sizeof err);
  CHECK(model_spec_check(w, who, &err) == code);
  char want[256];
  snprintf(want, sizeof want, "%s: %s", who, msg);
  if (strcmp(err.message, want)) fprintf(stderr, "got \"%s\", want \"%s\"\n", err.message, want);
  CHECK(strcmp(err.message, want) == 0);
}

static void test_config_check(void) {
  static const float act_data[256 * 68];
  tensor act1 = {"act_head.0.weight", DT_F32, 2, {256, 68, 0, 0}, 256 * 68, act_data};
  model_weights w = good_config();
  w.act1_w = &act1;
  laya_error err;
  CHECK(model_spec_check(&w, "x", &err) == 0);
  CHECK(model_act_hidden(&w) == 256);

  model_weights b = w;
  b.enc.hidden = 0;
  expect_refused(&b, "cpu-ref backend", "hidden_size must be positive", LAYA_ERR_CONFIG);
  b = w;
  b.enc.n_heads = 5;
  expect_refused(&b, "cpu backend", "num_attention_heads must divide hidden_size", LAYA_ERR_CONFIG);
  b = w;
  b.enc.head_dim = 15;
  expect_refused(&b, "CUDA backend", "head_dim must be hidden_size / num_attention_heads and even", LAYA_ERR_CONFIG);
  b = w;
  b.enc.norm_eps = 0;
  expect_refused(&b, "x", "norm_eps must be positive", LAYA_ERR_CONFIG);
  b = w;
  b.head_heads = 3;
  expect_refused(&b, "x", "decision-head heads must divide hidden_size", LAYA_ERR_CONFIG);
  b = w;
  b.n_act = 0;
  expect_refused(&b, "x", "n_act must be positive", LAYA_ERR_CONFIG);
  tensor act_bad = act1;
  act_bad.shape[1] = 64;
  b = w;
  b.act1_w = &act_bad;
  expect_refused(&b, "x", "act_head.0.weight must be [hidden, 68]", LAYA_ERR_FORMAT);
  b.act1_w = NULL;
  expect_refused(&b, "x", "act_head.0.weight must be [hidden, 68]", LAYA_ERR_FORMAT);

  /* the backends run it first, under their own names */
  backend_options o = {PREC_FP32, 1, 0, NULL};
  b = w;
  b.enc.vocab = 0;
  CHECK(backend_cpu_ref_create(&b, &o, &err) == NULL);
  CHECK_STREQ(err.message, "cpu-ref backend: vocab_size must be positive");
  CHECK(backend_cpu_create(&b, &o, &err) == NULL);
  CHECK_STREQ(err.message, "cpu backend: vocab_size must be positive");
  /* and the fast CPU backend adds its kernels' limits: heads of at most 256, even head heads */
  b = w;
  b.enc.hidden = 66;
  b.enc.n_heads = 6;
  b.enc.head_dim = 11;
  expect_refused(&b, "x", "head_dim must be hidden_size / num_attention_heads and even", LAYA_ERR_CONFIG);
  b = w;
  b.enc.hidden = 66;
  b.enc.n_heads = 3;
  b.enc.head_dim = 22;
  b.head_heads = 6; /* heads of 11: the model allows them, the CPU kernels do not */
  tensor act66 = act1;
  act66.shape[1] = 70;
  b.act1_w = &act66;
  CHECK(model_spec_check(&b, "x", &err) == 0);
  CHECK(backend_cpu_create(&b, &o, &err) == NULL);
  CHECK_STREQ(err.message, "cpu backend: decision-head heads must divide hidden_size into even heads of at most 256");
}

static void test_layers(void) {
  encoder_config c;
  memset(&c, 0, sizeof c);
  c.global_every = 3;
  c.local_window = 128;
  c.global_theta = 160000;
  c.local_theta = 10000;
  CHECK(model_layer_window(&c, 0) == -1 && model_layer_window(&c, 1) == 64 && model_layer_window(&c, 3) == -1);
  CHECK(model_layer_theta(&c, 0) == 160000 && model_layer_theta(&c, 2) == 10000);
  c.layer_pattern = true;
  c.global_layers[0] = 1u << 2; /* only layer 2 global */
  CHECK(model_layer_window(&c, 0) == 64 && model_layer_window(&c, 2) == -1);
}

int main(void) {
  test_builder();
  test_config_check();
  test_layers();
  return check_summary("test_spec");
}
