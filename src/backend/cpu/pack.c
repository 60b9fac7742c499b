/* pack.c: lays a Linear weight out in the panel format of kernels.h, once, at load or convert. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"

int pack_kpad(int k) { return (k + 3) & ~3; }

int pack_panels(int n, int geglu) {
  if (geglu) return (n / 2 + CPU_NR / 2 - 1) / (CPU_NR / 2);
  return (n + CPU_NR - 1) / CPU_NR;
}

int pack_col_row(int n, int geglu, int p, int c) {
  if (geglu) {
    int half = n / 2, u = p * (CPU_NR / 2) + (c % (CPU_NR / 2));
    if (u >= half) return -1;
    return c < CPU_NR / 2 ? u : half + u;
  }
  int r = p * CPU_NR + c;
  return r < n ? r : -1;
}

static size_t fmt_size(cpu_wfmt fmt) { return fmt == WF_F32 ? 4 : fmt == WF_BF16 ? 2 : 1; }

size_t pack_data_bytes(cpu_wfmt fmt, int n, int k, int geglu) {
  return (size_t)pack_panels(n, geglu) * CPU_NR * (size_t)pack_kpad(k) * fmt_size(fmt);
}

/* Offset (in elements) of w[k][c] inside a panel of k_pad rows. */
static size_t panel_off(cpu_wfmt fmt, int kk, int c) {
  switch (fmt) {
    case WF_F32: return (size_t)kk * CPU_NR + c;
    case WF_BF16: return (size_t)(kk >> 1) * CPU_NR * 2 + (size_t)c * 2 + (kk & 1);
    default: return (size_t)(kk >> 2) * CPU_NR * 4 + (size_t)c * 4 + (kk & 3);
  }
}

void pack_matrix(cpu_wfmt fmt, int n, int k, int geglu, pack_row_fn get_row, void *ctx, void *data,
                 float *scale, int32_t *colsum, float *row_tmp) {
  pack_matrix_panels(fmt, n, k, geglu, 0, pack_panels(n, geglu), get_row, ctx, data, scale, colsum, row_tmp);
}

void pack_matrix_panels(cpu_wfmt fmt, int n, int k, int geglu, int p0, int p1, pack_row_fn get_row, void *ctx,
                        void *data, float *scale, int32_t *colsum, float *row_tmp) {
  int kp = pack_kpad(k);
  size_t panel = (size_t)kp * CPU_NR;
  memset((char *)data + (size_t)p0 * panel * fmt_size(fmt), 0, (size_t)(p1 - p0) * panel * fmt_size(fmt));
  for (int p = p0; p < p1; p++) {
    for (int c = 0; c < CPU_NR; c++) {
      int r = pack_col_row(n, geglu, p, c);
      int col = p * CPU_NR + c;
      if (fmt == WF_I8) {
        scale[col] = 1.0f;
        colsum[col] = 0;
      }
      if (r < 0) continue;
      get_row(ctx, r, row_tmp);
      if (fmt == WF_F32) {
        float *d = (float *)data + p * panel;
        for (int kk = 0; kk < k; kk++) d[panel_off(fmt, kk, c)] = row_tmp[kk];
      } else if (fmt == WF_BF16) {
        uint16_t *d = (uint16_t *)data + p * panel;
        for (int kk = 0; kk < k; kk++) d[panel_off(fmt, kk, c)] = f32_to_bf16_rne(row_tmp[kk]);
      } else {
        int8_t *d = (int8_t *)data + p * panel;
        float inv, s = int8_grid(row_tmp, k, &inv);
        int32_t sum = 0;
        for (int kk = 0; kk < k; kk++) {
          int q = (int)int8_level(row_tmp[kk], inv);
          d[panel_off(fmt, kk, c)] = (int8_t)q;
          sum += q;
        }
        scale[col] = s;
        colsum[col] = 128 * sum;
      }
    }
  }
}

size_t pack_split_bytes(int n, int k, int geglu, int parts) {
  return (size_t)pack_panels(n, geglu) * (size_t)parts * (size_t)CPU_SPLIT_K(pack_kpad(k)) * CPU_NR * sizeof(uint16_t);
}

/* One panel in plain C (cpu_split_panel_fn), for callers without a table's SIMD version. */
static void split_panel_plain(const float *src, int k, int kpp, uint16_t *hi, uint16_t *mid, uint16_t *lo) {
  for (int kk = 0; kk < kpp; kk++)
    for (int c = 0; c < CPU_NR; c++) {
      size_t o = (size_t)(kk >> 1) * CPU_NR * 2 + (size_t)c * 2 + (kk & 1);
      cpu_split3(kk < k ? src[(size_t)kk * CPU_NR + c] : 0.0f, hi + o, mid + o, lo ? lo + o : NULL);
    }
}

/* How many leading parts (cpu_split3: hi, mid, lo) the values of panels [p0, p1) need: 3, 2 where
 * every lo part is zero, 1 where every mid part is too. A part counts as zero when its bits are +0
 * or -0 (0x0000 / 0x8000): both add nothing to a sum. Each panel is split into scratch (fn) and
 * its mid and lo parts OR-ed together. */
int pack_split_need(const packed_matrix *w, int p0, int p1, cpu_split_panel_fn fn) {
  const int kp = w->k_pad, kpp = CPU_SPLIT_K(kp);
  const size_t plane = (size_t)kpp * CPU_NR;
  uint16_t *t = malloc(3 * plane * sizeof *t);
  uint16_t any_mid = 0, any_lo = 0;
  for (int p = p0; p < p1; p++) {
    const float *src = (const float *)w->data + (size_t)p * kp * CPU_NR;
    if (!t) { /* no scratch: value by value, the same answer */
      for (size_t i = 0; i < (size_t)kp * CPU_NR; i++) {
        uint16_t h, m, l;
        cpu_split3(src[i], &h, &m, &l);
        any_mid |= m & 0x7fffu;
        any_lo |= l & 0x7fffu;
      }
      continue;
    }
    (fn ? fn : split_panel_plain)(src, kp, kpp, t, t + plane, t + 2 * plane);
    for (size_t i = 0; i < plane; i++) {
      any_mid |= t[plane + i];
      any_lo |= t[2 * plane + i];
    }
  }
  free(t);
  any_mid &= 0x7fffu;
  any_lo &= 0x7fffu;
  return any_lo ? 3 : any_mid ? 2 : 1;
}

/* Panel p of w's fp32 panels [k_pad][32] -> its first w->split_parts parts (0: all three), each in
 * the bf16 panel order [kpp/2][32][2] (the tile layout the split-precision GEMM reads in place),
 * zero from k_pad to kpp; panel p's parts start at split + p * parts * kpp * 32. A part not kept
 * (1 part: mid) goes to scratch, or the panel value by value without it. */
void pack_split_panels(const packed_matrix *w, int p0, int p1, uint16_t *split, cpu_split_panel_fn fn) {
  const int kp = w->k_pad, kpp = CPU_SPLIT_K(kp), parts = w->split_parts >= 1 && w->split_parts <= 3 ? w->split_parts : 3;
  const size_t plane = (size_t)kpp * CPU_NR;
  uint16_t *t = parts == 1 ? malloc(plane * sizeof *t) : NULL;
  for (int p = p0; p < p1; p++) {
    const float *src = (const float *)w->data + (size_t)p * kp * CPU_NR;
    uint16_t *hi = split + (size_t)p * parts * plane;
    if (parts >= 2 || t) {
      (fn ? fn : split_panel_plain)(src, kp, kpp, hi, parts >= 2 ? hi + plane : t, parts == 3 ? hi + 2 * plane : NULL);
      continue;
    }
    for (int kk = 0; kk < kpp; kk++)
      for (int c = 0; c < CPU_NR; c++) {
        uint16_t m;
        size_t o = (size_t)(kk >> 1) * CPU_NR * 2 + (size_t)c * 2 + (kk & 1);
        cpu_split3(kk < kp ? src[(size_t)kk * CPU_NR + c] : 0.0f, hi + o, &m, NULL);
      }
  }
  free(t);
}
