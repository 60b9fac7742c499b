/*
 * json.h: a JSON reader with Python json.loads semantics, and a writer with json.dumps semantics.
 *
 * Why our own: Laya's answers depend on how Python re-serialises a state (json.dumps with
 * ensure_ascii=False), so the reader must keep what Python keeps: int vs float, integers of any
 * size (the lexeme is kept), key order with Python's duplicate-key rule (the first position, the
 * last value), NaN / Infinity / -Infinity literals, and lone surrogate escapes.
 *
 * Values live in an arena owned by the caller; nothing is freed individually.
 */
#ifndef LAYA_CORE_JSON_H
#define LAYA_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/strbuf.h"

typedef enum json_type {
  JSON_NULL = 0,
  JSON_BOOL,
  JSON_INT,    /* no fraction or exponent in the text (Python int) */
  JSON_FLOAT,  /* a fraction or exponent, or NaN / Infinity / -Infinity (Python float) */
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
} json_type;

typedef struct json_value json_value;
typedef struct json_member json_member;

struct json_value {
  json_type type;
  bool b;          /* JSON_BOOL */
  bool big;        /* JSON_INT outside int64: use lex (exact) or d (approximate) */
  bool surrogate;  /* JSON_STRING holds a lone surrogate (encoded as WTF-8) */
  uint32_t n;      /* bytes of a string (excluding the NUL), items of an array, members of an object */
  const char *s;   /* JSON_STRING: NUL-terminated UTF-8; JSON_INT/FLOAT: the number's lexeme */
  int64_t i;       /* JSON_INT (when !big) */
  double d;        /* JSON_INT and JSON_FLOAT */
  json_value *items;    /* JSON_ARRAY */
  json_member *members; /* JSON_OBJECT, in Python dict order */
};

struct json_member {
  const char *key; /* NUL-terminated UTF-8 */
  uint32_t key_len;
  json_value value;
};

typedef struct json_parse_opts {
  int max_depth;            /* 0 = 1000 (Python's default recursion limit is about that) */
  bool allow_trailing;      /* accept text after the value (e.g. JSONL handled elsewhere) */
  bool replace_surrogates;  /* lone surrogate escapes become U+FFFD instead of WTF-8 */
  bool keep_duplicates;     /* keep every member of a repeated key, in order (for re-writing a
                               text that holds them, e.g. Laya's json.dumps of a dict whose keys
                               render alike: True and "true"); json_get then finds the last */
} json_parse_opts;

/* Parse `len` bytes. On error returns NULL and err names the byte offset and what was expected,
 * e.g. "invalid JSON at byte 17 (line 2, column 4): expected ',' or '}' after an object member". */
json_value *json_parse(const char *text, size_t len, arena *a, const json_parse_opts *opts,
                       laya_error *err);

/* Lookup in an object (NULL if v is not an object or the key is absent). */
const json_value *json_get(const json_value *obj, const char *key);
const json_value *json_getn(const json_value *obj, const char *key, size_t key_len);
bool json_is_number(const json_value *v); /* int or float, not bool */
/* Python truthiness (bool(v)): null, false, 0, 0.0, "", [] and {} are false; NULL is false. */
bool json_truthy(const json_value *v);
/* Does v hold a NaN or an infinity anywhere (which Python's json.dumps writes as NaN / Infinity, and
 * which strict JSON refuses)? */
bool json_has_nonfinite(const json_value *v);

/* A JSON_STRING value that borrows s (n bytes, NUL-terminated at s[n]). */
json_value json_string_n(const char *s, size_t n);
/* The same for a NUL-terminated string. */
json_value json_string(const char *s);
/* Scalar values, to build a value to write or to hand to the engine. */
json_value json_int(long long i); /* d holds the same number as a double */
json_value json_float(double d);
json_value json_bool(bool b);
json_value json_null(void);

/* Python's type name for error messages: "NoneType", "bool", "int", "float", "str", "list", "dict". */
const char *json_py_type(const json_value *v);

/* ---- Writing, as Python's json.dumps ---- */

typedef struct json_dump_opts {
  const char *item_sep;  /* NULL = ", " */
  const char *key_sep;   /* NULL = ": " */
  bool ensure_ascii;     /* false = write non-ASCII raw (Laya's serialize_state) */
  int indent;            /* < 0: none (single line); >= 0: Python's indent=N layout */
} json_dump_opts;

void json_dump(strbuf *sb, const json_value *v, const json_dump_opts *opts);
/* A deep copy of v in a (strings, lexemes, items and members); false when out of memory. */
bool json_copy(json_value *dst, const json_value *v, arena *a);
/* json_dump of a value nested `level` containers deep (its indentation with indent >= 0). */
void json_dump_level(strbuf *sb, const json_value *v, const json_dump_opts *opts, int level);
/* A Python str written as a JSON string literal (with the quotes). */
void json_dump_string(strbuf *sb, const char *s, size_t n, bool ensure_ascii);
/* Python float repr: "1.5", "1e+16", "1e-05", "-0.0", "nan" (json.dumps writes NaN/Infinity). */
int py_float_repr(double x, char out[32]);
/* json.dumps of a float: repr, except NaN, Infinity, -Infinity. */
int py_float_json(double x, char out[32]);
/* Python round(x, 4), half-to-even on the exact binary value. */
double py_round4(double x);

/* ---- The JSON-in / JSON-out shape of the entry points in laya.h ---- */

typedef int (*json_call_fn)(void *ctx, const json_value *req, strbuf *out, laya_error *err);
/* Check the pointers (the error names `where`), parse request_json (a parse error names its byte
 * offset), run fn, and hand the answer to *result_json (malloc'd) unless fn failed or the output
 * ran out of memory. *result_json is NULL on error. */
int json_call(const char *where, const void *self, const char *request_json, json_call_fn fn,
              void *ctx, char **result_json, laya_error *err);

#endif
