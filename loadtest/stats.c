/* stats.c — summaries of a level's results. Throughput divides by the level's span (first connect to last byte);
 * latencies are over successful requests only; ITL pools the gaps of every successful stream. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

double stats_percentile(const double *sorted, size_t n, int p)
{
    size_t rank = ((size_t)p * n + 99) / 100; /* ceil(p n / 100), in integers: no rounding surprises */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v[n] (seconds) and fills d in milliseconds. */
static void describe(double *v, size_t n, dist *d)
{
    *d = (dist){.n = n};
    if (!n)
        return;
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    d->mean = sum / (double)n * 1e3;
    d->min = v[0] * 1e3;
    d->max = v[n - 1] * 1e3;
    d->p50 = stats_percentile(v, n, 50) * 1e3;
    d->p90 = stats_percentile(v, n, 90) * 1e3;
    d->p99 = stats_percentile(v, n, 99) * 1e3;
}

static int cmp_kind(const void *a, const void *b)
{
    const error_kind *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->name, y->name);
}

int stats_summarize(const req_result *r, size_t n, int concurrency, double rate, bool stream, level_summary *s)
{
    *s = (level_summary){.concurrency = concurrency, .rate = rate, .ttft_measured = stream};
    size_t n_itl = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].error == REQ_OK)
            n_itl += (size_t)r[i].n_itl;
    double *ttft = malloc((n + 1) * sizeof *ttft), *e2e = malloc((n + 1) * sizeof *e2e);
    double *itl = malloc((n_itl + 1) * sizeof *itl);
    s->kinds = malloc((n + 1) * sizeof *s->kinds);
    if (!ttft || !e2e || !itl || !s->kinds) {
        free(ttft);
        free(e2e);
        free(itl);
        stats_free(s);
        return -1;
    }
    size_t n_ttft = 0, n_e2e = 0;
    double first = 0, last = 0;
    n_itl = 0;
    for (size_t i = 0; i < n; i++) {
        const req_result *q = &r[i];
        if (q->error == REQ_INTERRUPTED) {
            s->interrupted++;
            continue;
        }
        s->requests++;
        if (s->requests == 1 || q->start < first)
            first = q->start;
        if (s->requests == 1 || q->start + q->e2e > last)
            last = q->start + q->e2e;
        if (q->error == REQ_CANCELLED) {
            s->cancelled++;
            continue;
        }
        if (q->error != REQ_OK) {
            s->failed++;
            char name[24];
            request_error_name(q, name, sizeof name);
            size_t k = 0;
            while (k < s->n_kinds && strcmp(s->kinds[k].name, name))
                k++;
            if (k == s->n_kinds) {
                s->kinds[k] = (error_kind){.example = q->message};
                memcpy(s->kinds[k].name, name, sizeof name);
                s->n_kinds++;
            }
            s->kinds[k].count++;
            continue;
        }
        s->ok++;
        s->prompt_tokens += q->prompt_tokens;
        s->output_tokens += q->output_tokens;
        if (q->cached_tokens > 0)
            s->cached_tokens += q->cached_tokens;
        e2e[n_e2e++] = q->e2e;
        if (q->ttft >= 0)
            ttft[n_ttft++] = q->ttft;
        if (q->n_itl)
            memcpy(itl + n_itl, q->itl, (size_t)q->n_itl * sizeof *itl);
        n_itl += (size_t)q->n_itl;
    }
    qsort(s->kinds, s->n_kinds, sizeof *s->kinds, cmp_kind);
    s->duration_s = last - first;
    if (s->duration_s > 0) {
        s->req_per_s = (double)s->ok / s->duration_s;
        s->output_tok_per_s = (double)s->output_tokens / s->duration_s;
        s->total_tok_per_s = (double)(s->prompt_tokens + s->output_tokens) / s->duration_s;
    }
    describe(e2e, n_e2e, &s->e2e);
    describe(ttft, n_ttft, &s->ttft);
    describe(itl, n_itl, &s->itl);
    free(ttft);
    free(e2e);
    free(itl);
    return 0;
}

void stats_free(level_summary *s)
{
    free(s->kinds);
    s->kinds = NULL;
    s->n_kinds = 0;
}
