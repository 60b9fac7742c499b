/* hub_fetch: resolve one checkpoint through src/model/hub.c, for tests/router/test_hub.py.
 *   hub_fetch REPO_OR_PATH SUBFOLDER|- REVISION|- CACHE_DIR [SHA256_JSON]
 * Prints "DIR <path>" and "COMMIT <sha>" (or "COMMIT -"), or "ERROR <kind>: <message>" and
 * exits 1. Endpoint, token and offline mode come from HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/hub.h"

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: hub_fetch REPO SUBFOLDER REVISION CACHE [SHA256_JSON]\n");
    return 2;
  }
  hub_options o;
  hub_options_init(&o);
  o.revision = strcmp(argv[3], "-") ? argv[3] : NULL;
  o.cache_dir = argv[4];
  o.sha256_json = argc > 5 ? argv[5] : NULL;
  o.quiet = true;
  char *dir = NULL, *commit = NULL;
  laya_error err = {0};
  if (hub_resolve(argv[1], strcmp(argv[2], "-") ? argv[2] : NULL, &o, &dir, &commit, &err)) {
    printf("ERROR %s: %s\n", err.kind, err.message);
    return 1;
  }
  printf("DIR %s\nCOMMIT %s\n", dir, commit ? commit : "-");
  free(dir);
  free(commit);
  return 0;
}
