/* stats.h — a concurrency level's summary: throughput, latency percentiles, errors by kind.
 *
 * Percentiles are nearest-rank: the p-th percentile of n samples is the smallest sample x such that at least p% of
 * the samples are <= x, i.e. sorted[ceil(p * n / 100) - 1]. It is always one of the measured values. */
#ifndef FK_LOADTEST_STATS_H
#define FK_LOADTEST_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "request.h"

/* Nearest-rank percentile p in [1, 100] of sorted[n], n >= 1. */
double stats_percentile(const double *sorted, size_t n, int p);

/* A latency distribution in milliseconds; n == 0 when nothing was measured (then the rest is 0). */
typedef struct dist {
    size_t n;
    double mean, min, max, p50, p90, p99;
} dist;

/* Failed requests of one kind: its name ("http_429", "timeout", ...), how many, and one message as an example. */
typedef struct error_kind {
    char name[24];
    size_t count;
    const char *example; /* points into a req_result's message */
} error_kind;

typedef struct level_summary {
    int concurrency;
    double rate;               /* open loop: arrivals per second; 0: closed loop */
    size_t requests;           /* finished: ok, failed or cancelled (interrupted ones are not counted) */
    size_t ok, failed;
    size_t cancelled;          /* streams abandoned on purpose (--cancel-rate) */
    size_t interrupted;        /* cut short by SIGINT */
    double duration_s;         /* first connect to the end of the last response */
    long long prompt_tokens, output_tokens, cached_tokens; /* sums over successful requests */
    double req_per_s, output_tok_per_s, total_tok_per_s;  /* successful requests and their tokens per second */
    bool ttft_measured;        /* streamed: TTFT and ITL exist */
    dist ttft, itl, e2e;
    error_kind *kinds;         /* [n_kinds], most frequent first */
    size_t n_kinds;
} level_summary;

/* Summarizes r[n] (a level's results, in any order). 0, or -1 when memory runs out. */
int stats_summarize(const req_result *r, size_t n, int concurrency, double rate, bool stream, level_summary *s);
void stats_free(level_summary *s);

#endif
