/*
 * tokenizer.c: loading tokenizer.json (with a process-wide cache), the encode pipeline, decode,
 * and the small accessors of tokenizer.h.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fsutil.h"
#include "core/json.h"
#include "tokenizer/internal.h"

/* ---- the cache: one parse per (file, mtime, size), shared and reference counted ---- */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static tokenizer *cache_head;

static void tokenizer_destroy(tokenizer *t) {
  normalizer_free(t->norm);
  pretokenizer_free(t->pre);
  decoder_free(t->dec);
  bpe_free(&t->bpe);
  added_free(t);
  free(t->id_str);
  free(t->id_len);
  free(t->id_is_added);
  free(t->cache_key);
  free(t->path);
  arena_free(&t->a);
  free(t);
}

tokenizer *tokenizer_retain(tokenizer *t) {
  if (!t) return NULL;
  pthread_mutex_lock(&cache_lock);
  t->refs++;
  pthread_mutex_unlock(&cache_lock);
  return t;
}

void tokenizer_release(tokenizer *t) {
  if (!t) return;
  pthread_mutex_lock(&cache_lock);
  bool last = --t->refs == 0;
  if (last) {
    for (tokenizer **p = &cache_head; *p; p = &(*p)->cache_next)
      if (*p == t) {
        *p = t->cache_next;
        break;
      }
  }
  pthread_mutex_unlock(&cache_lock);
  if (last) tokenizer_destroy(t);
}

/* ---- loading ---- */

/* A role in tokenizer_config.json is a string or an AddedToken-like {"content": ...}. */
static int32_t role_id(const tokenizer *t, const json_value *cfg, const char *key, const char **content) {
  const json_value *v = json_get(cfg, key);
  if (v && v->type == JSON_OBJECT) v = json_get(v, "content");
  if (!v || v->type != JSON_STRING) return -1;
  if (content) *content = v->s;
  return tokenizer_token_to_id(t, v->s, v->n);
}

static int apply_config(tokenizer *t, const char *text, size_t len, const char *cfg_path, laya_error *err) {
  tokenizer_roles *r = &t->roles;
  arena a;
  arena_init(&a, 1 << 16);
  json_value *cfg = json_parse(text, len, &a, NULL, err);
  if (!cfg) {
    laya_err_prefix(err, "%s", cfg_path);
    arena_free(&a);
    return -1;
  }
  int rc = 0;
  if (cfg->type != JSON_OBJECT) {
    rc = laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: must hold a JSON object", cfg_path);
  } else {
    const char *mask = NULL;
    r->cls_id = role_id(t, cfg, "cls_token", NULL);
    r->sep_id = role_id(t, cfg, "sep_token", NULL);
    r->pad_id = role_id(t, cfg, "pad_token", NULL);
    r->mask_id = role_id(t, cfg, "mask_token", &mask);
    r->unk_id = role_id(t, cfg, "unk_token", NULL);
    if (mask && !(r->mask_token = arena_strndup(&t->a, mask, strlen(mask))))
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    /* transformers skips its clean-up for BPE models unless this override is set as well */
    const json_value *c = json_get(cfg, "clean_up_tokenization_spaces");
    const json_value *o = json_get(cfg, "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output");
    t->cleanup_spaces = c && c->type == JSON_BOOL && c->b && o && o->type == JSON_BOOL && o->b;
  }
  arena_free(&a);
  return rc;
}

static void no_roles(tokenizer *t) {
  tokenizer_roles *r = &t->roles;
  r->cls_id = r->sep_id = r->pad_id = r->mask_id = r->unk_id = -1;
  r->mask_token = NULL;
}

static int load_config(tokenizer *t, const char *cfg_path, laya_error *err) {
  no_roles(t);
  struct stat st;
  if (stat(cfg_path, &st) != 0) return 0; /* no config: no roles */
  size_t len;
  char *text = fs_read_file_max(cfg_path, FS_MAX_CONFIG_BYTES, &len, err);
  if (!text) return -1;
  int rc = apply_config(t, text, len, cfg_path, err);
  free(text);
  return rc;
}

static int build_id_table(tokenizer *t, laya_error *err) {
  int32_t max_id = -1;
  const str_map *v = &t->bpe.vocab;
  for (uint32_t i = 0; i < v->count; i++)
    if (v->entries[i].id > max_id) max_id = v->entries[i].id;
  for (size_t i = 0; i < t->n_added; i++)
    if (t->added[i].id > max_id) max_id = t->added[i].id;
  t->n_ids = max_id + 1;
  size_t n = (size_t)t->n_ids + 1;
  t->id_str = calloc(n, sizeof *t->id_str);
  t->id_len = calloc(n, sizeof *t->id_len);
  t->id_is_added = calloc(n, sizeof *t->id_is_added);
  if (!t->id_str || !t->id_len || !t->id_is_added) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  for (uint32_t i = 0; i < v->count; i++) {
    t->id_str[v->entries[i].id] = v->entries[i].s;
    t->id_len[v->entries[i].id] = v->entries[i].n;
  }
  /* added tokens win; a normalized one decodes to its normalized form, as in the reference */
  for (size_t i = 0; i < t->n_added; i++) {
    const added_token *at = &t->added[i];
    if (at->id < 0) continue;
    t->id_str[at->id] = at->pattern;
    t->id_len[at->id] = at->pattern_len;
    t->id_is_added[at->id] = true;
  }
  return 0;
}

/* Parse tokenizer.json text (not NUL-terminated); `file` names it in errors. */
static int parse_text(tokenizer *t, const char *text, size_t len, const char *file, laya_error *err) {
  int rc = -1;
  span vocab, merges;
  char *rest = NULL;
  if (vocab_find_spans(text, len, file, &vocab, &merges, err)) goto done;
  /* the general reader gets the file without the two big values (blanked, same offsets) */
  rest = malloc(len + 1);
  if (!rest) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  memcpy(rest, text, len);
  if (vocab.end) {
    memset(rest + vocab.start, ' ', vocab.end - vocab.start);
    memcpy(rest + vocab.start, "{}", 2);
  }
  if (merges.end) {
    memset(rest + merges.start, ' ', merges.end - merges.start);
    memcpy(rest + merges.start, "[]", 2);
  }
  /* the small tree lives as long as the tokenizer: components point at its strings */
  json_value *root = json_parse(rest, len, &t->a, NULL, err);
  if (!root) {
    laya_err_prefix(err, "%s", file);
    goto done;
  }
  if (root->type != JSON_OBJECT) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: must hold a JSON object", file);
    goto done;
  }
  const json_value *ver = json_get(root, "version");
  if (ver && (ver->type != JSON_STRING || strcmp(ver->s, "1.0") != 0)) {
    laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "%s: unknown tokenizer version (expected \"1.0\")", file);
    goto done;
  }
  const json_value *model = json_get(root, "model");
  if (!model || model->type != JSON_OBJECT) {
    laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: missing \"model\"", file);
    goto done;
  }
  if (normalizer_load(t, json_get(root, "normalizer"), &t->norm, err) ||
      pretokenizer_load(t, json_get(root, "pre_tokenizer"), &t->pre, err) ||
      bpe_load(t, model, text, vocab, merges, file, err) ||
      decoder_load(t, json_get(root, "decoder"), &t->dec, err) ||
      added_load(t, json_get(root, "added_tokens"), (int32_t)t->bpe.vocab.count, err) ||
      build_id_table(t, err) || added_build(t, err)) {
    laya_err_prefix(err, "%s", file);
    goto done;
  }
  post_load(t, json_get(root, "post_processor"));
  rc = 0;
done:
  free(rest);
  return rc;
}

static int parse_file(tokenizer *t, const char *file, laya_error *err) {
  size_t len;
  char *text = fs_read_file_max(file, FS_MAX_TOKENIZER_BYTES, &len, err);
  if (!text) return -1;
  int rc = parse_text(t, text, len, file, err);
  free(text);
  return rc;
}

tokenizer *tokenizer_load(const char *path, laya_error *err) {
  struct stat st;
  if (!path || stat(path, &st) != 0) {
    laya_err(err, LAYA_ERR_IO, NULL, "%s: no such tokenizer file or directory", path ? path : "(null)");
    return NULL;
  }
  char file[PATH_MAX], dir[PATH_MAX], cfg[PATH_MAX];
  if (S_ISDIR(st.st_mode)) {
    snprintf(dir, sizeof dir, "%s", path);
    if (snprintf(file, sizeof file, "%s/tokenizer.json", path) >= (int)sizeof file) {
      laya_err(err, LAYA_ERR_IO, NULL, "%s: path too long", path);
      return NULL;
    }
  } else {
    snprintf(file, sizeof file, "%s", path);
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0;
    else
      snprintf(dir, sizeof dir, ".");
  }
  if (snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir) >= (int)sizeof cfg) {
    laya_err(err, LAYA_ERR_IO, NULL, "%s: path too long", path);
    return NULL;
  }
  struct stat fs, cs;
  if (stat(file, &fs) != 0) {
    laya_err(err, LAYA_ERR_IO, NULL, "%s: cannot open: %s", file, strerror(errno));
    return NULL;
  }
  char real[PATH_MAX];
  if (!realpath(file, real)) snprintf(real, sizeof real, "%s", file);
  bool has_cfg = stat(cfg, &cs) == 0;
  char key[2 * PATH_MAX + 128];
  snprintf(key, sizeof key, "%s|%lld.%09ld|%lld|%lld.%09ld|%lld", real, (long long)fs.st_mtim.tv_sec,
           fs.st_mtim.tv_nsec, (long long)fs.st_size, has_cfg ? (long long)cs.st_mtim.tv_sec : 0LL,
           has_cfg ? cs.st_mtim.tv_nsec : 0L, has_cfg ? (long long)cs.st_size : -1LL);

  /* Loading under the lock: a second model asking for the same file waits for the one parse. */
  pthread_mutex_lock(&cache_lock);
  for (tokenizer *c = cache_head; c; c = c->cache_next)
    if (!strcmp(c->cache_key, key)) {
      c->refs++;
      pthread_mutex_unlock(&cache_lock);
      return c;
    }
  tokenizer *t = calloc(1, sizeof *t);
  if (!t) {
    pthread_mutex_unlock(&cache_lock);
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    return NULL;
  }
  arena_init(&t->a, 1 << 20);
  t->refs = 1;
  t->cache_key = strdup(key);
  t->path = strdup(file);
  if (!t->cache_key || !t->path || parse_file(t, file, err) || load_config(t, cfg, err)) {
    if (!t->cache_key || !t->path) laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    pthread_mutex_unlock(&cache_lock);
    tokenizer_destroy(t);
    return NULL;
  }
  t->cache_next = cache_head;
  cache_head = t;
  pthread_mutex_unlock(&cache_lock);
  return t;
}

tokenizer *tokenizer_load_memory(const char *json, size_t len, const char *config_json,
                                 size_t config_len, laya_error *err) {
  tokenizer *t = calloc(1, sizeof *t);
  if (!t) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    return NULL;
  }
  arena_init(&t->a, 1 << 16);
  t->refs = 1;
  t->cache_key = strdup("");
  t->path = strdup("(memory)");
  no_roles(t);
  if (!t->cache_key || !t->path || parse_text(t, json, len, "tokenizer.json", err) ||
      (config_json && apply_config(t, config_json, config_len, "tokenizer_config.json", err))) {
    if (!t->cache_key || !t->path) laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    tokenizer_destroy(t);
    return NULL;
  }
  return t;
}

/* ---- accessors ---- */

const tokenizer_roles *tokenizer_get_roles(const tokenizer *t) { return &t->roles; }
int32_t tokenizer_vocab_size(const tokenizer *t) { return t->n_ids; }

int32_t tokenizer_token_to_id(const tokenizer *t, const char *s, size_t n) {
  int32_t id = str_map_get(&t->added_map, s, n);
  return id >= 0 ? id : str_map_get(&t->bpe.vocab, s, n);
}

const char *tokenizer_id_to_token(const tokenizer *t, int32_t id, size_t *len) {
  if (id < 0 || id >= t->n_ids || !t->id_str[id]) return NULL;
  if (len) *len = t->id_len[id];
  return t->id_str[id];
}

/* ---- encode ---- */

static int normalize_pieces(const tokenizer *t, tok_work *w) {
  w->b.n = 0;
  for (size_t i = 0; i < w->a.n; i++) {
    piece pc = w->a.v[i];
    if (pc.id < 0) {
      if (normalize_piece(t->norm, w, &pc)) return -1;
      if (pc.len == 0) continue; /* empty splits are dropped */
    }
    if (!piece_push(w, &w->b, pc.off, pc.len, pc.id, pc.first))
      return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  piece_vec tmp = w->a;
  w->a = w->b;
  w->b = tmp;
  return 0;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int max_len, ids_vec *out,
                     laya_error *err) {
  size_t bad = utf8_validate(text, len);
  if (bad != len) {
    bool surrogate = len - bad >= 3 && (unsigned char)text[bad] == 0xED && ((unsigned char)text[bad + 1] & 0xE0) == 0xA0;
    return laya_err(err, LAYA_ERR_VALUE, NULL, "text is not valid UTF-8 at byte %zu%s", bad,
                    surrogate ? " (a lone surrogate)" : "");
  }
  if (len > (UINT32_MAX >> 4)) return laya_err(err, LAYA_ERR_VALUE, NULL, "text too long (%zu bytes)", len);
  size_t start_n = out->n, limit = max_len > 0 ? start_n + (size_t)max_len : SIZE_MAX;
  if (len == 0) return 0;
  tok_work w;
  work_init(&w, err);
  int rc = -1;
  if (!work_reserve(&w, len * 2 + 64)) goto oom;
  memcpy(w.buf, text, len);
  w.len = len;
  uint32_t first_char;
  uint32_t first_len = (uint32_t)utf8_decode((const unsigned char *)text, &first_char);
  if (!piece_push(&w, &w.a, 0, (uint32_t)len, -1, first_len)) goto oom;
  if (added_split(t, &t->raw_trie, &w)) goto done;
  if (t->norm && normalize_pieces(t, &w)) goto done;
  if (added_split(t, &t->norm_trie, &w)) goto done;
  if (t->pre && pretokenize_apply(t->pre, &w)) goto done;
  for (size_t i = 0; i < w.a.n && out->n < limit; i++) {
    piece pc = w.a.v[i];
    if (pc.id >= 0) {
      if (!ids_push(out, pc.id)) goto oom;
    } else if (bpe_encode(t, &w, w.buf + pc.off, pc.len, out, err)) {
      goto done;
    }
  }
  if (out->n > limit) out->n = limit;
  rc = 0;
  goto done;
oom:
  rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
done:
  if (rc) out->n = start_n;
  work_free(&w);
  return rc;
}

/* ---- decode ---- */

/* transformers' clean_up_tokenization: Python str.replace, applied in this order. */
static void cleanup_spaces(char *s, size_t *len) {
  static const char *pairs[][2] = {{" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},
                                   {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
                                   {" 've", "'ve"}, {" 're", "'re"}};
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
    size_t fl = strlen(pairs[p][0]), tl = strlen(pairs[p][1]), k = 0;
    for (size_t i = 0; i < *len;) {
      if (*len - i >= fl && memcmp(s + i, pairs[p][0], fl) == 0) {
        memmove(s + k, pairs[p][1], tl); /* replacements are never longer */
        k += tl;
        i += fl;
      } else {
        s[k++] = s[i++];
      }
    }
    *len = k;
    s[k] = 0;
  }
}

int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len,
                     laya_error *err) {
  const char **toks = malloc((n ? n : 1) * sizeof *toks);
  uint32_t *lens = malloc((n ? n : 1) * sizeof *lens);
  if (!toks || !lens) {
    free(toks);
    free(lens);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l;
    const char *s = tokenizer_id_to_token(t, ids[i], &l);
    if (!s) continue; /* unknown ids are skipped, as in the reference */
    toks[k] = s;
    lens[k++] = (uint32_t)l;
  }
  int rc = decoder_run(t, toks, lens, k, text, len, err);
  free(toks);
  free(lens);
  if (!rc && t->cleanup_spaces) cleanup_spaces(*text, len);
  return rc;
}
