/* questions_file.c: reading `laya --questions FILE`, with the shapes and messages of Laya's CLI.
 *
 * The file is a bare {question id: definition} object, or {"questions": {...}, "state_key":
 * "..."} naming the state field the instructions read (default "request"). */
#include "cli/questions_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "core/error.h"
#include "core/pystr.h"

int cli_load_questions(const char *path, arena *a, const json_value **questions,
                       const char **state_key, laya_error *err) {
  size_t len;
  char *text = cli_read_file(path, &len);
  if (!text) {
    if (errno == ENOENT) return laya_value_error(err, "no such --questions file: %s", path);
    return laya_err(err, LAYA_ERR_IO, "OSError", "could not read --questions file %s (%s)", path,
                    strerror(errno));
  }
  laya_error perr = {0};
  json_value *raw = cli_parse(text, len, a, &perr);
  free(text);
  if (!raw)
    return laya_value_error(err, "--questions file %s is not valid JSON: %s", path, perr.message);
  if (raw->type != JSON_OBJECT)
    return laya_value_error(err, "--questions file must be a JSON object of question id -> definition");
  const json_value *qs = raw;
  const char *key = "request";
  /* the wrapper form: only "questions" and optionally "state_key" at the top */
  bool only_wrapper_keys = true;
  for (uint32_t i = 0; i < raw->n; i++)
    if (strcmp(raw->members[i].key, "questions") && strcmp(raw->members[i].key, "state_key"))
      only_wrapper_keys = false;
  const json_value *inner = json_get(raw, "questions");
  bool wrapped = false;
  if (only_wrapper_keys && inner) {
    if (json_get(raw, "state_key") || inner->type != JSON_OBJECT || inner->n == 0) {
      wrapped = true;
    } else {
      wrapped = true;
      for (uint32_t i = 0; i < inner->n; i++)
        if (inner->members[i].value.type != JSON_OBJECT) wrapped = false;
    }
  }
  if (wrapped) {
    if (inner->type != JSON_OBJECT)
      return laya_value_error(err, "the 'questions' field of the --questions file must be an object");
    qs = inner;
    const json_value *sk = json_get(raw, "state_key");
    if (sk) {
      if (sk->type != JSON_STRING || py_is_blank(sk->s, sk->n)) {
        strbuf r;
        sb_init(&r);
        py_repr_json(&r, sk);
        laya_value_error(err, "'state_key' must be a non-empty string, got %s", r.data);
        sb_free(&r);
        return LAYA_ERR_VALUE;
      }
      key = sk->s;
    }
  }
  if (qs->n == 0) return laya_value_error(err, "--questions file holds no questions");
  for (uint32_t i = 0; i < qs->n; i++) {
    const json_value *d = &qs->members[i].value;
    if (d->type != JSON_OBJECT) {
      strbuf r;
      sb_init(&r);
      py_repr_str(&r, qs->members[i].key, qs->members[i].key_len);
      laya_value_error(err, "question %s must map to an object, got %s", r.data, json_py_type(d));
      sb_free(&r);
      return LAYA_ERR_VALUE;
    }
  }
  *questions = qs;
  *state_key = key;
  return 0;
}
