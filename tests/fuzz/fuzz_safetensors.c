/*
 * fuzz_safetensors.c: libFuzzer target -- bytes in as a model.safetensors file, st_open's verdict
 * out, never a crash. A file that opens is then read through every accessor the loader uses
 * (st_find on each name, tensor_to_f32 at both ends of each tensor, the NaN/Inf scan), so every
 * span st_open vouched for is touched. Seeds: tests/fuzz/seeds/safetensors (the [2^32, 2^32]
 * shape that overflowed the size product among them), replayed by CTest (fuzz/replay_*).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/laya_fuzz_st_%d.safetensors", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  st_file st;
  laya_error err = {0};
  if (st_open(&st, path, &err) == 0) {
    for (int i = 0; i < st.n_tensors; i++) {
      const tensor *t = &st.tensors[i];
      if (st_find(&st, t->name) == NULL) abort(); /* every listed name is found */
      float v[4];
      int64_t k = t->numel < 4 ? t->numel : 4;
      if (k > 0) {
        tensor_to_f32(t, 0, k, v);
        tensor_to_f32(t, t->numel - k, k, v);
      }
      if (st_count_nonfinite(t) > t->numel) abort();
    }
    st_close(&st);
  }
  unlink(path);
  return 0;
}
