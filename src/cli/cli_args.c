/* cli_args.c: see cli_args.h. */
#include "cli/cli_args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "core/pystr.h"

static int fail(arg_result *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->error, sizeof r->error, fmt, ap);
  va_end(ap);
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

static int bad_choice(arg_result *r, const arg_spec *o, const char *v) {
  char list[384];
  size_t k = 0;
  list[0] = 0;
  for (const char *const *c = o->choices; *c && k < sizeof list; c++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s'%s'", c == o->choices ? "" : ", ", *c);
  return fail(r, "argument %s: invalid choice: '%s' (choose from %s)", o->name, v, list);
}

static int store(arg_result *r, const arg_spec *o, const char *v) {
  switch (o->kind) {
    case ARG_STR:
      *(const char **)o->dest = v;
      return 0;
    case ARG_INT:
      if (!cli_parse_int(v, (long long *)o->dest)) return fail(r, "argument %s: invalid int value: '%s'", o->name, v);
      return 0;
    case ARG_FLOAT:
      if (!py_float_from_str(v, strlen(v), (double *)o->dest))
        return fail(r, "argument %s: invalid float value: '%s'", o->name, v);
      return 0;
    case ARG_CHOICE:
      if (!in_choices(o->choices, v)) return bad_choice(r, o, v);
      *(const char **)o->dest = v;
      return 0;
    case ARG_LIST: {
      if (o->choices && !in_choices(o->choices, v)) return bad_choice(r, o, v);
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

void cli_args_free(const arg_spec *specs, size_t n_specs, arg_result *r) {
  for (size_t k = 0; k < n_specs; k++) {
    if (specs[k].kind != ARG_LIST) continue;
    arg_list *l = specs[k].dest;
    free(l->items);
    memset(l, 0, sizeof *l);
  }
  free(r->positional);
  r->positional = NULL;
  r->n_positional = 0;
}
