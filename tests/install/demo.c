/* demo.c: a program built against an installed laya.c (tests/install/run.sh): opens a
 * checkpoint, answers one request and prints the result, as a user's first program would. */
#include <stdio.h>

#include <laya.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CHECKPOINT REQUEST_JSON\n", argv[0]);
    return 2;
  }
  laya_error err;
  laya_options opt;
  laya_options_init(&opt);
  opt.quiet = 1;
  laya_model *m = laya_open(argv[1], &opt, &err);
  if (!m) {
    fprintf(stderr, "%s: %s\n", err.kind, err.message);
    return 2;
  }
  char *out = NULL;
  int rc = laya_predict(m, argv[2], &out, &err);
  if (rc == 0) {
    printf("%s\n", out);
    laya_free(out);
  } else {
    fprintf(stderr, "%s: %s\n", err.kind, err.message);
  }
  laya_close(m);
  return rc ? 2 : 0;
}
