/* metrics.h — the server's metrics and their Prometheus text exposition, under vLLM's metric names so that
 * dashboards built for vLLM work unchanged. Plain data: the engine thread owns one `metrics` and publishes copies
 * (queue.c guards the copy); formatting reads a copy. */
#ifndef FK_SERVER_METRICS_H
#define FK_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

#define METRICS_MAX_BOUNDS 24

/* Prometheus histogram: counts[i] holds observations v with bounds[i-1] < v <= bounds[i] (not cumulative);
 * counts[n_bounds] those above the last bound (+Inf). */
typedef struct metrics_histogram {
    const double *bounds; /* static, ascending */
    int n_bounds;
    uint64_t counts[METRICS_MAX_BOUNDS + 1];
    uint64_t count;
    double sum;
} metrics_histogram;

/* vLLM's finished_reason label values. */
typedef enum metrics_finish { METRICS_STOP, METRICS_LENGTH, METRICS_ABORT, METRICS_ERROR, METRICS_N_FINISH } metrics_finish;

typedef struct metrics {
    metrics_histogram ttft;       /* arrival → first token, seconds */
    metrics_histogram itl;        /* between consecutive tokens of a request */
    metrics_histogram e2e;        /* arrival → final event */
    metrics_histogram queue_time; /* arrival → first scheduled */
    uint64_t finished[METRICS_N_FINISH];
} metrics;

/* What the engine and the hand-off queue report at one moment. */
typedef struct metrics_gauges {
    fk_engine_stats engine;
    int pending; /* accepted by the server, not yet handed to the engine: counted as waiting */
} metrics_gauges;

void metrics_init(metrics *m);
void metrics_observe(metrics_histogram *h, double v);
void metrics_count_finish(metrics *m, fk_finish_reason reason);

/* The exposition text (format 0.0.4), every sample labelled model_name="<model_name>"; malloc'd, NUL-terminated,
 * *len bytes. NULL when out of memory. */
char *metrics_format(const metrics *m, const metrics_gauges *g, const char *model_name, size_t *len);

#endif
