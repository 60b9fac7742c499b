/*
 * peak.c: how many 512-bit vfmadd231ps / vdpbf16ps / vpdpbusd instructions one core retires per
 * second, each in a loop of 20 independent register-only accumulations (no memory, no dependency
 * chains shorter than the latency). The ratio of the three is what bounds fp32, bf16 and int8
 * GEMMs on this core (BENCHMARKS.md, CPU backend); also the 256-bit vfmadd231ps rate, the AVX2
 * table's fp32 peak, and the AVX2 integer instructions its int8 GEMM is made of. Thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID), so that other processes on a shared
 * machine distort it less; still best on an idle one (best of 3 runs per instruction).
 *   peak [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "backend/cpu/kernels.h"

#define ISA "avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni"
#define ONE(op, r) op " %%zmm30, %%zmm31, %%zmm" #r "\n"
#define TWENTY(op)                                                                                  \
  ONE(op, 0) ONE(op, 1) ONE(op, 2) ONE(op, 3) ONE(op, 4) ONE(op, 5) ONE(op, 6) ONE(op, 7) ONE(op, 8) \
  ONE(op, 9) ONE(op, 10) ONE(op, 11) ONE(op, 12) ONE(op, 13) ONE(op, 14) ONE(op, 15) ONE(op, 16)     \
  ONE(op, 17) ONE(op, 18) ONE(op, 19)
#define ONEY(op, r) op " %%ymm14, %%ymm15, %%ymm" #r "\n"
#define TWELVEY(op)                                                                                 \
  ONEY(op, 0) ONEY(op, 1) ONEY(op, 2) ONEY(op, 3) ONEY(op, 4) ONEY(op, 5) ONEY(op, 6) ONEY(op, 7)   \
  ONEY(op, 8) ONEY(op, 9) ONEY(op, 10) ONEY(op, 11)
#define CLOBBER                                                                                     \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",  \
      "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm30", "xmm31"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* operands zeroed first: the timing of these instructions does not depend on the values */
#define LOOP(name, op)                                                                               \
  __attribute__((target(ISA), noinline)) static double name(long it) {                              \
    double t0 = now();                                                                              \
    for (long k = 0; k < it; k++) __asm__ volatile(TWENTY(op) ::: CLOBBER);                         \
    return 20.0 * (double)it / (now() - t0);                                                         \
  }
LOOP(rate_fma, "vfmadd231ps")
LOOP(rate_bf16, "vdpbf16ps")
LOOP(rate_vnni, "vpdpbusd")

/* 256-bit FMA (AVX2 + FMA only): 12 independent accumulators in ymm0-11, operands ymm14 / ymm15 */
__attribute__((target("avx2,fma"), noinline)) static double rate_fma_ymm(long it) {
  double t0 = now();
  for (long k = 0; k < it; k++)
    __asm__ volatile(TWELVEY("vfmadd231ps") ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                     "xmm8", "xmm9", "xmm10", "xmm11", "xmm14", "xmm15");
  return 12.0 * (double)it / (now() - t0);
}
/* AVX2 integer instructions the int8 GEMM of the AVX2 table can be built from (kernels_avx2.c), 12
 * independent destinations each (none reads its own result: throughput, not latency). The loads
 * read one L1-resident 64-byte line. MIXn: the instruction pairs / groups of an inner loop together,
 * to see whether they share ports. */
static __attribute__((aligned(64))) unsigned char ymm_src[64];
#define Y12(op) TWELVEY(op)
#define LOADY(op, r) op " (%0), %%ymm" #r "\n"
#define LOAD12(op)                                                                                  \
  LOADY(op, 0) LOADY(op, 1) LOADY(op, 2) LOADY(op, 3) LOADY(op, 4) LOADY(op, 5) LOADY(op, 6)        \
  LOADY(op, 7) LOADY(op, 8) LOADY(op, 9) LOADY(op, 10) LOADY(op, 11)
#define YCLOB "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14", "xmm15"
#define YLOOP(name, n, body)                                                                         \
  __attribute__((target("avx2,fma"), noinline)) static double name(long it) {                       \
    double t0 = now();                                                                              \
    for (long k = 0; k < it; k++) __asm__ volatile(body ::"r"(ymm_src) : YCLOB, "memory");          \
    return (double)(n) * (double)it / (now() - t0);                                                 \
  }
YLOOP(rate_maddwd, 12, Y12("vpmaddwd"))
YLOOP(rate_maddubsw, 12, Y12("vpmaddubsw"))
YLOOP(rate_signb, 12, Y12("vpsignb"))
YLOOP(rate_paddd, 12, Y12("vpaddd"))
YLOOP(rate_movsxbw, 12, LOAD12("vpmovsxbw"))
YLOOP(rate_bcastd, 12, LOAD12("vpbroadcastd"))
#define LOADM(r) "vpmaddwd (%0), %%ymm14, %%ymm" #r "\n"
YLOOP(rate_maddwd_m, 12, LOADM(0) LOADM(1) LOADM(2) LOADM(3) LOADM(4) LOADM(5) LOADM(6) LOADM(7) LOADM(8) LOADM(9) LOADM(10) LOADM(11))
/* 6 vpmaddwd + 6 vpaddd: the pre-widened inner loop's pair (rate counts both) */
#define PAIR(r, s) "vpmaddwd %%ymm14, %%ymm15, %%ymm" #r "\n vpaddd %%ymm14, %%ymm15, %%ymm" #s "\n"
YLOOP(rate_mix_madd_add, 12, PAIR(0, 1) PAIR(2, 3) PAIR(4, 5) PAIR(6, 7) PAIR(8, 9) PAIR(10, 11))
/* vpsignb + vpmaddubsw + vpmaddwd + vpaddd, x3: the sign-trick inner loop's group (rate counts all) */
#define QUAD(a, b, c, d)                                                                            \
  "vpsignb %%ymm14, %%ymm15, %%ymm" #a "\n vpmaddubsw %%ymm14, %%ymm15, %%ymm" #b "\n vpmaddwd %%ymm14, " \
  "%%ymm15, %%ymm" #c "\n vpaddd %%ymm14, %%ymm15, %%ymm" #d "\n"
YLOOP(rate_mix_sign, 12, QUAD(0, 1, 2, 3) QUAD(4, 5, 6, 7) QUAD(8, 9, 10, 11))
/* 4 vpmovsxbw (load) + 8 vpmaddwd: widening in the inner loop, each widened vector used twice */
#define WID(r, s, t) "vpmovsxbw (%0), %%ymm" #r "\n vpmaddwd %%ymm14, %%ymm15, %%ymm" #s "\n vpmaddwd %%ymm14, %%ymm15, %%ymm" #t "\n"
YLOOP(rate_mix_widen, 12, WID(0, 1, 2) WID(3, 4, 5) WID(6, 7, 8) WID(9, 10, 11))

__attribute__((target("avx2"))) static void zero_ymm_operands(void) {
  __asm__ volatile("vpxor %%ymm14, %%ymm14, %%ymm14\n vpxor %%ymm15, %%ymm15, %%ymm15" ::: "xmm14", "xmm15");
}
static double best3(double (*fn)(long), long it) {
  double b = 0;
  for (int r = 0; r < 3; r++) {
    double v = fn(it);
    b = v > b ? v : b;
  }
  return b;
}

__attribute__((target(ISA))) static void zero_operands(void) {
  __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n vpxord %%zmm31, %%zmm31, %%zmm31" ::: "xmm30", "xmm31");
}

/* AMX: tdpbf16ps / tdpbusd into four independent 16 x 16 accumulators (16 x 64-byte tiles, the
 * configuration of kernels_amx_tiles.h); one instruction is 16 x 16 x 32 bf16 or x 64 int8 MACs. */
#include "backend/cpu/kernels_amx.h"
typedef struct tcfg {
  unsigned char palette, start;
  unsigned char res[14];
  unsigned short colsb[16];
  unsigned char rows[16];
} tcfg;
#define AMX4(op) op " %%tmm4, %%tmm6, %%tmm0\n" op " %%tmm5, %%tmm6, %%tmm1\n" op " %%tmm4, %%tmm7, %%tmm2\n" op " %%tmm5, %%tmm7, %%tmm3\n"
static double amx_rate(int int8, long it) {
  tcfg c = {0};
  c.palette = 1;
  for (int t = 0; t < 8; t++) c.colsb[t] = 64, c.rows[t] = 16;
  __asm__ volatile("ldtilecfg %0" ::"m"(c) : "memory");
  __asm__ volatile("tilezero %%tmm0\n tilezero %%tmm1\n tilezero %%tmm2\n tilezero %%tmm3\n tilezero %%tmm4\n tilezero %%tmm5\n tilezero %%tmm6\n tilezero %%tmm7" ::: "memory");
  double t0 = now();
  if (int8)
    for (long k = 0; k < it; k++) __asm__ volatile(AMX4("tdpbusd") ::: "memory");
  else
    for (long k = 0; k < it; k++) __asm__ volatile(AMX4("tdpbf16ps") ::: "memory");
  return 4.0 * (double)it / (now() - t0);
}

int main(int argc, char **argv) {
  long it = argc > 1 ? atol(argv[1]) : 20000000;
  if (cpu_kernels_by_name("avx2")) {
    zero_ymm_operands();
    double y = best3(rate_fma_ymm, it);
    printf("vfmadd231ps ymm: %.2f G/s = %6.1f GFLOP/s (16 per instruction; the AVX2 table's peak)\n", y * 1e-9, 16 * y * 1e-9);
    /* per cycle taking vfmadd231ps ymm as 2 per cycle (Zen 2/3, Haswell..Skylake): the clock is not read */
    static const struct {
      const char *name;
      double (*fn)(long);
    } yi[] = {{"vpmaddwd ymm", rate_maddwd},        {"vpmaddubsw ymm", rate_maddubsw},
              {"vpsignb ymm", rate_signb},          {"vpaddd ymm", rate_paddd},
              {"vpmovsxbw ymm<-m128", rate_movsxbw}, {"vpbroadcastd ymm<-m32", rate_bcastd},
              {"vpmaddwd ymm, m256", rate_maddwd_m}, {"mix 1 madd : 1 add", rate_mix_madd_add},
              {"mix sign:maddubs:madd:add", rate_mix_sign}, {"mix 1 movsx(m) : 2 madd", rate_mix_widen}};
    for (size_t i = 0; i < sizeof yi / sizeof yi[0]; i++) {
      double r = best3(yi[i].fn, it);
      printf("%-26s %.2f G/s = %.2f per cycle (if FMA ymm is 2 per cycle)\n", yi[i].name, r * 1e-9, 2.0 * r / y);
    }
  }
  if (!cpu_kernels_by_name("avx512")) {
    printf("this CPU has no AVX-512 BF16 / VNNI\n");
    return 0;
  }
  zero_operands();
  double f = best3(rate_fma, it), b = best3(rate_bf16, it), v = best3(rate_vnni, it);
  printf("vfmadd231ps zmm: %.2f G/s = %6.1f GFLOP/s (32 per instruction)\n", f * 1e-9, 32 * f * 1e-9);
  printf("vdpbf16ps   zmm: %.2f G/s = %6.1f GFLOP/s (64)\n", b * 1e-9, 64 * b * 1e-9);
  printf("vpdpbusd    zmm: %.2f G/s = %6.1f GOP/s (128)\n", v * 1e-9, 128 * v * 1e-9);
  if (cpu_amx_hw()) {
    double ab = amx_rate(0, it / 20), ai = amx_rate(1, it / 20);
    printf("tdpbf16ps   tile: %.3f G/s = %6.1f GFLOP/s (16384 per instruction)\n", ab * 1e-9, 16384 * ab * 1e-9);
    printf("tdpbusd     tile: %.3f G/s = %6.1f GOP/s (32768)\n", ai * 1e-9, 32768 * ai * 1e-9);
  } else {
    printf("no AMX (or the OS refused the tile state)\n");
  }
  return 0;
}
#else
int main(void) {
  printf("x86-64 only\n");
  return 0;
}
#endif
