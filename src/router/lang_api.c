/*
 * lang_api.c: the detection the Router routes by, as calls of their own (include/laya.h): Python
 * Laya's laya.detect_language (lang.analyse), detect_script and is_english. No model is needed and
 * nothing is shared between calls, so any thread may call them.
 */
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "core/utf8.h"
#include "laya.h"
#include "router/lang.h"

static const char kLangSelf = 0; /* json_call wants a handle; these functions have none */

/* {"state": any, "explain": truthy or not} -> analyse(state, explain=...)'s dict */
static int detect_call(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  (void)ctx;
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "detect_language arguments must be a JSON object, got %s", json_py_type(req));
  for (uint32_t i = 0; i < req->n; i++) {
    const char *k = req->members[i].key;
    if (strcmp(k, "state") != 0 && strcmp(k, "explain") != 0)
      return laya_type_error(err, "analyse() got an unexpected keyword argument '%s'", k);
  }
  const json_value *state = json_get(req, "state");
  if (!state) return laya_type_error(err, "analyse() missing 1 required positional argument: 'state'");
  const json_value *ex = json_get(req, "explain");
  const bool explain = ex && json_truthy(ex);
  lang_detection d;
  lang_diag g;
  lang_analyse_explain(state, &d, explain ? &g : NULL);
  lang_detection_json_explain(out, &d, explain ? &g : NULL);
  lang_detection_free(&d);
  if (explain) lang_diag_free(&g);
  return 0;
}

int laya_detect_language(const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_detect_language", &kLangSelf, request_json, detect_call, NULL, result_json, err);
}

int laya_detect_script(const char *utf8, size_t len, const char **script, laya_error *err) {
  laya_err_clear(err);
  if (script) *script = NULL;
  if ((!utf8 && len) || !script)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_detect_script: text and script must not be NULL");
  long bad = utf8_first_invalid(utf8, len);
  if (bad >= 0)
    return laya_err(err, LAYA_ERR_VALUE, "UnicodeDecodeError",
                    "laya_detect_script: the text is not UTF-8 (invalid byte 0x%02X at byte %ld)",
                    (unsigned char)utf8[bad], bad);
  *script = lang_detect_script(utf8 ? utf8 : "", len);
  return 0;
}
