/* The public API on the tiny fixture checkpoint: load errors in Laya's words, SHA-256 pins,
 * model info (raw and applied temperatures, the clamp warning), request binding TypeErrors,
 * empty inputs, tokenize, warmup, and predict == predict_batch([state])[0]. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "backend/backend.h"
#include "core/sha256.h"
#include "laya.h"

static void has(const char *hay, const char *needle) {
  bool ok = hay && strstr(hay, needle) != NULL;
  CHECK(ok);
  if (!ok) fprintf(stderr, "  in:    %.400s\n  lacks: %s\n", hay ? hay : "(null)", needle);
}

/* A checkpoint whose tokenizer_config.json names no mask_token is refused at load, naming the
 * file and the token (Laya's sequences need CLS, SEP, MASK and PAD). */
static void no_mask_token(const char *ck, const laya_options *o) {
  char dir[] = "/tmp/laya_api_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "cp -r '%s/.' '%s/' && python3 -c \"import json,sys; p=sys.argv[1]; d=json.load(open(p)); "
           "d.pop('mask_token'); json.dump(d, open(p, 'w'))\" '%s/tokenizer/tokenizer_config.json'",
           ck, dir, dir);
  CHECK(system(cmd) == 0);
  laya_options oo = *o;
  oo.sha256_json = NULL;
  laya_error err;
  CHECK(laya_open(dir, &oo, &err) == NULL);
  char want[4200];
  snprintf(want, sizeof want, "%s/tokenizer/tokenizer_config.json: the tokenizer has no mask_token", dir);
  has(err.message, want);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}

/* Device strings as torch.device reads them (refused otherwise, naming the string), and Laya's two
 * fallbacks to the CPU: no CUDA at all, or an ordinal past the visible devices. */
static void device_choice(const char *ck, const laya_options *base) {
  laya_options o = *base;
  o.sha256_json = NULL;
  o.calibration_path = NULL;
  laya_error err;
  const char *bad[] = {"gpu", "CPU", "cuda:", "cuda:x", "cuda:1x", "cuda:-1", "cuda:1234567", " cuda"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    o.device = bad[i];
    CHECK(laya_open(ck, &o, &err) == NULL);
    char want[128];
    snprintf(want, sizeof want, "device must be cpu, cuda, cuda:N or auto, got '%s'", bad[i]);
    CHECK_STREQ(err.message, want);
  }
  int n = 0;
  const bool gpu = backend_cuda_available(&n);
  /* where each would run, without opening anything */
  CHECK(laya_device_uses_cuda("gpu") == -1 && laya_device_uses_cuda("cuda:x") == -1);
  CHECK(laya_device_uses_cuda("cpu") == 0);
  CHECK(laya_device_uses_cuda("auto") == gpu && laya_device_uses_cuda("cuda") == gpu);
  CHECK(laya_device_uses_cuda("cuda:7") == (n > 7));
  unsetenv("LAYA_DEVICE");
  CHECK(laya_device_uses_cuda(NULL) == 0);
  setenv("LAYA_DEVICE", "auto", 1);
  CHECK(laya_device_uses_cuda(NULL) == gpu);
  unsetenv("LAYA_DEVICE");
  o.device = "cuda:7";
  laya_model *m = laya_open(ck, &o, &err);
  CHECK(m != NULL);
  if (m && !gpu) {
    has(laya_model_info(m), "\"device\": \"cpu\"");
    has(laya_model_info(m), "Warning: CUDA requested but not available. Falling back to CPU.");
  } else if (m && n <= 7) {
    char want[128];
    snprintf(want, sizeof want, "Warning: CUDA device cuda:7 not found (%d visible). Falling back to CPU.", n);
    has(laya_model_info(m), "\"device\": \"cpu\"");
    has(laya_model_info(m), want);
  }
  if (m) laya_close(m);
  o.device = "auto"; /* no warning either way: the CPU when there is no GPU */
  m = laya_open(ck, &o, &err);
  CHECK(m != NULL);
  if (m) {
    has(laya_model_info(m), gpu ? "\"device\": \"cuda:0\"" : "\"device\": \"cpu\"");
    CHECK(strstr(laya_model_info(m), "Falling back") == NULL);
    laya_close(m);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *ck = argv[1];
  setenv("LAYA_BACKEND", "cpu-ref", 1);
  laya_error err;
  laya_options o;
  laya_options_init(&o);
  o.quiet = 1;
  CHECK(laya_open("./no/such/dir", &o, &err) == NULL);
  CHECK_STREQ(err.kind, "FileNotFoundError");
  CHECK_STREQ(err.message, "Local model path not found: './no/such/dir'. Check that the directory exists "
                           "and that training saved the model successfully.");
  char enc[4096];
  snprintf(enc, sizeof enc, "%s/encoder", ck);
  CHECK(laya_open(enc, &o, &err) == NULL);
  has(err.message, "does not contain 'rl_agent_config.json'");
  /* a wrong pin refuses the load before anything is parsed; the right one loads */
  o.sha256_json = "{\"rl_agent_config.json\": \"0000\"}";
  CHECK(laya_open(ck, &o, &err) == NULL);
  has(err.message, "laya: SHA-256 mismatch for rl_agent_config.json: expected 0000, got ");
  char path[4096], hex[65], pin[256];
  snprintf(path, sizeof path, "%s/rl_agent_config.json", ck);
  CHECK(sha256_file_hex(path, hex) == 0);
  snprintf(pin, sizeof pin, "{\"rl_agent_config.json\": \"%s\"}", hex);
  o.sha256_json = pin;
  laya_model *m = laya_open(ck, &o, &err);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "open: %s\n", err.message);
    return check_summary("model/api");
  }
  const char *info = laya_model_info(m);
  has(info, "\"choice:11+\": 0.5");
  has(info, "\"choice:11+\": 0.10058280825614929");
  has(info, "using choice:11+=0.10058280825614929 -> 0.5.");
  has(info, "\"backend\": \"cpu-ref\"");

  char *out = NULL;
  CHECK(laya_predict(m, "{\"state\": \"x\", \"questions\": {}, \"foo\": 1}", &out, &err) == LAYA_ERR_TYPE);
  CHECK_STREQ(err.message, "Agent.system_one() got an unexpected keyword argument 'foo'");
  CHECK(laya_predict_batch(m, "{\"states\": []}", &out, &err) == LAYA_ERR_TYPE);
  CHECK_STREQ(err.message, "Agent.predict_batch() missing 1 required positional argument: 'questions'");
  CHECK(laya_predict(m, "{}", &out, &err) == LAYA_ERR_TYPE);
  CHECK_STREQ(err.message, "Agent.system_one() missing 2 required positional arguments: 'state' and 'questions'");
  CHECK(laya_predict(m, "{\"state\": \"x\", \"questions\": {}, \"max_len\": 1.5}", &out, &err) == 0);
  laya_free(out); /* no questions: nothing is sliced, Laya returns before using max_len */
  CHECK(laya_predict(m, "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"noul\", \"instructions\": \"y\"}}, "
                        "\"max_len\": 1.5}", &out, &err) == LAYA_ERR_TYPE);
  CHECK_STREQ(err.message, "slice indices must be integers or None or have an __index__ method");
  CHECK(laya_predict(m, "{\"state\": \"x\",", &out, &err) == LAYA_ERR_FORMAT);
  has(err.message, "invalid JSON at byte");
  CHECK(laya_predict_batch(m, "{\"states\": [], \"questions\": {\"q\": 1}}", &out, &err) == 0);
  CHECK_STREQ(out, "[]");
  laya_free(out);
  CHECK(laya_predict_batch(m, "{\"states\": [\"a\", {\"b\": 1}], \"questions\": {}}", &out, &err) == 0);
  CHECK_STREQ(out, "[{\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": {\"input_tokens\": 0, \"output_tokens\": 0}}, "
                   "{\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": {\"input_tokens\": 0, \"output_tokens\": 0}}]");
  laya_free(out);

  const char *q = "\"questions\": {\"n\": {\"type\": \"noul\", \"instructions\": \"Is it urgent?\"}, "
                  "\"c\": {\"type\": \"choice\", \"instructions\": \"Team?\", \"criteria\": [\"billing\", \"tech\"]}}";
  char req[1024], breq[1024];
  snprintf(req, sizeof req, "{\"state\": [\"first turn\", \"second turn\"], %s, \"min_confidence\": 0.9}", q);
  snprintf(breq, sizeof breq, "{\"states\": [\"other\", [\"first turn\", \"second turn\"]], %s, \"min_confidence\": 0.9, \"batch_size\": 1}", q);
  char *one = NULL, *many = NULL;
  CHECK(laya_predict(m, req, &one, &err) == 0);
  CHECK(laya_predict_batch(m, breq, &many, &err) == 0);
  if (one && many) {
    const char *second = strstr(many, "}}, {\"model\"");
    CHECK(second != NULL);
    if (second) {
      size_t l = strlen(one);
      CHECK(strncmp(second + 4, one, l) == 0 && strcmp(second + 4 + l, "]") == 0);
    }
    has(one, "\"abstention_threshold\": 0.9");
    has(one, "\"truncated_questions\": []");
  }
  laya_free(one);
  laya_free(many);

  char *ids = NULL;
  CHECK(laya_tokenize(m, "hello world", 11, &ids, &err) == 0);
  CHECK(ids && ids[0] == '[' && ids[strlen(ids) - 1] == ']');
  laya_free(ids);
  CHECK(laya_warmup(m) >= 0.0);
  laya_close(m);

  /* a calibration file replaces the checkpoint's temperatures, clamped, with its own warning */
  char cal[] = "/tmp/laya_cal_XXXXXX";
  int fd = mkstemp(cal);
  CHECK(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("{\"version\": 2, \"temperature\": [2.0, 0.1, 1], \"temperature_by_options\": {\"noul:2\": 3.0}}", f);
  fclose(f);
  o.sha256_json = NULL;
  o.calibration_path = cal;
  m = laya_open(ck, &o, &err);
  CHECK(m != NULL);
  if (m) {
    info = laya_model_info(m);
    has(info, "\"temperature\": [2.0, 0.5, 1.0], \"temperature_by_options\": {\"noul:2\": 3.0}");
    has(info, "laya: calibration temperatures are invalid or outside [0.5, 5]; using temperature[1]=0.1 -> 0.5.");
    laya_close(m);
  }
  f = fopen(cal, "w");
  fputs("{\"temperature\": [1, 2]}", f);
  fclose(f);
  CHECK(laya_open(ck, &o, &err) == NULL);
  CHECK_STREQ(err.message, "calibration JSON must contain temperature: [3 floats]");
  unlink(cal);
  no_mask_token(ck, &o);
  device_choice(ck, &o);
  return check_summary("model/api");
}
