/* kernels_select.c: which kernel table this CPU runs. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_amx.h"
#include "core/cpu_features.h"
#include "core/options.h"

/* core/cpu_features checks CPUID and XCR0 (and honours LAYA_CPU_DISABLE). */
cpu_isa cpu_isa_detect(void) {
  const cpu_features *f = cpu_features_get();
  cpu_isa r;
  r.avx2_fma = f->avx2 && f->fma;
  r.avx512 = r.avx2_fma && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq;
  r.avx512_bf16 = r.avx512 && f->avx512_bf16;
  r.avx512_vnni = r.avx512 && f->avx512_vnni;
  return r;
}

const cpu_kernels *cpu_kernels_by_name(const char *name) {
  cpu_isa isa = cpu_isa_detect();
  if (!strcmp(name, "scalar")) return &cpu_kernels_scalar;
  if (!strcmp(name, "avx2")) return isa.avx2_fma ? cpu_kernels_avx2() : NULL;
  /* The AVX-512 tables use BF16 and VNNI instructions throughout. "avx512" is this CPU's: Intel's
   * cores run vdpbf16ps at half the multiply-adds of their FMAs, AMD's Zen 4 at twice (bench/cpu/peak;
   * BENCHMARKS.md, "Intel without AMX"), so on Intel the bf16 GEMM runs on FMA ("avx512-fma");
   * "avx512-dot" / "avx512-fma" name either (tests, benchmarks). Intel CPUs with AMX run the amx
   * table, whose bf16 work is on the tiles. */
  if (!strcmp(name, "avx512") || !strcmp(name, "avx512-dot") || !strcmp(name, "avx512-fma")) {
    if (!isa.avx512_bf16 || !isa.avx512_vnni) return NULL;
    int fma = !strcmp(name, "avx512-fma") ||
              (!strcmp(name, "avx512") && !strcmp(cpu_features_get()->vendor, "GenuineIntel"));
    return fma ? cpu_kernels_avx512_fma() : cpu_kernels_avx512();
  }
  /* the AVX-512 table with AMX GEMMs (kernels_amx.h): CPUID, XCR0 and the OS's tile permission */
  if (!strcmp(name, "amx")) return isa.avx512_bf16 && isa.avx512_vnni ? cpu_kernels_amx() : NULL;
  /* the scalar table with the amx table's fp32 GEMM on emulated tiles (tests; every machine) */
  if (!strcmp(name, "amx-emu")) return cpu_kernels_amx_emu();
  return NULL;
}

const cpu_kernels *cpu_kernels_select_for(const char *force) {
  if (force && *force) {
    const cpu_kernels *k = cpu_kernels_by_name(force);
    if (k) return k;
  }
  const cpu_kernels *k = cpu_kernels_by_name("amx");
  if (!k) k = cpu_kernels_by_name("avx512");
  if (!k) k = cpu_kernels_by_name("avx2");
  return k ? k : &cpu_kernels_scalar;
}

/* The callers without laya_open's read (tests, `laya --version`): LAYA_CPU_ISA now, through the
 * table (a name it does not list reads as unset). */
const cpu_kernels *cpu_kernels_select(void) {
  laya_env_options env;
  laya_env_options_init(&env);
  laya_error ignored;
  laya_env_options_read_one(&env, "LAYA_CPU_ISA", &ignored);
  const cpu_kernels *k = cpu_kernels_select_for(env.cpu_isa);
  laya_env_options_free(&env);
  return k;
}

const char *backend_cpu_isa_selected(void) { return cpu_kernels_select()->name; }

const char *backend_cpu_isa_chosen(const char *force) { return cpu_kernels_select_for(force)->name; }

int backend_cpu_isa_usable(const char *name) { return cpu_kernels_by_name(name) != NULL; }
