/*
 * open_time.c: how long laya_open takes, and what the pack cache did (model info "pack_cache").
 *   open_time PATH [PRECISION] [OPENS]
 * Prints per open: wall seconds, process CPU seconds of that open, and the cache status, then the
 * same for its laya_close (which waits for the pack cache's writer after a miss). Run it with
 * LAYA_PACK_CACHE=0 for the packing cost alone, and twice on an empty LAYA_CACHE_DIR for the first
 * (pack + store) and later (map) opens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "laya.h"

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: open_time PATH [PRECISION] [OPENS]\n");
    return 2;
  }
  int opens = argc > 3 ? atoi(argv[3]) : 1;
  for (int i = 0; i < opens; i++) {
    laya_options o;
    laya_options_init(&o);
    o.quiet = 1;
    if (argc > 2 && strcmp(argv[2], "-")) o.precision = argv[2];
    laya_error err;
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    laya_model *m = laya_open(argv[1], &o, &err);
    double w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
    if (!m) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    const char *info = laya_model_info(m), *p = strstr(info, "\"pack_cache\": ");
    printf("open %d: %.3f s wall, %.3f s CPU, pack_cache %.*s\n", i + 1, w1 - w0, c1 - c0,
           p ? (int)strcspn(p + 14, ",") : 4, p ? p + 14 : "null");
    double cw0 = now(CLOCK_MONOTONIC), cc0 = now(CLOCK_PROCESS_CPUTIME_ID);
    laya_close(m); /* after a miss: waits for the pack cache's writer */
    double cw1 = now(CLOCK_MONOTONIC), cc1 = now(CLOCK_PROCESS_CPUTIME_ID);
    printf("close %d: %.3f s wall, %.3f s CPU\n", i + 1, cw1 - cw0, cc1 - cc0);
  }
  return 0;
}
