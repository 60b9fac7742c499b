/* cpu_features.c: CPUID + XCR0 feature detection and the physical core count (see cpu_features.h). */
#include "core/cpu_features.h"

#include <ctype.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define LAYA_X86 1
#endif
#if defined(__linux__)
#include <sys/syscall.h>

#include "core/options.h"
#endif

static cpu_features g_features;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#ifdef LAYA_X86
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
  r[0] = r[1] = r[2] = r[3] = 0;
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

static unsigned long long xgetbv0(void) {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((unsigned long long)hi << 32) | lo;
}

static void detect_isa(cpu_features *f) {
  unsigned r[4];
  cpuid(0, 0, r);
  unsigned max_leaf = r[0];
  memcpy(f->vendor, &r[1], 4);
  memcpy(f->vendor + 4, &r[3], 4);
  memcpy(f->vendor + 8, &r[2], 4);
  f->vendor[12] = 0;

  cpuid(0x80000000u, 0, r);
  if (r[0] >= 0x80000004u) {
    unsigned b[12];
    for (unsigned i = 0; i < 3; i++) cpuid(0x80000002u + i, 0, b + 4 * i);
    memcpy(f->brand, b, 48);
    f->brand[48] = 0;
    char *s = f->brand;
    while (*s == ' ') s++;
    memmove(f->brand, s, strlen(s) + 1);
    for (size_t n = strlen(f->brand); n > 0 && f->brand[n - 1] == ' '; n--) f->brand[n - 1] = 0;
  }

  cpuid(1, 0, r);
  bool osxsave = (r[2] >> 27) & 1;
  unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  bool ymm = (xcr0 & 0x6) == 0x6;           /* SSE + AVX state */
  bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;  /* opmask + ZMM_Hi256 + Hi16_ZMM */
  bool tiles = (xcr0 & 0x60000ull) == 0x60000ull; /* XTILECFG + XTILEDATA */
  f->avx = ymm && ((r[2] >> 28) & 1);
  f->fma = f->avx && ((r[2] >> 12) & 1);
  f->f16c = f->avx && ((r[2] >> 29) & 1);
  if (max_leaf < 7) return;
  cpuid(7, 0, r);
  unsigned max_sub = r[0], ebx = r[1], ecx = r[2], edx = r[3];
  f->avx2 = f->avx && ((ebx >> 5) & 1);
  f->avx512f = zmm && ((ebx >> 16) & 1);
  f->avx512dq = f->avx512f && ((ebx >> 17) & 1);
  f->avx512bw = f->avx512f && ((ebx >> 30) & 1);
  f->avx512vl = f->avx512f && ((ebx >> 31) & 1);
  f->avx512_vnni = f->avx512f && ((ecx >> 11) & 1);
  f->amx_bf16 = tiles && ((edx >> 22) & 1);
  f->amx_tile = tiles && ((edx >> 24) & 1);
  f->amx_int8 = tiles && ((edx >> 25) & 1);
  if (max_sub < 1) return;
  cpuid(7, 1, r);
  f->avx_vnni = f->avx2 && ((r[0] >> 4) & 1);
  f->avx512_bf16 = f->avx512f && ((r[0] >> 5) & 1);
}
#endif

/* Distinct (package, core) pairs among the CPUs we may run on, capped by a cgroup CPU quota. */
static void detect_cores(cpu_features *f) {
  int logical = 0, physical = 0;
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    long seen_cap = CPU_SETSIZE;
    long *seen = malloc(sizeof(long) * (size_t)seen_cap);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
      if (!CPU_ISSET(cpu, &set)) continue;
      logical++;
      char path[128];
      long core = -1, pkg = -1;
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
      FILE *fp = fopen(path, "r");
      if (fp) {
        if (fscanf(fp, "%ld", &core) != 1) core = -1;
        fclose(fp);
      }
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
      fp = fopen(path, "r");
      if (fp) {
        if (fscanf(fp, "%ld", &pkg) != 1) pkg = -1;
        fclose(fp);
      }
      long key = core < 0 ? -1 - cpu : (pkg < 0 ? 0 : pkg) * 65536 + core; /* unknown: count it */
      bool dup = false;
      for (int i = 0; seen && i < physical && !dup; i++) dup = seen[i] == key;
      if (!dup && seen) seen[physical++] = key;
    }
    free(seen);
  }
  /* cgroup v2 quota: "max 100000" or "<quota> <period>" */
  FILE *fp = fopen("/sys/fs/cgroup/cpu.max", "r");
  if (fp) {
    char q[32];
    long period = 0;
    if (fscanf(fp, "%31s %ld", q, &period) == 2 && isdigit((unsigned char)q[0]) && period > 0) {
      long quota = atol(q), cpus = (quota + period - 1) / period;
      if (cpus >= 1 && cpus < physical) physical = (int)cpus;
      if (cpus >= 1 && cpus < logical) logical = (int)cpus;
    }
    fclose(fp);
  }
#endif
  if (logical <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    logical = n > 0 ? (int)n : 1;
  }
  if (physical <= 0 || physical > logical) physical = logical;
  f->logical_cpus = logical;
  f->physical_cores = physical;
}

static void apply_disable(cpu_features *f, const char *list) {
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ", ");
    char w[32];
    if (n > 0 && n < sizeof w) {
      memcpy(w, p, n);
      w[n] = 0;
      bool all = !strcmp(w, "all");
      if (all || !strcmp(w, "avx2")) f->avx2 = false;
      if (all || !strcmp(w, "fma")) f->fma = false;
      if (all || !strcmp(w, "f16c")) f->f16c = false;
      if (all || !strcmp(w, "avx512") || !strcmp(w, "avx512f"))
        f->avx512f = f->avx512bw = f->avx512vl = f->avx512dq = false;
      if (all || !strcmp(w, "avx512_bf16")) f->avx512_bf16 = false;
      if (all || !strcmp(w, "avx512_vnni")) f->avx512_vnni = false;
      if (all || !strcmp(w, "avx_vnni")) f->avx_vnni = false;
      if (all || !strcmp(w, "amx")) f->amx_tile = f->amx_bf16 = f->amx_int8 = false;
      if (all) f->avx = false;
    }
    p += n;
    while (*p == ',' || *p == ' ') p++;
  }
  /* keep the implications consistent: nothing wider survives without what it builds on */
  if (!f->avx) f->avx2 = f->fma = f->f16c = false;
  if (!f->avx2) f->avx_vnni = false;
  if (!f->avx2 || !f->fma) f->avx512f = false;
  if (!f->avx512f) f->avx512bw = f->avx512vl = f->avx512dq = f->avx512_bf16 = f->avx512_vnni = false;
}

static void detect(void) {
  cpu_features *f = &g_features;
  memset(f, 0, sizeof *f);
#ifdef LAYA_X86
  detect_isa(f);
#endif
  detect_cores(f);
  const char *dis = laya_env_process()->cpu_disable;
  if (dis && *dis) apply_disable(f, dis);
}

const cpu_features *cpu_features_get(void) {
  pthread_once(&g_once, detect);
  return &g_features;
}

bool cpu_amx_enable(void) {
  const cpu_features *f = cpu_features_get();
  if (!f->amx_tile) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18) */
  return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
  return false;
#endif
}

void cpu_features_describe(const cpu_features *f, char *out, int cap) {
  if (cap <= 0) return;
  int n = snprintf(out, (size_t)cap, "%s, %d cores (%d cpus):", f->brand[0] ? f->brand : "unknown CPU",
                   f->physical_cores, f->logical_cpus);
  struct {
    bool on;
    const char *name;
  } fl[] = {{f->avx, "avx"},           {f->avx2, "avx2"},
            {f->fma, "fma"},           {f->f16c, "f16c"},
            {f->avx512f, "avx512f"},   {f->avx512bw, "avx512bw"},
            {f->avx512vl, "avx512vl"}, {f->avx512dq, "avx512dq"},
            {f->avx512_bf16, "avx512_bf16"}, {f->avx512_vnni, "avx512_vnni"},
            {f->avx_vnni, "avx_vnni"}, {f->amx_tile, "amx_tile"},
            {f->amx_bf16, "amx_bf16"}, {f->amx_int8, "amx_int8"}};
  for (size_t i = 0; i < sizeof fl / sizeof fl[0] && n > 0 && n < cap; i++)
    if (fl[i].on) n += snprintf(out + n, (size_t)(cap - n), " %s", fl[i].name);
}
