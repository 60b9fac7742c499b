/*
 * embed.h: the encoder's pooled vector of a text, as Laya's laya.shortlist.embed_fn_from_agent
 * computes it, and the per-model cache of label vectors the shortlist reuses.
 *
 *   text -> tokenizer (add_special_tokens=True: the file's post-processor, e.g. [CLS] .. [SEP];
 *   truncated to max_length ids in all) -> encoder (no decision head, no question-type embedding)
 *   -> last hidden state after the final norm -> mean over the row's tokens -> float32 [hidden]
 *
 * No normalisation: the shortlist's cosine divides by the norms. Texts are embedded in batches of
 * batch_size rows in input order, like Laya (on the CPU backends a row's vector does not depend on
 * its batch; on CUDA it may differ in its last bits, cuBLASLt choosing kernels per pass size). The
 * model's own backend's embed pass runs it, at the model's precision: the CPU backend at its own
 * (fp32 by default: Laya's numbers), CUDA at its 16-bit precision (bf16 by default, fp16; fp8 with
 * its E4M3 GEMMs), an escalating backend at its exact pass's (fp32 on the CPU, bf16 for CUDA fp8).
 * A pass that runs out of device memory runs again on the model's CPU fallback backend (fp32), as
 * a forward does; a backend without an embed pass would embed there too.
 *
 * The cache belongs to one loaded model (so another checkpoint, or the same one opened again, never
 * sees its rows) and is keyed by the exact text and max_length; it keeps the EMBED_CACHE_MAX most
 * recently used rows. Every function here is safe to call from many threads on one model.
 */
#ifndef LAYA_MODEL_EMBED_H
#define LAYA_MODEL_EMBED_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

struct laya_model;

#define EMBED_DEFAULT_MAX_LENGTH 512 /* embed_fn_from_agent's defaults */
#define EMBED_DEFAULT_BATCH_SIZE 32
#define EMBED_CACHE_MAX 4096         /* cached_embed_fn's default maxsize */

typedef struct embed_opts {
  int max_length; /* ids per text, special tokens included (> 0) */
  int batch_size; /* texts per pass (> 0) */
  bool use_cache; /* look rows up in (and add them to) the model's cache */
} embed_opts;

/* The vector width (the encoder's hidden size). */
int embed_dim(const struct laya_model *m);

/* Embed n texts (UTF-8, lens[i] bytes each) into out[n * embed_dim(m)]. A text with no ids at all
 * (empty, and a tokenizer adding no special tokens) gets the zero vector, as Laya's clamp gives. */
int embed_texts(struct laya_model *m, const char *const *texts, const size_t *lens, long n, const embed_opts *o,
                float *out, laya_error *err);

/* Cache statistics: rows held, lookups that hit and that missed. */
void embed_cache_stats(struct laya_model *m, long *size, long *hits, long *misses);

/* Free the model's cache (laya_close). */
void embed_cache_free(struct laya_model *m);

#endif
