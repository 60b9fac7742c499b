/* pyrepr.c: Python's len(str) for the UTF-8 text Laya measures (state sizes are in code points). */
#include "serve/serve.h"

size_t utf8_cp_len(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
  return k;
}
