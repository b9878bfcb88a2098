/* http.h — a minimal HTTP/1.1 client over plain sockets: one request per connection (Connection: close), the
 * response body decoded (Content-Length, chunked, or up to the close) and handed over piece by piece as it arrives,
 * every wait bounded by a deadline, and an early end when a stop descriptor becomes readable (SIGINT). */
#ifndef FK_LOADTEST_HTTP_H
#define FK_LOADTEST_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "url.h"

/* How an exchange ended. */
typedef enum http_error {
    HTTP_OK = 0,          /* a whole response arrived */
    HTTP_ERR_REFUSED,     /* connect: nothing listens (ECONNREFUSED) */
    HTTP_ERR_CONNECT,     /* connect failed otherwise (unreachable, no route, too many open files, ...) */
    HTTP_ERR_TIMEOUT,     /* the deadline passed */
    HTTP_ERR_DROPPED,     /* the server closed or reset the connection before the response was complete */
    HTTP_ERR_PROTOCOL,    /* the bytes are not an HTTP/1.x response */
    HTTP_ERR_INTERRUPTED, /* the stop descriptor became readable and the grace period ran out */
    HTTP_ERR_ABORTED,     /* the body callback returned false */
    HTTP_ERR_SYSTEM,      /* out of memory, or socket() failed */
} http_error;

/* The server's addresses, resolved once. */
typedef struct http_target {
    const url *u;
    struct addrinfo *addrs;
} http_target;

int http_target_init(http_target *t, const url *u, char *err, size_t err_len);
void http_target_free(http_target *t);

typedef struct http_limits {
    double deadline; /* clock_now() time by which the exchange must be over: connect to last byte */
    int stop_fd;     /* -1, or a descriptor that becomes readable (and stays so) when the run must stop */
    double grace_s;  /* once stop_fd is readable, the exchange may go on this long, then HTTP_ERR_INTERRUPTED */
} http_limits;

/* Called for each piece of the decoded body as it arrives, with the response's status and the clock_now() time
 * the piece was read at. Returns false to end the exchange (HTTP_ERR_ABORTED). */
typedef bool (*http_body_fn)(void *user, int status, const char *data, size_t n, double t);

typedef struct http_request {
    const char *method;       /* "GET", "POST" */
    const char *path;         /* appended to the URL's prefix, e.g. "/generate" */
    const char *accept;       /* Accept header value */
    const char *body;         /* NULL for none; sent as application/json */
    size_t body_len;
} http_request;

/* One exchange. On HTTP_OK *status is the response's status; on failure err says what happened (and *status is
 * the status if one arrived, else 0). */
http_error http_exchange(const http_target *t, const http_request *rq, const http_limits *lim, int *status,
                         http_body_fn on_body, void *user, char *err, size_t err_len);

/* The reading half of http_exchange: one response (to a request other than HEAD) from fd, a connected socket
 * (non-blocking, for the deadline to hold) that the caller closes. What the fuzz harness drives with arbitrary
 * bytes. */
http_error http_read_response(int fd, const http_limits *lim, int *status, http_body_fn on_body, void *user,
                              char *err, size_t err_len);

/* "refused", "timeout", ...: the name of a failure, as reports spell it. */
const char *http_error_name(http_error e);

#endif
