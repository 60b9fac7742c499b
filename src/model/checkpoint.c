#include "model/checkpoint.h"
#include "model/artifact.h"
#include "core/threadpool.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/json.h"
#include "core/pystr.h"
#include "core/sha256.h"
#include "core/fsutil.h"
#include "core/options.h"

/* ---- calibration ---- */

/* Python's == on two JSON values (dicts unordered; 1 == 1.0 == True). */
static bool py_equal(const json_value *x, const json_value *y) {
  bool xn = json_is_number(x) || x->type == JSON_BOOL, yn = json_is_number(y) || y->type == JSON_BOOL;
  if (xn || yn) {
    if (!xn || !yn) return false;
    if (x->type == JSON_INT && y->type == JSON_INT && !x->big && !y->big) return x->i == y->i;
    double a = x->type == JSON_BOOL ? x->b : x->d, b = y->type == JSON_BOOL ? y->b : y->d;
    return a == b;
  }
  if (x->type != y->type) return false;
  switch (x->type) {
    case JSON_NULL:
      return true;
    case JSON_STRING:
      return x->n == y->n && !memcmp(x->s, y->s, x->n);
    case JSON_ARRAY:
      if (x->n != y->n) return false;
      for (uint32_t i = 0; i < x->n; i++)
        if (!py_equal(&x->items[i], &y->items[i])) return false;
      return true;
    case JSON_OBJECT:
      if (x->n != y->n) return false;
      for (uint32_t i = 0; i < x->n; i++) {
        const json_value *v = json_get(y, x->members[i].key);
        if (!v || !py_equal(&x->members[i].value, v)) return false;
      }
      return true;
    default:
      return false;
  }
}

/* The checkpoint config as a calibration records it: without its two temperature keys. */
static bool identity_config_equal(const json_value *recorded, const json_value *root) {
  if (!root || root->type != JSON_OBJECT) return recorded->type == JSON_NULL;
  if (recorded->type != JSON_OBJECT) return false;
  uint32_t n = 0;
  for (uint32_t i = 0; i < root->n; i++) {
    const char *k = root->members[i].key;
    if (!strcmp(k, "temperature") || !strcmp(k, "temperature_by_options")) continue;
    n++;
    const json_value *v = json_get(recorded, k);
    if (!v || !py_equal(v, &root->members[i].value)) return false;
  }
  return n == recorded->n;
}

/* Laya warns (and still loads) when a version >= 2 payload was fitted for another checkpoint:
 * its model_id_or_path, subfolder or config differ from this one's. */
static void warn_identity(const checkpoint *ck, const json_value *p, long version, strbuf *warnings) {
  if (version < 2 || !warnings) return;
  static const json_value null_v = {.type = JSON_NULL};
  const json_value *rm = json_get(p, "model_id_or_path"), *rs = json_get(p, "subfolder"), *rc = json_get(p, "config");
  if (!rm) rm = &null_v;
  if (!rs) rs = &null_v;
  if (!rc) rc = &null_v;
  json_value cur = json_string(ck->model_id ? ck->model_id : "");
  bool same_model = py_equal(rm, &cur), same_sub = rs->type == JSON_NULL;
  bool same_cfg = identity_config_equal(rc, ck->cfg.root);
  if (same_model && same_sub && same_cfg) return;
  strbuf m, s, c;
  sb_init(&m), sb_init(&s), sb_init(&c);
  py_repr_json(&m, rm);
  py_repr_json(&s, rs);
  py_repr_str(&c, cur.s, cur.n);
  sb_printf(warnings,
            "laya: calibration was fitted for model_id_or_path=%s subfolder=%s but this agent is "
            "model_id_or_path=%s subfolder=None.%s Loading the temperatures anyway.\n",
            sb_cstr(&m), sb_cstr(&s), sb_cstr(&c), same_cfg ? "" : " Checkpoint config identity differs.");
  sb_free(&m), sb_free(&s), sb_free(&c);
}

int checkpoint_load_calibration(checkpoint *ck, const char *path, strbuf *warnings, laya_error *err) {
  size_t len;
  char *text = fs_read_file_max(path, FS_MAX_CONFIG_BYTES, &len, err);
  if (!text) return err ? err->code : LAYA_ERR_IO;
  arena *a = &ck->cfg.mem;
  laya_error jerr;
  json_value *p = json_parse(text, len, a, NULL, &jerr);
  free(text);
  if (!p) return laya_err(err, LAYA_ERR_FORMAT, jerr.kind, "%s: %s", path, jerr.message);
  strbuf r;
  sb_init(&r);
  int rc = 0;
  if (p->type != JSON_OBJECT) {
    rc = laya_value_error(err, "calibration JSON must be an object, got %s", json_py_type(p));
    goto done;
  }
  const json_value *version = json_get(p, "version");
  if (version && version->type != JSON_NULL) {
    bool ok = version->type == JSON_INT ||
              (version->type == JSON_FLOAT && version->d == (double)(long long)version->d);
    if (version->type == JSON_STRING) {
      /* int("2") works in Python; anything else is refused */
      char *end;
      errno = 0;
      size_t s0, sl;
      py_strip(version->s, version->n, &s0, &sl);
      strtol(version->s + s0, &end, 10);
      ok = sl > 0 && end == version->s + s0 + sl && errno == 0;
    }
    if (!ok) {
      py_repr_json(&r, version);
      rc = laya_value_error(err, "calibration JSON version must be an integer, got %s", sb_cstr(&r));
      goto done;
    }
  }
  const json_value *temps = json_get(p, "temperature");
  if (!temps || temps->type != JSON_ARRAY || temps->n != 3) {
    rc = laya_value_error(err, "calibration JSON must contain temperature: [3 floats]");
    goto done;
  }
  const json_value *by = json_get(p, "temperature_by_options");
  static const json_value empty = {.type = JSON_OBJECT};
  if (!by || by->type == JSON_NULL) by = &empty;
  if (by->type != JSON_OBJECT) {
    rc = laya_value_error(err,
                          "calibration JSON temperature_by_options must be an object of bucket -> "
                          "float, got %s",
                          json_py_type(by));
    goto done;
  }
  const json_value *bin = json_get(p, "binning_map");
  int n_bin = -1;
  binning_entry *entries = NULL;
  if (bin && bin->type != JSON_NULL) {
    if (bin->type != JSON_OBJECT) {
      rc = laya_value_error(err,
                            "calibration JSON binning_map must be an object of bucket -> {bins, "
                            "values}, got %s",
                            json_py_type(bin));
      goto done;
    }
    entries = arena_alloc(a, sizeof *entries * (bin->n ? bin->n : 1));
    n_bin = 0;
    for (uint32_t i = 0; i < bin->n; i++) {
      const json_member *m = &bin->members[i];
      sb_reset(&r);
      py_repr_str(&r, m->key, m->key_len);
      if (m->value.type != JSON_OBJECT) {
        rc = laya_value_error(err,
                              "calibration JSON binning_map[%s] must be an object with \"bins\" and "
                              "\"values\", got %s",
                              sb_cstr(&r), json_py_type(&m->value));
        goto done;
      }
      const json_value *nb = json_get(&m->value, "bins"), *vals = json_get(&m->value, "values");
      if (!nb || nb->type != JSON_INT || nb->big || nb->i < 1 || nb->i > (1 << 20)) {
        strbuf g;
        sb_init(&g);
        if (nb)
          py_repr_json(&g, nb);
        else
          sb_puts(&g, "None");
        rc = laya_value_error(err, "calibration JSON binning_map[%s] must have an integer \"bins\" >= 1, got %s",
                              sb_cstr(&r), sb_cstr(&g));
        sb_free(&g);
        goto done;
      }
      if (!vals || vals->type != JSON_ARRAY || vals->n != (uint32_t)nb->i) {
        rc = laya_value_error(err,
                              "calibration JSON binning_map[%s] must have \"values\" of length "
                              "\"bins\" (%d)",
                              sb_cstr(&r), (int)nb->i);
        goto done;
      }
      binning_entry *be = &entries[n_bin];
      be->bucket = m->key;
      be->bins = (int)nb->i;
      be->values = arena_alloc(a, sizeof(double) * vals->n);
      for (uint32_t k = 0; k < vals->n; k++) {
        const json_value *x = &vals->items[k];
        const char *problem = NULL;
        if (!json_is_number(x))
          problem = "be numbers";
        else if (!isfinite(x->d))
          problem = "be finite";
        else if (x->d < 0 || x->d > 1)
          problem = "be in [0, 1]";
        if (problem) {
          strbuf g;
          sb_init(&g);
          py_repr_json(&g, vals);
          rc = laya_value_error(err, "calibration JSON binning_map[%s] values must %s, got %s",
                                sb_cstr(&r), problem, sb_cstr(&g));
          sb_free(&g);
          goto done;
        }
        be->values[k] = x->d;
      }
      n_bin++;
    }
  }
  long ver = 1;
  if (version && version->type == JSON_INT && !version->big) ver = (long)version->i;
  else if (version && version->type == JSON_FLOAT) ver = (long)version->d;
  else if (version && version->type == JSON_STRING) ver = strtol(version->s, NULL, 10);
  warn_identity(ck, p, ver, warnings);
  ck->n_binning = n_bin;
  ck->binning = entries;
  ck->cfg.temperature_raw = temps;
  ck->cfg.temperature_by_options_raw = by;
  rc = temps_install(&ck->cfg.temps, a, temps, by, 1, warnings, err);
done:
  sb_free(&r);
  return rc;
}

/* ---- non-finite weights ---- */

/* The scan in pieces of at most SCAN_PIECE elements, on threadpool_default_threads() threads when
 * the weights are large (a first open reads every byte here: at memory speed on all cores rather
 * than one). Per-piece counts are summed per tensor in file order, so the result and the warning
 * do not depend on the thread count. */
#define SCAN_PIECE ((int64_t)1 << 22)

typedef struct scan_piece {
  tensor view; /* a run of one tensor's elements */
  int tensor;
  int64_t count;
} scan_piece;

static void scan_chunk(void *ctx, int begin, int end, int thread) {
  (void)thread;
  scan_piece *p = ctx;
  for (int i = begin; i < end; i++) p[i].count = st_count_nonfinite(&p[i].view);
}

void checkpoint_nonfinite_scan(const st_file *st, int64_t *n_values, int *n_bad, strbuf *names) {
  *n_values = 0;
  *n_bad = 0;
  int64_t n_pieces = 0, bytes = 0;
  for (int i = 0; i < st->n_tensors; i++) {
    const tensor *t = &st->tensors[i];
    if (t->data && t->numel > 0) n_pieces += (t->numel + SCAN_PIECE - 1) / SCAN_PIECE;
    bytes += t->numel * (t->dtype == DT_F32 ? 4 : 2);
  }
  scan_piece *pc = n_pieces > 0 && n_pieces < (1 << 30) ? malloc((size_t)n_pieces * sizeof *pc) : NULL;
  int64_t *per = pc ? calloc(st->n_tensors > 0 ? (size_t)st->n_tensors : 1, sizeof *per) : NULL;
  if (pc && per) {
    int n = 0;
    for (int i = 0; i < st->n_tensors; i++) {
      const tensor *t = &st->tensors[i];
      if (!t->data || t->numel <= 0) continue;
      const int64_t es = t->dtype == DT_F32 ? 4 : 2;
      for (int64_t o = 0; o < t->numel; o += SCAN_PIECE) {
        scan_piece *q = &pc[n++];
        q->view = *t;
        q->view.data = (const unsigned char *)t->data + o * es;
        q->view.numel = t->numel - o < SCAN_PIECE ? t->numel - o : SCAN_PIECE;
        q->tensor = i;
      }
    }
    int k = bytes >= ((int64_t)64 << 20) ? threadpool_default_threads() : 1;
    laya_error terr;
    threadpool *tp = k > 1 ? threadpool_create(k, &terr) : NULL;
    parallel_for(tp, n, scan_chunk, pc); /* NULL pool: inline */
    if (tp) threadpool_destroy(tp);
    for (int i = 0; i < n; i++) per[pc[i].tensor] += pc[i].count;
  }
  for (int i = 0; i < st->n_tensors; i++) {
    int64_t k = per ? per[i] : st_count_nonfinite(&st->tensors[i]);
    if (!k) continue;
    if (*n_bad < 5) sb_printf(names, "%s'%s' (%lld)", *n_bad ? ", " : "", st->tensors[i].name, (long long)k);
    (*n_bad)++;
    *n_values += k;
  }
  free(pc);
  free(per);
}

void checkpoint_nonfinite_warning(const char *path, int64_t n_values, int n_bad, const char *names, strbuf *warnings) {
  /* torch loads NaN/Inf weights without a word; the answers then carry NaN. Say which tensors. */
  if (n_bad && warnings)
    sb_printf(warnings,
              "laya: %s: %lld NaN or infinite weight value%s in %d tensor%s: %s%s. Answers computed "
              "from them may be NaN, written as Python's json.dumps writes it (laya-serve answers 500 "
              "instead; docs/engine.md).\n",
              path, (long long)n_values, n_values > 1 ? "s" : "", n_bad, n_bad > 1 ? "s" : "", names,
              n_bad > 5 ? ", ..." : "");
}

void checkpoint_warn_nonfinite(const st_file *st, strbuf *warnings) {
  int64_t n_values;
  int n_bad;
  strbuf names;
  sb_init(&names);
  checkpoint_nonfinite_scan(st, &n_values, &n_bad, &names);
  checkpoint_nonfinite_warning(st->path, n_values, n_bad, sb_cstr(&names), warnings);
  sb_free(&names);
}

/* ---- the directory ---- */

static int quote_err(laya_error *err, int code, const char *kind, const char *fmt, const char *s) {
  strbuf r;
  sb_init(&r);
  py_repr_str(&r, s, strlen(s));
  int rc = laya_err(err, code, kind, fmt, sb_cstr(&r));
  sb_free(&r);
  return rc;
}

void checkpoint_close(checkpoint *ck) {
  if (ck->tok) tokenizer_release(ck->tok);
  if (ck->w.packed) artifact_close((artifact *)ck->w.packed); /* a `laya convert` artifact */
  weights_free(&ck->w);
  st_close(&ck->st);
  agent_config_free(&ck->cfg);
  free(ck->dir);
  free(ck->model_id);
  memset(ck, 0, sizeof *ck);
}

int checkpoint_set_tokenizer(checkpoint *ck, tokenizer *tok, const char *where, const char *what, laya_error *err) {
  ck->tok = tok;
  if (!tok) return err ? err->code : LAYA_ERR_FORMAT; /* the loader said why */
  ck->roles = *tokenizer_get_roles(tok);
  const tokenizer_roles *ro = &ck->roles;
  const char *missing = ro->cls_id < 0 ? "cls_token" : ro->sep_id < 0 ? "sep_token"
                      : ro->mask_id < 0 || !ro->mask_token ? "mask_token"
                      : ro->pad_id < 0 ? "pad_token" : NULL;
  if (missing)
    return laya_err(err, LAYA_ERR_CONFIG, NULL, "%s%s: the tokenizer has no %s, which Laya's sequences need", where,
                    what, missing);
  return 0;
}

/* `file` exists but is no regular file (a device such as /dev/zero, a FIFO, a socket, a folder):
 * refused by name rather than read (it may never end) or reported as missing. */
static bool not_regular(const char *file, laya_error *err, int *rc) {
  struct stat st;
  if (stat(file, &st) != 0 || S_ISREG(st.st_mode)) return false;
  *rc = laya_err(err, LAYA_ERR_IO, "OSError", "%s: not a regular file (a %s); refused", file,
                 S_ISDIR(st.st_mode) ? "directory" : "device, FIFO or socket");
  return true;
}

int checkpoint_open(checkpoint *ck, const char *path, const char *sha256_json, strbuf *warnings,
                    laya_error *err) {
  /* no read of the environment to hand on: this one reads its variable (when it needs it) */
  laya_env_options env;
  laya_env_options_init(&env);
  int rc = sha256_json ? 0 : laya_env_options_read_one(&env, "LAYA_SHA256_DIGESTS", err);
  if (!rc) rc = checkpoint_open_ex(ck, path, sha256_json, env.sha256_digests, 0, warnings, err);
  laya_env_options_free(&env);
  return rc;
}

int checkpoint_open_ex(checkpoint *ck, const char *path, const char *sha256_json, const char *env_digests, int flags,
                       strbuf *warnings, laya_error *err) {
  /* a single-file artifact written by `laya convert` (model/artifact_load.c) */
  if (fs_is_file(path) && artifact_is_artifact(path))
    return checkpoint_open_artifact(ck, path, sha256_json, env_digests, warnings, err);
  memset(ck, 0, sizeof *ck);
  ck->n_binning = -1;
  int rc = 0;
  char *file = NULL;
  ck->model_id = strdup(path);
  ck->dir = strdup(path);
  if (!ck->model_id || !ck->dir) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  if (!fs_is_dir(path) && !fs_is_file(path)) {
    rc = quote_err(err, LAYA_ERR_IO, "FileNotFoundError",
                   "Local model path not found: %s. Check that the directory exists and that "
                   "training saved the model successfully.",
                   path);
    goto fail;
  }
  if ((rc = verify_digests(ck->dir, sha256_json, env_digests, err))) goto fail;

  file = fs_join(ck->dir, "rl_agent_config.json");
  if (not_regular(file, err, &rc)) goto fail;
  if (!fs_is_file(file)) {
    rc = quote_err(err, LAYA_ERR_IO, "FileNotFoundError",
                   "Incompatible model: %s does not contain 'rl_agent_config.json'. That file ships "
                   "with the weights of a Laya checkpoint, so load one of those (e.g. "
                   "'convaiinnovations/laya') or a directory your own training run wrote.",
                   path);
    goto fail;
  }
  if ((rc = agent_config_load(&ck->cfg, file, path, warnings, err))) goto fail;
  free(file);

  file = fs_join(ck->dir, "model.safetensors");
  if (not_regular(file, err, &rc)) goto fail;
  if (!fs_is_file(file)) {
    rc = quote_err(err, LAYA_ERR_IO, "FileNotFoundError",
                   "Incompatible model: 'model.safetensors' not found in %s.", path);
    goto fail;
  }
  free(file);

  /* The tokenizer and the encoder config come from the checkpoint only (no Hub fallback). */
  file = fs_join(ck->dir, "tokenizer");
  if (!fs_is_dir(file)) {
    rc = laya_err(err, LAYA_ERR_IO, "FileNotFoundError",
                  "%s: no tokenizer/ folder; laya.c loads the tokenizer from the checkpoint only",
                  ck->dir);
    goto fail;
  }
  if ((rc = checkpoint_set_tokenizer(ck, tokenizer_load(file, err), file, "/tokenizer_config.json", err))) goto fail;
  free(file);

  file = fs_join(ck->dir, "encoder/config.json");
  if (not_regular(file, err, &rc)) goto fail;
  if (!fs_is_file(file)) {
    rc = laya_err(err, LAYA_ERR_IO, "FileNotFoundError",
                  "%s: not found; laya.c reads the encoder config from the checkpoint only", file);
    goto fail;
  }
  encoder_config enc;
  if ((rc = encoder_config_load(&enc, file, err))) goto fail;
  if (ck->cfg.max_len > enc.max_positions) {
    rc = laya_err(err, LAYA_ERR_CONFIG, NULL,
                  "%s/rl_agent_config.json: \"max_len\" is %d, more than the encoder's "
                  "max_position_embeddings %d in %s",
                  ck->dir, ck->cfg.max_len, enc.max_positions, file);
    goto fail;
  }
  {
    int32_t tv = tokenizer_vocab_size(ck->tok);
    if (tv > enc.vocab) {
      rc = laya_err(err, LAYA_ERR_CONFIG, NULL,
                    "%s: vocab_size %d is smaller than the tokenizer's %d ids", file, enc.vocab, tv);
      goto fail;
    }
  }
  free(file);

  file = fs_join(ck->dir, "model.safetensors");
  if ((rc = st_open(&ck->st, file, err))) goto fail;
  if (!ck->cfg.has_encoder || !ck->cfg.has_head_layers) {
    strbuf r, k;
    sb_init(&r);
    sb_init(&k);
    py_repr_str(&r, path, strlen(path));
    sb_putc(&k, '[');
    if (!ck->cfg.has_encoder) sb_puts(&k, "'encoder'");
    if (!ck->cfg.has_head_layers) sb_puts(&k, ck->cfg.has_encoder ? "'head_layers'" : ", 'head_layers'");
    sb_putc(&k, ']');
    rc = laya_err(err, LAYA_ERR_CONFIG, "ValueError",
                  "Incompatible model config for %s: missing configuration keys %s. Ensure this is "
                  "a valid RL Agent decision model.",
                  sb_cstr(&r), sb_cstr(&k));
    sb_free(&r);
    sb_free(&k);
    goto fail;
  }
  if ((rc = weights_bind(&ck->w, &ck->st, &enc, ck->cfg.head_layers, ck->cfg.n_act, err))) goto fail;
  if (flags & CKPT_DEFER_NONFINITE) ck->nonfinite_pending = 1; /* the caller scans (or knows the answer) */
  else checkpoint_warn_nonfinite(&ck->st, warnings);
  free(file);
  file = fs_join(ck->dir, "rl_agent_config.json");
  if ((rc = agent_config_install_temperatures(&ck->cfg, file, path, warnings, err))) goto fail;
  free(file);
  return 0;
fail:
  free(file);
  checkpoint_close(ck);
  return rc ? rc : LAYA_ERR_INTERNAL;
}
