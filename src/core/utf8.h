/* utf8.h: the one UTF-8 encoder, validator and code-point counter shared by the JSON reader, the Python
 * str/repr helpers, the tokenizer and the router. Inline: the tokenizer calls it per character. */
#ifndef LAYA_CORE_UTF8_H
#define LAYA_CORE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Write cp as UTF-8 to o (room for 4 bytes); returns the length. Surrogates get their 3-byte
 * (WTF-8) form, which is what the JSON reader wants for a lone '\udXXX'. */
static inline int utf8_put(char *o, uint32_t cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Number of code points in a NUL-terminated UTF-8 string (Python len()). */
static inline size_t utf8_count(const char *s) {
  size_t k = 0;
  for (; *s; s++) k += ((unsigned char)*s & 0xC0) != 0x80;
  return k;
}

static inline int utf8_seq_len(const unsigned char *p, size_t avail);

/* Byte offset of the first byte of s[0..n) that starts no well-formed UTF-8 sequence, or -1 when
 * all of it is UTF-8. */
static inline long utf8_first_invalid(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    int k = utf8_seq_len((const unsigned char *)s + i, n - i);
    if (!k) return (long)i;
    i += (size_t)k;
  }
  return -1;
}

/* Length (1..4) of the well-formed UTF-8 sequence at p, given avail bytes from p; 0 when it is
 * not one (stray continuation byte, overlong form, surrogate, past U+10FFFF, cut short). */
static inline int utf8_seq_len(const unsigned char *p, size_t avail) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (avail < (size_t)n) return 0;
  for (int k = 1; k < n; k++) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[k] & 0x3F);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  return n;
}

#endif
