/*
 * pattern.c: finding the matches of a Split / Replace pattern, as the reference does.
 *
 * The reference compiles every pattern with Oniguruma (a string pattern is escaped first) and
 * iterates with rust-onig's find_iter: search from the end of the previous match, and refuse an
 * empty match that sits exactly where the previous match ended (step one character instead).
 * Literal strings are searched directly (same matches, no regex engine). The two regexes that
 * every byte-level tokenizer runs on all of its text -- GPT-2's and Llama 3's -- have hand
 * scanners here; tests/tokenizer/test_scanners.c checks them against Oniguruma.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "tokenizer/internal.h"
#include "tokenizer/unicode_tables.h"

static const char GPT2_RE[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char LLAMA3_RE[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static pthread_once_t onig_once = PTHREAD_ONCE_INIT;
static void onig_setup(void) {
  OnigEncoding enc = ONIG_ENCODING_UTF8;
  onig_initialize(&enc, 1);
}

/* The reference's Oniguruma is newer than Debian's (Unicode 16 against 15: ~9,300 letters and
 * 120 numbers apart), so \p{L} and \p{N} are spelled out as the reference's ranges before the
 * pattern reaches our Oniguruma. Other escapes are left alone. */
static void put_ranges(strbuf *sb, const uint32_t (*r)[2], size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (r[i][0] == r[i][1])
      sb_printf(sb, "\\x{%X}", r[i][0]);
    else
      sb_printf(sb, "\\x{%X}-\\x{%X}", r[i][0], r[i][1]);
  }
}

static char *expand_classes(const char *src, size_t len, size_t *out_len) {
  strbuf sb;
  sb_init(&sb);
  int depth = 0;
  for (size_t i = 0; i < len; i++) {
    char c = src[i];
    if (c == '\\' && i + 1 < len) {
      if (i + 4 < len && src[i + 1] == 'p' && src[i + 2] == '{' && (src[i + 3] == 'L' || src[i + 3] == 'N') &&
          src[i + 4] == '}') {
        bool letter = src[i + 3] == 'L';
        if (!depth) sb_putc(&sb, '[');
        if (letter)
          put_ranges(&sb, uc_onig_letter, uc_onig_letter_count);
        else
          put_ranges(&sb, uc_onig_number, uc_onig_number_count);
        if (!depth) sb_putc(&sb, ']');
        i += 4;
        continue;
      }
      sb_append(&sb, src + i, 2);
      i++;
      continue;
    }
    if (c == '[') depth++;
    if (c == ']' && depth > 0) depth--;
    sb_putc(&sb, c);
  }
  if (sb.oom) {
    sb_free(&sb);
    return NULL;
  }
  *out_len = sb.len;
  return sb_steal(&sb);
}

int pattern_compile(tk_pattern *pat, const char *src, size_t len, bool is_regex, arena *a,
                    laya_error *err) {
  memset(pat, 0, sizeof *pat);
  pat->lit = arena_strndup(a, src, len);
  pat->lit_len = len;
  if (!pat->lit) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  if (!is_regex && len > 0) {
    pat->kind = PAT_LITERAL;
    return 0;
  }
  /* An empty string pattern behaves as the empty regex (a match at every character boundary). */
  pthread_once(&onig_once, onig_setup);
  OnigErrorInfo einfo;
  size_t xlen = 0;
  char *x = expand_classes(src, len, &xlen);
  if (!x) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  int r = onig_new(&pat->re, (const OnigUChar *)x, (const OnigUChar *)x + xlen, ONIG_OPTION_NONE,
                   ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &einfo);
  free(x);
  if (r != ONIG_NORMAL) {
    OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(msg, r, &einfo);
    pat->re = NULL;
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "invalid regex /%.*s/: %s", (int)len, src,
                    (const char *)msg);
  }
  pat->kind = PAT_REGEX;
  if (is_regex && len == sizeof GPT2_RE - 1 && memcmp(src, GPT2_RE, len) == 0) pat->kind = PAT_GPT2;
  if (is_regex && len == sizeof LLAMA3_RE - 1 && memcmp(src, LLAMA3_RE, len) == 0)
    pat->kind = PAT_LLAMA3;
  return 0;
}

void pattern_free(tk_pattern *pat) {
  if (pat->re) onig_free(pat->re);
  pat->re = NULL;
}

int pattern_find_regex(const tk_pattern *pat, const char *text, size_t len, span_vec *out,
                       laya_error *err) {
  OnigRegion *region = onig_region_new();
  if (!region) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  const OnigUChar *s = (const OnigUChar *)text, *end = s + len;
  size_t last_end = 0;
  long last_match_end = -1;
  int rc = 0;
  while (last_end <= len) {
    onig_region_clear(region);
    int r = onig_search(pat->re, s, end, s + last_end, end, region, ONIG_OPTION_NONE);
    if (r == ONIG_MISMATCH) break;
    if (r < 0) {
      OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
      onig_error_code_to_str(msg, r);
      rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "regex /%s/ failed: %s", pat->lit,
                    (const char *)msg);
      break;
    }
    size_t ms = (size_t)region->beg[0], me = (size_t)region->end[0];
    if (ms == me && last_match_end == (long)me) {
      /* step over one character */
      if (last_end < len) {
        uint32_t cp;
        last_end += (size_t)utf8_decode(s + last_end, &cp);
      } else {
        last_end++;
      }
      continue;
    }
    last_end = me;
    last_match_end = (long)me;
    if (!span_push(out, (uint32_t)ms, (uint32_t)me)) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      break;
    }
  }
  onig_region_free(region, 1);
  return rc;
}

static int find_literal(const tk_pattern *pat, const char *text, size_t len, span_vec *out,
                        laya_error *err) {
  const char *p = text, *end = text + len;
  size_t n = pat->lit_len;
  while ((size_t)(end - p) >= n) {
    const char *m = n == 1 ? memchr(p, pat->lit[0], (size_t)(end - p))
                           : memmem(p, (size_t)(end - p), pat->lit, n);
    if (!m) break;
    if (!span_push(out, (uint32_t)(m - text), (uint32_t)(m - text + n)))
      return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    p = m + n;
  }
  return 0;
}

int pattern_find(const tk_pattern *pat, const char *text, size_t len, span_vec *out,
                 laya_error *err) {
  switch (pat->kind) {
    case PAT_LITERAL:
      return find_literal(pat, text, len, out, err);
    case PAT_GPT2:
      if (!scan_gpt2(text, len, out)) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      break;
    case PAT_LLAMA3:
      if (!scan_llama3(text, len, out)) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      break;
    default:
      return pattern_find_regex(pat, text, len, out, err);
  }
  return 0;
}

/* ---- hand scanners ---- */

typedef struct scanner {
  const unsigned char *s;
  size_t len;
  const uint16_t *cls;
} scanner;

static inline uint32_t cp_at(const scanner *sc, size_t i, int *n) {
  uint32_t cp;
  *n = utf8_decode(sc->s + i, &cp);
  return cp;
}

static inline uint8_t cls_at(const scanner *sc, size_t i, int *n) {
  unsigned char c = sc->s[i];
  if (c < 0x80) {
    *n = 1;
    return sc->cls[c];
  }
  return uc_class(sc->cls, cp_at(sc, i, n));
}

/* Advance over characters whose class has any of `want` bits and none of `avoid`. */
static inline size_t run_of(const scanner *sc, size_t i, uint8_t want, uint8_t avoid) {
  while (i < sc->len) {
    int n;
    uint8_t c = cls_at(sc, i, &n);
    if (!(c & want) || (c & avoid)) break;
    i += (size_t)n;
  }
  return i;
}

/* "Other": not \s, not \p{L}, not \p{N}. */
static inline size_t run_other(const scanner *sc, size_t i) {
  while (i < sc->len) {
    int n;
    uint8_t c = cls_at(sc, i, &n);
    if (c & (UC_S | UC_L | UC_N)) break;
    i += (size_t)n;
  }
  return i;
}

/* The whitespace alternatives shared by both regexes: \s+(?!\S) then \s+. `run_end` is the end of
 * the whitespace run starting at i, `last_start` the start of its last character. */
static inline size_t space_tail(const scanner *sc, size_t i, size_t run_end, size_t last_start) {
  if (run_end == sc->len) return run_end;
  if (last_start > i) return last_start; /* leave the last space to the next word */
  return run_end;
}

static inline bool is_contraction_ascii(const unsigned char *s, size_t i, size_t len, size_t *end) {
  /* 's 't 'm 'd 're 've 'll (case-sensitive; GPT-2) */
  if (i + 1 >= len) return false;
  unsigned char a = s[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') {
    *end = i + 2;
    return true;
  }
  if (i + 2 < len) {
    unsigned char b = s[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
      *end = i + 3;
      return true;
    }
  }
  return false;
}

bool scan_gpt2(const char *text, size_t len, span_vec *out) {
  scanner sc = {(const unsigned char *)text, len, uc_classes()};
  size_t i = 0;
  while (i < len) {
    size_t end;
    if (sc.s[i] == '\'' && is_contraction_ascii(sc.s, i, len, &end)) {
      if (!span_push(out, (uint32_t)i, (uint32_t)end)) return false;
      i = end;
      continue;
    }
    int n;
    uint8_t c = cls_at(&sc, i, &n);
    size_t start = i, body = i;
    (void)n;
    uint8_t bc = c;
    if (sc.s[i] == ' ' && i + 1 < len) {
      int n2;
      uint8_t c2 = cls_at(&sc, i + 1, &n2);
      if (!(c2 & UC_S)) {
        body = i + 1;
        bc = c2;
      }
    }
    if (bc & UC_L) {
      end = run_of(&sc, body, UC_L, 0);
    } else if (bc & UC_N) {
      end = run_of(&sc, body, UC_N, 0);
    } else if (!(bc & UC_S)) {
      end = run_other(&sc, body);
    } else {
      /* whitespace run */
      size_t j = i, last = i;
      while (j < len) {
        int m;
        if (!(cls_at(&sc, j, &m) & UC_S)) break;
        last = j;
        j += (size_t)m;
      }
      end = space_tail(&sc, i, j, last);
    }
    if (!span_push(out, (uint32_t)start, (uint32_t)end)) return false;
    i = end;
  }
  return true;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d): Oniguruma folds case with Unicode rules, so U+017F (long s)
 * and U+212A (Kelvin sign, irrelevant here) match too. */
static inline int fold_ascii(const scanner *sc, size_t i, size_t *next) {
  if (i >= sc->len) return 0;
  int n;
  uint32_t cp = cp_at(sc, i, &n);
  *next = i + (size_t)n;
  if (cp == 0x17F) return 's';
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? (int)cp + 32 : (int)cp;
  return 0;
}

static inline bool is_contraction_fold(const scanner *sc, size_t i, size_t *end) {
  size_t j, k;
  int a = fold_ascii(sc, i + 1, &j);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') {
    *end = j;
    return true;
  }
  if (a == 'r' || a == 'v' || a == 'l') {
    int b = fold_ascii(sc, j, &k);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
      *end = k;
      return true;
    }
  }
  return false;
}

bool scan_llama3(const char *text, size_t len, span_vec *out) {
  scanner sc = {(const unsigned char *)text, len, uc_classes()};
  size_t i = 0;
  while (i < len) {
    size_t end;
    unsigned char b0 = sc.s[i];
    if (b0 == '\'' && is_contraction_fold(&sc, i, &end)) {
      if (!span_push(out, (uint32_t)i, (uint32_t)end)) return false;
      i = end;
      continue;
    }
    int n;
    uint8_t c = cls_at(&sc, i, &n);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (c & UC_L) {
      end = run_of(&sc, i, UC_L, 0);
      goto emit;
    }
    if (b0 != '\r' && b0 != '\n' && !(c & UC_N) && i + (size_t)n < len) {
      int n2;
      if (cls_at(&sc, i + (size_t)n, &n2) & UC_L) {
        end = run_of(&sc, i + (size_t)n, UC_L, 0);
        goto emit;
      }
    }
    /* \p{N}{1,3} */
    if (c & UC_N) {
      end = i;
      for (int k = 0; k < 3 && end < len; k++) {
        int m;
        if (!(cls_at(&sc, end, &m) & UC_N)) break;
        end += (size_t)m;
      }
      goto emit;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    {
      size_t body = i;
      uint8_t bc = c;
      if (b0 == ' ' && i + 1 < len) {
        int n2;
        uint8_t c2 = cls_at(&sc, i + 1, &n2);
        if (!(c2 & (UC_S | UC_L | UC_N))) {
          body = i + 1;
          bc = c2;
        }
      }
      if (!(bc & (UC_S | UC_L | UC_N))) {
        end = run_other(&sc, body);
        while (end < len && (sc.s[end] == '\r' || sc.s[end] == '\n')) end++;
        goto emit;
      }
    }
    /* whitespace: \s*[\r\n]+ then \s+(?!\S) then \s+ */
    {
      size_t j = i, last = i, last_nl = (size_t)-1;
      while (j < len) {
        int m;
        if (!(cls_at(&sc, j, &m) & UC_S)) break;
        if (sc.s[j] == '\r' || sc.s[j] == '\n') last_nl = j;
        last = j;
        j += (size_t)m;
      }
      if (last_nl != (size_t)-1)
        end = last_nl + 1;
      else
        end = space_tail(&sc, i, j, last);
    }
  emit:
    if (!span_push(out, (uint32_t)i, (uint32_t)end)) return false;
    i = end;
  }
  return true;
}
