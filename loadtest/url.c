/* url.c — parses the base URL given with --url. Only what a load test needs: plain http, a host, a port and an
 * optional path prefix (a server behind a proxy). */
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int fail(url *u, char *err, size_t err_len, const char *s, const char *why)
{
    snprintf(err, err_len, "malformed URL \"%s\": %s", s, why);
    url_free(u);
    return -1;
}

int url_parse(const char *s, url *u, char *err, size_t err_len)
{
    *u = (url){0};
    if (!strncmp(s, "https://", 8))
        return fail(u, err, err_len, s, "https is not supported (use http://)");
    if (strncmp(s, "http://", 7))
        return fail(u, err, err_len, s, "it must start with http://");
    const char *p = s + 7;
    const char *end_auth = p + strcspn(p, "/?#");
    if (strpbrk(p, "?#"))
        return fail(u, err, err_len, s, "no query or fragment allowed");
    if (memchr(p, '@', (size_t)(end_auth - p)))
        return fail(u, err, err_len, s, "no user info allowed");

    const char *host = p, *host_end, *port = NULL;
    if (*p == '[') { /* [IPv6]:port */
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(end_auth - host));
        if (!host_end)
            return fail(u, err, err_len, s, "unclosed '[' in the host");
        if (host_end + 1 < end_auth) {
            if (host_end[1] != ':')
                return fail(u, err, err_len, s, "junk after ']'");
            port = host_end + 2;
        }
    } else {
        host_end = memchr(p, ':', (size_t)(end_auth - p));
        if (host_end)
            port = host_end + 1;
        else
            host_end = end_auth;
    }
    if (host_end == host)
        return fail(u, err, err_len, s, "no host");
    for (const char *c = host; c < host_end; c++)
        if (*c <= ' ' || *c == 0x7f)
            return fail(u, err, err_len, s, "a space or control character in the host");
    if (port) {
        size_t n = (size_t)(end_auth - port);
        long v = 0;
        if (n == 0 || n > 5)
            return fail(u, err, err_len, s, "the port must be a number in [1, 65535]");
        for (size_t i = 0; i < n; i++) {
            if (port[i] < '0' || port[i] > '9')
                return fail(u, err, err_len, s, "the port must be a number in [1, 65535]");
            v = v * 10 + (port[i] - '0');
        }
        if (v < 1 || v > 65535)
            return fail(u, err, err_len, s, "the port must be a number in [1, 65535]");
    }
    for (const char *c = end_auth; *c; c++)
        if (*c <= ' ' || *c == 0x7f)
            return fail(u, err, err_len, s, "a space or control character in the path");

    size_t prefix_len = strlen(end_auth);
    while (prefix_len > 0 && end_auth[prefix_len - 1] == '/')
        prefix_len--;
    u->host = dup_n(host, (size_t)(host_end - host));
    u->port = port ? dup_n(port, (size_t)(end_auth - port)) : dup_n("80", 2);
    u->authority = dup_n(p, (size_t)(end_auth - p));
    u->prefix = dup_n(end_auth, prefix_len);
    if (!u->host || !u->port || !u->authority || !u->prefix)
        return fail(u, err, err_len, s, "out of memory");
    return 0;
}

void url_free(url *u)
{
    free(u->host);
    free(u->port);
    free(u->authority);
    free(u->prefix);
    *u = (url){0};
}
