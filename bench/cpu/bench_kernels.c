/*
 * bench_kernels.c: single-thread GEMM and attention throughput of each kernel table, timed in
 * thread CPU time (CLOCK_THREAD_CPUTIME_ID) so that a busy shared machine distorts it less.
 *   bench_kernels [M N K ...]   (default: ModernBERT-large shapes at 128 and 512 tokens)
 * An N written with a trailing g (5248g) is a GeGLU weight (N = 2I). BENCH_AVX2=1 adds the AVX2
 * table, BENCH_AVX2=only runs it alone; BENCH_REPS=N takes the best of N GEMM runs (3); BENCH_FMT=fp32|bf16|int8 runs one weight format; a line
 * also gives the share of BENCH_PEAK GFLOP/s (bench/cpu/peak: the zmm FMA rate, or the ymm one for
 * the AVX2 table) when set as AVX512_PEAK,AVX2_PEAK. Split-precision fp32 GEMMs run on parts split
 * once as the backend gives them (BENCH_SPLIT=own: the kernel splits for itself; BENCH_WBITS=11 | 8:
 * float16 | bfloat16 weights, see row_fn); BENCH_COLD=MB evicts the caches before each GEMM (evict_caches); BENCH_EMU=1 adds
 * the amx-emu table's (emulated tiles, for checking this program where there is no AMX).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_amx.h"

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct src {
  int k;
} src;
/* BENCH_WBITS=11 / 8: weights rounded to float16's / bfloat16's significand (Laya's checkpoints
 * store float16), which the split-precision GEMMs multiply with fewer parts (packed_matrix.split_parts) */
static void row_fn(void *ctx, int r, float *out) {
  src *s = ctx;
  const char *wb = getenv("BENCH_WBITS");
  int bits = wb ? atoi(wb) : 0;
  for (int i = 0; i < s->k; i++) {
    out[i] = (float)((r * 31 + i * 17) % 97 - 48) / 97.0f;
    if (bits > 0 && bits < 24 && out[i] != 0) {
      int ex;
      float m = frexpf(out[i], &ex);
      out[i] = ldexpf(rintf(ldexpf(m, bits)), ex - bits);
    }
  }
}

static double peak_of(const cpu_kernels *kt) {
  const char *p = getenv("BENCH_PEAK");
  if (!p) return 0;
  double a = atof(p), b = 0;
  const char *c = strchr(p, ',');
  if (c) b = atof(c + 1);
  return strcmp(kt->name, "avx2") ? a : b;
}

/* BENCH_COLD=MB: before each timed GEMM, write a buffer of that many MiB (more than the last-level
 * cache), so its weights come from memory as in a forward, where a layer's weights have left the
 * caches since the last pass (the hot default times a GEMM whose operands the previous rep left in
 * cache). */
static void evict_caches(void) {
  static char *buf;
  static size_t n;
  static int pass;
  const char *c = getenv("BENCH_COLD");
  if (!c || atoi(c) <= 0) return;
  if (!buf) {
    n = (size_t)atoi(c) << 20;
    buf = malloc(n);
    if (!buf) return;
  }
  memset(buf, 1 + (pass++ & 0x7f), n); /* a different byte each time, so no pass is a no-op */
}

static void bench_gemm(const cpu_kernels *kt, cpu_wfmt fmt, int M, int N, int K, int geglu) {
  const char *only = getenv("BENCH_FMT");
  if (only && strcmp(only, fmt == WF_F32 ? "fp32" : fmt == WF_BF16 ? "bf16" : "int8")) return;
  int kp = pack_kpad(K), np = pack_panels(N, geglu);
  void *data = aligned_alloc(64, (pack_data_bytes(fmt, N, K, geglu) + 63) & ~(size_t)63);
  float *scale = malloc(4 * np * CPU_NR), *row = malloc(4 * K);
  int32_t *colsum = malloc(4 * np * CPU_NR);
  src s = {K};
  pack_matrix(fmt, N, K, geglu, row_fn, &s, data, scale, colsum, row);
  packed_matrix pm = {N, K, np, kp, geglu, fmt, data, scale, colsum, NULL, ENC_ACT_GELU, NULL, 0};
  size_t el = fmt == WF_F32 ? 4 : fmt == WF_BF16 ? 2 : 1;
  void *a = aligned_alloc(64, ((size_t)M * kp * el + 63) & ~(size_t)63);
  memset(a, 0x3c, (size_t)M * kp * el);
  float *rs = malloc(4 * M);
  for (int i = 0; i < M; i++) rs[i] = 0.01f;
  int outs = geglu ? N / 2 : N;
  uint16_t *out = aligned_alloc(64, ((size_t)M * outs * 4 + 63) & ~(size_t)63);
  gemm_input in = {a, kp, rs, 0, NULL, 0, 0};
  gemm_epilogue e = {geglu ? EPI_GEGLU : EPI_NONE, 0, fmt == WF_BF16 ? NULL : (float *)out,
                     fmt == WF_BF16 ? out : NULL, outs};
  void (*g)(const gemm_input *, const packed_matrix *, int, int, int, int, const gemm_epilogue *) =
      fmt == WF_F32 ? kt->gemm_f32 : fmt == WF_BF16 ? kt->gemm_bf16 : kt->gemm_i8;
  /* a split-precision fp32 GEMM as the backend runs it: weight parts made beforehand (create), the
   * rows split once per call (timed with the GEMM); BENCH_SPLIT=own times the kernel splitting
   * both itself (the way before the backend split once) */
  uint16_t *wsplit = NULL, *parts = NULL;
  const char *bs = getenv("BENCH_SPLIT");
  int given = fmt == WF_F32 && kt->split_rows_f32 && !(bs && !strcmp(bs, "own"));
  int ld = CPU_SPLIT_LD(kp), rows = (M + 15) & ~15;
  if (given) {
    pm.split_parts = pack_split_need(&pm, 0, np, kt->split_panel_f32);
    wsplit = malloc(pack_split_bytes(N, K, geglu, pm.split_parts));
    parts = aligned_alloc(64, (3 * (size_t)rows * ld * 2 + 63) & ~(size_t)63);
    pack_split_panels(&pm, 0, np, wsplit, kt->split_panel_f32);
    pm.split = wsplit;
    in.split = parts;
    in.split_plane = (size_t)rows * ld;
    in.split_ld = ld;
  }
  double best = 1e30;
  int reps = getenv("BENCH_REPS") ? atoi(getenv("BENCH_REPS")) : 3;
  for (int r = 0; r < reps; r++) {
    evict_caches();
    double t = cpu_now();
    if (given) kt->split_rows_f32((const float *)a, kp, kp, 0, rows, M, parts, ld, (size_t)rows * ld);
    g(&in, &pm, 0, M, 0, np, &e);
    t = cpu_now() - t;
    if (t < best) best = t;
  }
  double gf = 2.0 * M * N * K / best * 1e-9, pk = peak_of(kt);
  printf("%-7s %-5s M=%-5d N=%-5d K=%-5d %s: %8.2f ms  %6.1f GFLOP/s%s%.0d%s", kt->name,
         fmt == WF_F32 ? "fp32" : fmt == WF_BF16 ? "bf16" : "int8", M, N, K, geglu ? "geglu" : "     ",
         best * 1e3, gf, given ? " (parts split once, weight parts " : "", given ? pm.split_parts : 0, given ? ")" : "");
  if (pk > 0 && fmt == WF_F32) printf("  %3.0f%% of %.1f", 100.0 * gf / pk, pk);
  printf("\n");
  free(data), free(scale), free(row), free(colsum), free(a), free(rs), free(out), free(wsplit), free(parts);
}

static void bench_attn(const cpu_kernels *kt, int t, int window) {
  int dh = 64;
  float *q = malloc(4 * t * dh), *k = malloc(4 * t * dh), *v = malloc(4 * t * dh), *o = malloc(4 * t * dh);
  for (int i = 0; i < t * dh; i++) q[i] = k[i] = v[i] = (float)(i % 13) / 13.0f;
  float *scr = malloc(4 * (cpu_attention_scratch(t) + 64));
  attn_args a = {q, k, v, t, dh, 0, t, window, o, NULL, dh, scr, NULL, NULL, NULL};
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    double s = cpu_now();
    kt->attention(&a);
    s = cpu_now() - s;
    if (s < best) best = s;
  }
  double keys = window < 0 ? (double)t * t : (double)t * (2 * window + 1);
  printf("%-7s attention T=%d window=%d: %.3f ms  %.1f GFLOP/s\n", kt->name, t, window, best * 1e3, 4.0 * keys * dh / best * 1e-9);
  free(q), free(k), free(v), free(o), free(scr);
}

/* The bf16 kernel on the same shape (its layouts filled with the same kind of values). */
static void bench_attn_bf16(const cpu_kernels *kt, int t, int window) {
  int dh = 64;
  size_t n = (size_t)(t + 1) * dh;
  uint16_t *q = malloc(2 * n), *k = malloc(2 * n), *v = malloc(2 * n);
  float *o = malloc(4 * (size_t)t * dh);
  for (size_t i = 0; i < n; i++) q[i] = k[i] = v[i] = f32_to_bf16_rne((float)(i % 13) / 13.0f);
  float *scr = malloc(4 * (cpu_attention_scratch(t) + 64));
  attn_args a = {NULL, NULL, NULL, t, dh, 0, t, window, o, NULL, dh, scr, q, k, v};
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    double s = cpu_now();
    kt->attention_bf16(&a);
    s = cpu_now() - s;
    if (s < best) best = s;
  }
  double keys = window < 0 ? (double)t * t : (double)t * (2 * window + 1);
  printf("%-7s attention bf16 T=%d window=%d: %.3f ms  %.1f GFLOP/s\n", kt->name, t, window, best * 1e3, 4.0 * keys * dh / best * 1e-9);
  free(q), free(k), free(v), free(o), free(scr);
}

int main(int argc, char **argv) {
  const cpu_kernels *tabs[8];
  int n = 0;
  const char *a2 = getenv("BENCH_AVX2");
  int only_avx2 = a2 && !strcmp(a2, "only");
  /* the AMX table, and two copies of it whose fp32 GEMM is the split-precision one (x3, x6) */
  static cpu_kernels amx_x3, amx_x5, amx_x6;
  if (!only_avx2 && cpu_kernels_by_name("amx")) {
    tabs[n++] = cpu_kernels_by_name("amx");
    amx_x3 = amx_x5 = amx_x6 = *tabs[0];
    amx_x5.name = "amx-x5";
    amx_x5.gemm_f32 = cpu_amx_hw()->f32x5;
    amx_x3.name = "amx-x3";
    amx_x3.gemm_f32 = cpu_amx_hw()->f32x3;
    amx_x6.name = "amx-x6";
    amx_x6.gemm_f32 = cpu_amx_hw()->f32x6;
    amx_x3.split_rows_f32 = amx_x5.split_rows_f32 = amx_x6.split_rows_f32 = cpu_amx_hw()->split_rows;
  }
  /* both AVX-512 tables (they differ in the bf16 GEMM: vdpbf16ps or FMA; kernels_select.c) */
  if (!only_avx2 && cpu_kernels_by_name("avx512-dot")) tabs[n++] = cpu_kernels_by_name("avx512-dot");
  if (!only_avx2 && cpu_kernels_by_name("avx512-fma")) tabs[n++] = cpu_kernels_by_name("avx512-fma");
  if (cpu_kernels_by_name("avx2") && getenv("BENCH_AVX2")) tabs[n++] = cpu_kernels_by_name("avx2");
  int n_main = n;
  if (amx_x3.name) tabs[n++] = &amx_x3, tabs[n++] = &amx_x5, tabs[n++] = &amx_x6;
  if (getenv("BENCH_EMU")) tabs[n++] = cpu_kernels_by_name("amx-emu"); /* the emulated tiles (slow): its fp32 GEMM */
  for (int i = 0; i < n; i++) {
    int fmt0 = 0, fmt1 = i < n_main ? 3 : 1; /* the split copies: their fp32 GEMM only */
    if (argc >= 4) {
      for (int a = 1; a + 2 < argc; a += 3)
        for (int f = fmt0; f < fmt1; f++)
          bench_gemm(tabs[i], (cpu_wfmt)f, atoi(argv[a]), atoi(argv[a + 1]), atoi(argv[a + 2]), strchr(argv[a + 1], 'g') != NULL);
      continue;
    }
    for (int f = fmt0; f < fmt1; f++) {
      bench_gemm(tabs[i], (cpu_wfmt)f, 128, 3072, 1024, 0);
      bench_gemm(tabs[i], (cpu_wfmt)f, 512, 5248, 1024, 1);
      bench_gemm(tabs[i], (cpu_wfmt)f, 512, 1024, 2624, 0);
    }
    if (i >= n_main) continue;
    bench_attn(tabs[i], 512, -1);
    bench_attn(tabs[i], 512, 64);
    bench_attn_bf16(tabs[i], 512, -1);
    bench_attn_bf16(tabs[i], 512, 64);
    bench_attn(tabs[i], 128, -1);
    bench_attn_bf16(tabs[i], 128, -1);
  }
  return 0;
}
