/* presets_cmd.c: `laya presets [list]` and `laya presets show NAME`: the question sets behind
 * `laya --preset NAME` (model/presets.c), as JSON a user can read, edit and pass back with
 * --questions. Their wording is laya.c's own, not Laya's, so the same checkpoint answers them
 * differently from Laya's presets; `show` says how to export Laya's for --questions instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "core/arena.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "model/presets.h"

static const char kUsage[] =
    "usage: laya presets [list]\n"
    "       laya presets show NAME\n"
    "\n"
    "The question sets of `laya --preset NAME`. `show` prints one as a --questions file\n"
    "({\"questions\": question id -> definition, \"state_key\": the state field they read});\n"
    "edit it and pass it back with --questions FILE.\n"
    "\n"
    "Their wording is laya.c's own, not Python Laya's, so on one checkpoint `--preset triage`\n"
    "answers differently from Laya's triage preset. To ask Laya's own questions, export them once\n"
    "from Python Laya and pass the file:\n"
    "\n"
    "  python -c \"import json, laya.presets as p; q = p.triage_questions(); \\\n"
    "    print(json.dumps({'questions': q, 'state_key': p.state_field(q)}))\" > triage.json\n"
    "  laya --questions triage.json \"my parcel never arrived\"\n"
    "\n"
    "(email_questions, guard_questions, moderation_questions and router_questions likewise).\n";

static void list(void) {
  printf("%-12s %-10s %s\n", "preset", "reads", "questions");
  for (int i = 0; question_preset_at(i); i++) {
    const question_preset *p = question_preset_at(i);
    arena a;
    arena_init(&a, 1 << 14);
    laya_error err;
    json_value *q = json_parse(p->questions, strlen(p->questions), &a, NULL, &err);
    printf("%-12s %-10s", p->name, p->state_key ? p->state_key : "-");
    for (uint32_t k = 0; q && q->type == JSON_OBJECT && k < q->n; k++)
      printf("%s%s", k ? ", " : " ", q->members[k].key);
    printf("\n");
    arena_free(&a);
  }
}

static int show(const char *name) {
  const question_preset *p = question_preset_find(name);
  if (!p) {
    fprintf(stderr, "laya presets: no preset named '%s' (choose from", name);
    for (int i = 0; question_preset_at(i); i++) fprintf(stderr, "%s'%s'", i ? ", " : " ", question_preset_at(i)->name);
    fprintf(stderr, ")\n");
    return 2;
  }
  /* the compiled-in set as a --questions file (Laya's wrapped form, so the state field travels
   * with it), laid out as Python's json.dumps(indent=2, ensure_ascii=False) */
  arena a;
  arena_init(&a, 1 << 14);
  laya_error err;
  json_value *q = json_parse(p->questions, strlen(p->questions), &a, NULL, &err);
  int rc = 0;
  if (!q) {
    fprintf(stderr, "laya presets: the built-in preset '%s' is not valid JSON: %s\n", name, err.message);
    rc = 1;
  } else {
    strbuf sb;
    sb_init(&sb);
    json_member m[2] = {{"questions", 9, *q}, {"state_key", 9, json_string(p->state_key ? p->state_key : "request")}};
    json_value file = {.type = JSON_OBJECT, .n = 2, .members = m};
    json_dump_opts o = {NULL, NULL, false, 2};
    json_dump(&sb, &file, &o);
    printf("%s\n", sb_cstr(&sb));
    sb_free(&sb);
  }
  arena_free(&a);
  return rc;
}

int cli_presets_main(int argc, char **argv) {
  /* argparse's rules (src/cli/cli_args.h): -h / --help or a prefix of it, then [list] | show NAME */
  const arg_parse_opts po = {true, 2, NULL, false};
  arg_result r;
  int perr = cli_args_parse_ex(argc, argv, 1, NULL, 0, &po, &r);
  const char *cmd = r.n_positional ? r.positional[0] : "list";
  bool known = !strcmp(cmd, "list") || !strcmp(cmd, "show");
  int rc = cli_args_verdict(kUsage, "laya presets", perr, &r, known && !strcmp(cmd, "show") && r.n_positional < 2 ? "NAME" : "");
  if (rc < 0 && !r.help && !known) {
    char *q = cli_args_repr(cmd);
    rc = cli_args_refuse(kUsage, "laya presets", "argument command: invalid choice: %s (choose from 'list', 'show')", q);
    free(q);
  }
  if (rc < 0 && !r.help && !strcmp(cmd, "list") && r.n_positional > 1)
    rc = cli_args_refuse(kUsage, "laya presets", "unrecognized arguments: %s", r.positional[1]);
  const char *name = r.n_positional > 1 ? r.positional[1] : NULL;
  bool help = r.help;
  cli_args_free(NULL, 0, &r);
  if (rc >= 0) return rc;
  if (help) {
    fputs(kUsage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "list")) {
    list();
    return 0;
  }
  return show(name);
}
