/* cli.h: the subcommands of the `laya` command. cmd/laya.c dispatches `laya <sub> ...` to
 * cli_<sub>_main(argc, argv) with argv[0] = "<sub>"; each returns the process exit code
 * (0 ok, 1 a failed gate/check, 2 usage or input error with a message on stderr). */
#ifndef LAYA_CLI_H
#define LAYA_CLI_H

int cli_tokenize_main(int argc, char **argv); /* src/cli/tokenize.c: laya tokenize */
int cli_convert_main(int argc, char **argv);  /* src/cli/convert.c: laya convert CKPT OUT */
int cli_laya_main(int argc, char **argv);     /* src/cli/laya_cli.c: route / predict / batch / prompt */
int cli_eval_main(int argc, char **argv);     /* src/cli/eval.c: laya eval {validate,run,agreement,compare,evidence} */
struct arg_result;
/* src/cli/eval_agreement.c: laya eval agreement; top: `laya eval`'s own parse (its extras) */
int cli_eval_agreement(int argc, char **argv, const struct arg_result *top);
/* src/cli/eval.c: argparse's verdict on the parse of `laya eval CMD` (cli_args_parse_ex, argparse
 * mode), in argparse's order: a parse error (CMD's usage block from HELP, then "laya eval CMD:
 * error: ..."), --help (HELP on stdout, 0), the required arguments MISSING names ("" = none), then
 * the unrecognized arguments of `laya eval` (top, its own parse) and of CMD (the top usage,
 * "laya eval: error: ..."). -1 when the command goes on, else its exit status. */
int cli_eval_verdict(const char *cmd, const char *help, int perr, const struct arg_result *r, const char *missing,
                     const struct arg_result *top);
int cli_calibrate_main(int argc, char **argv); /* src/cli/calibrate.c: laya calibrate */
int cli_env_main(int argc, char **argv);       /* src/cli/env.c: laya env (the environment table) */
int cli_presets_main(int argc, char **argv);   /* src/cli/presets_cmd.c: laya presets [list|show NAME] */

#endif
