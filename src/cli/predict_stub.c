/* predict_stub.c: the answering modes in a build without the inference engine.
 *
 * Routing needs no model, so the `laya` command is useful before the engine links; the modes
 * that answer questions report plainly that they are not available. predict.c replaces this
 * file's definitions once include/laya.h's laya_open and laya_predict are implemented. */
#include "cli/predict.h"

#ifndef LAYA_CLI_HAVE_ENGINE
#include "core/error.h"

cli_engine *cli_engine_new(const char *device, int max_loaded, laya_error *err) {
  (void)device;
  (void)max_loaded;
  laya_err(err, LAYA_ERR_UNSUPPORTED, "RuntimeError",
           "this build of laya.c has no inference engine; only routing is available");
  return NULL;
}

void cli_engine_free(cli_engine *e) { (void)e; }
void cli_engine_set_load_options(cli_engine *e, const cli_overrides *ov) { (void)e, (void)ov; }

int cli_engine_answer_item(cli_engine *e, cli_call call, const cli_item *item, const json_value *questions,
                      const cli_overrides *ov, char **result, laya_error *err) {
  (void)e, (void)call, (void)item, (void)questions, (void)ov, (void)result;
  return laya_err(err, LAYA_ERR_UNSUPPORTED, "RuntimeError", "no inference engine");
}

int cli_engine_answer_items(cli_engine *e, cli_call call, const cli_item *items, size_t n,
                            const json_value *questions, const cli_overrides *ov, char **results,
                            laya_error *err) {
  (void)e, (void)call, (void)items, (void)n, (void)questions, (void)ov, (void)results;
  return laya_err(err, LAYA_ERR_UNSUPPORTED, "RuntimeError", "no inference engine");
}
#else
typedef int predict_stub_unused; /* predict.c provides the engine-backed definitions */
#endif
