/* http.c — the libmicrohttpd daemon. Each request's headers go to routes_begin, its body is collected here (up to
 * max_body_bytes), and routes decides the response: a whole one, a parked wait (the connection is suspended until
 * the queue wakes it), or a stream of Server-Sent Events whose content callback suspends the connection whenever it
 * has nothing to send. A suspended connection does not notice a disconnect, so its socket is watched for a hang-up
 * (EPOLLRDHUP) by a thread of its own, which also wakes idle streams for a keep-alive comment.
 *
 * The listening socket is ours: an accept thread counts open connections and closes those over max_connections at
 * once, and hands the others to libmicrohttpd (MHD_add_connection), which applies the per-IP limit. (libmicrohttpd
 * 0.9.75's own listener stops accepting at the limit, so the excess waits in the kernel's backlog, and its count of
 * connections added to a thread pool does not hold them to the limit.)
 *
 * Requests libmicrohttpd refuses itself (malformed, oversized) get the same JSON error bodies as the routes' errors:
 * see MHD_queue_response below. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "log.h"

struct http {
    struct MHD_Daemon *daemon;
    routes *rt;
    queue *q;
    size_t max_body_bytes;
    double ping_interval_s;
    int port;
    int watch_fd; /* epoll: parked connections' sockets, and stop_fd */
    int stop_fd;  /* eventfd that ends the watcher */
    pthread_t watcher;
    int listen_fd;
    int spare_fd; /* kept open to accept-and-close a connection when the process is out of descriptors */
    unsigned max_connections;
    atomic_uint open; /* connections handed to libmicrohttpd and not yet closed */
    atomic_bool stopping;
    pthread_t acceptor;
};

/* One request on a connection (libmicrohttpd's per-request context). */
typedef struct http_conn {
    http *h;
    struct MHD_Connection *conn;
    int fd;
    routes_call *call;
    char *body;
    size_t len, cap;
    bool too_large;
    bool body_done;
} http_conn;

#define STOP_TAG 0 /* request serials start at 1 */

/* The kernel's send buffer per connection (it doubles it): a client that stops reading pins this much of it, not the
 * several MiB that autotuning allows. */
#define SEND_BUFFER_BYTES (128 << 10)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- parking ---- */

/* Under the request's lock, inside a libmicrohttpd callback of this connection. */
static void park(void *consumer, uint64_t serial)
{
    http_conn *c = consumer;
    struct epoll_event ev = {.events = EPOLLRDHUP, .data.u64 = serial};
    if (epoll_ctl(c->h->watch_fd, EPOLL_CTL_ADD, c->fd, &ev) && errno == EEXIST)
        epoll_ctl(c->h->watch_fd, EPOLL_CTL_MOD, c->fd, &ev);
    MHD_suspend_connection(c->conn);
}

/* Under the request's lock, from any thread; the connection is parked, so its socket is still open. */
static void unpark(void *consumer)
{
    http_conn *c = consumer;
    epoll_ctl(c->h->watch_fd, EPOLL_CTL_DEL, c->fd, NULL);
    MHD_resume_connection(c->conn);
}

const queue_hooks http_queue_hooks = {.suspend = park, .resume = unpark};

/* Waits for hang-ups of parked sockets (the request is cancelled and its connection woken to close) and, between
 * them, wakes streams due a keep-alive comment. */
static void *watch(void *arg)
{
    http *h = arg;
    struct epoll_event events[64];
    for (;;) {
        /* Parked streams are due at most ping_interval_s after parking; wake up at least every third of it. */
        double next = queue_ping(h->q, now_s(), h->ping_interval_s);
        if (next > h->ping_interval_s / 3)
            next = h->ping_interval_s / 3;
        const int n = epoll_wait(h->watch_fd, events, 64, (int)(next * 1000) + 1);
        for (int i = 0; i < n; i++) {
            if (events[i].data.u64 == STOP_TAG)
                return NULL;
            queue_request *r = queue_find(h->q, events[i].data.u64);
            if (r && queue_gone(r))
                queue_cancel(h->q, r);
            if (r)
                queue_release(r);
        }
    }
}

static void stop_watcher(http *h)
{
    const uint64_t one = 1;
    if (write(h->stop_fd, &one, sizeof one) != sizeof one)
        log_info("http: cannot stop the connection watcher: %s", strerror(errno));
    pthread_join(h->watcher, NULL);
}

/* ---- responses ---- */

typedef enum MHD_Result (*queue_response_fn)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
/* libmicrohttpd's MHD_queue_response (the server defines one of its own, below); set by http_start. */
static queue_response_fn mhd_queue_response;
/* The per-connection memory limit, which the request line and headers must fit in; set by http_start. */
static size_t head_limit;

/* libmicrohttpd 0.9.75 answers the requests it refuses before any callback sees them — a malformed request line,
 * header, Content-Length or chunked body (400), a Content-Length or chunk size out of range (413), a request line or
 * headers over the connection's memory limit (414, 431), an unsupported HTTP version (505) — with HTML bodies of its
 * own, and has no option to change them. (For a bad Content-Length it even sends the response head twice.) It queues
 * them through its exported MHD_queue_response, which it calls through the PLT, so this definition, in the
 * executable, takes those calls; the server's own responses go straight to the library's function
 * (mhd_queue_response). So every call that lands here is one of those refusals: the documented JSON error of the
 * same status is written to the socket here (a few hundred bytes to a connection with nothing else in flight: the
 * send buffer takes them), and MHD_NO makes libmicrohttpd close the connection, as it would after its own answer.
 * The smoke tests send each kind of refusal and check the answer. */
enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response)
{
    (void)response;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    routes_reply reply;
    routes_protocol_error((int)status_code, head_limit, &reply);
    char head[256];
    const int n = snprintf(head, sizeof head,
                           "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                           status_code, MHD_get_reason_phrase_for(status_code), reply.content_type, reply.len);
    struct iovec iov[2] = {{.iov_base = head, .iov_len = (size_t)n}, {.iov_base = reply.body, .iov_len = reply.len}};
    const struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    if (info && sendmsg(info->connect_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        log_info("http: cannot send the %u answer to a refused request: %s", status_code, strerror(errno));
    free(reply.body);
    return MHD_NO;
}

static enum MHD_Result send_reply(http_conn *c, routes_reply *reply)
{
    struct MHD_Response *resp =
        reply->body ? MHD_create_response_from_buffer(reply->len, reply->body, MHD_RESPMEM_MUST_FREE)
                    : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(reply->body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, reply->content_type);
    if (reply->allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, reply->allow);
    if (reply->www_authenticate)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (reply->retry_after > 0) {
        char s[16];
        snprintf(s, sizeof s, "%d", reply->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, s);
    }
    const enum MHD_Result ok = mhd_queue_response(c->conn, (unsigned)reply->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_conn *c = cls;
    const ssize_t n = routes_stream(c->call, buf, max);
    if (n == ROUTES_STREAM_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n == ROUTES_STREAM_ABORT)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n; /* 0: parked until the queue has more */
}

static enum MHD_Result send_stream(http_conn *c)
{
    /* The stream is never read after the request completes (on_completed), which outlives nothing here. */
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read_stream, c, NULL);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    const enum MHD_Result ok = mhd_queue_response(c->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result act(http_conn *c, routes_action a, routes_reply *reply)
{
    switch (a) {
    case ROUTES_REPLY: return send_reply(c, reply);
    case ROUTES_WAIT: return MHD_YES;
    case ROUTES_STREAM: return send_stream(c);
    default: return MHD_NO;
    }
}

/* ---- requests ---- */

/* Keeps the body, or once it passes the limit only its size (routes answers 413 at the end). */
static void take_body(http_conn *c, const char *data, size_t n)
{
    if (c->too_large)
        return;
    if (c->len + n > c->h->max_body_bytes) {
        c->too_large = true;
        free(c->body);
        c->body = NULL;
        c->len = c->cap = 0;
        return;
    }
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *grown = realloc(c->body, cap);
        if (!grown) {
            c->too_large = true; /* out of memory: refuse it the same way */
            free(c->body);
            c->body = NULL;
            c->len = c->cap = 0;
            return;
        }
        c->body = grown, c->cap = cap;
    }
    memcpy(c->body + c->len, data, n);
    c->len += n;
    c->body[c->len] = '\0';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    http *h = cls;
    http_conn *c = *con_cls;
    routes_reply reply = {0};
    if (!c) { /* headers received */
        if (!(c = calloc(1, sizeof *c)))
            return MHD_NO;
        c->h = h;
        c->conn = conn;
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->fd = info ? info->connect_fd : -1;
        *con_cls = c;
        const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        char *end = NULL;
        long long content_length = length ? strtoll(length, &end, 10) : -1;
        if (length && (end == length || *end))
            content_length = -1;
        const routes_request req = {
            .method = method,
            .url = url,
            .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
            .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
            .content_length = content_length,
        };
        if (!(c->call = routes_begin(h->rt, &req, c, &reply)))
            return send_reply(c, &reply); /* before the body: libmicrohttpd then closes the connection */
        return MHD_YES;
    }
    if (*upload_size) {
        take_body(c, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    routes_action a;
    if (!c->body_done) {
        c->body_done = true;
        a = routes_body(c->call, c->body ? c->body : "", c->len, c->too_large, &reply);
        free(c->body);
        c->body = NULL;
    } else {
        a = routes_resume(c->call, &reply);
    }
    return act(c, a, &reply);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)conn, (void)toe;
    http *h = cls;
    http_conn *c = *con_cls;
    if (!c)
        return;
    if (c->fd >= 0)
        epoll_ctl(h->watch_fd, EPOLL_CTL_DEL, c->fd, NULL); /* in case it was parked when the daemon stopped */
    routes_end(c->call);
    free(c->body);
    free(c);
    *con_cls = NULL;
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    log_info("http: %s", line);
}

/* ---- the daemon ---- */

/* Accepts connections until http_stop shuts the socket down; libmicrohttpd closes those over its limits at once. */
static void *accept_loop(void *arg)
{
    http *h = arg;
    for (;;) {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        const int fd = accept(h->listen_fd, (struct sockaddr *)&addr, &len);
        if (atomic_load(&h->stopping)) {
            if (fd >= 0)
                close(fd);
            return NULL;
        }
        if (fd < 0) {
            if ((errno == EMFILE || errno == ENFILE) && h->spare_fd >= 0) {
                /* Out of descriptors: the pending connection would wake accept again and again. Refuse it. */
                close(h->spare_fd);
                const int refused = accept(h->listen_fd, NULL, NULL);
                if (refused >= 0)
                    close(refused);
                h->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            }
            continue;
        }
        if (atomic_load(&h->open) >= h->max_connections) {
            close(fd); /* refused at once */
            continue;
        }
        const int bytes = SEND_BUFFER_BYTES;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
        atomic_fetch_add(&h->open, 1);
        if (MHD_add_connection(h->daemon, fd, (struct sockaddr *)&addr, len) != MHD_YES) /* it closed fd */
            atomic_fetch_sub(&h->open, 1);
    }
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)conn, (void)socket_context;
    http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED)
        atomic_fetch_sub(&h->open, 1);
}

/* A listening socket on the first address of host:port. */
static int listen_on(const char *host, int port, int *bound_port, char *err, size_t err_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    const int gai = getaddrinfo(host, service, &hints, &ai);
    if (gai) {
        snprintf(err, err_len, "--host %s: %s", host, gai_strerror(gai));
        return -1;
    }
    const int one = 1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, SOMAXCONN)) {
        snprintf(err, err_len, "cannot listen on %s port %d: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    } else {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        *bound_port = port;
        if (!getsockname(fd, (struct sockaddr *)&addr, &len))
            *bound_port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                                           : ((struct sockaddr_in *)&addr)->sin_port);
    }
    freeaddrinfo(ai);
    return fd;
}

http *http_start(const http_options *o, routes *rt, queue *q, char *err, size_t err_len)
{
    http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    /* The POSIX idiom for a function pointer from dlsym (ISO C has no conversion from void *). */
    *(void **)&mhd_queue_response = dlsym(RTLD_NEXT, "MHD_queue_response");
    if (!mhd_queue_response) {
        snprintf(err, err_len, "cannot find libmicrohttpd's MHD_queue_response: %s", dlerror());
        free(h);
        return NULL;
    }
    head_limit = o->memory_limit;
    h->rt = rt;
    h->q = q;
    h->max_body_bytes = o->max_body_bytes;
    h->ping_interval_s = o->ping_interval_s;
    h->max_connections = o->max_connections;
    atomic_init(&h->open, 0);
    atomic_init(&h->stopping, false);
    h->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    h->watch_fd = epoll_create1(EPOLL_CLOEXEC);
    h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    h->listen_fd = listen_on(o->host, o->port, &h->port, err, err_len);
    struct epoll_event stop = {.events = EPOLLIN, .data.u64 = STOP_TAG};
    if (h->listen_fd < 0)
        goto fail;
    if (h->watch_fd < 0 || h->stop_fd < 0 || epoll_ctl(h->watch_fd, EPOLL_CTL_ADD, h->stop_fd, &stop)) {
        snprintf(err, err_len, "cannot create the connection watcher: %s", strerror(errno));
        goto fail;
    }
    const unsigned flags =
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    /* Each polling thread may hold every connection: the accept thread enforces max_connections. */
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL, MHD_OPTION_THREAD_POOL_SIZE,
        o->threads, MHD_OPTION_CONNECTION_LIMIT, o->max_connections * o->threads + 1,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->max_connections_per_ip, MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->memory_limit, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, err_len, "cannot start the HTTP daemon");
        goto fail;
    }
    if (pthread_create(&h->watcher, NULL, watch, h)) {
        snprintf(err, err_len, "cannot start the connection watcher");
        MHD_stop_daemon(h->daemon);
        goto fail;
    }
    if (pthread_create(&h->acceptor, NULL, accept_loop, h)) {
        snprintf(err, err_len, "cannot start the accept thread");
        stop_watcher(h);
        MHD_stop_daemon(h->daemon);
        goto fail;
    }
    return h;
fail:
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    if (h->watch_fd >= 0)
        close(h->watch_fd);
    if (h->stop_fd >= 0)
        close(h->stop_fd);
    if (h->spare_fd >= 0)
        close(h->spare_fd);
    free(h);
    return NULL;
}

int http_port(const http *h)
{
    return h->port;
}

void http_stop(http *h)
{
    if (!h)
        return;
    atomic_store(&h->stopping, true);
    shutdown(h->listen_fd, SHUT_RDWR); /* wakes accept */
    pthread_join(h->acceptor, NULL);
    stop_watcher(h);
    MHD_stop_daemon(h->daemon);
    close(h->listen_fd);
    close(h->watch_fd);
    close(h->stop_fd);
    if (h->spare_fd >= 0)
        close(h->spare_fd);
    free(h);
}
