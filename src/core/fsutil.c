#include "core/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *fs_read_file(const char *path, size_t *len, laya_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    laya_err(err, LAYA_ERR_IO, e == ENOENT ? "FileNotFoundError" : "OSError", "%s: cannot open: %s",
             path, strerror(e));
    return NULL;
  }
  /* a directory opens fine on Linux and only fails at read: name the real problem */
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    laya_err(err, LAYA_ERR_IO, "IsADirectoryError", "%s: is a directory, not a file", path);
    return NULL;
  }
  size_t cap = 1 << 14, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (n + 1 < cap) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory reading the file", path);
    return NULL;
  }
  if (bad) {
    free(buf);
    laya_err(err, LAYA_ERR_IO, "OSError", "%s: read error", path);
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

char *fs_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  bool slash = la > 0 && a[la - 1] == '/';
  char *p = malloc(la + lb + 2);
  if (!p) return NULL;
  memcpy(p, a, la);
  size_t o = la;
  if (!slash) p[o++] = '/';
  memcpy(p + o, b, lb + 1);
  return p;
}

bool fs_is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

bool fs_is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}
