/* buf.h — a growable byte buffer: what the HTTP client, the SSE parser and the request use instead of fixed arrays,
 * so that no response, header or event is too long for them (each caller caps what it accepts). */
#ifndef FK_LOADTEST_BUF_H
#define FK_LOADTEST_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct buf {
    char *s;    /* NUL-terminated after every append (s[len] == 0) when s != NULL */
    size_t len; /* bytes held */
    size_t cap; /* bytes allocated */
} buf;

/* Appends n bytes; false when memory runs out (the buffer is unchanged then). */
bool buf_append(buf *b, const void *data, size_t n);
/* Appends printf-formatted text; false when memory runs out. */
bool buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes (n <= len). */
void buf_consume(buf *b, size_t n);
void buf_free(buf *b);

#endif
