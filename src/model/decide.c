/*
 * decide.c: schema-driven decisions (Laya 0.4.15's laya.structured) on one loaded model.
 *
 * A JSON schema's properties become questions: enum/const -> choice (labels str(value)),
 * boolean or an enum of both booleans -> noul, integer/number with integer minimum and maximum
 * -> score with levels "lo".."hi". The answers come from one predict (or predict_batch) call and
 * are projected back onto the schema: the enum value itself, P(true) >= 0.5, and for a score
 * the argmax level plus the minimum. Anything that is not a fixed option set is refused with a
 * SchemaError naming the property path.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
#include "core/json.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/decide.h"
#include "model/engine.h"
#include "model/result_json.h"
#include "model/typed.h"

enum { MAX_PROPERTIES = 32, MAX_OPTIONS = 32, MAX_SCORE_LEVELS = 10 };
enum { F_CHOICE, F_SCORE, F_NOUL };

typedef struct field {
  const char *name;
  int kind;
  json_value *question; /* the question handed to predict (in the call's arena) */
  int n_opts;
  char **labels;                /* choice: str(value) */
  const json_value **values;    /* choice: the enum values */
  long long minimum;            /* score */
} field;

typedef struct plan {
  field f[MAX_PROPERTIES];
  int n;
} plan;

static void plan_free(plan *p) {
  for (int i = 0; i < p->n; i++) {
    for (int k = 0; k < p->f[i].n_opts; k++) free(p->f[i].labels[k]);
    free(p->f[i].labels);
    free(p->f[i].values);
  }
  p->n = 0;
}

static int schema_error(laya_error *err, const char *msg) {
  return laya_err(err, LAYA_ERR_VALUE, "SchemaError", "%s", msg);
}

static bool has_key(const json_value *o, const char *k) { return json_get(o, k) != NULL; }

/* A new object: base's members, then over's (over wins; new keys appended), minus `drop`. */
static json_value *merge(arena *a, const json_value *base, const char *drop_base,
                         const json_value *over, const char *drop_over) {
  json_value *o = arena_alloc(a, sizeof *o);
  uint32_t cap = base->n + over->n;
  o->type = JSON_OBJECT;
  o->members = arena_alloc(a, (cap ? cap : 1) * sizeof(json_member));
  for (uint32_t i = 0; i < base->n; i++) {
    if (drop_base && !strcmp(base->members[i].key, drop_base)) continue;
    o->members[o->n++] = base->members[i];
  }
  for (uint32_t i = 0; i < over->n; i++) {
    if (drop_over && !strcmp(over->members[i].key, drop_over)) continue;
    uint32_t k = 0;
    while (k < o->n && strcmp(o->members[k].key, over->members[i].key)) k++;
    if (k < o->n) o->members[k].value = over->members[i].value;
    else o->members[o->n++] = over->members[i];
  }
  return o;
}

/* ---- the questions handed to predict, built as values ---- */

static json_value *jv_new(arena *a, json_type t, uint32_t n) {
  json_value *v = arena_alloc(a, sizeof *v);
  if (!v) return NULL;
  memset(v, 0, sizeof *v);
  v->type = t;
  if (t == JSON_OBJECT && n) v->members = arena_alloc(a, sizeof(json_member) * n);
  if (t == JSON_ARRAY && n) v->items = arena_alloc(a, sizeof(json_value) * n);
  if (n && !v->members && !v->items) return NULL;
  return v;
}

static void jv_put(json_value *o, const char *k, json_value v) {
  json_member *m = &o->members[o->n++];
  m->key = k;
  m->key_len = (uint32_t)strlen(k);
  m->value = v;
}

static json_value jv_str(arena *a, const char *s) {
  size_t n = strlen(s);
  char *c = arena_strndup(a, s, n);
  json_value v = json_string_n(c ? c : "", c ? n : 0);
  return v;
}

/* {"type": t, "instructions": description or the fallback, [criteria]} */
static json_value *question_value(arena *a, const char *type, const json_value *description, const char *fallback,
                                  const json_value *criteria) {
  json_value *q = jv_new(a, JSON_OBJECT, 3);
  if (!q) return NULL;
  jv_put(q, "type", json_string(type));
  jv_put(q, "instructions", json_truthy(description) ? *description : jv_str(a, fallback));
  if (criteria) jv_put(q, "criteria", *criteria);
  return q;
}

static int noul_field(field *f, const char *name, const json_value *description, arena *a) {
  f->kind = F_NOUL;
  strbuf fb;
  sb_init(&fb);
  sb_printf(&fb, "Is `%s` true?", name);
  f->question = question_value(a, "noul", description, sb_cstr(&fb), NULL);
  sb_free(&fb);
  return 0;
}

static int enum_field(field *f, const char *path, const char *name, const json_value *values,
                      const json_value *description, arena *a, laya_error *err) {
  strbuf m;
  sb_init(&m);
  int rc = 0;
  if (values->type != JSON_ARRAY) {
    sb_printf(&m, "%s: 'enum' must be an array of values, got %s", path, json_py_type(values));
    rc = schema_error(err, m.data);
  } else if (values->n > MAX_OPTIONS) {
    sb_printf(&m, "%s: %u options exceeds MAX_OPTIONS=%d", path, values->n, MAX_OPTIONS);
    rc = schema_error(err, m.data);
  } else if (values->n == 0) {
    sb_printf(&m, "%s: 'enum' must not be empty", path);
    rc = schema_error(err, m.data);
  }
  if (rc) {
    sb_free(&m);
    return rc;
  }
  bool all_bool = true, seen_t = false, seen_f = false;
  for (uint32_t i = 0; i < values->n; i++) {
    if (values->items[i].type != JSON_BOOL) all_bool = false;
    else if (values->items[i].b) seen_t = true;
    else seen_f = true;
  }
  if (all_bool && seen_t && seen_f) {
    sb_free(&m);
    return noul_field(f, name, description, a);
  }
  f->kind = F_CHOICE;
  f->labels = calloc(values->n, sizeof(char *));
  f->values = calloc(values->n, sizeof(json_value *));
  if (!f->labels || !f->values) {
    sb_free(&m);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory for %u enum values", path, values->n);
  }
  f->n_opts = (int)values->n;
  for (uint32_t i = 0; i < values->n; i++) {
    strbuf l;
    sb_init(&l);
    if (values->items[i].type == JSON_NULL) sb_puts(&l, "null");
    else py_str_json(&l, &values->items[i]);
    f->labels[i] = sb_steal(&l);
    if (!f->labels[i]) f->labels[i] = strdup("");
    f->values[i] = &values->items[i];
  }
  for (int i = 0; i < f->n_opts; i++)
    for (int j = i + 1; j < f->n_opts; j++)
      if (!strcmp(f->labels[i], f->labels[j])) {
        sb_printf(&m, "%s: enum values produce duplicate choice labels", path);
        rc = schema_error(err, m.data);
        sb_free(&m);
        return rc;
      }
  strbuf fb;
  sb_init(&fb);
  sb_printf(&fb, "What is `%s`?", name);
  json_value *crit = jv_new(a, JSON_OBJECT, (uint32_t)f->n_opts);
  for (int i = 0; crit && i < f->n_opts; i++) jv_put(crit, arena_strndup(a, f->labels[i], strlen(f->labels[i])), (json_value){0});
  f->question = crit ? question_value(a, "choice", description, sb_cstr(&fb), crit) : NULL;
  sb_free(&fb);
  sb_free(&m);
  return 0;
}

static bool plain_int(const json_value *v) { return v && v->type == JSON_INT && !v->big; }

static int score_field(field *f, const char *path, const char *name, const json_value *prop,
                       const json_value *description, arena *a, laya_error *err) {
  const json_value *lo = json_get(prop, "minimum"), *hi = json_get(prop, "maximum");
  strbuf m;
  sb_init(&m);
  int rc = 0;
  if (!lo || !hi || lo->type != JSON_INT || hi->type != JSON_INT) {
    sb_printf(&m, "%s: a numeric field needs integer 'minimum' and 'maximum' to become a score", path);
    rc = schema_error(err, m.data);
  } else if (!plain_int(lo) || !plain_int(hi) || hi->i < lo->i) {
    if (plain_int(lo) && plain_int(hi)) {
      sb_printf(&m, "%s: 'maximum' %lld is below 'minimum' %lld", path, (long long)hi->i,
                (long long)lo->i);
    } else {
      sb_printf(&m, "%s: %s levels exceeds MAX_SCORE_LEVELS=%d; narrow the range or use an enum",
                path, "too many", MAX_SCORE_LEVELS);
    }
    rc = schema_error(err, m.data);
  } else if (hi->i - lo->i + 1 > MAX_SCORE_LEVELS) {
    sb_printf(&m, "%s: %lld levels exceeds MAX_SCORE_LEVELS=%d; narrow the range or use an enum",
              path, (long long)(hi->i - lo->i + 1), MAX_SCORE_LEVELS);
    rc = schema_error(err, m.data);
  }
  if (rc) {
    sb_free(&m);
    return rc;
  }
  f->kind = F_SCORE;
  f->minimum = lo->i;
  strbuf fb;
  sb_init(&fb);
  sb_printf(&fb, "Score `%s` from %lld to %lld", name, (long long)lo->i, (long long)hi->i);
  json_value *crit = jv_new(a, JSON_ARRAY, (uint32_t)(hi->i - lo->i + 1));
  for (long long v = lo->i; crit && v <= hi->i; v++) {
    char b[24];
    snprintf(b, sizeof b, "%lld", v);
    crit->items[crit->n++] = jv_str(a, b);
  }
  f->question = crit ? question_value(a, "score", description, sb_cstr(&fb), crit) : NULL;
  sb_free(&fb);
  sb_free(&m);
  return 0;
}

static int plan_field(field *f, const char *path, const char *name, const json_value *prop,
                      const json_value *root, arena *a, const char **seen, int nseen,
                      laya_error *err);

static int unsupported(laya_error *err, const char *path, const json_value *prop) {
  strbuf m;
  sb_init(&m);
  sb_printf(&m, "%s: unsupported schema ", path);
  py_repr_json(&m, prop);
  int rc = schema_error(err, m.data);
  sb_free(&m);
  return rc;
}

static int plan_field(field *f, const char *path, const char *name, const json_value *prop,
                      const json_value *root, arena *a, const char **seen, int nseen,
                      laya_error *err) {
  strbuf m;
  sb_init(&m);
  int rc = 0;
  if (prop->type != JSON_OBJECT) {
    sb_printf(&m, "%s: property must be an object, got %s", path, json_py_type(prop));
    rc = schema_error(err, m.data);
    goto out;
  }
  /* inline local $refs, the property's own keys on top of the definition's (less its description) */
  while (has_key(prop, "$ref")) {
    const json_value *ref = json_get(prop, "$ref");
    for (int i = 0; i < nseen; i++)
      if (ref->type == JSON_STRING && !strcmp(seen[i], ref->s)) {
        sb_printf(&m, "%s: $ref ", path);
        py_repr_json(&m, ref);
        sb_puts(&m, " is recursive; flatten the schema");
        rc = schema_error(err, m.data);
        goto out;
      }
    const json_value *target = NULL;
    static const char *const prefixes[2][2] = {{"#/$defs/", "$defs"}, {"#/definitions/", "definitions"}};
    for (int k = 0; k < 2; k++) {
      const json_value *defs = json_get(root, prefixes[k][1]);
      size_t pl = strlen(prefixes[k][0]);
      if (ref->type == JSON_STRING && !strncmp(ref->s, prefixes[k][0], pl) && defs &&
          defs->type == JSON_OBJECT)
        target = json_get(defs, ref->s + pl);
    }
    if (!target || target->type != JSON_OBJECT) {
      sb_printf(&m, "%s: $ref ", path);
      py_repr_json(&m, ref);
      sb_puts(&m, " does not resolve to an entry of this schema's '$defs' or 'definitions'");
      rc = schema_error(err, m.data);
      goto out;
    }
    if (nseen >= 64) {
      rc = schema_error(err, "schema $ref chain too deep");
      goto out;
    }
    seen[nseen++] = ref->s;
    prop = merge(a, target, "description", prop, "$ref");
  }
  const json_value *description = json_get(prop, "description");
  if (!has_key(prop, "const") && !has_key(prop, "enum") && !has_key(prop, "type")) {
    const json_value *wrapped = json_get(prop, "allOf");
    if (wrapped && wrapped->type == JSON_ARRAY && wrapped->n == 1 &&
        wrapped->items[0].type == JSON_OBJECT) {
      json_value *branch = merge(a, &wrapped->items[0], NULL, prop, "allOf");
      rc = plan_field(f, path, name, branch, root, a, seen, nseen, err);
      goto out;
    }
    /* Python: union = anyOf or oneOf; a union must have exactly one non-null branch */
    const json_value *u = json_get(prop, "anyOf");
    if (!json_truthy(u)) u = json_get(prop, "oneOf");
    if (u && u->type != JSON_NULL) {
      int nb = 0;
      const json_value *br = NULL;
      if (u->type == JSON_ARRAY)
        for (uint32_t i = 0; i < u->n; i++) {
          const json_value *b = &u->items[i];
          const json_value *t = b->type == JSON_OBJECT ? json_get(b, "type") : NULL;
          if (b->type == JSON_OBJECT && !(t && t->type == JSON_STRING && !strcmp(t->s, "null"))) {
            nb++;
            br = b;
          }
        }
      if (nb != 1) {
        sb_printf(&m, "%s: only 'Optional[...]' unions (one non-null branch) are supported, got %d",
                  path, nb);
        rc = schema_error(err, m.data);
        goto out;
      }
      json_value empty = {.type = JSON_OBJECT};
      json_value *branch = merge(a, br, NULL, &empty, NULL);
      if (!has_key(branch, "description")) {
        /* setdefault("description", description) */
        json_member *mm = arena_alloc(a, (branch->n + 1) * sizeof(json_member));
        memcpy(mm, branch->members, branch->n * sizeof(json_member));
        mm[branch->n].key = "description";
        mm[branch->n].key_len = 11;
        if (description) mm[branch->n].value = *description;
        else mm[branch->n].value.type = JSON_NULL;
        branch->members = mm;
        branch->n++;
      }
      rc = plan_field(f, path, name, branch, root, a, seen, nseen, err);
      goto out;
    }
  }
  const json_value *c = json_get(prop, "const");
  if (c) {
    json_value one = {.type = JSON_ARRAY, .n = 1, .items = (json_value *)c};
    json_value *arr = arena_alloc(a, sizeof *arr);
    *arr = one;
    rc = enum_field(f, path, name, arr, description, a, err);
    goto out;
  }
  const json_value *e = json_get(prop, "enum");
  if (e) {
    rc = enum_field(f, path, name, e, description, a, err);
    goto out;
  }
  const json_value *jt = json_get(prop, "type");
  const char *jtype = jt && jt->type == JSON_STRING ? jt->s : NULL;
  if (jt && jt->type == JSON_ARRAY) {
    int nn = 0;
    jtype = NULL;
    bool nonstr = false;
    for (uint32_t i = 0; i < jt->n; i++) {
      const json_value *t = &jt->items[i];
      if (t->type == JSON_STRING && !strcmp(t->s, "null")) continue;
      if (nn++ == 0) {
        if (t->type == JSON_STRING) jtype = t->s;
        else nonstr = true;
      }
    }
    if (nn > 1) {
      sb_printf(&m, "%s: 'type' has multiple non-null types; unions are not supported", path);
      rc = schema_error(err, m.data);
      goto out;
    }
    if (nonstr) jtype = NULL;
  }
  if (jtype && !strcmp(jtype, "boolean")) {
    rc = noul_field(f, name, description, a);
  } else if (jtype && !strcmp(jtype, "string")) {
    sb_printf(&m, "%s: a free string cannot be a fixed option set; use 'enum' or a boolean", path);
    rc = schema_error(err, m.data);
  } else if (jtype && (!strcmp(jtype, "integer") || !strcmp(jtype, "number"))) {
    rc = score_field(f, path, name, prop, description, a, err);
  } else if (jtype && !strcmp(jtype, "array")) {
    sb_printf(&m, "%s: arrays are not supported; ask one field per element", path);
    rc = schema_error(err, m.data);
  } else if (jtype && !strcmp(jtype, "object")) {
    sb_printf(&m, "%s: nested objects are not supported; flatten the schema", path);
    rc = schema_error(err, m.data);
  } else {
    rc = unsupported(err, path, prop);
  }
out:
  sb_free(&m);
  return rc;
}

static int plan_schema(const json_value *schema, arena *a, plan *p, laya_error *err) {
  memset(p, 0, sizeof *p);
  if (schema->type != JSON_OBJECT) {
    strbuf m;
    sb_init(&m);
    sb_printf(&m, "expected a JSON schema dict or a pydantic model, got %s", json_py_type(schema));
    int rc = schema_error(err, m.data);
    sb_free(&m);
    return rc;
  }
  const json_value *t = json_get(schema, "type");
  bool type_ok = !t || t->type == JSON_NULL || (t->type == JSON_STRING && !strcmp(t->s, "object"));
  const json_value *props = json_get(schema, "properties");
  if (!type_ok || !props) return schema_error(err, "the top level must be an object with 'properties'");
  if (props->type != JSON_OBJECT || props->n == 0)
    return schema_error(err, "'properties' must be a non-empty object");
  if (props->n > MAX_PROPERTIES) {
    strbuf m;
    sb_init(&m);
    sb_printf(&m, "%u properties exceeds MAX_PROPERTIES=%d", props->n, MAX_PROPERTIES);
    int rc = schema_error(err, m.data);
    sb_free(&m);
    return rc;
  }
  for (uint32_t i = 0; i < props->n; i++) {
    strbuf path;
    sb_init(&path);
    sb_printf(&path, "properties.%s", props->members[i].key);
    field *f = &p->f[p->n++];
    memset(f, 0, sizeof *f);
    f->name = props->members[i].key;
    const char *seen[64];
    int rc = plan_field(f, path.data, f->name, &props->members[i].value, schema, a, seen, 0, err);
    sb_free(&path);
    if (rc) {
      plan_free(p);
      return rc;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- projection */

/* The schema's values from one state's answers (answers are in the plan's field order). */
/* A RouteDecision (the Router's), written last in the object being written; NULL: none. */
static void routing_last(rj *w, const char *routing) {
  if (!routing) return;
  rj_key(w, "routing", 7);
  rj_raw_styled(w, routing);
}

/* The schema's values (p) or, with no schema, the answers themselves. */
/* How many values values() writes, and the i-th one's name. */
static int values_count(const state_result *r, const plan *p) {
  if (!p) return r->n;
  return p->n < r->n ? p->n : r->n;
}

static const char *value_name(const state_result *r, const plan *p, int i, size_t *len) {
  if (!p) {
    *len = r->answers[i].q->qid_len;
    return r->answers[i].q->qid;
  }
  *len = strlen(p->f[i].name);
  return p->f[i].name;
}

/* The i-th value: the schema field's typed value (p), or with no schema the answer itself. */
static void value_at(rj *w, const state_result *r, const plan *p, int i) {
  const answer *ans = &r->answers[i];
  if (!p) {
    rj_answer(w, ans);
    return;
  }
  const field *f = &p->f[i];
  if (ans->gate == GATE_ABSTAINED) {
    rj_null(w);
  } else if (f->kind == F_NOUL) {
    rj_bool(w, ans->noul >= 0.5);
  } else if (f->kind == F_SCORE) {
    long long idx = 0;
    if (ans->k) {
      double best = -INFINITY;
      for (int k = 0; k < ans->k; k++)
        if (ans->prob[k] > best) {
          best = ans->prob[k];
          idx = k;
        }
    } else {
      idx = (long long)nearbyint(ans->score);
    }
    rj_int(w, f->minimum + idx);
  } else {
    strbuf label;
    sb_init(&label);
    py_str_json(&label, ans->q->label[ans->top]);
    const json_value *val = NULL;
    for (int k = 0; k < f->n_opts && !val; k++)
      if (!strcmp(f->labels[k], label.data ? label.data : "")) val = f->values[k];
    if (val) rj_value(w, val);
    else rj_str(w, label.data ? label.data : "", label.len);
    sb_free(&label);
  }
}

/* The schema's values (p) or, with no schema, the answers themselves. */
static void values(rj *w, const state_result *r, const plan *p, const char *routing_tail) {
  rj_obj(w);
  for (int i = 0, n = values_count(r, p); i < n; i++) {
    size_t len;
    const char *name = value_name(r, p, i, &len);
    rj_key(w, name, len);
    value_at(w, r, p, i);
  }
  routing_last(w, routing_tail);
  rj_end_obj(w);
}

static void confidence_obj(rj *w, const state_result *r) {
  rj_obj(w);
  for (int i = 0; i < r->n; i++) {
    rj_key(w, r->answers[i].q->qid, r->answers[i].q->qid_len);
    rj_num(w, r->answers[i].confidence);
  }
  rj_end_obj(w);
}

static void probabilities_obj(rj *w, const state_result *r) {
  rj_obj(w);
  for (int i = 0; i < r->n; i++) {
    const answer *a = &r->answers[i];
    rj_key(w, a->q->qid, a->q->qid_len);
    if (a->q->type == QT_NOUL) {
      rj_obj(w);
      rj_key(w, "false", 5);
      rj_num(w, py_round4(1.0 - a->noul));
      rj_key(w, "true", 4);
      rj_num(w, py_round4(a->noul));
      rj_end_obj(w);
    } else {
      rj_probabilities(w, a);
    }
  }
  rj_end_obj(w);
}

/* DecisionResult, in the dataclass's field order. */
static void details(rj *w, const state_result *r, const plan *p, const char *routing_json,
                    const char *routing_tail) {
  rj_obj(w);
  rj_key(w, "values", 6);
  values(w, r, p, NULL);
  rj_key(w, "confidence", 10);
  confidence_obj(w, r);
  rj_key(w, "probabilities", 13);
  probabilities_obj(w, r);
  rj_key(w, "answers", 7);
  rj_answers(w, r);
  rj_key(w, "usage", 5);
  rj_usage(w, r);
  rj_key(w, "routing", 7);
  if (routing_json) rj_raw_styled(w, routing_json);
  else rj_null(w);
  rj_key(w, "answer_confidence", 17);
  rj_obj(w);
  for (int i = 0; i < r->n; i++) {
    rj_key(w, r->answers[i].q->qid, r->answers[i].q->qid_len);
    double c = r->answers[i].answer_confidence;
    if (isfinite(c)) rj_num(w, c);
    else rj_null(w);
  }
  rj_end_obj(w);
  routing_last(w, routing_tail);
  rj_end_obj(w);
}

/* ---------------------------------------------------------------- entry points */

static const char *const kDecideKeys[] = {"state", "states", "schema", "questions", "return_details",
                                          NULL};

/* The decision run: checked, planned (p, owned by the caller: plan_free) and answered (res in a). */
static int decide_answers(laya_model *m, const json_value *req, bool batch, arena *a, plan *p,
                          state_result **res, long *nres, laya_error *err) {
  const char *fn = batch ? "decide_batch()" : "decide()";
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "%s argument after ** must be a mapping, not %s", fn, json_py_type(req));
  const json_value *schema = json_get(req, "schema");
  const json_value *questions = json_get(req, "questions");
  if (schema && schema->type == JSON_NULL) schema = NULL;
  if (questions && questions->type == JSON_NULL) questions = NULL;
  const json_value *states = json_get(req, batch ? "states" : "state");
  if (!states)
    return laya_type_error(err, "%s missing 1 required positional argument: '%s'", fn,
                           batch ? "states" : "state");
  if ((schema == NULL) == (questions == NULL))
    return laya_value_error(err, "pass exactly one of schema= or questions=");
  if (batch && states->type != JSON_ARRAY)
    return laya_type_error(err, "states must be a sequence of states, not %s", json_py_type(states));
  const json_value *mc = json_get(req, "min_confidence");
  if (mc && mc->type != JSON_NULL && mc->type != JSON_OBJECT &&
      (!json_is_number(mc) || !isfinite(mc->d) || mc->d < 0.0 || mc->d > 1.0)) {
    strbuf r;
    sb_init(&r);
    py_repr_json(&r, mc);
    int rc = laya_value_error(err, "min_confidence must be a float in [0.0, 1.0], got %s", r.data);
    sb_free(&r);
    return rc;
  }
  int rc = 0;
  if (schema && (rc = plan_schema(schema, a, p, err))) return rc;
  /* the predict request as a value: state(s), the planned questions, every other key passed through */
  json_value *preq = jv_new(a, JSON_OBJECT, req->n + 2);
  json_value *qs = schema ? jv_new(a, JSON_OBJECT, (uint32_t)p->n) : NULL;
  bool ok = preq && (!schema || qs);
  for (int i = 0; ok && i < p->n; i++) {
    ok = p->f[i].question != NULL;
    if (ok) jv_put(qs, p->f[i].name, *p->f[i].question);
  }
  if (!ok) return laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory", fn);
  jv_put(preq, batch ? "states" : "state", *states);
  jv_put(preq, "questions", schema ? *qs : *questions);
  for (uint32_t i = 0; i < req->n; i++) {
    bool skip = false;
    for (int k = 0; kDecideKeys[k]; k++) skip |= !strcmp(req->members[i].key, kDecideKeys[k]);
    if (!skip) preq->members[preq->n++] = req->members[i];
  }
  return engine_run_request(m, preq, batch, a, res, nres, err);
}

int decide_run(laya_model *m, const json_value *req, bool batch, const char *routing_json,
               const char *routing_tail, strbuf *out, laya_error *err) {
  arena a;
  arena_init(&a, 1 << 14);
  plan p = {0};
  state_result *res = NULL;
  long nres = 0;
  int rc = decide_answers(m, req, batch, &a, &p, &res, &nres, err);
  if (!rc) {
    const json_value *sv = json_get(req, "schema");
    bool schema = sv && sv->type != JSON_NULL;
    bool want_details = json_truthy(json_get(req, "return_details"));
    rj w;
    rj_init(&w, out, &RJ_PY);
    if (batch) rj_arr(&w);
    for (long i = 0; i < nres; i++) {
      if (batch) rj_item(&w);
      const char *tail = batch ? NULL : routing_tail;
      if (want_details) details(&w, &res[i], schema ? &p : NULL, routing_json, tail);
      else values(&w, &res[i], schema ? &p : NULL, tail);
    }
    if (batch) rj_end_arr(&w);
  }
  plan_free(&p);
  arena_free(&a);
  return rc;
}

struct decide_result {
  arena a;
  plan p;
  bool schema;
  bool details; /* return_details: the DecisionResult, else the values */
  state_result *res;
};

int engine_run_decide(laya_model *m, const json_value *req, decide_result **out, laya_error *err) {
  *out = NULL;
  decide_result *d = calloc(1, sizeof *d);
  if (!d) return laya_err(err, LAYA_ERR_NOMEM, NULL, "decide(): out of memory");
  arena_init(&d->a, 1 << 14);
  long n = 0;
  int rc = decide_answers(m, req, false, &d->a, &d->p, &d->res, &n, err);
  LAYA_ASSERT(rc || n == 1); /* one state in, one result out */
  if (rc) {
    decide_result_free(d);
    return rc;
  }
  const json_value *schema = json_get(req, "schema");
  d->schema = schema && schema->type != JSON_NULL;
  d->details = json_truthy(json_get(req, "return_details"));
  *out = d;
  return 0;
}

void rj_decide_result(rj *w, const decide_result *d, const char *routing_json, const char *routing_tail) {
  const plan *p = d->schema ? &d->p : NULL;
  if (d->details) details(w, &d->res[0], p, routing_json, routing_tail);
  else values(w, &d->res[0], p, routing_tail);
}

bool decide_result_details(const decide_result *d) { return d->details; }

const state_result *decide_result_state(const decide_result *d) { return &d->res[0]; }

int decide_result_count(const decide_result *d) { return values_count(&d->res[0], d->schema ? &d->p : NULL); }

const char *decide_result_name(const decide_result *d, int i, size_t *len) {
  return value_name(&d->res[0], d->schema ? &d->p : NULL, i, len);
}

void rj_decide_value(rj *w, const decide_result *d, int i) { value_at(w, &d->res[0], d->schema ? &d->p : NULL, i); }

void rj_decide_member(rj *w, const decide_result *d, const char *member) {
  const state_result *r = &d->res[0];
  if (!strcmp(member, "values")) values(w, r, d->schema ? &d->p : NULL, NULL);
  else if (!strcmp(member, "confidence")) confidence_obj(w, r);
  else if (!strcmp(member, "probabilities")) probabilities_obj(w, r);
  else if (!strcmp(member, "usage")) rj_usage(w, r);
  else rj_null(w);
}

void decide_result_free(decide_result *d) {
  if (!d) return;
  plan_free(&d->p);
  arena_free(&d->a);
  free(d);
}

static int decide_one(void *m, const json_value *req, strbuf *out, laya_error *err) {
  return decide_run(m, req, false, NULL, NULL, out, err);
}

static int decide_many(void *m, const json_value *req, strbuf *out, laya_error *err) {
  return decide_run(m, req, true, NULL, NULL, out, err);
}

int laya_decide(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_decide", m, request_json, decide_one, m, result_json, err);
}

int laya_decide_batch(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_decide_batch", m, request_json, decide_many, m, result_json, err);
}

/* ---------------------------------------------------------------- a plan with no model */

/* laya-mcp's remote mode (Laya's decide over a RemoteRouter): the schema is planned here, the
 * questions go to a laya-serve, and its answers come back as JSON, projected as _project and
 * _details do over the answer dicts. */
struct decide_plan {
  arena a;
  plan p;
  json_value *questions;
};

int decide_plan_new(const json_value *schema, decide_plan **out, laya_error *err) {
  *out = NULL;
  decide_plan *d = calloc(1, sizeof *d);
  if (!d) return laya_err(err, LAYA_ERR_NOMEM, NULL, "decide(): out of memory");
  arena_init(&d->a, 1 << 12);
  int rc = plan_schema(schema, &d->a, &d->p, err);
  if (!rc) {
    d->questions = jv_new(&d->a, JSON_OBJECT, (uint32_t)d->p.n);
    bool ok = d->questions != NULL;
    for (int i = 0; ok && i < d->p.n; i++) {
      ok = d->p.f[i].question != NULL;
      if (ok) jv_put(d->questions, d->p.f[i].name, *d->p.f[i].question);
    }
    if (!ok) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "decide(): out of memory");
  }
  if (rc) {
    decide_plan_free(d);
    return rc;
  }
  *out = d;
  return 0;
}

const json_value *decide_plan_questions(const decide_plan *d) { return d->questions; }

/* float(answer.get(key, 0.0)) */
static double answer_float(const json_value *answer, const char *key) {
  const json_value *v = json_get(answer, key);
  if (v && v->type == JSON_BOOL) return v->b ? 1.0 : 0.0;
  return v && json_is_number(v) ? v->d : 0.0;
}

/* The schema's value of one answer dict (the plan's field f). */
static void project_json(rj *w, const field *f, const json_value *ans) {
  if (json_truthy(json_get(ans, "low_confidence"))) {
    rj_null(w);
  } else if (f->kind == F_NOUL) {
    rj_bool(w, answer_float(ans, "noul") >= 0.5);
  } else if (f->kind == F_SCORE) {
    const json_value *probs = json_get(ans, "probabilities");
    long long idx = 0;
    if (probs && probs->type == JSON_OBJECT && probs->n) {
      double best = 0;
      for (uint32_t i = 0; i < probs->n; i++) { /* max() over range(len(probs)): the first maximum */
        char key[16];
        snprintf(key, sizeof key, "%u", i);
        double p = answer_float(probs, key);
        if (i == 0 || p > best) {
          best = p;
          idx = i;
        }
      }
    } else {
      idx = (long long)nearbyint(answer_float(ans, "score")); /* round(): half to even */
    }
    rj_int(w, f->minimum + idx);
  } else {
    const json_value *c = json_get(ans, "choice");
    static const json_value none = {.type = JSON_NULL};
    strbuf label;
    sb_init(&label);
    if (c && c->type == JSON_STRING) sb_append(&label, c->s, c->n);
    else py_str_json(&label, c ? c : &none);
    const json_value *val = NULL;
    for (int k = 0; k < f->n_opts && !val; k++)
      if (!strcmp(f->labels[k], sb_cstr(&label))) val = f->values[k];
    if (val) rj_value(w, val);
    else rj_str(w, sb_cstr(&label), label.len);
    sb_free(&label);
  }
}

/* The three members go into the object the caller has open, so a surface writes its own keys
 * (routing, latency_ms, usage) after them in its own style. */
void decide_plan_members(const decide_plan *d, const json_value *answers, rj *w) {
  static const json_value empty = {.type = JSON_OBJECT};
  if (!answers || answers->type != JSON_OBJECT) answers = &empty;
  rj_key(w, "values", 6);
  rj_obj(w);
  for (int i = 0; i < d->p.n; i++) {
    const json_value *ans = json_get(answers, d->p.f[i].name);
    if (!ans || ans->type != JSON_OBJECT) continue; /* answers.get(name) is None */
    rj_key(w, d->p.f[i].name, strlen(d->p.f[i].name));
    project_json(w, &d->p.f[i], ans);
  }
  rj_end_obj(w);
  rj_key(w, "confidence", 10);
  rj_obj(w);
  for (uint32_t i = 0; i < answers->n; i++) {
    const json_member *m = &answers->members[i];
    rj_key(w, m->key, m->key_len);
    rj_num(w, m->value.type == JSON_OBJECT ? answer_float(&m->value, "confidence") : 0.0);
  }
  rj_end_obj(w);
  rj_key(w, "probabilities", 13);
  rj_obj(w);
  for (uint32_t i = 0; i < answers->n; i++) {
    const json_member *m = &answers->members[i];
    const json_value *t = m->value.type == JSON_OBJECT ? json_get(&m->value, "type") : NULL;
    rj_key(w, m->key, m->key_len);
    if (t && t->type == JSON_STRING && !strcmp(t->s, "noul")) {
      double p = answer_float(&m->value, "noul");
      rj_obj(w);
      rj_key(w, "false", 5);
      rj_num(w, py_round4(1.0 - p));
      rj_key(w, "true", 4);
      rj_num(w, py_round4(p));
      rj_end_obj(w);
    } else {
      const json_value *p = m->value.type == JSON_OBJECT ? json_get(&m->value, "probabilities") : NULL;
      if (p && p->type == JSON_OBJECT) rj_value(w, p);
      else rj_value(w, &empty); /* dict(... or {}) */
    }
  }
  rj_end_obj(w);
}

void decide_plan_free(decide_plan *d) {
  if (!d) return;
  plan_free(&d->p);
  arena_free(&d->a);
  free(d);
}
