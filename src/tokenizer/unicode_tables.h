/*
 * unicode_tables.h: the character classes Hugging Face `tokenizers` uses, probed from the library
 * itself (tools/tokenizer/gen_unicode_tables.py writes unicode_tables.c).
 *
 * The reference mixes three Unicode sources (Oniguruma for its split regexes, the Rust regex
 * crate, Rust's std / unicode_categories), each at its own Unicode version; utf8proc 2.8 would
 * disagree with some of them on recently assigned code points. The classes below are what the
 * reference actually does, so ids match on every code point. utf8proc still does NFC/NFD/NFKC/NFKD.
 */
#ifndef LAYA_TOKENIZER_UNICODE_TABLES_H
#define LAYA_TOKENIZER_UNICODE_TABLES_H

#include <stddef.h>
#include <stdint.h>

extern const uint32_t uc_onig_letter[][2];      /* Oniguruma \p{L} */
extern const size_t uc_onig_letter_count;
extern const uint32_t uc_onig_number[][2];      /* Oniguruma \p{N} */
extern const size_t uc_onig_number_count;
extern const uint32_t uc_onig_space[][2];       /* Oniguruma \s */
extern const size_t uc_onig_space_count;
extern const uint32_t uc_rust_word[][2];        /* Rust regex \w */
extern const size_t uc_rust_word_count;
extern const uint32_t uc_rust_regex_space[][2]; /* Rust regex \s */
extern const size_t uc_rust_regex_space_count;
extern const uint32_t uc_rust_whitespace[][2];  /* char::is_whitespace */
extern const size_t uc_rust_whitespace_count;
extern const uint32_t uc_punctuation[][2];      /* Punctuation pre-tokenizer's is_punc */
extern const size_t uc_punctuation_count;
extern const uint32_t uc_numeric[][2];          /* char::is_numeric (Digits pre-tokenizer) */
extern const size_t uc_numeric_count;
extern const uint32_t uc_norm_opaque[][2];      /* normalized by utf8proc, untouched by the reference */
extern const size_t uc_norm_opaque_count;
extern const uint32_t uc_lowercase[][4];        /* cp -> char::to_lowercase (1 to 3 cps) */
extern const size_t uc_lowercase_count;

/* Class bits, looked up in one uint16 per code point (built once per process). */
enum {
  UC_L = 1,       /* Oniguruma \p{L} */
  UC_N = 2,       /* Oniguruma \p{N} */
  UC_S = 4,       /* Oniguruma \s */
  UC_W = 8,       /* Rust regex \w */
  UC_RS = 16,     /* Rust regex \s */
  UC_WS = 32,     /* char::is_whitespace */
  UC_PUNC = 64,   /* is_punc */
  UC_NUMERIC = 128, /* char::is_numeric */
  UC_NORM_OPAQUE = 256 /* the reference's NFC/NFD/NFKC/NFKD does not know it (newer Unicode) */
};

/* Pointer to 0x110000 class entries; thread-safe, built on first call. */
const uint16_t *uc_classes(void);

static inline uint16_t uc_class(const uint16_t *tab, uint32_t cp) { return cp < 0x110000 ? tab[cp] : 0; }

/* char::to_lowercase: writes 1 to 3 code points to out, returns the count. */
int uc_to_lower(uint32_t cp, uint32_t out[3]);

#endif
