/*
 * lang.c: script and language detection (see lang.h).
 *
 * Laya measures everything in Python str terms (code points, str.isalpha, str.lower, regular
 * expressions over Unicode word characters), and routing thresholds sit on those counts, so
 * the text is decoded to code points once and every rule is evaluated on them.
 */
#include "router/lang.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/pystr.h"
#include "router/stopwords.h"
#include "core/utf8.h"

/* ---------------------------------------------------------------- code point strings */

typedef struct ustr {
  uint32_t *c;
  size_t n, cap;
} ustr;

static void us_free(ustr *s) {
  free(s->c);
  s->c = NULL;
  s->n = s->cap = 0;
}

static void us_push(ustr *s, uint32_t cp) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint32_t *c = realloc(s->c, cap * sizeof(uint32_t));
    if (!c) return; /* out of memory: the text is read shorter, never past its end */
    s->c = c;
    s->cap = cap;
  }
  s->c[s->n++] = cp;
}

/* The code points of s from i on: NULL + 0 is undefined in C, and an empty string may hold no
 * storage (c NULL, n 0), so that case stays NULL for a callee that reads none of it. */
static const uint32_t *us_at(const ustr *s, size_t i) { return s->c ? s->c + i : NULL; }

static void us_append(ustr *s, const uint32_t *c, size_t n) {
  for (size_t i = 0; i < n; i++) us_push(s, c[i]);
}

static void us_from_utf8(ustr *s, const char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint32_t cp;
    i += (size_t)py_utf8_next(p, n, i, &cp);
    us_push(s, cp);
  }
}

/* ---------------------------------------------------------------- character classes */

static utf8proc_category_t cat(uint32_t cp) {
  if (cp > 0x10FFFF) return UTF8PROC_CATEGORY_CN;
  return utf8proc_category((utf8proc_int32_t)cp);
}

/* str.isalpha(): categories Lu Ll Lt Lm Lo. */
static bool is_alpha(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  utf8proc_category_t c = cat(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

/* Letters a Unicode database older than the newest may not know: Laya counts them as letters
 * whatever the host says, so we do too when our table calls them unassigned. */
static const uint32_t kPostDbLetters[][2] = {
    {0x01C89, 0x01C8A}, {0x0A7CB, 0x0A7CD}, {0x0A7DA, 0x0A7DC}, {0x10570, 0x105BC},
    {0x105C0, 0x105F3}, {0x10D4A, 0x10D85}, {0x10EC2, 0x10EC4}, {0x10F70, 0x10F81},
    {0x1123F, 0x11240}, {0x11380, 0x113D3}, {0x11BC0, 0x11BE0}, {0x11F02, 0x11F33},
    {0x12F90, 0x12FF0}, {0x1342F, 0x143FA}, {0x16100, 0x1611D}, {0x16A70, 0x16ABE},
    {0x16D40, 0x16D6C}, {0x18CFF, 0x18CFF}, {0x1B132, 0x1B155}, {0x1DF25, 0x1DF2A},
    {0x1E030, 0x1E06D}, {0x1E290, 0x1E2AD}, {0x1E4D0, 0x1E4EB}, {0x1E5D0, 0x1E5F0},
    {0x2B739, 0x2B739}, {0x2EBF0, 0x2EE5D}, {0x31350, 0x323AF}};

static bool is_letter(uint32_t cp) {
  if (is_alpha(cp)) return true;
  if (cp < 0x1C89 || cat(cp) != UTF8PROC_CATEGORY_CN) return false;
  for (size_t i = 0; i < sizeof kPostDbLetters / sizeof kPostDbLetters[0]; i++)
    if (cp >= kPostDbLetters[i][0] && cp <= kPostDbLetters[i][1]) return true;
  return false;
}

static bool is_numeric(uint32_t cp) {
  utf8proc_category_t c = cat(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

/* Python's \w: alphanumeric or underscore. */
static bool is_wordch(uint32_t cp) {
  if (cp < 0x80)
    return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z' ? true : (cp >= '0' && cp <= '9') || cp == '_';
  return is_alpha(cp) || is_numeric(cp);
}

/* [^\W\d_]: a word character that is neither a decimal digit nor the underscore. */
static bool is_wletter(uint32_t cp) {
  if (cp == '_' || !is_wordch(cp)) return false;
  return cat(cp) != UTF8PROC_CATEGORY_ND;
}

static bool is_upper(uint32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_LU; }
static bool is_lower(uint32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_LL; }

static uint32_t lower_cp(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
}

static bool is_combining(uint32_t cp) {
  if (cp < 0x300 || cp > 0x10FFFF) return false;
  return utf8proc_get_property((utf8proc_int32_t)cp)->combining_class != 0;
}

static size_t count_alpha(const uint32_t *c, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += is_alpha(c[i]);
  return k;
}

/* Letters ordinary English does not use (matched after lowercasing). */
static bool is_non_en_diacritic(uint32_t cp) {
  static const char kSet[] =
      "àâäãáåçéèêëíìîïñóòôöõøúùûüýÿßæœ"
      "ășțşţ" "ąćęłńśźż" "čďěňřšťůž" "őű" "ğı" "āēģīķļņū" "đ" "ə";
  static uint32_t table[96];
  static size_t ntable;
  static int ready;
  if (cp < 0xDF) return false;
  if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
    /* idempotent: racing threads compute the same table */
    uint32_t tmp[96];
    size_t k = 0, i = 0, n = sizeof kSet - 1;
    while (i < n && k < 96) {
      uint32_t c;
      i += (size_t)py_utf8_next(kSet, n, i, &c);
      tmp[k++] = c;
    }
    memcpy(table, tmp, sizeof tmp);
    ntable = k;
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
  }
  for (size_t i = 0; i < ntable; i++)
    if (table[i] == cp) return true;
  return false;
}

/* ---------------------------------------------------------------- scripts */

typedef struct range {
  uint32_t lo, hi;
  int script;
} range;

static const char *const kScriptNames[] = {
    "greek",   "cyrillic", "armenian", "hebrew",    "arabic",   "devanagari", "bengali",
    "gurmukhi", "gujarati", "oriya",   "tamil",     "telugu",   "kannada",    "malayalam",
    "sinhala", "thai",     "lao",      "tibetan",   "myanmar",  "georgian",   "ethiopic",
    "khmer",   "hangul",   "kana",     "han",       "other",    "latin"};
enum { SC_OTHER = 25, SC_LATIN = 26, SC_COUNT = 27 };

/* Unicode blocks, sorted by start, each naming the script the English checkpoint cannot read. */
static const range kRanges[] = {
    {0x0370, 0x03FF, 0},  {0x0400, 0x052F, 1},  {0x0530, 0x058F, 2},  {0x0590, 0x05FF, 3},
    {0x0600, 0x06FF, 4},  {0x0750, 0x077F, 4},  {0x08A0, 0x08FF, 4},  {0x0900, 0x097F, 5},
    {0x0980, 0x09FF, 6},  {0x0A00, 0x0A7F, 7},  {0x0A80, 0x0AFF, 8},  {0x0B00, 0x0B7F, 9},
    {0x0B80, 0x0BFF, 10}, {0x0C00, 0x0C7F, 11}, {0x0C80, 0x0CFF, 12}, {0x0D00, 0x0D7F, 13},
    {0x0D80, 0x0DFF, 14}, {0x0E00, 0x0E7F, 15}, {0x0E80, 0x0EFF, 16}, {0x0F00, 0x0FFF, 17},
    {0x1000, 0x109F, 18}, {0x10A0, 0x10FF, 19}, {0x1100, 0x11FF, 22}, {0x1200, 0x137F, 20},
    {0x1780, 0x17FF, 21}, {0x1F00, 0x1FFF, 0},  {0x2DE0, 0x2DFF, 1},  {0x3040, 0x309F, 23},
    {0x30A0, 0x30FF, 23}, {0x3130, 0x318F, 22}, {0x31F0, 0x31FF, 23}, {0x3400, 0x4DBF, 24},
    {0x4E00, 0x9FFF, 24}, {0xA640, 0xA69F, 1},  {0xA8E0, 0xA8FF, 5},  {0xAC00, 0xD7AF, 22},
    {0xF900, 0xFAFF, 24}, {0xFB50, 0xFDFF, 4},  {0xFE70, 0xFEFF, 4}};

static int named_script(uint32_t cp) {
  size_t lo = 0, hi = sizeof kRanges / sizeof kRanges[0];
  while (lo < hi) { /* last range whose start <= cp */
    size_t mid = (lo + hi) / 2;
    if (kRanges[mid].lo <= cp) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return -1;
  const range *r = &kRanges[lo - 1];
  return cp <= r->hi ? r->script : -1;
}

static bool latin_cp(uint32_t cp, uint32_t below) {
  return cp < below || (cp >= 0x1E00 && cp <= 0x1EFF) || (cp >= 0xFF21 && cp <= 0xFF3A) ||
         (cp >= 0xFF41 && cp <= 0xFF5A);
}

/* Letter counts per script, with the order in which scripts were first seen (Python dict
 * order); Latin is always last, so a named script wins a tie against it. */
typedef struct script_counts {
  size_t count[SC_COUNT];
  int order[SC_COUNT];
  int norder;
} script_counts;

static void count_scripts(const uint32_t *c, size_t n, script_counts *sc) {
  memset(sc, 0, sizeof *sc);
  for (size_t i = 0; i < n; i++) {
    uint32_t cp = c[i];
    if (!is_letter(cp)) continue;
    if (latin_cp(cp, 0x02B0)) {
      sc->count[SC_LATIN]++;
      continue;
    }
    int s = named_script(cp);
    if (s < 0) s = SC_OTHER;
    if (sc->count[s]++ == 0) sc->order[sc->norder++] = s;
  }
  sc->order[sc->norder++] = SC_LATIN;
}

static size_t total_letters(const script_counts *sc) {
  size_t t = 0;
  for (int i = 0; i < SC_COUNT; i++) t += sc->count[i];
  return t;
}

static int dominant_script(const script_counts *sc) {
  int best = -1;
  size_t bestn = 0;
  for (int k = 0; k < sc->norder; k++) {
    int s = sc->order[k];
    if (best < 0 || sc->count[s] > bestn) {
      best = s;
      bestn = sc->count[s];
    }
  }
  return bestn ? best : -1;
}

/* The script of one letter for word runs: named non-Latin scripts only (Latin below 0x250). */
static int script_of(uint32_t cp) {
  if (latin_cp(cp, 0x0250)) return -1;
  return named_script(cp);
}

/* Whether the text holds a run of one named non-Latin script that reads as a word: two or more
 * letters, not starting with a capital (names, symbols and IPA are annotation, not requests). */
static bool has_non_latin_words(const uint32_t *c, size_t n) {
  int script = -1;
  size_t len = 0;
  uint32_t first = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && is_combining(c[i])) continue;
    int s = i < n ? script_of(c[i]) : -1;
    if (i < n && s >= 0 && s == script) {
      len++;
      continue;
    }
    if (len >= 2 && !is_upper(first)) return true;
    if (i < n && s >= 0) {
      script = s;
      len = 1;
      first = c[i];
    } else {
      script = -1;
      len = 0;
    }
  }
  return false;
}

/* ---------------------------------------------------------------- regular expressions */

/* _IDENTIFIER: (?<![\w-])[\w-]*(?:[.@][\w-]+)+ replaced by one space. */
static bool wd(uint32_t cp) { return cp == '-' || is_wordch(cp); }

static void strip_identifiers(const uint32_t *c, size_t n, ustr *out) {
  size_t i = 0;
  while (i < n) {
    if (i == 0 || !wd(c[i - 1])) {
      size_t j = i;
      while (j < n && wd(c[j])) j++;
      size_t end = j, groups = 0;
      while (end < n && (c[end] == '.' || c[end] == '@') && end + 1 < n && wd(c[end + 1])) {
        end++;
        while (end < n && wd(c[end])) end++;
        groups++;
      }
      if (groups) {
        us_push(out, ' ');
        i = end;
        continue;
      }
    }
    us_push(out, c[i]);
    i++;
  }
}

/* _CODE_LINE: [=;{}\[\]]|\w\( */
static bool code_line(const uint32_t *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t cp = c[i];
    if (cp == '=' || cp == ';' || cp == '{' || cp == '}' || cp == '[' || cp == ']') return true;
    if (cp == '(' && i > 0 && is_wordch(c[i - 1])) return true;
  }
  return false;
}

/* _JOINED: [^\W_][._/\\][^\W_] */
static bool joined(const uint32_t *c, size_t n) {
  for (size_t i = 1; i + 1 < n; i++) {
    uint32_t j = c[i];
    if (j != '.' && j != '_' && j != '/' && j != '\\') continue;
    if (is_wordch(c[i - 1]) && c[i - 1] != '_' && is_wordch(c[i + 1]) && c[i + 1] != '_')
      return true;
  }
  return false;
}

static bool is_space(uint32_t cp) { return py_isspace(cp); }

static bool blank(const uint32_t *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_space(c[i])) return false;
  return true;
}

/* A cased text written entirely in capitals. */
static bool shouted(const uint32_t *c, size_t n) {
  bool up = false;
  for (size_t i = 0; i < n; i++) {
    if (is_lower(c[i])) return false;
    if (is_upper(c[i])) up = true;
  }
  return up;
}

/* str.isupper() of a run: some cased letter, and no lowercase or titlecase one. */
static bool run_isupper(const uint32_t *c, size_t n) {
  bool up = false;
  for (size_t i = 0; i < n; i++) {
    utf8proc_category_t k = cat(c[i]);
    if (k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT) return false;
    if (k == UTF8PROC_CATEGORY_LU) up = true;
  }
  return up;
}

typedef struct span {
  size_t start, len;
} span;

typedef struct spans {
  span *v;
  size_t n, cap;
} spans;

static void spans_push(spans *s, size_t start, size_t len) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    span *v = realloc(s->v, cap * sizeof(span));
    if (!v) return;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n].start = start;
  s->v[s->n].len = len;
  s->n++;
}

/* Runs of [^\W\d_] of at least min_len code points. */
static void letter_runs(const uint32_t *c, size_t n, size_t min_len, spans *out) {
  size_t i = 0;
  while (i < n) {
    if (!is_wletter(c[i])) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < n && is_wletter(c[j])) j++;
    if (j - i >= min_len) spans_push(out, i, j - i);
    i = j;
  }
}

/* Text with every all-capital run of two or more letters replaced by one space. */
static void blank_caps(const uint32_t *c, size_t n, ustr *out) {
  size_t i = 0;
  while (i < n) {
    if (!is_wletter(c[i])) {
      us_push(out, c[i++]);
      continue;
    }
    size_t j = i;
    while (j < n && is_wletter(c[j])) j++;
    if (j - i >= 2 && run_isupper(c + i, j - i)) us_push(out, ' ');
    else us_append(out, c + i, j - i);
    i = j;
  }
}

/* ---------------------------------------------------------------- word evidence */

typedef struct word_info {
  uint32_t langs, flags;
  size_t count;     /* occurrences */
  bool diacritic;   /* holds a non-English letter */
  char *utf8;
} word_info;

typedef struct word_bag {
  word_info *v;
  size_t n, cap;
  size_t total;  /* tokens, with repeats */
  size_t first;  /* index of the first token's entry */
  uint32_t *idx; /* open addressing: entry index + 1, 0 = empty */
  size_t icap;
} word_bag;

static void bag_free(word_bag *b) {
  for (size_t i = 0; i < b->n; i++) free(b->v[i].utf8);
  free(b->v);
  free(b->idx);
  memset(b, 0, sizeof *b);
}

static uint64_t bag_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The slot holding word w, or the empty slot where it belongs. */
static uint32_t *bag_slot(word_bag *b, const char *w) {
  size_t i = (size_t)bag_hash(w) & (b->icap - 1);
  while (b->idx[i] && strcmp(b->v[b->idx[i] - 1].utf8, w)) i = (i + 1) & (b->icap - 1);
  return &b->idx[i];
}

static bool bag_grow_index(word_bag *b) {
  size_t cap = b->icap ? b->icap * 2 : 64;
  uint32_t *idx = calloc(cap, sizeof(uint32_t));
  if (!idx) return false;
  free(b->idx);
  b->idx = idx;
  b->icap = cap;
  for (size_t k = 0; k < b->n; k++) *bag_slot(b, b->v[k].utf8) = (uint32_t)(k + 1);
  return true;
}

/* Add one lowercased token to the bag (distinct words keep their first-seen order). */
static void bag_add(word_bag *b, const uint32_t *c, size_t n) {
  strbuf sb;
  sb_init(&sb);
  bool dia = false;
  for (size_t i = 0; i < n; i++) {
    sb_put_cp(&sb, c[i]);
    if (is_non_en_diacritic(c[i])) dia = true;
  }
  const char *w = sb_cstr(&sb);
  if ((b->n + 1) * 2 > b->icap && !bag_grow_index(b)) {
    sb_free(&sb);
    return;
  }
  uint32_t *slot = bag_slot(b, w);
  if (*slot) {
    size_t i = *slot - 1;
    b->v[i].count++;
    if (b->total++ == 0) b->first = i;
    sb_free(&sb);
    return;
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 32;
    word_info *v = realloc(b->v, cap * sizeof(word_info));
    if (!v) {
      sb_free(&sb);
      return;
    }
    b->v = v;
    b->cap = cap;
  }
  word_info *wi = &b->v[b->n];
  memset(wi, 0, sizeof *wi);
  stop_lookup(w, sb.len, &wi->langs, &wi->flags);
  wi->count = 1;
  wi->diacritic = dia;
  wi->utf8 = sb_steal(&sb);
  if (b->total++ == 0) b->first = b->n;
  *slot = (uint32_t)(b->n + 1);
  b->n++;
}

static bool bag_has(word_bag *b, const char *w) { return b->icap && *bag_slot(b, w) != 0; }

/* Tokens of a text as _WORD.findall reads them, lowercased (İ read as i). */
static void bag_from_text(word_bag *b, const uint32_t *c, size_t n, bool lower) {
  size_t i = 0;
  ustr tok = {0};
  while (i < n) {
    if (!is_wletter(c[i])) {
      i++;
      continue;
    }
    tok.n = 0;
    while (i < n && is_wletter(c[i])) {
      uint32_t cp = c[i++];
      us_push(&tok, lower ? lower_cp(cp) : cp);
    }
    bag_add(b, tok.c, tok.n);
  }
  us_free(&tok);
}

static const double NON_EN_DIACRITIC_RATE = 0.02;
static const double ENGLISH_RESCUE_DIACRITIC_RATE = 0.06;
static const double NON_LATIN_FRACTION = 0.2;
static const double NON_LATIN_MIN_FRACTION = 0.1;
static const size_t NON_LATIN_MIN_LETTERS = 10;
static const size_t SHOUTED_MIN_STOPWORD = 4;
static const size_t SHOUTED_MIN_WORD = 5;

typedef struct latin_prof {
  int language; /* index into stop_lang_codes, or -1 */
  double diacritic_rate;
  bool looks_non_english;
} latin_prof;

static void latin_profile_r(const uint32_t *c, size_t n, latin_prof *out, const char **reason);
static void latin_profile(const uint32_t *c, size_t n, latin_prof *out) { latin_profile_r(c, n, out, NULL); }

static void latin_profile_r(const uint32_t *c, size_t n, latin_prof *out, const char **reason) {
  /* words: identifiers removed, İ read as i, lowercased */
  ustr clean = {0};
  strip_identifiers(c, n, &clean);
  for (size_t i = 0; i < clean.n; i++)
    if (clean.c[i] == 0x130) clean.c[i] = 'i';
  word_bag b = {0};
  bag_from_text(&b, clean.c, clean.n, true);
  us_free(&clean);

  /* diacritic rate over every character of text.lower() (İ lowers to two code points) */
  size_t dia = 0, len = n;
  for (size_t i = 0; i < n; i++) {
    if (c[i] == 0x130) len++;
    else if (is_non_en_diacritic(lower_cp(c[i]))) dia++;
  }
  double rate = (double)dia / (double)(len ? len : 1);
  bool non_english = rate >= NON_EN_DIACRITIC_RATE;
  bool any_nordic = false, any_en_only = false, any_short_sv = false;
  for (size_t i = 0; i < b.n; i++) {
    any_nordic |= (b.v[i].flags & STOP_NORDIC) != 0;
    any_en_only |= (b.v[i].flags & STOP_EN_ONLY) != 0;
    any_short_sv |= (b.v[i].flags & STOP_SHORT_SV) != 0;
  }
  bool nordic_overlap = any_nordic && !any_en_only;
  out->diacritic_rate = rate;
  out->language = -1;
  if (b.total > 1 && b.total < 4 && any_short_sv) {
    if (reason) *reason = "short_swedish";
    out->language = 7; /* sv */
    out->looks_non_english = non_english;
    bag_free(&b);
    return;
  }
  if (b.total < 4) {
    if (reason) *reason = "insufficient_words";
    out->looks_non_english = non_english || nordic_overlap;
    bag_free(&b);
    return;
  }
  size_t score[STOP_NLANGS] = {0};
  bool evidenced[STOP_NLANGS] = {0};
  for (size_t i = 0; i < b.n; i++) {
    const word_info *w = &b.v[i];
    for (int l = 0; l < STOP_NLANGS; l++) {
      if (!(w->langs & (1u << l))) continue;
      score[l] += (w->flags & STOP_COLLISION) ? 1 : w->count;
      if (l != STOP_EN && !(w->flags & STOP_SHARED)) evidenced[l] = true;
    }
  }
  size_t en = score[STOP_EN];
  int best_lg = -1;
  size_t best = 0;
  for (int l = 1; l < STOP_NLANGS; l++)
    if (evidenced[l] && (best_lg < 0 || score[l] > best)) {
      best_lg = l;
      best = score[l];
    }
  int lang = -1;
  size_t margin = en + 2 > 2 ? en + 2 : 2;
  const char *first = b.v[b.first].utf8;
  if (best_lg >= 0 && best >= margin) {
    lang = best_lg;
  } else if (best_lg == 7 && bag_has(&b, "inte") && bag_has(&b, "kan") &&
             (!strcmp(first, "kan") || !strcmp(first, "jag") || !strcmp(first, "vi")) && en <= 1) {
    lang = best_lg; /* "kan inte logga in": a Swedish phrase beside one English-shaped token */
  } else if (best_lg >= 0 && non_english && best >= (en > 2 ? en : 2)) {
    lang = best_lg;
  } else if (en) {
    bool rescued = false;
    if (non_english && rate < ENGLISH_RESCUE_DIACRITIC_RATE) {
      size_t en_only = 0, dia_words = 0;
      for (size_t i = 0; i < b.n; i++) {
        en_only += (b.v[i].flags & STOP_EN_ONLY) != 0;
        dia_words += b.v[i].diacritic;
      }
      rescued = en_only >= 2 && dia_words <= 1;
    }
    if (!non_english || rescued) lang = STOP_EN;
  }
  out->language = lang;
  out->looks_non_english = non_english || (lang < 0 && nordic_overlap);
  if (reason) *reason = lang >= 0 ? "language_evidence" : "no_language_evidence";
  bag_free(&b);
}

/* An all-caps text's evidence for a language is more than acronym-shaped tokens. */
static bool shouted_evidence(const uint32_t *c, size_t n, int lang, double rate) {
  spans toks = {0};
  letter_runs(c, n, 1, &toks);
  bool long_word = false;
  for (size_t i = 0; i < toks.n; i++) long_word |= toks.v[i].len >= SHOUTED_MIN_WORD;
  bool ok = false;
  if (long_word) {
    if (rate >= NON_EN_DIACRITIC_RATE) {
      ok = true;
    } else {
      word_bag b = {0};
      bag_from_text(&b, c, n, true);
      for (size_t i = 0; i < b.n && !ok; i++)
        if ((b.v[i].langs & (1u << lang)) && utf8_count(b.v[i].utf8) >= SHOUTED_MIN_STOPWORD)
          ok = true;
      bag_free(&b);
    }
  }
  free(toks.v);
  return ok;
}

/* Language of one non-code line, or -1 when it does not name a foreign language. */
static int named_prose_language(const uint32_t *c, size_t n) {
  if (blank(c, n) || code_line(c, n)) return -1;
  /* whitespace tokens without joiners, joined by one space */
  ustr prose = {0};
  size_t i = 0;
  bool any = false;
  while (i < n) {
    while (i < n && is_space(c[i])) i++;
    size_t s = i;
    while (i < n && !is_space(c[i])) i++;
    if (i > s && !joined(c + s, i - s)) {
      if (any) us_push(&prose, ' ');
      us_append(&prose, c + s, i - s);
      any = true;
    }
  }
  bool is_shouted = shouted(prose.c, prose.n);
  if (!is_shouted) {
    ustr b = {0};
    blank_caps(prose.c, prose.n, &b);
    us_free(&prose);
    prose = b;
  }
  int result = -1;
  spans toks = {0};
  letter_runs(prose.c, prose.n, 1, &toks);
  if (toks.n >= 4) {
    latin_prof p;
    latin_profile(prose.c, prose.n, &p);
    int lang = p.language;
    if (lang > 0 && (!is_shouted || shouted_evidence(prose.c, prose.n, lang, p.diacritic_rate))) {
      /* two different words of that language (lowercased, İ kept as Python lowers it) */
      word_bag b = {0};
      for (size_t k = 0; k < toks.n; k++) {
        ustr t = {0};
        for (size_t q = 0; q < toks.v[k].len; q++) {
          uint32_t cp = prose.c[toks.v[k].start + q];
          if (cp == 0x130) {
            us_push(&t, 'i');
            us_push(&t, 0x307);
          } else {
            us_push(&t, lower_cp(cp));
          }
        }
        bag_add(&b, t.c, t.n);
        us_free(&t);
      }
      size_t distinct = 0;
      for (size_t k = 0; k < b.n; k++) distinct += (b.v[k].langs & (1u << lang)) != 0;
      bag_free(&b);
      if (distinct >= 2) result = lang;
    }
  }
  free(toks.v);
  us_free(&prose);
  return result;
}

/* ---------------------------------------------------------------- whole-text verdict */

static bool non_latin_carries(double frac, double n) {
  return frac >= NON_LATIN_FRACTION ||
         (frac >= NON_LATIN_MIN_FRACTION && n >= (double)NON_LATIN_MIN_LETTERS);
}

static void analyse_u_r(const uint32_t *c, size_t n, lang_detection *d, const char **reason);
static void analyse_u(const uint32_t *c, size_t n, lang_detection *d) { analyse_u_r(c, n, d, NULL); }

static void analyse_u_r(const uint32_t *c, size_t n, lang_detection *d, const char **reason) {
  memset(d, 0, sizeof *d);
  script_counts sc;
  count_scripts(c, n, &sc);
  size_t total = total_letters(&sc);
  int script = dominant_script(&sc);
  double latin_frac = 0.0;
  if (total) {
    if (sc.count[SC_LATIN]) {
      d->profile_name[d->nprofile] = "latin";
      d->profile_value[d->nprofile++] = (double)sc.count[SC_LATIN] / (double)total;
      latin_frac = (double)sc.count[SC_LATIN] / (double)total;
    }
    for (int k = 0; k < sc.norder; k++) {
      int s = sc.order[k];
      if (s == SC_LATIN || !sc.count[s]) continue;
      d->profile_name[d->nprofile] = kScriptNames[s];
      d->profile_value[d->nprofile++] = (double)sc.count[s] / (double)total;
    }
  }
  double non_latin = total ? py_round4(1.0 - latin_frac) : 0.0;
  double n_non_latin = nearbyint(non_latin * (double)count_alpha(c, n));
  bool carries = non_latin_carries(non_latin, n_non_latin);
  if (script == SC_LATIN && carries && has_non_latin_words(c, n)) {
    int best = -1;
    double bv = 0;
    for (int k = 0; k < d->nprofile; k++) {
      if (!strcmp(d->profile_name[k], "latin")) continue;
      if (best < 0 || d->profile_value[k] > bv) {
        best = k;
        bv = d->profile_value[k];
      }
    }
    for (int s = 0; s < SC_COUNT; s++)
      if (best >= 0 && !strcmp(kScriptNames[s], d->profile_name[best])) script = s;
  }
  if (script < 0) {
    if (reason) *reason = "no_letters";
    d->script = "unknown";
    d->is_english = true;
    d->language_undecided = true;
    return;
  }
  d->script = kScriptNames[script];
  if (script != SC_LATIN) {
    if (reason) *reason = "non_latin_script";
    d->is_english = false;
    d->language_undecided = true;
    d->non_latin_fraction = non_latin;
    return;
  }
  latin_prof p;
  latin_profile_r(c, n, &p, reason);
  int lang = p.language;
  if (lang > 0 && !carries) {
    if (shouted(c, n)) {
      if (!shouted_evidence(c, n, lang, p.diacritic_rate)) {
        lang = -1;
        if (reason) *reason = "caps_veto";
      }
    } else {
      /* acronym-shaped capitals do not vote, unless a capitalised run is long enough to be a
       * word (emphasis), in which case nothing is blanked */
      spans runs = {0};
      letter_runs(c, n, 2, &runs);
      bool caps = false, long_caps = false;
      for (size_t i = 0; i < runs.n; i++) {
        if (!run_isupper(c + runs.v[i].start, runs.v[i].len)) continue;
        caps = true;
        if (runs.v[i].len >= SHOUTED_MIN_WORD) long_caps = true;
      }
      free(runs.v);
      if (caps && !long_caps) {
        ustr b = {0};
        blank_caps(c, n, &b);
        bool changed = b.n != n || memcmp(b.c, c, n * sizeof(uint32_t)) != 0;
        if (changed) {
          latin_prof q;
          latin_profile(b.c, b.n, &q);
          lang = q.language;
          if (reason) *reason = "caps_filtered";
        }
        us_free(&b);
      }
    }
  }
  bool undecided = lang < 0;
  d->language = undecided ? NULL : stop_lang_codes[lang];
  d->is_english = lang == STOP_EN || (undecided && !p.looks_non_english);
  if (reason && undecided && !d->is_english) *reason = "non_english_markers";
  d->language_undecided = undecided;
  d->diacritic_rate = py_round4(p.diacritic_rate);
  d->non_latin_fraction = non_latin;
}

/* ---------------------------------------------------------------- structured states */

typedef struct leaves {
  ustr *v;
  char **path; /* per leaf: the JSON list of keys and indices leading to it, or NULL (None) */
  size_t n, cap;
} leaves;

/* String leaves of a state, in order (values only: keys are field names), and their paths.
 * A key longer than 128 code points is not copied into a path: the path becomes None. */
static void collect(const json_value *v, int depth, leaves *out, const char *path) {
  if (!v || depth > 6) return;
  if (v->type == JSON_STRING) {
    if (out->n == out->cap) {
      size_t cap = out->cap ? out->cap * 2 : 8;
      ustr *nv = realloc(out->v, cap * sizeof(ustr));
      char **np = realloc(out->path, cap * sizeof(char *));
      if (nv) out->v = nv;
      if (np) out->path = np;
      if (!nv || !np) return;
      out->cap = cap;
    }
    ustr *s = &out->v[out->n];
    memset(s, 0, sizeof *s);
    us_from_utf8(s, v->s, v->n);
    out->path[out->n] = path ? strdup(path) : NULL;
    out->n++;
  } else if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
    for (uint32_t i = 0; i < v->n; i++) {
      strbuf p;
      sb_init(&p);
      const char *child = NULL;
      if (path) {
        bool bounded = true;
        if (v->type == JSON_OBJECT) bounded = utf8_count(v->members[i].key) <= 128;
        if (bounded) {
          sb_puts(&p, path);
          if (*path) sb_puts(&p, ", ");
          if (v->type == JSON_OBJECT) json_dump_string(&p, v->members[i].key, v->members[i].key_len, false);
          else sb_printf(&p, "%u", i);
          child = p.data ? p.data : "";
        }
      }
      collect(v->type == JSON_ARRAY ? &v->items[i] : &v->members[i].value, depth + 1, out, child);
      sb_free(&p);
    }
  }
}

static void leaves_free(leaves *l) {
  for (size_t i = 0; i < l->n; i++) {
    us_free(&l->v[i]);
    free(l->path[i]);
  }
  free(l->v);
  free(l->path);
}

/* state_text: leaves joined with one space, at most 4000 code points. */
static void state_text(const leaves *l, ustr *out) {
  long budget = 4000;
  for (size_t i = 0; i < l->n; i++) {
    if (budget <= 0) break;
    if (i) us_push(out, ' ');
    if ((long)l->v[i].n > budget) {
      us_append(out, l->v[i].c, (size_t)budget);
      break;
    }
    us_append(out, l->v[i].c, l->v[i].n);
    budget -= (long)l->v[i].n + 1;
  }
  if (out->n > 4000) out->n = 4000;
}

/* First line of any leaf that names a foreign language on its own; 4000 code points in all. */
static int non_english_segment(const leaves *l, char **segment, size_t *leaf_index, size_t *line_no) {
  size_t seen = 0;
  for (size_t k = 0; k < l->n; k++) {
    const ustr *leaf = &l->v[k];
    size_t s = 0, line = 0;
    for (;;) {
      line++;
      size_t e = s;
      while (e < leaf->n && leaf->c[e] != '\n') e++;
      if (seen >= 4000) return -1;
      size_t len = e - s;
      if (len > 4000 - seen) len = 4000 - seen;
      seen += len;
      int lang = named_prose_language(us_at(leaf, s), len);
      if (lang >= 0) {
        size_t a = s, b = s + len;
        while (a < b && is_space(leaf->c[a])) a++;
        while (b > a && is_space(leaf->c[b - 1])) b--;
        strbuf sb;
        sb_init(&sb);
        for (size_t i = a; i < b; i++) sb_put_cp(&sb, leaf->c[i]);
        *segment = sb_steal(&sb);
        if (!*segment) *segment = strdup("");
        *leaf_index = k;
        *line_no = line;
        return lang;
      }
      if (e >= leaf->n) break;
      s = e + 1;
    }
  }
  return -1;
}

/* A leaf that is itself not safe for the English checkpoint; fills best and returns true. */
static bool leaf_non_english(const ustr *leaf, lang_detection *best, size_t *best_line,
                             const char **best_reason) {
  long best_n = -1;
  bool found = false;
  size_t s = 0, line_no = 0;
  for (;;) {
    line_no++;
    size_t e = s;
    while (e < leaf->n && leaf->c[e] != '\n') e++;
    size_t len = e - s;
    const uint32_t *line = us_at(leaf, s);
    if (len >= 7) {
      size_t sl = len > 4000 ? 4000 : len;
      if (!blank(line, sl) && !code_line(line, sl)) {
        lang_detection det;
        analyse_u(line, sl, &det);
        bool take = false, named = false;
        if (!det.is_english) {
          named = det.language && strcmp(det.language, "en") != 0 &&
                  named_prose_language(line, sl) >= 0;
          take = true;
          if (!named) {
            if (strcmp(det.script, "latin") != 0 && strcmp(det.script, "unknown") != 0) {
              if (!(has_non_latin_words(line, sl) && count_alpha(line, sl) >= NON_LATIN_MIN_LETTERS))
                take = false;
            } else {
              spans toks = {0};
              letter_runs(line, sl, 1, &toks);
              if (!(det.diacritic_rate >= NON_EN_DIACRITIC_RATE && toks.n >= 4)) take = false;
              free(toks.v);
            }
          }
        }
        if (take) {
          long na = (long)count_alpha(line, sl);
          if (na > best_n) {
            best_n = na;
            *best = det;
            found = true;
            *best_line = line_no;
            *best_reason = named ? "named_value"
                                 : (strcmp(det.script, "latin") && strcmp(det.script, "unknown")) ? "non_latin_value"
                                                                                                   : "diacritic_value";
          }
        }
      }
    }
    if (e >= leaf->n) break;
    s = e + 1;
  }
  return found;
}

void lang_analyse_explain(const json_value *state, lang_detection *out, lang_diag *diag) {
  leaves l = {0};
  collect(state, 0, &l, "");
  ustr text = {0};
  state_text(&l, &text);
  const char *reason = NULL;
  analyse_u_r(text.c, text.n, out, diag ? &reason : NULL);
  us_free(&text);
  if (diag) {
    memset(diag, 0, sizeof *diag);
    diag->stage = "whole_state";
    diag->reason = reason;
  }
  if (!strcmp(out->script, "latin") && out->is_english) {
    bool multi = l.n > 1;
    for (size_t i = 0; i < l.n && !multi; i++)
      for (size_t j = 0; j < l.v[i].n; j++)
        if (l.v[i].c[j] == '\n') {
          multi = true;
          break;
        }
    if (multi) {
      char *seg = NULL;
      size_t leaf_index = 0, line = 0;
      int lang = non_english_segment(&l, &seg, &leaf_index, &line);
      if (lang >= 0) {
        out->language = stop_lang_codes[lang];
        out->is_english = false;
        out->language_undecided = false;
        out->mixed_segment = seg;
        if (diag) {
          diag->stage = "segment";
          diag->reason = "named_segment";
          diag->has_source = true;
          diag->leaf_index = leaf_index;
          diag->path = l.path[leaf_index] ? strdup(l.path[leaf_index]) : NULL;
          diag->line = line;
        }
      }
    }
  }
  bool plain = !state || state->type == JSON_STRING || state->type == JSON_NULL;
  if (plain || !out->is_english) {
    leaves_free(&l);
    return;
  }
  long best_n = -1;
  lang_detection best;
  bool any = false;
  size_t best_leaf = 0, best_line = 0;
  const char *best_reason = NULL;
  for (size_t i = 0; i < l.n; i++) {
    lang_detection det;
    size_t line = 0;
    const char *why = NULL;
    if (!leaf_non_english(&l.v[i], &det, &line, &why)) continue;
    size_t m = l.v[i].n > 4000 ? 4000 : l.v[i].n;
    long na = (long)count_alpha(l.v[i].c, m);
    if (na > best_n) {
      best_n = na;
      best = det;
      any = true;
      best_leaf = i;
      best_line = line;
      best_reason = why;
    }
  }
  if (any) {
    out->language = best.language;
    out->is_english = false;
    out->language_undecided = best.language_undecided;
    if (diag) {
      free(diag->path);
      diag->stage = "value";
      diag->reason = best_reason;
      diag->has_source = true;
      diag->leaf_index = best_leaf;
      diag->path = l.path[best_leaf] ? strdup(l.path[best_leaf]) : NULL;
      diag->line = best_line;
    }
  }
  leaves_free(&l);
}

void lang_analyse(const json_value *state, lang_detection *out) { lang_analyse_explain(state, out, NULL); }

void lang_analyse_text(const char *utf8, size_t n, lang_detection *out) {
  json_value v = json_string_n(utf8, n);
  lang_analyse(&v, out);
}

const char *lang_detect_script(const char *utf8, size_t n) {
  ustr u;
  memset(&u, 0, sizeof u);
  us_from_utf8(&u, utf8, n);
  script_counts sc;
  count_scripts(u.c, u.n, &sc);
  us_free(&u);
  int s = dominant_script(&sc);
  return s < 0 ? "unknown" : kScriptNames[s];
}

void lang_detection_free(lang_detection *d) {
  free(d->mixed_segment);
  d->mixed_segment = NULL;
}

static void put_float(strbuf *sb, double x) {
  char buf[32];
  py_float_json(x, buf);
  sb_puts(sb, buf);
}

void lang_diag_free(lang_diag *g) {
  free(g->path);
  g->path = NULL;
}

void lang_detection_json_explain(strbuf *sb, const lang_detection *d, const lang_diag *g) {
  lang_detection_json(sb, d);
  if (!g) return;
  sb->len--; /* reopen the object */
  sb_puts(sb, ", \"diagnostic\": {\"stage\": ");
  json_dump_string(sb, g->stage, strlen(g->stage), false);
  sb_puts(sb, ", \"reason\": ");
  if (g->reason) json_dump_string(sb, g->reason, strlen(g->reason), false);
  else sb_puts(sb, "null");
  sb_puts(sb, ", \"source\": ");
  if (g->has_source) {
    sb_printf(sb, "{\"leaf_index\": %zu, \"path\": ", g->leaf_index);
    if (g->path) sb_printf(sb, "[%s]", g->path);
    else sb_puts(sb, "null");
    sb_printf(sb, ", \"line\": %zu}", g->line);
  } else {
    sb_puts(sb, "null");
  }
  sb_puts(sb, "}}");
}

void lang_detection_json(strbuf *sb, const lang_detection *d) {
  sb_puts(sb, "{\"script\": ");
  json_dump_string(sb, d->script, strlen(d->script), false);
  sb_puts(sb, ", \"script_profile\": {");
  for (int i = 0; i < d->nprofile; i++) {
    if (i) sb_puts(sb, ", ");
    json_dump_string(sb, d->profile_name[i], strlen(d->profile_name[i]), false);
    sb_puts(sb, ": ");
    put_float(sb, d->profile_value[i]);
  }
  sb_puts(sb, "}, \"language\": ");
  if (d->language) json_dump_string(sb, d->language, strlen(d->language), false);
  else sb_puts(sb, "null");
  sb_printf(sb, ", \"is_english\": %s, \"language_undecided\": %s, \"diacritic_rate\": ",
            d->is_english ? "true" : "false", d->language_undecided ? "true" : "false");
  put_float(sb, d->diacritic_rate);
  sb_puts(sb, ", \"non_latin_fraction\": ");
  put_float(sb, d->non_latin_fraction);
  sb_puts(sb, ", \"mixed_segment\": ");
  if (d->mixed_segment) json_dump_string(sb, d->mixed_segment, strlen(d->mixed_segment), false);
  else sb_puts(sb, "null");
  sb_putc(sb, '}');
}
