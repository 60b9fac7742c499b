/*
 * router.h: choosing a checkpoint for a request, with Laya 0.4.15's Router rules.
 *
 * Precedence: explicit model > explicit task > question ids matching a typed-decisions
 * workflow (opt-in) > explicit lang > lang_guess (per call, then the router's own) >
 * script/language detection > the default checkpoint. Routing reads the state only; it loads
 * nothing and works offline.
 */
#ifndef LAYA_ROUTER_ROUTER_H
#define LAYA_ROUTER_ROUTER_H

#include <stdbool.h>

#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"

#define ROUTER_MAX_MODELS 16

/* A checkpoint the router knows: a built-in name or one registered by the caller. */
typedef struct router_entry {
  char name[64];
  char *source;    /* Hub repo id or local path (malloc'd) */
  char *subfolder; /* or NULL */
} router_entry;

typedef struct router_config {
  router_entry models[ROUTER_MAX_MODELS];
  int nmodels;
  char default_model[64]; /* canonical name; "multilingual" unless set */
  bool auto_task_detection;
  char *lang_guess;       /* router-level language hint, or NULL */
} router_config;

/* Built-in registry (bundle repo, or the standalone repos). */
void router_config_init(router_config *cfg, bool standalone_repos);
void router_config_free(router_config *cfg);
/* Register name -> source (a repo id or path) with an optional subfolder. Name rules as Laya. */
int router_register(router_config *cfg, const char *name, const char *source, const char *subfolder,
                    laya_error *err);
/* Set the default checkpoint (resolved like any name). */
int router_set_default(router_config *cfg, const char *name, laya_error *err);

/* Canonical name of a checkpoint this router knows; ValueError naming the choices otherwise.
 * `name` is the Python value (a JSON string is the usual case). */
int router_resolve(const router_config *cfg, const json_value *name, char out[64], laya_error *err);
/* normalise_name for a plain C string against the built-in table. */
int router_normalise_name(const char *name, char out[64], laya_error *err);
const router_entry *router_find(const router_config *cfg, const char *canonical);
/* "repo" or "repo/subfolder" */
void router_repo_str(const router_entry *e, strbuf *sb);

/* The typed-decisions workflow whose question ids these are, or NULL. */
const char *router_match_workflow(const json_value *questions);

/* Route one request. Overrides may be NULL (absent). Writes the RouteDecision as JSON
 * ({"model", "repo", "reason", "detection", "workflow"}, json.dumps default separators) and
 * the chosen canonical name. */
int router_route(const router_config *cfg, const json_value *state, const json_value *questions,
                 const json_value *model, const json_value *task, const json_value *lang,
                 const json_value *lang_guess, strbuf *decision_json, char chosen[64],
                 laya_error *err);

/* router_route with Laya's explain=True: the detection also carries its "diagnostic". */
int router_route_ex(const router_config *cfg, const json_value *state, const json_value *questions,
                    const json_value *model, const json_value *task, const json_value *lang,
                    const json_value *lang_guess, bool explain, strbuf *decision_json,
                    char chosen[64], laya_error *err);

/* router_route_ex that also gives the language its detection named ("" when it ran none or
 * named none), for the per-language temperatures of the call it routes. */
int router_route_detect(const router_config *cfg, const json_value *state, const json_value *questions,
                        const json_value *model, const json_value *task, const json_value *lang,
                        const json_value *lang_guess, bool explain, strbuf *decision_json,
                        char chosen[64], char language[32], laya_error *err);

/* A RouteDecision's facts as values, for a surface that writes its own summary of it (laya-mcp's
 * {model, repo, reason}) or reads its language, so nothing parses decision_json back. */
typedef struct router_facts {
  char language[32]; /* the detection's language ("" when it ran none or named none) */
  strbuf reason;     /* the decision's reason (the caller frees it) */
  /* where the decision's "detection" value lies in decision_json (its "null" when no detection
   * ran): the `laya` command prints it without reading the decision back */
  size_t detection_at, detection_len;
} router_facts;

/* router_route_ex that also fills *facts (sb_init'd by the caller; NULL: none). */
int router_route_facts(const router_config *cfg, const json_value *state, const json_value *questions,
                       const json_value *model, const json_value *task, const json_value *lang,
                       const json_value *lang_guess, bool explain, strbuf *decision_json,
                       char chosen[64], router_facts *facts, laya_error *err);

#endif
