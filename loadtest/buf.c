/* buf.c — a growable byte buffer (doubling; always NUL-terminated, so text can be read as a C string). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL. */
static bool reserve(buf *b, size_t n)
{
    if (n >= (size_t)-1 / 4 - b->len)
        return false;
    if (b->len + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s)
        return false;
    b->s = s;
    b->cap = cap;
    return true;
}

bool buf_append(buf *b, const void *data, size_t n)
{
    if (!reserve(b, n))
        return false;
    if (n)
        memcpy(b->s + b->len, data, n);
    b->len += n;
    b->s[b->len] = 0;
    return true;
}

bool buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return false;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

void buf_consume(buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->s, b->s + n, b->len - n);
        b->len -= n;
    }
    if (b->s)
        b->s[b->len] = 0;
}

void buf_free(buf *b)
{
    free(b->s);
    *b = (buf){0};
}
