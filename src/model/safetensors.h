/*
 * safetensors.h: a memory-mapped safetensors file. The header is checked in full at open
 * (length, JSON, dtypes, shapes, offsets inside the data area, no two tensors overlapping), so
 * every tensor handed out afterwards points at bytes that exist. Nothing is copied.
 */
#ifndef LAYA_MODEL_SAFETENSORS_H
#define LAYA_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "model/weights.h"

typedef struct st_file {
  char *path;
  void *map;
  size_t size;
  tensor *tensors; /* in header order */
  int n_tensors;
  arena mem; /* names and the parsed header */
} st_file;

/* Map and validate `path`. Errors name the file and the problem; returns 0 or a laya_status. */
int st_open(st_file *f, const char *path, laya_error *err);
const tensor *st_find(const st_file *f, const char *name);
/* How many elements of t are NaN or infinite (read in place; about a memory pass). */
int64_t st_count_nonfinite(const tensor *t);
void st_close(st_file *f);

/* Bytes per element of a dtype, and its safetensors spelling. */
size_t tensor_dtype_size(tensor_dtype dt);
const char *tensor_dtype_name(tensor_dtype dt);

#endif
