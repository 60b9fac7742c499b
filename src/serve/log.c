/* log.c: the servers' one logger (log.h). A line is formed whole, then written with one write(2)
 * under a mutex, so lines from the HTTP threads never interleave. Text that comes from outside
 * (a request path, a client's request id, a library message) is escaped: a client cannot forge a
 * log line or break a JSON one. */
#include "serve/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "laya.h"

static char program[32] = "laya-serve";
static int min_level = SERVE_LOG_INFO;
static bool json_lines;
static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;

static const struct {
  const char *name;
  int level;
} LEVELS[] = {{"trace", SERVE_LOG_TRACE},     {"debug", SERVE_LOG_DEBUG}, {"info", SERVE_LOG_INFO},
              {"warning", SERVE_LOG_WARNING}, {"error", SERVE_LOG_ERROR}, {"critical", SERVE_LOG_CRITICAL}};

int serve_log_level_of(const char *name) {
  for (size_t i = 0; name && i < sizeof LEVELS / sizeof *LEVELS; i++)
    if (!strcmp(name, LEVELS[i].name)) return LEVELS[i].level;
  return -1;
}

static const char *level_name(int level) {
  const char *n = "info";
  for (size_t i = 0; i < sizeof LEVELS / sizeof *LEVELS; i++)
    if (level >= LEVELS[i].level) n = LEVELS[i].name;
  return n;
}

void serve_log_program(const char *name) { snprintf(program, sizeof program, "%s", name); }

static void library_message(void *user, const char *message) {
  (void)user;
  serve_log(SERVE_LOG_WARNING, "%s", message);
}

void serve_log_setup(const char *level, const char *format) {
  int l = serve_log_level_of(level);
  if (l >= 0) min_level = l;
  json_lines = format && !strcasecmp(format, "json");
  laya_set_message_handler(library_message, NULL);
}

bool serve_log_enabled(int level) { return level >= min_level; }

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (n < len) return 0;
  unsigned cp = c & (0x3F >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

/* s escaped for a JSON string (json) or a text line: quotes, backslashes and control characters
 * escaped, invalid UTF-8 replaced by U+FFFD. */
static void put_escaped(strbuf *sb, const char *str, size_t n, bool json) {
  const unsigned char *s = (const unsigned char *)str;
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (c >= 0x80) {
      size_t l = utf8_seq(s + i, n - i);
      if (l) {
        sb_append(sb, (const char *)s + i, l);
        i += l;
      } else {
        sb_puts(sb, json ? "\\ufffd" : "\xEF\xBF\xBD");
        i++;
      }
      continue;
    }
    i++;
    if (c == '"' && json) {
      sb_puts(sb, "\\\"");
    } else if (c == '\\') {
      sb_puts(sb, "\\\\");
    } else if (c == '\n') {
      sb_puts(sb, "\\n");
    } else if (c == '\r') {
      sb_puts(sb, "\\r");
    } else if (c == '\t') {
      sb_puts(sb, "\\t");
    } else if (c < 0x20 || c == 0x7F) {
      sb_printf(sb, json ? "\\u%04x" : "\\x%02x", c);
    } else {
      sb_putc(sb, (char)c);
    }
  }
}

static void put_jstr(strbuf *sb, const char *s) {
  sb_putc(sb, '"');
  put_escaped(sb, s, strlen(s), true);
  sb_putc(sb, '"');
}

static void put_time(strbuf *sb) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char buf[40];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  sb_printf(sb, "%s.%03ldZ", buf, ts.tv_nsec / 1000000);
}

static void write_line(strbuf *sb) {
  sb_putc(sb, '\n');
  if (sb->oom) return;
  pthread_mutex_lock(&write_mu);
  const char *p = sb->data;
  size_t left = sb->len;
  while (left) {
    ssize_t w = write(STDERR_FILENO, p, left);
    if (w <= 0) break;
    p += w;
    left -= (size_t)w;
  }
  pthread_mutex_unlock(&write_mu);
}

static void begin_json(strbuf *sb, int level, const char *logger) {
  sb_puts(sb, "{\"time\":\"");
  put_time(sb);
  sb_printf(sb, "\",\"level\":\"%s\",\"logger\":", level_name(level));
  put_jstr(sb, logger);
}

void serve_log(int level, const char *fmt, ...) {
  if (level < min_level) return;
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
  strbuf sb;
  sb_init(&sb);
  if (json_lines) {
    begin_json(&sb, level, program);
    sb_puts(&sb, ",\"message\":");
    put_jstr(&sb, msg);
    sb_putc(&sb, '}');
  } else {
    sb_puts(&sb, program);
    sb_puts(&sb, ": ");
    if (level != SERVE_LOG_INFO) {
      sb_puts(&sb, level_name(level));
      sb_puts(&sb, ": ");
    }
    put_escaped(&sb, msg, n, false);
  }
  write_line(&sb);
  sb_free(&sb);
}

void serve_log_access(const serve_access *a) {
  if (SERVE_LOG_INFO < min_level) return;
  strbuf sb;
  sb_init(&sb);
  const char *model = a->model && *a->model ? a->model : NULL;
  if (json_lines) {
    strbuf logger;
    sb_init(&logger);
    sb_printf(&logger, "%s.access", program);
    begin_json(&sb, SERVE_LOG_INFO, sb_cstr(&logger));
    sb_free(&logger);
    sb_puts(&sb, ",\"message\":\"");
    put_escaped(&sb, a->method, strlen(a->method), true);
    sb_putc(&sb, ' ');
    put_escaped(&sb, a->path, strlen(a->path), true);
    sb_printf(&sb, " %d\",\"request_id\":", a->status);
    put_jstr(&sb, a->request_id);
    sb_puts(&sb, ",\"method\":");
    put_jstr(&sb, a->method);
    sb_puts(&sb, ",\"path\":");
    put_jstr(&sb, a->path);
    sb_printf(&sb, ",\"status\":%d,\"duration_ms\":%.3f,\"bytes\":%llu,\"model\":", a->status,
              a->seconds * 1000.0, a->bytes);
    if (model)
      put_jstr(&sb, model);
    else
      sb_puts(&sb, "null");
    sb_puts(&sb, ",\"client\":");
    if (a->client)
      put_jstr(&sb, a->client);
    else
      sb_puts(&sb, "null");
    sb_putc(&sb, '}');
  } else {
    /* logfmt: key=value, values with spaces or quotes quoted */
    sb_printf(&sb, "%s: access time=", program);
    put_time(&sb);
    sb_puts(&sb, " request_id=");
    put_escaped(&sb, a->request_id, strlen(a->request_id), false);
    sb_puts(&sb, " method=");
    put_escaped(&sb, a->method, strlen(a->method), false);
    sb_puts(&sb, " path=\"");
    put_escaped(&sb, a->path, strlen(a->path), true);
    sb_printf(&sb, "\" status=%d duration_ms=%.3f bytes=%llu model=%s client=", a->status, a->seconds * 1000.0,
              a->bytes, model ? model : "-");
    if (a->client)
      put_escaped(&sb, a->client, strlen(a->client), false);
    else
      sb_putc(&sb, '-');
  }
  write_line(&sb);
  sb_free(&sb);
}

/* splitmix64 over a random seed and a counter: unique within the process, unguessable across. */
static uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static uint64_t id_seed[2];
static atomic_ullong id_counter;
static pthread_once_t id_once = PTHREAD_ONCE_INIT;

static void seed_ids(void) {
  if (getrandom(id_seed, sizeof id_seed, 0) != (ssize_t)sizeof id_seed) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    id_seed[0] = mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20));
    id_seed[1] = mix(id_seed[0] ^ (uint64_t)getpid());
  }
}

static bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.' || c == ':';
}

void serve_request_id(const char *client_value, char *out) {
  if (client_value) {
    size_t n = strlen(client_value);
    bool ok = n >= 1 && n <= SERVE_REQUEST_ID_MAX;
    for (size_t i = 0; ok && i < n; i++) ok = id_char(client_value[i]);
    if (ok) {
      memcpy(out, client_value, n + 1);
      return;
    }
  }
  pthread_once(&id_once, seed_ids);
  uint64_t k = atomic_fetch_add(&id_counter, 1);
  uint64_t a = mix(id_seed[0] ^ mix(k)), b = mix(id_seed[1] ^ mix(k ^ 0x5555555555555555ULL));
  snprintf(out, SERVE_REQUEST_ID_MAX + 1, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}
