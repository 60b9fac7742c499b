/*
 * laya_cli.c: the `laya` command itself (routing, prediction, presets, batches, the prompt).
 *
 * Flags, outputs and exit codes follow Laya 0.4.15's `laya` command so scripts written against
 * it keep working: 0 on success, 2 with "laya: <message>" on stderr for a handled error or a
 * usage error. Routing (the default mode) reads the text only and never loads a checkpoint.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_util.h"
#include "cli/predict.h"
#include "model/presets.h"
#include "model/result_json.h"
#include "model/typed.h"
#include "cli/email_file.h"
#include "core/email.h"
#include "cli/questions_file.h"
#include "core/error.h"
#include "core/pystr.h"
#include "router/router.h"
#include "core/utf8.h"
#include "cli/precision.h"
#include "core/options.h"

typedef struct args {
  char **text;
  int ntext;
  bool predict, json, sort_by_length, long_doc, help, version, explain, quiet;
  const char *model, *lang, *lang_guess, *task, *preset, *questions, *device, *batch, *schema;
  const char *precision;
  const char *state_json, *request, *batch_format, *on_error; /* input modes */
  const char *calibration, *lang_temperatures;
  long long max_len, head_max_len, batch_size, window, stride, max_loaded;
  long long shortlist_k; /* LLONG_MIN = not given */
  double min_confidence;
  const char *email, *email_state; /* --email FILE, --email-state FILE (src/cli/email_file.c) */
  long long email_max_chars;
  char model_name[64];
  bool model_auto;
} args;

static const char kUsage[] =
    "usage: laya [-h] [--version] [--predict] [--model NAME|DIR] [--lang LANG]\n"
    "            [--lang-guess CODE] [--task TASK] [--preset NAME] [--questions FILE]\n"
    "            [--schema FILE] [--long] [--window N] [--stride N] [--max-len N]\n"
    "            [--head-max-len N] [--shortlist-k K] [--min-confidence P] [--device DEV]\n"
    "            [--precision P] [--json] [--explain] [--batch FILE] [--batch-size N]\n"
    "            [--sort-by-length] [--batch-format text|state|request]\n"
    "            [--on-error fail|skip|record] [--state-json JSON|@FILE] [--request FILE|-]\n"
    "            [--email FILE] [--email-state FILE] [--email-max-chars N]\n"
    "            [--calibration FILE] [--lang-temperatures FILE|JSON] [--max-loaded N] [-q]\n"
    "            [text ...]\n"
    "       laya eval {validate,run,agreement,compare,evidence} ...\n"
    "       laya calibrate ...\n"
    "       laya tokenize ...\n"
    "       laya convert CHECKPOINT OUT\n"
    "       laya presets [list | show NAME]\n"
    "       laya env [--values]\n";

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
    "  laya --state-json '{\"subject\": ..}' ...   answer (or route) any JSON state\n"
    "  laya --request req.json                    a whole request: Laya's predict keywords\n"
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
    "  --shortlist-k K       narrow every choice question with more than K labels to the K\n"
    "                        closest to the text by embedding similarity, then answer\n"
    "                        (Laya's predict_shortlist; adds \"shortlist\" to --json output)\n"
    "  --min-confidence P    mark answers whose confidence is below P (0..1) as\n"
    "                        low-confidence; needs an answering mode\n"
    "  --device DEV          cpu, cuda, cuda:N or auto (default: LAYA_DEVICE or cpu)\n"
    "  --precision P         fp32, bf16, int8 (CPU), fp16 or fp8 (CUDA); default: LAYA_PRECISION,\n"
    "                        else fp32 on the CPU (Laya's numbers; bf16 / int8 are faster and\n"
    "                        move probabilities by up to a few hundredths)\n"
    "  --json                print JSON (JSONL in --batch mode)\n"
    "  --explain             routing only: add the detector's diagnostic (stage, reason, and\n"
    "                        the field and line that decided) to the decision\n"
    "  --batch FILE          one request per non-blank line of FILE ('-' = stdin)\n"
    "  --batch-size N        states per forward pass in --batch mode\n"
    "  --sort-by-length      with --batch-size, batch states of similar length together\n"
    "  --email FILE          answer an email file ('-' = stdin; .eml or a plain body) with the\n"
    "                        email preset (or --preset / --questions) on the state Laya's\n"
    "                        email_state builds: cleaned body, subject, from\n"
    "  --email-state FILE    print that state as JSON and exit (no model)\n"
    "  --email-max-chars N   email_state's max_chars: the cleaned body's length cap (3000)\n"
    "  --batch-format F      what a --batch line is: text (the default; the line becomes the\n"
    "                        state {field: line}), state (a JSON state per line) or request\n"
    "                        (a JSON request per line, Laya's predict keyword arguments)\n"
    "  --on-error E          a bad --batch line: fail (stop there, the default), skip (say\n"
    "                        so on stderr and go on) or record (also write an error record in\n"
    "                        its place in the output); every message names the line\n"
    "  --state-json S        the state as JSON text, or @FILE to read it ('@-' = stdin),\n"
    "                        instead of the text argument\n"
    "  --request FILE        a JSON request object ('-' = stdin): state, questions and any\n"
    "                        of predict's keywords (max_len, lang, min_confidence ...); flags\n"
    "                        fill only the keys it leaves out\n"
    "  --calibration FILE    apply a calibration written by `laya calibrate --out` (or by\n"
    "                        Laya's save_calibration) to every checkpoint this run loads\n"
    "  --lang-temperatures X per-language temperatures, a JSON file or JSON text:\n"
    "                        {\"de\": {\"temperature\": [choice, score, noul], ...}}\n"
    "  --max-loaded N        checkpoints the router keeps open at once (default 2, at most\n"
    "                        1000; the least recently used is closed first)\n"
    "  -q, --quiet           no progress line on stderr\n"
    "\n"
    "Subcommands:\n"
    "  laya eval run DATASET [--model M] [--min-accuracy F] [--max-ece F] [--json OUT]\n"
    "  laya eval validate DATASET\n"
    "  laya eval compare REPORT --baseline REPORT [--tolerance METRIC=VALUE]\n"
    "  laya eval evidence --checkpoint DIR [--report REPORT]\n"
    "  laya eval agreement REFERENCE REPEAT STUDENT\n"
    "  laya calibrate --model DIR --data FILE [--out FILE | --write-config]\n"
    "  laya tokenize --model DIR TEXT\n"
    "  laya convert CHECKPOINT OUT\n"
    "  laya env [--values]     the environment variables the library reads (types, defaults)\n"
    "  laya presets [show NAME] the --preset question sets (ours), and how to use Laya's own\n"
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

/* Laya's hint after "could not run Laya": only where the checkpoint may be missing, unreadable or
 * half downloaded, not where it is there and laya.c refuses what it holds (a config value, an
 * unsupported component: the message names it). */
static bool checkpoint_may_be_missing(const laya_error *err) {
  return err->code != LAYA_ERR_CONFIG && err->code != LAYA_ERR_UNSUPPORTED;
}

static const char checkpoint_hint[] = "Check that the checkpoint exists locally or can be downloaded from the "
                                      "Hugging Face hub (network access is needed on first use).\n";

static int fail(const laya_error *err) {
  /* Laya's CLI: a ValueError (and its SchemaError) is the caller's input; anything else means
   * Laya itself could not run (a checkpoint missing, unreadable or not downloadable) */
  bool input = !strcmp(err->kind, "ValueError") || !strcmp(err->kind, "SchemaError") ||
               !strcmp(err->kind, "TypeError") || !strcmp(err->kind, "NotImplementedError") ||
               (!err->kind[0] && (err->code == LAYA_ERR_VALUE || err->code == LAYA_ERR_TYPE));
  /* a message the library already starts with "laya: " (digest checks) is not prefixed twice */
  const char *msg = !strncmp(err->message, "laya: ", 6) ? err->message + 6 : err->message;
  if (input) {
    fprintf(stderr, "laya: %s\n", msg);
  } else {
    fprintf(stderr, "laya: could not run Laya (%s).\n", msg);
    if (checkpoint_may_be_missing(err)) fputs(checkpoint_hint, stderr);
  }
  return 2;
}

/* ---------------------------------------------------------------- argument parsing */

static const char *const kBatchFormats[] = {"text", "state", "request", NULL};
static const char *const kOnError[] = {"fail", "skip", "record", NULL};

/* The integer flags: argparse's type=int, read as Python's int() reads them. */
static const char *const kIntFlags[] = {"--max-len", "--head-max-len", "--batch-size", "--window", "--stride",
                                        "--max-loaded", "--shortlist-k", "--email-max-chars", NULL};

static bool is_int_flag(const char *option) {
  for (const char *const *f = kIntFlags; *f; f++)
    if (!strcmp(*f, option)) return true;
  return false;
}

/* --model's value as Laya's type function takes it: 'auto', a checkpoint name or alias; laya.c also
 * takes a directory or packed artifact, and a missing path is reported after the parse */
static bool model_ok(const char *v, char *msg, size_t n) {
  char *m = cli_strip(v);
  strbuf low;
  sb_init(&low);
  py_lower(&low, m ? m : "", m ? strlen(m) : 0);
  bool ok = low.data && !strcmp(low.data, "auto");
  sb_free(&low);
  free(m);
  if (ok || access(v, F_OK) == 0) return true;
  bool pathlike = v[0] == '/' || v[0] == '.' || v[0] == '~' || strchr(v, '/');
  char name[64];
  laya_error err = {0};
  if (!router_normalise_name(v, name, &err) || pathlike) return true;
  snprintf(msg, n, "%s, or 'auto'", err.message);
  return false;
}

static bool top_check_q(const char *option, const char *v, char *msg, size_t n, char *q);

/* argparse's type= checks, run as each option is consumed (so the first bad value, left to right,
 * is the one reported, before any unrecognized argument) */
static bool top_check(const char *option, const char *v, char *msg, size_t n) {
  char *q = malloc(n); /* a value is quoted whole, as far as msg holds it */
  if (!q) {
    snprintf(msg, n, "out of memory");
    return false;
  }
  bool ok = top_check_q(option, v, msg, n, q);
  free(q);
  return ok;
}

static bool top_check_q(const char *option, const char *v, char *msg, size_t n, char *q) {
  if (is_int_flag(option)) return cli_args_int_check(option, v, msg, n);
  if (!strcmp(option, "--min-confidence")) { /* Laya's own type function for this flag, with its wording */
    double d;
    if (!cli_py_float(v, &d)) {
      snprintf(msg, n, "expected a number in [0.0, 1.0], got %s", cli_args_quoted(v, true, q, n));
      return false;
    }
    if (!(d >= 0.0 && d <= 1.0)) {
      char f[32];
      py_float_repr(d, f);
      snprintf(msg, n, "min_confidence must be a float in [0.0, 1.0], got %s", f);
      return false;
    }
    return true;
  }
  if (!strcmp(option, "--preset") && !question_preset_find(v)) {
    snprintf(msg, n, "invalid choice: %s (choose from 'email', 'guard', 'moderation', 'router', 'triage')",
             cli_args_quoted(v, true, q, n));
    return false;
  }
  if (!strcmp(option, "--model")) return model_ok(v, msg, n);
  return true;
}

static int parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->max_len = a->head_max_len = a->batch_size = a->window = a->stride = -1;
  a->shortlist_k = LLONG_MIN;
  a->max_loaded = 2;
  a->min_confidence = -1;
  a->email_max_chars = EMAIL_DEFAULT_MAX_CHARS;
  const char *min_conf = NULL;
  enum { I_MAX_LEN, I_HEAD, I_BATCH, I_WINDOW, I_STRIDE, I_LOADED, I_SHORTLIST, I_EMAIL_MAX, N_INT };
  const char *raw[N_INT] = {0};
  long long *dst[N_INT] = {&a->max_len, &a->head_max_len, &a->batch_size, &a->window, &a->stride,
                           &a->max_loaded, &a->shortlist_k, &a->email_max_chars};
  /* argparse's parser: -h/--help first, then Laya's options in the order its parser adds them,
   * laya.c's own among them (an ambiguous prefix names its candidates in this order) */
  const arg_spec opts[] = {
      {"--version", ARG_FLAG, &a->version, NULL},
      {"--predict", ARG_FLAG, &a->predict, NULL},
      {"--model", ARG_STR, &a->model, NULL},
      {"--lang", ARG_STR, &a->lang, NULL},
      {"--lang-guess", ARG_STR, &a->lang_guess, NULL},
      {"--task", ARG_STR, &a->task, NULL},
      {"--preset", ARG_STR, &a->preset, NULL},
      {"--questions", ARG_STR, &a->questions, NULL},
      {"--schema", ARG_STR, &a->schema, NULL},
      {"--long", ARG_FLAG, &a->long_doc, NULL},
      {"--window", ARG_STR, &raw[I_WINDOW], NULL},
      {"--stride", ARG_STR, &raw[I_STRIDE], NULL},
      {"--max-len", ARG_STR, &raw[I_MAX_LEN], NULL},
      {"--head-max-len", ARG_STR, &raw[I_HEAD], NULL},
      {"--shortlist-k", ARG_STR, &raw[I_SHORTLIST], NULL},
      {"--min-confidence", ARG_STR, &min_conf, NULL},
      {"--device", ARG_STR, &a->device, NULL},
      {"--precision", ARG_CHOICE, &a->precision, cli_precisions},
      {"--json", ARG_FLAG, &a->json, NULL},
      {"--explain", ARG_FLAG, &a->explain, NULL},
      {"--batch", ARG_STR, &a->batch, NULL},
      {"--batch-size", ARG_STR, &raw[I_BATCH], NULL},
      {"--sort-by-length", ARG_FLAG, &a->sort_by_length, NULL},
      {"--batch-format", ARG_CHOICE, &a->batch_format, kBatchFormats},
      {"--on-error", ARG_CHOICE, &a->on_error, kOnError},
      {"--state-json", ARG_STR, &a->state_json, NULL},
      {"--request", ARG_STR, &a->request, NULL},
      {"--email", ARG_STR, &a->email, NULL},
      {"--email-state", ARG_STR, &a->email_state, NULL},
      {"--email-max-chars", ARG_STR, &raw[I_EMAIL_MAX], NULL},
      {"--calibration", ARG_STR, &a->calibration, NULL},
      {"--lang-temperatures", ARG_STR, &a->lang_temperatures, NULL},
      {"--max-loaded", ARG_STR, &raw[I_LOADED], NULL},
      {"-q", ARG_FLAG, &a->quiet, NULL},
      {"--quiet", ARG_FLAG, &a->quiet, NULL}};
  const size_t n_opts = sizeof opts / sizeof opts[0];
  const arg_parse_opts po = {true, ARGS_NARGS_STAR, top_check, false};
  arg_result r;
  int bad = cli_args_parse_ex(argc, argv, 1, opts, n_opts, &po, &r);
  a->text = (char **)r.positional; /* owned by a from here; freed with a->text */
  a->ntext = r.n_positional;
  r.positional = NULL;
  a->help = r.help;
  if (bad || (!r.help && r.n_extras)) {
    /* argparse's order: a refused value or ambiguous prefix, else the unrecognized arguments */
    fputs(kUsage, stderr);
    if (bad) {
      fprintf(stderr, "laya: error: %s\n", r.error_full ? r.error_full : r.error);
    } else {
      fputs("laya: error: unrecognized arguments:", stderr);
      for (int i = 0; i < r.n_extras; i++) fprintf(stderr, " %s", r.extras[i]);
      fputc('\n', stderr);
    }
    cli_args_free(opts, n_opts, &r);
    return 2;
  }
  cli_args_free(opts, n_opts, &r);
  if (a->help) return 0;
  char *canon[N_INT] = {0};
  for (int i = 0; i < N_INT; i++)
    if (raw[i]) *dst[i] = cli_args_int_value(raw[i], &canon[i]);
  int rc = 0;
  if (raw[I_SHORTLIST] && a->shortlist_k < 1)
    rc = usage_error("argument --shortlist-k: k must be a positive integer, got %s%s", canon[I_SHORTLIST], "");
  else if (raw[I_SHORTLIST] && (a->long_doc || a->schema))
    rc = usage_error("argument --shortlist-k: shortlists choice questions; not with --long or --schema%s%s", "", "");
  else if (raw[I_LOADED] && a->max_loaded < 1) /* laya.c's own flag: 0 or less would keep nothing open */
    rc = usage_error("argument --max-loaded: must be a positive integer, got %s%s", canon[I_LOADED], "");
  if (a->max_loaded > 1000) a->max_loaded = 1000; /* the Router's own cap (laya_router_open's max_loaded) */
  /* the C API refuses a negative budget; say so here instead of dropping the flag */
  const int budgets[] = {I_MAX_LEN, I_HEAD, I_WINDOW, I_STRIDE, I_BATCH};
  const char *budget_flags[] = {"--max-len", "--head-max-len", "--window", "--stride", "--batch-size"};
  for (size_t i = 0; !rc && i < sizeof budgets / sizeof budgets[0]; i++)
    if (raw[budgets[i]] && *dst[budgets[i]] < 0)
      rc = usage_error("argument %s: must be a non-negative integer, got %s", budget_flags[i], canon[budgets[i]]);
  for (int i = 0; i < N_INT; i++) free(canon[i]);
  if (rc) return rc;
  if (min_conf) cli_py_float(min_conf, &a->min_confidence); /* top_check passed it */
  if (a->email && !a->preset && !a->questions && !a->schema) a->preset = "email";
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
      /* a path (as Laya tells one from a Hub id) that is not there is a missing directory */
      bool pathlike = a->model[0] == '/' || a->model[0] == '.' || a->model[0] == '~' || strchr(a->model, '/');
      if (pathlike && router_normalise_name(a->model, a->model_name, &err)) {
        strbuf q;
        sb_init(&q);
        py_repr_str(&q, a->model, strlen(a->model));
        fprintf(stderr, "laya: argument --model: local model path not found: %s (no such directory or "
                        "file; a checkpoint name is one of english, multilingual, typed-decisions or an "
                        "alias)\n", q.data);
        sb_free(&q);
        return 2;
      }
      if (router_normalise_name(a->model, a->model_name, &err))
        return usage_error("argument --model: %s, or 'auto'%s", err.message, "");
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- output */

/* A RouteDecision as routing prints it: text from its facts, or --json (indent=2) restyled from
 * the text the router wrote; never read back. */
static void print_route(const char *decision, const char *model, router_facts *f, bool json) {
  strbuf sb;
  sb_init(&sb);
  if (json) {
    strbuf st;
    sb_init(&st);
    rj w;
    rj_init(&w, &st, &RJ_INDENT2);
    rj_raw_styled(&w, decision);
    cli_unascii(&sb, sb_cstr(&st));
    sb_putc(&sb, '\n');
    sb_free(&st);
  } else {
    cli_text_decision(&sb, model, sb_cstr(&f->reason), decision + f->detection_at, f->detection_len);
  }
  fputs(sb_cstr(&sb), stdout);
  sb_free(&sb);
}

/* ---------------------------------------------------------------- modes */

typedef struct run_ctx {
  args *a;
  router_config cfg;
  cli_engine *engine;      /* created on first answering call */
  char *lang_temps_json;   /* --lang-temperatures as JSON text */
} run_ctx;

static bool answering(const args *a) {
  return a->predict || a->preset || a->questions || a->schema || a->long_doc || a->request ||
         (a->batch_format && !strcmp(a->batch_format, "request"));
}

/* Requests carry their own questions: then the flags add none unless one names a set. */
static bool requests_in(const args *a) {
  return a->request || (a->batch && a->batch_format && !strcmp(a->batch_format, "request"));
}

static void fill_overrides(const run_ctx *c, cli_overrides *ov, json_value *store) {
  const args *a = c->a;
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
  ov->calibration = a->calibration;
  ov->lang_temperatures = c->lang_temps_json;
  ov->shortlist_k = a->shortlist_k > 0 ? a->shortlist_k : -1;
  /* --json prints a result indented, or in --batch one a line (JSON Lines) */
  ov->layout = !a->json ? CLI_LAYOUT_TEXT : a->batch ? CLI_LAYOUT_JSONL : CLI_LAYOUT_JSON;
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
  *key = "request";
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
    *call = CLI_DECIDE;
    return 0;
  }
  if (requests_in(a) && !a->preset && !a->predict) {
    *qs = NULL; /* each request names its questions */
    return 0;
  }
  const question_preset *p = question_preset_find(a->preset ? a->preset : "router");
  laya_error perr = {0};
  *qs = cli_parse(p->questions, strlen(p->questions), ar, &perr);
  *key = p->state_key;
  if (!*qs) return laya_err(err, LAYA_ERR_INTERNAL, NULL, "preset %s: %s", p->name, perr.message);
  return 0;
}

static int ensure_engine(run_ctx *c, const cli_overrides *ov, laya_error *err) {
  if (c->engine) return 0;
  c->engine = cli_engine_new(c->a->device, (int)c->a->max_loaded, err);
  if (c->engine) cli_engine_set_load_options(c->engine, ov);
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
  fill_overrides(c, &k->ov, k->store);
  if (!answering(c->a)) return k->ov.model_path ? refuse_model_dir_for_routing() : 0;
  if (resolve_questions(c->a, &k->ar, &k->qs, &k->key, &k->call, &k->err)) return fail(&k->err);
  return ensure_engine(c, &k->ov, &k->err) ? fail(&k->err) : 0;
}

static int call_end(call_ctx *k, int rc) {
  fflush(stdout);
  arena_free(&k->ar);
  return rc;
}

/* ---------------------------------------------------------------- inputs */

/* What one input is, parsed once: a state or a request value (in arena ar). 0, or an input
 * error in err (kind "ValueError": the caller's input). `what` names the input in messages. */
static int parse_input(const char *text, size_t len, bool request, const char *what, arena *ar, cli_item *it,
                       laya_error *err) {
  memset(it, 0, sizeof *it);
  long bad = utf8_first_invalid(text, len);
  if (bad >= 0)
    return laya_err(err, LAYA_ERR_VALUE, "ValueError", "%s is not valid UTF-8: byte 0x%02x at byte offset %ld",
                    what, (unsigned char)text[bad], bad);
  laya_error perr = {0};
  json_value *v = cli_parse(text, len, ar, &perr);
  if (!v) return laya_err(err, LAYA_ERR_VALUE, "ValueError", "%s is not valid JSON: %s", what, perr.message);
  if (request) {
    if (v->type != JSON_OBJECT)
      return laya_err(err, LAYA_ERR_TYPE, "TypeError",
                      "%s must be a JSON object of predict's keyword arguments (state, questions, ...), got %s",
                      what, json_py_type(v));
    it->request = v;
  } else {
    it->state = v;
  }
  return 0;
}

/* --state-json TEXT|@FILE or --request FILE|-: read and parse; 0 or the exit status. */
static int single_input(const args *a, arena *ar, cli_item *it) {
  laya_error err = {0};
  const char *spec = a->request ? a->request : a->state_json;
  bool from_file = a->request || spec[0] == '@';
  const char *path = a->request ? spec : spec + 1;
  char what[600];
  size_t len = 0;
  char *owned = NULL;
  const char *text = spec;
  if (from_file) {
    owned = cli_read_file(path, &len);
    if (!owned) {
      fprintf(stderr, "laya: could not read %s ([Errno %d] %s: '%s').\n", path, errno, strerror(errno), path);
      return 2;
    }
    text = owned;
    snprintf(what, sizeof what, "%s %s", a->request ? "--request" : "--state-json", strcmp(path, "-") ? path : "(stdin)");
  } else {
    len = strlen(spec);
    snprintf(what, sizeof what, "--state-json");
  }
  /* the text is copied into the arena: string values point into it */
  char *keep = arena_alloc(ar, len + 1);
  if (keep) memcpy(keep, text, len), keep[len] = 0;
  free(owned);
  if (!keep) return fail(&(laya_error){.code = LAYA_ERR_NOMEM, .kind = "MemoryError", .message = "out of memory"});
  if (parse_input(keep, len, a->request != NULL, what, ar, it, &err)) return fail(&err);
  return 0;
}

/* The state routing reads for an input (a request's own "state"). */
static const json_value *routed_state(const cli_item *it) {
  if (it->state) return it->state;
  return it->request ? json_get(it->request, "state") : NULL;
}

/* --long on one input: its windows' progress line (cli_progress: a TTY on stderr, no --quiet);
 * nothing for a state answered in one window. */
static void long_progress(void *user, long done, long total) {
  cli_progress *p = user;
  if (total <= 1) return;
  p->total = (size_t)total;
  cli_progress_update(p, (size_t)done);
}

static int run_one(run_ctx *c, const char *text) {
  call_ctx k;
  int rc = call_begin(c, &k, 1 << 14);
  if (rc) return call_end(&k, rc);
  cli_item it = {0};
  if (c->a->state_json || c->a->request) {
    if ((rc = single_input(c->a, &k.ar, &it))) return call_end(&k, rc);
  } else {
    long bad = utf8_first_invalid(text, strlen(text));
    if (bad >= 0) {
      laya_err(&k.err, LAYA_ERR_VALUE, "ValueError", "the text is not valid UTF-8: byte 0x%02x at byte offset %ld",
               (unsigned char)text[bad], bad);
      return call_end(&k, fail(&k.err));
    }
    it.state = make_state(&k.ar, answering(c->a) ? k.key : "text", text);
  }
  if (answering(c->a)) {
    char *result = NULL;
    cli_progress prog;
    engine_progress windows = {long_progress, &prog};
    if (k.call == CLI_PREDICT_LONG) {
      cli_progress_begin(&prog, 0, "windows", c->a->quiet);
      k.ov.progress = &windows;
    }
    rc = cli_engine_answer_item(c->engine, k.call, &it, k.qs, &k.ov, &result, &k.err);
    k.ov.progress = NULL;
    if (k.call == CLI_PREDICT_LONG && prog.done > 0) cli_progress_end(&prog);
    if (rc) return call_end(&k, fail(&k.err));
    fputs(result, stdout);
    free(result);
    return call_end(&k, rc);
  }
  const json_value *state = routed_state(&it);
  if (!state) {
    laya_value_error(&k.err, "--request has no 'state' to route");
    return call_end(&k, fail(&k.err));
  }
  strbuf dec;
  sb_init(&dec);
  char chosen[64];
  router_facts f;
  sb_init(&f.reason);
  if (router_route_facts(&c->cfg, state, NULL, k.ov.model, k.ov.task, k.ov.lang, k.ov.lang_guess, c->a->explain,
                         &dec, chosen, c->a->json ? NULL : &f, &k.err))
    rc = fail(&k.err);
  else
    print_route(sb_cstr(&dec), chosen, &f, c->a->json);
  sb_free(&f.reason);
  sb_free(&dec);
  return call_end(&k, rc);
}

/* ---------------------------------------------------------------- streaming batches */

/* What --sort-by-length did: the states batch per routed checkpoint, and a batch reorders only
 * when 1 < --batch-size < its state count. Counted while streaming, said after the run. */
typedef struct sort_groups {
  char (*names)[64];
  size_t *sizes;
  size_t n, cap, lines;
} sort_groups;

static void sort_count(run_ctx *c, sort_groups *g, const json_value *state, const json_value *qs,
                       const cli_overrides *ov) {
  char chosen[64] = "";
  g->lines++;
  if (!ov->model_path && state) {
    strbuf d;
    sb_init(&d);
    laya_error err = {0};
    if (router_route(&c->cfg, state, qs, ov->model, ov->task, ov->lang, ov->lang_guess, &d, chosen, &err))
      chosen[0] = 0;
    sb_free(&d);
  }
  size_t i = 0;
  while (i < g->n && strcmp(g->names[i], chosen)) i++;
  if (i == g->n) {
    if (g->n == g->cap) {
      size_t cap = g->cap ? g->cap * 2 : 8;
      void *nn = realloc(g->names, cap * 64), *ns = realloc(g->sizes, cap * sizeof(size_t));
      if (nn) g->names = nn;
      if (ns) g->sizes = ns;
      if (!nn || !ns) return;
      g->cap = cap;
    }
    snprintf(g->names[g->n], 64, "%s", chosen);
    g->sizes[g->n++] = 0;
  }
  g->sizes[i]++;
}

static void sort_note(const sort_groups *g, long long bs) {
  size_t reordered = 0, smallest = 0, largest = 0;
  for (size_t i = 0; i < g->n; i++) {
    if (bs > 1 && (size_t)bs < g->sizes[i]) reordered++;
    if (!i || g->sizes[i] < smallest) smallest = g->sizes[i];
    if (!i || g->sizes[i] > largest) largest = g->sizes[i];
  }
  if (!g->n || reordered == g->n) return;
  if (g->n == 1) {
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
            g->n - reordered, g->n, span, smallest, g->lines);
  }
}

/* One input of a chunk: its line, the text shown in text output, and what it parsed to (or
 * why it did not). */
typedef struct entry {
  size_t line;
  const char *text;  /* text format: the request text; else the raw line */
  cli_item item;
  char *error;       /* malloc'd message; NULL = parsed */
  char kind[32];
} entry;

typedef struct stream {
  run_ctx *c;
  call_ctx *k;
  const char *name;
  int on_error;        /* 0 fail, 1 skip, 2 record */
  int format;          /* 0 text, 1 state, 2 request */
  size_t done, failed;
  cli_progress prog;
  sort_groups groups;
  int rc;              /* 2 once a failure stops the run */
} stream;

static void print_text_header(const char *line) {
  if (utf8_count(line) <= 72) printf("# %s\n", line);
  else printf("# %.*s...\n", (int)cli_utf8_prefix(line, 69), line);
}

/* A bad line, as --on-error says. Returns true when the run stops. */
static bool line_failed(stream *s, const entry *e, const char *kind, const char *msg) {
  s->failed++;
  if (s->on_error == 0) {
    fflush(stdout);
    fprintf(stderr, "laya: %s line %zu: %s\n", s->name, e->line, msg);
    s->rc = 2;
    return true;
  }
  fprintf(stderr, "laya: %s line %zu: %s (%s)\n", s->name, e->line, msg, s->on_error == 1 ? "skipped" : "recorded");
  if (s->on_error == 2) {
    if (s->c->a->json) {
      strbuf sb;
      sb_init(&sb);
      sb_printf(&sb, "{\"line\": %zu, \"error\": {\"type\": ", e->line);
      const char *t = kind && *kind ? kind : "Error";
      json_dump_string(&sb, t, strlen(t), false);
      sb_puts(&sb, ", \"message\": ");
      json_dump_string(&sb, msg, strlen(msg), false);
      sb_puts(&sb, "}}");
      strbuf u;
      sb_init(&u);
      cli_unascii(&u, sb.data);
      printf("%s\n", u.data);
      sb_free(&u);
      sb_free(&sb);
    } else {
      print_text_header(e->text);
      printf("error: %s\n\n", msg);
    }
  }
  return false;
}

/* One result, already laid out (ov->layout): JSON Lines as is; text under its line's header. */
static void print_result(stream *s, const entry *e, const char *result) {
  if (s->c->a->json) {
    fputs(result, stdout);
    return;
  }
  print_text_header(e->text);
  fputs(result, stdout);
  printf("\n");
}

static void route_print(stream *s, const entry *e, const char *dec, const char *model, router_facts *f) {
  const args *a = s->c->a;
  if (a->json) {
    strbuf u;
    sb_init(&u);
    cli_unascii(&u, dec);
    printf("%s\n", u.data);
    sb_free(&u);
    return;
  }
  if (a->explain) {
    print_route(dec, model, f, false);
  } else {
    const char *r = sb_cstr(&f->reason);
    strbuf sb;
    sb_init(&sb);
    cli_pad(&sb, model, 14);
    const char *line = e->text;
    if (utf8_count(line) <= 48) printf("%s %s  <- %s\n", sb.data, r, line);
    else printf("%s %s  <- %.*s...\n", sb.data, r, (int)cli_utf8_prefix(line, 45), line);
    sb_free(&sb);
  }
}

/* Answer or route one chunk and write its lines, in input order. */
static void run_chunk(stream *s, entry *es, size_t n) {
  run_ctx *c = s->c;
  call_ctx *k = s->k;
  if (!answering(c->a)) {
    json_value empty = {.type = JSON_OBJECT};
    for (size_t i = 0; i < n && !s->rc; i++) {
      entry *e = &es[i];
      if (e->error) {
        if (line_failed(s, e, e->kind, e->error)) return;
        continue;
      }
      const json_value *state = routed_state(&e->item);
      strbuf dec;
      sb_init(&dec);
      char model[64] = "";
      router_facts f;
      sb_init(&f.reason);
      laya_error err = {0};
      if (!state) {
        laya_value_error(&err, "the request has no 'state' to route");
      } else if (!router_route_facts(&c->cfg, state, &empty, k->ov.model, k->ov.task, k->ov.lang,
                                     k->ov.lang_guess, c->a->explain, &dec, model, c->a->json ? NULL : &f,
                                     &err)) { /* --json prints the decision's text: no facts */
        route_print(s, e, sb_cstr(&dec), model, &f);
        sb_free(&f.reason);
        sb_free(&dec);
        continue;
      }
      sb_free(&f.reason);
      sb_free(&dec);
      if (line_failed(s, e, err.kind, err.message)) return;
    }
    return;
  }
  cli_item *items = malloc(sizeof *items * (n ? n : 1));
  char **results = calloc(n ? n : 1, sizeof *results);
  size_t *pos = malloc(sizeof *pos * (n ? n : 1));
  if (!items || !results || !pos) {
    free(items), free(results), free(pos);
    s->rc = fail(&(laya_error){.code = LAYA_ERR_NOMEM, .kind = "MemoryError", .message = "out of memory"});
    return;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!es[i].error) {
      items[m] = es[i].item;
      pos[m++] = i;
      if (c->a->sort_by_length) sort_count(c, &s->groups, routed_state(&es[i].item), k->qs, &k->ov);
    }
  laya_error err = {0};
  bool together = m > 0 && !cli_engine_answer_items(c->engine, k->call, items, m, k->qs, &k->ov, results, &err);
  /* a failed shared pass: each input on its own, to answer the good ones and name the bad */
  size_t j = 0;
  for (size_t i = 0; i < n && !s->rc; i++) {
    entry *e = &es[i];
    if (e->error) {
      if (line_failed(s, e, e->kind, e->error)) break;
      continue;
    }
    char *res = together ? results[j] : NULL;
    if (together) results[j] = NULL;
    j++;
    laya_error one = {0};
    if (!res && cli_engine_answer_item(c->engine, k->call, &e->item, k->qs, &k->ov, &res, &one)) {
      if (s->on_error == 0 && strcmp(one.kind, "ValueError") && strcmp(one.kind, "TypeError") &&
          strcmp(one.kind, "SchemaError") && one.code != LAYA_ERR_VALUE && one.code != LAYA_ERR_TYPE) {
        /* not the line's fault: the checkpoint could not load */
        fflush(stdout);
        const char *msg = !strncmp(one.message, "laya: ", 6) ? one.message + 6 : one.message;
        fprintf(stderr, "laya: %s line %zu: could not run Laya (%s).\n", s->name, e->line, msg);
        if (checkpoint_may_be_missing(&one)) fputs(checkpoint_hint, stderr);
        s->rc = 2;
        break;
      }
      if (line_failed(s, e, one.kind, one.message)) break;
      continue;
    }
    print_result(s, e, res);
    free(res);
  }
  fflush(stdout);
  for (size_t i = 0; i < m; i++) free(results[i]);
  free(items), free(results), free(pos);
}

/* Lines of a regular file, counted ahead for the progress line's total (0 = unknown). */
static size_t count_lines(const char *path) {
  if (!strcmp(path, "-")) return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char buf[1 << 16];
  size_t k, n = 0, last = '\n';
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) {
    for (size_t i = 0; i < k; i++) n += buf[i] == '\n';
    last = (unsigned char)buf[k - 1];
  }
  fclose(f);
  return n + (last != '\n');
}

static int run_stream(run_ctx *c, FILE *in) {
  args *a = c->a;
  call_ctx k;
  int rc = call_begin(c, &k, 1 << 12);
  if (rc) return call_end(&k, rc);
  stream s = {0};
  s.c = c;
  s.k = &k;
  s.name = strcmp(a->batch, "-") ? a->batch : "(stdin)";
  s.on_error = !a->on_error || !strcmp(a->on_error, "fail") ? 0 : !strcmp(a->on_error, "skip") ? 1 : 2;
  s.format = !a->batch_format || !strcmp(a->batch_format, "text") ? 0 : !strcmp(a->batch_format, "state") ? 1 : 2;
  bool tty = isatty(STDERR_FILENO) && !a->quiet;
  cli_progress_begin(&s.prog, tty ? count_lines(a->batch) : 0, "lines", a->quiet);
  /* a chunk is one predict_batch call: --batch-size passes of it, and its lines printed when done */
  size_t chunk = a->batch_size > 0 ? (size_t)a->batch_size * 8 : 256;
  if (chunk > 4096) chunk = 4096;
  entry *es = calloc(chunk, sizeof *es);
  arena ca; /* the chunk's lines and values, freed after each chunk */
  arena_init(&ca, 1 << 16);
  size_t n = 0, line_no = 0, inputs = 0;
  long long offset = 0;
  char *buf = NULL;
  size_t cap = 0;
  ssize_t got;
  if (!es) s.rc = fail(&(laya_error){.code = LAYA_ERR_NOMEM, .kind = "MemoryError", .message = "out of memory"});
  while (!s.rc && (got = getline(&buf, &cap, in)) >= 0) {
    line_no++;
    size_t len = (size_t)got;
    long long line_off = offset;
    offset += got;
    if (len && buf[len - 1] == '\n') len--;
    long bad = utf8_first_invalid(buf, len);
    char **parts = NULL;
    size_t np = 0;
    if (bad >= 0) {
      entry *e = &es[n++];
      memset(e, 0, sizeof *e);
      e->line = line_no;
      e->text = "(invalid UTF-8)";
      snprintf(e->kind, sizeof e->kind, "ValueError");
      strbuf m;
      sb_init(&m);
      sb_printf(&m, "not valid UTF-8: byte 0x%02x at byte offset %lld of the file (column %ld of the line)",
                (unsigned char)buf[bad], line_off + bad, bad + 1);
      e->error = sb_steal(&m);
    } else if (s.format == 0) {
      np = cli_split_lines(buf, len, &parts); /* str.splitlines() breaks inside the line too */
    } else {
      size_t a0 = 0, ml = 0;
      py_strip(buf, len, &a0, &ml);
      if (ml) {
        parts = malloc(sizeof *parts);
        if (parts && (parts[0] = malloc(ml + 1))) {
          memcpy(parts[0], buf + a0, ml);
          parts[0][ml] = 0;
          np = 1;
        }
      }
    }
    for (size_t p = 0; p < np; p++) {
      if (n == chunk) {
        run_chunk(&s, es, n);
        for (size_t i = 0; i < n; i++) free(es[i].error);
        s.done += n;
        cli_progress_update(&s.prog, line_no - 1);
        arena_reset(&ca);
        n = 0;
        if (s.rc) break;
      }
      size_t l = strlen(parts[p]);
      char *t = arena_alloc(&ca, l + 1);
      entry *e = &es[n++];
      memset(e, 0, sizeof *e);
      e->line = line_no;
      if (!t) {
        e->text = "";
        e->error = strdup("out of memory");
        continue;
      }
      memcpy(t, parts[p], l + 1);
      e->text = t;
      if (s.format == 0) {
        e->item.state = make_state(&ca, answering(a) ? k.key : "text", t);
      } else {
        laya_error perr = {0};
        if (parse_input(t, l, s.format == 2, s.format == 2 ? "the request" : "the state", &ca, &e->item, &perr)) {
          e->error = strdup(perr.message);
          snprintf(e->kind, sizeof e->kind, "%s", perr.kind);
        }
      }
    }
    inputs += np + (bad >= 0);
    cli_free_lines(parts, np);
    if (n == chunk && !s.rc) {
      run_chunk(&s, es, n);
      for (size_t i = 0; i < n; i++) free(es[i].error);
      s.done += n;
      cli_progress_update(&s.prog, line_no);
      arena_reset(&ca);
      n = 0;
    }
  }
  if (!s.rc && n) run_chunk(&s, es, n);
  for (size_t i = 0; i < n; i++) free(es[i].error);
  cli_progress_update(&s.prog, line_no);
  if (s.prog.total == 0) s.prog.total = 0;
  cli_progress_end(&s.prog);
  free(buf);
  free(es);
  arena_free(&ca);
  if (ferror(in) && !s.rc) {
    fprintf(stderr, "laya: could not read %s (%s).\n", a->batch, strerror(errno));
    s.rc = 2;
  }
  if (!s.rc && inputs == 0) {
    fprintf(stderr, "laya: no requests found in %s.\n", a->batch);
    s.rc = 2;
  }
  if (!s.rc && a->sort_by_length && answering(a)) sort_note(&s.groups, a->batch_size);
  if (!s.rc && s.failed)
    fprintf(stderr, "laya: %zu of %zu lines of %s failed (%s)\n", s.failed, inputs, s.name,
            s.on_error == 1 ? "skipped" : "recorded");
  free(s.groups.names);
  free(s.groups.sizes);
  return call_end(&k, s.rc);
}

/* --lang-temperatures FILE|JSON as JSON text (c->lang_temps_json); 0 or the exit status. */
static int load_lang_temps(run_ctx *c) {
  const char *v = c->a->lang_temperatures;
  if (!v) return 0;
  size_t a0 = 0, ml = 0;
  py_strip(v, strlen(v), &a0, &ml);
  char *text;
  size_t len;
  if (ml && v[a0] == '{') {
    text = strdup(v);
    len = strlen(v);
  } else {
    text = cli_read_file(v, &len);
    if (!text) {
      fprintf(stderr, "laya: could not read --lang-temperatures %s ([Errno %d] %s: '%s').\n", v, errno,
              strerror(errno), v);
      return 2;
    }
  }
  arena ar;
  arena_init(&ar, 1 << 12);
  laya_error err = {0};
  json_value *j = text ? cli_parse(text, len, &ar, &err) : NULL;
  int rc = 0;
  if (!j) {
    fprintf(stderr, "laya: --lang-temperatures is not valid JSON: %s\n", err.message);
    rc = 2;
  } else if (j->type != JSON_OBJECT) {
    fprintf(stderr, "laya: --lang-temperatures must be a JSON object {lang: {\"temperature\": [...]}}, got %s\n",
            json_py_type(j));
    rc = 2;
  } else {
    c->lang_temps_json = text;
    text = NULL;
  }
  free(text);
  arena_free(&ar);
  return rc;
}

/* --email / --email-state: the state email_state builds from the file, printed or answered. */
static int run_email(run_ctx *c) {
  const char *path = c->a->email_state ? c->a->email_state : c->a->email;
  size_t len;
  char *content = cli_read_file(path, &len);
  if (!content) {
    fprintf(stderr, "laya: could not read %s ([Errno %d] %s: '%s').\n", path, errno, strerror(errno), path);
    return 2;
  }
  arena sa; /* the state's strings */
  arena_init(&sa, 1 << 14);
  json_value state;
  laya_error err = {0};
  int rc = cli_email_file_state(content, len, (int64_t)c->a->email_max_chars, strcmp(path, "-") ? path : "<stdin>",
                                &sa, &state, &err);
  free(content);
  if (rc) {
    arena_free(&sa);
    return fail(&err);
  }
  if (c->a->email_state) {
    strbuf st;
    sb_init(&st);
    email_state_write(&st, &state);
    printf("%s\n", sb_cstr(&st));
    sb_free(&st);
    arena_free(&sa);
    return 0;
  }
  call_ctx k;
  rc = call_begin(c, &k, 1 << 14);
  if (!rc) {
    char *result = NULL;
    if (cli_engine_answer(c->engine, &c->cfg, k.call, &state, k.qs, &k.ov, &result, &k.err)) {
      rc = fail(&k.err);
    } else {
      fputs(result, stdout);
    }
    free(result);
  }
  arena_free(&sa);
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

/* ---------------------------------------------------------------- the four stages of main */

/* What the run does, once the flags are parsed and checked. */
typedef enum cli_mode { MODE_EMAIL, MODE_BATCH, MODE_SINGLE_INPUT, MODE_PROMPT, MODE_TEXT } cli_mode;

/* print: --help (usage, the flags, then the library's environment from core/options.c's table) */
static void print_help(FILE *f) {
  fputs(kUsage, f);
  fputs(kHelp, f);
  fputs("\nEnvironment (the library's; `laya env --values` lists them all with their values now):\n", f);
  /* the CUDA backend's own switches (LAYA_CUDA_WARMUP, LAYA_CUDA_GRAPHS) are validated options
   * like the rest; its kernel studies and test hooks are listed by `laya env` only */
  laya_env_help(f, LAYA_OPT_TEST | LAYA_OPT_RESEARCH);
}

static int refuse(const char *msg) {
  fputs(msg, stderr);
  return 2;
}

/* validate: the flags against each other and the input, in this order; the --lang-temperatures
 * value is read here (its errors come after the flag conflicts above it, as always). 0 and *mode,
 * or the exit status (reported). */
static int validate_args(run_ctx *c, const char *text, cli_mode *mode) {
  const args *a = c->a;
  bool has_text = text && *text;
  if (a->explain && answering(a))
    return refuse("laya: --explain is for routing only; omit --predict, --preset and --questions.\n");
  if (a->min_confidence >= 0 && !answering(a))
    return refuse("laya: --min-confidence gates answers, so it needs --predict, --preset or --questions.\n");
  if ((a->window >= 0 || a->stride >= 0) && !a->long_doc)
    return refuse("laya: --window and --stride size the windows of --long; add --long.\n");
  if (a->state_json && a->request) return refuse("laya: --state-json and --request are two inputs; pass one.\n");
  if ((a->state_json || a->request) && (has_text || a->batch))
    return refuse("laya: pass one input: a text, --state-json, --request or --batch FILE.\n");
  if ((a->batch_format || a->on_error) && !a->batch)
    return refuse("laya: --batch-format and --on-error read a --batch FILE; add --batch.\n");
  int rc = load_lang_temps(c);
  if (rc) return rc;
  if (a->email || a->email_state) {
    if (has_text || a->batch || a->state_json || a->request || (a->email && a->email_state))
      return refuse("laya: --email / --email-state read the email from FILE; pass no text, --batch, "
                    "--state-json, --request or the other one.\n");
    *mode = MODE_EMAIL;
  } else if (a->batch) {
    if (has_text) return refuse("laya: pass either a text or --batch FILE, not both.\n");
    *mode = MODE_BATCH;
  } else if (a->state_json || a->request) {
    *mode = MODE_SINGLE_INPUT;
  } else {
    *mode = has_text ? MODE_TEXT : MODE_PROMPT;
  }
  return 0;
}

/* run: the mode; each prints its own results (the print_* functions above). */
static int run_mode(run_ctx *c, cli_mode mode, const char *text) {
  switch (mode) {
  case MODE_EMAIL:
    return run_email(c);
  case MODE_BATCH: {
    const char *path = c->a->batch;
    FILE *in = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!in) {
      fprintf(stderr, "laya: could not read %s ([Errno %d] %s: '%s').\n", path, errno, strerror(errno), path);
      return 2;
    }
    int rc = run_stream(c, in);
    if (in != stdin) fclose(in);
    return rc;
  }
  case MODE_SINGLE_INPUT:
    return run_one(c, "");
  case MODE_PROMPT:
    return interactive(c);
  case MODE_TEXT:
    return run_one(c, text);
  }
  return 2;
}

/* The positional words joined by one space, stripped (malloc'd). */
static char *joined_text(const args *a) {
  strbuf tb;
  sb_init(&tb);
  for (int i = 0; i < a->ntext; i++) {
    if (i) sb_putc(&tb, ' ');
    sb_puts(&tb, a->text[i]);
  }
  char *text = cli_strip(tb.data ? tb.data : "");
  sb_free(&tb);
  return text;
}

static int validate_and_run(args *a) {
  run_ctx c = {0};
  c.a = a;
  router_config_init(&c.cfg, false);
  char *text = joined_text(a);
  cli_mode mode = MODE_PROMPT;
  int rc = validate_args(&c, text, &mode);
  if (!rc) rc = run_mode(&c, mode, text);
  free(text);
  if (c.engine) cli_engine_free(c.engine);
  free(c.lang_temps_json);
  router_config_free(&c.cfg);
  return rc;
}

/* parse -> (--help / --version: print) -> validate -> run (which prints). */
int cli_laya_main(int argc, char **argv) {
  args a;
  int rc = parse_args(argc, argv, &a);
  if (!rc && a.help) {
    print_help(stdout);
  } else if (!rc) {
    cli_use_precision(a.precision);
    if (a.version) cli_print_version(stdout);
    else rc = validate_and_run(&a);
  }
  free(a.text);
  return rc;
}
