/*
 * replay_main.c: runs a libFuzzer target over files without libFuzzer, so CTest replays the seed
 * corpora in every build (and under the sanitizers in the sanitizer build):
 *   replay_<target> FILE_OR_DIR...
 * Each file is one input; a directory stands for its files (not recursive). A crash is the test's
 * failure; otherwise it prints how many inputs ran and fails when there were none.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf) return 0;
  /* an exact-size copy, so reading past the input is an ASan finding as under libFuzzer */
  uint8_t *exact = malloc(n ? n : 1);
  if (exact && n) memcpy(exact, buf, n);
  free(buf);
  if (!exact) return 0;
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  int ran = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      ran += run_file(argv[i]);
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) continue;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        names = realloc(names, cap * sizeof *names);
      }
      size_t l = strlen(argv[i]) + strlen(e->d_name) + 2;
      names[n] = malloc(l);
      snprintf(names[n], l, "%s/%s", argv[i], e->d_name);
      n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp);
    for (size_t k = 0; k < n; k++) {
      ran += run_file(names[k]);
      free(names[k]);
    }
    free(names);
  }
  printf("replay: %d inputs, no crash\n", ran);
  return ran ? 0 : 1;
}
