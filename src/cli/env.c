/* env.c: `laya env [--values]`, the environment variables the library reads, from the one table
 * (core/options.c): each with its type, values, default and meaning; --values adds what each is
 * set to now. The servers' own variables are docs/serve.md's. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "core/options.h"

static const char kEnvUsage[] =
    "usage: laya env [-h] [--values]\n"
    "\n"
    "The environment variables laya.c's library reads, with their values and defaults;\n"
    "--values also prints what each is set to now.\n";

int cli_env_main(int argc, char **argv) {
  bool values = false;
  /* argparse's rules (src/cli/cli_args.h): --values or a prefix of it, -h / --help */
  const arg_spec opts[] = {{"--values", ARG_FLAG, &values, NULL}};
  const arg_parse_opts po = {true, 0, NULL, false};
  arg_result r;
  int perr = cli_args_parse_ex(argc, argv, 1, opts, 1, &po, &r);
  int rc = cli_args_verdict(kEnvUsage, "laya env", perr, &r, "");
  bool help = r.help;
  cli_args_free(opts, 1, &r);
  if (rc >= 0) return rc;
  if (help) {
    fputs(kEnvUsage, stdout);
    return 0;
  }
  printf("Environment variables of the laya.c library (laya-serve and laya-mcp add theirs: docs/serve.md)\n\n");
  laya_env_print(stdout, values);
  return 0;
}
