/* router.c: checkpoint names and the routing decision (see router.h). */
#include "router/router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pystr.h"
#include "router/lang.h"

#define BUNDLE_REPO "convaiinnovations/laya"

static const char *const kBuiltins[3] = {"english", "multilingual", "typed-decisions"};
static const char *const kBundleSub[3] = {NULL, "multilingual", "typed-decisions"};
static const char *const kStandalone[3] = {"convaiinnovations/laya",
                                           "convaiinnovations/laya-multilingual",
                                           "convaiinnovations/laya-typed-decisions"};

/* The spellings people type for the built-in checkpoints (Laya's public aliases). */
static const struct {
  const char *alias, *name;
} kAliases[] = {{"en", "english"},
                {"laya", "english"},
                {"default", "english"},
                {"multi", "multilingual"},
                {"ml", "multilingual"},
                {"laya-multilingual", "multilingual"},
                {"typed", "typed-decisions"},
                {"typed_decisions", "typed-decisions"},
                {"laya-typed-decisions", "typed-decisions"},
                {"decisions", "typed-decisions"}};
#define NALIASES (sizeof kAliases / sizeof kAliases[0])

/* Question-id signatures of the four typed-decisions workflows (exact set match). */
static const struct {
  const char *name;
  const char *ids[5];
} kWorkflows[] = {
    {"agent_trace_observability", {"action", "needs_review", "outcome", "risk", "urgency"}},
    {"customer_service", {"action", "category", "churn_risk", "needs_human", "urgency"}},
    {"invoice_processing",
     {"discrepancy_severity", "disposition", "duplicate", "matches_order", "urgency"}},
    {"security_incidents",
     {"credential_compromise", "disposition", "severity", "true_positive", "urgency"}}};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

void router_config_init(router_config *cfg, bool standalone_repos) {
  memset(cfg, 0, sizeof *cfg);
  for (int i = 0; i < 3; i++) {
    router_entry *e = &cfg->models[cfg->nmodels++];
    snprintf(e->name, sizeof e->name, "%s", kBuiltins[i]);
    e->source = strdup(standalone_repos ? kStandalone[i] : BUNDLE_REPO);
    e->subfolder = standalone_repos ? NULL : dup_or_null(kBundleSub[i]);
  }
  snprintf(cfg->default_model, sizeof cfg->default_model, "multilingual");
}

void router_config_free(router_config *cfg) {
  for (int i = 0; i < cfg->nmodels; i++) {
    free(cfg->models[i].source);
    free(cfg->models[i].subfolder);
  }
  free(cfg->lang_guess);
  memset(cfg, 0, sizeof *cfg);
}

const router_entry *router_find(const router_config *cfg, const char *canonical) {
  for (int i = 0; i < cfg->nmodels; i++)
    if (!strcmp(cfg->models[i].name, canonical)) return &cfg->models[i];
  return NULL;
}

void router_repo_str(const router_entry *e, strbuf *sb) {
  sb_puts(sb, e->source ? e->source : "None");
  if (e->subfolder && *e->subfolder) {
    sb_putc(sb, '/');
    sb_puts(sb, e->subfolder);
  }
}

/* str(v).strip().lower() into `low` (always NUL-terminated after the call; sb_free it). */
static const char *str_strip_lower(const json_value *v, strbuf *low) {
  strbuf s;
  sb_init(&s);
  sb_init(low);
  py_str_json(&s, v);
  size_t a = 0, n = 0;
  py_strip(s.data ? s.data : "", s.len, &a, &n);
  py_lower(low, (s.data ? s.data : "") + a, n);
  sb_free(&s);
  return low->data ? low->data : "";
}

/* str(name).strip().lower(), then the alias table. */
static void canonical_name(const json_value *name, strbuf *out) {
  strbuf low;
  const char *k = str_strip_lower(name, &low);
  for (size_t i = 0; i < NALIASES; i++)
    if (!strcmp(k, kAliases[i].alias)) {
      k = kAliases[i].name;
      break;
    }
  sb_puts(out, k);
  sb_free(&low);
}

static void unknown_model(laya_error *err, const json_value *name, const router_config *cfg) {
  strbuf sb;
  sb_init(&sb);
  sb_puts(&sb, "unknown model ");
  py_repr_json(&sb, name);
  sb_puts(&sb, "; choose one of [");
  /* sorted(names): bubble a small index list */
  int idx[ROUTER_MAX_MODELS], n = 0;
  for (int i = 0; i < (cfg ? cfg->nmodels : 3); i++) idx[n++] = i;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      const char *x = cfg ? cfg->models[idx[i]].name : kBuiltins[idx[i]];
      const char *y = cfg ? cfg->models[idx[j]].name : kBuiltins[idx[j]];
      if (strcmp(x, y) > 0) {
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
      }
    }
  for (int i = 0; i < n; i++) {
    const char *x = cfg ? cfg->models[idx[i]].name : kBuiltins[idx[i]];
    if (i) sb_puts(&sb, ", ");
    py_repr_str(&sb, x, strlen(x));
  }
  sb_puts(&sb, "] (or an alias: [");
  const char *sorted[NALIASES];
  for (size_t i = 0; i < NALIASES; i++) sorted[i] = kAliases[i].alias;
  for (size_t i = 0; i < NALIASES; i++)
    for (size_t j = i + 1; j < NALIASES; j++)
      if (strcmp(sorted[i], sorted[j]) > 0) {
        const char *t = sorted[i];
        sorted[i] = sorted[j];
        sorted[j] = t;
      }
  for (size_t i = 0; i < NALIASES; i++) {
    if (i) sb_puts(&sb, ", ");
    py_repr_str(&sb, sorted[i], strlen(sorted[i]));
  }
  sb_puts(&sb, "])");
  laya_value_error(err, "%s", sb.data ? sb.data : "unknown model");
  sb_free(&sb);
}

int router_resolve(const router_config *cfg, const json_value *name, char out[64], laya_error *err) {
  strbuf k;
  sb_init(&k);
  canonical_name(name, &k);
  const char *key = k.data ? k.data : "";
  int ok = cfg ? router_find(cfg, key) != NULL : 0;
  if (!cfg)
    for (int i = 0; i < 3; i++) ok |= !strcmp(key, kBuiltins[i]);
  if (ok) snprintf(out, 64, "%s", key);
  sb_free(&k);
  if (!ok) {
    unknown_model(err, name, cfg);
    return LAYA_ERR_VALUE;
  }
  return 0;
}

int router_normalise_name(const char *name, char out[64], laya_error *err) {
  json_value v = json_string(name);
  return router_resolve(NULL, &v, out, err);
}

static bool name_ok(const char *k) {
  if (!*k) return false;
  if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9'))) return false;
  for (const char *p = k; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
          *p == '-'))
      return false;
  return true;
}

int router_register(router_config *cfg, const char *name, const char *source, const char *subfolder,
                    laya_error *err) {
  json_value v = json_string(name);
  strbuf k;
  sb_init(&k);
  canonical_name(&v, &k);
  const char *key = k.data ? k.data : "";
  bool builtin = false;
  for (int i = 0; i < 3; i++) builtin |= !strcmp(key, kBuiltins[i]);
  if (!builtin && (!name_ok(key) || strlen(key) >= 64)) {
    strbuf r;
    sb_init(&r);
    py_repr_str(&r, name, strlen(name));
    laya_value_error(err,
                     "invalid checkpoint name %s: use lowercase letters, digits, '.', '_' or '-', "
                     "starting with a letter or digit",
                     r.data);
    sb_free(&r);
    sb_free(&k);
    return LAYA_ERR_VALUE;
  }
  if (!builtin && !strcmp(key, "auto")) {
    laya_value_error(err, "invalid checkpoint name 'auto': 'auto' means automatic routing in every "
                          "model= argument");
    sb_free(&k);
    return LAYA_ERR_VALUE;
  }
  router_entry *e = (router_entry *)router_find(cfg, key);
  if (!e) {
    if (cfg->nmodels >= ROUTER_MAX_MODELS) {
      sb_free(&k);
      return laya_value_error(err, "too many checkpoints registered (at most %d)", ROUTER_MAX_MODELS);
    }
    e = &cfg->models[cfg->nmodels++];
    snprintf(e->name, sizeof e->name, "%s", key);
  } else {
    free(e->source);
    free(e->subfolder);
  }
  e->source = dup_or_null(source);
  e->subfolder = dup_or_null(subfolder);
  sb_free(&k);
  return 0;
}

int router_set_default(router_config *cfg, const char *name, laya_error *err) {
  json_value v = json_string(name);
  return router_resolve(cfg, &v, cfg->default_model, err);
}

const char *router_match_workflow(const json_value *questions) {
  if (!questions || questions->type != JSON_OBJECT) return NULL;
  for (size_t w = 0; w < sizeof kWorkflows / sizeof kWorkflows[0]; w++) {
    /* equal sets: every id is in the signature and every signature id is present */
    bool ok = true;
    for (uint32_t i = 0; i < questions->n && ok; i++) {
      bool in = false;
      for (int j = 0; j < 5; j++) in |= !strcmp(questions->members[i].key, kWorkflows[w].ids[j]);
      ok = in;
    }
    for (int j = 0; j < 5 && ok; j++) ok = json_get(questions, kWorkflows[w].ids[j]) != NULL;
    if (ok) return kWorkflows[w].name;
  }
  return NULL;
}

/* _english_from_code: 1 English, 0 another language, -1 no usable hint. */
static int english_from_code(const json_value *v) {
  if (!v || v->type == JSON_NULL) return -1;
  strbuf low;
  const char *code = str_strip_lower(v, &low);
  int r = -1;
  if (*code) {
    size_t cut = strcspn(code, ".");
    char primary[64];
    size_t k = 0;
    for (size_t i = 0; i < cut && code[i] != '_' && code[i] != '-' && k < sizeof primary - 1; i++)
      primary[k++] = code[i];
    primary[k] = 0;
    static const char *const agnostic[] = {"c", "posix", "und", "zxx", "mul"};
    bool abstain = k == 0;
    for (int i = 0; i < 5; i++) abstain |= !strcmp(primary, agnostic[i]);
    if (!abstain)
      r = !strcmp(primary, "en") || !strcmp(primary, "eng") || !strcmp(primary, "english");
  }
  sb_free(&low);
  return r;
}

static void decision(strbuf *out, size_t det_span[2], const router_config *cfg, const char *key, const char *reason,
                     const lang_detection *det, const lang_diag *diag, const char *workflow) {
  sb_puts(out, "{\"model\": ");
  json_dump_string(out, key, strlen(key), false);
  sb_puts(out, ", \"repo\": ");
  const router_entry *e = router_find(cfg, key);
  if (e) {
    strbuf r;
    sb_init(&r);
    router_repo_str(e, &r);
    json_dump_string(out, r.data ? r.data : "", r.len, false);
    sb_free(&r);
  } else {
    sb_puts(out, "\"None\"");
  }
  sb_puts(out, ", \"reason\": ");
  json_dump_string(out, reason, strlen(reason), false);
  sb_puts(out, ", \"detection\": ");
  det_span[0] = out->len;
  if (det) lang_detection_json_explain(out, det, diag);
  else sb_puts(out, "null");
  det_span[1] = out->len - det_span[0];
  sb_puts(out, ", \"workflow\": ");
  if (workflow) json_dump_string(out, workflow, strlen(workflow), false);
  else sb_puts(out, "null");
  sb_putc(out, '}');
}

int router_route(const router_config *cfg, const json_value *state, const json_value *questions,
                 const json_value *model, const json_value *task, const json_value *lang,
                 const json_value *lang_guess, strbuf *out, char chosen[64], laya_error *err) {
  return router_route_ex(cfg, state, questions, model, task, lang, lang_guess, false, out, chosen, err);
}

int router_route_ex(const router_config *cfg, const json_value *state, const json_value *questions,
                    const json_value *model, const json_value *task, const json_value *lang,
                    const json_value *lang_guess, bool explain, strbuf *out, char chosen[64],
                    laya_error *err) {
  return router_route_detect(cfg, state, questions, model, task, lang, lang_guess, explain, out, chosen, NULL, err);
}

int router_route_detect(const router_config *cfg, const json_value *state, const json_value *questions,
                        const json_value *model, const json_value *task, const json_value *lang,
                        const json_value *lang_guess, bool explain, strbuf *out, char chosen[64],
                        char language[32], laya_error *err) {
  router_facts f;
  sb_init(&f.reason);
  int rc = router_route_facts(cfg, state, questions, model, task, lang, lang_guess, explain, out, chosen,
                              language ? &f : NULL, err);
  if (language) snprintf(language, 32, "%s", f.language);
  sb_free(&f.reason);
  return rc;
}

int router_route_facts(const router_config *cfg, const json_value *state, const json_value *questions,
                       const json_value *model, const json_value *task, const json_value *lang,
                       const json_value *lang_guess, bool explain, strbuf *out, char chosen[64],
                       router_facts *facts, laya_error *err) {
  char *language = facts ? facts->language : NULL;
  if (language) language[0] = 0;
  if (questions && questions->type != JSON_NULL && questions->type != JSON_OBJECT)
    return laya_type_error(err, "questions must be a dict of question id -> definition, got %s",
                           json_py_type(questions));
  strbuf reason;
  sb_init(&reason);
  size_t det_span[2] = {0, 0};
  int rc = 0;
  if (model && model->type != JSON_NULL) {
    if ((rc = router_resolve(cfg, model, chosen, err))) goto done;
    sb_puts(&reason, "explicit model=");
    py_repr_json(&reason, model);
    decision(out, det_span, cfg, chosen, reason.data, NULL, NULL, NULL);
    goto done;
  }
  if (task && task->type != JSON_NULL) {
    strbuf t, low;
    sb_init(&t);
    sb_init(&low);
    py_str_json(&t, task);
    py_lower(&low, t.data ? t.data : "", t.len);
    for (size_t i = 0; i < low.len; i++)
      if (low.data[i] == '-') low.data[i] = '_';
    bool typed = low.data && !strcmp(low.data, "typed_decisions");
    json_value td = json_string("typed-decisions");
    rc = router_resolve(cfg, typed ? &td : task, chosen, err);
    sb_free(&t);
    sb_free(&low);
    if (rc) goto done;
    sb_puts(&reason, "explicit task=");
    py_repr_json(&reason, task);
    decision(out, det_span, cfg, chosen, reason.data, NULL, NULL, NULL);
    goto done;
  }
  const char *workflow = router_match_workflow(questions);
  if (workflow && cfg->auto_task_detection) {
    snprintf(chosen, 64, "typed-decisions");
    sb_printf(&reason, "question ids match the '%s' typed-decisions workflow", workflow);
    decision(out, det_span, cfg, chosen, reason.data, NULL, NULL, workflow);
    goto done;
  }
  if (lang && lang->type != JSON_NULL) {
    int en = english_from_code(lang);
    if (en >= 0) {
      snprintf(chosen, 64, "%s", en ? "english" : "multilingual");
      sb_puts(&reason, "explicit lang=");
      py_repr_json(&reason, lang);
      decision(out, det_span, cfg, chosen, reason.data, NULL, NULL, workflow);
      goto done;
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    int en;
    if (pass == 0) {
      en = english_from_code(lang_guess);
    } else {
      json_value g = json_string(cfg->lang_guess ? cfg->lang_guess : "");
      en = cfg->lang_guess ? english_from_code(&g) : -1;
    }
    if (en >= 0) {
      snprintf(chosen, 64, "%s", en ? "english" : "multilingual");
      sb_printf(&reason, "%s: the caller identified this as %s text",
                pass == 0 ? "lang_guess" : "Router(lang_guess=...)", en ? "English" : "non-English");
      decision(out, det_span, cfg, chosen, reason.data, NULL, NULL, workflow);
      goto done;
    }
  }
  lang_detection det;
  lang_diag diag;
  lang_analyse_explain(state, &det, explain ? &diag : NULL);
  if (!strcmp(det.script, "unknown")) {
    snprintf(chosen, 64, "%s", cfg->default_model);
    sb_printf(&reason, "no letters detected in state; using default (%s)", chosen);
  } else if (strcmp(det.script, "latin") != 0) {
    snprintf(chosen, 64, "multilingual");
    sb_printf(&reason,
              "non-Latin script (%s, %.0f%% of letters); the English checkpoint cannot read it",
              det.script, 100.0 * det.non_latin_fraction);
  } else if (!det.is_english) {
    snprintf(chosen, 64, "multilingual");
    if (det.mixed_segment && *det.mixed_segment) {
      sb_puts(&reason, "Latin script, mostly English, but a line or field reads as ");
      py_repr_str(&reason, det.language, strlen(det.language));
      sb_puts(&reason, " (");
      /* the segment's first 60 code points */
      const char *s = det.mixed_segment;
      size_t n = strlen(s), i = 0, cps = 0;
      while (i < n && cps < 60) {
        uint32_t cp;
        i += (size_t)py_utf8_next(s, n, i, &cp);
        cps++;
      }
      py_repr_str(&reason, s, i);
      sb_puts(&reason, "); the English checkpoint cannot read it");
    } else if (det.language) {
      sb_puts(&reason, "Latin script but language looks like ");
      py_repr_str(&reason, det.language, strlen(det.language));
      sb_puts(&reason, ", not English");
    } else {
      sb_printf(&reason,
                "Latin script, language not identified but %.0f%% non-English letters; "
                "not safe for the English checkpoint",
                100.0 * det.diacritic_rate);
    }
  } else if (det.language_undecided) {
    snprintf(chosen, 64, "%s", cfg->default_model);
    sb_printf(&reason,
              "Latin script, language not identified and no non-English letters; using default (%s)",
              chosen);
  } else {
    snprintf(chosen, 64, "english");
    sb_puts(&reason, "English Latin text");
  }
  decision(out, det_span, cfg, chosen, reason.data ? reason.data : "", &det, explain ? &diag : NULL, workflow);
  if (language && det.language) snprintf(language, 32, "%s", det.language);
  lang_detection_free(&det);
  if (explain) lang_diag_free(&diag);
done:
  if (facts && !rc) {
    sb_append(&facts->reason, reason.data ? reason.data : "", reason.len);
    facts->detection_at = det_span[0];
    facts->detection_len = det_span[1];
  }
  sb_free(&reason);
  if (out->oom && !rc) rc = laya_err(err, LAYA_ERR_NOMEM, "MemoryError", "out of memory");
  return rc;
}
