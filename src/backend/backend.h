/*
 * backend.h: the contract between model code and backends.
 *
 * Model code hands a backend a packed batch (built by model/batch.c): every row's tokens back to
 * back, no padding, no masks. A key j is visible to query i of the same row iff it is inside the
 * row and, on local encoder layers, |i - j| <= local_window / 2 (positions restart at 0 in every
 * row; model/spec.h model_layer_window). The backend returns one logit per option marker and the
 * act-head logits per row. What the model is (constants, the config check, the kept rows) is
 * model/spec.h; a backend says only how to compute it.
 *
 * A backend instance is immutable after create and its forward is safe to call from many threads;
 * per-call scratch lives in a backend_worker, one per calling thread (the engine pools them).
 */
#ifndef LAYA_BACKEND_H
#define LAYA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/weights.h"

typedef struct packed_batch {
  int n_rows;
  int n_tokens;
  const int32_t *tokens;       /* [n_tokens] */
  const int32_t *row_start;    /* [n_rows + 1] prefix sums (cu_seqlens) */
  const int32_t *qtype;        /* [n_rows] 0 choice, 1 score, 2 noul */
  const int32_t *marker_start; /* [n_rows + 1] prefix sums into markers */
  const int32_t *markers;      /* positions of the option [MASK] tokens, relative to the row */
  /* [n_rows + markers total] the kept rows (model/spec.h): row r's CLS at r + marker_start[r],
   * then its markers; positions relative to the row. Written by model code (model_kept_rows). */
  const int32_t *kept;
} packed_batch;

/* Validate a packed batch (row bounds, question types, markers and kept rows inside their rows,
 * token ids below vocab); errors start with `who`. Sets *max_len to the longest row. */
int packed_batch_check(const packed_batch *bt, int vocab, const char *who, int *max_len, laya_error *err);

/* backend.embed's pooling: pooled[r][i] = the mean of x[t][i] over row r's tokens (x is [n_tokens][d];
 * summed in double, in token order). */
void backend_mean_rows(const packed_batch *bt, const float *x, int d, float *pooled);

/* The largest batch a worker is made ready for (backend.worker_reserve): at most n_tokens tokens
 * in all, n_rows rows, n_markers option markers, and rows of at most row_len tokens. */
typedef struct batch_shape {
  int n_tokens, n_rows, n_markers, row_len;
} batch_shape;

/* PREC_FP8 (E4M3 encoder GEMMs) runs on CUDA devices with FP8 tensor cores only. */
typedef enum backend_precision { PREC_FP32 = 0, PREC_BF16, PREC_FP16, PREC_INT8, PREC_FP8 } backend_precision;

typedef struct backend_options {
  backend_precision precision;
  int threads;    /* CPU: worker threads (0 = default) */
  int device_id;  /* CUDA: device ordinal */
  /* the environment as laya_open read it (core/options.h); NULL: the backend reads its own */
  const struct laya_env_options *env;
} backend_options;

typedef struct backend_worker backend_worker;

/* Which backend a backend is: what the engine tests (never its name, which is for reports). */
typedef enum backend_kind {
  BACKEND_UNKNOWN = 0, /* a stand-in (tests) */
  BACKEND_CPU_REF,     /* the fp32 reference (backend/cpu/ref.c) */
  BACKEND_CPU,         /* the packed CPU backend (backend/cpu/cpu.c) */
  BACKEND_CUDA,        /* backend/cuda/ */
  BACKEND_ESCALATE     /* precision escalation over a low-precision and an exact backend (model/escalate.c) */
} backend_kind;

typedef struct backend {
  const char *name; /* "cpu-ref", "cpu", "cuda", "cpu+escalate": for reports (model info) */
  backend_kind kind;
  void *impl;
  /* Create per-thread scratch. */
  backend_worker *(*worker_create)(struct backend *b, laya_error *err);
  void (*worker_destroy)(struct backend *b, backend_worker *w);
  /* Optional (NULL: the backend keeps no per-batch scratch): allocate and touch w's scratch for
   * every batch within `max`, so that a forward of such a batch allocates nothing and the memory
   * in use stays what it is after this call. A larger batch still grows it. */
  int (*worker_reserve)(struct backend *b, backend_worker *w, const batch_shape *max, laya_error *err);
  /* Optional (NULL: nothing to warm): make w's first forward of the common batch sizes within its
   * current scratch cost what a later one does (kernels loaded, GEMM plans made, CUDA graphs
   * captured), for rows of up to row_len tokens typically. Called at open and after a reserve,
   * never on the request path; allocates nothing beyond w's scratch. */
  int (*worker_warm)(struct backend *b, backend_worker *w, int row_len, laya_error *err);
  /* Optional: bytes of scratch w holds now (host and device), for tests and reports. */
  size_t (*worker_bytes)(const struct backend *b, const backend_worker *w);
  /* logits: [markers total], in marker order; act_logits: [n_rows * n_act]. */
  int (*forward)(struct backend *b, backend_worker *w, const packed_batch *batch, float *logits,
                 float *act_logits, laya_error *err);
  void (*destroy)(struct backend *b);
  /* Optional (NULL: the engine embeds on a CPU backend of the same weights, model/embed.h; every
   * backend here has one: cpu-ref, cpu, cuda, escalate):
   * pooled[n_rows * hidden] = each row's mean over its tokens of the encoder's last hidden state
   * (after the final norm; no question-type embedding, no decision head), as Laya's
   * embed_fn_from_agent pools it, at the backend's precision; fp32 out. The rows' qtype and
   * markers are not read. */
  int (*embed)(struct backend *b, backend_worker *w, const packed_batch *batch, float *pooled, laya_error *err);
} backend;

/* Constructors. A backend keeps pointers into `w` (tensors are mapped by the checkpoint), so the
 * checkpoint must outlive it. */
backend *backend_cpu_ref_create(const model_weights *w, const backend_options *o, laya_error *err);
backend *backend_cpu_create(const model_weights *w, const backend_options *o, laya_error *err);
backend *backend_cuda_create(const model_weights *w, const backend_options *o, laya_error *err);
/* The same, reading every tensor but the encoder's GEMM weights from `base` (a CUDA backend
 * created from the same `w`, on the same device) instead of holding a copy: fp8's escalation pass
 * in bf16 (model/escalate.c) holds only its bf16 encoder GEMM weights. base may be destroyed
 * first (the shared tensors live until both are). When base is not such a backend, or its tensors
 * differ in type (another decision-head precision), this is backend_cuda_create. */
backend *backend_cuda_create_shared(const backend *base, const model_weights *w, const backend_options *o,
                                    laya_error *err);
/* The fast CPU backend's precision when the caller names none: fp32 on every CPU (Laya-exact;
 * bf16 / int8 are opt-in). (backend/cpu/cpu.c) */
backend_precision backend_cpu_default_precision(void);
/* "fp32", "bf16", "fp16", "int8", "fp8". */
const char *backend_precision_name(backend_precision p);
/* The kernel set the "cpu" backend b runs ("avx512", "avx2", "scalar"); NULL for other backends. */
const char *backend_cpu_isa(const backend *b);
/* The kernel set a "cpu" backend created now would run (CPUID, or LAYA_CPU_ISA when usable). */
const char *backend_cpu_isa_selected(void);
/* The same for a LAYA_CPU_ISA value as laya_open read it (laya_env_options.cpu_isa; NULL: none). */
const char *backend_cpu_isa_chosen(const char *force);
/* 1 when this CPU and build can run the kernel set of that name ("amx", "avx512", "avx2",
 * "scalar"). */
int backend_cpu_isa_usable(const char *name);
/* Make the "cpu" backend b call release(ctx) when it is destroyed, before it frees anything (the
 * pack cache hands it the artifact its weights are mapped from, or its background writer to
 * join). 0, or -1 when b is not a "cpu" backend or already has a release. */
int backend_cpu_adopt(backend *b, void (*release)(void *ctx), void *ctx);
/* ---- the "cpu" backend's packed weights in a container (backend/cpu/cpu_artifact.c) ----------
 * What `laya convert` and the pack cache store (model/artifact.h): the backend's named arrays,
 * exactly the bytes its kernels read ("enc.3.wqkv.data", "enc.3.wqkv.fmt", "head.0.norm1_b", ...).
 * The container stores names and bytes; the layout, and so reading the arrays back, is the
 * backend's: backend_cpu_create maps them when its weights come from a container
 * (model_weights.packed). */
typedef struct backend_array {
  char name[48];
  const void *data;
  size_t bytes;
} backend_array;

typedef struct backend_arrays {
  const backend_array *a; /* in registration order; owned by the backend */
  int n;
  const char *layout;          /* backend_cpu_layout() */
  backend_precision precision; /* the precision the backend was created at */
  int act_hidden;              /* rows of act_head.0 */
} backend_arrays;

/* The arrays of the "cpu" backend b (valid while b lives). 0, or -1 when b is not a "cpu" backend. */
int backend_cpu_arrays(const backend *b, backend_arrays *out);
/* The name of the packed layout (kernels.h panels) this build writes and reads: a container holding
 * another is refused ("convert again"), and the pack cache's key holds it. */
const char *backend_cpu_layout(void);

/* A container's "cpu" arrays unpacked to row-major tensors, for backends that do not read the
 * packed layout (the CUDA backend). Every Linear weight is stored in the panels at fp32 or bf16
 * per matrix (int8 is refused with the matrix's name) and every vector in fp32; the result holds
 * exactly those values: bf16 panels become a bf16 [n, k] tensor, fp32 panels an fp32 one (host
 * copies, freed by backend_cpu_dense_free), and vectors point into the mapping as they are. */
typedef struct dense_weights {
  model_weights w; /* the tensors below; w.packed stays NULL */
  tensor *t;       /* every tensor of w */
  int n_t, cap_t;
  void **bufs; /* unpacked matrices (owned) */
  int n_bufs, cap_bufs;
} dense_weights;
/* Fill out from pw (pw->packed set: config, head sizes and tok_embeddings are taken from pw; the
 * container must outlive the result). `who` starts error messages (e.g. "CUDA backend"). */
int backend_cpu_dense_weights(const model_weights *pw, dense_weights *out, const char *who, laya_error *err);
void backend_cpu_dense_free(dense_weights *d);

/* 1 if the CUDA backend was compiled in and a device is present. In a CUDA-enabled build the
 * backend is a module of its own (liblaya_cuda.so, backend/cuda_module.h) that the first call of a
 * backend_cuda_* function loads (backend/cuda_loader.c): this one first asks the NVIDIA driver
 * (libcuda.so.1) for a device and loads the module only when there is one, so a CPU-only machine
 * never maps the module, libcudart or libcublasLt. */
int backend_cuda_available(int *device_count);
/* Why the CUDA backend cannot run in this process, or NULL when it can: built without CUDA; no
 * NVIDIA driver or no visible device (the driver's words); the module, or a library it needs,
 * could not be loaded (the dynamic loader's words, naming the file). Fixed by the first
 * backend_cuda_available call; thread-safe. */
const char *backend_cuda_unavailable_reason(void);
/* 1 when err comes from a device allocation failure (code LAYA_ERR_DEVICE_OOM, which a backend
 * sets for exactly that; the message is not read): the batch may succeed on the CPU, so the
 * engine retries that request there and counts it. Other device errors (LAYA_ERR_DEVICE) are not
 * retried. (backend/cuda_stub.c, built with or without CUDA) */
int backend_error_is_device_oom(const laya_error *err);

#endif
