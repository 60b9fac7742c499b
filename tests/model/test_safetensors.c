/* safetensors: valid files in F32/F16/BF16, and every header error names the file and the problem.
 * Broken files are generated here. weights_bind: shapes, missing and unexpected tensors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

static char path[] = "/tmp/laya_st_XXXXXX";

static void write_raw(const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(p, 1, n, f);
  fclose(f);
}

/* header JSON + data bytes, with a header length we may lie about */
static void write_st(const char *header, const void *data, size_t n_data, long long claimed_len) {
  size_t hl = strlen(header);
  uint64_t len = claimed_len >= 0 ? (uint64_t)claimed_len : hl;
  unsigned char *buf = malloc(8 + hl + n_data);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(len >> (8 * i));
  memcpy(buf + 8, header, hl);
  if (n_data) memcpy(buf + 8 + hl, data, n_data);
  write_raw(buf, 8 + hl + n_data);
  free(buf);
}

static int open_err(laya_error *err) {
  st_file f;
  int rc = st_open(&f, path, err);
  if (!rc) st_close(&f);
  return rc;
}

static bool has(const char *hay, const char *needle) {
  bool ok = strstr(hay, needle) != NULL;
  if (!ok) fprintf(stderr, "  message: %s\n  lacks:   %s\n", hay, needle);
  return ok;
}

int main(void) {
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  laya_error err;

  /* a valid file with the three dtypes: 1.5, -2, 0.25 in each */
  unsigned char data[12 + 6 + 6];
  float f32[3] = {1.5f, -2.0f, 0.25f};
  memcpy(data, f32, 12);
  uint16_t f16[3] = {0x3E00, 0xC000, 0x3400};
  memcpy(data + 12, f16, 6);
  uint16_t bf16[3] = {0x3FC0, 0xC000, 0x3E80};
  memcpy(data + 18, bf16, 6);
  write_st("{\"__metadata__\": {\"format\": \"pt\"}, \"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 12]},"
           " \"b\": {\"dtype\": \"F16\", \"shape\": [1, 3], \"data_offsets\": [12, 18]},"
           " \"c\": {\"dtype\": \"BF16\", \"shape\": [3, 1], \"data_offsets\": [18, 24]}}",
           data, sizeof data, -1);
  st_file f;
  CHECK(st_open(&f, path, &err) == 0);
  CHECK(f.n_tensors == 3);
  const char *names[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; i++) {
    const tensor *t = st_find(&f, names[i]);
    CHECK(t != NULL);
    if (!t) continue;
    CHECK(t->numel == 3);
    float out[3];
    tensor_to_f32(t, 0, 3, out);
    CHECK(out[0] == 1.5f && out[1] == -2.0f && out[2] == 0.25f);
  }
  CHECK(st_find(&f, "__metadata__") == NULL);
  st_close(&f);

  /* truncated: shorter than the length prefix */
  write_raw("\x10\x00\x00", 3);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, path));
  CHECK(has(err.message, "too short for the 8-byte header length"));
  /* header length past the end */
  write_st("{}", NULL, 0, 4096);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "header length is 4096 bytes but only 2 bytes follow it"));
  /* malformed JSON */
  write_st("{\"a\": {\"dtype\": ", NULL, 0, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "malformed header: invalid JSON at byte 16"));
  write_st("[1, 2]", NULL, 0, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "expected a JSON object, got list"));
  /* dtypes */
  write_st("{\"a\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", data, 8, -1);
  CHECK(open_err(&err) == LAYA_ERR_UNSUPPORTED);
  CHECK(has(err.message, "tensor 'a' has unsupported dtype 'I64'"));
  write_st("{\"a\": {\"dtype\": \"Q4\", \"shape\": [1], \"data_offsets\": [0, 4]}}", data, 4, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensor 'a' has unknown dtype 'Q4'"));
  /* offsets */
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 12]}}", data, 8, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensor 'a' has data_offsets [0, 12] outside the data area of 8 bytes"));
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 12]}}", data, 12, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensor 'a' spans 12 bytes but its F32 shape needs 8"));
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 4]}}", data, 12, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensor 'a' needs \"data_offsets\""));
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
           " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", data, 12, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensors 'a' [0, 8) and 'b' [4, 12) overlap"));
  /* an empty tensor between two overlapping ones no longer hides the overlap (issue 18) */
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
           " \"e\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [2, 2]},"
           " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", data, 12, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensors 'a' [0, 8) and 'b' [4, 12) overlap"));
  /* several empty tensors anywhere, including at the same offset as data, are fine */
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
           " \"e\": {\"dtype\": \"F32\", \"shape\": [0, 3], \"data_offsets\": [4, 4]},"
           " \"z\": {\"dtype\": \"BF16\", \"shape\": [0], \"data_offsets\": [4, 4]},"
           " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}", data, 12, -1);
  CHECK(open_err(&err) == 0);
  /* an overlap with the tensor reaching furthest, not the previous one */
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 12]},"
           " \"b\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [0, 0]},"
           " \"c\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}", data, 12, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensors 'a' [0, 12) and 'c' [8, 12) overlap"));
  /* shape products that overflow int64 (UBSan abort, then accepted as 0 bytes, before) */
  static const char *const huge[] = {"[4294967296, 4294967296]", "[4294967296, 4294967296, 0]",
                                     "[65536, 65536, 65536, 65536]", "[0, 1125899906842624]",
                                     "[9223372036854775807, 2]"};
  for (size_t i = 0; i < sizeof huge / sizeof *huge; i++) {
    char hdr[256];
    snprintf(hdr, sizeof hdr, "{\"big\": {\"dtype\": \"F32\", \"shape\": %s, \"data_offsets\": [0, 0]}}", huge[i]);
    write_st(hdr, data, 0, -1);
    CHECK(open_err(&err) == LAYA_ERR_FORMAT);
    CHECK(has(err.message, "tensor 'big' has a shape whose element count is over 2^40"));
    CHECK(has(err.message, path));
  }
  write_st("{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", data, 4, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensor 'a' has an invalid shape"));
  write_st("{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", data, 4, -1);
  CHECK(open_err(&err) == LAYA_ERR_FORMAT);
  CHECK(has(err.message, "tensor 'a' has no \"dtype\""));
  unlink(path);
  CHECK(open_err(&err) == LAYA_ERR_IO);
  CHECK(has(err.message, "cannot open"));

  /* the NaN/Inf scan: one non-finite value at every lane position of every dtype, among the
   * finite values nearest to it (largest exponents, both signs), is counted once; none of those
   * finite values alone is */
  {
    static const uint16_t bf_fin[] = {0x7f7f, 0xff7f, 0x7f00, 0x0001, 0x8000, 0x3f80, 0x7e80};
    static const uint16_t bf_bad[] = {0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81};
    static const uint16_t h_fin[] = {0x7bff, 0xfbff, 0x7800, 0x0001, 0x8000, 0x3c00};
    static const uint16_t h_bad[] = {0x7c00, 0xfc00, 0x7e00, 0x7c01};
    static const uint32_t f_fin[] = {0x7f7fffffu, 0xff7fffffu, 0x00000001u, 0x80000000u, 0x3f800000u};
    static const uint32_t f_bad[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u};
    unsigned char buf[4 * 19 + 8];
    for (int dt = 0; dt < 3; dt++) {
      const int es = dt == 0 ? 4 : 2;
      const int n_fin = dt == 0 ? 5 : dt == 1 ? 6 : 7, n_bad = dt == 0 ? 4 : dt == 1 ? 4 : 5;
      for (int n = 1; n <= 19; n++) {
        for (int f = 0; f < n_fin; f++) {
          for (int i = 0; i < n; i++) {
            if (es == 4) memcpy(buf + 4 * i, &f_fin[(f + i) % n_fin], 4);
            else memcpy(buf + 2 * i, dt == 1 ? &h_fin[(f + i) % n_fin] : &bf_fin[(f + i) % n_fin], 2);
          }
          tensor t = {.name = "t", .dtype = dt == 0 ? DT_F32 : dt == 1 ? DT_F16 : DT_BF16, .ndim = 1,
                      .numel = n, .data = buf + (n & 1)};
          memmove(buf + (n & 1), buf, (size_t)(n * es)); /* odd lengths also read unaligned */
          CHECK(st_count_nonfinite(&t) == 0);
          for (int at = 0; at < n; at++) {
            unsigned char *q = buf + (n & 1) + at * es;
            unsigned char keep[4];
            memcpy(keep, q, (size_t)es);
            int b = (at + f) % n_bad;
            if (es == 4) memcpy(q, &f_bad[b], 4);
            else memcpy(q, dt == 1 ? &h_bad[b] : &bf_bad[b], 2);
            if (st_count_nonfinite(&t) != 1) {
              fprintf(stderr, "  dtype %d n %d at %d: counted %lld\n", dt, n, at, (long long)st_count_nonfinite(&t));
              CHECK(false);
            }
            memcpy(q, keep, (size_t)es);
          }
        }
      }
    }
  }

  /* weights_bind: a tiny architecture (d=4, 1 layer, I=2, V=5, no head layers, n_act=2) */
  encoder_config enc = {.hidden = 4, .n_layers = 1, .n_heads = 1, .head_dim = 4, .intermediate = 2,
                        .vocab = 5, .global_every = 3, .local_window = 128, .global_theta = 160000,
                        .local_theta = 10000, .norm_eps = 1e-5};
  struct { const char *name; int r, c; } spec[] = {
      {"encoder.embeddings.tok_embeddings.weight", 5, 4}, {"encoder.embeddings.norm.weight", 0, 4},
      {"encoder.layers.0.attn.Wqkv.weight", 12, 4},       {"encoder.layers.0.attn.Wo.weight", 4, 4},
      {"encoder.layers.0.mlp_norm.weight", 0, 4},         {"encoder.layers.0.mlp.Wi.weight", 4, 4},
      {"encoder.layers.0.mlp.Wo.weight", 4, 2},           {"encoder.final_norm.weight", 0, 4},
      {"type_emb.weight", 3, 4},                          {"scorer.0.weight", 0, 4},
      {"scorer.0.bias", 0, 4},                            {"scorer.1.weight", 4, 4},
      {"scorer.1.bias", 0, 4},                            {"scorer.3.weight", 1, 4},
      {"scorer.3.bias", 0, 1},                            {"act_head.0.weight", 256, 8},
      {"act_head.0.bias", 0, 256},                        {"act_head.2.weight", 2, 256},
      {"act_head.2.bias", 0, 2},                          {"temperature", 0, 3}};
  const int ns = (int)(sizeof spec / sizeof *spec);
  for (int variant = 0; variant < 4; variant++) {
    char header[8192];
    size_t o = 0, off = 0;
    o += (size_t)snprintf(header + o, sizeof header - o, "{");
    for (int i = 0; i < ns; i++) {
      if (variant == 2 && i == 3) continue; /* drop attn.Wo */
      int r = spec[i].r, c = spec[i].c;
      if (variant == 1 && i == 2) c = 5; /* wrong Wqkv shape */
      size_t bytes = (size_t)(r ? r : 1) * (size_t)c * 4;
      if (r)
        o += (size_t)snprintf(header + o, sizeof header - o,
                              "%s\"%s\": {\"dtype\": \"F32\", \"shape\": [%d, %d], \"data_offsets\": [%zu, %zu]}",
                              o > 1 ? ", " : "", spec[i].name, r, c, off, off + bytes);
      else
        o += (size_t)snprintf(header + o, sizeof header - o,
                              "%s\"%s\": {\"dtype\": \"F32\", \"shape\": [%d], \"data_offsets\": [%zu, %zu]}",
                              o > 1 ? ", " : "", spec[i].name, c, off, off + bytes);
      off += bytes;
    }
    if (variant == 3)
      o += (size_t)snprintf(header + o, sizeof header - o,
                            ", \"encoder.pooler.weight\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [%zu, %zu]}",
                            off, off + 4);
    off += variant == 3 ? 4 : 0;
    snprintf(header + o, sizeof header - o, "}");
    void *zeros = calloc(1, off);
    write_st(header, zeros, off, -1);
    free(zeros);
    CHECK(st_open(&f, path, &err) == 0);
    model_weights w;
    int rc = weights_bind(&w, &f, &enc, 0, 2, &err);
    if (variant == 0) {
      CHECK(rc == 0);
      CHECK(w.layers[0].attn_norm == NULL && w.layers[0].wqkv != NULL && w.act2_b != NULL);
      CHECK(w.n_act == 2 && w.head_heads == 1);
      if (!rc) weights_free(&w);
    } else if (variant == 1) {
      CHECK(rc == LAYA_ERR_FORMAT);
      CHECK(has(err.message, path));
      CHECK(has(err.message, "tensor 'encoder.layers.0.attn.Wqkv.weight' has shape [12, 5], expected [12, 4]"));
    } else if (variant == 2) {
      CHECK(rc == LAYA_ERR_NOT_FOUND);
      CHECK(has(err.message, "missing 1 tensor: 'encoder.layers.0.attn.Wo.weight'"));
    } else {
      CHECK(rc == LAYA_ERR_FORMAT);
      CHECK(has(err.message, "1 unexpected tensor"));
      CHECK(has(err.message, "'encoder.pooler.weight'"));
    }
    st_close(&f);
  }
  unlink(path);
  /* every F16 value widens exactly: against the definition (sign, 5-bit exponent biased by 15,
   * 10-bit mantissa; exponent 0: mant * 2^-24; 31: infinity / NaN with the payload kept) */
  {
    static unsigned char halves[65536 * 2];
    static float wide[65536];
    for (uint32_t h = 0; h < 65536; h++) {
      halves[2 * h] = (unsigned char)(h & 0xff);
      halves[2 * h + 1] = (unsigned char)(h >> 8);
    }
    tensor t = {.name = "all", .dtype = DT_F16, .ndim = 1, .shape = {65536}, .numel = 65536, .data = halves};
    tensor_to_f32(&t, 0, 65536, wide);
    int wrong = 0;
    for (uint32_t h = 0; h < 65536; h++) {
      uint32_t e = (h >> 10) & 31u, mant = h & 1023u, want;
      if (e == 31) {
        want = 0x7f800000u | (mant << 13);
      } else {
        double v = e ? ldexp(1024.0 + mant, (int)e - 25) : ldexp((double)mant, -24);
        float f = (float)v; /* exact: 11 significant bits */
        memcpy(&want, &f, sizeof want);
      }
      want |= (h & 0x8000u) << 16;
      uint32_t got;
      memcpy(&got, &wide[h], sizeof got);
      if (got != want && wrong++ < 3) fprintf(stderr, "  f16 %04x -> %08x, want %08x\n", h, got, want);
    }
    CHECK(wrong == 0);
  }
  return check_summary("model/safetensors");
}
