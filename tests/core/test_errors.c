/* Errors and invariants: an error records where laya.c made it (file and line, outside the
 * message), laya_err_clear forgets it, a library call's error points into src/; LAYA_ASSERT
 * aborts on a false invariant when asserts are on (Debug and sanitizer builds) and evaluates
 * nothing when they are off (Release). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "core/assert.h"
#include "core/error.h"
#include "laya.h"

static int evaluated;
static int touch(void) {
  evaluated++;
  return 0;
}

int main(void) {
  laya_error e;
  laya_err_clear(&e);
  char where[256];
  CHECK_STREQ(laya_error_origin(&e, where, sizeof where), "");
  int line = __LINE__ + 1;
  CHECK(laya_value_error(&e, "bad value %d", 3) == LAYA_ERR_VALUE);
  CHECK_STREQ(e.message, "bad value 3"); /* the message is only the message */
  CHECK_STREQ(e.kind, "ValueError");
  CHECK(e.file != NULL && e.line == line);
  char want[64];
  snprintf(want, sizeof want, "test_errors.c:%d", line);
  laya_error_origin(&e, where, sizeof where);
  CHECK(strstr(where, want) != NULL);
  laya_err_clear(&e);
  CHECK(e.file == NULL && e.line == 0);

  /* a library call's error: made in src/, named by its path from src/ */
  laya_model *m = laya_open("/nonexistent/laya-checkpoint", NULL, &e);
  CHECK(m == NULL && e.code != LAYA_OK);
  laya_error_origin(&e, where, sizeof where);
  CHECK(strncmp(where, "src/", 4) == 0 && strstr(where, ".c:") != NULL);
  CHECK(strstr(e.message, "src/") == NULL && strstr(e.message, ".c:") == NULL);
  /* a small buffer is cut, never overrun */
  char tiny[6];
  laya_error_origin(&e, tiny, sizeof tiny);
  CHECK(strlen(tiny) == 5 && strncmp(tiny, "src/", 4) == 0);

  /* LAYA_ASSERT */
  LAYA_ASSERT(1 + 1 == 2);
  if (LAYA_ASSERTS_ON) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      LAYA_ASSERT(touch() == 1); /* false: aborts */
      _exit(0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  } else {
    LAYA_ASSERT(touch() == 1); /* compiled out: not evaluated, no abort */
    CHECK(evaluated == 0);
    CHECK(touch() == 0 && evaluated == 1); /* a real call counts (and is touch's one evaluated use) */
  }
  return check_summary("test_errors");
}
