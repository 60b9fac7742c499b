/* laya: the command-line front end. `laya <subcommand> ...` runs a subcommand from src/cli/;
 * anything else is the routing / answering command (src/cli/laya_cli.c). */
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
};

int main(int argc, char **argv) {
  for (size_t i = 0; argc > 1 && i < sizeof kSubcommands / sizeof *kSubcommands; i++)
    if (!strcmp(argv[1], kSubcommands[i].name)) return kSubcommands[i].main(argc - 1, argv + 1);
  return cli_laya_main(argc, argv);
}
