/* metrics.c — counters and histograms of the server, and their Prometheus text exposition (format 0.0.4) under
 * vLLM's names and bucket bounds. */
#include "metrics.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* vLLM's bucket bounds (vllm/v1/metrics/loggers.py). */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,   0.25,  0.5,   0.75,
                                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double itl_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double request_bounds[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                        30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

void metrics_init(metrics *m)
{
    memset(m, 0, sizeof *m);
    m->ttft = (metrics_histogram){.bounds = ttft_bounds, .n_bounds = COUNT(ttft_bounds)};
    m->itl = (metrics_histogram){.bounds = itl_bounds, .n_bounds = COUNT(itl_bounds)};
    m->e2e = (metrics_histogram){.bounds = request_bounds, .n_bounds = COUNT(request_bounds)};
    m->queue_time = (metrics_histogram){.bounds = request_bounds, .n_bounds = COUNT(request_bounds)};
}

void metrics_observe(metrics_histogram *h, double v)
{
    int i = 0;
    while (i < h->n_bounds && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

void metrics_count_finish(metrics *m, fk_finish_reason reason)
{
    switch (reason) {
    case FK_FINISH_EOS:
    case FK_FINISH_STOP: m->finished[METRICS_STOP]++; break;
    case FK_FINISH_LENGTH: m->finished[METRICS_LENGTH]++; break;
    case FK_FINISH_CANCEL: m->finished[METRICS_ABORT]++; break;
    default: m->finished[METRICS_ERROR]++; break;
    }
}

/* A growing text buffer; on allocation failure it stays failed and printing becomes a no-op. */
typedef struct text {
    char *s;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    if (!t->s && !t->failed && !(t->s = malloc(t->cap = 8192)))
        t->failed = true;
    for (;;) {
        if (t->failed)
            return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = 2 * (t->cap + (size_t)n);
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->s = grown, t->cap = cap;
    }
}

/* The label value with \, " and newline escaped, as the exposition format requires. */
static void escape_label(const char *v, char *out, size_t cap)
{
    size_t n = 0;
    for (; *v && n + 3 < cap; v++) {
        if (*v == '\\' || *v == '"')
            out[n++] = '\\', out[n++] = *v;
        else if (*v == '\n')
            out[n++] = '\\', out[n++] = 'n';
        else
            out[n++] = *v;
    }
    out[n] = '\0';
}

static void header(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(text *t, const char *label, const char *name, const char *help, double v)
{
    header(t, name, "gauge", help);
    put(t, "%s{%s} %.9g\n", name, label, v);
}

static void counter(text *t, const char *label, const char *name, const char *help, uint64_t v)
{
    header(t, name, "counter", help);
    put(t, "%s{%s} %llu\n", name, label, (unsigned long long)v);
}

static void histogram(text *t, const char *label, const char *name, const char *help, const metrics_histogram *h)
{
    header(t, name, "histogram", help);
    uint64_t cumulative = 0;
    for (int i = 0; i < h->n_bounds; i++) {
        cumulative += h->counts[i];
        put(t, "%s_bucket{%s,le=\"%.12g\"} %llu\n", name, label, h->bounds[i], (unsigned long long)cumulative);
    }
    put(t, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, label, (unsigned long long)h->count);
    put(t, "%s_sum{%s} %.17g\n", name, label, h->sum);
    put(t, "%s_count{%s} %llu\n", name, label, (unsigned long long)h->count);
}

char *metrics_format(const metrics *m, const metrics_gauges *g, const char *model_name, size_t *len)
{
    char escaped[1024], label[1100];
    escape_label(model_name, escaped, sizeof escaped);
    snprintf(label, sizeof label, "model_name=\"%s\"", escaped);
    const fk_engine_stats *e = &g->engine;
    text t = {0};
    gauge(&t, label, "vllm:num_requests_running", "Requests in the running batch.", e->running);
    gauge(&t, label, "vllm:num_requests_waiting", "Requests waiting to be scheduled.", e->waiting + g->pending);
    gauge(&t, label, "vllm:kv_cache_usage_perc", "Fraction of KV cache blocks in use (1 = all).",
          e->blocks_total ? (double)e->blocks_used / e->blocks_total : 0.0);
    counter(&t, label, "vllm:prompt_tokens_total", "Prompt tokens of submitted requests.", e->prompt_tokens);
    counter(&t, label, "vllm:generation_tokens_total", "Generated tokens.", e->generation_tokens);
    counter(&t, label, "vllm:num_preemptions_total", "Preemptions (a request's KV blocks freed for recompute).",
            e->preemptions);
    counter(&t, label, "vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
            e->prefix_query_tokens);
    counter(&t, label, "vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
            e->prefix_hit_tokens);
    static const char *const reasons[METRICS_N_FINISH] = {"stop", "length", "abort", "error"};
    header(&t, "vllm:request_success_total", "counter", "Finished requests by finish reason.");
    for (int i = 0; i < METRICS_N_FINISH; i++)
        put(&t, "vllm:request_success_total{%s,finished_reason=\"%s\"} %llu\n", label, reasons[i],
            (unsigned long long)m->finished[i]);
    histogram(&t, label, "vllm:time_to_first_token_seconds", "Time from arrival to the first token.", &m->ttft);
    histogram(&t, label, "vllm:inter_token_latency_seconds", "Time between consecutive tokens of a request.",
              &m->itl);
    histogram(&t, label, "vllm:e2e_request_latency_seconds", "Time from arrival to the last token.", &m->e2e);
    histogram(&t, label, "vllm:request_queue_time_seconds", "Time from arrival to first being scheduled.",
              &m->queue_time);
    header(&t, "flashkernel_kv_blocks", "gauge", "KV cache blocks by state (used + cached + free = total).");
    put(&t, "flashkernel_kv_blocks{%s,state=\"used\"} %d\n", label, e->blocks_used);
    put(&t, "flashkernel_kv_blocks{%s,state=\"cached\"} %d\n", label, e->blocks_cached);
    put(&t, "flashkernel_kv_blocks{%s,state=\"free\"} %d\n", label, e->blocks_free);
    /* Engine steps and the device launches the host issued for them (backend ops and graph replays), by kind of
     * step: "decode" (one token per sequence) and "prefill" (steps with prefill chunks). */
    const struct {
        const char *kind;
        uint64_t steps, launches;
    } kinds[] = {{"decode", e->decode_steps, e->decode_launches}, {"prefill", e->prefill_steps, e->prefill_launches}};
    header(&t, "flashkernel_engine_steps_total", "counter", "Engine steps by kind (decode, or with prefill chunks).");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        put(&t, "flashkernel_engine_steps_total{%s,kind=\"%s\"} %llu\n", label, kinds[i].kind,
            (unsigned long long)kinds[i].steps);
    header(&t, "flashkernel_device_launches_total", "counter",
           "Device launches the host issued (backend ops and graph replays) by kind of step.");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        put(&t, "flashkernel_device_launches_total{%s,kind=\"%s\"} %llu\n", label, kinds[i].kind,
            (unsigned long long)kinds[i].launches);
    gauge(&t, label, "flashkernel_engine_failed", "1 once the engine has failed (device error).", e->failed);
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    *len = t.len;
    return t.s;
}
