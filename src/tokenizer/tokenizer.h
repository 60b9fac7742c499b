/*
 * tokenizer.h: Hugging Face tokenizer.json in C, id-for-id with the `tokenizers` library.
 *
 * A tokenizer is immutable after load and safe to use from many threads at once. Loading the same
 * file twice returns the same parse (reference counted), so several models share one copy.
 *
 * Supported (anything else is refused at load, naming the component): normalizers NFC, NFD, NFKC,
 * NFKD, Lowercase, Replace, Prepend, Strip, Sequence; pre-tokenizers ByteLevel, Split, Metaspace,
 * Whitespace, WhitespaceSplit, Punctuation, Digits, Sequence; the BPE model (every flag but
 * dropout); decoders ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, BPEDecoder,
 * Sequence. Behaviour follows tokenizers 0.23 (tests/fixtures/tokenizer holds the proof):
 *  - the post-processor, truncation and padding of the file are never applied (Laya adds
 *    CLS/SEP itself; max_len is the caller's);
 *  - added-token ids are assigned as the reference assigns them (content already in the vocab
 *    keeps that id, the others follow the vocab in file order); the ids written in the file are
 *    not used;
 *  - text must be valid UTF-8. A lone surrogate, as core/json.c keeps one from a "\ud800" escape
 *    (WTF-8), is refused with an error naming its byte offset: the reference refuses it too (a
 *    Python str holding a surrogate cannot reach the Rust library);
 *  - character classes (\p{L}, \p{N}, whitespace, punctuation, lowercase) are the reference's own
 *    tables, probed from it (unicode_tables.c), so they agree on every code point.
 */
#ifndef LAYA_TOKENIZER_H
#define LAYA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct tokenizer tokenizer;

/* Token roles from tokenizer_config.json (cls/sep/pad/mask/unk/bos/eos); -1 when absent. */
typedef struct tokenizer_roles {
  int32_t cls_id, sep_id, pad_id, mask_id, unk_id;
  const char *mask_token; /* e.g. "[MASK]" or "<mask>"; NULL when absent */
} tokenizer_roles;

/* Load <dir>/tokenizer.json, plus roles from <dir>/tokenizer_config.json when present.
 * A path to a tokenizer.json file is accepted too. Unknown components are refused, naming them. */
tokenizer *tokenizer_load(const char *path, laya_error *err);
/* Parse tokenizer.json text held in memory (config_json may be NULL), outside the cache: for
 * tests and fuzzing. Release it with tokenizer_release like any other. */
tokenizer *tokenizer_load_memory(const char *json, size_t len, const char *config_json,
                                 size_t config_len, laya_error *err);
tokenizer *tokenizer_retain(tokenizer *t);
void tokenizer_release(tokenizer *t);

const tokenizer_roles *tokenizer_get_roles(const tokenizer *t);
int32_t tokenizer_vocab_size(const tokenizer *t); /* model vocab + added tokens (max id + 1) */
/* Id of an exact token string (vocab or added), -1 if absent. */
int32_t tokenizer_token_to_id(const tokenizer *t, const char *s, size_t n);
/* The token string of an id (NULL if out of range). */
const char *tokenizer_id_to_token(const tokenizer *t, int32_t id, size_t *len);

/* Growable id list owned by the caller; reuse it across calls to avoid allocation. */
typedef struct ids_vec {
  int32_t *ids;
  size_t n, cap;
} ids_vec;
void ids_vec_free(ids_vec *v);

/* Encode UTF-8 text with add_special_tokens=False. max_len > 0 keeps the first max_len ids
 * (HF truncation=True, max_length=max_len, right side); max_len <= 0 keeps all.
 * Ids are appended to out (out->n is not reset). Invalid UTF-8 is an error naming the offset. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int max_len, ids_vec *out,
                     laya_error *err);

/* The special-token ids the file's post-processor puts around one sequence (HF
 * add_special_tokens=True: TemplateProcessing's single template, BertProcessing, RobertaProcessing,
 * ByteLevel, Sequence): n_prefix before the text, n_suffix after. The encoder never applies them
 * itself. LAYA_ERR_UNSUPPORTED naming the processor when it is one we cannot apply (the load does
 * not fail on it). */
int tokenizer_special_template(const tokenizer *t, const int32_t **prefix, int *n_prefix, const int32_t **suffix,
                               int *n_suffix, laya_error *err);

/* Decode ids to text as HF `tokenizer.decode(ids)` with its defaults
 * (skip_special_tokens=False, and the tokenizer's clean_up_tokenization_spaces setting). */
int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len,
                     laya_error *err);

#endif
