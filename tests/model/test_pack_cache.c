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
 *     leave one valid entry;
 *   - verified stamps: a hit that checked every checksum writes ENTRY.verified once the entry has
 *     settled; a byte flipped after it is still found (the write changes the entry's change time);
 *     a stamp that vouches for the file's current identity (forged here on purpose) skips the array
 *     checksums, a stamp that does not match is ignored;
 *   - an entry holds no token embeddings (the hit takes the checkpoint's): opening it as an artifact
 *     is refused;
 *   - the NaN/Inf scan's result is memoised under nonfinite/ by the weights' SHA-256: a hit warns
 *     of the same tensors as the miss that scanned, and a damaged memo is ignored (scanned again).
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
#include "core/fsutil.h"
#include "laya.h"
#include "model/safetensors.h"

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

/* The warnings of an open of dir (fp32), in the model info, into out (empty when none). */
static void open_warnings(const char *dir, char *out, size_t cap) {
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  laya_error err;
  out[0] = 0;
  status[0] = 0;
  laya_model *m = laya_open(dir, &o, &err);
  if (!m) return;
  const char *info = laya_model_info(m), *p = strstr(info, "NaN or infinite"), *q = strstr(info, "\"pack_cache\": \"");
  if (p) snprintf(out, cap, "%.200s", p);
  if (q) {
    q += 15;
    size_t n = strcspn(q, "\"");
    snprintf(status, sizeof status, "%.*s", (int)(n < sizeof status - 1 ? n : sizeof status - 1), q);
  }
  laya_close(m);
}

static void write_text(const char *p, const char *text) {
  FILE *f = fopen(p, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* ENTRY.verified as pack_cache.c writes it, for the entry as it is now. */
static void forge_stamp(const char *ent) {
  struct stat st;
  char p[1500], text[200];
  if (stat(ent, &st) != 0) return;
  snprintf(p, sizeof p, "%s.verified", ent);
  snprintf(text, sizeof text, "laya-verified-1 %llu %llu %lld %lld.%09ld %lld.%09ld\n", (unsigned long long)st.st_dev,
           (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
           (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  write_text(p, text);
}

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

  /* an entry leaves the token embeddings in the checkpoint (its key holds their SHA-256), so it is
   * not a standalone artifact: opening it directly is refused, naming why */
  {
    laya_options o;
    laya_options_init(&o);
    o.quiet = 1;
    laya_error err;
    laya_model *m = laya_open(ent, &o, &err);
    CHECK(m == NULL && strstr(err.message, "pack cache entry") != NULL);
    if (m) laya_close(m);
  }

  /* a hit that checked every checksum stamps the settled entry; later hits trust the stamp */
  char stamp[1500];
  snprintf(stamp, sizeof stamp, "%s.verified", ent);
  usleep(300000); /* past pack_cache.c's settle time */
  char *v1 = answer(dir, NULL);
  CHECK(!strcmp(status, "hit") && same(v1, ref));
  CHECK(access(stamp, F_OK) == 0);
  char *v2 = answer(dir, NULL);
  CHECK(!strcmp(status, "hit") && same(v2, ref));
  free(v1), free(v2);

  /* a corrupted entry is rebuilt, never trusted: the flip changes the entry's change time, so the
   * stamp no longer matches and every checksum is checked */
  long size = file_size(ent);
  flip_byte(ent, size / 2);
  {
    /* the stamp is what skips the checksums: forged for the flipped file, the open trusts it */
    char saved[300] = "";
    FILE *sf = fopen(stamp, "r");
    if (sf) {
      size_t k = fread(saved, 1, sizeof saved - 1, sf);
      saved[k] = 0;
      fclose(sf);
    }
    forge_stamp(ent);
    char *t = answer(dir, NULL);
    CHECK(!strcmp(status, "hit"));
    free(t);
    write_text(stamp, saved); /* the stamp of the file before the flip: no match now */
  }
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

  /* the NaN/Inf scan's result comes from the memo on a hit */
  {
    char nan_dir[1200], p[1400], w1[300], w2[300], w3[300];
    snprintf(nan_dir, sizeof nan_dir, "%s/ckpt-nan", cache);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", dir, nan_dir);
    CHECK(system(cmd) == 0);
    snprintf(p, sizeof p, "%s/model.safetensors", nan_dir);
    size_t n = 0;
    char *bytes = fs_read_file(p, &n, NULL);
    st_file stf;
    laya_error err;
    CHECK(bytes && st_open(&stf, p, &err) == 0);
    const tensor *t = bytes ? st_find(&stf, "encoder.layers.1.mlp.Wo.weight") : NULL;
    CHECK(t != NULL);
    if (t) {
      size_t o = (size_t)((const char *)t->data - (const char *)stf.map), es = tensor_dtype_size(t->dtype);
      const unsigned char nan32[4] = {0, 0, 0xc0, 0x7f}, nanb16[2] = {0xc0, 0x7f}, nanh[2] = {0x00, 0x7e};
      const unsigned char *nan = es == 4 ? nan32 : t->dtype == DT_BF16 ? nanb16 : nanh;
      memcpy(bytes + o + 5 * es, nan, es);
      memcpy(bytes + o + 9 * es, nan, es);
      st_close(&stf);
      unlink(p);
      FILE *f = fopen(p, "wb");
      if (f) {
        fwrite(bytes, 1, n, f);
        fclose(f);
      }
    }
    free(bytes);
    open_warnings(nan_dir, w1, sizeof w1);
    CHECK(!strcmp(status, "miss"));
    CHECK(strstr(w1, "NaN or infinite weight values in 1 tensor") && strstr(w1, "'encoder.layers.1.mlp.Wo.weight' (2)"));
    snprintf(cmd, sizeof cmd, "test $(ls '%s/nonfinite' | wc -l) -ge 2", cache); /* the clean weights' memo too */
    CHECK(system(cmd) == 0);
    open_warnings(nan_dir, w2, sizeof w2);
    CHECK(!strcmp(status, "hit") && !strcmp(w1, w2));
    /* a damaged memo (its check no longer matches) is ignored: the weights are scanned again */
    snprintf(cmd, sizeof cmd, "for f in '%s'/nonfinite/*; do sed -i '1s/ 2 1 / 0 0 /' \"$f\"; done", cache);
    CHECK(system(cmd) == 0);
    open_warnings(nan_dir, w3, sizeof w3);
    CHECK(!strcmp(status, "hit") && !strcmp(w1, w3));
    /* the clean checkpoint's hit warns of nothing */
    open_warnings(dir, w3, sizeof w3);
    CHECK(!strcmp(status, "hit") && w3[0] == 0);
  }

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
