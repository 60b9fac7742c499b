/* cli_util.h: small helpers shared by the `laya` subcommands. */
#ifndef LAYA_CLI_UTIL_H
#define LAYA_CLI_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/json.h"
#include "core/strbuf.h"

/* Read a whole file (or stdin for "-"). NULL with errno set on failure. */
char *cli_read_file(const char *path, size_t *len);
/* Python's str.splitlines() over text already read with universal newlines, keeping only
 * stripped non-blank lines. Returns the count; lines[i] are malloc'd. */
size_t cli_split_lines(const char *text, size_t len, char ***lines);
void cli_free_lines(char **lines, size_t n);
/* Python's str.strip() into a new malloc'd string. */
char *cli_strip(const char *s);
/* Byte length of the first n code points. */
size_t cli_utf8_prefix(const char *s, size_t n);
/* printf("%-Ns", s) as Python pads: by code points. */
void cli_pad(strbuf *sb, const char *s, size_t width);
/* json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: one line). */
void cli_dump(strbuf *sb, const json_value *v, int indent);
/* Parse text of JSON into arena a; NULL (and err filled) on failure. */
json_value *cli_parse(const char *text, size_t len, arena *a, laya_error *err);
/* Parse a Python int literal as argparse's type=int would (whitespace, sign, underscores). */
bool cli_parse_int(const char *s, long long *out);

#endif
