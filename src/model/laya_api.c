/* laya_api.c: the public C API of include/laya.h (load, predict, predict_batch, info). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/options.h"
#include "core/pystr.h"
#include "model/batch.h"
#include "model/engine.h"
#include "model/result_json.h"
#include "model/typed.h"
#include "model/artifact.h"
#include "core/fsutil.h"
#include "model/hub.h"
#include "model/escalate.h"
#include "model/pack_cache.h"
#include "model/embed.h"

void laya_options_init(laya_options *opt) {
  if (opt) memset(opt, 0, sizeof *opt);
}

void laya_free(void *p) { free(p); }

static bool want_escalation(const laya_model *m, const laya_options *opt) {
  if (opt && opt->escalate) return opt->escalate > 0;
  return m->env.escalate > 0;
}

/* Precision escalation (model/escalate.h): low answers, an fp32 backend of the same weights re-runs
 * the rows whose answer low could move too far. The fp32 pass needs the source weights (choose_backend
 * refuses artifacts first). */
static backend *escalating_backend(laya_model *m, backend *low, const backend_options *bo, laya_error *err) {
  backend *b = backend_escalate_open(low, &m->ck.w, bo, escalate_model_t_min(&m->ck.cfg.temps, &m->langs), err);
  if (backend_is_escalate(b))
    snprintf(m->precision, sizeof m->precision, "%s+escalate", backend_precision_name(bo->precision));
  return b;
}

/* Where a device string runs, as laya_open decides: -1 not a device string, 0 the CPU, 1 the GPU
 * *id. cuda:N takes a decimal ordinal (at most 6 digits, as torch.device reads it); cuda, cuda:N
 * and auto fall back to the CPU when no such GPU is visible. *count: the visible CUDA devices
 * (looked up only when a GPU is asked for). */
static int device_target(const char *dev, int *id, int *count) {
  *id = 0;
  *count = 0;
  if (strcmp(dev, "cpu") == 0) return 0;
  const char *ord = strncmp(dev, "cuda:", 5) == 0 ? dev + 5 : NULL;
  size_t nd = ord ? strspn(ord, "0123456789") : 0;
  if (strcmp(dev, "cuda") != 0 && strcmp(dev, "auto") != 0 && !(ord && nd && nd <= 6 && !ord[nd])) return -1;
  if (ord) *id = atoi(ord);
  return backend_cuda_available(count) && *id < *count ? 1 : 0;
}

static const char *device_or_env(const char *dev, const laya_env_options *env) {
  if (!dev) dev = env->device;
  return dev && *dev ? dev : "cpu";
}

int laya_device_uses_cuda(const char *device) {
  int id, count;
  laya_env_options env;
  laya_env_options_init(&env);
  laya_error ignored;
  if (!device) laya_env_options_read_one(&env, "LAYA_DEVICE", &ignored);
  int r = device_target(device_or_env(device, &env), &id, &count);
  laya_env_options_free(&env);
  return r;
}

/* The CUDA backend from a `laya convert` artifact: its packed weights unpacked to row-major
 * tensors (backend_cpu_dense_weights, backend/backend.h), uploaded, and the host copies freed. A bf16 artifact runs
 * bf16 (fp16 would round its bf16 weights again: refused, as the CPU refuses a precision the
 * artifact does not hold); an fp32 artifact runs bf16 or fp16 exactly as the checkpoint would;
 * int8 is refused. */
static backend *cuda_from_artifact(laya_model *m, backend_options *bo, const char *prec, laya_error *err) {
  const artifact *a = m->ck.w.packed;
  backend_precision ap = artifact_precision(a);
  if (ap == PREC_INT8) {
    laya_err(err, LAYA_ERR_UNSUPPORTED, "NotImplementedError",
             "%s is an int8 artifact, which the CUDA backend cannot run (it runs bf16 or fp16 weights): "
             "convert the checkpoint with precision bf16 or fp32 for the GPU, or open the checkpoint directory",
             artifact_path(a));
    return NULL;
  }
  if (ap == PREC_BF16 && prec && bo->precision == PREC_FP16) {
    laya_err(err, LAYA_ERR_UNSUPPORTED, "NotImplementedError",
             "%s: the artifact holds bf16 weights; convert again with precision fp32 to run fp16 on the GPU",
             artifact_path(a));
    return NULL;
  }
  if (!prec) bo->precision = PREC_BF16;
  dense_weights dw;
  if (backend_cpu_dense_weights(&m->ck.w, &dw, "CUDA backend", err)) return NULL;
  backend *b = backend_cuda_create(&dw.w, bo, err);
  backend_cpu_dense_free(&dw); /* the device holds its own copy of every weight */
  return b;
}

/* The one place a backend is chosen. */
static backend *choose_backend(laya_model *m, const laya_options *opt, laya_error *err) {
  const char *dev = device_or_env(opt ? opt->device : NULL, &m->env);
  backend_options bo = {PREC_FP32, opt ? opt->threads : 0, 0, &m->env};
  /* the caller's choice, else LAYA_PRECISION (servers and CLI pass theirs that way), else the
   * backend's default (fp32 on the CPU) */
  const char *prec = opt && opt->precision ? opt->precision : NULL;
  const char *from = "precision";
  if (!prec && m->env.precision) prec = m->env.precision, from = "LAYA_PRECISION"; /* validated */
  if (prec) {
    if (strcmp(prec, "fp32") == 0) bo.precision = PREC_FP32;
    else if (strcmp(prec, "bf16") == 0) bo.precision = PREC_BF16;
    else if (strcmp(prec, "fp16") == 0) bo.precision = PREC_FP16;
    else if (strcmp(prec, "int8") == 0) bo.precision = PREC_INT8;
    else if (strcmp(prec, "fp8") == 0) bo.precision = PREC_FP8;
    else {
      laya_err(err, LAYA_ERR_VALUE, NULL, "%s must be fp32, bf16, fp16, int8 or fp8, got '%s'", from, prec);
      return NULL;
    }
  }
  int id = 0, count = 0;
  const int where = device_target(dev, &id, &count);
  if (where < 0) {
    laya_err(err, LAYA_ERR_VALUE, NULL, "device must be cpu, cuda, cuda:N or auto, got '%s'", dev);
    return NULL;
  }
  if (where == 1) {
    bo.device_id = id;
    backend *b;
    if (m->ck.w.packed) /* an artifact: its weights unpacked for the GPU (cuda_from_artifact) */
      b = cuda_from_artifact(m, &bo, prec, err);
    else
      b = backend_cuda_create(&m->ck.w, &bo, err);
    if (b) {
      snprintf(m->device, sizeof m->device, "cuda:%d", id);
      snprintf(m->precision, sizeof m->precision, "%s", prec ? prec : "default");
    }
    /* fp8's escalation re-runs rows on the same GPU in bf16 (model/escalate.c) */
    if (b && bo.precision == PREC_FP8 && want_escalation(m, opt)) {
      if (m->ck.w.packed) {
        b->destroy(b);
        laya_err(err, LAYA_ERR_UNSUPPORTED, "NotImplementedError",
                 "precision escalation needs the checkpoint's weights for its bf16 pass; open the checkpoint "
                 "directory, or turn escalation off");
        return NULL;
      }
      b = escalating_backend(m, b, &bo, err);
    }
    return b;
  }
  /* a GPU asked for by name and not there: Laya's two warnings (none for auto) */
  if (strncmp(dev, "cuda", 4) == 0) {
    if (!count) {
      sb_puts(&m->warnings, "Warning: CUDA requested but not available. Falling back to CPU.\n");
      /* and why, in laya.c's words: no driver or device, or the CUDA backend module (or a CUDA
       * library it needs) could not be loaded (backend/cuda_loader.c) */
      const char *why = backend_cuda_unavailable_reason();
      if (why) sb_printf(&m->warnings, "Warning: the CUDA backend cannot run here: %s.\n", why);
    }
    else sb_printf(&m->warnings, "Warning: CUDA device %s not found (%d visible). Falling back to CPU.\n", dev, count);
  }
  /* CPU: the fast backend (fp32, Laya-exact, unless a precision is named); LAYA_BACKEND=cpu-ref
   * selects the plain fp32 reference. */
  const char *forced = m->env.backend; /* cpu or cpu-ref (refused otherwise at laya_open) */
  snprintf(m->device, sizeof m->device, "cpu");
  if (forced && strcmp(forced, "cpu-ref") == 0) {
    if (bo.precision != PREC_FP32) {
      laya_err(err, LAYA_ERR_UNSUPPORTED, "NotImplementedError",
               "%s '%s' is not available on the CPU reference backend (fp32 only)", from, prec);
      return NULL;
    }
    snprintf(m->precision, sizeof m->precision, "fp32");
    return backend_cpu_ref_create(&m->ck.w, &bo, err);
  }
  /* Laya's own switch for CPU bf16 (LAYA_CPU_AMP=bf16|bfloat16, any case; anything else ignored, as
   * Laya does) when nothing above named a precision */
  if (!prec && m->env.cpu_amp) { /* bf16 or bfloat16: any other value reads as unset */
    prec = "bf16";
    bo.precision = PREC_BF16;
  }
  if (!prec) /* an artifact holds one precision; a checkpoint gets the CPU's default */
    bo.precision = m->ck.w.packed ? artifact_precision(m->ck.w.packed) : backend_cpu_default_precision();
  snprintf(m->precision, sizeof m->precision, "%s", backend_precision_name(bo.precision));
  bool escalate = bo.precision != PREC_FP32 && want_escalation(m, opt);
  if (escalate && m->ck.w.packed) { /* refused before any backend is built */
    laya_err(err, LAYA_ERR_UNSUPPORTED, "NotImplementedError",
             "precision escalation needs the checkpoint's weights for its fp32 pass; %s is a %s artifact "
             "(open the checkpoint directory, or turn escalation off)", m->ck.dir, backend_precision_name(bo.precision));
    return NULL;
  }
  backend *low = pack_cache_cpu_backend(&m->ck, &bo, &m->warnings, m->pack_cache, sizeof m->pack_cache, err);
  if (!low || !escalate) return low;
  return escalating_backend(m, low, &bo, err);
}

static void info_temps(strbuf *sb, const temp_table *tt) {
  char num[32];
  sb_puts(sb, "[");
  for (int i = 0; i < 3; i++) {
    py_float_json(tt->t[i], num);
    sb_printf(sb, "%s%s", i ? ", " : "", num);
  }
  sb_puts(sb, "], \"temperature_by_options\": {");
  for (int i = 0; i < tt->n_by; i++) {
    if (i) sb_puts(sb, ", ");
    json_dump_string(sb, tt->by_key[i], strlen(tt->by_key[i]), false);
    py_float_json(tt->by_val[i], num);
    sb_printf(sb, ": %s", num);
  }
  sb_putc(sb, '}');
}

static void build_info(laya_model *m) {
  strbuf sb;
  sb_init(&sb);
  const encoder_config *e = &m->ck.w.enc;
  const agent_config *c = &m->ck.cfg;
  json_dump_opts jo = {NULL, NULL, false, -1};
  sb_puts(&sb, "{\"path\": ");
  json_dump_string(&sb, m->ck.dir, strlen(m->ck.dir), false);
  sb_puts(&sb, ", \"encoder\": ");
  if (c->encoder_id)
    json_dump_string(&sb, c->encoder_id, strlen(c->encoder_id), false);
  else
    sb_puts(&sb, "null");
  sb_printf(&sb,
            ", \"hidden_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
            "\"intermediate_size\": %d, \"vocab_size\": %d, \"global_attn_every_n_layers\": %d, "
            "\"local_attention\": %d, \"global_rope_theta\": %.17g, \"local_rope_theta\": %.17g, "
            "\"norm_eps\": %.17g, \"head_layers\": %d, \"n_act\": %d, \"max_len\": %d, "
            "\"head_max_len\": %d, \"weights_dtype\": \"%s\", \"temperature\": ",
            e->hidden, e->n_layers, e->n_heads, e->intermediate, e->vocab, e->global_every,
            e->local_window, e->global_theta, e->local_theta, e->norm_eps, m->ck.w.head_layers,
            m->ck.w.n_act, c->max_len, c->head_max_len,
            m->ck.w.tok_embeddings ? tensor_dtype_name(m->ck.w.tok_embeddings->dtype) : "F32");
  info_temps(&sb, &c->temps);
  sb_puts(&sb, ", \"temperature_raw\": ");
  json_dump(&sb, c->temperature_raw, &jo);
  sb_puts(&sb, ", \"temperature_by_options_raw\": ");
  json_dump(&sb, c->temperature_by_options_raw, &jo);
  sb_puts(&sb, ", \"lang_temperatures\": {");
  for (int i = 0; i < m->langs.n; i++) {
    if (i) sb_puts(&sb, ", ");
    json_dump_string(&sb, m->langs.lang[i], strlen(m->langs.lang[i]), false);
    sb_puts(&sb, ": {\"temperature\": ");
    info_temps(&sb, &m->langs.tt[i]);
    sb_putc(&sb, '}');
  }
  sb_puts(&sb, "}, \"warnings\": [");
  const char *w = m->warnings.data ? m->warnings.data : "";
  bool first = true;
  while (*w) {
    const char *nl = strchr(w, '\n');
    size_t l = nl ? (size_t)(nl - w) : strlen(w);
    if (!first) sb_puts(&sb, ", ");
    first = false;
    json_dump_string(&sb, w, l, false);
    w += l + (nl ? 1 : 0);
  }
  /* the fast CPU backend's kernel table (chosen at create as cpu_kernels_select chooses now) */
  const char *isa = m->be && !strcmp(m->device, "cpu") && m->be->kind != BACKEND_CPU_REF ? backend_cpu_isa_chosen(m->env.cpu_isa) : NULL;
  m->cpu_isa = isa;
  sb_puts(&sb, "], \"pack_cache\": ");
  if (m->pack_cache[0])
    json_dump_string(&sb, m->pack_cache, strlen(m->pack_cache), false);
  else
    sb_puts(&sb, "null");
  sb_printf(&sb, ", \"backend\": \"%s\", \"device\": \"%s\", \"precision\": \"%s\", \"cpu_isa\": %s%s%s, "
                 "\"laya_version\": \"%s\", \"compat_version\": \"%s\"}",
            m->be ? m->be->name : "none", m->device, m->precision, isa ? "\"" : "", isa ? isa : "null", isa ? "\"" : "",
            LAYA_VERSION, LAYA_COMPAT_VERSION);
  m->info = sb_steal(&sb);
}

/* With a warmed backend (CUDA, engine_warm): one small request through the whole path at open, so
 * the host side's one-time work (the tokenizer's first use, question and decode set-up) is not the
 * first caller's either. Its answer is dropped; a failure here would fail the same way later, so it
 * is not reported at open. */
static void warm_request(laya_model *m) {
  if (!m->be->worker_warm || m->env.cuda_warmup == 0) return;
  static const char req[] =
      "{\"state\": \"Warm-up: order #48213 arrived on 2024-05-01, caf\\u00e9 \\u4e2d\\u6587, 3 items (x2)!\", "
      "\"questions\": {\"q\": {\"type\": \"choice\", \"instructions\": \"Which one?\", "
      "\"criteria\": {\"a\": \"the first\", \"b\": \"the second\"}}}}";
  char *out = NULL;
  laya_error err;
  laya_predict(m, req, &out, &err);
  laya_free(out);
}

laya_model *laya_open(const char *path, const laya_options *opt, laya_error *err) {
  laya_err_clear(err);
  if (!path) {
    laya_err(err, LAYA_ERR_VALUE, NULL, "laya_open: path is NULL");
    return NULL;
  }
  laya_model *m = calloc(1, sizeof *m);
  if (!m) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&m->pool_mu, NULL);
  pthread_mutex_init(&m->fallback_mu, NULL);
  arena_init(&m->mem, 1 << 12);
  sb_init(&m->warnings);
  /* the environment, read once here and validated (core/options.h); a variable the caller's
   * options replace is not read */
  unsigned skip = (opt && opt->precision ? LAYA_ENV_SKIP_PRECISION : 0) | (opt && opt->device ? LAYA_ENV_SKIP_DEVICE : 0) |
                  (opt && opt->escalate ? LAYA_ENV_SKIP_ESCALATE : 0);
  if (laya_env_options_read(&m->env, skip, err)) goto fail;
  /* Like Laya: a name that is not a path and does not exist is a Hub repo id (cache, then
   * download of only Laya's files); a path-like one that does not exist is an error. */
  char *resolved = NULL;
  bool pathlike = path[0] == '/' || strncmp(path, "./", 2) == 0 || strncmp(path, "../", 3) == 0;
  if (!pathlike && !fs_is_dir(path) && !fs_is_file(path)) {
    hub_options ho;
    hub_options_init(&ho);
    ho.sha256_json = opt ? opt->sha256_json : NULL;
    ho.quiet = opt && opt->quiet;
    ho.env = &m->env;
    if (hub_resolve(path, NULL, &ho, &resolved, NULL, err)) goto fail;
  }
  /* the NaN/Inf scan of the weights is deferred to the backend choice: the pack cache knows its
   * result on a hit (pack_cache.h); every other path scans right after */
  int crc = checkpoint_open_ex(&m->ck, resolved ? resolved : path, opt ? opt->sha256_json : NULL,
                               m->env.sha256_digests, CKPT_DEFER_NONFINITE, &m->warnings, err);
  free(resolved);
  if (crc) goto fail;
  m->st.tok = m->ck.tok;
  m->st.roles = &m->ck.roles;
  m->st.mask_len = strlen(m->ck.roles.mask_token);
  m->st.cache = tok_cache_new(); /* NULL (out of memory): every question text is encoded */
  if (lang_temps_parse(&m->langs, &m->mem, opt ? opt->lang_temperatures_json : NULL,
                       m->ck.cfg.temperature_raw, &m->warnings, err))
    goto fail;
  if (opt && opt->calibration_path &&
      checkpoint_load_calibration(&m->ck, opt->calibration_path, &m->warnings, err))
    goto fail;
  m->be = choose_backend(m, opt, err);
  if (!m->be) goto fail;
  if (m->ck.nonfinite_pending) {
    checkpoint_warn_nonfinite(&m->ck.st, &m->warnings);
    m->ck.nonfinite_pending = 0;
  }
  if (engine_warm(m, err)) goto fail; /* CUDA: no first-call stall (engine.h) */
  if (m->warnings.len && !(opt && opt->quiet)) fputs(sb_cstr(&m->warnings), stderr);
  build_info(m);
  if (!m->info) {
    laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
    goto fail;
  }
  warm_request(m);
  return m;
fail:
  laya_close(m);
  return NULL;
}

void laya_close(laya_model *m) {
  if (!m) return;
  embed_cache_free(m);
  for (int i = 0; i < m->n_idle; i++) m->be->worker_destroy(m->be, m->idle[i]);
  free(m->idle);
  if (m->be) m->be->destroy(m->be);
  if (m->fallback) m->fallback->destroy(m->fallback);
  pthread_mutex_destroy(&m->fallback_mu);
  tok_cache_free(m->st.cache);
  checkpoint_close(&m->ck);
  arena_free(&m->mem);
  sb_free(&m->warnings);
  free(m->info);
  pthread_mutex_destroy(&m->pool_mu);
  laya_env_options_free(&m->env);
  free(m);
}

const char *laya_model_info(const laya_model *m) { return m ? m->info : NULL; }

void engine_model_facts(const laya_model *m, model_facts *out) {
  /* the values build_info writes into the info text */
  out->backend = m->be ? m->be->name : "none";
  out->device = m->device;
  out->precision = m->precision;
  out->cpu_isa = m->cpu_isa;
  out->warnings = m->warnings.data ? m->warnings.data : "";
  out->lang_temperatures = m->langs.n;
}

/* ---- requests ---- */

/* Python binds keyword arguments before running the body: unknown names, then missing ones. */
int engine_parse_request(const json_value *req, bool batch, engine_call *c, const json_value **state,
                         const json_value **questions, laya_error *err) {
  const char *fn = batch ? "Agent.predict_batch()" : "Agent.system_one()";
  static const char *const single_keys[] = {"state", "questions", "lang", "hooks", "on_predict_start",
                                            "on_predict_end", "hooks_raise", "hooks_timeout",
                                            "max_len", "head_max_len", "min_confidence", NULL};
  static const char *const batch_keys[] = {"states", "questions", "batch_size", "lang", "hooks",
                                           "on_predict_start", "on_predict_end", "hooks_raise",
                                           "hooks_timeout", "max_len", "head_max_len",
                                           "sort_by_length", "min_confidence", NULL};
  const char *const *keys = batch ? batch_keys : single_keys;
  memset(c, 0, sizeof *c);
  if (req->type != JSON_OBJECT)
    return laya_type_error(err, "%s argument after ** must be a mapping, not %s", fn, json_py_type(req));
  for (uint32_t i = 0; i < req->n; i++) {
    bool known = false;
    for (int k = 0; keys[k] && !known; k++) known = strcmp(keys[k], req->members[i].key) == 0;
    if (!known)
      return laya_type_error(err, "%s got an unexpected keyword argument '%s'", fn, req->members[i].key);
  }
  const char *first = batch ? "states" : "state";
  *state = json_get(req, first);
  *questions = json_get(req, "questions");
  if (!*state && !*questions)
    return laya_type_error(err, "%s missing 2 required positional arguments: '%s' and 'questions'", fn, first);
  if (!*state) return laya_type_error(err, "%s missing 1 required positional argument: '%s'", fn, first);
  if (!*questions) return laya_type_error(err, "%s missing 1 required positional argument: 'questions'", fn);
  static const char *const hook_keys[] = {"hooks", "on_predict_start", "on_predict_end", "hooks_raise",
                                          "hooks_timeout", NULL};
  /* Laya runs no hook for hooks=None or an empty list, and hooks_raise / hooks_timeout only
   * matter when a hook runs: those are no-ops. A hook to run (a callable in Python) is not. */
  const json_value *hooks = json_get(req, "hooks");
  bool no_hooks = !hooks || hooks->type == JSON_NULL ||
                  ((hooks->type == JSON_ARRAY || hooks->type == JSON_OBJECT) && hooks->n == 0);
  for (int k = 0; hook_keys[k]; k++) {
    const json_value *h = json_get(req, hook_keys[k]);
    if (!h || h->type == JSON_NULL) continue;
    if (k == 0 && no_hooks) continue;
    if ((k == 3 || k == 4) && no_hooks) continue; /* hooks_raise, hooks_timeout */
    return laya_err(err, LAYA_ERR_UNSUPPORTED, "NotImplementedError", "%s: '%s' is not supported by laya.c", fn,
                    hook_keys[k]);
  }
  const json_value *v = json_get(req, "min_confidence");
  c->min_confidence = v && v->type != JSON_NULL ? v : NULL;
  v = json_get(req, "lang");
  if (v && json_truthy(v)) {
    if (v->type != JSON_STRING)
      return laya_err(err, LAYA_ERR_TYPE, "AttributeError", "'%s' object has no attribute 'split'", json_py_type(v));
    c->lang = v->s;
    c->lang_len = v->n;
  }
  static const char *const budget_keys[2] = {"max_len", "head_max_len"};
  for (int k = 0; k < 2; k++) {
    v = json_get(req, budget_keys[k]);
    if (!v || v->type == JSON_NULL) continue;
    int x;
    if (v->type == JSON_BOOL)
      x = v->b;
    else if (v->type == JSON_INT && !v->big && v->i >= -1000000000 && v->i <= 1000000000)
      x = (int)v->i;
    else if (v->type == JSON_INT) /* Python's ints have no range: past 1e9 a budget cuts nothing */
      x = (v->big ? v->s[0] == '-' : v->i < 0) ? -1000000000 : 1000000000;
    else if (v->type != JSON_FLOAT)
      /* the first thing Laya does with a budget is subtract an int from it */
      return laya_err(err, LAYA_ERR_TYPE, "TypeError", "unsupported operand type(s) for -: '%s' and 'int'",
                      json_py_type(v));
    else if (k == 1 && isfinite(v->d) && v->d >= -1e9 && v->d <= 1e9) {
      x = (int)floor(v->d);
      c->head_float = true;
      c->head_float_frac = floor(v->d) != v->d;
    } else {
      c->budget_not_int = true; /* Python fails only once it slices with it */
      continue;
    }
    if (k == 0) {
      c->has_max_len = true;
      c->max_len = x;
    } else {
      c->has_head_max_len = true;
      c->head_max_len = x;
    }
  }
  if (batch) {
    v = json_get(req, "batch_size");
    if (v && json_truthy(v)) {
      if (v->type == JSON_BOOL)
        c->batch_size = v->b;
      else if (v->type == JSON_INT)
        c->batch_size = v->big ? (v->s[0] == '-' ? 0 : 1L << 40) : (long)v->i;
      else if (v->type == JSON_FLOAT) {
        if (v->d > 0) return laya_type_error(err, "'float' object cannot be interpreted as an integer");
      } else {
        return laya_type_error(err, "'>' not supported between instances of '%s' and 'int'", json_py_type(v));
      }
    }
    v = json_get(req, "sort_by_length");
    c->sort_by_length = v && json_truthy(v);
  }
  return 0;
}

int engine_run_request(laya_model *m, const json_value *req, bool batch, arena *a, state_result **out,
                       long *n_out, laya_error *err) {
  engine_call c;
  const json_value *states = NULL, *questions = NULL;
  int rc = engine_parse_request(req, batch, &c, &states, &questions, err);
  if (rc) return rc;
  if (batch) return engine_run(m, states, questions, &c, a, out, n_out, err);
  /* predict(state) is predict_batch([state])[0] */
  json_value one = {.type = JSON_ARRAY, .n = 1, .items = (json_value *)states};
  return engine_run(m, &one, questions, &c, a, out, n_out, err);
}

/* The public predict / predict_batch: parse once, run typed, write once. */
static int run_request(laya_model *m, const char *request_json, bool batch, char **result_json,
                       laya_error *err) {
  laya_err_clear(err);
  if (result_json) *result_json = NULL;
  if (!m || !request_json || !result_json)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_predict: model, request and result must not be NULL");
  arena a;
  arena_init(&a, 1 << 14);
  strbuf out;
  sb_init(&out);
  int rc;
  state_result *r = NULL;
  long n = 0;
  json_value *req = json_parse(request_json, strlen(request_json), &a, NULL, err);
  if (!req) {
    rc = err ? err->code : LAYA_ERR_FORMAT;
    goto done;
  }
  if ((rc = engine_run_request(m, req, batch, &a, &r, &n, err))) goto done;
  if (batch) rj_write_states(&out, &RJ_PY, r, n);
  else rj_write_state(&out, &RJ_PY, &r[0], NULL);
  if (out.oom) rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  if (!rc) *result_json = sb_steal(&out);
done:
  sb_free(&out);
  arena_free(&a);
  return rc;
}

const char *engine_model_device(const laya_model *m) { return m ? m->device : NULL; }

int laya_predict(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return run_request(m, request_json, false, result_json, err);
}

int laya_predict_batch(laya_model *m, const char *request_json, char **result_json, laya_error *err) {
  return run_request(m, request_json, true, result_json, err);
}

int laya_reserve(laya_model *m, long max_tokens, int max_row_tokens, int workers, laya_error *err) {
  laya_err_clear(err);
  if (!m || max_tokens < 1 || workers < 1)
    return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_reserve: a model, max_tokens >= 1 and workers >= 1 are needed");
  batch_shape s;
  s.row_len = max_row_tokens > m->ck.cfg.max_len ? max_row_tokens : m->ck.cfg.max_len;
  long tokens = max_tokens > s.row_len ? max_tokens : s.row_len;
  s.n_tokens = tokens < INT32_MAX / 2 ? (int)tokens : INT32_MAX / 2;
  s.n_rows = s.n_tokens / LAYA_RESERVE_TOKENS_PER_ROW > 0 ? s.n_tokens / LAYA_RESERVE_TOKENS_PER_ROW : 1;
  s.n_markers = s.n_tokens / LAYA_RESERVE_TOKENS_PER_MARKER > 0 ? s.n_tokens / LAYA_RESERVE_TOKENS_PER_MARKER : 1;
  return engine_reserve(m, &s, workers, err);
}

double laya_warmup(laya_model *m) {
  if (!m) return -1.0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* Laya's WARMUP_SHAPES: (rows, tokens, markers) = (1, 64, 3), (4, 128, 5); ids all [CLS]. */
  static const int shapes[2][3] = {{1, 64, 3}, {4, 128, 5}};
  laya_error err;
  for (int s = 0; s < 2; s++) {
    int rows = shapes[s][0], markers = shapes[s][2];
    int tokens = shapes[s][1] < m->ck.cfg.max_len ? shapes[s][1] : m->ck.cfg.max_len;
    if (tokens < markers + 2) tokens = markers + 2;
    packed_batch_buf bb = {0};
    float *lg = malloc(sizeof(float) * (size_t)(rows * markers)), *ac = malloc(sizeof(float) * (size_t)(rows * m->ck.w.n_act));
    int rc = lg && ac ? pb_reserve(&bb, rows, (long)rows * tokens, (long)rows * markers, &err) : -1;
    if (!rc) {
      for (int r = 0; r < rows; r++) {
        pb_row row = pb_add_row(&bb, 0, tokens, markers);
        for (int i = 0; i < tokens; i++) row.tokens[i] = m->ck.roles.cls_id > 0 ? m->ck.roles.cls_id : 0;
        for (int k = 0; k < markers; k++) row.markers[k] = k + 1;
      }
      rc = engine_forward(m, pb_finish(&bb), lg, ac, &err);
    }
    pb_free(&bb);
    free(lg);
    free(ac);
    if (rc) return -1.0;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

int laya_tokenize(laya_model *m, const char *text, size_t len, char **ids_json, laya_error *err) {
  laya_err_clear(err);
  if (ids_json) *ids_json = NULL;
  if (!m || !text || !ids_json) return laya_err(err, LAYA_ERR_VALUE, NULL, "laya_tokenize: NULL argument");
  ids_vec v = {0};
  int rc = tokenizer_encode(m->ck.tok, text, len, 0, &v, err);
  if (rc) {
    ids_vec_free(&v);
    return rc;
  }
  strbuf sb;
  sb_init(&sb);
  sb_putc(&sb, '[');
  for (size_t i = 0; i < v.n; i++) sb_printf(&sb, i ? ", %d" : "%d", v.ids[i]);
  sb_putc(&sb, ']');
  ids_vec_free(&v);
  if (sb.oom) {
    sb_free(&sb);
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  }
  *ids_json = sb_steal(&sb);
  return 0;
}
