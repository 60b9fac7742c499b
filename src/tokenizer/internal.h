/*
 * internal.h: the loaded tokenizer and the per-call work area, shared by the tokenizer's files.
 *
 * Encoding follows the reference's order exactly:
 *   1. added tokens with normalized=false are cut out of the raw text (leftmost-longest);
 *   2. every other span is normalized, then added tokens with normalized=true are cut out;
 *   3. the pre-tokenizer splits every remaining span into pieces;
 *   4. the model (BPE) turns every piece into ids.
 * A span is a `piece`: bytes in the work buffer plus the added-token id it already is (or -1).
 * Nothing in `tokenizer` changes after load; all per-call state lives in `tok_work`.
 */
#ifndef LAYA_TOKENIZER_INTERNAL_H
#define LAYA_TOKENIZER_INTERNAL_H

#include <oniguruma.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

/* ---- string -> id map (open addressing; the strings live in the tokenizer's arena) ---- */
typedef struct str_entry {
  const char *s;
  uint32_t n;
  int32_t id;
} str_entry;

/* A probe touches one slot: hash, length, id, and the string itself when it is at most 8 bytes
 * (most tokens), else a pointer to it. One cache miss per lookup in a 262k-entry vocabulary. */
typedef struct str_slot {
  union {
    const char *s;  /* n > 8 */
    char inl[8];    /* n <= 8, zero padded */
  } u;
  uint32_t hash, n;
  int32_t id;
  uint32_t entry1; /* entry index + 1; 0 = empty slot */
} str_slot;

typedef struct str_map {
  str_entry *entries; /* insertion order, for iterating */
  uint32_t count, cap_entries;
  str_slot *slots;
  uint32_t mask;
} str_map;

uint32_t tk_hash(const char *s, size_t n);
bool str_map_init(str_map *m, uint32_t expected);
void str_map_free(str_map *m);
/* Insert or overwrite (later wins, like a Rust HashMap built from a JSON object). */
bool str_map_put(str_map *m, const char *s, uint32_t n, int32_t id);
bool str_map_put_hashed(str_map *m, const char *s, uint32_t n, int32_t id, uint32_t h);
int32_t str_map_get(const str_map *m, const char *s, size_t n);
/* The same with tk_hash(s, n) already computed. */
int32_t str_map_get_hashed(const str_map *m, const char *s, size_t n, uint32_t h);

/* ---- (left id, right id) -> (rank, merged id) ---- */
typedef struct pair_slot {
  uint64_t key; /* (a << 32 | b) + 1; 0 = empty */
  uint32_t rank, merged;
} pair_slot;

typedef struct pair_map {
  pair_slot *slots; /* key and value side by side: one cache line per probe */
  uint32_t mask, count;
} pair_map;

bool pair_map_init(pair_map *m, uint32_t expected);
void pair_map_free(pair_map *m);
void pair_map_put(pair_map *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t merged);
static inline bool pair_map_get(const pair_map *m, uint32_t a, uint32_t b, uint32_t *rank,
                                uint32_t *merged) {
  uint64_t key = (((uint64_t)a << 32) | b) + 1;
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  uint32_t i = (uint32_t)(h >> 32) & m->mask;
  for (;;) {
    const pair_slot *s = &m->slots[i];
    if (s->key == key) {
      *rank = s->rank;
      *merged = s->merged;
      return true;
    }
    if (!s->key) return false;
    i = (i + 1) & m->mask;
  }
}

/* ---- patterns (Split, Replace): a literal string, a regex, or one of our hand scanners ---- */
typedef enum {
  PAT_LITERAL,
  PAT_REGEX,
  PAT_GPT2,   /* the GPT-2 / ByteLevel regex, hand-scanned */
  PAT_LLAMA3  /* the Llama-3 split regex, hand-scanned */
} pat_kind;

typedef struct tk_pattern {
  pat_kind kind;
  char *lit; /* PAT_LITERAL bytes; also the regex source for messages */
  size_t lit_len;
  OnigRegex re; /* PAT_REGEX; also kept for the scanners (differential tests) */
} tk_pattern;

/* One match span [start, end) of a pattern inside a text, in order, non-overlapping. */
typedef struct span {
  uint32_t start, end;
} span;

typedef struct span_vec {
  span *v;
  size_t n, cap;
} span_vec;

bool span_push(span_vec *sv, uint32_t start, uint32_t end);

/* Find all matches of pat in text (the reference's find_iter). -1 on a regex failure. */
int pattern_find(const tk_pattern *pat, const char *text, size_t len, span_vec *out, laya_error *err);
/* Compile a pattern; a regex of the known GPT-2 / Llama-3 forms gets a hand scanner. */
int pattern_compile(tk_pattern *pat, const char *src, size_t len, bool is_regex, arena *a,
                    laya_error *err);
void pattern_free(tk_pattern *pat);
/* Read {"String": s} / {"Regex": r} from tokenizer.json. `what` names the component in errors. */
struct tokenizer;
struct json_value;
int pattern_load(struct tokenizer *t, const struct json_value *v, tk_pattern *pat, const char *what,
                 laya_error *err);
/* Force the Oniguruma path for a scanner pattern (tests compare the two). */
int pattern_find_regex(const tk_pattern *pat, const char *text, size_t len, span_vec *out,
                       laya_error *err);
/* Hand scanners: false when out of memory. */
bool scan_gpt2(const char *text, size_t len, span_vec *out);
bool scan_llama3(const char *text, size_t len, span_vec *out);

/* ---- normalizers ---- */
typedef enum {
  NORM_NFC,
  NORM_NFD,
  NORM_NFKC,
  NORM_NFKD,
  NORM_LOWERCASE,
  NORM_REPLACE,
  NORM_PREPEND,
  NORM_STRIP,
  NORM_SEQUENCE
} norm_kind;

typedef struct normalizer normalizer;
struct normalizer {
  norm_kind kind;
  tk_pattern pat;       /* Replace */
  const char *content;  /* Replace content, Prepend string */
  size_t content_len;
  bool strip_left, strip_right;
  normalizer *items;    /* Sequence */
  size_t n_items;
};

/* ---- pre-tokenizers ---- */
typedef enum {
  SPLIT_REMOVED,
  SPLIT_ISOLATED,
  SPLIT_MERGED_WITH_PREVIOUS,
  SPLIT_MERGED_WITH_NEXT,
  SPLIT_CONTIGUOUS
} split_behavior;

typedef enum {
  PRE_BYTELEVEL,
  PRE_SPLIT,
  PRE_METASPACE,
  PRE_WHITESPACE,
  PRE_WHITESPACE_SPLIT,
  PRE_PUNCTUATION,
  PRE_DIGITS,
  PRE_SEQUENCE
} pre_kind;

typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } prepend_scheme;

typedef struct pretokenizer pretokenizer;
struct pretokenizer {
  pre_kind kind;
  bool add_prefix_space, use_regex; /* ByteLevel */
  tk_pattern pat;                   /* Split; ByteLevel uses the shared GPT-2 scanner */
  split_behavior behavior;          /* Split, Punctuation */
  bool invert;                      /* Split */
  uint32_t replacement;             /* Metaspace char */
  char rep[4];
  int rep_len;
  prepend_scheme prepend;
  bool split;                       /* Metaspace */
  bool individual_digits;           /* Digits */
  pretokenizer *items;              /* Sequence */
  size_t n_items;
};

/* ---- decoders ---- */
typedef enum {
  DEC_BYTELEVEL,
  DEC_METASPACE,
  DEC_REPLACE,
  DEC_BYTE_FALLBACK,
  DEC_FUSE,
  DEC_STRIP,
  DEC_BPE,
  DEC_SEQUENCE
} dec_kind;

typedef struct decoder decoder;
struct decoder {
  dec_kind kind;
  tk_pattern pat;      /* Replace */
  const char *content; /* Replace content; BPEDecoder suffix */
  size_t content_len;
  uint32_t strip_char; /* Strip content */
  size_t strip_start, strip_stop;
  uint32_t replacement; /* Metaspace */
  prepend_scheme prepend;
  decoder *items;
  size_t n_items;
};

/* ---- added tokens ---- */
typedef struct added_token {
  const char *content; /* as written in tokenizer.json */
  uint32_t len;
  const char *pattern; /* what is matched: content, or its normalized form when normalized */
  uint32_t pattern_len;
  int32_t id;
  bool special, normalized, lstrip, rstrip, single_word;
} added_token;

/* A byte trie over the patterns of one pass (raw or normalized), for leftmost-longest search. */
typedef struct trie_node {
  uint32_t first_child; /* index into edges; edges of a node are contiguous and sorted */
  uint16_t n_children;
  int32_t token;        /* index into tokenizer.added, or -1 */
} trie_node;

typedef struct trie_edge {
  uint8_t byte;
  uint32_t node;
} trie_edge;

typedef struct added_trie {
  trie_node *nodes;
  trie_edge *edges;
  uint32_t n_nodes;
  bool first_byte[256]; /* bytes that start some pattern: a quick skip */
  bool empty;
} added_trie;

/* ---- the model ---- */
typedef struct bpe_model {
  str_map vocab;          /* model vocab: string -> id */
  pair_map merges;
  int32_t unk_id;         /* -1 when unk_token is null (or absent from vocab: then an error at use) */
  const char *unk_token;  /* for error messages */
  bool unk_missing;       /* unk_token set but not in vocab (reference errors when it is needed) */
  bool byte_fallback, fuse_unk, ignore_merges;
  const char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix (or NULL) */
  size_t prefix_len, suffix_len;
  int32_t byte_ids[256];  /* id of "<0xNN>" or -1 */
  int32_t ascii_ids[128]; /* id of each single ASCII char, or -1 (fast initial symbols) */
  int32_t *small_ids;     /* id of each single BMP character, or -1 */
} bpe_model;

struct tokenizer {
  /* cache bookkeeping (tokenizer.c) */
  int refs;
  char *cache_key;
  tokenizer *cache_next;

  arena a; /* all strings and component arrays */
  char *path;

  normalizer *norm;   /* NULL = none */
  pretokenizer *pre;  /* NULL = none */
  decoder *dec;       /* NULL = join with " " */
  bpe_model bpe;

  /* id -> string: model vocab tokens and added tokens (added authoritative) */
  const char **id_str;
  uint32_t *id_len;
  bool *id_is_added;
  int32_t n_ids; /* max id + 1 */

  added_token *added;
  size_t n_added;
  str_map added_map; /* content -> id */
  added_trie raw_trie, norm_trie;

  tokenizer_roles roles;
  bool cleanup_spaces; /* transformers' clean_up_tokenization after decode (see decoder.c) */

  /* the post-processor's single-sequence specials (post.c): post_ids[0, post_prefix) before the
   * text, the next post_suffix after it; post_unsupported names a processor we cannot apply */
  int32_t post_ids[16];
  int post_prefix, post_suffix;
  const char *post_unsupported;
};
#define TOK_POST_MAX 16
struct json_value;
void post_load(tokenizer *t, const struct json_value *pp);

/* ---- per-call work area ---- */
typedef struct piece {
  uint32_t off, len; /* bytes in work.buf */
  int32_t id;        /* >= 0: an added token already decided; -1: text */
  uint32_t first;    /* leading bytes that stem from the input's first character (0: none); a
                        piece whose start does is "first" for Metaspace prepend_scheme "first" */
} piece;

typedef struct piece_vec {
  piece *v;
  size_t n, cap;
} piece_vec;

typedef struct bpe_sym {
  int32_t id;
  int32_t prev, next;
  uint32_t len; /* bytes; 0 = merged away */
} bpe_sym;

typedef struct bpe_merge {
  uint32_t rank, pos, merged;
} bpe_merge;

/* A stretch of text and whether a pattern matched it (the reference's (offsets, is_match)). */
typedef struct seg {
  uint32_t start, end;
  bool match;
} seg;

typedef struct tok_work {
  char *buf;
  size_t len, cap;
  piece_vec a, b; /* current and next piece lists */
  span_vec spans, spans2;
  seg *segs;
  size_t segs_n, segs_cap;
  bpe_sym *syms;
  size_t syms_cap;
  bpe_merge *heap;
  size_t heap_cap;
  uint32_t *u32; /* normalizer scratch (code points) */
  size_t u32_cap;
  char *tmp; /* string scratch */
  size_t tmp_cap;
  laya_error *err;
  bool oom;
} tok_work;

void work_init(tok_work *w, laya_error *err);
void work_free(tok_work *w);
/* Make room for n more bytes at the end of w->buf; false (and w->oom) on failure. */
bool work_reserve(tok_work *w, size_t n);
bool piece_push(tok_work *w, piece_vec *pv, uint32_t off, uint32_t len, int32_t id, uint32_t first);
/* `first` of a sub-piece starting `at` bytes into a piece whose `first` is f */
static inline uint32_t first_after(uint32_t f, uint32_t at) { return f > at ? f - at : 0; }
void *grow(void *p, size_t *cap, size_t need, size_t elem);

/* UTF-8: decode one code point of valid UTF-8 at s (returns its length). */
static inline int utf8_decode(const unsigned char *s, uint32_t *cp) {
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c < 0xE0) {
    *cp = ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
    return 2;
  }
  if (c < 0xF0) {
    *cp = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    return 3;
  }
  *cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
  return 4;
}
/* Offset of the first invalid byte, or len if the text is valid UTF-8 (no surrogates). */
size_t utf8_validate(const char *s, size_t len);

/* ---- stages ---- */
/* Load-time constructors read the JSON tree (tokenizer.c passes its nodes). */
struct json_value;
int normalizer_load(tokenizer *t, const struct json_value *v, normalizer **out, laya_error *err);
int pretokenizer_load(tokenizer *t, const struct json_value *v, pretokenizer **out, laya_error *err);
int decoder_load(tokenizer *t, const struct json_value *v, decoder **out, laya_error *err);
void normalizer_free(normalizer *n);
void pretokenizer_free(pretokenizer *p);
void decoder_free(decoder *d);

/* Normalize bytes [off, off+len) of w->buf; the result is appended to w->buf at *out_off. */
int normalize_apply(const normalizer *n, tok_work *w, uint32_t off, uint32_t len, uint32_t *out_off,
                    uint32_t *out_len);
/* The same, also carrying `first` (bytes stemming from the input's first character). */
int normalize_piece(const normalizer *n, tok_work *w, piece *pc);
/* Normalize a standalone string (added-token patterns at load). Result malloc'd. */
int normalize_string(const normalizer *n, const char *s, size_t len, char **out, size_t *out_len,
                     laya_error *err);
/* Split every text piece of w->a into w->b (then swapped back into w->a). */
int pretokenize_apply(const pretokenizer *p, tok_work *w);

/* Added tokens: split every text piece of w->a with the trie, into w->b, then swap. */
int added_split(const tokenizer *t, const added_trie *trie, tok_work *w);
int added_build(tokenizer *t, laya_error *err);
void added_free(tokenizer *t);

/* BPE one piece (its bytes are the model's input string); appends its ids to out. */
int bpe_encode(const tokenizer *t, tok_work *w, const char *s, size_t len, ids_vec *out,
               laya_error *err);
int bpe_load(tokenizer *t, const struct json_value *model, const char *text, span vocab, span merges,
             const char *file, laya_error *err);
/* vocab_reader.c: find model.vocab / model.merges in the raw file, and read them into the maps. */
int vocab_find_spans(const char *text, size_t len, const char *file, span *vocab, span *merges,
                     laya_error *err);
int vocab_read(tokenizer *t, const char *text, span sp, const char *file, laya_error *err);
int merges_read(tokenizer *t, const char *text, span sp, const char *file, laya_error *err);
int added_load(tokenizer *t, const struct json_value *list, int32_t model_vocab_entries, laya_error *err);
uint32_t bytelevel_char(uint8_t b);
void bpe_free(bpe_model *m);

bool ids_push(ids_vec *v, int32_t id);

/* Decode tokens (strings) to text with the decoder chain. */
int decoder_run(const tokenizer *t, const char **toks, const uint32_t *lens, size_t n, char **text,
                size_t *len, laya_error *err);

#endif
