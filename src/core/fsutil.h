/* fsutil.h: small file helpers (whole-file reads, paths). */
#ifndef LAYA_CORE_FSUTIL_H
#define LAYA_CORE_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

/* Whole file, NUL-terminated, malloc'd. Errors name the path (FileNotFoundError when absent). */
char *fs_read_file(const char *path, size_t *len, laya_error *err);
/* "a" + "/" + "b" (malloc'd). */
char *fs_join(const char *a, const char *b);
bool fs_is_file(const char *path);
bool fs_is_dir(const char *path);

#endif
