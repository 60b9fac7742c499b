/* digests.c: Laya's verify_digests (opt-in SHA-256 pins checked before anything is parsed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/pystr.h"
#include "core/sha256.h"
#include "model/checkpoint.h"
#include "core/fsutil.h"

/* ---- SHA-256 digests ---- */

static bool win_drive_abs(const char *s) {
  return ((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')) && s[1] == ':' &&
         s[2] == '/';
}

int verify_digests(const char *dir, const char *sha256_json, const char *env_digests, laya_error *err) {
  const char *text = sha256_json;
  bool from_env = false;
  if (!text) {
    text = env_digests;
    if (!text || py_is_blank(text, strlen(text))) return 0;
    from_env = true;
  }
  arena a;
  arena_init(&a, 1 << 12);
  laya_error jerr;
  int rc = 0;
  strbuf r;
  sb_init(&r);
  json_value *m = json_parse(text, strlen(text), &a, NULL, &jerr);
  if (!m) {
    if (from_env)
      rc = laya_value_error(err, "LAYA_SHA256_DIGESTS must be a JSON object of artifact->sha256");
    else
      rc = laya_value_error(err, "expected_sha256: %s", jerr.message);
    goto done;
  }
  if (m->type != JSON_OBJECT) {
    rc = laya_value_error(err, "expected_sha256 must be a mapping of artifact paths to digests");
    goto done;
  }
  for (uint32_t i = 0; i < m->n && !rc; i++) {
    const json_member *e = &m->members[i];
    sb_reset(&r);
    py_repr_str(&r, e->key, e->key_len);
    /* str(rel).replace("\\", "/") */
    char *rel = arena_strndup(&a, e->key, e->key_len);
    for (char *p = rel; *p; p++)
      if (*p == '\\') *p = '/';
    if (rel[0] == '/' || win_drive_abs(rel)) {
      rc = laya_value_error(err, "laya: unsafe absolute path in expected digests: %s", sb_cstr(&r));
      break;
    }
    size_t rl = strlen(rel);
    if (rl == 0 || strcmp(rel, "..") == 0 || strncmp(rel, "../", 3) == 0 || strstr(rel, "/../")) {
      rc = laya_value_error(err, "laya: unsafe path in expected digests: %s", sb_cstr(&r));
      break;
    }
    char *path = fs_join(dir, rel);
    if (!path) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      break;
    }
    if (!fs_is_file(path)) {
      rc = laya_err(err, LAYA_ERR_IO, "FileNotFoundError",
                    "laya: cannot verify %s: no such file under %s", sb_cstr(&r), dir);
      free(path);
      break;
    }
    char got[65];
    if (sha256_file_hex(path, got) != 0) {
      rc = laya_err(err, LAYA_ERR_IO, "OSError", "%s: cannot read: %s", path, strerror(errno));
      free(path);
      break;
    }
    free(path);
    strbuf want;
    sb_init(&want);
    py_str_json(&want, &e->value);
    size_t ws, wl;
    py_strip(want.data ? want.data : "", want.len, &ws, &wl);
    bool same = wl == 64;
    for (size_t k = 0; same && k < 64; k++) {
      char c = want.data[ws + k];
      if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
      same = c == got[k];
    }
    if (!same)
      rc = laya_value_error(err,
                            "laya: SHA-256 mismatch for %s: expected %s, got %s. The artifact does "
                            "not match the reviewed digest; refusing to load it.",
                            e->key, sb_cstr(&want), got);
    sb_free(&want);
  }
done:
  sb_free(&r);
  arena_free(&a);
  return rc;
}

