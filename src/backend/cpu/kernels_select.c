/* kernels_select.c: which kernel table this CPU runs (CPUID + XGETBV, checked once). */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((unsigned long long)edx << 32) | eax;
}

cpu_isa cpu_isa_detect(void) {
  cpu_isa r = {0, 0, 0, 0};
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return r;
  int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return r;
  unsigned long long xcr0 = xgetbv0();
  int ymm_os = (xcr0 & 0x6) == 0x6, zmm_os = (xcr0 & 0xe6) == 0xe6;
  if (__get_cpuid_max(0, NULL) < 7) return r;
  __cpuid_count(7, 0, a, b, c, d);
  int avx2 = (b >> 5) & 1, f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1,
      vl = (b >> 31) & 1, vnni = (c >> 11) & 1;
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  int bf16 = (a1 >> 5) & 1;
  r.avx2_fma = ymm_os && avx2 && fma;
  r.avx512 = r.avx2_fma && zmm_os && f && dq && bw && vl;
  r.avx512_bf16 = r.avx512 && bf16;
  r.avx512_vnni = r.avx512 && vnni;
  return r;
}
#else
cpu_isa cpu_isa_detect(void) {
  cpu_isa r = {0, 0, 0, 0};
  return r;
}
#endif

const cpu_kernels *cpu_kernels_by_name(const char *name) {
  cpu_isa isa = cpu_isa_detect();
  if (!strcmp(name, "scalar")) return &cpu_kernels_scalar;
  if (!strcmp(name, "avx2")) return isa.avx2_fma ? cpu_kernels_avx2() : NULL;
  /* the AVX-512 table uses BF16 and VNNI instructions throughout */
  if (!strcmp(name, "avx512"))
    return isa.avx512_bf16 && isa.avx512_vnni ? cpu_kernels_avx512() : NULL;
  return NULL;
}

const cpu_kernels *cpu_kernels_select(void) {
  const char *force = getenv("LAYA_CPU_ISA");
  if (force && *force) {
    const cpu_kernels *k = cpu_kernels_by_name(force);
    if (k) return k;
  }
  const cpu_kernels *k = cpu_kernels_by_name("avx512");
  if (!k) k = cpu_kernels_by_name("avx2");
  return k ? k : &cpu_kernels_scalar;
}
