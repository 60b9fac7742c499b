/*
 * convert.c: `laya convert CKPT OUT`, a Laya checkpoint directory to a single-file artifact whose
 * weights are already packed for the fast CPU backend (model/artifact.h), so loading it maps the
 * file and converts nothing.
 *
 *   laya convert CKPT OUT [--precision fp32|bf16|int8] [--threads N]
 *
 * The precision defaults to the CPU backend's default (fp32 on every CPU; LAYA_PRECISION when set).
 * `laya --model OUT ...` and laya_open(OUT) load the artifact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "laya.h"
#include "model/artifact.h"

static const char kUsage[] =
    "usage: laya convert [-h] [--precision fp32|bf16|int8] [--threads N] CKPT OUT\n"
    "\n"
    "  CKPT is a Laya checkpoint directory (rl_agent_config.json, model.safetensors, encoder/,\n"
    "  tokenizer/); OUT is the artifact file to write. The default precision is fp32 (Laya's CPU\n"
    "  numbers); bf16 and int8 are faster and move answers by up to their measured bounds.\n";

/* argparse's type=int, on --threads only */
static bool int_check(const char *option, const char *v, char *msg, size_t n) {
  return strcmp(option, "--threads") || cli_args_int_check(option, v, msg, n);
}

int cli_convert_main(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *prec = NULL;
  const char *threads_raw = NULL; /* argparse's type=int (cli_args_int_check), read after the parse */
  static const char *const precisions[] = {"fp32", "bf16", "int8", NULL};
  /* argparse's rules (src/cli/cli_args.h): unique prefixes, ambiguous ones refused */
  const arg_spec opts[] = {{"--precision", ARG_CHOICE, &prec, precisions},
                           {"--threads", ARG_STR, &threads_raw, NULL}};
  const size_t n_opts = sizeof opts / sizeof opts[0];
  const arg_parse_opts po = {true, 2, int_check, false};
  arg_result r;
  int perr = cli_args_parse_ex(argc, argv, 1, opts, n_opts, &po, &r);
  if (r.n_positional > 0) in = r.positional[0];
  if (r.n_positional > 1) out = r.positional[1];
  int verdict = cli_args_verdict(kUsage, "laya convert", perr, &r, !in ? "CKPT, OUT" : !out ? "OUT" : "");
  bool help = r.help;
  cli_args_free(opts, n_opts, &r);
  if (verdict >= 0) return verdict;
  if (help) {
    fputs(kUsage, stdout);
    return 0;
  }
  char *canon = NULL;
  long long threads_arg = threads_raw ? cli_args_int_value(threads_raw, &canon) : 0;
  if (threads_arg < 0 || threads_arg > 4096) { /* quoting the number given, of any size */
    int rc = cli_args_refuse(kUsage, "laya convert", "argument --threads: out of range (0 to 4096): %s",
                             canon ? canon : threads_raw);
    free(canon);
    return rc;
  }
  free(canon);
  int threads = (int)threads_arg;
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
