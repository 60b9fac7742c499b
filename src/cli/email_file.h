/*
 * email_file.h: `laya --email FILE`: the state Laya's email_state builds, from an email file.
 *
 * The file is a message as mail programs save it (RFC 5322 headers, a blank line, the body; an
 * mbox "From " line first is skipped) or just the text of a body. Subject and From are unfolded
 * and their RFC 2047 encoded words decoded; the body is the first text/plain part (else the first
 * text/html part) of a MIME message, its transfer encoding (base64, quoted-printable) undone and
 * its charset (UTF-8, US-ASCII, ISO-8859-1) read into UTF-8, invalid bytes becoming U+FFFD. Then
 * email_state(subject, body, sender=From, max_chars=max_chars) makes the state.
 */
#ifndef LAYA_CLI_EMAIL_FILE_H
#define LAYA_CLI_EMAIL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/json.h"

/* The state as a value (email_state_value), its strings in a. `what` names the file in error
 * messages. email_state_write prints it as Laya's json.dumps would. */
int cli_email_file_state(const char *content, size_t len, int64_t max_chars, const char *what, arena *a,
                         json_value *out, laya_error *err);

#endif
