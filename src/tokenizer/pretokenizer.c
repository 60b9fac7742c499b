/*
 * pretokenizer.c: ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit, Punctuation, Digits
 * and Sequence, cutting text pieces into the pieces the model sees.
 *
 * Every splitting pre-tokenizer is "find the matches, then apply a split behaviour": the text is
 * cut into segments (gaps and matches, in order), Invert flips which is which, and the behaviour
 * (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous) groups them. Empty pieces
 * are dropped, as the reference drops empty splits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "tokenizer/internal.h"
#include "tokenizer/unicode_tables.h"

/* ---- the GPT-2 byte -> char table (printable bytes map to themselves) ---- */

typedef struct byte_char {
  char utf8[2];
  uint8_t len;
} byte_char;

static byte_char byte_chars[256];
static pthread_once_t byte_once = PTHREAD_ONCE_INIT;

static void build_byte_chars(void) {
  uint32_t n = 0;
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    uint32_t cp = printable ? (uint32_t)b : 256 + n++;
    char tmp[4];
    byte_chars[b].len = (uint8_t)utf8_put(tmp, cp);
    memcpy(byte_chars[b].utf8, tmp, byte_chars[b].len);
  }
}

uint32_t bytelevel_char(uint8_t b) {
  pthread_once(&byte_once, build_byte_chars);
  uint32_t cp;
  utf8_decode((const unsigned char *)byte_chars[b].utf8, &cp);
  return cp;
}

/* ---- segments and behaviours ---- */

static bool seg_push(tok_work *w, uint32_t s, uint32_t e, bool match) {
  if (w->segs_n == w->segs_cap) {
    seg *v = grow(w->segs, &w->segs_cap, w->segs_n + 1, sizeof *v);
    if (!v) {
      w->oom = true;
      return false;
    }
    w->segs = v;
  }
  w->segs[w->segs_n++] = (seg){s, e, match};
  return true;
}

/* Matches (in w->spans) -> gap/match segments over [0, len), as the reference's find_matches. */
static bool segments_from_spans(tok_work *w, uint32_t len, bool invert) {
  w->segs_n = 0;
  uint32_t prev = 0;
  for (size_t i = 0; i < w->spans.n; i++) {
    span m = w->spans.v[i];
    if (prev != m.start && !seg_push(w, prev, m.start, invert)) return false;
    if (!seg_push(w, m.start, m.end, !invert)) return false;
    prev = m.end;
  }
  if (prev != len && !seg_push(w, prev, len, invert)) return false;
  return true;
}

/* Group the segments by behaviour and push the non-empty groups as pieces of `src`. */
static bool push_groups(tok_work *w, const piece *src, split_behavior beh) {
  piece_vec *out = &w->b;
  size_t n = w->segs_n;
  const seg *sg = w->segs;
#define EMIT(s, e)                                                                           \
  do {                                                                                       \
    if ((e) > (s) &&                                                                         \
        !piece_push(w, out, src->off + (s), (e) - (s), -1, first_after(src->first, (s))))          \
      return false;                                                                          \
  } while (0)
  switch (beh) {
    case SPLIT_REMOVED:
      for (size_t i = 0; i < n; i++)
        if (!sg[i].match) EMIT(sg[i].start, sg[i].end);
      break;
    case SPLIT_ISOLATED:
      for (size_t i = 0; i < n; i++) EMIT(sg[i].start, sg[i].end);
      break;
    case SPLIT_CONTIGUOUS:
    case SPLIT_MERGED_WITH_PREVIOUS: {
      uint32_t gs = 0, ge = 0;
      bool have = false;
      for (size_t i = 0; i < n; i++) {
        bool join = beh == SPLIT_CONTIGUOUS ? (i > 0 && sg[i].match == sg[i - 1].match)
                                            : (i > 0 && sg[i].match && !sg[i - 1].match);
        if (join && have) {
          ge = sg[i].end;
        } else {
          if (have) EMIT(gs, ge);
          gs = sg[i].start;
          ge = sg[i].end;
          have = true;
        }
      }
      if (have) EMIT(gs, ge);
      break;
    }
    case SPLIT_MERGED_WITH_NEXT:
      for (size_t i = 0; i < n;) {
        if (sg[i].match && i + 1 < n && !sg[i + 1].match) {
          EMIT(sg[i].start, sg[i + 1].end);
          i += 2;
        } else {
          EMIT(sg[i].start, sg[i].end);
          i++;
        }
      }
      break;
  }
#undef EMIT
  return true;
}

/* Single-character matches of a class (the reference's Pattern for Fn(char) -> bool). */
static bool char_matches(tok_work *w, const char *s, uint32_t len, uint8_t cls_bit, uint32_t cp_eq) {
  const uint16_t *cls = uc_classes();
  w->spans.n = 0;
  for (uint32_t i = 0; i < len;) {
    uint32_t cp;
    int k = utf8_decode((const unsigned char *)s + i, &cp);
    bool hit = cls_bit ? (uc_class(cls, cp) & cls_bit) != 0 : cp == cp_eq;
    if (hit && !span_push(&w->spans, i, i + (uint32_t)k)) {
      w->oom = true;
      return false;
    }
    i += (uint32_t)k;
  }
  return true;
}

/* ---- per-piece pre-tokenizers ---- */

/* Map every byte of [off, off+len) to its GPT-2 char; returns the new offset (appended). */
static bool bytelevel_map(tok_work *w, uint32_t off, uint32_t len, uint32_t *out_off, uint32_t *out_len) {
  if (!work_reserve(w, (size_t)len * 2)) return false;
  const unsigned char *s = (const unsigned char *)w->buf + off;
  char *o = w->buf + w->len;
  size_t k = 0;
  for (uint32_t i = 0; i < len; i++) {
    const byte_char *bc = &byte_chars[s[i]];
    o[k] = bc->utf8[0];
    if (bc->len == 2) o[k + 1] = bc->utf8[1];
    k += bc->len;
  }
  *out_off = (uint32_t)w->len;
  *out_len = (uint32_t)k;
  w->len += k;
  return true;
}

static bool bytelevel(const pretokenizer *p, tok_work *w, piece pc) {
  pthread_once(&byte_once, build_byte_chars);
  if (p->add_prefix_space && (pc.len == 0 || w->buf[pc.off] != ' ')) {
    if (!work_reserve(w, pc.len + 1)) return false;
    w->buf[w->len] = ' ';
    memcpy(w->buf + w->len + 1, w->buf + pc.off, pc.len);
    pc.off = (uint32_t)w->len;
    pc.len += 1;
    w->len += pc.len;
    if (pc.first) pc.first += 1;
  }
  size_t first_out = w->b.n;
  if (p->use_regex) {
    w->spans.n = 0;
    if (!scan_gpt2(w->buf + pc.off, pc.len, &w->spans)) return false;
    if (!segments_from_spans(w, pc.len, false) || !push_groups(w, &pc, SPLIT_ISOLATED)) return false;
  } else if (pc.len) {
    if (!piece_push(w, &w->b, pc.off, pc.len, -1, pc.first)) return false;
  }
  for (size_t i = first_out; i < w->b.n; i++) {
    piece *q = &w->b.v[i];
    uint32_t o, l, f = 0;
    for (uint32_t k = 0; k < q->first && k < q->len; k++) f += byte_chars[(unsigned char)w->buf[q->off + k]].len;
    if (!bytelevel_map(w, q->off, q->len, &o, &l)) return false;
    q = &w->b.v[i];
    q->off = o;
    q->len = l;
    q->first = f;
  }
  return true;
}

static bool metaspace(const pretokenizer *p, tok_work *w, piece pc) {
  /* replace ' ' with the replacement, prepending one per the scheme */
  if (!work_reserve(w, (size_t)pc.len * (size_t)p->rep_len + (size_t)p->rep_len)) return false;
  const char *s = w->buf + pc.off;
  char *o = w->buf + w->len;
  size_t k = 0;
  bool starts_with_rep = (pc.len > 0 && s[0] == ' ') ||
                         (pc.len >= (uint32_t)p->rep_len && memcmp(s, p->rep, (size_t)p->rep_len) == 0);
  bool prepend = (p->prepend == PREPEND_ALWAYS || (p->prepend == PREPEND_FIRST && pc.first)) &&
                 !starts_with_rep;
  if (prepend) {
    memcpy(o, p->rep, (size_t)p->rep_len);
    k += (size_t)p->rep_len;
  }
  for (uint32_t i = 0; i < pc.len; i++) {
    if (s[i] == ' ') {
      memcpy(o + k, p->rep, (size_t)p->rep_len);
      k += (size_t)p->rep_len;
    } else {
      o[k++] = s[i];
    }
  }
  /* the prepended replacement stems from the first character too */
  piece np = {(uint32_t)w->len, (uint32_t)k, -1, pc.first ? pc.first + (prepend ? (uint32_t)p->rep_len : 0) : 0};
  w->len += k;
  if (!p->split) return np.len == 0 || piece_push(w, &w->b, np.off, np.len, -1, np.first);
  if (!char_matches(w, w->buf + np.off, np.len, 0, p->replacement)) return false;
  return segments_from_spans(w, np.len, false) && push_groups(w, &np, SPLIT_MERGED_WITH_NEXT);
}

/* Whitespace: the matches of \w+|[^\w\s]+ (Rust regex classes), everything else removed. */
static bool whitespace(tok_work *w, piece pc) {
  const uint16_t *cls = uc_classes();
  const unsigned char *s = (const unsigned char *)w->buf + pc.off;
  uint32_t i = 0;
  while (i < pc.len) {
    uint32_t cp;
    int k = utf8_decode(s + i, &cp);
    uint16_t c = uc_class(cls, cp);
    if (c & UC_RS && !(c & UC_W)) {
      i += (uint32_t)k;
      continue;
    }
    bool word = c & UC_W;
    uint32_t j = i + (uint32_t)k;
    while (j < pc.len) {
      k = utf8_decode(s + j, &cp);
      c = uc_class(cls, cp);
      if (word ? !(c & UC_W) : (c & (UC_W | UC_RS)) != 0) break;
      j += (uint32_t)k;
    }
    if (!piece_push(w, &w->b, pc.off + i, j - i, -1, first_after(pc.first, i))) return false;
    i = j;
  }
  return true;
}

static bool split_piece(const pretokenizer *p, tok_work *w, piece pc) {
  switch (p->kind) {
    case PRE_BYTELEVEL:
      return bytelevel(p, w, pc);
    case PRE_METASPACE:
      return metaspace(p, w, pc);
    case PRE_WHITESPACE:
      return whitespace(w, pc);
    case PRE_SPLIT:
      w->spans.n = 0;
      if (pattern_find(&p->pat, w->buf + pc.off, pc.len, &w->spans, w->err)) return false;
      return segments_from_spans(w, pc.len, p->invert) && push_groups(w, &pc, p->behavior);
    case PRE_WHITESPACE_SPLIT:
      return char_matches(w, w->buf + pc.off, pc.len, UC_WS, 0) &&
             segments_from_spans(w, pc.len, false) && push_groups(w, &pc, SPLIT_REMOVED);
    case PRE_PUNCTUATION:
      return char_matches(w, w->buf + pc.off, pc.len, UC_PUNC, 0) &&
             segments_from_spans(w, pc.len, false) && push_groups(w, &pc, p->behavior);
    case PRE_DIGITS:
      return char_matches(w, w->buf + pc.off, pc.len, UC_NUMERIC, 0) &&
             segments_from_spans(w, pc.len, false) &&
             push_groups(w, &pc, p->individual_digits ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS);
    case PRE_SEQUENCE:
      break;
  }
  return true;
}

int pretokenize_apply(const pretokenizer *p, tok_work *w) {
  if (p->kind == PRE_SEQUENCE) {
    for (size_t i = 0; i < p->n_items; i++)
      if (pretokenize_apply(&p->items[i], w)) return -1;
    return 0;
  }
  w->b.n = 0;
  for (size_t i = 0; i < w->a.n; i++) {
    piece pc = w->a.v[i];
    bool ok = pc.id >= 0 ? piece_push(w, &w->b, pc.off, pc.len, pc.id, pc.first) : split_piece(p, w, pc);
    if (!ok) {
      if (w->oom) return laya_err(w->err, LAYA_ERR_NOMEM, NULL, "out of memory");
      return -1; /* a regex failure already set the error */
    }
  }
  piece_vec t = w->a;
  w->a = w->b;
  w->b = t;
  return 0;
}

/* ---- load ---- */

static int parse_behavior(const json_value *v, split_behavior *out, const char *what, laya_error *err) {
  static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
  if (v && v->type == JSON_STRING)
    for (int i = 0; i < 5; i++)
      if (!strcmp(v->s, names[i])) {
        *out = (split_behavior)i;
        return 0;
      }
  return laya_err(err, LAYA_ERR_FORMAT, NULL,
                  "%s: \"behavior\" must be one of Removed, Isolated, MergedWithPrevious, "
                  "MergedWithNext, Contiguous",
                  what);
}

static bool get_bool(const json_value *v, const char *key, bool dflt) {
  const json_value *x = json_get(v, key);
  return x && x->type == JSON_BOOL ? x->b : dflt;
}

int parse_prepend_scheme(const json_value *v, prepend_scheme *out, const char *what, laya_error *err) {
  const json_value *ps = json_get(v, "prepend_scheme");
  *out = PREPEND_ALWAYS;
  if (ps && ps->type == JSON_STRING) {
    if (!strcmp(ps->s, "always")) *out = PREPEND_ALWAYS;
    else if (!strcmp(ps->s, "first")) *out = PREPEND_FIRST;
    else if (!strcmp(ps->s, "never")) *out = PREPEND_NEVER;
    else return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: unknown prepend_scheme \"%s\"", what, ps->s);
  }
  const json_value *aps = json_get(v, "add_prefix_space");
  if (aps && aps->type == JSON_BOOL && !aps->b) {
    if (*out != PREPEND_NEVER && ps && ps->type == JSON_STRING)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: add_prefix_space does not match declared prepend_scheme", what);
    *out = PREPEND_NEVER;
  }
  return 0;
}

int parse_replacement(const json_value *v, uint32_t *cp, const char *what, laya_error *err) {
  const json_value *r = json_get(v, "replacement");
  if (!r || r->type != JSON_STRING || r->n == 0 || r->surrogate)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: \"replacement\" must be one character", what);
  int k = utf8_decode((const unsigned char *)r->s, cp);
  if ((uint32_t)k != r->n)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "%s: \"replacement\" must be one character", what);
  return 0;
}

static int load_one(tokenizer *t, const json_value *v, pretokenizer *p, laya_error *err) {
  memset(p, 0, sizeof *p);
  const json_value *type = json_get(v, "type");
  if (!type || type->type != JSON_STRING)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "pre_tokenizer without a \"type\"");
  const char *ty = type->s;
  if (!strcmp(ty, "ByteLevel")) {
    p->kind = PRE_BYTELEVEL;
    p->add_prefix_space = get_bool(v, "add_prefix_space", true);
    p->use_regex = get_bool(v, "use_regex", true);
  } else if (!strcmp(ty, "Split")) {
    p->kind = PRE_SPLIT;
    if (parse_behavior(json_get(v, "behavior"), &p->behavior, "Split pre_tokenizer", err)) return -1;
    p->invert = get_bool(v, "invert", false);
    if (pattern_load(t, json_get(v, "pattern"), &p->pat, "Split pre_tokenizer", err)) return -1;
  } else if (!strcmp(ty, "Metaspace")) {
    p->kind = PRE_METASPACE;
    if (parse_replacement(v, &p->replacement, "Metaspace pre_tokenizer", err)) return -1;
    p->rep_len = utf8_put(p->rep, p->replacement);
    if (parse_prepend_scheme(v, &p->prepend, "Metaspace pre_tokenizer", err)) return -1;
    p->split = get_bool(v, "split", true);
  } else if (!strcmp(ty, "Whitespace")) {
    p->kind = PRE_WHITESPACE;
  } else if (!strcmp(ty, "WhitespaceSplit")) {
    p->kind = PRE_WHITESPACE_SPLIT;
  } else if (!strcmp(ty, "Punctuation")) {
    p->kind = PRE_PUNCTUATION;
    p->behavior = SPLIT_ISOLATED;
    const json_value *b = json_get(v, "behavior");
    if (b && parse_behavior(b, &p->behavior, "Punctuation pre_tokenizer", err)) return -1;
  } else if (!strcmp(ty, "Digits")) {
    p->kind = PRE_DIGITS;
    p->individual_digits = get_bool(v, "individual_digits", false);
  } else if (!strcmp(ty, "Sequence")) {
    p->kind = PRE_SEQUENCE;
    const json_value *items = json_get(v, "pretokenizers");
    if (!items || items->type != JSON_ARRAY)
      return laya_err(err, LAYA_ERR_FORMAT, NULL, "Sequence pre_tokenizer: missing \"pretokenizers\" list");
    p->items = arena_alloc(&t->a, sizeof *p->items * (items->n ? items->n : 1));
    if (!p->items) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < items->n; i++) {
      p->n_items++;
      if (load_one(t, &items->items[i], &p->items[i], err)) return -1;
    }
  } else {
    return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                    "pre_tokenizer \"%s\" is not supported (supported: ByteLevel, Split, Metaspace, "
                    "Whitespace, WhitespaceSplit, Punctuation, Digits, Sequence)", ty);
  }
  return 0;
}

int pretokenizer_load(tokenizer *t, const json_value *v, pretokenizer **out, laya_error *err) {
  *out = NULL;
  if (!v || v->type == JSON_NULL) return 0;
  if (v->type != JSON_OBJECT)
    return laya_err(err, LAYA_ERR_FORMAT, NULL, "\"pre_tokenizer\" must be an object or null");
  pretokenizer *p = arena_alloc(&t->a, sizeof *p);
  if (!p) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  *out = p;
  return load_one(t, v, p, err);
}

void pretokenizer_free(pretokenizer *p) {
  if (!p) return;
  pattern_free(&p->pat);
  for (size_t i = 0; i < p->n_items; i++) pretokenizer_free(&p->items[i]);
}
