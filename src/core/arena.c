#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
  arena_block *next;
  size_t size, used;
  /* data follows, aligned to 64 */
};

#define BLOCK_HDR ((sizeof(arena_block) + 63) & ~(size_t)63)

void arena_init(arena *a, size_t default_block) {
  a->head = NULL;
  a->default_block = default_block ? default_block : 64 * 1024;
}

static arena_block *new_block(size_t size) {
  arena_block *b = NULL;
  if (posix_memalign((void **)&b, 64, BLOCK_HDR + size) != 0) return NULL;
  b->next = NULL;
  b->size = size;
  b->used = 0;
  return b;
}

void *arena_alloc_aligned(arena *a, size_t n, size_t align) {
  if (align < 16) align = 16;
  if (n > SIZE_MAX / 4) return NULL; /* a size computed from input: refuse rather than wrap */
  arena_block *b = a->head;
  if (b) {
    size_t off = (b->used + align - 1) & ~(align - 1);
    if (off + n <= b->size) {
      b->used = off + n;
      return (char *)b + BLOCK_HDR + off;
    }
  }
  size_t size = a->default_block;
  if (b && b->size * 2 > size) size = b->size * 2;
  if (size < n + align) size = n + align;
  arena_block *nb = new_block(size);
  if (!nb) return NULL;
  nb->next = a->head;
  a->head = nb;
  nb->used = n;
  return (char *)nb + BLOCK_HDR;
}

void *arena_alloc(arena *a, size_t n) {
  void *p = arena_alloc_aligned(a, n ? n : 1, 16);
  if (p) memset(p, 0, n);
  return p;
}

char *arena_strndup(arena *a, const char *s, size_t n) {
  char *p = arena_alloc_aligned(a, n + 1, 16);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void arena_reset(arena *a) {
  arena_block *keep = NULL;
  for (arena_block *b = a->head; b; b = b->next)
    if (!keep || b->size > keep->size) keep = b;
  arena_block *b = a->head;
  while (b) {
    arena_block *next = b->next;
    if (b != keep) free(b);
    b = next;
  }
  if (keep) {
    keep->next = NULL;
    keep->used = 0;
  }
  a->head = keep;
}

void arena_free(arena *a) {
  arena_block *b = a->head;
  while (b) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
  a->head = NULL;
}
