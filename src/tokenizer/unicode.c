/* unicode.c: class lookup and lowercase mapping over the probed tables in unicode_tables.c. */
#include <pthread.h>

#include "tokenizer/unicode_tables.h"

/* In BSS: pages are committed only where some class has members. */
static uint16_t class_table[0x110000];
static pthread_once_t class_once = PTHREAD_ONCE_INIT;

static void mark(uint16_t *tab, const uint32_t (*r)[2], size_t n, uint16_t bit) {
  for (size_t i = 0; i < n; i++)
    for (uint32_t c = r[i][0]; c <= r[i][1] && c < 0x110000; c++) tab[c] |= bit;
}

static void build_classes(void) {
  uint16_t *tab = class_table;
  mark(tab, uc_onig_letter, uc_onig_letter_count, UC_L);
  mark(tab, uc_onig_number, uc_onig_number_count, UC_N);
  mark(tab, uc_onig_space, uc_onig_space_count, UC_S);
  mark(tab, uc_rust_word, uc_rust_word_count, UC_W);
  mark(tab, uc_rust_regex_space, uc_rust_regex_space_count, UC_RS);
  mark(tab, uc_rust_whitespace, uc_rust_whitespace_count, UC_WS);
  mark(tab, uc_punctuation, uc_punctuation_count, UC_PUNC);
  mark(tab, uc_numeric, uc_numeric_count, UC_NUMERIC);
  mark(tab, uc_norm_opaque, uc_norm_opaque_count, UC_NORM_OPAQUE);
}

const uint16_t *uc_classes(void) {
  pthread_once(&class_once, build_classes);
  return class_table;
}

int uc_to_lower(uint32_t cp, uint32_t out[3]) {
  if (cp < 0x80) {
    out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return 1;
  }
  size_t lo = 0, hi = uc_lowercase_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (uc_lowercase[mid][0] < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < uc_lowercase_count && uc_lowercase[lo][0] == cp) {
    int n = 0;
    for (int k = 1; k <= 3 && uc_lowercase[lo][k]; k++) out[n++] = uc_lowercase[lo][k];
    return n;
  }
  out[0] = cp;
  return 1;
}
