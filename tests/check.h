/* check.h: the few assertions our C tests use. A failed CHECK prints file:line and the
 * expression, counts the failure, and the test continues; main returns check_summary(). */
#ifndef LAYA_TEST_CHECK_H
#define LAYA_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures = 0, check_count = 0;

#define CHECK(cond)                                                             \
  do {                                                                          \
    check_count++;                                                              \
    if (!(cond)) {                                                              \
      check_failures++;                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                           \
  } while (0)

#define CHECK_STREQ(a, b)                                                                    \
  do {                                                                                       \
    check_count++;                                                                           \
    const char *a_ = (a), *b_ = (b);                                                         \
    if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                                 \
      check_failures++;                                                                      \
      fprintf(stderr, "%s:%d: CHECK_STREQ failed:\n  got:  %s\n  want: %s\n", __FILE__,      \
              __LINE__, a_ ? a_ : "(null)", b_ ? b_ : "(null)");                             \
    }                                                                                        \
  } while (0)

static inline int check_summary(const char *name) {
  printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
  return check_failures ? 1 : 0;
}

#endif
