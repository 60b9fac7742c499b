/*
 * test_pack_cache.c: the fast CPU backend's pack cache (model/pack_cache.h), through laya_open.
 *   - with an empty cache the first open packs and stores ("miss"), the second maps the entry
 *     ("hit", in the model info) and both answer byte for byte like an open with the cache off;
 *   - each precision has its own entry; a changed encoder config is a new key ("miss"), rewritten
 *     temperatures are not (the same weights: "hit");
 *   - a corrupted (one flipped byte) or truncated entry is never used: the open reports "rebuilt"
 *     naming the failed check, answers the same, and the next open hits again;
 *   - LAYA_PACK_CACHE=0 writes nothing ("off");
 *   - processes opening the same checkpoint at once with an empty cache all answer the same and
 *     leave one valid entry.
 *   test_pack_cache CKPT_DIR
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "laya.h"

static const char *kReq =
    "{\"state\": \"I was charged twice, please refund one\", \"questions\": {\"team\": {\"type\": \"choice\", "
    "\"instructions\": \"Who handles this?\", \"criteria\": [\"billing\", \"tech\", \"sales\", \"legal\"]}, "
    "\"urgent\": {\"type\": \"noul\", \"instructions\": \"Is it urgent?\"}}}";

static char status[700];

/* Open dir at prec, answer kReq; the model info's pack_cache into status. NULL on failure. */
static char *answer(const char *dir, const char *prec) {
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  o.precision = prec;
  laya_error err;
  status[0] = 0;
  laya_model *m = laya_open(dir, &o, &err);
  if (!m) {
    fprintf(stderr, "open %s: %s\n", dir, err.message);
    return NULL;
  }
  const char *info = laya_model_info(m), *p = strstr(info, "\"pack_cache\": \"");
  if (p) {
    p += 15;
    size_t n = strcspn(p, "\"");
    snprintf(status, sizeof status, "%.*s", (int)(n < sizeof status - 1 ? n : sizeof status - 1), p);
  }
  char *out = NULL;
  if (laya_predict(m, kReq, &out, &err)) fprintf(stderr, "predict: %s\n", err.message);
  laya_close(m);
  return out;
}

/* The one entry file under cache/packed whose name ends with suffix, into path. */
static int entry(const char *cache, const char *suffix, char *path, size_t cap) {
  char dir[1200];
  snprintf(dir, sizeof dir, "%s/packed", cache);
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l > sl && !strcmp(e->d_name + l - sl, suffix)) {
      snprintf(path, cap, "%s/%s", dir, e->d_name);
      n++;
    }
  }
  if (d) closedir(d);
  return n;
}

static long file_size(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static void flip_byte(const char *p, long at) {
  FILE *f = fopen(p, "r+b");
  if (!f) return;
  fseek(f, at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at, SEEK_SET);
  fputc(c ^ 0x40, f);
  fclose(f);
}

static int same(const char *a, const char *b) { return a && b && !strcmp(a, b); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_pack_cache CKPT_DIR\n");
    return 2;
  }
  const char *dir = argv[1];
  char cache[1024], cmd[6000], ent[1400], ent2[1400];
  snprintf(cache, sizeof cache, "%s/laya-pack-cache-test-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  setenv("LAYA_CACHE_DIR", cache, 1);
  unsetenv("LAYA_PRECISION");
  unsetenv("LAYA_BACKEND");
  unsetenv("LAYA_ESCALATE");

  setenv("LAYA_PACK_CACHE", "0", 1);
  char *ref = answer(dir, NULL), *ref16 = answer(dir, "bf16");
  CHECK(ref && ref16 && !strcmp(status, "off"));
  struct stat st;
  CHECK(stat(cache, &st) != 0); /* off: nothing written */
  unsetenv("LAYA_PACK_CACHE");

  char *a1 = answer(dir, NULL);
  CHECK(!strcmp(status, "miss"));
  CHECK(entry(cache, "-fp32.laya", ent, sizeof ent) == 1);
  char *a2 = answer(dir, NULL);
  CHECK(!strcmp(status, "hit"));
  CHECK(same(a1, ref) && same(a2, ref));
  char *b1 = answer(dir, "bf16");
  CHECK(!strcmp(status, "miss"));
  char *b2 = answer(dir, "bf16");
  CHECK(!strcmp(status, "hit"));
  CHECK(same(b1, ref16) && same(b2, ref16));
  CHECK(entry(cache, "-bf16.laya", ent2, sizeof ent2) == 1);

  /* a corrupted entry is rebuilt, never trusted */
  long size = file_size(ent);
  flip_byte(ent, size / 2);
  char *c1 = answer(dir, NULL);
  printf("after a flipped byte: %s\n", status);
  CHECK(!strncmp(status, "rebuilt (", 9) && strstr(status, "checksum") != NULL);
  CHECK(same(c1, ref));
  char *c2 = answer(dir, NULL);
  CHECK(!strcmp(status, "hit") && same(c2, ref));
  CHECK(truncate(ent2, file_size(ent2) - 4096) == 0);
  char *c3 = answer(dir, "bf16");
  printf("after truncation: %s\n", status);
  CHECK(!strncmp(status, "rebuilt (", 9) && strstr(status, "truncated") != NULL);
  CHECK(same(c3, ref16));
  char *c4 = answer(dir, "bf16");
  CHECK(!strcmp(status, "hit") && same(c4, ref16));

  /* a changed source file is another key */
  char copy[1200];
  snprintf(copy, sizeof copy, "%s/ckpt-copy", cache);
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && sed -i 's/\"initializer_range\": 0.02/\"initializer_range\": 0.03/' "
           "'%s/encoder/config.json'", dir, copy, copy);
  CHECK(system(cmd) == 0);
  char *d1 = answer(copy, NULL);
  CHECK(!strcmp(status, "miss") && same(d1, ref));
  CHECK(entry(cache, "-fp32.laya", ent, sizeof ent) == 2);
  /* the entry is content-addressed: another directory with the same weights and encoder config,
   * whose rl_agent_config.json temperatures were rewritten (as calibrate does), maps it */
  char copy2[1200];
  snprintf(copy2, sizeof copy2, "%s/ckpt-copy2", cache);
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && sed -i 's/1.6369030475616455/1.25/' '%s/rl_agent_config.json'", dir, copy2,
           copy2);
  CHECK(system(cmd) == 0);
  char *d2 = answer(copy2, NULL);
  CHECK(!strcmp(status, "hit") && d2 != NULL);
  free(d2);

  /* a dead writer's temp file: one over an hour old is swept by the next write, a fresh one kept */
  char stale[1500], fresh[1500];
  snprintf(stale, sizeof stale, "%s/packed/dead.laya.tmp-AAAAAA", cache);
  snprintf(fresh, sizeof fresh, "%s/packed/live.laya.tmp-BBBBBB", cache);
  snprintf(cmd, sizeof cmd, "echo x > '%s' && touch -d '2 hours ago' '%s' && echo y > '%s'", stale, stale, fresh);
  CHECK(system(cmd) == 0);
  char *s1 = answer(dir, "int8"); /* a miss: writes, so sweeps */
  CHECK(!strcmp(status, "miss") && s1 != NULL);
  free(s1);
  CHECK(access(stale, F_OK) != 0 && access(fresh, F_OK) == 0);

  /* concurrent processes on an empty cache */
  snprintf(cmd, sizeof cmd, "rm -rf '%s/packed' '%s/digests'", cache, cache);
  CHECK(system(cmd) == 0);
  enum { KIDS = 4 };
  int fds[KIDS][2];
  pid_t pids[KIDS];
  for (int k = 0; k < KIDS; k++) {
    if (pipe(fds[k]) != 0) return 1;
    pids[k] = fork();
    if (pids[k] == 0) {
      close(fds[k][0]);
      char *x = answer(dir, NULL);
      int ok = same(x, ref) && (!strcmp(status, "miss") || !strcmp(status, "hit"));
      if (write(fds[k][1], &ok, sizeof ok) != (ssize_t)sizeof ok) _exit(3);
      _exit(0);
    }
    close(fds[k][1]);
  }
  for (int k = 0; k < KIDS; k++) {
    int ok = 0, ws = 0;
    CHECK(read(fds[k][0], &ok, sizeof ok) == (ssize_t)sizeof ok && ok);
    close(fds[k][0]);
    waitpid(pids[k], &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
  CHECK(entry(cache, "-fp32.laya", ent, sizeof ent) == 1); /* one entry, no temp files left as entries */
  char *e1 = answer(dir, NULL);
  CHECK(!strcmp(status, "hit") && same(e1, ref));

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  CHECK(system(cmd) == 0);
  free(ref), free(ref16), free(a1), free(a2), free(b1), free(b2), free(c1), free(c2), free(c3), free(c4), free(d1), free(e1);
  return check_summary("model/test_pack_cache");
}
