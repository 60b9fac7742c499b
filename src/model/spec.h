/*
 * spec.h: the facts of Laya's DecisionModel (a ModernBERT / mmBERT encoder, a question-type
 * embedding, a decision head of nn.TransformerEncoderLayer's, a scorer on the option markers and an
 * act head on the CLS state), written once for every backend.
 *
 * A backend keeps its own straight-line forward (ref.c, cpu.c, cuda_backend.cu: as llm.c keeps
 * separate CPU and CUDA programs, which lets CUDA capture whole passes as graphs), but takes
 * what the model *is* from here: the constants, the one config check, which encoder layers attend
 * globally and how far a local one sees, and which rows the answer reads (the kept rows, which
 * model code writes into every packed batch: the backends only say how to compute them).
 *
 * Backends may include this header (docs/engine.md, "The folder rule").
 */
#ifndef LAYA_MODEL_SPEC_H
#define LAYA_MODEL_SPEC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"
#include "core/error.h"
#include "model/weights.h"

/* Question types (packed_batch.qtype, the rows of type_emb): choice, score, noul. */
#define MODEL_QTYPES 3
/* PyTorch's nn.LayerNorm default eps: the decision head's norm1 / norm2 and the scorer's
 * LayerNorm (the encoder's own norms use encoder_config.norm_eps). A macro, so CUDA device code
 * can read it. */
#define MODEL_HEAD_LN_EPS 1e-5f
/* The decision head's feed-forward width, in units of d (nn.TransformerEncoderLayer with
 * dim_feedforward = 4 d). */
#define MODEL_HEAD_FFN_MULT 4
/* Confidence features appended to the CLS state at the act head's input (act_head.0 is
 * [hidden, d + MODEL_ACT_FEATURES]): the top probability, its margin over the second, the
 * normalised entropy and the option count / 255 (ref_ops.c ref_confidence_features on the CPU,
 * features_kernel in CUDA). */
#define MODEL_ACT_FEATURES 4

/* The one config check of the model every backend runs (ModernBERT's shape rules, the decision
 * head's, the act head's tensor shape when the tensor is given): 0, or LAYA_ERR_CONFIG /
 * LAYA_ERR_FORMAT with a message starting with `who` ("cpu backend: ..."). What one backend
 * cannot run (a head size above its kernels' limit) is that backend's own check, after this one. */
int model_spec_check(const model_weights *w, const char *who, laya_error *err);

/* The act head's hidden width (act_head.0.weight's rows), 0 when the tensor is absent. */
int model_act_hidden(const model_weights *w);

/* Encoder layer l's attention: -1 when it attends to the whole row, else the half-window
 * local_attention / 2 (a key j is visible to query i iff |i - j| <= that). */
static inline int model_layer_window(const encoder_config *c, int l) {
  return enc_layer_global(c, l) ? -1 : c->local_window / 2;
}
/* Encoder layer l's RoPE theta (global or local). */
static inline double model_layer_theta(const encoder_config *c, int l) {
  return enc_layer_global(c, l) ? c->global_theta : c->local_theta;
}

/* The kept rows: the tokens whose states the answer reads after the last decision-head layer
 * (the act head reads each row's CLS, the scorer each option marker), as llama.cpp's
 * inp_out_ids. Row r's entries are at kept[r + marker_start[r] ...]: first its CLS (token 0 of
 * the row), then its markers in order; each is a position relative to the row, like markers.
 * The last head layer's queries, output projection and FFN need to run only there (nothing after
 * it mixes tokens), and the scorer and the act head read their inputs there. */
static inline int model_kept_count(const packed_batch *b) { return b->n_rows + b->marker_start[b->n_rows]; }
/* Row r's first kept entry (its CLS); its k-th marker is entry model_kept_first(b, r) + 1 + k. */
static inline int model_kept_first(const packed_batch *b, int r) { return r + b->marker_start[r]; }
/* Fill kept[model_kept_count(b)] from b's rows and markers (model/batch.c calls it for every
 * batch it builds; b->kept is not read). */
void model_kept_rows(const packed_batch *b, int32_t *kept);

#ifdef __cplusplus
}
#endif

#endif
