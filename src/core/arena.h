/* arena.h: bump allocation for per-call and per-parse memory, freed all at once.
 * Blocks grow geometrically; arena_reset keeps the first block for reuse (no allocation in the
 * steady-state hot path once the arena has seen its largest request). */
#ifndef LAYA_CORE_ARENA_H
#define LAYA_CORE_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
  arena_block *head;
  size_t default_block;
} arena;

void arena_init(arena *a, size_t default_block);
/* 16-byte aligned, zero-initialised memory; NULL only when the system is out of memory. */
void *arena_alloc(arena *a, size_t n);
/* 64-byte aligned (for SIMD buffers), not zeroed. */
void *arena_alloc_aligned(arena *a, size_t n, size_t align);
char *arena_strndup(arena *a, const char *s, size_t n);
/* Free every block but the largest, which is kept and emptied. */
void arena_reset(arena *a);
void arena_free(arena *a);

#endif
