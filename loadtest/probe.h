/* probe.h — what the load tester asks the server before a run: the served model (GET /v1/models) and, for random
 * prompts, the vocabulary size (POST /detokenize). */
#ifndef FK_LOADTEST_PROBE_H
#define FK_LOADTEST_PROBE_H

#include <stddef.h>

#include "http.h"

typedef enum probe_status {
    PROBE_OK = 0,
    PROBE_UNAVAILABLE, /* the server answered, but not what was asked for (a 404, unexpected JSON) */
    PROBE_UNREACHABLE, /* no answer: connection refused, timeout, dropped */
} probe_status;

/* The first model of /v1/models: its id (malloc'd), max_model_len (-1 when not given; llama-server's meta.n_ctx,
 * a slot's context) and the vocabulary size where it is given (llama-server's meta.n_vocab; else 0). */
probe_status probe_model(const http_target *t, const http_limits *lim, char **model, int *max_model_len,
                         int *vocab, char *err, size_t err_len);

/* The vocabulary size: the smallest token id that /detokenize refuses with 400 (API: ids outside [0, vocab) are
 * 400), found by doubling then bisecting, about 2 log2(vocab) requests. */
probe_status probe_vocab(const http_target *t, const http_limits *lim, int *vocab, char *err, size_t err_len);

#endif
