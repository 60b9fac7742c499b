/* cli_args.h: the one command-line option parser of `laya` and its subcommands, table-driven and
 * with Python argparse's rules and messages (Laya's CLI is argparse, and scripts match on them):
 * "--name value" or "--name=value", "--" ends the options, a value may look like a negative
 * number ("-0.5"), and errors read "argument --x: invalid int value: 'y'",
 * "unrecognized arguments: --z", "argument --x: expected one argument". */
#ifndef LAYA_CLI_ARGS_H
#define LAYA_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

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
  /* cli_args_parse_ex with argparse set: */
  bool help;           /* -h / --help (or a unique prefix of --help) was met before any error */
  const char **extras; /* unknown options and positionals past max_positional, in argv order
                          (malloc'd); argparse reports them after its required-arguments check */
  int n_extras;
  char *error_full; /* argparse mode: the whole message when error had to cut it (a value of up to
                       4,300 digits, Python's longest int, is quoted whole); malloc'd, else NULL */
  int next; /* with subcommand: the argv index after the subcommand's name (0 when none met) */
} arg_result;

/* The value check of one option, run when the option is consumed (argparse's type=): false with
 * msg set to the text after "argument NAME: " ("invalid int value: 'x'"). */
typedef bool (*arg_check_fn)(const char *option, const char *value, char *msg, size_t n);

#define ARGS_NARGS_STAR (-2)

typedef struct arg_parse_opts {
  /* Python argparse's own parse (Laya's `laya-evals` parsers): unique prefixes of long options
   * ("--bas" for "--baseline", "--s=5"); an ambiguous prefix is refused, before anything else, as
   * "ambiguous option: --m could match --model, --min"; -h / --help are options (r->help, parsing
   * stops there; "-hx" and "--help=x" are refused); unknown options and surplus positionals go to
   * r->extras; a value must not look like an option ("-5" and "-.5" may, "-1e3" may not); the
   * first "--" ends the options and is dropped where a positional takes the arguments around it,
   * else kept as an extra; quoted values in messages are Python reprs. A single-dash flag may
   * have more single-dash options glued on ("-qh"); specs sharing a destination are one action,
   * named by all their option strings ("-q/--quiet"). ARG_INT takes what Python's int() takes
   * (Unicode digits, underscores, any size: saturated to long long), ARG_FLOAT what float()
   * takes (cli_py_float). */
  bool argparse;
  int max_positional;    /* positionals taken (argparse only; beyond go to extras); -1 = any;
                            ARGS_NARGS_STAR = one nargs='*' positional: the first run of
                            positionals (less its first "--"), later runs are extras */
  arg_check_fn check;    /* NULL = none; called for every option value before it is stored */
  bool subcommand;       /* stop at the first positional (a subparser's name, "--" included) */
} arg_parse_opts;

/* Parses argv[first..argc); 0 on success, -1 with r->error set. Free with cli_args_free (also
 * after an error). ARG_LIST destinations are grown with malloc and freed by cli_args_free only
 * for the specs passed in. */
int cli_args_parse(int argc, char **argv, int first, const arg_spec *specs, size_t n_specs, arg_result *r);
/* The same with options; the specs must list options in the order the Python parser added them
 * (an ambiguity message names the candidates in that order, after --help). */
int cli_args_parse_ex(int argc, char **argv, int first, const arg_spec *specs, size_t n_specs,
                      const arg_parse_opts *po, arg_result *r);
void cli_args_free(const arg_spec *specs, size_t n_specs, arg_result *r);
/* v as a refusal quotes it into buf (n bytes): Python's repr when pyrepr (argparse's %r), else
 * '%s'; returns buf */
const char *cli_args_quoted(const char *v, bool pyrepr, char *buf, size_t n);
/* Python's repr() of the str v, whole (malloc'd; NULL when out of memory): the one repr of the
 * command's messages (cli_args_quoted, laya eval's refusals) */
char *cli_args_repr(const char *v);

/* An integer option taken as a string (ARG_STR, checked by cli_args_int_check as argparse's
 * type=int checks it): the value saturated to long long, and in *canon (malloc'd; NULL to skip)
 * the number as Python prints int(raw), whatever its size, for a refusal to quote what was given */
long long cli_args_int_value(const char *raw, char **canon);
/* arg_check_fn for such options: Python int()'s syntax, else "invalid int value: 'x'" */
bool cli_args_int_check(const char *option, const char *value, char *msg, size_t n);

/* argparse's refusal: the usage block of usage (up to its first blank line), then
 * "PROG: error: MESSAGE" on stderr; returns 2 */
int cli_args_refuse(const char *usage, const char *prog, const char *fmt, ...)
    LAYA_PRINTF(3, 4);
/* argparse's verdict after cli_args_parse_ex (argparse mode), in its order: the parse error, then
 * (unless --help was met: r->help, for the caller to print) the required arguments MISSING names
 * ("" or NULL = none), then the unrecognized arguments; 2 when refused (printed), else -1 */
int cli_args_verdict(const char *usage, const char *prog, int perr, const arg_result *r, const char *missing);

#endif
