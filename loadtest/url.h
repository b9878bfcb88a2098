/* url.h — the server's base URL: http://HOST[:PORT][/PREFIX]. */
#ifndef FK_LOADTEST_URL_H
#define FK_LOADTEST_URL_H

#include <stddef.h>

typedef struct url {
    char *host;   /* name or address, without the brackets of an IPv6 literal */
    char *port;   /* decimal, 1..65535 (80 when the URL has none) */
    char *authority; /* HOST[:PORT] as written, for the Host header */
    char *prefix; /* path before the routes, without a trailing '/': "" or e.g. "/flashkernel" */
} url;

/* 0, or -1 with the reason in err (only "http" URLs; no user info, query or fragment). */
int url_parse(const char *s, url *u, char *err, size_t err_len);
void url_free(url *u);

#endif
