/*
 * options.h: the one table of the environment variables laya.c's library reads (name, type,
 * values, default, help, and the field of laya_env_options it fills), and the one reader.
 *
 * The environment is read once at a boundary into a typed struct, laya_env_options, and validated
 * there: a value outside the table's values is refused with an error naming the variable, the
 * value and the values it takes (LAYA_PRECISION must be fp32, bf16, fp16, int8 or fp8, got 'fast').
 * Use sites read the struct's fields, never the environment. The boundaries:
 *   - laya_open / laya_convert (model/laya_api.c, model/artifact_load.c): one read per call, kept
 *     in the model (laya_model.env) and handed to its backend (backend_options.env) and the Hub
 *     lookup (hub_options.env). A variable
 *     the caller's laya_options replace (precision, device, escalate) is not read.
 *   - a backend created without one (tests, bench/: backend_options.env NULL) reads its own.
 *   - laya-serve / laya-mcp read theirs once at start (serve/config.c, serve_config.env).
 *   - process-wide facts fixed at first use (CPU feature masks, the SHA-256 and AMX kernel
 *     choice) read laya_env_process(), one read per process.
 * laya_env(NAME) stays as the raw read those readers use (and the `laya` command's own front
 * ends); a Debug build asserts that NAME is in the table.
 *
 * Research switches (LAYA_OPT_RESEARCH: kernel studies, per-layer precision experiments) are read
 * only in a build with LAYA_RESEARCH_SWITCHES (CMake option, ON by default because the accuracy
 * tests and bench/cpu/ use them); with it OFF, they read as unset, so a production build's forward
 * cannot be changed from the environment.
 *
 * The CUDA backend's variables (LAYA_OPT_CUDA) are rows like the others: laya_open reads and
 * validates them with the rest, and backend_cuda_create takes them from backend_options.env (or
 * reads its own rows when that is NULL), once per backend; nothing under src/backend/cuda/ calls
 * getenv (tests/layers/check_env.py). LAYA_SHA256_DIGESTS is read the same way: laya_open /
 * laya_convert hand their read to checkpoint_open_ex, the Router and the servers read it once at
 * start. The servers' own variables (LAYA_HOST, LAYA_PORT, ...) are serve/config.c's, documented in
 * docs/serve.md.
 */
#ifndef LAYA_CORE_OPTIONS_H
#define LAYA_CORE_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  LAYA_OPT_RESEARCH = 1, /* read only with LAYA_RESEARCH_SWITCHES */
  LAYA_OPT_TEST = 2,     /* a test hook */
  LAYA_OPT_CUDA = 4,     /* the CUDA backend's (backend_cuda_create takes it from the struct) */
  LAYA_OPT_EXTERNAL = 8, /* a standard variable of other tools (HOME, HF_*), read as they define it */
  LAYA_OPT_LENIENT = 16, /* a value outside the values is ignored (as Laya ignores it), not refused */
  LAYA_OPT_NOCASE = 32,  /* enum values match in any case */
  LAYA_OPT_PROCESS = 64, /* a process-wide fact: read once per process (laya_env_process) */
  LAYA_OPT_SERVER = 128  /* read only by laya-serve / laya-mcp (LAYA_ENV_READ_SERVER): laya_open
                            never refuses a server's variable */
};

/* The library's variables, typed. Unset (or empty, for the non-string types) reads as: NULL for
 * strings, 0 for ints (-1 for an int row whose values include 0 or less: LAYA_CUDA_MAX_SCRATCH=0
 * is a value), -1 for numbers and bools. A bool row whose values are "0 | 1" takes only those two
 * (the CUDA switches: anything else is refused naming the variable). Strings are the process's own copies (freed by
 * laya_env_options_free); an empty string stays "" (a layer list "" means none). Enum values are
 * stored as the table's spelling (LAYA_CPU_AMP=BFloat16 reads "bfloat16"). */
typedef struct laya_env_options {
  /* where and how a model runs */
  char *device, *precision, *cpu_amp, *backend;
  long long threads;
  char *cpu_isa, *cpu_disable;
  int escalate;
  double escalate_rel, escalate_abs, escalate_tau, escalate_margin;
  int quiet_warnings;
  char *calibration, *base_url;
  double remote_timeout;
  int cpu_profile;
  long long tournament_group; /* laya-serve's LAYA_TOURNAMENT_GROUP (0: off) */
  /* files, caches, downloads */
  char *pack_cache, *cache_dir, *sha256_digests;
  int sha256_portable;
  char *revision, *hf_hub_cache, *hf_home, *hf_token, *hf_endpoint;
  int hf_hub_offline;
  char *xdg_cache_home, *home;
  /* CUDA backend (src/backend/cuda/; cuda_warmup is also laya_open's warm-up request) */
  int cuda_warmup, cuda_graphs, cuda_head_fp16, cuda_head_all, cuda_gemm_tune, cuda_profile, cuda_pdl;
  char *cuda_geglu, *cuda_qkv, *cuda_attn_l, *cuda_attn_g, *cuda_gemm_splitk;
  long long cuda_max_scratch;
  char *cuda_module; /* the CUDA backend module's path (backend/cuda_loader.c; laya_env_process) */
  /* research switches of the CPU backend */
  char *cpu_study, *cpu_fp32_layers, *cpu_int8_bf16, *cpu_gemm_tasks;
  int cpu_attn_f32;
  char *amx_fp32;
} laya_env_options;

typedef enum laya_option_kind { OPT_STRING, OPT_INT, OPT_NUMBER, OPT_BOOL, OPT_ENUM } laya_option_kind;

typedef struct laya_option {
  const char *env;     /* the variable */
  const char *type;    /* "string", "int", "number", "bool", "enum", "path", "json" */
  const char *range;   /* the values it takes (an enum's: "a | b (note) | c") */
  const char *def;     /* the default when unset */
  const char *help;
  unsigned flags;
  long field;          /* offsetof(laya_env_options, its field), or -1: not read by the library */
  double min;          /* int / number: the smallest value taken */
  double max;          /* int: the largest (0: none) */
} laya_option;

extern const laya_option laya_env_table[];
extern const int laya_env_count;

/* Bits of laya_env_options_read's skip: variables the caller's options replace, not read. */
enum { LAYA_ENV_SKIP_DEVICE = 1, LAYA_ENV_SKIP_PRECISION = 2, LAYA_ENV_SKIP_ESCALATE = 4,
       LAYA_ENV_READ_SERVER = 8 /* also read the LAYA_OPT_SERVER rows (the servers' config) */ };

/* All unset. */
void laya_env_options_init(laya_env_options *o);
/* Reads every library variable of the table into o (o is initialised first) and validates each
 * against the table: 0, or LAYA_ERR_VALUE (kind ValueError) naming the variable, the value and
 * the values it takes; o holds what was read before the refused one (free it either way). */
int laya_env_options_read(laya_env_options *o, unsigned skip, laya_error *err);
/* One variable of the table into its field of o (the others untouched); 0 or the refusal. */
int laya_env_options_read_one(laya_env_options *o, const char *name, laya_error *err);
/* A backend's view of the environment: given when its caller read it (laya_open), else the n
 * variables names read into own here (tests, bench/: no options). own is initialised either way
 * and freed by the caller; NULL (own freed) with the refusal of a bad value. */
const laya_env_options *laya_env_options_given_or_read(const laya_env_options *given, laya_env_options *own,
                                                       const char *const *names, size_t n, laya_error *err);
void laya_env_options_free(laya_env_options *o);
/* A copy of src's values (strings duplicated). 0, or -1 when out of memory (dst freed). */
int laya_env_options_copy(laya_env_options *dst, const laya_env_options *src);
/* The process-wide snapshot, read at first use (LAYA_OPT_PROCESS rows; a value refused there reads
 * as unset); never freed. */
const laya_env_options *laya_env_process(void);
/* The name of an enum row's value index i (0-based) into buf, or NULL past the last. */
const char *laya_option_value(const laya_option *o, int i, char *buf, size_t cap);

/* getenv(name) for a variable of the table (NULL for a research switch in a build without them):
 * the raw read of the readers above and of the command-line front ends. */
const char *laya_env(const char *name);
/* The table's row for name, or NULL. */
const laya_option *laya_option_find(const char *name);
/* The table as text (one variable a paragraph), for `laya env`; with current values when
 * with_values (unset ones say so). */
void laya_env_print(FILE *f, int with_values);
/* The table's variables as a --help section: "  NAME  help" lines, wrapped at 78 columns; with
 * flags_mask, only rows having none of those flags. */
void laya_env_help(FILE *f, unsigned exclude_flags);

#ifdef __cplusplus
}
#endif

#endif
