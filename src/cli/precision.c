/*
 * precision.c: the `--precision` flag every answering mode of `laya` shares, and `laya --version`.
 *
 * The flag hands its value to the library as LAYA_PRECISION (laya_open reads it when
 * laya_options.precision is unset), so one rule covers the checkpoints the Router opens, a
 * `--model DIR`, eval and calibrate alike.
 */
#include "cli/precision.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "backend/backend.h"
#include "laya.h"

const char *const cli_precisions[] = {"fp32", "bf16", "int8", "fp16", "fp8", NULL};

void cli_use_precision(const char *p) {
  if (p && *p) setenv("LAYA_PRECISION", p, 1);
}

void cli_print_version(FILE *f) {
  fprintf(f, "laya.c %s (answers as Laya %s)\n", LAYA_VERSION, LAYA_COMPAT_VERSION);
  static const char *const tables[] = {"amx", "avx512", "avx2", "scalar"};
  fprintf(f, "cpu kernel tables: ");
  int n = 0;
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
    if (backend_cpu_isa_usable(tables[i])) fprintf(f, "%s%s", n++ ? " " : "", tables[i]);
  const char *force = getenv("LAYA_CPU_ISA");
  fprintf(f, " (in use: %s%s)\n", backend_cpu_isa_selected(), force && *force ? ", from LAYA_CPU_ISA" : "");
  const char *env = getenv("LAYA_PRECISION"), *amp = getenv("LAYA_CPU_AMP");
  int amp16 = amp && (!strcasecmp(amp, "bf16") || !strcasecmp(amp, "bfloat16"));
  fprintf(f, "cpu precision: %s (%s); fp32 is the default on every CPU (Laya's numbers), bf16 and int8 are opt-in\n",
          env && *env ? env : amp16 ? "bf16" : backend_precision_name(backend_cpu_default_precision()),
          env && *env ? "from LAYA_PRECISION or --precision" : amp16 ? "from LAYA_CPU_AMP" : "default");
  int count = 0;
  if (!backend_cuda_available(&count)) fprintf(f, "cuda: not available (%s)\n", backend_cuda_unavailable_reason());
  else fprintf(f, "cuda: ");
  if (count > 0) fprintf(f, "%d device%s\n", count, count > 1 ? "s" : "");
}
