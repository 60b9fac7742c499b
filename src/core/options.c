/* options.c: the environment variables of the library, one table (options.h). */
#include "core/options.h"

#include <stdlib.h>
#include <string.h>

#include "core/assert.h"

#define R LAYA_OPT_RESEARCH
#define T LAYA_OPT_TEST
#define C LAYA_OPT_CUDA
#define X LAYA_OPT_EXTERNAL

const laya_option laya_env_table[] = {
    /* where and how a model runs */
    {"LAYA_DEVICE", "string", "cpu | cuda | cuda:N | auto", "cpu", "where laya_open runs a model when the caller names no device", 0},
    {"LAYA_PRECISION", "enum", "fp32 | bf16 | fp16 | int8", "the backend's default (fp32 on the CPU; an artifact: its own)",
     "the forward's numbers; a value the backend cannot run is refused naming LAYA_PRECISION", 0},
    {"LAYA_CPU_AMP", "enum", "bf16 | bfloat16 (any case; other values ignored, as Laya does)", "unset",
     "Laya's own switch for CPU bf16, used when nothing else names a precision", 0},
    {"LAYA_BACKEND", "enum", "cpu | cpu-ref", "cpu", "the CPU backend: cpu-ref is the fp32 reference (slow, exact)", 0},
    {"LAYA_THREADS", "int", ">= 1", "the physical core count", "CPU worker threads of a model", 0},
    {"LAYA_CPU_ISA", "enum", "amx | avx512 | avx2 | scalar", "the best table the CPU supports",
     "the CPU kernel table (a name the CPU cannot run is not used; `laya` refuses it)", 0},
    {"LAYA_CPU_DISABLE", "string", "comma list of CPU features (avx512f, avx2, amx, ...)", "none",
     "treat the CPU as lacking these features (to test the narrower kernel tables)", T},
    {"LAYA_ESCALATE", "bool", "0 | anything else", "off (laya_options.escalate decides first)",
     "precision escalation for bf16 / int8: rows the low precision could move re-run in fp32", 0},
    {"LAYA_ESCALATE_REL", "number", ">= 0", "per precision (bf16 0.03, int8 0.10)", "escalation: relative logit error bound", T},
    {"LAYA_ESCALATE_ABS", "number", ">= 0", "0", "escalation: absolute logit error bound", T},
    {"LAYA_ESCALATE_TAU", "number", ">= 0", "per precision (bf16 0.02, int8 0.04)", "escalation: answer movement that re-runs a row", T},
    {"LAYA_ESCALATE_MARGIN", "number", ">= 0", "the calibrated margin", "escalation: safety margin", T},
    {"LAYA_QUIET_WARNINGS", "bool", "set | unset", "unset", "do not print Laya's warnings (e.g. a shortlist dropping option_order) on stderr", 0},
    {"LAYA_CALIBRATION", "path", "a calibration file (laya calibrate --out, Laya's save_calibration)", "unset",
     "the calibration laya-serve and laya-mcp apply to every checkpoint they open", 0},
    {"LAYA_BASE_URL", "string", "http(s)://host:port of a laya-serve", "unset", "laya-mcp's remote mode: answer from that server", 0},
    {"LAYA_REMOTE_TIMEOUT", "number", "seconds > 0", "30", "laya-mcp's remote mode: how long to wait for the server", 0},
    {"LAYA_CPU_PROFILE", "bool", "1 | unset", "unset", "print the CPU forward's per-step times (one JSON line per forward) on stderr", 0},
    /* files, caches, downloads */
    {"LAYA_PACK_CACHE", "enum", "0 (off) | sync (write before laya_open returns)", "on, written in the background",
     "the packed-weights cache of the CPU backend", 0},
    {"LAYA_CACHE_DIR", "path", "a directory", "$XDG_CACHE_HOME/laya, else ~/.cache/laya", "where the pack cache lives", 0},
    {"LAYA_SHA256_DIGESTS", "json", "{\"relpath\": \"hex\"}", "unset (no check)",
     "digests a checkpoint's files must match before anything is parsed", 0},
    {"LAYA_SHA256_PORTABLE", "bool", "set | unset", "unset", "use the portable SHA-256 instead of the CPU's instructions", T},
    {"LAYA_REVISION", "string", "a branch, tag or commit", "main", "the Hugging Face Hub revision to load", 0},
    {"HF_HUB_CACHE", "path", "a directory", "$HF_HOME/hub", "the Hugging Face cache laya.c reads and fills", X},
    {"HF_HOME", "path", "a directory", "$XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface", "the Hugging Face home", X},
    {"HF_TOKEN", "string", "a token", "unset", "the Hub token for gated or private checkpoints", X},
    {"HF_ENDPOINT", "string", "a URL", "https://huggingface.co", "the Hub endpoint", X},
    {"HF_HUB_OFFLINE", "bool", "1 | true | yes | on", "off", "never download; read the cache only", X},
    {"XDG_CACHE_HOME", "path", "a directory", "~/.cache", "the base of the caches above", X},
    {"HOME", "path", "a directory", "", "the base of the caches when XDG_CACHE_HOME is unset", X},
    /* CUDA (read by the CUDA backend itself) */
    {"LAYA_CUDA_WARMUP", "bool", "0 | 1", "1", "warm the CUDA workers (kernels, graphs) at laya_open", C},
    {"LAYA_CUDA_GRAPHS", "bool", "0 | 1", "1", "CUDA graphs for the forward", C},
    {"LAYA_CUDA_GEGLU", "string", "0 | n256s4 | n128s6", "0", "the fused Wi + GeGLU GEMM on Hopper (0: cuBLASLt + a GeGLU pass)", C | R},
    {"LAYA_CUDA_HEAD_FP16", "bool", "0 | 1", "per precision", "the decision head in fp16 on CUDA", C | R},
    {"LAYA_CUDA_HEAD_ALL", "bool", "0 | 1", "0", "run the last head layer at every token, not only CLS and markers", C | R},
    {"LAYA_CUDA_GEMM_TUNE", "string", "a tuning spec", "unset", "cuBLASLt algorithm choice study", C | R},
    {"LAYA_CUDA_ATTN_L", "string", "a kernel spec", "unset", "local attention kernel study", C | R},
    {"LAYA_CUDA_ATTN_G", "string", "a kernel spec", "unset", "global attention kernel study", C | R},
    {"LAYA_CUDA_PROFILE", "bool", "set | unset", "unset", "print per-stage CUDA timings", C | R},
    {"LAYA_CUDA_MAX_SCRATCH", "int", "bytes", "unset", "cap the CUDA scratch (simulates device out-of-memory)", C | T},
    /* research switches of the CPU backend (LAYA_RESEARCH_SWITCHES builds) */
    {"LAYA_CPU_STUDY", "string", "a study name (bench/cpu/README.md)", "unset", "a kernel study inside the CPU forward", R},
    {"LAYA_CPU_FP32_LAYERS", "string", "layer list", "unset", "run these layers in fp32 (precision experiments)", R},
    {"LAYA_CPU_INT8_BF16", "string", "layer list", "unset", "int8 experiments: these parts in bf16", R},
    {"LAYA_CPU_ATTN_F32", "bool", "set | unset", "unset", "attention in fp32 inside a low-precision forward", R},
    {"LAYA_AMX_FP32", "enum", "x3 | x5 | x6", "unset", "the amx table's split-precision AMX fp32 GEMM (study)", R},
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
