/* http.c — the HTTP/1.1 client: non-blocking socket, poll() with a deadline on every wait, one request per
 * connection. The response is parsed as it arrives: status line and headers (1xx skipped), then the body by
 * Content-Length, chunked transfer coding, or up to the server's close; each decoded piece goes to the caller. */
#include "http.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"

enum {
    HEAD_MAX = 64 * 1024,  /* status line + headers (and chunked trailers): more is a protocol error */
    CHUNK_LINE_MAX = 4096, /* a chunk-size line with its extensions */
    READ_SIZE = 16 * 1024, /* bytes per recv() */
};

int http_target_init(http_target *t, const url *u, char *err, size_t err_len)
{
    /* No AI_ADDRCONFIG: it drops 127.0.0.1 on hosts whose only IPv4 address is the loopback one. */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    t->u = u;
    t->addrs = NULL;
    int r = getaddrinfo(u->host, u->port, &hints, &t->addrs);
    if (r) {
        snprintf(err, err_len, "cannot resolve host \"%s\": %s", u->host,
                 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
        t->addrs = NULL;
        return -1;
    }
    return 0;
}

void http_target_free(http_target *t)
{
    if (t->addrs)
        freeaddrinfo(t->addrs);
    t->addrs = NULL;
}

const char *http_error_name(http_error e)
{
    switch (e) {
    case HTTP_OK: return "ok";
    case HTTP_ERR_REFUSED: return "refused";
    case HTTP_ERR_CONNECT: return "connect_failed";
    case HTTP_ERR_TIMEOUT: return "timeout";
    case HTTP_ERR_DROPPED: return "dropped";
    case HTTP_ERR_PROTOCOL: return "bad_response";
    case HTTP_ERR_INTERRUPTED: return "interrupted";
    case HTTP_ERR_ABORTED: return "aborted";
    case HTTP_ERR_SYSTEM: return "client_error";
    }
    return "unknown";
}

/* One connection and its deadline. */
typedef struct conn {
    int fd;
    const http_limits *lim;
    double deadline; /* lim->deadline, or earlier once the stop descriptor fired */
    bool stopping;   /* the stop descriptor fired */
    bool cut;        /* ... and the grace period moved the deadline earlier */
} conn;

/* Waits until the socket is ready for events (or has an error or hang-up to report). HTTP_OK, or the
 * deadline's error. */
static http_error conn_wait(conn *c, short events)
{
    for (;;) {
        double now = clock_now();
        if (now >= c->deadline)
            return c->cut ? HTTP_ERR_INTERRUPTED : HTTP_ERR_TIMEOUT;
        struct pollfd p[2] = {{.fd = c->fd, .events = events}, {.fd = c->lim->stop_fd, .events = POLLIN}};
        nfds_t n = !c->stopping && c->lim->stop_fd >= 0 ? 2 : 1;
        double ms = ceil((c->deadline - now) * 1e3);
        int r = poll(p, n, ms > INT_MAX ? INT_MAX : (int)ms);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return HTTP_ERR_SYSTEM;
        }
        if (p[0].revents)
            return HTTP_OK;
        if (n == 2 && p[1].revents) {
            c->stopping = true;
            double grace_end = clock_now() + c->lim->grace_s;
            if (grace_end < c->deadline) {
                c->deadline = grace_end;
                c->cut = true;
            }
        }
    }
}

static const char *wait_message(http_error e)
{
    return e == HTTP_ERR_TIMEOUT ? "timed out" : e == HTTP_ERR_INTERRUPTED ? "interrupted" : "poll failed";
}

/* Connects to the first address that accepts. */
static http_error conn_open(conn *c, const http_target *t, char *err, size_t err_len)
{
    http_error last = HTTP_ERR_CONNECT;
    snprintf(err, err_len, "no address for host \"%s\"", t->u->host);
    for (const struct addrinfo *a = t->addrs; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            snprintf(err, err_len, "socket: %s", strerror(errno));
            last = errno == EMFILE || errno == ENFILE ? HTTP_ERR_CONNECT : HTTP_ERR_SYSTEM;
            continue;
        }
        c->fd = fd;
        int e = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            if (errno != EINPROGRESS) {
                e = errno;
            } else {
                http_error w = conn_wait(c, POLLOUT);
                if (w != HTTP_OK) {
                    snprintf(err, err_len, "connect to %s port %s: %s", t->u->host, t->u->port, wait_message(w));
                    return w; /* the caller closes c->fd */
                }
                socklen_t len = sizeof e;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
                    e = errno;
            }
        }
        if (!e) {
            int one = 1; /* the request goes out in one send; no reason to hold back its tail */
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return HTTP_OK;
        }
        close(fd);
        c->fd = -1;
        last = e == ECONNREFUSED ? HTTP_ERR_REFUSED : HTTP_ERR_CONNECT;
        snprintf(err, err_len, "connect to %s port %s: %s", t->u->host, t->u->port, strerror(e));
    }
    return last;
}

static http_error conn_send(conn *c, const char *s, size_t n, char *err, size_t err_len)
{
    while (n > 0) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w > 0) {
            s += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            http_error e = conn_wait(c, POLLOUT);
            if (e != HTTP_OK) {
                snprintf(err, err_len, "sending the request: %s", wait_message(e));
                return e;
            }
            continue;
        }
        snprintf(err, err_len, "sending the request: %s", w < 0 ? strerror(errno) : "nothing sent");
        return HTTP_ERR_DROPPED;
    }
    return HTTP_OK;
}

/* Reads what has arrived into in (waiting for it); *eof at the end of the stream; *t = when the bytes came. */
static http_error conn_read(conn *c, buf *in, bool *eof, double *t, char *err, size_t err_len)
{
    char tmp[READ_SIZE];
    for (;;) {
        ssize_t r = recv(c->fd, tmp, sizeof tmp, 0);
        if (r > 0) {
            *t = clock_now();
            if (!buf_append(in, tmp, (size_t)r)) {
                snprintf(err, err_len, "out of memory reading the response");
                return HTTP_ERR_SYSTEM;
            }
            return HTTP_OK;
        }
        if (r == 0) {
            *eof = true;
            return HTTP_OK;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            http_error e = conn_wait(c, POLLIN);
            if (e != HTTP_OK) {
                snprintf(err, err_len, "waiting for the response: %s", wait_message(e));
                return e;
            }
            continue;
        }
        snprintf(err, err_len, "reading the response: %s", strerror(errno));
        return HTTP_ERR_DROPPED;
    }
}

/* Offset of pat in b's bytes (which may hold NULs), or -1. */
static long find(const buf *b, const char *pat, size_t n)
{
    for (size_t i = 0; b->len >= n && i <= b->len - n; i++)
        if (!memcmp(b->s + i, pat, n))
            return (long)i;
    return -1;
}

typedef enum body_mode { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_CLOSE } body_mode;

/* Parses the head in s[0..len) (status line and header lines, CRLF-separated, without the blank line). */
static http_error parse_head(const char *s, size_t len, bool head_method, int *status, body_mode *mode,
                             uint64_t *length, char *err, size_t err_len)
{
    if (len < 12 || memcmp(s, "HTTP/1.", 7) || s[7] < '0' || s[7] > '9' || s[8] != ' ' || s[9] < '1' ||
        s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' || (len > 12 && s[12] != ' ')) {
        snprintf(err, err_len, "not an HTTP/1.x status line: \"%.40s\"", s);
        return HTTP_ERR_PROTOCOL;
    }
    *status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    bool chunked = false, has_te = false, has_length = false;
    uint64_t cl = 0;
    const char *line = memchr(s, '\n', len), *end = s + len;
    while (line && ++line < end) {
        const char *eol = memchr(line, '\r', (size_t)(end - line));
        if (!eol)
            eol = end;
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (!colon) {
            snprintf(err, err_len, "a header line without ':'");
            return HTTP_ERR_PROTOCOL;
        }
        size_t name_len = (size_t)(colon - line);
        const char *v = colon + 1, *v_end = eol;
        while (v < v_end && (*v == ' ' || *v == '\t'))
            v++;
        while (v_end > v && (v_end[-1] == ' ' || v_end[-1] == '\t'))
            v_end--;
        if (name_len == 14 && !strncasecmp(line, "Content-Length", 14)) {
            uint64_t x = 0;
            if (v == v_end || v_end - v > 18) {
                snprintf(err, err_len, "bad Content-Length");
                return HTTP_ERR_PROTOCOL;
            }
            for (const char *d = v; d < v_end; d++) {
                if (*d < '0' || *d > '9') {
                    snprintf(err, err_len, "bad Content-Length");
                    return HTTP_ERR_PROTOCOL;
                }
                x = x * 10 + (uint64_t)(*d - '0');
            }
            if (has_length && x != cl) {
                snprintf(err, err_len, "two different Content-Length headers");
                return HTTP_ERR_PROTOCOL;
            }
            has_length = true;
            cl = x;
        } else if (name_len == 17 && !strncasecmp(line, "Transfer-Encoding", 17)) {
            /* chunked only counts as the last coding; any other makes the body run to the close */
            const char *last = v_end;
            while (last > v && last[-1] != ',')
                last--;
            while (last < v_end && (*last == ' ' || *last == '\t'))
                last++;
            has_te = true;
            chunked = v_end - last == 7 && !strncasecmp(last, "chunked", 7);
        }
        line = memchr(eol, '\n', (size_t)(end - eol));
    }
    if (head_method || *status / 100 == 1 || *status == 204 || *status == 304)
        *mode = BODY_NONE;
    else if (has_te)
        *mode = chunked ? BODY_CHUNKED : BODY_CLOSE;
    else if (has_length)
        *mode = BODY_LENGTH;
    else
        *mode = BODY_CLOSE;
    *length = cl;
    return HTTP_OK;
}

/* Hands n bytes at the front of in to the caller and drops them. */
static http_error deliver(buf *in, size_t n, int status, double t, http_body_fn fn, void *user, char *err,
                          size_t err_len)
{
    if (n && fn && !fn(user, status, in->s, n, t)) {
        snprintf(err, err_len, "stopped while reading the body");
        return HTTP_ERR_ABORTED;
    }
    buf_consume(in, n);
    return HTTP_OK;
}

/* The chunked body: size line, data, CRLF, ..., a 0 size line, trailers, a blank line. */
static http_error read_chunked(conn *c, buf *in, int status, double t, http_body_fn fn, void *user, char *err,
                               size_t err_len)
{
    enum { SIZE, DATA, DATA_END, TRAILER } st = SIZE;
    uint64_t left = 0;
    size_t trailer_bytes = 0;
    bool eof = false;
    for (;;) {
        for (bool progress = true; progress;) {
            progress = false;
            long eol;
            switch (st) {
            case SIZE:
                eol = find(in, "\r\n", 2);
                if (eol < 0) {
                    if (in->len > CHUNK_LINE_MAX) {
                        snprintf(err, err_len, "chunk size line longer than %d bytes", CHUNK_LINE_MAX);
                        return HTTP_ERR_PROTOCOL;
                    }
                    break;
                }
                left = 0;
                long i = 0;
                for (; i < eol && i < 11; i++) { /* at most 11 hex digits: < 16 TiB */
                    char h = in->s[i];
                    int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                          : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (d < 0)
                        break;
                    left = left * 16 + (uint64_t)d;
                }
                if (i == 0 || (i < eol && in->s[i] != ';' && in->s[i] != ' ' && in->s[i] != '\t')) {
                    snprintf(err, err_len, "bad chunk size line \"%.*s\"", (int)(eol < 40 ? eol : 40), in->s);
                    return HTTP_ERR_PROTOCOL;
                }
                buf_consume(in, (size_t)eol + 2);
                st = left ? DATA : TRAILER;
                progress = true;
                break;
            case DATA:
                if (in->len) {
                    size_t n = left < in->len ? (size_t)left : in->len;
                    http_error e = deliver(in, n, status, t, fn, user, err, err_len);
                    if (e != HTTP_OK)
                        return e;
                    left -= n;
                    st = left ? DATA : DATA_END;
                    progress = true;
                }
                break;
            case DATA_END:
                if (in->len >= 2) {
                    if (memcmp(in->s, "\r\n", 2)) {
                        snprintf(err, err_len, "chunk data not followed by CRLF");
                        return HTTP_ERR_PROTOCOL;
                    }
                    buf_consume(in, 2);
                    st = SIZE;
                    progress = true;
                }
                break;
            case TRAILER:
                eol = find(in, "\r\n", 2);
                if (eol == 0)
                    return HTTP_OK; /* the blank line: done */
                if (eol > 0) {
                    trailer_bytes += (size_t)eol + 2;
                    buf_consume(in, (size_t)eol + 2);
                    progress = true;
                }
                if (trailer_bytes + in->len > HEAD_MAX) {
                    snprintf(err, err_len, "trailers longer than %d bytes", HEAD_MAX);
                    return HTTP_ERR_PROTOCOL;
                }
                break;
            }
        }
        if (eof) {
            snprintf(err, err_len, "connection closed inside the chunked body");
            return HTTP_ERR_DROPPED;
        }
        http_error e = conn_read(c, in, &eof, &t, err, err_len);
        if (e != HTTP_OK)
            return e;
    }
}

static http_error read_response(conn *c, buf *in, bool head_method, int *status, http_body_fn fn, void *user,
                                char *err, size_t err_len)
{
    bool eof = false;
    double t = clock_now();
    body_mode mode;
    uint64_t length;
    for (;;) { /* the head; 1xx interim responses are skipped */
        long end = find(in, "\r\n\r\n", 4);
        if (end >= 0) {
            http_error e = parse_head(in->s, (size_t)end, head_method, status, &mode, &length, err, err_len);
            if (e != HTTP_OK)
                return e;
            buf_consume(in, (size_t)end + 4);
            if (*status / 100 != 1)
                break;
            continue;
        }
        if (in->len > HEAD_MAX) {
            snprintf(err, err_len, "response headers longer than %d bytes", HEAD_MAX);
            return HTTP_ERR_PROTOCOL;
        }
        if (eof) {
            snprintf(err, err_len, in->len ? "connection closed inside the response headers"
                                           : "connection closed before any response");
            return HTTP_ERR_DROPPED;
        }
        http_error e = conn_read(c, in, &eof, &t, err, err_len);
        if (e != HTTP_OK)
            return e;
    }

    if (mode == BODY_CHUNKED)
        return read_chunked(c, in, *status, t, fn, user, err, err_len);
    uint64_t got = 0;
    for (;;) {
        size_t n = in->len;
        if (mode == BODY_LENGTH && n > length - got)
            n = (size_t)(length - got);
        if (mode == BODY_NONE)
            n = 0;
        http_error e = deliver(in, n, *status, t, fn, user, err, err_len);
        if (e != HTTP_OK)
            return e;
        got += n;
        if (mode == BODY_NONE || (mode == BODY_LENGTH && got == length) || (mode == BODY_CLOSE && eof))
            return HTTP_OK;
        if (eof) {
            snprintf(err, err_len, "connection closed after %llu of %llu body bytes", (unsigned long long)got,
                     (unsigned long long)length);
            return HTTP_ERR_DROPPED;
        }
        e = conn_read(c, in, &eof, &t, err, err_len);
        if (e != HTTP_OK)
            return e;
    }
}

http_error http_exchange(const http_target *t, const http_request *rq, const http_limits *lim, int *status,
                         http_body_fn on_body, void *user, char *err, size_t err_len)
{
    conn c = {.fd = -1, .lim = lim, .deadline = lim->deadline};
    buf out = {0}, in = {0};
    *status = 0;
    http_error e = conn_open(&c, t, err, err_len);
    if (e != HTTP_OK)
        goto done;
    bool ok = buf_printf(&out,
                         "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: flashkernel-loadtest\r\nAccept: %s\r\n"
                         "Connection: close\r\n",
                         rq->method, t->u->prefix, rq->path, t->u->authority, rq->accept ? rq->accept : "*/*");
    if (ok && rq->body)
        ok = buf_printf(&out, "Content-Type: application/json\r\nContent-Length: %zu\r\n", rq->body_len);
    ok = ok && buf_append(&out, "\r\n", 2) && (!rq->body || buf_append(&out, rq->body, rq->body_len));
    if (!ok) {
        snprintf(err, err_len, "out of memory building the request");
        e = HTTP_ERR_SYSTEM;
        goto done;
    }
    e = conn_send(&c, out.s, out.len, err, err_len);
    /* A server may answer and close before it has read the whole request: its answer still counts. */
    if (e != HTTP_OK && e != HTTP_ERR_DROPPED)
        goto done;
    char send_err[160];
    snprintf(send_err, sizeof send_err, "%s", e == HTTP_ERR_DROPPED ? err : "");
    e = read_response(&c, &in, !strcmp(rq->method, "HEAD"), status, on_body, user, err, err_len);
    if (e == HTTP_ERR_DROPPED && send_err[0]) /* the first thing that went wrong is the useful one */
        snprintf(err, err_len, "%s", send_err);
done:
    if (c.fd >= 0)
        close(c.fd);
    buf_free(&out);
    buf_free(&in);
    return e;
}

http_error http_read_response(int fd, const http_limits *lim, int *status, http_body_fn on_body, void *user,
                              char *err, size_t err_len)
{
    conn c = {.fd = fd, .lim = lim, .deadline = lim->deadline};
    buf in = {0};
    *status = 0;
    http_error e = read_response(&c, &in, false, status, on_body, user, err, err_len);
    buf_free(&in);
    return e;
}
