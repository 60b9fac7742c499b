/*
 * email.h: email cleaning and email states, as Laya's `laya.email` (laya==0.4.15) does them.
 *
 * `email_clean` is clean_email_body: line endings unified, quoted history cut at the first reply
 * header of the clients Laya knows (English, Portuguese, Spanish, French), `>` lines dropped, a
 * sign-off or device footer in the last part of the message cut with what follows, disclaimer
 * sentences removed, runs of spaces and tabs collapsed, and the result cut to `max_chars` code
 * points (with Laya's arithmetic for 0 and negative budgets). `email_state_value` is email_state:
 * the state {"subject", "body", "from", ...extra} Laya builds from the same arguments.
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

/* email_state(**req) with req {"subject", "body", "sender"?, "clean"?, "max_chars"?, ...extra}, as a
 * value: *out becomes the state object {"subject", "body", "from"?, ...extra} in Python dict order.
 * The subject and the cleaned body are copied into a; the sender, an uncleaned body and the extra
 * values are borrowed from req (keep req alive as long as *out). A string holding a lone surrogate
 * has its `surrogate` flag set, as json_parse would set it. Argument errors are Laya's. */
int email_state_value(const json_value *req, arena *a, json_value *out, laya_error *err);

/* The state email_state_value built, written as json.dumps writes it (", " / ": ", non-ASCII raw;
 * a body holding a lone surrogate is written all-ASCII, the one way JSON text can carry it). */
void email_state_write(strbuf *out, const json_value *state);

/* email_state_value then email_state_write: out gets the state as JSON text (laya_email_state). */
int email_state_json(const json_value *req, strbuf *out, laya_error *err);

#endif
