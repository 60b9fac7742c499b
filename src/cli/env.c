/* env.c: `laya env [--values]`, the environment variables the library reads, from the one table
 * (core/options.c): each with its type, values, default and meaning; --values adds what each is
 * set to now. The servers' own variables are docs/serve.md's. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/options.h"

int cli_env_main(int argc, char **argv) {
  int values = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--values")) {
      values = 1;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: laya env [--values]\n\nThe environment variables laya.c's library reads, with their "
             "values and defaults;\n--values also prints what each is set to now.\n");
      return 0;
    } else {
      fprintf(stderr, "laya env: unknown argument %s (usage: laya env [--values])\n", argv[i]);
      return 2;
    }
  }
  printf("Environment variables of the laya.c library (laya-serve and laya-mcp add theirs: docs/serve.md)\n\n");
  laya_env_print(stdout, values);
  return 0;
}
