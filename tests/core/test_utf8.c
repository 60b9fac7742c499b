/* test_utf8: the shared UTF-8 encoder against the decoder at every length boundary, surrogates in
 * their WTF-8 form, sb_put_cp, and code-point counting. */
#include <string.h>

#include "../check.h"
#include "core/pystr.h"
#include "core/strbuf.h"
#include "core/utf8.h"

int main(void) {
  static const uint32_t cps[] = {0,      0x41,   0x7F,   0x80,    0x7FF,   0x800,
                                 0xD800, 0xDFFF, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF};
  static const int lens[] = {1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4};
  for (size_t i = 0; i < sizeof cps / sizeof *cps; i++) {
    char o[4];
    int l = utf8_put(o, cps[i]);
    CHECK(l == lens[i]);
    uint32_t back = 0xFFFFFFFFu;
    CHECK(py_utf8_next(o, (size_t)l, 0, &back) == l && back == cps[i]);
  }
  char o[4];
  CHECK(utf8_put(o, 0xE9) == 2 && !memcmp(o, "\xC3\xA9", 2));
  CHECK(utf8_put(o, 0xD83D) == 3 && !memcmp(o, "\xED\xA0\xBD", 3));
  CHECK(utf8_put(o, 0x1F600) == 4 && !memcmp(o, "\xF0\x9F\x98\x80", 4));

  strbuf sb;
  sb_init(&sb);
  sb_put_cp(&sb, 'a');
  sb_put_cp(&sb, 0x20AC);
  sb_put_cp(&sb, 0x1F600);
  CHECK(!sb.oom && sb.len == 8);
  CHECK_STREQ(sb_cstr(&sb), "a\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(utf8_count(sb_cstr(&sb)) == 3);
  sb_free(&sb);
  CHECK(utf8_count("") == 0 && utf8_count("h\xC3\xA9llo") == 5);
  return check_summary("test_utf8");
}
