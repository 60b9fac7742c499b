/* test_fsutil: whole-file reads name the path and the problem, and read every byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "core/fsutil.h"

int main(void) {
  char dir[] = "/tmp/laya_fsutil_XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  char *file = fs_join(dir, "data.bin");
  CHECK(file && strncmp(file, dir, strlen(dir)) == 0 && file[strlen(dir)] == '/');

  /* larger than the reader's first buffer, with NUL bytes inside */
  size_t n = (1 << 15) + 7;
  unsigned char *want = malloc(n);
  for (size_t i = 0; i < n; i++) want[i] = (unsigned char)(i * 131u);
  FILE *f = fopen(file, "wb");
  CHECK(f && fwrite(want, 1, n, f) == n);
  fclose(f);

  laya_error err = {0};
  size_t len = 0;
  char *got = fs_read_file(file, &len, &err);
  CHECK(got && len == n && memcmp(got, want, n) == 0 && got[n] == 0);
  CHECK(fs_is_file(file) && !fs_is_dir(file) && fs_is_dir(dir));
  free(got);

  memset(&err, 0, sizeof err);
  CHECK(fs_read_file(dir, &len, &err) == NULL);
  CHECK(strcmp(err.kind, "IsADirectoryError") == 0 && strstr(err.message, dir) && strstr(err.message, "directory"));

  char *missing = fs_join(dir, "absent.json");
  memset(&err, 0, sizeof err);
  CHECK(fs_read_file(missing, &len, &err) == NULL);
  CHECK(strcmp(err.kind, "FileNotFoundError") == 0 && strstr(err.message, missing));
  CHECK(fs_read_file(missing, NULL, NULL) == NULL); /* no error slot: still refused, no crash */

  /* a size limit refuses before reading; exactly at the limit is fine */
  memset(&err, 0, sizeof err);
  CHECK(fs_read_file_max(file, n - 1, &len, &err) == NULL);
  CHECK(strstr(err.message, file) && strstr(err.message, "more than the"));
  got = fs_read_file_max(file, n, &len, &err);
  CHECK(got && len == n);
  free(got);

  /* only regular files: a device that never ends and a FIFO with no writer are refused at once */
  memset(&err, 0, sizeof err);
  CHECK(fs_read_file("/dev/zero", &len, &err) == NULL);
  CHECK(strstr(err.message, "/dev/zero") && strstr(err.message, "not a regular file"));
  char *fifo = fs_join(dir, "fifo");
  CHECK(mkfifo(fifo, 0600) == 0);
  alarm(60); /* a read that blocks fails the test rather than hanging it */
  memset(&err, 0, sizeof err);
  CHECK(fs_read_file(fifo, &len, &err) == NULL);
  CHECK(strstr(err.message, fifo) && strstr(err.message, "not a regular file"));
  alarm(0);
  unlink(fifo);
  free(fifo);

  unlink(file);
  rmdir(dir);
  free(missing), free(file), free(want);
  return check_summary("fsutil");
}
