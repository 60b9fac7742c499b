/*
 * fuzz_model_config.c: libFuzzer target -- the two JSON configs of a checkpoint. The first byte
 * picks the parser (even: encoder/config.json through encoder_config_parse; odd:
 * rl_agent_config.json through agent_config_load and the temperature install that follows it at
 * load), the rest is the file. Nothing may crash, whatever the bytes; a config that parses must be
 * inside the bounds config.h promises (checked here, so a bound that stops holding is a finding).
 * Seeds: tests/fuzz/seeds/model_config (the fixtures' configs and the issue-18 bombs).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  laya_error err = {0};
  if ((data[0] & 1) == 0) {
    encoder_config ec;
    if (encoder_config_parse(&ec, text, len, "encoder/config.json", &err) == 0) {
      if (ec.hidden < 1 || ec.hidden > ENC_MAX_HIDDEN || ec.n_layers < 1 || ec.n_layers > ENC_MAX_LAYERS ||
          ec.n_heads < 1 || ec.head_dim * ec.n_heads != ec.hidden || ec.head_dim % 2 ||
          ec.intermediate < 1 || ec.intermediate > ENC_MAX_INTERMEDIATE || ec.vocab < 1 ||
          ec.vocab > ENC_MAX_VOCAB || ec.max_positions < 1 || ec.max_positions > ENC_MAX_POSITIONS ||
          (!ec.layer_pattern && ec.global_every < 1) || !(ec.norm_eps > 0) || !(ec.global_theta > 0) || !(ec.local_theta > 0))
        abort();
    }
    return 0;
  }
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/laya_fuzz_cfg_%d.json", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  if (len) fwrite(text, 1, len, f);
  fclose(f);
  agent_config c;
  strbuf warn;
  sb_init(&warn);
  if (agent_config_load(&c, path, "ckpt", &warn, &err) == 0) {
    if (c.max_len < 1 || c.max_len > AGENT_MAX_TOKENS || c.head_max_len < 1 ||
        c.head_max_len > AGENT_MAX_TOKENS || c.head_layers < 0 || c.head_layers > AGENT_MAX_HEAD_LAYERS ||
        c.n_act < 1 || c.n_act > AGENT_MAX_ACTS)
      abort();
    if (agent_config_install_temperatures(&c, path, "ckpt", &warn, &err) == 0) {
      for (int q = 0; q < 3; q++)
        for (int k = 1; k < 14; k++) {
          double t = temp_lookup(&c.temps, q, k);
          if (!(t >= LAYA_TEMP_MIN && t <= LAYA_TEMP_MAX)) abort();
        }
    }
  }
  agent_config_free(&c);
  sb_free(&warn);
  unlink(path);
  return 0;
}
