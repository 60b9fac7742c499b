/* Hostile checkpoints (issue 18, "checkpoint bombs"): each file of a checkpoint replaced by a
 * device, a FIFO, an oversized file, or a config asking for absurd sizes or budgets; and weights
 * with NaN / Inf. Every one is refused quickly, with the file and the field named, before anything
 * is sized from it; NaN weights load with a warning naming the tensor.
 *   test_ckpt_bombs CHECKPOINT_DIR   (tests/fixtures/ckpt/modernbert-tiny) */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "laya.h"
#include "model/safetensors.h"

static const char *src;
static char root[] = "/tmp/laya_bombs_XXXXXX";
static char dir[PATH_MAX];

static const char *const files[] = {"rl_agent_config.json", "model.safetensors", "encoder/config.json",
                                    "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json",
                                    "tokenizer/special_tokens_map.json"};
#define N_FILES (sizeof files / sizeof *files)

static void path_of(char *out, const char *base, const char *rel) {
  size_t a = strlen(base), b = strlen(rel);
  if (a + b + 2 > PATH_MAX) {
    out[0] = 0;
    return;
  }
  memcpy(out, base, a);
  out[a] = '/';
  memcpy(out + a + 1, rel, b + 1);
}

static void rm_ckpt(void) {
  char p[PATH_MAX];
  for (size_t i = 0; i < N_FILES; i++) {
    path_of(p, dir, files[i]);
    unlink(p);
  }
  path_of(p, dir, "encoder");
  rmdir(p);
  path_of(p, dir, "tokenizer");
  rmdir(p);
  rmdir(dir);
}

/* A fresh checkpoint of links to the fixture's files. */
static void make_ckpt(void) {
  rm_ckpt();
  char p[PATH_MAX], q[PATH_MAX];
  mkdir(dir, 0755);
  path_of(p, dir, "encoder");
  mkdir(p, 0755);
  path_of(p, dir, "tokenizer");
  mkdir(p, 0755);
  for (size_t i = 0; i < N_FILES; i++) {
    path_of(p, dir, files[i]);
    path_of(q, src, files[i]);
    if (symlink(q, p) != 0) fprintf(stderr, "symlink %s: %s\n", p, strerror(errno));
  }
}

static void put(const char *rel, const char *text) {
  char p[PATH_MAX];
  path_of(p, dir, rel);
  unlink(p);
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
}

/* The fixture's file with `from` replaced by `to` (first occurrence). */
static void put_edited(const char *rel, const char *from, const char *to) {
  char p[PATH_MAX];
  path_of(p, src, rel);
  size_t n;
  char *text = fs_read_file(p, &n, NULL);
  char *at = text ? strstr(text, from) : NULL;
  CHECK(at != NULL);
  if (!at) {
    free(text);
    return;
  }
  strbuf sb;
  sb_init(&sb);
  sb_append(&sb, text, (size_t)(at - text));
  sb_puts(&sb, to);
  sb_puts(&sb, at + strlen(from));
  put(rel, sb_cstr(&sb));
  sb_free(&sb);
  free(text);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bool has(const char *hay, const char *needle) {
  bool ok = hay && strstr(hay, needle) != NULL;
  if (!ok) fprintf(stderr, "  message: %s\n  lacks:   %s\n", hay ? hay : "(null)", needle);
  return ok;
}

/* laya_open must refuse the checkpoint, quickly, with every `needles` string in the message. */
static void refused(const char *what, const char *n1, const char *n2) {
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  laya_error err;
  laya_err_clear(&err);
  double t0 = now();
  laya_model *m = laya_open(dir, &o, &err);
  double dt = now() - t0;
  CHECK(m == NULL);
  if (m) {
    fprintf(stderr, "  %s: loaded\n", what);
    laya_close(m);
    return;
  }
  CHECK(has(err.message, n1));
  if (n2) CHECK(has(err.message, n2));
  /* the fixture opens in well under a second; a bomb that is read or sized takes far longer */
  CHECK(dt < 10.0);
  if (dt >= 10.0) fprintf(stderr, "  %s took %.1f s\n", what, dt);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  static char real_src[PATH_MAX];
  if (!realpath(argv[1], real_src)) return 2; /* the links below need an absolute target */
  src = real_src;
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  alarm(300); /* a FIFO that blocks fails the test instead of hanging it */
  CHECK(mkdtemp(root) != NULL);
  snprintf(dir, sizeof dir, "%s/ck", root);
  char fifo[PATH_MAX];
  snprintf(fifo, sizeof fifo, "%s/fifo", root);
  CHECK(mkfifo(fifo, 0644) == 0);

  /* the untouched copy loads (so every refusal below is the change's doing) */
  make_ckpt();
  {
    laya_options o;
    laya_options_init(&o);
    o.quiet = 1;
    laya_error err;
    laya_model *m = laya_open(dir, &o, &err);
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "  fixture copy: %s\n", err.message);
    else laya_close(m);
  }

  /* every JSON file of the checkpoint as /dev/zero and as a FIFO: refused, the file named */
  static const char *const json_files[] = {"rl_agent_config.json", "encoder/config.json",
                                           "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"};
  for (size_t i = 0; i < sizeof json_files / sizeof *json_files; i++) {
    const char *targets[2] = {"/dev/zero", fifo};
    for (int k = 0; k < 2; k++) {
      make_ckpt();
      char p[PATH_MAX];
      path_of(p, dir, json_files[i]);
      unlink(p);
      CHECK(symlink(targets[k], p) == 0);
      refused(json_files[i], json_files[i], "not a regular file");
    }
  }
  /* a config larger than the limit is refused before it is read (a sparse file: no disk used) */
  make_ckpt();
  {
    char p[PATH_MAX];
    path_of(p, dir, "tokenizer/tokenizer_config.json");
    unlink(p);
    int fd = open(p, O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)FS_MAX_CONFIG_BYTES + 1) == 0);
    close(fd);
    refused("oversized tokenizer_config.json", "tokenizer_config.json", "more than the");
  }

  /* encoder/config.json asking for absurd sizes: refused at once, the field named */
  static const char *const enc_bombs[][3] = {
      {"\"num_hidden_layers\": 6", "\"num_hidden_layers\": 10000000", "\"num_hidden_layers\" is 10000000"},
      {"\"hidden_size\": 128", "\"hidden_size\": 1073741824", "\"hidden_size\" is 1073741824"},
      {"\"intermediate_size\": 192", "\"intermediate_size\": 1000000000", "\"intermediate_size\" is 1000000000"},
      {"\"num_attention_heads\": 2", "\"num_attention_heads\": 100000", "\"num_attention_heads\" is 100000"},
      {"\"vocab_size\": 4096", "\"vocab_size\": 2000000000", "\"vocab_size\" is 2000000000"},
      {"\"max_position_embeddings\": 8192", "\"max_position_embeddings\": 2000000000",
       "\"max_position_embeddings\" is 2000000000"},
      {"\"num_hidden_layers\": 6", "\"num_hidden_layers\": 0", "\"num_hidden_layers\" must be a positive integer, got 0"},
  };
  for (size_t i = 0; i < sizeof enc_bombs / sizeof *enc_bombs; i++) {
    make_ckpt();
    put_edited("encoder/config.json", enc_bombs[i][0], enc_bombs[i][1]);
    refused(enc_bombs[i][1], "encoder/config.json", enc_bombs[i][2]);
  }
  /* a config that fits its bounds but not the tensors: refused by the strict tensor check */
  make_ckpt();
  put_edited("encoder/config.json", "\"num_hidden_layers\": 6", "\"num_hidden_layers\": 1000");
  refused("1000 layers", "model.safetensors", "missing");

  /* rl_agent_config.json budgets and head sizes */
  static const char *const agent_bombs[][3] = {
      {"\"max_len\": 512", "\"max_len\": 1000000000", "\"max_len\" is 1000000000, more than"},
      {"\"max_len\": 512", "\"max_len\": 0", "\"max_len\" is 0"},
      {"\"max_len\": 512", "\"max_len\": -4", "\"max_len\" is -4"},
      {"\"head_max_len\": 192", "\"head_max_len\": 0", "\"head_max_len\" is 0"},
      {"\"head_max_len\": 192", "\"head_max_len\": -1", "\"head_max_len\" is -1"},
      {"\"head_max_len\": 192", "\"head_max_len\": 1000000000", "\"head_max_len\" is 1000000000"},
      {"\"max_len\": 512", "\"max_len\": 16384", "max_position_embeddings 8192"},
      {"\"head_layers\": 2", "\"head_layers\": 1000000000", "\"head_layers\" is 1000000000"},
  };
  for (size_t i = 0; i < sizeof agent_bombs / sizeof *agent_bombs; i++) {
    make_ckpt();
    put_edited("rl_agent_config.json", agent_bombs[i][0], agent_bombs[i][1]);
    refused(agent_bombs[i][1], "rl_agent_config.json", agent_bombs[i][2]);
  }
  /* the budgets at the encoder's limit still load */
  make_ckpt();
  put_edited("rl_agent_config.json", "\"max_len\": 512", "\"max_len\": 8192");
  {
    laya_options o;
    laya_options_init(&o);
    o.quiet = 1;
    laya_error err;
    laya_model *m = laya_open(dir, &o, &err);
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "  max_len 8192: %s\n", err.message);
    else laya_close(m);
  }

  /* NaN and Inf weights: the load warns naming the tensors; the answer says NaN as Laya's does */
  make_ckpt();
  {
    char p[PATH_MAX], q[PATH_MAX];
    path_of(q, src, "model.safetensors");
    path_of(p, dir, "model.safetensors");
    size_t n;
    char *bytes = fs_read_file(q, &n, NULL);
    st_file st;
    laya_error err;
    CHECK(bytes && st_open(&st, q, &err) == 0);
    const tensor *t1 = bytes ? st_find(&st, "scorer.3.bias") : NULL;
    const tensor *t2 = bytes ? st_find(&st, "encoder.layers.1.mlp.Wo.weight") : NULL;
    CHECK(t1 && t2);
    if (t1 && t2) {
      size_t o1 = (size_t)((const char *)t1->data - (const char *)st.map);
      size_t o2 = (size_t)((const char *)t2->data - (const char *)st.map);
      size_t es1 = tensor_dtype_size(t1->dtype), es2 = tensor_dtype_size(t2->dtype);
      /* a NaN into scorer.3.bias[0]; +Inf and -Inf into two weights of the MLP */
      const unsigned char nan32[4] = {0, 0, 0xc0, 0x7f}, nan16[2] = {0xc0, 0x7f};
      memcpy(bytes + o1, es1 == 4 ? nan32 : nan16, es1);
      const unsigned char inf32[4] = {0, 0, 0x80, 0x7f}, ninf32[4] = {0, 0, 0x80, 0xff};
      const unsigned char inf16[2] = {0x80, 0x7f}, ninf16[2] = {0x80, 0xff};
      memcpy(bytes + o2 + 3 * es2, es2 == 4 ? inf32 : inf16, es2);
      memcpy(bytes + o2 + 7 * es2, es2 == 4 ? ninf32 : ninf16, es2);
      unlink(p);
      FILE *f = fopen(p, "wb");
      fwrite(bytes, 1, n, f);
      fclose(f);
    }
    if (bytes) st_close(&st);
    free(bytes);
    laya_options o;
    laya_options_init(&o);
    o.quiet = 1;
    laya_model *m = laya_open(dir, &o, &err);
    CHECK(m != NULL);
    if (m) {
      const char *info = laya_model_info(m);
      CHECK(has(info, "3 NaN or infinite weight values in 2 tensors"));
      CHECK(has(info, "'scorer.3.bias' (1)"));
      CHECK(has(info, "'encoder.layers.1.mlp.Wo.weight' (2)"));
      char *out = NULL;
      int rc = laya_predict(m, "{\"state\": \"a ticket\", \"questions\": {\"q\": {\"type\": \"choice\", "
                               "\"instructions\": \"which?\", \"criteria\": [\"a\", \"b\"]}}}", &out, &err);
      CHECK(rc == 0);
      if (!rc) {
        /* Python's json.dumps spelling, which our parser (like Python's) reads back */
        CHECK(has(out, "NaN"));
        arena a;
        arena_init(&a, 1 << 12);
        CHECK(json_parse(out, strlen(out), &a, NULL, &err) != NULL);
        arena_free(&a);
      }
      laya_free(out);
      laya_close(m);
    }
    /* the untouched weights warn of nothing */
    make_ckpt();
    m = laya_open(dir, &o, &err);
    CHECK(m != NULL);
    if (m) {
      CHECK(strstr(laya_model_info(m), "NaN or infinite") == NULL);
      laya_close(m);
    }
  }

  rm_ckpt();
  unlink(fifo);
  rmdir(root);
  return check_summary("model/ckpt_bombs");
}
