/*
 * laya_cli.c: the `laya` command itself (routing, prediction, presets, batches, the prompt).
 *
 * Flags, outputs and exit codes follow Laya 0.4.15's `laya` command so scripts written against
 * it keep working: 0 on success, 2 with "laya: <message>" on stderr for a handled error or a
 * usage error. Routing (the default mode) reads the text only and never loads a checkpoint.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_util.h"
#include "cli/predict.h"
#include "model/presets.h"
#include "cli/questions_file.h"
#include "core/error.h"
#include "core/pystr.h"
#include "router/router.h"
#include "core/utf8.h"
#include "cli/precision.h"

typedef struct args {
  char **text;
  int ntext;
  bool predict, json, sort_by_length, long_doc, help, version, explain;
  const char *model, *lang, *lang_guess, *task, *preset, *questions, *device, *batch, *schema;
  const char *precision;
  long long max_len, head_max_len, batch_size, window, stride, max_loaded;
  double min_confidence;
  char model_name[64];
  bool model_auto;
} args;

static const char kUsage[] =
    "usage: laya [-h] [--predict] [--model NAME|DIR] [--lang LANG] [--lang-guess CODE]\n"
    "            [--task TASK] [--preset NAME] [--questions FILE] [--schema FILE] [--long]\n"
    "            [--window N] [--stride N] [--max-len N] [--head-max-len N]\n"
    "            [--min-confidence P] [--device DEV] [--precision P] [--json] [--explain]\n"
    "            [--batch FILE] [--batch-size N] [--sort-by-length] [text ...]\n"
    "       laya eval {run,validate} ...\n"
    "       laya calibrate ...\n"
    "       laya tokenize ...\n"
    "       laya convert CHECKPOINT OUT\n";

static const char kHelp[] =
    "\n"
    "Route a request to a Laya checkpoint, or answer typed questions about it.\n"
    "\n"
    "Modes:\n"
    "  laya \"I was charged twice\"                 which checkpoint, and why (offline; no model)\n"
    "  laya \"...\" --predict                       answer the built-in router questions\n"
    "  laya \"...\" --preset triage                 answer a ready-made question set\n"
    "  laya \"...\" --questions qs.json             answer your own questions\n"
    "  laya \"...\" --schema schema.json            fill a JSON schema (enum, boolean, bounded\n"
    "                                             integer) with typed values\n"
    "  laya \"...\" --questions qs.json --long      scan every window of a long text\n"
    "  laya --batch requests.txt [--json]         one request per line (JSONL with --json)\n"
    "  laya                                       interactive prompt\n"
    "\n"
    "positional arguments:\n"
    "  text                  the request text, joined with spaces (omit for the prompt)\n"
    "\n"
    "options:\n"
    "  -h, --help            show this help and exit\n"
    "  --version             print the laya.c version, the Laya version it matches, the CPU\n"
    "                        kernel tables and the precision models open with\n"
    "  --predict             answer the router questions (difficulty, domain, needs_tools,\n"
    "                        is_sensitive) instead of only routing\n"
    "  --model NAME|DIR      pin a checkpoint: english, multilingual, typed-decisions or an\n"
    "                        alias (en, laya, default, multi, ml, typed, decisions, ...), in\n"
    "                        any casing; 'auto' routes (the default); a directory or a\n"
    "                        packed artifact is loaded as is\n"
    "  --lang LANG           the language of the text (en, de, pt-BR, en_US.UTF-8 ...);\n"
    "                        decides the checkpoint when it names a language\n"
    "  --lang-guess CODE     a softer hint: used after --lang and before detection\n"
    "  --task TASK           choose the checkpoint by task (typed_decisions, or a name)\n"
    "  --preset NAME         answer a preset: email, guard, moderation, router, triage\n"
    "                        (implies --predict)\n"
    "  --questions FILE      a JSON file of questions: {id: definition}, or {\"questions\": {...},\n"
    "                        \"state_key\": \"field\"} (default field: request); implies --predict\n"
    "  --schema FILE         a JSON schema to decide: enum/const -> choice, boolean -> noul,\n"
    "                        integer with minimum and maximum -> score; prints typed values\n"
    "  --long                scan the whole text in overlapping windows (predict_long)\n"
    "  --window N            state tokens per window with --long (default: the checkpoint's)\n"
    "  --stride N            tokens between window starts with --long (default: window/2)\n"
    "  --max-len N           token budget of the whole sequence (default: the checkpoint's)\n"
    "  --head-max-len N      token budget the options share\n"
    "  --min-confidence P    mark answers whose confidence is below P (0..1) as\n"
    "                        low-confidence; needs an answering mode\n"
    "  --device DEV          cpu, cuda, cuda:N or auto (default: LAYA_DEVICE or cpu)\n"
    "  --precision P         fp32, bf16, int8 (CPU) or fp16 (CUDA); default: LAYA_PRECISION,\n"
    "                        else fp32 on the CPU (Laya's numbers; bf16 / int8 are faster and\n"
    "                        move probabilities by up to a few hundredths)\n"
    "  --json                print JSON (JSONL in --batch mode)\n"
    "  --explain             routing only: add the detector's diagnostic (stage, reason, and\n"
    "                        the field and line that decided) to the decision\n"
    "  --batch FILE          one request per non-blank line of FILE ('-' = stdin)\n"
    "  --batch-size N        states per forward pass in --batch mode\n"
    "  --sort-by-length      with --batch-size, batch states of similar length together\n"
    "\n"
    "Subcommands:\n"
    "  laya eval run DATASET [--model M] [--min-accuracy F] [--max-ece F] [--json OUT]\n"
    "  laya eval validate DATASET\n"
    "  laya calibrate --model DIR --data FILE [--out FILE | --write-config]\n"
    "  laya tokenize --model DIR TEXT\n"
    "  laya convert CHECKPOINT OUT\n"
    "  laya env [--values]     the environment variables the library reads (types, defaults)\n"
    "\n"
    "Checkpoints are looked up in the Hugging Face cache (HF_HOME, or ~/.cache/huggingface)\n"
    "first, so a cache filled by Python Laya is reused; otherwise they are downloaded unless\n"
    "HF_HUB_OFFLINE=1. HF_TOKEN is sent when set. Exit status: 0 on success, 1 when an\n"
    "evaluation gate fails, 2 on an error (the message goes to stderr).\n";

static int usage_error(const char *fmt, const char *a, const char *b) {
  fputs(kUsage, stderr);
  fputs("laya: error: ", stderr);
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  return 2;
}

static int fail(const laya_error *err) {
  /* Laya's CLI: a ValueError (and its SchemaError) is the caller's input; anything else means
   * Laya itself could not run (a checkpoint missing, unreadable or not downloadable) */
  bool input = !strcmp(err->kind, "ValueError") || !strcmp(err->kind, "SchemaError") ||
               !strcmp(err->kind, "TypeError") ||
               (!err->kind[0] && (err->code == LAYA_ERR_VALUE || err->code == LAYA_ERR_TYPE));
  if (input) {
    fprintf(stderr, "laya: %s\n", err->message);
  } else {
    fprintf(stderr, "laya: could not run Laya (%s).\n", err->message);
    fprintf(stderr, "Check that the checkpoint exists locally or can be downloaded from the "
                    "Hugging Face hub (network access is needed on first use).\n");
  }
  return 2;
}

/* ---------------------------------------------------------------- argument parsing */

static int parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->max_len = a->head_max_len = a->batch_size = a->window = a->stride = -1;
  a->max_loaded = 2;
  a->min_confidence = -1;
  const char *min_conf = NULL;
  const arg_spec opts[] = {
      {"--predict", ARG_FLAG, &a->predict, NULL},        {"--json", ARG_FLAG, &a->json, NULL},
      {"--explain", ARG_FLAG, &a->explain, NULL},
      {"--sort-by-length", ARG_FLAG, &a->sort_by_length, NULL},
      {"--long", ARG_FLAG, &a->long_doc, NULL},          {"--help", ARG_FLAG, &a->help, NULL},
      {"-h", ARG_FLAG, &a->help, NULL},                  {"--version", ARG_FLAG, &a->version, NULL},
      {"--model", ARG_STR, &a->model, NULL},             {"--lang", ARG_STR, &a->lang, NULL},
      {"--lang-guess", ARG_STR, &a->lang_guess, NULL},   {"--task", ARG_STR, &a->task, NULL},
      {"--preset", ARG_STR, &a->preset, NULL},           {"--questions", ARG_STR, &a->questions, NULL},
      {"--device", ARG_STR, &a->device, NULL},           {"--batch", ARG_STR, &a->batch, NULL},
      {"--precision", ARG_CHOICE, &a->precision, cli_precisions},
      {"--schema", ARG_STR, &a->schema, NULL},           {"--max-len", ARG_INT, &a->max_len, NULL},
      {"--head-max-len", ARG_INT, &a->head_max_len, NULL}, {"--batch-size", ARG_INT, &a->batch_size, NULL},
      {"--window", ARG_INT, &a->window, NULL},           {"--stride", ARG_INT, &a->stride, NULL},
      {"--max-loaded", ARG_INT, &a->max_loaded, NULL},
      {"--min-confidence", ARG_STR, &min_conf, NULL}};
  arg_result r;
  int bad = cli_args_parse(argc, argv, 1, opts, sizeof opts / sizeof opts[0], &r);
  a->text = (char **)r.positional; /* owned by a from here; freed with a->text */
  a->ntext = r.n_positional;
  if (bad) return usage_error("%s%s", r.error, "");
  if (min_conf) {
    /* Laya's own type function for this flag, with its wording */
    double d;
    if (!py_float_from_str(min_conf, strlen(min_conf), &d))
      return usage_error("argument --min-confidence: expected a number in [0.0, 1.0], got '%s'%s", min_conf, "");
    if (!(d >= 0.0 && d <= 1.0)) {
      char f[32];
      py_float_repr(d, f);
      return usage_error("argument --min-confidence: min_confidence must be a float in [0.0, 1.0], got %s%s", f, "");
    }
    a->min_confidence = d;
  }
  if (a->preset && !question_preset_find(a->preset))
    return usage_error("argument --preset: invalid choice: '%s' (choose from 'email', 'guard', "
                       "'moderation', 'router', 'triage')%s",
                       a->preset, "");
  if (a->model) {
    char *m = cli_strip(a->model);
    strbuf low;
    sb_init(&low);
    py_lower(&low, m ? m : "", m ? strlen(m) : 0);
    bool is_auto = low.data && !strcmp(low.data, "auto");
    sb_free(&low);
    free(m);
    if (is_auto) {
      a->model_auto = true;
    } else if (access(a->model, F_OK) != 0) {
      laya_error err = {0};
      if (router_normalise_name(a->model, a->model_name, &err))
        return usage_error("argument --model: %s, or 'auto'%s", err.message, "");
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- output */

static void print_decision(const json_value *d) {
  const json_value *m = json_get(d, "model"), *r = json_get(d, "reason"), *det = json_get(d, "detection");
  printf("Model     : %s\n", m && m->type == JSON_STRING ? m->s : "?");
  printf("Reason    : %s\n", r && r->type == JSON_STRING ? r->s : "?");
  if (det && det->type == JSON_OBJECT && det->n) {
    strbuf sb;
    sb_init(&sb);
    cli_dump(&sb, det, -1);
    printf("Detected  : %s\n", sb.data);
    sb_free(&sb);
  }
}

static void print_answers(const json_value *result) {
  const json_value *routing = json_get(result, "routing");
  if (routing && routing->type == JSON_OBJECT && routing->n) {
    print_decision(routing);
    printf("\n");
  }
  const json_value *answers = json_get(result, "answers");
  if (!answers || answers->type != JSON_OBJECT) return;
  for (uint32_t i = 0; i < answers->n; i++) {
    const json_value *ans = &answers->members[i].value;
    strbuf line;
    sb_init(&line);
    const json_value *c = json_get(ans, "choice"), *s = json_get(ans, "score"), *n = json_get(ans, "noul");
    if (c) {
      strbuf label;
      sb_init(&label);
      py_str_json(&label, c);
      double p = 0.0;
      const json_value *probs = json_get(ans, "probabilities");
      const json_value *pv = c->type == JSON_STRING ? json_get(probs, c->s) : NULL;
      if (pv && json_is_number(pv)) p = pv->d;
      sb_printf(&line, "%s (p=%.3f)", label.data ? label.data : "", p);
      sb_free(&label);
    } else if (s && json_is_number(s)) {
      sb_printf(&line, "%.2f", s->d);
    } else if (n && json_is_number(n)) {
      sb_printf(&line, "%.3f", n->d);
    } else {
      cli_dump(&line, ans, -1);
    }
    const json_value *low = json_get(ans, "low_confidence");
    if (low && low->type == JSON_BOOL && low->b) sb_puts(&line, "  [low-confidence]");
    strbuf out;
    sb_init(&out);
    cli_pad(&out, answers->members[i].key, 12);
    printf("%s: %s\n", out.data, line.data ? line.data : "");
    sb_free(&out);
    sb_free(&line);
  }
}

/* Typed values of a schema decision, one "name: value" per line. */
static void print_values(const json_value *result) {
  const json_value *routing = json_get(result, "routing");
  if (routing && routing->type == JSON_OBJECT && routing->n) {
    print_decision(routing);
    printf("\n");
  }
  const json_value *values = json_get(result, "values");
  const json_value *conf = json_get(result, "confidence");
  if (!values || values->type != JSON_OBJECT) return;
  for (uint32_t i = 0; i < values->n; i++) {
    strbuf out, v;
    sb_init(&out);
    sb_init(&v);
    cli_pad(&out, values->members[i].key, 12);
    cli_dump(&v, &values->members[i].value, -1);
    const json_value *c = json_get(conf, values->members[i].key);
    if (c && json_is_number(c)) sb_printf(&v, "  (confidence %.3f)", c->d);
    printf("%s: %s\n", out.data, v.data);
    sb_free(&out);
    sb_free(&v);
  }
}

/* ---------------------------------------------------------------- modes */

typedef struct run_ctx {
  args *a;
  router_config cfg;
  cli_engine *engine; /* created on first answering call */
} run_ctx;

static bool answering(const args *a) {
  return a->predict || a->preset || a->questions || a->schema || a->long_doc;
}

static void fill_overrides(const args *a, cli_overrides *ov, json_value *store) {
  memset(ov, 0, sizeof *ov);
  int k = 0;
  if (a->model && !a->model_auto) {
    if (a->model_name[0]) {
      store[k] = json_string(a->model_name);
      ov->model = &store[k++];
    } else {
      ov->model_path = a->model;
    }
  }
  if (a->task) {
    store[k] = json_string(a->task);
    ov->task = &store[k++];
  }
  if (a->lang) {
    store[k] = json_string(a->lang);
    ov->lang = &store[k++];
  }
  if (a->lang_guess) {
    store[k] = json_string(a->lang_guess);
    ov->lang_guess = &store[k++];
  }
  ov->max_len = a->max_len;
  ov->head_max_len = a->head_max_len;
  ov->min_confidence = a->min_confidence;
  ov->window = a->window;
  ov->stride = a->stride;
  ov->batch_size = a->batch_size;
  ov->sort_by_length = a->sort_by_length;
}

/* The question set, the state key, and the call kind for the answering modes. */
static int resolve_questions(const args *a, arena *ar, const json_value **qs, const char **key,
                             cli_call *call, laya_error *err) {
  int picked = (a->questions != NULL) + (a->preset != NULL) + (a->schema != NULL);
  if (a->questions && a->preset)
    return laya_value_error(err, "--questions and --preset choose different question sets; pass one");
  if (picked > 1)
    return laya_value_error(err, "--schema replaces the question set; do not combine it with "
                                 "--questions or --preset");
  if (a->schema && a->long_doc)
    return laya_value_error(err, "--long scans questions, not a schema; use --questions or --preset");
  *call = a->long_doc ? CLI_PREDICT_LONG : CLI_PREDICT;
  if (a->questions) return cli_load_questions(a->questions, ar, qs, key, err);
  if (a->schema) {
    size_t len;
    char *text = cli_read_file(a->schema, &len);
    if (!text) {
      if (errno == ENOENT) return laya_value_error(err, "no such --schema file: %s", a->schema);
      return laya_err(err, LAYA_ERR_IO, "OSError", "could not read --schema file %s (%s)", a->schema,
                      strerror(errno));
    }
    laya_error perr = {0};
    *qs = cli_parse(text, len, ar, &perr);
    free(text);
    if (!*qs) return laya_value_error(err, "--schema file %s is not valid JSON: %s", a->schema, perr.message);
    *key = "request";
    *call = CLI_DECIDE;
    return 0;
  }
  const question_preset *p = question_preset_find(a->preset ? a->preset : "router");
  laya_error perr = {0};
  *qs = cli_parse(p->questions, strlen(p->questions), ar, &perr);
  *key = p->state_key;
  if (!*qs) return laya_err(err, LAYA_ERR_INTERNAL, NULL, "preset %s: %s", p->name, perr.message);
  return 0;
}

static int ensure_engine(run_ctx *c, laya_error *err) {
  if (c->engine) return 0;
  c->engine = cli_engine_new(c->a->device, (int)c->a->max_loaded, err);
  return c->engine ? 0 : -1;
}

/* {key: text} in arena */
static json_value *make_state(arena *ar, const char *key, const char *text) {
  json_value *st = arena_alloc(ar, sizeof *st);
  json_member *m = arena_alloc(ar, sizeof *m);
  if (!st || !m) return NULL;
  st->type = JSON_OBJECT;
  st->n = 1;
  st->members = m;
  m->key = key;
  m->key_len = (uint32_t)strlen(key);
  m->value = json_string(text);
  return st;
}

/* One answer object as JSON on stdout: indented for a single state, one line per state in
 * --batch mode (indent -1), so the output stays JSON Lines. */
static void print_json(const json_value *v, int indent, const char *fallback) {
  strbuf sb;
  sb_init(&sb);
  if (v) cli_dump(&sb, v, indent);
  printf("%s\n", sb.data ? sb.data : fallback);
  sb_free(&sb);
}

/* The questions (from --questions, --preset or the decide flags) and a loaded engine: what every
 * answering mode needs before its first state. */
static int begin_answering(run_ctx *c, arena *ar, const json_value **qs, const char **key, cli_call *call,
                           laya_error *err) {
  if (resolve_questions(c->a, ar, qs, key, call, err)) return -1;
  return ensure_engine(c, err);
}

static int refuse_model_dir_for_routing(void) {
  return usage_error("argument --model: a directory is for answering modes; routing picks "
                     "between named checkpoints%s%s", "", "");
}

/* What every mode sets up per call: an arena, the overrides from the flags and, for answering
 * modes, the questions and a loaded engine. */
typedef struct {
  arena ar;
  laya_error err;
  json_value store[4];
  cli_overrides ov;
  const json_value *qs;
  const char *key;
  cli_call call;
} call_ctx;

/* 0, or the exit status of a failed setup (already reported); call_end() either way. */
static int call_begin(run_ctx *c, call_ctx *k, size_t arena_size) {
  memset(k, 0, sizeof *k);
  arena_init(&k->ar, arena_size);
  fill_overrides(c->a, &k->ov, k->store);
  if (!answering(c->a)) return k->ov.model_path ? refuse_model_dir_for_routing() : 0;
  return begin_answering(c, &k->ar, &k->qs, &k->key, &k->call, &k->err) ? fail(&k->err) : 0;
}

static int call_end(call_ctx *k, int rc) {
  fflush(stdout);
  arena_free(&k->ar);
  return rc;
}

/* One answer as --json asks (JSON at `indent`, raw text if it did not parse) or as text. */
static void print_answer(const args *a, cli_call call, const json_value *rv, int indent, const char *raw) {
  if (a->json) print_json(rv, indent, raw);
  else if (!rv) return;
  else if (call == CLI_DECIDE) print_values(rv);
  else print_answers(rv);
}

static int run_one(run_ctx *c, const char *text) {
  call_ctx k;
  int rc = call_begin(c, &k, 1 << 14);
  if (rc) return call_end(&k, rc);
  if (answering(c->a)) {
    json_value *state = make_state(&k.ar, k.key, text);
    char *result = NULL;
    if (cli_engine_answer(c->engine, &c->cfg, k.call, state, k.qs, &k.ov, &result, &k.err))
      return call_end(&k, fail(&k.err));
    json_value *rv = cli_parse(result, strlen(result), &k.ar, &k.err);
    if (!rv) rc = fail(&k.err);
    else print_answer(c->a, k.call, rv, 2, result);
    free(result);
    return call_end(&k, rc);
  }
  json_value *state = make_state(&k.ar, "text", text);
  strbuf dec;
  sb_init(&dec);
  char chosen[64];
  if (router_route_ex(&c->cfg, state, NULL, k.ov.model, k.ov.task, k.ov.lang, k.ov.lang_guess, c->a->explain,
                      &dec, chosen, &k.err)) {
    rc = fail(&k.err);
  } else {
    json_value *dv = cli_parse(dec.data, dec.len, &k.ar, &k.err);
    if (c->a->json) print_json(dv, 2, dec.data);
    else print_decision(dv);
  }
  sb_free(&dec);
  return call_end(&k, rc);
}

/* A progress bar on stderr, only when stderr is a terminal. */
static void progress(size_t done, size_t total) {
  if (!isatty(STDERR_FILENO) || total == 0) return;
  int width = 30, fill = (int)(width * done / total);
  fprintf(stderr, "\r[");
  for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
  fprintf(stderr, "] %zu/%zu", done, total);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* What --sort-by-length did: the states batch per routed checkpoint, and a batch reorders only
 * when 1 < --batch-size < its state count. Said after the run, when the groups are known. */
static void sort_note(run_ctx *c, char **lines, size_t n, const char *key, const json_value *qs,
                      const cli_overrides *ov) {
  char (*names)[64] = calloc(n, 64);
  size_t *sizes = calloc(n, sizeof(size_t));
  size_t groups = 0;
  arena ar;
  arena_init(&ar, 1 << 12);
  for (size_t i = 0; names && sizes && i < n; i++) {
    char chosen[64] = "";
    if (!ov->model_path) {
      json_value *state = make_state(&ar, key, lines[i]);
      strbuf d;
      sb_init(&d);
      laya_error err = {0};
      if (router_route(&c->cfg, state, qs, ov->model, ov->task, ov->lang, ov->lang_guess, &d, chosen, &err))
        chosen[0] = 0;
      sb_free(&d);
    }
    size_t g = 0;
    while (g < groups && strcmp(names[g], chosen)) g++;
    if (g == groups) snprintf(names[groups++], 64, "%s", chosen);
    sizes[g]++;
  }
  long long bs = c->a->batch_size;
  size_t reordered = 0, smallest = 0, largest = 0;
  for (size_t g = 0; g < groups; g++) {
    if (bs > 1 && (size_t)bs < sizes[g]) reordered++;
    if (!g || sizes[g] < smallest) smallest = sizes[g];
    if (!g || sizes[g] > largest) largest = sizes[g];
  }
  if (groups && reordered < groups) {
    if (groups == 1) {
      fprintf(stderr, "note: --sort-by-length only takes effect with --batch-size N where 1 < N < %zu; "
                      "the states still go in one forward pass\n", smallest);
    } else {
      char span[64];
      if (smallest == largest) snprintf(span, sizeof span, "%zu", smallest);
      else snprintf(span, sizeof span, "%zu-%zu", smallest, largest);
      fprintf(stderr, "note: --sort-by-length groups within each checkpoint batch, not across the file: "
                      "%zu of %zu batches (%s states) could not reorder; a batch reorders only when "
                      "--batch-size is smaller than its state count, and the smallest batch holds %zu of "
                      "the file's %zu lines\n",
              groups - reordered, groups, span, smallest, n);
    }
  }
  arena_free(&ar);
  free(names);
  free(sizes);
}

static int run_batch(run_ctx *c, char **lines, size_t n) {
  args *a = c->a;
  call_ctx k;
  int rc = call_begin(c, &k, 1 << 16);
  if (rc) return call_end(&k, rc);
  if (answering(a)) {
    /* states in chunks so the progress bar moves; each chunk is one predict_batch call */
    size_t chunk = a->batch_size > 0 ? (size_t)a->batch_size * 8 : 256;
    if (chunk > n) chunk = n;
    char **results = calloc(n, sizeof(char *));
    json_value *states = arena_alloc(&k.ar, sizeof(json_value));
    if (!results || !states) {
      free(results);
      return call_end(&k, fail(&(laya_error){.code = LAYA_ERR_NOMEM, .kind = "MemoryError", .message = "out of memory"}));
    }
    for (size_t s = 0; s < n && !rc; s += chunk) {
      size_t m = n - s < chunk ? n - s : chunk;
      states->type = JSON_ARRAY;
      states->n = (uint32_t)m;
      states->items = arena_alloc(&k.ar, m * sizeof(json_value));
      for (size_t i = 0; i < m; i++) states->items[i] = *make_state(&k.ar, k.key, lines[s + i]);
      if (cli_engine_answer_batch(c->engine, &c->cfg, k.call, states, k.qs, &k.ov, results + s, &k.err)) {
        rc = fail(&k.err);
        break;
      }
      progress(s + m, n);
    }
    if (!rc && a->sort_by_length) sort_note(c, lines, n, k.key, k.qs, &k.ov);
    for (size_t i = 0; i < n && !rc; i++) {
      if (!a->json) {
        const char *line = lines[i];
        if (utf8_count(line) <= 72) printf("# %s\n", line);
        else printf("# %.*s...\n", (int)cli_utf8_prefix(line, 69), line);
      }
      print_answer(a, k.call, cli_parse(results[i], strlen(results[i]), &k.ar, &k.err), -1, results[i]);
      if (!a->json) printf("\n");
    }
    for (size_t i = 0; i < n; i++) free(results[i]);
    free(results);
    return call_end(&k, rc);
  }
  json_value empty;
  memset(&empty, 0, sizeof empty);
  empty.type = JSON_OBJECT;
  /* route every line first, so nothing is printed when one request is refused */
  char **decs = calloc(n, sizeof(char *));
  char (*models)[64] = calloc(n, 64);
  for (size_t i = 0; decs && models && i < n; i++) {
    json_value *state = make_state(&k.ar, "text", lines[i]);
    strbuf dec;
    sb_init(&dec);
    if (router_route_ex(&c->cfg, state, &empty, k.ov.model, k.ov.task, k.ov.lang, k.ov.lang_guess, a->explain,
                        &dec, models[i], &k.err)) {
      sb_free(&dec);
      rc = fail(&k.err);
      break;
    }
    decs[i] = sb_steal(&dec);
  }
  for (size_t i = 0; !rc && decs && i < n; i++) {
    if (a->json) {
      printf("%s\n", decs[i]);
    } else if (a->explain) {
      print_decision(cli_parse(decs[i], strlen(decs[i]), &k.ar, &k.err));
    } else {
      json_value *dv = cli_parse(decs[i], strlen(decs[i]), &k.ar, &k.err);
      const json_value *r = json_get(dv, "reason");
      strbuf sb;
      sb_init(&sb);
      cli_pad(&sb, models[i], 14);
      const char *line = lines[i];
      if (utf8_count(line) <= 48)
        printf("%s %s  <- %s\n", sb.data, r ? r->s : "", line);
      else
        printf("%s %s  <- %.*s...\n", sb.data, r ? r->s : "", (int)cli_utf8_prefix(line, 45), line);
      sb_free(&sb);
    }
  }
  for (size_t i = 0; decs && i < n; i++) free(decs[i]);
  free(decs);
  free(models);
  return call_end(&k, rc);
}


static int interactive(run_ctx *c) {
  printf("Laya interactive mode. Type a request and press Enter; Ctrl-D or 'quit' to exit.\n");
  int code = 0;
  char *line = NULL;
  size_t cap = 0;
  for (;;) {
    printf("laya> ");
    fflush(stdout);
    ssize_t k = getline(&line, &cap, stdin);
    if (k < 0) {
      printf("\n");
      break;
    }
    char *text = cli_strip(line);
    if (!text) break;
    strbuf low;
    sb_init(&low);
    py_lower(&low, text, strlen(text));
    bool stop = !*text || (low.data && (!strcmp(low.data, "quit") || !strcmp(low.data, "exit")));
    sb_free(&low);
    if (stop) {
      free(text);
      break;
    }
    int rc = run_one(c, text);
    if (rc) code = rc;
    free(text);
  }
  free(line);
  return code;
}

int cli_laya_main(int argc, char **argv) {
  args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) {
    free(a.text);
    return rc;
  }
  if (a.help) {
    fputs(kUsage, stdout);
    fputs(kHelp, stdout);
    free(a.text);
    return 0;
  }
  cli_use_precision(a.precision);
  if (a.version) {
    cli_print_version(stdout);
    free(a.text);
    return 0;
  }
  run_ctx c = {0};
  c.a = &a;
  router_config_init(&c.cfg, false);
  /* text: the positional words joined by one space, stripped */
  strbuf tb;
  sb_init(&tb);
  for (int i = 0; i < a.ntext; i++) {
    if (i) sb_putc(&tb, ' ');
    sb_puts(&tb, a.text[i]);
  }
  char *text = cli_strip(tb.data ? tb.data : "");
  sb_free(&tb);
  if (a.explain && answering(&a)) {
    fprintf(stderr, "laya: --explain is for routing only; omit --predict, --preset and --questions.\n");
    rc = 2;
  } else if (a.min_confidence >= 0 && !answering(&a)) {
    fprintf(stderr, "laya: --min-confidence gates answers, so it needs --predict, --preset or "
                    "--questions.\n");
    rc = 2;
  } else if ((a.window >= 0 || a.stride >= 0) && !a.long_doc) {
    fprintf(stderr, "laya: --window and --stride size the windows of --long; add --long.\n");
    rc = 2;
  } else if (a.batch) {
    if (text && *text) {
      fprintf(stderr, "laya: pass either a text or --batch FILE, not both.\n");
      rc = 2;
    } else {
      size_t len;
      char *content = cli_read_file(a.batch, &len);
      if (!content) {
        fprintf(stderr, "laya: could not read %s ([Errno %d] %s: '%s').\n", a.batch, errno,
                strerror(errno), a.batch);
        rc = 2;
      } else {
        char **lines = NULL;
        size_t n = cli_split_lines(content, len, &lines);
        free(content);
        if (!n) {
          fprintf(stderr, "laya: no requests found in %s.\n", a.batch);
          rc = 2;
        } else {
          rc = run_batch(&c, lines, n);
        }
        cli_free_lines(lines, n);
      }
    }
  } else if (!text || !*text) {
    rc = interactive(&c);
  } else {
    rc = run_one(&c, text);
  }
  free(text);
  if (c.engine) cli_engine_free(c.engine);
  router_config_free(&c.cfg);
  free(a.text);
  return rc;
}
