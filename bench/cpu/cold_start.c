/*
 * cold_start.c: open a model and answer one question, then exit; bench/cpu/run.py times the whole
 * process (exec to exit) as the cold start.   cold_start PATH [PRECISION]
 */
#include <stdio.h>

#include "laya.h"

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  if (argc > 2) o.precision = argv[2];
  laya_error err;
  laya_model *m = laya_open(argv[1], &o, &err);
  if (!m) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  const char *req = "{\"state\": {\"request\": \"I was charged twice for the same order, please refund the second "
                    "payment.\"}, \"questions\": {\"intent\": {\"type\": \"choice\", \"instructions\": \"What does the "
                    "customer want?\", \"criteria\": {\"refund\": \"money back\", \"help\": null, \"other\": null}}}}";
  char *out = NULL;
  if (laya_predict(m, req, &out, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  puts(out);
  laya_free(out);
  laya_close(m);
  return 0;
}
