/*
 * test_artifact_dense.c: a `laya convert` artifact's packed weights unpacked to row-major tensors
 * (backend_cpu_dense_weights, backend/cpu/cpu_artifact.c: what the CUDA backend loads an artifact through) hold exactly the
 * checkpoint's values: the fp32 artifact its fp32 values, the bf16 artifact their bf16 rounding
 * (nearest even), vectors exact; the fp32 artifact's tensors through the fp32 reference backend
 * answer bit for bit as the checkpoint's own; an int8 artifact is refused with a message naming
 * int8. And a device out-of-memory on a model opened from a bf16 artifact is answered on the CPU
 * at the artifact's precision (the engine's fallback; the device is simulated as in
 * test_oom_fallback), as the artifact's own CPU model answers. Runs on any CPU.
 *
 *   test_artifact_dense CKPT_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "laya.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "model/engine.h"

/* Every tensor of the two weight sets, pairwise (a from the checkpoint, b unpacked). */
#define PAIRS(X)                                                                  \
  X(emb_norm) X(final_norm) X(type_emb) X(scorer_norm_w) X(scorer_norm_b)         \
  X(scorer1_w) X(scorer1_b) X(scorer2_w) X(scorer2_b) X(act1_w) X(act1_b)         \
  X(act2_w) X(act2_b)

static int n_mism = 0;

/* b holds a's values (exact) or, when bf16 and a is a matrix, their bf16 rounding. */
static void same_values(const char *what, const tensor *a, const tensor *b, int want_bf16) {
  CHECK(a != NULL && b != NULL);
  if (!a || !b) return;
  CHECK(a->numel == b->numel);
  CHECK(a->ndim == b->ndim || (a->ndim <= 1 && b->ndim <= 1));
  for (int i = 0; i < a->ndim; i++) CHECK(a->shape[i] == b->shape[i]);
  const int matrix = a->ndim == 2 && a->shape[0] > 3; /* the tables [3, d] / [1, d] stay fp32 */
  const int bf = want_bf16 && matrix && b->dtype == DT_BF16;
  if (want_bf16 && matrix && strcmp(what, "scorer1_w") && strcmp(what, "act1_w")) CHECK(b->dtype == DT_BF16);
  if (!bf) CHECK(b->dtype == DT_F32);
  if (a->numel != b->numel) return;
  float *x = malloc(sizeof(float) * (size_t)a->numel), *y = malloc(sizeof(float) * (size_t)a->numel);
  tensor_to_f32(a, 0, a->numel, x);
  tensor_to_f32(b, 0, b->numel, y);
  long bad = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    float want = bf ? bf16_to_f32(f32_to_bf16_rne(x[i])) : x[i];
    if (memcmp(&want, &y[i], sizeof want) != 0) bad++;
  }
  if (bad) {
    fprintf(stderr, "%s: %ld of %lld values differ\n", what, bad, (long long)a->numel);
    n_mism++;
  }
  CHECK(bad == 0);
  free(x);
  free(y);
}

static void compare_weights(const model_weights *a, const model_weights *b, int bf16) {
  CHECK(a->enc.n_layers == b->enc.n_layers && a->head_layers == b->head_layers);
  CHECK(b->tok_embeddings == NULL || b->tok_embeddings->numel == a->tok_embeddings->numel);
#define X(f) same_values(#f, a->f, b->f, bf16);
  PAIRS(X)
#undef X
  for (int i = 0; i < a->enc.n_layers; i++) {
    if (i > 0) same_values("attn_norm", a->layers[i].attn_norm, b->layers[i].attn_norm, bf16);
    same_values("mlp_norm", a->layers[i].mlp_norm, b->layers[i].mlp_norm, bf16);
    same_values("wqkv", a->layers[i].wqkv, b->layers[i].wqkv, bf16);
    same_values("wo", a->layers[i].wo, b->layers[i].wo, bf16);
    same_values("wi", a->layers[i].wi, b->layers[i].wi, bf16);
    same_values("wo_mlp", a->layers[i].wo_mlp, b->layers[i].wo_mlp, bf16);
  }
  for (int j = 0; j < a->head_layers; j++) {
    const head_layer_weights *p = &a->head[j], *q = &b->head[j];
    same_values("norm1_w", p->norm1_w, q->norm1_w, bf16);
    same_values("norm1_b", p->norm1_b, q->norm1_b, bf16);
    same_values("norm2_w", p->norm2_w, q->norm2_w, bf16);
    same_values("norm2_b", p->norm2_b, q->norm2_b, bf16);
    same_values("in_proj_w", p->in_proj_w, q->in_proj_w, bf16);
    same_values("in_proj_b", p->in_proj_b, q->in_proj_b, bf16);
    same_values("out_proj_w", p->out_proj_w, q->out_proj_w, bf16);
    same_values("out_proj_b", p->out_proj_b, q->out_proj_b, bf16);
    same_values("linear1_w", p->linear1_w, q->linear1_w, bf16);
    same_values("linear1_b", p->linear1_b, q->linear1_b, bf16);
    same_values("linear2_w", p->linear2_w, q->linear2_w, bf16);
    same_values("linear2_b", p->linear2_b, q->linear2_b, bf16);
  }
}

/* Two rows of the checkpoint's vocabulary through cpu-ref: logits and act logits. */
static int forward_ref(const model_weights *w, float *logits, float *act) {
  laya_error err;
  backend_options o = {PREC_FP32, 1, 0, NULL};
  backend *b = backend_cpu_ref_create(w, &o, &err);
  if (!b) {
    fprintf(stderr, "cpu-ref: %s\n", err.message);
    return -1;
  }
  backend_worker *wk = b->worker_create(b, &err);
  enum { T0 = 40, T1 = 23 };
  int32_t tok[T0 + T1], rs[3] = {0, T0, T0 + T1}, qt[2] = {0, 2}, ms[3] = {0, 3, 5}, mk[5] = {2, 9, 17, 1, 6};
  for (int i = 0; i < T0 + T1; i++) tok[i] = (i * 37 + 11) % w->enc.vocab;
  packed_batch_buf pb = {0};
  int rc = wk ? pb_copy(&pb, &(packed_batch){2, T0 + T1, tok, rs, qt, ms, mk, NULL}, &err) : -1;
  if (!rc) rc = b->forward(b, wk, &pb.b, logits, act, &err);
  pb_free(&pb);
  if (rc) fprintf(stderr, "cpu-ref forward: %s\n", err.message);
  if (wk) b->worker_destroy(b, wk);
  b->destroy(b);
  return rc;
}

static int oom_forward(backend *b, backend_worker *w, const packed_batch *batch, float *logits, float *act,
                       laya_error *err) {
  (void)b, (void)w, (void)batch, (void)logits, (void)act;
  return laya_err(err, LAYA_ERR_DEVICE_OOM, NULL, "CUDA out of memory on device 0 (simulated)");
}

static void oom_fallback_from_artifact(const char *path) {
  static const char req[] =
      "{\"state\": \"I was charged twice for my March invoice, please refund one.\", \"questions\": "
      "{\"team\": {\"type\": \"choice\", \"instructions\": \"Who handles this?\", \"criteria\": "
      "[\"billing\", \"tech\", \"sales\"]}, \"urgent\": {\"type\": \"noul\", \"instructions\": \"Is this urgent?\"}}}";
  laya_options opt;
  laya_options_init(&opt);
  opt.quiet = 1;
  opt.device = "cpu";
  laya_error err;
  laya_model *m = laya_open(path, &opt, &err);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "open %s: %s\n", path, err.message);
    return;
  }
  char *want = NULL, *got = NULL;
  CHECK(laya_predict(m, req, &want, &err) == 0);
  backend fake = *m->be, *real = m->be;
  fake.forward = oom_forward;
  m->be = &fake;
  int rc = laya_predict(m, req, &got, &err);
  if (rc) fprintf(stderr, "fallback: %s\n", err.message);
  CHECK(rc == 0);
  CHECK(laya_cpu_fallback_count(m) == 1);
  m->be = real;
  CHECK_STREQ(got, want); /* the same cpu backend at the same precision */
  laya_free(want);
  laya_free(got);
  laya_close(m);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CKPT_DIR\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  char tmp[] = "/tmp/laya-dense-XXXXXX";
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  laya_error err;
  strbuf warn;
  sb_init(&warn);
  checkpoint ck;
  if (checkpoint_open(&ck, dir, NULL, &warn, &err)) {
    fprintf(stderr, "%s: %s\n", dir, err.message);
    return 1;
  }
  const int n_act = ck.w.n_act;
  float ref_lg[5], ref_ac[2 * 8];
  CHECK(n_act <= 8);
  CHECK(forward_ref(&ck.w, ref_lg, ref_ac) == 0);

  static const char *precs[3] = {"fp32", "bf16", "int8"};
  for (int p = 0; p < 3; p++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/model-%s.laya", tmp, precs[p]);
    laya_options opt;
    laya_options_init(&opt);
    opt.precision = precs[p];
    opt.quiet = 1;
    int rc = laya_convert(dir, path, &opt, &err);
    CHECK(rc == 0);
    if (rc) {
      fprintf(stderr, "convert %s: %s\n", precs[p], err.message);
      continue;
    }
    checkpoint ca;
    rc = checkpoint_open(&ca, path, NULL, &warn, &err);
    CHECK(rc == 0 && ca.w.packed != NULL);
    if (rc) {
      fprintf(stderr, "open %s: %s\n", path, err.message);
      unlink(path);
      continue;
    }
    dense_weights dw;
    rc = backend_cpu_dense_weights(&ca.w, &dw, "test", &err);
    if (p == 2) { /* int8: refused, naming it */
      CHECK(rc == LAYA_ERR_UNSUPPORTED);
      CHECK(strstr(err.message, "int8") != NULL);
      printf("int8 artifact refused: %s\n", err.message);
      if (!rc) backend_cpu_dense_free(&dw);
    } else {
      CHECK(rc == 0);
      if (!rc) {
        compare_weights(&ck.w, &dw.w, p == 1);
        CHECK(dw.w.tok_embeddings == ca.w.tok_embeddings);
        if (p == 0) { /* exact weights: cpu-ref answers bit for bit as from the checkpoint */
          float lg[5], ac[2 * 8];
          CHECK(forward_ref(&dw.w, lg, ac) == 0);
          CHECK(memcmp(lg, ref_lg, sizeof lg) == 0);
          CHECK(memcmp(ac, ref_ac, sizeof(float) * 2 * (size_t)n_act) == 0);
        }
        backend_cpu_dense_free(&dw);
        if (p == 1) oom_fallback_from_artifact(path);
      } else {
        fprintf(stderr, "unpack %s: %s\n", precs[p], err.message);
      }
    }
    checkpoint_close(&ca);
    unlink(path);
  }
  rmdir(tmp);
  checkpoint_close(&ck);
  sb_free(&warn);
  return check_summary("test_artifact_dense");
}
