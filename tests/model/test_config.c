/* Configs: encoder/config.json in the transformers 4.x and 5.x forms, rl_agent_config.json
 * defaults, temperature clamping with Laya's warning text, lang_temperatures errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "model/config.h"

static encoder_config enc_of(const char *json, int *rc, laya_error *err) {
  encoder_config e;
  *rc = encoder_config_parse(&e, json, strlen(json), "encoder/config.json", err);
  return e;
}

static char cfg_path[] = "/tmp/laya_cfg_XXXXXX";

static int load_cfg(agent_config *c, const char *json, strbuf *warn, laya_error *err) {
  FILE *f = fopen(cfg_path, "w");
  fputs(json, f);
  fclose(f);
  int rc = agent_config_load(c, cfg_path, "ckpt", warn, err);
  if (!rc) rc = agent_config_install_temperatures(c, cfg_path, "ckpt", warn, err);
  return rc;
}

int main(void) {
  laya_error err;
  int rc;
  /* 4.x form: explicit thetas; absent ones take ModernBertConfig defaults */
  encoder_config e = enc_of("{\"hidden_size\": 64, \"num_hidden_layers\": 4, \"num_attention_heads\": 2,"
                            " \"intermediate_size\": 96, \"vocab_size\": 300, \"global_rope_theta\": 160000.0,"
                            " \"local_rope_theta\": 160000.0, \"norm_eps\": 1e-05}", &rc, &err);
  CHECK(rc == 0);
  CHECK(e.hidden == 64 && e.n_layers == 4 && e.n_heads == 2 && e.head_dim == 32);
  CHECK(e.intermediate == 96 && e.vocab == 300 && e.global_every == 3 && e.local_window == 128);
  CHECK(e.global_theta == 160000.0 && e.local_theta == 160000.0 && e.norm_eps == 1e-5);
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2}", &rc, &err);
  CHECK(rc == 0 && e.global_theta == 160000.0 && e.local_theta == 10000.0 && e.n_layers == 22);
  /* 5.x form: rope_parameters per layer type */
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"num_hidden_layers\": 4,"
             " \"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 160000.0},"
             " \"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0}},"
             " \"layer_types\": [\"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\"]}",
             &rc, &err);
  CHECK(rc == 0 && e.global_theta == 160000.0 && e.local_theta == 10000.0 && e.global_every == 2);
  /* a per-type entry that is not a dict falls back to the flat rope_theta */
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"local_rope_theta\": 5.0,"
             " \"rope_parameters\": {\"rope_theta\": 50000.0, \"sliding_attention\": {\"rope_theta\": 7.0}}}",
             &rc, &err);
  CHECK(rc == 0 && e.global_theta == 50000.0 && e.local_theta == 7.0);
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"global_rope_theta\": 9.0,"
             " \"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\"}}}", &rc, &err);
  CHECK(rc == 0 && e.global_theta == 9.0 && e.local_theta == 10000.0);
  /* the bounds accept every real encoder: ModernBERT-base/large, mmBERT-small/base, Ettin-1b */
  static const char *const real[] = {
      "{\"hidden_size\": 768, \"num_hidden_layers\": 22, \"num_attention_heads\": 12, \"intermediate_size\": 1152,"
      " \"vocab_size\": 50368, \"max_position_embeddings\": 8192, \"local_attention\": 128}",
      "{\"hidden_size\": 1024, \"num_hidden_layers\": 28, \"num_attention_heads\": 16, \"intermediate_size\": 2624,"
      " \"vocab_size\": 50368, \"max_position_embeddings\": 8192}",
      "{\"hidden_size\": 384, \"num_hidden_layers\": 22, \"num_attention_heads\": 6, \"intermediate_size\": 1152,"
      " \"vocab_size\": 256000, \"max_position_embeddings\": 8192}",
      "{\"hidden_size\": 768, \"num_hidden_layers\": 22, \"num_attention_heads\": 12, \"intermediate_size\": 1152,"
      " \"vocab_size\": 256000, \"max_position_embeddings\": 8192}",
      "{\"hidden_size\": 1792, \"num_hidden_layers\": 28, \"num_attention_heads\": 28, \"intermediate_size\": 3840,"
      " \"vocab_size\": 50368, \"max_position_embeddings\": 7999}"};
  for (size_t i = 0; i < sizeof real / sizeof *real; i++) {
    e = enc_of(real[i], &rc, &err);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "  real config %zu: %s\n", i, err.message);
  }
  CHECK(e.max_positions == 7999 && e.hidden == 1792);
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2}", &rc, &err);
  CHECK(rc == 0 && e.max_positions == 8192); /* ModernBertConfig's default */
  /* ... and refuse absurd sizes before anything is sized from them, naming the key */
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"num_hidden_layers\": 10000000}", &rc, &err);
  CHECK(rc == LAYA_ERR_CONFIG);
  CHECK_STREQ(err.message, "encoder/config.json: \"num_hidden_layers\" is 10000000, more than the 1024 laya.c "
                           "accepts (no ModernBERT or mmBERT encoder comes near it)");
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"vocab_size\": 99999999999999999999}", &rc, &err);
  CHECK(rc == LAYA_ERR_CONFIG);
  CHECK(strstr(err.message, "\"vocab_size\" must be a positive integer") != NULL);
  /* errors name the file and the key */
  e = enc_of("{\"hidden_size\": 65, \"num_attention_heads\": 2}", &rc, &err);
  CHECK(rc == LAYA_ERR_CONFIG);
  CHECK_STREQ(err.message, "encoder/config.json: hidden_size 65 is not a multiple of num_attention_heads 2");
  e = enc_of("{\"hidden_size\": \"64\"}", &rc, &err);
  CHECK(rc == LAYA_ERR_CONFIG);
  CHECK_STREQ(err.message, "encoder/config.json: \"hidden_size\" must be a positive integer, got str");
  /* hidden_activation: every ACT2FN key laya.c runs maps to its formula; absent is HF's "gelu" */
  static const struct {
    const char *name;
    enc_act act;
  } acts[] = {{"gelu", ENC_ACT_GELU},
              {"gelu_python", ENC_ACT_GELU},
              {"gelu_new", ENC_ACT_GELU_TANH},
              {"gelu_pytorch_tanh", ENC_ACT_GELU_TANH},
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
              {"sqrtsoftplus", ENC_ACT_SQRT_SOFTPLUS}};
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    char j[128];
    snprintf(j, sizeof j, "{\"hidden_activation\": \"%s\"}", acts[i].name);
    e = enc_of(j, &rc, &err);
    CHECK(rc == 0 && e.act == acts[i].act);
    enc_act back = ENC_ACT_COUNT; /* the name artifacts store reads back as the same kind */
    CHECK(enc_act_parse(enc_act_name(e.act), &back) == 0 && back == acts[i].act);
  }
  e = enc_of("{}", &rc, &err);
  CHECK(rc == 0 && e.act == ENC_ACT_GELU);
  /* every kind has a distinct name to store, and every ACT2FN kind is in the table */
  for (int k = 0; k < ENC_ACT_COUNT; k++) {
    enc_act back = ENC_ACT_COUNT;
    CHECK(strcmp(enc_act_name((enc_act)k), "?") != 0);
    CHECK(enc_act_parse(enc_act_name((enc_act)k), &back) == 0 && back == (enc_act)k);
  }
  e = enc_of("{\"hidden_activation\": \"softsign\"}", &rc, &err); /* not an ACT2FN key */
  CHECK(rc == LAYA_ERR_UNSUPPORTED);
  CHECK(strstr(err.message, "encoder/config.json: \"hidden_activation\" is \"softsign\", which laya.c does not run (it runs "
                            "gelu, gelu_python, ") == err.message &&
        strstr(err.message, "laplace, sqrtsoftplus)"));
  /* the ones with learnable state are refused naming the module and where its state would be */
  e = enc_of("{\"hidden_activation\": \"prelu\"}", &rc, &err);
  CHECK(rc == LAYA_ERR_UNSUPPORTED);
  CHECK(strstr(err.message, "encoder/config.json: \"hidden_activation\" is \"prelu\" (torch.nn.PReLU), an activation "
                            "with learnable state (weight, in the checkpoint under encoder.layers.<i>.mlp.act.), which "
                            "laya.c does not run; it runs the parameter-free ones: gelu, ") == err.message);
  e = enc_of("{\"hidden_activation\": \"xielu\"}", &rc, &err);
  CHECK(rc == LAYA_ERR_UNSUPPORTED);
  CHECK(strstr(err.message, "\"xielu\" (transformers' XIELUActivation), an activation with learnable state (alpha_p, "
                            "alpha_n, beta and eps,") != NULL);
  e = enc_of("{\"hidden_activation\": \"GELU\"}", &rc, &err); /* ACT2FN keys are case-sensitive */
  CHECK(rc == LAYA_ERR_UNSUPPORTED);
  e = enc_of("{\"hidden_activation\": null}", &rc, &err);
  CHECK(rc == LAYA_ERR_CONFIG);
  CHECK_STREQ(err.message, "encoder/config.json: \"hidden_activation\" must be an activation name, got NoneType");
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"num_hidden_layers\": 3,"
             " \"layer_types\": [\"full_attention\", \"full_attention\", \"sliding_attention\"]}", &rc, &err);
  /* any per-layer pattern transformers reads, not only every-N (then no interval to report) */
  CHECK(rc == 0 && e.layer_pattern && e.global_every == 0 && enc_layer_global(&e, 0) && enc_layer_global(&e, 1) &&
        !enc_layer_global(&e, 2));
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"num_hidden_layers\": 2,"
             " \"layer_types\": [\"full_attention\", \"chunked_attention\"]}", &rc, &err);
  CHECK(rc == LAYA_ERR_UNSUPPORTED && strstr(err.message, "\"layer_types\"[1]"));
  e = enc_of("{\"hidden_size\": 64, \"num_attention_heads\": 2, \"num_hidden_layers\": 2,"
             " \"layer_types\": [\"full_attention\"]}", &rc, &err);
  CHECK(rc == LAYA_ERR_CONFIG && strstr(err.message, "must list 2 layer types"));
  e = enc_of("{\"hidden_size\": 64,", &rc, &err);
  CHECK(rc == LAYA_ERR_FORMAT && strstr(err.message, "encoder/config.json: invalid JSON at byte") == err.message);
  (void)e;

  /* rl_agent_config.json */
  int fd = mkstemp(cfg_path);
  CHECK(fd >= 0);
  close(fd);
  agent_config c;
  strbuf warn;
  sb_init(&warn);
  CHECK(load_cfg(&c, "{\"encoder\": null, \"head_layers\": 2}", &warn, &err) == 0);
  CHECK(c.max_len == 512 && c.head_max_len == 192 && c.n_act == 1 && c.has_encoder && !c.encoder_id);
  CHECK(c.temps.t[0] == 1.0 && c.temps.t[1] == 1.0 && c.temps.t[2] == 1.0 && c.temps.n_by == 0);
  CHECK(warn.len == 0);
  agent_config_free(&c);
  CHECK(load_cfg(&c,
                 "{\"encoder\": \"x\", \"head_layers\": 2, \"act_costs\": {\"escalate\": 0.5}, \"max_len\": 256,"
                 " \"temperature\": [1.6369030475616455, 1.2514300346374512, 7],"
                 " \"temperature_by_options\": {\"choice:3-5\": 1.76, \"choice:11+\": 0.10058280825614929,"
                 " \"noul:2\": true, \"score:2\": \"2.5\"}}",
                 &warn, &err) == 0);
  CHECK(c.n_act == 2 && c.max_len == 256);
  CHECK(c.temps.t[0] == 1.6369030475616455 && c.temps.t[2] == 5.0);
  CHECK(temp_lookup(&c.temps, 0, 11) == 0.5);
  CHECK(temp_lookup(&c.temps, 0, 4) == 1.76);
  CHECK(temp_lookup(&c.temps, 0, 2) == 1.6369030475616455);
  CHECK(temp_lookup(&c.temps, 2, 2) == 1.0);  /* a bool is not a temperature */
  CHECK(temp_lookup(&c.temps, 1, 1) == 2.5);  /* float("2.5") */
  CHECK_STREQ(sb_cstr(&warn),
              "laya: this checkpoint ships invalid temperatures or values outside [0.5, 5]; using "
              "choice:11+=0.10058280825614929 -> 0.5, noul:2=True -> 1, temperature[2]=7 -> 5. Treat "
              "confidence from the affected entries as uncalibrated.\n");
  /* lang_temperatures */
  lang_temps lt;
  arena a;
  arena_init(&a, 4096);
  sb_reset(&warn);
  CHECK(lang_temps_parse(&lt, &a, "{\"de-AT\": {\"temperature\": [2, 0.1, null]}, \"FR\": null}",
                         c.temperature_raw, &warn, &err) == 0);
  CHECK(lt.n == 2);
  const temp_table *de = lang_temps_find(&lt, "de-CH", 5);
  CHECK(de && de->t[0] == 2.0 && de->t[1] == 0.5 && de->t[2] == 1.0);
  const temp_table *fr = lang_temps_find(&lt, "fr", 2);
  CHECK(fr && fr->t[2] == 5.0); /* inherits the checkpoint's raw list, clamped */
  CHECK(lang_temps_find(&lt, "en", 2) == NULL);
  CHECK_STREQ(sb_cstr(&warn),
              "laya: language override 'de-AT' ships invalid temperatures or values outside [0.5, 5]; "
              "using temperature[1]=0.1 -> 0.5, temperature[2]=None -> 1. Treat confidence from the "
              "affected entries as uncalibrated.\n");
  CHECK(lang_temps_parse(&lt, &a, "{\"de\": 3}", c.temperature_raw, NULL, &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "Language override 'de' must be a mapping, got int");
  CHECK(lang_temps_parse(&lt, &a, "{\"de\": {\"temperature\": [1, 2]}}", c.temperature_raw, NULL, &err) ==
        LAYA_ERR_VALUE);
  CHECK_STREQ(err.message, "Language override 'de' temperature must be a list of 3 floats, got [1, 2]");
  CHECK(lang_temps_parse(&lt, &a, "{\"de\": {\"temperature_by_options\": [1]}}", c.temperature_raw, NULL,
                         &err) == LAYA_ERR_VALUE);
  CHECK_STREQ(err.message,
              "Language override 'de' temperature_by_options must be a mapping of bucket -> float, got list");
  CHECK(lang_temps_parse(&lt, &a, "{\"de\": {\"temperature_by_options\": []}}", c.temperature_raw, NULL,
                         &err) == 0); /* falsy means none */
  arena_free(&a);
  agent_config_free(&c);
  /* the temperature list shape is Laya's ValueError */
  CHECK(load_cfg(&c, "{\"encoder\": null, \"head_layers\": 2, \"temperature\": [1, 2]}", &warn, &err) ==
        LAYA_ERR_CONFIG);
  CHECK_STREQ(err.message, "Incompatible model: 'ckpt' temperature must be a list of 3 floats, got [1, 2]");
  agent_config_free(&c);
  CHECK(load_cfg(&c, "{\"encoder\": null, \"option_layout\": \"diagonal\"}", &warn, &err) == LAYA_ERR_CONFIG);
  CHECK_STREQ(err.message, "option_layout must be one of sequential, parallel, got 'diagonal'");
  agent_config_free(&c);
  CHECK(load_cfg(&c, "{\"max_len\": \"512\"}", &warn, &err) == LAYA_ERR_CONFIG);
  CHECK(strstr(err.message, "\"max_len\" must be an integer, got str") != NULL);
  CHECK(strstr(err.message, cfg_path) == err.message);
  agent_config_free(&c);
  char bucket[16];
  temp_bucket_name(0, 1, bucket);
  CHECK_STREQ(bucket, "choice:2");
  temp_bucket_name(1, 5, bucket);
  CHECK_STREQ(bucket, "score:3-5");
  temp_bucket_name(2, 10, bucket);
  CHECK_STREQ(bucket, "noul:6-10");
  temp_bucket_name(0, 11, bucket);
  CHECK_STREQ(bucket, "choice:11+");
  sb_free(&warn);
  unlink(cfg_path);
  return check_summary("model/config");
}
