/* post.c: the post-processor's special tokens around one sequence (add_special_tokens=True), as
 * tokenizers' TemplateProcessing / BertProcessing / RobertaProcessing / ByteLevel / Sequence put
 * them. Laya's rows never use it (it adds CLS / SEP itself); its embedder does (model/embed.c).
 * An unknown or malformed processor does not fail the load: it is remembered and refused by
 * tokenizer_special_template, naming it. */
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "tokenizer/internal.h"

static void unsupported(tokenizer *t, const char *what) {
  if (!t->post_unsupported) t->post_unsupported = what;
}

static bool add_id(tokenizer *t, int32_t *ids, int *n, int32_t id) {
  if (*n >= TOK_POST_MAX) {
    unsupported(t, "a post-processor adding more than 16 special tokens");
    return false;
  }
  ids[(*n)++] = id;
  return true;
}

/* One processor applied around what the earlier ones produced: pre + (prefix .. suffix) + post. */
static void wrap(tokenizer *t, const int32_t *pre, int n_pre, const int32_t *post, int n_post) {
  int32_t ids[TOK_POST_MAX];
  int n = 0;
  for (int i = 0; i < n_pre; i++)
    if (!add_id(t, ids, &n, pre[i])) return;
  for (int i = 0; i < t->post_prefix + t->post_suffix; i++)
    if (!add_id(t, ids, &n, t->post_ids[i])) return;
  for (int i = 0; i < n_post; i++)
    if (!add_id(t, ids, &n, post[i])) return;
  memcpy(t->post_ids, ids, sizeof(int32_t) * (size_t)n);
  t->post_prefix += n_pre;
  t->post_suffix += n_post;
}

/* [token, id] of BertProcessing / RobertaProcessing */
static bool pair_id(const json_value *v, int32_t *id) {
  if (!v || v->type != JSON_ARRAY || v->n != 2 || v->items[1].type != JSON_INT || v->items[1].big) return false;
  *id = (int32_t)v->items[1].i;
  return true;
}

static void template_single(tokenizer *t, const json_value *pp) {
  const json_value *single = json_get(pp, "single"), *specials = json_get(pp, "special_tokens");
  if (!single || single->type != JSON_ARRAY) return unsupported(t, "TemplateProcessing without a \"single\" template");
  int32_t pre[TOK_POST_MAX], post[TOK_POST_MAX];
  int n_pre = 0, n_post = 0, seqs = 0;
  for (uint32_t i = 0; i < single->n; i++) {
    const json_value *it = &single->items[i];
    const json_value *sp = it->type == JSON_OBJECT ? json_get(it, "SpecialToken") : NULL;
    const json_value *sq = it->type == JSON_OBJECT ? json_get(it, "Sequence") : NULL;
    if (sq) {
      seqs++;
      continue;
    }
    const json_value *name = sp && sp->type == JSON_OBJECT ? json_get(sp, "id") : NULL;
    const json_value *tok = name && name->type == JSON_STRING && specials && specials->type == JSON_OBJECT
                                ? json_get(specials, name->s) : NULL;
    const json_value *ids = tok && tok->type == JSON_OBJECT ? json_get(tok, "ids") : NULL;
    if (!ids || ids->type != JSON_ARRAY) return unsupported(t, "TemplateProcessing naming a special token it does not define");
    for (uint32_t j = 0; j < ids->n; j++) {
      if (ids->items[j].type != JSON_INT || ids->items[j].big) return unsupported(t, "TemplateProcessing with a non-integer id");
      if (!add_id(t, seqs ? post : pre, seqs ? &n_post : &n_pre, (int32_t)ids->items[j].i)) return;
    }
  }
  if (seqs != 1) return unsupported(t, "TemplateProcessing whose single template does not hold $A once");
  wrap(t, pre, n_pre, post, n_post);
}

static void load_one(tokenizer *t, const json_value *pp, int depth) {
  if (!pp || pp->type == JSON_NULL) return;
  const json_value *type = pp->type == JSON_OBJECT ? json_get(pp, "type") : NULL;
  if (!type || type->type != JSON_STRING) return unsupported(t, "a post_processor without a type");
  if (!strcmp(type->s, "TemplateProcessing")) return template_single(t, pp);
  if (!strcmp(type->s, "ByteLevel")) return; /* offsets only */
  if (!strcmp(type->s, "BertProcessing") || !strcmp(type->s, "RobertaProcessing")) {
    int32_t cls, sep;
    if (!pair_id(json_get(pp, "cls"), &cls) || !pair_id(json_get(pp, "sep"), &sep))
      return unsupported(t, "BertProcessing / RobertaProcessing without [token, id] cls and sep");
    return wrap(t, &cls, 1, &sep, 1);
  }
  if (!strcmp(type->s, "Sequence") && depth < 8) {
    const json_value *ps = json_get(pp, "processors");
    if (!ps || ps->type != JSON_ARRAY) return unsupported(t, "a Sequence post_processor without processors");
    for (uint32_t i = 0; i < ps->n; i++) load_one(t, &ps->items[i], depth + 1);
    return;
  }
  unsupported(t, type->s);
}

void post_load(tokenizer *t, const json_value *pp) { load_one(t, pp, 0); }

int tokenizer_special_template(const tokenizer *t, const int32_t **prefix, int *n_prefix, const int32_t **suffix,
                               int *n_suffix, laya_error *err) {
  if (t->post_unsupported)
    return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL, "%s: post_processor: %s is not supported (needed to add special tokens)",
                    t->path ? t->path : "tokenizer.json", t->post_unsupported);
  *prefix = t->post_ids;
  *n_prefix = t->post_prefix;
  *suffix = t->post_ids + t->post_prefix;
  *n_suffix = t->post_suffix;
  return 0;
}
