/* metrics.c: counters and histograms for GET /metrics, in the Prometheus text format.
 * One mutex: every update is a handful of additions, far below the cost of a request. */
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

static const double LATENCY_BUCKETS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
#define N_LAT (sizeof LATENCY_BUCKETS / sizeof *LATENCY_BUCKETS)
static const double BATCH_BUCKETS[] = {1, 2, 4, 8, 16, 32, 64, 128};
#define N_BATCH (sizeof BATCH_BUCKETS / sizeof *BATCH_BUCKETS)

#define MAX_SERIES 32

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
};

serve_metrics *serve_metrics_new(void) {
  serve_metrics *m = calloc(1, sizeof *m);
  if (m) pthread_mutex_init(&m->mu, NULL);
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

void serve_metrics_batch(serve_metrics *m, int requests, int states, double seconds) {
  if (!m) return;
  pthread_mutex_lock(&m->mu);
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
  pthread_mutex_unlock(&m->mu);
}
