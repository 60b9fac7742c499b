/*
 * test_artifact.c: `laya convert` artifacts.
 *   - laya_convert of a tiny checkpoint, for each precision, reads back with its precision, files
 *     and source digests;
 *   - the "cpu" backend gives bit-identical logits from the artifact and from the checkpoint at the
 *     same precision (the packed bytes are the same);
 *   - laya_open accepts the artifact and answers exactly as the checkpoint does;
 *   - truncated, foreign and wrong-version files are refused with an error saying so;
 *   - integrity (format 2): a flipped bit in the header, the index, a packed array or a stored file,
 *     a changed head_heads (checksums recomputed, so only the config check can see it), overlapping
 *     arrays and an unknown embedding dtype are each refused with an error naming the artifact file
 *     and the field; opening needs no writable TMPDIR.
 *   test_artifact FIXTURES_DIR   (uses FIXTURES_DIR/ckpt/modernbert-tiny)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "backend/backend.h"
#include "ckpt_weights.h"
#include "core/hash64.h"
#include "core/sha256.h"
#include "laya.h"
#include "model/artifact.h"
#include "model/batch.h"

static void forward_both(const model_weights *ck, const model_weights *art, backend_precision p) {
  laya_error err;
  backend_options o = {p, 2, 0, NULL};
  backend *b1 = backend_cpu_create(ck, &o, &err);
  CHECK(b1 != NULL);
  backend *b2 = backend_cpu_create(art, &o, &err);
  CHECK(b2 != NULL);
  if (!b1 || !b2) {
    fprintf(stderr, "%s\n", err.message);
    return;
  }
  int32_t tokens[40], rs[3] = {0, 15, 40}, qt[2] = {0, 2}, ms[3] = {0, 3, 5}, mk[5] = {2, 4, 6, 1, 20};
  for (int i = 0; i < 40; i++) tokens[i] = (i * 37 + 11) % ck->enc.vocab;
  packed_batch_buf bb = {0};
  CHECK(pb_copy(&bb, &(packed_batch){2, 40, tokens, rs, qt, ms, mk, NULL}, &err) == 0);
  const packed_batch b = bb.b;
  float l1[5], l2[5], a1[4], a2[4];
  backend_worker *w1 = b1->worker_create(b1, &err), *w2 = b2->worker_create(b2, &err);
  CHECK(b1->forward(b1, w1, &b, l1, a1, &err) == 0);
  CHECK(b2->forward(b2, w2, &b, l2, a2, &err) == 0);
  CHECK(memcmp(l1, l2, sizeof l1) == 0);
  CHECK(memcmp(a1, a2, sizeof a1) == 0);
  pb_free(&bb);
  b1->worker_destroy(b1, w1);
  b2->worker_destroy(b2, w2);
  b1->destroy(b1);
  b2->destroy(b2);
}

static void expect_refused(const char *path, const char *needle) {
  laya_error err;
  artifact *a = artifact_open(path, &err);
  CHECK(a == NULL);
  if (a) artifact_close(a);
  else if (!strstr(err.message, needle)) fprintf(stderr, "unexpected error: %s\n", err.message);
  CHECK(a == NULL && strstr(err.message, needle) != NULL);
}

static int copy_prefix(const char *src, const char *dst, long n, long patch_at, const char *patch, size_t patch_len) {
  FILE *f = fopen(src, "rb"), *g = fopen(dst, "wb");
  if (!f || !g) return -1;
  char *buf = malloc((size_t)n);
  size_t got = fread(buf, 1, (size_t)n, f);
  if (patch_at >= 0) memcpy(buf + patch_at, patch, patch_len);
  fwrite(buf, 1, got, g);
  free(buf);
  fclose(f);
  fclose(g);
  return 0;
}

static unsigned char *slurp(const char *path, long *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)*n + 1);
  if (b && fread(b, 1, (size_t)*n, f) != (size_t)*n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* dst = src with the first `from` in its index replaced by `to`, the header's sizes and both
 * checksums recomputed: a consistent file whose content is wrong. 0 when `from` was found. */
static int rewrite_index(const char *src, const char *dst, const char *from, const char *to) {
  long n = 0;
  unsigned char *b = slurp(src, &n);
  if (!b) return -1;
  uint64_t io = get64(b + 16), il = get64(b + 24);
  b[n] = 0;
  char *idx = (char *)b + io, *hit = strstr(idx, from);
  if (!hit || (uint64_t)(hit - idx) >= il) {
    free(b);
    return -1;
  }
  size_t pre = (size_t)(hit - idx), fl = strlen(from), tl = strlen(to);
  size_t nl = il - fl + tl;
  unsigned char *o = malloc(io + nl);
  memcpy(o, b, io);
  memcpy(o + io, idx, pre);
  memcpy(o + io + pre, to, tl);
  memcpy(o + io + pre + tl, hit + fl, il - pre - fl);
  put64(o + 24, nl);
  put64(o + 32, io + nl);
  put64(o + 48, hash64(o + io, nl, 0));
  put64(o + 56, hash64(o, 56, 0));
  FILE *g = fopen(dst, "wb");
  fwrite(o, 1, io + nl, g);
  fclose(g);
  free(o);
  free(b);
  return 0;
}

/* The offset text of entry `name` in the index ("\"name\": [" followed by digits), into buf. */
static int entry_offset(const char *path, const char *name, char *buf, size_t cap) {
  long n = 0;
  unsigned char *b = slurp(path, &n);
  if (!b) return -1;
  b[n] = 0;
  char key[128];
  snprintf(key, sizeof key, "\"%s\": [", name);
  char *hit = strstr((char *)b + get64(b + 16), key);
  int rc = -1;
  if (hit) {
    hit += strlen(key);
    size_t l = strspn(hit, "0123456789");
    if (l && l < cap) {
      memcpy(buf, hit, l);
      buf[l] = 0;
      rc = 0;
    }
  }
  free(b);
  return rc;
}

static void expect_refused_named(const char *path, const char *needle) {
  expect_refused(path, needle);
  laya_error err;
  artifact *a = artifact_open(path, &err);
  CHECK(a == NULL && strstr(err.message, path) == err.message); /* the message starts with the file */
  if (a) artifact_close(a);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_artifact FIXTURES_DIR\n");
    return 2;
  }
  char ckdir[1024], out[1024], bad[1100];
  snprintf(ckdir, sizeof ckdir, "%s/ckpt/modernbert-tiny", argv[1]);
  snprintf(out, sizeof out, "%s/laya-test-artifact-%d.laya", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  snprintf(bad, sizeof bad, "%s.bad", out);
  laya_error err;
  ckpt_weights cw;
  CHECK(ckpt_weights_open(&cw, ckdir, &err) == 0);

  static const char *names[] = {"fp32", "bf16", "int8"};
  static const backend_precision precs[] = {PREC_FP32, PREC_BF16, PREC_INT8};
  for (int pi = 0; pi < 3; pi++) {
    laya_options o;
    laya_options_init(&o);
    o.precision = names[pi];
    o.quiet = 1;
    int rc = laya_convert(ckdir, out, &o, &err);
    if (rc) fprintf(stderr, "convert: %s\n", err.message);
    CHECK(rc == 0);
    CHECK(artifact_is_artifact(out));
    artifact *a = artifact_open(out, &err);
    CHECK(a != NULL);
    if (!a) continue;
    CHECK(artifact_precision(a) == precs[pi]);
    size_t n = 0;
    CHECK(artifact_file(a, "rl_agent_config.json", &n) != NULL && n > 0);
    CHECK(artifact_file(a, "tokenizer/tokenizer.json", &n) != NULL && n > 0);
    CHECK(artifact_file(a, "model.safetensors", &n) == NULL); /* weights are stored packed only */
    char hex[65], path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", ckdir);
    CHECK(sha256_file_hex(path, hex) == 0);
    CHECK(artifact_source_sha256(a, "model.safetensors") && !strcmp(artifact_source_sha256(a, "model.safetensors"), hex));
    model_weights aw;
    CHECK(artifact_weights(a, &aw, &err) == 0);
    CHECK(aw.enc.hidden == cw.w.enc.hidden && aw.enc.n_layers == cw.w.enc.n_layers && aw.n_act == cw.w.n_act);
    forward_both(&cw.w, &aw, precs[pi]);
    /* an artifact holds one precision: asking for another is refused, naming both */
    backend_options other = {precs[(pi + 1) % 3], 1, 0, NULL};
    CHECK(backend_cpu_create(&aw, &other, &err) == NULL);
    CHECK(strstr(err.message, names[pi]) != NULL);
    artifact_weights_free(&aw);
    artifact_close(a);

    /* laya_open on the artifact answers exactly like the checkpoint at that precision */
    const char *req = "{\"state\": {\"request\": \"charged twice please refund\"}, \"questions\": "
                      "{\"intent\": {\"type\": \"choice\", \"instructions\": \"What is it about?\", "
                      "\"criteria\": {\"refund\": \"money\", \"help\": null, \"other\": null}}}}";
    laya_model *m1 = laya_open(ckdir, &o, &err);
    CHECK(m1 != NULL);
    laya_model *m2 = laya_open(out, &o, &err);
    if (!m2) fprintf(stderr, "laya_open(artifact): %s\n", err.message);
    CHECK(m2 != NULL);
    if (m1 && m2) {
      char *r1 = NULL, *r2 = NULL;
      CHECK(laya_predict(m1, req, &r1, &err) == 0);
      CHECK(laya_predict(m2, req, &r2, &err) == 0);
      CHECK(r1 && r2 && strcmp(r1, r2) == 0);
      laya_free(r1);
      laya_free(r2);
    }
    laya_close(m1);
    laya_close(m2);
  }

  /* damaged files */
  FILE *f = fopen(out, "rb");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  copy_prefix(out, bad, size - 100, -1, NULL, 0);
  expect_refused(bad, "truncated");
  copy_prefix(out, bad, size, 0, "NOTLAYA", 8);
  expect_refused(bad, "bad magic");
  char v1[4] = {1, 0, 0, 0};
  copy_prefix(out, bad, size, 8, v1, 4);
  expect_refused(bad, "version 1, this build reads version 2");
  /* integrity: one flipped bit anywhere is refused, naming the file and what failed */
  {
    long n = 0;
    unsigned char *orig = slurp(out, &n);
    CHECK(orig != NULL);
    uint64_t io = orig ? get64(orig + 16) : 0;
    char off_data[32] = "", off_file[32] = "", off_wo[32] = "", off_qkv[32] = "";
    CHECK(entry_offset(out, "enc.0.wqkv.data", off_data, sizeof off_data) == 0);
    CHECK(entry_offset(out, "tokenizer/tokenizer.json", off_file, sizeof off_file) == 0);
    struct { long at; const char *needle; } flips[] = {
        {41, "header (bytes 0 to 56) does not match its checksum"},
        {(long)io + 20, "index (bytes"},
        {atol(off_data) + 1000, "array enc.0.wqkv.data (bytes"},
        {atol(off_file) + 10, "file tokenizer/tokenizer.json (bytes"},
    };
    for (size_t i = 0; orig && i < sizeof flips / sizeof *flips; i++) {
      char byte = (char)(orig[flips[i].at] ^ 0x10);
      copy_prefix(out, bad, size, flips[i].at, &byte, 1);
      expect_refused_named(bad, flips[i].needle);
    }
    /* consistent files with a wrong field: only the field checks can see these */
    const char *hh = orig ? strstr((const char *)orig + io, "\"head_heads\": ") : NULL;
    CHECK(hh != NULL);
    if (hh) {
      char from[64], to[64];
      int heads = atoi(hh + 14);
      snprintf(from, sizeof from, "\"head_heads\": %d", heads);
      snprintf(to, sizeof to, "\"head_heads\": %d", heads * 2);
      CHECK(rewrite_index(out, bad, from, to) == 0);
      laya_options o;
      laya_options_init(&o);
      o.quiet = 1;
      CHECK(laya_open(bad, &o, &err) == NULL);
      CHECK(strstr(err.message, bad) == err.message && strstr(err.message, "config.head_heads") != NULL);
    }
    CHECK(entry_offset(out, "enc.0.wo.data", off_wo, sizeof off_wo) == 0);
    CHECK(entry_offset(out, "enc.0.wqkv.data", off_qkv, sizeof off_qkv) == 0);
    char from[96], to[96];
    snprintf(from, sizeof from, "\"enc.0.wo.data\": [%s,", off_wo);
    snprintf(to, sizeof to, "\"enc.0.wo.data\": [%s,", off_qkv);
    CHECK(rewrite_index(out, bad, from, to) == 0);
    expect_refused_named(bad, "overlaps");
    CHECK(rewrite_index(out, bad, "\"tok_embeddings\": {\"dtype\": \"F16\"", "\"tok_embeddings\": {\"dtype\": \"Q4\"") == 0);
    expect_refused_named(bad, "tok_embeddings.dtype is 'Q4'");
    /* the GeGLU activation: one this build does not run, and one the stored encoder/config.json
     * (gelu) contradicts */
    CHECK(rewrite_index(out, bad, "\"hidden_activation\": \"gelu\"", "\"hidden_activation\": \"prelu\"") == 0);
    expect_refused_named(bad, "config.hidden_activation prelu is not an activation this build runs");
    CHECK(rewrite_index(out, bad, "\"hidden_activation\": \"gelu\"", "\"hidden_activation\": \"silu\"") == 0);
    {
      laya_options o;
      laya_options_init(&o);
      o.quiet = 1;
      CHECK(laya_open(bad, &o, &err) == NULL);
      CHECK(strstr(err.message, bad) == err.message &&
            strstr(err.message, "packed for hidden_activation \"silu\", its stored encoder/config.json says \"gelu\""));
    }
    free(orig);
  }
  /* opening writes nothing: no TMPDIR needed */
  {
    const char *old_tmp = getenv("TMPDIR");
    char *saved = old_tmp ? strdup(old_tmp) : NULL;
    setenv("TMPDIR", "/nonexistent/laya-no-tmp", 1);
    laya_options o;
    laya_options_init(&o);
    o.quiet = 1;
    laya_model *m = laya_open(out, &o, &err);
    if (!m) fprintf(stderr, "laya_open without TMPDIR: %s\n", err.message);
    CHECK(m != NULL);
    laya_close(m);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
  }
  copy_prefix(out, bad, 40, -1, NULL, 0);
  expect_refused(bad, "shorter than");
  expect_refused("/nonexistent/artifact.laya", "cannot open");
  /* a digest the artifact does not match is refused at laya_open */
  laya_options o;
  laya_options_init(&o);
  o.sha256_json = "{\"model.safetensors\": \"00\"}";
  CHECK(laya_open(out, &o, &err) == NULL);
  CHECK(strstr(err.message, "SHA-256 mismatch") != NULL);

  unlink(out);
  unlink(bad);
  ckpt_weights_close(&cw);
  return check_summary("cpu/artifact");
}
