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
/* Parse text of JSON into arena a; NULL (and err filled) on failure. */
json_value *cli_parse(const char *text, size_t len, arena *a, laya_error *err);
/* Parse a Python int literal as argparse's type=int would (whitespace, sign, underscores). */
bool cli_parse_int(const char *s, long long *out);
/* Python int(s) (argparse's type=int) at any size: surrounding whitespace (Unicode spaces too), a
 * sign, underscores between digits, leading zeros, any Unicode decimal digits ("١٢", "１２"), at
 * most 4,300 digits (Python's int_max_str_digits). False when int() refuses s; else *neg and the canonical digits (no sign, no leading
 * zeros, "0" for zero, so never negative zero) in *digits (malloc'd). */
bool cli_py_int_digits(const char *s, bool *neg, char **digits);

/* Python float(s) (argparse's type=float): py_float_from_str after float()'s own reading of a str
 * (Unicode spaces are spaces, Unicode decimal digits their ASCII digits: "１.５" is 1.5). */
bool cli_py_float(const char *s, double *out);

/* Where Python's read of a file as UTF-8 fails, with its UnicodeDecodeError text: false when the
 * bytes are UTF-8. chunk_size is what one decode call gets: CLI_PY_TEXT_CHUNK for a text file read
 * line by line (TextIOWrapper's 8192-byte chunks through an incremental decoder, which keeps a
 * sequence cut by a chunk's end for the next chunk), 0 for a whole read (`f.read()`). *avail is
 * the number of bytes decoded before the failing decode (the lines ending inside them are read,
 * and their errors reported, first); msg's position counts from the start of that decode's input. */
#define CLI_PY_TEXT_CHUNK 8192
bool cli_py_utf8_error(const char *text, size_t n, size_t chunk_size, size_t *avail, char *msg, size_t cap);
/* JSON text written with ensure_ascii=True (what laya_predict returns) as json.dumps writes it
 * with ensure_ascii=False: \uXXXX escapes of U+007F and above become the characters (a
 * surrogate pair one character; a lone surrogate stays escaped). */
void cli_unascii(strbuf *out, const char *json);

/* A RouteDecision as `laya` shows it in text: "Model     : ...", "Reason    : ..." and, when the
 * detection (detection_len bytes of RJ_PY text, as the decision holds it) is a non-empty object,
 * "Detected  : " and that object on one line. Written from the decision's facts, not read back. */
void cli_text_decision(strbuf *sb, const char *model, const char *reason, const char *detection,
                       size_t detection_len);

/* A progress line on stderr ("\r 1200/100000 lines  850/s  ETA 1m55s"), for --batch, eval run,
 * calibrate and --long: drawn only when stderr is a terminal and quiet is false, at most every
 * 0.2 s and at the end. total 0 = unknown (no ETA). */
typedef struct cli_progress {
  bool on;
  size_t total, done;
  double start, last;
  const char *unit;
  int width; /* characters of the last line drawn (to blank it) */
} cli_progress;
void cli_progress_begin(cli_progress *p, size_t total, const char *unit, bool quiet);
void cli_progress_update(cli_progress *p, size_t done);
void cli_progress_end(cli_progress *p); /* final line and newline (if anything was drawn) */

#endif
