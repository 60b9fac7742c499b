/*
 * kernels_amx_tiles.h: the AMX GEMMs' tiling, written once over five tile primitives and included
 * twice by kernels_amx.c: over the AMX instructions and over their plain-C emulation (see
 * kernels_amx.h). Not a normal header: the includer defines
 *   AMX_NAME(x)            a name of this instantiation
 *   AMX_ATTR               function attributes (target ISA) of this instantiation
 *   AMX_SETUP()            make the tile configuration below current in this thread
 *   T_ZERO(t) T_LOAD(t, p, stride) T_STORE(t, p, stride) T_DPBF16(c, a, b) T_DPBUSD(c, a, b)
 *                          the tile operations (t: a constant tile number 0..7)
 *   AMX_EPI_F32(w, e, m, p, acc)                 epilogue of row m, panel p, 32 fp32 results
 *   AMX_EPI_I32(x, w, e, m, p, acc)              the same from 32 int32 sums (int8)
 *   AMX_SPLIT_ROW(src, n, npad, hi, mid, lo)     fp32 row -> bf16 parts (zero to npad)
 *   AMX_SPLIT_PANEL(src, k, kpp, hi, mid, lo)    fp32 panel [k][32] -> bf16 parts [kpp/2][32][2]
 *   AMX_PREFETCH(p)                              prefetch the cache line at p into L2 (or nothing)
 *
 * Tile configuration (palette 1, the same for every kernel): all eight tiles are 16 rows x 64
 * bytes. tmm0..3: fp32 / int32 accumulators of a 32-row x 32-column block (tmm0 rows 0-15 columns
 * 0-15, tmm1 rows 0-15 columns 16-31, tmm2 / tmm3 rows 16-31); tmm4 / tmm5: activation rows 0-15 /
 * 16-31, 32 bf16 or 64 u8 of k; tmm6 / tmm7: the weight panel's columns 0-15 / 16-31, 16 rows of
 * k pairs (bf16) or quads (int8) read in place from the packed panel (row stride 128 bytes: a
 * panel row of 32 columns x 4 bytes). A tile that would read past the rows [m0, m1), past k_pad or
 * past the panel loads from a zero-filled copy of its valid part instead, so the configuration never
 * changes.
 */

#define AMX_ROWS 32 /* activation rows per block (two tiles) */

/* One k step's share of the next panel's prefetch (amx_prefetch_panel, kernels_amx.c). */
#define AMX_PREFETCH_STEP(pf)                                                    \
  do {                                                                           \
    for (int i_ = 0; i_ < (pf).per_step && (pf).left > 0; i_++, (pf).left--, (pf).at += 64) \
      AMX_PREFETCH((pf).at);                                                     \
  } while (0)

/* Tile t from nr rows of nb bytes at base (row stride ld bytes); whole tiles load in place. */
#define AMX_LOAD_PART(t, base, ld, nr, nb, tmp)                        \
  do {                                                                 \
    if ((nr) == 16 && (nb) == 64) {                                    \
      T_LOAD(t, (base), (ld));                                         \
    } else {                                                           \
      amx_copy_part((tmp), (const uint8_t *)(base), (ld), (nr), (nb)); \
      T_LOAD(t, (tmp), 64);                                            \
    }                                                                  \
  } while (0)

/* The four accumulators of a 32 x 32 block: zeroed, or reloaded from a [32][32] 4-byte buffer
 * where the previous k block left them; and stored there. */
#define AMX_C_BEGIN(first, cb)            \
  do {                                    \
    if (first) {                          \
      T_ZERO(0);                          \
      T_ZERO(1);                          \
      T_ZERO(2);                          \
      T_ZERO(3);                          \
    } else {                              \
      T_LOAD(0, (cb), 128);               \
      T_LOAD(1, (cb) + 16, 128);          \
      T_LOAD(2, (cb) + 16 * CPU_NR, 128); \
      T_LOAD(3, (cb) + 16 * CPU_NR + 16, 128); \
    }                                     \
  } while (0)
#define AMX_C_END(cb)                       \
  do {                                      \
    T_STORE(0, (cb), 128);                  \
    T_STORE(1, (cb) + 16, 128);             \
    T_STORE(2, (cb) + 16 * CPU_NR, 128);    \
    T_STORE(3, (cb) + 16 * CPU_NR + 16, 128); \
  } while (0)

/* Loop order (gemm_tiles, bf16 and int8 alike): row chunk (activations stay in L2) > weight panel >
 * k block > row block > k step. The accumulators stay in tiles over a whole k block; between k
 * blocks they wait in a buffer (fp32 stores and loads: exact), so every output's sum still runs
 * over k in one fixed order. Within a k step the loads are interleaved with the products so a
 * tile's next load can start while the products that do not read it run. The k block is as long
 * as the models' k (768..2624 and more): on the Xeon (Emerald Rapids), k blocks of 256 / 512 (the
 * panel's slice in L1, the accumulators stored and reloaded every 8 k steps: a tile load of what a
 * tile store just wrote waits for the store) ran the bf16 GEMM at 327-335 GFLOP/s on one core,
 * whole-k blocks at 718-1049 (BENCHMARKS.md, "AMX, session 7"). */
#ifdef AMX_KC_BF16_SET /* build-time overrides for kernel studies (bench_kernels variants) */
#define AMX_KC_BF16 AMX_KC_BF16_SET
#else
#define AMX_KC_BF16 4096
#endif
#ifdef AMX_KC_I8_SET
#define AMX_KC_I8 AMX_KC_I8_SET
#else
#define AMX_KC_I8 4096
#endif

/* bf16 (i8 = 0): y = x W^T, x bf16 [M][lda], W packed [K/2][32][2] per panel; int8 (i8 = 1): u8
 * activations [M][lda] (q + 128), s8 weights packed [K/4][32][4], 32-bit sums. One tile row is 64
 * bytes either way: a k step is 32 bf16 or 64 u8 values of k, a weight tile 16 rows of k pairs or
 * quads. Called with a constant i8 (the two wrappers below), so each copy keeps one tile product. */
__attribute__((always_inline)) AMX_ATTR static inline void AMX_NAME(gemm_tiles)(const int i8, const gemm_input *x,
                                                                               const packed_matrix *w, int m0, int m1,
                                                                               int p0, int p1, const gemm_epilogue *e) {
  if (m1 <= m0 || p1 <= p0) return;
  const int kp = w->k_pad;
  const int vb = i8 ? 1 : 2;                /* bytes per value */
  const int ks = 64 / vb, kg = 4 / vb;      /* k values per step, per 4-byte weight group */
  const int kmax = i8 ? AMX_KC_I8 : AMX_KC_BF16;
  const size_t lda = (size_t)x->lda * vb;
  int chunk = amx_chunk_rows(kp * vb);
  /* fp32 or int32 accumulators between k blocks (4 bytes either way) */
  uint32_t *cbuf = kp > kmax ? amx_scratch_get(0, sizeof(uint32_t) * (size_t)(chunk / AMX_ROWS) * AMX_ROWS * CPU_NR) : NULL;
  const int kcb = cbuf ? kmax : kp; /* no scratch (out of memory): one k block, same sums */
  AMX_SETUP();
  union { /* the last k block's accumulators, as the tiles store them and as the epilogue reads them */
    uint32_t u[AMX_ROWS * CPU_NR];
    float f[AMX_ROWS * CPU_NR];
    int32_t i[AMX_ROWS * CPU_NR];
  } acc __attribute__((aligned(64)));
  uint8_t ta[2][1024] __attribute__((aligned(64))), tb[2][1024] __attribute__((aligned(64)));
#define AMX_DP(c, a, b) \
  do {                  \
    if (i8)             \
      T_DPBUSD(c, a, b); \
    else                \
      T_DPBF16(c, a, b); \
  } while (0)
  for (int mc = m0; mc < m1; mc += chunk) {
    int mce = mc + chunk < m1 ? mc + chunk : m1;
    const size_t pbytes = (size_t)kp * CPU_NR * vb;
    const int steps = (mce - mc + AMX_ROWS - 1) / AMX_ROWS * ((kp + ks - 1) / ks);
    for (int p = p0; p < p1; p++) {
      const uint8_t *b = (const uint8_t *)w->data + (size_t)p * pbytes;
      amx_prefetch pf = amx_prefetch_panel(w->data, pbytes, pbytes, amx_next_panel(p, p0, p1, mce < m1), steps);
      for (int kc0 = 0; kc0 < kp; kc0 += kcb) {
        int kce = kc0 + kcb < kp ? kc0 + kcb : kp, last = kce == kp;
        for (int m = mc, rb = 0; m < mce; m += AMX_ROWS, rb++) {
          int nr = mce - m < AMX_ROWS ? mce - m : AMX_ROWS;
          int nr0 = nr < 16 ? nr : 16, nr1 = nr - nr0;
          const uint8_t *a0 = (const uint8_t *)x->a + (size_t)m * lda, *a1 = a0 + 16 * lda;
          uint32_t *cb = cbuf ? cbuf + (size_t)rb * AMX_ROWS * CPU_NR : acc.u;
          AMX_C_BEGIN(kc0 == 0, cb);
          for (int k0 = kc0; k0 < kce; k0 += ks) {
            AMX_PREFETCH_STEP(pf);
            int kw = kp - k0 < ks ? kp - k0 : ks; /* k values of this step (a multiple of kg: k_pad % 4 == 0) */
            const uint8_t *bk = b + (size_t)(k0 / kg) * 128;
            AMX_LOAD_PART(4, a0 + (size_t)k0 * vb, lda, nr0, kw * vb, ta[0]);
            AMX_LOAD_PART(6, bk, 128, kw / kg, 64, tb[0]);
            AMX_DP(0, 4, 6);
            AMX_LOAD_PART(7, bk + 64, 128, kw / kg, 64, tb[1]);
            AMX_DP(1, 4, 7);
            if (nr1) {
              AMX_LOAD_PART(5, a1 + (size_t)k0 * vb, lda, nr1, kw * vb, ta[1]);
              AMX_DP(2, 5, 6);
              AMX_DP(3, 5, 7);
            }
          }
          AMX_C_END(last ? acc.u : cb);
          if (last)
            for (int r = 0; r < nr; r++) {
              if (i8)
                AMX_EPI_I32(x, w, e, m + r, p, acc.i + r * CPU_NR);
              else
                AMX_EPI_F32(w, e, m + r, p, acc.f + r * CPU_NR);
            }
        }
      }
    }
  }
#undef AMX_DP
}
AMX_ATTR static void AMX_NAME(gemm_bf16)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                                         int p1, const gemm_epilogue *e) {
  AMX_NAME(gemm_tiles)(0, x, w, m0, m1, p0, p1, e);
}
AMX_ATTR static void AMX_NAME(gemm_i8)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                                       int p1, const gemm_epilogue *e) {
  AMX_NAME(gemm_tiles)(1, x, w, m0, m1, p0, p1, e);
}

/* Split-precision fp32: both operands cut into bf16 parts (hi, mid, lo: x = hi + mid + lo + r,
 * |r| <= 2^-24 |x|), then the products of parts whose order is above the cut, smallest first, all
 * into the same fp32 accumulators. The parts are zero-padded (rows to 16, k to 32), so no tile has
 * a tail. The backend hands them over ready: the weights' at create (w->split, [panel][part: its split_parts][kpp/2]
 * [32][2]) and the activations' once per GEMM call, in a pool step before its tasks (x->split,
 * AMX_NAME(split_rows)): with every task splitting the rows and panels it read, 8 threads spent
 * about twice the one-thread CPU time on the same GEMM (BENCHMARKS.md, "Where the 8-thread x6
 * forward goes"). A caller without them (tests, bench_kernels, scratch for the shared split
 * missing) gets the same products from parts split here, per row chunk and per panel, into
 * per-thread scratch: the parts, the products and their order are the same either way, so the
 * results are bit for bit the same. k blocks as above (whole k up to 4096). */
#ifdef AMX_KC_SPLIT_SET
#define AMX_KC_SPLIT AMX_KC_SPLIT_SET
#else
#define AMX_KC_SPLIT 4096
#endif
/* split_rows_f32 of kernels.h: the activation rows [r0, r1) into their three parts. */
AMX_ATTR static void AMX_NAME(split_rows)(const float *x, int lda, int k, int r0, int r1, int m, uint16_t *parts,
                                          int ld, size_t plane) {
  for (int r = r0; r < r1; r++) {
    size_t o = (size_t)r * ld;
    if (r < m)
      AMX_SPLIT_ROW(x + (size_t)r * lda, k, ld, parts + o, parts + plane + o, parts + 2 * plane + o);
    else
      for (int i = 0; i < 3; i++) memset(parts + i * plane + o, 0, sizeof(uint16_t) * (size_t)ld);
  }
}
AMX_ATTR static void AMX_NAME(gemm_split)(int parts, const gemm_input *x, const packed_matrix *w, int m0,
                                          int m1, int p0, int p1, const gemm_epilogue *e) {
  /* (activation part, weight part) of each product. Consecutive products share one operand, so a
   * k step reloads only the two tiles of the part that changes: x6 loads 4 + 5 * 2 = 14 tiles for
   * its 24 tile products instead of 24 (x5 12 for 20, x3 8 for 12). The tile loads (1 KiB each
   * from L2) and not the products bounded the kernel (BENCHMARKS.md, "Split-precision fp32 on AMX,
   * session 8"). The smaller products still come first, (0, 0) last, all into the same fp32
   * accumulators. */
  static const int prod6[6][2] = {{2, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 2}, {0, 0}};
  static const int prod5[5][2] = {{1, 1}, {0, 1}, {0, 2}, {1, 0}, {0, 0}}; /* (0,2) -> (1,0): both change */
  static const int prod3[3][2] = {{1, 0}, {0, 0}, {0, 1}};
  const int(*kind_prod)[2] = parts == 6 ? prod6 : parts == 5 ? prod5 : prod3;
  if (m1 <= m0 || p1 <= p0) return;
  const int kp = w->k_pad, kpp = CPU_SPLIT_K(kp);
  /* given parts: the x parts of this k (the split of the same call), rows split_ld >= kpp apart */
  const int own_a = !x->split || x->split_ld < kpp, own_b = !w->split;
  /* Weight parts that are zero everywhere (w->split_parts: float16 weights have no lo part,
   * bfloat16 ones no mid part either) leave their products out: the same sums, fewer products
   * (x6: 5 for float16 weights, 3 for bfloat16). Weights this kernel splits itself keep all. */
  const int wparts = own_b || w->split_parts < 1 || w->split_parts > 3 ? 3 : w->split_parts;
  int prod[6][2], np = 0;
  for (int q = 0; q < parts; q++)
    if (kind_prod[q][1] < wparts) prod[np][0] = kind_prod[q][0], prod[np][1] = kind_prod[q][1], np++;
  /* planes of the activations (hi, mid[, lo]) and of the weights */
  const int nplanes = parts == 6 ? 3 : 2, wplanes = parts == 3 ? 2 : 3, nbplanes = wplanes < wparts ? wplanes : wparts;
  /* rows whose split parts (2 bytes x nplanes per k) fill about 2 MiB, not the 1 MiB of the other
   * kernels: every chunk passes over every weight panel (and splits it again when it splits them
   * itself), so longer chunks split less (measured in BENCHMARKS.md, "Split-precision fp32 on AMX,
   * session 8") */
  int chunk = amx_chunk_rows(kpp * nplanes) / AMX_ROWS * AMX_ROWS;
  if (chunk < AMX_ROWS) chunk = AMX_ROWS;
  int crows = m1 - m0 < chunk ? (m1 - m0 + 31) & ~31 : chunk;
  const int kcb = kpp > AMX_KC_SPLIT ? AMX_KC_SPLIT : kpp;
  size_t asz = own_a ? (size_t)crows * CPU_SPLIT_LD(kp) : 0, bsz = own_b ? (size_t)kpp * CPU_NR : 0;
  size_t csz = kcb < kpp ? (size_t)crows * CPU_NR : 0;
  uint16_t *buf = asz + bsz + csz ? amx_scratch_get(1, sizeof(uint16_t) * (asz + bsz) * 3 + sizeof(float) * csz) : NULL;
  if (!buf && (asz || bsz)) { /* no scratch for parts (out of memory): the scalar kernel, which needs none */
    cpu_kernels_scalar.gemm_f32(x, w, m0, m1, p0, p1, e);
    return;
  }
  /* no scratch for the accumulators between k blocks: one k block (the same sums, as gemm_tiles) */
  const int kc = buf || !csz ? kcb : kpp;
  float *cbuf = csz && buf ? (float *)(void *)(buf + (asz + bsz) * 3) : NULL;
  amx_split_bufs s;
  size_t aplane = own_a ? asz : x->split_plane;
  size_t bplane = (size_t)kpp * CPU_NR; /* elements of one part of one panel */
  for (int i = 0; i < 3; i++) s.b[i] = own_b ? buf + asz * 3 + bsz * i : NULL;
  AMX_SETUP();
  float acc[AMX_ROWS * CPU_NR] __attribute__((aligned(64)));
  /* values and bytes per split activation row: the call's stride, or CPU_SPLIT_LD's in scratch */
  const size_t lde = own_a ? (size_t)CPU_SPLIT_LD(kp) : (size_t)x->split_ld, ldb = lde * 2;
  for (int mc = m0; mc < m1; mc += chunk) {
    int mce = mc + chunk < m1 ? mc + chunk : m1, rows = mce - mc, rows_pad = (rows + 15) & ~15;
    if (own_a) {
      for (int i = 0; i < 3; i++) s.a[i] = buf + asz * i;
      for (int r = 0; r < rows_pad; r++) {
        size_t o = (size_t)r * lde;
        if (r < rows)
          AMX_SPLIT_ROW((const float *)x->a + (size_t)(mc + r) * x->lda, kp, kpp, s.a[0] + o, s.a[1] + o,
                        nplanes == 3 ? s.a[2] + o : NULL);
        else
          for (int i = 0; i < nplanes; i++) memset(s.a[i] + o, 0, sizeof(uint16_t) * kpp);
      }
    } else { /* the call's parts, from row mc */
      for (int i = 0; i < 3; i++) s.a[i] = (uint16_t *)x->split + aplane * i + (size_t)mc * lde;
    }
    /* The next panel is prefetched into L2 over this panel's k steps (pfl lines a step): its fp32
     * weights where this kernel splits them (a panel is split in one pass before its products and,
     * without this, that pass waited on memory for the panel: BENCHMARKS.md, "Split-precision fp32
     * on AMX, session 8"), else its parts, which the first row block's tile loads would wait for. */
    const int nsteps = (rows + AMX_ROWS - 1) / AMX_ROWS * (kpp / 32);
    /* what is prefetched of a panel: its fp32 weights, or its parts (wparts planes apart) */
    const size_t pstride = own_b ? (size_t)kp * CPU_NR * 4 : (size_t)wparts * bplane * 2;
    const size_t pbytes = own_b ? pstride : (size_t)nbplanes * kpp * CPU_NR * 2;
    for (int p = p0; p < p1; p++) {
      if (own_b)
        AMX_SPLIT_PANEL((const float *)w->data + (size_t)p * kp * CPU_NR, kp, kpp, s.b[0], s.b[1],
                        nbplanes == 3 ? s.b[2] : NULL);
      else
        for (int i = 0; i < 3; i++) s.b[i] = i < wparts ? (uint16_t *)w->split + ((size_t)p * wparts + i) * bplane : NULL;
      amx_prefetch pf = amx_prefetch_panel(own_b ? (const void *)w->data : (const void *)w->split, pstride, pbytes,
                                           amx_next_panel(p, p0, p1, 0), nsteps);
      for (int kc0 = 0; kc0 < kpp; kc0 += kc) {
        int kce = kc0 + kc < kpp ? kc0 + kc : kpp, last = kce == kpp;
        for (int m = 0; m < rows; m += AMX_ROWS) {
          int nr = rows - m < AMX_ROWS ? rows - m : AMX_ROWS, nr1 = nr > 16;
          float *cb = cbuf ? cbuf + (size_t)m * CPU_NR : acc;
          AMX_C_BEGIN(kc0 == 0, cb);
          for (int k0 = kc0; k0 < kce; k0 += 32) {
            int pa = -1, pb = -1; /* the parts now in tmm4/5 and tmm6/7 */
            AMX_PREFETCH_STEP(pf);
            for (int q = 0; q < np; q++) {
              const int qa = prod[q][0], qb = prod[q][1];
              const uint8_t *bk = (const uint8_t *)(s.b[qb] + (size_t)k0 * CPU_NR);
              const uint8_t *ak = (const uint8_t *)(s.a[qa] + (size_t)m * lde + k0);
              if (qb == pb) { /* new activation part: rows 0-15, then 16-31 */
                T_LOAD(4, ak, ldb);
                T_DPBF16(0, 4, 6);
                T_DPBF16(1, 4, 7);
                if (nr1) {
                  T_LOAD(5, ak + 16 * ldb, ldb);
                  T_DPBF16(2, 5, 6);
                  T_DPBF16(3, 5, 7);
                }
              } else if (qa == pa) { /* new weight part: columns 0-15, then 16-31 */
                T_LOAD(6, bk, 128);
                T_DPBF16(0, 4, 6);
                if (nr1) T_DPBF16(2, 5, 6);
                T_LOAD(7, bk + 64, 128);
                T_DPBF16(1, 4, 7);
                if (nr1) T_DPBF16(3, 5, 7);
              } else {
                T_LOAD(4, ak, ldb);
                T_LOAD(6, bk, 128);
                T_DPBF16(0, 4, 6);
                T_LOAD(7, bk + 64, 128);
                T_DPBF16(1, 4, 7);
                if (nr1) {
                  T_LOAD(5, ak + 16 * ldb, ldb);
                  T_DPBF16(2, 5, 6);
                  T_DPBF16(3, 5, 7);
                }
              }
              pa = qa;
              pb = qb;
            }
          }
          AMX_C_END(last ? acc : cb);
          if (last)
            for (int r = 0; r < nr; r++) AMX_EPI_F32(w, e, mc + m + r, p, acc + r * CPU_NR);
        }
      }
    }
  }
}

AMX_ATTR static void AMX_NAME(gemm_f32x3)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                                          int p1, const gemm_epilogue *e) {
  AMX_NAME(gemm_split)(3, x, w, m0, m1, p0, p1, e);
}
AMX_ATTR static void AMX_NAME(gemm_f32x5)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                                          int p1, const gemm_epilogue *e) {
  AMX_NAME(gemm_split)(5, x, w, m0, m1, p0, p1, e);
}
AMX_ATTR static void AMX_NAME(gemm_f32x6)(const gemm_input *x, const packed_matrix *w, int m0, int m1, int p0,
                                          int p1, const gemm_epilogue *e) {
  AMX_NAME(gemm_split)(6, x, w, m0, m1, p0, p1, e);
}

/* bf16 attention on tiles (attention_bf16 of kernels.h: the qb / kb / vb layouts, which are already
 * the tile operand layouts: kb's pair rows are a B operand for q k^T, vb's key-pair rows one for
 * P V). Head size 64 only (others: AMX_ATTN_FALLBACK). Per block of 16 queries: the scores of the
 * union of their key ranges (from an even key, 64 keys per step: tmm0..3 = 16 queries x 4 x 16 keys,
 * tmm4 / tmm5 = q's two 32-value halves, tmm6 / tmm7 = kb tiles), then each query's softmax over
 * its own keys (AMX_SOFTMAX_ROW: exp(s - max) rounded to bf16, the sum of the rounded values; keys
 * it may not see get 0), then P V (tmm0..3 = 16 queries x 64 outputs, tmm4 = 32 keys of P, tmm6 /
 * tmm7 = vb tiles) and out = (P V) / sum. Tiles past t or past the last key pair load zero-filled
 * copies. Scores and probabilities wait in per-thread scratch (16 x width floats + bf16). */
#define AMX_AQ 16
AMX_ATTR static void AMX_NAME(attention_bf16)(const attn_args *a) {
  const int t = a->t, dh = a->dh;
  if (dh != 64 || a->i1 <= a->i0) {
    AMX_ATTN_FALLBACK(a);
    return;
  }
  int wmax = a->window < 0 || 2 * a->window + AMX_AQ > t ? t : 2 * a->window + AMX_AQ;
  const int wp_max = (wmax + 1 + 63) & ~63; /* +1: the block starts at an even key */
  float *sbuf = amx_scratch_get(2, sizeof(float) * ((size_t)AMX_AQ * wp_max + AMX_AQ * 64 + AMX_AQ) +
                                       sizeof(uint16_t) * (size_t)AMX_AQ * wp_max);
  if (!sbuf) {
    AMX_ATTN_FALLBACK(a);
    return;
  }
  float *obuf = sbuf + (size_t)AMX_AQ * wp_max, *sums = obuf + AMX_AQ * 64;
  uint16_t *p16 = (uint16_t *)(sums + AMX_AQ);
  AMX_SETUP();
  uint8_t tq[2][1024] __attribute__((aligned(64))), tb[2][1024] __attribute__((aligned(64)));
  const size_t kld = (size_t)t * 4; /* bytes per kb pair row */
  const int npairs = (t + 1) / 2;
  const uint8_t *kbb = (const uint8_t *)a->kb;
  int lo[AMX_AQ], hi[AMX_AQ];
  for (int q0 = a->i0; q0 < a->i1; q0 += AMX_AQ) {
    int nq = a->i1 - q0 < AMX_AQ ? a->i1 - q0 : AMX_AQ, ulo, uhi;
    attn_block_ranges(a, q0, nq, lo, hi, &ulo, &uhi);
    const int jb = ulo & ~1, wp = (uhi + 1 - jb + 63) & ~63;
    const uint8_t *qa = (const uint8_t *)(a->qb + (size_t)q0 * dh);
    AMX_LOAD_PART(4, qa, 128, nq, 64, tq[0]);
    AMX_LOAD_PART(5, qa + 64, 128, nq, 64, tq[1]);
    for (int g = 0; g < wp; g += 64) {
      T_ZERO(0);
      T_ZERO(1);
      T_ZERO(2);
      T_ZERO(3);
#define AMX_ATT_S(c)                                                                 \
  do {                                                                               \
    int j = jb + g + 16 * (c), nb = t - j;                                           \
    nb = nb >= 16 ? 64 : nb > 0 ? 4 * nb : 0;                                        \
    const uint8_t *kp = kbb + (size_t)(j < t ? j : 0) * 4;                           \
    AMX_LOAD_PART(6, kp, kld, 16, nb, tb[0]);                                        \
    T_DPBF16(c, 4, 6);                                                               \
    AMX_LOAD_PART(7, kp + 16 * kld, kld, 16, nb, tb[1]);                             \
    T_DPBF16(c, 5, 7);                                                               \
  } while (0)
      AMX_ATT_S(0);
      AMX_ATT_S(1);
      AMX_ATT_S(2);
      AMX_ATT_S(3);
#undef AMX_ATT_S
      T_STORE(0, sbuf + g, (size_t)wp * 4);
      T_STORE(1, sbuf + g + 16, (size_t)wp * 4);
      T_STORE(2, sbuf + g + 32, (size_t)wp * 4);
      T_STORE(3, sbuf + g + 48, (size_t)wp * 4);
    }
    for (int qi = 0; qi < AMX_AQ; qi++) {
      if (qi < nq) sums[qi] = AMX_SOFTMAX_ROW(sbuf + (size_t)qi * wp, lo[qi] - jb, hi[qi] - jb, wp, p16 + (size_t)qi * wp);
      else memset(p16 + (size_t)qi * wp, 0, sizeof(uint16_t) * (size_t)wp);
    }
    T_ZERO(0);
    T_ZERO(1);
    T_ZERO(2);
    T_ZERO(3);
    for (int k0 = 0; k0 < wp; k0 += 32) {
      int pr = (jb + k0) / 2, nr = npairs - pr;
      nr = nr > 16 ? 16 : nr > 0 ? nr : 0;
      const uint8_t *vp = (const uint8_t *)(a->vb + (size_t)(nr > 0 ? pr : 0) * dh * 2);
      T_LOAD(4, p16 + k0, (size_t)wp * 2);
      AMX_LOAD_PART(6, vp, 256, nr, 64, tb[0]);
      T_DPBF16(0, 4, 6);
      AMX_LOAD_PART(7, vp + 64, 256, nr, 64, tb[1]);
      T_DPBF16(1, 4, 7);
      AMX_LOAD_PART(6, vp + 128, 256, nr, 64, tb[0]);
      T_DPBF16(2, 4, 6);
      AMX_LOAD_PART(7, vp + 192, 256, nr, 64, tb[1]);
      T_DPBF16(3, 4, 7);
    }
    T_STORE(0, obuf, 256);
    T_STORE(1, obuf + 16, 256);
    T_STORE(2, obuf + 32, 256);
    T_STORE(3, obuf + 48, 256);
    for (int qi = 0; qi < nq; qi++) {
      size_t o = (size_t)(q0 + qi - a->i0) * a->ldo;
      AMX_ATTN_OUT(obuf + qi * 64, 1.0f / sums[qi], a->out_f32 ? a->out_f32 + o : NULL, a->out_bf16 ? a->out_bf16 + o : NULL);
    }
  }
}
#undef AMX_AQ

#undef AMX_LOAD_PART
#undef AMX_C_BEGIN
#undef AMX_C_END
#undef AMX_KC_BF16
#undef AMX_KC_I8
#undef AMX_KC_SPLIT
#undef AMX_ROWS
