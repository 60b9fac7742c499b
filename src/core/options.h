/*
 * options.h: the one table of the environment variables laya.c's library reads (name, type, range,
 * default, help), and the one function that reads them.
 *
 * Every read of the environment in the library goes through laya_env(NAME), which returns what
 * getenv returns; a Debug build asserts that NAME is in the table, so a variable cannot be read
 * without being listed (and described by `laya env`). Each value is still parsed where it is used,
 * with the message naming the variable that refuses a bad value (LAYA_PRECISION, LAYA_THREADS,
 * ...); the table says what the values may be.
 *
 * Research switches (LAYA_OPT_RESEARCH: kernel studies, per-layer precision experiments) are read
 * only in a build with LAYA_RESEARCH_SWITCHES (CMake option, ON by default because the accuracy
 * tests and bench/cpu/ use them); with it OFF, laya_env returns NULL for them, so a production
 * build's forward cannot be changed from the environment.
 *
 * The CUDA backend (src/backend/cuda/) links no laya symbol and reads its variables itself; they
 * are listed here (LAYA_OPT_CUDA) so that the listing is complete. The servers' own variables
 * (LAYA_HOST, LAYA_PORT, ...) are serve/config.c's, documented in docs/serve.md.
 */
#ifndef LAYA_CORE_OPTIONS_H
#define LAYA_CORE_OPTIONS_H

#include <stdio.h>

enum {
  LAYA_OPT_RESEARCH = 1, /* read only with LAYA_RESEARCH_SWITCHES */
  LAYA_OPT_TEST = 2,     /* a test hook */
  LAYA_OPT_CUDA = 4,     /* read by the CUDA backend itself */
  LAYA_OPT_EXTERNAL = 8  /* a standard variable of other tools (HOME, HF_*), read as they define it */
};

typedef struct laya_option {
  const char *env;     /* the variable */
  const char *type;    /* "string", "int", "number", "bool", "enum", "path", "json" */
  const char *range;   /* the values it takes */
  const char *def;     /* the default when unset */
  const char *help;
  unsigned flags;
} laya_option;

extern const laya_option laya_env_table[];
extern const int laya_env_count;

/* getenv(name) for a variable of the table (NULL for a research switch in a build without them). */
const char *laya_env(const char *name);
/* The table's row for name, or NULL. */
const laya_option *laya_option_find(const char *name);
/* The table as text (one variable a paragraph), for `laya env`; with current values when
 * with_values (unset ones say so). */
void laya_env_print(FILE *f, int with_values);

#endif
