/* precision.h: `--precision` of the answering modes and `laya --version` (precision.c). */
#ifndef LAYA_CLI_PRECISION_H
#define LAYA_CLI_PRECISION_H

#include <stdio.h>

/* The values --precision takes (NULL-terminated, for ARG_CHOICE). */
extern const char *const cli_precisions[];
/* Apply a --precision value (NULL: none given) to every model this process opens. */
void cli_use_precision(const char *p);
/* Version, the CPU kernel tables this machine runs and the one in use, the precision models
 * open with, CUDA devices. */
void cli_print_version(FILE *f);

#endif
