/* bench_route: routing throughput of laya.c on the parity corpus (states parsed up front).
 *   cc -O2 -Iinclude -Isrc tools/router/bench_route.c build/liblaya.a $(pkg-config --libs \
 *      libutf8proc oniguruma libcurl) -lpthread -lm -o bench_route && ./bench_route CORPUS [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json.h"
#include "router/router.h"

int main(int argc, char **argv) {
  FILE *f = fopen(argc > 1 ? argv[1] : "tests/fixtures/router/corpus.jsonl", "rb");
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (!f) return 1;
  static char line[1 << 20];
  arena a;
  arena_init(&a, 1 << 20);
  const json_value *states[4096];
  int n = 0;
  while (n < 4096 && fgets(line, sizeof line, f)) {
    json_value *row = json_parse(line, strlen(line), &a, NULL, NULL);
    if (row) states[n++] = json_get(json_get(row, "request"), "state");
  }
  fclose(f);
  router_config cfg;
  router_config_init(&cfg, false);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < n; i++) {
      strbuf out;
      sb_init(&out);
      char chosen[64];
      router_route(&cfg, states[i], NULL, NULL, NULL, NULL, NULL, &out, chosen, NULL);
      sb_free(&out);
    }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / ((double)n * reps);
  printf("laya.c route: %d states x %d reps, %.1f us per state\n", n, reps, us);
  router_config_free(&cfg);
  arena_free(&a);
  return 0;
}
