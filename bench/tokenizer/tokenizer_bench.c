/*
 * tokenizer_bench.c: load time and single-thread encode throughput of our tokenizer.
 *
 *   tokenizer_bench CORPUS.jsonl ROUNDS NAME=PATH...
 *
 * CORPUS.jsonl holds one JSON string per line (strings the reference refuses are skipped). For each
 * tokenizer: the load time (a fresh parse, outside the cache), then ROUNDS passes of encoding every
 * string (add_special_tokens=False, no truncation); the best pass is reported, in wall time and in
 * process CPU time (the fairer figure on a shared, loaded machine). One JSON line per
 * tokenizer on stdout. bench/tokenizer/tokenizer_bench.sh runs this and the HF side on the same corpus.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fsutil.h"
#include "core/json.h"
#include "tokenizer/tokenizer.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s CORPUS.jsonl ROUNDS NAME=PATH...\n", argv[0]);
    return 2;
  }
  int rounds = atoi(argv[2]);
  arena a;
  arena_init(&a, 1 << 20);
  laya_error err = {0};
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  size_t cap = 0, n = 0, ncap = 1024, total = 0;
  const char **texts = malloc(ncap * sizeof *texts);
  size_t *lens = malloc(ncap * sizeof *lens);
  char *line = NULL;
  ssize_t got;
  while ((got = getline(&line, &cap, f)) > 0) {
    json_value *v = json_parse(line, (size_t)got, &a, NULL, &err);
    if (!v || v->type != JSON_STRING || v->surrogate) continue;
    if (n == ncap) {
      ncap *= 2;
      texts = realloc(texts, ncap * sizeof *texts);
      lens = realloc(lens, ncap * sizeof *lens);
    }
    texts[n] = v->s;
    lens[n++] = v->n;
    total += v->n;
  }
  free(line);
  fclose(f);
  for (int k = 3; k < argc; k++) {
    char *eq = strchr(argv[k], '=');
    if (!eq) continue;
    *eq = 0;
    const char *name = argv[k], *path = eq + 1;
    char file[4096];
    snprintf(file, sizeof file, "%s/tokenizer.json", path);
    size_t jl;
    char *json = fs_read_file(file, &jl, NULL);
    if (!json) {
      fprintf(stderr, "cannot read %s\n", file);
      return 2;
    }
    double best_load = 1e9, best_load_cpu = 1e9;
    tokenizer *t = NULL;
    for (int r = 0; r < 3; r++) {
      double t0 = now(), c0 = cpu();
      tokenizer *x = tokenizer_load_memory(json, jl, NULL, 0, &err);
      double dt = now() - t0, dc = cpu() - c0;
      if (dc < best_load_cpu) best_load_cpu = dc;
      if (!x) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        return 1;
      }
      if (dt < best_load) best_load = dt;
      if (t) tokenizer_release(t);
      t = x;
    }
    free(json);
    ids_vec ids = {0};
    double best = 1e9, best_cpu = 1e9;
    size_t n_ids = 0;
    for (int r = 0; r < rounds; r++) {
      n_ids = 0;
      double t0 = now(), c0 = cpu();
      for (size_t i = 0; i < n; i++) {
        ids.n = 0;
        if (tokenizer_encode(t, texts[i], lens[i], 0, &ids, &err)) {
          fprintf(stderr, "%s: %s\n", name, err.message);
          return 1;
        }
        n_ids += ids.n;
      }
      double dt = now() - t0, dc = cpu() - c0;
      if (dt < best) best = dt;
      if (dc < best_cpu) best_cpu = dc;
    }
    printf("{\"impl\": \"laya.c\", \"tokenizer\": \"%s\", \"strings\": %zu, \"bytes\": %zu, \"ids\": %zu, "
           "\"load_s\": %.4f, \"load_cpu_s\": %.4f, \"encode_s\": %.4f, \"encode_cpu_s\": %.4f, "
           "\"mb_per_s\": %.2f, \"mb_per_cpu_s\": %.2f}\n",
           name, n, total, n_ids, best_load, best_load_cpu, best, best_cpu, (double)total / best / 1e6,
           (double)total / best_cpu / 1e6);
    fflush(stdout);
    ids_vec_free(&ids);
    tokenizer_release(t);
  }
  free(texts);
  free(lens);
  arena_free(&a);
  return 0;
}
