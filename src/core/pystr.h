/*
 * pystr.h: the few pieces of Python's str and repr semantics that Laya's messages and rendered
 * texts depend on. Laya formats errors with %r and renders option labels with str(), so a byte
 * for byte match needs Python's quote choice, escapes, isprintable/isspace tables and float text.
 */
#ifndef LAYA_CORE_PYSTR_H
#define LAYA_CORE_PYSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/json.h"
#include "core/strbuf.h"

/* repr() of a Python str given as UTF-8 (WTF-8 lone surrogates are escaped as '\udXXX'). */
void py_repr_str(strbuf *sb, const char *s, size_t n);
/* repr() of the Python object json.loads would build for v: {'a': [1, 2.5, True, None]}. */
void py_repr_json(strbuf *sb, const json_value *v);
/* str() of a scalar: "True", "1.0", "1e+16", "nan", the text of a str. Containers use repr. */
void py_str_json(strbuf *sb, const json_value *v);

/* Python str.isspace() for one code point. */
bool py_isspace(uint32_t cp);
/* Python str.strip() with no argument: [*start, *start + *len) narrowed in place. */
void py_strip(const char *s, size_t n, size_t *start, size_t *len);
/* True when str.strip() would leave nothing. */
bool py_is_blank(const char *s, size_t n);
/* Python str.lower() (full mapping for U+0130, final sigma by context). */
void py_lower(strbuf *sb, const char *s, size_t n);

/* float(x) for a Python str: whitespace, sign, digits with single underscores between them,
 * inf/infinity/nan in any case. Returns false where Python raises ValueError. */
bool py_float_from_str(const char *s, size_t n, double *out);

/* Decode one UTF-8 (or WTF-8) code point at s[i]; returns its length (>= 1). */
int py_utf8_next(const char *s, size_t n, size_t i, uint32_t *cp);

#endif
