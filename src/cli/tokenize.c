/*
 * tokenize.c: `laya tokenize`, for people who tune token budgets.
 *
 *   laya tokenize --tokenizer PATH [--json] [--tokens] [--decode] [--max-len N] [TEXT...]
 *   laya tokenize --model CHECKPOINT_DIR ... (the checkpoint's tokenizer/ folder)
 *
 * Encodes each TEXT argument, or else reads stdin line by line; prints one JSON line per input:
 *   default     each line is text; prints its ids, e.g. [9906, 1917]
 *   --json      each line is a JSON string (so text can hold newlines): "a\nb"
 *   --tokens    prints the token strings instead of ids
 *   --decode    each line is a JSON list of ids; prints the decoded text as a JSON string
 * Ids are encoded with add_special_tokens=False, as Laya encodes text before adding CLS/SEP.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "tokenizer/tokenizer.h"

static const char kUsage[] =
    "usage: laya tokenize [-h] (--tokenizer PATH | --model DIR) [--json] [--tokens] [--decode]\n"
    "                     [--max-len N] [TEXT ...]\n"
    "\n"
    "  PATH is a tokenizer.json file or the directory holding it (and tokenizer_config.json);\n"
    "  DIR is a checkpoint directory (its tokenizer/ folder is used when present).\n"
    "  Encodes each TEXT, or reads lines (JSON strings with --json, JSON id lists with --decode)\n"
    "  on stdin; prints one JSON value per input. Ids exclude special tokens (Laya adds CLS/SEP).\n";

static int usage_error(const char *msg) { return cli_args_refuse(kUsage, "laya tokenize", "%s", msg); }

static int line_error(size_t line, const laya_error *e, const char *msg) {
  fprintf(stderr, "laya tokenize: line %zu: %s\n", line, e ? e->message : msg);
  return 2;
}

/* argparse's type=int, on --max-len only */
static bool int_check(const char *option, const char *v, char *msg, size_t n) {
  return strcmp(option, "--max-len") || cli_args_int_check(option, v, msg, n);
}

int cli_tokenize_main(int argc, char **argv) {
  const char *path = NULL;
  static char model_tok[4096];
  char **texts = calloc((size_t)argc, sizeof *texts);
  if (!texts) {
    fputs("laya tokenize: out of memory\n", stderr);
    return 2;
  }
  int ntexts = 0;
  bool json_in = false, tokens = false, decode = false;
  long max_len = 0;
  const char *model_dir = NULL;
  const char *max_len_raw = NULL; /* argparse's type=int (cli_args_int_check), read after the parse */
  /* argparse's rules (src/cli/cli_args.h): unique prefixes, ambiguous ones refused; the texts may
   * come anywhere (as parse_intermixed_args takes them) */
  const arg_spec opts[] = {{"--tokenizer", ARG_STR, &path, NULL},   {"--model", ARG_STR, &model_dir, NULL},
                           {"--json", ARG_FLAG, &json_in, NULL},    {"--tokens", ARG_FLAG, &tokens, NULL},
                           {"--decode", ARG_FLAG, &decode, NULL},   {"--max-len", ARG_STR, &max_len_raw, NULL}};
  const size_t n_opts = sizeof opts / sizeof opts[0];
  const arg_parse_opts po = {true, -1, int_check, false};
  arg_result r;
  int perr = cli_args_parse_ex(argc, argv, 1, opts, n_opts, &po, &r);
  for (int i = 0; i < r.n_positional; i++) texts[ntexts++] = (char *)r.positional[i];
  int verdict = cli_args_verdict(kUsage, "laya tokenize", perr, &r, "");
  bool help = r.help;
  cli_args_free(opts, n_opts, &r);
  if (verdict >= 0) {
    free(texts);
    return verdict;
  }
  if (help) {
    fputs(kUsage, stdout);
    free(texts);
    return 0;
  }
  if (max_len_raw) {
    /* as the top-level integer flags: a negative cap is refused, quoting the number given (of any
     * size); one beyond int (any size, as int() reads it) caps nothing, which is what it means */
    char *canon = NULL;
    long long v = cli_args_int_value(max_len_raw, &canon);
    if (v < 0) {
      int rc = cli_args_refuse(kUsage, "laya tokenize", "argument --max-len: must be a non-negative integer, got %s",
                               canon ? canon : max_len_raw);
      free(canon);
      free(texts);
      return rc;
    }
    free(canon);
    max_len = v > INT_MAX ? INT_MAX : (long)v;
  }
  if (model_dir) {
    /* a checkpoint directory: its tokenizer/ folder when present */
    struct stat st;
    snprintf(model_tok, sizeof model_tok, "%s/tokenizer", model_dir);
    path = (stat(model_tok, &st) == 0 && S_ISDIR(st.st_mode)) ? model_tok : model_dir;
  }
  if (!path || (decode && tokens)) {
    free(texts);
    return usage_error(!path ? "--tokenizer PATH (or --model DIR) is required" : "--decode and --tokens do not combine");
  }

  laya_error err = {0};
  tokenizer *t = tokenizer_load(path, &err);
  if (!t) {
    fprintf(stderr, "laya tokenize: %s\n", err.message);
    free(texts);
    return 2;
  }
  int rc = 0;
  char *line = NULL;
  size_t cap = 0, lineno = 0;
  ssize_t n;
  ids_vec ids = {0};
  strbuf sb;
  sb_init(&sb);
  int next_text = 0;
  for (;;) {
    size_t len;
    if (ntexts) {
      if (next_text == ntexts) break;
      free(line);
      line = strdup(texts[next_text++]);
      if (!line) break;
      len = strlen(line);
    } else {
      if ((n = getline(&line, &cap, stdin)) < 0) break;
      len = (size_t)n;
      if (len && line[len - 1] == '\n') len--;
      if (len && line[len - 1] == '\r') len--;
    }
    lineno++;
    sb_reset(&sb);
    arena a;
    arena_init(&a, 4096);
    const char *text = line;
    size_t tlen = len;
    json_value *v = NULL;
    if (json_in || decode) {
      v = json_parse(line, len, &a, NULL, &err);
      if (!v) {
        rc = line_error(lineno, &err, NULL);
        arena_free(&a);
        break;
      }
    }
    if (decode) {
      if (v->type != JSON_ARRAY) {
        rc = line_error(lineno, NULL, "--decode expects a JSON list of ids");
        arena_free(&a);
        break;
      }
      ids.n = 0;
      bool ok = true;
      for (uint32_t k = 0; k < v->n && ok; k++) {
        const json_value *x = &v->items[k];
        if (x->type != JSON_INT || x->big || x->i < 0 || x->i > INT32_MAX) {
          ok = false;
          break;
        }
        if (ids.n == ids.cap) {
          size_t nc = ids.cap ? ids.cap * 2 : 64;
          int32_t *p = realloc(ids.ids, nc * sizeof *p);
          if (!p) {
            ok = false;
            break;
          }
          ids.ids = p;
          ids.cap = nc;
        }
        ids.ids[ids.n++] = (int32_t)x->i;
      }
      char *out = NULL;
      size_t olen = 0;
      if (!ok) {
        rc = line_error(lineno, NULL, "ids must be non-negative integers");
      } else if (tokenizer_decode(t, ids.ids, ids.n, &out, &olen, &err)) {
        rc = line_error(lineno, &err, NULL);
      } else {
        json_dump_string(&sb, out, olen, false);
      }
      free(out);
      arena_free(&a);
      if (rc) break;
    } else {
      if (json_in) {
        if (v->type != JSON_STRING) {
          rc = line_error(lineno, NULL, "--json expects one JSON string per line");
          arena_free(&a);
          break;
        }
        text = v->s;
        tlen = v->n;
      }
      ids.n = 0;
      if (tokenizer_encode(t, text, tlen, (int)max_len, &ids, &err)) {
        rc = line_error(lineno, &err, NULL);
        arena_free(&a);
        break;
      }
      arena_free(&a);
      sb_putc(&sb, '[');
      for (size_t k = 0; k < ids.n; k++) {
        if (k) sb_puts(&sb, ", ");
        if (tokens) {
          size_t tl = 0;
          const char *ts = tokenizer_id_to_token(t, ids.ids[k], &tl);
          json_dump_string(&sb, ts ? ts : "", ts ? tl : 0, false);
        } else {
          sb_printf(&sb, "%d", ids.ids[k]);
        }
      }
      sb_putc(&sb, ']');
    }
    if (sb.oom) {
      rc = line_error(lineno, NULL, "out of memory");
      break;
    }
    sb_putc(&sb, '\n');
    fwrite(sb.data, 1, sb.len, stdout);
  }
  free(line);
  free(texts);
  ids_vec_free(&ids);
  sb_free(&sb);
  tokenizer_release(t);
  if (fflush(stdout) != 0 && !rc) rc = 2;
  return rc;
}
