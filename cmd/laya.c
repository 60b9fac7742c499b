/* laya: the command-line front end. `laya <subcommand> ...` runs a subcommand from src/cli/;
 * anything else is the routing / answering command (src/cli/laya_cli.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
  const char *name;
  int (*main)(int argc, char **argv);
} kSubcommands[] = {
    {"tokenize", cli_tokenize_main},
    {"convert", cli_convert_main},
    {"eval", cli_eval_main},
    {"calibrate", cli_calibrate_main},
    {"env", cli_env_main},
    {"presets", cli_presets_main},
};

int main(int argc, char **argv) {
  /* The command answers its requests and exits: warming a CUDA model's small-pass buckets at
   * laya_open (0.6-1.7 s for ModernBERT-large, BENCHMARKS.md "First request after open") costs
   * more than the one first-call stall (~0.4 s) it would save. An explicit LAYA_CUDA_WARMUP wins. */
  setenv("LAYA_CUDA_WARMUP", "0", 0);
  /* Laya's `laya train ...` runs its trainer; laya.c answers with trained checkpoints only, so
   * it says so rather than routing "train" as a request */
  if (argc > 1 && !strcmp(argv[1], "train")) {
    fprintf(stderr, "laya: 'laya train' is Python Laya's trainer and is not part of laya.c; train with "
                    "Python Laya (pip install laya==0.4.15, then laya train ...) and answer with the "
                    "checkpoint it saves here (laya --model DIR ...).\n");
    return 2;
  }
  for (size_t i = 0; argc > 1 && i < sizeof kSubcommands / sizeof *kSubcommands; i++)
    if (!strcmp(argv[1], kSubcommands[i].name)) return kSubcommands[i].main(argc - 1, argv + 1);
  return cli_laya_main(argc, argv);
}
