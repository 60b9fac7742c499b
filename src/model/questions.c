#include "model/questions.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pystr.h"

const char *const question_type_names[QT_COUNT] = {"choice", "score", "noul"};

void render_criterion(strbuf *sb, const json_value *v) {
  if (v->type == JSON_STRING) {
    sb_append(sb, v->s, v->n);
    return;
  }
  json_dump_opts o = {NULL, NULL, false, -1};
  json_dump(sb, v, &o);
}

/* Exact integer text of an integral double (glibc prints it exactly). */
static void integral_text(double d, char *buf, size_t n) { snprintf(buf, n, "%.0f", d); }

static bool num_equal(const json_value *a, const json_value *b) {
  /* a, b: bool/int/float */
  if (a->type == JSON_FLOAT && isnan(a->d)) return b->type == JSON_FLOAT && isnan(b->d);
  if (b->type == JSON_FLOAT && isnan(b->d)) return false;
  if (a->type == JSON_INT && a->big && b->type == JSON_INT && b->big)
    return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
  const json_value *x = a, *y = b; /* make x the big int if there is one */
  if (b->type == JSON_INT && b->big) {
    x = b;
    y = a;
  }
  if (x->type == JSON_INT && x->big) {
    if (y->type != JSON_FLOAT || y->d != floor(y->d) || isinf(y->d)) return false;
    char buf[400];
    integral_text(y->d, buf, sizeof buf);
    const char *lx = x->s;
    size_t ln = x->n;
    return strlen(buf) == ln && memcmp(buf, lx, ln) == 0;
  }
  /* both fit: bools and int64 are exact integers */
  long double ax = a->type == JSON_BOOL ? a->b : a->type == JSON_INT ? (long double)a->i : (long double)a->d;
  long double bx = b->type == JSON_BOOL ? b->b : b->type == JSON_INT ? (long double)b->i : (long double)b->d;
  if (a->type != JSON_FLOAT && b->type != JSON_FLOAT) {
    int64_t ia = a->type == JSON_BOOL ? a->b : a->i, ib = b->type == JSON_BOOL ? b->b : b->i;
    return ia == ib;
  }
  return ax == bx; /* long double holds every int64 and double exactly on x86 */
}

bool py_key_equal(const json_value *a, const json_value *b) {
  bool sa = a->type == JSON_STRING, sb = b->type == JSON_STRING;
  if (sa || sb) return sa && sb && a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
  return num_equal(a, b);
}

void label_json_key(strbuf *sb, const json_value *label) {
  char num[32];
  switch (label->type) {
    case JSON_STRING: sb_append(sb, label->s, label->n); break;
    case JSON_BOOL: sb_puts(sb, label->b ? "true" : "false"); break;
    case JSON_INT:
      if (label->big)
        sb_append(sb, label->s, label->n);
      else
        sb_printf(sb, "%lld", (long long)label->i);
      break;
    case JSON_FLOAT:
      py_float_json(label->d, num);
      sb_puts(sb, num);
      break;
    default: sb_puts(sb, "null"); break;
  }
}

typedef struct vctx {
  laya_error *err;
  strbuf qr; /* repr(qid) */
} vctx;

static int verr(vctx *c, const char *fmt, ...) LAYA_PRINTF(2, 3);
static int verr(vctx *c, const char *fmt, ...) {
  char msg[1800];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return laya_value_error(c->err, "question %s: %s", sb_cstr(&c->qr), msg);
}

static char *repr_of(const json_value *v) {
  strbuf sb;
  sb_init(&sb);
  if (v)
    py_repr_json(&sb, v);
  else
    sb_puts(&sb, "None");
  return sb_steal(&sb);
}

static bool is_scalar(const json_value *v) {
  return v->type == JSON_STRING || v->type == JSON_INT || v->type == JSON_FLOAT || v->type == JSON_BOOL;
}

static bool valid_noul_labels(const json_value *labels) {
  if (labels->type == JSON_NULL) return true;
  if (labels->type != JSON_OBJECT || labels->n != 2) return false;
  const json_value *f = json_get(labels, "false"), *t = json_get(labels, "true");
  if (!f || !t || f->type != JSON_STRING || t->type != JSON_STRING) return false;
  size_t fs, fl, ts, tl;
  py_strip(f->s, f->n, &fs, &fl);
  py_strip(t->s, t->n, &ts, &tl);
  if (!fl || !tl) return false;
  return !(fl == tl && memcmp(f->s + fs, t->s + ts, fl) == 0);
}

static int check_question(const char *qid, size_t qid_len, const json_value *q, laya_error *err) {
  vctx c = {err, {0}};
  sb_init(&c.qr);
  py_repr_str(&c.qr, qid, qid_len);
  int rc = 0;
  char *tmp = NULL;
  if (py_is_blank(qid, qid_len)) {
    rc = laya_value_error(err, "question id must be a non-empty string, got %s", sb_cstr(&c.qr));
    goto done;
  }
  if (q->type != JSON_OBJECT) {
    rc = verr(&c, "definition must be a dict, got %s", json_py_type(q));
    goto done;
  }
  const json_value *t = json_get(q, "type");
  int type = -1;
  if (t && t->type == JSON_STRING)
    for (int i = 0; i < 3; i++)
      if (strcmp(t->s, question_type_names[i]) == 0 && strlen(question_type_names[i]) == t->n) type = i;
  if (type < 0) {
    tmp = repr_of(t);
    rc = verr(&c, "unknown type %s; use one of ['choice', 'noul', 'score']", tmp);
    goto done;
  }
  const json_value *ins = json_get(q, "instructions");
  if (!ins) {
    rc = verr(&c, "no 'instructions'; add the text the model should answer");
    goto done;
  }
  if (ins->type == JSON_NULL) {
    rc = verr(&c, "'instructions' must not be None; add the text the model should answer");
    goto done;
  }
  if ((ins->type == JSON_STRING && py_is_blank(ins->s, ins->n)) ||
      ((ins->type == JSON_ARRAY || ins->type == JSON_OBJECT) && ins->n == 0)) {
    rc = verr(&c, "'instructions' must not be empty; add the text the model should answer");
    goto done;
  }
  const json_value *crit = json_get(q, "criteria");
  if (type == QT_CHOICE) {
    if (!crit || (crit->type != JSON_OBJECT && crit->type != JSON_ARRAY)) {
      rc = verr(&c, "a choice question takes 'criteria' as a dict of label -> description, or a list of labels");
      goto done;
    }
    if (crit->n == 0) {
      rc = verr(&c, "a choice question needs at least one criterion");
      goto done;
    }
    if (crit->type == JSON_ARRAY) {
      for (uint32_t i = 0; i < crit->n; i++) {
        const json_value *l = &crit->items[i];
        if (l->type == JSON_NULL) {
          rc = verr(&c,
                    "choice label %u is null; a label is rendered as option text and used as the "
                    "answer key, so it must be a string, number or bool -- a null label renders as "
                    "the text \"None\" while its answer key is \"null\"",
                    i);
          goto done;
        }
        if (!is_scalar(l)) {
          tmp = repr_of(l);
          rc = verr(&c,
                    "choice label %u is a %s; a label is rendered as option text and used as the "
                    "answer key, so it must be a scalar (a string, number or bool), got %s",
                    i, json_py_type(l), tmp);
          goto done;
        }
      }
      for (uint32_t i = 1; i < crit->n; i++)
        for (uint32_t j = 0; j < i; j++)
          if (py_key_equal(&crit->items[j], &crit->items[i])) {
            tmp = repr_of(&crit->items[i]);
            rc = verr(&c,
                      "choice label %u (%s) repeats label %u; the labels are the answer keys, so "
                      "every option needs its own (1, 1.0 and True are one key)",
                      i, tmp, j);
            goto done;
          }
    }
  } else if (type == QT_SCORE) {
    if (!crit || crit->type != JSON_ARRAY) {
      rc = verr(&c, "a score question takes 'criteria' as a list of level descriptions, index 0 first");
      goto done;
    }
    if (crit->n == 0) {
      rc = verr(&c, "a score question needs at least one level");
      goto done;
    }
    for (uint32_t i = 0; i < crit->n; i++)
      if (crit->items[i].type == JSON_NULL) {
        rc = verr(&c, "score level %u is null; give every level a description, index 0 first", i);
        goto done;
      }
  } else if (crit && crit->type != JSON_NULL && crit->type != JSON_OBJECT) {
    rc = verr(&c, "a noul question takes 'criteria' as a dict with optional 'true'/'false' descriptions, or omits it");
    goto done;
  } else if (crit && crit->type == JSON_OBJECT) {
    /* {str(k).lower()} must be a subset of {"true", "false"}; the message lists it sorted */
    char **keys = calloc(crit->n ? crit->n : 1, sizeof *keys);
    int nk = 0;
    bool bad = false;
    for (uint32_t i = 0; i < crit->n && keys; i++) {
      strbuf low;
      sb_init(&low);
      py_lower(&low, crit->members[i].key, crit->members[i].key_len);
      char *k = sb_steal(&low);
      if (strcmp(k, "true") != 0 && strcmp(k, "false") != 0) bad = true;
      bool dup = false;
      for (int j = 0; j < nk; j++) dup |= strcmp(keys[j], k) == 0;
      if (dup)
        free(k);
      else
        keys[nk++] = k;
    }
    if (bad) {
      /* sorted by code point: UTF-8 byte order is the same order */
      for (int i = 1; i < nk; i++)
        for (int j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
          char *x = keys[j];
          keys[j] = keys[j - 1];
          keys[j - 1] = x;
        }
      strbuf lst;
      sb_init(&lst);
      sb_putc(&lst, '[');
      for (int i = 0; i < nk; i++) {
        if (i) sb_puts(&lst, ", ");
        py_repr_str(&lst, keys[i], strlen(keys[i]));
      }
      sb_putc(&lst, ']');
      rc = verr(&c,
                "a noul question takes 'criteria' keyed only 'true'/'false' (either or both, and "
                "omitted is fine), got %s. Those keys are the option texts the model reads; any "
                "other key was silently dropped and replaced with the defaults. If you want the "
                "answer worded differently, keep 'criteria' keyed 'true'/'false' and set 'labels' "
                "instead.",
                sb_cstr(&lst));
      sb_free(&lst);
    }
    for (int i = 0; i < nk; i++) free(keys[i]);
    free(keys);
    if (rc) goto done;
  }
  const json_value *order = json_get(q, "option_order");
  if (order) {
    int n = type == QT_NOUL ? 2 : (crit && (crit->type == JSON_OBJECT || crit->type == JSON_ARRAY) ? (int)crit->n : 0);
    bool ok = order->type == JSON_ARRAY && (int)order->n == n;
    if (ok) {
      /* the true ints (not bools), sorted, must be exactly 0..n-1 */
      char *seen = calloc((size_t)n + 1, 1);
      int count = 0;
      for (uint32_t i = 0; i < order->n && seen; i++) {
        const json_value *x = &order->items[i];
        if (x->type != JSON_INT) continue;
        count++;
        if (x->big || x->i < 0 || x->i >= n || seen[x->i]) ok = false;
        else seen[x->i] = 1;
      }
      if (count != n) ok = false;
      free(seen);
    }
    if (!ok) {
      tmp = repr_of(order);
      rc = verr(&c,
                "'option_order' must be a permutation of range(%d) -- one slot per option, each "
                "option once -- got %s",
                n, tmp);
      goto done;
    }
  }
  const json_value *labels = json_get(q, "labels");
  if (labels) {
    if (type != QT_NOUL) {
      rc = verr(&c, "'labels' is only supported for noul questions");
      goto done;
    }
    if (!valid_noul_labels(labels)) {
      rc = verr(&c, "noul labels must map exactly 'false' and 'true' to distinct non-empty strings");
      goto done;
    }
  }
done:
  free(tmp);
  sb_free(&c.qr);
  return rc;
}

static const char *arena_text(arena *a, strbuf *sb, size_t *len) {
  *len = sb->len;
  return arena_strndup(a, sb_cstr(sb), sb->len);
}

static int normalise(const char *qid, size_t qid_len, const json_value *q, arena *a, question *out) {
  memset(out, 0, sizeof *out);
  out->qid = qid;
  out->qid_len = qid_len;
  const json_value *t = json_get(q, "type");
  for (int i = 0; i < 3; i++)
    if (strcmp(t->s, question_type_names[i]) == 0) out->type = i;
  out->type_name = question_type_names[out->type];
  const json_value *ins = json_get(q, "instructions");
  strbuf sb;
  sb_init(&sb);
  if (ins->type == JSON_STRING) {
    out->ins = ins->s;
    out->ins_len = ins->n;
  } else {
    json_dump_opts o = {NULL, NULL, false, -1};
    json_dump(&sb, ins, &o);
    out->ins = arena_text(a, &sb, &out->ins_len);
  }
  const json_value *crit = json_get(q, "criteria");
  int n = out->type == QT_NOUL ? 2 : (int)crit->n;
  out->n_opts = n;
  out->opt = arena_alloc(a, sizeof(char *) * (size_t)n);
  out->opt_len = arena_alloc(a, sizeof(size_t) * (size_t)n);
  if (!out->opt || !out->opt_len) goto oom;
  if (out->type == QT_CHOICE) {
    out->label = arena_alloc(a, sizeof(json_value *) * (size_t)n);
    if (!out->label) goto oom;
    for (int i = 0; i < n; i++) {
      sb_reset(&sb);
      const json_value *desc = NULL;
      const json_value *label;
      if (crit->type == JSON_ARRAY) {
        label = &crit->items[i];
      } else {
        json_value *k = arena_alloc(a, sizeof *k);
        if (!k) goto oom;
        k->type = JSON_STRING;
        k->s = crit->members[i].key;
        k->n = crit->members[i].key_len;
        label = k;
        desc = &crit->members[i].value;
      }
      out->label[i] = label;
      py_str_json(&sb, label);
      bool no_desc = !desc || desc->type == JSON_NULL || (desc->type == JSON_STRING && desc->n == 0);
      if (!no_desc) {
        sb_puts(&sb, ": ");
        render_criterion(&sb, desc);
      }
      out->opt[i] = arena_text(a, &sb, &out->opt_len[i]);
    }
  } else if (out->type == QT_SCORE) {
    out->legend = arena_alloc(a, sizeof(char *) * (size_t)n);
    out->legend_len = arena_alloc(a, sizeof(size_t) * (size_t)n);
    if (!out->legend || !out->legend_len) goto oom;
    for (int i = 0; i < n; i++) {
      sb_reset(&sb);
      render_criterion(&sb, &crit->items[i]);
      out->legend[i] = arena_text(a, &sb, &out->legend_len[i]);
      sb_reset(&sb);
      sb_printf(&sb, "level %d: ", i);
      sb_append(&sb, out->legend[i], out->legend_len[i]);
      out->opt[i] = arena_text(a, &sb, &out->opt_len[i]);
    }
  } else {
    /* criteria keys lower-cased (the last value of a repeated key wins), labels stripped */
    const json_value *fc = NULL, *tc = NULL;
    if (crit && crit->type == JSON_OBJECT)
      for (uint32_t i = 0; i < crit->n; i++) {
        strbuf low;
        sb_init(&low);
        py_lower(&low, crit->members[i].key, crit->members[i].key_len);
        if (strcmp(sb_cstr(&low), "false") == 0) fc = &crit->members[i].value;
        if (strcmp(sb_cstr(&low), "true") == 0) tc = &crit->members[i].value;
        sb_free(&low);
      }
    const json_value *labels = json_get(q, "labels");
    const char *lab[2] = {"false", "true"};
    size_t lab_len[2] = {5, 4};
    if (labels && labels->type == JSON_OBJECT) {
      const json_value *lv[2] = {json_get(labels, "false"), json_get(labels, "true")};
      for (int i = 0; i < 2; i++) {
        size_t s0;
        py_strip(lv[i]->s, lv[i]->n, &s0, &lab_len[i]);
        lab[i] = lv[i]->s + s0;
      }
    }
    const json_value *cv[2] = {fc, tc};
    static const char *const dflt[2] = {"no, the statement does not hold", "yes, the statement holds"};
    for (int i = 0; i < 2; i++) {
      sb_reset(&sb);
      sb_append(&sb, lab[i], lab_len[i]);
      sb_puts(&sb, ": ");
      const json_value *v = cv[i];
      bool none = !v || v->type == JSON_NULL || (v->type == JSON_STRING && v->n == 0);
      if (none)
        sb_puts(&sb, dflt[i]);
      else
        render_criterion(&sb, v);
      out->opt[i] = arena_text(a, &sb, &out->opt_len[i]);
    }
  }
  const json_value *order = json_get(q, "option_order");
  if (order) {
    out->order = arena_alloc(a, sizeof(int) * (size_t)n);
    if (!out->order) goto oom;
    for (int i = 0; i < n; i++) out->order[i] = (int)order->items[i].i;
  }
  if (sb.oom) goto oom;
  sb_free(&sb);
  return 0;
oom:
  sb_free(&sb);
  return -1;
}

int questions_prepare(const json_value *questions, arena *a, question **out, int *n_out,
                      laya_error *err) {
  *out = NULL;
  *n_out = 0;
  uint32_t n = questions->n;
  for (uint32_t i = 0; i < n; i++) {
    const json_member *m = &questions->members[i];
    int rc = check_question(m->key, m->key_len, &m->value, err);
    if (rc) return rc;
  }
  question *qs = arena_alloc(a, sizeof *qs * (n ? n : 1));
  if (!qs) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  for (uint32_t i = 0; i < n; i++)
    if (normalise(questions->members[i].key, questions->members[i].key_len,
                  &questions->members[i].value, a, &qs[i]) != 0)
      return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  *out = qs;
  *n_out = (int)n;
  return 0;
}
