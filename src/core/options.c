/* options.c: the environment variables of the library, one table (options.h). */
#include "core/options.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/assert.h"

#define R LAYA_OPT_RESEARCH
#define T LAYA_OPT_TEST
#define C LAYA_OPT_CUDA
#define X LAYA_OPT_EXTERNAL
#define L LAYA_OPT_LENIENT
#define NC LAYA_OPT_NOCASE
#define P LAYA_OPT_PROCESS
#define F(field) ((long)offsetof(laya_env_options, field))

const laya_option laya_env_table[] = {
    /* where and how a model runs */
    {"LAYA_DEVICE", "string", "cpu | cuda | cuda:N | auto", "cpu", "where laya_open runs a model when the caller names no device", 0, F(device), 0, 0},
    {"LAYA_PRECISION", "enum", "fp32 | bf16 | fp16 | int8 | fp8", "the backend's default (fp32 on the CPU; an artifact: its own)",
     "the forward's numbers; a value the backend cannot run is refused naming LAYA_PRECISION", 0, F(precision), 0, 0},
    {"LAYA_CPU_AMP", "enum", "bf16 | bfloat16 (any case; other values ignored, as Laya does)", "unset",
     "Laya's own switch for CPU bf16, used when nothing else names a precision", L | NC, F(cpu_amp), 0, 0},
    {"LAYA_BACKEND", "enum", "cpu | cpu-ref", "cpu", "the CPU backend: cpu-ref is the fp32 reference (slow, exact)", 0, F(backend), 0, 0},
    {"LAYA_THREADS", "int", ">= 1", "the physical core count", "CPU worker threads of a model", 0, F(threads), 1, 4096},
    {"LAYA_CPU_ISA", "enum", "amx | avx512 | avx512-dot | avx512-fma | avx2 | scalar | amx-emu (tests: amx's fp32 GEMM on emulated tiles, slow)", "the best table the CPU supports",
     "the CPU kernel table (a name the CPU cannot run is not used; `laya` refuses it)", 0, F(cpu_isa), 0, 0},
    {"LAYA_AMX_FP32", "enum", "x6 | avx512 | x5 (study) | x3 (study)", "x6",
     "the amx table's fp32 GEMM: x6 split-precision on AMX tiles, avx512 the AVX-512 FMA one (x3 / x5 fail parity)", P,
     F(amx_fp32), 0, 0},
    {"LAYA_CPU_DISABLE", "string", "comma list of CPU features (avx512f, avx2, amx, ...)", "none",
     "treat the CPU as lacking these features (to test the narrower kernel tables)", T | P, F(cpu_disable), 0, 0},
    {"LAYA_ESCALATE", "bool", "0 | anything else", "off (laya_options.escalate decides first)",
     "precision escalation for bf16 / int8 (re-run in fp32) and CUDA fp8 (re-run in bf16): rows the low precision could move", 0, F(escalate), 0, 0},
    {"LAYA_ESCALATE_REL", "number", ">= 0", "per precision (bf16 0.03, int8 0.10, fp8 0.10)", "escalation: relative logit error bound", T, F(escalate_rel), 0, 0},
    {"LAYA_ESCALATE_ABS", "number", ">= 0", "0", "escalation: absolute logit error bound", T, F(escalate_abs), 0, 0},
    {"LAYA_ESCALATE_TAU", "number", ">= 0", "per precision (bf16 0.02, int8 0.04, fp8 0.02)", "escalation: answer movement that re-runs a row", T, F(escalate_tau), 0, 0},
    {"LAYA_ESCALATE_MARGIN", "number", ">= 0", "the calibrated margin", "escalation: safety margin", T, F(escalate_margin), 0, 0},
    {"LAYA_QUIET_WARNINGS", "bool", "set | unset", "unset", "do not print Laya's warnings (e.g. a shortlist dropping option_order) on stderr", 0, F(quiet_warnings), 0, 0},
    {"LAYA_CALIBRATION", "path", "a calibration file (laya calibrate --out, Laya's save_calibration)", "unset",
     "the calibration laya-serve and laya-mcp apply to every checkpoint they open", 0, F(calibration), 0, 0},
    {"LAYA_BASE_URL", "string", "http(s)://host:port of a laya-serve", "unset", "laya-mcp's remote mode: answer from that server", 0, F(base_url), 0, 0},
    {"LAYA_REMOTE_TIMEOUT", "number", "seconds > 0 (any other value: the default)", "30", "laya-mcp's remote mode: how long to wait for the server", L, F(remote_timeout), 0, 0},
    {"LAYA_TOURNAMENT_GROUP", "int", "0 (off) | an integer from 2 to 100", "0 (off)",
     "laya-serve: a choice with more options than this is answered by elimination in groups of this size "
     "(Laya's predict_tournament), and a choice may have up to 255 options", LAYA_OPT_SERVER, F(tournament_group), 2, 100},
    {"LAYA_CPU_PROFILE", "bool", "1 | unset", "unset", "print the CPU forward's per-step times (one JSON line per forward) on stderr", 0, F(cpu_profile), 0, 0},
    /* files, caches, downloads */
    {"LAYA_PACK_CACHE", "enum", "0 (off) | sync (write before laya_open returns)", "on, written in the background",
     "the packed-weights cache of the CPU backend", 0, F(pack_cache), 0, 0},
    {"LAYA_CACHE_DIR", "path", "a directory", "$XDG_CACHE_HOME/laya, else ~/.cache/laya", "where the pack cache lives", 0, F(cache_dir), 0, 0},
    {"LAYA_SHA256_DIGESTS", "json",
     "{\"relpath\": \"hex\"}; laya-serve and the Router also take {\"checkpoint\": {\"relpath\": \"hex\"}}", "unset or blank (no check)",
     "digests a checkpoint's files must match before anything is parsed", 0, F(sha256_digests), 0, 0},
    {"LAYA_SHA256_PORTABLE", "bool", "0 | anything else", "unset", "use the portable SHA-256 instead of the CPU's instructions", T | P, F(sha256_portable), 0, 0},
    {"LAYA_REVISION", "string", "a branch, tag or commit", "main", "the Hugging Face Hub revision to load", 0, F(revision), 0, 0},
    {"HF_HUB_CACHE", "path", "a directory", "$HF_HOME/hub", "the Hugging Face cache laya.c reads and fills", X, F(hf_hub_cache), 0, 0},
    {"HF_HOME", "path", "a directory", "$XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface", "the Hugging Face home", X, F(hf_home), 0, 0},
    {"HF_TOKEN", "string", "a token", "unset", "the Hub token for gated or private checkpoints", X, F(hf_token), 0, 0},
    {"HF_ENDPOINT", "string", "a URL", "https://huggingface.co", "the Hub endpoint", X, F(hf_endpoint), 0, 0},
    {"HF_HUB_OFFLINE", "bool", "1 | true | yes | on", "off", "never download; read the cache only", X, F(hf_hub_offline), 0, 0},
    {"XDG_CACHE_HOME", "path", "a directory", "~/.cache", "the base of the caches above", X, F(xdg_cache_home), 0, 0},
    {"HOME", "path", "a directory", "", "the base of the caches when XDG_CACHE_HOME is unset", X, F(home), 0, 0},
    /* CUDA (read by the CUDA backend itself) */
    {"LAYA_CUDA_WARMUP", "bool", "0 | 1", "1", "warm the CUDA workers (kernels, graphs) at laya_open", C, F(cuda_warmup), 0, 0},
    {"LAYA_CUDA_GRAPHS", "bool", "0 | 1", "1", "CUDA graphs for the forward (0: every forward eager)", C, F(cuda_graphs), 0, 0},
    {"LAYA_CUDA_GEGLU", "enum", "0 (off) | 1 | auto (a variant per pass size) | n256s4 | n128s6 | n64s8 | p128x128s6 | c2n256s4",
     "auto", "the fused Wi + GeGLU GEMM on Hopper (0: cuBLASLt + a GeGLU pass)", C | R, F(cuda_geglu), 0, 0},
    {"LAYA_CUDA_QKV", "enum", "0 (off) | 1 | auto (a variant per pass size) | n256s4 | n128s6 | n64s8 | p128x128s6 | c2n256s4",
     "unset: passes of <= 256 tokens", "the Wqkv GEMM with RoPE in its epilogue on Hopper (a value: every pass; 0: cuBLASLt + a RoPE pass)", C | R, F(cuda_qkv), 0, 0},
    {"LAYA_CUDA_HEAD_FP16", "bool", "0 | 1", "1 (an fp16 model's head is fp16 either way)",
     "the decision head in fp16 on CUDA (0: bf16, as the rest of a bf16 forward)", C | R, F(cuda_head_fp16), 0, 0},
    {"LAYA_CUDA_HEAD_ALL", "bool", "0 | 1", "0", "run the last head layer at every token, not only CLS and markers", C | R, F(cuda_head_all), 0, 0},
    {"LAYA_CUDA_GEMM_TUNE", "bool", "0 | 1", "0", "time cuBLASLt's candidates at each GEMM shape's first eager call, keep the fastest", C | R,
     F(cuda_gemm_tune), 0, 0},
    {"LAYA_CUDA_GEMM_SPLITK", "enum", "default | none | inplace", "default",
     "the split-K reductions cuBLASLt may pick (a study: none forbids split-K, inplace reduces in the output)", C | R,
     F(cuda_gemm_splitk), 0, 0},
    {"LAYA_CUDA_ATTN_L", "enum", "w4m1n32b4 | w4m1n64 | wg1n64 | wg1n64m", "wg1n64 on Hopper, else w4m1n32b4 (w4m1n64 for passes <= 2,048 tokens)", "the local (sliding-window) attention kernel variant (wg*: Hopper only)", C | R, F(cuda_attn_l), 0, 0},
    {"LAYA_CUDA_ATTN_G", "enum", "w4m2n32b3 | w4m2n64 | wg2n64p | wg2n64m", "wg2n64p on Hopper, else w4m2n32b3 (w4m2n64 for passes <= 2,048 tokens)", "the global attention kernel variant (wg*: Hopper only)", C | R, F(cuda_attn_g), 0, 0},
    {"LAYA_CUDA_PDL", "bool", "0 | 1", "1", "programmatic dependent launch of the forward's own kernels on Hopper (0: plain launches)", C | R,
     F(cuda_pdl), 0, 0},
    {"LAYA_CUDA_PROFILE", "bool", "0 | 1", "0", "eager forwards with events between stages, for per-stage CUDA timings", C | R, F(cuda_profile), 0, 0},
    {"LAYA_CUDA_MAX_SCRATCH", "int", "bytes >= 0", "unset (no cap)", "cap the CUDA scratch (simulates device out-of-memory)", C | T,
     F(cuda_max_scratch), 0, 0},
    {"LAYA_CUDA_MODULE", "path", "the CUDA backend module (liblaya_cuda.so) to load", "beside the library, else its ../lib, else the library search path",
     "where the CUDA backend is loaded from, the first time a CUDA device is asked for (nothing else is tried)", C | P,
     F(cuda_module), 0, 0},
    /* research switches of the CPU backend (LAYA_RESEARCH_SWITCHES builds) */
    {"LAYA_CPU_STUDY", "string", "a study name (bench/cpu/README.md)", "unset", "a kernel study inside the CPU forward", R, F(cpu_study), 0, 0},
    {"LAYA_CPU_FP32_LAYERS", "string", "layer list", "unset", "run these layers in fp32 (precision experiments)", R, F(cpu_fp32_layers), 0, 0},
    {"LAYA_CPU_INT8_BF16", "string", "layer list", "unset", "int8 experiments: these parts in bf16", R, F(cpu_int8_bf16), 0, 0},
    {"LAYA_CPU_GEMM_TASKS", "string", "ROWS,PER_THREAD", "192,4", "GEMM task shape: most rows per task, tasks wanted per thread",
     R, F(cpu_gemm_tasks), 0, 0},
    {"LAYA_CPU_ATTN_F32", "bool", "0 | anything else", "unset", "attention in fp32 inside a low-precision forward", R, F(cpu_attn_f32), 0, 0},
};
const int laya_env_count = (int)(sizeof laya_env_table / sizeof laya_env_table[0]);

const laya_option *laya_option_find(const char *name) {
  for (int i = 0; i < laya_env_count; i++)
    if (!strcmp(laya_env_table[i].env, name)) return &laya_env_table[i];
  return NULL;
}

const char *laya_env(const char *name) {
  const laya_option *o = laya_option_find(name);
  LAYA_ASSERT(o != NULL); /* every variable the library reads is in the table */
#ifndef LAYA_RESEARCH_SWITCHES
  if (o && (o->flags & LAYA_OPT_RESEARCH)) return NULL;
#endif
  return getenv(name);
}

static laya_option_kind kind_of(const laya_option *o) {
  if (!strcmp(o->type, "int")) return OPT_INT;
  if (!strcmp(o->type, "number")) return OPT_NUMBER;
  if (!strcmp(o->type, "bool")) return OPT_BOOL;
  if (!strcmp(o->type, "enum")) return OPT_ENUM;
  return OPT_STRING;
}

/* An enum's values are the first words of range's "|"-separated parts ("0 (off) | sync (...)"). */
const char *laya_option_value(const laya_option *o, int i, char *buf, size_t cap) {
  const char *p = o->range;
  for (int k = 0; k < i; k++) {
    p = strchr(p, '|');
    if (!p) return NULL;
    p++;
  }
  while (*p == ' ') p++;
  size_t n = strcspn(p, " |");
  if (!n || n >= cap) return NULL;
  memcpy(buf, p, n);
  buf[n] = 0;
  return buf;
}

/* "a, b, c or d": an enum's values as its refusal says them. */
static void values_text(const laya_option *o, char *out, size_t cap) {
  char v[64];
  int n = 0;
  while (laya_option_value(o, n, v, sizeof v)) n++;
  out[0] = 0;
  size_t len = 0;
  for (int i = 0; i < n && len < cap; i++) {
    laya_option_value(o, i, v, sizeof v);
    len += (size_t)snprintf(out + len, cap - len, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", v);
  }
}

/* value without the blanks around it, in buf (a value longer than buf: not a number) */
static const char *trimmed(const char *v, char *buf, size_t cap) {
  while (isspace((unsigned char)*v)) v++;
  size_t n = strlen(v);
  while (n && isspace((unsigned char)v[n - 1])) n--;
  if (n >= cap) n = 0;
  memcpy(buf, v, n);
  buf[n] = 0;
  return buf;
}

/* An int row whose range starts "0 (off)": 0 is taken too, below its smallest value. */
static bool off_zero(const laya_option *o) { return !strncmp(o->range, "0 (off)", 7); }

static int refuse(const laya_option *o, const char *v, laya_error *err) {
  char what[400];
  if (kind_of(o) == OPT_ENUM || (kind_of(o) == OPT_BOOL && !strcmp(o->range, "0 | 1"))) {
    values_text(o, what, sizeof what);
  } else if (kind_of(o) == OPT_INT && off_zero(o)) {
    snprintf(what, sizeof what, "0 (off) or an integer from %.0f to %.0f", o->min, o->max);
  } else if (kind_of(o) == OPT_INT && o->max > 0) {
    snprintf(what, sizeof what, "an integer from %.0f to %.0f", o->min, o->max);
  } else {
    snprintf(what, sizeof what, "%s >= %g", kind_of(o) == OPT_INT ? "an integer" : "a number", o->min);
  }
  return laya_err(err, LAYA_ERR_VALUE, NULL, "%s must be %s, got '%s'", o->env, what, v);
}

/* One row's value v (set: not NULL) into o's field: 0, 1 when the value is refused. */
static int parse_into(const laya_option *o, const char *v, laya_env_options *out) {
  char *base = (char *)out + o->field, buf[128];
  switch (kind_of(o)) {
  case OPT_STRING: {
    char *copy = strdup(v);
    if (!copy) return 1;
    free(*(char **)base);
    *(char **)base = copy;
    return 0;
  }
  case OPT_BOOL: {
    int *b = (int *)base;
    if (!strcmp(o->range, "set | unset")) *b = 1; /* set at all, even empty */
    else if (!strcmp(o->range, "0 | 1")) {         /* exactly one of the two (the CUDA switches) */
      const char *t = trimmed(v, buf, sizeof buf);
      if (!*v) return 0;
      if (strcmp(t, "0") && strcmp(t, "1")) return 1;
      *b = t[0] == '1';
    } else if (o->flags & LAYA_OPT_EXTERNAL) /* huggingface_hub's truthy spellings */
      *b = !strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on");
    else if (*v) *b = strcmp(v, "0") != 0;
    return 0;
  }
  case OPT_INT: {
    const char *t = trimmed(v, buf, sizeof buf);
    if (!*v) return 0;
    char *end;
    long long x = strtoll(t, &end, 10);
    if (!*t || *end || ((x < (long long)o->min) && !(x == 0 && off_zero(o))) ||
        (o->max > 0 && x > (long long)o->max))
      return 1;
    *(long long *)base = x;
    return 0;
  }
  case OPT_NUMBER: {
    const char *t = trimmed(v, buf, sizeof buf);
    if (!*v) return 0;
    char *end;
    double x = strtod(t, &end);
    if (!*t || *end || !isfinite(x) || x < o->min) return 1;
    *(double *)base = x;
    return 0;
  }
  case OPT_ENUM: {
    if (!*v) return 0;
    char name[64];
    for (int i = 0; laya_option_value(o, i, name, sizeof name); i++)
      if ((o->flags & LAYA_OPT_NOCASE) ? !strcasecmp(v, name) : !strcmp(v, name)) {
        char *copy = strdup(name);
        if (!copy) return 1;
        free(*(char **)base);
        *(char **)base = copy;
        return 0;
      }
    return 1;
  }
  }
  return 1;
}

void laya_env_options_init(laya_env_options *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *r = &laya_env_table[i];
    if (r->field < 0) continue;
    if (kind_of(r) == OPT_NUMBER) *(double *)((char *)o + r->field) = -1;
    if (kind_of(r) == OPT_BOOL) *(int *)((char *)o + r->field) = -1;
    if (kind_of(r) == OPT_INT && r->min <= 0) *(long long *)((char *)o + r->field) = -1; /* 0 is a value */
  }
}

void laya_env_options_free(laya_env_options *o) {
  if (!o) return;
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *r = &laya_env_table[i];
    laya_option_kind k = kind_of(r);
    if (r->field >= 0 && (k == OPT_STRING || k == OPT_ENUM)) free(*(char **)((char *)o + r->field));
  }
  laya_env_options_init(o);
}

static int read_row(laya_env_options *o, const laya_option *r, laya_error *err) {
  const char *v = laya_env(r->env);
  if (!v) return 0;
  if (!parse_into(r, v, o)) return 0;
  if (r->flags & LAYA_OPT_LENIENT) return 0; /* ignored, as documented */
  return refuse(r, v, err);
}

int laya_env_options_read(laya_env_options *o, unsigned skip, laya_error *err) {
  laya_env_options_init(o);
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *r = &laya_env_table[i];
    if (r->field < 0) continue;
    if ((r->flags & LAYA_OPT_SERVER) && !(skip & LAYA_ENV_READ_SERVER)) continue;
    if (((skip & LAYA_ENV_SKIP_DEVICE) && !strcmp(r->env, "LAYA_DEVICE")) ||
        ((skip & LAYA_ENV_SKIP_PRECISION) && !strcmp(r->env, "LAYA_PRECISION")) ||
        ((skip & LAYA_ENV_SKIP_ESCALATE) && !strcmp(r->env, "LAYA_ESCALATE")))
      continue;
    int rc = read_row(o, r, err);
    if (rc) return rc;
  }
  return 0;
}

int laya_env_options_read_one(laya_env_options *o, const char *name, laya_error *err) {
  const laya_option *r = laya_option_find(name);
  LAYA_ASSERT(r != NULL && r->field >= 0);
  return r && r->field >= 0 ? read_row(o, r, err) : 0;
}

const laya_env_options *laya_env_options_given_or_read(const laya_env_options *given, laya_env_options *own,
                                                       const char *const *names, size_t n, laya_error *err) {
  laya_env_options_init(own);
  if (given) return given;
  for (size_t i = 0; i < n; i++)
    if (laya_env_options_read_one(own, names[i], err)) {
      laya_env_options_free(own);
      return NULL;
    }
  return own;
}

int laya_env_options_copy(laya_env_options *dst, const laya_env_options *src) {
  *dst = *src;
  int bad = 0;
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *r = &laya_env_table[i];
    laya_option_kind k = kind_of(r);
    if (r->field < 0 || (k != OPT_STRING && k != OPT_ENUM)) continue;
    char **s = (char **)((char *)dst + r->field);
    if (*s && !(*s = strdup(*s))) bad = 1;
  }
  if (bad) laya_env_options_free(dst);
  return bad ? -1 : 0;
}

static laya_env_options g_process;
static pthread_once_t g_process_once = PTHREAD_ONCE_INIT;

static void process_read(void) {
  laya_env_options_init(&g_process);
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *r = &laya_env_table[i];
    const char *v = r->flags & LAYA_OPT_PROCESS ? laya_env(r->env) : NULL;
    if (v) parse_into(r, v, &g_process); /* a refused value reads as unset: nobody to tell */
  }
}

const laya_env_options *laya_env_process(void) {
  pthread_once(&g_process_once, process_read);
  return &g_process;
}

void laya_env_print(FILE *f, int with_values) {
  static const char *const groups[] = {"", " (test hook)", " (CUDA backend)", " (CUDA backend, test hook)"};
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *o = &laya_env_table[i];
    int g = (o->flags & LAYA_OPT_CUDA ? 2 : 0) + (o->flags & LAYA_OPT_TEST ? 1 : 0);
    fprintf(f, "%s%s%s%s\n", o->env, groups[g], o->flags & LAYA_OPT_RESEARCH ? " (research switch" : "",
            o->flags & LAYA_OPT_RESEARCH
#ifdef LAYA_RESEARCH_SWITCHES
                ? ")"
#else
                ? ", not read by this build)"
#endif
                : "");
    fprintf(f, "    %s\n    %s: %s; default: %s\n", o->help, o->type, o->range, o->def && *o->def ? o->def : "none");
    if (with_values) {
      const char *v = getenv(o->env);
      fprintf(f, "    now: %s\n", v ? v : "(unset)");
    }
  }
}

void laya_env_help(FILE *f, unsigned exclude_flags) {
  for (int i = 0; i < laya_env_count; i++) {
    const laya_option *o = &laya_env_table[i];
    if (o->flags & exclude_flags) continue;
    /* "  NAME" padded to 24 columns, then the help wrapped at 78 */
    int col = fprintf(f, "  %s", o->env);
    if (col > 23) fputc('\n', f), col = 0;
    fprintf(f, "%*s", 24 - col, "");
    col = 24;
    const char *w = o->help;
    while (*w) {
      size_t n = strcspn(w, " ");
      if (col > 24 && col + 1 + (int)n > 78) {
        fprintf(f, "\n%24s", "");
        col = 24;
      } else if (col > 24) {
        fputc(' ', f);
        col++;
      }
      fwrite(w, 1, n, f);
      col += (int)n;
      w += n;
      while (*w == ' ') w++;
    }
    fputc('\n', f);
  }
}
