/* utf8.h: the one UTF-8 encoder and code-point counter shared by the JSON reader, the Python
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

#endif
