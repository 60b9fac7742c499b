/* hash64.h: a fast 64-bit checksum for detecting corrupt bytes (bit flips, truncation, overwrites)
 * in files we write and map, such as `laya convert` artifacts. Not cryptographic: SHA-256 (core/
 * sha256.h) is for telling files apart where someone might forge one. */
#ifndef LAYA_CORE_HASH64_H
#define LAYA_CORE_HASH64_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash64(const void *data, size_t n, uint64_t seed);

#endif
