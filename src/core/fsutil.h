/* fsutil.h: small file helpers (whole-file reads, paths). */
#ifndef LAYA_CORE_FSUTIL_H
#define LAYA_CORE_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

/* Whole file, NUL-terminated, malloc'd. Errors name the path (FileNotFoundError when absent).
 * Only a regular file is read (a device such as /dev/zero, a FIFO or a socket is refused without
 * blocking), and only up to the size it had when opened. */
char *fs_read_file(const char *path, size_t *len, laya_error *err);
/* The same, refusing a file larger than max_bytes (0: no limit) before reading any of it. */
char *fs_read_file_max(const char *path, size_t max_bytes, size_t *len, laya_error *err);

/* Size limits for the files of a checkpoint, checked against the file before it is read. The
 * largest real ones are far below: a Gemma-3-vocabulary tokenizer.json is ~33 MB, configs KBs. */
#define FS_MAX_TOKENIZER_BYTES ((size_t)1 << 30) /* tokenizer.json */
#define FS_MAX_CONFIG_BYTES ((size_t)64 << 20)   /* rl_agent_config.json, encoder/config.json,
                                                    tokenizer_config.json, a calibration file */
/* "a" + "/" + "b" (malloc'd). */
char *fs_join(const char *a, const char *b);
bool fs_is_file(const char *path);
bool fs_is_dir(const char *path);

#endif
