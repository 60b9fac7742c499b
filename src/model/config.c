#include "model/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pystr.h"
#include "core/fsutil.h"
#include "model/questions.h"

_Static_assert(ENC_MAX_LAYERS <= 64 * (int)(sizeof ((encoder_config *)0)->global_layers / sizeof(uint64_t)),
               "encoder_config.global_layers holds a bit per layer");

void temp_bucket_name(int qt, int k, char out[16]) {
  const char *size = k <= 2 ? "2" : k <= 5 ? "3-5" : k <= 10 ? "6-10" : "11+";
  snprintf(out, 16, "%s:%s", question_type_names[qt], size);
}

double temp_lookup(const temp_table *tt, int qt, int k) {
  char b[16];
  temp_bucket_name(qt, k, b);
  for (int i = 0; i < tt->n_by; i++)
    if (strcmp(tt->by_key[i], b) == 0) return tt->by_val[i];
  return tt->t[qt];
}

/* float(x) as Python computes it for a JSON value; false where Python raises. */
static bool py_float_of(const json_value *v, double *out) {
  switch (v->type) {
    case JSON_BOOL: *out = v->b ? 1.0 : 0.0; return true;
    case JSON_INT:
    case JSON_FLOAT: *out = v->d; return true;
    case JSON_STRING: return py_float_from_str(v->s, v->n, out);
    default: return false;
  }
}

double clamp_temperature(const json_value *raw) {
  if (raw->type == JSON_BOOL) return 1.0;
  double t;
  if (!py_float_of(raw, &t)) return 1.0;
  if (isnan(t) || isinf(t)) return 1.0;
  return fmin(LAYA_TEMP_MAX, fmax(LAYA_TEMP_MIN, t));
}

bool temperature_rejected(const json_value *raw, double applied) {
  if (raw->type == JSON_BOOL) return true;
  double v;
  if (!py_float_of(raw, &v)) return true;
  return v != applied;
}

/* One "name=<repr> -> <applied>" entry of a load warning. */
static void rejected_entry(strbuf *sb, bool *first, const char *name, size_t name_len,
                          const json_value *raw, double applied) {
  if (!temperature_rejected(raw, applied)) return;
  if (!*first) sb_puts(sb, ", ");
  *first = false;
  sb_append(sb, name, name_len);
  sb_putc(sb, '=');
  py_repr_json(sb, raw);
  sb_printf(sb, " -> %g", applied);
}

static int table_fill(temp_table *tt, arena *a, const json_value *temperature,
                      const json_value *by_options) {
  for (int i = 0; i < 3; i++) tt->t[i] = clamp_temperature(&temperature->items[i]);
  int n = by_options ? (int)by_options->n : 0;
  tt->n_by = n;
  tt->by_key = arena_alloc(a, sizeof(char *) * (size_t)(n ? n : 1));
  tt->by_val = arena_alloc(a, sizeof(double) * (size_t)(n ? n : 1));
  if (!tt->by_key || !tt->by_val) return -1;
  for (int i = 0; i < n; i++) {
    tt->by_key[i] = by_options->members[i].key;
    tt->by_val[i] = clamp_temperature(&by_options->members[i].value);
  }
  return 0;
}

int temps_install(temp_table *tt, arena *a, const json_value *temperature,
                  const json_value *by_options, int what, strbuf *warnings, laya_error *err) {
  if (table_fill(tt, a, temperature, by_options) != 0)
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  strbuf rej;
  sb_init(&rej);
  bool first = true;
  char name[32];
  if (what == 0) { /* checkpoint: bucket entries first, then the list */
    for (int i = 0; i < tt->n_by; i++)
      rejected_entry(&rej, &first, tt->by_key[i], strlen(tt->by_key[i]),
                     &by_options->members[i].value, tt->by_val[i]);
  }
  for (int i = 0; i < 3; i++) {
    int l = snprintf(name, sizeof name, "temperature[%d]", i);
    rejected_entry(&rej, &first, name, (size_t)l, &temperature->items[i], tt->t[i]);
  }
  if (what != 0) {
    for (int i = 0; i < tt->n_by; i++)
      rejected_entry(&rej, &first, tt->by_key[i], strlen(tt->by_key[i]),
                     &by_options->members[i].value, tt->by_val[i]);
  }
  if (!first && warnings) {
    if (what == 0)
      sb_printf(warnings,
                "laya: this checkpoint ships invalid temperatures or values outside [%g, %g]; "
                "using %s. Treat confidence from the affected entries as uncalibrated.\n",
                LAYA_TEMP_MIN, LAYA_TEMP_MAX, sb_cstr(&rej));
    else
      sb_printf(warnings,
                "laya: calibration temperatures are invalid or outside [%g, %g]; using %s. Treat "
                "confidence from the affected entries as uncalibrated.\n",
                LAYA_TEMP_MIN, LAYA_TEMP_MAX, sb_cstr(&rej));
  }
  sb_free(&rej);
  return 0;
}

static bool get_int(const json_value *v, int *out) {
  if (!v) return false;
  if (v->type == JSON_BOOL) {
    *out = v->b;
    return true;
  }
  if (v->type != JSON_INT || v->big || v->i < INT32_MIN || v->i > INT32_MAX) return false;
  *out = (int)v->i;
  return true;
}

static json_value *default_temperature(arena *a) {
  json_value *v = arena_alloc(a, sizeof *v);
  json_value *items = arena_alloc(a, sizeof *items * 3);
  if (!v || !items) return NULL;
  v->type = JSON_ARRAY;
  v->n = 3;
  v->items = items;
  for (int i = 0; i < 3; i++) {
    items[i].type = JSON_FLOAT;
    items[i].d = 1.0;
    items[i].s = "1.0";
    items[i].n = 3;
  }
  return v;
}

int agent_config_load(agent_config *c, const char *path, const char *model_id, strbuf *warnings,
                      laya_error *err) {
  size_t len;
  char *text = fs_read_file_max(path, FS_MAX_CONFIG_BYTES, &len, err);
  if (!text) {
    memset(c, 0, sizeof *c);
    arena_init(&c->mem, 1 << 14);
    return err ? err->code : LAYA_ERR_IO;
  }
  int rc = agent_config_parse(c, text, len, path, model_id, warnings, err);
  free(text);
  return rc;
}

int agent_config_parse(agent_config *c, const char *text, size_t len, const char *path, const char *model_id,
                       strbuf *warnings, laya_error *err) {
  (void)warnings;
  (void)model_id;
  memset(c, 0, sizeof *c);
  arena_init(&c->mem, 1 << 14);
  laya_error jerr;
  json_value *root = json_parse(text, len, &c->mem, NULL, &jerr);
  if (!root) return laya_err(err, LAYA_ERR_FORMAT, jerr.kind, "%s: %s", path, jerr.message);
  if (root->type != JSON_OBJECT)
    return laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: expected a JSON object, got %s", path,
                    json_py_type(root));
  c->root = root;
  const json_value *layout = json_get(root, "option_layout");
  if (layout && !(layout->type == JSON_STRING && strcmp(layout->s, "sequential") == 0)) {
    if (layout->type == JSON_STRING && strcmp(layout->s, "parallel") == 0)
      return laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                      "%s: option_layout 'parallel' is not supported by laya.c", path);
    strbuf r;
    sb_init(&r);
    py_repr_json(&r, layout);
    laya_err(err, LAYA_ERR_CONFIG, "ValueError",
             "option_layout must be one of sequential, parallel, got %s", sb_cstr(&r));
    sb_free(&r);
    return LAYA_ERR_CONFIG;
  }
  const json_value *v = json_get(root, "encoder");
  c->has_encoder = v != NULL;
  c->encoder_id = v && v->type == JSON_STRING ? v->s : NULL;
  v = json_get(root, "head_layers");
  c->has_head_layers = v != NULL;
  c->head_layers = 2;
  if (v && (!get_int(v, &c->head_layers) || c->head_layers < 0))
    return laya_err(err, LAYA_ERR_CONFIG, NULL,
                    "%s: \"head_layers\" must be a non-negative integer, got %s", path, json_py_type(v));
  if (c->head_layers > AGENT_MAX_HEAD_LAYERS)
    return laya_err(err, LAYA_ERR_CONFIG, NULL,
                    "%s: \"head_layers\" is %d, more than the %d laya.c accepts (Laya's checkpoints "
                    "have 2)",
                    path, c->head_layers, AGENT_MAX_HEAD_LAYERS);
  v = json_get(root, "act_costs");
  c->n_act = 1;
  if (v) {
    if (v->type != JSON_OBJECT && v->type != JSON_ARRAY)
      return laya_err(err, LAYA_ERR_CONFIG, NULL,
                      "%s: \"act_costs\" must be an object (its size sets the act head), got %s",
                      path, json_py_type(v));
    if (v->n >= AGENT_MAX_ACTS)
      return laya_err(err, LAYA_ERR_CONFIG, NULL,
                      "%s: \"act_costs\" has %u entries, more than the %d laya.c accepts", path, v->n,
                      AGENT_MAX_ACTS - 1);
    c->n_act = (int)v->n + 1;
  }
  c->max_len = 512;
  c->head_max_len = 192;
  v = json_get(root, "max_len");
  if (v && !get_int(v, &c->max_len))
    return laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: \"max_len\" must be an integer, got %s", path,
                    json_py_type(v));
  v = json_get(root, "head_max_len");
  if (v && !get_int(v, &c->head_max_len))
    return laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: \"head_max_len\" must be an integer, got %s",
                    path, json_py_type(v));
  /* Token budgets: Laya reads them only when it builds a sequence, where 0 or less leaves no room
   * (every question fails) and a huge one sizes every buffer of a server; refuse both at load. */
  static const char *const budget[2] = {"max_len", "head_max_len"};
  const int budget_v[2] = {c->max_len, c->head_max_len};
  for (int k = 0; k < 2; k++) {
    if (budget_v[k] < 1)
      return laya_err(err, LAYA_ERR_CONFIG, NULL,
                      "%s: \"%s\" is %d; a checkpoint's token budget must be at least 1", path,
                      budget[k], budget_v[k]);
    if (budget_v[k] > AGENT_MAX_TOKENS)
      return laya_err(err, LAYA_ERR_CONFIG, NULL,
                      "%s: \"%s\" is %d, more than the %d tokens laya.c accepts (Laya's checkpoints "
                      "use 512 or 1024)",
                      path, budget[k], budget_v[k], AGENT_MAX_TOKENS);
  }
  v = json_get(root, "amp_dtype");
  c->amp_dtype = v && v->type == JSON_STRING ? v->s : "fp16";
  v = json_get(root, "temperature");
  c->temperature_raw = v ? v : default_temperature(&c->mem);
  v = json_get(root, "temperature_by_options");
  if (v) {
    c->temperature_by_options_raw = v;
  } else {
    json_value *e = arena_alloc(&c->mem, sizeof *e);
    if (e) e->type = JSON_OBJECT;
    c->temperature_by_options_raw = e;
  }
  if (!c->temperature_raw || !c->temperature_by_options_raw)
    return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  return 0;
}

int agent_config_install_temperatures(agent_config *c, const char *path, const char *model_id,
                                      strbuf *warnings, laya_error *err) {
  const json_value *t = c->temperature_raw;
  if (t->type != JSON_ARRAY || t->n != 3) {
    strbuf a, b;
    sb_init(&a);
    sb_init(&b);
    py_repr_str(&a, model_id, strlen(model_id));
    py_repr_json(&b, t);
    laya_err(err, LAYA_ERR_CONFIG, "ValueError",
             "Incompatible model: %s temperature must be a list of 3 floats, got %s", sb_cstr(&a),
             sb_cstr(&b));
    sb_free(&a);
    sb_free(&b);
    return LAYA_ERR_CONFIG;
  }
  if (c->temperature_by_options_raw->type != JSON_OBJECT)
    return laya_err(err, LAYA_ERR_CONFIG, NULL,
                    "%s: \"temperature_by_options\" must be an object of bucket -> float, got %s",
                    path, json_py_type(c->temperature_by_options_raw));
  return temps_install(&c->temps, &c->mem, t, c->temperature_by_options_raw, 0, warnings, err);
}

void agent_config_free(agent_config *c) {
  arena_free(&c->mem);
  memset(c, 0, sizeof *c);
}

/* ---- lang_temperatures ---- */

int lang_temps_parse(lang_temps *lt, arena *a, const char *json_text, const json_value *base_raw,
                     strbuf *warnings, laya_error *err) {
  memset(lt, 0, sizeof *lt);
  if (!json_text) return 0;
  laya_error jerr;
  json_value *root = json_parse(json_text, strlen(json_text), a, NULL, &jerr);
  if (!root)
    return laya_err(err, LAYA_ERR_VALUE, jerr.kind, "lang_temperatures: %s", jerr.message);
  if (root->type == JSON_NULL) return 0;
  if (root->type != JSON_OBJECT)
    return laya_err(err, LAYA_ERR_TYPE, "AttributeError", "'%s' object has no attribute 'items'",
                    json_py_type(root));
  lt->lang = arena_alloc(a, sizeof(char *) * (root->n ? root->n : 1));
  lt->tt = arena_alloc(a, sizeof(temp_table) * (root->n ? root->n : 1));
  if (!lt->lang || !lt->tt) return laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
  strbuf r, rej;
  sb_init(&r);
  sb_init(&rej);
  int rc = 0;
  for (uint32_t i = 0; i < root->n && !rc; i++) {
    const json_member *m = &root->members[i];
    const json_value *cfg = &m->value;
    sb_reset(&r);
    py_repr_str(&r, m->key, m->key_len);
    static const json_value empty_obj = {.type = JSON_OBJECT};
    if (cfg->type == JSON_NULL) cfg = &empty_obj;
    if (cfg->type != JSON_OBJECT) {
      rc = laya_value_error(err, "Language override %s must be a mapping, got %s", sb_cstr(&r),
                            json_py_type(cfg));
      break;
    }
    const json_value *t_raw = json_get(cfg, "temperature");
    bool inherited = !t_raw || t_raw->type == JSON_NULL;
    if (inherited) t_raw = base_raw;
    if (t_raw->type != JSON_ARRAY || t_raw->n != 3) {
      strbuf g;
      sb_init(&g);
      py_repr_json(&g, t_raw);
      rc = laya_value_error(err, "Language override %s temperature must be a list of 3 floats, got %s",
                            sb_cstr(&r), sb_cstr(&g));
      sb_free(&g);
      break;
    }
    const json_value *tbo = json_get(cfg, "temperature_by_options");
    /* `or {}`: every falsy value means "none" */
    bool falsy = !tbo || tbo->type == JSON_NULL || (tbo->type == JSON_BOOL && !tbo->b) ||
                 ((tbo->type == JSON_INT || tbo->type == JSON_FLOAT) && tbo->d == 0 && !tbo->big) ||
                 ((tbo->type == JSON_STRING || tbo->type == JSON_ARRAY || tbo->type == JSON_OBJECT) &&
                  tbo->n == 0);
    if (falsy) tbo = &empty_obj;
    if (tbo->type != JSON_OBJECT) {
      rc = laya_value_error(err,
                            "Language override %s temperature_by_options must be a mapping of "
                            "bucket -> float, got %s",
                            sb_cstr(&r), json_py_type(tbo));
      break;
    }
    temp_table *tt = &lt->tt[lt->n];
    if (table_fill(tt, a, t_raw, tbo) != 0) {
      rc = laya_err(err, LAYA_ERR_NOMEM, NULL, "out of memory");
      break;
    }
    sb_reset(&rej);
    bool first = true;
    char name[32];
    if (!inherited)
      for (int k = 0; k < 3; k++) {
        int l = snprintf(name, sizeof name, "temperature[%d]", k);
        rejected_entry(&rej, &first, name, (size_t)l, &t_raw->items[k], tt->t[k]);
      }
    for (int k = 0; k < tt->n_by; k++)
      rejected_entry(&rej, &first, tt->by_key[k], strlen(tt->by_key[k]), &tbo->members[k].value,
                     tt->by_val[k]);
    if (!first && warnings)
      sb_printf(warnings,
                "laya: language override %s ships invalid temperatures or values outside [%g, %g]; "
                "using %s. Treat confidence from the affected entries as uncalibrated.\n",
                sb_cstr(&r), LAYA_TEMP_MIN, LAYA_TEMP_MAX, sb_cstr(&rej));
    /* norm = lang.split("-")[0].lower(); a later key with the same norm replaces the entry */
    const char *dash = memchr(m->key, '-', m->key_len);
    size_t head = dash ? (size_t)(dash - m->key) : m->key_len;
    strbuf low;
    sb_init(&low);
    py_lower(&low, m->key, head);
    const char *norm = arena_strndup(a, sb_cstr(&low), low.len);
    sb_free(&low);
    int slot = lt->n;
    for (int k = 0; k < lt->n; k++)
      if (strcmp(lt->lang[k], norm) == 0) slot = k;
    lt->lang[slot] = norm;
    if (slot != lt->n)
      lt->tt[slot] = *tt;
    else
      lt->n++;
  }
  sb_free(&r);
  sb_free(&rej);
  return rc;
}

const temp_table *lang_temps_find(const lang_temps *lt, const char *lang, size_t n) {
  if (!lt || !lt->n || !lang || !n) return NULL;
  const char *dash = memchr(lang, '-', n);
  size_t head = dash ? (size_t)(dash - lang) : n;
  strbuf low;
  sb_init(&low);
  py_lower(&low, lang, head);
  const temp_table *hit = NULL;
  for (int i = 0; i < lt->n; i++)
    if (strlen(lt->lang[i]) == low.len && memcmp(lt->lang[i], sb_cstr(&low), low.len) == 0)
      hit = &lt->tt[i];
  sb_free(&low);
  return hit;
}

/* ---- encoder/config.json ---- */

/* hidden_activation: the transformers ACT2FN keys laya.c runs and the formula each one computes
 * (transformers/activations.py). gelu_new, gelu_pytorch_tanh, gelu_python_tanh, gelu_fast and
 * gelu_accurate are one formula, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): gelu_fast writes
 * it as x 0.7978845608 (1 + 0.044715 x^2), whose constant is sqrt(2/pi) to the same fp32. The first
 * name of each kind is the one artifacts store. */
static const struct {
  const char *name;
  enc_act act;
} act_names[] = {
    {"gelu", ENC_ACT_GELU},
    {"gelu_python", ENC_ACT_GELU},
    {"gelu_pytorch_tanh", ENC_ACT_GELU_TANH},
    {"gelu_new", ENC_ACT_GELU_TANH},
    {"gelu_python_tanh", ENC_ACT_GELU_TANH},
    {"gelu_fast", ENC_ACT_GELU_TANH},
    {"gelu_accurate", ENC_ACT_GELU_TANH},
    {"quick_gelu", ENC_ACT_QUICK_GELU},
    {"silu", ENC_ACT_SILU},
    {"swish", ENC_ACT_SILU},
    {"relu", ENC_ACT_RELU},
    {"gelu_10", ENC_ACT_GELU_10},
    {"mish", ENC_ACT_MISH},
    {"relu2", ENC_ACT_RELU2},
    {"relu6", ENC_ACT_RELU6},
    {"leaky_relu", ENC_ACT_LEAKY_RELU},
    {"hardswish", ENC_ACT_HARDSWISH},
    {"tanh", ENC_ACT_TANH},
    {"sigmoid", ENC_ACT_SIGMOID},
    {"linear", ENC_ACT_LINEAR},
    {"laplace", ENC_ACT_LAPLACE},
    {"sqrtsoftplus", ENC_ACT_SQRT_SOFTPLUS},
};

/* The ACT2FN keys whose module carries learnable state, which would be in the checkpoint under
 * encoder.layers.<i>.mlp.act.<name>: refused by name (docs/engine.md, Known limits). */
static const struct {
  const char *name, *module, *state;
} act_learnable[] = {
    {"prelu", "torch.nn.PReLU", "weight"},
    {"xielu", "transformers' XIELUActivation", "alpha_p, alpha_n, beta and eps"},
};

int enc_act_parse(const char *name, enc_act *out) {
  for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
    if (strcmp(name, act_names[i].name) == 0) {
      *out = act_names[i].act;
      return 0;
    }
  return -1;
}

const char *enc_act_name(enc_act act) {
  for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
    if (act_names[i].act == act) return act_names[i].name;
  return "?";
}

void enc_act_list(char *buf, size_t cap) {
  size_t n = 0;
  if (cap) buf[0] = 0;
  for (size_t i = 0; i < sizeof act_names / sizeof act_names[0] && n < cap; i++) {
    int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", act_names[i].name);
    if (w < 0) break;
    n += (size_t)w;
  }
}

/* A positive integer no larger than `max`. The bounds (ENC_MAX_*, config.h) are checked before
 * anything is sized from the value, so a 1 KB config cannot ask for gigabytes. */
static int need_int(const json_value *root, const char *key, int dflt, int max, int *out,
                    const char *path, laya_error *err) {
  const json_value *v = json_get(root, key);
  if (!v) {
    *out = dflt;
    return 0;
  }
  if (v->type != JSON_INT || v->big || v->i <= 0)
    return laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: \"%s\" must be a positive integer, got %s",
                    path, key, v->type == JSON_INT ? v->s : json_py_type(v));
  if (v->i > max)
    return laya_err(err, LAYA_ERR_CONFIG, NULL,
                    "%s: \"%s\" is %lld, more than the %d laya.c accepts (no ModernBERT or mmBERT "
                    "encoder comes near it)",
                    path, key, (long long)v->i, max);
  *out = (int)v->i;
  return 0;
}

static int need_num(const json_value *v, const char *key, double *out, const char *path,
                    laya_error *err) {
  if (!json_is_number(v) || !(v->d > 0) || isinf(v->d))
    return laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: \"%s\" must be a positive number, got %s", path,
                    key, v ? json_py_type(v) : "nothing");
  *out = v->d;
  return 0;
}

int encoder_config_parse(encoder_config *ec, const char *text, size_t len, const char *path,
                         laya_error *err) {
  memset(ec, 0, sizeof *ec);
  arena a;
  arena_init(&a, 1 << 14);
  laya_error jerr;
  int rc = 0;
  json_value *root = json_parse(text, len, &a, NULL, &jerr);
  if (!root) {
    rc = laya_err(err, LAYA_ERR_FORMAT, jerr.kind, "%s: %s", path, jerr.message);
    goto done;
  }
  if (root->type != JSON_OBJECT) {
    rc = laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: expected a JSON object, got %s", path,
                  json_py_type(root));
    goto done;
  }
  /* Defaults are HF ModernBertConfig's. */
  if ((rc = need_int(root, "hidden_size", 768, ENC_MAX_HIDDEN, &ec->hidden, path, err)) ||
      (rc = need_int(root, "num_hidden_layers", 22, ENC_MAX_LAYERS, &ec->n_layers, path, err)) ||
      (rc = need_int(root, "num_attention_heads", 12, ENC_MAX_HEADS, &ec->n_heads, path, err)) ||
      (rc = need_int(root, "intermediate_size", 1152, ENC_MAX_INTERMEDIATE, &ec->intermediate, path, err)) ||
      (rc = need_int(root, "vocab_size", 50368, ENC_MAX_VOCAB, &ec->vocab, path, err)) ||
      (rc = need_int(root, "global_attn_every_n_layers", 3, ENC_MAX_POSITIONS, &ec->global_every, path, err)) ||
      (rc = need_int(root, "local_attention", 128, ENC_MAX_POSITIONS, &ec->local_window, path, err)) ||
      (rc = need_int(root, "max_position_embeddings", 8192, ENC_MAX_POSITIONS, &ec->max_positions, path, err)))
    goto done;
  if (ec->hidden % ec->n_heads) {
    rc = laya_err(err, LAYA_ERR_CONFIG, NULL,
                  "%s: hidden_size %d is not a multiple of num_attention_heads %d", path, ec->hidden,
                  ec->n_heads);
    goto done;
  }
  ec->head_dim = ec->hidden / ec->n_heads;
  if (ec->head_dim % 2) {
    rc = laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: head size %d must be even for RoPE", path,
                  ec->head_dim);
    goto done;
  }
  ec->norm_eps = 1e-5;
  const json_value *v = json_get(root, "norm_eps");
  if (v && (rc = need_num(v, "norm_eps", &ec->norm_eps, path, err))) goto done;
  ec->act = ENC_ACT_GELU; /* ModernBertConfig's default "gelu" */
  v = json_get(root, "hidden_activation");
  if (v && v->type != JSON_STRING) {
    rc = laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: \"hidden_activation\" must be an activation name, got %s", path,
                  json_py_type(v));
    goto done;
  }
  if (v && enc_act_parse(v->s, &ec->act)) {
    char names[512];
    enc_act_list(names, sizeof names);
    for (size_t i = 0; i < sizeof act_learnable / sizeof act_learnable[0]; i++)
      if (strcmp(v->s, act_learnable[i].name) == 0) {
        rc = laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                      "%s: \"hidden_activation\" is \"%s\" (%s), an activation with learnable state (%s, "
                      "in the checkpoint under encoder.layers.<i>.mlp.act.), which laya.c does not run; it runs "
                      "the parameter-free ones: %s",
                      path, v->s, act_learnable[i].module, act_learnable[i].state, names);
        goto done;
      }
    rc = laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                  "%s: \"hidden_activation\" is \"%s\", which laya.c does not run (it runs %s)", path, v->s,
                  names);
    goto done;
  }
  static const char *const no_bias[] = {"norm_bias", "attention_bias", "mlp_bias"};
  for (int i = 0; i < 3; i++) {
    v = json_get(root, no_bias[i]);
    if (v && !(v->type == JSON_BOOL && !v->b) && v->type != JSON_NULL) {
      rc = laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                    "%s: \"%s\" must be false: Laya's encoders have no biases", path, no_bias[i]);
      goto done;
    }
  }
  /* The attention pattern: every global_attn_every_n_layers-th layer from 0, unless transformers
   * 5's layer_types lists it per layer (any pattern: transformers' ModernBERT reads the list, so
   * full attention at layers 0, 3 and 4 is as valid as every third layer). */
  ec->layer_pattern = false;
  v = json_get(root, "layer_types");
  if (v && v->type != JSON_NULL) {
    if (v->type != JSON_ARRAY || (int)v->n != ec->n_layers) {
      rc = laya_err(err, LAYA_ERR_CONFIG, NULL, "%s: \"layer_types\" must list %d layer types (one per layer)", path,
                    ec->n_layers);
      goto done;
    }
    for (size_t w = 0; w < sizeof ec->global_layers / sizeof ec->global_layers[0]; w++) ec->global_layers[w] = 0;
    for (int i = 0; i < ec->n_layers; i++) {
      const json_value *t = &v->items[i];
      bool full = t->type == JSON_STRING && strcmp(t->s, "full_attention") == 0;
      if (!full && !(t->type == JSON_STRING && strcmp(t->s, "sliding_attention") == 0)) {
        rc = laya_err(err, LAYA_ERR_UNSUPPORTED, NULL,
                      "%s: \"layer_types\"[%d] must be \"full_attention\" or \"sliding_attention\"", path, i);
        goto done;
      }
      if (full) ec->global_layers[i >> 6] |= (uint64_t)1 << (i & 63);
    }
    ec->layer_pattern = true;
    /* report the interval when the list is one (model info, artifacts of older readers) */
    ec->global_every = 0;
    for (int every = 1; every <= ec->n_layers && !ec->global_every; every++) {
      bool same = true;
      for (int i = 0; i < ec->n_layers && same; i++) same = enc_layer_global(ec, i) == (i % every == 0);
      if (same) ec->global_every = every;
    }
  }
  /* RoPE bases: 5.x rope_parameters per layer type (a non-dict entry falls back to the flat
   * rope_theta), else the 4.x global/local keys, else 160000 / 10000. */
  ec->global_theta = 160000.0;
  ec->local_theta = 10000.0;
  v = json_get(root, "global_rope_theta");
  if (v && v->type != JSON_NULL && (rc = need_num(v, "global_rope_theta", &ec->global_theta, path, err)))
    goto done;
  v = json_get(root, "local_rope_theta");
  if (v && v->type != JSON_NULL && (rc = need_num(v, "local_rope_theta", &ec->local_theta, path, err)))
    goto done;
  const json_value *rope = json_get(root, "rope_parameters");
  if (rope && rope->type == JSON_OBJECT) {
    const json_value *flat = json_get(rope, "rope_theta");
    static const char *const types[2] = {"full_attention", "sliding_attention"};
    double *dst[2] = {&ec->global_theta, &ec->local_theta};
    for (int i = 0; i < 2; i++) {
      const json_value *p = json_get(rope, types[i]);
      const json_value *theta = p && p->type == JSON_OBJECT ? json_get(p, "rope_theta") : flat;
      if (theta && theta->type != JSON_NULL) {
        char key[64];
        snprintf(key, sizeof key, "rope_parameters.%s.rope_theta", types[i]);
        if ((rc = need_num(theta, key, dst[i], path, err))) goto done;
      }
    }
  }
done:
  arena_free(&a);
  return rc;
}

int encoder_config_load(encoder_config *ec, const char *path, laya_error *err) {
  size_t len;
  char *text = fs_read_file_max(path, FS_MAX_CONFIG_BYTES, &len, err);
  if (!text) return err ? err->code : LAYA_ERR_IO;
  int rc = encoder_config_parse(ec, text, len, path, err);
  free(text);
  return rc;
}
