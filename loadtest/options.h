/* options.h — flashkernel-loadtest's command line: parsed and checked before anything is sent. */
#ifndef FK_LOADTEST_OPTIONS_H
#define FK_LOADTEST_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "request.h"

enum { OPTIONS_MAX_CONCURRENCY = 4096 };

typedef struct options {
    const char *url;
    endpoint ep;
    int *concurrency;      /* [n_concurrency] levels, in the order given */
    int n_concurrency;
    double rate;           /* > 0: open loop (Poisson arrivals per second) */
    long long *requests;   /* [n_requests]: one count for every level, or one per level; none: the default */
    int n_requests;
    double duration_s;     /* > 0: seconds of sending per level */
    int prompt_len;        /* random prompts: token ids each */
    const char *prompts_file;
    int max_tokens;
    bool ignore_eos, stream;
    double cancel_rate;    /* > 0: fraction of streams abandoned mid-way */
    uint64_t seed;
    bool seed_given;
    const char *json_out;
    double timeout_s;      /* per request */
    int vocab;             /* 0: ask the server */
    bool help;
} options;

/* Requests to send at level `level` (an index into concurrency); 0 with --duration. */
long long options_requests(const options *o, int level);

/* 0, or -1 with a message for the user in err (a usage error). */
int options_parse(int argc, char **argv, options *o, char *err, size_t err_len);
void options_free(options *o);
void options_usage(FILE *f);

#endif
