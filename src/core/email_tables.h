/* email_tables.h: Python's character classes for the email cleaner (generated data, see
 * tools/ref/email_tables.py). Each table is sorted, non-overlapping [first, last] ranges. */
#ifndef LAYA_CORE_EMAIL_TABLES_H
#define LAYA_CORE_EMAIL_TABLES_H

#include <stddef.h>
#include <stdint.h>

extern const uint32_t em_word[][2];     /* re \w */
extern const size_t em_word_count;
extern const uint32_t em_decimal[][2];  /* re \d */
extern const size_t em_decimal_count;
extern const uint32_t em_space[][2];    /* re \s, str.isspace */
extern const size_t em_space_count;
extern const uint32_t em_alpha[][2];    /* str.isalpha */
extern const size_t em_alpha_count;
extern const uint32_t em_upper[][2];    /* str.isupper of one character */
extern const size_t em_upper_count;
extern const uint32_t em_titleish[][2]; /* unicodedata.category in Lu, Lt, Lo */
extern const size_t em_titleish_count;
extern const uint32_t em_mark[][2];     /* unicodedata.category M* */
extern const size_t em_mark_count;
extern const uint32_t em_fold[][2];     /* {letter, code point re.IGNORECASE matches it with} */
extern const size_t em_fold_count;

#endif
