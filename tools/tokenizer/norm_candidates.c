/* norm_candidates.c: list the code points that utf8proc's normalization touches (for
 * gen_unicode_tables.py, which asks HF tokenizers whether it touches them too).
 * Output, one per line: cp ccc | canonical decomposition | compatibility decomposition (hex). */
#include <stdio.h>
#include <utf8proc.h>

static void decomp(utf8proc_int32_t cp, utf8proc_option_t opt) {
  utf8proc_int32_t buf[32];
  int last = 0;
  utf8proc_ssize_t n = utf8proc_decompose_char(cp, buf, 32, opt | UTF8PROC_DECOMPOSE, &last);
  for (utf8proc_ssize_t i = 0; i < n && i < 32; i++) printf(" %X", (unsigned)buf[i]);
}

int main(void) {
  for (utf8proc_int32_t cp = 0; cp < 0x110000; cp++) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    if (p->combining_class == 0 && p->decomp_seqindex == UINT16_MAX) continue;
    printf("%X %d |", (unsigned)cp, p->combining_class);
    decomp(cp, 0);
    printf(" |");
    decomp(cp, UTF8PROC_COMPAT);
    printf("\n");
  }
  return 0;
}
