/*
 * e2e.c: laya.c's side of bench/cpu/e2e.py: end-to-end laya_predict (tokenize, forward, decode)
 * on requests read from a file, one JSON request per line.
 *
 *   e2e PATH --requests FILE [--precision P] [--threads N] [--reps N]
 *
 * Per request: one warm-up call, then --reps timed calls. A line that begins with a "states" key is a batch
 * request (laya_predict_batch: the states' question rows share passes), any other one goes to
 * laya_predict. The backend is laya_open's: LAYA_DEVICE=cuda runs it on the GPU. Prints JSON lines
 * {"engine", "request", "best_ms", "median_ms"} (request = line number from 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laya.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : NULL, *reqs = NULL;
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  int reps = 5;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--requests")) reqs = argv[i + 1];
    else if (!strcmp(argv[i], "--precision")) o.precision = argv[i + 1];
    else if (!strcmp(argv[i], "--threads")) o.threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
  }
  if (!path || !reqs || reps < 1 || reps > 1000) {
    fprintf(stderr, "usage: e2e PATH --requests FILE [--precision P] [--threads N] [--reps N]\n");
    return 2;
  }
  laya_error err;
  laya_model *m = laya_open(path, &o, &err);
  if (!m) {
    fprintf(stderr, "%s: %s\n", path, err.message);
    return 1;
  }
  FILE *f = fopen(reqs, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", reqs);
    return 1;
  }
  char *line = NULL;
  size_t cap = 0;
  int n = 0;
  double *t = malloc(sizeof(double) * (size_t)reps);
  while (getline(&line, &cap, f) > 0) {
    if (line[0] != '{') continue;
    for (int r = -1; r < reps; r++) {
      char *out = NULL;
      double t0 = now_ms();
      int batch = !strncmp(line, "{\"states\"", 9); /* e2e.py writes that key first */
      if ((batch ? laya_predict_batch : laya_predict)(m, line, &out, &err)) {
        fprintf(stderr, "request %d: %s\n", n, err.message);
        return 1;
      }
      if (r >= 0) t[r] = now_ms() - t0;
      laya_free(out);
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_d);
    printf("{\"engine\": \"laya.c %s\", \"request\": %d, \"best_ms\": %.3f, \"median_ms\": %.3f}\n",
           o.precision ? o.precision : "default", n, t[0], t[reps / 2]);
    fflush(stdout);
    n++;
  }
  free(t);
  free(line);
  fclose(f);
  laya_close(m);
  return 0;
}
