/*
 * convert.c: `laya convert CKPT OUT`, a Laya checkpoint directory to a single-file artifact whose
 * weights are already packed for the fast CPU backend (model/artifact.h), so loading it maps the
 * file and converts nothing.
 *
 *   laya convert CKPT OUT [--precision fp32|bf16|int8] [--threads N]
 *
 * The precision defaults to the CPU backend's default here (bf16 on AVX-512 BF16 CPUs, else
 * fp32). `laya --model OUT ...` and laya_open(OUT) load the artifact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "laya.h"
#include "model/artifact.h"

static const char kUsage[] =
    "usage: laya convert CKPT OUT [--precision fp32|bf16|int8] [--threads N]\n"
    "  CKPT is a Laya checkpoint directory (rl_agent_config.json, model.safetensors, encoder/,\n"
    "  tokenizer/); OUT is the artifact file to write. The default precision is bf16 on CPUs with\n"
    "  AVX-512 BF16, else fp32.\n";

static int usage_error(const char *msg) {
  fprintf(stderr, "laya convert: %s\n%s", msg, kUsage);
  return 2;
}

int cli_convert_main(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *prec = NULL;
  int threads = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(kUsage, stdout);
      return 0;
    } else if (!strcmp(a, "--precision") && i + 1 < argc) {
      prec = argv[++i];
    } else if (!strncmp(a, "--precision=", 12)) {
      prec = a + 12;
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (a[0] == '-' && a[1]) {
      char msg[256];
      snprintf(msg, sizeof msg, "unknown option %s", a);
      return usage_error(msg);
    } else if (!in) {
      in = a;
    } else if (!out) {
      out = a;
    } else {
      return usage_error("too many arguments");
    }
  }
  if (!in || !out) return usage_error("CKPT and OUT are required");
  if (prec && strcmp(prec, "fp32") && strcmp(prec, "bf16") && strcmp(prec, "int8"))
    return usage_error("--precision must be fp32, bf16 or int8");
  laya_options o;
  laya_options_init(&o);
  o.precision = prec;
  o.threads = threads;
  laya_error err;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (laya_convert(in, out, &o, &err)) {
    fprintf(stderr, "laya convert: %s\n", err.message);
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  artifact *a = artifact_open(out, &err);
  if (!a) {
    fprintf(stderr, "laya convert: wrote %s but cannot read it back: %s\n", out, err.message);
    return 1;
  }
  size_t bytes = 0;
  FILE *f = fopen(out, "rb");
  if (f) {
    fseek(f, 0, SEEK_END);
    bytes = (size_t)ftell(f);
    fclose(f);
  }
  printf("%s: %s weights, %d stored files, %.1f MB, converted in %.1f s\n", out,
         backend_precision_name(artifact_precision(a)), artifact_n_files(a), bytes / 1e6,
         (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
  artifact_close(a);
  return 0;
}
