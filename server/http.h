/* http.h — the libmicrohttpd daemon: listening socket, connection limits, request bodies, responses, parking
 * and waking connections (suspend/resume), Server-Sent Events, and the watcher that notices clients that leave while
 * their connection is parked. What requests mean is routes.c's business. */
#ifndef FK_SERVER_HTTP_H
#define FK_SERVER_HTTP_H

#include <stddef.h>

#include "queue.h"
#include "routes.h"

typedef struct http_options {
    const char *host;       /* address or name to bind (IPv4 or IPv6) */
    int port;               /* 0: any free port (see http_port) */
    unsigned threads;       /* libmicrohttpd's polling threads */
    unsigned max_connections;
    unsigned max_connections_per_ip;
    unsigned timeout_s;     /* a connection idle this long is closed (parked ones excepted) */
    size_t memory_limit;    /* per connection: request line and headers must fit (else 431) */
    size_t max_body_bytes;
    double ping_interval_s; /* a parked stream with nothing to send gets an SSE comment this often */
} http_options;

typedef struct http http;

/* What the queue calls to park and wake connections (the consumer is the connection's state). */
extern const queue_hooks http_queue_hooks;

/* Binds and starts serving. NULL, with the reason in err, when the address cannot be used. */
http *http_start(const http_options *o, routes *rt, queue *q, char *err, size_t err_len);

/* The port bound (useful with port 0). */
int http_port(const http *h);

/* Closes every connection and stops. Every parked connection must have been woken first (queue_close). */
void http_stop(http *h);

#endif
