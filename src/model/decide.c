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

#include "core/error.h"
#include "core/json.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/decide.h"

enum { MAX_PROPERTIES = 32, MAX_OPTIONS = 32, MAX_SCORE_LEVELS = 10 };
enum { F_CHOICE, F_SCORE, F_NOUL };

typedef struct field {
  const char *name;
  int kind;
  char *question; /* JSON of the question (malloc'd) */
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
    free(p->f[i].question);
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

static void q_instructions(strbuf *q, const json_value *description, const char *fallback) {
  sb_puts(q, "\"instructions\": ");
  if (json_truthy(description)) json_dump(q, description, NULL);
  else json_dump_string(q, fallback, strlen(fallback), false);
}

static int noul_field(field *f, const char *name, const json_value *description) {
  f->kind = F_NOUL;
  strbuf q, fb;
  sb_init(&q);
  sb_init(&fb);
  sb_printf(&fb, "Is `%s` true?", name);
  sb_puts(&q, "{\"type\": \"noul\", ");
  q_instructions(&q, description, fb.data);
  sb_putc(&q, '}');
  f->question = sb_steal(&q);
  sb_free(&fb);
  return 0;
}

static int enum_field(field *f, const char *path, const char *name, const json_value *values,
                      const json_value *description, laya_error *err) {
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
    return noul_field(f, name, description);
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
  strbuf q, fb;
  sb_init(&q);
  sb_init(&fb);
  sb_printf(&fb, "What is `%s`?", name);
  sb_puts(&q, "{\"type\": \"choice\", ");
  q_instructions(&q, description, fb.data);
  sb_puts(&q, ", \"criteria\": {");
  for (int i = 0; i < f->n_opts; i++) {
    if (i) sb_puts(&q, ", ");
    json_dump_string(&q, f->labels[i], strlen(f->labels[i]), false);
    sb_puts(&q, ": null");
  }
  sb_puts(&q, "}}");
  f->question = sb_steal(&q);
  sb_free(&fb);
  sb_free(&m);
  return 0;
}

static bool plain_int(const json_value *v) { return v && v->type == JSON_INT && !v->big; }

static int score_field(field *f, const char *path, const char *name, const json_value *prop,
                       const json_value *description, laya_error *err) {
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
  strbuf q, fb;
  sb_init(&q);
  sb_init(&fb);
  sb_printf(&fb, "Score `%s` from %lld to %lld", name, (long long)lo->i, (long long)hi->i);
  sb_puts(&q, "{\"type\": \"score\", ");
  q_instructions(&q, description, fb.data);
  sb_puts(&q, ", \"criteria\": [");
  for (long long v = lo->i; v <= hi->i; v++) sb_printf(&q, "%s\"%lld\"", v > lo->i ? ", " : "", v);
  sb_puts(&q, "]}");
  f->question = sb_steal(&q);
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
    rc = enum_field(f, path, name, arr, description, err);
    goto out;
  }
  const json_value *e = json_get(prop, "enum");
  if (e) {
    rc = enum_field(f, path, name, e, description, err);
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
    rc = noul_field(f, name, description);
  } else if (jtype && !strcmp(jtype, "string")) {
    sb_printf(&m, "%s: a free string cannot be a fixed option set; use 'enum' or a boolean", path);
    rc = schema_error(err, m.data);
  } else if (jtype && (!strcmp(jtype, "integer") || !strcmp(jtype, "number"))) {
    rc = score_field(f, path, name, prop, description, err);
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

static double num(const json_value *v, double dflt) { return v && json_is_number(v) ? v->d : dflt; }

static void project(strbuf *out, const json_value *answers, const plan *p) {
  sb_putc(out, '{');
  bool first = true;
  for (int i = 0; i < p->n; i++) {
    const field *f = &p->f[i];
    const json_value *ans = json_get(answers, f->name);
    if (!ans || ans->type == JSON_NULL) continue;
    if (!first) sb_puts(out, ", ");
    first = false;
    json_dump_string(out, f->name, strlen(f->name), false);
    sb_puts(out, ": ");
    const json_value *low = json_get(ans, "low_confidence");
    if (json_truthy(low)) {
      sb_puts(out, "null");
    } else if (f->kind == F_NOUL) {
      sb_puts(out, num(json_get(ans, "noul"), 0.0) >= 0.5 ? "true" : "false");
    } else if (f->kind == F_SCORE) {
      const json_value *probs = json_get(ans, "probabilities");
      long long idx = 0;
      if (probs && probs->type == JSON_OBJECT && probs->n) {
        double best = -INFINITY;
        for (uint32_t k = 0; k < probs->n; k++) {
          char key[24];
          snprintf(key, sizeof key, "%u", k);
          double v = num(json_get(probs, key), 0.0);
          if (v > best) {
            best = v;
            idx = k;
          }
        }
      } else {
        idx = (long long)nearbyint(num(json_get(ans, "score"), 0.0));
      }
      sb_printf(out, "%lld", f->minimum + idx);
    } else {
      strbuf label;
      sb_init(&label);
      py_str_json(&label, json_get(ans, "choice") ? json_get(ans, "choice") : &(json_value){0});
      const json_value *val = NULL;
      for (int k = 0; k < f->n_opts && !val; k++)
        if (!strcmp(f->labels[k], label.data ? label.data : "")) val = f->values[k];
      if (val) json_dump(out, val, NULL);
      else json_dump_string(out, label.data ? label.data : "", label.len, false);
      sb_free(&label);
    }
  }
  sb_putc(out, '}');
}

static void put_float(strbuf *sb, double x) {
  char b[32];
  py_float_json(x, b);
  sb_puts(sb, b);
}

/* DecisionResult as JSON, in the dataclass's field order. */
static void details(strbuf *out, const char *values, const json_value *result,
                    const char *routing_json) {
  const json_value *answers = json_get(result, "answers");
  sb_printf(out, "{\"values\": %s, \"confidence\": {", values);
  for (uint32_t i = 0; answers && i < answers->n; i++) {
    if (i) sb_puts(out, ", ");
    json_dump_string(out, answers->members[i].key, answers->members[i].key_len, false);
    sb_puts(out, ": ");
    put_float(out, num(json_get(&answers->members[i].value, "confidence"), 0.0));
  }
  sb_puts(out, "}, \"probabilities\": {");
  for (uint32_t i = 0; answers && i < answers->n; i++) {
    const json_value *a = &answers->members[i].value;
    if (i) sb_puts(out, ", ");
    json_dump_string(out, answers->members[i].key, answers->members[i].key_len, false);
    sb_puts(out, ": ");
    const json_value *t = json_get(a, "type");
    if (t && t->type == JSON_STRING && !strcmp(t->s, "noul")) {
      double pt = num(json_get(a, "noul"), 0.0);
      sb_puts(out, "{\"false\": ");
      put_float(out, py_round4(1.0 - pt));
      sb_puts(out, ", \"true\": ");
      put_float(out, py_round4(pt));
      sb_putc(out, '}');
    } else {
      const json_value *pr = json_get(a, "probabilities");
      if (pr && pr->type == JSON_OBJECT) json_dump(out, pr, NULL);
      else sb_puts(out, "{}");
    }
  }
  sb_puts(out, "}, \"answers\": ");
  if (answers) json_dump(out, answers, NULL);
  else sb_puts(out, "{}");
  sb_puts(out, ", \"usage\": ");
  const json_value *usage = json_get(result, "usage");
  if (usage) json_dump(out, usage, NULL);
  else sb_puts(out, "null");
  sb_puts(out, ", \"routing\": ");
  sb_puts(out, routing_json ? routing_json : "null");
  sb_puts(out, ", \"answer_confidence\": {");
  for (uint32_t i = 0; answers && i < answers->n; i++) {
    if (i) sb_puts(out, ", ");
    json_dump_string(out, answers->members[i].key, answers->members[i].key_len, false);
    sb_puts(out, ": ");
    const json_value *c = json_get(&answers->members[i].value, "answer_confidence");
    if (c && json_is_number(c) && isfinite(c->d)) put_float(out, c->d);
    else sb_puts(out, "null");
  }
  sb_puts(out, "}}");
}

/* ---------------------------------------------------------------- entry points */

static const char *const kDecideKeys[] = {"state", "states", "schema", "questions", "return_details",
                                          NULL};

int decide_run(laya_model *m, const json_value *req, bool batch, const char *routing_json,
               strbuf *out, laya_error *err) {
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
  arena a;
  arena_init(&a, 1 << 12);
  plan p = {0};
  int rc = 0;
  strbuf preq;
  sb_init(&preq);
  if (schema && (rc = plan_schema(schema, &a, &p, err))) goto done;
  /* the predict request: state(s), the planned questions, and every other key passed through */
  sb_printf(&preq, "{\"%s\": ", batch ? "states" : "state");
  json_dump(&preq, states, NULL);
  sb_puts(&preq, ", \"questions\": ");
  if (schema) {
    sb_putc(&preq, '{');
    for (int i = 0; i < p.n; i++) {
      if (i) sb_puts(&preq, ", ");
      json_dump_string(&preq, p.f[i].name, strlen(p.f[i].name), false);
      sb_puts(&preq, ": ");
      sb_puts(&preq, p.f[i].question);
    }
    sb_putc(&preq, '}');
  } else {
    json_dump(&preq, questions, NULL);
  }
  for (uint32_t i = 0; i < req->n; i++) {
    bool skip = false;
    for (int k = 0; kDecideKeys[k]; k++) skip |= !strcmp(req->members[i].key, kDecideKeys[k]);
    if (skip) continue;
    sb_puts(&preq, ", ");
    json_dump_string(&preq, req->members[i].key, req->members[i].key_len, false);
    sb_puts(&preq, ": ");
    json_dump(&preq, &req->members[i].value, NULL);
  }
  sb_putc(&preq, '}');
  char *res = NULL;
  rc = batch ? laya_predict_batch(m, preq.data, &res, err) : laya_predict(m, preq.data, &res, err);
  if (rc) goto done;
  json_value *rv = json_parse(res, strlen(res), &a, NULL, err);
  free(res);
  if (!rv) {
    rc = LAYA_ERR_INTERNAL;
    goto done;
  }
  bool want_details = json_truthy(json_get(req, "return_details"));
  size_t nres = batch ? rv->n : 1;
  if (batch) sb_putc(out, '[');
  for (size_t i = 0; i < nres; i++) {
    const json_value *one = batch ? &rv->items[i] : rv;
    const json_value *answers = json_get(one, "answers");
    strbuf values;
    sb_init(&values);
    if (schema) project(&values, answers, &p);
    else if (answers) json_dump(&values, answers, NULL);
    else sb_puts(&values, "{}");
    if (i) sb_puts(out, ", ");
    if (want_details) details(out, values.data, one, routing_json);
    else sb_puts(out, values.data);
    sb_free(&values);
  }
  if (batch) sb_putc(out, ']');
done:
  sb_free(&preq);
  plan_free(&p);
  arena_free(&a);
  return rc;
}

static int decide_one(void *m, const json_value *req, strbuf *out, laya_error *err) {
  return decide_run(m, req, false, NULL, out, err);
}

static int decide_many(void *m, const json_value *req, strbuf *out, laya_error *err) {
  return decide_run(m, req, true, NULL, out, err);
}

int laya_decide(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_decide", m, request_json, decide_one, m, result_json, err);
}

int laya_decide_batch(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_decide_batch", m, request_json, decide_many, m, result_json, err);
}
