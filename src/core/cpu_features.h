/*
 * cpu_features.h: what the CPU (and the OS) let us use, detected once.
 *
 * A SIMD feature is reported only when the CPU has it AND the OS saves its registers (XCR0), so a
 * kernel chosen from these flags can run. LAYA_CPU_DISABLE="avx512,amx" (a comma list of the
 * names below, or "all") clears features, to test the narrower kernel paths on a wide machine:
 *   avx2 fma f16c avx512 (= avx512f/bw/vl/dq and everything built on them) avx512_bf16
 *   avx512_vnni avx_vnni amx
 */
#ifndef LAYA_CORE_CPU_FEATURES_H
#define LAYA_CORE_CPU_FEATURES_H

#include <stdbool.h>

typedef struct cpu_features {
  char vendor[13];   /* "GenuineIntel", "AuthenticAMD", "" off x86 */
  char brand[49];    /* processor brand string, trimmed */
  bool avx, avx2, fma, f16c;
  bool avx512f, avx512bw, avx512vl, avx512dq;
  bool avx512_bf16, avx512_vnni, avx_vnni;
  bool amx_tile, amx_bf16, amx_int8; /* usable only after cpu_amx_enable() */
  int logical_cpus;   /* CPUs this process may run on */
  int physical_cores; /* distinct cores among them (SMT siblings counted once) */
} cpu_features;

/* Detected on first call (thread-safe); the same pointer afterwards. */
const cpu_features *cpu_features_get(void);

/* Linux requires a process to ask before it touches AMX tile data. Returns true when AMX is
 * present and granted (idempotent). */
bool cpu_amx_enable(void);

/* One line for logs and benchmarks, e.g. "AMD EPYC, 2 cores: avx2 fma avx512f ... avx512_bf16". */
void cpu_features_describe(const cpu_features *f, char *out, int cap);

#endif
