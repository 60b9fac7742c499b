/*
 * email.h: email cleaning and email states, as Laya's `laya.email` (laya==0.4.15) does them.
 *
 * `email_clean` is clean_email_body: line endings unified, quoted history cut at the first reply
 * header of the clients Laya knows (English, Portuguese, Spanish, French), `>` lines dropped, a
 * sign-off or device footer in the last part of the message cut with what follows, disclaimer
 * sentences removed, runs of spaces and tabs collapsed, and the result cut to `max_chars` code
 * points (with Laya's arithmetic for 0 and negative budgets). `email_state_json` is email_state:
 * the JSON state {"subject", "body", "from", ...extra} Laya builds from the same arguments.
 * Pure text; thread-safe (the patterns are compiled once).
 */
#ifndef LAYA_CORE_EMAIL_H
#define LAYA_CORE_EMAIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/json.h"
#include "core/strbuf.h"

#define EMAIL_DEFAULT_MAX_CHARS 3000

/* clean_email_body(body, max_chars): body is UTF-8 (WTF-8 lone surrogates are kept as they are),
 * the result is appended to out. Returns 0, or an error (out of memory, a pattern failure). */
int email_clean(const char *body, size_t n, int64_t max_chars, strbuf *out, laya_error *err);

/* clean_email_body(**req) with req a JSON object {"body": str|null, "max_chars": int}; out gets the
 * cleaned text as a JSON string. Argument errors are Laya's (TypeError / AttributeError texts). */
int email_clean_json(const json_value *req, strbuf *out, laya_error *err);

/* email_state(**req) with req {"subject", "body", "sender"?, "clean"?, "max_chars"?, ...extra};
 * out gets the state as JSON (json.dumps layout, non-ASCII written raw). */
int email_state_json(const json_value *req, strbuf *out, laya_error *err);

#endif
