/* result_json.c: typed results to JSON text, the one writer (result_json.h). */
#include "model/result_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const rj_style RJ_PY = {", ", ": ", -1};
const rj_style RJ_COMPACT = {",", ":", -1};
const rj_style RJ_INDENT2 = {",", ": ", 2};

/* ---- the emitter ---- */

void rj_init(rj *w, strbuf *sb, const rj_style *st) {
  memset(w, 0, sizeof *w);
  w->sb = sb;
  w->st = st;
  w->first[0] = true;
}

static void newline(rj *w, int level) {
  sb_putc(w->sb, '\n');
  for (int k = 0; k < w->st->indent * level; k++) sb_putc(w->sb, ' ');
}

/* Before an element of the open container: its separator and indentation. */
static void element(rj *w) {
  if (w->depth == 0) return;
  if (!w->first[w->depth]) sb_puts(w->sb, w->st->item_sep);
  w->first[w->depth] = false;
  if (w->st->indent >= 0) newline(w, w->depth);
}

static void open_c(rj *w, char c) {
  sb_putc(w->sb, c);
  if (w->depth + 1 < (int)(sizeof w->first / sizeof w->first[0])) w->depth++;
  w->first[w->depth] = true;
}

static void close_c(rj *w, char c) {
  if (w->st->indent >= 0 && !w->first[w->depth]) newline(w, w->depth - 1);
  if (w->depth > 0) w->depth--;
  sb_putc(w->sb, c);
}

void rj_obj(rj *w) { open_c(w, '{'); }
void rj_arr(rj *w) { open_c(w, '['); }
void rj_end_obj(rj *w) { close_c(w, '}'); }
void rj_end_arr(rj *w) { close_c(w, ']'); }

void rj_key(rj *w, const char *k, size_t n) {
  element(w);
  json_dump_string(w->sb, k, n, false);
  sb_puts(w->sb, w->st->key_sep);
}

static void key(rj *w, const char *k) { rj_key(w, k, strlen(k)); }

void rj_item(rj *w) { element(w); }

void rj_num(rj *w, double x) {
  char b[32];
  py_float_json(x, b);
  sb_puts(w->sb, b);
}

void rj_int(rj *w, long long x) { sb_printf(w->sb, "%lld", x); }
void rj_bool(rj *w, bool b) { sb_puts(w->sb, b ? "true" : "false"); }
void rj_null(rj *w) { sb_puts(w->sb, "null"); }
void rj_str(rj *w, const char *s, size_t n) { json_dump_string(w->sb, s, n, false); }

void rj_value(rj *w, const json_value *v) {
  json_dump_opts o = {w->st->item_sep, w->st->key_sep, false, w->st->indent};
  json_dump_level(w->sb, v, &o, w->depth);
}

void rj_raw(rj *w, const char *json) { sb_puts(w->sb, json); }

/* ---- answers ---- */

static void level_key(rj *w, int i) {
  char b[16];
  int n = snprintf(b, sizeof b, "%d", i);
  rj_key(w, b, (size_t)n);
}

void rj_probabilities(rj *w, const answer *a) {
  rj_obj(w);
  if (a->q->type == QT_CHOICE) {
    strbuf k;
    sb_init(&k);
    for (int i = 0; i < a->k; i++) {
      sb_reset(&k);
      label_json_key(&k, a->q->label[i]);
      rj_key(w, sb_cstr(&k), k.len);
      rj_num(w, a->prob[i]);
    }
    if (k.oom) w->sb->oom = true;
    sb_free(&k);
  } else {
    for (int i = 0; i < a->k; i++) {
      level_key(w, i);
      rj_num(w, a->prob[i]);
    }
  }
  rj_end_obj(w);
}

/* A score question's "legend" member: {"0": text, ...} in level order. */
static void legend(rj *w, const question *q) {
  key(w, "legend");
  rj_obj(w);
  for (int i = 0; i < q->n_opts; i++) {
    level_key(w, i);
    rj_str(w, q->legend[i], q->legend_len[i]);
  }
  rj_end_obj(w);
}

/* The answer's members, in Laya's key order (the object is left open). */
static void answer_members(rj *w, const answer *a) {
  const question *q = a->q;
  rj_obj(w);
  key(w, "type");
  rj_str(w, q->type_name, strlen(q->type_name));
  if (q->type == QT_CHOICE) {
    key(w, "choice");
    rj_value(w, q->label[a->top]);
    key(w, "probabilities");
    rj_probabilities(w, a);
  } else if (q->type == QT_SCORE) {
    key(w, "score");
    rj_num(w, a->score);
    legend(w, q);
    key(w, "probabilities");
    rj_probabilities(w, a);
  } else {
    key(w, "noul");
    rj_num(w, a->noul);
  }
  key(w, "confidence");
  rj_num(w, a->confidence);
  key(w, "answer_confidence");
  rj_num(w, a->answer_confidence);
  key(w, "action");
  rj_obj(w);
  key(w, "act_probability");
  rj_num(w, a->act_probability);
  rj_end_obj(w);
  if (a->gate != GATE_NONE) {
    if (a->gate == GATE_ABSTAINED) {
      key(w, "low_confidence");
      rj_bool(w, true);
    }
    key(w, "abstention");
    const char *v = a->gate == GATE_ABSTAINED ? "abstained" : a->gate == GATE_PASSED ? "passed" : "unevaluated";
    rj_str(w, v, strlen(v));
    key(w, "abstention_threshold");
    rj_num(w, a->threshold);
  }
}

static bool answer_finite(const answer *a) {
  const question *q = a->q;
  if (q->type != QT_NOUL)
    for (int i = 0; i < a->k; i++)
      if (!isfinite(a->prob[i])) return false;
  if (q->type == QT_SCORE && !isfinite(a->score)) return false;
  if (q->type == QT_NOUL && !isfinite(a->noul)) return false;
  if (a->gate != GATE_NONE && !isfinite(a->threshold)) return false;
  return isfinite(a->confidence) && isfinite(a->answer_confidence) && isfinite(a->act_probability);
}

bool rj_state_finite(const state_result *r) {
  for (int i = 0; i < r->n; i++)
    if (!answer_finite(&r->answers[i])) return false;
  return true;
}

void rj_answer(rj *w, const answer *a) {
  answer_members(w, a);
  rj_end_obj(w);
}

void rj_answers(rj *w, const state_result *r) {
  rj_obj(w);
  for (int j = 0; j < r->n; j++) {
    rj_key(w, r->answers[j].q->qid, r->answers[j].q->qid_len);
    rj_answer(w, &r->answers[j]);
  }
  rj_end_obj(w);
}

/* truncated_questions and options: facts of each question's row and head. */
static void usage_rows(rj *w, const state_result *r) {
  key(w, "truncated_questions");
  rj_arr(w);
  for (int j = 0; j < r->n; j++)
    if (r->answers[j].truncated) {
      rj_item(w);
      rj_str(w, r->answers[j].q->qid, r->answers[j].q->qid_len);
    }
  rj_end_arr(w);
  bool any = false;
  for (int j = 0; j < r->n; j++) {
    const answer *a = &r->answers[j];
    if (a->options_distinct >= a->options_total) continue;
    if (!any) {
      key(w, "options");
      rj_obj(w);
    }
    any = true;
    rj_key(w, a->q->qid, a->q->qid_len);
    rj_obj(w);
    key(w, "total");
    rj_int(w, a->options_total);
    key(w, "distinct");
    rj_int(w, a->options_distinct);
    key(w, "tokens_per_option");
    if (a->tokens_per_option < 0) rj_null(w);
    else rj_int(w, a->tokens_per_option);
    rj_end_obj(w);
  }
  if (any) rj_end_obj(w);
}

/* The usage members (the object is left open). */
static void usage_members(rj *w, const state_result *r) {
  rj_obj(w);
  key(w, "input_tokens");
  rj_int(w, r->input_tokens);
  key(w, "output_tokens");
  rj_int(w, 0);
  if (!r->full_usage) return;
  key(w, "state_tokens");
  rj_int(w, r->state_tokens);
  key(w, "state_tokens_dropped");
  rj_int(w, r->state_tokens_dropped);
  key(w, "truncated");
  rj_bool(w, r->state_tokens_dropped > 0);
  usage_rows(w, r);
}

void rj_usage(rj *w, const state_result *r) {
  usage_members(w, r);
  rj_end_obj(w);
}

static void routing_member(rj *w, const char *routing) {
  if (!routing) return;
  key(w, "routing");
  rj_raw_styled(w, routing); /* as is in RJ_PY; the `laya` command's --json writes RJ_INDENT2 */
}

/* predict's members: model, answers, usage and the routing block when there is one. */
static void state_members(rj *w, const state_result *r, const char *routing) {
  key(w, "model");
  rj_str(w, "laya-rl-agent", 13);
  key(w, "answers");
  rj_answers(w, r);
  key(w, "usage");
  rj_usage(w, r);
  routing_member(w, routing);
}

void rj_state(rj *w, const state_result *r, const char *routing) {
  rj_obj(w);
  state_members(w, r, routing);
  rj_end_obj(w);
}

static void shortlist_labels(rj *w, const shortlist_entry *e) {
  rj_arr(w);
  for (int j = 0; j < e->n_kept; j++) {
    rj_item(w);
    rj_value(w, e->labels[j]);
  }
  rj_end_arr(w);
}

static void shortlist_scores(rj *w, const shortlist_entry *e) {
  if (!e->scores) {
    rj_null(w);
    return;
  }
  rj_arr(w);
  for (int j = 0; j < e->n_kept; j++) {
    rj_item(w);
    rj_num(w, e->scores[j]);
  }
  rj_end_arr(w);
}

void rj_shortlist_meta(rj *w, const shortlist_result *s) {
  rj_obj(w);
  for (int i = 0; i < s->n; i++) {
    const shortlist_entry *e = &s->e[i];
    rj_key(w, e->qid, e->qid_len);
    rj_obj(w);
    key(w, "labels");
    shortlist_labels(w, e);
    key(w, "scores");
    shortlist_scores(w, e);
    key(w, "k");
    if (s->k_arg) rj_value(w, s->k_arg);
    else rj_int(w, s->k);
    key(w, "n");
    rj_int(w, e->n);
    key(w, "passthrough");
    rj_bool(w, e->passthrough);
    rj_end_obj(w);
  }
  rj_end_obj(w);
}

void rj_shortlist(rj *w, const shortlist_result *s, const char *routing) {
  rj_obj(w);
  state_members(w, &s->r, routing);
  key(w, "shortlist");
  rj_shortlist_meta(w, s);
  rj_end_obj(w);
}

/* The labels a tournament entry has left (its finalists), in criteria order. */
static void rj_left_labels(rj *w, const tournament_entry *e) {
  rj_arr(w);
  for (int j = 0; j < e->n_left; j++) {
    rj_item(w);
    rj_value(w, e->labels[e->left[j]]);
  }
  rj_end_arr(w);
}

void rj_tournament_meta(rj *w, const tournament_result *t) {
  rj_obj(w);
  for (int i = 0; i < t->n; i++) {
    const tournament_entry *e = &t->e[i];
    rj_key(w, e->qid, e->qid_len);
    rj_obj(w);
    key(w, "labels");
    rj_left_labels(w, e);
    key(w, "n");
    rj_int(w, e->n);
    key(w, "rounds");
    rj_int(w, e->rounds);
    rj_end_obj(w);
  }
  rj_end_obj(w);
}

void rj_tournament(rj *w, const tournament_result *t, const char *routing) {
  rj_obj(w);
  state_members(w, &t->r, routing);
  key(w, "tournament");
  rj_tournament_meta(w, t);
  rj_end_obj(w);
}

void rj_shortlist_choice(rj *w, const shortlist_entry *e, bool return_scores) {
  if (!return_scores) {
    shortlist_labels(w, e);
    return;
  }
  rj_arr(w);
  rj_item(w);
  shortlist_labels(w, e);
  rj_item(w);
  shortlist_scores(w, e);
  rj_end_arr(w);
}

void rj_embeddings(rj *w, const float *v, long n, int d) {
  rj_arr(w);
  for (long r = 0; r < n; r++) {
    rj_item(w);
    rj_arr(w);
    for (int i = 0; i < d; i++) {
      rj_item(w);
      rj_num(w, (double)v[(size_t)r * (size_t)d + (size_t)i]);
    }
    rj_end_arr(w);
  }
  rj_end_arr(w);
}

void rj_states(rj *w, const state_result *r, long n) {
  rj_arr(w);
  for (long i = 0; i < n; i++) {
    rj_item(w);
    rj_state(w, &r[i], NULL);
  }
  rj_end_arr(w);
}

void rj_long_answers(rj *w, const long_result *l) {
  const state_result *r = &l->r;
  rj_obj(w);
  for (int j = 0; j < r->n; j++) {
    rj_key(w, r->answers[j].q->qid, r->answers[j].q->qid_len);
    answer_members(w, &r->answers[j]);
    if (!l->single) {
      key(w, "window");
      rj_obj(w);
      key(w, "index");
      rj_int(w, l->win_index[j]);
      key(w, "token_start");
      rj_int(w, l->win_start[j]);
      key(w, "token_end");
      rj_int(w, l->win_end[j]);
      key(w, "count");
      rj_int(w, l->windows);
      rj_end_obj(w);
    }
    rj_end_obj(w);
  }
  rj_end_obj(w);
}

void rj_long(rj *w, const long_result *l, const char *routing) {
  const state_result *r = &l->r;
  rj_obj(w);
  key(w, "model");
  rj_str(w, "laya-rl-agent", 13);
  key(w, "answers");
  rj_long_answers(w, l);
  key(w, "usage");
  if (l->single) {
    usage_members(w, r);
  } else {
    /* Laya sums the windows' numbers (a bool counts 1), keeps the last list and merges the dicts
     * (every window has the same heads, so the last window's options) */
    rj_obj(w);
    key(w, "input_tokens");
    rj_int(w, r->input_tokens);
    key(w, "output_tokens");
    rj_int(w, 0);
    if (r->full_usage) {
      key(w, "state_tokens");
      rj_int(w, r->state_tokens);
      key(w, "state_tokens_dropped");
      rj_int(w, r->state_tokens_dropped);
      key(w, "truncated");
      rj_int(w, l->truncated_sum);
      usage_rows(w, l->last);
    }
  }
  key(w, "windows");
  rj_int(w, l->windows);
  rj_end_obj(w);
  routing_member(w, routing);
  rj_end_obj(w);
}

void rj_write_state(strbuf *sb, const rj_style *st, const state_result *r, const char *routing) {
  rj w;
  rj_init(&w, sb, st);
  rj_state(&w, r, routing);
}

void rj_write_states(strbuf *sb, const rj_style *st, const state_result *r, long n) {
  rj w;
  rj_init(&w, sb, st);
  rj_states(&w, r, n);
}

/* ---- the server's body (FastAPI's compact JSON) ---- */

void rj_raw_respaced(rj *w, const char *json) {
  if (!strcmp(w->st->item_sep, ", ") && !strcmp(w->st->key_sep, ": ")) {
    sb_puts(w->sb, json); /* already in these separators */
    return;
  }
  /* json.dumps's default separators outside strings become the writer's */
  bool in_str = false;
  for (const char *p = json; *p; p++) {
    char c = *p;
    if (in_str) {
      sb_putc(w->sb, c);
      if (c == '\\' && p[1]) sb_putc(w->sb, *++p);
      else if (c == '"') in_str = false;
    } else if ((c == ',' || c == ':') && p[1] == ' ') {
      sb_puts(w->sb, c == ',' ? w->st->item_sep : w->st->key_sep);
      p++;
    } else {
      if (c == '"') in_str = true;
      sb_putc(w->sb, c);
    }
  }
}

bool rj_jev_confidence(const answer *a, double *out) {
  const int qt = a->q->type;
  const int n = a->k;
  if ((qt != QT_CHOICE && qt != QT_SCORE) || n == 0) return false;
  for (int i = 0; i < n; i++)
    if (!isfinite(a->prob[i]) || a->prob[i] < 0.0) return false;
  if (n == 1) {
    *out = 1.0;
    return true;
  }
  double total = 0.0;
  for (int i = 0; i < n; i++) total += a->prob[i];
  double pm = total != 0.0 ? a->prob[0] / total : 1.0 / (double)n;
  if (qt == QT_CHOICE) {
    for (int i = 1; i < n; i++) {
      double p = total != 0.0 ? a->prob[i] / total : 1.0 / (double)n;
      if (p > pm) pm = p;
    }
    *out = (pm - 1.0 / (double)n) / (1.0 - 1.0 / (double)n);
    return true;
  }
  /* score: the levels are in order already (keys "0".."k-1") */
  int mode = 0;
  for (int i = 1; i < n; i++) {
    double p = total != 0.0 ? a->prob[i] / total : 1.0 / (double)n;
    if (p > pm) {
      pm = p;
      mode = i;
    }
  }
  double spread = 0.0, center = (double)(n - 1) / 2.0, uniform = 0.0;
  for (int i = 0; i < n; i++) {
    double p = total != 0.0 ? a->prob[i] / total : 1.0 / (double)n;
    spread += p * fabs((double)i - (double)mode);
    uniform += fabs((double)i - center);
  }
  uniform /= (double)n;
  double c = 1.0 - spread / uniform;
  *out = c > 0.0 ? c : 0.0;
  return true;
}

/* The strict Jev contract's answer: type and value, confidence and probabilities (and a score's
 * legend); noul: type and noul. */
static void strict_answer(rj *w, const answer *a) {
  const question *q = a->q;
  rj_obj(w);
  key(w, "type");
  rj_str(w, q->type_name, strlen(q->type_name));
  if (q->type == QT_NOUL) {
    key(w, "noul");
    rj_num(w, a->noul);
    rj_end_obj(w);
    return;
  }
  if (q->type == QT_CHOICE) {
    key(w, "choice");
    rj_value(w, q->label[a->top]);
  } else {
    key(w, "score");
    rj_num(w, a->score);
  }
  key(w, "confidence");
  rj_num(w, a->confidence);
  key(w, "probabilities");
  rj_probabilities(w, a);
  if (q->type == QT_SCORE) {
    legend(w, q);
  }
  rj_end_obj(w);
}

void rj_served(rj *w, const state_result *r, const char *routing, bool strict) {
  rj_served_tournament(w, r, routing, strict, NULL, NULL);
}

/* x_tournament: the finalists (criteria order) and the rounds played */
static void tournament_note(rj *w, const tournament_entry *e, bool dropped) {
  key(w, "x_tournament");
  rj_obj(w);
  key(w, "finalists");
  rj_left_labels(w, e);
  key(w, "rounds");
  rj_int(w, e->rounds);
  if (dropped) {
    key(w, "option_order_dropped");
    rj_bool(w, true);
  }
  rj_end_obj(w);
}

void rj_served_tournament(rj *w, const state_result *r, const char *routing, bool strict,
                          const tournament_entry *const *notes, const bool *dropped) {
  rj_obj(w);
  key(w, "model");
  rj_str(w, "laya-rl-agent", 13);
  key(w, "answers");
  rj_obj(w);
  for (int j = 0; j < r->n; j++) {
    const answer *a = &r->answers[j];
    rj_key(w, a->q->qid, a->q->qid_len);
    if (strict) {
      strict_answer(w, a);
      continue;
    }
    answer_members(w, a);
    if (notes && notes[j]) tournament_note(w, notes[j], dropped && dropped[j]);
    double c;
    if (rj_jev_confidence(a, &c)) {
      key(w, "x_jev_confidence");
      rj_num(w, py_round4(c));
    }
    rj_end_obj(w);
  }
  rj_end_obj(w);
  key(w, "usage");
  if (strict) {
    rj_obj(w);
    key(w, "input_tokens");
    rj_int(w, r->input_tokens);
    key(w, "output_tokens");
    rj_int(w, 0);
    rj_end_obj(w);
  } else {
    rj_usage(w, r);
    if (routing) {
      key(w, "routing");
      rj_raw_respaced(w, routing);
    }
  }
  rj_end_obj(w);
}

void rj_raw_styled(rj *w, const char *json) {
  if (w->st->indent < 0) {
    rj_raw_respaced(w, json);
    return;
  }
  /* json.dumps's indent: a non-empty container's elements one a line, one level deeper */
  int level = w->depth;
  bool in_str = false;
  for (const char *p = json; *p; p++) {
    char c = *p;
    if (in_str) {
      sb_putc(w->sb, c);
      if (c == '\\' && p[1]) sb_putc(w->sb, *++p);
      else if (c == '"') in_str = false;
    } else if (c == '{' || c == '[') {
      sb_putc(w->sb, c);
      if (p[1] == (c == '{' ? '}' : ']')) {
        sb_putc(w->sb, *++p);
      } else {
        level++;
        newline(w, level);
      }
    } else if (c == '}' || c == ']') {
      level--;
      newline(w, level);
      sb_putc(w->sb, c);
    } else if (c == ',' && p[1] == ' ') {
      sb_puts(w->sb, w->st->item_sep);
      newline(w, level);
      p++;
    } else if (c == ':' && p[1] == ' ') {
      sb_puts(w->sb, w->st->key_sep);
      p++;
    } else {
      if (c == '"') in_str = true;
      sb_putc(w->sb, c);
    }
  }
}
