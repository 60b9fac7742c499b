/*
 * email.c: Laya's email cleaning (laya/email.py in laya==0.4.15: clean_email_body, email_state).
 *
 * What is matched, and where it is specified:
 *   - the reply headers, sign-offs, device footers and disclaimer phrases below are the rules of
 *     laya/email.py (_QUOTE_HEADERS, _ATTRIBUTION_TAIL/_HEAD, _HEADER_FROM_NAME/_NEXT,
 *     _SIGNATURE_MARKERS with _is_english_signoff, _DEVICE_FOOTER, _DISCLAIMER), restated here as
 *     Oniguruma patterns. Laya matches them with Python's `re` on `str`, so the differences between
 *     the two engines are removed before a pattern is compiled: `\s`, `\d`, `\w` become the exact
 *     classes Python's `re` accepts (tables generated from Python by tools/ref/email_tables.py),
 *     IGNORECASE becomes, for each letter, the list of code points Python's IGNORECASE matches it
 *     with (so `i` also matches U+0130 and U+0131, `k` the Kelvin sign, `s` the long s), `.` is
 *     "anything but \n", and `\b` (always next to a letter in these rules) a look-around on `\w`;
 *   - the steps between the patterns (line splitting, the 60% sign-off window, sentence and
 *     paragraph splitting, fused lines, the length budget) are code, following clean_email_body's
 *     order; lengths and slices count code points as Python's str does.
 * tests/core/test_email.c replays fixtures written by the real laya (tools/ref/gen_email.py).
 */
#include "core/email.h"

#include <oniguruma.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/email_tables.h"
#include "core/pystr.h"
#include "core/utf8.h"
#include "laya.h"

/* ------------------------------------------------------------------ character classes */

static bool in_table(uint32_t cp, const uint32_t (*t)[2], size_t n) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cp < t[mid][0]) hi = mid;
    else if (cp > t[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

static bool is_space(uint32_t cp) { return in_table(cp, em_space, em_space_count); }
static bool is_word(uint32_t cp) { return in_table(cp, em_word, em_word_count); }
static bool is_decimal(uint32_t cp) { return in_table(cp, em_decimal, em_decimal_count); }
static bool is_alpha(uint32_t cp) { return in_table(cp, em_alpha, em_alpha_count); }
static bool is_upper(uint32_t cp) { return in_table(cp, em_upper, em_upper_count); }
static bool is_titleish(uint32_t cp) { return in_table(cp, em_titleish, em_titleish_count); }
static bool is_mark(uint32_t cp) { return in_table(cp, em_mark, em_mark_count); }

static size_t next_cp(const char *s, size_t n, size_t i, uint32_t *cp) {
  return i + (size_t)py_utf8_next(s, n, i, cp);
}

static size_t cp_count(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

/* Byte offset of code point number k (k <= count). */
static size_t cp_offset(const char *s, size_t n, size_t k) {
  size_t i = 0;
  while (i < n && k > 0) {
    i++;
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    k--;
  }
  return i;
}

/* Python's text[:k] length in code points for a text of len code points. */
static size_t slice_end(size_t len, int64_t k) {
  if (k >= 0) return (uint64_t)k < len ? (size_t)k : len;
  uint64_t back = k == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)(-k);
  return back >= len ? 0 : len - (size_t)back;
}

/* ------------------------------------------------------------------ patterns */

static void put_ranges(strbuf *sb, const uint32_t (*t)[2], size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (t[i][0] == t[i][1])
      sb_printf(sb, "\\x{%X}", t[i][0]);
    else
      sb_printf(sb, "\\x{%X}-\\x{%X}", t[i][0], t[i][1]);
  }
}

/* The other code points Python's IGNORECASE matches letter cp with. */
static void put_folds(strbuf *sb, uint32_t cp) {
  for (size_t i = 0; i < em_fold_count; i++)
    if (em_fold[i][0] == cp) sb_printf(sb, "\\x{%X}", em_fold[i][1]);
}

static bool has_folds(uint32_t cp) {
  for (size_t i = 0; i < em_fold_count; i++)
    if (em_fold[i][0] == cp) return true;
  return false;
}

static void put_cp(strbuf *sb, uint32_t cp) {
  if (cp < 0x80 && cp != '\\' && cp != ']' && cp != '[' && cp != '^' && cp != '-')
    sb_putc(sb, (char)cp);
  else if (cp < 0x80)
    sb_printf(sb, "\\x{%X}", cp);
  else
    sb_put_cp(sb, cp);
}

/* A pattern in the Python subset the rules use -> an Oniguruma pattern with Python's meaning. */
static void translate(strbuf *sb, const char *py, bool ci) {
  size_t n = strlen(py), i = 0;
  bool in_class = false;
  while (i < n) {
    uint32_t c;
    size_t j = next_cp(py, n, i, &c);
    if (c == '\\' && j < n) {
      char e = py[j];
      const uint32_t(*t)[2] = NULL;
      size_t tn = 0;
      if (e == 's' || e == 'S') t = em_space, tn = em_space_count;
      if (e == 'd') t = em_decimal, tn = em_decimal_count;
      if (e == 'w') t = em_word, tn = em_word_count;
      if (t) {
        if (!in_class) sb_puts(sb, e == 'S' ? "[^" : "[");
        put_ranges(sb, t, tn);
        if (!in_class) sb_putc(sb, ']');
      } else {
        sb_putc(sb, '\\');
        sb_putc(sb, e);
      }
      i = j + 1;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      sb_putc(sb, '[');
      if (j < n && py[j] == '^') sb_putc(sb, '^'), j++;
      i = j;
      continue;
    }
    if (in_class && c == ']') {
      in_class = false;
      sb_putc(sb, ']');
      i = j;
      continue;
    }
    if (!in_class && (c == '.' || c == '^' || c == '$')) {
      sb_puts(sb, c == '.' ? "[^\\n]" : c == '^' ? "\\A" : "\\z");
      i = j;
      continue;
    }
    if (ci && has_folds(c)) {
      if (in_class && j + 1 < n && py[j] == '-' && py[j + 1] != ']') {
        uint32_t hi;
        size_t k = next_cp(py, n, j + 1, &hi);
        sb_printf(sb, "\\x{%X}-\\x{%X}", c, hi);
        for (uint32_t x = c; x <= hi; x++) put_folds(sb, x);
        i = k;
        continue;
      }
      if (!in_class) sb_putc(sb, '[');
      put_cp(sb, c);
      put_folds(sb, c);
      if (!in_class) sb_putc(sb, ']');
      i = j;
      continue;
    }
    if (c < 0x80)
      sb_putc(sb, (char)c);
    else
      sb_put_cp(sb, c);
    i = j;
  }
}

/* The rules. `(?<!\w)` / `(?!\w)` stand for Python's `\b` before / after a letter. */
enum {
  RX_Q_EN,       /* Gmail-style "On <date>, <who> wrote:" */
  RX_Q_PT,       /* "Em <date> ... escreveu:" (a date: some digit) */
  RX_Q_ES,       /* "El <date> ... escribió:" */
  RX_Q_FR,       /* "Le <date> ... a écrit :" */
  RX_Q_BANNER,   /* "----- Original Message -----", "--- Forwarded Message ---" */
  RX_Q_BANNER2,  /* the Portuguese, Spanish and French banners */
  RX_Q_RULE,     /* a line of 8+ underscores (Outlook's separator) */
  RX_Q_FROM,     /* "From: ... <address>" */
  RX_Q_DE,       /* "De: ... <address>", "De : ..." */
  RX_ATTR_TAIL,  /* "...someone@x.com> wrote:" left alone by a wrapped attribution */
  RX_ATTR_HEAD,  /* the "On/Em/El/Le <date>" line the tail belongs to */
  RX_HDR_NAME,   /* "From: Name" / "De: Name" ... */
  RX_HDR_NEXT,   /* ... followed by "Sent:" / "Enviado:" / "Envoyé :" / a dated "Date:" line */
  RX_SIGN_HEAD,  /* English closing word(s); the rest of the line is judged in code */
  RX_SIGN_DASH,  /* "--" */
  RX_SIGN_ROM,   /* a Portuguese / Spanish / French closing alone on its line */
  RX_DEVICE,     /* "Sent from my iPhone", "Enviado do meu celular", "Envoyé depuis mon iPad" */
  RX_DISCLAIMER, /* confidentiality / wrong-recipient / print footers (searched, not anchored) */
  RX_COUNT
};

#define DEVICES                                                                                  \
  "iphone|ipad|android|ios|mobile|celular|telemóvel|móvil|galaxy|smartphone|samsung|tablet|"    \
  "outlook|yahoo|mail|e-?mail|gmail|windows"

static const struct {
  const char *py;
  bool ci;
} kRules[RX_COUNT] = {
    [RX_Q_EN] = {"^\\s*On .{0,300}wrote:\\s*$", true},
    [RX_Q_PT] = {"^\\s*Em (?=.*\\d).{0,300}escreveu:\\s*$", true},
    [RX_Q_ES] = {"^\\s*El (?=.*\\d).{0,300}escribi[óo]:\\s*$", true},
    [RX_Q_FR] = {"^\\s*Le (?=.*\\d).{0,300}a [eé]crit\\s*:\\s*$", true},
    [RX_Q_BANNER] = {"^\\s*-{2,}\\s*(Original|Forwarded) Message\\s*-{2,}", true},
    [RX_Q_BANNER2] = {"^\\s*-{2,}\\s*(Mensagem (original|encaminhada)|Mensaje (original|reenviado)|"
                      "Message d'origine)\\s*-{2,}",
                      true},
    [RX_Q_RULE] = {"^\\s*_{8,}\\s*$", false},
    [RX_Q_FROM] = {"^\\s*From:\\s.*[@<]", true},
    [RX_Q_DE] = {"^\\s*De\\s*:\\s.*[@<]", true},
    [RX_ATTR_TAIL] = {"^.{0,120}\\S@\\S+\\s+(wrote|escreveu|escribi[óo]|a [eé]crit)\\s*:\\s*$", true},
    [RX_ATTR_HEAD] = {"^\\s*(On|Em|El|Le) (?=.*\\d)", true},
    [RX_HDR_NAME] = {"^\\s*(De|From)\\s*:\\s+\\S", true},
    [RX_HDR_NEXT] = {"^\\s*(Enviad[oa]( em| el)?:\\s|Envoy[ée]( le)?\\s*:\\s|Sent:\\s|"
                     "(Data|Fecha|Date):\\s.*\\d{4})",
                     true},
    [RX_SIGN_HEAD] = {"^\\s*(best|kind|warmest|warm|many thanks|thanks|thank you|regards|cheers|"
                      "sincerely)(\\s+(and|&)\\s+regards|\\s+(regards|wishes|again|in advance|a lot|"
                      "so much|very much))?",
                      true},
    [RX_SIGN_DASH] = {"^\\s*--\\s*$", false},
    [RX_SIGN_ROM] = {"^\\s*(atenciosamente|att|abraços?|abs|um abraço|cordialmente|grat[oa]|"
                     "(muito )?obrigad[oa]s?( desde já| pela atenção)?|(com os melhores )?cumprimentos|"
                     "saudações|(un )?saludos?( cordiales)?|atentamente|(muchas )?gracias( de antemano)?|"
                     "(bien )?cordialement|salutations( distinguées)?|bien à vous|merci( d'avance)?|"
                     "bonne journée)[\\s,!.]*$",
                     true},
    [RX_DEVICE] = {"^\\s*((enviad[oa] (do|pelo|pela|via|desde|a partir do)( meu| minha| mi)?|"
                   "sent from( my)?|envoy[ée] (depuis|de)( mon| ma| mes)?) (" DEVICES ")( (" DEVICES
                   "|para|for|no|na|\\d+|phone|device|pro|max|mini|plus|using [a-z][a-z0-9_.+-]*))*|"
                   "(obter o|get) outlook (para|for) (ios|android))[\\s.!]*$",
                   true},
    [RX_DISCLAIMER] =
        {"((?<!\\w)(e-?mail|message|information|communication|transmission|contents?)(?!\\w)[^.]{0,60}"
         "(?<!\\w)confidential(?!\\w)[^.]{0,60}(?<!\\w)(intended|solely|addressee|recipient|privileged|"
         "disclos|unauthori[sz]ed)|"
         "(?<!\\w)confidential(?!\\w)[^.]{0,60}(?<!\\w)(and (may|is) (also )?privileged)|"
         "if you (have )?received this (e-?mail|message) in error|"
         "(?<!\\w)(esta|este) (mensagem|e-?mail|mensaje|correo)(?!\\w)[^.]{0,80}"
         "(confidencia|sigilos|privilegiad)|"
         "(?<!\\w)(uso exclusivo|exclusivamente|únicamente|unicamente)(?!\\w)[^.]{0,30}"
         "(destinatári|destinatari|pessoa|persona|entidade|entidad)|"
         "(?<!\\w)(recebeu|recebido|receber) (esta|este) (mensagem|e-?mail)(?!\\w)[^.]{0,20} por "
         "(engano|erro)|"
         "(?<!\\w)(ha recibido|recibió|recibe) (este|esta) (mensaje|correo)(?!\\w)[^.]{0,20} por error|"
         "(?<!\\w)antes de imprimir(?!\\w)[^.]{0,100}(meio ambiente|medio ambiente|natureza|planeta|"
         "realmente necess)|"
         "(?<!\\w)(meio|medio) ambiente(?!\\w)[^.]{0,30}antes de imprimir|"
         "(?<!\\w)(ce|cet|cette) (message|e-?mail|mail|courriel)(?!\\w)[^.]{0,80}"
         "(confidentiel|privil[eé]gi)|"
         "(?<!\\w)avez re[çc]u (ce|cet|cette) (message|e-?mail|mail)(?!\\w)[^.]{0,20} par erreur|"
         "(?<!\\w)(usage exclusif|exclusivement|uniquement)(?!\\w)[^.]{0,30}destinataire)",
         true},
};

/* The non-ASCII code points IGNORECASE matches an ASCII letter with (U+0130, U+0131, U+017F,
 * U+212A), from the fold table: folded to that letter, with ASCII case, by fold_ascii(). */
static uint32_t g_fold_cp[16];
static char g_fold_to[16];
static int g_fold_n;

static regex_t *g_rx[RX_COUNT];
static int g_rx_status; /* 0 ok, else the rule that failed to compile + 1 */
static pthread_once_t g_rx_once = PTHREAD_ONCE_INIT;

static void compile_rules(void) {
  OnigEncoding enc = ONIG_ENCODING_UTF8;
  onig_initialize(&enc, 1);
  for (size_t i = 0; i < em_fold_count && g_fold_n < 16; i++)
    if (em_fold[i][0] >= 'a' && em_fold[i][0] <= 'z' && em_fold[i][1] >= 0x80) {
      g_fold_cp[g_fold_n] = em_fold[i][1];
      g_fold_to[g_fold_n++] = (char)em_fold[i][0];
    }
  for (int r = 0; r < RX_COUNT; r++) {
    strbuf sb;
    sb_init(&sb);
    translate(&sb, kRules[r].py, kRules[r].ci);
    OnigErrorInfo einfo;
    int rc = sb.oom ? -1
                    : onig_new(&g_rx[r], (const OnigUChar *)sb.data, (const OnigUChar *)sb.data + sb.len,
                               ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &einfo);
    sb_free(&sb);
    if (rc != ONIG_NORMAL) {
      g_rx[r] = NULL;
      if (!g_rx_status) g_rx_status = r + 1;
    }
  }
}

typedef struct matcher {
  OnigMatchParam *mp;
  int failed;   /* an Oniguruma error code (never expected: no match limits are set) */
  strbuf fold;  /* scratch for may_hold_disclaimer */
} matcher;

/* Prefilters: cheap necessary conditions tried before Oniguruma runs, so they change no answer.
 * A line rule can only match when the first character after the leading whitespace is one its
 * alternatives open with (a letter compared as IGNORECASE compares it); NULL: no such test. */
static const char *const kFirst[RX_COUNT] = {
    [RX_Q_EN] = "o",      [RX_Q_PT] = "e",         [RX_Q_ES] = "e",      [RX_Q_FR] = "l",
    [RX_Q_BANNER] = "-",  [RX_Q_BANNER2] = "-",    [RX_Q_RULE] = "_",    [RX_Q_FROM] = "f",
    [RX_Q_DE] = "d",      [RX_ATTR_HEAD] = "elo",  [RX_HDR_NAME] = "df", [RX_HDR_NEXT] = "defs",
    [RX_SIGN_HEAD] = "bckmrstw", [RX_SIGN_DASH] = "-", [RX_SIGN_ROM] = "abcgmosu", [RX_DEVICE] = "egos",
};

static uint32_t fold_ascii(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  for (int i = 0; i < g_fold_n; i++)
    if (g_fold_cp[i] == cp) return (uint32_t)g_fold_to[i];
  return cp;
}

static bool first_char_allows(int r, const char *s, size_t n) {
  if (!kFirst[r]) return true;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    i = next_cp(s, n, i, &cp);
    if (is_space(cp)) continue;
    cp = fold_ascii(cp);
    return cp < 0x80 && strchr(kFirst[r], (int)cp) != NULL;
  }
  return false;
}

/* Every disclaimer alternative spells one of these (ASCII, after fold_ascii): "confiden" for
 * confidential / confidencia / confidentiel, "destinat" for destinatário / destinataire, ... */
static const char *const kDisclaimerWords[] = {
    "confiden", "privil", "sigilos", "destinat", "pessoa", "persona", "entidad", " por e",
    "received this", "antes de imprimir", "par erreur", NULL};

static bool may_hold_disclaimer(const char *s, size_t n, strbuf *tmp) {
  sb_reset(tmp);
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t j = next_cp(s, n, i, &cp);
    uint32_t f = fold_ascii(cp);
    if (f < 0x80) sb_putc(tmp, (char)f);
    else sb_append(tmp, s + i, j - i);
    i = j;
  }
  const char *t = tmp->data ? tmp->data : "";
  for (int k = 0; kDisclaimerWords[k]; k++)
    if (memmem(t, tmp->len, kDisclaimerWords[k], strlen(kDisclaimerWords[k]))) return true;
  return tmp->oom; /* out of memory: let the pattern decide */
}

/* Python's pattern.match(s): the length of the match in bytes, or -1. */
static long rx_match(matcher *m, int r, const char *s, size_t n) {
  if (!first_char_allows(r, s, n)) return -1;
  if (r == RX_ATTR_TAIL && !memchr(s, '@', n)) return -1;
  const OnigUChar *p = (const OnigUChar *)s;
  int rc = onig_match_with_param(g_rx[r], p, p + n, p, NULL, ONIG_OPTION_NONE, m->mp);
  if (rc >= 0) return rc;
  if (rc != ONIG_MISMATCH && !m->failed) m->failed = rc;
  return -1;
}

/* Python's bool(pattern.search(s)). */
static bool rx_search(matcher *m, int r, const char *s, size_t n) {
  if (r == RX_DISCLAIMER && !may_hold_disclaimer(s, n, &m->fold)) return false;
  const OnigUChar *p = (const OnigUChar *)s;
  int rc = onig_search_with_param(g_rx[r], p, p + n, p, p + n, NULL, ONIG_OPTION_NONE, m->mp);
  if (rc >= 0) return true;
  if (rc != ONIG_MISMATCH && !m->failed) m->failed = rc;
  return false;
}

/* ------------------------------------------------------------------ pieces of text */

typedef struct span {
  const char *s;
  size_t n;
} span;

typedef struct spans {
  span *v;
  size_t n, cap;
  bool oom;
} spans;

static void spans_push(spans *a, const char *s, size_t n) {
  if (a->oom) return;
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 16;
    span *v = realloc(a->v, cap * sizeof *v);
    if (!v) {
      a->oom = true;
      return;
    }
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n].s = s;
  a->v[a->n].n = n;
  a->n++;
}

static span strip_span(span x) {
  size_t a, l;
  py_strip(x.s, x.n, &a, &l);
  span r = {x.s + a, l};
  return r;
}

static span rstrip_span(span x) {
  size_t a, l;
  py_strip(x.s, x.n, &a, &l);
  /* py_strip narrows both ends; keep the leading part, drop only the trailing whitespace */
  span r = {x.s, l ? (size_t)(a + l) : 0};
  return r;
}

static span lstrip_span(span x) {
  size_t i = 0;
  while (i < x.n) {
    uint32_t cp;
    size_t j = next_cp(x.s, x.n, i, &cp);
    if (!is_space(cp)) break;
    i = j;
  }
  span r = {x.s + i, x.n - i};
  return r;
}

/* ------------------------------------------------------------------ sign-offs */

/* The English sign-off: a closing word, then only punctuation and at most three name tokens, each
 * starting with a letter that is uppercase, titlecase or caseless (Lu / Lt / Lo). Combining marks
 * that ride on a character are ignored first, so they take the case of their base. */
static bool english_signoff(matcher *m, span line, strbuf *tmp) {
  long e = rx_match(m, RX_SIGN_HEAD, line.s, line.n);
  if (e < 0) return false;
  /* drop the marks that follow a non-space character */
  sb_reset(tmp);
  bool have_last = false, last_space = false;
  for (size_t i = (size_t)e; i < line.n;) {
    uint32_t cp;
    size_t j = next_cp(line.s, line.n, i, &cp);
    if (!(is_mark(cp) && have_last && !last_space)) {
      sb_append(tmp, line.s + i, j - i);
      have_last = true;
      last_space = is_space(cp);
    }
    i = j;
  }
  const char *t = tmp->data ? tmp->data : "";
  size_t n = tmp->len, i = 0;
  uint32_t cp = 0;
  /* leading punctuation and space */
  while (i < n) {
    size_t j = next_cp(t, n, i, &cp);
    if (!(is_space(cp) || cp == ',' || cp == ';' || cp == ':' || cp == '!' || cp == '.')) break;
    i = j;
  }
  int tokens = 0;
  while (i < n) {
    size_t j = next_cp(t, n, i, &cp);
    /* a token starts with [^\W\d_] and that letter must be Lu, Lt or Lo */
    if (!is_word(cp) || is_decimal(cp) || cp == '_') return false;
    if (!is_titleish(cp)) return false;
    if (++tokens > 3) return false;
    i = j;
    while (i < n) {
      j = next_cp(t, n, i, &cp);
      if (!(is_word(cp) || cp == '\'' || cp == '-')) break;
      i = j;
    }
    while (i < n) {
      j = next_cp(t, n, i, &cp);
      if (!(is_space(cp) || cp == ',' || cp == '.')) break;
      i = j;
    }
  }
  return true;
}

/* ------------------------------------------------------------------ disclaimers */

/* str.isupper() of the first letter (str.isalpha) of the line; false when it has none. */
static bool starts_new_sentence(span x) {
  for (size_t i = 0; i < x.n;) {
    uint32_t cp;
    i = next_cp(x.s, x.n, i, &cp);
    if (is_alpha(cp)) return is_upper(cp);
  }
  return false;
}

typedef struct piece_list {
  strbuf *v;
  size_t n, cap;
  bool oom;
} piece_list;

static strbuf *pieces_add(piece_list *p) {
  if (p->oom) return NULL;
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    strbuf *v = realloc(p->v, cap * sizeof *v);
    if (!v) {
      p->oom = true;
      return NULL;
    }
    p->v = v;
    p->cap = cap;
  }
  strbuf *b = &p->v[p->n++];
  sb_init(b);
  return b;
}

static void pieces_free(piece_list *p) {
  for (size_t i = 0; i < p->n; i++) sb_free(&p->v[i]);
  free(p->v);
  memset(p, 0, sizeof *p);
}

/* A disclaimer-positive sentence that holds newlines is split where a line opens a new sentence
 * (first letter uppercase): a request line glued to a footer line comes apart, a footer that
 * merely wraps stays whole. Each line is stripped; the pieces join their lines with a space. */
static void split_fused(span sentence, piece_list *out) {
  if (!memchr(sentence.s, '\n', sentence.n)) {
    strbuf *b = pieces_add(out);
    if (b) sb_append(b, sentence.s, sentence.n);
    return;
  }
  strbuf *buf = NULL;
  const char *p = sentence.s, *end = sentence.s + sentence.n;
  while (p <= end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    span line = strip_span((span){p, (size_t)(le - p)});
    if (line.n) {
      if (buf && buf->len && starts_new_sentence(line)) buf = NULL;
      if (!buf) {
        buf = pieces_add(out);
        if (!buf) return;
      } else if (buf->len) {
        sb_putc(buf, ' ');
      }
      sb_append(buf, line.s, line.n);
    }
    if (!nl) break;
    p = nl + 1;
  }
}

/* _strip_disclaimer: a paragraph with no disclaimer is kept as it is; otherwise it is split into
 * sentences (after . ! or ? and whitespace), the disclaimer sentences are split further at fused
 * lines, and every piece that still reads as a disclaimer is dropped; the rest join with spaces. */
static void strip_disclaimer(matcher *m, span para, strbuf *out) {
  if (!rx_search(m, RX_DISCLAIMER, para.s, para.n)) {
    sb_append(out, para.s, para.n);
    return;
  }
  piece_list pieces = {0};
  size_t start = 0, i = 0;
  uint32_t prev = 0;
  while (i <= para.n) {
    bool cut = false;
    size_t run_end = i;
    if (i < para.n && (prev == '.' || prev == '!' || prev == '?')) {
      while (run_end < para.n) {
        uint32_t cp;
        size_t j = next_cp(para.s, para.n, run_end, &cp);
        if (!is_space(cp)) break;
        run_end = j;
      }
      cut = run_end > i;
    }
    if (cut || i == para.n) {
      span part = strip_span((span){para.s + start, i - start});
      if (part.n) {
        if (rx_search(m, RX_DISCLAIMER, part.s, part.n)) {
          split_fused(part, &pieces);
        } else {
          strbuf *b = pieces_add(&pieces);
          if (b) sb_append(b, part.s, part.n);
        }
      }
      if (i == para.n) break;
      start = i = run_end;
      prev = 0;
      continue;
    }
    i = next_cp(para.s, para.n, i, &prev);
  }
  bool first = true;
  for (size_t k = 0; k < pieces.n; k++) {
    strbuf *b = &pieces.v[k];
    if (rx_search(m, RX_DISCLAIMER, b->data ? b->data : "", b->len)) continue;
    if (!first) sb_putc(out, ' ');
    sb_append(out, b->data ? b->data : "", b->len);
    first = false;
    if (b->oom) out->oom = true;
  }
  if (pieces.oom) out->oom = true;
  pieces_free(&pieces);
}

/* ------------------------------------------------------------------ clean_email_body */

static bool quote_header(matcher *m, span line) {
  for (int r = RX_Q_EN; r <= RX_Q_DE; r++)
    if (rx_match(m, r, line.s, line.n) >= 0) return true;
  return false;
}

static bool signature_line(matcher *m, span line, strbuf *tmp) {
  size_t n = cp_count(strip_span(line).s, strip_span(line).n);
  if (n <= 40 && (rx_match(m, RX_SIGN_DASH, line.s, line.n) >= 0 || english_signoff(m, line, tmp) ||
                  rx_match(m, RX_SIGN_ROM, line.s, line.n) >= 0))
    return true;
  return n <= 60 && rx_match(m, RX_DEVICE, line.s, line.n) >= 0;
}

int email_clean(const char *body, size_t n, int64_t max_chars, strbuf *out, laya_error *err) {
  pthread_once(&g_rx_once, compile_rules);
  if (g_rx_status)
    return laya_err(err, LAYA_ERR_INTERNAL, NULL, "email rule %d failed to compile", g_rx_status - 1);
  int rc = 0;
  /* "\r\n" and "\r" become "\n", then the two characters "\\n" become "\n" */
  strbuf a, text, tmp, joined;
  sb_init(&a);
  sb_init(&text);
  sb_init(&tmp);
  sb_init(&joined);
  spans src = {0}, lines = {0}, paras = {0};
  matcher m = {onig_new_match_param(), 0, {0}};
  sb_init(&m.fold);
  if (!m.mp) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto done;
  }
  onig_initialize_match_param(m.mp);
  onig_set_retry_limit_in_match_of_match_param(m.mp, ULONG_MAX); /* Python has no limit */
  onig_set_retry_limit_in_search_of_match_param(m.mp, ULONG_MAX);
  for (size_t i = 0; i < n; i++) {
    if (body[i] == '\r') {
      sb_putc(&a, '\n');
      if (i + 1 < n && body[i + 1] == '\n') i++;
    } else {
      sb_putc(&a, body[i]);
    }
  }
  for (size_t i = 0; i < a.len; i++) {
    if (a.data[i] == '\\' && i + 1 < a.len && a.data[i + 1] == 'n') {
      sb_putc(&text, '\n');
      i++;
    } else {
      sb_putc(&text, a.data[i]);
    }
  }
  sb_cstr(&text);
  const char *t = text.data ? text.data : "";
  size_t tn = text.len;
  /* the pre-cut: more than 4 * max_chars code points keeps text[:4 * max_chars] */
  int64_t budget4 = max_chars > INT64_MAX / 4 ? INT64_MAX : max_chars < INT64_MIN / 4 ? INT64_MIN : max_chars * 4;
  size_t len = cp_count(t, tn);
  if ((int64_t)len > budget4) tn = cp_offset(t, tn, slice_end(len, budget4));
  /* lines: the quoted history starts at the first reply header (once a line has been kept) */
  for (const char *p = t, *end = t + tn;;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    spans_push(&src, p, (size_t)((nl ? nl : end) - p));
    if (!nl) break;
    p = nl + 1;
  }
  for (size_t i = 0; i < src.n && !src.oom; i++) {
    span line = src.v[i];
    if (lines.n && quote_header(&m, line)) break;
    if (lines.n && rx_match(&m, RX_HDR_NAME, line.s, line.n) >= 0 && i + 1 < src.n &&
        rx_match(&m, RX_HDR_NEXT, src.v[i + 1].s, src.v[i + 1].n) >= 0)
      break;
    if (lines.n && rx_match(&m, RX_ATTR_TAIL, line.s, line.n) >= 0) {
      span last = lines.v[lines.n - 1];
      if (rx_match(&m, RX_ATTR_HEAD, last.s, last.n) >= 0) lines.n--;
      break;
    }
    span ls = lstrip_span(line);
    if (ls.n && ls.s[0] == '>') continue;
    span r = rstrip_span(line);
    spans_push(&lines, r.s, r.n);
  }
  /* the signature: the first sign-off or device footer in the last 40% (at most the last 8 lines
   * are always searched, never the first line) cuts it and everything after it */
  size_t cut = lines.n;
  {
    int64_t nl = (int64_t)lines.n;
    int64_t lo = (int64_t)((double)nl * 0.6);
    if (nl - 8 < lo) lo = nl - 8;
    if (lo < 1) lo = 1;
    for (int64_t i = lo; i < nl; i++) {
      if (signature_line(&m, lines.v[i], &tmp)) {
        cut = (size_t)i;
        break;
      }
    }
  }
  for (size_t i = 0; i < cut; i++) {
    if (i) sb_putc(&joined, '\n');
    sb_append(&joined, lines.v[i].s, lines.v[i].n);
  }
  sb_cstr(&joined);
  /* paragraphs: split at "\n", whitespace, "\n" (the whitespace run up to its last newline) */
  {
    const char *j = joined.data ? joined.data : "";
    size_t jn = joined.len, start = 0, i = 0;
    while (i < jn) {
      if (j[i] == '\n') {
        size_t k = i + 1, last_nl = 0;
        while (k < jn) {
          uint32_t cp;
          size_t nx = next_cp(j, jn, k, &cp);
          if (!is_space(cp)) break;
          if (cp == '\n') last_nl = nx;
          k = nx;
        }
        if (last_nl) {
          spans_push(&paras, j + start, i - start);
          start = i = last_nl;
          continue;
        }
      }
      i++;
    }
    spans_push(&paras, j + start, jn - start);
  }
  /* each paragraph loses its disclaimer sentences; the non-blank ones join with a blank line */
  sb_reset(&a);
  bool first = true;
  for (size_t i = 0; i < paras.n; i++) {
    sb_reset(&tmp);
    strip_disclaimer(&m, paras.v[i], &tmp);
    span p = strip_span((span){tmp.data ? tmp.data : "", tmp.len});
    if (!p.n) continue;
    if (!first) sb_append(&a, "\n\n", 2);
    sb_append(&a, p.s, p.n);
    first = false;
    if (tmp.oom) a.oom = true;
  }
  /* runs of spaces and tabs become one space, then the result is cut to max_chars */
  sb_reset(&text);
  for (size_t i = 0; i < a.len; i++) {
    char c = a.data[i];
    if (c == ' ' || c == '\t') {
      while (i + 1 < a.len && (a.data[i + 1] == ' ' || a.data[i + 1] == '\t')) i++;
      sb_putc(&text, ' ');
    } else {
      sb_putc(&text, c);
    }
  }
  {
    const char *r = text.data ? text.data : "";
    size_t rl = cp_count(r, text.len);
    sb_append(out, r, cp_offset(r, text.len, slice_end(rl, max_chars)));
  }
  if (m.failed) {
    OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(msg, m.failed);
    rc = laya_err(err, LAYA_ERR_INTERNAL, NULL, "email rule failed: %s", (const char *)msg);
  } else if (a.oom || text.oom || tmp.oom || joined.oom || src.oom || lines.oom || paras.oom || out->oom) {
    rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
done:
  if (m.mp) onig_free_match_param(m.mp);
  sb_free(&m.fold);
  free(src.v);
  free(lines.v);
  free(paras.v);
  sb_free(&a);
  sb_free(&text);
  sb_free(&tmp);
  sb_free(&joined);
  return rc;
}

/* ------------------------------------------------------------------ JSON entry points */

/* A str as a JSON string: non-ASCII raw, except in a text holding a lone surrogate (WTF-8, which
 * raw JSON cannot carry): that one is written all-ASCII, \udXXX escapes included. */
static bool has_lone_surrogate(const char *s, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if ((unsigned char)s[i] == 0xED && (unsigned char)s[i + 1] >= 0xA0) return true;
  return false;
}

static void dump_text(strbuf *out, const char *s, size_t n) {
  json_dump_string(out, s, n, has_lone_surrogate(s, n));
}

/* max_chars as Python uses it: an int (bool counts as 0 / 1); other types fail where Laya's
 * arithmetic does, with Python's messages. */
static int budget_arg(const json_value *v, int64_t *out, laya_error *err) {
  if (!v) {
    *out = EMAIL_DEFAULT_MAX_CHARS;
    return 0;
  }
  switch (v->type) {
    case JSON_BOOL: *out = v->b; return 0;
    case JSON_INT:
      if (v->big) *out = v->s && v->s[0] == '-' ? INT64_MIN : INT64_MAX;
      else *out = v->i;
      return 0;
    case JSON_FLOAT:
      return laya_type_error(err, "slice indices must be integers or None or have an __index__ method");
    case JSON_NULL:
    case JSON_OBJECT:
      return laya_type_error(err, "unsupported operand type(s) for *: '%s' and 'int'", json_py_type(v));
    default:
      return laya_type_error(err, "'>' not supported between instances of 'int' and '%s'", json_py_type(v));
  }
}

static bool is_param(const json_member *mb, const char *const *names) {
  for (; *names; names++)
    if (strlen(*names) == mb->key_len && memcmp(*names, mb->key, mb->key_len) == 0) return true;
  return false;
}

static int unexpected(const char *fn, const json_value *req, const char *const *names, laya_error *err) {
  for (uint32_t i = 0; i < req->n; i++)
    if (!is_param(&req->members[i], names))
      return laya_type_error(err, "%s() got an unexpected keyword argument '%s'", fn, req->members[i].key);
  return 0;
}

static int missing(const char *fn, const json_value *req, const char *const *required, laya_error *err) {
  const char *miss[4];
  int k = 0;
  for (; *required; required++)
    if (!json_get(req, *required) && k < 4) miss[k++] = *required;
  if (k == 1)
    return laya_type_error(err, "%s() missing 1 required positional argument: '%s'", fn, miss[0]);
  if (k == 2)
    return laya_type_error(err, "%s() missing 2 required positional arguments: '%s' and '%s'", fn, miss[0],
                           miss[1]);
  return 0;
}

/* (body or "") then the str method Laya calls on it. */
static int text_arg(const json_value *v, const char *method, span *out, laya_error *err) {
  out->s = "";
  out->n = 0;
  if (!json_truthy(v)) return 0;
  if (v->type != JSON_STRING)
    return laya_err(err, LAYA_ERR_TYPE, "AttributeError", "'%s' object has no attribute '%s'", json_py_type(v),
                    method);
  out->s = v->s;
  out->n = v->n;
  return 0;
}

int email_clean_json(const json_value *req, strbuf *out, laya_error *err) {
  static const char *const names[] = {"body", "max_chars", NULL};
  static const char *const required[] = {"body", NULL};
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "clean_email_body arguments must be a JSON object, got %s", json_py_type(req));
  int rc = unexpected("clean_email_body", req, names, err);
  if (!rc) rc = missing("clean_email_body", req, required, err);
  span body;
  int64_t budget = 0;
  if (!rc) rc = text_arg(json_get(req, "body"), "replace", &body, err);
  if (!rc) rc = budget_arg(json_get(req, "max_chars"), &budget, err);
  if (rc) return rc;
  strbuf text;
  sb_init(&text);
  rc = email_clean(body.s, body.n, budget, &text, err);
  if (!rc) dump_text(out, text.data ? text.data : "", text.len);
  sb_free(&text);
  return rc;
}

/* A string value whose bytes are copied into a (NUL-terminated; a body may hold NULs). */
static bool arena_string(arena *a, const char *s, size_t n, json_value *out) {
  char *p = arena_strndup(a, s, n);
  if (!p) return false;
  *out = json_string_n(p, n);
  out->surrogate = has_lone_surrogate(p, n);
  return true;
}

static bool is_from(const json_member *mb) { return mb->key_len == 4 && memcmp(mb->key, "from", 4) == 0; }

int email_state_value(const json_value *req, arena *a, json_value *out, laya_error *err) {
  static const char *const params[] = {"subject", "body", "sender", "clean", "max_chars", NULL};
  static const char *const required[] = {"subject", "body", NULL};
  *out = json_null();
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "email_state arguments must be a JSON object, got %s", json_py_type(req));
  int rc = missing("email_state", req, required, err);
  if (rc) return rc;
  span subject;
  if ((rc = text_arg(json_get(req, "subject"), "strip", &subject, err))) return rc;
  subject = strip_span(subject);
  const json_value *body = json_get(req, "body");
  const json_value *clean = json_get(req, "clean");
  bool do_clean = clean ? json_truthy(clean) : true;
  json_value subject_v, body_v;
  bool ok = true;
  if (do_clean) {
    span b;
    int64_t budget = 0;
    strbuf cleaned;
    sb_init(&cleaned);
    rc = text_arg(body, "replace", &b, err);
    if (!rc) rc = budget_arg(json_get(req, "max_chars"), &budget, err);
    if (!rc) rc = email_clean(b.s, b.n, budget, &cleaned, err);
    if (!rc) {
      sb_cstr(&cleaned);
      ok = !cleaned.oom && arena_string(a, cleaned.data ? cleaned.data : "", cleaned.len, &body_v);
    }
    sb_free(&cleaned);
    if (rc) return rc;
  } else {
    body_v = json_truthy(body) ? *body : json_string("");
  }
  ok = ok && arena_string(a, subject.s, subject.n, &subject_v);
  /* the state, in Python dict order: subject, body, from (a truthy sender), then each extra keyword
   * that is not None; an extra "from" replaces the sender's value in its place */
  const json_value *sender = json_get(req, "sender");
  const json_value *from = json_truthy(sender) ? sender : NULL;
  uint32_t extra = 0;
  for (uint32_t i = 0; i < req->n; i++) {
    const json_member *mb = &req->members[i];
    if (is_param(mb, params) || mb->value.type == JSON_NULL) continue;
    if (from && is_from(mb)) from = &mb->value;
    else extra++;
  }
  json_member *m = ok ? arena_alloc(a, sizeof *m * (3 + extra)) : NULL;
  if (!m) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  uint32_t k = 0;
  m[k++] = (json_member){"subject", 7, subject_v};
  m[k++] = (json_member){"body", 4, body_v};
  if (from) m[k++] = (json_member){"from", 4, *from};
  for (uint32_t i = 0; i < req->n; i++) {
    const json_member *mb = &req->members[i];
    if (is_param(mb, params) || mb->value.type == JSON_NULL) continue;
    if (from && is_from(mb)) continue;
    m[k++] = *mb;
  }
  out->type = JSON_OBJECT;
  out->members = m;
  out->n = k;
  return 0;
}

void email_state_write(strbuf *out, const json_value *state) {
  json_dump_opts o = {NULL, NULL, false, -1};
  sb_putc(out, '{');
  for (uint32_t i = 0; i < state->n; i++) {
    const json_member *mb = &state->members[i];
    if (i) sb_puts(out, ", ");
    json_dump_string(out, mb->key, mb->key_len, false);
    sb_puts(out, ": ");
    if (i == 1 && mb->value.type == JSON_STRING) /* the body */
      dump_text(out, mb->value.s, mb->value.n);
    else
      json_dump(out, &mb->value, &o);
  }
  sb_putc(out, '}');
}

int email_state_json(const json_value *req, strbuf *out, laya_error *err) {
  arena a;
  arena_init(&a, 1 << 12);
  json_value state;
  int rc = email_state_value(req, &a, &state, err);
  if (!rc) email_state_write(out, &state);
  arena_free(&a);
  return rc;
}

/* ------------------------------------------------------------------ laya.h */

static const char kEmailSelf = 0; /* json_call wants a handle; these functions have none */

static int clean_call(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  (void)ctx;
  return email_clean_json(req, out, err);
}

static int state_call(void *ctx, const json_value *req, strbuf *out, laya_error *err) {
  (void)ctx;
  return email_state_json(req, out, err);
}

int laya_clean_email(const char *request_json, char **result_json, laya_error *err) {
  return json_call("laya_clean_email", &kEmailSelf, request_json, clean_call, NULL, result_json, err);
}

int laya_email_state(const char *request_json, char **state_json, laya_error *err) {
  return json_call("laya_email_state", &kEmailSelf, request_json, state_call, NULL, state_json, err);
}

int laya_clean_email_text(const char *body, size_t len, long long max_chars, char **out, size_t *out_len,
                          laya_error *err) {
  laya_err_clear(err);
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if ((!body && len) || !out)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_clean_email_text: body and out must not be NULL");
  long bad = utf8_first_invalid(body, len);
  if (bad >= 0)
    return laya_err(err, LAYA_ERR_VALUE, "UnicodeDecodeError",
                    "laya_clean_email_text: the body is not UTF-8 (invalid byte 0x%02X at byte %ld)",
                    (unsigned char)body[bad], bad);
  strbuf sb;
  sb_init(&sb);
  int rc = email_clean(body ? body : "", len, (int64_t)max_chars, &sb, err);
  if (!rc) {
    sb_cstr(&sb);
    if (sb.oom) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  if (!rc) {
    if (out_len) *out_len = sb.len;
    *out = sb_steal(&sb);
  }
  sb_free(&sb);
  return rc;
}
