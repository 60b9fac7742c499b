/*
 * kernels_avx512_math.h: the fp32 vector maths (exp, erf, GELU and the other GeGLU activations)
 * and the GEMM epilogue of one row's 32 panel results, shared by the AVX-512 table
 * (kernels_avx512.c) and the AMX table (kernels_amx.c), whose tile results go through the same
 * epilogue. Included inside each file's x86-64 section, after <immintrin.h>, with KINL defined as
 * that file's inline-function attribute (its target ISA list), so every function here is compiled
 * for, and inlined into, the including table.
 */
#ifndef KINL
#error "define KINL (static inline with the table's target attribute) before including kernels_avx512_math.h"
#endif

/* ---- vector maths ---- */

/* exp(x) for fp32 lanes: 2^n * p(r), |rel err| ~ 2 ulp over the clamped range. */
KINL __m512 v_exp(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)),
                    _mm512_set1_ps(-88.3762626647949f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

/* erf(x), Abramowitz-Stegun 7.1.26 (|abs err| <= 1.5e-7). */
KINL __m512 v_erf(__m512 x) {
  __m512 ax = _mm512_abs_ps(x);
  __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                           _mm512_fmadd_ps(ax, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  __m512 e = v_exp(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), ax), ax));
  __m512 y = _mm512_fnmadd_ps(p, e, _mm512_set1_ps(1.0f));
  /* copy the sign of x */
  return _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(y),
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
}

KINL __m512 v_gelu(__m512 x) {
  __m512 e = v_erf(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                       _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

/* The GeGLU activation (kernels.h cpu_glu_act): erf GELU, relu, or x / (1 + exp(-z)); the rarer
 * kinds (glu_act_rare.h) lane by lane in the scalar form. */
KINL __m512 v_glu_act(enc_act act, __m512 x) {
  if (act == ENC_ACT_GELU) return v_gelu(x);
  if (act >= ENC_ACT_FUSED_END) {
    float t[16];
    _mm512_storeu_ps(t, x);
    for (int i = 0; i < 16; i++) t[i] = cpu_act_rare(act, t[i]);
    return _mm512_loadu_ps(t);
  }
  if (act == ENC_ACT_RELU) return _mm512_max_ps(x, _mm512_setzero_ps());
  __m512 z = act == ENC_ACT_SILU         ? x
             : act == ENC_ACT_QUICK_GELU ? _mm512_mul_ps(x, _mm512_set1_ps(CPU_GLU_QUICK_C0))
                                         : _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(CPU_GLU_TANH_C2),
                                                                            _mm512_set1_ps(CPU_GLU_TANH_C0)));
  __m512 e = v_exp(_mm512_sub_ps(_mm512_setzero_ps(), z));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

KINL __mmask16 tail_mask(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1); }
/* Lanes [lo, hi) of 16 (either end may lie outside 0..16). */
KINL __mmask16 range_mask(int lo, int hi) { return (__mmask16)(tail_mask(hi) & ~tail_mask(lo)); }

KINL void store_bf16(uint16_t *dst, __m512 y, __mmask16 mk) {
  __m256i h = (__m256i)_mm512_cvtneps_pbh(y);
  _mm256_mask_storeu_epi16(dst, mk, h);
}

/* ---- GEMM epilogue for one row's 32 panel results ---- */

KINL void epilogue_row(const packed_matrix *w, const gemm_epilogue *e, int m, int p, __m512 y0,
                      __m512 y1) {
  if (w->geglu) {
    int o = p * 16, outs = w->n / 2;
    __mmask16 mk = tail_mask(outs - o);
    __m512 y = _mm512_mul_ps(v_glu_act(w->glu_act, y0), y1);
    if (e->out_f32) {
      float *dst = e->out_f32 + (size_t)m * e->ldo + o;
      if (e->residual) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mk, dst));
      _mm512_mask_storeu_ps(dst, mk, y);
    } else {
      store_bf16(e->out_bf16 + (size_t)m * e->ldo + o, y, mk);
    }
    return;
  }
  int o = p * 32, outs = w->n;
  __mmask16 mk0 = tail_mask(outs - o), mk1 = tail_mask(outs - o - 16);
  if (outs - o - 16 <= 0) mk1 = 0;
  if (w->bias) {
    y0 = _mm512_add_ps(y0, _mm512_maskz_loadu_ps(mk0, w->bias + o));
    y1 = _mm512_add_ps(y1, _mm512_maskz_loadu_ps(mk1, w->bias + o + 16));
  }
  if (e->act == EPI_GELU) {
    y0 = v_gelu(y0);
    y1 = v_gelu(y1);
  } else if (e->act == EPI_RELU) {
    y0 = _mm512_max_ps(y0, _mm512_setzero_ps());
    y1 = _mm512_max_ps(y1, _mm512_setzero_ps());
  }
  if (e->out_f32) {
    float *dst = e->out_f32 + (size_t)m * e->ldo + o;
    if (e->residual) {
      y0 = _mm512_add_ps(y0, _mm512_maskz_loadu_ps(mk0, dst));
      y1 = _mm512_add_ps(y1, _mm512_maskz_loadu_ps(mk1, dst + 16));
    }
    _mm512_mask_storeu_ps(dst, mk0, y0);
    _mm512_mask_storeu_ps(dst + 16, mk1, y1);
  } else {
    uint16_t *dst = e->out_bf16 + (size_t)m * e->ldo + o;
    store_bf16(dst, y0, mk0);
    store_bf16(dst + 16, y1, mk1);
  }
}

