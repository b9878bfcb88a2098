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
    int *concurrency;      /* [n_concurrency]: one per level, in the order given, or one for every level */
    int n_concurrency;
    double *rates;         /* [n_rates] open loop (Poisson arrivals per second): one per level, or one for every
                            * level; none: closed loop */
    int n_rates;
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

/* The run's levels: as many as the longer of --concurrency and --rate (the other has one value, or as many). */
int options_levels(const options *o);
/* Level `level`'s clients, its arrival rate (0: closed loop) and the requests to send (0 with --duration). */
int options_concurrency(const options *o, int level);
double options_rate(const options *o, int level);
long long options_requests(const options *o, int level);
/* The largest --concurrency value. */
int options_max_concurrency(const options *o);

/* 0, or -1 with a message for the user in err (a usage error). */
int options_parse(int argc, char **argv, options *o, char *err, size_t err_len);
void options_free(options *o);
void options_usage(FILE *f);

#endif
