/* cli_args.h: the one command-line option parser of `laya` and its subcommands, table-driven and
 * with Python argparse's rules and messages (Laya's CLI is argparse, and scripts match on them):
 * "--name value" or "--name=value", "--" ends the options, a value may look like a negative
 * number ("-0.5"), and errors read "argument --x: invalid int value: 'y'",
 * "unrecognized arguments: --z", "argument --x: expected one argument". */
#ifndef LAYA_CLI_ARGS_H
#define LAYA_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
  ARG_FLAG,   /* bool *                                                       */
  ARG_STR,    /* const char **                                                */
  ARG_INT,    /* long long *                                                  */
  ARG_FLOAT,  /* double * (Python float() syntax)                             */
  ARG_CHOICE, /* const char **, value one of `choices`                        */
  ARG_LIST,   /* arg_list *, repeatable; value one of `choices` when given    */
} arg_kind;

typedef struct arg_list {
  const char **items;
  int n, cap;
} arg_list;

typedef struct arg_spec {
  const char *name; /* "--model", "-h" */
  arg_kind kind;
  void *dest;
  const char *const *choices; /* NULL-terminated, for ARG_CHOICE (and optionally ARG_LIST) */
} arg_spec;

typedef struct arg_result {
  const char **positional; /* argv entries that are not options, in order (malloc'd) */
  int n_positional;
  char error[512]; /* argparse's wording, without the "prog: error: " prefix */
} arg_result;

/* Parses argv[first..argc); 0 on success, -1 with r->error set. Free with cli_args_free (also
 * after an error). ARG_LIST destinations are grown with malloc and freed by cli_args_free only
 * for the specs passed in. */
int cli_args_parse(int argc, char **argv, int first, const arg_spec *specs, size_t n_specs, arg_result *r);
void cli_args_free(const arg_spec *specs, size_t n_specs, arg_result *r);

#endif
