/* laya: the command-line front end. `laya <subcommand> ...` runs a subcommand from src/cli/;
 * anything else is the routing / answering command (src/cli/laya_cli.c). */
#include <string.h>

#include "cli/cli.h"

/* Subcommands owned by other modules are dispatched once their source is in the tree (a fresh
 * configure picks up a newly added one). */
#if defined(__has_include)
#if __has_include("cli/tokenize.c")
#define HAVE_TOKENIZE 1
#endif
#if __has_include("cli/convert.c")
#define HAVE_CONVERT 1
#endif
#if __has_include("cli/calibrate.c")
#define HAVE_CALIBRATE 1
#endif
#endif

int main(int argc, char **argv) {
  if (argc > 1) {
    const char *sub = argv[1];
    (void)sub;
#ifdef HAVE_TOKENIZE
    if (!strcmp(sub, "tokenize")) return cli_tokenize_main(argc - 1, argv + 1);
#endif
#ifdef HAVE_CONVERT
    if (!strcmp(sub, "convert")) return cli_convert_main(argc - 1, argv + 1);
#endif
    if (!strcmp(sub, "eval")) return cli_eval_main(argc - 1, argv + 1);
#ifdef HAVE_CALIBRATE
    if (!strcmp(sub, "calibrate")) return cli_calibrate_main(argc - 1, argv + 1);
#endif
  }
  return cli_laya_main(argc, argv);
}
