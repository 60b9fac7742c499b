/* questions_file.h: `laya --questions FILE` (see questions_file.c). */
#ifndef LAYA_CLI_QUESTIONS_FILE_H
#define LAYA_CLI_QUESTIONS_FILE_H

#include "core/arena.h"
#include "core/json.h"

/* Load and check FILE. On success *questions points into arena a and *state_key names the
 * state field ("request" unless the file says otherwise). Errors are ValueErrors with Laya's
 * messages. */
int cli_load_questions(const char *path, arena *a, const json_value **questions,
                       const char **state_key, laya_error *err);

#endif
