/*
 * artifact_dense.h: a `laya convert` artifact's weights as plain row-major tensors, for backends
 * that do not read the cpu backend's packed layout (the CUDA backend).
 *
 * The artifact stores every Linear weight in the panels of backend/cpu/kernels.h at one precision
 * (fp32 or bf16 per matrix; int8 is not unpacked) and every vector in fp32. This rebuilds a
 * model_weights whose tensors are exactly the values the artifact holds: bf16 panels become a bf16
 * [n, k] tensor, fp32 panels an fp32 one (host copies, freed by artifact_dense_free), and vectors
 * point into the mapping as they are. The artifact is read through its accessors only
 * (artifact_blob), so it must outlive the result.
 */
#ifndef LAYA_MODEL_ARTIFACT_DENSE_H
#define LAYA_MODEL_ARTIFACT_DENSE_H

#include "model/artifact.h"
#include "model/weights.h"

typedef struct dense_weights {
  model_weights w; /* the tensors below; w.packed stays NULL */
  tensor *t;       /* every tensor of w */
  int n_t, cap_t;
  void **bufs; /* unpacked matrices (owned) */
  int n_bufs, cap_bufs;
} dense_weights;

/* Fill out from the artifact of packed weights pw (pw->packed set: config, head sizes and
 * tok_embeddings are taken from pw). `who` starts error messages (e.g. "CUDA backend"). An int8
 * matrix is refused with its name. 0 or an error code. */
int artifact_dense_weights(const model_weights *pw, dense_weights *out, const char *who, laya_error *err);
void artifact_dense_free(dense_weights *d);

#endif
