#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *fs_read_file_max(const char *path, size_t max_bytes, size_t *len, laya_error *err) {
  /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer; it is refused below */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    laya_err(err, LAYA_ERR_IO, e == ENOENT ? "FileNotFoundError" : "OSError", "%s: cannot open: %s",
             path, strerror(e));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    laya_err(err, LAYA_ERR_IO, "OSError", "%s: cannot stat: %s", path, strerror(e));
    return NULL;
  }
  /* a directory opens fine on Linux and only fails at read: name the real problem */
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    laya_err(err, LAYA_ERR_IO, "IsADirectoryError", "%s: is a directory, not a file", path);
    return NULL;
  }
  /* a device (/dev/zero), FIFO or socket has no size to check and may never end */
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    laya_err(err, LAYA_ERR_IO, "OSError", "%s: not a regular file (a device, FIFO or socket); refused",
             path);
    return NULL;
  }
  if (max_bytes && (unsigned long long)st.st_size > (unsigned long long)max_bytes) {
    close(fd);
    laya_err(err, LAYA_ERR_IO, "OSError", "%s: %lld bytes, more than the %zu bytes accepted for this file",
             path, (long long)st.st_size, max_bytes);
    return NULL;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  /* read what the size says, plus one byte to see a file still growing */
  size_t want = (size_t)st.st_size, n = 0;
  char *buf = malloc(want + 2);
  if (!buf) {
    close(fd);
    laya_err(err, LAYA_ERR_NOMEM, NULL, "%s: out of memory reading the file", path);
    return NULL;
  }
  int bad = 0;
  while (n < want + 1) {
    ssize_t got = read(fd, buf + n, want + 1 - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      bad = errno;
      break;
    }
    if (got == 0) break;
    n += (size_t)got;
  }
  close(fd);
  if (bad) {
    free(buf);
    laya_err(err, LAYA_ERR_IO, "OSError", "%s: read error: %s", path, strerror(bad));
    return NULL;
  }
  if (n > want) {
    free(buf);
    laya_err(err, LAYA_ERR_IO, "OSError", "%s: the file grew while it was read; refused", path);
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

char *fs_read_file(const char *path, size_t *len, laya_error *err) {
  return fs_read_file_max(path, 0, len, err);
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
