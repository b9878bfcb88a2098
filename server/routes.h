/* routes.h — what each request means: method and path dispatch, the API key, content types and body limits, and
 * every route's handling (generation requests go to the engine thread through the queue). http.c drives it and
 * knows nothing of JSON or the engine. */
#ifndef FK_SERVER_ROUTES_H
#define FK_SERVER_ROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "flashkernel.h"
#include "queue.h"

typedef struct routes_config {
    const char *api_key;    /* NULL: no authentication */
    const char *model_name; /* the served model name */
    size_t max_body_bytes;
} routes_config;

typedef struct routes routes;
typedef struct chat chat; /* chat.h */

routes *routes_create(const routes_config *cfg, queue *q);
/* The model and its chat side, once loaded: called before the queue's state becomes QUEUE_SERVING (which publishes
 * them). */
void routes_set_model(routes *rt, const fk_model *model, int max_model_len, const chat *chat);
void routes_destroy(routes *rt);

/* A request's headers. */
typedef struct routes_request {
    const char *method, *url;
    const char *content_type, *authorization; /* NULL when absent */
    long long content_length;                 /* -1 when absent (chunked) */
} routes_request;

/* A complete response. */
typedef struct routes_reply {
    int status;
    char *body; /* malloc'd; the reply owns it */
    size_t len;
    const char *content_type;
    const char *allow;     /* 405: the Allow header */
    int retry_after;       /* 429: seconds, for the Retry-After header */
    bool www_authenticate; /* 401 */
} routes_reply;

typedef enum routes_action {
    ROUTES_REPLY,  /* send the reply */
    ROUTES_WAIT,   /* the connection was parked (queue hooks); routes_resume follows its wake-up */
    ROUTES_STREAM, /* start a Server-Sent Events response; routes_stream fills it */
    ROUTES_CLOSE,  /* the client is gone: close without a response */
} routes_action;

typedef struct routes_call routes_call;

/* The headers are in. Returns the call, or NULL with *reply holding an error to send before reading any body
 * (unknown path, wrong method, missing key, wrong content type, declared length over the limit). consumer is what the
 * queue's hooks get to park and wake this connection. */
routes_call *routes_begin(routes *rt, const routes_request *req, void *consumer, routes_reply *reply);

/* The body is in (too_large: it exceeded max_body_bytes and was discarded). */
routes_action routes_body(routes_call *c, const char *body, size_t len, bool too_large, routes_reply *reply);

/* After a parked connection was woken. */
routes_action routes_resume(routes_call *c, routes_reply *reply);

#define ROUTES_STREAM_END (-1)   /* the stream is complete */
#define ROUTES_STREAM_ABORT (-2) /* close the connection */
/* Fills buf with up to max bytes of the stream: the count, 0 when the connection was parked with nothing to send,
 * or ROUTES_STREAM_END / ROUTES_STREAM_ABORT. */
ssize_t routes_stream(routes_call *c, char *buf, size_t max);

/* The connection is done with the call (response sent, or connection closed): an unfinished request is cancelled. */
void routes_end(routes_call *c);

/* The JSON error for a request the HTTP library refused before any route saw it (status 400 malformed, 413 a
 * Content-Length or chunk size out of range, 414 or 431 a request line or headers over head_limit bytes, 505 the
 * HTTP version, 500 its own failure). */
void routes_protocol_error(int status, size_t head_limit, routes_reply *reply);

#endif
