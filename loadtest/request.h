/* request.h — one generation request and what it measured: the body (prompt + the run's fields), the exchange,
 * the stream's token events (TTFT, inter-token gaps), usage, and how it failed if it did. */
#ifndef FK_LOADTEST_REQUEST_H
#define FK_LOADTEST_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "http.h"
#include "prompts.h"

/* The APIs a request can speak: FlashKernel's native POST /generate, OpenAI's POST /v1/completions, and llama.cpp
 * server's native POST /completion (so that llama-server is driven by the same tool both ways). */
typedef enum endpoint { ENDPOINT_GENERATE, ENDPOINT_COMPLETIONS, ENDPOINT_LLAMA } endpoint;

/* "generate", "completions", "llama": the --endpoint value; and the path requests go to ("/generate", ...). */
const char *endpoint_name(endpoint ep);
const char *endpoint_path(endpoint ep);
/* The endpoint named s (as endpoint_name spells it); false when none is. */
bool endpoint_parse(const char *s, endpoint *ep);

/* How a request ended. */
typedef enum req_error {
    REQ_OK = 0,
    REQ_HTTP_STATUS,    /* the server answered a status other than 200 (429, 503, 400, 500, ...) */
    REQ_REFUSED,        /* connection refused */
    REQ_CONNECT,        /* connecting failed otherwise */
    REQ_TIMEOUT,        /* --timeout passed */
    REQ_DROPPED,        /* the connection closed or reset before the response was complete */
    REQ_BAD_RESPONSE,   /* not HTTP, not JSON, no usage, a stream without its end ([DONE]; llama: "stop": true) */
    REQ_STREAM_ERROR,   /* the server reported an error inside a 200 response (an SSE error event) */
    REQ_COUNT_MISMATCH, /* streamed token events (or /generate's "tokens") differ from usage.completion_tokens */
    REQ_INTERRUPTED,    /* cut short by SIGINT after the grace period: not the server's fault */
    REQ_CLIENT,         /* the load tester's own failure (out of memory, out of sockets) */
    REQ_CANCELLED,      /* abandoned mid-stream on purpose (--cancel-rate): not an error */
} req_error;

typedef struct req_result {
    double start;         /* s from the level's start to the request's connect */
    double ttft;          /* s from connect to the first token event; < 0 when not measured (no stream) */
    double e2e;           /* s from connect to the end of the response */
    double *itl;          /* [n_itl] s between consecutive token events (streams only) */
    int n_itl;
    int prompt_tokens;    /* usage.prompt_tokens (llama: tokens_evaluated); -1 when absent */
    int output_tokens;    /* usage.completion_tokens (llama: tokens_predicted); -1 when absent */
    int cached_tokens;    /* usage.cached_tokens (/generate only); -1 when absent */
    int token_events;     /* token events seen in the stream */
    req_error error;
    int status;           /* HTTP status, 0 when none arrived */
    char finish[16];      /* finish_reason, "" when none (llama's stop_type as OpenAI names it: limit -> length,
                           * eos and word -> stop) */
    char *message;        /* what went wrong (malloc'd; NULL when ok or out of memory) */
} req_result;

typedef struct request_config {
    const http_target *target;
    endpoint ep;
    bool stream;
    char *fields;     /* the body's fields after the prompt, rendered once: ,"max_tokens":128,... */
    int max_tokens;
    double cancel_rate; /* fraction of streams abandoned mid-way (request_cancel_point) */
    double timeout_s; /* per request, connect to last byte */
    int stop_fd;      /* see http_limits */
    double grace_s;
} request_config;

/* Renders the fields every request of the run shares; model may be NULL (then no "model" field). 0, or -1 when
 * memory runs out. */
int request_config_init(request_config *c, endpoint ep, bool stream, int max_tokens, bool ignore_eos,
                        const char *model);
void request_config_free(request_config *c);

/* The body of request i of level `level`. False when memory runs out. */
bool request_body(const request_config *c, const prompts *p, unsigned level, unsigned long long i, buf *out);

/* Whether request i of level `level` is one of the streams to abandon: 0, or the number of token events after which
 * the client closes its socket, uniform in [1, max_tokens - 1] (so that it happens mid-way), for a cancel_rate
 * fraction of the requests (drawn from (seed, level, i): a --seed replays them). */
int request_cancel_point(const request_config *c, uint64_t seed, unsigned level, unsigned long long i);

/* Sends body and measures; t0 is the level's start (clock_now()). cancel_after: see request_cancel_point (a stream
 * that ends before that many token events completes as usual). Fills r (free with request_result_free). */
void request_run(const request_config *c, const char *body, size_t len, int cancel_after, double t0,
                 req_result *r);

/* Reads and judges a response as request_run does, from fd (a non-blocking socket whose request was sent; the caller
 * closes it): what the fuzz harness drives with arbitrary responses. */
void request_read(const request_config *c, int fd, req_result *r);
void request_result_free(req_result *r);

/* The error's name in reports: "http_429", "timeout", ... ("ok" when none). */
void request_error_name(const req_result *r, char *out, size_t n);

#endif
