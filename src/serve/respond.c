/* respond.c: an engine result -> the body Laya's server sends.
 *
 * Laya adds the `routing` block (Router.predict), then either `x_jev_confidence` on every choice
 * and score answer, or (LAYA_JEV_STRICT) a projection to the strict Jev contract. FastAPI writes
 * the JSON compactly (separators "," and ":") with non-ASCII characters raw; so do we. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/result_json.h"
#include "serve/serve.h"

static bool str_eq(const json_value *v, const char *s) {
  return v && v->type == JSON_STRING && v->n == strlen(s) && !memcmp(v->s, s, v->n);
}

static bool number_of(const json_value *v, double *d) {
  if (!v || (v->type != JSON_INT && v->type != JSON_FLOAT)) return false;
  *d = v->d;
  return true;
}

/* Python int(key) for a score level key: optional sign, digits, surrounding whitespace. */
static bool key_int(const char *k, long *out) {
  char *end;
  while (*k == ' ' || (*k >= 9 && *k <= 13)) k++;
  if (!*k) return false;
  long v = strtol(k, &end, 10);
  if (end == k) return false;
  while (*end == ' ' || (*end >= 9 && *end <= 13)) end++;
  if (*end) return false;
  *out = v;
  return true;
}

bool serve_jev_confidence(const json_value *answer, double *out) {
  if (!answer || answer->type != JSON_OBJECT) return false;
  const json_value *type = json_get(answer, "type");
  bool choice = str_eq(type, "choice"), score = str_eq(type, "score");
  const json_value *probs = json_get(answer, "probabilities");
  if ((!choice && !score) || !probs || probs->type != JSON_OBJECT || probs->n == 0) return false;
  size_t n = probs->n;
  double *p = malloc(n * sizeof *p);
  long *order = malloc(n * sizeof *order);
  size_t *idx = malloc(n * sizeof *idx);
  bool ok = p && order && idx;
  for (size_t i = 0; ok && i < n; i++) {
    idx[i] = i;
    if (score && !key_int(probs->members[i].key, &order[i])) ok = false;
  }
  if (ok && score) { /* sorted(probabilities, key=int), stable */
    for (size_t i = 1; i < n; i++)
      for (size_t j = i; j > 0 && order[idx[j - 1]] > order[idx[j]]; j--) {
        size_t t = idx[j];
        idx[j] = idx[j - 1];
        idx[j - 1] = t;
      }
  }
  for (size_t i = 0; ok && i < n; i++) {
    if (!number_of(&probs->members[idx[i]].value, &p[i]) || !isfinite(p[i]) || p[i] < 0.0) ok = false;
  }
  if (ok) {
    if (n == 1) {
      *out = 1.0;
    } else {
      double total = 0.0;
      for (size_t i = 0; i < n; i++) total += p[i];
      for (size_t i = 0; i < n; i++) p[i] = total != 0.0 ? p[i] / total : 1.0 / (double)n;
      if (choice) {
        double mx = p[0];
        for (size_t i = 1; i < n; i++)
          if (p[i] > mx) mx = p[i];
        *out = (mx - 1.0 / (double)n) / (1.0 - 1.0 / (double)n);
      } else {
        size_t mode = 0;
        for (size_t i = 1; i < n; i++)
          if (p[i] > p[mode]) mode = i;
        double spread = 0.0;
        for (size_t i = 0; i < n; i++) spread += p[i] * fabs((double)i - (double)mode);
        double center = (double)(n - 1) / 2.0, uniform = 0.0;
        for (size_t i = 0; i < n; i++) uniform += fabs((double)i - center);
        uniform /= (double)n;
        double c = 1.0 - spread / uniform;
        *out = c > 0.0 ? c : 0.0;
      }
    }
  }
  free(p);
  free(order);
  free(idx);
  return ok;
}

static json_member *find_member(json_value *obj, const char *key) {
  for (uint32_t i = 0; obj && obj->type == JSON_OBJECT && i < obj->n; i++)
    if (!strcmp(obj->members[i].key, key)) return &obj->members[i];
  return NULL;
}

/* obj[key] = value, keeping the key's position when present (Python dict assignment). */
static void set_member(json_value *obj, const char *key, const json_value *value, arena *a) {
  json_member *m = find_member(obj, key);
  if (m) {
    m->value = *value;
    return;
  }
  json_member *nm = arena_alloc(a, (obj->n + 1) * sizeof *nm);
  if (!nm) return;
  if (obj->n) memcpy(nm, obj->members, obj->n * sizeof *nm);
  nm[obj->n].key = key;
  nm[obj->n].key_len = (uint32_t)strlen(key);
  nm[obj->n].value = *value;
  obj->members = nm;
  obj->n++;
}

static json_value make_object(arena *a, const char *const *keys, const json_value *const *vals, int n) {
  json_value o = {0};
  o.type = JSON_OBJECT;
  o.members = arena_alloc(a, (size_t)(n > 0 ? n : 1) * sizeof(json_member));
  if (!o.members) return o;
  for (int i = 0; i < n; i++) {
    if (!vals[i]) continue; /* Python would raise KeyError; keep what exists */
    o.members[o.n].key = keys[i];
    o.members[o.n].key_len = (uint32_t)strlen(keys[i]);
    o.members[o.n].value = *vals[i];
    o.n++;
  }
  return o;
}

static void project_strict(json_value *result, arena *a) {
  static json_value zero = {.type = JSON_INT};
  json_value *answers = NULL;
  json_member *am = find_member(result, "answers");
  if (am && am->value.type == JSON_OBJECT) answers = &am->value;
  json_value na = {0};
  na.type = JSON_OBJECT;
  if (answers && answers->n) {
    na.members = arena_alloc(a, answers->n * sizeof(json_member));
    if (!na.members) return;
    for (uint32_t i = 0; i < answers->n; i++) {
      const json_value *ans = &answers->members[i].value;
      const json_value *t = ans->type == JSON_OBJECT ? json_get(ans, "type") : NULL;
      json_value proj = *ans;
      if (str_eq(t, "choice")) {
        const char *k[] = {"type", "choice", "confidence", "probabilities"};
        const json_value *v[] = {t, json_get(ans, "choice"), json_get(ans, "confidence"),
                                 json_get(ans, "probabilities")};
        proj = make_object(a, k, v, 4);
      } else if (str_eq(t, "score")) {
        const char *k[] = {"type", "score", "confidence", "probabilities", "legend"};
        const json_value *v[] = {t, json_get(ans, "score"), json_get(ans, "confidence"),
                                 json_get(ans, "probabilities"), json_get(ans, "legend")};
        proj = make_object(a, k, v, 5);
      } else if (str_eq(t, "noul")) {
        const char *k[] = {"type", "noul"};
        const json_value *v[] = {t, json_get(ans, "noul")};
        proj = make_object(a, k, v, 2);
      }
      na.members[i] = answers->members[i];
      na.members[i].value = proj;
    }
    na.n = answers->n;
  }
  const json_value *usage = json_get(result, "usage");
  const json_value *in = usage && usage->type == JSON_OBJECT ? json_get(usage, "input_tokens") : NULL;
  const json_value *out = usage && usage->type == JSON_OBJECT ? json_get(usage, "output_tokens") : NULL;
  const char *uk[] = {"input_tokens", "output_tokens"};
  const json_value *uv[] = {in ? in : &zero, out ? out : &zero};
  json_value nu = make_object(a, uk, uv, 2);
  const char *rk[] = {"model", "answers", "usage"};
  const json_value *rv[] = {json_get(result, "model"), &na, &nu};
  *result = make_object(a, rk, rv, 3);
}

static void add_jev_confidence(json_value *result, arena *a) {
  json_member *am = find_member(result, "answers");
  if (!am || am->value.type != JSON_OBJECT) return;
  for (uint32_t i = 0; i < am->value.n; i++) {
    json_value *ans = &am->value.members[i].value;
    double c;
    if (ans->type != JSON_OBJECT || !serve_jev_confidence(ans, &c)) continue;
    json_value v = {0};
    v.type = JSON_FLOAT;
    v.d = py_round4(c);
    set_member(ans, "x_jev_confidence", &v, a);
  }
}

void serve_finish_result(json_value *result, const char *routing_json, bool strict, arena *a,
                         strbuf *out) {
  json_dump_opts o = {",", ":", false, -1};
  if (result->type != JSON_OBJECT || strict || !routing_json) {
    if (result->type == JSON_OBJECT && strict) project_strict(result, a);
    else if (result->type == JSON_OBJECT) add_jev_confidence(result, a);
    json_dump(out, result, &o);
    return;
  }
  add_jev_confidence(result, a);
  /* result["routing"] = the RouteDecision (its place kept when the result has one, else last):
   * the decision is text the router wrote, spliced with compact separators, not parsed */
  const json_member *at = find_member(result, "routing");
  rj w;
  rj_init(&w, out, &RJ_COMPACT);
  sb_putc(out, '{');
  for (uint32_t i = 0; i < result->n; i++) {
    const json_member *m = &result->members[i];
    if (i) sb_putc(out, ',');
    json_dump_string(out, m->key, m->key_len, false);
    sb_putc(out, ':');
    if (m == at) rj_raw_respaced(&w, routing_json);
    else json_dump(out, &m->value, &o);
  }
  if (!at) {
    sb_puts(out, result->n ? ",\"routing\":" : "\"routing\":");
    rj_raw_respaced(&w, routing_json);
  }
  sb_putc(out, '}');
}

void serve_write_body(strbuf *body, const state_result *r, size_t n, char *const *routing_json, bool strict,
                      bool batch, const tournament_entry ***notes, bool **dropped) {
  long in = 0;
  for (size_t i = 0; i < n; i++) in += r[i].input_tokens;
  if (batch) sb_puts(body, "{\"results\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) sb_putc(body, ',');
    rj w;
    rj_init(&w, body, &RJ_COMPACT);
    rj_served_tournament(&w, &r[i], routing_json[i], strict, notes ? notes[i] : NULL, dropped ? dropped[i] : NULL);
  }
  if (batch) sb_printf(body, "],\"total_usage\":{\"input_tokens\":%ld,\"output_tokens\":0}}", in);
}

void serve_detail_json(strbuf *sb, const char *detail, size_t n) {
  sb_puts(sb, "{\"detail\":");
  json_dump_string(sb, detail, n, false);
  sb_putc(sb, '}');
}
