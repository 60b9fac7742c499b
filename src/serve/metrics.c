/* metrics.c: counters and histograms for GET /metrics, in the Prometheus text format (0.0.4):
 * requests and latency by route, passes, and the same per checkpoint (label model); the process
 * metrics under the names the Prometheus client libraries give them (process_cpu_seconds_total,
 * process_resident_memory_bytes, process_open_fds, ...), read from /proc; laya_build_info and
 * laya_checkpoint_info. One mutex: every update is a handful of additions, far below the cost of
 * a request. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/cpu_features.h"
#include "core/options.h"
#include "model/typed.h"
#include "serve/serve.h"

static const double LATENCY_BUCKETS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
#define N_LAT (sizeof LATENCY_BUCKETS / sizeof *LATENCY_BUCKETS)
static const double BATCH_BUCKETS[] = {1, 2, 4, 8, 16, 32, 64, 128};
#define N_BATCH (sizeof BATCH_BUCKETS / sizeof *BATCH_BUCKETS)

#define MAX_SERIES 32
#define MAX_CHECKPOINTS 16
#define MAX_CKPT_SERIES 64

typedef struct ckpt_counts {
  char model[64];
  unsigned long long passes, states, tokens, pass_requests;
  double pass_seconds;
} ckpt_counts;

typedef struct ckpt_series {
  char model[64];
  int status;
  unsigned long long n;
} ckpt_series;

typedef struct histo {
  unsigned long long count[N_LAT + 1];
  double sum;
  unsigned long long n;
} histo;

typedef struct series {
  char route[32];
  int status;
  unsigned long long n;
} series;

struct serve_metrics {
  pthread_mutex_t mu;
  series req[MAX_SERIES];
  int n_req;
  histo latency[3]; /* systemone, batch, other */
  unsigned long long batch_count[N_BATCH + 1], batch_n, batch_states;
  double batch_sum, pass_seconds;
  unsigned long long passes;
  unsigned long long tokens;
  long inflight;
  ckpt_counts ck[MAX_CHECKPOINTS];
  int n_ck;
  ckpt_series ck_req[MAX_CKPT_SERIES];
  int n_ck_req;
  double started;       /* serve_now() at creation: laya_uptime_seconds */
  double start_unix;    /* the process's start (process_start_time_seconds) */
};

/* When this process started, in Unix seconds: /proc/self/stat's starttime (clock ticks after
 * boot) plus /proc/stat's btime, as the Prometheus clients compute it; now if unreadable. */
static double process_start_unix(void) {
  double now = (double)time(NULL);
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return now;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  if (!p) return now;
  unsigned long long start = 0;
  int field = 2;
  for (char *t = strtok(p + 1, " "); t; t = strtok(NULL, " "))
    if (++field == 22) {
      start = strtoull(t, NULL, 10);
      break;
    }
  f = fopen("/proc/stat", "r");
  if (!f) return now;
  unsigned long long btime = 0;
  char line[256];
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "btime %llu", &btime) == 1) break;
  fclose(f);
  long hz = sysconf(_SC_CLK_TCK);
  if (!btime || hz <= 0 || field != 22) return now;
  return (double)btime + (double)start / (double)hz;
}

serve_metrics *serve_metrics_new(void) {
  serve_metrics *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  pthread_mutex_init(&m->mu, NULL);
  m->started = serve_now();
  m->start_unix = process_start_unix();
  return m;
}

void serve_metrics_free(serve_metrics *m) {
  if (!m) return;
  pthread_mutex_destroy(&m->mu);
  free(m);
}

static int route_index(const char *route) {
  if (!strcmp(route, "/v1/systemone")) return 0;
  if (!strcmp(route, "/v1/systemone/batch")) return 1;
  return 2;
}

void serve_metrics_request(serve_metrics *m, const char *route, int status, double seconds) {
  if (!m) return;
  pthread_mutex_lock(&m->mu);
  series *s = NULL;
  for (int i = 0; i < m->n_req; i++)
    if (m->req[i].status == status && !strcmp(m->req[i].route, route)) s = &m->req[i];
  if (!s && m->n_req < MAX_SERIES) {
    s = &m->req[m->n_req++];
    strncpy(s->route, route, sizeof s->route - 1);
    s->status = status;
  }
  if (s) s->n++;
  histo *h = &m->latency[route_index(route)];
  size_t b = 0;
  while (b < N_LAT && seconds > LATENCY_BUCKETS[b]) b++;
  h->count[b]++;
  h->sum += seconds;
  h->n++;
  pthread_mutex_unlock(&m->mu);
}

static ckpt_counts *ckpt_locked(serve_metrics *m, const char *model) {
  if (!model || !*model) return NULL;
  for (int i = 0; i < m->n_ck; i++)
    if (!strcmp(m->ck[i].model, model)) return &m->ck[i];
  if (m->n_ck == MAX_CHECKPOINTS) return NULL;
  ckpt_counts *c = &m->ck[m->n_ck++];
  snprintf(c->model, sizeof c->model, "%s", model);
  return c;
}

void serve_metrics_checkpoint_request(serve_metrics *m, const char *model, int status, long states, long tokens) {
  if (!m || !model || !*model) return;
  pthread_mutex_lock(&m->mu);
  ckpt_series *s = NULL;
  for (int i = 0; i < m->n_ck_req; i++)
    if (m->ck_req[i].status == status && !strcmp(m->ck_req[i].model, model)) s = &m->ck_req[i];
  if (!s && m->n_ck_req < MAX_CKPT_SERIES) {
    s = &m->ck_req[m->n_ck_req++];
    snprintf(s->model, sizeof s->model, "%s", model);
    s->status = status;
  }
  if (s) s->n++;
  ckpt_counts *c = ckpt_locked(m, model);
  if (c && status == 200) {
    c->states += states > 0 ? (unsigned long long)states : 0;
    c->tokens += tokens > 0 ? (unsigned long long)tokens : 0;
  }
  pthread_mutex_unlock(&m->mu);
}

void serve_metrics_batch(serve_metrics *m, const char *model, int requests, int states, double seconds) {
  if (!m) return;
  pthread_mutex_lock(&m->mu);
  ckpt_counts *c = ckpt_locked(m, model);
  if (c) {
    c->passes++;
    c->pass_requests += (unsigned long long)requests;
    c->pass_seconds += seconds;
  }
  size_t b = 0;
  while (b < N_BATCH && requests > BATCH_BUCKETS[b]) b++;
  m->batch_count[b]++;
  m->batch_n++;
  m->batch_sum += requests;
  m->batch_states += (unsigned long long)states;
  m->passes++;
  m->pass_seconds += seconds;
  pthread_mutex_unlock(&m->mu);
}

void serve_metrics_tokens(serve_metrics *m, long tokens) {
  if (!m || tokens <= 0) return;
  pthread_mutex_lock(&m->mu);
  m->tokens += (unsigned long long)tokens;
  pthread_mutex_unlock(&m->mu);
}

void serve_metrics_inflight(serve_metrics *m, int delta) {
  if (!m) return;
  pthread_mutex_lock(&m->mu);
  m->inflight += delta;
  pthread_mutex_unlock(&m->mu);
}

/* A label value in quotes, with the format's three escapes. */
static void label_value(strbuf *sb, const char *s) {
  sb_putc(sb, '"');
  for (; *s; s++) {
    if (*s == '\\')
      sb_puts(sb, "\\\\");
    else if (*s == '"')
      sb_puts(sb, "\\\"");
    else if (*s == '\n')
      sb_puts(sb, "\\n");
    else
      sb_putc(sb, *s);
  }
  sb_putc(sb, '"');
}

static void render_histo(strbuf *sb, const char *name, const char *label, const histo *h,
                         const double *buckets, size_t nb) {
  unsigned long long cum = 0;
  for (size_t i = 0; i < nb; i++) {
    cum += h->count[i];
    sb_printf(sb, "%s_bucket{%s,le=\"%g\"} %llu\n", name, label, buckets[i], cum);
  }
  cum += h->count[nb];
  sb_printf(sb, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, label, cum);
  sb_printf(sb, "%s_sum{%s} %.6f\n", name, label, h->sum);
  sb_printf(sb, "%s_count{%s} %llu\n", name, label, h->n);
}

void serve_metrics_render(serve_metrics *m, size_t queue_depth, strbuf *sb) {
  pthread_mutex_lock(&m->mu);
  sb_puts(sb, "# HELP laya_requests_total HTTP requests answered, by route and status.\n"
              "# TYPE laya_requests_total counter\n");
  for (int i = 0; i < m->n_req; i++)
    sb_printf(sb, "laya_requests_total{route=\"%s\",status=\"%d\"} %llu\n", m->req[i].route,
              m->req[i].status, m->req[i].n);
  sb_puts(sb, "# HELP laya_request_duration_seconds Time from request head to response, by route.\n"
              "# TYPE laya_request_duration_seconds histogram\n");
  static const char *const routes[] = {"route=\"/v1/systemone\"", "route=\"/v1/systemone/batch\"",
                                       "route=\"other\""};
  for (int r = 0; r < 3; r++) {
    strbuf lab;
    sb_init(&lab);
    sb_puts(&lab, routes[r]);
    render_histo(sb, "laya_request_duration_seconds", sb_cstr(&lab), &m->latency[r], LATENCY_BUCKETS, N_LAT);
    sb_free(&lab);
  }
  sb_puts(sb, "# HELP laya_batch_requests Requests packed into one forward pass.\n"
              "# TYPE laya_batch_requests histogram\n");
  unsigned long long cum = 0;
  for (size_t i = 0; i < N_BATCH; i++) {
    cum += m->batch_count[i];
    sb_printf(sb, "laya_batch_requests_bucket{le=\"%g\"} %llu\n", BATCH_BUCKETS[i], cum);
  }
  cum += m->batch_count[N_BATCH];
  sb_printf(sb, "laya_batch_requests_bucket{le=\"+Inf\"} %llu\n", cum);
  sb_printf(sb, "laya_batch_requests_sum %.0f\nlaya_batch_requests_count %llu\n", m->batch_sum, m->batch_n);
  sb_printf(sb, "# HELP laya_batch_states_total States answered by forward passes.\n"
                "# TYPE laya_batch_states_total counter\nlaya_batch_states_total %llu\n",
            m->batch_states);
  sb_printf(sb, "# HELP laya_forward_seconds_total Time spent in forward passes.\n"
                "# TYPE laya_forward_seconds_total counter\nlaya_forward_seconds_total %.6f\n",
            m->pass_seconds);
  sb_printf(sb, "# HELP laya_input_tokens_total Input tokens (usage.input_tokens) answered.\n"
                "# TYPE laya_input_tokens_total counter\nlaya_input_tokens_total %llu\n",
            m->tokens);
  sb_printf(sb, "# HELP laya_queue_depth Requests waiting for a forward pass.\n"
                "# TYPE laya_queue_depth gauge\nlaya_queue_depth %zu\n",
            queue_depth);
  sb_printf(sb, "# HELP laya_inflight_requests Decision requests admitted and not yet answered.\n"
                "# TYPE laya_inflight_requests gauge\nlaya_inflight_requests %ld\n",
            m->inflight);
  /* per checkpoint */
  sb_puts(sb, "# HELP laya_checkpoint_requests_total Decision requests a checkpoint answered, by status.\n"
              "# TYPE laya_checkpoint_requests_total counter\n");
  for (int i = 0; i < m->n_ck_req; i++) {
    sb_puts(sb, "laya_checkpoint_requests_total{model=");
    label_value(sb, m->ck_req[i].model);
    sb_printf(sb, ",status=\"%d\"} %llu\n", m->ck_req[i].status, m->ck_req[i].n);
  }
  static const struct {
    const char *name, *help;
  } per[] = {{"laya_checkpoint_passes_total", "Forward passes a checkpoint ran."},
             {"laya_checkpoint_pass_requests_total", "Requests answered by those passes."},
             {"laya_checkpoint_forward_seconds_total", "Time a checkpoint spent in forward passes."},
             {"laya_checkpoint_states_total", "States a checkpoint answered (rows of its answers: one per state)."},
             {"laya_checkpoint_input_tokens_total", "Input tokens (usage.input_tokens) a checkpoint answered."}};
  for (size_t k = 0; k < sizeof per / sizeof *per; k++) {
    sb_printf(sb, "# HELP %s %s\n# TYPE %s counter\n", per[k].name, per[k].help, per[k].name);
    for (int i = 0; i < m->n_ck; i++) {
      const ckpt_counts *c = &m->ck[i];
      sb_printf(sb, "%s{model=", per[k].name);
      label_value(sb, c->model);
      if (k == 0) sb_printf(sb, "} %llu\n", c->passes);
      if (k == 1) sb_printf(sb, "} %llu\n", c->pass_requests);
      if (k == 2) sb_printf(sb, "} %.6f\n", c->pass_seconds);
      if (k == 3) sb_printf(sb, "} %llu\n", c->states);
      if (k == 4) sb_printf(sb, "} %llu\n", c->tokens);
    }
  }
  pthread_mutex_unlock(&m->mu);
}

/* ---- process, build and checkpoint info ---- */

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the directory stream's own descriptor */
}

/* /proc/self/status "Threads:" */
static long count_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long n = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %ld", &n) == 1) break;
  fclose(f);
  return n;
}

/* the best SIMD level this CPU offers, as the CPU backend names its kernel tables */
static const char *cpu_level(void) {
  const cpu_features *f = cpu_features_get();
  if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq) return f->avx512_bf16 ? "avx512_bf16" : "avx512";
  if (f->avx2 && f->fma) return "avx2";
  return "generic";
}

static void info_label(strbuf *sb, const char *name, const char *value) {
  sb_printf(sb, ",%s=", name);
  label_value(sb, value ? value : "");
}

/* One loaded checkpoint's laya_checkpoint_info line (no facts: every label empty). */
static void checkpoint_info(void *user, const char *name, const model_facts *f) {
  strbuf *sb = user;
  sb_puts(sb, "laya_checkpoint_info{model=");
  label_value(sb, name);
  info_label(sb, "backend", f ? f->backend : NULL);
  info_label(sb, "device", f ? f->device : NULL);
  info_label(sb, "precision", f ? f->precision : NULL);
  info_label(sb, "cpu_isa", f ? f->cpu_isa : NULL);
  sb_puts(sb, "} 1\n");
}

void serve_metrics_render_process(serve_metrics *m, serve_models *models, strbuf *sb) {
  struct rusage ru;
  double cpu = 0;
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
          ru.ru_stime.tv_usec * 1e-6;
  long page = sysconf(_SC_PAGESIZE);
  unsigned long long vsize = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%llu %llu", &vsize, &rss) != 2) vsize = rss = 0;
    fclose(f);
  }
  struct rlimit rl;
  double max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (double)rl.rlim_cur : -1;
  sb_printf(sb, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.6f\n"
                "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %llu\n"
                "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n"
                "# HELP process_open_fds Number of open file descriptors.\n"
                "# TYPE process_open_fds gauge\nprocess_open_fds %d\n",
            cpu, rss * (unsigned long long)page, vsize * (unsigned long long)page, count_fds());
  if (max_fds >= 0)
    sb_printf(sb, "# HELP process_max_fds Maximum number of open file descriptors.\n"
                  "# TYPE process_max_fds gauge\nprocess_max_fds %.0f\n", max_fds);
  sb_printf(sb, "# HELP process_threads Number of OS threads in the process.\n"
                "# TYPE process_threads gauge\nprocess_threads %ld\n"
                "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
                "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n"
                "# HELP laya_uptime_seconds Seconds since the server started.\n"
                "# TYPE laya_uptime_seconds gauge\nlaya_uptime_seconds %.3f\n",
            count_threads(), m->start_unix, serve_now() - m->started);
  /* LAYA_PRECISION and LAYA_DEVICE as the server read them at start */
  const serve_config *cfg = models ? serve_models_config(models) : NULL;
  const char *prec = cfg ? cfg->env.precision : NULL;
  sb_puts(sb, "# HELP laya_build_info This build: version, the Laya version it answers like, the precision "
              "checkpoints open with (LAYA_PRECISION, or default), where they run (LAYA_DEVICE), the CPU's "
              "widest SIMD level.\n"
              "# TYPE laya_build_info gauge\nlaya_build_info{version=");
  label_value(sb, LAYA_VERSION);
  sb_puts(sb, ",compat_version=");
  label_value(sb, LAYA_COMPAT_VERSION);
  sb_puts(sb, ",precision=");
  label_value(sb, prec && *prec ? prec : "default");
  sb_puts(sb, ",backend=");
  label_value(sb, laya_device_uses_cuda(cfg ? cfg->device : NULL) == 1 ? "cuda" : "cpu");
  sb_puts(sb, ",cpu_simd=");
  label_value(sb, cpu_level());
  sb_puts(sb, "} 1\n");
  if (!models) return;
  sb_puts(sb, "# HELP laya_checkpoint_info A loaded checkpoint: its backend, device, precision and CPU kernel table.\n"
              "# TYPE laya_checkpoint_info gauge\n");
  unsigned loaded = serve_models_each_facts(models, checkpoint_info, sb);
  sb_printf(sb, "# HELP laya_checkpoints_loaded Checkpoints loaded now.\n"
                "# TYPE laya_checkpoints_loaded gauge\nlaya_checkpoints_loaded %u\n",
            loaded);
}
