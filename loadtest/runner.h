/* runner.h — one concurrency level: `concurrency` client threads, each sending its next request when its last one
 * finishes (closed loop), or taking Poisson arrival times at `rate` per second (open loop: an arrival waits while
 * every client is busy, so concurrency caps what is in flight). Stops after `requests` requests or `duration_s`
 * seconds, or when *stop is set (SIGINT). */
#ifndef FK_LOADTEST_RUNNER_H
#define FK_LOADTEST_RUNNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prompts.h"
#include "request.h"

typedef struct runner_config {
    const request_config *rq;
    const prompts *prompts;
    int concurrency;
    double rate;          /* > 0: open loop */
    long long requests;   /* > 0: this many requests */
    double duration_s;    /* > 0: new requests for this long */
    uint64_t seed;        /* arrival times */
    unsigned level;       /* index of the level in the run: prompts and arrivals differ per level */
    const atomic_int *stop;
    int stop_fd;          /* readable once *stop is set */
    bool progress_tty;    /* progress line: redrawn each second with '\r' on a terminal, else a line every 10 s */
} runner_config;

/* A level's results, in finishing order. */
typedef struct level_results {
    req_result *r;
    size_t n, cap;
} level_results;

/* Runs the level. 0, or -1 with the reason in err (threads could not start, out of memory); results gathered
 * so far are in out either way (free with runner_results_free). */
int runner_run(const runner_config *c, level_results *out, char *err, size_t err_len);
void runner_results_free(level_results *out);

#endif
