/*
 * fuzz_artifact.c: libFuzzer target -- bytes in as a `laya convert` artifact, opened through the
 * public laya_open (so the target holds whatever the artifact format becomes), never a crash. An
 * artifact that opens answers one small request and is closed. Seeds: a real artifact made by
 * `laya convert` from tests/fixtures/ckpt/modernbert-tiny at test time (fuzz/replay_artifact) and
 * the small hand-made ones in tests/fuzz/seeds/artifact.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "laya.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) {
    snprintf(path, sizeof path, "/tmp/laya_fuzz_art_%d.lpak", (int)getpid());
    setenv("LAYA_THREADS", "1", 0);
  }
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  laya_error err = {0};
  laya_model *m = laya_open(path, &o, &err);
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("LAYA_FUZZ_VERBOSE") != NULL;
  if (verbose) fprintf(stderr, "fuzz_artifact: %zu bytes: %s\n", size, m ? "opened" : err.message);
  if (m) {
    char *out = NULL;
    if (laya_predict(m, "{\"state\": \"a refund, please\", \"questions\": {\"q\": {\"type\": \"choice\", "
                        "\"instructions\": \"which?\", \"criteria\": [\"a\", \"b\", \"c\"]}}}",
                     &out, &err) == 0)
      laya_free(out);
    laya_close(m);
  }
  unlink(path);
  return 0;
}
