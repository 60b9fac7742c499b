/* cli_args.c: see cli_args.h. */
#include "cli/cli_args.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "core/pystr.h"
#include "core/strbuf.h"

static int fail(arg_result *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(r->error, sizeof r->error, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof r->error && !r->error_full && (r->error_full = malloc((size_t)n + 1))) {
    va_start(ap, fmt);
    vsnprintf(r->error_full, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* argparse takes "-5" or "-.5" as a value, since no option of ours looks like a number */
static bool looks_like_value(const char *s) {
  return s[0] != '-' || !strcmp(s, "-") || (s[1] >= '0' && s[1] <= '9') || s[1] == '.';
}

static bool in_choices(const char *const *choices, const char *v) {
  for (; *choices; choices++)
    if (!strcmp(*choices, v)) return true;
  return false;
}

/* a value as the message quotes it: Python's repr (argparse's %r) or the legacy '%s' */
#define QBUF 8800
char *cli_args_repr(const char *v) {
  strbuf sb;
  sb_init(&sb);
  py_repr_str(&sb, v, strlen(v));
  if (!sb.data) sb_puts(&sb, "''");
  return sb_steal(&sb);
}

const char *cli_args_quoted(const char *v, bool pyrepr, char *buf, size_t n) {
  if (!pyrepr) {
    snprintf(buf, n, "'%s'", v);
    return buf;
  }
  char *r = cli_args_repr(v);
  snprintf(buf, n, "%s", r ? r : "''");
  free(r);
  return buf;
}

static int bad_choice(arg_result *r, const arg_spec *o, const char *v, bool pyrepr) {
  char list[384], q[QBUF];
  size_t k = 0;
  list[0] = 0;
  for (const char *const *c = o->choices; *c && k < sizeof list; c++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", c == o->choices ? "" : ", ", *c);
  return fail(r, "argument %s: invalid choice: %s (choose from %s)", o->name, cli_args_quoted(v, pyrepr, q, sizeof q), list);
}

/* argparse mode: int() of a Python str (any spelling int() takes, of any size up to its 4,300
 * digits), saturated to the range of long long */
static bool py_int_value(const char *v, long long *out) {
  bool neg;
  char *dg = NULL;
  if (!cli_py_int_digits(v, &neg, &dg)) return false;
  bool big = strlen(dg) > 19 || (strlen(dg) == 19 && strcmp(dg, "9223372036854775807") > 0);
  *out = big ? (neg ? LLONG_MIN : LLONG_MAX) : neg ? -strtoll(dg, NULL, 10) : strtoll(dg, NULL, 10);
  free(dg);
  return true;
}

long long cli_args_int_value(const char *raw, char **canon) {
  bool neg = false;
  char *dg = NULL;
  long long v = 0;
  if (!cli_py_int_digits(raw, &neg, &dg)) neg = false;
  else py_int_value(raw, &v);
  if (canon) {
    strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "%s%s", neg ? "-" : "", dg ? dg : "0");
    *canon = sb_steal(&sb);
  }
  free(dg);
  return v;
}

bool cli_args_int_check(const char *option, const char *v, char *msg, size_t n) {
  (void)option;
  bool neg;
  char *dg = NULL;
  bool ok = cli_py_int_digits(v, &neg, &dg);
  free(dg);
  if (!ok) {
    char *q = malloc(n);
    snprintf(msg, n, "invalid int value: %s", q ? cli_args_quoted(v, true, q, n) : "");
    free(q);
  }
  return ok;
}

static int store_q(arg_result *r, const arg_spec *o, const char *v, bool pyrepr) {
  char q[QBUF];
  switch (o->kind) {
    case ARG_STR:
      *(const char **)o->dest = v;
      return 0;
    case ARG_INT:
      if (!(pyrepr ? py_int_value(v, (long long *)o->dest) : cli_parse_int(v, (long long *)o->dest)))
        return fail(r, "argument %s: invalid int value: %s", o->name, cli_args_quoted(v, pyrepr, q, sizeof q));
      return 0;
    case ARG_FLOAT:
      if (!(pyrepr ? cli_py_float(v, (double *)o->dest) : py_float_from_str(v, strlen(v), (double *)o->dest)))
        return fail(r, "argument %s: invalid float value: %s", o->name, cli_args_quoted(v, pyrepr, q, sizeof q));
      return 0;
    case ARG_CHOICE:
      if (!in_choices(o->choices, v)) return bad_choice(r, o, v, pyrepr);
      *(const char **)o->dest = v;
      return 0;
    case ARG_LIST: {
      if (o->choices && !in_choices(o->choices, v)) return bad_choice(r, o, v, pyrepr);
      arg_list *l = o->dest;
      if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        const char **items = realloc(l->items, sizeof *items * (size_t)cap);
        if (!items) return fail(r, "out of memory");
        l->items = items, l->cap = cap;
      }
      l->items[l->n++] = v;
      return 0;
    }
    case ARG_FLAG:
      break;
  }
  return fail(r, "argument %s: takes no value", o->name);
}

static int store(arg_result *r, const arg_spec *o, const char *v) { return store_q(r, o, v, false); }

int cli_args_parse(int argc, char **argv, int first, const arg_spec *specs, size_t n_specs, arg_result *r) {
  memset(r, 0, sizeof *r);
  r->positional = calloc((size_t)(argc > 0 ? argc : 1), sizeof *r->positional);
  if (!r->positional) return fail(r, "out of memory");
  bool only_positional = false;
  for (int i = first; i < argc; i++) {
    const char *arg = argv[i];
    if (only_positional || arg[0] != '-' || !strcmp(arg, "-") || !arg[1]) {
      r->positional[r->n_positional++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      only_positional = true;
      continue;
    }
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    const arg_spec *o = NULL;
    for (size_t k = 0; k < n_specs && !o; k++)
      if (strlen(specs[k].name) == nlen && !strncmp(specs[k].name, arg, nlen)) o = &specs[k];
    if (!o) {
      /* a negative number where no option is expected is a positional, as in argparse */
      if (looks_like_value(arg)) {
        r->positional[r->n_positional++] = arg;
        continue;
      }
      return fail(r, "unrecognized arguments: %s", arg);
    }
    if (o->kind == ARG_FLAG) {
      if (eq) return fail(r, "argument %s: ignored explicit argument '%s'", o->name, eq + 1);
      *(bool *)o->dest = true;
      continue;
    }
    const char *val;
    if (eq) val = eq + 1;
    else if (i + 1 < argc && looks_like_value(argv[i + 1])) val = argv[++i];
    else return fail(r, "argument %s: expected one argument", o->name);
    if (store(r, o, val)) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ argparse's own parse */

/* argparse's _negative_number_matcher: ^-\d+$|^-\d*\.\d+$ */
static bool negative_number(const char *s) {
  if (s[0] != '-') return false;
  const char *p = s + 1;
  size_t a = strspn(p, "0123456789");
  if (a && !p[a]) return true;
  if (p[a] != '.') return false;
  size_t b = strspn(p + a + 1, "0123456789");
  return b && !p[a + 1 + b];
}

enum { TOK_POS, TOK_DASHDASH, TOK_OPT, TOK_UNKNOWN };
#define OPT_HELP_SHORT (-2) /* "-h" */
#define OPT_HELP_LONG (-1)  /* "--help" */

typedef struct tok {
  int kind, opt;        /* opt: a spec index or OPT_HELP_* */
  const char *explicit; /* the text after '=' (or after "-h"), NULL when none */
} tok;

static const char *opt_name(const arg_spec *specs, int k) {
  return k == OPT_HELP_SHORT ? "-h" : k == OPT_HELP_LONG ? "--help" : specs[k].name;
}

/* the name argparse gives an option in its messages: every option string of the action (the
 * specs sharing its destination), joined by '/' ("-h/--help", "-q/--quiet") */
static const char *action_name(const arg_spec *specs, size_t n, int k, char *buf, size_t cap) {
  if (k < 0) return "-h/--help";
  size_t m = 0;
  buf[0] = 0;
  for (size_t j = 0; j < n && m < cap; j++)
    if (specs[j].dest == specs[k].dest)
      m += (size_t)snprintf(buf + m, cap - m, "%s%s", m ? "/" : "", specs[j].name);
  return buf;
}

static int exact_opt(const arg_spec *specs, size_t n, const char *s, size_t len) {
  for (int k = OPT_HELP_SHORT; k < (int)n; k++) {
    const char *nm = opt_name(specs, k);
    if (strlen(nm) == len && !strncmp(nm, s, len)) return k;
  }
  return -100;
}

/* argparse's _parse_optional: -1 with r->error set on an ambiguous prefix */
static int classify(const char *arg, const arg_spec *specs, size_t n, tok *t, arg_result *r) {
  t->explicit = NULL;
  t->kind = TOK_POS;
  if (arg[0] != '-') return 0;
  int k = exact_opt(specs, n, arg, strlen(arg));
  if (k != -100) {
    t->kind = TOK_OPT, t->opt = k;
    return 0;
  }
  if (!arg[1]) return 0;
  const char *eq = strchr(arg, '=');
  if (eq && (k = exact_opt(specs, n, arg, (size_t)(eq - arg))) != -100) {
    t->kind = TOK_OPT, t->opt = k, t->explicit = eq + 1;
    return 0;
  }
  int hits[64], nh = 0;
  const char *expl = NULL;
  if (arg[1] == '-') {
    size_t plen = eq ? (size_t)(eq - arg) : strlen(arg);
    expl = eq ? eq + 1 : NULL;
    for (k = OPT_HELP_SHORT; k < (int)n && nh < 64; k++)
      if (!strncmp(opt_name(specs, k), arg, plen)) hits[nh++] = k;
  } else {
    /* a single-dash prefix: "-h" glued to what follows ("-hx"), as argparse's short options */
    for (k = OPT_HELP_SHORT; k < (int)n && nh < 64; k++) {
      const char *nm = opt_name(specs, k);
      if (strlen(nm) == 2 && nm[1] != '-' && !strncmp(nm, arg, 2)) {
        hits[nh++] = k;
        expl = arg + 2;
      } else if (!strncmp(nm, arg, strlen(arg))) {
        hits[nh++] = k;
      }
    }
  }
  if (nh > 1) {
    strbuf list;
    sb_init(&list);
    for (int h = 0; h < nh; h++) sb_printf(&list, "%s%s", h ? ", " : "", opt_name(specs, hits[h]));
    fail(r, "ambiguous option: %s could match %s", arg, sb_cstr(&list));
    sb_free(&list);
    return -1;
  }
  if (nh == 1) {
    t->kind = TOK_OPT, t->opt = hits[0], t->explicit = expl;
    return 0;
  }
  if (negative_number(arg) || strchr(arg, ' ')) return 0;
  t->kind = TOK_UNKNOWN;
  return 0;
}

int cli_args_parse_ex(int argc, char **argv, int first, const arg_spec *specs, size_t n_specs,
                      const arg_parse_opts *po, arg_result *r) {
  if (!po || !po->argparse) return cli_args_parse(argc, argv, first, specs, n_specs, r);
  memset(r, 0, sizeof *r);
  size_t cap = (size_t)(argc > 0 ? argc : 1);
  r->positional = calloc(cap, sizeof *r->positional);
  r->extras = calloc(cap, sizeof *r->extras);
  tok *t = calloc(cap, sizeof *t);
  if (!r->positional || !r->extras || !t) {
    free(t);
    return fail(r, "out of memory");
  }
  int rc = 0;
  /* every argument is classified first, so an ambiguous prefix is refused before anything else */
  for (int i = first; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      t[i].kind = TOK_DASHDASH;
      break; /* the rest stay positionals (calloc: TOK_POS) */
    }
    if (classify(argv[i], specs, n_specs, &t[i], r)) {
      free(t);
      return -1;
    }
  }
  char q[QBUF], an[256];
  int i = first;
  bool star_done = false;
  while (i < argc && !rc) {
    if (t[i].kind == TOK_UNKNOWN) {
      r->extras[r->n_extras++] = argv[i++];
      continue;
    }
    if (t[i].kind == TOK_OPT) {
      int k = t[i].opt;
      const char *ex = t[i].explicit;
      i++;
      /* argparse's consume_optional: a single-dash flag with text glued on ("-qh", "-hh") takes the
       * next character as the next single-dash option, as long as there is one; the chain is only
       * acted on once it is all read, so "-hx" is refused, not a help */
      int chain[64], nc = 0;
      const char *val = NULL;
      for (;;) {
        bool flag = k < 0 || specs[k].kind == ARG_FLAG;
        if (!ex && !flag) {
          if (i < argc && t[i].kind == TOK_POS) val = argv[i++];
          else rc = fail(r, "argument %s: expected one argument", action_name(specs, n_specs, k, an, sizeof an));
        } else if (ex && !flag) {
          val = ex;
        } else if (ex) {
          char next[3] = {'-', ex[0], 0};
          int k2 = ex[0] && opt_name(specs, k)[1] != '-' && nc < 63 ? exact_opt(specs, n_specs, next, 2) : -100;
          if (k2 == -100) {
            rc = fail(r, "argument %s: ignored explicit argument %s", action_name(specs, n_specs, k, an, sizeof an),
                      cli_args_quoted(ex, true, q, sizeof q));
          } else {
            chain[nc++] = k;
            k = k2;
            ex = ex[1] ? ex + 1 : NULL;
            continue;
          }
        }
        chain[nc++] = k;
        break;
      }
      for (int c = 0; c < nc && !rc && !r->help; c++) {
        k = chain[c];
        if (k < 0) {
          r->help = true; /* argparse prints the help and exits here */
        } else if (specs[k].kind == ARG_FLAG) {
          *(bool *)specs[k].dest = true;
        } else {
          char msg[QBUF];
          if (po->check && !po->check(specs[k].name, val, msg, sizeof msg)) rc = fail(r, "argument %s: %s", specs[k].name, msg);
          else rc = store_q(r, &specs[k], val, true);
        }
      }
      if (r->help) break;
      continue;
    }
    if (po->subcommand) { /* argparse's subparsers action takes it (a "--" too, as the name) */
      r->positional[r->n_positional++] = argv[i];
      r->next = i + 1;
      break;
    }
    /* a run of positionals (to the end once "--" is met): the first ones fill the free slots,
     * the rest are extras; "--" is dropped where a slot takes an argument beside it */
    int j = i, na = 0;
    while (j < argc && (t[j].kind == TOK_POS || t[j].kind == TOK_DASHDASH)) na += t[j++].kind == TOK_POS;
    if (po->max_positional == ARGS_NARGS_STAR) { /* nargs='*': the first run, less its first "--" */
      bool star = !star_done, dropped = false;
      star_done = true;
      for (; i < j; i++) {
        if (star && t[i].kind == TOK_DASHDASH && !dropped) dropped = true;
        else if (star) r->positional[r->n_positional++] = argv[i];
        else r->extras[r->n_extras++] = argv[i];
      }
      continue;
    }
    int room = po->max_positional < 0 ? na : po->max_positional - r->n_positional;
    int take = na < room ? na : room, seen = 0;
    for (; i < j; i++) {
      if (t[i].kind == TOK_DASHDASH) {
        if (!(take >= 1 && seen <= take)) r->extras[r->n_extras++] = argv[i];
      } else if (seen++ < take) {
        r->positional[r->n_positional++] = argv[i];
      } else {
        r->extras[r->n_extras++] = argv[i];
      }
    }
  }
  free(t);
  return rc;
}

void cli_args_free(const arg_spec *specs, size_t n_specs, arg_result *r) {
  for (size_t k = 0; k < n_specs; k++) {
    if (specs[k].kind != ARG_LIST) continue;
    arg_list *l = specs[k].dest;
    free(l->items);
    memset(l, 0, sizeof *l);
  }
  free(r->positional);
  free(r->extras);
  free(r->error_full);
  r->error_full = NULL;
  r->positional = NULL;
  r->extras = NULL;
  r->n_positional = r->n_extras = 0;
}

int cli_args_refuse(const char *usage, const char *prog, const char *fmt, ...) {
  const char *end = strstr(usage, "\n\n");
  fwrite(usage, 1, end ? (size_t)(end - usage) + 1 : strlen(usage), stderr);
  fprintf(stderr, "%s: error: ", prog);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 2;
}

int cli_args_verdict(const char *usage, const char *prog, int perr, const arg_result *r, const char *missing) {
  if (perr) return cli_args_refuse(usage, prog, "%s", r->error_full ? r->error_full : r->error);
  if (r->help) return -1;
  if (missing && missing[0]) return cli_args_refuse(usage, prog, "the following arguments are required: %s", missing);
  if (r->n_extras) {
    strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < r->n_extras; i++) sb_printf(&sb, " %s", r->extras[i]);
    cli_args_refuse(usage, prog, "unrecognized arguments:%s", sb_cstr(&sb));
    sb_free(&sb);
    return 2;
  }
  return -1;
}
